"""oneDNN's convolution, LSTM and GRU primitives through its C API (ctypes), an optional
float32 backend.

oneDNN (https://github.com/uxlfoundation/oneDNN) is the library PyTorch itself runs CPU
convolutions and LSTMs with (its GRU runs on PyTorch's own kernels). When the optional wheel
``onednn-cpu-gomp`` is installed (``pip install gradtape[onednn]``), float32
``conv2d``/``conv1d``/``conv_transpose2d`` run their forward and both backward passes here, and
so do float32 ``nn.LSTM`` and ``nn.GRU`` stacks (:class:`Rnn`, from
:func:`gradtape.devices.kernels.rnn.onednn_stack`); without it, or for float64 (oneDNN has no
float64 convolution or RNN on CPU), :mod:`gradtape.devices.kernels.conv`'s and
:mod:`gradtape.devices.kernels.rnn`'s numba + BLAS kernels run them.

What a call does (oneDNN 3.x C API, the ``dnnl_*`` functions):

* a :class:`Conv2d` *plan* per geometry (shapes, stride, padding, dilation, groups, bias or
  not), kept in an LRU cache of :data:`CACHE_SIZE` plans: three primitive descriptors created
  with the ``any`` memory format, so oneDNN picks its blocked layouts (``nChw8c`` and the
  like on AVX2) and its direct JIT kernels (``jit:avx2``, ``brgconv``...), the primitives,
  the reorders between numpy's layout and oneDNN's, and one scratch buffer per primitive;
* per call: the inputs are described with numpy's own strides (any positive strides, no
  copy), reordered into oneDNN's layout where it differs, the primitive runs, and the result
  is reordered into a new C-contiguous array.

An :class:`Rnn` plan per ``(cell, T, N, I, H, directions, training)`` (its own LRU cache of
:data:`CACHE_SIZE`) holds one layer's forward (``forward_training`` or ``forward_inference``)
and backward primitives (``vanilla_lstm``, or ``lbr_gru`` for PyTorch's GRU), following
PyTorch's ``aten/src/ATen/native/mkldnn/RNN.cpp``: one primitive per layer (so dropout can sit
between layers), both directions in one (``bidirectional_concat``), PyTorch's weights described
by strides (oneDNN's ``ldgoi``) and reordered into the layouts the primitives pick (the
forward's and the backward's differ: oneDNN accepts neither for the other), one bias per gate
(``b_ih + b_hh``; the GRU's ``b_hn`` apart), the forward's workspace kept for the backward.

Formulas (``G`` groups, ``g(o)`` the group of output channel ``o``; oneDNN's dilation is
``d - 1``)::

    y[n, o, i, j] = b[o] + sum_{c,a,e} w[o, c, a, e] x[n, g(o) C/G + c, i sh + a dh - pt, j sw + e dw - pl]
    gx = the transposed sum (backward data);  gw[o, c, a, e] = sum_{n,i,j} g[n, o, i, j] x[...];
    gb[o] = sum_{n,i,j} g[n, o, i, j]

Threads: oneDNN runs on its own OpenMP (GNU) pool, ``OMP_NUM_THREADS`` threads (default: all
cores). GNU OpenMP's pool does not survive ``fork``: a forked child (a data-loader worker)
falls back to the numba kernels (:func:`available` is false there). The recurrent primitives
synchronise their threads at every step: with ``OMP_WAIT_POLICY=PASSIVE`` (which gradtape sets
where numba runs on OpenMP rather than TBB, see ``kernels/_jit.py``) the LSTM's 2-layer step took
66 ms against 33 (default and ``ACTIVE`` alike) on the 2-vCPU VM. With a busy loop in another
process its two threads still beat one (72-147 against 124-178 ms; numba 142-162).

Switches: ``GRADTAPE_ONEDNN=0`` turns the backend off; ``GRADTAPE_ONEDNN_LIB`` names a
``libdnnl.so`` to load instead of the wheel's. :func:`info` reports the library, version and
instruction set for the benchmarks' header.

Errors: a failing oneDNN call raises :class:`OneDNNError` naming the call and oneDNN's
status (``invalid_arguments``, ``unimplemented``...), for a recurrent plan also the shapes; shapes
are checked before, by the convolution and recurrent ops.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "CACHE_SIZE",
    "CELLS",
    "Conv2d",
    "OneDNNError",
    "Rnn",
    "RnnRun",
    "available",
    "conv2d_plan",
    "info",
    "rnn_plan",
]

Array = np.ndarray[Any, Any]
Pair = tuple[int, int]
Pads = tuple[tuple[int, int], tuple[int, int]]

CACHE_SIZE = 64
"""Convolution plans (one per geometry) kept; the least recently used is dropped beyond."""

# oneDNN 3.x C API constants (dnnl_types.h / dnnl_common_types.h); _load checks the ones
# its *2str functions can name against the loaded library.
_F32 = 3  # dnnl_f32
_TAG_ANY = 1  # dnnl_format_tag_any
_CPU = 1  # dnnl_cpu
_IN_ORDER = 1  # dnnl_stream_in_order
_FORWARD_TRAINING = 64
_FORWARD_INFERENCE = 96
_BACKWARD = 128
_CONVOLUTION_DIRECT = 1
_VANILLA_LSTM = 0x2FFF
_LBR_GRU = 0x4FFF
_LEFT2RIGHT, _BIDIRECTIONAL_CONCAT = 1, 3  # dnnl_rnn_direction_t
_DIFF_WEIGHTS_OVERWRITE = 1  # dnnl_rnn_flags_diff_weights_overwrite
_QUERY_IMPL_INFO = 8  # dnnl_query_impl_info_str
_QUERY_EXEC_ARG_MD = 255
_SRC, _DST, _WEIGHTS, _BIAS, _SCRATCHPAD = 1, 17, 33, 41, 80
_DIFF_SRC, _DIFF_DST, _DIFF_WEIGHTS, _DIFF_BIAS = 129, 145, 161, 169
_SRC_LAYER, _SRC_ITER, _SRC_ITER_C = 1, 2, 3  # the recurrent primitives' names of the same numbers
_DST_LAYER, _DST_ITER, _DST_ITER_C = 17, 18, 19
_WEIGHTS_LAYER, _WEIGHTS_ITER, _WORKSPACE = 33, 34, 64
_DIFF = 128  # DNNL_ARG_DIFF_x = DNNL_ARG_x | _DIFF

_P = ctypes.c_void_p
_Dims = ctypes.c_int64 * 12  # dnnl_dims_t (DNNL_MAX_NDIMS = 12)


class OneDNNError(RuntimeError):
    """A oneDNN call failed: the message names the call and oneDNN's status."""


