"""Attention: nn.TransformerEncoderLayer stack with a causal mask, token embedding and LM head."""

import numpy as np

from gradtape import Cpu, nn
from gradtape.losses import cross_entropy

dev = Cpu(seed=0)
vocab, d, ctx = 20, 16, 8
emb = nn.Embedding(vocab, d, dev=dev)
layers = [
    nn.TransformerEncoderLayer(d, 2, dim_feedforward=32, dropout=0.0, batch_first=True, dev=dev) for _ in range(2)
]
head = nn.Linear(d, vocab, dev=dev)
causal = np.triu(np.ones((ctx, ctx), bool), k=1)

tokens = np.arange(2 * ctx).reshape(2, ctx) % vocab
h = emb(tokens)
for layer in layers:
    h = layer(h, src_mask=causal)
logits = head(h)  # (2, ctx, vocab)
loss = cross_entropy(logits.reshape((2 * ctx, vocab)), tokens.reshape(-1))
print(logits.shape, loss.item())
