"""float32 matrix products on oneDNN's matmul primitive (the library PyTorch's CPU build calls for
its own products through MKL/oneDNN), for :func:`gradtape.devices.kernels.blas.matmul`.

Why: numpy's OpenBLAS picks its kernels once per machine, and some machine images force older
ones (``OPENBLAS_CORETYPE=Haswell`` on the AVX-512 test VM: AVX2 kernels where the CPU has
AVX-512). oneDNN picks its JIT kernels for the CPU it runs on (``brg:avx512_core`` there), so
on such a machine a large float32 product runs at up to twice OpenBLAS's rate. From a few
million multiply-adds a product (:data:`MIN_MACS`) it runs on oneDNN's OpenMP threads.

Smaller products, from :data:`SERIAL_MIN_MACS` up to :data:`MIN_MACS`, go to plans oneDNN
made for one thread (``serial``): created while the calling thread's OpenMP count is 1, they
run inline on the calling thread, with no OpenMP region, so no worker wakes up or spins after
them (those spinning workers are what made routing attention's batched products to oneDNN's
two-thread plans slower in a step, issue 29's notes). A call costs about 0.5 microseconds over
oneDNN's own time: the plan is found by the operands' numpy shapes and strides (one dictionary
lookup), and one compiled numba function (:func:`_run_compiled`, which calls oneDNN through its
functions' addresses, so numba's disk cache keeps it) sets the three data pointers, executes
and waits. A 1-thread plan and a 2-thread plan of the same geometry may differ in the last bits
(another split of the sum); each geometry always gets the same one. Making a plan costs oneDNN
a kernel compile, once per geometry and process: the digits MLP's first training step in a
fresh process took 233-266 ms against 197-217 before (six runs each, warm numba cache).

Whether it is used is decided once per process, by the caller
(:func:`gradtape.devices.kernels.blas.matmul_choice`): where oneDNN runs AVX-512
kernels and numpy's OpenBLAS does not (its kernels for an older core, whether it picked them or
the environment forced them), float32 products from :data:`MIN_MACS` go to oneDNN; elsewhere
OpenBLAS keeps them (on an AVX2-only machine both run AVX2 kernels: with oneDNN capped at
AVX2, ``ONEDNN_MAX_CPU_ISA=AVX2`` on the AVX-512 VM, its large products ran at OpenBLAS's rate,
230-259 GFLOP/s against 230-257, and products of 4-17M multiply-adds 10-16% faster).
``GRADTAPE_MATMUL=onednn`` or ``=openblas`` forces the choice.

One cached plan per geometry (:func:`plan`, LRU of :data:`CACHE_SIZE`): the operands' shapes
and element strides, so transposed and sliced views (``w.T`` in ``linear``, a head's slice)
are read where they are, with no copy; the result is a new C-contiguous array. Products of
up to four dims with numpy's batch broadcasting (dims of size 1) are taken; anything else
(float64, 1-D operands, zero or negative strides, more dims) is left to numpy. A plan that
another thread is running at that moment (a plan's memory objects hold one call's pointers)
hands the product to this thread's twin of it, made on first need: the same primitive, so the
same values bit for bit whichever thread gets which (numpy's would differ in the last bits,
making a multithreaded program's results depend on timing). A forked child,
``GRADTAPE_ONEDNN=0`` and a missing wheel fall back as the convolutions do
(:mod:`gradtape.devices.kernels.onednn`).

The values differ from OpenBLAS's in the last bits (another summation order); both are
float32 products accumulated in float32 with FMA, as PyTorch's are.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
import warnings
from collections import OrderedDict
from typing import Any, cast

import numpy as np
from llvmlite import ir
from numba import typeof
from numba.core import types as nt
from numba.extending import intrinsic

from gradtape.devices.kernels import _jit, _trace
from gradtape.devices.kernels import onednn as _od

__all__ = ["CACHE_SIZE", "MAX_TWINS", "MIN_MACS", "SERIAL_MIN_MACS", "Matmul", "matmul", "plan"]

Array = np.ndarray[Any, Any]

MIN_MACS = 1 << 21
"""Multiply-adds per product (``m * k * n`` of one matrix, times the batch) from which a
float32 product goes to oneDNN's multithreaded plans (below it, down to
:data:`SERIAL_MIN_MACS`, to one-thread plans). First measured (through ctypes
then: about 10 microseconds of fixed cost) on the AVX-512 AMD EPYC VM (OpenBLAS forced to its
Haswell kernels; one process, best of 200, ``(m, k, n)`` with the weight transposed as
``linear`` reads it), oneDNN's time over numpy's: (64, 64, 64) 2.40, (64, 128, 128) 0.93,
(64, 256, 256) 0.73, (128, 256, 256) 0.63, (256, 256, 256) 0.50, (1024, 256, 256) 0.60;
450-490 GFLOP/s from 100M multiply-adds on two threads against OpenBLAS's 250-265 (and
PyTorch's own products, MKL, 220-230). With the one-thread plans below it, two threads from
512K multiply-adds instead gained 2% on the digits MLP's step for twice the CPU: not kept."""

