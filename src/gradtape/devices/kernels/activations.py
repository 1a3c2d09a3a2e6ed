"""Fused kernels of the elementwise activation ops in :mod:`gradtape.ops.unary`.

Backward wrappers (``*_backward(out, ..., g)``) add an op's gradient ``f'(x) * g`` into
``out`` in place, in one compiled pass. They take the arrays the op's forward saved (the
input ``x``, the output ``y`` or an intermediate such as ``sigmoid(x)``), so their loops
are pure arithmetic; the few that need a transcendental of ``x`` (``cos``, ``pow``,
``gelu``) compute it first with numpy's SIMD ufuncs. Like :mod:`.elementwise`, each runs a
serial kernel below :data:`~.elementwise.PARALLEL_THRESHOLD` elements and a ``prange`` one
above it, and falls back to the equivalent numpy expression for operands the 1-D kernels do
not take (broadcast operands, non-contiguous multi-dimensional arrays).

Forward wrappers (``relu``, ``sigmoid``, ``gelu``, ``gelu_tanh``, ``softplus``) take an array ``x``
and return new C-contiguous arrays of its shape and dtype: numpy computes the
transcendentals (``exp``, ``log1p``), kernel passes the arithmetic around them. ``erf``,
``erfc`` and exact ``gelu`` have no numpy ufunc: for float64 they call libm's ``erf``/``erfc``
per element; for float32 they use :func:`_erfc_f32`/:func:`_erf_f32` (see there), inlined
polynomials that LLVM vectorizes (a libm call per element keeps a loop scalar: exact GELU's
float32 forward ran 3-4x slower that way).

Kernels keep float32 arithmetic in float32 (constants and scalar arguments become
``x.dtype.type(...)`` inside the kernel) and write conditionals as selects, which vectorize.
Forward kernels may write their output over an input (element ``i`` is read before it is
written).
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np
import numpy.typing as npt
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from gradtape.devices._arrays import on_gpu as _on_gpu
from gradtape.devices.kernels import _trace
from gradtape.devices.kernels._jit import jit, serial_and_parallel
from gradtape.devices.kernels.elementwise import (
    _F32,
    _F64,
    PARALLEL_THRESHOLD,
    _check_out,
    _fallback_shape,
    _fast,
    _flat,
    _fused,
    _fused3,
)
from gradtape.errors import DTypeError

__all__ = [
    "abs_backward",
    "addmul_scaled",
    "clamp_backward",
    "erf",
    "cos_backward",
    "gelu",
    "gelu_backward",
    "gelu_tanh",
    "gelu_tanh_backward",
    "leaky_relu_backward",
    "nans_to_backward",
    "pow_backward",
    "recip_backward",
    "relu",
    "sigmoid",
    "sigmoid_backward",
    "silu_backward",
    "softplus",
    "sqrt_backward",
    "square_backward",
    "tanh_backward",
]

Array = np.ndarray[Any, Any]

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
"""``sqrt(2 / pi)``, the scale inside ``gelu``'s tanh approximation."""
GELU_TANH_KAPPA = 0.044715
"""The cubic coefficient of ``gelu``'s tanh approximation (Hendrycks & Gimpel, 2016)."""
INV_SQRT_2 = 1.0 / math.sqrt(2.0)
"""``1 / sqrt(2)``: ``Phi(x) = erfc(-x / sqrt(2)) / 2``."""
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
"""``1 / sqrt(2 pi)``, the normal density's factor."""


CONTRACT = frozenset({"contract"})
"""Fast-math flags of the float32 ``erf``/``erfc``/``gelu`` kernels: multiply-adds may fuse
(FMA where the CPU has it; about 1.5x faster here). Nothing else: NaN and inf propagate."""


# ----- vectorizable erf / erfc for float32 results (float64 arithmetic, no libm) ----------

_ERF_T = (
    7.853861353153693e-5,
    -8.010193625184903e-4,
    5.188327685732524e-3,
    -2.685381193529856e-2,
    1.128358514861418e-1,
    -3.761262582423300e-1,
    1.128379165726710e0,
)
"""Cephes ``erff``: ``erf(x) = x T(x**2)`` for ``|x| < 1`` (highest degree first)."""
_ERFC_P = (
    2.326819970068386e-2,
    -1.387039388740657e-1,
    3.687424674597105e-1,
    -5.824733027278666e-1,
    6.210004621745983e-1,
    -4.944515323274145e-1,
    3.404879937665872e-1,
    -2.741127028184656e-1,
    5.638259427386472e-1,
)
"""Cephes ``erfcf``: ``erfc(a) = exp(-a**2) / a * P(1 / a**2)`` for ``1 <= a < 2``."""
_ERFC_R = (
    0.0,
    -1.047766399936249e1,
    1.297719955372516e1,
    -7.495518717768503e0,
    2.921019019210786e0,
    -1.015265279202700e0,
    4.218463358204948e-1,
    -2.820767439740514e-1,
    5.641895067754075e-1,
)
"""Cephes ``erfcf``: ``erfc(a) = exp(-a**2) / a * R(1 / a**2)`` for ``a >= 2`` (degree 7; a
leading 0 pads it to ``P``'s length, so one Horner loop selects its coefficients)."""

