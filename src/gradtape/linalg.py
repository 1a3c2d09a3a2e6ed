"""PyTorch's ``torch.linalg`` on gradtape tensors: the same names, signatures, defaults,
batching over leading dims and errors, so ``torch.linalg.solve(A, B)`` ports to
``gradtape.linalg.solve(A, B)``.

Every function takes float32 or float64 tensors on the CPU whose last two dims are the
matrices (``(*, m, n)``, ``*`` zero or more batch dims); integer and bool tensors raise
:class:`~gradtape.errors.DTypeError` naming the function, a bad shape
:class:`~gradtape.errors.ShapeError` naming the function and the shapes, and a singular (or,
for :func:`cholesky`, not positive-definite) matrix :class:`LinAlgError` naming the function,
the shape and the failing batch element, as PyTorch's ``torch.linalg.LinAlgError``.

Forward passes are numpy's LAPACK calls (``np.linalg``, batched; the LAPACK routines PyTorch's
CPU kernels call, so values agree to rounding; the signs of singular and eigen vectors may
differ, numpy linking OpenBLAS's LAPACK and PyTorch's wheels MKL's). Each op's derivative is
written once, against an array namespace (:class:`_Arrays` on numpy arrays for the first rule,
:class:`_Tensors` on gradtape tensors for the second rule, as ``gradtape.ops.declare`` does
for the elementwise ops), following PyTorch's ``FunctionsManual.cpp`` (``linalg_det_backward``,
``cholesky_backward``, ``svd_backward``, ``linalg_eig_backward``, ``linalg_qr_backward``,
``pinv_backward``, ``linalg_solve_triangular_backward``) and the matrix-calculus results they
cite (M. Giles, "An extended collection of matrix derivative results for forward and reverse
mode algorithmic differentiation", 2008; I. Murray, "Differentiation of the Cholesky
decomposition", 2016; J. Townsend, "Differentiating the singular value decomposition", 2016;
M. Seeger et al., "Auto-differentiating linear algebra", 2017). The second rule calls the ops
of this module on tensors, so every op is differentiable to any order.

The norms (:func:`vector_norm`, :func:`matrix_norm`, :func:`norm`) and :func:`matrix_power`,
:func:`multi_dot`, :func:`cross`, :func:`vecdot`, :func:`eigvalsh`, :func:`svdvals` and
:func:`cond` are built from recorded ops, so their rules are those ops'. Every op replays
under :func:`gradtape.capture` (inference and training steps).

Besides ``torch.linalg``'s names (``__all__``), PyTorch's top-level spellings, for the
package's top: :func:`inverse` (``torch.inverse``), :func:`logdet` (``torch.logdet``),
:func:`legacy_cholesky` (``torch.cholesky(input, upper=False)``, ``upper`` positional) and
:func:`pinverse` (``torch.pinverse``); ``torch.det`` and ``torch.slogdet`` are :func:`det`
and :func:`slogdet`, ``torch.matrix_power`` is :func:`matrix_power`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import numpy.typing as npt

from gradtape import tape as _tp
from gradtape._typing import S, T
from gradtape.devices.kernels import blas as _blas
from gradtape.errors import DeviceError, DTypeError, GradtapeError, ShapeError, TapeError
from gradtape.ops import distance as _distance
from gradtape.ops import reduce as _reduce
from gradtape.ops._util import (
    SCALARS,
    float_data,
    is_int,
    normalize_axes,
    record_zero_gradient,
    refill_all,
    replayable,
    sum_to,
    untraced,
)
from gradtape.ops._util import tensor_operand as _tensor_operand
from gradtape.ops.compare import eq as _eq
from gradtape.ops.compare import where as _where
from gradtape.ops.linalg import matmul
from gradtape.ops.select import unbind as _unbind
from gradtape.ops.shape import concat as _concat
from gradtape.ops.shape import stack as _stack
from gradtape.ops.unary import to_dtype as _to_dtype
from gradtape.shapes import sum_to_shape
from gradtape.tape import NONE_TAPE, op_tape, record

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = [
    "EighResult",
    "LinAlgError",
    "QRResult",
    "SVDResult",
    "SlogdetResult",
    "cholesky",
    "cond",
    "cross",
    "det",
    "eigh",
    "eigvalsh",
    "inv",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "multi_dot",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "solve_triangular",
    "svd",
    "svdvals",
    "vecdot",
    "vector_norm",
]

Array = np.ndarray[Any, Any]
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)


class LinAlgError(GradtapeError, np.linalg.LinAlgError, RuntimeError):
    """A matrix is singular (:func:`inv`, :func:`solve`) or not positive-definite
    (:func:`cholesky`): PyTorch's ``torch.linalg.LinAlgError`` (a ``RuntimeError``), also a
    ``numpy.linalg.LinAlgError`` (a ``ValueError``) and a
    :class:`~gradtape.errors.GradtapeError`, so code catching any of the three keeps working.
    The message names the function, the input's shape and the failing batch element (its
    index in the flattened batch dims, as PyTorch's "(Batch element k)")."""


class SlogdetResult(NamedTuple):
    """:func:`slogdet`'s result (PyTorch's ``torch.return_types.linalg_slogdet``)."""

    sign: Tensor[Any, Any]
    logabsdet: Tensor[Any, Any]


class EighResult(NamedTuple):
    """:func:`eigh`'s result (PyTorch's ``torch.return_types.linalg_eigh``)."""

    eigenvalues: Tensor[Any, Any]
    eigenvectors: Tensor[Any, Any]


class SVDResult(NamedTuple):
    """:func:`svd`'s result (PyTorch's ``torch.return_types.linalg_svd``)."""

    U: Tensor[Any, Any]
    S: Tensor[Any, Any]
    Vh: Tensor[Any, Any]


class QRResult(NamedTuple):
    """:func:`qr`'s result (PyTorch's ``torch.return_types.linalg_qr``)."""

    Q: Tensor[Any, Any]
    R: Tensor[Any, Any]


# ----- input checks (every function checks its inputs here, before numpy runs) ----------------


def _tensor_data(op: str, x: object, arg: str) -> Array:
    """``x``'s array, checked: a float32/float64 tensor on the CPU.

    Raises:
        TypeError: ``x`` is not a tensor. DTypeError: an integer or bool tensor.
        DeviceError: a tensor on a GPU (numpy's LAPACK runs on the CPU).
    """
    from gradtape.tensor import Tensor

    if not isinstance(x, Tensor):
        hint = " (wrap arrays with gradtape.tensor(...))" if isinstance(x, (list, tuple, np.ndarray)) else ""
        raise TypeError(f"{op}: {arg} must be a Tensor, got {type(x).__name__}{hint}")
    data = float_data(op, x, arg)
    if data.__class__ is not np.ndarray:
        raise DeviceError(f"{op}: runs on CPU tensors (numpy's LAPACK), got {arg} on {x.device}; move it with .cpu()")
    return data


def _matrices(op: str, x: object, arg: str = "A", square: bool = False) -> Array:
    """``x``'s array, checked as a batch of matrices ``(*, m, n)`` (``square``: ``m == n``).

    Raises:
        TypeError, DTypeError, DeviceError: as :func:`_tensor_data`.
        ShapeError: fewer than 2 dims, or (``square``) non-square matrices; names the shape.
    """
    data = _tensor_data(op, x, arg)
    if data.ndim < 2:
        raise ShapeError(f"{op}: the input tensor {arg} must have at least 2 dimensions, got shape {data.shape}")
    if square and data.shape[-1] != data.shape[-2]:
        m, n = data.shape[-2:]
        raise ShapeError(
            f"{op}: {arg} must be batches of square matrices, but they are {m} by {n} matrices (shape {data.shape})"
        )
    return data


def _same_dtype(op: str, a: Tensor[Any, Any], b: object, arg: str) -> Tensor[Any, Any]:
    """``b``, checked as a CPU tensor of ``a``'s dtype.

    Raises:
        TypeError: ``b`` is not a tensor. DTypeError: its dtype is not ``a``'s (or not float).
    """
    _tensor_data(op, b, arg)
    return _tensor_operand(op, a, b)


def _batch_index(shape: tuple[int, ...], k: int) -> str:
    """PyTorch's "(Batch element k): " prefix for batched inputs, "" for a single matrix."""
    return f"(Batch element {k}): " if len(shape) > 2 else ""


def _flat(a: Array) -> Array:
    """``a`` as ``(batch, m, n)``."""
    return a.reshape((-1, *a.shape[-2:]))


def _zero_pivot(a: Array) -> int:
    """The 1-based index of the first zero pivot of ``a``'s LU factorization with partial
    pivoting (LAPACK ``getrf``'s ``info``), 0 if there is none."""
    u = np.array(a, dtype=a.dtype)
    n = u.shape[0]
    for j in range(n):
        p = j + int(np.argmax(np.abs(u[j:, j])))
        if u[p, j] == 0:
            return j + 1
        if p != j:
            u[[j, p]] = u[[p, j]]
        u[j + 1 :, j:] -= np.outer(u[j + 1 :, j] / u[j, j], u[j, j:])
    return 0


def _singular_element(op: str, a: Array, what: str) -> LinAlgError:
    """The error for the first singular matrix of the batch ``a`` (``(*, n, n)``)."""
    flat = _flat(a)
    for k in range(flat.shape[0]):
        piv = _zero_pivot(flat[k])
        if piv:
            return LinAlgError(f"{op}: {_batch_index(a.shape, k)}{what.format(piv=piv)} (input of shape {a.shape})")
    return LinAlgError(f"{op}: the input matrix is singular to working precision (input of shape {a.shape})")


# ----- the two array namespaces: each derivative is written once, against ``xp`` ---------------


def _data(x: Any) -> Array:
    """The array of ``x`` (a tensor's data, or the array itself)."""
    out: Array = x if isinstance(x, np.ndarray) else x.data
    return out


def _eye(n: int, dtype: np.dtype[Any]) -> Array:
    return np.eye(n, dtype=dtype)