class _ExecArg(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_int), ("memory", _P)]  # dnnl_exec_arg_t


class _Version(ctypes.Structure):
    _fields_ = [  # dnnl_version_t
        ("major", ctypes.c_int),
        ("minor", ctypes.c_int),
        ("patch", ctypes.c_int),
        ("hash", ctypes.c_char_p),
        ("cpu_runtime", ctypes.c_uint),
        ("gpu_runtime", ctypes.c_uint),
    ]


def _library_path() -> str | None:
    """``GRADTAPE_ONEDNN_LIB``, else the ``libdnnl.so.3`` the ``onednn-cpu-gomp`` wheel installs
    (into the environment's ``lib/``), else ``None``."""
    given = os.environ.get("GRADTAPE_ONEDNN_LIB")
    if given:
        return given
    try:
        from importlib.metadata import PackageNotFoundError, distribution

        dist = distribution("onednn-cpu-gomp")
    except (ImportError, PackageNotFoundError):
        return None
    for f in dist.files or ():
        if f.name == "libdnnl.so.3":  # recorded as ../../libdnnl.so.3: the environment's lib/
            return os.path.normpath(str(dist.locate_file(f)))
    return None


class _Lib:
    """The loaded library, its CPU engine and one in-order stream."""

    def __init__(self, path: str) -> None:
        self.path = path
        lib = ctypes.CDLL(path)
        self.lib = lib
        names = (
            "dnnl_status2str",
            "dnnl_prop_kind2str",
            "dnnl_fmt_tag2str",
            "dnnl_alg_kind2str",
            "dnnl_rnn_direction2str",
            "dnnl_rnn_flags2str",
        )
        for name in names:
            getattr(lib, name).restype = ctypes.c_char_p
        lib.dnnl_primitive_desc_query_md.restype = _P
        lib.dnnl_memory_desc_get_size.restype = ctypes.c_size_t
        lib.dnnl_primitive_desc_query_md.argtypes = [_P, ctypes.c_int, ctypes.c_int]
        lib.dnnl_memory_desc_get_size.argtypes = [_P]
        lib.dnnl_memory_desc_equal.argtypes = [_P, _P]
        lib.dnnl_memory_set_data_handle.argtypes = [_P, _P]
        lib.dnnl_primitive_desc_query.argtypes = [_P, ctypes.c_int, ctypes.c_int, _P]
        lib.dnnl_version.restype = ctypes.POINTER(_Version)
        lib.dnnl_cpu_isa2str.restype = ctypes.c_char_p
        checks = (
            (lib.dnnl_prop_kind2str(_FORWARD_TRAINING), b"forward_training"),
            (lib.dnnl_prop_kind2str(_FORWARD_INFERENCE), b"forward_inference"),
            (lib.dnnl_fmt_tag2str(_TAG_ANY), b"any"),
            (lib.dnnl_alg_kind2str(_CONVOLUTION_DIRECT), b"convolution_direct"),
            (lib.dnnl_prop_kind2str(_BACKWARD), b"backward"),
            (lib.dnnl_alg_kind2str(_VANILLA_LSTM), b"vanilla_lstm"),
            (lib.dnnl_alg_kind2str(_LBR_GRU), b"lbr_gru"),
            (lib.dnnl_rnn_direction2str(_LEFT2RIGHT), b"unidirectional_left2right"),
            (lib.dnnl_rnn_direction2str(_BIDIRECTIONAL_CONCAT), b"bidirectional_concat"),
            (lib.dnnl_rnn_flags2str(_DIFF_WEIGHTS_OVERWRITE), b"rnn_flags_diff_weights_overwrite"),
        )
        if any(got != want for got, want in checks):
            raise OneDNNError(f"oneDNN at {path}: enum values differ from oneDNN 3.x's ({checks})")
        v = lib.dnnl_version().contents
        if v.major != 3:
            raise OneDNNError(f"oneDNN at {path} is version {v.major}.{v.minor}: gradtape needs 3.x")
        self.version = f"{v.major}.{v.minor}.{v.patch}"
        self.isa = (lib.dnnl_cpu_isa2str(lib.dnnl_get_effective_cpu_isa()) or b"?").decode()
        self.engine = _P()
        self.call("dnnl_engine_create", ctypes.byref(self.engine), _CPU, 0)
        self.stream = _P()
        self.call("dnnl_stream_create", ctypes.byref(self.stream), self.engine, _IN_ORDER)
        self.pid = os.getpid()
        # the OpenMP runtime oneDNN runs on (found through its dependencies), for primitives
        # made to run on the calling thread alone (one_thread); None for a oneDNN built on
        # another runtime (TBB, a thread pool), GRADTAPE_ONEDNN_LIB's choice
        try:
            set_threads, max_threads = lib.omp_set_num_threads, lib.omp_get_max_threads
        except AttributeError:
            self.omp: tuple[Any, Any] | None = None
        else:
            set_threads.argtypes, set_threads.restype = [ctypes.c_int], None
            max_threads.argtypes, max_threads.restype = [], ctypes.c_int
            self.omp = (set_threads, max_threads)

    @contextlib.contextmanager
    def one_thread(self) -> Iterator[None]:
        """Primitives created inside run on the calling thread alone: oneDNN sizes a
        primitive's thread team from ``omp_get_max_threads()`` when it creates it, and a team
        of one runs the kernel inline, with no OpenMP region (so no worker wakes up or spins
        after it). Sets the calling thread's OpenMP thread count to 1 and restores it.

        Raises:
            OneDNNError: the library runs on another threading runtime than OpenMP.
        """
        if self.omp is None:
            raise OneDNNError(f"oneDNN at {self.path} does not run on OpenMP: no one-thread primitives")
        set_threads, max_threads = self.omp
        saved = max_threads()
        set_threads(1)
        try:
            yield
        finally:
            set_threads(saved)

    def call(self, name: str, *args: Any) -> None:
        """Call ``name`` and raise :class:`OneDNNError` on a status other than success."""
        status = getattr(self.lib, name)(*args)
        if status != 0:
            text = (self.lib.dnnl_status2str(status) or b"?").decode()
            raise OneDNNError(f"oneDNN: {name} failed: {text} (status {status})")

    def md(self, own: list[tuple[str, _P]], shape: Sequence[int], strides: Sequence[int] | None) -> _P:
        """A float32 memory descriptor: with element ``strides`` (numpy's layout), or the ``any``
        format (``None``: the primitive picks). ``own`` collects the handles to destroy."""
        md, dims = _P(), _Dims(*shape)
        if strides is None:
            self.call("dnnl_memory_desc_create_with_tag", ctypes.byref(md), len(shape), dims, _F32, _TAG_ANY)
        else:
            self.call("dnnl_memory_desc_create_with_strides", ctypes.byref(md), len(shape), dims, _F32, _Dims(*strides))
        own.append(("dnnl_memory_desc_destroy", md))
        return md

    def memory(self, own: list[tuple[str, _P]], md: _P, handle: int | None = None) -> _P:
        """A memory object over ``handle`` (``None``: none yet, set per call)."""
        mem = _P()
        self.call("dnnl_memory_create", ctypes.byref(mem), md, self.engine, _P(handle))
        own.append(("dnnl_memory_destroy", mem))
        return mem

    def primitive(self, own: list[tuple[str, _P]], pd: _P) -> _P:
        prim = _P()
        self.call("dnnl_primitive_create", ctypes.byref(prim), pd)
        own.append(("dnnl_primitive_destroy", prim))
        return prim

    def destroy(self, own: list[tuple[str, _P]]) -> None:
        """Destroy the handles in ``own`` (newest first); errors are ignored (interpreter exit)."""
        while own:
            name, h = own.pop()
            try:
                getattr(self.lib, name)(h)
            except Exception:  # best effort at teardown
                pass

    def run(self, prim: _P, args: Sequence[tuple[int, _P]]) -> None:
        """Execute ``prim`` with ``(DNNL_ARG_*, memory)`` pairs and wait for it."""
        arr = (_ExecArg * len(args))(*(_ExecArg(k, m) for k, m in args))
        self.call("dnnl_primitive_execute", prim, self.stream, len(args), arr)
        self.call("dnnl_stream_wait", self.stream)

    def query_md(self, pd: _P, arg: int) -> _P:
        return _P(self.lib.dnnl_primitive_desc_query_md(pd, _QUERY_EXEC_ARG_MD, arg))

    def impl(self, pd: _P) -> str:
        s = ctypes.c_char_p()
        self.call("dnnl_primitive_desc_query", pd, _QUERY_IMPL_INFO, 0, ctypes.byref(s))
        return (s.value or b"?").decode()