SERIAL_MIN_MACS = 1 << 16
"""Multiply-adds (one matrix's ``m * k * n`` times the batch) from which a float32 product below
:data:`MIN_MACS` goes to a oneDNN plan that runs on the calling thread alone (made under one
OpenMP thread: :meth:`gradtape.devices.kernels.onednn._Lib.one_thread`), where the machine's
rule picks oneDNN. Measured on the AVX-512 AMD EPYC VM (OpenBLAS forced to its Haswell
kernels), ``blas.matmul(x, w.T)`` as ``linear`` calls it, medians of 7 x 3000 calls, oneDNN's
time over numpy's: (8, 8, 8) 1.52, (32, 32, 32) 1.13, (64, 64, 16) 1.01, (64, 128, 10) 0.92,
(64, 64, 32) 0.84, (64, 64, 64) 0.73, (64, 64, 128) 0.60, (64, 128, 128) 0.55 (numpy on one
thread from 262K multiply-adds; below, OpenBLAS runs them on one thread itself). Below this
bound oneDNN's fixed cost (about 0.9 microseconds a call, 0.5 of them its own) is more than
it saves. oneDNN alone, one thread: 214-264 GFLOP/s from 0.5M multiply-adds, OpenBLAS's
Haswell kernels 113-122, its ``SkylakeX`` ones 190-228. With oneDNN capped at AVX2 (``ONEDNN_MAX_CPU_ISA=AVX2``:
its ``gemm:jit`` kernels) one thread ran them at OpenBLAS's speed (64x128x128: 19.2 against
19.4 microseconds): this path follows :func:`gradtape.devices.kernels.blas.matmul_choice`
and would gain nothing on a machine without AVX-512."""

CACHE_SIZE = 128
"""Matmul plans kept (one per geometry); the least recently used is dropped beyond."""

MAX_TWINS = 8
"""Threads' copies of one plan kept (:meth:`Matmul.run`); all are dropped beyond, and made
again on need."""

_P = ctypes.c_void_p
_F4 = 4  # bytes per float32
_F32 = np.dtype(np.float32)


def _elem_strides(a: Array, ndim: int) -> tuple[int, ...] | None:
    """``a``'s strides in elements, left-padded to ``ndim`` dims (size-1 dims get the stride
    C order would give them: oneDNN checks strides of size-1 dims too); ``None`` where a
    stride is negative, not a whole number of elements, or zero on a dim longer than 1."""
    shape = (1,) * (ndim - a.ndim) + a.shape
    raw = (0,) * (ndim - a.ndim) + a.strides
    out = [0] * ndim
    acc = 1
    for i in range(ndim - 1, -1, -1):
        n, s = shape[i], raw[i]
        if n == 1:
            out[i] = acc
        else:
            if s <= 0 or s % _F4:
                return None
            out[i] = s // _F4
        acc = max(acc, out[i] * n)
    return tuple(out)


