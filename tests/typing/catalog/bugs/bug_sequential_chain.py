"""class: sequential-chain

nn.Sequential whose second Linear takes 32 features while the first outputs 16.
Run time: raises ShapeError at the BUG line (inside model(x)).
"""

from gradtape import Cpu, nn

dev = Cpu(seed=0)
model = nn.Sequential(nn.Linear(8, 16, dev=dev), nn.ReLU(), nn.Linear(32, 4, dev=dev))
x = dev.randn((5, 8))
y = model(x)  # BUG
print(y.shape)