_LIB: _Lib | None = None
_TRIED = False
_LOAD_LOCK = threading.Lock()
_WHY_NOT = "not loaded yet"


def _load() -> _Lib | None:
    global _LIB, _TRIED, _WHY_NOT
    with _LOAD_LOCK:
        if not _TRIED:
            _TRIED = True
            if os.environ.get("GRADTAPE_ONEDNN", "1") == "0":
                _WHY_NOT = "turned off (GRADTAPE_ONEDNN=0)"
            else:
                path = _library_path()
                if path is None:
                    _WHY_NOT = "not installed (pip install gradtape[onednn])"
                else:
                    try:
                        _LIB = _Lib(path)
                    except (OSError, AttributeError, OneDNNError) as e:
                        _WHY_NOT = f"failed to load: {e}"
    return _LIB


def available() -> bool:
    """Whether float32 convolutions, LSTMs and GRUs run on oneDNN in this process: the library loaded, not
    turned off, and this is the process that loaded it (a forked child falls back, see the
    module docstring)."""
    lib = _load()
    return lib is not None and lib.pid == os.getpid()


def info() -> str:
    """One line for reports: ``oneDNN 3.2.0 (AVX2, /path/libdnnl.so.3)``, or why it is not used."""
    lib = _load()
    if lib is None:
        return f"oneDNN: {_WHY_NOT}"
    return f"oneDNN {lib.version} ({lib.isa}, {lib.path})"


def _c_strides(shape: Sequence[int]) -> list[int]:
    out, acc = [0] * len(shape), 1
    for i in range(len(shape) - 1, -1, -1):
        out[i] = acc
        acc *= shape[i]
    return out