class _Arrays:
    """The first rule's namespace: numpy arrays (products through ``kernels.blas``)."""

    @staticmethod
    def mm(a: Array, b: Array) -> Array:
        return _blas.matmul(a, b)

    @staticmethod
    def mT(a: Array) -> Array:
        return np.swapaxes(a, -1, -2)

    @staticmethod
    def tril(a: Array, k: int = 0) -> Array:
        return np.tril(a, k)

    @staticmethod
    def triu(a: Array, k: int = 0) -> Array:
        return np.triu(a, k)

    @staticmethod
    def unsqueeze(a: Array, d: int) -> Array:
        return np.expand_dims(a, d)

    @staticmethod
    def squeeze_last(a: Array) -> Array:
        return a[..., 0]

    @staticmethod
    def const(like: Array, a: Array) -> Array:
        return a

    @staticmethod
    def eye(like: Array, n: int) -> Array:
        return _eye(n, like.dtype)

    @staticmethod
    def zeros(like: Array, shape: tuple[int, ...]) -> Array:
        return np.zeros(shape, like.dtype)

    @staticmethod
    def diag_embed(v: Array) -> Array:
        return v[..., :, None] * _eye(v.shape[-1], v.dtype)

    @staticmethod
    def diagonal(a: Array) -> Array:
        return np.diagonal(a, axis1=-2, axis2=-1)

    @staticmethod
    def prod_last(a: Array) -> Array:
        out: Array = np.prod(a, axis=-1)
        return out

    @staticmethod
    def narrow_cols(a: Array, k: int) -> Array:
        return a[..., :k]

    @staticmethod
    def narrow_rows(a: Array, k: int) -> Array:
        return a[..., :k, :]

    @staticmethod
    def cat_last(a: Array, b: Array) -> Array:
        return np.concatenate([a, b], axis=-1)

    @staticmethod
    def inv(a: Array) -> Array:
        """``a``'s inverse; a singular matrix of the batch gives ``adj(a) / 0`` (infinities
        with the adjugate's signs, NaN where it is 0), as PyTorch's LU solves give there."""
        try:
            res: Array = np.linalg.inv(a)
            return res
        except np.linalg.LinAlgError:
            flat = _flat(a)
            out = np.empty_like(flat)
            for k in range(flat.shape[0]):
                try:
                    out[k] = np.linalg.inv(flat[k])
                except np.linalg.LinAlgError:
                    with np.errstate(divide="ignore", invalid="ignore"):
                        out[k] = _adjugate_t(_Arrays, flat[k]).T / flat.dtype.type(0)
            return out.reshape(a.shape)

    @staticmethod
    def solve(a: Array, b: Array, left: bool) -> Array:
        return _solve_arrays(a, b, left)

    @staticmethod
    def solve_triangular(a: Array, b: Array, upper: bool, left: bool, unit: bool = False) -> Array:
        return _trisolve(a, b, upper, left, unit)

    @staticmethod
    def svd(a: Array) -> tuple[Array, Array, Array]:
        u, s, vh = np.linalg.svd(a, full_matrices=False)
        return u, s, vh


class _Tensors:
    """The second rule's namespace: every function is a recorded gradtape op (this module's
    ops for ``inv``, ``solve``, ``solve_triangular`` and ``svd``), so the gradient it computes
    is differentiable again. Constants (identity matrices, zeros, signs) are untraced."""

    @staticmethod
    def mm(a: Any, b: Any) -> Any:
        if a.ndim <= 4 and b.ndim <= 4:  # gradtape's matmul takes 1-D to 4-D operands
            return a @ b
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        a3 = a.broadcast_to(batch + a.shape[-2:]).reshape((-1, *a.shape[-2:]))
        b3 = b.broadcast_to(batch + b.shape[-2:]).reshape((-1, *b.shape[-2:]))
        return (a3 @ b3).reshape((*batch, a.shape[-2], b.shape[-1]))

    @staticmethod
    def mT(a: Any) -> Any:
        return a.transpose(-1, -2)

    @staticmethod
    def tril(a: Any, k: int = 0) -> Any:
        return a.tril(k)

    @staticmethod
    def triu(a: Any, k: int = 0) -> Any:
        return a.triu(k)

    @staticmethod
    def unsqueeze(a: Any, d: int) -> Any:
        return a.unsqueeze(d)

    @staticmethod
    def squeeze_last(a: Any) -> Any:
        return a.reshape(a.shape[:-1])

    @staticmethod
    def const(like: Any, a: Array) -> Any:
        return like._like(np.asarray(a, dtype=like.dtype))

    @staticmethod
    def eye(like: Any, n: int) -> Any:
        return like._like(_eye(n, like.dtype))

    @staticmethod
    def zeros(like: Any, shape: tuple[int, ...]) -> Any:
        return like._like(np.zeros(shape, like.dtype))

    @staticmethod
    def diag_embed(v: Any) -> Any:
        return v.unsqueeze(-1) * v._like(_eye(v.shape[-1], v.dtype))

    @staticmethod
    def diagonal(a: Any) -> Any:
        return (a * a._like(_eye(a.shape[-1], a.dtype))).sum(axis=-1)

    @staticmethod
    def prod_last(a: Any) -> Any:
        return a.prod(axis=-1)

    @staticmethod
    def narrow_cols(a: Any, k: int) -> Any:
        return a if a.shape[-1] == k else a[..., :k]

    @staticmethod
    def narrow_rows(a: Any, k: int) -> Any:
        return a if a.shape[-2] == k else a[..., :k, :]

    @staticmethod
    def cat_last(a: Any, b: Any) -> Any:
        return _concat([a, b], axis=-1)

    @staticmethod
    def inv(a: Any) -> Any:
        return inv(a)

    @staticmethod
    def solve(a: Any, b: Any, left: bool) -> Any:
        return _solve(a, b, left, False)

    @staticmethod
    def solve_triangular(a: Any, b: Any, upper: bool, left: bool, unit: bool = False) -> Any:
        return solve_triangular(a, b, upper=upper, left=left, unitriangular=unit)

    @staticmethod
    def svd(a: Any) -> tuple[Any, Any, Any]:
        u, s, vh = svd(a, full_matrices=False)
        return u, s, vh


_VJP = Callable[[Any, list[Any], list[Any], list[Any]], Sequence[Any]]
"""``vjp(xp, gs, inputs, outputs) -> one gradient (or None) per input``: the op's derivative,
``gs`` the outputs' gradients (``None`` for an output that got none), ``inputs`` and
``outputs`` the op's values, all arrays (``xp = _Arrays``, the first rule) or all tensors
(``xp = _Tensors``, the second rule)."""


def _fresh(r: Array, dtype: np.dtype[Any]) -> Array:
    """``r`` as an array of ``dtype`` the gradient store may own and add into."""
    if r.dtype != dtype:
        return r.astype(dtype)
    if not r.flags.writeable or not r.flags.owndata:
        return np.array(r)
    return r


def _absent(g: Any) -> bool:
    """Whether a gradient tensor the differentiable pass gave an output stands for none: the
    pass fills an output that got no gradient with untraced zeros. Treating those as absent
    picks PyTorch's cheaper formulas (``svdvals``, ``eigvalsh``), which stay finite where
    singular values or eigenvalues repeat."""
    return g.tape is NONE_TAPE and not g.data.any()


def _record(
    name: str,
    inputs: Sequence[Tensor[Any, Any]],
    forward: Callable[..., Sequence[Array]],
    args: tuple[Any, ...],
    vjp: _VJP,
    multi: bool = False,
) -> list[Tensor[Any, Any]]:
    """The output tensors of op ``name`` of the tensors ``inputs``: the arrays
    ``forward(*args)`` (``args`` the inputs' arrays and constants), recorded with both rules
    from the one derivative ``vjp`` (see :data:`_VJP`): the first on the arrays, the second on
    the tensors (``rebuild`` of the saved inputs and outputs). Each input's gradient is summed
    back over the dims its value was broadcast along. ``multi``: the op has several outputs
    (each gets a gradient or ``None``). A :func:`gradtape.capture` replay reruns ``forward``
    into the outputs' arrays (the backward reads nothing else)."""
    like = inputs[0]
    tape = op_tape(*inputs)
    arrays = [np.asarray(o) for o in forward(*args)]
    ts: list[Tensor[Any, Any]] = [like._from_op(o, tape) for o in arrays]
    if _tp._recorder is not None:
        rest = tuple(arrays[1:])
        replayable(name, arrays[0], refill_all, (rest, forward, args), tuple(inputs), tape, True, rest)
    if tape is not NONE_TAPE:
        ids = [t.id for t in inputs]
        leafs = [t._leaf for t in inputs]
        datas = [t.data for t in inputs]
        oids = [t.id for t in ts]

        def backward(grads: Gradients, g: Any) -> None:
            gs = list(g) if multi else [g]
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                res = vjp(_Arrays, gs, datas, arrays)
            for i, leaf, d, r in zip(ids, leafs, datas, res, strict=True):
                if r is None or not grads.wants(i, leaf):
                    continue
                r = np.asarray(r)
                if r.shape != d.shape:
                    r = sum_to_shape(r, d.shape)
                grads._accum(i, _fresh(r, d.dtype))

        def differentiable(g: Any, rebuild: Any) -> list[tuple[int, Any]]:
            gs = [None if _absent(x) else x for x in g] if multi else [g]
            ins = [rebuild(i, d) for i, d in zip(ids, datas, strict=True)]
            outs_t = [rebuild(o, a) for o, a in zip(oids, arrays, strict=True)]
            res = vjp(_Tensors, gs, ins, outs_t)
            return [
                (i, r if r.shape == d.shape else sum_to(r, d.shape))
                for i, d, r in zip(ids, datas, res, strict=True)
                if r is not None
            ]

        backward.__qualname__ = f"{name}.backward"
        differentiable.__qualname__ = f"{name}.differentiable"
        record(tape, ts if multi else ts[0], backward, differentiable)
    return ts


def _zeros_for(xp: Any, a: Any) -> Any:
    """A zero gradient of ``a``'s shape (an op whose used outputs do not depend on ``a``)."""
    return xp.zeros(a, tuple(a.shape))


# ----- inv, det, slogdet --------------------------------------------------------------------


def inv(A: Tensor[S, T]) -> Tensor[S, T]:
    """``torch.linalg.inv``: the inverse ``A^{-1}`` of each square matrix of ``A``.

    Shapes: ``A`` ``(*, n, n)`` -> ``(*, n, n)``; float32 or float64, the result has ``A``'s
    dtype. Forward: ``np.linalg.inv`` (LAPACK ``gesv``, an LU factorization with partial
    pivoting). Gradient (Giles 2008, sec. 2.2.3; PyTorch's ``inverse`` backward):
    ``grad_A = -A^{-T} G A^{-T}``, ``G`` the output's gradient; differentiable again.

    Raises:
        LinAlgError: a matrix is singular (an exact zero pivot, as LAPACK and PyTorch detect
            it); the message names the batch element and the zero diagonal element of ``U``.
        ShapeError: ``A`` has fewer than 2 dims or non-square matrices.
        DTypeError: an integer or bool tensor. TypeError: ``A`` is not a tensor.
    """
    a = _matrices("linalg.inv", A, square=True)
    (out,) = _record("linalg.inv", [A], _inv_forward, (a,), _inv_vjp)
    return out