_LOG2E = 1.4426950408889634
_LN2_HI = 6.93145751953125e-1  # Cephes' split of ln 2: _LN2_HI has 20 bits, n * _LN2_HI is exact
_LN2_LO = 1.42860682030941723212e-6
_ERFC_A_MAX = 10.5
"""``|x|`` is clamped here in :func:`_erf_parts`: ``erfc(10.5)`` is about ``6e-50``, 0 in float32
(its smallest subnormal is ``1.4e-45``, ``erfc(10.06)``)."""


@intrinsic
def _f64_from_bits(typingctx: Any, bits: Any) -> Any:
    """Reinterpret an int64's bits as a float64 (LLVM ``bitcast``; vectorizes)."""
    if bits != types.int64:
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


@jit(inline=True)
def _exp_neg(z: float) -> float:
    """``exp(z)`` in float64 for ``-700 <= z <= 0`` (exactly 0 below -700, NaN kept), written to
    vectorize: Cody & Waite's reduction ``z = n ln2 + r`` with ``|r| <= ln2 / 2`` (``ln 2`` split
    in two as Cephes' ``exp``), the Taylor polynomial of ``exp(r)`` to degree 8 (truncation below
    ``0.347**9 / 9! = 2e-10`` relative), and ``2**n`` built from its exponent bits. Accurate to
    about 1e-15 relative plus that truncation: ample for float32 results."""
    zc = z if z > -700.0 else -700.0
    fn = np.floor(zc * _LOG2E + 0.5)
    r = (zc - fn * _LN2_HI) - fn * _LN2_LO
    p = 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = p * r + 1.0
    p = p * r + 1.0
    # float64 -> int32 converts in vectors on AVX (-> int64 does not before AVX-512)
    n = np.int64(np.int32(fn))
    res = p * _f64_from_bits((n + np.int64(1023)) << np.int64(52))
    return 0.0 if z < -700.0 else res


@jit(inline=True)
def _erf_parts(x: float) -> tuple[float, float]:
    """``(x T(x**2), erfc(b))`` with Cephes' single-precision polynomials (:data:`_ERF_T`,
    :data:`_ERFC_P`, :data:`_ERFC_R`) evaluated in float64, ``b = |x|`` clamped to
    ``[1, 10.5]``: the first is ``erf(x)`` where ``|x| < 1``, the second ``erfc(|x|)`` where
    ``|x| >= 1`` (exactly 0 from 10.5 on, so that ``x * erfc(x)`` is 0 there, not tiny).
    Both are computed for every ``x`` (selects, no branches), for the callers to pick from."""
    z = x * x
    e = _ERF_T[0]
    e = e * z + _ERF_T[1]
    e = e * z + _ERF_T[2]
    e = e * z + _ERF_T[3]
    e = e * z + _ERF_T[4]
    e = e * z + _ERF_T[5]
    e = e * z + _ERF_T[6]
    a = abs(x)
    b = a if a >= 1.0 else 1.0  # NaN gives 1 here (the callers return NaN for it)
    b = b if b < _ERFC_A_MAX else _ERFC_A_MAX
    lo = b < 2.0
    q = 1.0 / b
    w = q * q
    p = _ERFC_P[0] if lo else _ERFC_R[0]
    p = p * w + (_ERFC_P[1] if lo else _ERFC_R[1])
    p = p * w + (_ERFC_P[2] if lo else _ERFC_R[2])
    p = p * w + (_ERFC_P[3] if lo else _ERFC_R[3])
    p = p * w + (_ERFC_P[4] if lo else _ERFC_R[4])
    p = p * w + (_ERFC_P[5] if lo else _ERFC_R[5])
    p = p * w + (_ERFC_P[6] if lo else _ERFC_R[6])
    p = p * w + (_ERFC_P[7] if lo else _ERFC_R[7])
    p = p * w + (_ERFC_P[8] if lo else _ERFC_R[8])
    tail = _exp_neg(-(b * b)) * q * p  # b * b is exact: b came from a float32
    return e * x, 0.0 if a >= _ERFC_A_MAX else tail


@jit(inline=True)
def _erfc_f32(x: float) -> float:
    """``erfc(x)`` for a float32 result, from a float64 ``x`` (a float32 input, or float64
    arithmetic on one), as float64; the caller rounds it to float32.

    Cephes' ``erfcf``/``erff`` (S. L. Moshier, *Methods and Programs for Mathematical
    Functions*, 1989; Cephes ``ndtrf.c``): ``erfc(x) = 1 - x T(x**2)`` for ``|x| < 1``,
    ``exp(-x**2) / |x| * P(1/x**2)`` for ``1 <= |x| < 2`` and ``... R(1/x**2)`` from 2 on,
    ``erfc(-|x|) = 2 - erfc(|x|)``. Cephes evaluates them in float32 (its ``erfcf`` errs by up
    to about 7e-7 relative: ``1 - erf`` cancels near ``|x| = 1``, ``x**2`` rounds inside
    ``exp``, and the coefficients' rounding to float32 alone costs 1.5e-7); here the same
    published coefficients run in float64 with a float64 :func:`_exp_neg` of the exact
    ``-x**2``, so the approximations' own error (below 3.1e-8 relative) and the final
    rounding remain: at most about 1 float32 ulp over the whole float32 range (measured:
    max relative error 8.9e-8 where ``erfc`` is a normal float32, at most 1.003 ulp with
    the subnormal tail; tests/test_erf_kernel.py). Exact 1 at 0, 2 at -inf, 0 at inf and
    from ``x`` about 10.06 (where float32 underflows), NaN kept. Inlined into the kernels;
    every branch is a select, so the loops vectorize."""
    e, y = _erf_parts(x)
    res = y if x > 0.0 else 2.0 - y
    res = 1.0 - e if abs(x) < 1.0 else res
    return x if x != x else res


