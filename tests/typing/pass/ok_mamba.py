"""Valid programs with nn.Mamba / nn.MambaBlock and ops.selective_scan, as users write them."""

from typing import Literal as L
from typing import TypeVar, reveal_type

from gradtape import Cpu, NoneTape, OwnedTape, Rank0, Rank3, Tape, Tensor, nn, ops

B = TypeVar("B", bound=int)
S = TypeVar("S", bound=int)
T = TypeVar("T", bound=Tape)
dev = Cpu()


class LM(nn.Module):
    def __init__(self) -> None:
        self.blocks = [nn.MambaBlock(16, dev=dev) for _ in range(2)]
        self.mixer: nn.Mamba[L[16]] = nn.Mamba(16, dev=dev)

    def forward(self, x: Tensor[Rank3[B, S, L[16]], T]) -> Tensor[Rank3[B, S, L[16]], T]:
        h = x
        for block in self.blocks:
            h = block(h)
        return self.mixer(h)


x: Tensor[Rank3[L[2], L[8], L[16]], NoneTape] = dev.randn((2, 8, 16))
y = LM().forward(x.leaky_trace())
loss: Tensor[Rank0, OwnedTape] = y.square().mean()
loss.backward()
u = dev.randn((2, 8, 4))
delta = dev.rand((2, 8, 4))
a = dev.randn((4, 3)) * -1.0
b_in = dev.randn((2, 8, 3))
c_in = dev.randn((2, 8, 3))
d_skip = dev.ones((4,))
scan = ops.selective_scan(u.leaky_trace(), delta, a, b_in, c_in, d_skip)
reveal_type(scan)  # R: Tensor[tuple[int, int, int], gradtape.tape.GradientTape]
scan.sum().backward()
