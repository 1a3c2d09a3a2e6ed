"""Dense layers: :class:`Linear` (typed ``Linear[I, O]``), :class:`Bilinear`, :class:`Embedding` and
:class:`EmbeddingBag`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, cast, overload

import numpy as np
import numpy.typing as npt

from gradtape.devices._arrays import as_array as _as_array
from gradtape.devices.default import AnyDevice, DeviceSpec, pick_device, pick_dtype
from gradtape.errors import DTypeError, ShapeError
from gradtape.nn._init import kaiming_uniform
from gradtape.nn._typing import B, E, I, N, O, T, Ts, V, Z
from gradtape.nn.functional import _bilinear
from gradtape.nn.module import Module
from gradtape.ops.linalg import linear  # unwrapped: Module.__call__ checked x
from gradtape.ops.nn import _bag_options, _embedding_bag, _padding_row, embedding
from gradtape.shapes import AnyShape, Rank1, Rank2, Rank3
from gradtape.tape import NONE_TAPE, NoneTape, op_tape
from gradtape.tensor import Tensor

__all__ = ["Bilinear", "Embedding", "EmbeddingBag", "Linear"]

IndexArray: TypeAlias = np.ndarray[Any, Any] | Sequence[Any] | int | np.integer[Any]
"""Indices for :class:`Embedding` other than a tensor: an int array, a (nested) list or
tuple of ints, or one int. Not ``npt.ArrayLike``, which a ``Tensor`` also is: a typed
tensor of the wrong shape type would fall through to that overload instead of being
reported."""


class Linear(Module, Generic[I, O]):
    """Affine layer ``y = x @ weight^T + bias`` (PyTorch's ``nn.Linear``, dfdx's ``Linear<I, O>``).

    Args:
        in_features: ``I``, the size of each input row.
        out_features: ``O``, the size of each output row.
        bias: whether to learn an additive bias.
        dev, device: a ``Cpu`` or ``Cuda``, or PyTorch's ``"cpu"``/``"cuda"``/``"cuda:N"``
            (:func:`gradtape.devices.default.pick_device`): the device
            whose seeded generator initialises the parameters (default:
            :func:`gradtape.get_default_device`, which :func:`gradtape.manual_seed` seeds).
        dtype: float32 (default) or float64.

    Parameters:
        weight: ``(O, I)``, ``U(-1/sqrt(I), 1/sqrt(I))`` (PyTorch's Kaiming-uniform with
            ``a = sqrt(5)``; He et al. 2015).
        bias: ``(O,)``, ``U(-1/sqrt(I), 1/sqrt(I))``, or ``None``.

    Forward: ``x (..., I) -> (..., O)`` with :func:`gradtape.ops.linear`. Typed
    ``Linear[I, O]``, inferred from the constructor's arguments: annotate
    ``lin: Linear[L[64], L[10]] = Linear(64, 10, dev=dev)`` and ``lin(x)`` maps
    ``Tensor[Rank2[B, L[64]], T]`` (also ranks 1 and 3) to ``Tensor[Rank2[B, L[10]], T]``,
    keeping the input's tape kind ``T``; another static in-feature dim is a type error. An
    ``int`` (dynamic) dim is checked at run time instead: an input whose last dim is ``int``
    fits any layer, and a layer built without an annotated target (``Linear[int, int]``, also
    what a bare ``Linear`` annotation means) takes any last dim. An untyped input gives
    ``Tensor[Any, T]``.

    Raises:
        ShapeError: (on forward) ``x``'s last dim is not ``in_features``.
        DTypeError: ``x``'s dtype is not the parameters'.
    """

    weight: Tensor[Rank2[O, I], NoneTape]
    bias: Tensor[Rank1[O], NoneTape] | None

    def __init__(
        self,
        in_features: I,
        out_features: O,
        bias: bool = True,
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        dev = pick_device(type(self).__name__, device, dev)
        dtype = pick_dtype(dtype)
        fi, fo = int(in_features), int(out_features)  # type: ignore[call-overload]
        self.in_features, self.out_features = fi, fo
        self.weight = kaiming_uniform(dev, (fo, fi), fi, dtype)
        self.bias = kaiming_uniform(dev, (fo,), fi, dtype) if bias else None

    # Overloads, per input rank: the typed in-feature dim ``I``; an input whose in-feature
    # dim is a run-time ``int`` (dynamic, e.g. mypy's widening of ``dev.randn((8, 64))``),
    # accepted by any layer and checked at run time, as matmul's int inner dim; a layer whose
    # in-features are a run-time ``int`` (``Linear(4, 3, dev=dev)`` unannotated), which takes
    # any in-feature dim type, ``Literal`` included (the self-typed rows). So a layer typed
    # ``Linear[L[64], O]`` rejects only a different static dim (``Literal[100]``, a named
    # axis), reported against the rank-2 row ("expected Tensor[tuple[B, Literal[64]], T]").
    # The AnyShape parameter of the first row matches only an ``Any`` argument and makes
    # ``lin(a)`` ``Any`` (pyright otherwise finds several rows with different results and
    # says Unknown, an error in strict mode); ``Tensor[AnyShape, T]`` (an untyped tensor)
    # comes last, so that errors are reported against the typed rows.
    @overload
    def forward(self, x: AnyShape) -> Any: ...
    @overload
    def forward(self, x: Tensor[Rank2[B, I], T]) -> Tensor[Rank2[B, O], T]: ...
    @overload
    def forward(self, x: Tensor[Rank2[B, int], T]) -> Tensor[Rank2[B, O], T]: ...
    @overload
    def forward(self: Linear[int, O], x: Tensor[Rank2[B, Z], T]) -> Tensor[Rank2[B, O], T]: ...
    @overload
    def forward(self, x: Tensor[Rank3[N, B, I], T]) -> Tensor[Rank3[N, B, O], T]: ...
    @overload
    def forward(self, x: Tensor[Rank3[N, B, int], T]) -> Tensor[Rank3[N, B, O], T]: ...
    @overload
    def forward(self: Linear[int, O], x: Tensor[Rank3[N, B, Z], T]) -> Tensor[Rank3[N, B, O], T]: ...
    @overload
    def forward(self, x: Tensor[Rank1[I], T]) -> Tensor[Rank1[O], T]: ...
    @overload
    def forward(self, x: Tensor[Rank1[int], T]) -> Tensor[Rank1[O], T]: ...
    @overload
    def forward(self: Linear[int, O], x: Tensor[Rank1[Z], T]) -> Tensor[Rank1[O], T]: ...
    @overload
    def forward(self, x: Tensor[AnyShape, T]) -> Tensor[Any, T]: ...
    def forward(self, x: Any) -> Any:
        """``x @ weight^T + bias``: ``(..., I) -> (..., O)``, ``x``'s tape kind."""
        return linear(x, self.weight, self.bias)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """Bilinear layer ``y = x1^T A x2 + b`` (PyTorch's ``nn.Bilinear``):
    ``y[..., o] = sum_ij x1[..., i] * weight[o, i, j] * x2[..., j] + bias[o]``
    (:func:`gradtape.nn.functional.bilinear`).

    Args:
        in1_features: ``I1``, the size of each first input's rows.
        in2_features: ``I2``, the size of each second input's rows.
        out_features: ``O``, the size of each output row.
        bias: whether to learn an additive bias.
        dev, device: a ``Cpu`` or ``Cuda``, or PyTorch's ``"cpu"``/``"cuda"``/``"cuda:N"``
            (:func:`gradtape.devices.default.pick_device`): the device
            whose seeded generator initialises the parameters (default:
            :func:`gradtape.get_default_device`, which :func:`gradtape.manual_seed` seeds).
        dtype: float32 (default) or float64.

    Parameters (PyTorch's names, shapes and initialisation; state-dict keys ``weight``, ``bias``):
        weight: ``(O, I1, I2)``, ``U(-1/sqrt(I1), 1/sqrt(I1))``.
        bias: ``(O,)``, ``U(-1/sqrt(I1), 1/sqrt(I1))``, or ``None``.

    Forward: ``x1 (*, I1)`` and ``x2 (*, I2)`` with the same leading dims ``*`` (none for a single
    pair) ``-> (*, O)``; the output's tape kind is ``x1``'s (both inputs' tapes are merged).

    Raises:
        TypeError: a feature count is not an int. ValueError: it is below 1.
        ShapeError, DTypeError: (on forward) as :func:`gradtape.nn.functional.bilinear`.
    """

    weight: Tensor[Rank3[int, int, int], NoneTape]
    bias: Tensor[Rank1[int], NoneTape] | None

    def __init__(
        self,
        in1_features: int,
        in2_features: int,
        out_features: int,
        bias: bool = True,
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        dev = pick_device(type(self).__name__, device, dev)
        dtype = pick_dtype(dtype)
        sizes = []
        for name, v in (("in1_features", in1_features), ("in2_features", in2_features), ("out_features", out_features)):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"Bilinear: {name} must be an int, got {type(v).__name__} {v!r}")
            if v < 1:
                raise ValueError(f"Bilinear: {name} must be at least 1, got {v}")
            sizes.append(int(v))
        i1, i2, o = sizes
        self.in1_features, self.in2_features, self.out_features = i1, i2, o
        self.weight = kaiming_uniform(dev, (o, i1, i2), i1, dtype)  # PyTorch: bound 1/sqrt(weight.size(1))
        self.bias = kaiming_uniform(dev, (o,), i1, dtype) if bias else None

    def forward(self, input1: Tensor[Any, T], input2: Tensor[Any, Any]) -> Tensor[Any, T]:  # type: ignore[override]  # two inputs
        """``bilinear(input1, input2, weight, bias)``: ``(*, I1), (*, I2) -> (*, O)``."""
        out: Tensor[Any, T] = _bilinear("Bilinear", input1, input2, self.weight, self.bias)
        return out

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )


