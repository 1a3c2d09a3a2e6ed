"""Shape and indexing ops (gradtape.ops.shape, gradtape.ops.indexing): gradients against
finite differences (float64), float32 forward against numpy, accumulation of repeated
reads, copy-on-write of the gradient views they store, tapes of many inputs, the
scatter-add kernel and runtime errors. (The generated overload tables are checked in
test_static.py.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradtape import Cpu, DTypeError, Gradients, NoneTape, ShapeError, Tensor
from gradtape.devices.kernels import scatter as ks
from gradtape.devices.kernels.elementwise import PARALLEL_THRESHOLD
from gradtape.ops import (
    broadcast_to,
    concat,
    expand_dims,
    gather,
    index_select,
    permute,
    reshape,
    roll,
    squeeze,
    stack,
    transpose,
    tril,
    triu,
    unsqueeze,
)
from gradtape.tape import GradientTape
from gradtape.testing import gradcheck

Array = np.ndarray[Any, Any]
T = Tensor[Any, Any]
Fn = Callable[..., Any]

DEV = Cpu(seed=0)
_RNG = np.random.default_rng(4321)


def rnd(*shape: int) -> Array:
    """Standard normal float64 samples."""
    return _RNG.standard_normal(shape)


def nc(arr: Array) -> T:
    """A tensor whose data is the transposed (non-C-contiguous) view of ``arr``."""
    t: T = Tensor(arr.T, DEV)
    assert not t.data.flags.c_contiguous
    return t


# ----- (1) gradcheck in float64 ------------------------------------------------------------

_CASES: list[tuple[str, Fn, list[Any]]] = [
    # reshape
    ("reshape-2x3-3x2", lambda a: a.reshape((3, 2)), [rnd(2, 3)]),
    ("reshape-minus1", lambda a: a.reshape((-1,)), [rnd(2, 3)]),
    ("reshape-int", lambda a: a.reshape(6), [rnd(3, 2)]),
    ("reshape-size1-dims", lambda a: a.reshape((1, 6, 1)), [rnd(2, 3)]),
    ("reshape-infer-middle", lambda a: a.reshape((2, -1, 2)), [rnd(4, 3)]),
    ("reshape-noncontig", lambda a: a.reshape((6,)), [nc(rnd(3, 2))]),
    ("reshape-rank0-to-1", lambda a: a.reshape((1,)), [rnd()]),
    ("reshape-1x1-to-rank0", lambda a: a.reshape(()), [rnd(1, 1)]),
    ("reshape-reused", lambda a: a.reshape((3, 2)) * a.reshape((3, 2)), [rnd(2, 3)]),
    ("reshape-twice", lambda a: a.reshape((6,)).reshape((3, 2)) + a.T, [rnd(2, 3)]),
    # permute / transpose / .T
    ("permute-2d", lambda a: a.permute((1, 0)), [rnd(2, 3)]),
    ("permute-3d", lambda a: a.permute((2, 0, 1)), [rnd(2, 3, 4)]),
    ("permute-negative", lambda a: a.permute((-1, 0, -2)), [rnd(2, 3, 4)]),
    ("permute-size1", lambda a: a.permute((2, 1, 0)), [rnd(1, 3, 1)]),
    ("permute-identity", lambda a: a.permute((0, 1)), [rnd(2, 3)]),
    ("permute-noncontig", lambda a: permute(a, [1, 0]), [nc(rnd(3, 2))]),
    ("permute-rank4", lambda a: a.permute((0, 2, 3, 1)), [rnd(2, 1, 3, 2)]),
    ("transpose-01", lambda a: a.transpose(0, 1), [rnd(2, 3)]),
    ("transpose-neg", lambda a: a.transpose(-1, 0), [rnd(2, 3, 4)]),
    ("transpose-same-axis", lambda a: a.transpose(1, 1), [rnd(2, 3)]),
    ("transpose-noncontig", lambda a: transpose(a, 0, 1), [nc(rnd(3, 2))]),
    ("T", lambda a: a.T, [rnd(2, 3)]),
    ("T-size1", lambda a: a.T, [rnd(1, 4)]),
    ("T-noncontig", lambda a: a.T, [nc(rnd(3, 2))]),
    ("T-plus-self", lambda a: a.T + a, [rnd(3, 3)]),
    ("T-matmul", lambda a: a.T @ a, [rnd(3, 2)]),
    # broadcast_to
    ("broadcast-row", lambda a: a.broadcast_to((2, 3)), [rnd(3)]),
    ("broadcast-col-lead", lambda a: a.broadcast_to((2, 3, 4)), [rnd(3, 1)]),
    ("broadcast-size1", lambda a: a.broadcast_to((5,)), [rnd(1)]),
    ("broadcast-rank0", lambda a: a.broadcast_to((2, 2)), [rnd()]),
    ("broadcast-same", lambda a: broadcast_to(a, (2, 3)), [rnd(2, 3)]),
    ("broadcast-noncontig", lambda a: a.broadcast_to((4, 2, 3)), [nc(rnd(3, 2))]),
    ("broadcast-times-self", lambda a: a.broadcast_to((3, 3)) * a.broadcast_to((3, 3)).T, [rnd(3)]),
    # expand_dims / squeeze
    ("expand-0", lambda a: a.expand_dims(0), [rnd(2, 3)]),
    ("expand-1", lambda a: a.expand_dims(1), [rnd(2, 3)]),
    ("expand-neg", lambda a: a.expand_dims(-1), [rnd(2, 3)]),
    ("expand-tuple", lambda a: expand_dims(a, (0, 2)), [rnd(2, 3)]),
    ("expand-rank0", lambda a: a.expand_dims(0), [rnd()]),
    ("unsqueeze", lambda a: a.unsqueeze(1), [nc(rnd(3, 2))]),
    ("squeeze-all", lambda a: a.squeeze(), [rnd(1, 3, 1)]),
    ("squeeze-axis0", lambda a: a.squeeze(0), [rnd(1, 3, 1)]),
    ("squeeze-neg", lambda a: a.squeeze(-1), [rnd(1, 3, 1)]),
    ("squeeze-tuple", lambda a: squeeze(a, (0, 2)), [rnd(1, 3, 1)]),
    ("squeeze-to-rank0", lambda a: a.squeeze(), [rnd(1, 1)]),
    ("squeeze-noncontig", lambda a: a.squeeze(1), [nc(rnd(3, 1, 2))]),
    ("expand-squeeze", lambda a: a.expand_dims(0).squeeze(0) * a, [rnd(2, 3)]),
    # concat / stack
    ("concat-axis0", lambda a, b: concat([a, b]), [rnd(2, 3), rnd(1, 3)]),
    ("concat-axis1", lambda a, b: concat([a, b], axis=1), [rnd(2, 3), rnd(2, 1)]),
    ("concat-neg-axis", lambda a, b, c: concat((a, b, c), axis=-1), [rnd(2, 1, 2), rnd(2, 1, 3), rnd(2, 1, 1)]),
    ("concat-same-tensor", lambda a: concat([a, a, a], axis=0), [rnd(2, 3)]),
    ("concat-noncontig", lambda a, b: concat([a, b], axis=1), [nc(rnd(3, 2)), rnd(2, 2)]),
    ("concat-one", lambda a: concat([a]), [rnd(3)]),
    ("concat-of-views", lambda a: concat([a.T, a.T[::-1]], axis=0), [rnd(2, 3)]),
    ("stack-axis0", lambda a, b: stack([a, b]), [rnd(2, 3), rnd(2, 3)]),
    ("stack-axis1", lambda a, b: stack([a, b], axis=1), [rnd(2, 3), rnd(2, 3)]),
    ("stack-neg-axis", lambda a, b: stack((a, b), axis=-1), [rnd(2, 3), rnd(2, 3)]),
    ("stack-rank0", lambda a, b: stack([a, b, a]), [rnd(), rnd()]),
    ("stack-same-tensor", lambda a: stack([a, a], axis=2), [rnd(1, 3)]),
    ("stack-noncontig", lambda a, b: stack([a, b]), [nc(rnd(3, 2)), rnd(2, 3)]),
    # getitem
    ("getitem-int", lambda a: a[1], [rnd(2, 3)]),
    ("getitem-neg-int", lambda a: a[-1], [rnd(2, 3)]),
    ("getitem-col", lambda a: a[:, 2], [rnd(2, 3)]),
    ("getitem-scalar", lambda a: a[1, 2], [rnd(2, 3)]),
    ("getitem-np-int", lambda a: a[np.int64(0), np.int32(-1)], [rnd(2, 3)]),
    ("getitem-step", lambda a: a[::-2, 1:], [rnd(5, 3)]),
    ("getitem-none", lambda a: a[None, :, None], [rnd(2, 3)]),
    ("getitem-ellipsis", lambda a: a[..., 1], [rnd(2, 3, 4)]),
    ("getitem-ellipsis-mid", lambda a: a[0, ..., None, 1:3], [rnd(2, 3, 4)]),
    ("getitem-empty-slice", lambda a: a[2:2] * 1.0 + 0.0, [rnd(3, 2)]),
    ("getitem-all", lambda a: a[...], [rnd(2, 3)]),
    ("getitem-noncontig", lambda a: a[1:, 0], [nc(rnd(3, 3))]),
    ("getitem-twice-overlap", lambda a: a[0:2] + a[1:3], [rnd(3, 2)]),
    ("getitem-same-twice", lambda a: a[0] * a[0], [rnd(2, 3)]),
    ("getitem-of-getitem", lambda a: a[1:][0][::2], [rnd(3, 4)]),
    ("getitem-rank1-scalar", lambda a: a[2] * a, [rnd(4)]),
    ("getitem-after-T", lambda a: a.T[0] + a[:, 1], [rnd(3, 3)]),
    # gather / index_select
    ("gather-rows", lambda a: a.gather([2, 0]), [rnd(3, 2)]),
    ("gather-repeated", lambda a: a.gather([1, 1, 0, 1]), [rnd(3, 2)]),
    ("gather-axis1", lambda a: a.gather([2, 2, 0], axis=1), [rnd(2, 3)]),
    ("gather-neg-axis", lambda a: gather(a, [1, 0, 1], axis=-1), [rnd(2, 2, 3)]),
    ("gather-2d-indices", lambda a: a.gather(np.array([[0, 1], [1, 1], [2, 0]]), axis=1), [rnd(2, 3, 2)]),
    ("gather-neg-indices", lambda a: a.gather([-1, 0, -1]), [rnd(3, 2)]),
    ("gather-int", lambda a: a.gather(1, axis=1), [rnd(2, 3)]),
    ("gather-rank1", lambda a: a.gather(np.array([3, 3, 0], dtype=np.uint8)), [rnd(4)]),
    ("gather-noncontig", lambda a: a.gather([1, 1], axis=0), [nc(rnd(3, 2))]),
    ("gather-twice", lambda a: a.gather([0, 1]) * a.gather([1, 1]), [rnd(2, 2)]),
    ("index_select", lambda a: index_select(a, [1, 0, 1], axis=1), [rnd(2, 3)]),
    ("index_select-repeated", lambda a: a.index_select(np.array([0, 0, 0]), 0), [rnd(2, 3)]),
    # roll
    ("roll-axis0", lambda a: a.roll(1, axis=0), [rnd(3, 2)]),
    ("roll-flat", lambda a: a.roll(-2), [rnd(2, 3)]),
    ("roll-tuple", lambda a: roll(a, (1, -1), axis=(0, 1)), [rnd(3, 4)]),
    ("roll-neg-axis", lambda a: a.roll(5, axis=-1), [rnd(2, 3)]),
    ("roll-noncontig", lambda a: a.roll(1, axis=1), [nc(rnd(3, 2))]),
    # tril / triu
    ("tril", lambda a: a.tril(), [rnd(3, 3)]),
    ("tril-k1", lambda a: tril(a, 1), [rnd(3, 4)]),
    ("triu", lambda a: a.triu(), [rnd(3, 3)]),
    ("triu-kneg", lambda a: triu(a, -1), [rnd(4, 3)]),
    ("tril-batch", lambda a: a.tril(), [rnd(2, 3, 3)]),
    ("triu-noncontig", lambda a: a.triu(1), [nc(rnd(3, 3))]),
    ("tril-plus-triu", lambda a: a.tril() + a.triu(1) * a, [rnd(3, 3)]),
    # compositions through other ops (aliased gradient buffers meet fused kernels)
    ("reshape-relu-reused", lambda a: (a.reshape((6,)).exp() + a.reshape((6,))).reshape((3, 2)), [rnd(2, 3)]),
    ("permute-mul-self", lambda a: a.permute((1, 0)) * a.T, [rnd(2, 3)]),
    ("concat-matmul", lambda a, b: concat([a, b], axis=1) @ concat([a, b], axis=1).T, [rnd(2, 2), rnd(2, 1)]),
    ("stack-sum-axis", lambda a, b: stack([a, b], 1).sum(axis=1), [rnd(2, 3), rnd(2, 3)]),
]


@pytest.mark.parametrize(("fn", "inputs"), [pytest.param(f, i, id=n) for n, f, i in _CASES])
def test_gradcheck(fn: Fn, inputs: list[Any]) -> None:
    """The tape's gradient matches central finite differences in float64."""
    assert gradcheck(fn, inputs) is True


