"""``nn.Sequential`` chains with ``gradtape.mypy_plugin``: the layers' literal widths must agree
along the chain (checked at the constructor), a call is checked as ``l3(l2(l1(x)))`` would
be, and returns the last layer's result type (mypy alone and pyright type it ``Any``), so a
typed model may return ``self.net(x)`` without a ``no-any-return`` error. ``# P:`` lines are
errors only with the plugin."""

from typing import Literal as L
from typing import NewType, TypeVar, reveal_type

from gradtape import Cpu, NoneTape, Rank2, Rank4, Tape, Tensor, nn

B = TypeVar("B", bound=int)
T = TypeVar("T", bound=Tape)
Hidden = NewType("Hidden", int)
dev = Cpu()
x64: Tensor[Rank2[int, L[64]], NoneTape] = dev.zeros((8, 64))
x10: Tensor[Rank2[L[3], L[10]], NoneTape] = dev.zeros((3, 10))

nn.Sequential(nn.Linear(64, 32, dev=dev), nn.ReLU(), nn.Linear(16, 10, dev=dev))  # P: gradtape-shape
nn.Sequential(nn.Linear(64, 32, dev=dev), nn.LayerNorm(16))  # P: gradtape-shape
nn.Sequential(nn.Conv2d(1, 8, 3, dev=dev), nn.ReLU(), nn.Conv2d(16, 4, 3, dev=dev))  # P: gradtape-shape
nn.Sequential(nn.Embedding(100, 32, dev=dev), nn.Linear(64, 4, dev=dev))  # P: gradtape-shape

l1: nn.Linear[L[8], L[16]] = nn.Linear(8, 16, dev=dev)
l2: nn.Linear[L[16], L[4]] = nn.Linear(16, 4, dev=dev)
typed = nn.Sequential(l1, nn.ReLU(), l2)
typed(x10)  # P: gradtape-shape
inline = nn.Sequential(nn.Linear(8, 16, dev=dev), nn.ReLU(), nn.Linear(16, 4, dev=dev))
inline(x10)  # P: gradtape-shape

mlp = nn.Sequential(nn.Linear(64, 32, dev=dev), nn.GELU(), nn.Dropout(0.1), nn.Linear(32, 10, dev=dev))
reveal_type(mlp(x64))  # R: Tensor[tuple[int, Literal[10]], gradtape.tape.NoneTape]
named = dev.zeros((8, 64)).realize(tuple[int, Hidden])
reveal_type(mlp(named))  # R: Tensor[tuple[int, Literal[10]], gradtape.tape.NoneTape]
cnn = nn.Sequential(nn.Conv2d(1, 8, 3, dev=dev), nn.ReLU(), nn.Conv2d(8, 4, 3, dev=dev))
images: Tensor[Rank4[int, L[1], L[28], L[28]], NoneTape] = dev.zeros((2, 1, 28, 28))
reveal_type(cnn(images))  # R: Tensor[tuple[int, Literal[4], Literal[24], Literal[24]], gradtape.tape.NoneTape]
untyped_input = mlp(dev.zeros((8, 64)))

# convolutions and pools compute their spatial sizes from the constants they were built with,
# and Flatten multiplies them: the Linear after it is checked against C * H * W
small: Tensor[Rank4[L[2], L[1], L[8], L[8]], NoneTape] = dev.zeros((2, 1, 8, 8))
head = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1, dev=dev), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten())
reveal_type(head(small))  # R: Tensor[tuple[Literal[2], Literal[128]], gradtape.tape.NoneTape]
strided = nn.Sequential(nn.Conv2d(1, 4, (3, 5), stride=2, dev=dev), nn.AvgPool2d(2, stride=1))
reveal_type(strided(small))  # R: Tensor[tuple[Literal[2], Literal[4], Literal[2], Literal[1]], gradtape.tape.NoneTape]
up = nn.Sequential(nn.ConvTranspose2d(1, 2, 4, stride=2, padding=1, dev=dev), nn.Flatten())
reveal_type(up(small))  # R: Tensor[tuple[Literal[2], Literal[512]], gradtape.tape.NoneTape]
unpadded = nn.Sequential(nn.Conv2d(1, 8, 3, dev=dev), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8 * 4 * 4, 10, dev=dev))
unpadded(small)  # P: gradtape-shape


class MLP(nn.Module):
    """A typed model whose forward returns an nn.Sequential's call."""

    def __init__(self) -> None:
        self.net = nn.Sequential(nn.Linear(64, 32, dev=dev), nn.ReLU(), nn.Linear(32, 10, dev=dev))
        self.head = nn.Sequential(nn.LayerNorm(10))

    def forward(self, x: Tensor[Rank2[B, L[64]], T]) -> Tensor[Rank2[B, L[10]], T]:
        return self.head(self.net(x))  # M: no-any-return


class Branchy(nn.Module):
    """An attribute assigned two chains: its call checks neither (it may hold either)."""

    def __init__(self, deep: bool) -> None:
        self.net = nn.Sequential(nn.Linear(64, 32, dev=dev))
        if deep:
            self.net = nn.Sequential(nn.Linear(64, 32, dev=dev), nn.ReLU(), nn.Linear(32, 32, dev=dev))

    def forward(self, x: Tensor[Rank2[B, L[64]], T]) -> Tensor[Rank2[B, int], T]:
        y: Tensor[Rank2[B, int], T] = self.net(x)
        return y


reveal_type(MLP()(x64))  # R: Tensor[tuple[int, Literal[10]], gradtape.tape.NoneTape]


class Misfed(nn.Module):
    """A chain's result fed to a layer of another width: the error is that call's argument
    (mypy's own arg-type there), not a shape error blamed on the chain's last layer."""

    def __init__(self) -> None:
        self.body = nn.Sequential(nn.Linear(64, 32, dev=dev), nn.ReLU(), nn.Dropout(0.1))
        self.out: nn.Linear[L[16], L[10]] = nn.Linear(16, 10, dev=dev)

    def forward(self, x: Tensor[Rank2[B, L[64]], T]) -> Tensor[Rank2[B, L[10]], T]:
        y: Tensor[Rank2[B, L[10]], T] = self.out(self.body(x))  # P: arg-type
        return y
