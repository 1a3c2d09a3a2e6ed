"""Matrix products through numpy's BLAS, small ones on one thread.

numpy's OpenBLAS splits even small products over its threads. The split costs more than it
saves below about :data:`SMALL_MACS` multiply-adds, and every multithreaded call leaves
OpenBLAS's workers spinning for a while afterwards (busy-waiting for the next call), so a
training step made of small products kept both cores of the 2-core VM busy (2.0 CPU-seconds
per second against PyTorch's 0.9, issue 17) and, on a loaded machine, ran several times
slower than on one thread. :func:`matmul` runs products below :data:`SMALL_MACS` with
OpenBLAS set to one thread (``openblas_set_num_threads_local``, about 0.4 us per switch and
back) and restores the thread count for the rest; products OpenBLAS runs on one thread
anyway (:data:`OPENBLAS_SERIAL_MACS`) skip the switch.

"Spinning for a while" is 2**28 cycles (about 0.1 s) per multithreaded product by default;
importing gradtape before numpy shortens it to 2**18 (:mod:`gradtape._openblas_env`, which
has the measurements), and :func:`thread_timeout` reports the value in effect.

The count restored is the one numpy's OpenBLAS had when this module was imported (set it
before, e.g. with ``OPENBLAS_NUM_THREADS`` or threadpoolctl, to choose another). With
another BLAS (MKL, Accelerate) or an OpenBLAS without the call, :func:`matmul` is
``np.matmul``.

In a compiled replay (``gradtape.capture``), a product numpy's OpenBLAS runs is called from
the generated function as numpy calls it: :func:`_note_gemm` notes the same ``cblas_?gemm``
calls (numpy 2's bundled scipy-openblas64, through their addresses), so a machine whose
products stay on OpenBLAS (an Intel Xeon, whose OpenBLAS runs its AVX-512 kernels) compiles
its training steps as one whose products go to oneDNN does. The digits MLP's captured step
under ``OPENBLAS_CORETYPE=SkylakeX`` on the AVX-512 EPYC VM: 138 -> 81 microseconds.

A batch of small products (attention's per-head ``q @ k^T``) runs one matrix per numba thread
with the same one-thread ``cblas_?gemm`` calls (:data:`PARALLEL_BATCH_MACS`), eagerly and in
a compiled replay; numpy's loop would run them one after another on one core.
"""

from __future__ import annotations

import ctypes
import glob
import os
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba.core import types as nt
from numba.extending import intrinsic

from gradtape.devices.kernels import _jit, _trace
from gradtape.devices.kernels import onednn as _onednn
from gradtape.devices.kernels import onednn_matmul as _onednn_mm

__all__ = ["OPENBLAS_SERIAL_MACS", "SMALL_MACS", "matmul", "thread_timeout"]

Array = np.ndarray[Any, Any]

SMALL_MACS = 1 << 23
"""Matrix products with fewer multiply-adds (``m * k * n`` of one matrix) than this run on one
BLAS thread. Measured on the idle 2-core VM (float32, numpy's OpenBLAS 0.3.31 on the Haswell
kernels the VM's environment forces, medians),
two threads against one: 0.59x as fast at 0.5M multiply-adds (64x64x128), 0.8-1.1x at 1M,
1.11x at 2M, 1.15-1.22x at 4.2M, 1.4-1.9x at 8.4M, 1.6-2.0x from 67M on. Those one-thread
figures are pessimistic: the VM's two vCPUs share a core, and OpenBLAS's workers still spun
from the two-thread runs, halving the one thread's speed. In a training step (the digits
CNN's 4.7M-multiply-add products) one thread below 8.4M gave the lower wall time with half
the CPU. With numpy's own AVX-512 kernels (session 7) two threads ran the digits CNN's
4.7M products in 0.68x the time, but its step gained 5% for twice the CPU, so the bound
stayed."""


OPENBLAS_SERIAL_MACS = 65536 * 4
"""Products with at most this many multiply-adds OpenBLAS already runs on the calling thread
(``interface/gemm.c``: ``SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD``, 65536 * 4 in its
default build; its matrix-vector bound is higher), so :func:`matmul` calls numpy directly,
without the thread switch (0.8 us of the 2.9 us a 64x128x10 product took)."""