# ----- (2) float32 forward against numpy ---------------------------------------------------


def _f32(*shape: int) -> Array:
    return np.asarray(_RNG.standard_normal(shape), dtype=np.float32)


_FORWARD: list[tuple[str, Fn, Fn, list[Array]]] = [
    ("reshape", lambda a: a.reshape((3, -1)), lambda a: a.reshape(3, -1), [_f32(2, 3)]),
    ("permute", lambda a: a.permute((2, 0, 1)), lambda a: a.transpose(2, 0, 1), [_f32(2, 3, 4)]),
    ("transpose", lambda a: a.transpose(-1, 0), lambda a: np.swapaxes(a, -1, 0), [_f32(2, 3, 4)]),
    ("T", lambda a: a.T, lambda a: a.T, [_f32(2, 3)]),
    ("broadcast_to", lambda a: a.broadcast_to((2, 4, 3)), lambda a: np.broadcast_to(a, (2, 4, 3)), [_f32(4, 1)]),
    ("expand_dims", lambda a: a.expand_dims(-2), lambda a: np.expand_dims(a, -2), [_f32(2, 3)]),
    ("squeeze", lambda a: a.squeeze(), lambda a: np.squeeze(a), [_f32(1, 3, 1)]),
    ("concat", lambda a, b: concat([a, b], 1), lambda a, b: np.concatenate([a, b], 1), [_f32(2, 3), _f32(2, 2)]),
    ("stack", lambda a, b: stack([a, b], -1), lambda a, b: np.stack([a, b], -1), [_f32(2, 3), _f32(2, 3)]),
    ("getitem", lambda a: a[1:, None, ::-1], lambda a: a[1:, None, ::-1], [_f32(3, 4)]),
    ("getitem-scalar", lambda a: a[-1, 2], lambda a: np.asarray(a[-1, 2]), [_f32(3, 4)]),
    ("gather", lambda a: a.gather([[2, 0], [0, 0]], 1), lambda a: np.take(a, [[2, 0], [0, 0]], 1), [_f32(2, 3)]),
    ("index_select", lambda a: a.index_select([1, 1], 0), lambda a: a[[1, 1]], [_f32(2, 3)]),
    ("roll", lambda a: a.roll((1, 2), (0, 1)), lambda a: np.roll(a, (1, 2), (0, 1)), [_f32(3, 4)]),
    ("roll-flat", lambda a: a.roll(-1), lambda a: np.roll(a, -1), [_f32(3, 4)]),
    ("tril", lambda a: a.tril(-1), lambda a: np.tril(a, -1), [_f32(2, 4, 3)]),
    ("triu", lambda a: a.triu(2), lambda a: np.triu(a, 2), [_f32(4, 5)]),
]