@jit(inline=True)
def _erf_f32(x: float) -> float:
    """``erf(x)`` for a float32 result as float64, from the same approximations as
    :func:`_erfc_f32`: ``x T(x**2)`` for ``|x| < 1`` (relative error about 1e-9, also for
    tiny and subnormal ``x``; ``erf(-0) = -0``), ``sign(x) (1 - erfc(|x|))`` beyond; exactly
    +-1 at +-inf, NaN kept."""
    e, y = _erf_parts(x)
    res = 1.0 - y if x > 0.0 else y - 1.0
    res = e if abs(x) < 1.0 else res
    return x if x != x else res


# ----- compiled backward kernels (1-D; out += f'(x) * g) ---------------------------------


def _addmul_scaled(out: Array, alpha: float, a: Array, b: Array) -> None:
    al = out.dtype.type(alpha)  # float32 arithmetic for float32 arrays
    for i in numba.prange(out.shape[0]):
        out[i] += al * a[i] * b[i]


_addmul_scaled_serial, _addmul_scaled_parallel = serial_and_parallel(_addmul_scaled)


def _abs_backward(out: Array, x: Array, g: Array) -> None:
    zero, one = x.dtype.type(0), x.dtype.type(1)
    for i in numba.prange(out.shape[0]):
        xi = x[i]
        # sign(x) as selects (they vectorize, branches do not); x * 0 is 0, or NaN for NaN
        out[i] += (one if xi > zero else (-one if xi < zero else xi * zero)) * g[i]


_abs_backward_serial, _abs_backward_parallel = serial_and_parallel(_abs_backward)


def _sqrt_backward(out: Array, y: Array, g: Array) -> None:
    for i in numba.prange(out.shape[0]):
        out[i] += g[i] / (y[i] + y[i])


_sqrt_backward_serial, _sqrt_backward_parallel = serial_and_parallel(_sqrt_backward)


def _tanh_backward(out: Array, y: Array, g: Array) -> None:
    one = y.dtype.type(1)
    for i in numba.prange(out.shape[0]):
        out[i] += (one - y[i] * y[i]) * g[i]


_tanh_backward_serial, _tanh_backward_parallel = serial_and_parallel(_tanh_backward)


def _sigmoid_backward(out: Array, y: Array, g: Array) -> None:
    one = y.dtype.type(1)
    for i in numba.prange(out.shape[0]):
        out[i] += y[i] * (one - y[i]) * g[i]


_sigmoid_backward_serial, _sigmoid_backward_parallel = serial_and_parallel(_sigmoid_backward)


def _recip_backward(out: Array, y: Array, g: Array) -> None:
    for i in numba.prange(out.shape[0]):
        out[i] -= y[i] * y[i] * g[i]


_recip_backward_serial, _recip_backward_parallel = serial_and_parallel(_recip_backward)


def _leaky_relu_backward(out: Array, slope: float, x: Array, g: Array) -> None:
    zero, s = x.dtype.type(0), x.dtype.type(slope)
    for i in numba.prange(out.shape[0]):
        gi = g[i]
        out[i] += gi if x[i] > zero else s * gi


_leaky_relu_backward_serial, _leaky_relu_backward_parallel = serial_and_parallel(_leaky_relu_backward)


def _clamp_backward(out: Array, lo: float, hi: float, x: Array, g: Array) -> None:
    zero, lo_, hi_ = x.dtype.type(0), x.dtype.type(lo), x.dtype.type(hi)
    for i in numba.prange(out.shape[0]):
        xi = x[i]
        inside = g[i] if xi >= lo_ else zero  # two selects (vectorize); NaN fails both
        out[i] += inside if xi <= hi_ else zero


_clamp_backward_serial, _clamp_backward_parallel = serial_and_parallel(_clamp_backward)


def _nans_to_backward(out: Array, x: Array, g: Array) -> None:
    zero = x.dtype.type(0)
    for i in numba.prange(out.shape[0]):
        xi, gi = x[i], g[i]
        out[i] += gi if xi == xi else zero  # x != x only for NaN


_nans_to_backward_serial, _nans_to_backward_parallel = serial_and_parallel(_nans_to_backward)


def _silu_backward(out: Array, x: Array, s: Array, g: Array) -> None:
    one = x.dtype.type(1)
    for i in numba.prange(out.shape[0]):
        si = s[i]
        out[i] += si * (one + x[i] * (one - si)) * g[i]


