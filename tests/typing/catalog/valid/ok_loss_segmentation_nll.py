"""Losses: per-pixel cross_entropy on (N, C, H, W) logits with int64 label maps, ignore_index,
class weights and label smoothing; nll_loss on log-probabilities; an nn.CrossEntropyLoss layer."""

import numpy as np

from gradtape import Cpu, nn
from gradtape.losses import cross_entropy, nll_loss

dev = Cpu(seed=0)
logits = dev.randn((2, 3, 4, 4)).leaky_trace()
label_map = np.random.default_rng(0).integers(0, 3, (2, 4, 4))
label_map[0, 0, 0] = 255  # an unlabelled pixel
labels = dev.tensor(label_map)  # int64, as torch.tensor(label_map)
weight = np.array([1.0, 2.0, 0.5], np.float32)
loss = cross_entropy(logits, labels, weight, ignore_index=255, label_smoothing=0.1)
per_pixel = cross_entropy(logits, labels, ignore_index=255, reduction="none")
nll = nll_loss(logits.log_softmax(1), labels, ignore_index=255)
criterion = nn.CrossEntropyLoss(ignore_index=255)
total = loss + nll + criterion(logits, labels) + per_pixel.mean()
grads = total.backward()
print(total.item(), per_pixel.shape)