@pytest.mark.parametrize("noncontig", [False, True], ids=["contig", "noncontig"])
@pytest.mark.parametrize(("fn", "np_fn", "arrays"), [pytest.param(f, g, a, id=n) for n, f, g, a in _FORWARD])
def test_forward_float32_matches_numpy(fn: Fn, np_fn: Fn, arrays: list[Array], noncontig: bool) -> None:
    """The float32 forward equals the numpy expression exactly and stays float32 (also for views)."""
    if noncontig:
        tensors: list[T] = [Tensor(np.ascontiguousarray(x.T).T, DEV) for x in arrays]
    else:
        tensors = [DEV.tensor(x) for x in arrays]
    out = fn(*tensors)
    want = np.asarray(np_fn(*arrays))
    assert out.dtype == np.float32
    assert out.shape == want.shape
    assert isinstance(out.numpy(), np.ndarray)
    np.testing.assert_array_equal(out.numpy(), want)


def test_view_ops_do_not_copy_the_data() -> None:
    """reshape (of a contiguous tensor), permute, T, expand_dims, squeeze and basic indexing
    give views of the input's data, as numpy does."""
    x = DEV.tensor(_f32(2, 3))
    for y in (x.reshape((3, 2)), x.T, x.permute((1, 0)), x.expand_dims(0), x[1], x[:, ::2], x.broadcast_to((4, 2, 3))):
        assert np.shares_memory(y.numpy(), x.numpy())
    assert np.shares_memory(x.expand_dims(0).squeeze(0).numpy(), x.numpy())


