"""Rules every op shares: operand checks, tape merging, sum-back of broadcast gradients."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import numpy as np

from gradtape import tape as _tp
from gradtape._typing import S, T
from gradtape.devices import _arrays
from gradtape.devices._arrays import as_array as _as_array
from gradtape.devices._arrays import same_device
from gradtape.errors import DeviceError, DTypeError, ShapeError
from gradtape.tape import NONE_TAPE, GradientTape, _tensor_class, next_id, op_tape, record

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

Array = np.ndarray[Any, Any]
P = ParamSpec("P")
R = TypeVar("R")
_new = object.__new__
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)

SCALARS = (int, float, np.integer, np.floating, np.bool_)
"""Types an op accepts as a scalar operand (converted to a Python float, so a float32
tensor times a scalar stays float32). Complex numbers are not among them: they raise
``TypeError`` instead of silently losing their imaginary part."""


def tensor_operand(op: str, a: Tensor[Any, Any], b: object) -> Tensor[Any, Any]:
    """Check that ``b`` is a tensor of ``a``'s dtype and return it.

    Raises:
        TypeError: ``b`` is neither a tensor nor a number (a raw numpy array, say).
        DTypeError: the dtypes differ, or ``a`` is an integer or bool tensor and ``op`` is
            not in :data:`DTYPE_AGNOSTIC` (``matmul``, ``div``, ``pow``, ``linear``, the
            convolutions, ``prelu``: float ops, also when called as ``Tensor`` methods); the
            message names the op, the dtypes and the shapes.
    """
    if b.__class__ is a.__class__:
        bd = b.data
        if b.device is not a.device:
            check_same_device(op, a, b)
    else:
        bd = _foreign_data(op, b)
    dt = a.data.dtype
    if dt is not _F32 and dt is not _F64 and op not in DTYPE_AGNOSTIC:  # the float rule, for methods too
        refuse_non_float(a, op)
    if bd.dtype != dt:
        raise DTypeError(
            f"{op}: dtypes differ: {a.data.dtype} {a.data.shape} and {bd.dtype} {bd.shape} "
            "(convert one with dev.tensor(x, dtype=...))"
        )
    return b  # type: ignore[return-value]


def tensor_arg(op: str, x: object, name: str = "input") -> Tensor[Any, Any]:
    """``x`` if it is a tensor: the argument check of the functions composed of ops (PyTorch's
    ``torch.*`` and ``F.*`` spellings in ``gradtape._torch_more`` and ``gradtape.nn.functional``).

    Raises:
        TypeError: it is not; the message names the op and the argument.
    """
    if not isinstance(x, _tensor_class()):  # the class, handed down by gradtape.tensor (a higher layer)
        raise TypeError(
            f"{op}: {name} must be a Tensor, got {type(x).__name__} (wrap arrays with gradtape.tensor(...))"
        )
    return x


def check_same_device(op: str, *ts: Any) -> None:
    """Check that the tensors ``ts`` live in one memory (the CPU, or one GPU).

    Raises:
        DeviceError: two of them are on different devices; the message names ``op`` and both
            devices (PyTorch's "Expected all tensors to be on the same device").
    """
    first = ts[0].device
    for t in ts[1:]:
        if not same_device(first, t.device):
            raise DeviceError(
                f"{op}: tensors on different devices: {first} (shape {ts[0].shape}) and {t.device} (shape {t.shape}); "
                f"move one first, e.g. x.to(y.device)"
            )


def _foreign_data(op: str, b: object) -> Array:
    try:
        bd: Array = b.data  # type: ignore[attr-defined]
        b.tape  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError:
        raise TypeError(
            f"{op}: expected a Tensor or a Python number, got {type(b).__name__} (wrap arrays with dev.tensor(...))"
        ) from None
    return bd


def float_data(op: str, a: Tensor[Any, Any], arg: str = "input") -> Array:
    """``a.data`` if it is float32/float64; the check every op that only makes sense on
    floats (softmax, normalisations, dropout, the losses) runs on its input.

    Raises:
        DTypeError: ``a`` is an integer or bool tensor (:mod:`gradtape.autodiff`'s index and
            mask kinds); the message names the op, the argument, the dtype and the shape.
    """
    data: Array = a.data
    if data.dtype.kind != "f":
        raise DTypeError(
            f"{op}: {arg} has dtype {data.dtype} (shape {data.shape}); {op} takes float32 or float64 tensors "
            "(convert with dev.tensor(x, dtype=np.float32))"
        )
    return data


DTYPE_AGNOSTIC = frozenset(
    {"add", "sub", "mul", "neg", "maximum", "minimum"}  # exact on integers (bools: numpy's rules)
    | {"sum", "max", "min"}  # exact reductions (``mask.sum()`` counts, as in PyTorch)
    | {"eq", "ne", "lt", "le", "gt", "ge", "where"}  # comparisons and selection
    | {"reshape", "permute", "transpose", "expand_dims", "unsqueeze", "squeeze", "broadcast_to"}
    | {"concat", "stack", "roll", "tril", "triu", "gather", "index_select", "embedding"}
    | {"argmax", "argmin", "argsort", "sort", "topk", "take_along_axis", "scatter_add", "index_add"}  # issue 27
    | {"masked_fill", "one_hot", "split", "chunk", "flip", "repeat", "tile", "cumsum", "cumprod", "prod"}
    | {"remainder", "fmod", "floor_divide"}  # exact on integers (a zero divisor raises)
    | {"div"}  # PyTorch's promotion: true division in float32, rounding_mode= exact on integers
    | {"amax", "amin", "any", "all", "unbind", "hstack", "vstack", "movedim", "swapaxes"}  # exact on any dtype
    | {"isnan", "isinf", "isfinite", "logical_not", "logical_and", "logical_or", "logical_xor"}  # masks
    | {"isclose", "allclose", "equal"}
    | {
        "abs",
        "square",
        "pow",
        "clamp",
        "clip",
        "sign",
        "floor",
        "ceil",
        "round",
        "trunc",
        "fix",
    }  # PyTorch's integer kernels
)
"""Ops that take tensors of any kind gradtape has (float, int, bool): those whose result on
integers is exact. Every other op is a float op: its tensor arguments must be float32 or
float64, and an integer or bool tensor raises :class:`~gradtape.errors.DTypeError` naming the
op, the argument, the dtype and the shape, whether the op is called as a function
(``gradtape.ops.mean(t)``, checked by :func:`checked`) or as a ``Tensor`` method (``t.mean()``,
``t ** 2``, ``t @ u``: checked where every op of a kind passes, in :func:`record_entry` for the
elementwise ops, :func:`tensor_operand` for the binary ones, and :func:`float_data` in the
reductions). PyTorch refuses the same ops on integers (``mean``, ``var``, ``std``, ``softmax``)
or promotes them to float32; gradtape computes in float32/float64 only, so convert first with
``dev.tensor(x, dtype=np.float32)``."""


_OWN_DTYPE_RULE = frozenset({"div"})
"""Float ops with a rule of their own for integers, so the functional API's check leaves them
to it: ``div`` promotes integer and bool tensors to float32 (PyTorch's true division), by a
number and between two tensors."""


def promote(op: str, a: Tensor[Any, Any], b: Tensor[Any, Any]) -> tuple[Tensor[Any, Any], Tensor[Any, Any]]:
    """PyTorch's type promotion for two tensors of different dtypes where one is an integer or
    bool tensor: an integer or bool tensor meeting a float tensor becomes that float dtype
    (``int64 + float32`` is float32); two integer or bool tensors both become numpy's (and
    PyTorch's) common integer dtype (``int32 + int64`` is int64, ``uint8 + int8`` int16,
    ``bool + int32`` int32). The converted tensor is a new untraced tensor (integers are never
    differentiated); the float one is returned as it is, so its gradient flows.

    Raises:
        DTypeError: ``op`` is ``sub`` and one tensor is bool (PyTorch refuses it).

    Float32 meeting float64 is left alone: :func:`tensor_operand` raises its
    :class:`~gradtape.errors.DTypeError` (gradtape never mixes float precisions silently), as
    it does for the op's other dtype errors (complex). ``op`` names the op for those errors.
    """
    da, db = a.data.dtype, b.data.dtype
    ka, kb = da.kind, db.kind
    a_int, b_int = ka in "iub", kb in "iub"
    if da == db or not (a_int or b_int):
        return a, b
    if op == "sub" and "b" in (ka, kb):
        raise DTypeError(
            f"sub: subtraction with a bool tensor ({da} {a.data.shape} and {db} {b.data.shape}) is not "
            "supported, as in PyTorch (use ~a or a.logical_xor(b), or convert with a.long())"
        )
    if a_int and b_int:
        dt = np.result_type(da, db)
        return cast_untraced(a, dt), cast_untraced(b, dt)
    if ka == "f":
        return a, cast_untraced(b, da)
    if kb == "f":
        return cast_untraced(a, db), b
    return a, b  # complex: tensor_operand names it


def cast_untraced(t: Tensor[Any, Any], dtype: np.dtype[Any]) -> Tensor[Any, Any]:
    """``t``'s values as ``dtype``, a new untraced tensor (for :func:`promote`), made again by
    a replay of :func:`gradtape.capture`."""
    return untraced("to", t, (t,), _astype, t.data, dtype)  # type: ignore[no-any-return]


def _astype(x: Array, dtype: np.dtype[Any]) -> Array:
    y: Array = x.astype(dtype)
    return y


def refuse_non_float(a: Tensor[Any, Any], op: str | None = None) -> None:
    """Raise the float rule's :class:`~gradtape.errors.DTypeError` for ``a``, an integer or
    bool tensor given to a float op, unless the op is in :data:`DTYPE_AGNOSTIC`.

    The error path of the shared helpers (:func:`record_entry`, :func:`tensor_operand`): their
    hot path only compares ``a.data.dtype`` with numpy's float32 and float64 descriptors (two
    identity tests, cheaper than reading ``dtype.kind``), and any other dtype calls this, which
    returns at once for a float (a dtype equal to but not the shared descriptor). The op
    (when ``op`` is None) and the argument's name are read from the calling op's frame: the
    nearest public function below the recording helpers (``exp`` for ``t.exp()``, ``clamp``
    for ``t.clamp(0, 1)``), and its parameter bound to ``a``.

    Raises:
        DTypeError: ``{op}: {arg} has dtype int64 (shape ...); {op} takes float32 or float64
            tensors``, as the functional API's check (:func:`checked`) says it.
    """
    if a.data.dtype.kind == "f":  # a float dtype that is not numpy's shared descriptor (unpickled)
        return
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and (frame.f_code.co_name.startswith(("_", "<")) or frame.f_code.co_name in _HELPERS):
        frame = frame.f_back
    if op is None:
        op = frame.f_code.co_name if frame is not None else "op"
    if op in DTYPE_AGNOSTIC:
        return
    arg = "input"
    if frame is not None:
        arg = next((name for name, value in frame.f_locals.items() if value is a), arg)
    float_data(op, a, arg)


_HELPERS = frozenset({"record_entry", "record_unary", "tensor_operand", "refuse_non_float"})


def int_indices(op: str, indices: object, context: str, what: str = "indices") -> Array:
    """``indices`` (an int, a list, an integer numpy array of any byte order, or an integer
    tensor) as a C-contiguous native-order ``intp`` array of the same shape (a scalar gives a
    0-d array, so ``gather(x, 3)`` drops the axis as ``np.take`` does): the one conversion
    every index argument goes through (``gather``, ``index_select``, ``embedding`` and
    ``nn.Embedding``, ``cross_entropy`` targets), so the kernels never see a float, bool,
    big-endian or non-contiguous index array.

    Args:
        op: the op's name, for messages.
        indices: the index argument.
        context: the other operand's description for messages (``"tensor of shape (3, 4)"``).
        what: the argument's name in messages.

    Raises:
        DTypeError: the indices are not integers (floats, which would be truncated, bools,
            which would be read as 0/1, complex, objects); the message names the op and dtype.
    """
    data = getattr(indices, "data", None) if hasattr(indices, "tape") else None
    idx = _as_array(indices if data is None else data)
    if idx.size == 0 and idx.dtype.kind == "f" and data is None:  # _as_array([]) is float64
        idx = idx.astype(np.intp)
    if idx.dtype.kind not in "iu":
        raise DTypeError(f"{op}: {what} must be integers, got dtype {idx.dtype} of shape {idx.shape} ({context})")
    if idx.ndim == 0:  # a scalar index stays 0-d (np.ascontiguousarray would make it (1,)): take drops the axis
        return _as_array(idx, dtype=np.intp)
    return _arrays.contiguous(idx, np.intp)


def normalize_axes(op: str, axis: int | tuple[int, ...] | None, ndim: int) -> tuple[int, ...]:
    """Turn ``axis`` (None = all, an int, or a tuple; negatives count from the end) into a
    sorted tuple of non-negative axes.

    Raises:
        TypeError: ``axis`` is not None, an int or a tuple/list of ints (``axis=1.5``, a bool).
        ShapeError: an axis is out of range for a tensor of ``ndim`` dims, or repeated.
    """
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else axis
    if not isinstance(axes, (tuple, list)) or any(
        isinstance(ax, bool) or not isinstance(ax, (int, np.integer)) for ax in axes
    ):
        raise TypeError(f"{op}: axis must be None, an int or a tuple of ints, got {axis!r}")
    out = []
    for ax in axes:
        if not -ndim <= ax < ndim:
            raise ShapeError(f"{op}: axis {ax} is out of range for a tensor of {ndim} dims")
        out.append(int(ax) % ndim)
    if len(set(out)) != len(out):
        raise ShapeError(f"{op}: repeated axis in {axis}")
    return tuple(sorted(out))


def is_int(v: object) -> bool:
    """``v`` is a Python or numpy integer, not a bool."""
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def dim_or_axis(op: str, dim: Any, axis: Any, default: Any, name: str = "dim") -> Any:
    """PyTorch's ``dim`` or gradtape's ``axis`` (keyword), the one given: every op with PyTorch's
    ``dim=`` also takes ``axis=``.

    Raises:
        TypeError: both are given (``dim`` not at its default ``default``).
    """
    if axis is None:
        return dim
    if dim is not None and not (type(dim) is type(default) and dim == default):
        raise TypeError(f"{op}: got {name}={dim!r} and axis={axis!r}; pass one of them")
    return axis


def reduce_args(op: str, axis: Any, keepdims: bool | None, dim: Any, keepdim: bool | None) -> tuple[Any, bool]:
    """``(axis, keepdims)`` of a reduction from both spellings: gradtape's (numpy's) ``axis=`` /
    ``keepdims=`` and PyTorch's ``dim=`` / ``keepdim=``, the one given of each pair (``None``:
    not given; ``keepdims`` defaults to ``False``). Every reduction (``sum``, ``mean``, ``max``,
    ``min``, ``var``, ``std``, ``logsumexp``) and its ``Tensor`` method reads its arguments here.

    Raises:
        TypeError: both ``axis`` and ``dim``, or both ``keepdims`` and ``keepdim``, are given;
            the message names the op and both values.
    """
    if dim is not None:
        if axis is not None:
            raise TypeError(f"{op}: got dim={dim!r} and axis={axis!r}; pass one of them (dim is PyTorch's name)")
        axis = dim
    if keepdim is not None:
        if keepdims is not None:
            raise TypeError(
                f"{op}: got keepdim={keepdim!r} and keepdims={keepdims!r}; pass one of them (keepdim is PyTorch's name)"
            )
        keepdims = keepdim
    return axis, bool(keepdims)


def one_dim(op: str, dim: object, shape: tuple[int, ...], arg: str = "dim") -> int:
    """``dim`` as a non-negative int below ``max(len(shape), 1)`` (a 0-d tensor takes 0 or -1).

    Raises:
        TypeError: ``dim`` is not an int (a float, a bool, a string, a tuple, None).
        ShapeError: ``dim`` is out of range; the message names the op and the shape.
    """
    n = max(len(shape), 1)
    if not is_int(dim):
        raise TypeError(f"{op}: {arg} must be an int, got {dim!r} (input of shape {shape})")
    d: int = dim.__index__()  # type: ignore[attr-defined]
    if not -n <= d < n:
        raise ShapeError(f"{op}: {arg} {d} is out of range for a tensor of shape {shape} (valid: {-n} to {n - 1})")
    return d % n


def channel_input(op: str, x: Tensor[Any, Any], min_ndim: int = 2) -> Array:
    """``x``'s data, checked as a PyTorch ``(N, C, *)`` channel-first input of a per-channel op
    (``group_norm``, ``instance_norm``): float32/float64 with at least ``min_ndim`` dims.

    Raises:
        DTypeError: ``x`` is not a float tensor. ShapeError: it has fewer dims (names the shape).
    """
    xd = float_data(op, x)
    if xd.ndim < min_ndim:
        raise ShapeError(f"{op}: expected an input of shape (N, C, *) with at least {min_ndim} dims, got {xd.shape}")
    return xd


def channel_param(op: str, arg: str, x: Tensor[Any, Any], p: object, channels: int) -> Tensor[Any, Any] | None:
    """``p`` (``None``, or a tensor of ``x``'s dtype and shape ``(channels,)``): a per-channel
    parameter or statistic (``weight``, ``bias``, ``running_mean``) of a channel-first op.

    Raises:
        TypeError: ``p`` is not a tensor. DTypeError: its dtype is not ``x``'s.
        ShapeError: its shape is not ``(channels,)``; the message names the op, the argument
            and both shapes.
    """
    if p is None:
        return None
    t = tensor_operand(op, x, p)
    if t.data.shape != (channels,):
        raise ShapeError(
            f"{op}: {arg} of shape {t.data.shape} does not fit input {x.data.shape}: expected ({channels},)"
        )
    return t


def group_count(op: str, num_groups: object, shape: tuple[int, ...]) -> int:
    """``num_groups`` as an int that divides the channel count ``shape[1]``.

    Raises:
        TypeError: ``num_groups`` is not an int. ValueError: it is not positive or does not
            divide the channels (names the shape, as PyTorch's message does).
    """
    if not is_int(num_groups):
        raise TypeError(f"{op}: num_groups must be an int, got {num_groups!r}")
    g: int = num_groups.__index__()  # type: ignore[attr-defined]
    if g <= 0 or shape[1] % g:
        raise ValueError(
            f"{op}: expected the number of channels of input {shape} to be divisible by num_groups={g} (> 0)"
        )
    return g


def row_pair(op: str, a: Tensor[Any, Any], b: object, a_name: str = "x1", b_name: str = "x2") -> Tensor[Any, Any]:
    """Check two sets of row vectors, ``(P, M)`` and ``(R, M)`` or ``(B, P, M)`` and
    ``(B, R, M)`` (``cdist``): float tensors of one dtype, the same feature dim ``M`` and the
    same leading dims. Returns ``b`` as a tensor.

    Raises:
        ShapeError: a rank other than 2 or 3, or the feature or batch dims differ (names both shapes).
        DTypeError: the dtypes differ or are not float. TypeError: ``b`` is not a tensor.
    """
    float_data(op, a, a_name)
    t = tensor_operand(op, a, b)
    sa, sb = a.data.shape, t.data.shape
    if len(sa) not in (2, 3) or len(sb) != len(sa) or sa[-1] != sb[-1] or sa[:-2] != sb[:-2]:
        raise ShapeError(
            f"{op}: expected {a_name} (P, M) and {b_name} (R, M), or (B, P, M) and (B, R, M), got {sa} and {sb}"
        )
    return t


def vector_pair(op: str, a: Tensor[Any, Any], b: object, a_name: str, b_name: str) -> Tensor[Any, Any]:
    """Check two 1-D float tensors of one dtype (``outer``); returns ``b`` as a tensor.

    Raises:
        ShapeError: either is not 1-D (names both shapes). DTypeError: the dtypes differ or
        are not float. TypeError: ``b`` is not a tensor.
    """
    float_data(op, a, a_name)
    t = tensor_operand(op, a, b)
    if a.data.ndim != 1 or t.data.ndim != 1:
        raise ShapeError(f"{op}: expected 1-D {a_name} and {b_name}, got shapes {a.data.shape} and {t.data.shape}")
    return t


def replayable(
    op: str,
    out: Array,
    kernel: Callable[..., Any],
    args: tuple[Any, ...],
    sources: tuple[Any, ...],
    tape: Any,
    train: bool = False,
    writes: tuple[Array, ...] = (),
    rebuilds: tuple[Any, ...] = (),
) -> None:
    """Tell :func:`gradtape.capture`'s recorder (callers test ``gradtape.tape._recorder is not
    None`` first, so an op pays one test when nothing is recorded) that ``kernel(out, *args)``
    brings ``out`` to the values this op has just left in it, given that every kernel noted
    before it has run: a replay reruns the noted kernels in order over the same arrays.

    Args:
        op: the op's name, for the recorder's messages.
        out: the array the op wrote (its output's data, or the array that data views).
        kernel: ``kernel(out, *args)``; it writes ``out`` in place.
        args: the arrays (and constants) the kernel reads: views of the sources' data, never
            copies of them (the recorder refuses a copy: it would be stale at replay).
        sources: the op's tensor inputs (``None`` entries are skipped), checked by the
            recorder: each must be an input of the captured call, a tensor that existed before
            it (a parameter), or the output of a noted kernel.
        tape: the tape the op recorded on.
        train: the kernel also rewrites every array the op's recorded backward reads that is
            neither a source's data nor ``out`` (im2col columns, arg-max indices), so a replayed
            backward reads this replay's values. A recorded op (``tape`` not ``NONE_TAPE``)
            without it refuses the capture: its backward would read the recorded call's values.
        writes: arrays among ``args`` that the kernel writes rather than reads (max pooling's
            arg-max indices): not inputs, so not checked as views of the sources.
        rebuilds: objects whose whole state the kernel makes anew (a recurrent stack's
            kernels, held in a list the backward reads it from): the arrays reachable from them
            are not checked against the recorded ones.
    """
    _tp._recorder.kernel(op, out, kernel, args, sources, tape is not NONE_TAPE, train, writes, rebuilds)


def refill(out: Array, forward: Callable[..., Any], *args: Any) -> None:
    """The replay kernel of an op whose output is ``forward(*args)``: the new result copied
    into ``out`` (for :func:`replayable`; ``args`` hold the op's input arrays)."""
    np.copyto(out, forward(*args))


def refill_all(first: Array, arrays: tuple[Array, ...], forward: Callable[..., Any], args: tuple[Any, ...]) -> None:
    """The replay kernel of an op whose forward ``forward(*args)`` returns its output and the
    arrays its backward reads: each copied into the recorded ``(first, *arrays)`` (for
    :func:`replayable`, with ``arrays`` as its ``writes``)."""
    for old, new in zip((first, *arrays), forward(*args), strict=True):
        np.copyto(old, new)


def record_entry(a: Tensor[S, T], data: Array, fn: Callable[..., None], *args: Any) -> Tensor[S, T]:
    """Wrap ``data`` as the output of an op on ``a`` and, if the op records (:func:`op_tape`), record the entry
    ``(out.id, fn, a.id, *args)``, which backward runs as ``fn(grads, g, entry)`` with the
    output's gradient ``g`` (see ``tape._Entry``; skipped when the output got none).

    The recording path of gradtape's declared one-input ops (``record_scalar`` keeps an inline
    copy, measured faster on the scalar chain); the output
    tensor is built inline (``Tensor._from_op`` without the method call): this runs once per op.

    Raises:
        DTypeError: ``a`` is an integer or bool tensor and the op is not in
            :data:`DTYPE_AGNOSTIC` (:func:`refuse_non_float`; ``t.exp()`` of an int64 tensor).
    """
    dt = a.data.dtype
    if dt is not _F32 and dt is not _F64:  # an integer or bool tensor given to a float op (t.exp())
        refuse_non_float(a)
    tape = a.tape
    if tape is not NONE_TAPE and (tape.__class__ is not GradientTape or not _tp.direct):
        tape = op_tape(a)  # parameters, watched tensors, grad modes, context tapes
    out: Tensor[S, T] = _new(a.__class__)
    out.data = data if data.__class__ is np.ndarray else _as_array(data)  # 0-d: a scalar; CuPy arrays pass
    out.device = a.device
    out.tape = tape
    out.id = oid = next_id()
    out._leaf = False
    if tape is not NONE_TAPE:
        # the output's fresh id doubles as the op's time: later than its inputs' ops,
        # earlier than any op that reads it. A concatenation, not (oid, fn, a.id, *args),
        # which Python 3.11 builds through a list (measured slower on the tape chain).
        tape._record((oid, fn, a.id) + args)  # noqa: RUF005
    return out


DiffOf = Callable[[Any, Callable[[int, Array], Any], int, int], Any]
"""``diff(g, rebuild, out_id, a_id) -> a's gradient tensor``: a one-input op's second rule."""


def record_unary(
    a: Tensor[S, T],
    data: Array,
    rule: Callable[..., None],
    *saved: Any,
    diff: DiffOf | None = None,
    again: tuple[Any, ...] | None = None,
) -> Tensor[S, T]:
    """Wrap ``data`` as the output of a one-input op on ``a`` and record it with
    :func:`gradtape.tape.record` (the one recording call of every structural op): this is its
    one-input shortcut, which also makes the output, refuses an integer or bool ``a`` for a
    float op (as :func:`record_entry`) and finds the tape (:func:`op_tape`).

    ``rule(grads, a_id, g, *saved)`` accumulates ``a``'s gradient given the output's gradient
    ``g`` and the arrays ``saved`` from the forward; it runs only if the output received a
    gradient. ``diff(g, rebuild, out_id, a_id)``, if given, is the op's second rule: ``a``'s
    gradient as a tensor, computed from the gradient tensor ``g`` with gradtape ops
    (``rebuild(id, array)`` gives the saved arrays back as tensors). The one-input ops whose
    math is a formula are declared instead (:mod:`gradtape.ops.declare`); this serves the
    structural ones (pooling, softmax, dropout, casts).

    For :func:`gradtape.capture`: ``data`` that views ``a``'s array (``flip``) is known to a
    recorder (``a`` is read, so a parameter is guarded); ``again = (forward, *args)`` with
    ``forward(*args)`` computing ``data`` anew (``args`` reading ``a``'s array) makes an op
    whose output is a new array replayable (with ``saved`` arrays too only where they are
    ``a``'s array or ``data``: a replay refreshes nothing else).

    Raises:
        DTypeError: ``a`` is an integer or bool tensor (:func:`refuse_non_float`).
    """
    dt = a.data.dtype
    if dt is not _F32 and dt is not _F64:
        refuse_non_float(a)
    tape = op_tape(a)
    out: Tensor[S, T] = a._from_op(data, tape)
    if _tp._recorder is not None:
        _tp._recorder.read(a)
        if again is not None:
            fresh = all(v is a.data or v is data or not isinstance(v, np.ndarray) for v in saved)
            replayable(op_name_of(again[0]), out.data, refill, again, (a,), tape, train=fresh)
    if tape is not NONE_TAPE:
        aid, oid = a.id, out.id

        def backward(grads: Gradients, g: Array) -> None:
            rule(grads, aid, g, *saved)

        def differentiable(g: Any, rebuild: Any) -> list[tuple[int, Any]]:
            return [(aid, diff(g, rebuild, oid, aid))]  # type: ignore[misc]  # recorded only with a diff

        record(tape, out, backward, differentiable if diff is not None else None)
    return out


def untraced(op: str, like: Tensor[Any, Any], sources: tuple[Any, ...], fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` (``args`` reading the ``sources``' arrays) as an untraced tensor on
    ``like``'s device: a mask, a logical reduction, an integer result. A replay of
    :func:`gradtape.capture` computes it again (``op`` names it in the recorder's messages)."""
    out: Tensor[Any, Any] = like._like(_as_array(fn(*args)))
    if _tp._recorder is not None:
        replayable(op, out.data, refill, (fn, *args), sources, NONE_TAPE)
    return out


def op_name_of(fn: Any) -> str:
    """An op's name for the recorder's messages, from its forward function (``np.tril``:
    ``tril``; ``_rolled``: ``rolled``)."""
    return str(getattr(fn, "__name__", type(fn).__name__)).lstrip("_")


def index_tensor(like: Tensor[Any, Any], index: Any, from_values: str | None = None) -> Tensor[Any, Any]:
    """A host integer array (or list) as an untraced int64 tensor on ``like``'s device: the
    GPU's index ops take device indices. Inside a call :func:`gradtape.capture` records, it is
    host data: a constant of the plan once a second recording, on other arguments, makes it
    with the same values (indices from shapes). ``from_values``: the op (``nonzero``,
    ``searchsorted``, ...) computed ``index`` from tensor values, which a replay would not
    read again: the capture is refused, naming it (two recordings could agree by chance)."""
    out: Tensor[Any, Any] = like._like(_arrays.into_memory_of(np.asarray(index, np.int64), like.data))
    if _tp._recorder is not None:
        if from_values is not None:
            _tp._recorder.refuse(
                f"calls {from_values}, whose result (of shape {tuple(out.shape)}) is computed on the host from "
                "tensor values, which a replay would not read again; call it outside the captured function"
            )
        _tp._recorder.host_tensor(out)
    return out


def record_zero_gradient(out: Tensor[S, T], *inputs: Tensor[Any, Any]) -> Tensor[S, T]:
    """Record ``out`` (made on its inputs' tape, :func:`op_tape`) as the output of a piecewise-
    constant op of ``inputs``: each float input that takes part gets a gradient of exactly
    ``0`` of its own shape and dtype, in both rules, even where the output's gradient is
    ``inf`` or NaN. PyTorch's rule for ``floor``, ``ceil``, ``round``, ``trunc``, ``sign`` and
    ``div(..., rounding_mode=...)`` (``zeros_like(grad)`` in its ``derivatives.yaml``): the
    input's gradient is defined and zero, never missing. An untraced ``out`` is returned as it is.
    """
    tape = out.tape
    if tape is not NONE_TAPE:
        metas = [(t.id, t.data.shape, t.data.dtype) for t in inputs if t.data.dtype.kind == "f"]

        def zero_gradient_backward(grads: Gradients, g: Array) -> None:
            for i, shape, dt in metas:
                grads._accum(i, _arrays.zeros(shape, dt, g))

        def zero_gradient_diff(g: Any, rebuild: Any) -> list[tuple[int, Any]]:
            return [(i, g._like(_arrays.zeros(shape, dt, g.data))) for i, shape, dt in metas]

        record(tape, out, zero_gradient_backward, zero_gradient_diff)
    return out


def sum_to(t: Any, shape: tuple[int, ...]) -> Any:
    """:func:`~gradtape.shapes.sum_to_shape` in gradtape ops, for second rules: sum the tensor
    ``t`` over the dims broadcasting added to ``shape`` (recorded, so differentiable again)."""
    if t.shape == shape:
        return t
    lead = t.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(k + lead for k, n in enumerate(shape) if n == 1 and t.shape[k + lead] != 1)
    r = t.sum(axis=axes, keepdims=True) if axes else t
    return r.reshape(shape)


# ----- the functional API's argument check -------------------------------------------------

_TENSORS_ANNOTATION = re.compile(r"^(Sequence|tuple)\[Tensor\[")


def _is_tensor_annotation(note: str) -> bool:
    """``Tensor[...]`` or ``Tensor[...] | None``, nothing else in a union."""
    note = note.removesuffix(" | None")
    if note == "AnyShape":  # a layer's first overload for a bare Any argument
        return True
    if not note.startswith("Tensor["):
        return False
    depth = 0
    for i, ch in enumerate(note):
        depth += (ch == "[") - (ch == "]")
        if depth == 0 and ch == "]":
            return i == len(note) - 1
    return False


def _tensor_params(fn: Callable[..., Any]) -> list[tuple[int, str, str]]:
    """``(position, name, kind)`` of ``fn``'s parameters that every typed signature (each
    ``@overload``, or the function's own annotations) declares as a tensor (``kind``
    ``"tensor"``; ``"optional"`` when ``| None``) or a sequence of tensors (``"tensors"``)."""
    import inspect
    import typing

    signatures = [o.__annotations__ for o in typing.get_overloads(fn)] or [fn.__annotations__]
    out = []
    for pos, name in enumerate(inspect.signature(fn).parameters):
        notes = [str(sig.get(name, "")) for sig in signatures]
        if notes and all(_is_tensor_annotation(n) for n in notes):
            out.append((pos, name, "optional" if any(n.endswith("| None") for n in notes) else "tensor"))
        elif notes and all(_TENSORS_ANNOTATION.match(n) for n in notes):
            out.append((pos, name, "tensors"))
    return out


def checked(fn: Callable[P, R], op: str | None = None, require_float: bool | None = None) -> Callable[P, R]:
    """``fn`` (a public op function) with its tensor arguments checked before it runs.

    Which arguments must be tensors is read from ``fn``'s own typed signatures (see
    :func:`_tensor_params`), so a new op is covered when it is exported. A list, a raw numpy
    array or a number where a tensor is required raises ``TypeError`` naming the op and the
    argument, instead of an ``AttributeError`` from inside the op, and tensors on two devices
    raise ``DeviceError`` naming both (:func:`check_same_device`). The functional API
    (``gradtape.ops.relu``, ``gradtape.losses.mse_loss``) is wrapped; the ``Tensor`` methods,
    whose ``self`` is a tensor by construction, call the unwrapped functions.

    Args:
        fn: the function; ``op``: the name in messages (default ``fn.__name__``).
        require_float: also require float32/float64 tensors (:func:`float_data`); by default
            every op but those in :data:`DTYPE_AGNOSTIC`. ``Module.__call__`` passes ``False``:
            a layer's ops check their own dtypes.
    """
    import functools

    name = op or fn.__name__
    params = _tensor_params(fn)
    if not params:
        return fn
    floats = name not in DTYPE_AGNOSTIC and name not in _OWN_DTYPE_RULE if require_float is None else require_float

    def bad(arg: str, value: object, what: str) -> TypeError:
        hint = " (wrap arrays and lists with dev.tensor(...))" if isinstance(value, (list, tuple, np.ndarray)) else ""
        return TypeError(f"{name}: {arg} must be {what}, got {type(value).__name__}{hint}")

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        Tensor = _tensor_class()
        n = len(args)
        first: Any = None  # the first tensor argument: every other must share its device
        for pos, arg, kind in params:
            value: Any = args[pos] if pos < n else kwargs.get(arg, _MISSING)
            if value is _MISSING:
                continue
            if kind == "tensors":
                if not isinstance(value, (list, tuple)):
                    raise bad(arg, value, "a list or tuple of tensors")
                for i, item in enumerate(value):
                    if item.__class__ is not Tensor:
                        raise bad(f"{arg}[{i}]", item, "a Tensor")
                    if first is None:
                        first = item
                    elif item.device is not first.device:
                        check_same_device(name, first, item)
                continue
            if value.__class__ is not Tensor:
                if value is None and kind == "optional":
                    continue
                raise bad(arg, value, "a Tensor")
            tensor: Any = value
            if first is None:
                first = tensor
            elif tensor.device is not first.device:
                check_same_device(name, first, tensor)
            if floats and tensor.data.dtype.kind != "f":
                float_data(name, tensor, arg)
        return fn(*args, **kwargs)

    return wrapper


def check_exports(namespace: dict[str, Any], names: list[str]) -> None:
    """Replace each function ``namespace[name]`` (a module's ``globals()``, for the names in
    its ``__all__``) with :func:`checked` of it; aliases (``mae_loss is l1_loss``) stay one
    function. Called at the end of ``gradtape.ops`` and ``gradtape.losses``, outside
    ``TYPE_CHECKING`` so the checkers keep the original signatures."""
    done: dict[int, Any] = {}
    for name in names:
        fn = namespace[name]
        namespace[name] = done.setdefault(id(fn), checked(fn))


_MISSING = object()


# ----- spatial arguments (ops/spatial.py: pad, interpolate, adaptive pooling, pixel shuffle) --


def spatial_rank(op: str, data: Array, ranks: tuple[int, ...], layout: str) -> None:
    """Check that ``data`` has one of the ranks ``ranks`` (``layout`` names them for the
    message, ``"(N, C, H, W) or (C, H, W)"``).

    Raises:
        ShapeError: another rank; the message names the op, the layouts and the shape.
    """
    if data.ndim not in ranks:
        raise ShapeError(f"{op}: expects input of shape {layout}, got shape {data.shape} ({data.ndim}-D)")


def positive_int(op: str, name: str, v: object) -> int:
    """``v`` as an int ``>= 1`` (a scale, a factor).

    Raises:
        TypeError: ``v`` is not an int (a float, a bool, a tuple).
        ValueError: ``v < 1``.
    """
    if not is_int(v):
        raise TypeError(f"{op}: {name} must be an int, got {v!r}")
    n: int = v.__index__()  # type: ignore[attr-defined]
    if n < 1:
        raise ValueError(f"{op}: {name} must be >= 1, got {n}")
    return n


def pad_pairs(op: str, pad: object, shape: tuple[int, ...]) -> list[tuple[int, int]]:
    """PyTorch's ``pad`` argument, ``(left, right, top, bottom, ...)`` pairs from the last dim
    backwards, as ``(before, after)`` per padded dim in order from the first padded dim to the
    last (``len(pad) // 2`` trailing dims of ``shape``).

    Raises:
        TypeError: ``pad`` is not a tuple or list of ints.
        ValueError: an odd number of entries, or more than two per dim of ``shape``.
        ShapeError: a negative pad crops a dim below size 0 (shape and pad named).
    """
    if not isinstance(pad, (tuple, list)) or not all(is_int(p) for p in pad):
        raise TypeError(f"{op}: pad must be a tuple of ints (left, right, top, bottom, ...), got {pad!r}")
    if len(pad) % 2:
        raise ValueError(f"{op}: pad must have an even number of entries, got {len(pad)}: {tuple(pad)}")
    k = len(pad) // 2
    if k > len(shape):
        raise ValueError(f"{op}: pad {tuple(pad)} pads {k} dims, more than the input's {len(shape)} (shape {shape})")
    pairs = [(int(pad[2 * j]), int(pad[2 * j + 1])) for j in range(k)][::-1]
    for (lo, hi), n in zip(pairs, shape[len(shape) - k :], strict=True):
        if n + lo + hi < 0:
            raise ShapeError(f"{op}: pad {tuple(pad)} crops a dim of size {n} below 0 (input shape {shape})")
    return pairs


def spatial_size(
    op: str, in_size: tuple[int, ...], size: object, scale_factor: object
) -> tuple[tuple[int, ...], tuple[float, ...] | None]:
    """``(output size, scale factors or None)`` of a resampling of the spatial dims ``in_size``
    from exactly one of ``size`` (an int for every dim or a tuple of one int per dim) and
    ``scale_factor`` (a number or a tuple of numbers, ``out = floor(in * scale)``), as
    ``torch.nn.functional.interpolate``.

    Raises:
        ValueError: both or neither given; a size < 1; a scale that is not positive and finite.
        TypeError: ``size`` not ints, ``scale_factor`` not numbers, or tuples of the wrong length.
        ShapeError: ``scale_factor`` gives an empty output.
    """
    import math

    nd = len(in_size)
    if (size is None) == (scale_factor is None):
        raise ValueError(
            f"{op}: give exactly one of size and scale_factor (got size={size!r}, scale_factor={scale_factor!r})"
        )
    if size is not None:
        sz = (size,) * nd if is_int(size) else size
        if not isinstance(sz, (tuple, list)) or len(sz) != nd or not all(is_int(v) for v in sz):
            raise TypeError(f"{op}: size must be an int or a tuple of {nd} ints, got {size!r}")
        if min(sz) < 1:
            raise ValueError(f"{op}: size must be >= 1, got {size!r}")
        return tuple(int(v) for v in sz), None
    number = (int, float, np.integer, np.floating)
    sf = (scale_factor,) * nd if isinstance(scale_factor, number) else scale_factor
    if (
        not isinstance(sf, (tuple, list))
        or len(sf) != nd
        or not all(isinstance(v, number) and not isinstance(v, (bool, np.bool_)) for v in sf)
    ):
        raise TypeError(f"{op}: scale_factor must be a number or a tuple of {nd} numbers, got {scale_factor!r}")
    scales = tuple(float(v) for v in sf)
    if not all(math.isfinite(v) and v > 0 for v in scales):
        raise ValueError(f"{op}: scale_factor must be positive and finite, got {scale_factor!r}")
    out = tuple(math.floor(n * v) for n, v in zip(in_size, scales, strict=True))
    if min(out) < 1:
        raise ShapeError(f"{op}: scale_factor {scale_factor!r} gives an empty output {out} for input size {in_size}")
    return out, scales


def choice(op: str, name: str, value: object, allowed: tuple[str, ...]) -> str:
    """``value`` if it is one of the strings ``allowed`` (a ``mode``, a ``padding_mode``).

    Raises:
        ValueError: anything else; the message names the op, the argument and the choices.
    """
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{op}: {name} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
    return value


def grid_shapes(op: str, input: Array, grid: Array) -> int:
    """The number of spatial dims (2 or 3) of a sampling of ``input`` ``(N, C, H_in, W_in)`` at
    ``grid`` ``(N, H_out, W_out, 2)``, or of ``input`` ``(N, C, D_in, H_in, W_in)`` at ``grid``
    ``(N, D_out, H_out, W_out, 3)`` (``torch.nn.functional.grid_sample``'s shapes).

    Raises:
        ShapeError: ``input`` is not 4-D or 5-D, ``grid``'s rank is not ``input``'s, the batch
            sizes differ, ``grid``'s last dim is not the number of spatial dims, or a spatial
            dim of ``input`` is empty; the message names the op and both shapes.
    """
    shapes = f"input of shape {tuple(input.shape)} and grid of shape {tuple(grid.shape)}"
    if input.ndim not in (4, 5):
        raise ShapeError(
            f"{op}: expects a 4-D input (N, C, H_in, W_in) with a grid (N, H_out, W_out, 2) or a 5-D input "
            f"(N, C, D_in, H_in, W_in) with a grid (N, D_out, H_out, W_out, 3), got {shapes}"
        )
    k = input.ndim - 2
    if grid.ndim != input.ndim:
        raise ShapeError(f"{op}: a {input.ndim}-D input needs a {input.ndim}-D grid, got {shapes}")
    if grid.shape[0] != input.shape[0]:
        raise ShapeError(f"{op}: input and grid must have the same batch size N, got {shapes}")
    if grid.shape[-1] != k:
        raise ShapeError(
            f"{op}: grid's last dim must be {k} (the {'(x, y)' if k == 2 else '(x, y, z)'} of each sample "
            f"point) for a {input.ndim}-D input, got {shapes}"
        )
    if any(s == 0 for s in input.shape[2:]):
        raise ShapeError(f"{op}: input's spatial dims must be non-empty, got {shapes}")
    return k


def affine_size(op: str, theta: Array, size: object) -> tuple[int, ...]:
    """``size`` (``(N, C, H, W)`` or ``(N, C, D, H, W)``, the output image an affine grid
    samples for: ``torch.nn.functional.affine_grid``'s) as ints, checked against ``theta``
    (``(N, 2, 3)`` for 4 sizes, ``(N, 3, 4)`` for 5).

    Raises:
        TypeError: ``size`` is not a tuple or list of ints (a ``torch.Size`` is a tuple).
        ValueError: it has neither 4 nor 5 entries, or an entry below 1.
        ShapeError: ``theta``'s shape does not fit ``size`` (both named).
    """
    if not isinstance(size, (tuple, list)) or not all(is_int(v) for v in size):
        raise TypeError(f"{op}: size must be a tuple of 4 or 5 ints (N, C, [D,] H, W), got {size!r}")
    dims = tuple(int(v) for v in size)
    if len(dims) not in (4, 5):
        raise ValueError(
            f"{op}: size must be (N, C, H, W) for 2-D or (N, C, D, H, W) for 3-D affine transforms, got {dims}"
        )
    if min(dims) < 1:
        raise ValueError(f"{op}: every size must be positive, got {dims}")
    k = len(dims) - 2
    if theta.shape != (dims[0], k, k + 1):
        raise ShapeError(
            f"{op}: size {dims} needs theta of shape (N, {k}, {k + 1}) = {(dims[0], k, k + 1)} (a batch of "
            f"{k}-D affine matrices), got theta of shape {tuple(theta.shape)}"
        )
    return dims
