"""PyTorch-style: separate Linear layers called as functions, hidden activations in between."""

from gradtape import Cpu, nn

dev = Cpu(seed=0)
fc1 = nn.Linear(64, 128, dev=dev)
fc2 = nn.Linear(128, 64, dev=dev)
fc3 = nn.Linear(64, 10, dev=dev)

x = dev.randn((16, 64))
h = fc1(x).relu()
h = fc2(h).tanh()
out = fc3(h)
probs = out.softmax(axis=-1)
print(out.shape, probs.sum(axis=1).numpy()[:3])
