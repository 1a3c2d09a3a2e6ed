"""Valid conv / pool / upscale programs: channel dims agree, tapes are where backward needs them."""

from typing import Literal as L
from typing import TypeVar, reveal_type

from gradtape import Cpu, NoneTape, OwnedTape, Rank0, Rank1, Rank3, Rank4, Tape, Tensor
from gradtape.ops import (
    avg_pool2d,
    conv1d,
    conv2d,
    conv_transpose2d,
    max_pool2d,
    min_pool2d,
    upscale2d,
)

N = TypeVar("N")
C = TypeVar("C")
O = TypeVar("O")
T = TypeVar("T", bound=Tape)

dev = Cpu()
x: Tensor[Rank4[L[8], L[3], L[16], L[16]], NoneTape] = dev.zeros((8, 3, 16, 16))
w: Tensor[Rank4[L[6], L[3], L[3], L[3]], NoneTape] = dev.zeros((6, 3, 3, 3))
b: Tensor[Rank1[L[6]], NoneTape] = dev.zeros((6,))

y = conv2d(x, w, b, padding=1)
reveal_type(y)  # R: Tensor[tuple[Literal[8], Literal[6], int, int], gradtape.tape.NoneTape]
reveal_type(conv2d(x.leaky_trace(), w, b, stride=2))  # R: gradtape.tape.GradientTape]
reveal_type(conv2d(x, w.leaky_trace(), b, (1, 2), "same", 1))  # R: gradtape.tape.GradientTape]
reveal_type(conv2d(x, w, b.leaky_trace()))  # R: gradtape.tape.GradientTape]
reveal_type(conv2d(x.leaky_trace(), w.leaky_trace()))  # R: gradtape.tape.GradientTape]
conv2d(x, w, None, 1, 0, 1, 1)

# grouped: the weight's C_in / groups is checked at run time; C_out still types the output
wg: Tensor[Rank4[L[6], L[1], L[3], L[3]], NoneTape] = dev.zeros((6, 1, 3, 3))
reveal_type(conv2d(x, wg, b, padding=1, groups=3))  # R: Tensor[tuple[Literal[8], Literal[6], int, int]
reveal_type(conv2d(x.leaky_trace(), wg, groups=3))  # R: gradtape.tape.GradientTape]

# a small CNN: conv -> relu -> pool -> conv -> pool -> mean
w2: Tensor[Rank4[L[12], L[6], L[3], L[3]], NoneTape] = dev.zeros((12, 6, 3, 3))
h = max_pool2d(conv2d(x.leaky_trace(), w, b, padding=1).relu(), 2)
reveal_type(h)  # R: Tensor[tuple[Literal[8], Literal[6], int, int], gradtape.tape.GradientTape]
h2 = avg_pool2d(conv2d(h, w2, padding=1), kernel_size=(2, 2), stride=2, padding=(1, 0))
reveal_type(h2)  # R: Tensor[tuple[Literal[8], Literal[12], int, int], gradtape.tape.GradientTape]
loss: Tensor[Rank0, OwnedTape] = min_pool2d(h2, 1).mean()
loss.backward()

# conv1d
x1: Tensor[Rank3[L[4], L[2], L[50]], NoneTape] = dev.zeros((4, 2, 50))
w1: Tensor[Rank3[L[5], L[2], L[7]], NoneTape] = dev.zeros((5, 2, 7))
reveal_type(conv1d(x1, w1, stride=2))  # R: Tensor[tuple[Literal[4], Literal[5], int], gradtape.tape.NoneTape]
wg1: Tensor[Rank3[L[4], L[1], L[3]], NoneTape] = dev.zeros((4, 1, 3))
reveal_type(conv1d(x1.leaky_trace(), wg1, groups=2))  # R: Tensor[tuple[Literal[4], Literal[4], int]

# conv_transpose2d: w is (C_in, C_out / groups, KH, KW)
wt: Tensor[Rank4[L[3], L[4], L[2], L[2]], NoneTape] = dev.zeros((3, 4, 2, 2))
bt: Tensor[Rank1[L[4]], NoneTape] = dev.zeros((4,))
reveal_type(conv_transpose2d(x, wt, bt, stride=2))  # R: Tensor[tuple[Literal[8], Literal[4], int, int]
reveal_type(conv_transpose2d(x, wt.leaky_trace(), output_padding=1, stride=2))  # R: gradtape.tape.GradientTape]
wt3: Tensor[Rank4[L[3], L[1], L[2], L[2]], NoneTape] = dev.zeros((3, 1, 2, 2))
reveal_type(conv_transpose2d(x, wt3, groups=3))  # R: Tensor[tuple[Literal[8], int, int, int]

# upscale2d
reveal_type(upscale2d(x, scale_factor=2))  # R: Tensor[tuple[Literal[8], Literal[3], int, int]
size: tuple[L[32], L[24]] = (32, 24)
up = upscale2d(x.leaky_trace(), size, mode="bilinear", align_corners=False)
reveal_type(up)  # R: Tensor[tuple[Literal[8], Literal[3], Literal[32], Literal[24]], gradtape.tape.GradientTape]
upscale2d(x, 20, mode="bilinear")
upscale2d(x, scale_factor=(2.0, 1.5))


def block(
    inp: Tensor[Rank4[N, C, int, int], T], k: Tensor[Rank4[O, C, L[3], L[3]], T]
) -> Tensor[Rank4[N, O, int, int], T]:
    """Generic code keeps its tape kind and checks channels through type variables."""
    return max_pool2d(conv2d(inp, k, padding=1), 2)