_silu_backward_serial, _silu_backward_parallel = serial_and_parallel(_silu_backward)


def _gelu_backward(out: Array, x: Array, cdf: Array, e: Array, g: Array) -> None:
    c = x.dtype.type(INV_SQRT_2PI)
    for i in numba.prange(out.shape[0]):
        out[i] += (cdf[i] + x[i] * e[i] * c) * g[i]


_gelu_backward_serial, _gelu_backward_parallel = serial_and_parallel(_gelu_backward)


def _gelu_backward_f32(out: Array, x: Array, cdf: Array, g: Array) -> None:
    c = INV_SQRT_2PI
    for i in numba.prange(out.shape[0]):
        xi = np.float64(x[i])
        phi = _exp_neg(-0.5 * (xi * xi)) * c  # xi * xi is exact in float64
        out[i] += np.float32((cdf[i] + xi * phi) * g[i])


_gelu_backward_f32_serial, _gelu_backward_f32_parallel = serial_and_parallel(_gelu_backward_f32, fastmath=CONTRACT)


def _gelu_tanh_backward(out: Array, x: Array, s: Array, g: Array) -> None:
    one, two = x.dtype.type(1), x.dtype.type(2)
    beta, kappa3 = x.dtype.type(SQRT_2_OVER_PI), x.dtype.type(3 * GELU_TANH_KAPPA)
    for i in numba.prange(out.shape[0]):
        xi, si = x[i], s[i]
        d = si + two * xi * si * (one - si) * beta * (one + kappa3 * xi * xi)
        out[i] += d * g[i]


_gelu_tanh_backward_serial, _gelu_tanh_backward_parallel = serial_and_parallel(_gelu_tanh_backward)


# ----- compiled forward kernels (1-D; out may be an input: element i is read first) -----


def _sigmoid_from_exp(out: Array, x: Array, e: Array) -> None:
    zero, one = x.dtype.type(0), x.dtype.type(1)
    for i in numba.prange(out.shape[0]):
        ei = e[i]
        r = one / (one + ei)
        out[i] = r if x[i] >= zero else ei * r


_sigmoid_from_exp_serial, _sigmoid_from_exp_parallel = serial_and_parallel(_sigmoid_from_exp)


def _gelu_forward(y: Array, cdf: Array, x: Array) -> None:
    half, rsqrt2 = x.dtype.type(0.5), x.dtype.type(INV_SQRT_2)
    for i in numba.prange(y.shape[0]):
        xi = x[i]
        c = half * x.dtype.type(math.erfc(-xi * rsqrt2))
        cdf[i] = c
        y[i] = xi * c


_gelu_forward_serial, _gelu_forward_parallel = serial_and_parallel(_gelu_forward)


def _gelu_forward_f32(y: Array, cdf: Array, x: Array) -> None:
    for i in numba.prange(y.shape[0]):
        xi = np.float64(x[i])
        c = 0.5 * _erfc_f32(xi * -INV_SQRT_2)
        cdf[i] = np.float32(c)
        y[i] = np.float32(xi * c)


_gelu_forward_f32_serial, _gelu_forward_f32_parallel = serial_and_parallel(_gelu_forward_f32, fastmath=CONTRACT)


def _gelu_tanh_inner(u: Array, x: Array) -> None:
    beta2, kappa = x.dtype.type(2 * SQRT_2_OVER_PI), x.dtype.type(GELU_TANH_KAPPA)
    for i in numba.prange(u.shape[0]):
        xi = x[i]
        u[i] = beta2 * (xi + kappa * xi * xi * xi)


_gelu_tanh_inner_serial, _gelu_tanh_inner_parallel = serial_and_parallel(_gelu_tanh_inner)


def _softplus_finish(y: Array, s: Array, beta: float, threshold: float, x: Array, e: Array, l: Array) -> None:
    zero, one = x.dtype.type(0), x.dtype.type(1)
    b, thr = x.dtype.type(beta), x.dtype.type(threshold)
    for i in numba.prange(y.shape[0]):
        xi, ei, li = x[i], e[i], l[i]
        z = b * xi
        linear = z > thr
        r = one / (one + ei)
        y[i] = xi if linear else (li + max(z, zero)) / b
        s[i] = one if linear else (r if z >= zero else ei * r)


_softplus_finish_serial, _softplus_finish_parallel = serial_and_parallel(_softplus_finish)


# ----- helpers ---------------------------------------------------------------------------


def _erf(out: Array, x: Array, complement: bool) -> None:
    for i in numba.prange(out.shape[0]):
        out[i] = math.erfc(x[i]) if complement else math.erf(x[i])


_erf_serial, _erf_parallel = serial_and_parallel(_erf)


def _erf32(out: Array, x: Array, complement: bool) -> None:
    for i in numba.prange(out.shape[0]):
        xi = np.float64(x[i])
        out[i] = np.float32(_erfc_f32(xi) if complement else _erf_f32(xi))


_erf32_serial, _erf32_parallel = serial_and_parallel(_erf32, fastmath=CONTRACT)


