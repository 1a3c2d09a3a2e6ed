"""The one place gradtape calls ``numba.njit``.

Kernels compile lazily on first call and are cached on disk (``cache=True``) so a
second process loads them in milliseconds. If no cache location is writable, numba
raises when the decorator runs; :func:`jit` then compiles without a cache, so that
importing gradtape never fails for that reason (see shared/KERNELS.md).

Threads: where numba's kernels run on OpenMP (no TBB, below), importing this module sets
``OMP_WAIT_POLICY=PASSIVE`` unless the environment already sets it. Without TBB numba's
parallel kernels run on its OpenMP layer,
whose workers otherwise spin-wait after every kernel and take the cores OpenBLAS needs for
the next matmul: on a 2-core VM, a BLAS product alternating with a parallel kernel (a
transformer's training step does this all the time) measured 8-40 ms per pair with
spinning workers and 0.7 ms with passive ones. The setting only reaches OpenMP runtimes
loaded after it (numba starts its threads at the first parallel kernel); to be sure, set
it in the environment. With TBB it is left alone: PASSIVE also reaches other libraries'
OpenMP runtimes (PyTorch's), whose short parallel regions then pay a wake-up each; a
PyTorch loop over time ran 20x slower in the same process (benchmarks, workload 8).

Fork safety (issue 15): GNU OpenMP is not fork safe. A process forked after a parallel
kernel ran (multiprocessing's default start method on Linux, data loaders, pools) was
killed with "fork() called from a process already using GNU OpenMP" at its first parallel
kernel. numba's TBB layer is fork safe and thread safe (its ``workqueue`` layer is fork
safe but aborts when two threads run parallel kernels at once), and numba's default order
already prefers TBB; it just never finds pip's ``tbb``, whose ``libtbb.so.12`` lands in
``<prefix>/lib``, outside the loader's search path in a virtual environment.
:func:`_preload_tbb` loads it from the installed ``tbb`` distribution (a dependency on
x86-64 Linux) so numba picks TBB by itself; where there is no ``tbb``, numba keeps OpenMP.
A ``NUMBA_THREADING_LAYER`` the user sets still wins. Measured on the 2-core VM: TBB and
OpenMP run large elementwise kernels and BLAS/kernel alternation at the same speed.
TBB hands out ``prange`` chunks dynamically, so a scalar reduction over a ``prange``
(``s += a[i]``) gives a different float sum from run to run (OpenMP's static schedule
does not): write partial sums per fixed chunk instead, as ``norm._norm_backward_parallel``
does, and results stay bitwise reproducible.

Serial and parallel variants: most kernels run serially on small inputs and over threads on
large ones (a parallel kernel costs about 1-2 us more per call, shared/KERNELS.md). Where
the two differ only in ``range`` against ``numba.prange``, the body is written once, with
``numba.prange``, and :func:`serial_and_parallel` compiles it twice: in a serial compile numba
types and lowers ``prange`` exactly as ``range``.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import os
import threading
import types
import warnings
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

import numba
from llvmlite import ir
from numba.core import types as nt
from numba.extending import intrinsic

from gradtape.devices.kernels import _malloc  # noqa: F401  (sets glibc's malloc thresholds once)

F = TypeVar("F", bound=Callable[..., Any])

_TBB_LIBRARIES = ("libtbb.so.12", "libtbb.12.dylib", "tbb12.dll")  # the names numba's tbbpool links to


def _preload_tbb() -> bool:
    """Load the ``tbb`` distribution's shared library globally, so that numba's TBB layer loads.

    Returns whether it was loaded. Never raises: without TBB numba uses OpenMP as before.
    """
    try:
        files = importlib.metadata.files("tbb") or []
    except Exception:  # not installed, or unreadable metadata
        return False
    for f in files:
        if f.name in _TBB_LIBRARIES:
            try:
                ctypes.CDLL(str(f.locate()), mode=ctypes.RTLD_GLOBAL)
            except OSError:
                return False
            return True
    return False


TBB_LOADED = _preload_tbb()


def _openmp_kernels() -> bool:
    """Whether numba's parallel kernels run on OpenMP: the user asked for it, numba already
    chose it (its threading layer starts once, at the first parallel call or
    ``numba.get_num_threads()``; before gradtape's import, TBB was not loadable yet), or
    there is no TBB."""
    if os.environ.get("NUMBA_THREADING_LAYER", "").lower() == "omp":
        return True
    try:
        from numba.np.ufunc import parallel

        if parallel._is_initialized:
            return bool(parallel._threading_layer != "tbb")
    except (ImportError, AttributeError):  # numba's internals moved: judge by TBB alone
        pass
    return not TBB_LOADED


OPENMP_KERNELS = _openmp_kernels()
"""Whether numba's parallel kernels run on OpenMP (see :func:`_openmp_kernels`)."""
if OPENMP_KERNELS:
    # only then: PASSIVE makes every OpenMP runtime in the process (PyTorch's too) sleep
    # between parallel regions, which slowed a PyTorch loop of small ops 20x in benchmarks
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__all__ = ["REASSOC", "address", "jit", "jit_source", "serial_and_parallel"]

REASSOC = frozenset({"reassoc", "contract", "nsz"})
"""Fast-math flags that let LLVM vectorize a float reduction (``s += a[i] * b[i]``): sums may
be reassociated and multiply-adds fused. Without ``nnan``/``ninf``, so NaN and inf still
propagate (anomaly mode needs them). The result of a reduction then depends on the vector
width, not on the thread schedule: still bitwise reproducible on one machine."""


def _njit(fn: F, opts: dict[str, Any]) -> F:
    """``numba.njit(cache=True, **opts)(fn)``, or ``cache=False`` with a :class:`RuntimeWarning`
    (pointing at the module that defines the kernel) where numba finds no writable cache
    location."""
    try:
        jitted: F = numba.njit(cache=True, **opts)(fn)
    except Exception as err:  # numba raises RuntimeError when no cache locator fits
        warnings.warn(
            f"gradtape: numba cannot cache {fn.__name__} ({err}); compiling without a cache",
            RuntimeWarning,
            stacklevel=3,
        )
        jitted = numba.njit(cache=False, **opts)(fn)
    return jitted


def _options(parallel: bool, fastmath: frozenset[str] | None, inline: bool = False) -> dict[str, Any]:
    # fastmath always set, False for strict: numba lets a kernel that does not set it inherit
    # its caller's flags, so a strict helper (attention._exp32) compiled first for a REASSOC
    # caller kept contracted, reassociated arithmetic for every later caller, Python's too
    opts: dict[str, Any] = {"nogil": True, "error_model": "numpy", "parallel": parallel}
    opts["fastmath"] = set(fastmath) if fastmath else False
    if inline:
        opts["inline"] = "always"
    return opts


def jit(*, parallel: bool = False, fastmath: frozenset[str] | None = None, inline: bool = False) -> Callable[[F], F]:
    """Decorate a kernel with ``numba.njit(cache=True, nogil=True, error_model='numpy')``.

    Args:
        parallel: compile with ``parallel=True`` (for ``numba.prange`` loops over large arrays).
        fastmath: LLVM fast-math flags for the kernel (numba's ``fastmath``), e.g.
            :data:`REASSOC`; ``None`` for strict IEEE arithmetic. Always passed to numba
            (``False`` for strict): a kernel that leaves it unset inherits the flags of the
            first kernel that calls it, so its arithmetic (and a strict helper's accuracy,
            called from Python later) would depend on which caller compiled first. A helper
            inlined with ``inline`` takes its caller's flags.
        inline: numba's ``inline='always'``: the body is inlined into every numba caller (at
            numba's IR level, so LLVM optimises it in place), for small helpers that kernels
            share. Left to LLVM's inliner, ``softmax._dot8`` stayed a call, once per row
            (65-wide rows of ``softmax_backward``: 25-30% slower), and ``pool._window`` was
            inlined yet the average pooling loop ran 10% slower than written out. Callers
            must be in the helper's module (numba's cache key covers a kernel's own module).

    Falls back to ``cache=False`` (with a :class:`RuntimeWarning`) where numba finds no
    writable cache location.
    """

    def decorate(fn: F) -> F:
        return _njit(fn, _options(parallel, fastmath, inline))

    return decorate


@intrinsic
def address(typingctx: Any, addr: Any) -> Any:
    """``void *`` from an integer address, for ``numba.carray(address(a), shape, dtype)`` in a
    generated function (``gradtape.capture``'s compiled replays rebuild C-contiguous arrays
    from their data addresses: one integer array argument instead of one argument per array,
    which is what numba's compile time grows with)."""

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.inttoptr(args[0], ir.IntType(8).as_pointer())

    return nt.voidptr(nt.intp), codegen


def jit_source(source: str, name: str, namespace: dict[str, Any]) -> Callable[..., Any]:
    """Compile the function ``name`` defined by the generated ``source`` (its globals:
    ``namespace``, which numba freezes: numbers become constants of their numba types, kernels
    direct calls) as :func:`jit` compiles a kernel (strict IEEE arithmetic, numpy's error
    model, no GIL) but without a disk cache: generated code has no file for numba to key a
    cache on. ``gradtape.capture``'s compiled replays use it.

    The same ``source`` over the same namespace (the same objects, by identity, and the same
    numbers, by value: ``repr``, so ``0.0`` and ``-0.0`` differ) returns the dispatcher made
    the first time, from a cache of the last :data:`SOURCE_CACHE_SIZE` such functions in this
    process: a second capture of the same step (a new :func:`gradtape.capture` of the same
    model, an evaluation function captured again) skips numba's compile, about 0.3-1 s per
    traced stretch. The dispatcher compiles each new argument signature once, as any kernel.
    """
    key = (name, source, _namespace_key(namespace))
    with _SOURCE_LOCK:
        hit = _SOURCE_CACHE.get(key)
        if hit is not None:
            _SOURCE_CACHE.move_to_end(key)
            return hit
    code = compile(source, f"<generated {name}>", "exec")
    exec(code, namespace)
    jitted: Callable[..., Any] = numba.njit(cache=False, **_options(False, None))(namespace[name])
    with _SOURCE_LOCK:
        # the dispatcher's globals (``namespace``) hold the objects whose ids the key names,
        # so an id in a cached key cannot be reused by another object while the entry lives
        _SOURCE_CACHE[key] = jitted
        while len(_SOURCE_CACHE) > SOURCE_CACHE_SIZE:
            _SOURCE_CACHE.popitem(last=False)
    return jitted


SOURCE_CACHE_SIZE = 256
"""How many generated functions :func:`jit_source` keeps for reuse (least recently used out)."""

_SOURCE_CACHE: OrderedDict[tuple[Any, ...], Callable[..., Any]] = OrderedDict()
_SOURCE_LOCK = threading.Lock()


def _namespace_key(namespace: dict[str, Any]) -> tuple[tuple[str, str, object], ...]:
    """What a generated function's globals freeze into its code: numbers and strings by type
    and ``repr``, every other object (kernels, numpy scalar types, helpers) by identity."""
    out: list[tuple[str, str, object]] = []
    for k, v in sorted(namespace.items()):
        if k.startswith("__"):
            continue
        if type(v) in (float, int, bool, complex, str):
            out.append((k, type(v).__name__, repr(v)))
        else:
            out.append((k, "id", id(v)))
    return tuple(out)


def _twin(fn: F, suffix: str) -> F:
    """A copy of ``fn`` (the same code object, globals, defaults and closure) named
    ``<name>_<suffix>``, with ``__qualname__`` to match."""
    src: Any = fn
    copy = types.FunctionType(
        src.__code__, src.__globals__, f"{src.__name__}_{suffix}", src.__defaults__, src.__closure__
    )
    copy.__qualname__ = f"{src.__qualname__}_{suffix}"
    copy.__kwdefaults__ = src.__kwdefaults__
    copy.__doc__ = src.__doc__
    copy.__annotations__ = dict(src.__annotations__)
    twin: F = copy  # type: ignore[assignment]
    return twin


def serial_and_parallel(fn: F, *, fastmath: frozenset[str] | None = None) -> tuple[F, F]:
    """Compile one kernel body twice: ``(serial, parallel)``, as :func:`jit` and
    ``jit(parallel=True)`` (same ``fastmath``) would compile two copies of it.

    Write the body's parallel loop with ``numba.prange``. numba types and lowers ``prange`` as
    ``range`` when ``parallel=False``, so the serial dispatcher runs the code a ``range``
    loop would give; the parallel one splits that loop over threads. Use it only where every
    iteration of the ``prange`` loop writes its own elements (no scalar reductions across
    iterations: see the module docstring on TBB), so both give the same results.

    Usage, with the kernel named ``_k`` (the dispatchers are ``_k_serial`` and ``_k_parallel``)::

        def _k(out: Array, x: Array) -> None:
            for i in numba.prange(out.shape[0]):
                out[i] += x[i]


        _k_serial, _k_parallel = serial_and_parallel(_k)

    Each variant compiles its own copy of ``fn``, named ``<name>_serial`` and
    ``<name>_parallel``: numba's on-disk cache names a kernel's files after its module,
    ``__qualname__`` and first line and keys the entries by signature and bytecode, not by
    the ``parallel`` flag, so one function compiled both ways would share cache entries and
    a later process would load one variant's machine code for the other. Falls back to
    ``cache=False`` as :func:`jit` does.

    Args:
        fn: the kernel body, a plain Python function (not yet compiled).
        fastmath: LLVM fast-math flags for both variants, as for :func:`jit`.

    Returns:
        The serial and the parallel numba dispatcher, typed as ``fn``.

    Raises:
        TypeError: ``fn`` is not a plain Python function (a numba dispatcher, say).
    """
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"serial_and_parallel: expects a plain Python function, got {type(fn).__name__}")
    serial = _njit(_twin(fn, "serial"), _options(False, fastmath))
    parallel = _njit(_twin(fn, "parallel"), _options(True, fastmath))
    return serial, parallel