class Embedding(Module, Generic[V, E]):
    """A lookup table ``y = weight[indices]`` (PyTorch's ``nn.Embedding``).

    Args:
        num_embeddings: the table's number of rows ``V``.
        embedding_dim: each row's size ``D``.
        padding_idx: a row that is padding, as PyTorch's: initialised to zeros and never
            trained (the gradient into it is zero, however often it is looked up; the value
            is still looked up as it is, so a row loaded from a checkpoint stays). Negative
            counts from the end (``-1`` is row ``V - 1``). ``None`` (default): no padding row.
        dev, device: a ``Cpu`` or ``Cuda``, or PyTorch's ``"cpu"``/``"cuda"``/``"cuda:N"``
            (:func:`gradtape.devices.default.pick_device`): the device
            whose seeded generator initialises the table (default:
            :func:`gradtape.get_default_device`, which :func:`gradtape.manual_seed` seeds).
        dtype: float32 (default) or float64.

    Parameters:
        weight: ``(V, D)``, ``N(0, 1)`` (PyTorch's default), the ``padding_idx`` row zero.

    Forward: integer indices of any shape ``(...)`` -> ``(..., D)``; the gradient scatters
    into the looked-up rows (:func:`gradtape.ops.embedding`).

    Typed ``Embedding[V, D]`` (rows and row size, inferred from the constructor's arguments;
    annotate ``emb: Embedding[L[100], L[16]] = Embedding(100, 16, dev=dev)``, unannotated
    it is ``Embedding[int, int]``): a tensor of indices of shape type ``tuple[*dims]`` gives
    ``Tensor[tuple[*dims, D], T]`` with the indices' tape kind ``T`` (as :class:`Linear`
    follows its input's: a traced index tensor gives a traced output, whose loss can
    ``backward()``); untyped indices (``Tensor[Any, T]``) give ``Tensor[Any, T]``; an index
    array or list gives ``Tensor[Any, Any]`` (untyped: its shape is not in its type). ``V``
    is not checked (the indices' values are).

    Raises:
        ValueError: ``padding_idx`` outside ``[-V, V)`` (PyTorch's check); (on forward) an
            index outside ``[0, V)`` (from :func:`gradtape.ops.embedding`).
        TypeError: ``padding_idx`` is not an int.
        DTypeError: (on forward) the indices are not integers: a float or bool array, list or
            tensor (``[1.7, 2.2]`` is refused, not truncated to rows 1 and 2).
    """

    def __init__(
        self,
        num_embeddings: V,
        embedding_dim: E,
        padding_idx: int | None = None,
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        dev = pick_device(type(self).__name__, device, dev)
        dtype = pick_dtype(dtype)
        n, d = cast(int, num_embeddings), cast(int, embedding_dim)  # type-level names of ints
        self.num_embeddings, self.embedding_dim = n, d
        padding_idx = _padding_row("Embedding", padding_idx, n)
        self.padding_idx = padding_idx
        self.weight: Tensor[Any, NoneTape] = dev.randn((n, d), dtype)
        if padding_idx is not None:
            self.weight.data[padding_idx] = 0

    @overload
    def forward(self, x: Tensor[AnyShape, T]) -> Tensor[Any, T]: ...
    @overload
    def forward(self, x: Tensor[tuple[*Ts], T]) -> Tensor[tuple[*Ts, E], T]: ...
    @overload
    def forward(self, x: IndexArray) -> Tensor[Any, Any]: ...
    def forward(self, x: Any) -> Any:
        """The rows of ``weight`` at ``x``: ``(..., D)``.

        ``x`` is an int array of any shape, or an integer tensor (a float or bool tensor raises
        :class:`~gradtape.errors.DTypeError`, as ``torch.nn.Embedding`` refuses one). A traced
        tensor's tape is carried on to the output, so ``model(idx.trace(model.alloc_grads()))``
        trains the table into that store; with a plain array the table (a parameter) records
        whenever a traced pass or a ``GradientTape`` context is live (see
        :func:`gradtape.tape.op_tape`), and not in untraced inference.
        """
        if isinstance(x, Tensor):
            # the indices carry no gradient, but a traced index tensor's tape (and its store)
            # is where the table's gradient must go; the tensor's values go through the same
            # integer check as an array's (a float tensor raises DTypeError, never truncated)
            w = self.weight.put_tape(op_tape(x, self.weight)) if x.tape.OWNS_TAPE else self.weight
        else:
            w = self.weight
        y = embedding(x, w)
        pad = self.padding_idx
        if pad is None or y.tape is NONE_TAPE:  # untraced: nothing to cut from a gradient
            return y
        return _padding_without_gradient(y, x, w, pad)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}"