def _relu(out: Array, x: Array) -> None:
    zero = x.dtype.type(0)
    for i in numba.prange(out.shape[0]):
        xi = x[i]
        out[i] = zero if xi <= zero else xi  # NaN > 0 and NaN <= 0 are both false: NaN stays


_relu_serial, _relu_parallel = serial_and_parallel(_relu)


RELU_KERNEL_MIN = 2048
"""Below this many elements :func:`relu` calls ``np.maximum`` (one ufunc call is cheaper than
a kernel call plus an ``np.empty`` there); from it the kernel (measured on 64x128 float32:
``np.maximum`` 3.7 us, the kernel 1.9 us; 0.35 ms vs 0.09 ms at 1M)."""


def _big(n: int) -> bool:
    return n >= PARALLEL_THRESHOLD


def _cuda() -> Any:
    from gradtape.devices.kernels import cuda

    return cuda


def _input(op: str, x: Array) -> Array:
    """``x`` as a flat C-contiguous float32/float64 array (a view when it already is one).

    Raises:
        DTypeError: ``x`` is not float32 or float64.
    """
    x = np.asarray(x)
    if x.dtype != np.float32 and x.dtype != np.float64:
        raise DTypeError(f"{op}: input has dtype {x.dtype} (shape {x.shape}); kernels take float32 or float64")
    return np.ascontiguousarray(x).reshape(-1)


def _check_operands(op: str, out: Array, *ins: Array) -> None:
    """Check that ``ins`` broadcast to ``out.shape`` with ``out``'s dtype (cheap when they have
    its shape), before a wrapper computes anything from them.

    Raises:
        ShapeError, DTypeError: as :func:`~.elementwise._fallback_shape`, naming ``op``.
    """
    shape, dtype = out.shape, out.dtype
    for x in ins:
        if x.__class__ is not np.ndarray or x.shape != shape or x.dtype != dtype:
            _fallback_shape(op, out, *ins)
            return


def _neg_exp_abs(z: Array) -> Array:
    """``exp(-|z|)`` for a 1-D array, into a new array (numpy SIMD ufuncs, in place)."""
    e = np.abs(z)
    np.negative(e, out=e)
    np.exp(e, out=e)
    return e


# ----- forward wrappers ------------------------------------------------------------------


def relu(x: npt.ArrayLike, out: Array | None = None) -> Array:
    """``max(x, 0)`` elementwise, NaN propagating (as ``np.maximum(x, 0)`` and PyTorch; ``-0.0``
    gives ``0.0``). Returns a new array of ``x``'s shape and dtype, or ``out`` (a C-contiguous
    array of that shape and dtype, written in place) where given.

    numpy's ``maximum`` handles NaN on a slow path (about 3 GB/s here); a select in a kernel
    runs at memory speed. Arrays of fewer than :data:`RELU_KERNEL_MIN` elements, or not
    C-contiguous, go to ``np.maximum``.

    Raises:
        DTypeError: ``x`` is not float32 or float64.
    """
    if _on_gpu(x):
        return _cuda().relu(x)  # type: ignore[no-any-return]
    xa: Array = x if type(x) is np.ndarray else np.asarray(x)
    dt = xa.dtype
    if dt is not _F32 and dt is not _F64 and dt != _F32 and dt != _F64:
        raise DTypeError(f"relu: input has dtype {dt} (shape {xa.shape}); kernels take float32 or float64")
    if xa.size < RELU_KERNEL_MIN or not xa.flags.c_contiguous:
        if _trace.active is not None:
            _trace.refuse(f"relu of {xa.shape} runs numpy's maximum")
        small: Array = np.maximum(xa, dt.type(0), out=out)
        return small
    if out is None:
        out = np.empty(xa.shape, dt)
    x1, o1 = xa.reshape(-1), out.reshape(-1)
    kernel = _relu_parallel if _big(x1.shape[0]) else _relu_serial
    kernel(o1, x1)
    if _trace.active is not None:
        _trace.note(kernel, o1, x1)
    return out


def sigmoid(x: Array) -> Array:
    """``1 / (1 + exp(-x))`` elementwise, without overflow and accurate in both tails.

    ``e = exp(-|x|)`` runs in numpy; one kernel pass gives ``1 / (1 + e)`` where ``x >= 0``
    and ``e / (1 + e)`` where ``x < 0``. Returns a new array of ``x``'s shape and dtype.

    Raises:
        DTypeError: ``x`` is not float32 or float64.
    """
    if _on_gpu(x):
        return _cuda().sigmoid(x)  # type: ignore[no-any-return]
    x1 = _input("sigmoid", x)
    e = _neg_exp_abs(x1)
    (_sigmoid_from_exp_parallel if _big(x1.shape[0]) else _sigmoid_from_exp_serial)(e, x1, e)
    return e.reshape(np.shape(x))