def _inv_forward(a: Array) -> tuple[Array]:
    """:func:`inv`'s forward: ``np.linalg.inv``, PyTorch's error for a singular matrix."""
    try:
        return (np.linalg.inv(a),)
    except np.linalg.LinAlgError:
        raise _singular_element(
            "linalg.inv",
            a,
            "The diagonal element {piv} is zero, the inversion could not be completed because the input matrix is "
            "singular.",
        ) from None


def _inv_vjp(xp: Any, gs: list[Any], ins: list[Any], outs: list[Any]) -> list[Any]:
    """``grad_A = -X^T G X^T`` with ``X = A^{-1}``."""
    (g,), (x,) = gs, outs
    xt = xp.mT(x)
    return [-xp.mm(xt, xp.mm(g, xt))]


def _adjugate_t(xp: Any, a: Any, alpha: Any = None) -> Any:
    """``alpha * adj(A)^T`` (the cofactor matrix: det's derivative, defined for singular
    ``A`` too) from the SVD ``A = U diag(s) V^T``: ``U diag(d) V^T`` with
    ``d_i = alpha det(U) det(V^T) prod_{j != i} s_j`` (PyTorch's ``linalg_det_backward``
    for singular inputs, after N. Higham, "What is the adjugate of a matrix?", 2020).
    ``det(U) det(V^T)`` is +-1, a constant (its derivative vanishes on orthogonal matrices)."""
    u, s, vh = xp.svd(a)
    sign = np.linalg.det(_data(u)) * np.linalg.det(_data(vh))
    n = s.shape[-1]
    eye = xp.eye(s, n)
    others = xp.prod_last(xp.unsqueeze(s, -2) * (1.0 - eye) + eye)  # prod_{j != i} s_j
    scale = xp.const(s, sign) if alpha is None else alpha * xp.const(s, sign)
    d = others * xp.unsqueeze(scale, -1)
    return xp.mm(u * xp.unsqueeze(d, -2), vh)


def det(A: Tensor[Any, T]) -> Tensor[Any, T]:
    """``torch.linalg.det``: the determinant of each square matrix of ``A``.

    Shapes: ``A`` ``(*, n, n)`` -> ``(*)`` (a 0-d tensor for one matrix); float32 or
    float64. Forward: ``np.linalg.det`` (LU, the product of ``U``'s diagonal with the
    permutation's sign). Gradient (Jacobi's formula; Giles 2008, sec. 2.2.4):
    ``grad_A = g det(A) A^{-T}``; where a matrix of the batch is singular
    (``|det| < 100 eps``, PyTorch's test) the whole batch takes the cofactor form
    ``g adj(A)^T`` computed from the SVD (PyTorch's ``linalg_det_backward``), which is the
    derivative there too. Differentiable again.

    PyTorch's plain ``backward()`` at an exactly singular matrix returns ``det * A^{-T}`` from
    a perturbed LU, that is zeros; its ``create_graph=True`` path returns the cofactor matrix.
    gradtape returns the cofactor matrix (the derivative) in both.

    Raises:
        ShapeError: fewer than 2 dims or non-square matrices. DTypeError, TypeError: as
            :func:`inv`. (A singular matrix is not an error: its determinant is 0.)
    """
    a = _matrices("linalg.det", A, square=True)
    (out,) = _record("linalg.det", [A], _det_forward, (a,), _det_vjp)
    return out


def _det_forward(a: Array) -> tuple[Array]:
    return (np.asarray(np.linalg.det(a)),)


def _singular_det(d: Array) -> Array:
    """Which determinants PyTorch's ``linalg_det_backward`` treats as singular."""
    out: Array = np.abs(d) < 100.0 * np.finfo(d.dtype).eps
    return out


def _det_vjp(xp: Any, gs: list[Any], ins: list[Any], outs: list[Any]) -> list[Any]:
    """``grad_A = g det A^{-T}``, or ``g adj(A)^T`` when a matrix of the batch is singular."""
    (g,), (a,), (d,) = gs, ins, outs
    if a.shape[-1] == 0:  # det of a 0 x 0 matrix is 1: a zero gradient of the empty shape
        return [_zeros_for(xp, a)]
    if _singular_det(_data(d)).any():
        return [_adjugate_t(xp, a, g)]
    return [xp.unsqueeze(xp.unsqueeze(g * d, -1), -1) * xp.mT(xp.inv(a))]


def slogdet(A: Tensor[Any, Any]) -> SlogdetResult:
    """``torch.linalg.slogdet``: the sign and the log of the absolute value of the
    determinant, a named tuple ``(sign, logabsdet)``.

    Shapes: ``A`` ``(*, n, n)`` -> two ``(*)`` tensors of ``A``'s dtype; a singular matrix
    gives ``sign = 0``, ``logabsdet = -inf``. Forward: ``np.linalg.slogdet`` (LU). Gradient
    (PyTorch's ``slogdet_backward``, real case): ``grad_A = g_logabsdet A^{-T}``; ``sign`` is
    piecewise constant: its gradient is 0 (an output whose only use is ``sign`` gives ``A`` a
    zero gradient, where PyTorch leaves it ``None``). At a singular matrix the gradient is
    infinite (``adj(A)^T / 0``), as PyTorch's. Differentiable again.

    Raises:
        ShapeError: fewer than 2 dims or non-square matrices. DTypeError, TypeError: as
            :func:`inv`.
    """
    a = _matrices("linalg.slogdet", A, square=True)
    s, lad = _record("linalg.slogdet", [A], _slogdet_forward, (a,), _slogdet_vjp, multi=True)
    return SlogdetResult(s, lad)


def _slogdet_forward(a: Array) -> tuple[Array, Array]:
    sign, logabs = np.linalg.slogdet(a)
    return np.asarray(sign), np.asarray(logabs)


def _slogdet_vjp(xp: Any, gs: list[Any], ins: list[Any], outs: list[Any]) -> list[Any]:
    """``grad_A = g_logabsdet A^{-T}`` (the sign's gradient contributes nothing)."""
    (a,) = ins
    g = gs[1]
    if g is None:
        return [_zeros_for(xp, a)]
    return [xp.unsqueeze(xp.unsqueeze(g, -1), -1) * xp.mT(xp.inv(a))]


def logdet(input: Tensor[Any, T]) -> Tensor[Any, T]:
    """``torch.logdet``: ``log(det(A))``, NaN where the determinant is negative and ``-inf``
    where it is 0: :func:`slogdet`'s ``logabsdet`` where the sign is not -1 (PyTorch's
    composition), so the gradient is ``A^{-T}`` there and 0 at the NaNs.

    Shapes, dtypes and errors: as :func:`slogdet`.
    """
    sign, logabs = slogdet(input)
    out: Tensor[Any, T] = _where(_eq(sign, -1.0), math.nan, logabs)
    return out


def inverse(input: Tensor[S, T]) -> Tensor[S, T]:
    """``torch.inverse``: :func:`inv` (PyTorch's top-level name and argument name)."""
    return inv(input)


# ----- solve, solve_triangular ------------------------------------------------------------


def _solve_arrays(a: Array, b: Array, left: bool) -> Array:
    """``A^{-1} B`` (``left``) or ``B A^{-1}`` for batches of matrices (batch dims broadcast);
    raises numpy's ``LinAlgError`` for a singular matrix."""
    if left:
        return np.linalg.solve(a, b)
    return np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)


def solve(A: Tensor[Any, Any], B: Tensor[Any, Any], *, left: bool = True) -> Tensor[Any, Any]:
    """``torch.linalg.solve``: the solution ``X`` of ``A X = B`` (``left=True``) or
    ``X A = B`` (``left=False``) for square ``A``.

    Shapes: ``A`` ``(*, n, n)``; ``B`` ``(*, n, k)`` (``(*, k, n)`` with ``left=False``), or
    a batch of vectors ``(*, n)`` (PyTorch's rule: ``B`` is 1-D, or ``B.shape == A.shape[:-1]``;
    left only), giving ``X`` of ``B``'s form; the batch dims of ``A`` and ``B`` broadcast.
    Float32 or float64, both alike. Forward: ``np.linalg.solve`` (LU with partial pivoting).
    Gradient (Giles 2008, sec. 2.3.1; PyTorch's ``linalg_solve_backward``): with ``G`` the
    output's gradient, ``grad_B = A^{-T} G`` and ``grad_A = -grad_B X^T`` (left), or
    ``grad_B = G A^{-T}`` and ``grad_A = -X^T grad_B`` (right), each summed over the batch
    dims its operand was broadcast along; differentiable again.

    Raises:
        LinAlgError: a matrix is singular (names the batch element).
        ShapeError: ``A`` is not a batch of square matrices, the shapes do not fit the
            equation, or the batch dims do not broadcast (names both shapes).
        DTypeError: an integer or bool tensor, or ``A`` and ``B`` of different dtypes.
        TypeError: an operand is not a tensor.
    """
    out: Tensor[Any, Any] = _solve(A, B, bool(left), None)
    return out


def _solve(A: Any, B: Any, left: bool, vector: bool | None) -> Any:
    """:func:`solve`; ``vector=False`` skips PyTorch's vector test (the second rules pass
    matrices whose shapes could pass for a batch of vectors)."""
    op = "linalg.solve"
    a = _matrices(op, A, square=True)
    bt = _same_dtype(op, A, B, "B")
    b = bt.data
    n = a.shape[-1]
    if vector is None:
        vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
    bm = b[..., None] if vector else b
    if bm.ndim < 2:
        raise ShapeError(f"{op}: B must have at least 1 dimension, got shape {b.shape} (A {a.shape})")
    ok = bm.shape[-2] == n if left else bm.shape[-1] == n
    if not ok:
        eq = "AX = B" if left else "XA = B"
        raise ShapeError(
            f"{op}: incompatible shapes of A and B for the equation {eq}: A {a.shape} ({n}x{n}), "
            f"B {b.shape} ({bm.shape[-2]}x{bm.shape[-1]})"
        )
    try:
        np.broadcast_shapes(a.shape[:-2], bm.shape[:-2])
    except ValueError:
        raise ShapeError(f"{op}: the batch dims of A {a.shape} and B {b.shape} do not broadcast") from None

    def vjp(xp: Any, gs: list[Any], ins: list[Any], outs: list[Any]) -> list[Any]:
        """``grad_B = A^{-T} G``, ``grad_A = -grad_B X^T`` (left; the mirror image right)."""
        (g,), (am, _), (xo,) = gs, ins, outs
        gm = xp.unsqueeze(g, -1) if vector else g
        xm = xp.unsqueeze(xo, -1) if vector else xo
        gb = xp.solve(xp.mT(am), gm, left)
        ga = -xp.mm(gb, xp.mT(xm)) if left else -xp.mm(xp.mT(xm), gb)
        return [ga, xp.squeeze_last(gb) if vector else gb]

    (out,) = _record(op, [A, bt], _solve_forward, (a, b, left, vector), vjp)
    return out


