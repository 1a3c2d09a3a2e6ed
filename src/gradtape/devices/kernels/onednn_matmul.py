"""float32 matrix products on oneDNN's matmul primitive (the library PyTorch's CPU build calls for
its own products through MKL/oneDNN), for :func:`gradtape.devices.kernels.blas.matmul`.

Why: numpy's OpenBLAS picks its kernels once per machine, and some machine images force older
ones (``OPENBLAS_CORETYPE=Haswell`` on the AVX-512 test VM: AVX2 kernels where the CPU has
AVX-512). oneDNN picks its JIT kernels for the CPU it runs on (``brg:avx512_core`` there), so
on such a machine a large float32 product runs at up to twice OpenBLAS's rate. It only pays
from a few million multiply-adds a product (:data:`MIN_MACS`): below, a call's fixed cost (a
few ctypes calls, about 10 microseconds) is more than it saves.

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
(float64, 1-D operands, zero or negative strides, more dims) is left to numpy, and so is a
plan that another thread is running at that moment (a plan's memory objects hold one call's
pointers). A forked child, ``GRADTAPE_ONEDNN=0`` and a missing wheel fall back as the
convolutions do (:mod:`gradtape.devices.kernels.onednn`).

The values differ from OpenBLAS's in the last bits (another summation order); both are
float32 products accumulated in float32 with FMA, as PyTorch's are.
"""

from __future__ import annotations

import ctypes
import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from gradtape.devices.kernels import onednn as _od

__all__ = ["CACHE_SIZE", "MIN_MACS", "Matmul", "matmul", "plan"]

Array = np.ndarray[Any, Any]

MIN_MACS = 1 << 21
"""Multiply-adds per product (``m * k * n`` of one matrix, times the batch) from which a
float32 product goes to oneDNN. Measured on the AVX-512 AMD EPYC VM (OpenBLAS forced to its
Haswell kernels; one process, best of 200, ``(m, k, n)`` with the weight transposed as
``linear`` reads it), oneDNN's time over numpy's: (64, 64, 64) 2.40 (13.4 against 5.6
microseconds: oneDNN's fixed cost), (64, 128, 128) 0.93, (64, 256, 256) 0.73, (128, 256, 256)
0.63, (256, 256, 256) 0.50, (1024, 256, 256) 0.60; 450-490 GFLOP/s from 100M multiply-adds
on two threads against OpenBLAS's 250-265 (and PyTorch's own products, MKL, 220-230)."""

CACHE_SIZE = 128
"""Matmul plans kept (one per geometry); the least recently used is dropped beyond."""

_P = ctypes.c_void_p
_F4 = 4  # bytes per float32


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
    ) -> None:
        self.lib = lib
        self.out_shape = out_shape
        self.lock = threading.Lock()
        own: list[tuple[str, _P]] = []
        self._own = own
        src = lib.md(own, a_shape, a_strides)
        wei = lib.md(own, b_shape, b_strides)
        dst = lib.md(own, out_shape, out_strides or _od._c_strides(out_shape))
        pd = _P()
        lib.call("dnnl_matmul_primitive_desc_create", ctypes.byref(pd), lib.engine, src, wei, None, dst, None)
        own.append(("dnnl_primitive_desc_destroy", pd))
        self.impl = lib.impl(pd)
        self.prim = lib.primitive(own, pd)
        self.a_mem = lib.memory(own, src, 0)
        self.b_mem = lib.memory(own, wei, 0)
        self.out_mem = lib.memory(own, dst, 0)
        args = ((_od._SRC, self.a_mem), (_od._WEIGHTS, self.b_mem), (_od._DST, self.out_mem))
        self._args = (_od._ExecArg * len(args))(*(_od._ExecArg(k, m) for k, m in args))
        self._nargs = len(args)

    def __del__(self) -> None:
        own = getattr(self, "_own", None)
        if own:
            self.lib.destroy(own)

    def run(self, a: Array, b: Array, out: Array | None = None) -> Array | None:
        """``a @ b`` into ``out`` (the array of the plan's output layout) or a new C-contiguous
        float32 array; ``None`` when another thread is running this plan (the caller then uses
        numpy)."""
        if not self.lock.acquire(blocking=False):
            return None
        try:
            if out is None:
                out = np.empty(self.out_shape, np.float32)
            c = self.lib.lib
            c.dnnl_memory_set_data_handle(self.a_mem, _P(a.ctypes.data))
            c.dnnl_memory_set_data_handle(self.b_mem, _P(b.ctypes.data))
            c.dnnl_memory_set_data_handle(self.out_mem, _P(out.ctypes.data))
            st = c.dnnl_primitive_execute(self.prim, self.lib.stream, self._nargs, self._args)
            if st == 0:
                st = c.dnnl_stream_wait(self.lib.stream)
            if st != 0:
                raise _od.OneDNNError(f"oneDNN: matmul {self.out_shape} failed (status {st})")
            return out
        finally:
            self.lock.release()


_PLANS: OrderedDict[tuple[Any, ...], Matmul | None] = OrderedDict()


def plan(a: Array, b: Array, out: Array | None = None) -> Matmul | None:
    """The cached :class:`Matmul` for ``a @ b`` (into ``out``'s layout where given), or
    ``None`` where oneDNN does not take it (see the module docstring; a geometry oneDNN refused
    is remembered)."""
    if a.dtype != np.float32 or b.dtype != np.float32 or not 2 <= a.ndim <= 4 or not 2 <= b.ndim <= 4:
        return None
    if not _od.available():
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
        if out.dtype != np.float32 or out.shape != out_shape or not out.flags.writeable:
            return None
        so = _elem_strides(out, nd)
        if so is None or _overlaps(out, a) or _overlaps(out, b):
            return None
    key = (a_shape, sa, b_shape, sb, so)
    lib = _od._load()
    assert lib is not None
    p: Matmul | None = _od._cached(
        _PLANS, key, lambda: Matmul(lib, a_shape, sa, b_shape, sb, out_shape, so), CACHE_SIZE
    )
    return p


def _overlaps(x: Array, y: Array) -> bool:
    return bool(np.may_share_memory(x, y))


def matmul(a: Array, b: Array, out: Array | None = None) -> Array | None:
    """``a @ b`` on oneDNN into ``out`` (any positive strides) or a new C-contiguous float32
    array shaped as numpy's result, or ``None`` where oneDNN does not take the product (an
    ``out`` of another dtype or shape, or overlapping an operand, included): the caller then
    computes it with numpy."""
    p = plan(a, b, out)
    if p is None:
        return None
    return p.run(a, b, out)