def erf(x: Array, complement: bool = False) -> Array:
    """The error function ``erf(x) = 2/sqrt(pi) * integral_0^x exp(-t**2) dt`` elementwise, or
    with ``complement=True`` ``erfc(x) = 1 - erf(x)`` (accurate in the right tail, where
    ``1 - erf`` cancels). numpy has no ``erf``: float64 calls numba's ``math.erf``/``math.erfc``
    (libm, one call per element); float32 runs :func:`_erf_f32`/:func:`_erfc_f32` (Cephes'
    single-precision approximations in float64 arithmetic, vectorized; within about 1 float32
    ulp). Returns a new array of ``x``'s shape and dtype.

    Raises:
        DTypeError: ``x`` is not float32 or float64.
    """
    if _on_gpu(x):
        return _cuda().erf(x, complement)  # type: ignore[no-any-return]
    x1 = _input("erfc" if complement else "erf", x)
    out = np.empty_like(x1)
    big = _big(x1.shape[0])
    if x1.dtype == np.float32:
        (_erf32_parallel if big else _erf32_serial)(out, x1, complement)
    else:
        (_erf_parallel if big else _erf_serial)(out, x1, complement)
    return out.reshape(np.shape(x))


def gelu(x: Array) -> tuple[Array, Array]:
    """Exact GELU: ``(x * Phi(x), Phi(x))`` with ``Phi(x) = erfc(-x / sqrt(2)) / 2`` the
    standard normal CDF (``erfc`` keeps ``Phi`` accurate far into the negative tail, where
    ``1 + erf`` would cancel). float64: numba's ``math.erfc``, a libm call per element. float32:
    :func:`_erfc_f32` (vectorized), with ``x / sqrt(2)`` and ``x * Phi(x)`` in float64, each
    output rounded once to float32 (within about 1 ulp of ``x * Phi(x)``).

    Returns two new arrays of ``x``'s shape and dtype (the output and ``Phi(x)``).

    Raises:
        DTypeError: ``x`` is not float32 or float64.
    """
    if _on_gpu(x):
        return _cuda().gelu(x)  # type: ignore[no-any-return]
    x1 = _input("gelu", x)
    y, cdf = np.empty_like(x1), np.empty_like(x1)
    big = _big(x1.shape[0])
    if x1.dtype == np.float32:
        (_gelu_forward_f32_parallel if big else _gelu_forward_f32_serial)(y, cdf, x1)
    else:
        (_gelu_forward_parallel if big else _gelu_forward_serial)(y, cdf, x1)
    shape = np.shape(x)
    return y.reshape(shape), cdf.reshape(shape)


def gelu_tanh(x: Array) -> tuple[Array, Array]:
    """GELU's tanh approximation (PyTorch's ``approximate='tanh'``): ``(x * s, s)`` with
    ``s = (1 + tanh(u)) / 2 = sigmoid(2 u)`` and ``u = sqrt(2/pi) * (x + 0.044715 * x**3)``.

    Computed as the sigmoid of ``2 u`` (one kernel pass for ``2 u``, ``exp(-|2u|)`` in numpy,
    one pass for the stable sigmoid; ``u`` has the sign of ``x``), which keeps the negative
    tail accurate where ``1 + tanh(u)`` would cancel. Returns two new arrays of ``x``'s shape
    and dtype (the output and ``s``).

    Raises:
        DTypeError: ``x`` is not float32 or float64.
    """
    if _on_gpu(x):
        return _cuda().gelu_tanh(x)  # type: ignore[no-any-return]
    x1 = _input("gelu_tanh", x)
    big = _big(x1.shape[0])
    s = np.empty_like(x1)
    (_gelu_tanh_inner_parallel if big else _gelu_tanh_inner_serial)(s, x1)
    np.abs(s, out=s)
    np.negative(s, out=s)
    np.exp(s, out=s)
    (_sigmoid_from_exp_parallel if big else _sigmoid_from_exp_serial)(s, x1, s)
    shape = np.shape(x)
    return np.multiply(x1, s).reshape(shape), s.reshape(shape)


def softplus(x: Array, beta: float, threshold: float) -> tuple[Array, Array]:
    """PyTorch's softplus: ``(y, s)`` with ``y = x`` where ``beta * x > threshold``, else
    ``log(1 + exp(beta * x)) / beta``, and ``s = dy/dx`` (``1``, else ``sigmoid(beta * x)``).

    ``log(1 + exp(z))`` is computed as ``log1p(exp(-|z|)) + max(z, 0)``, which cannot overflow.
    Returns two new arrays of ``x``'s shape and dtype.

    Raises:
        DTypeError: ``x`` is not float32 or float64.
    """
    if _on_gpu(x):
        return _cuda().softplus(x, beta, threshold)  # type: ignore[no-any-return]
    x1 = _input("softplus", x)
    e = _neg_exp_abs(np.multiply(x1, x1.dtype.type(beta)))
    y = np.log1p(e)
    kernel = _softplus_finish_parallel if _big(x1.shape[0]) else _softplus_finish_serial
    kernel(y, e, float(beta), float(threshold), x1, e, y)  # y overwrites log1p(e), s overwrites e, element by element
    shape = np.shape(x)
    return y.reshape(shape), e.reshape(shape)


# ----- backward wrappers (out += f'(x) * g, in place) ------------------------------------


def _run(kernels: tuple[Any, Any], out: Array, *args: Any) -> None:
    """Call the serial or parallel kernel on flattened ``out`` and array ``args``."""
    o = _flat(out)
    flat = [_flat(a) if isinstance(a, np.ndarray) else a for a in args]
    kernels[1 if _big(o.shape[0]) else 0](o, *flat)


