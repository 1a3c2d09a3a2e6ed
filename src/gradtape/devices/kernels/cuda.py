"""Fused elementwise kernels for the ``Cuda`` device, written with numba-cuda.

The CPU wrappers in :mod:`gradtape.devices.kernels.elementwise` (and the optimizers') hand a
GPU array here when they meet one, so an op's backward closure calls the same function on both
devices. Each kernel is one grid-stride pass over the flattened arrays (``out``, ``a``, ``b``
C-contiguous, one shape and dtype); anything else (broadcast operands, strided views) runs as
the equivalent array expression, which CuPy evaluates on the GPU and which gives the same
result.

The kernels take any array exposing ``__cuda_array_interface__`` (CuPy arrays, numba device
arrays) and, under numba-cuda's simulator (``NUMBA_ENABLE_CUDASIM=1``), numpy arrays: the
tests run every kernel there on the CPU. The simulator runs each thread as a Python thread,
so it checks indexing and arithmetic, not speed or warp-level behaviour (it has no warps).

numba-cuda is imported on the first call, never by ``import gradtape``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gradtape.devices import _arrays
from gradtape.errors import DTypeError, ShapeError

__all__ = [
    "adam_step",
    "add_at",
    "adddiv",
    "addmul",
    "axpy",
    "relu_backward",
    "relu_grad",
    "sgd_step",
]

Array = Any

THREADS = 256
"""Threads per block of the 1-D kernels."""
MAX_BLOCKS = 8192
"""At most this many blocks: larger arrays are covered by the grid-stride loop."""

# numba-cuda 0.30.4 overloads np.row_stack when it loads, and numpy 2.5 removed that alias of
# vstack: seen on the H100 image (numpy 2.5.2), where ``from numba import cuda`` failed
np.__dict__.setdefault("row_stack", np.vstack)

from numba import config as _numba_config  # noqa: E402
from numba import cuda  # noqa: E402  (numba-cuda; this module loads only when a GPU array or the simulator needs it)

# small tensors launch small grids by design: numba-cuda's low-occupancy warning would fire on
# every bias and layer-norm weight
_numba_config.CUDA_LOW_OCCUPANCY_WARNINGS = False

# ----- the kernels (compiled for the GPU at their first launch) ---------------------------


@cuda.jit(cache=False)
def addmul_kernel(out: Any, a: Any, b: Any) -> None:  # pragma: no cover - runs on the device
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, out.shape[0], stride):
        out[i] += a[i] * b[i]


@cuda.jit(cache=False)
def adddiv_kernel(out: Any, a: Any, b: Any) -> None:  # pragma: no cover
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, out.shape[0], stride):
        out[i] += a[i] / b[i]


@cuda.jit(cache=False)
def axpy_kernel(out: Any, alpha: Any, x: Any) -> None:  # pragma: no cover
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, out.shape[0], stride):
        out[i] += alpha * x[i]


@cuda.jit(cache=False)
def relu_backward_kernel(out: Any, x: Any, g: Any) -> None:  # pragma: no cover
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, out.shape[0], stride):
        if x[i] > 0:
            out[i] += g[i]


@cuda.jit(cache=False)
def relu_grad_kernel(out: Any, x: Any, g: Any) -> None:  # pragma: no cover
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, out.shape[0], stride):
        out[i] = g[i] if x[i] > 0 else 0.0  # (not g * 0: an infinite g would give NaN)


@cuda.jit(cache=False)
def sgd_step_kernel(
    p: Any, g: Any, buf: Any, lr: Any, wd: Any, mom: Any, keep: Any, nesterov: int, first: int, use_buf: int
) -> None:  # pragma: no cover
    # the CPU kernel's formula (kernels/optim.py _sgd); the scalars in p's dtype, keep = 1 - dampening
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, p.shape[0], stride):
        d = g[i] + wd * p[i] if wd != 0 else g[i]
        if use_buf != 0:
            b = d if first != 0 else mom * buf[i] + keep * d
            buf[i] = b
            d = d + mom * b if nesterov != 0 else b
        p[i] -= lr * d


@cuda.jit(cache=False)
def adam_step_kernel(
    p: Any, g: Any, m: Any, v: Any, vmax: Any,
    a1: Any, b2: Any, a2: Any, eps: Any, wd: Any, decay: Any, ss: Any, bc: Any, amsgrad: int,
) -> None:  # fmt: skip  # pragma: no cover
    # the CPU kernel's formula (kernels/optim.py _adam), the scalars in p's dtype: a1 = 1 - b1,
    # a2 = 1 - b2, ss = lr / (1 - b1**t), bc = sqrt(1 - b2**t)
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, p.shape[0], stride):
        x = p[i] * decay
        gi = g[i] + wd * x if wd != 0 else g[i]
        mi = m[i] + a1 * (gi - m[i])
        vi = b2 * v[i] + a2 * gi * gi
        m[i] = mi
        v[i] = vi
        if amsgrad != 0:
            vi = max(vmax[i], vi)
            vmax[i] = vi
        p[i] = x - ss * (mi / (math.sqrt(vi) / bc + eps))


_K: dict[str, Any] = {
    "addmul": addmul_kernel,
    "adddiv": adddiv_kernel,
    "axpy": axpy_kernel,
    "relu_backward": relu_backward_kernel,
    "relu_grad": relu_grad_kernel,
    "sgd_step": sgd_step_kernel,
    "adam_step": adam_step_kernel,
}


@cuda.jit(cache=False)
def segment_add_kernel(flat: Any, dest: Any, order: Any, starts: Any, values: Any) -> None:  # pragma: no cover
    # segment k: the positions order[starts[k]:starts[k + 1]] (ascending), all adding into
    # flat[dest[k]], summed one after another as numpy's add.at does: the same bits, every run
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for k in range(start, dest.shape[0], stride):
        acc = flat[dest[k]]
        for j in range(starts[k], starts[k + 1]):
            acc += values[order[j]]
        flat[dest[k]] = acc


def _launch(n: int) -> tuple[int, int]:
    """``(blocks, threads)`` for ``n`` elements: whole warps, at most :data:`THREADS` a block."""
    threads = min(THREADS, max(32, (n + 31) // 32 * 32))
    return max(1, min(MAX_BLOCKS, (n + threads - 1) // threads)), threads


def _flat_ok(out: Array, *ins: Array) -> bool:
    """Whether ``out`` and ``ins`` go to a 1-D kernel: one shape and dtype, C-contiguous.

    Raises:
        DTypeError: an input of ``out``'s shape has another dtype.
    """
    shape, dt = out.shape, out.dtype
    for x in ins:
        if getattr(x, "shape", None) != shape:
            return False
        if x.dtype != dt:
            raise DTypeError(f"kernel: dtype {x.dtype} (shape {x.shape}) mixed with out's {dt} (shape {shape})")
    return bool(out.flags.c_contiguous and all(x.flags.c_contiguous for x in ins))


def _check_float(op: str, out: Array) -> None:
    if out.dtype not in (np.float32, np.float64):
        raise DTypeError(f"{op}: out has dtype {out.dtype}; kernels take float32 or float64")


def _check_broadcast(op: str, out: Array, *ins: Array) -> None:
    shapes = [getattr(x, "shape", ()) for x in ins]
    listed = ", ".join(map(str, shapes))
    try:
        shape = np.broadcast_shapes(out.shape, *shapes)
    except ValueError:
        raise ShapeError(f"{op}: operands of shapes {listed} do not broadcast to out's {out.shape}") from None
    if shape != out.shape:
        raise ShapeError(f"{op}: operands of shapes {listed} broadcast to {shape}, not out's {out.shape}")


def _run3(op: str, out: Array, a: Array, b: Array) -> bool:
    _check_float(op, out)
    if out.size and _flat_ok(out, a, b):
        blocks, threads = _launch(out.size)
        _K[op][blocks, threads](out.reshape(-1), a.reshape(-1), b.reshape(-1))
        return True
    _check_broadcast(op, out, a, b)
    return False


def add_at(a: Array, key: Any, values: Array) -> None:
    """``np.add.at(a, key, values)`` on the GPU, deterministic: each element of ``a`` that
    ``key`` picks gets the values picked for it added one after another in the order of the
    picks, as numpy adds them, so a float sum of repeated indices has the CPU's bits on every
    run (CuPy's ``add.at`` adds atomically, in whatever order the threads get there). The
    picks are sorted by destination (``lexsort`` on destination then position), and one
    thread per destination sums its run (:func:`segment_add_kernel`). Integer arrays, or
    values of another dtype than ``a``'s, go to CuPy's ``add.at`` (integer sums do not depend
    on the order).

    Args:
        a: the GPU array added into, in place (any layout).
        key: what ``a[key]`` takes: ints, slices, integer index arrays, a tuple of them.
        values: broadcastable to ``a[key]``'s shape.

    Raises:
        IndexError: as numpy's, for an index out of range.
    """
    import cupy

    values = _arrays.as_array(values)
    if a.dtype.kind != "f" or values.dtype != a.dtype:
        cupy.add.at(a, key, values)
        return
    c = a if a.flags.c_contiguous else _arrays.contiguous(a)
    flat = c.reshape(-1)
    picked = _arrays.arange(a.size, flat, np.int64).reshape(a.shape)[key]  # a's flat positions at key
    dest = picked.reshape(-1)
    n = dest.shape[0]
    if n == 0:
        return
    vals = _arrays.contiguous(np.broadcast_to(values, picked.shape)).reshape(-1)
    order = np.lexsort(np.stack([_arrays.arange(n, flat, np.int64), dest]))  # by destination, then position
    sd = dest[order]
    first = np.concatenate([_arrays.full((1,), True, np.bool_, flat), sd[1:] != sd[:-1]])
    starts = np.flatnonzero(first)
    bounds = np.concatenate([starts, _arrays.full((1,), n, np.int64, flat)])
    blocks, threads = _launch(starts.shape[0])
    segment_add_kernel[blocks, threads](flat, _arrays.contiguous(sd[starts]), order, bounds, vals)
    if c is not a:
        a[...] = c


def addmul(out: Array, a: Array, b: Array) -> None:
    """``out += a * b`` in one pass on the GPU (the CPU's
    :func:`~gradtape.devices.kernels.elementwise.addmul`).

    Args:
        out: a float32 or float64 GPU array, updated in place.
        a, b: GPU arrays of ``out``'s dtype broadcasting to ``out.shape``.

    Raises:
        ShapeError: ``a * b`` does not have ``out``'s shape. DTypeError: dtypes differ.
    """
    if not _run3("addmul", out, a, b):
        out += a * b


def adddiv(out: Array, a: Array, b: Array) -> None:
    """``out += a / b`` in one pass on the GPU (``log``'s and ``div``'s backward).

    Raises:
        ShapeError, DTypeError: as :func:`addmul`.
    """
    if not _run3("adddiv", out, a, b):
        out += a / b


def relu_backward(out: Array, x: Array, g: Array) -> None:
    """``out += g * (x > 0)`` in one pass on the GPU (ReLU's backward).

    Raises:
        ShapeError, DTypeError: as :func:`addmul`.
    """
    if not _run3("relu_backward", out, x, g):
        out += (x > 0) * g


def relu_grad(x: Array, g: Array) -> Array:
    """``g * (x > 0)`` as a new GPU array, one pass (ReLU's backward into a fresh gradient).

    Raises:
        ShapeError: the shapes differ. DTypeError: the dtypes differ or are not float.
    """
    if x.shape != g.shape:
        raise ShapeError(f"relu_grad: x {x.shape} and g {g.shape} must have one shape")
    _check_float("relu_grad", x)
    out = _arrays.empty(g.shape, g.dtype, g)
    if not _run3("relu_grad", out, x, g):
        out[...] = (x > 0) * g
    return out


def axpy(out: Array, alpha: float, x: Array) -> None:
    """``out += alpha * x`` in one pass on the GPU (BLAS's ``axpy``).

    Args:
        out: a float32 or float64 GPU array, updated in place.
        alpha: a real number, converted to ``out``'s dtype.
        x: a GPU array of ``out``'s dtype broadcasting to ``out.shape``.

    Raises:
        ShapeError, DTypeError: as :func:`addmul`.
    """
    _check_float("axpy", out)
    if out.size and _flat_ok(out, x):
        blocks, threads = _launch(out.size)
        _K["axpy"][blocks, threads](out.reshape(-1), out.dtype.type(alpha), x.reshape(-1))
        return
    _check_broadcast("axpy", out, x)
    out += out.dtype.type(alpha) * x


def sgd_step(
    p: Array,
    g: Array,
    buf: Array | None,
    lr: float,
    momentum: float,
    dampening: float,
    weight_decay: float,
    nesterov: bool,
    first: bool,
) -> None:
    """One SGD update of ``p`` in place on the GPU: the CPU kernel's formula
    (:func:`gradtape.devices.kernels.optim.sgd_step`, PyTorch's ``torch.optim.SGD``) in one
    pass: ``d = g + weight_decay * p``; with momentum ``buf = momentum * buf + (1 -
    dampening) * d`` (``buf = d`` on the first step), then ``d = d + momentum * buf``
    (Nesterov) or ``buf``; ``p -= lr * d``. The scalars are rounded to ``p``'s dtype first, as
    on the CPU, so float32 parameters get the CPU's float32 arithmetic.

    Args:
        p, g: the parameter and its gradient, GPU arrays of one shape and float dtype.
        buf: the momentum buffer (``p``'s shape and dtype), or ``None`` without momentum.

    Raises:
        ShapeError, DTypeError: the arrays differ in shape or dtype.
    """
    _check_float("sgd_step", p)
    b = buf if buf is not None else g  # never read without momentum (not p: no array passed twice)
    if not _flat_ok(p, g, b):
        raise ShapeError(f"sgd_step: parameter {p.shape}, gradient {g.shape} and buffer {b.shape} must match")
    t = p.dtype.type
    blocks, threads = _launch(p.size)
    _K["sgd_step"][blocks, threads](
        p.reshape(-1), g.reshape(-1), b.reshape(-1), t(lr), t(weight_decay), t(momentum), t(1) - t(dampening),
        int(nesterov), int(first), int(buf is not None),
    )  # fmt: skip


def adam_step(
    p: Array,
    g: Array,
    m: Array,
    v: Array,
    vmax: Array | None,
    step_size: float,
    beta1: float,
    beta2: float,
    eps: float,
    wd: float,
    decay: float,
    bc2_sqrt: float,
) -> None:
    """One Adam/AdamW update of ``p`` in place on the GPU, in one pass: the CPU kernel's
    formula (:func:`gradtape.devices.kernels.optim.adam_step`: Kingma & Ba 2015, Loshchilov &
    Hutter 2019; AMSGrad with ``vmax``) with the scalars :func:`~gradtape.devices.kernels.optim._adam_apply`
    derives (``step_size = lr / (1 - beta1**t)``, ``bc2_sqrt = sqrt(1 - beta2**t)``, ``decay``
    and ``wd`` for the decoupled or coupled weight decay), each rounded to ``p``'s dtype as on
    the CPU.

    Args:
        p, g, m, v: parameter, gradient and the two moment buffers: GPU arrays of one shape
            and float dtype. ``vmax``: AMSGrad's running maximum, or ``None``.

    Raises:
        ShapeError, DTypeError: the arrays differ in shape or dtype.
    """
    _check_float("adam_step", p)
    vm = vmax if vmax is not None else g  # never read or written without AMSGrad
    if not _flat_ok(p, g, m, v, vm):
        raise ShapeError(
            f"adam_step: parameter {p.shape}, gradient {g.shape} and moments {m.shape}, {v.shape} must match"
        )
    t = p.dtype.type
    one = t(1)
    blocks, threads = _launch(p.size)
    kernel = _K["adam_step"]
    kernel[blocks, threads](
        p.reshape(-1), g.reshape(-1), m.reshape(-1), v.reshape(-1), vm.reshape(-1),
        one - t(beta1), t(beta2), one - t(beta2), t(eps), t(wd), t(decay), t(step_size), t(bc2_sqrt),
        int(vmax is not None),
    )  # fmt: skip


# ----- forwards of the activations whose CPU kernels are numba's (array expressions on CuPy) --


def _special() -> Any:
    """CuPy's ``cupyx.scipy.special`` (erf, erfc)."""
    from cupyx.scipy import special

    return special


def relu(x: Array) -> Array:
    """``max(x, 0)`` on the GPU, NaN propagating (the CPU kernel's rule)."""
    return np.maximum(x, x.dtype.type(0))


def sigmoid(x: Array) -> Array:
    """``1 / (1 + exp(-x))`` on the GPU, the CPU kernel's stable form: ``e = exp(-|x|)``, then
    ``1 / (1 + e)`` where ``x >= 0`` and ``e / (1 + e)`` elsewhere."""
    e = np.exp(-np.abs(x))
    one = x.dtype.type(1)
    return np.where(x >= 0, one / (one + e), e / (one + e))


def erf(x: Array, complement: bool = False) -> Array:
    """``erf(x)`` (or ``erfc(x)``) on the GPU (CuPy's ``cupyx.scipy.special``)."""
    sp = _special()
    return sp.erfc(x) if complement else sp.erf(x)


def gelu(x: Array) -> tuple[Array, Array]:
    """Exact GELU ``(x * Phi(x), Phi(x))``, ``Phi(x) = erfc(-x / sqrt(2)) / 2``, on the GPU."""
    t = x.dtype.type
    cdf = _special().erfc(x * t(-0.7071067811865476)) * t(0.5)
    return x * cdf, cdf


def gelu_tanh(x: Array) -> tuple[Array, Array]:
    """GELU's tanh approximation ``(x * s, s)``, ``s = sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3))``,
    on the GPU (the CPU kernel's form)."""
    t = x.dtype.type
    s = sigmoid(t(2 * 0.7978845608028654) * (x + t(0.044715) * x * x * x))
    return x * s, s


def softplus(x: Array, beta: float, threshold: float) -> tuple[Array, Array]:
    """PyTorch's softplus ``(y, dy/dx)`` on the GPU: ``y = x`` where ``beta x > threshold``,
    else ``(log1p(exp(-|z|)) + max(z, 0)) / beta`` with ``z = beta x``."""
    t = x.dtype.type
    z = x * t(beta)
    e = np.exp(-np.abs(z))
    lin = z > t(threshold)
    y = np.where(lin, x, (np.log1p(e) + np.maximum(z, t(0))) / t(beta))
    s = np.where(lin, t(1), np.where(z >= 0, t(1) / (t(1) + e), e / (t(1) + e)))
    return y, s


# ----- softmax cross-entropy with class indices (array expressions on CuPy) ---------------


def cross_entropy_forward(x: Array, t: Array) -> tuple[Array, Array]:
    """The GPU's :func:`gradtape.devices.kernels.softmax.cross_entropy_forward`: logits ``x``
    ``(N, C)`` and class indices ``t`` ``(N,)`` give ``(sum_n log(sum_j exp(z[n, j])) - z[n,
    t[n]], softmax(x))`` with ``z = x - rowmax(x)``. The loss is a 0-d float64 GPU array (no
    wait for the GPU); the softmax a new array of ``x``'s dtype. The CPU wrapper checked the
    shapes, dtypes and class indices.
    """
    rows = _arrays.arange(x.shape[0], t)
    z = x - x.max(axis=1, keepdims=True)
    picked = z[rows, t]
    p = np.exp(z)
    s = p.sum(axis=1, keepdims=True)
    p /= s
    loss = (np.log(s[:, 0]).astype(np.float64) - picked.astype(np.float64)).sum()
    return loss, p


def cross_entropy_backward(p: Array, t: Array, k: float) -> Array:
    """``(softmax - onehot(t)) * k`` written over ``p`` and returned, on the GPU."""
    p[_arrays.arange(p.shape[0], t), t] -= p.dtype.type(1)
    p *= p.dtype.type(k)
    return p


# ----- layer norm / RMS norm over the trailing dims (array expressions on CuPy) ---------


def norm_forward(x: Array, k: int, w: Array | None, b: Array | None, eps: float, centered: bool) -> tuple[Array, ...]:
    """The GPU's :func:`gradtape.devices.kernels.norm.norm_forward`: ``(y, mean, rstd)`` with
    ``mu = mean(x)`` over the last ``k`` dims (0 if not ``centered``),
    ``rstd = 1 / sqrt(mean((x - mu)**2) + eps)``, ``y = (x - mu) * rstd * w + b``."""
    axes = tuple(range(x.ndim - k, x.ndim))
    t = x.dtype.type
    mean = x.mean(axis=axes, keepdims=True) if centered else _arrays.zeros(x.shape[: x.ndim - k] + (1,) * k, x.dtype, x)
    xc = x - mean
    rstd = t(1) / np.sqrt((xc * xc).mean(axis=axes, keepdims=True) + t(eps))
    y = xc * rstd
    if w is not None:
        y *= w
    if b is not None:
        y += b
    lead = x.shape[: x.ndim - k]
    return y, mean.reshape(lead), rstd.reshape(lead)


def norm_backward(
    g: Array,
    x: Array,
    k: int,
    w: Array | None,
    mean: Array,
    rstd: Array,
    centered: bool,
    need_dx: bool = True,
    need_dw: bool = True,
    need_db: bool = True,
) -> tuple[Array | None, Array | None, Array | None]:
    """The GPU's :func:`gradtape.devices.kernels.norm.norm_backward`: ``x_hat = (x - mean) *
    rstd``, ``gw = g * w``, ``dx = rstd * (gw - mean(gw) - x_hat * mean(gw * x_hat))`` (no
    ``mean(gw)`` term if not ``centered``), ``dw = sum(g * x_hat)``, ``db = sum(g)`` over the
    leading dims."""
    axes = tuple(range(x.ndim - k, x.ndim))
    lead_axes = tuple(range(x.ndim - k))
    bshape = mean.shape + (1,) * k
    m, r = mean.reshape(bshape), rstd.reshape(bshape)
    xh = (x - m) * r
    dx = dw = db = None
    if need_dx:
        gw = g * w if w is not None else g
        inner = gw - xh * (gw * xh).mean(axis=axes, keepdims=True)
        if centered:
            inner = inner - gw.mean(axis=axes, keepdims=True)
        dx = r * inner
    if need_dw:
        dw = (g * xh).sum(axis=lead_axes)
    if need_db:
        db = g.sum(axis=lead_axes)
    return dx, dw, db


# ----- attention's masked softmax (array expressions on CuPy) -----------------------------


def attention_softmax(p: Array, mask: Array | None, causal: bool, scale: float, nan_rows: bool = False) -> Array:
    """The GPU's :func:`gradtape.devices.kernels.attention.attention_softmax`, in place on the
    4-D scores ``p``: ``softmax_j(scale * p + mask)`` (a bool mask blocks where ``False``,
    ``causal`` blocks keys ``j > i``), probabilities below the dtype's ``tiny`` written as 0,
    rows with every key blocked 0 (NaN with ``nan_rows``), a row holding NaN or ``+inf`` NaN."""
    t = p.dtype.type
    neg = t(-np.inf)
    z = p * t(scale)
    if mask is not None:
        z = np.where(mask, z, neg) if mask.dtype == np.bool_ else z + mask
    if causal:
        n_q, n_k = p.shape[-2], p.shape[-1]
        blocked = _arrays.arange(n_k, p)[None, :] > _arrays.arange(n_q, p)[:, None]
        z = np.where(blocked, neg, z)
    m = z.max(axis=-1, keepdims=True)
    empty = m == neg
    e = np.exp(z - np.where(empty, t(0), m))
    probs = e / e.sum(axis=-1, keepdims=True)
    probs = np.where(probs < t(np.finfo(p.dtype).tiny), t(0), probs)
    probs = np.where(empty, t(np.nan) if nan_rows else t(0), probs)
    p[...] = probs
    return p


def attention_softmax_backward(d: Array, p: Array, drop: Array | None, causal: bool, scale: float) -> Array:
    """The GPU's :func:`gradtape.devices.kernels.attention.attention_softmax_backward`, in place
    on ``d = dP``: ``d = scale * p * (d' - rowsum(d' * p))`` with ``d' = d * drop``, values
    below the dtype's ``tiny`` in magnitude written as 0."""
    t = p.dtype.type
    dd = d * drop if drop is not None else d
    r = t(scale) * p * (dd - (dd * p).sum(axis=-1, keepdims=True))
    d[...] = np.where(np.abs(r) < t(np.finfo(p.dtype).tiny), t(0), r)
    return d


# ----- 2-D convolution (im2col by strided slices, products on cuBLAS) ----------------------


def _conv_taps(kh: int, kw: int, stride: tuple[int, int], dilation: tuple[int, int], out_hw: tuple[int, int]) -> Any:
    """For each tap ``(a, b)`` of the kernel, the slices of the padded input it reads for every
    output position: rows ``a*dh + i*sh`` and columns ``b*dw + j*sw``."""
    (sh, sw), (dh, dw), (oh, ow) = stride, dilation, out_hw
    for a in range(kh):
        for b in range(kw):
            rows = slice(a * dh, a * dh + sh * (oh - 1) + 1, sh)
            cols = slice(b * dw, b * dw + sw * (ow - 1) + 1, sw)
            yield a, b, rows, cols


def _im2col(xp: Array, kh: int, kw: int, stride: Any, dilation: Any, out_hw: Any) -> Array:
    """The columns ``(N, C, KH, KW, OH, OW)`` of the padded input ``xp (N, C, Hp, Wp)``: one
    strided copy per kernel tap."""
    n, c = xp.shape[:2]
    cols = _arrays.empty((n, c, kh, kw, *out_hw), xp.dtype, xp)
    for a, b, rows, cs in _conv_taps(kh, kw, stride, dilation, out_hw):
        cols[:, :, a, b] = xp[:, :, rows, cs]
    return cols


def _pad2(x: Array, pads: Any) -> Array:
    return np.pad(x, [(0, 0), (0, 0), pads[0], pads[1]]) if any(pads[0] + pads[1]) else x


def conv_forward(
    x: Array, w: Array, stride: Any, pads: Any, dilation: Any, groups: int, out_hw: Any, bias: Array | None
) -> Array:
    """The GPU's :func:`gradtape.devices.kernels.conv.forward`: the cross-correlation of ``x (N,
    C, H, W)`` zero padded by ``pads`` with ``w (O, C/G, KH, KW)`` plus ``bias``, as im2col
    columns times the weight, one batched cuBLAS product over samples and groups."""
    n = x.shape[0]
    o, cg, kh, kw = w.shape
    p = out_hw[0] * out_hw[1]
    cols = _im2col(_pad2(x, pads), kh, kw, stride, dilation, out_hw).reshape(n, groups, cg * kh * kw, p)
    out = np.matmul(w.reshape(groups, o // groups, cg * kh * kw), cols).reshape(n, o, *out_hw)
    if bias is not None:
        out += bias.reshape(1, o, 1, 1)
    return out


def conv_backward(
    g: Array,
    x: Array,
    w: Array,
    stride: Any,
    pads: Any,
    dilation: Any,
    groups: int,
    want_x: bool,
    want_w: bool,
) -> tuple[Array | None, Array | None]:
    """The GPU's :func:`gradtape.devices.kernels.conv.backward`: ``gx`` as the weight's
    transpose times ``g``, its columns added back onto the padded input tap by tap (col2im)
    and the padding cut off; ``gw`` as ``g`` times the input's columns, summed over samples.
    ``x`` is read only for ``gw`` (``backward_input`` passes a placeholder of its shape)."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh, ow = g.shape[2], g.shape[3]
    kg, og, p = cg * kh * kw, o // groups, oh * ow
    g4 = g.reshape(n, groups, og, p)
    gx = gw = None
    if want_w:
        cols = _im2col(_pad2(x, pads), kh, kw, stride, dilation, (oh, ow)).reshape(n, groups, kg, p)
        gw = np.matmul(g4, cols.swapaxes(-1, -2)).sum(axis=0).reshape(w.shape)
    if want_x:
        dcols = np.matmul(w.reshape(groups, og, kg).swapaxes(-1, -2), g4).reshape(n, c, kh, kw, oh, ow)
        (pt, pb), (pl, pr) = pads
        gxp = _arrays.zeros((n, c, h + pt + pb, wd + pl + pr), g.dtype, g)
        for a, b, rows, cs in _conv_taps(kh, kw, stride, dilation, (oh, ow)):
            gxp[:, :, rows, cs] += dcols[:, :, a, b]
        gx = gxp[:, :, pt : pt + h, pl : pl + wd]
        if any(pads[0] + pads[1]):
            gx = _arrays.contiguous(gx)
    return gx, gw


def bias_grad(g: Array) -> Array:
    """A convolution bias's gradient on the GPU: ``g (N, O, ...)`` summed over every axis but 1."""
    return g.sum(axis=(0, *range(2, g.ndim)))


# ----- pooling and resampling of planes (P, H, W) ------------------------------------------


def _pool_taps(k: Any, stride: Any, padding: Any, out_hw: Any, in_hw: Any, like: Array) -> Any:
    """For each tap ``(a, b)`` of a pooling window, in the CPU kernels' scan order: the input
    rows and columns it reads for every output position (clipped into the input), and whether
    each is inside the input (a padded position is never read)."""
    rows0 = _arrays.arange(out_hw[0], like) * stride[0] - padding[0]
    cols0 = _arrays.arange(out_hw[1], like) * stride[1] - padding[1]
    for a in range(k[0]):
        r = rows0 + a
        vr = (r >= 0) & (r < in_hw[0])
        for b in range(k[1]):
            c = cols0 + b
            vc = (c >= 0) & (c < in_hw[1])
            yield np.clip(r, 0, in_hw[0] - 1), np.clip(c, 0, in_hw[1] - 1), vr[:, None] & vc[None, :]


def pool_maxmin(x: Array, k: Any, stride: Any, padding: Any, out_hw: Any, is_min: bool) -> tuple[Array, Array]:
    """The GPU's :func:`gradtape.devices.kernels.pool.pool_maxmin`: ``(out, idx)`` for planes
    ``x (P, H, W)``, the CPU kernel's rule: in scan order, the first element of the window,
    then any strictly larger (smaller) value or any NaN replaces it; ``idx`` its flat index
    ``h * W + w`` (int32)."""
    h, w = x.shape[1], x.shape[2]
    best: Any = None
    have: Any = None
    idx: Any = None
    for r, c, valid in _pool_taps(k, stride, padding, out_hw, (h, w), x):
        v = x[:, r[:, None], c[None, :]]
        flat = (r[:, None] * w + c[None, :]).astype(np.int32)
        if best is None:  # the first tap: taken even where padded, replaced by the first valid one
            best, idx, have = v, np.broadcast_to(flat, v.shape), np.broadcast_to(valid, v.shape)
            continue
        better = (v < best) if is_min else (v > best)
        take = valid & (~have | better | (v != v))
        best = np.where(take, v, best)
        idx = np.where(take, flat, idx)
        have = have | valid
    return best, idx.astype(np.int32)


def pool_scatter_add(g: Array, idx: Array, in_hw: Any) -> Array:
    """``(P, H, W)`` zeros with ``g[p, i]`` added at flat index ``idx[p, i]`` (repeats add up)."""
    p = g.shape[0]
    gx = _arrays.zeros((p, in_hw[0] * in_hw[1]), g.dtype, g)
    planes = _arrays.arange(p, g)[:, None]
    add_at(gx, (planes, idx.reshape(p, -1)), g.reshape(p, -1))
    return gx.reshape(p, *in_hw)


def pool_avg(x: Array, k: Any, stride: Any, padding: Any, out_hw: Any) -> Array:
    """Average pooling of planes ``x (P, H, W)``, zero padding counted (divisor ``kh * kw``),
    the window's elements added in the CPU kernel's order."""
    h, w = x.shape[1], x.shape[2]
    acc = _arrays.zeros((x.shape[0], *out_hw), x.dtype, x)
    zero = x.dtype.type(0)
    for r, c, valid in _pool_taps(k, stride, padding, out_hw, (h, w), x):
        acc = acc + np.where(valid, x[:, r[:, None], c[None, :]], zero)
    return acc / x.dtype.type(k[0] * k[1])


def pool_avg_backward(g: Array, k: Any, stride: Any, padding: Any, in_hw: Any) -> Array:
    """The gradient ``(P, H, W)`` of :func:`pool_avg`: each output's gradient over ``kh * kw``
    added to its window's inputs."""
    p = g.shape[0]
    gx = _arrays.zeros((p, in_hw[0] * in_hw[1]), g.dtype, g)
    d = g / g.dtype.type(k[0] * k[1])
    planes = _arrays.arange(p, g)[:, None, None]
    zero = g.dtype.type(0)
    for r, c, valid in _pool_taps(k, stride, padding, g.shape[1:], in_hw, g):
        flat = r[:, None] * in_hw[1] + c[None, :]
        add_at(gx, (planes, flat[None]), np.where(valid, d, zero))
    return gx.reshape(p, *in_hw)


def bilinear(x: Array, th: Any, tw: Any) -> Array:
    """Bilinear resampling of planes ``x (P, H, W)`` on the taps ``th = (h0, h1, lh0, lh1)``,
    ``tw``: ``la0 * (lb0 * x[a0, b0] + lb1 * x[a0, b1]) + la1 * (lb0 * x[a1, b0] + lb1 * x[a1, b1])``,
    the CPU kernel's expression."""
    h0, h1, lh0, lh1 = (_arrays.into_memory_of(a, x) for a in th)
    w0, w1, lw0, lw1 = (_arrays.into_memory_of(a, x) for a in tw)
    la0, la1, lb0, lb1 = lh0[:, None], lh1[:, None], lw0[None, :], lw1[None, :]

    def at(r: Array, c: Array) -> Array:
        return x[:, r[:, None], c[None, :]]

    return la0 * (lb0 * at(h0, w0) + lb1 * at(h0, w1)) + la1 * (lb0 * at(h1, w0) + lb1 * at(h1, w1))


def bilinear_backward(g: Array, th: Any, tw: Any, in_hw: Any) -> Array:
    """The gradient ``(P, H, W)`` of :func:`bilinear`: each output gradient spread over its four
    taps with their weights."""
    h0, h1, lh0, lh1 = (_arrays.into_memory_of(a, g) for a in th)
    w0, w1, lw0, lw1 = (_arrays.into_memory_of(a, g) for a in tw)
    gx = _arrays.zeros((g.shape[0], *in_hw), g.dtype, g)
    for r, lr in ((h0, lh0), (h1, lh1)):
        for c, lc in ((w0, lw0), (w1, lw1)):
            key: Any = (slice(None), r[:, None], c[None, :])
            add_at(gx, key, lr[:, None] * lc[None, :] * g)
    return gx


def nearest_backward(g: Array, ih: Array, iw: Array, in_hw: Any) -> Array:
    """The gradient ``(P, H, W)`` of ``x[:, ih[:, None], iw]`` given the output's gradient ``g``."""
    ih, iw = _arrays.into_memory_of(ih, g), _arrays.into_memory_of(iw, g)
    gx = _arrays.zeros((g.shape[0], *in_hw), g.dtype, g)
    key: Any = (slice(None), ih[:, None], iw[None, :])
    add_at(gx, key, g)
    return gx


def channel_affine(y: Array, w: Array | None, b: Array | None) -> None:
    """``y[:, c] = y[:, c] * w[c] + b[c]`` in place on the GPU (a grouped norm's affine)."""
    shape = (1, y.shape[1]) + (1,) * (y.ndim - 2)
    if w is not None:
        y *= w.reshape(shape)
    if b is not None:
        y += b.reshape(shape)


def channel_affine_backward(
    g: Array, x: Array, mean: Array, rstd: Array, need_dw: bool, need_db: bool
) -> tuple[Array | None, Array | None]:
    """The GPU's :func:`gradtape.devices.kernels.norm.channel_affine_backward`: with ``G``
    groups, ``x_hat[n, c] = (x[n, c] - mean[n, c // (C/G)]) * rstd[n, c // (C/G)]``,
    ``dw[c] = sum(g[:, c] * x_hat[:, c])`` and ``db[c] = sum(g[:, c])``."""
    n, c = x.shape[:2]
    groups = mean.shape[1]
    x4 = x.reshape(n, groups, c // groups, -1)
    g4 = g.reshape(n, groups, c // groups, -1)
    dw = db = None
    if need_dw:
        xh = (x4 - mean[:, :, None, None]) * rstd[:, :, None, None]
        dw = (g4 * xh).sum(axis=(0, 3)).reshape(c)
    if need_db:
        db = g4.sum(axis=(0, 3)).reshape(c)
    return dw, db