def test_tensor_iterates_over_its_first_axis() -> None:
    """``__getitem__`` raising IndexError past the end makes ``for row in t`` work."""
    x = DEV.tensor(np.arange(6, dtype=np.float32).reshape(3, 2))
    rows = list(cast(Any, x))  # the legacy iteration protocol: mypy sees no __iter__
    assert len(rows) == 3
    np.testing.assert_array_equal(rows[2].numpy(), [4.0, 5.0])


# ----- (3) gradients that accumulate, hand-computed (float32) -------------------------------


def _grads(fn: Fn, *inputs: Array | T) -> tuple[list[Array], Gradients]:
    xs = [x if isinstance(x, Tensor) else DEV.tensor(x) for x in inputs]
    store = Gradients.leaky()
    grads = fn(*(x.trace(store) for x in xs)).backward()
    return [np.asarray(grads.get(x).numpy()) for x in xs], grads


def test_indexing_twice_accumulates() -> None:
    """x[0] + x[0] + x[1:] * 2: row 0 gets 2, the others 2, and overlapping slices add up."""
    x = np.zeros((3, 2), np.float32)
    (g,), _ = _grads(lambda a: (a[0] + a[0]).sum() + (a[1:] * 2.0).sum() + a[0:2].sum() + a[-1, -1], x)
    np.testing.assert_array_equal(g, [[3, 3], [3, 3], [2, 3]])