def _openblas() -> ctypes.CDLL | None:
    """numpy's bundled OpenBLAS (the ``numpy.libs`` of a PyPI wheel), or ``None``."""
    libs = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    for path in sorted(glob.glob(os.path.join(libs, "*openblas*"))):
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


_LIB = _openblas()
_TIMEOUT = getattr(_LIB, "openblas_thread_timeout", None)  # None without numpy's OpenBLAS
if _TIMEOUT is not None:
    _TIMEOUT.restype = ctypes.c_int


def thread_timeout() -> int | None:
    """The exponent numpy's OpenBLAS loaded with: its workers spin ``2**thread_timeout()``
    cycles after each multithreaded product before they sleep (``OPENBLAS_THREAD_TIMEOUT`` as
    OpenBLAS clamps it to 4-30; 28 when unset). ``None`` where numpy's BLAS is not a bundled
    OpenBLAS. See :mod:`gradtape._openblas_env` for why gradtape sets it."""
    if _TIMEOUT is None:
        return None
    value = int(_TIMEOUT())
    return 28 if value <= 0 else min(30, max(4, value))


def _openblas_setter() -> tuple[Callable[[int], int], int] | None:
    """numpy's OpenBLAS ``openblas_set_num_threads_local`` and its current thread count."""
    setter = getattr(_LIB, "openblas_set_num_threads_local", None)
    if setter is None:
        return None
    setter.restype = ctypes.c_int
    setter.argtypes = [ctypes.c_int]
    current = int(setter(1))  # returns the previous count
    setter(current)
    if current < 1:
        return None
    return setter, current


_SETTER = _openblas_setter()
_SET: Callable[[int], int] | None = None if _SETTER is None or _SETTER[1] == 1 else _SETTER[0]
_THREADS = 1 if _SETTER is None else _SETTER[1]
_PARALLEL_THREADS = numba.get_num_threads


_F32 = np.dtype(np.float32)


def openblas_core() -> str | None:
    """The core name numpy's OpenBLAS loaded its kernels for (``Haswell``, ``SkylakeX``, ...;
    ``openblas_get_corename``), or ``None`` with another BLAS."""
    for name in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename", "openblas_get_corename"):
        fn = getattr(_LIB, name, None) if _LIB is not None else None
        if fn is not None:
            fn.restype = ctypes.c_char_p
            core = fn()
            return core.decode() if core else None
    return None


AVX512_CORES = frozenset({"SkylakeX", "Cooperlake", "SapphireRapids", "Zen4", "Zen5"})
"""OpenBLAS core names whose kernels use AVX-512 (:func:`openblas_core`): with these,
OpenBLAS keeps the large float32 products."""

_MATMUL_CHOICE: tuple[bool, str] | None = None  # (large float32 products on oneDNN, why)


def matmul_choice() -> tuple[bool, str]:
    """``(use oneDNN, why)`` for large float32 products, decided at the first call and kept
    for the process: ``GRADTAPE_MATMUL`` if set (``onednn``/``openblas``), else oneDNN where it
    runs AVX-512 kernels and OpenBLAS's core (:func:`openblas_core`) is not one of
    :data:`AVX512_CORES` (:mod:`gradtape.devices.kernels.onednn_matmul` has the measurements).

    Raises:
        ValueError: ``GRADTAPE_MATMUL`` is set to something else (the message names it).
    """
    global _MATMUL_CHOICE
    if _MATMUL_CHOICE is None:
        forced = os.environ.get("GRADTAPE_MATMUL", "")
        if forced not in ("", "onednn", "openblas"):
            raise ValueError(f"GRADTAPE_MATMUL={forced!r}: expected 'onednn' or 'openblas'")
        lib, core = _onednn._load(), openblas_core()
        if lib is None:
            _MATMUL_CHOICE = (False, f"OpenBLAS ({core} kernels); {_onednn.info()}")
        elif forced:
            _MATMUL_CHOICE = (forced == "onednn", f"{forced} (GRADTAPE_MATMUL); OpenBLAS core {core}, oneDNN {lib.isa}")
        elif "avx512" in lib.isa and core not in AVX512_CORES:
            _MATMUL_CHOICE = (
                True,
                f"oneDNN {lib.isa} from {_onednn_mm.MIN_MACS} multiply-adds (OpenBLAS runs {core} kernels)",
            )
        else:
            _MATMUL_CHOICE = (False, f"OpenBLAS ({core} kernels; oneDNN would run {lib.isa})")
    return _MATMUL_CHOICE


