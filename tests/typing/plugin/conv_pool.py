"""Convolution and pooling output sizes with ``gradtape.mypy_plugin`` (PyTorch's formulas), flowing
into ``reshape`` and an annotated ``Linear``; sizes that are not positive are errors (code
``gradtape-shape``). tests/test_mypy_plugin.py: ``# P:`` errors only with the plugin, ``# R:``
reveals with the plugin."""

from typing import Literal as L
from typing import reveal_type

from gradtape import Cpu, NoneTape, Rank4, Tensor, nn, ops

dev = Cpu()
images = dev.zeros((4, 1, 28, 28))
w1 = dev.zeros((8, 1, 3, 3))
head: nn.Linear[L[1352], L[10]] = nn.Linear(8 * 13 * 13, 10, dev=dev)  # M: arg-type

c = ops.conv2d(images, w1)
reveal_type(c)  # R: Tensor[tuple[Literal[4], Literal[8], Literal[26], Literal[26]], gradtape.tape.NoneTape]
p = ops.max_pool2d(c, 2)
reveal_type(p)  # R: Tensor[tuple[Literal[4], Literal[8], Literal[13], Literal[13]], gradtape.tape.NoneTape]
flat = p.reshape((4, 8 * 13 * 13))
reveal_type(flat)  # R: Tensor[tuple[Literal[4], Literal[1352]], gradtape.tape.NoneTape]
reveal_type(head(flat))  # R: Tensor[tuple[Literal[4], Literal[10]], gradtape.tape.NoneTape]
reveal_type(head(p.reshape((4, -1))))  # R: Tensor[tuple[Literal[4], Literal[10]], gradtape.tape.NoneTape]

reveal_type(ops.conv2d(images, w1, stride=2, padding=1))  # R: Literal[4], Literal[8], Literal[14], Literal[14]]
reveal_type(ops.conv2d(images, w1, padding=(1, 0), dilation=(1, 2)))  # R: Literal[28], Literal[24]], gradtape
reveal_type(ops.conv2d(images, w1, None, 1, "same"))  # R: Literal[4], Literal[8], Literal[28], Literal[28]]
seq = ops.conv1d(dev.zeros((2, 3, 10)), dev.zeros((4, 3, 3)), dilation=2)
reveal_type(seq)  # R: Tensor[tuple[Literal[2], Literal[4], Literal[6]], gradtape.tape.NoneTape]
up = ops.conv_transpose2d(p, dev.zeros((8, 3, 3, 3)), stride=2, padding=1, output_padding=1)
reveal_type(up)  # R: Tensor[tuple[Literal[4], Literal[3], Literal[26], Literal[26]], gradtape.tape.NoneTape]
reveal_type(ops.avg_pool2d(c, (2, 3), stride=1))  # R: Tensor[tuple[Literal[4], Literal[8], Literal[25], Literal[24]]
reveal_type(ops.min_pool2d(c, 3, stride=2, padding=1))  # R: Literal[4], Literal[8], Literal[13], Literal[13]]

reveal_type(ops.upscale2d(p, (26, 2 * 13)))  # R: Literal[4], Literal[8], Literal[26], Literal[26]]
reveal_type(ops.upscale2d(p, scale_factor=1.5))  # R: Literal[4], Literal[8], Literal[19], Literal[19]]
reveal_type(ops.upscale2d(p, scale_factor=(2, 0.5)))  # R: Literal[4], Literal[8], Literal[26], Literal[6]]

ops.conv2d(dev.zeros((1, 1, 2, 2)), w1)  # P: gradtape-shape
ops.conv2d(dev.zeros((1, 1, 5, 5)), w1, dilation=3)  # P: gradtape-shape
ops.max_pool2d(dev.zeros((1, 1, 2, 2)), 3)  # P: gradtape-shape
ops.max_pool2d(c, 3, padding=2)  # P: gradtape-shape
ops.upscale2d(p, scale_factor=0.05)  # P: gradtape-shape


def dynamic(
    n: int, x: Tensor[Rank4[int, L[1], int, L[28]], NoneTape], w: Tensor[Rank4[L[8], L[1], L[3], L[3]], NoneTape]
) -> None:
    """A run-time spatial dim stays ``int``: only fully literal sizes are computed."""
    reveal_type(ops.conv2d(dev.zeros((n, 1, 28, 28)), w))  # R: Tensor[tuple[int, Literal[8], Literal[26], Literal[26]]
    reveal_type(ops.conv2d(x, w))  # R: Tensor[tuple[int, Literal[8], int, int], gradtape.tape.NoneTape]
    reveal_type(ops.max_pool2d(dev.zeros((n, 8, 26, 26)), 2))  # R: int, Literal[8], Literal[13], Literal[13]]