def test_gather_repeated_indices_accumulate() -> None:
    """An index gathered m times gets m times the upstream gradient (np.add.at semantics)."""
    x = np.zeros((4, 3), np.float32)
    w = DEV.tensor(np.arange(15, dtype=np.float32).reshape(5, 3))
    (g,), _ = _grads(lambda a: (a.gather([1, 3, 1, 1, -1]) * w).sum(), x)
    want = np.zeros((4, 3), np.float32)
    np.add.at(want, [1, 3, 1, 1, 3], w.numpy())
    np.testing.assert_array_equal(g, want)
    (g,), _ = _grads(lambda a: a.index_select([2, 2, 0], axis=1).sum() + a.gather(2, axis=1).sum(), x)
    np.testing.assert_array_equal(g, np.tile([1.0, 0.0, 3.0], (4, 1)))


def test_concat_and_stack_of_one_tensor_accumulate() -> None:
    """concat([a, a]) and stack([a, a, a]) give a gradient of 2 and 3 per element."""
    x = np.ones((2, 2), np.float32)
    (g,), _ = _grads(lambda a: concat([a, a], axis=1).sum(), x)
    np.testing.assert_array_equal(g, np.full((2, 2), 2.0))
    (g,), _ = _grads(lambda a: stack([a, a, a], axis=1).sum(), x)
    np.testing.assert_array_equal(g, np.full((2, 2), 3.0))


def test_broadcast_to_grad_sums_the_broadcast_dims() -> None:
    """(3, 1) broadcast to (2, 3, 4): each element's gradient is 2 * 4 = 8."""
    (g,), _ = _grads(lambda a: a.broadcast_to((2, 3, 4)).sum(), np.ones((3, 1), np.float32))
    np.testing.assert_array_equal(g, np.full((3, 1), 8.0))


# ----- (4) gradient buffers: views are copy-on-write, scatters never alias -----------------


@pytest.mark.parametrize(
    "op",
    [
        lambda a: a.reshape((6,)),
        lambda a: a.T,
        lambda a: a.permute((1, 0)),
        lambda a: a.expand_dims(0),
        lambda a: a[None].squeeze(0),
        lambda a: a.broadcast_to((2, 3)),
        lambda a: concat([a, a], axis=0),
        lambda a: stack([a], axis=1),
    ],
    ids=["reshape", "T", "permute", "expand_dims", "squeeze", "broadcast_same", "concat", "stack"],
)
def test_view_gradients_are_copy_on_write(op: Fn) -> None:
    """An input whose gradient is a view of the output's: writing into one through the store
    leaves the other unchanged."""
    store = Gradients.leaky()
    x = DEV.tensor(_f32(2, 3)).trace(store)
    y = op(x)
    w = DEV.tensor(_f32(*y.shape))
    grads = (y * w).sum().backward()
    gy_before = np.array(grads.get(y).numpy())
    gx_before = np.array(grads.get(x).numpy())
    gx = grads.get_or_alloc_mut(x)
    gx += 100.0
    np.testing.assert_array_equal(grads.get(y).numpy(), gy_before)
    gy = grads.get_or_alloc_mut(y)
    gy -= 7.0
    np.testing.assert_array_equal(grads.get(x).numpy(), gx_before + 100.0)


@pytest.mark.parametrize("op", [lambda a: a[1:], lambda a: a[...], lambda a: a.gather([0, 1])])
def test_scatter_gradients_never_alias_the_output_gradient(op: Fn) -> None:
    """getitem and gather accumulate into a buffer the input owns, even for a full slice."""
    store = Gradients.leaky()
    x = DEV.tensor(_f32(2, 3)).trace(store)
    y = op(x)
    grads = y.sum().backward()
    gx, gy = grads.get_ref_checked(x), grads.get_ref_checked(y)
    assert gx is not None and gy is not None
    assert not np.shares_memory(gx, gy)


def test_leaky_store_accumulates_across_passes() -> None:
    """Two backward passes of reshape/getitem/gather into one leaky store add up."""
    store = Gradients.leaky()
    x = DEV.tensor(np.zeros((2, 3), np.float32))
    for _ in range(2):
        t = x.trace(store)
        (t.reshape((3, 2)).sum() + t[0].sum() + t.gather([1, 1]).sum()).backward()
    np.testing.assert_array_equal(store.get(x).numpy(), [[4, 4, 4], [6, 6, 6]])


# ----- (5) tapes of many inputs ------------------------------------------------------------