class Matmul:
    """One geometry's matmul primitive: ``a (..., m, k) @ b (..., k, n) -> (..., m, n)`` with
    the operands' element strides fixed, float32, no bias.

    Raises:
        OneDNNError: oneDNN refuses the geometry (the plan function then remembers to leave it
            to numpy).
    """

    def __init__(
        self,
        lib: Any,
        a_shape: tuple[int, ...],
        a_strides: tuple[int, ...],
        b_shape: tuple[int, ...],
        b_strides: tuple[int, ...],
        out_shape: tuple[int, ...],
        out_strides: tuple[int, ...] | None = None,
        serial: bool = False,
    ) -> None:
        self.lib = lib
        self.out_shape = out_shape
        self.serial = serial
        self.lock = threading.Lock()
        self._geometry = (a_shape, a_strides, b_shape, b_strides, out_shape, out_strides)
        self._twins: dict[int, Matmul] = {}  # other threads' copies, by thread id (see run)
        own: list[tuple[str, _P]] = []
        self._own = own
        src = lib.md(own, a_shape, a_strides)
        wei = lib.md(own, b_shape, b_strides)
        dst = lib.md(own, out_shape, out_strides or _od._c_strides(out_shape))
        pd = _P()
        with lib.one_thread() if serial else contextlib.nullcontext():  # the team size is fixed here
            lib.call("dnnl_matmul_primitive_desc_create", ctypes.byref(pd), lib.engine, src, wei, None, dst, None)
            own.append(("dnnl_primitive_desc_destroy", pd))
            self.prim = lib.primitive(own, pd)
        self.impl = lib.impl(pd)
        self.a_mem = lib.memory(own, src, 0)
        self.b_mem = lib.memory(own, wei, 0)
        self.out_mem = lib.memory(own, dst, 0)
        args = ((_od._SRC, self.a_mem), (_od._WEIGHTS, self.b_mem), (_od._DST, self.out_mem))
        self._args = (_od._ExecArg * len(args))(*(_od._ExecArg(k, m) for k, m in args))
        self._nargs = len(args)
        self._run: Any = None  # the caller for this plan's array types (_runner), set at its first run
        # the executor's first argument: oneDNN's three functions, OpenMP's two, and the plan's
        # handles as addresses, in one array (one argument for numba to unbox, not thirteen)
        self._call = np.array(
            (
                *_addresses(lib),
                int(serial),
                self.prim.value or 0,
                lib.stream.value or 0,
                ctypes.addressof(self._args),
                len(args),
                self.a_mem.value or 0,
                self.b_mem.value or 0,
                self.out_mem.value or 0,
            ),
            np.int64,
        )

    def _twin(self) -> Matmul | None:
        """This thread's copy of the plan (made on first need; at most :data:`MAX_TWINS`
        threads' kept), or ``None`` where oneDNN refuses to make it."""
        tid = threading.get_ident()
        twin = self._twins.get(tid)
        if twin is None:
            try:
                twin = Matmul(self.lib, *self._geometry, serial=self.serial)
            except _od.OneDNNError:
                return None
            if len(self._twins) >= MAX_TWINS:
                self._twins.clear()
            self._twins[tid] = twin
        return twin

    def __del__(self) -> None:
        own = getattr(self, "_own", None)
        if own:
            self.lib.destroy(own)

    def run(self, a: Array, b: Array, out: Array | None = None) -> Array | None:
        """``a @ b`` into ``out`` (the array of the plan's output layout) or a new C-contiguous
        float32 array. Where another thread is running this plan, this thread's twin of it
        runs the product (the same primitive, so the same values); ``None`` only where oneDNN
        refuses to make the twin (the caller then uses numpy)."""
        if not self.lock.acquire(blocking=False):
            twin = self._twin()
            return None if twin is None else twin.run(a, b, out)
        try:
            if out is None:
                out = np.empty(self.out_shape, np.float32)
            run = self._run
            if run is None:  # the plan's cache key fixes the operands' layouts: one caller serves
                run = self._run = _runner(self.lib, a, b, out)
            st = run(self._call, a, b, out)
            if st != 0:
                raise _od.OneDNNError(f"oneDNN: matmul {self.out_shape} failed (status {st})")
            if _trace.active is not None:
                if run is _run_compiled:
                    _trace.note(run, self._call, a, b, out, failure=f"oneDNN: matmul {self.out_shape} failed")
                else:
                    _trace.refuse("oneDNN's matmul runs through ctypes here (numba could not compile its caller)")
            return out
        finally:
            self.lock.release()