def _padding_without_gradient(y: Any, x: Any, w: Tensor[Any, Any], pad: int) -> Any:
    """``y = weight[x]`` with the rows looked up at ``pad`` cut from the gradient (PyTorch's
    ``padding_idx``): ``y * keep + c``, where ``keep`` is 0 at the padding positions and 1
    elsewhere and the constant ``c`` puts the padding row's value back (it is zero unless the
    row was changed). Nothing is added when no index is ``pad``."""
    idx = _as_array(x.data if isinstance(x, Tensor) else x)
    at_pad = idx == pad
    if not at_pad.any():
        return y
    dt = y.dtype
    keep = np.logical_not(at_pad)[..., None].astype(dt)
    out = y * y._like(keep)
    row = w.data[pad]
    if row.any():
        out = out + y._like(np.multiply(at_pad[..., None], row, dtype=dt))
    return out


class EmbeddingBag(Module, Generic[V, E]):
    """Sums, means or maxima of bags of rows of a table (PyTorch's ``nn.EmbeddingBag``): the
    table as a parameter and :func:`gradtape.nn.functional.embedding_bag` as the forward,
    which never makes the ``(N, D)`` lookup a tensor.

    Args (PyTorch's, in its order):
        num_embeddings: the table's number of rows ``V``.
        embedding_dim: each row's size ``D``.
        max_norm: if given, the rows a forward looks up whose ``norm_type``-norm exceeds it are
            scaled in place to norm ``max_norm`` first (PyTorch's renormalisation, not recorded).
        norm_type: the order of that norm (default 2; ``inf`` allowed).
        scale_grad_by_freq: divide each row's gradient by its index's count in the input.
        mode: ``"mean"`` (default), ``"sum"`` or ``"max"``.
        sparse: accepted for PyTorch's code; the gradient is dense (``weight``'s shape) here.
        _weight: a ``(V, D)`` float tensor to use as the table (PyTorch's; see
            :meth:`from_pretrained`); its memory is shared.
        include_last_offset: a 1-D input's ``offsets`` has ``B + 1`` entries, the last one the
            last bag's end.
        padding_idx: a row whose occurrences enter no bag (initialised to zeros, never
            trained); negative counts from the end. ``None`` (default): no padding row.
        dev, device: a ``Cpu`` or ``Cuda``, or PyTorch's ``"cpu"``/``"cuda"``/``"cuda:N"``
            (:func:`gradtape.devices.default.pick_device`): the device whose seeded generator
            initialises the table (default: :func:`gradtape.get_default_device`).
        dtype: float32 (default; also for ``None``, PyTorch's default dtype) or float64.

    Parameters:
        weight: ``(V, D)``, ``N(0, 1)`` (PyTorch's default), the ``padding_idx`` row zero.

    Forward: ``bag(input, offsets=None, per_sample_weights=None)``: ``input`` ``(B, L)``
    (``B`` bags of ``L`` indices) or ``(N,)`` with ``offsets`` ``(B,)`` (each bag's start;
    ``(B + 1,)`` with ``include_last_offset``), integer tensors, arrays or lists;
    ``per_sample_weights`` of ``input``'s shape (mode ``"sum"``) -> ``(B, D)``, an empty bag
    zeros. Shapes, formulas and gradients: :func:`gradtape.nn.functional.embedding_bag`.

    Typed ``EmbeddingBag[V, D]`` (inferred from the constructor's arguments, as
    :class:`Embedding`): an index tensor ``Tensor[Any, T]`` gives ``Tensor[Rank2[int, D], T]``,
    with the indices' tape kind (a traced index tensor's tape is carried to the output);
    an index array or list gives ``Tensor[Rank2[int, D], Any]``.

    Raises:
        ValueError: ``padding_idx`` outside ``[-V, V)``; an unknown ``mode``; ``"max"`` with
            ``scale_grad_by_freq`` or ``sparse``; ``max_norm`` negative; on forward, the
            errors of :func:`gradtape.nn.functional.embedding_bag` (named ``EmbeddingBag``).
        TypeError: ``padding_idx`` not an int, ``max_norm``/``norm_type`` not numbers,
            ``_weight`` not a tensor; a bad device (:func:`~gradtape.devices.default.pick_device`).
        ShapeError: ``_weight`` is not ``(V, D)``.
        DTypeError: ``_weight`` or ``dtype`` is not float32/float64.
    """

    def __init__(
        self,
        num_embeddings: V,
        embedding_dim: E,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        _weight: Tensor[Any, Any] | None = None,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike | None = np.float32,
    ) -> None:
        op = type(self).__name__
        dev = pick_device(op, device, dev)
        n, d = cast(int, num_embeddings), cast(int, embedding_dim)  # type-level names of ints
        _bag_options(op, mode, scale_grad_by_freq, sparse, max_norm, norm_type)
        self.num_embeddings, self.embedding_dim = n, d
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.mode, self.sparse = scale_grad_by_freq, mode, sparse
        self.include_last_offset = include_last_offset
        self.padding_idx = _padding_row(op, padding_idx, n)
        if _weight is None:
            self.weight: Tensor[Any, NoneTape] = dev.randn((n, d), pick_dtype(dtype))
            if self.padding_idx is not None:
                self.weight.data[self.padding_idx] = 0
            return
        if not isinstance(_weight, Tensor):
            raise TypeError(f"{op}: _weight must be a Tensor, got {type(_weight).__name__}")
        if _weight.dtype.kind != "f":
            raise DTypeError(f"{op}: _weight must be float32 or float64, got dtype {_weight.dtype}")
        if tuple(_weight.shape) != (n, d):
            raise ShapeError(
                f"{op}: _weight of shape {tuple(_weight.shape)} does not match (num_embeddings, embedding_dim) {(n, d)}"
            )
        self.weight = _weight.detach().clone() if _weight.tape.OWNS_TAPE else _weight

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Tensor[Any, Any],
        freeze: bool = True,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
    ) -> EmbeddingBag[int, int]:
        """An ``EmbeddingBag`` whose table is ``embeddings`` (``(V, D)``, its memory shared, as
        PyTorch's ``nn.EmbeddingBag.from_pretrained``): frozen (``requires_grad`` False) unless
        ``freeze=False``; the other arguments as the constructor's. The ``padding_idx`` row
        is left as it is.

        Raises:
            TypeError: ``embeddings`` is not a tensor. ShapeError: it is not 2-D.
            DTypeError: it is not float32/float64. The constructor's errors.
        """
        if not isinstance(embeddings, Tensor):
            raise TypeError(
                f"{cls.__name__}.from_pretrained: embeddings must be a Tensor, got {type(embeddings).__name__}"
            )
        if embeddings.ndim != 2:
            raise ShapeError(
                f"{cls.__name__}.from_pretrained: embeddings must be 2-D (num_embeddings, embedding_dim), "
                f"got shape {tuple(embeddings.shape)}"
            )
        rows, cols = embeddings.shape
        make: Any = cls  # (its widths are the table's: ints known at run time)
        bag: EmbeddingBag[int, int] = make(
            rows,
            cols,
            max_norm,
            norm_type,
            scale_grad_by_freq,
            mode,
            sparse,
            embeddings,
            include_last_offset,
            padding_idx,
            dev=embeddings.device,
        )
        bag.weight.requires_grad_(not freeze)
        return bag

    @overload
    def forward(
        self,
        input: Tensor[Any, T],
        offsets: Tensor[Any, Any] | IndexArray | None = None,
        per_sample_weights: Tensor[Any, Any] | None = None,
    ) -> Tensor[Rank2[int, E], T]: ...
    @overload
    def forward(
        self,
        input: IndexArray,
        offsets: Tensor[Any, Any] | IndexArray | None = None,
        per_sample_weights: Tensor[Any, Any] | None = None,
    ) -> Tensor[Rank2[int, E], Any]: ...
    def forward(self, input: Any, offsets: Any = None, per_sample_weights: Any = None) -> Any:
        """The bags of ``input`` (``(B, L)``, or ``(N,)`` cut by ``offsets``) reduced by
        ``mode``: ``(B, D)``. The errors name ``EmbeddingBag``."""
        return _embedding_bag(
            "EmbeddingBag",
            input,
            self.weight,
            offsets,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.mode,
            self.sparse,
            per_sample_weights,
            self.include_last_offset,
            self.padding_idx,
        )

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s
