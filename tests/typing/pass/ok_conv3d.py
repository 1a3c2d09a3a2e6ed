"""Valid conv3d / conv_transpose3d programs: channel dims agree, tapes are where backward needs them."""

from typing import Literal as L
from typing import reveal_type

from gradtape import Cpu, NoneTape, Rank1, Rank5, Tensor
from gradtape.ops import conv3d, conv_transpose3d

dev = Cpu()
x: Tensor[Rank5[L[2], L[3], L[8], L[8], L[8]], NoneTape] = dev.zeros((2, 3, 8, 8, 8))
w: Tensor[Rank5[L[6], L[3], L[3], L[3], L[3]], NoneTape] = dev.zeros((6, 3, 3, 3, 3))
b: Tensor[Rank1[L[6]], NoneTape] = dev.zeros((6,))

y = conv3d(x, w, b, padding=1)
reveal_type(y)  # R: Tensor[tuple[Literal[2], Literal[6], int, int, int], gradtape.tape.NoneTape]
reveal_type(conv3d(x.leaky_trace(), w, b, stride=(1, 2, 2)))  # R: gradtape.tape.GradientTape]
reveal_type(conv3d(x, w.leaky_trace(), b, 1, "same", (1, 2, 1)))  # R: gradtape.tape.GradientTape]

# grouped: the weight's C_in / groups is checked at run time
wg: Tensor[Rank5[L[6], L[1], L[3], L[3], L[3]], NoneTape] = dev.zeros((6, 1, 3, 3, 3))
reveal_type(conv3d(x, wg, b, padding=1, groups=3))  # R: Tensor[tuple[Literal[2], Literal[6], int, int, int]

# transposed: x's channels are w's first dim
wt: Tensor[Rank5[L[3], L[4], L[2], L[2], L[2]], NoneTape] = dev.zeros((3, 4, 2, 2, 2))
reveal_type(conv_transpose3d(x, wt, stride=2))  # R: Tensor[tuple[Literal[2], Literal[4], int, int, int]
reveal_type(conv_transpose3d(x.leaky_trace(), wt, output_padding=(1, 0, 1), stride=2))  # R: GradientTape]