ALIGN = 64
"""Bytes the arrays oneDNN reads and writes here start on (a cache line, as oneDNN's own
allocations and PyTorch's): numpy's large arrays start where malloc puts them, 16 bytes apart,
and AVX-512 loads across two cache lines. Measured on the AVX-512 VM: an LSTM training step's
primitives (2 layers, hidden 256) took 2-4% longer on 16-byte-aligned workspaces, weights and
outputs."""


def _aligned(shape: int | tuple[int, ...], dtype: Any = np.uint8) -> Array:
    """``np.empty(shape, dtype)`` starting on an :data:`ALIGN`-byte boundary (a view into a
    slightly larger buffer)."""
    dt = np.dtype(dtype)
    n = (shape if isinstance(shape, int) else math.prod(shape)) * dt.itemsize
    raw = np.empty(n + ALIGN, np.uint8)
    start = -raw.ctypes.data % ALIGN
    out: Array = raw[start : start + n].view(dt).reshape(shape)
    return out


class _Buffer:
    """An array in the layout a primitive chose for one argument, and its oneDNN memory."""

    def __init__(self, lib: _Lib, own: list[tuple[str, _P]], md: _P) -> None:
        self.array = _aligned(max(int(lib.lib.dnnl_memory_desc_get_size(md)), 1))
        self.memory = lib.memory(own, md, self.array.ctypes.data)


class _Side:
    """One argument ``arg`` (a ``DNNL_ARG_*``) of one primitive, of ``shape`` in oneDNN's view:
    a memory over the caller's array (C-contiguous, or of the element ``strides`` given; its
    handle set per call) and, where the primitive chose another layout, a buffer in that layout
    and the reorder into it (``into_chosen``: an input) or out of it (an output)."""

    def __init__(
        self,
        lib: _Lib,
        own: list[tuple[str, _P]],
        arg: int,
        shape: tuple[int, ...],
        chosen: _P,
        into_chosen: bool,
        strides: Sequence[int] | None = None,
    ) -> None:
        self.arg, self.shape = arg, shape
        plain = lib.md(own, shape, _c_strides(shape) if strides is None else strides)
        self.user = lib.memory(own, plain)
        self.buffer: _Buffer | None = None
        self.reorder: _P | None = None
        if not lib.lib.dnnl_memory_desc_equal(plain, chosen):
            self.buffer = _Buffer(lib, own, chosen)
            src, dst = (plain, chosen) if into_chosen else (chosen, plain)
            pd = _P()
            lib.call("dnnl_reorder_primitive_desc_create", ctypes.byref(pd), src, lib.engine, dst, lib.engine, None)
            self.reorder = lib.primitive(own, pd)
            own.append(("dnnl_primitive_desc_destroy", pd))

    def memory(self) -> _P:
        """The memory the primitive itself reads or writes."""
        return self.user if self.buffer is None else self.buffer.memory


def _execute(
    lib: _Lib,
    prim: _P,
    reads: Sequence[tuple[_Side, Array]],
    writes: Sequence[tuple[_Side, Array]],
    extra: Sequence[tuple[int, _P]] = (),
) -> None:
    """Run ``prim``: each read side over its array (of the side's layout, alive until the call
    returns), reordered into the primitive's layout where it chose another; each write side
    into its array, reordered out of the primitive's layout after the run; ``extra`` are
    further ``(DNNL_ARG_*, memory)`` pairs (bias, scratch, workspace). The caller holds the
    plan's lock."""
    args = list(extra)
    for sd, arr in reads:
        lib.lib.dnnl_memory_set_data_handle(sd.user, _P(arr.ctypes.data))
        if sd.reorder is not None:
            lib.run(sd.reorder, [(_SRC, sd.user), (_DST, sd.memory())])
        args.append((sd.arg, sd.memory()))
    for sd, arr in writes:
        lib.lib.dnnl_memory_set_data_handle(sd.user, _P(arr.ctypes.data))
        args.append((sd.arg, sd.memory()))
    lib.run(prim, args)
    for sd, _ in writes:
        if sd.reorder is not None:
            lib.run(sd.reorder, [(_SRC, sd.memory()), (_DST, sd.user)])


class _Pass(NamedTuple):
    """One primitive of a plan: ``prim`` reads the ``reads`` and writes ``out``."""

    prim: _P
    reads: tuple[_Side, _Side]
    out: _Side
    scratch: _Buffer