def test_concat_output_owns_a_tape_if_any_input_does() -> None:
    """concat/stack of an untraced and a traced tensor record; of untraced ones they do not."""
    a, b = DEV.tensor(_f32(2, 3)), DEV.tensor(_f32(2, 3))
    plain = concat([a, b])
    assert isinstance(plain.tape, NoneTape)
    bt = b.leaky_trace()
    for out in (concat([a, bt]), stack((bt, a)), concat((a, a, bt))):
        assert isinstance(out.tape, GradientTape)
    grads = concat((a, bt)).sum().backward()  # a tuple: typed as owning a tape (a mixed list: Tape)
    np.testing.assert_array_equal(grads.get(b).numpy(), np.ones((2, 3)))


def test_concat_merges_two_tapes() -> None:
    """Inputs traced on two tapes: the output's tape is the merged one and fills both gradients."""
    s1, s2 = Gradients.leaky(), Gradients.leaky()
    a, b = DEV.tensor(_f32(2, 3)), DEV.tensor(_f32(1, 3))
    grads = (concat([a.trace(s1) * 2.0, b.trace(s2)]) * 3.0).sum().backward()
    np.testing.assert_array_equal(grads.get(a).numpy(), np.full((2, 3), 6.0))
    np.testing.assert_array_equal(grads.get(b).numpy(), np.full((1, 3), 3.0))


def test_untraced_ops_record_nothing() -> None:
    """Every op on an untraced tensor gives an untraced tensor."""
    x = DEV.tensor(_f32(3, 3))
    outs: list[T] = [x.reshape((9,)), x.T, x[0], x.gather([0]), x.roll(1), x.tril(), x.squeeze(), x.unsqueeze(0)]
    assert all(isinstance(o.tape, NoneTape) for o in outs)


# ----- (6) the scatter-add kernel ----------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    ("shape", "axis", "idx_shape"),
    [((5, 3), 0, (7,)), ((3, 5), 1, (4, 2)), ((2, 4, 3), 1, (6,)), ((6,), 0, (9,)), ((2, 3, 4), 2, ())],
)
def test_scatter_add_matches_add_at(dtype: Any, shape: tuple[int, ...], axis: int, idx_shape: tuple[int, ...]) -> None:
    """The compiled scatter-add equals np.add.at, repeated indices included."""
    out = _RNG.standard_normal(shape).astype(dtype)
    idx = _RNG.integers(0, shape[axis], idx_shape)
    g = _RNG.standard_normal(shape[:axis] + idx_shape + shape[axis + 1 :]).astype(dtype)
    want = out.copy()
    np.add.at(want, (*(slice(None),) * axis, idx), g)  # type: ignore[arg-type]
    ks.scatter_add(out, axis, idx, g)
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(("shape", "axis"), [((64, 4096), 0), ((600, 300), 1), ((3, 200, 500), 1)])
def test_scatter_add_parallel_path(shape: tuple[int, ...], axis: int) -> None:
    """Above the parallel threshold (blocks of the (P, Q) plane per thread) the result is the same."""
    out = np.zeros(shape, np.float32)
    n = 2 * PARALLEL_THRESHOLD // (int(np.prod(shape)) // shape[axis]) + 1
    idx = _RNG.integers(0, 5, n)  # heavy repetition
    g = _RNG.standard_normal((*shape[:axis], n, *shape[axis + 1 :])).astype(np.float32)
    assert g.size >= PARALLEL_THRESHOLD
    want = np.zeros(shape, np.float64)
    np.add.at(want, (*(slice(None),) * axis, idx), g.astype(np.float64))  # type: ignore[arg-type]
    ks.scatter_add(out, axis, idx, g)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-3)


def test_scatter_add_fallback_and_errors() -> None:
    """A non-contiguous out goes to np.add.at; bad indices, dtypes and shapes raise."""
    base = np.zeros((3, 4))
    out = base.T  # (4, 3), not C-contiguous
    ks.scatter_add(out, 0, np.array([0, 0, 3]), np.ones((3, 3)))
    np.testing.assert_array_equal(base.T[0], [2, 2, 2])
    with pytest.raises(IndexError, match=r"\[0, 4\)"):
        ks.scatter_add(np.zeros((4, 3)), 0, np.array([4]), np.ones((1, 3)))
    with pytest.raises(IndexError):
        ks.scatter_add(np.zeros((4, 3)), 0, np.array([-1]), np.ones((1, 3)))
    with pytest.raises(DTypeError):
        ks.scatter_add(np.zeros((4, 3)), 0, np.array([0]), np.ones((1, 3), np.float32))
    with pytest.raises(DTypeError):
        ks.scatter_add(np.zeros((4, 3)), 0, np.array([0.0]), np.ones((1, 3)))
    with pytest.raises(ShapeError, match=r"\(2, 3\)"):
        ks.scatter_add(np.zeros((4, 3)), 0, np.array([0]), np.ones((2, 3)))
    with pytest.raises(ValueError, match="read-only"):
        ks.scatter_add(np.broadcast_to(np.zeros(3), (4, 3)), 0, np.array([0]), np.ones((1, 3)))


