"""Conv net over sequences: Conv1d on (B, C, L), global average over time, Linear head."""

from gradtape import Cpu, nn

dev = Cpu(seed=0)
conv = nn.Conv1d(4, 8, 5, padding=2, dev=dev)
head = nn.Linear(8, 2, dev=dev)
signal = dev.randn((3, 4, 50))
feat = conv(signal).relu()  # (3, 8, 50)
logits = head(feat.mean(axis=2))
print(logits.shape)
