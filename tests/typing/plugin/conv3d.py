"""3-D convolution output sizes with ``gradtape.mypy_plugin`` (PyTorch's formulas); sizes that
are not positive are errors (code ``gradtape-shape``). tests/test_mypy_plugin.py: ``# P:``
errors only with the plugin, ``# R:`` reveals with the plugin."""

from typing import reveal_type

from gradtape import Cpu, ops

dev = Cpu()
vol = dev.zeros((2, 3, 8, 9, 10))
w = dev.zeros((6, 3, 3, 2, 3))

reveal_type(ops.conv3d(vol, w))  # R: Literal[2], Literal[6], Literal[6], Literal[8], Literal[8]]
reveal_type(ops.conv3d(vol, w, stride=(2, 1, 3), padding=1))  # R: Literal[6], Literal[4], Literal[10], Literal[4]]
reveal_type(ops.conv3d(vol, w, None, 1, "same"))  # R: Literal[6], Literal[8], Literal[9], Literal[10]]
up = ops.conv_transpose3d(vol, dev.zeros((3, 4, 2, 2, 2)), stride=2, output_padding=1)
reveal_type(up)  # R: Literal[2], Literal[4], Literal[17], Literal[19], Literal[21]]
ops.conv3d(vol, dev.zeros((6, 3, 9, 2, 3)))  # P: gradtape-shape