def addmul_scaled(out: Array, alpha: float, a: Array, b: Array) -> None:
    """``out += alpha * a * b`` in one fused pass, in place.

    Args:
        out: float32 or float64 array, updated in place.
        alpha: a Python number, converted to ``out``'s dtype.
        a, b: arrays of ``out``'s dtype whose broadcast shape is ``out.shape``.

    Raises:
        ShapeError: ``a * b`` does not have ``out``'s shape.
        DTypeError: the dtypes differ or are not float32/float64.
        ValueError: ``out`` is read-only.
    """
    _check_out("addmul_scaled", out)
    _addmul_scaled_for("addmul_scaled", out, alpha, a, b)


def _addmul_scaled_for(op: str, out: Array, alpha: float, a: Array, b: Array) -> None:
    if _fast(out, a, b):
        o, a1, b1 = _flat(out), _flat(a), _flat(b)
        (_addmul_scaled_parallel if _big(o.shape[0]) else _addmul_scaled_serial)(o, float(alpha), a1, b1)
    else:
        _fallback_shape(op, out, a, b)
        out += out.dtype.type(alpha) * np.asarray(a) * b


def abs_backward(out: Array, x: Array, g: Array) -> None:
    """``out += sign(x) * g`` (the backward of ``abs``; ``0`` at ``x == 0``, NaN at NaN).

    Raises:
        ShapeError, DTypeError, ValueError: as :func:`addmul_scaled`.
    """
    if not _fused3("abs_backward", _abs_backward_serial, _abs_backward_parallel, out, x, g):
        out += np.sign(x) * g


def sqrt_backward(out: Array, y: Array, g: Array) -> None:
    """``out += g / (2 * y)`` with ``y = sqrt(x)`` (the backward of ``sqrt``).

    Raises:
        ShapeError, DTypeError, ValueError: as :func:`addmul_scaled`.
    """
    if not _fused3("sqrt_backward", _sqrt_backward_serial, _sqrt_backward_parallel, out, y, g):
        out += g / (2 * np.asarray(y))


def square_backward(out: Array, x: Array, g: Array) -> None:
    """``out += 2 * x * g`` (the backward of ``square``).

    Raises:
        ShapeError, DTypeError, ValueError: as :func:`addmul_scaled`.
    """
    _check_out("square_backward", out)
    _addmul_scaled_for("square_backward", out, 2.0, x, g)


def pow_backward(out: Array, x: Array, g: Array, p: float) -> None:
    """``out += p * x**(p - 1) * g`` (the backward of ``x ** p``); ``x**(p-1)`` runs in numpy.

    Raises:
        ShapeError, DTypeError, ValueError: as :func:`addmul_scaled`.
    """
    _check_out("pow_backward", out)
    _check_operands("pow_backward", out, x, g)
    if p == 2.0:
        t = x
    elif p < 1.0:
        with np.errstate(divide="ignore"):  # 0 ** (p - 1) is inf, the derivative at 0 (as PyTorch)
            t = np.power(x, p - 1.0)
    else:
        t = np.power(x, p - 1.0)
    _addmul_scaled_for("pow_backward", out, p, t, g)


def cos_backward(out: Array, x: Array, g: Array) -> None:
    """``out += -sin(x) * g`` (the backward of ``cos``); ``sin`` runs in numpy.

    Raises:
        ShapeError, DTypeError, ValueError: as :func:`addmul_scaled`.
    """
    _check_out("cos_backward", out)
    _check_operands("cos_backward", out, x, g)
    _addmul_scaled_for("cos_backward", out, -1.0, np.sin(x), g)


def tanh_backward(out: Array, y: Array, g: Array) -> None:
    """``out += (1 - y**2) * g`` with ``y = tanh(x)`` (the backward of ``tanh``).

    Raises:
        ShapeError, DTypeError, ValueError: as :func:`addmul_scaled`.
    """
    if not _fused3("tanh_backward", _tanh_backward_serial, _tanh_backward_parallel, out, y, g):
        y = np.asarray(y)
        out += (1 - y * y) * g


def sigmoid_backward(out: Array, y: Array, g: Array) -> None:
    """``out += y * (1 - y) * g`` with ``y = sigmoid(x)`` (the backward of ``sigmoid``).

    Raises:
        ShapeError, DTypeError, ValueError: as :func:`addmul_scaled`.
    """
    if not _fused3("sigmoid_backward", _sigmoid_backward_serial, _sigmoid_backward_parallel, out, y, g):
        y = np.asarray(y)
        out += y * (1 - y) * g


def recip_backward(out: Array, y: Array, g: Array) -> None:
    """``out -= y**2 * g`` with ``y = 1 / x`` (the backward of ``recip``).

    Raises:
        ShapeError, DTypeError, ValueError: as :func:`addmul_scaled`.
    """
    if not _fused3("recip_backward", _recip_backward_serial, _recip_backward_parallel, out, y, g):
        y = np.asarray(y)
        out -= y * y * g


