"""Annotated autoencoder: encoder/decoder typed Linear layers, reconstruction MSE loss."""

from typing import Literal as L
from typing import TypeVar

from gradtape import Cpu, Rank2, Tape, Tensor, nn
from gradtape.losses import mse_loss

B = TypeVar("B", bound=int)
T = TypeVar("T", bound=Tape)


class AutoEncoder(nn.Module):
    def __init__(self, dev: Cpu) -> None:
        self.enc: nn.Linear[L[32], L[8]] = nn.Linear(32, 8, dev=dev)
        self.dec: nn.Linear[L[8], L[32]] = nn.Linear(8, 32, dev=dev)

    def encode(self, x: Tensor[Rank2[B, L[32]], T]) -> Tensor[Rank2[B, L[8]], T]:
        return self.enc(x).tanh()

    def forward(self, x: Tensor[Rank2[B, L[32]], T]) -> Tensor[Rank2[B, L[32]], T]:
        return self.dec(self.encode(x))


dev = Cpu(seed=0)
ae = AutoEncoder(dev)
x = dev.randn((16, 32)).realize(tuple[int, L[32]])
grads = ae.alloc_grads()
recon = ae.forward(x.trace(grads))
loss = mse_loss(recon, x)
grads = loss.backward()
print(loss.item())
