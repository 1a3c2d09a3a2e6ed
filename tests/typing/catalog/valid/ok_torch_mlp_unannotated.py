"""PyTorch-style MLP training step, no annotations anywhere: a Sequential model on a random batch."""

from gradtape import Cpu, nn, optim
from gradtape.losses import cross_entropy

dev = Cpu(seed=0)
model = nn.Sequential(nn.Linear(64, 32, dev=dev), nn.ReLU(), nn.Linear(32, 10, dev=dev))
opt = optim.SGD(model.parameters(), lr=0.1)

x = dev.randn((32, 64))
labels = [i % 10 for i in range(32)]

grads = model.alloc_grads()
logits = model(x.trace(grads))
loss = cross_entropy(logits, labels)
grads = loss.backward()
opt.step(grads)
model.zero_grads(grads)
print(loss.item())
