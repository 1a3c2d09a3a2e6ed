"""Fused elementwise kernels: ``addmul``, ``axpy``, ``fill``, ``copy`` and fused backward passes.

Each wrapper takes numpy arrays, checks them, and runs one compiled pass: serial below
:data:`PARALLEL_THRESHOLD` elements, ``numba.prange`` over both cores above it. Measured
on the 2-core VM with numba's OpenMP workers passive (``_jit`` sets ``OMP_WAIT_POLICY``),
relu_backward: serial 0.07 ms vs parallel 0.13 ms at 256k float32, 0.25 vs 0.28 at 1M,
2.1 vs 1.7 ms at 4M; spinning workers made parallel pay from 128k but cost 10x on the next
BLAS call. Inputs that numba cannot take as
they are (broadcast operands, non-contiguous multi-dimensional arrays) fall back to the
equivalent numpy expression, which gives the same result.

Kernels keep float32 arithmetic in float32 (no float64 literals in loops) and compute no
transcendental functions: those run in numpy's SIMD ufuncs (pip's llvmlite has no SVML).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import numpy.typing as npt

from gradtape.devices._arrays import on_gpu as _on_gpu
from gradtape.devices.kernels import _trace
from gradtape.devices.kernels._jit import jit, serial_and_parallel
from gradtape.errors import DTypeError, ShapeError

__all__ = ["PARALLEL_THRESHOLD", "add_rows", "addmul", "axpy", "copy", "fill", "relu_backward", "relu_grad", "sum_rows"]

Array = np.ndarray[Any, Any]

PARALLEL_THRESHOLD = 1 << 20
"""Arrays with at least this many elements use the two-thread ``prange`` kernels."""


# ----- compiled kernels (1-D; the wrappers flatten contiguous arrays) --------------------


def _addmul(out: Array, a: Array, b: Array) -> None:
    for i in numba.prange(out.shape[0]):
        out[i] += a[i] * b[i]


_addmul_serial, _addmul_parallel = serial_and_parallel(_addmul)


def _axpy(out: Array, alpha: float, x: Array) -> None:
    a = out.dtype.type(alpha)  # float32 arithmetic for float32 arrays
    for i in numba.prange(out.shape[0]):
        out[i] += a * x[i]


_axpy_serial, _axpy_parallel = serial_and_parallel(_axpy)


def _relu_backward(out: Array, x: Array, g: Array) -> None:
    zero = x.dtype.type(0)
    for i in numba.prange(out.shape[0]):
        out[i] += g[i] if x[i] > zero else zero  # a select, not a branch: it vectorizes


_relu_backward_serial, _relu_backward_parallel = serial_and_parallel(_relu_backward)


def _relu_grad(out: Array, x: Array, g: Array) -> None:
    zero = x.dtype.type(0)
    for i in numba.prange(out.shape[0]):
        out[i] = g[i] if x[i] > zero else zero


_relu_grad_serial, _relu_grad_parallel = serial_and_parallel(_relu_grad)


def _add_rows(out: Array, b: Array, relu: bool) -> None:
    zero = out.dtype.type(0)
    for i in numba.prange(out.shape[0]):
        row = out[i]
        if relu:
            for j in range(row.shape[0]):
                v = row[j] + b[j]
                row[j] = zero if v <= zero else v  # relu's select: NaN stays NaN
        else:
            for j in range(row.shape[0]):
                row[j] += b[j]


_add_rows_serial, _add_rows_parallel = serial_and_parallel(_add_rows)


@jit()
def _sum_rows_serial(out: Array, x: Array) -> None:
    zero = x.dtype.type(0)
    for j in range(out.shape[0]):
        out[j] = zero
    for i in range(x.shape[0]):
        xi = x[i]
        for j in range(out.shape[0]):
            out[j] += xi[j]


def _adddiv(out: Array, a: Array, b: Array) -> None:
    for i in numba.prange(out.shape[0]):
        out[i] += a[i] / b[i]


_adddiv_serial, _adddiv_parallel = serial_and_parallel(_adddiv)


# ----- validation ------------------------------------------------------------------------


_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_ND = np.ndarray


def _check_out(op: str, out: Array) -> None:
    if out.__class__ is not np.ndarray and not isinstance(out, np.ndarray) and not _on_gpu(out):
        raise TypeError(f"{op}: out must be a numpy array, got {type(out).__name__}")
    dt = out.dtype
    if dt is not _F32 and dt is not _F64 and dt != _F32 and dt != _F64:
        raise DTypeError(f"{op}: out has dtype {out.dtype}; kernels take float32 or float64")
    if not _on_gpu(out) and not out.flags.writeable:
        raise ValueError(f"{op}: out (shape {out.shape}) is read-only")


def _fast(out: Array, *ins: Array) -> bool:
    """True if ``out`` and ``ins`` can go to a 1-D kernel as they are (or flattened).

    An input that shares memory with ``out`` other than as the very same array (a shifted
    view of one buffer, say) goes to numpy, which buffers overlapping operands; the loop
    kernels would read elements they had already updated.

    Raises:
        DTypeError: an input of ``out``'s shape has another dtype.
    """
    # Runs before every kernel call of every backward: plain loops, no generators, each
    # array attribute read once (``.shape`` builds a tuple, ``.flags`` an object).
    shape, dtype = out.shape, out.dtype
    for x in ins:
        if x.__class__ is not np.ndarray or x.shape != shape:
            return False
        xd = x.dtype
        if xd is not dtype and xd != dtype:
            raise DTypeError(f"kernel: dtype {xd} (shape {x.shape}) mixed with out's {dtype} (shape {shape})")
    return _fast_same(out, *ins)


def _fast_same(out: Array, *ins: Array) -> bool:
    """:func:`_fast` for callers that guarantee ``ins`` are numpy arrays of ``out``'s shape and
    dtype (the optimizers, after ``Optimizer.step``'s checks, with buffers they allocated):
    only the overlap and layout checks, without the shape tuples."""
    ob = out.base
    out_base = out if ob is None else ob
    for x in ins:
        if x.__class__ is not np.ndarray:  # a subclass (np.matrix, a memmap): numpy's path
            return False
        if x is not out:
            xb = x.base
            if (x if xb is None else xb) is out_base and np.may_share_memory(out, x):
                return False
    if out.ndim == 1:
        return True
    if not out.flags.c_contiguous:
        return False
    for x in ins:
        if not x.flags.c_contiguous:
            return False
    return True


def _fused3(op: str, serial: Any, parallel: Any, out: Array, a: Array, b: Array) -> bool:
    """Run a fused three-array kernel, ``serial`` or ``parallel`` (from
    :data:`PARALLEL_THRESHOLD` elements), on ``(out, a, b)``; False when numpy must compute the
    result instead (shapes checked, as :func:`_fused`).

    The fast path, taken when all three are plain ndarrays of one shape and of one float
    dtype, ``out`` is writable, no input overlaps ``out`` other than as ``out`` itself, and
    they are 1-D or C-contiguous, reads each attribute once: backward calls a wrapper per op,
    often on small arrays, and the full checks (``_check_out``, ``_fast``, ``_flat``) cost
    about 1 us a call, four times the kernel's own call on 64 floats. Anything else takes
    :func:`_fused`.

    Raises:
        ValueError, ShapeError, DTypeError: as :func:`_fused`.
    """
    if out.__class__ is _ND and a.__class__ is _ND and b.__class__ is _ND:
        shape = out.shape
        if a.shape == shape and b.shape == shape:
            dt, ob = out.dtype, out.base
            if ob is None:
                ob = out
            if (
                a.dtype is dt
                and b.dtype is dt
                and (dt is _F32 or dt is _F64)
                and out.flags.writeable
                and not ((a.base is ob or a is ob) and a is not out and np.may_share_memory(out, a))
                and not ((b.base is ob or b is ob) and b is not out and np.may_share_memory(out, b))
            ):
                if len(shape) == 1:
                    k = parallel if shape[0] >= PARALLEL_THRESHOLD else serial
                    k(out, a, b)
                    if _trace.active is not None:
                        _trace.note(k, out, a, b)
                    return True
                if out.flags.c_contiguous and a.flags.c_contiguous and b.flags.c_contiguous:
                    k = parallel if out.size >= PARALLEL_THRESHOLD else serial
                    o1, a1, b1 = out.ravel(), a.ravel(), b.ravel()
                    k(o1, a1, b1)
                    if _trace.active is not None:
                        _trace.note(k, o1, a1, b1)
                    return True
    return _fused(op, (serial, parallel), out, a, b)


def _flat(x: Array) -> Array:
    # a view: x is 1-D, or C-contiguous (checked by _fast), where ravel() never copies
    return x if x.ndim == 1 else x.ravel()


def _fallback_shape(op: str, out: Array, *ins: Array) -> None:
    try:
        shape = np.broadcast_shapes(out.shape, *(np.shape(x) for x in ins))
    except ValueError:
        shapes = ", ".join(str(np.shape(x)) for x in ins)
        raise ShapeError(f"{op}: operands of shapes {shapes} do not broadcast to out's {out.shape}") from None
    if shape != out.shape:
        shapes = ", ".join(str(np.shape(x)) for x in ins)
        raise ShapeError(f"{op}: operands of shapes {shapes} broadcast to {shape}, not out's {out.shape}")
    for x in ins:
        dt = x.dtype if _on_gpu(x) else np.asarray(x).dtype
        if dt != out.dtype:
            raise DTypeError(f"{op}: operand dtype {dt} mixed with out's {out.dtype}")


def _fused(op: str, kernels: tuple[Any, Any], out: Array, *ins: Array) -> bool:
    """Run a fused kernel ``kernels[0]`` (serial) or ``kernels[1]`` (parallel, from
    :data:`PARALLEL_THRESHOLD` elements) on ``out`` and ``ins`` flattened, after the full
    checks: the slow path of the wrappers (:func:`_fused3` has the fast one). Returns False when
    the operands need numpy (broadcast, strided or overlapping ``out``), the shapes checked.

    Raises:
        ValueError: ``out`` is read-only. ShapeError, DTypeError: ``ins`` do not broadcast to
            ``out``, or dtypes differ (messages name ``op``).
    """
    if _on_gpu(out):
        return _gpu_kernel(op)(out, *ins) is None  # the GPU kernel ran (or its array expression)
    _check_out(op, out)
    if _fast(out, *ins):
        o = _flat(out)
        k = kernels[1 if o.shape[0] >= PARALLEL_THRESHOLD else 0]
        flat = [_flat(x) for x in ins]
        k(o, *flat)
        if _trace.active is not None:
            _trace.note(k, o, *flat)
        return True
    _fallback_shape(op, out, *ins)
    if _trace.active is not None:
        _trace.refuse(f"{op} on broadcast, strided or overlapping arrays runs in numpy")
    return False


def _gpu_kernel(op: str) -> Any:
    from gradtape.devices.kernels import cuda as _cuda

    return getattr(_cuda, op)


# ----- public wrappers -------------------------------------------------------------------


def addmul(out: Array, a: Array, b: Array) -> None:
    """``out += a * b`` in one fused pass, in place (dfdx's ``addmul``).

    Args:
        out: float32 or float64 array, updated in place.
        a, b: arrays of ``out``'s dtype whose broadcast shape is ``out.shape``.

    Raises:
        ShapeError: ``a * b`` does not have ``out``'s shape.
        DTypeError: the dtypes differ or are not float32/float64.
        ValueError: ``out`` is read-only.
    """
    if not _fused3("addmul", _addmul_serial, _addmul_parallel, out, a, b):
        out += np.multiply(a, b)


def axpy(out: Array, alpha: float, x: Array) -> None:
    """``out += alpha * x`` in one pass, in place (BLAS's ``axpy``).

    Args:
        out: float32 or float64 array, updated in place.
        alpha: a Python number, converted to ``out``'s dtype.
        x: array of ``out``'s dtype broadcasting to ``out.shape``.

    Raises:
        ShapeError, DTypeError, ValueError: as :func:`addmul`.
    """
    if _on_gpu(out):
        _gpu_kernel("axpy")(out, alpha, x)
        return
    _check_out("axpy", out)
    if _fast(out, x):
        o = _flat(out)
        kernel = _axpy_parallel if o.shape[0] >= PARALLEL_THRESHOLD else _axpy_serial
        kernel(o, float(alpha), _flat(x))
    else:
        _fallback_shape("axpy", out, x)
        out += out.dtype.type(alpha) * np.asarray(x)


def adddiv(out: Array, a: Array, b: Array) -> None:
    """``out += a / b`` in one fused pass, in place (the backward of ``log`` and ``div``).

    Raises:
        ShapeError, DTypeError, ValueError: as :func:`addmul`.
    """
    if not _fused3("adddiv", _adddiv_serial, _adddiv_parallel, out, a, b):
        out += np.divide(a, b)


def relu_backward(out: Array, x: Array, g: Array) -> None:
    """``out += g * (x > 0)`` in one fused pass, in place (ReLU's backward).

    Raises:
        ShapeError, DTypeError, ValueError: as :func:`addmul`.
    """
    if not _fused3("relu_backward", _relu_backward_serial, _relu_backward_parallel, out, x, g):
        out += np.where(np.asarray(x) > 0, g, out.dtype.type(0))


def relu_grad(x: Array, g: Array) -> Array:
    """``g * (x > 0)`` as a new array (ReLU's backward when the input has no gradient yet): one
    pass that writes, where :func:`relu_backward` on zeros would write twice.

    Args:
        x, g: arrays of one shape and dtype (float32 or float64): ReLU's input and the
            gradient of its output.

    Raises:
        ShapeError: the shapes differ. DTypeError: the dtypes differ or are not float.
    """
    if x.__class__ is not np.ndarray or g.__class__ is not np.ndarray:
        if _on_gpu(x):
            res_gpu: Array = _gpu_kernel("relu_grad")(x, g)
            return res_gpu
        x, g = np.asarray(x), np.asarray(g)
    if x.shape != g.shape:
        raise ShapeError(f"relu_grad: x {x.shape} and g {g.shape} must have one shape")
    dt = x.dtype
    if dt is not g.dtype and dt != g.dtype:
        raise DTypeError(f"relu_grad: dtypes differ: x {dt} {x.shape}, g {g.dtype} {g.shape}")
    if dt is not _F32 and dt is not _F64 and dt != _F32 and dt != _F64:
        raise DTypeError(f"relu_grad: dtype {dt} (shape {x.shape}); kernels take float32 or float64")
    if x.ndim == 1 or (x.flags.c_contiguous and g.flags.c_contiguous):
        out = np.empty(x.shape, dt)
        o, x1, g1 = _flat(out), _flat(x), _flat(g)
        k = _relu_grad_parallel if o.shape[0] >= PARALLEL_THRESHOLD else _relu_grad_serial
        k(o, x1, g1)
        if _trace.active is not None:
            _trace.note(k, o, x1, g1)
        return out
    if _trace.active is not None:
        _trace.refuse(f"relu's gradient of strided arrays {x.shape} runs in numpy")
    res: Array = np.where(x > 0, g, dt.type(0))
    return res


_trace.traceable(relu_grad)  # notes its kernel (or refuses): a declared op's rule using it may be traced


def add_rows(out: Array, b: Array, relu: bool = False) -> None:
    """``out += b`` for a 2-D ``out (M, N)`` and a 1-D ``b (N,)``, in place: a bias added to
    every row of a product (``linear``'s forward); with ``relu``, ``out = relu(out + b)`` in
    the same pass (the ReLU as :func:`gradtape.devices.kernels.activations.relu` computes it:
    ``0`` where ``out + b <= 0``, NaN kept).

    One compiled pass, over both cores from :data:`PARALLEL_THRESHOLD` elements, where
    ``out`` and ``b`` are C-contiguous numpy arrays of one float dtype; numpy's broadcasting
    ``+=`` otherwise (the same result: each element gets one addition in its dtype). numpy's
    ``+=`` runs on one thread: a (4096, 1024) float32 bias add right after its product took
    0.65-1.15 ms there against 0.27-0.44 ms here (2-vCPU AMD EPYC, AVX-512 and AVX2 builds).

    Raises:
        ValueError: ``b`` does not broadcast to ``out``'s shape (numpy's message).
    """
    dt = out.dtype
    if (
        out.__class__ is _ND
        and b.__class__ is _ND
        and (dt is _F32 or dt is _F64)
        and b.dtype is dt
        and out.ndim == 2
        and b.ndim == 1
        and out.shape[1] == b.shape[0]
        and out.flags.c_contiguous
        and b.flags.c_contiguous
    ):
        kernel = _add_rows_parallel if out.size >= PARALLEL_THRESHOLD else _add_rows_serial
        kernel(out, b, relu)
        if _trace.active is not None:
            _trace.note(kernel, out, b, relu)
    else:
        if _trace.active is not None:
            _trace.refuse(f"a bias add of {b.shape} into {out.shape} runs numpy's +=")
        out += b
        if relu:
            np.copyto(out, 0, where=out <= 0)


def sum_rows(x: npt.ArrayLike) -> Array:
    """``x.sum(axis=0)`` of a 2-D float array, as a new 1-D array (a bias's gradient).

    Rows are added in order, as numpy does along axis 0 of a C-contiguous array (numpy's
    pairwise summation applies only along the contiguous axis), in ``x``'s dtype; one
    compiled pass where numpy's reduction machinery costs about 2 us a call on a 64x128
    batch (0.6 us here). Other layouts and dtypes, and large arrays, go to numpy.

    Raises:
        ShapeError: ``x`` is not 2-D.
    """
    xa: Array = x if type(x) is np.ndarray or _on_gpu(x) else np.asarray(x)  # type: ignore[assignment]
    if xa.ndim != 2:
        raise ShapeError(f"sum_rows: expected a 2-D array, got shape {xa.shape}")
    dt = xa.dtype
    if (
        (dt is not _F32 and dt is not _F64)
        or xa.__class__ is not _ND
        or not xa.flags.c_contiguous
        or xa.size >= PARALLEL_THRESHOLD
    ):
        if _trace.active is not None:
            _trace.refuse(f"a bias gradient (sum over rows) of {xa.shape} runs in numpy")
        res: Array = xa.sum(axis=0)
        return res
    out = np.empty(xa.shape[1], dt)
    _sum_rows_serial(out, xa)
    if _trace.active is not None:
        _trace.note(_sum_rows_serial, out, xa)
    return out


def fill(out: Array, value: float) -> None:
    """Set every element of ``out`` to ``value`` (converted to ``out``'s dtype), in place.

    Raises:
        DTypeError, ValueError: as :func:`addmul`.
    """
    _check_out("fill", out)
    out.fill(value)


def copy(out: Array, src: Array) -> None:
    """Copy ``src`` (broadcasting to ``out.shape``, same dtype) into ``out``, in place.

    Raises:
        ShapeError, DTypeError, ValueError: as :func:`addmul`.
    """
    _check_out("copy", out)
    _fallback_shape("copy", out, src)
    np.copyto(out, src)