def nans_to_backward(out: Array, x: Array, g: Array) -> None:
    """``out += g`` where ``x`` is not NaN (the backward of ``nans_to``).

    Raises:
        ShapeError, DTypeError, ValueError: as :func:`addmul_scaled`.
    """
    if not _fused3("nans_to_backward", _nans_to_backward_serial, _nans_to_backward_parallel, out, x, g):
        out += np.where(np.isnan(x), out.dtype.type(0), g)


def leaky_relu_backward(out: Array, x: Array, g: Array, negative_slope: float) -> None:
    """``out += g`` where ``x > 0``, else ``negative_slope * g`` (the backward of ``leaky_relu``;
    the slope applies at ``x == 0``, as PyTorch).

    Raises:
        ShapeError, DTypeError, ValueError: as :func:`addmul_scaled`.
    """
    _check_out("leaky_relu_backward", out)
    if _fast(out, x, g):
        _run((_leaky_relu_backward_serial, _leaky_relu_backward_parallel), out, float(negative_slope), x, g)
    else:
        _fallback_shape("leaky_relu_backward", out, x, g)
        out += np.where(np.asarray(x) > 0, g, out.dtype.type(negative_slope) * np.asarray(g))


def clamp_backward(out: Array, x: Array, g: Array, lo: float, hi: float) -> None:
    """``out += g`` where ``lo <= x <= hi`` (bounds included, as PyTorch), else nothing (the
    backward of ``clamp``; NaN inputs get nothing). Use ``-inf`` / ``inf`` for a missing bound.

    Raises:
        ShapeError, DTypeError, ValueError: as :func:`addmul_scaled`.
    """
    _check_out("clamp_backward", out)
    if _fast(out, x, g):
        _run((_clamp_backward_serial, _clamp_backward_parallel), out, float(lo), float(hi), x, g)
    else:
        _fallback_shape("clamp_backward", out, x, g)
        dt = out.dtype.type
        x = np.asarray(x)
        out += np.where((x >= dt(lo)) & (x <= dt(hi)), g, dt(0))


def silu_backward(out: Array, x: Array, s: Array, g: Array) -> None:
    """``out += s * (1 + x * (1 - s)) * g`` with ``s = sigmoid(x)`` (the backward of ``silu``).

    Raises:
        ShapeError, DTypeError, ValueError: as :func:`addmul_scaled`.
    """
    if not _fused("silu_backward", (_silu_backward_serial, _silu_backward_parallel), out, x, s, g):
        x, s = np.asarray(x), np.asarray(s)
        out += s * (1 + x * (1 - s)) * g


def gelu_backward(out: Array, x: Array, cdf: Array, g: Array) -> None:
    """``out += (Phi(x) + x * phi(x)) * g`` (the backward of exact ``gelu``), with the saved
    ``cdf = Phi(x)`` and the normal density ``phi(x) = exp(-x**2 / 2) / sqrt(2 pi)``. float64:
    ``exp`` runs in numpy, then one kernel pass. float32: one kernel pass, ``phi`` and the
    factor in float64 (:func:`_exp_neg` of the exact ``-x**2 / 2``; numpy's float32 ``exp`` of
    a rounded ``x**2`` erred by up to ``x**2 / 2 * 6e-8`` relative), rounded once before the add.

    Raises:
        ShapeError, DTypeError, ValueError: as :func:`addmul_scaled`.
    """
    _check_out("gelu_backward", out)
    fast = _fast(out, x, cdf, g)
    if fast and out.dtype == np.float32:
        _run((_gelu_backward_f32_serial, _gelu_backward_f32_parallel), out, x, cdf, g)
    elif fast:
        x1 = _flat(x)
        e = np.square(x1)
        e *= -0.5
        np.exp(e, out=e)
        _run((_gelu_backward_serial, _gelu_backward_parallel), out, x1, cdf, e, g)
    else:
        _fallback_shape("gelu_backward", out, x, cdf, g)
        x = np.asarray(x)
        out += (cdf + x * np.exp(x * x * -0.5) * out.dtype.type(INV_SQRT_2PI)) * g


def gelu_tanh_backward(out: Array, x: Array, s: Array, g: Array) -> None:
    """The backward of ``gelu(approximate='tanh')``, with the saved ``s = (1 + t) / 2``,
    ``t = tanh(sqrt(2/pi) (x + 0.044715 x**3))``. PyTorch's derivative
    ``0.5 (1 + t) + 0.5 x (1 - t**2) sqrt(2/pi) (1 + 3 * 0.044715 x**2)``, written in ``s``
    (``1 - t**2 = 4 s (1 - s)``)::

        out += (s + 2 x s (1 - s) sqrt(2/pi) (1 + 3 * 0.044715 x**2)) * g

    Raises:
        ShapeError, DTypeError, ValueError: as :func:`addmul_scaled`.
    """
    if not _fused("gelu_tanh_backward", (_gelu_tanh_backward_serial, _gelu_tanh_backward_parallel), out, x, s, g):
        dt = out.dtype.type
        x, s = np.asarray(x), np.asarray(s)
        beta, kappa3 = dt(SQRT_2_OVER_PI), dt(3 * GELU_TANH_KAPPA)
        out += (s + 2 * x * s * (1 - s) * beta * (1 + kappa3 * x * x)) * g