_PLANS: OrderedDict[tuple[Any, ...], Matmul | None] = OrderedDict()
_UNSEEN = object()


def plan(a: Array, b: Array, out: Array | None = None, serial: bool = False) -> Matmul | None:
    """The cached :class:`Matmul` for ``a @ b`` (into ``out``'s layout where given; on the
    calling thread alone with ``serial``, see :data:`SERIAL_MIN_MACS`), or ``None`` where
    oneDNN does not take it (see the module docstring; a geometry oneDNN refused is
    remembered). The cache is keyed by the operands' numpy shapes and strides as they come, so
    a product seen before costs one dictionary lookup here."""
    if a.dtype is not _F32 or b.dtype is not _F32:
        return None
    if out is None:
        key: tuple[Any, ...] = (a.shape, a.strides, b.shape, b.strides, serial)
    else:
        if out.dtype is not _F32 or not out.flags.writeable or _overlaps(out, a) or _overlaps(out, b):
            return None
        key = (a.shape, a.strides, b.shape, b.strides, serial, out.shape, out.strides)
    p = _PLANS.get(key, _UNSEEN)
    if p is _UNSEEN:
        p = _make_plan(key, a, b, out, serial)
    else:
        try:
            _PLANS.move_to_end(key)
        except KeyError:  # another thread dropped it meanwhile
            pass
    if p is None or _FORKED:  # a forked child leaves products to numpy
        return None
    return cast(Matmul, p)


_FORKED = False


def _forked() -> None:
    global _FORKED
    _FORKED = True


os.register_at_fork(after_in_child=_forked)  # oneDNN's OpenMP pool does not survive a fork


def _make_plan(key: tuple[Any, ...], a: Array, b: Array, out: Array | None, serial: bool) -> Matmul | None:
    """:func:`plan` on a cache miss: the checks, then a new plan (or ``None``) cached under ``key``."""
    if not 2 <= a.ndim <= 4 or not 2 <= b.ndim <= 4 or not _od.available():
        return None
    nd = max(a.ndim, b.ndim)
    a_shape = (1,) * (nd - a.ndim) + a.shape
    b_shape = (1,) * (nd - b.ndim) + b.shape
    batch = []
    for x, y in zip(a_shape[:-2], b_shape[:-2], strict=True):
        if x != y and x != 1 and y != 1:
            return None  # numpy raises the broadcasting error
        batch.append(max(x, y))
    if a_shape[-1] != b_shape[-2]:
        return None  # numpy raises the shape error
    sa, sb = _elem_strides(a, nd), _elem_strides(b, nd)
    if sa is None or sb is None:
        return None
    out_shape = (*batch, a_shape[-2], b_shape[-1])
    so: tuple[int, ...] | None = None
    if out is not None:
        if out.shape != out_shape:
            return None
        so = _elem_strides(out, nd)
        if so is None:
            return None
    lib = _od._load()
    assert lib is not None
    p: Matmul | None = _od._cached(
        _PLANS, key, lambda: Matmul(lib, a_shape, sa, b_shape, sb, out_shape, so, serial), CACHE_SIZE
    )
    return p


def _overlaps(x: Array, y: Array) -> bool:
    return bool(np.may_share_memory(x, y))


def matmul(a: Array, b: Array, out: Array | None = None, serial: bool = False) -> Array | None:
    """``a @ b`` on oneDNN into ``out`` (any positive strides) or a new C-contiguous float32
    array shaped as numpy's result, or ``None`` where oneDNN does not take the product (an
    ``out`` of another dtype or shape, or overlapping an operand, included): the caller then
    computes it with numpy. ``serial``: on the calling thread alone (:data:`SERIAL_MIN_MACS`)."""
    p = plan(a, b, out, serial)
    if p is None:
        return None
    return p.run(a, b, out)