class Conv2d:
    """A planned float32 2-D convolution (see the module docstring): ``x (N, C, H, W)``,
    ``w (O, C/G, KH, KW)``, an optional ``b (O,)`` per call, output ``(N, O, OH, OW)``; ``stride``,
    ``dilation`` (PyTorch's, at least 1), ``pads ((top, bottom), (left, right))``.

    :meth:`forward`, :meth:`backward_data` and :meth:`backward_weights` take numpy float32
    arrays of exactly these shapes (any positive strides) and return new C-contiguous arrays.
    A plan is used by one thread at a time (a lock; :func:`conv2d_plan` hands out the cached
    plans).

    Raises:
        OneDNNError: oneDNN refuses the geometry (the caller falls back to numba).
    """

    def __init__(
        self,
        lib: _Lib,
        x_shape: tuple[int, ...],
        w_shape: tuple[int, ...],
        stride: Pair,
        pads: Pads,
        dilation: Pair,
        groups: int,
    ) -> None:
        n, _, h, wd = x_shape
        o, cg, kh, kw = w_shape
        oh = (h + pads[0][0] + pads[0][1] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
        ow = (wd + pads[1][0] + pads[1][1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
        self.lib = lib
        self.lock = threading.Lock()
        self.x_shape, self.w_shape, self.y_shape = x_shape, w_shape, (n, o, oh, ow)
        # oneDNN's grouped weights are 5-D (G, O/G, C/G, KH, KW): a view of PyTorch's layout
        self.wd_shape = (groups, o // groups, cg, kh, kw) if groups > 1 else w_shape
        self._own: list[tuple[str, _P]] = []
        own = self._own

        def md(shape: Sequence[int], strides: Sequence[int] | None) -> _P:
            return lib.md(own, shape, strides)

        any_x, any_w, any_y = md(x_shape, None), md(self.wd_shape, None), md(self.y_shape, None)
        b_md = md((o,), (1,))
        st, dl = _Dims(*stride), _Dims(dilation[0] - 1, dilation[1] - 1)
        pl, pr = _Dims(pads[0][0], pads[1][0]), _Dims(pads[0][1], pads[1][1])
        fwd, bwd_d, bwd_w = _P(), _P(), _P()
        lib.call(
            "dnnl_convolution_forward_primitive_desc_create",
            ctypes.byref(fwd), lib.engine, _FORWARD_TRAINING, _CONVOLUTION_DIRECT,
            any_x, any_w, b_md, any_y, st, dl, pl, pr, None,
        )  # fmt: skip
        lib.call(
            "dnnl_convolution_backward_data_primitive_desc_create",
            ctypes.byref(bwd_d), lib.engine, _CONVOLUTION_DIRECT, any_x, any_w, any_y, st, dl, pl, pr, fwd, None,
        )  # fmt: skip
        lib.call(
            "dnnl_convolution_backward_weights_primitive_desc_create",
            ctypes.byref(bwd_w), lib.engine, _CONVOLUTION_DIRECT,
            any_x, any_w, None, any_y, st, dl, pl, pr, fwd, None,
        )  # fmt: skip
        # the descriptors own the memory descriptors queried from them: kept while the plan lives
        own.extend(("dnnl_primitive_desc_destroy", pd) for pd in (fwd, bwd_d, bwd_w))
        self.impls = (lib.impl(fwd), lib.impl(bwd_d), lib.impl(bwd_w))
        """oneDNN's implementation names of the forward, backward-data and backward-weights."""

        def side(pd: _P, arg: int, shape: tuple[int, ...], into: bool) -> _Side:
            return _Side(lib, own, arg, shape, lib.query_md(pd, arg), into)

        def planned(
            pd: _P, a: tuple[int, tuple[int, ...]], b: tuple[int, tuple[int, ...]], out: tuple[int, tuple[int, ...]]
        ) -> _Pass:
            """The pass of ``pd``: its primitive, the two arguments it reads (reordered in from the
            plain layout), the one it writes (reordered out), and its scratch buffer."""
            reads = (side(pd, *a, True), side(pd, *b, True))
            return _Pass(
                lib.primitive(own, pd), reads, side(pd, *out, False), _Buffer(lib, own, lib.query_md(pd, _SCRATCHPAD))
            )

        xs, ws, ys = x_shape, self.wd_shape, self.y_shape
        self.f = planned(fwd, (_SRC, xs), (_WEIGHTS, ws), (_DST, ys))
        self.d = planned(bwd_d, (_DIFF_DST, ys), (_WEIGHTS, ws), (_DIFF_SRC, xs))
        self.w = planned(bwd_w, (_SRC, xs), (_DIFF_DST, ys), (_DIFF_WEIGHTS, ws))
        self._b_mem = lib.memory(own, b_md)
        self._no_bias = np.zeros(o, np.float32)

    def __del__(self) -> None:
        own = getattr(self, "_own", None)
        if own:
            self.lib.destroy(own)

    def _run(
        self, p: _Pass, a: Array, b: Array, extra: tuple[tuple[int, _P], ...] = (), out: Array | None = None
    ) -> Array:
        """Run pass ``p`` on the inputs ``a`` and ``b`` (copied to C-contiguous float32 first
        where they are not, reordered into the primitive's layouts where it chose others) and
        return its result as a new C-contiguous array of the output side's shape, or in ``out``
        (such an array, written in place). The caller holds the lock."""
        arrays = [
            np.ascontiguousarray(given, np.float32).reshape(sd.shape) for given, sd in zip((a, b), p.reads, strict=True)
        ]
        res = np.empty(p.out.shape, np.float32) if out is None else out.reshape(p.out.shape)
        scratch = ((_SCRATCHPAD, p.scratch.memory),)
        _execute(self.lib, p.prim, list(zip(p.reads, arrays, strict=True)), [(p.out, res)], (*extra, *scratch))
        return res if out is None else out

    def forward(self, x: Array, w: Array, b: Array | None, out: Array | None = None) -> Array:
        """``conv(x, w) + b`` ``(N, O, OH, OW)``, into ``out`` where given (a C-contiguous
        float32 array of that shape: a replay of :func:`gradtape.capture` writes the recorded
        output in place)."""
        bias = self._no_bias if b is None else np.ascontiguousarray(b, np.float32)
        with self.lock:
            self.lib.lib.dnnl_memory_set_data_handle(self._b_mem, _P(bias.ctypes.data))
            return self._run(self.f, x, w, ((_BIAS, self._b_mem),), out)

    def backward_data(self, g: Array, w: Array) -> Array:
        """The input's gradient ``(N, C, H, W)`` given the output's ``g``."""
        with self.lock:
            return self._run(self.d, g, w)

    def backward_weights(self, g: Array, x: Array) -> Array:
        """The weight's gradient ``(O, C/G, KH, KW)`` given the output's gradient ``g`` and the
        input ``x`` (the bias's gradient is a plain sum of ``g``: the caller's)."""
        with self.lock:
            return self._run(self.w, x, g).reshape(self.w_shape)


class RnnRun(NamedTuple):
    """What :meth:`Rnn.forward` computed and its backward reads: the float32 C-contiguous
    arguments (``x (T, N, I)``, ``h0, c0 (D, N, H)``, the weights in oneDNN's gate order
    ``w_ih (D, G H, I)``, ``w_hh (D, G H, H)``, oneDNN's bias ``b (D, 4H)``), the results ``y (T,
    N, D H)``, ``hn, cn (D, N, H)`` (``c0`` and ``cn`` ``None`` for the GRU), and oneDNN's
    workspace (training plans; ``None`` for inference)."""

    x: Array
    h0: Array
    c0: Array | None
    w_ih: Array
    w_hh: Array
    b: Array
    y: Array
    hn: Array
    cn: Array | None
    workspace: Array | None


CELLS = {"lstm": 4, "gru": 3}
"""The cells a :class:`Rnn` plan runs, and their gates ``G``."""

_GRU_ORDER = [1, 0, 2]
"""oneDNN's ``lbr_gru`` gate blocks ``u, r, o`` are PyTorch's ``z, r, n`` blocks 1, 0, 2 (and
back: the permutation is its own inverse)."""


class Rnn:
    """A planned float32 recurrent layer, one or both directions, over a time-major sequence of
    ``T`` steps, batch ``N``, input width ``I``, hidden size ``H``, ``D`` directions (2:
    ``bidirectional_concat``, the reverse direction's outputs after the forward one's on the
    feature axis, as PyTorch). ``cell``:

    * ``"lstm"``: oneDNN's ``vanilla_lstm`` (no peepholes, no projection), PyTorch's
      ``torch.nn.LSTM`` equations and gate order ``i, f, g, o``; one bias per gate ``b (D, 4H)``,
      PyTorch's ``b_ih + b_hh`` (its gradient is that of both);
    * ``"gru"``: oneDNN's ``lbr_gru`` ("linear before reset": ``n = tanh(W_in x + b_in + r (W_hn
      h + b_hn))``, PyTorch's ``torch.nn.GRU``); oneDNN's gates ``u, r, o`` are PyTorch's ``z, r,
      n`` (the plan permutes the weights' blocks both ways); its bias ``b (D, 4H)`` is ``[b_iz +
      b_hz, b_ir + b_hr, b_in, b_hn]``.

    Arguments in PyTorch's layouts: ``w_ih (D, G H, I)`` and ``w_hh (D, G H, H)`` (each direction's
    ``weight_ih``/``weight_hh``, oneDNN's ``ldgoi``, described by strides and reordered into the
    layout the primitive picks), states ``(D, N, H)``.

    ``training``: a ``forward_training`` primitive, whose workspace :meth:`backward` reads, and
    the backward primitive; else ``forward_inference`` only. Methods copy their arguments to
    C-contiguous float32 where they are not and return new arrays. A plan is used by one thread
    at a time (a lock; :func:`rnn_plan` hands out the cached plans).

    Raises:
        OneDNNError: oneDNN refuses the shapes (the message names the cell and the shapes).
        ValueError: :meth:`forward`/:meth:`backward` given arrays of other shapes than planned.
    """

    def __init__(self, lib: _Lib, cell: str, nt: int, nb: int, ni: int, nh: int, ndir: int, training: bool) -> None:
        self.lib = lib
        self.lock = threading.Lock()
        self.cell = cell
        self.gates = CELLS[cell]
        self.dims = (nt, nb, ni, nh, ndir)
        self.training = training
        self.what = f"{cell} (T={nt}, N={nb}, I={ni}, H={nh}, directions={ndir}, training={training})"
        nd, ng = ndir, self.gates * nh
        self._torch_shapes = {
            _SRC_LAYER: (nt, nb, ni),
            _SRC_ITER: (nd, nb, nh),
            _WEIGHTS_LAYER: (nd, ng, ni),
            _WEIGHTS_ITER: (nd, ng, nh),
            _BIAS: (nd, 4 * nh),
            _DST_LAYER: (nt, nb, nd * nh),
        }
        self._own: list[tuple[str, _P]] = []
        try:
            self._plan(nt, nb, ni, nh, ndir)
        except OneDNNError as e:
            lib.destroy(self._own)
            raise OneDNNError(f"{self.what}: {e}") from None

    def _plan(self, nt: int, nb: int, ni: int, nh: int, nd: int) -> None:
        lib, own, g = self.lib, self._own, self.gates

        def md(shape: Sequence[int], strides: Sequence[int] | None) -> _P:
            return lib.md(own, shape, strides)

        # oneDNN's views (dims) and PyTorch's layouts (element strides) of every argument
        self.shapes: dict[int, tuple[tuple[int, ...], list[int] | None]] = {
            _SRC_LAYER: ((nt, nb, ni), None),
            _SRC_ITER: ((1, nd, nb, nh), None),
            _WEIGHTS_LAYER: ((1, nd, ni, g, nh), [nd * g * nh * ni, g * nh * ni, 1, nh * ni, ni]),
            _WEIGHTS_ITER: ((1, nd, nh, g, nh), [nd * g * nh * nh, g * nh * nh, 1, nh * nh, nh]),
            _BIAS: ((1, nd, 4, nh), None),  # the LSTM's 4 gates; the GRU's 3 and b_hn
            _DST_LAYER: ((nt, nb, nd * nh), None),
        }
        for a, b in ((_SRC_ITER, _SRC_ITER_C), (_SRC_ITER, _DST_ITER), (_SRC_ITER, _DST_ITER_C)):
            self.shapes[b] = self.shapes[a]
        for a in list(self.shapes):
            self.shapes[a | _DIFF] = self.shapes[a]  # DNNL_ARG_DIFF_x = DNNL_ARG_x | 128

        def desc(arg: int) -> _P:
            shape = self.shapes[arg & ~_DIFF][0]
            if arg & ~_DIFF in (_WEIGHTS_LAYER, _WEIGHTS_ITER):
                return md(shape, None)  # any: the primitive's choice
            return md(shape, _c_strides(shape))

        lstm = self.cell == "lstm"
        # the C functions' argument order: inputs, (peephole, projection: the LSTM's, none), bias, outputs
        ins = (_SRC_LAYER, _SRC_ITER, _SRC_ITER_C) if lstm else (_SRC_LAYER, _SRC_ITER)
        ins = (*ins, _WEIGHTS_LAYER, _WEIGHTS_ITER)
        outs = (_DST_LAYER, _DST_ITER, _DST_ITER_C) if lstm else (_DST_LAYER, _DST_ITER)
        unused: list[None] = [None, None] if lstm else []

        def descs(diff: int) -> list[_P | None]:
            return [desc(a | diff) for a in ins] + unused + [desc(_BIAS | diff)] + [desc(a | diff) for a in outs]

        name = "lstm" if lstm else "lbr_gru"
        direction = _BIDIRECTIONAL_CONCAT if nd == 2 else _LEFT2RIGHT
        prop = _FORWARD_TRAINING if self.training else _FORWARD_INFERENCE
        fwd = _P()
        lib.call(
            f"dnnl_{name}_forward_primitive_desc_create",
            ctypes.byref(fwd),
            lib.engine,
            prop,
            direction,
            *descs(0),
            0,
            None,
        )
        own.append(("dnnl_primitive_desc_destroy", fwd))
        self.impls = [lib.impl(fwd)]
        """oneDNN's implementation names of the forward (and backward) primitive."""

        def side(pd: _P, arg: int, into: bool) -> _Side:
            shape, strides = self.shapes[arg]
            return _Side(lib, own, arg, shape, lib.query_md(pd, arg), into, strides)

        self.f_prim = lib.primitive(own, fwd)
        self.f_reads = [side(fwd, a, True) for a in (*ins, _BIAS)]
        self.f_writes = [side(fwd, a, False) for a in outs]
        self.f_scratch = _Buffer(lib, own, lib.query_md(fwd, _SCRATCHPAD))
        if not self.training:
            return
        ws_md = lib.query_md(fwd, _WORKSPACE)
        self.ws_size = int(lib.lib.dnnl_memory_desc_get_size(ws_md))
        self.f_ws = lib.memory(own, ws_md)
        bwd = _P()
        lib.call(
            f"dnnl_{name}_backward_primitive_desc_create",
            ctypes.byref(bwd), lib.engine, _BACKWARD, direction, *descs(0), *descs(_DIFF),
            _DIFF_WEIGHTS_OVERWRITE, fwd, None,
        )  # fmt: skip
        own.append(("dnnl_primitive_desc_destroy", bwd))
        self.impls.append(lib.impl(bwd))
        self.b_prim = lib.primitive(own, bwd)
        self.b_reads = [side(bwd, a, True) for a in (*ins, _BIAS, *outs)]
        self.b_reads += [side(bwd, a | _DIFF, True) for a in outs]
        self.b_writes = [side(bwd, a | _DIFF, False) for a in (*ins, _BIAS)]
        self.b_scratch = _Buffer(lib, own, lib.query_md(bwd, _SCRATCHPAD))
        self.b_ws = lib.memory(own, lib.query_md(bwd, _WORKSPACE))

    def __del__(self) -> None:
        own = getattr(self, "_own", None)
        if own:
            self.lib.destroy(own)

    def _arrays(self, call: str, names: Sequence[str], given: Sequence[Array], sides: Sequence[_Side]) -> list[Array]:
        """The arguments as C-contiguous float32 arrays, checked against the planned shapes."""
        out = []
        for nm, a, sd in zip(names, given, sides, strict=True):
            want = self.torch_shape(sd.arg & ~_DIFF)
            if tuple(a.shape) != want:
                raise ValueError(f"{self.what}.{call}: {nm} must have shape {want}, got {tuple(a.shape)}")
            out.append(np.ascontiguousarray(a, np.float32))
        return out

    def torch_shape(self, arg: int) -> tuple[int, ...]:
        """The shape of argument ``arg`` (a ``DNNL_ARG_*``) in the layout the methods take."""
        return self._torch_shapes.get(arg, self._torch_shapes[_SRC_ITER])

    def _gate_order(self, w: Array) -> Array:
        """A ``(D, G H, K)`` weight (or its gradient) between PyTorch's and oneDNN's gate order:
        the GRU's blocks permuted (a copy), the LSTM's as they are."""
        if self.cell != "gru":
            return w
        nd, ng, k = w.shape
        out: Array = w.reshape(nd, 3, ng // 3, k)[:, _GRU_ORDER].reshape(nd, ng, k)
        return out

    def forward(self, x: Array, h0: Array, c0: Array | None, w_ih: Array, w_hh: Array, b: Array) -> RnnRun:
        """Run the layer: ``y (T, N, D H)`` every step's hidden state (both directions'
        concatenated), ``hn`` (and the LSTM's ``cn``) ``(D, N, H)`` the states after each
        direction's last step, in an :class:`RnnRun` with the arguments and, training, the
        workspace. ``c0``: the LSTM's initial cell state, ``None`` for the GRU."""
        lstm = self.cell == "lstm"
        names = ("x", "h0", "c0", "w_ih", "w_hh", "b") if lstm else ("x", "h0", "w_ih", "w_hh", "b")
        given = (x, h0, c0, w_ih, w_hh, b) if lstm else (x, h0, w_ih, w_hh, b)
        if any(a is None for a in given):
            raise ValueError(f"{self.what}.forward: c0 is the LSTM's: an array for it, None for the GRU")
        args = self._arrays("forward", names, [a for a in given if a is not None], self.f_reads)
        args[-3], args[-2] = self._gate_order(args[-3]), self._gate_order(args[-2])
        outs = [_aligned(self.torch_shape(sd.arg), np.float32) for sd in self.f_writes]
        # tens of MB (42 a layer at T=64, N=32, H=256): reused from the heap without page faults
        # below gradtape's malloc settings' 64 MB mmap threshold (devices/kernels/_malloc.py)
        ws = _aligned(max(self.ws_size, 1)) if self.training else None
        extra = [(_SCRATCHPAD, self.f_scratch.memory)]
        with self.lock:
            if ws is not None:
                self.lib.lib.dnnl_memory_set_data_handle(self.f_ws, _P(ws.ctypes.data))
                extra.append((_WORKSPACE, self.f_ws))
            reads, writes = zip(self.f_reads, args, strict=True), zip(self.f_writes, outs, strict=True)
            _execute(self.lib, self.f_prim, list(reads), list(writes), extra)
        if lstm:
            x, h0, c0, w_ih, w_hh, b = args
            y, hn, cn = outs
            return RnnRun(x, h0, c0, w_ih, w_hh, b, y, hn, cn, ws)
        x, h0, w_ih, w_hh, b = args
        y, hn = outs
        return RnnRun(x, h0, None, w_ih, w_hh, b, y, hn, None, ws)

    def backward(self, run: RnnRun, gy: Array, ghn: Array, gcn: Array | None) -> tuple[Array | None, ...]:
        """Gradients from those of ``y (T, N, D H)``, ``hn`` and the LSTM's ``cn (D, N, H)``
        (zeros for none; ``gcn`` ``None`` for the GRU) after :meth:`forward` gave ``run``: ``(dx
        (T, N, I), dh0, dc0 (D, N, H; None for the GRU), dw_ih (D, G H, I), dw_hh (D, G H, H), db
        (D, 4H))``, the weights' in PyTorch's gate order, the bias's in oneDNN's (see the class).
        The primitive overwrites its weight gradients (``rnn_flags_diff_weights_overwrite``;
        oneDNN's default adds into them).

        Raises:
            OneDNNError: an inference plan, or a run without workspace.
        """
        if not self.training or run.workspace is None:
            raise OneDNNError(f"{self.what}.backward: the plan or the run is not a training one")
        lstm = self.cell == "lstm"
        names, given = (("gy", "ghn", "gcn"), (gy, ghn, gcn)) if lstm else (("gy", "ghn"), (gy, ghn))
        if any(a is None for a in given):
            raise ValueError(f"{self.what}.backward: gcn is the LSTM's: an array for it, None for the GRU")
        nouts = len(names)
        grads = self._arrays("backward", names, [a for a in given if a is not None], self.b_reads[-nouts:])
        outs = [_aligned(self.torch_shape(sd.arg & ~_DIFF), np.float32) for sd in self.b_writes]
        saved = [a for a in run[:9] if a is not None]
        extra = [(_SCRATCHPAD, self.b_scratch.memory), (_WORKSPACE, self.b_ws)]
        with self.lock:
            self.lib.lib.dnnl_memory_set_data_handle(self.b_ws, _P(run.workspace.ctypes.data))
            reads = list(zip(self.b_reads, [*saved, *grads], strict=True))
            _execute(self.lib, self.b_prim, reads, list(zip(self.b_writes, outs, strict=True)), extra)
        outs[-3], outs[-2] = self._gate_order(outs[-3]), self._gate_order(outs[-2])
        if lstm:
            return tuple(outs)
        dx, dh0, dw_ih, dw_hh, db = outs
        return dx, dh0, None, dw_ih, dw_hh, db


def _cached(cache: OrderedDict[tuple[Any, ...], Any], key: tuple[Any, ...], make: Any, size: int = 0) -> Any:
    """``cache[key]``, made by ``make()`` on a miss (``None`` when oneDNN refuses: remembered, not
    asked again), the least recently used dropped beyond ``size`` plans (0: :data:`CACHE_SIZE`)."""
    with _PLANS_LOCK:
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
    try:
        plan = make()
    except OneDNNError:
        plan = None
    with _PLANS_LOCK:
        cache[key] = plan
        while len(cache) > (size or CACHE_SIZE):
            cache.popitem(last=False)
    return plan


_RNN_PLANS: OrderedDict[tuple[Any, ...], Rnn | None] = OrderedDict()


def rnn_plan(cell: str, nt: int, nb: int, ni: int, nh: int, ndir: int, training: bool) -> Rnn | None:
    """The cached :class:`Rnn` plan of ``cell`` (``"lstm"`` or ``"gru"``) for ``T`` steps, batch
    ``N``, input ``I``, hidden ``H``, ``D`` directions, training or inference; ``None`` when
    oneDNN is not :func:`available` or refused the shapes (remembered)."""
    if not available():
        return None
    lib = _load()
    assert lib is not None
    key = (cell, nt, nb, ni, nh, ndir, training)
    plan: Rnn | None = _cached(_RNN_PLANS, key, lambda: Rnn(lib, *key))
    return plan


_PLANS: OrderedDict[tuple[Any, ...], Conv2d | None] = OrderedDict()
_PLANS_LOCK = threading.Lock()


def conv2d_plan(
    x_shape: tuple[int, ...],
    w_shape: tuple[int, ...],
    stride: Pair,
    pads: Pads,
    dilation: Pair,
    groups: int,
) -> Conv2d | None:
    """The cached :class:`Conv2d` plan for this geometry (bias or not: one plan), or ``None`` when oneDNN is not
    :func:`available` or refused the geometry (remembered: it is not asked again)."""
    if not available():
        return None
    lib = _load()
    assert lib is not None
    key = (x_shape, w_shape, stride, pads, dilation, groups)
    plan: Conv2d | None = _cached(_PLANS, key, lambda: Conv2d(lib, *key))
    return plan
