"""Dense layers: :class:`Linear` (typed ``Linear[I, O]``) and :class:`Embedding`."""

from __future__ import annotations

from typing import Any, Generic, TypeVar, overload

import numpy as np
import numpy.typing as npt

from gradtape.devices.cpu import Cpu
from gradtape.nn._init import kaiming_uniform
from gradtape.nn.module import Module
from gradtape.ops import embedding, linear
from gradtape.shapes import AnyShape, Rank1, Rank2, Rank3
from gradtape.tape import NoneTape, Tape, op_tape
from gradtape.tensor import Tensor

__all__ = ["Embedding", "Linear"]

I = TypeVar("I")
O = TypeVar("O")
B = TypeVar("B")
D = TypeVar("D")
T = TypeVar("T", bound=Tape)


class Linear(Module, Generic[I, O]):
    """Affine layer ``y = x @ weight^T + bias`` (PyTorch's ``nn.Linear``, dfdx's ``Linear<I, O>``).

    Args:
        in_features: ``I``, the size of each input row.
        out_features: ``O``, the size of each output row.
        bias: whether to learn an additive bias.
        dev: the device whose seeded generator initialises the parameters.
        dtype: float32 (default) or float64.

    Parameters:
        weight: ``(O, I)``, ``U(-1/sqrt(I), 1/sqrt(I))`` (PyTorch's Kaiming-uniform with
            ``a = sqrt(5)``; He et al. 2015).
        bias: ``(O,)``, ``U(-1/sqrt(I), 1/sqrt(I))``, or ``None``.

    Forward: ``x (..., I) -> (..., O)`` with :func:`gradtape.ops.linear`. Typed: annotate
    ``lin: Linear[L[64], L[10]] = Linear(64, 10, dev=dev)`` and ``lin(x)`` maps
    ``Tensor[Rank2[B, L[64]], T]`` to ``Tensor[Rank2[B, L[10]], T]``.

    Raises:
        ShapeError: (on forward) ``x``'s last dim is not ``in_features``.
        DTypeError: ``x``'s dtype is not the parameters'.
    """

    weight: Tensor[Rank2[O, I], NoneTape]
    bias: Tensor[Rank1[O], NoneTape] | None

    def __init__(
        self, in_features: I, out_features: O, bias: bool = True, *, dev: Cpu, dtype: npt.DTypeLike = np.float32
    ) -> None:
        fi, fo = int(in_features), int(out_features)  # type: ignore[call-overload]
        self.in_features, self.out_features = fi, fo
        self.weight = kaiming_uniform(dev, (fo, fi), fi, dtype)
        self.bias = kaiming_uniform(dev, (fo,), fi, dtype) if bias else None

    # The AnyShape overload comes last here: an untyped input still gets Tensor[Any, Any]
    # (mypy gives Any when an Any argument matches overloads with different results), and a
    # wrong in-feature dim is reported against the rank-2 signature ("expected
    # Tensor[tuple[B, Literal[100]], T]") rather than against AnyShape. A layer whose
    # in-features are a run-time ``int`` (``Linear(4, 3, dev=dev)`` unannotated) takes any
    # in-feature dim type, ``Literal`` included (checked at run time), as the self-typed
    # overloads say; a layer typed ``Linear[L[64], O]`` takes only ``L[64]``.
    @overload
    def forward(self, x: Tensor[Rank2[B, I], T]) -> Tensor[Rank2[B, O], T]: ...
    @overload
    def forward(self: Linear[int, O], x: Tensor[Rank2[B, Any], T]) -> Tensor[Rank2[B, O], T]: ...
    @overload
    def forward(self, x: Tensor[Rank3[D, B, I], T]) -> Tensor[Rank3[D, B, O], T]: ...
    @overload
    def forward(self: Linear[int, O], x: Tensor[Rank3[D, B, Any], T]) -> Tensor[Rank3[D, B, O], T]: ...
    @overload
    def forward(self, x: Tensor[Rank1[I], T]) -> Tensor[Rank1[O], T]: ...
    @overload
    def forward(self: Linear[int, O], x: Tensor[Rank1[Any], T]) -> Tensor[Rank1[O], T]: ...
    @overload
    def forward(self, x: Tensor[AnyShape, T]) -> Tensor[Any, T]: ...
    def forward(self, x: Any) -> Any:
        """``x @ weight^T + bias``: ``(..., I) -> (..., O)``, ``x``'s tape kind."""
        return linear(x, self.weight, self.bias)

    __call__ = forward

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Embedding(Module):
    """A lookup table ``y = weight[indices]`` (PyTorch's ``nn.Embedding``).

    Args:
        num_embeddings: the table's number of rows ``V``.
        embedding_dim: each row's size ``D``.
        dev: the device whose seeded generator initialises the table.
        dtype: float32 (default) or float64.

    Parameters:
        weight: ``(V, D)``, ``N(0, 1)`` (PyTorch's default).

    Forward: integer indices of any shape ``(...)`` -> ``(..., D)``; the gradient scatters
    into the looked-up rows (:func:`gradtape.ops.embedding`).

    Raises:
        IndexError / ValueError: (on forward) an index outside ``[0, V)`` or non-integer
            indices (from :func:`gradtape.ops.embedding`).
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, *, dev: Cpu, dtype: npt.DTypeLike = np.float32) -> None:
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.weight: Tensor[Any, NoneTape] = dev.randn((num_embeddings, embedding_dim), dtype)

    def forward(self, x: npt.ArrayLike | Tensor[Any, Any]) -> Tensor[Any, Any]:
        """The rows of ``weight`` at ``x``: ``(..., D)``.

        ``x`` is an int array of any shape, or a tensor holding integer values. A traced
        tensor's tape is carried on to the output, so ``model(idx.trace(model.alloc_grads()))``
        trains the table into that store; with a plain array the table (a parameter) records
        whenever a traced pass or a ``GradientTape`` context is live (see
        :func:`gradtape.tape.op_tape`), and not in untraced inference.
        """
        if isinstance(x, Tensor):
            idx = x.data.astype(np.int64)
            # the indices carry no gradient, but a traced index tensor's tape (and its store)
            # is where the table's gradient must go
            w = self.weight.put_tape(op_tape(x, self.weight)) if x.tape.OWNS_TAPE else self.weight
            return embedding(idx, w)
        return embedding(x, self.weight)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}"