_I32, _I64 = ir.IntType(32), ir.IntType(64)


def _c_call(builder: Any, address: Any, params: list[Any], values: list[Any]) -> Any:
    """LLVM: call the C function at ``address`` (an integer) taking ``params``, returning int32."""
    fnty = ir.FunctionType(_I32, params)
    return builder.call(builder.inttoptr(address, fnty.as_pointer()), values)


@intrinsic
def _set_data_handle(typingctx: Any, fn: Any, memory: Any, handle: Any) -> Any:
    """``dnnl_memory_set_data_handle(memory, handle)`` through its address ``fn`` (all three
    integers: the C function's two ``void *``)."""

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return _c_call(builder, args[0], [_I64, _I64], [args[1], args[2]])

    return nt.int32(nt.intp, nt.intp, nt.intp), codegen


@intrinsic
def _execute(typingctx: Any, fn: Any, prim: Any, stream: Any, nargs: Any, args: Any) -> Any:
    """``dnnl_primitive_execute(prim, stream, nargs, args)`` through its address ``fn`` (``nargs``
    passed as the C ``int`` it is)."""

    def codegen(context: Any, builder: Any, sig: Any, a: Any) -> Any:
        return _c_call(builder, a[0], [_I64, _I64, _I32, _I64], [a[1], a[2], builder.trunc(a[3], _I32), a[4]])

    return nt.int32(nt.intp, nt.intp, nt.intp, nt.intp, nt.intp), codegen


@intrinsic
def _wait(typingctx: Any, fn: Any, stream: Any) -> Any:
    """``dnnl_stream_wait(stream)`` through its address ``fn``."""

    def codegen(context: Any, builder: Any, sig: Any, a: Any) -> Any:
        return _c_call(builder, a[0], [_I64], [a[1]])

    return nt.int32(nt.intp, nt.intp), codegen


@intrinsic
def _omp_set_num_threads(typingctx: Any, fn: Any, n: Any) -> Any:
    """``omp_set_num_threads(n)`` (a ``void`` function) through its address ``fn``; returns 0."""

    def codegen(context: Any, builder: Any, sig: Any, a: Any) -> Any:
        fnty = ir.FunctionType(ir.VoidType(), [_I32])
        builder.call(builder.inttoptr(a[0], fnty.as_pointer()), [builder.trunc(a[1], _I32)])
        return ir.Constant(_I32, 0)

    return nt.int32(nt.intp, nt.intp), codegen


@intrinsic
def _omp_get_max_threads(typingctx: Any, fn: Any) -> Any:
    """``omp_get_max_threads()`` through its address ``fn``."""

    def codegen(context: Any, builder: Any, sig: Any, a: Any) -> Any:
        return _c_call(builder, a[0], [], [])

    return nt.int32(nt.intp), codegen


