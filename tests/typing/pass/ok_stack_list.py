"""stack of a list: the list's length is not in its type, so the new dim is ``Any``
(``Count``): any annotation of it is accepted; the other dims are the elements'."""

from typing import Literal as L
from typing import reveal_type

from gradtape import Cpu, NoneTape, Rank1, Rank2, Rank3, Tensor, ops

dev = Cpu()
xs: list[Tensor[Rank1[L[3]], NoneTape]] = [dev.zeros((3,)) for _ in range(5)]
y: Tensor[Rank2[L[5], L[3]], NoneTape] = ops.stack(xs)
cols: Tensor[Rank2[L[3], L[5]], NoneTape] = ops.stack(xs, axis=1)
dyn: Tensor[Rank2[int, L[3]], NoneTape] = ops.stack(xs)
reveal_type(ops.stack(xs))  # R: Tensor[tuple[Any, Literal[3]], gradtape.tape.NoneTape]
traced = [x.leaky_trace() for x in xs]
z: Tensor[Rank2[L[5], L[3]], NoneTape] = ops.stack(traced).realize(tuple[L[5], L[3]]).detach()
rows = [dev.zeros((2, 3)) for _ in range(4)]
batch: Tensor[Rank3[L[4], L[2], L[3]], NoneTape] = ops.stack(rows)
print(y.shape, cols.shape, dyn.shape, z.shape, batch.shape)
