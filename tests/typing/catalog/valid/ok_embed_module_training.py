"""Embedding: nn.Embedding + Linear trained with AdamW on a toy next-token task."""

import numpy as np

from gradtape import Cpu, nn, optim
from gradtape.losses import cross_entropy

dev = Cpu(seed=0)
vocab, dim = 12, 8
emb = nn.Embedding(vocab, dim, dev=dev)
out = nn.Linear(dim, vocab, dev=dev)
model = nn.Sequential(emb, out)
opt = optim.AdamW(model.parameters(), lr=0.05)
ids = np.arange(24) % vocab
nxt = (ids + 1) % vocab
history: list[float] = []
for _ in range(5):
    grads = model.alloc_grads()
    logits = model(dev.tensor(ids.astype(np.float32)).trace(grads))
    loss = cross_entropy(logits, nxt)
    grads = loss.backward()
    opt.step(grads)
    history.append(loss.item())
print(history)