# ----- (7) errors name the op and the shapes -----------------------------------------------


X: Any = DEV.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))  # Any: the calls below are wrong on purpose


@pytest.mark.parametrize(
    ("call", "exc", "pattern"),
    [
        (lambda: X.reshape((4, 2)), ShapeError, r"reshape.*\(2, 3\) \(6 elements\).*\(4, 2\) \(8 elements\)"),
        (lambda: X.reshape((4, -1)), ShapeError, r"reshape.*\(2, 3\).*\(4, -1\)"),
        (lambda: X.reshape((-1, -1)), ShapeError, r"reshape.*at most one may be -1"),
        (lambda: X.reshape((2.0, 3)), TypeError, r"reshape: shape must be a tuple of ints"),
        (lambda: X.permute((0, 0)), ShapeError, r"permute: repeated axis.*\(2, 3\)"),
        (lambda: X.permute((0,)), ShapeError, r"permute.*\(2, 3\)"),
        (lambda: X.permute((0, 2)), ShapeError, r"permute: axis 2 is out of range for shape \(2, 3\)"),
        (lambda: X.permute(1), TypeError, r"permute: axes must be a tuple"),
        (lambda: X.transpose(0, 2), ShapeError, r"transpose: axis 2 .*\(2, 3\)"),
        (lambda: X[0].T, ShapeError, r"T: expects a 2-D tensor, got shape \(3,\)"),
        (lambda: X.broadcast_to((4, 3)), ShapeError, r"broadcast_to.*\(2, 3\).*\(4, 3\)"),
        (lambda: X.broadcast_to((3,)), ShapeError, r"broadcast_to.*\(2, 3\).*\(3,\)"),
        (lambda: X.expand_dims(3), ShapeError, r"expand_dims: axis 3 .*\(2, 3\)"),
        (lambda: X.expand_dims((0, 0)), ShapeError, r"expand_dims: repeated axis"),
        (lambda: X.expand_dims(0.0), TypeError, r"expand_dims: axes must be an int or a tuple of ints"),
        (lambda: X.squeeze("0"), TypeError, r"squeeze: axes must be an int"),
        (lambda: X.squeeze(0), ShapeError, r"squeeze: axis 0 of shape \(2, 3\) has size 2, not 1"),
        (lambda: X.squeeze(-3), ShapeError, r"squeeze: axis -3 .*\(2, 3\)"),
        (lambda: concat([X, X[:, :2]]), ShapeError, r"concat: shapes \(2, 3\), \(2, 2\) differ outside axis 0"),
        (lambda: concat([X, X[0]]), ShapeError, r"concat.*rank.*\(2, 3\), \(3,\)"),
        (lambda: concat([X[0, 0], X[0, 0]]), ShapeError, r"concat.*\(\), \(\)"),
        (lambda: concat([X, X], axis=2), ShapeError, r"concat: axis 2 .*\(2, 3\)"),
        (lambda: concat([]), ValueError, r"concat: needs at least one tensor"),
        (lambda: concat(X), TypeError, r"concat: tensors must be a list or tuple of tensors, got Tensor"),
        (lambda: concat([X, X.numpy()]), TypeError, r"concat: tensors\[1\] must be a Tensor, got ndarray"),
        (lambda: concat([X, DEV.tensor(X, np.float64)]), DTypeError, r"concat: dtypes differ: float32 \(2, 3\)"),
        (lambda: stack([X, X.T]), ShapeError, r"stack: needs tensors of one shape, got shapes \(2, 3\), \(3, 2\)"),
        (lambda: stack([X, X], axis=3), ShapeError, r"stack: axis 3 .*\(2, 3\)"),
        (lambda: X[2], IndexError, r"getitem: index 2 is out of bounds for axis 0 of size 2 \(tensor of shape \(2, 3"),
        (lambda: X[0, -4], IndexError, r"getitem: index -4 .*axis 1 of size 3"),
        (lambda: X[..., 3], IndexError, r"getitem: index 3 .*axis 1"),
        (lambda: X[0, 0, 0], IndexError, r"getitem: too many indices for a tensor of shape \(2, 3\)"),
        (lambda: X[..., ...], IndexError, r"single ellipsis"),
        (
            lambda: X[[0, 5]],
            IndexError,
            r"getitem: index 5 is out of bounds for axis 0 of size 2 \(tensor of shape \(2, 3\)\)",
        ),
        (lambda: X[np.array([0.0])], DTypeError, r"getitem: index must be integers, got dtype float64"),
        (lambda: X[True], TypeError, r"getitem: index True"),
        (lambda: X[0.0], TypeError, r"getitem: index 0.0"),
        (lambda: X[::0], ValueError, r"slice step cannot be zero"),
        (lambda: X[1.0:], TypeError, r"slice bounds must be ints"),
        (lambda: X.gather([0, 2]), IndexError, r"gather: index 2 is out of bounds for axis 0 of size 2 .*\(2, 3\)"),
        (lambda: X.gather([-4], axis=1), IndexError, r"gather: index -4 .*axis 1 of size 3"),
        (lambda: X.gather([0.0]), DTypeError, r"gather: indices must be integers, got dtype float64"),
        (lambda: X.gather([True]), DTypeError, r"gather: indices must be integers, got dtype bool"),
        (lambda: X.gather([0], axis=2), ShapeError, r"gather: axis 2 .*\(2, 3\)"),
        (lambda: X.gather(X), TypeError, r"gather: indices must be integers"),
        (lambda: X[0, 0].gather([0]), ShapeError, r"gather: cannot index a 0-D tensor"),
        (lambda: X.index_select([[0]]), ShapeError, r"index_select: indices must be 1-D, got shape \(1, 1\)"),
        (lambda: X.roll(1, axis=2), ShapeError, r"roll: axis 2 .*\(2, 3\)"),
        (lambda: X.roll((1, 2)), ValueError, r"roll: a tuple of shifts"),
        (lambda: X.roll((1, 2, 3), axis=(0, 1)), ValueError, r"roll: 3 shifts for 2 axes"),
        (lambda: X[0].tril(), ShapeError, r"tril: needs a tensor of at least 2 dims.*\(3,\)"),
        (lambda: X[0].triu(), ShapeError, r"triu: .*\(3,\)"),
        (lambda: X.tril(1.5), TypeError, r"tril: k must be an int"),
    ],
)
def test_errors_name_the_op_and_shapes(call: Callable[[], Any], exc: type[Exception], pattern: str) -> None:
    """Bad arguments raise before any work, with the op and the shapes in the message."""
    with pytest.raises(exc, match=pattern):
        call()


