"""Valid broadcasts, keepdims reductions and concat/stack results, written as users write them."""

from typing import Literal as L
from typing import TypeVar, reveal_type

from gradtape import Cpu, NoneTape, OwnedTape, Rank0, Rank1, Rank2, Rank3, Rank4, Tape, Tensor, ops

Batch = TypeVar("Batch", bound=int)
T = TypeVar("T", bound=Tape)
dev = Cpu()
x: Tensor[Rank3[L[2], L[5], L[8]], NoneTape] = dev.zeros((2, 5, 8))
bias: Tensor[Rank1[L[8]], NoneTape] = dev.zeros((8,))
pos: Tensor[Rank2[L[5], L[8]], NoneTape] = dev.zeros((5, 8))
a: Tensor[Rank2[L[8], L[5]], NoneTape] = dev.zeros((8, 5))
col: Tensor[Rank2[L[8], L[1]], NoneTape] = dev.ones((8, 1))

# rank extension: a bias over the last dim, a positional table over the last two
reveal_type(x + bias)  # R: Tensor[tuple[Literal[2], Literal[5], Literal[8]], gradtape.tape.NoneTape]
reveal_type(x.leaky_trace() + pos)  # R: Tensor[tuple[Literal[2], Literal[5], Literal[8]], gradtape.tape.GradientTape]
reveal_type(x * pos.leaky_trace())  # R: Tensor[tuple[Literal[2], Literal[5], Literal[8]], gradtape.tape.GradientTape]
# size-1 dims on either side: (8, 5) - (8, 1) and (8, 1) - (8, 5)
reveal_type(a - col)  # R: Tensor[tuple[Literal[8], Literal[5]], gradtape.tape.NoneTape]
reveal_type(col * a)  # R: Tensor[tuple[Literal[8], Literal[5]], gradtape.tape.NoneTape]
# a scalar (rank-0) tensor on either side
total = a.sum()
reveal_type(a / total)  # R: Tensor[tuple[Literal[8], Literal[5]], gradtape.tape.NoneTape]
reveal_type(total * a)  # R: Tensor[tuple[Literal[8], Literal[5]], gradtape.tape.NoneTape]
reveal_type(a.maximum(total))  # R: Tensor[tuple[Literal[8], Literal[5]], gradtape.tape.NoneTape]
reveal_type(a % total)  # R: Tensor[tuple[Literal[8], Literal[5]], gradtape.tape.NoneTape]
reveal_type(a // 2)  # R: Tensor[tuple[Literal[8], Literal[5]], gradtape.tape.NoneTape]
reveal_type(7 % a)  # R: Tensor[tuple[Literal[8], Literal[5]], gradtape.tape.NoneTape]
reveal_type(ops.fmod(a, total))  # R: Tensor[tuple[Literal[8], Literal[5]], gradtape.tape.NoneTape]
reveal_type(a.floor_divide(a))  # R: Tensor[tuple[Literal[8], Literal[5]], gradtape.tape.NoneTape]
reveal_type(x > bias)  # R: Tensor[tuple[Literal[2], Literal[5], Literal[8]], gradtape.tape.NoneTape]

# keepdims=True keeps the reduced dim as Literal[1]
m = a.mean(axis=1, keepdims=True)
reveal_type(m)  # R: Tensor[tuple[Literal[8], Literal[1]], gradtape.tape.NoneTape]
reveal_type(a - m)  # R: Tensor[tuple[Literal[8], Literal[5]], gradtape.tape.NoneTape]
reveal_type(a.sum(keepdims=True))  # R: Tensor[tuple[Literal[1], Literal[1]], gradtape.tape.NoneTape]
mx = x.max(axis=-1, keepdims=True)
reveal_type(mx)  # R: Tensor[tuple[Literal[2], Literal[5], Literal[1]], gradtape.tape.NoneTape]
v0 = a.var(axis=0, keepdims=True, correction=1)
reveal_type(v0)  # R: Tensor[tuple[Literal[1], Literal[5]], gradtape.tape.NoneTape]
reveal_type(a.sum(axis=0, keepdims=False))  # R: Tensor[tuple[Literal[5]], gradtape.tape.NoneTape]
img: Tensor[Rank4[L[2], L[3], L[4], L[4]], NoneTape] = dev.zeros((2, 3, 4, 4))
centered = img - img.mean(axis=1, keepdims=True)
reveal_type(centered)  # R: Tensor[tuple[Literal[2], Literal[3], Literal[4], Literal[4]], gradtape
reveal_type(img.sum(axis=3))  # R: Tensor[tuple[Literal[2], Literal[3], Literal[4]], gradtape.tape.NoneTape]


def standardize(v: Tensor[Rank2[Batch, L[8]], T]) -> Tensor[Rank2[Batch, L[8]], T]:
    """A generic batch function: statistics over the last axis, kept for broadcasting."""
    mu = v.mean(axis=-1, keepdims=True)
    return (v - mu) / (v.var(axis=-1, keepdims=True) + 1e-5).sqrt()


def biased_loss(
    v: Tensor[Rank3[Batch, L[5], L[8]], OwnedTape], b: Tensor[Rank1[L[8]], NoneTape]
) -> Tensor[Rank0, OwnedTape]:
    return ((v + b) * (v + b)).mean()


reveal_type(standardize(a.T.leaky_trace()))  # R: Tensor[tuple[Literal[5], Literal[8]], gradtape.tape.GradientTape]
biased_loss(x.leaky_trace(), bias).backward()

# concat keeps the other dims (the joined dim is int: the plugin computes it); stack adds one
c5: Tensor[Rank2[L[8], L[5]], NoneTape] = dev.zeros((8, 5))
c2: Tensor[Rank2[L[8], L[2]], NoneTape] = dev.zeros((8, 2))
# (mypy joins a list of differently typed tensors to object: the result is untyped there; a
# tuple keeps the shapes in both checkers)
reveal_type(ops.concat([c5, c2], axis=1))  # R: Tensor[Any, gradtape.tape.NoneTape]
reveal_type(ops.concat((c5, c2), axis=-1))  # R: Tensor[tuple[Literal[8], int], gradtape.tape.NoneTape]
rows = ops.concat([c5.leaky_trace(), c5.leaky_trace()])
reveal_type(rows)  # R: Tensor[tuple[int, Literal[5]], gradtape.tape.GradientTape]
reveal_type(ops.stack((c5, c5)))  # R: Tensor[tuple[Literal[2], Literal[8], Literal[5]], gradtape.tape.NoneTape]
s3 = ops.stack((c5, c5, c5), axis=-1)
reveal_type(s3)  # R: Tensor[tuple[Literal[8], Literal[5], Literal[3]], gradtape.tape.NoneTape]
reveal_type(ops.stack([bias, bias, bias, bias]))  # R: Tensor[tuple[Any, Literal[8]], gradtape.tape.NoneTape]
steps = [a.leaky_trace().sum(axis=1) for _ in range(3)]
reveal_type(ops.stack(steps, axis=1))  # R: Tensor[tuple[Literal[8], Any], gradtape.tape.GradientTape]
joined: Tensor[Rank2[L[8], int], NoneTape] = ops.concat([c5, c2], axis=1)
# an outer product of a column and a row
u = dev.randn((5,)).unsqueeze(1)
outer = u * dev.randn((7,)).unsqueeze(0)
reveal_type(outer)  # R: Tensor[tuple[int, int], gradtape.tape.NoneTape]
col5: Tensor[Rank2[L[5], L[1]], NoneTape] = dev.ones((5, 1))
row7: Tensor[Rank2[L[1], L[7]], NoneTape] = dev.ones((1, 7))
reveal_type(col5 * row7)  # R: Tensor[tuple[Literal[5], Literal[7]], gradtape.tape.NoneTape]
# a list mixing a traced and an untraced tensor: an owned result, so backward type-checks
mixed = ops.concat([c5.leaky_trace(), c2], axis=1)
reveal_type(mixed)  # R: Tensor[Any, gradtape.tape.GradientTape]
mixed.sum().backward()