def matmul_info() -> str:
    """Which library runs large float32 products on this machine, and why (one line, for the
    benchmarks' header): :func:`matmul_choice`'s reason."""
    return matmul_choice()[1]


def matmul(a: Array, b: Array, out: Array | None = None) -> Array:
    """``np.matmul(a, b, out=out)``, on one BLAS thread when each 2-D product has fewer than
    :data:`SMALL_MACS` multiply-adds (see the module docstring). A float32 product of
    ``onednn_matmul.SERIAL_MIN_MACS`` multiply-adds (times the batch) or more runs on oneDNN
    instead where :func:`matmul_choice` picks it (a machine whose OpenBLAS kernels are older
    than its CPU), into ``out`` where given: below ``onednn_matmul.MIN_MACS`` on the calling
    thread alone, from it on oneDNN's threads. numpy runs a batched product as one BLAS call
    per matrix, so the size that matters is one matrix's ``m * k * n``, not the batch's; a
    batch of such one-thread products with :data:`PARALLEL_BATCH_MACS` in all runs one matrix
    per numba thread instead, bit for bit the same. Same shapes, dtypes and errors as numpy's.
    GPU (CuPy) arrays go to ``np.matmul``, which CuPy runs as cuBLAS's ``gemm``."""
    if a.ndim == 0 or b.ndim == 0 or (a.__class__ is not np.ndarray and hasattr(a, "__cuda_array_interface__")):
        if _trace.active is not None:
            _trace.refuse(f"a product {a.shape} @ {b.shape} runs on numpy")
        res: Array = np.matmul(a, b, out=out)
        return res
    m = a.shape[-2] if a.ndim > 1 else 1
    n = b.shape[-1] if b.ndim > 1 else 1
    macs = m * a.shape[-1] * n
    if a.dtype is _F32 and b.dtype is _F32 and a.ndim > 1 and b.ndim > 1 and macs:
        total = macs * max(a.size // (m * a.shape[-1]), b.size // max(1, b.shape[-2] * n))
        if total >= _onednn_mm.SERIAL_MIN_MACS and (_MATMUL_CHOICE or matmul_choice())[0]:  # oneDNN where it wins
            res_d = _onednn_mm.matmul(a, b, out, total < _onednn_mm.MIN_MACS)
            if res_d is not None:
                return res_d
    if _SET is not None and 0 < macs < SMALL_MACS and (a.ndim > 2 or b.ndim > 2):
        res_p = _batched(a, b, out, macs)
        if res_p is not None:
            return res_p
    if _trace.active is not None:
        out = _note_gemm(a, b, out, _SET is not None and OPENBLAS_SERIAL_MACS < macs < SMALL_MACS)
    if _SET is None:
        res = np.matmul(a, b, out=out)
        return res
    if macs >= SMALL_MACS or macs <= OPENBLAS_SERIAL_MACS:
        res = np.matmul(a, b, out=out)
        return res
    _SET(1)
    try:
        res = np.matmul(a, b, out=out)
        return res
    finally:
        _SET(_THREADS)


# A product numpy's OpenBLAS runs, in a compiled replay (``gradtape.capture``): the same
# ``cblas_?gemm`` calls numpy's matmul loop makes, called from numba through their addresses.

_CBLAS_ROW_MAJOR, _CBLAS_NO_TRANS, _CBLAS_TRANS = 101, 111, 112
_GEMM_HEADER = 12  # call[:12]: gemm, set_threads, threads, trans_a, trans_b, m, n, k, lda, ldb, ldc, batch


def _address(name: str) -> int:
    """The address of ``name`` in numpy's OpenBLAS, or 0."""
    fn = getattr(_LIB, name, None) if _LIB is not None else None
    return 0 if fn is None else ctypes.cast(fn, ctypes.c_void_p).value or 0


_GEMM = {  # numpy 2's OpenBLAS (scipy-openblas64: 64-bit integers); another BLAS: none
    np.dtype(np.float32): _address("scipy_cblas_sgemm64_"),
    np.dtype(np.float64): _address("scipy_cblas_dgemm64_"),
}
_SET_ADDRESS = _address("openblas_set_num_threads_local")
_I32, _I64 = _onednn_mm._I32, _onednn_mm._I64


@intrinsic
def _cblas_gemm(
    typingctx: Any,
    fn: Any,
    trans_a: Any,
    trans_b: Any,
    m: Any,
    n: Any,
    k: Any,
    a: Any,
    lda: Any,
    b: Any,
    ldb: Any,
    c: Any,
    ldc: Any,
    like: Any,
) -> Any:
    """``cblas_?gemm(RowMajor, trans_a, trans_b, m, n, k, 1, a, lda, b, ldb, 0, c, ldc)``
    through its address ``fn`` (a 64-bit-integer CBLAS); ``a``, ``b``, ``c`` are addresses,
    ``like`` an array of the product's dtype (float32: ``sgemm``, float64: ``dgemm``)."""
    real = ir.FloatType() if like.dtype == nt.float32 else ir.DoubleType()

    def codegen(context: Any, builder: Any, sig: Any, v: Any) -> Any:
        fnty = ir.FunctionType(
            ir.VoidType(), [_I32, _I32, _I32, _I64, _I64, _I64, real, _I64, _I64, _I64, _I64, real, _I64, _I64]
        )
        args = [ir.Constant(_I32, _CBLAS_ROW_MAJOR), builder.trunc(v[1], _I32), builder.trunc(v[2], _I32)]
        args += [v[3], v[4], v[5], ir.Constant(real, 1.0), v[6], v[7], v[8], v[9], ir.Constant(real, 0.0)]
        builder.call(builder.inttoptr(v[0], fnty.as_pointer()), [*args, v[10], v[11]])
        return ir.Constant(_I32, 0)

    return nt.int32(*([nt.intp] * 12), like), codegen


@intrinsic
def _set_threads(typingctx: Any, fn: Any, n: Any) -> Any:
    """``openblas_set_num_threads_local(n)`` through its address ``fn``; returns the count before."""

    def codegen(context: Any, builder: Any, sig: Any, v: Any) -> Any:
        return _onednn_mm._c_call(builder, v[0], [_I32], [builder.trunc(v[1], _I32)])

    return nt.int32(nt.intp, nt.intp), codegen


@_jit.jit()
def _gemm_compiled(call: Array, a: Array, b: Array, out: Array) -> int:
    """The ``cblas_?gemm`` calls numpy's matmul makes for ``a @ b`` into ``out``, one per matrix
    of the batch, with OpenBLAS on one thread for the call where ``call[2]`` (the count to
    restore) is not 0: ``call`` is the int64 array :func:`_note_gemm` made (``gemm``'s and
    ``openblas_set_num_threads_local``'s addresses, the thread count, the two transposes,
    ``m, n, k``, the three leading dims, the batch, then three byte offsets per matrix)."""
    threads = call[2]
    if threads != 0:
        _set_threads(call[1], 1)
    pa, pb, pc = a.ctypes.data, b.ctypes.data, out.ctypes.data
    for i in range(call[11]):
        j = _GEMM_HEADER + 3 * i
        _cblas_gemm(
            call[0], call[3], call[4], call[5], call[6], call[7],
            pa + call[j], call[8], pb + call[j + 1], call[9], pc + call[j + 2], call[10], out,
        )  # fmt: skip
    if threads != 0:
        _set_threads(call[1], threads)
    return 0


def _blasable(stride_1: int, stride_2: int, d2: int, size: int) -> bool:
    """numpy's ``is_blasable2d``: a matrix BLAS reads as is (unit steps along its second axis,
    a first-axis step of at least ``d2`` elements)."""
    return stride_2 == size and stride_1 % size == 0 and stride_1 // size >= d2


_PLANS: dict[tuple[Any, ...], Array] = {}  # the call arrays of recent operand layouts
_PLANS_KEPT = 256


def _plan(a: Array, b: Array, out: Array | None, threads: int, numpy_out: bool) -> tuple[Array, Array] | str:
    """The ``cblas_?gemm`` calls numpy's matmul loop makes for ``a @ b`` into ``out``
    (``numpy/_core/src/umath/matmul.c.src``: row-major, each operand read in place, transposed
    where its rows are its unit-step axis, one call per matrix of the broadcast batch), as the
    int64 ``call`` array :func:`_gemm_compiled` and :func:`_gemm_parallel` read, with ``out``
    (a new C-contiguous array where it was ``None``); ``threads``: OpenBLAS's thread count to
    restore after a call run on one thread (0: none). ``numpy_out``: ``out`` must be one numpy
    writes in place (C-contiguous); else any output whose matrices BLAS writes in place.

    Returns why not, instead, where numpy takes another path: another dtype or BLAS, a 1-D
    operand or a core dim of 0 or 1 (numpy's ``gemv``/``dot`` special cases), an operand it
    copies first (not BLAS-readable, misaligned, overlapping ``out``), ``a @ a.T`` (numpy's
    ``syrk``), mismatched shapes (numpy raises its error)."""
    dt = a.dtype
    fn = _GEMM.get(dt, 0)
    if not fn or b.dtype != dt or a.ndim < 2 or b.ndim < 2 or (out is not None and out.dtype != dt):
        return "not a float32 or float64 matrix product on numpy's OpenBLAS"
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        return "mismatched shapes"
    if min(m, k, n) <= 1 or b.shape[-2] != k or (out is not None and out.shape != (*batch, m, n)):
        return "a product with a core dim of 0 or 1, or mismatched shapes"
    if out is None:
        out = np.empty((*batch, m, n), dt)
    size = dt.itemsize
    key = (dt, a.shape, a.strides, b.shape, b.strides, out.strides, threads, numpy_out)
    call = _PLANS.get(key)
    if call is not None and a.flags.aligned and b.flags.aligned and out.flags.writeable:
        if not (np.may_share_memory(out, a) or np.may_share_memory(out, b)):
            if not _syrk(a, b, call):
                return call, out
    (sa_m, sa_k), (sb_k, sb_n), (so_m, so_n) = a.strides[-2:], b.strides[-2:], out.strides[-2:]
    a_rows, b_rows = _blasable(sa_m, sa_k, k, size), _blasable(sb_k, sb_n, n, size)  # else transposed
    if numpy_out and not out.flags.c_contiguous:
        return "a product into a non-C-contiguous output"
    if not (a.flags.aligned and b.flags.aligned and out.flags.writeable and _blasable(so_m, so_n, n, size)):
        return "a product from misaligned operands or into an output BLAS cannot write in place"
    if any(st == 0 for st, d in zip(out.strides[:-2], batch, strict=True) if d > 1):
        return "a product into an output whose matrices overlap"
    if np.may_share_memory(out, a) or np.may_share_memory(out, b):
        return "a product whose output overlaps an operand"
    if not (a_rows or _blasable(sa_k, sa_m, m, size)) or not (b_rows or _blasable(sb_n, sb_k, k, size)):
        return "a product of operands BLAS cannot read in place"
    ta = _CBLAS_NO_TRANS if a_rows else _CBLAS_TRANS
    tb = _CBLAS_NO_TRANS if b_rows else _CBLAS_TRANS
    lda = (sa_m if ta == _CBLAS_NO_TRANS else sa_k) // size
    ldb = (sb_k if tb == _CBLAS_NO_TRANS else sb_n) // size
    offsets = _batch_offsets(batch, a, b, out)
    header = [fn, _SET_ADDRESS, threads, ta, tb, m, n, k, lda, ldb, so_m // size, len(offsets) // 3]
    call = np.concatenate([np.array(header, np.int64), offsets])
    call.flags.writeable = False
    if _syrk(a, b, call):
        return "a product of a matrix and its transpose (numpy runs syrk)"
    if len(_PLANS) >= _PLANS_KEPT:
        _PLANS.clear()
    _PLANS[key] = call
    return call, out


def _syrk(a: Array, b: Array, call: Array) -> bool:
    """``a @ a.T`` (the same data, one operand the other's transpose), which numpy runs as
    ``syrk``: a different kernel, so its bits differ from ``gemm``'s."""
    (sa_m, sa_k), (sb_k, sb_n) = a.strides[-2:], b.strides[-2:]
    return bool(sa_m == sb_n and sa_k == sb_k and call[3] != call[4] and call[5] == call[6] and _data(a) == _data(b))


def _note_gemm(a: Array, b: Array, out: Array | None, one_thread: bool) -> Array | None:
    """Where a trace is active and numpy's OpenBLAS is about to run ``a @ b`` (into ``out``):
    note :func:`_gemm_compiled` with the ``cblas_?gemm`` calls numpy's matmul loop makes for
    these operands (:func:`_plan`), so that a compiled replay runs the same products, bit for
    bit. ``one_thread``: :func:`matmul` runs it with OpenBLAS set to one thread. Returns
    ``out``, a new C-contiguous array where it was ``None``, for numpy to write into; refuses
    the trace (the plan replays item by item) where numpy would take another path."""
    plan = _plan(a, b, out, _THREADS if one_thread else 0, True)
    if isinstance(plan, str):
        _trace.refuse(f"a product {a.shape} @ {b.shape} runs on numpy's BLAS as numba cannot call it: {plan}")
        return out
    _trace.note(_gemm_compiled, plan[0].copy(), a, b, plan[1])  # the trace's own (it restores its arguments)
    return plan[1]


PARALLEL_BATCH_MACS = 1 << 21
"""A broadcast batch of products, each below :data:`SMALL_MACS` multiply-adds, with at least
this many in all runs one matrix per numba thread (:func:`_gemm_parallel`, OpenBLAS on one
thread), not one after another on one thread as numpy's loop would (issue 29: on machines
whose products stay on OpenBLAS, an Intel Xeon or an AVX2-only CPU, attention's per-head
products ran on one core). Measured on the 2-core AVX2 EPYC VM (numpy's OpenBLAS 0.3.31,
Haswell kernels; float32, medians, the other core partly busy): E256's ``q @ k^T`` (128
matrices of 128x64x128) 4433 -> 2857 us, ``P @ v`` (128x128x64) 4607 -> 2711 us; E64's
64 matrices of 64x16x64 (4.2M in all) 166 -> 139 us. Below about 2M in all a batch gains
nothing over the thread pool's wake-up."""


@_jit.jit(parallel=True)
def _gemm_parallel(call: Array, a: Array, b: Array, out: Array) -> int:
    """:func:`_gemm_compiled`'s ``cblas_?gemm`` calls (the same ``call`` array), one matrix of
    the batch per numba thread, with numpy's OpenBLAS set to one thread for the whole loop (its
    count is global: ``call[2]`` is the count restored after). Each matrix is the same
    one-thread call as numpy's, so the result is bit for bit :func:`matmul`'s serial one."""
    prev = _set_threads(call[1], 1)
    pa, pb, pc = a.ctypes.data, b.ctypes.data, out.ctypes.data
    for i in numba.prange(call[11]):
        j = _GEMM_HEADER + 3 * i
        _cblas_gemm(
            call[0], call[3], call[4], call[5], call[6], call[7],
            pa + call[j], call[8], pb + call[j + 1], call[9], pc + call[j + 2], call[10], out,
        )  # fmt: skip
    _set_threads(call[1], prev)
    return 0


def _batched(a: Array, b: Array, out: Array | None, macs: int) -> Array | None:
    """``a @ b`` through :func:`_gemm_parallel` where it is a batch :data:`PARALLEL_BATCH_MACS`
    covers and :func:`_plan` finds the calls numpy would make (noted for a compiled replay
    where a trace is active); else ``None``, for :func:`matmul` to run it as before."""
    count = max(a.size // max(1, a.shape[-2] * a.shape[-1]), b.size // max(1, b.shape[-2] * b.shape[-1]))
    if count < 2 or macs * count < PARALLEL_BATCH_MACS or _PARALLEL_THREADS() < 2:
        return None
    plan = _plan(a, b, out, _THREADS, False)
    if isinstance(plan, str):
        return None
    call, res = plan
    _gemm_parallel(call, a, b, res)
    if _trace.active is not None:
        _trace.note(_gemm_parallel, call.copy(), a, b, res)
    return res


def _data(x: Array) -> int:
    return int(x.__array_interface__["data"][0])


def _batch_offsets(batch: tuple[int, ...], a: Array, b: Array, out: Array) -> Array:
    """Byte offsets of each matrix of the broadcast batch in ``a``, ``b`` and ``out`` (three per
    matrix, in numpy's order; a broadcast dim of 1 stays at offset 0), as int64."""
    found = np.zeros((*batch, 3), np.int64)
    for col, x in enumerate((a, b, out)):
        lead = x.shape[:-2]
        pad = len(batch) - len(lead)
        for d in range(pad, len(batch)):
            if lead[d - pad] != 1:
                shape = [1] * len(batch)
                shape[d] = batch[d]
                found[..., col] += (np.arange(batch[d], dtype=np.int64) * x.strides[d - pad]).reshape(shape)
    return found.reshape(-1)