def _solve_forward(a: Array, b: Array, left: bool, vector: bool) -> tuple[Array]:
    """:func:`solve`'s forward (``vector``: ``b`` is a batch of vectors), PyTorch's error for
    a singular matrix (the batch element counted in the broadcast batch)."""
    bm = b[..., None] if vector else b
    try:
        x = _solve_arrays(a, bm, left)
    except np.linalg.LinAlgError:
        n = a.shape[-1]
        full = np.broadcast_to(a, (*np.broadcast_shapes(a.shape[:-2], bm.shape[:-2]), n, n))
        raise _singular_element(
            "linalg.solve", full, "The solver failed because the input matrix is singular."
        ) from None
    return (x[..., 0] if vector else x,)


def _triangle(a: Array, upper: bool, unit: bool) -> Array:
    """The triangle of ``a`` that a triangular solve reads, with a unit diagonal if ``unit``."""
    t = np.triu(a) if upper else np.tril(a)
    if unit:
        eye = _eye(a.shape[-1], a.dtype)
        t = t * (1 - eye) + eye
    return t


def _trisolve(a: Array, b: Array, upper: bool, left: bool, unit: bool) -> Array:
    """``T^{-1} B`` (``left``) or ``B T^{-1}`` for the triangle ``T`` of ``a``; a zero on the
    diagonal gives infinities and NaNs (substitution, as LAPACK's ``trsm``), never an error."""
    if not left:
        return np.swapaxes(_trisolve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2), not upper, True, unit), -1, -2)
    t = _triangle(a, upper, unit)
    if np.all(np.diagonal(t, axis1=-2, axis2=-1) != 0):
        try:
            return np.linalg.solve(t, b)
        except np.linalg.LinAlgError:
            pass
    n = t.shape[-1]
    batch = np.broadcast_shapes(t.shape[:-2], b.shape[:-2])
    t = np.broadcast_to(t, (*batch, n, n))
    x = np.array(np.broadcast_to(b, (*batch, n, b.shape[-1])), dtype=np.result_type(t, b))
    rows = range(n - 1, -1, -1) if upper else range(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in rows:
            done = slice(i + 1, n) if upper else slice(0, i)
            acc = x[..., i, :] - np.einsum("...j,...jk->...k", t[..., i, done], x[..., done, :])
            x[..., i, :] = acc / t[..., i, i, None]
    return x


def solve_triangular(
    A: Tensor[Any, Any], B: Tensor[Any, Any], *, upper: bool, left: bool = True, unitriangular: bool = False
) -> Tensor[Any, Any]:
    """``torch.linalg.solve_triangular``: the solution ``X`` of ``T X = B`` (``left=True``)
    or ``X T = B``, ``T`` the upper (``upper=True``) or lower triangle of ``A`` (the other
    triangle is not read), with ones on the diagonal if ``unitriangular``.

    Shapes: ``A`` ``(*, n, n)``, ``B`` ``(*, n, k)`` (``(*, k, n)`` with ``left=False``),
    batch dims broadcast; float32 or float64, both alike. Forward: ``np.linalg.solve`` of the
    triangle (substitution where its diagonal has a zero: infinities and NaNs, no error, as
    PyTorch). Gradient (PyTorch's ``linalg_solve_triangular_backward``):
    ``grad_B = T^{-T} G``, ``grad_A = -grad_B X^T`` (left; ``G T^{-T}`` and ``-X^T grad_B``
    right), ``grad_A`` kept on the triangle read (without the diagonal if ``unitriangular``);
    summed over broadcast batch dims; differentiable again.

    Raises:
        ShapeError: ``A`` is not a batch of square matrices, ``B`` has fewer than 2 dims or
            does not fit, or the batch dims do not broadcast.
        DTypeError, TypeError: as :func:`solve`.
    """
    op = "linalg.solve_triangular"
    a = _matrices(op, A, square=True)
    bt = _same_dtype(op, A, B, "B")
    b = _matrices(op, bt, "B")
    n = a.shape[-1]
    if (b.shape[-2] if left else b.shape[-1]) != n:
        raise ShapeError(f"{op}: incompatible shapes of A {a.shape} and B {b.shape} (left={bool(left)})")
    try:
        np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise ShapeError(f"{op}: the batch dims of A {a.shape} and B {b.shape} do not broadcast") from None
    up, lf, unit = bool(upper), bool(left), bool(unitriangular)

    def vjp(xp: Any, gs: list[Any], ins: list[Any], outs: list[Any]) -> list[Any]:
        """``grad_B = T^{-T} G``, ``grad_A = tri(-grad_B X^T)`` (left; mirrored right)."""
        (g,), (am, _), (xo,) = gs, ins, outs
        gb = xp.solve_triangular(xp.mT(am), g, not up, lf, unit)
        ga = -xp.mm(gb, xp.mT(xo)) if lf else -xp.mm(xp.mT(xo), gb)
        ga = xp.triu(ga, int(unit)) if up else xp.tril(ga, -int(unit))
        return [ga, gb]

    (out,) = _record(op, [A, bt], _trisolve_forward, (a, b, up, lf, unit), vjp)
    return out


def _trisolve_forward(a: Array, b: Array, upper: bool, left: bool, unit: bool) -> tuple[Array]:
    return (_trisolve(a, b, upper, left, unit),)


# ----- cholesky ----------------------------------------------------------------------------


def _not_positive_definite(op: str, a: Array, upper: bool) -> LinAlgError:
    """The error for the first matrix of the batch ``a`` that is not positive-definite, with
    the order of its first leading minor that is not (as LAPACK's ``potrf`` reports it)."""
    flat = _flat(a)
    for k in range(flat.shape[0]):
        try:
            np.linalg.cholesky(flat[k], upper=upper)
            continue
        except np.linalg.LinAlgError:
            pass
        lo, hi = 1, flat.shape[-1]  # the smallest failing leading minor (failure is monotone)
        while lo < hi:
            mid = (lo + hi) // 2
            try:
                np.linalg.cholesky(flat[k, :mid, :mid], upper=upper)
                lo = mid + 1
            except np.linalg.LinAlgError:
                hi = mid
        return LinAlgError(
            f"{op}: {_batch_index(a.shape, k)}The factorization could not be completed because the input is not "
            f"positive-definite (the leading minor of order {lo} is not positive-definite) (input of shape {a.shape})"
        )
    return LinAlgError(f"{op}: the input is not positive-definite (input of shape {a.shape})")


def cholesky(A: Tensor[S, T], *, upper: bool = False) -> Tensor[S, T]:
    """``torch.linalg.cholesky``: the Cholesky factor of each symmetric positive-definite
    matrix of ``A``: lower-triangular ``L`` with ``A = L L^T`` (``upper=True``: ``U = L^T``,
    ``A = U^T U``). Only the lower (``upper=True``: upper) triangle of ``A`` is read.

    Shapes: ``(*, n, n)`` -> ``(*, n, n)``; float32 or float64. Forward:
    ``np.linalg.cholesky`` (LAPACK ``potrf``). Gradient (Murray 2016, "Differentiation of
    the Cholesky decomposition", eq. 10; PyTorch's ``cholesky_backward``): with ``G`` the
    gradient of ``L``, ``P = Phi(L^T G)`` (``Phi`` keeps the lower triangle, its diagonal
    halved, and mirrors it: ``0.5 (tril(X) + tril(X, -1)^T)``), ``grad_A = L^{-T} P L^{-1}``
    (two triangular solves), a symmetric matrix; differentiable again.

    Raises:
        LinAlgError: a matrix is not positive-definite; the message names the batch element
            and the order of the leading minor that is not (PyTorch's message).
        ShapeError: fewer than 2 dims or non-square matrices. DTypeError, TypeError: as
            :func:`inv`.
    """
    op = "linalg.cholesky"
    a = _matrices(op, A, square=True)
    up = bool(upper)

    def vjp(xp: Any, gs: list[Any], ins: list[Any], outs: list[Any]) -> list[Any]:
        """Murray's ``grad_A = L^{-T} Phi(L^T G) L^{-1}``."""
        (g,), (factor,) = gs, outs
        low, gl = (xp.mT(factor), xp.mT(g)) if up else (factor, g)
        p = xp.tril(xp.mm(xp.mT(low), gl))
        p = (p + xp.mT(xp.tril(p, -1))) * 0.5
        p = xp.solve_triangular(xp.mT(low), p, True, True)
        return [xp.solve_triangular(low, p, False, False)]

    (out,) = _record(op, [A], _cholesky_forward, (a, up), vjp)
    return out


def _cholesky_forward(a: Array, upper: bool) -> tuple[Array]:
    """:func:`cholesky`'s forward, PyTorch's error for a matrix that is not positive-definite."""
    try:
        return (np.linalg.cholesky(a, upper=upper),)
    except np.linalg.LinAlgError:
        raise _not_positive_definite("linalg.cholesky", a, upper) from None


def legacy_cholesky(input: Tensor[S, T], upper: bool = False) -> Tensor[S, T]:
    """``torch.cholesky(input, upper=False)`` (PyTorch's deprecated top-level spelling, whose
    ``upper`` may be positional): :func:`cholesky`."""
    return cholesky(input, upper=upper)


# ----- eigh, eigvalsh ----------------------------------------------------------------------


def _uplo(op: str, UPLO: object) -> Any:
    """``UPLO`` checked: ``'L'`` or ``'U'``.

    Raises:
        ValueError: anything else (PyTorch's message).
    """
    if UPLO not in ("L", "U"):
        raise ValueError(f"{op}: expected UPLO argument to be 'L' or 'U', but got {UPLO!r}")
    return str(UPLO)


def eigh(A: Tensor[Any, Any], UPLO: str = "L") -> EighResult:
    """``torch.linalg.eigh``: the eigenvalues (ascending) and orthonormal eigenvectors of
    each symmetric matrix of ``A``, a named tuple ``(eigenvalues, eigenvectors)`` with
    ``A = V diag(L) V^T``; only the lower (``UPLO='L'``) or upper (``'U'``) triangle is read.

    Shapes: ``(*, n, n)`` -> ``(*, n)`` and ``(*, n, n)``; float32 or float64. Forward:
    ``np.linalg.eigh`` (LAPACK ``syevd``, PyTorch's CPU routine; the eigenvectors' signs may
    differ from PyTorch's: numpy links OpenBLAS's LAPACK, PyTorch's wheels MKL's). Gradient
    (PyTorch's ``linalg_eig_backward``, Hermitian case; Giles 2008, sec. 3.1): with ``gL``,
    ``gV`` the outputs' gradients and ``E_ij = L_j - L_i`` (1 on the diagonal),
    ``grad_A = V (skew(V^T gV) / E + diag(gL)) V^T``, ``skew(X) = (X - X^T) / 2``;
    ``V diag(gL) V^T`` when only the eigenvalues are used. Defined for distinct eigenvalues
    (repeated ones give infinities where ``gV`` is used, as in PyTorch); the eigenvectors'
    signs are arbitrary, so a loss should not depend on them. Differentiable again.

    Raises:
        ValueError: ``UPLO`` is not ``'L'`` or ``'U'``.
        ShapeError: fewer than 2 dims or non-square matrices. DTypeError, TypeError: as
            :func:`inv`. LinAlgError: LAPACK did not converge.
    """
    op = "linalg.eigh"
    a = _matrices(op, A, square=True)
    uplo = _uplo(op, UPLO)
    lam, vec = _record(op, [A], _eigh_forward, (a, uplo), _eigh_vjp, multi=True)
    return EighResult(lam, vec)


def _eigh_forward(a: Array, uplo: Any) -> tuple[Array, Array]:
    try:
        w, v = np.linalg.eigh(a, UPLO=uplo)
    except np.linalg.LinAlgError as e:
        raise _no_convergence("linalg.eigh", a, e) from None
    return w, v


def _eigvalsh_forward(a: Array, uplo: Any) -> Array:
    try:
        w: Array = np.linalg.eigvalsh(a, UPLO=uplo)
    except np.linalg.LinAlgError as e:
        raise _no_convergence("linalg.eigvalsh", a, e) from None
    return w


def _no_convergence(op: str, a: Array, e: Exception) -> LinAlgError:
    return LinAlgError(f"{op}: the algorithm failed to converge ({e}; input of shape {a.shape})")


def _eigh_vjp(xp: Any, gs: list[Any], ins: list[Any], outs: list[Any]) -> list[Any]:
    """``grad_A = V (skew(V^T gV) / E + diag(gL)) V^T``."""
    (gl, gv), (a,), (lam, v) = gs, ins, outs
    if gv is None:
        if gl is None:
            return [_zeros_for(xp, a)]
        return [xp.mm(v * xp.unsqueeze(gl, -2), xp.mT(v))]
    vgv = xp.mm(xp.mT(v), gv)
    vgv = (vgv - xp.mT(vgv)) * 0.5
    e = xp.unsqueeze(lam, -2) - xp.unsqueeze(lam, -1) + xp.eye(lam, lam.shape[-1])
    inner = vgv / e
    if gl is not None:
        inner = inner + xp.diag_embed(gl)
    return [xp.mm(v, xp.mm(inner, xp.mT(v)))]


def eigvalsh(A: Tensor[Any, T], UPLO: str = "L") -> Tensor[Any, T]:
    """``torch.linalg.eigvalsh``: :func:`eigh`'s eigenvalues alone, ``(*, n)`` ascending.

    Where ``A`` takes part in a gradient this is ``eigh(A).eigenvalues`` (the eigenvectors
    are needed: ``grad_A = V diag(g) V^T``); otherwise only the eigenvalues are computed
    (``np.linalg.eigvalsh``). Errors: as :func:`eigh`.
    """
    op = "linalg.eigvalsh"
    a = _matrices(op, A, square=True)
    uplo = _uplo(op, UPLO)
    if op_tape(A) is not NONE_TAPE:
        out: Tensor[Any, T] = eigh(A, uplo).eigenvalues
        return out
    res: Tensor[Any, T] = untraced(op, A, (A,), _eigvalsh_forward, a, uplo)
    return res


# ----- svd, svdvals, pinv, qr -------------------------------------------------------------


def svd(A: Tensor[Any, Any], full_matrices: bool = True) -> SVDResult:
    """``torch.linalg.svd``: ``A = U diag(S) Vh`` for each matrix of ``A``, a named tuple
    ``(U, S, Vh)``, ``S`` descending.

    Shapes: ``A`` ``(*, m, n)``, ``k = min(m, n)``: ``U`` ``(*, m, m)``, ``S`` ``(*, k)``,
    ``Vh`` ``(*, n, n)``; ``full_matrices=False``: ``U`` ``(*, m, k)``, ``Vh`` ``(*, k, n)``.
    Float32 or float64. Forward: ``np.linalg.svd`` (LAPACK ``gesdd``, PyTorch's CPU default;
    the singular vectors' signs may differ from PyTorch's, as :func:`eigh`'s). Gradient
    (PyTorch's ``svd_backward``; Townsend 2016): with ``E_jk = S_k^2 - S_j^2`` (1 on the
    diagonal) and ``skew(X) = X - X^T``,
    ``grad_A = U [(skew(U^T gU) / E) S + S (skew(V^T gV) / E) + diag(gS)] V^T``, plus
    ``(I - U U^T) gU S^{-1} V^T`` when ``m > n`` and ``U S^{-1} gV^T (I - V V^T)`` when
    ``m < n``; ``U diag(gS) V^T`` when only ``S`` is used. With ``full_matrices=True`` the
    columns of ``U`` (rows of ``Vh``) beyond ``k`` get no gradient, as in PyTorch. Defined
    for distinct (and, for rectangular matrices, non-zero) singular values; the loss must
    not depend on the singular vectors' signs. Differentiable again.

    Raises:
        ShapeError: fewer than 2 dims. DTypeError, TypeError: as :func:`inv`.
        LinAlgError: LAPACK did not converge.
    """
    op = "linalg.svd"
    a = _matrices(op, A)
    full = bool(full_matrices)

    def vjp(xp: Any, gs: list[Any], ins: list[Any], outs: list[Any]) -> list[Any]:
        gu, gsv, gvh = gs
        uu, sv, vv = outs
        k = sv.shape[-1]
        if full:  # the extra columns of U (rows of Vh) take no part, as PyTorch's narrow
            uu, vv = xp.narrow_cols(uu, k), xp.narrow_rows(vv, k)
            gu = None if gu is None else xp.narrow_cols(gu, k)
            gvh = None if gvh is None else xp.narrow_rows(gvh, k)
        return [_svd_grad(xp, ins[0], gu, gsv, gvh, uu, sv, vv)]

    u_t, s_t, vh_t = _record(op, [A], _svd_forward, (a, full), vjp, multi=True)
    return SVDResult(u_t, s_t, vh_t)


def _svd_forward(a: Array, full: bool) -> tuple[Array, Array, Array]:
    try:
        u, s, vh = np.linalg.svd(a, full_matrices=full)
    except np.linalg.LinAlgError as e:
        raise _no_convergence("linalg.svd", a, e) from None
    return u, s, vh


def _svdvals_forward(a: Array) -> Array:
    try:
        s: Array = np.linalg.svd(a, compute_uv=False)
    except np.linalg.LinAlgError as e:
        raise _no_convergence("linalg.svdvals", a, e) from None
    return s


def _svd_grad(xp: Any, a: Any, gu: Any, gs: Any, gvh: Any, u: Any, s: Any, vh: Any) -> Any:
    """PyTorch's ``svd_backward`` (real case) on the reduced factors."""
    m, n = u.shape[-2], vh.shape[-1]
    if gu is None and gvh is None:
        if gs is None:
            return _zeros_for(xp, a)
        return xp.mm(u, xp.unsqueeze(gs, -1) * vh) if m >= n else xp.mm(u * xp.unsqueeze(gs, -2), vh)
    s_row, s_col = xp.unsqueeze(s, -2), xp.unsqueeze(s, -1)
    s2 = s * s
    e = xp.unsqueeze(s2, -2) - xp.unsqueeze(s2, -1) + xp.eye(s, s.shape[-1])
    uhgu = None
    if gu is not None:
        x = xp.mm(xp.mT(u), gu)
        uhgu = x - xp.mT(x)
    vhgv = None
    if gvh is not None:
        x = xp.mm(vh, xp.mT(gvh))
        vhgv = x - xp.mT(x)
    if uhgu is not None and vhgv is not None:
        inner = (uhgu * s_row + s_col * vhgv) / e
    elif uhgu is not None:
        inner = (uhgu / e) * s_row
    else:
        inner = s_col * (vhgv / e)
    if gs is not None:
        inner = inner + xp.diag_embed(gs)
    if m > n and gu is not None:
        ga = xp.mm(u, inner)
        gus = gu / s_row
        ga = ga + gus - xp.mm(u, xp.mm(xp.mT(u), gus))
        return xp.mm(ga, vh)
    if m < n and gvh is not None:
        ga = xp.mm(inner, vh)
        sgv = gvh / s_col
        ga = ga + sgv - xp.mm(xp.mm(sgv, xp.mT(vh)), vh)
        return xp.mm(u, ga)
    return xp.mm(u, xp.mm(inner, vh)) if m >= n else xp.mm(xp.mm(u, inner), vh)


def svdvals(A: Tensor[Any, T]) -> Tensor[Any, T]:
    """``torch.linalg.svdvals``: the singular values of each matrix of ``A``, ``(*, k)``
    descending, ``k = min(m, n)``.

    Where ``A`` takes part in a gradient this is ``svd(A, full_matrices=False).S``
    (``grad_A = U diag(g) V^T`` needs the singular vectors); otherwise only the values are
    computed (``np.linalg.svd(compute_uv=False)``). Errors: as :func:`svd`.
    """
    op = "linalg.svdvals"
    a = _matrices(op, A)
    if op_tape(A) is not NONE_TAPE:
        out: Tensor[Any, T] = svd(A, full_matrices=False).S
        return out
    res: Tensor[Any, T] = untraced(op, A, (A,), _svdvals_forward, a)
    return res


def _tolerance(op: str, arg: str, v: object, batch: tuple[int, ...]) -> float | Array | None:
    """A tolerance (:func:`pinv`, :func:`matrix_rank`) checked: ``None``, a number (as a float)
    or a constant tensor's array broadcasting to ``batch``.

    Raises:
        TypeError: neither a number nor a tensor. ShapeError: a tensor that does not broadcast.
    """
    from gradtape.tensor import Tensor

    if v is None:
        return None
    if isinstance(v, Tensor):
        data: Array = v.data
        try:
            np.broadcast_to(data, batch)
        except ValueError:
            raise ShapeError(
                f"{op}: {arg} of shape {data.shape} does not broadcast to the batch shape {batch}"
            ) from None
        return data
    if isinstance(v, SCALARS) and not isinstance(v, (bool, np.bool_)):
        return float(v)
    raise TypeError(f"{op}: {arg} must be a number or a tensor, got {type(v).__name__}")


def _tolerances(a: Array, atol: float | Array | None, rtol: float | Array | None) -> tuple[Array, Array]:
    """PyTorch's ``(atol, rtol)`` over the batch dims of ``a``: ``atol`` 0 by default, ``rtol``
    ``eps * max(m, n)`` by default, 0 where only a positive ``atol`` is given."""
    batch, dt = a.shape[:-2], a.dtype
    at = np.broadcast_to(np.asarray(0.0 if atol is None else atol, dtype=dt), batch)
    if rtol is None:
        default = np.asarray(np.finfo(dt).eps * max(a.shape[-2:]), dtype=dt)
        rt = np.where(at > 0, dt.type(0), default) if atol is not None else np.broadcast_to(default, batch)
    else:
        rt = np.broadcast_to(np.asarray(rtol, dtype=dt), batch)
    return at, np.asarray(rt, dtype=dt)


def pinv(
    A: Tensor[Any, T],
    *,
    atol: float | Tensor[Any, Any] | None = None,
    rtol: float | Tensor[Any, Any] | None = None,
    hermitian: bool = False,
) -> Tensor[Any, T]:
    """``torch.linalg.pinv``: the Moore-Penrose pseudo-inverse ``A^+`` of each matrix of ``A``.

    Shapes: ``(*, m, n)`` -> ``(*, n, m)``; float32 or float64. Forward (PyTorch's):
    ``V diag(1/S) U^T`` from the SVD, the singular values ``<= max(atol, rtol * S_max)``
    replaced by 0; ``atol`` defaults to 0 and ``rtol`` to ``eps * max(m, n)`` (0 when only a
    positive ``atol`` is given); ``hermitian=True`` uses :func:`eigh` of the (symmetric)
    matrix instead, ``|eigenvalues|`` as the singular values. ``atol``/``rtol``: numbers, or
    tensors broadcasting to the batch dims (constants). Gradient (Golub and Pereyra 1973;
    PyTorch's ``pinv_backward``), with ``P = A^+``:
    ``grad_A = -P^T G P^T + (I - A P) G^T P P^T + P^T P G^T (I - P A)``, valid where the rank
    is locally constant; differentiable again.

    Raises:
        ShapeError: fewer than 2 dims, or a tolerance that does not broadcast.
        TypeError: a tolerance that is neither a number nor a tensor. DTypeError: as
            :func:`inv`. LinAlgError: LAPACK did not converge.
    """
    op = "linalg.pinv"
    a = _matrices(op, A)
    at = _tolerance(op, "atol", atol, a.shape[:-2])
    rt = _tolerance(op, "rtol", rtol, a.shape[:-2])
    (out,) = _record(op, [A], _pinv_forward, (a, at, rt, bool(hermitian)), _pinv_vjp)
    return out


def pinverse(input: Tensor[Any, T], rcond: float = 1e-15) -> Tensor[Any, T]:
    """``torch.pinverse(input, rcond=1e-15)``: :func:`pinv` with ``rtol=rcond`` (singular
    values at most ``rcond`` times the largest are dropped), PyTorch's top-level spelling."""
    return pinv(input, rtol=rcond)


def _pinv_forward(a: Array, atol: float | Array | None, rtol: float | Array | None, hermitian: bool) -> tuple[Array]:
    """:func:`pinv`'s forward (PyTorch's ``linalg_pinv``)."""
    at, rt = _tolerances(a, atol, rtol)
    zero = a.dtype.type(0)
    try:
        if hermitian:
            w, v = np.linalg.eigh(a)
            sa = np.abs(w)
            tol = np.maximum(at[..., None], rt[..., None] * np.max(sa, axis=-1, keepdims=True, initial=zero))
            with np.errstate(divide="ignore"):
                inv_s = np.where(sa > tol, 1 / w, zero).astype(a.dtype)
            return (_blas.matmul(v * inv_s[..., None, :], np.swapaxes(v, -1, -2)),)
        u, s, vh = np.linalg.svd(a, full_matrices=False)
        smax = s[..., :1] if s.shape[-1] else np.zeros((*a.shape[:-2], 1), a.dtype)
        tol = np.maximum(at[..., None], rt[..., None] * smax)
        with np.errstate(divide="ignore"):
            inv_s = np.where(s > tol, 1 / s, zero).astype(a.dtype)
        return (_blas.matmul(np.swapaxes(vh, -1, -2), inv_s[..., :, None] * np.swapaxes(u, -1, -2)),)
    except np.linalg.LinAlgError as e:
        raise _no_convergence("linalg.pinv", a, e) from None


def _pinv_vjp(xp: Any, gs: list[Any], ins: list[Any], outs: list[Any]) -> list[Any]:
    """PyTorch's ``pinv_backward`` (the products ordered for the smaller dims)."""
    (g,), (a,), (p,) = gs, ins, outs
    m, n = a.shape[-2], a.shape[-1]
    ph, gh = xp.mT(p), xp.mT(g)
    if m <= n:
        k = xp.mm(gh, p)
        kph = xp.mm(k, ph)
        return [-xp.mT(xp.mm(p, k)) + kph - xp.mm(xp.mm(a, p), kph) + xp.mm(xp.mm(ph, p), gh - xp.mm(k, a))]
    k = xp.mm(p, gh)
    phk = xp.mm(ph, k)
    return [-xp.mT(xp.mm(k, p)) + xp.mm(xp.mm(gh - xp.mm(a, k), p), ph) + phk - xp.mm(xp.mm(phk, p), a)]


def qr(A: Tensor[Any, Any], mode: str = "reduced") -> QRResult:
    """``torch.linalg.qr``: ``A = Q R`` for each matrix of ``A``, a named tuple ``(Q, R)``,
    ``Q`` with orthonormal columns and ``R`` upper-triangular.

    Shapes: ``A`` ``(*, m, n)``, ``k = min(m, n)``: ``mode='reduced'`` (default) ``Q``
    ``(*, m, k)``, ``R`` ``(*, k, n)``; ``'complete'`` ``Q`` ``(*, m, m)``, ``R``
    ``(*, m, n)``; ``'r'`` only ``R`` (``(*, k, n)``) and an empty ``Q`` of shape ``(0,)``, as
    PyTorch. Float32 or float64. Forward: ``np.linalg.qr`` (Householder QR, LAPACK
    ``geqrf``/``orgqr``, as PyTorch). Gradient (PyTorch's ``linalg_qr_backward``): with
    ``M = gR R^T - Q^T gQ``, for ``m >= n``
    ``grad_A = (Q copyltu(M) + gQ) R^{-T}`` (``copyltu(M) = triu(M) + triu(M, 1)^T``,
    Walter and Lehmann 2018; Seeger et al. 2017), for ``m < n``
    ``grad_A = [Q tril(M^T - M) R_1^{-T}, 0] + Q gR`` (``R_1`` the leading ``m x m`` block);
    differentiable again.

    Raises:
        ValueError: an unknown ``mode``.
        TapeError: (in backward) a gradient through ``mode='r'`` (no ``Q``), or through
            ``mode='complete'`` with ``m > n``: not differentiable, as in PyTorch.
        ShapeError: fewer than 2 dims. DTypeError, TypeError: as :func:`inv`.
    """
    op = "linalg.qr"
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(
            f"{op}: received unrecognized mode {mode!r} but expected one of 'reduced' (default), 'r', or 'complete'"
        )
    a = _matrices(op, A)
    m, n = a.shape[-2:]

    def vjp(xp: Any, gs: list[Any], ins: list[Any], outs: list[Any]) -> list[Any]:
        if mode == "r":
            raise TapeError(
                f"{op}: the derivative of linalg.qr depends on Q, which is not computed when mode='r'; use "
                "linalg.qr(A, mode='reduced') to differentiate through it"
            )
        if mode == "complete" and m > n:
            raise TapeError(
                f"{op}: the QR decomposition is not differentiable when mode='complete' and nrows > ncols ({a.shape})"
            )
        (gq, gr), (am,), (qq, rr) = gs, ins, outs
        return [_qr_grad(xp, am, gq, gr, qq, rr)]

    if mode == "r":  # Q is no function of A: record R alone, whose gradient raises
        (r_t,) = _record(op, [A], _qr_forward, (a, mode), vjp)
        return QRResult(untraced(op, A, (A,), np.zeros, (0,), a.dtype), r_t)
    q_t, r_t = _record(op, [A], _qr_forward, (a, mode), vjp, multi=True)
    return QRResult(q_t, r_t)


def _qr_forward(a: Array, mode: Any) -> tuple[Array, ...]:
    """:func:`qr`'s forward: ``(Q, R)``, or ``(R,)`` for ``mode='r'``."""
    if mode == "r":
        return (np.asarray(np.linalg.qr(a, mode=mode)),)
    q, r = np.linalg.qr(a, mode=mode)
    return q, r


def _qr_grad(xp: Any, a: Any, gq: Any, gr: Any, q: Any, r: Any) -> Any:
    """PyTorch's ``linalg_qr_backward`` (real case)."""
    m, n = q.shape[-2], r.shape[-1]
    if gq is None and gr is None:
        return _zeros_for(xp, a)
    if gq is not None:
        gm = xp.mm(gr, xp.mT(r)) - xp.mm(xp.mT(q), gq) if gr is not None else -xp.mm(xp.mT(q), gq)
    else:
        gm = xp.mm(gr, xp.mT(r))
    if m >= n:
        ga = xp.mm(q, xp.triu(gm) + xp.mT(xp.triu(gm, 1)))
        if gq is not None:
            ga = ga + gq
        return xp.solve_triangular(xp.mT(r), ga, False, False)
    x = xp.mT(gm) - gm
    ga = xp.mm(q, xp.tril(x))
    r1 = xp.narrow_cols(r, m)
    ga = xp.solve_triangular(xp.mT(r1), ga, False, False)
    ga = xp.cat_last(ga, xp.zeros(ga, (*ga.shape[:-1], n - m)))
    if gr is not None:
        ga = ga + xp.mm(q, gr)
    return ga


# ----- norms ------------------------------------------------------------------------------


def _cast(op: str, x: Tensor[Any, Any], dtype: npt.DTypeLike | None) -> Tensor[Any, Any]:
    """``x`` cast to ``dtype`` before a norm (PyTorch's ``dtype=``), refusing a narrowing cast.

    Raises:
        DTypeError: ``dtype`` is not float32/float64, or narrower than ``x``'s dtype.
    """
    if dtype is None:
        return x
    target = np.dtype(dtype)
    if target not in (_F32, _F64):
        raise DTypeError(f"{op}: dtype must be float32 or float64, got {target} (input {x.data.dtype} {x.data.shape})")
    if target.itemsize < x.data.dtype.itemsize:
        raise DTypeError(
            f"{op}: the dtype of the input ({x.data.dtype}) should be convertible without narrowing to the "
            f"specified dtype ({target})"
        )
    return x if target == x.data.dtype else _to_dtype(x, target)


def _order(op: str, ord: object) -> float:
    """A vector norm's order as a float (a number, ``inf`` allowed).

    Raises:
        TypeError: ``ord`` is not a real number (a string, a bool, None).
    """
    if isinstance(ord, (bool, np.bool_)) or not isinstance(ord, SCALARS):
        raise TypeError(f"{op}: argument 'ord' must be a number, got {ord!r}")
    v = float(ord)
    if math.isnan(v):
        raise ValueError(f"{op}: ord must not be NaN")
    return v


def vector_norm(
    x: Tensor[Any, T],
    ord: float = 2,
    dim: int | Sequence[int] | None = None,
    keepdim: bool = False,
    *,
    dtype: npt.DTypeLike | None = None,
) -> Tensor[Any, T]:
    """``torch.linalg.vector_norm``: ``(sum |x|^ord)^(1/ord)`` over ``dim`` (every dim when
    ``None`` or ``()``: the flattened tensor); ``ord=inf`` the largest ``|x|``, ``-inf`` the
    smallest, ``0`` the number of non-zeros.

    Shapes: any ``x``; the result drops ``dim`` (or keeps it as size 1 with ``keepdim``).
    Dtypes: float32 or float64; ``dtype=`` casts ``x`` first (float32 to float64 only).
    Gradient (PyTorch's ``norm_backward``; :func:`gradtape.ops.norm` is this op): ``x / ||x||``
    for ``ord=2``, ``sign(x)`` for 1, ``sign(x) |x|^(p-1) / ||x||^(p-1)`` otherwise, shared
    equally by the tied extreme elements for ``+-inf``, 0 for ``ord=0``; 0 where the norm is 0.
    Differentiable again.

    Raises:
        TypeError: ``ord`` is not a number (PyTorch's "must be Number"), or ``dim`` is not an
            int or a sequence of ints. ShapeError: a ``dim`` out of range or repeated.
        DTypeError: an integer or bool tensor, or a ``dtype`` that is not float or narrows.
    """
    op = "linalg.vector_norm"
    data = _tensor_data(op, x, "x")
    p = _order(op, ord)
    d: Any = tuple(dim) if isinstance(dim, (list, tuple)) else dim
    axes = normalize_axes(op, None if d == () else d, data.ndim)
    xc = _cast(op, x, dtype)
    out: Tensor[Any, T] = _distance.norm(xc, p, axes, bool(keepdim))
    return out


def _matrix_dims(op: str, A: Tensor[Any, Any], dim: object) -> tuple[int, int]:
    """``dim`` as two distinct non-negative dims of ``A`` (at least 2-D).

    Raises:
        ShapeError: ``A`` has fewer than 2 dims, a dim is out of range, or both are the same.
        TypeError: ``dim`` is not a pair of ints.
    """
    data = _matrices(op, A)
    if not isinstance(dim, (tuple, list)) or len(dim) != 2 or not all(is_int(v) for v in dim):
        raise TypeError(f"{op}: dim must be a 2-tuple of ints, got {dim!r}")
    nd = data.ndim
    d0, d1 = (int(v) for v in dim)
    for v in (d0, d1):
        if not -nd <= v < nd:
            raise ShapeError(f"{op}: dim {v} is out of range for a tensor of shape {data.shape}")
    d0, d1 = d0 % nd, d1 % nd
    if d0 == d1:
        raise ShapeError(f"{op}: dims must be different, got {tuple(dim)} (shape {data.shape})")
    return d0, d1


def matrix_norm(
    A: Tensor[Any, T],
    ord: float | str = "fro",
    dim: tuple[int, int] = (-2, -1),
    keepdim: bool = False,
    *,
    dtype: npt.DTypeLike | None = None,
) -> Tensor[Any, T]:
    """``torch.linalg.matrix_norm``: a matrix norm of the matrices in dims ``dim`` of ``A``.

    ``ord``: ``'fro'`` (default, ``sqrt(sum a_ij^2)``), ``'nuc'`` (the sum of the singular
    values), ``2`` / ``-2`` (the largest / smallest singular value), ``1`` / ``-1`` (the
    largest / smallest column sum of ``|a_ij|``), ``inf`` / ``-inf`` (row sums). Shapes:
    ``A`` with at least 2 dims; the result drops the two dims (size 1 with ``keepdim``).
    Dtypes: float32 or float64 (``dtype=`` casts first). Built as PyTorch's composition, so the
    gradients are those ops': ``'fro'`` :func:`vector_norm`; ``'nuc'`` and ``+-2``
    :func:`svdvals` (``U diag(g) V^T``, then ``sum`` / ``amax`` / ``amin``); ``+-1``, ``+-inf``
    ``amax``/``amin`` of column (row) sums of ``abs`` (ties share the gradient equally).

    Raises:
        ValueError: an unsupported ``ord`` (PyTorch's "Order ... not supported").
        ShapeError: fewer than 2 dims, a dim out of range, or two equal dims.
        TypeError: ``dim`` is not a pair of ints. DTypeError: as :func:`vector_norm`.
    """
    op = "linalg.matrix_norm"
    d0, d1 = _matrix_dims(op, A, dim)
    keep = bool(keepdim)
    if isinstance(ord, str):
        if ord not in ("fro", "nuc"):
            raise ValueError(f"{op}: Order {ord} not supported.")
        if ord == "fro":
            return vector_norm(A, 2, (d0, d1), keep, dtype=dtype)
        nuc: Tensor[Any, T] = _singular_norm(op, A, "nuc", d0, d1, keep, dtype)
        return nuc
    p = _order(op, ord)
    if abs(p) not in (1.0, 2.0, math.inf):
        raise ValueError(f"{op}: Order {ord} not supported.")
    if abs(p) == 2.0:
        two: Tensor[Any, T] = _singular_norm(op, A, "max" if p > 0 else "min", d0, d1, keep, dtype)
        return two
    first, second = (d1, d0) if math.isinf(p) else (d0, d1)  # inf: the 1-norm of the transpose
    if not keep and first < second:
        second -= 1
    sums = vector_norm(A, 1.0, first, keep, dtype=dtype)
    out: Tensor[Any, T] = (_reduce.amax if p > 0 else _reduce.amin)(sums, second, keep)
    return out


def _singular_norm(
    op: str, A: Tensor[Any, Any], kind: str, d0: int, d1: int, keep: bool, dtype: npt.DTypeLike | None
) -> Any:
    """The ``'nuc'`` (``kind='nuc'``), 2 (``'max'``) or -2 (``'min'``) norm over ``(d0, d1)``:
    :func:`svdvals` of the matrices moved to the last two dims, then reduced."""
    a = _cast(op, A, dtype)
    nd = a.ndim
    perm = (*(i for i in range(nd) if i not in (d0, d1)), d0, d1)
    moved = a if perm == tuple(range(nd)) else a.permute(perm)
    s = svdvals(moved)
    if kind == "nuc":
        r = s.sum(axis=-1, keepdims=keep)
    else:
        r = (_reduce.amax if kind == "max" else _reduce.amin)(s, -1, keep)
    if keep:  # the reduced dims back in their places, as size 1
        r = r.unsqueeze(-1)
        back = tuple(int(i) for i in np.argsort(perm))
        r = r.permute(back)
    return r


def norm(
    A: Tensor[Any, T],
    ord: float | str | None = None,
    dim: int | Sequence[int] | None = None,
    keepdim: bool = False,
    *,
    dtype: npt.DTypeLike | None = None,
) -> Tensor[Any, T]:
    """``torch.linalg.norm``: a vector or a matrix norm, by PyTorch's rules:

    * ``dim`` an int (or one dim): :func:`vector_norm` over it (``ord`` a number, default 2);
    * ``dim`` two dims: :func:`matrix_norm` over them (``ord`` default ``'fro'``);
    * ``dim=None``: ``ord=None`` gives the 2-norm of the flattened tensor; with an ``ord``,
      ``A`` must be 1-D (a vector norm) or 2-D (a matrix norm).

    Shapes, dtypes, gradients: those of :func:`vector_norm` and :func:`matrix_norm`.

    Raises:
        ShapeError: ``dim`` has more than 2 dims, or ``ord`` is given without ``dim`` for an
            input that is not 1-D or 2-D. Otherwise as :func:`vector_norm` /
            :func:`matrix_norm`.
    """
    op = "linalg.norm"
    data = _tensor_data(op, A, "A")
    dims: tuple[int, ...] | None
    if dim is None:
        dims = None
    elif isinstance(dim, (int, np.integer)) and not isinstance(dim, bool):
        dims = (int(dim),)
    elif isinstance(dim, (list, tuple)):
        dims = tuple(dim)
    else:
        raise TypeError(f"{op}: dim must be None, an int or a sequence of ints, got {dim!r}")
    if dims is not None and len(dims) not in (1, 2):
        raise ShapeError(f"{op}: if dim is specified, it must be of length 1 or 2, got {dims} (shape {data.shape})")
    if dims is None and ord is not None and data.ndim not in (1, 2):
        raise ShapeError(
            f"{op}: if dim is not specified but ord is, the input must be 1-D or 2-D, got {data.ndim}-D "
            f"(shape {data.shape})"
        )
    if isinstance(ord, str):
        return matrix_norm(A, ord, _pair(dims), keepdim, dtype=dtype)
    if ord is not None and ((dims is not None and len(dims) == 2) or (dims is None and data.ndim == 2)):
        return matrix_norm(A, ord, _pair(dims), keepdim, dtype=dtype)
    return vector_norm(A, 2.0 if ord is None else ord, dims, keepdim, dtype=dtype)


def _pair(dims: tuple[int, ...] | None) -> tuple[int, int]:
    if dims is None:
        return (0, 1)
    if len(dims) != 2:
        raise ShapeError(f"linalg.matrix_norm: dim must be a 2-tuple, got {dims}")
    return (dims[0], dims[1])


def cond(A: Tensor[Any, T], p: float | str | None = None) -> Tensor[Any, T]:
    """``torch.linalg.cond``: the condition number of each matrix of ``A``.

    ``p=None`` or ``2``: ``S_max / S_min`` (:func:`svdvals`, any ``(*, m, n)``); ``-2``:
    ``S_min / S_max``; ``'fro'``, ``'nuc'``, ``+-1``, ``+-inf``:
    ``matrix_norm(A, p) * matrix_norm(inv(A), p)`` (square ``A``). Shapes ``(*)``; float32
    or float64; gradients those of the ops it is built from.

    Raises:
        ValueError: an unsupported ``p``. ShapeError: fewer than 2 dims, or a non-square
            ``A`` for a ``p`` other than ``+-2``/``None``. LinAlgError: ``inv`` of a singular
            matrix (those ``p``). DTypeError, TypeError: as :func:`inv`.
    """
    op = "linalg.cond"
    _matrices(op, A)
    if p is None or (not isinstance(p, str) and _order(op, p) in (2.0, -2.0)):
        s = svdvals(A)
        big, small = s[..., 0], s[..., -1]
        out: Tensor[Any, T] = big / small if p is None or float(p) > 0 else small / big
        return out
    if isinstance(p, str) and p not in ("fro", "nuc"):
        raise ValueError(f"{op}: Order {p} not supported.")
    if not isinstance(p, str) and abs(_order(op, p)) not in (1.0, math.inf):
        raise ValueError(f"{op}: Order {p} not supported.")
    _matrices(op, A, square=True)
    res: Tensor[Any, T] = matrix_norm(A, p) * matrix_norm(inv(A), p)
    return res


def matrix_rank(
    A: Tensor[Any, Any],
    *,
    atol: float | Tensor[Any, Any] | None = None,
    rtol: float | Tensor[Any, Any] | None = None,
    hermitian: bool = False,
) -> Tensor[Any, Any]:
    """``torch.linalg.matrix_rank``: the number of singular values (``|eigenvalues|`` with
    ``hermitian=True``) above ``max(atol, rtol * S_max)``, tolerances as :func:`pinv`'s.

    Shapes: ``(*, m, n)`` -> ``(*)``, an int64 tensor, untraced (no gradient, as PyTorch).

    Raises:
        ShapeError, TypeError, DTypeError: as :func:`pinv`.
    """
    op = "linalg.matrix_rank"
    a = _matrices(op, A)
    at = _tolerance(op, "atol", atol, a.shape[:-2])
    rt = _tolerance(op, "rtol", rtol, a.shape[:-2])
    out: Tensor[Any, Any] = untraced(op, A, (A,), _matrix_rank_forward, a, at, rt, bool(hermitian))
    return out


def _matrix_rank_forward(a: Array, atol: float | Array | None, rtol: float | Array | None, hermitian: bool) -> Array:
    at, rt = _tolerances(a, atol, rtol)
    s = np.abs(np.linalg.eigvalsh(a)) if hermitian else np.linalg.svd(a, compute_uv=False)
    tol = np.maximum(at, rt * np.max(s, axis=-1, initial=a.dtype.type(0)))
    return np.asarray(np.sum(s > tol[..., None], axis=-1), dtype=np.int64)


# ----- compositions of recorded ops: matrix_power, multi_dot, cross, vecdot ------------------


def matrix_power(A: Tensor[S, T], n: int) -> Tensor[S, T]:
    """``torch.linalg.matrix_power``: ``A^n`` for each square matrix of ``A`` and an integer
    ``n``: the identity for ``n = 0`` (its gradient is 0, as PyTorch), products of ``A`` for
    ``n > 0`` and of ``inv(A)`` for ``n < 0``, by PyTorch's binary powering (squarings of
    ``A`` multiplied in from the lowest bit). Shapes ``(*, m, m)``; float32 or float64.
    Built from :func:`gradtape.ops.matmul` and :func:`inv`: their gradients.

    Raises:
        TypeError: ``n`` is not an int. ShapeError: fewer than 2 dims or non-square.
        LinAlgError: ``n < 0`` and a matrix is singular. DTypeError: as :func:`inv`.
    """
    op = "linalg.matrix_power"
    a = _matrices(op, A, square=True)
    if not is_int(n):
        raise TypeError(f"{op}: argument 'n' must be int, got {type(n).__name__}")
    k = int(n)
    if k == 0:
        eye = np.broadcast_to(_eye(a.shape[-1], a.dtype), a.shape).copy()
        one: Tensor[S, T] = record_zero_gradient(A._from_op(eye, op_tape(A)), A)
        return one
    x: Any = A
    if k < 0:
        x = inv(A)
        k = -k
    if k == 1:
        return _to_dtype(x, a.dtype)  # a recorded copy, as PyTorch's clone
    if k == 2:
        return matmul(x, x)
    if k == 3:
        return matmul(matmul(x, x), x)
    z: Any = None
    result: Any = None
    while k > 0:
        bit = k % 2
        k //= 2
        z = x if z is None else matmul(z, z)
        if bit:
            result = z if result is None else matmul(result, z)
    return result  # type: ignore[no-any-return]


def _chain_order(dims: list[int]) -> list[list[int]]:
    """The split table of the cheapest parenthesization of matrices ``dims[i] x dims[i+1]``
    (Cormen et al., "Introduction to Algorithms", 3rd ed., sec. 15.2, as PyTorch's)."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = -1
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] < 0 or c < cost[i][j]:
                    cost[i][j] = c
                    split[i][j] = k
    return split


def multi_dot(tensors: Sequence[Tensor[Any, Any]]) -> Tensor[Any, Any]:
    """``torch.linalg.multi_dot``: the product of two or more matrices in the cheapest order
    (the matrix-chain dynamic programme; for three, PyTorch's cost comparison). The first may
    be a 1-D vector (a row) and the last a 1-D vector (a column); the dims they add are
    removed from the result. All others 2-D. Built from :func:`gradtape.ops.matmul`: its
    gradients.

    Raises:
        ValueError: fewer than two tensors. ShapeError: a middle tensor not 2-D, an end tensor
            not 1-D or 2-D, or inner dims that differ (names the tensors and shapes).
        DTypeError: dtypes differ, or an integer tensor. TypeError: an entry is not a tensor.
    """
    op = "linalg.multi_dot"
    ts = list(tensors)
    if len(ts) < 2:
        raise ValueError(f"{op}: expected at least 2 tensors but got {len(ts)}")
    first = ts[0]
    _tensor_data(op, first, "tensors[0]")
    for i, t in enumerate(ts[1:], 1):
        _same_dtype(op, first, t, f"tensors[{i}]")
    mats: list[Any] = []
    for i, t in enumerate(ts):
        nd = t.data.ndim
        end = i in (0, len(ts) - 1)
        if (end and nd not in (1, 2)) or (not end and nd != 2):
            which = "the first" if i == 0 else "the last" if i == len(ts) - 1 else f"tensor {i}"
            raise ShapeError(f"{op}: {which} tensor must be {'1-D or 2-D' if end else '2-D'}, got shape {t.shape}")
        if nd == 1:
            t = t.reshape((1, -1)) if i == 0 else t.reshape((-1, 1))
        mats.append(t)
    for i in range(len(mats) - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise ShapeError(
                f"{op}: tensors {i} and {i + 1} with shapes {ts[i].shape} and {ts[i + 1].shape} cannot be multiplied"
            )
    out_shape = tuple(
        ([mats[0].shape[0]] if ts[0].data.ndim == 2 else []) + ([mats[-1].shape[1]] if ts[-1].data.ndim == 2 else [])
    )
    if len(mats) == 2:
        prod = matmul(mats[0], mats[1])
    elif len(mats) == 3:
        a, b, c, d = mats[0].shape[0], mats[1].shape[0], mats[2].shape[0], mats[2].shape[1]
        if (a * c) * (b + d) > (b * d) * (a + c):
            prod = matmul(mats[0], matmul(mats[1], mats[2]))
        else:
            prod = matmul(matmul(mats[0], mats[1]), mats[2])
    else:
        split = _chain_order([m.shape[0] for m in mats] + [mats[-1].shape[1]])

        def chain(i: int, j: int) -> Any:
            if i == j:
                return mats[i]
            k = split[i][j]
            return matmul(chain(i, k), chain(k + 1, j))

        prod = chain(0, len(mats) - 1)
    out: Tensor[Any, Any] = prod.reshape(out_shape)
    return out


def cross(input: Tensor[Any, Any], other: Tensor[Any, Any], *, dim: int = -1) -> Tensor[Any, Any]:
    """``torch.linalg.cross``: the cross product of 3-vectors along ``dim`` (default -1, where
    ``torch.cross``'s legacy default is the first dim of size 3), the other dims broadcast:
    ``(a1 b2 - a2 b1, a2 b0 - a0 b2, a0 b1 - a1 b0)`` from recorded ``unbind``, products and
    ``stack``, so gradients by the product rule.

    Raises:
        ShapeError: the inputs' numbers of dims differ, ``dim`` does not have size 3 in both,
            or the shapes do not broadcast. DTypeError: dtypes differ or not float.
            TypeError: an input is not a tensor.
    """
    op = "linalg.cross"
    x = _tensor_data(op, input, "input")
    y = _same_dtype(op, input, other, "other").data
    if x.ndim != y.ndim:
        raise ShapeError(f"{op}: inputs must have the same number of dimensions, got shapes {x.shape} and {y.shape}")
    nd = max(x.ndim, 1)
    if not is_int(dim) or not -nd <= int(dim) < nd:
        raise ShapeError(f"{op}: dim {dim!r} is out of range for shapes {x.shape} and {y.shape}")
    d = int(dim) % nd
    if x.shape[d] != 3 or y.shape[d] != 3:
        raise ShapeError(f"{op}: inputs dimension {dim} must have length 3, got {x.shape[d]} and {y.shape[d]}")
    try:
        shape = np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        raise ShapeError(f"{op}: shapes {x.shape} and {y.shape} do not broadcast") from None
    a0, a1, a2 = _unbind(input if x.shape == shape else input.broadcast_to(shape), d)
    b0, b1, b2 = _unbind(other if y.shape == shape else other.broadcast_to(shape), d)
    out: Tensor[Any, Any] = _stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)
    return out


def vecdot(x: Tensor[Any, Any], y: Tensor[Any, Any], *, dim: int = -1) -> Tensor[Any, Any]:
    """``torch.linalg.vecdot``: ``sum(x * y, dim)`` (real inputs), the shapes broadcast;
    gradients ``g * y`` and ``g * x`` summed back to each input's shape.

    Raises:
        ShapeError: the shapes do not broadcast, or ``dim`` is out of range.
        DTypeError: dtypes differ or not float. TypeError: an input is not a tensor.
    """
    op = "linalg.vecdot"
    _tensor_data(op, x, "x")
    _same_dtype(op, x, y, "y")
    out: Tensor[Any, Any] = (x * y).sum(axis=dim)
    return out
