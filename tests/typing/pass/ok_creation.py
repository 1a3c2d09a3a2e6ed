"""PyTorch's creation functions at the package's top, as a PyTorch user writes them (issue 27:
ports by renaming): sizes as one tuple keep their literal dims under every checker, sizes as
separate ints under mypy (pyright and pyrefly widen them to ``int``)."""

from typing import Literal as L
from typing import reveal_type

import gradtape
from gradtape import NoneTape, Rank2, Tensor, nn

gradtape.manual_seed(0)
x: Tensor[Rank2[L[8], L[64]], NoneTape] = gradtape.randn((8, 64))
reveal_type(gradtape.zeros((8, 64)))  # R: Tensor[tuple[Literal[8]?, Literal[64]?], gradtape.tape.NoneTape]
reveal_type(gradtape.ones(8, 64))  # R: Tensor[tuple[Literal[8]?, Literal[64]?], gradtape.tape.NoneTape]
reveal_type(gradtape.randint(0, 10, (32,)))  # R: Tensor[tuple[Literal[32]?], gradtape.tape.NoneTape]
reveal_type(gradtape.zeros_like(x))  # R: Tensor[tuple[Literal[8], Literal[64]], gradtape.tape.NoneTape]
w: Tensor[Rank2[L[64], L[10]], NoneTape] = gradtape.zeros((64, 10), requires_grad=True)
reveal_type(x @ w)  # R: Tensor[tuple[Literal[8], Literal[10]], gradtape.tape.NoneTape]
lin: nn.Linear[L[64], L[10]] = nn.Linear(64, 10)
reveal_type(lin(x))  # R: Tensor[tuple[Literal[8], Literal[10]], gradtape.tape.NoneTape]
h = gradtape.tensor([1.0, 2.0], dtype=gradtape.float64)
