"""``nn.EmbeddingBag`` and ``F.embedding_bag``: ``(B, D)`` with the table's width ``D``, the
index tensor's tape kind carried to the output (a traced index tensor trains the table)."""

from typing import Any, reveal_type
from typing import Literal as L

import numpy as np

import gradtape.nn.functional as F
from gradtape import Cpu, Gradients, NoneTape, Rank0, Rank1, Rank2, Tensor, nn
from gradtape.losses import cross_entropy

dev = Cpu(seed=0)
bag: nn.EmbeddingBag[L[100], L[32]] = nn.EmbeddingBag(100, 32, mode="sum", dev=dev)
text: Tensor[Rank1[int], NoneTape] = dev.tensor(np.array([1, 2, 3, 4]))
offsets: Tensor[Rank1[int], NoneTape] = dev.tensor(np.array([0, 2]))
reveal_type(bag(text, offsets))  # R: Tensor[tuple[int, Literal[32]], gradtape.tape.NoneTape]
grads: Gradients = bag.alloc_grads()
reveal_type(bag(text.trace(grads), offsets))  # R: Tensor[tuple[int, Literal[32]], gradtape.tape.GradientTape]
weights = dev.tensor(np.ones(4, dtype=np.float32))
pooled: Tensor[Rank2[int, L[32]], Any] = bag(np.array([[1, 2], [3, 4]]), None, weights.reshape((2, 2)))
head: nn.Linear[L[32], L[4]] = nn.Linear(32, 4, dev=dev)
loss: Tensor[Rank0, Any] = cross_entropy(head(bag(text.trace(grads), offsets)), [0, 3])
table: Tensor[Rank2[L[10], L[8]], NoneTape] = dev.randn((10, 8))
reveal_type(F.embedding_bag(text, table, offsets, mode="max"))  # R: tuple[int, Literal[8]], gradtape.tape.NoneTape]
frozen = nn.EmbeddingBag.from_pretrained(table, padding_idx=0)
reveal_type(frozen(text, offsets))  # R: Tensor[tuple[int, int], gradtape.tape.NoneTape]
