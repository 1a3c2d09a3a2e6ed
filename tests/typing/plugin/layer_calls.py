"""Layer calls checked against the widths the layer's constructor got, with
``gradtape.mypy_plugin``: ``nn.LayerNorm(64)`` is typed ``LayerNorm[int]`` (so that layers of
different widths stay one type) but remembers its 64, and a call on an input whose literal
width is another is rejected (``# P:``); an ``int`` or named-axis width on either side is
accepted (checked at run time). A result meets an expected type with the layer's literal
width (``self.fc(...)`` returned from a typed ``forward``); mypy alone and pyright type it
``int``."""

from typing import Literal as L
from typing import NewType, TypeVar, reveal_type

from gradtape import Cpu, NoneTape, Rank2, Rank3, Rank4, Tape, Tensor, nn

B = TypeVar("B", bound=int)
T = TypeVar("T", bound=Tape)
Hidden = NewType("Hidden", int)
dev = Cpu()
x32: Tensor[Rank2[int, L[32]], NoneTape] = dev.zeros((8, 32))
x64: Tensor[Rank2[int, L[64]], NoneTape] = dev.zeros((8, 64))
wide: Tensor[Rank2[int, int], NoneTape] = dev.zeros((8, 32))
named = dev.zeros((8, 64)).realize(tuple[int, Hidden])

norm = nn.LayerNorm(64)
reveal_type(norm)  # R: gradtape.nn.norm.LayerNorm[int]
norm(x32)  # P: gradtape-shape
norm.forward(x32)  # P: gradtape-shape
nn.RMSNorm(64)(x32)  # P: gradtape-shape
reveal_type(norm(x64))  # R: Tensor[tuple[int, Literal[64]], gradtape.tape.NoneTape]
norm(wide)  # an int width: checked at run time
norm(named)  # a named axis: any size

fc = nn.Linear(64, 10, dev=dev)
fc(x32)  # P: gradtape-shape
h = fc(x64)  # no expected type: mypy's int width, so h may be rebound to another width
reveal_type(h)  # R: Tensor[tuple[int, int], gradtape.tape.NoneTape]

# PyTorch-style, no annotation anywhere: a tensor whose dims are all literal gives each layer's
# literal width on (it fits no int-typed annotation anyway), so the next layer is checked
x8 = dev.randn((8, 32))
fc1 = nn.Linear(32, 128, dev=dev)
fc2 = nn.Linear(64, 10, dev=dev)
reveal_type(fc1(x8))  # R: Tensor[tuple[Literal[8], Literal[128]], gradtape.tape.NoneTape]
h1 = fc1(x8).relu()
fc2(h1)  # P: gradtape-shape
images = dev.randn((2, 1, 8, 8))
conv1 = nn.Conv2d(1, 8, 3, padding=1, dev=dev)
conv2 = nn.Conv2d(16, 32, 3, padding=1, dev=dev)
reveal_type(conv1(images))  # R: Tensor[tuple[Literal[2], Literal[8], Literal[8], Literal[8]], gradtape.tape.NoneTape]
conv2(conv1(images).relu())  # P: gradtape-shape
pooled = nn.MaxPool2d(2)(conv1(images))
reveal_type(pooled)  # R: Tensor[tuple[Literal[2], Literal[8], Literal[4], Literal[4]], gradtape.tape.NoneTape]


def typed_forward(x: Tensor[Rank2[int, int], NoneTape]) -> Tensor[Rank2[int, int], NoneTape]:
    """An int-typed input keeps int widths: ``return h`` fits the int-typed return."""
    h = fc1(x)
    reveal_type(h)  # R: Tensor[tuple[int, int], gradtape.tape.NoneTape]
    return h


emb = nn.Embedding(100, 32, dev=dev)
ids: Tensor[Rank2[int, int], NoneTape] = dev.zeros((2, 3))
reveal_type(emb(ids))  # R: Tensor[tuple[int, int, int], gradtape.tape.NoneTape]

attn = nn.MultiHeadAttention(32, 4, dev=dev)
q16: Tensor[Rank3[int, int, L[16]], NoneTape] = dev.zeros((2, 5, 16))
q32: Tensor[Rank3[int, int, L[32]], NoneTape] = dev.zeros((2, 5, 32))
attn(q16)  # P: gradtape-shape
attn(q32, q16, q16)  # P: gradtape-shape
reveal_type(attn(q32))  # R: Tensor[tuple[int, int, Literal[32]], gradtape.tape.NoneTape]

conv = nn.Conv2d(3, 16, 3, dev=dev)
gray: Tensor[Rank4[int, L[1], L[28], L[28]], NoneTape] = dev.zeros((2, 1, 28, 28))
conv(gray)  # P: gradtape-shape


def runtime_width(n: int) -> None:
    """A width known only at run time: no check, as before."""
    nn.LayerNorm(n)(x32)
    nn.Linear(n, 4, dev=dev)(x32)


seq: Tensor[Rank3[L[5], L[2], L[8]], NoneTape] = dev.zeros((5, 2, 8))
bilstm = nn.LSTM(8, 16, bidirectional=True, dev=dev)  # remembers its output width 2 * 16
nn.Linear(32, 4, dev=dev)(bilstm(seq)[0])
nn.Linear(16, 4, dev=dev)(bilstm(seq)[0])  # P: gradtape-shape
bilstm(x32)  # P: gradtape-shape
wrong2h: nn.GRU[L[8], L[16], L[16]] = nn.GRU(8, 16, bidirectional=True, dev=dev)  # P: assignment


class Head(nn.Module):
    def __init__(self, big: bool) -> None:
        self.norm = nn.LayerNorm(64)
        self.fc = nn.Linear(64, 10, dev=dev)
        self.proj = nn.Linear(64, 32, dev=dev)
        if big:  # the attribute may hold either layer: its widths are forgotten
            self.proj = nn.Linear(32, 32, dev=dev)

    def forward(self, x: Tensor[Rank2[B, L[32]], T]) -> Tensor[Rank2[B, int], T]:
        self.proj(x)
        h = self.norm(x)  # P: gradtape-shape
        return self.fc(h)  # P: gradtape-shape