def test_gather_of_an_empty_index_list() -> None:
    """``gather(a, [])`` is an empty selection, not a float-dtype error; its gradient is 0."""
    (g,), _ = _grads(lambda a: a.gather([]).sum() + a.sum(), np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(g, np.ones((2, 3)))


# ----- (8) basic indexing against numpy, property-based ------------------------------------

_SHAPE = (4, 3, 5)


@st.composite
def _basic_keys(draw: st.DrawFn) -> tuple[Any, ...]:
    items: list[Any] = []
    for n in _SHAPE[: draw(st.integers(0, 3))]:
        kind = draw(st.sampled_from(["int", "slice", "none"]))
        if kind == "int":
            items.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
            items.append(slice(draw(bound), draw(bound), draw(st.sampled_from([None, 1, 2, -1, -2]))))
        else:
            items += [None, slice(None)]
    if draw(st.booleans()):
        items.insert(draw(st.integers(0, len(items))), Ellipsis)
    return tuple(items)


@settings(max_examples=60, deadline=None)
@given(_basic_keys())
def test_getitem_matches_numpy_and_scatters_its_gradient(key: tuple[Any, ...]) -> None:
    """Any basic key: the forward is numpy's (or both raise IndexError); the gradient of
    sum(y * w) is w placed at key."""
    base = np.arange(np.prod(_SHAPE), dtype=np.float64).reshape(_SHAPE)
    try:
        want = base[key]
    except IndexError:  # an int past its axis once '...' shifted it: gradtape refuses it too
        with pytest.raises(IndexError, match="getitem"):
            DEV.tensor(base)[key]
        return
    store = Gradients.leaky()
    x = DEV.tensor(base).trace(store)
    y = x[key]
    np.testing.assert_array_equal(y.numpy(), want)
    w = np.asarray(_RNG.standard_normal(np.shape(want)))
    grads = (y * DEV.tensor(w)).sum().backward()
    expect = np.zeros(_SHAPE)
    expect[key] = w
    np.testing.assert_array_equal(grads.get(x).numpy(), expect)


# ----- (9) aliases -------------------------------------------------------------------------


def test_aliases_and_module_functions() -> None:
    """``unsqueeze`` is ``expand_dims``; the module functions are the methods."""
    assert unsqueeze is expand_dims
    x = DEV.tensor(_f32(2, 3))
    np.testing.assert_array_equal(reshape(x, (3, 2)).numpy(), x.reshape((3, 2)).numpy())
    np.testing.assert_array_equal(x.unsqueeze(1).numpy(), expand_dims(x, 1).numpy())
