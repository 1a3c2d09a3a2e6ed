"""PyTorch-style bag-of-embeddings classifier: Embedding, mean over tokens, Linear."""

import numpy as np

from gradtape import Cpu, nn
from gradtape.losses import cross_entropy

dev = Cpu(seed=0)
emb = nn.Embedding(100, 16, dev=dev)
head = nn.Linear(16, 4, dev=dev)
tokens = np.array([[1, 5, 7, 9], [2, 2, 3, 99], [0, 4, 8, 12]])

grads = emb.alloc_grads()
vecs = emb(dev.tensor(tokens.astype(np.float32)).trace(grads))  # (3, 4, 16)
pooled = vecs.mean(axis=1)  # (3, 16)
loss = cross_entropy(head(pooled), [0, 1, 3])
grads = loss.backward()
print(loss.item(), grads.get(emb.weight).shape)