@_jit.jit()
def _run_compiled(call: Array, a: Array, b: Array, out: Array) -> Any:
    """Point the plan's three memory objects at the arrays' data, execute the primitive and wait
    for it: ``run(call, a, b, out) -> status``, ``call`` the int64 array ``(c_set, c_execute,
    c_wait, c_omp_set, c_omp_get, serial, prim, stream, args, nargs, a_mem, b_mem, out_mem)``:
    oneDNN's three functions, OpenMP's two and the plan's handles as addresses (one argument:
    numba unboxes thirteen integers in about 0.6 microseconds, one array in 0.1). With
    ``serial`` the calling thread's OpenMP count is 1
    while the primitive runs, and restored after: the ``brg`` kernels size their thread team when
    the plan is made, but others (``gemm:jit``, which oneDNN picks on AVX2) read the count when
    they run, and ran on both cores of the 2-vCPU VM without this.

    Why: through ctypes the same five calls cost about 3.7 microseconds a product (each
    ``ndarray.ctypes.data`` about 0.7), more than a 64x128x10 product takes on one thread
    (2 microseconds); this costs about 0.1 over oneDNN's own time. The C functions are called
    through their addresses (``_c_call``), so nothing process-specific is compiled in and
    numba's disk cache keeps the function (one compile per array-layout combination, once per
    machine)."""
    c_set, c_execute, c_wait, c_omp_set, c_omp_get = call[0], call[1], call[2], call[3], call[4]
    serial, prim, stream, args, nargs = call[5] != 0, call[6], call[7], call[8], call[9]
    a_mem, b_mem, out_mem = call[10], call[11], call[12]
    status = _set_data_handle(c_set, a_mem, a.ctypes.data)
    if status == 0:
        status = _set_data_handle(c_set, b_mem, b.ctypes.data)
    if status == 0:
        status = _set_data_handle(c_set, out_mem, out.ctypes.data)
    if status == 0:
        saved = 0
        if serial:
            saved = _omp_get_max_threads(c_omp_get)
            _omp_set_num_threads(c_omp_set, 1)
        status = _execute(c_execute, prim, stream, nargs, args)
        if status == 0:
            status = _wait(c_wait, stream)
        if serial:
            _omp_set_num_threads(c_omp_set, saved)
    return status


_FALLBACK: Any = None  # _through_ctypes's caller, once numba could not compile _run_compiled
_RUN_LOCK = threading.Lock()


def _runner(lib: Any, a: Array, b: Array, out: Array) -> Any:
    """:func:`_run_compiled`, compiled (or loaded from numba's cache) for these array types;
    :func:`_through_ctypes`'s caller instead, from the first time numba cannot compile it (with
    a :class:`RuntimeWarning` naming why)."""
    global _FALLBACK
    with _RUN_LOCK:
        if _FALLBACK is None:
            try:
                dispatcher: Any = _run_compiled  # numba's dispatcher (typed as the Python function)
                dispatcher.compile(tuple(typeof(x) for x in (np.zeros(13, np.int64), a, b, out)))
                return _run_compiled
            except Exception as err:  # a numba without these intrinsics: slower, same result
                warnings.warn(
                    f"gradtape: oneDNN's matmul runs through ctypes, numba could not compile its caller ({err})",
                    RuntimeWarning,
                    stacklevel=2,
                )
                _FALLBACK = _through_ctypes(lib)
        return _FALLBACK


def _addresses(lib: Any) -> tuple[int, int, int, int, int]:
    """The addresses of ``dnnl_memory_set_data_handle``, ``dnnl_primitive_execute``,
    ``dnnl_stream_wait``, ``omp_set_num_threads`` and ``omp_get_max_threads`` (0 for these two
    where oneDNN does not run on OpenMP) in ``lib``: the plans' first five executor arguments."""
    c = lib.lib
    names = ("dnnl_memory_set_data_handle", "dnnl_primitive_execute", "dnnl_stream_wait")
    found = [ctypes.cast(getattr(c, n), _P).value or 0 for n in names]
    omp = (0, 0) if lib.omp is None else tuple(ctypes.cast(f, _P).value or 0 for f in lib.omp)
    return found[0], found[1], found[2], omp[0], omp[1]


def _through_ctypes(lib: Any) -> Any:
    """:func:`_run_compiled` written with ctypes calls (about 3.7 microseconds a call)."""
    c = lib.lib

    def run(call: Array, a: Array, b: Array, out: Array) -> int:
        serial, prim, stream, args, nargs, a_mem, b_mem, out_mem = (int(v) for v in call[5:])
        for mem, x in ((a_mem, a), (b_mem, b), (out_mem, out)):
            status: int = c.dnnl_memory_set_data_handle(_P(mem), _P(x.ctypes.data))
            if status != 0:
                return status
        with lib.one_thread() if serial else contextlib.nullcontext():
            status = c.dnnl_primitive_execute(_P(prim), _P(stream), nargs, _P(args))
            return status if status != 0 else int(c.dnnl_stream_wait(_P(stream)))

    return run
