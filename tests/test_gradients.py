"""The Gradients store: accessors, removal and replacement, leaf retention, copy-on-write."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, DTypeError, Gradients, ShapeError, TapeError, Tensor

DEV = Cpu()


def t64(values: Any) -> Tensor[Any, Any]:
    """An untraced float64 tensor."""
    return DEV.tensor(np.array(values, dtype=np.float64))


# ----- get ---------------------------------------------------------------------------------------


def test_get_absent_is_zeros_of_shape_and_dtype() -> None:
    """get() of a tensor that requires grad but has no gradient gives zeros of its shape and dtype."""
    g = Gradients.leaky()
    for dt in (np.float32, np.float64):
        t = DEV.ones((2, 3), dtype=dt).requires_grad_()
        out = g.get(t)
        assert out.shape == (2, 3)
        assert out.dtype == np.dtype(dt)
        np.testing.assert_array_equal(out.numpy(), np.zeros((2, 3)))
    assert len(g) == 0  # get() allocates nothing


def test_get_of_plain_leaf_raises() -> None:
    """get() and grad() of a plain leaf that took no part (not requires_grad, not traced, not
    written) raise instead of giving a silently-zero gradient, and allocate nothing."""
    g = Gradients.leaky()
    t = DEV.ones((2, 3))
    with pytest.raises(TapeError, match="does not require grad"):
        g.get(t)
    with pytest.raises(TapeError, match="does not require grad"):
        g.grad(t)
    assert len(g) == 0


def test_get_returns_values() -> None:
    """get() returns the stored gradient's values as an untraced tensor."""
    g = Gradients.leaky()
    t = t64([1.0, 2.0])
    g.get_or_alloc_mut(t)[...] = [3.0, 4.0]
    out = g.get(t)
    np.testing.assert_array_equal(out.numpy(), [3.0, 4.0])
    assert not out.tape.OWNS_TAPE


def test_get_returns_a_copy() -> None:
    """Writing into get()'s result does not change the store."""
    g = Gradients.leaky()
    t = t64([1.0, 2.0])
    g.get_or_alloc_mut(t)[...] = [3.0, 4.0]
    out = g.get(t)
    out.numpy()[...] = 99.0
    np.testing.assert_array_equal(g.get(t).numpy(), [3.0, 4.0])


def test_get_finds_gradient_through_traced_alias() -> None:
    """x and x.leaky_trace() share an id, so they share a gradient entry."""
    g = Gradients.leaky()
    x = t64([1.0])
    g.get_or_alloc_mut(x.leaky_trace())[...] = 7.0
    assert x in g
    np.testing.assert_array_equal(g.get(x).numpy(), [7.0])


# ----- get_ref_checked ------------------------------------------------------------------------------


def test_get_ref_checked_none_when_absent() -> None:
    """get_ref_checked() tells "no gradient" apart from zeros: None."""
    g = Gradients.leaky()
    t = t64([1.0])
    assert g.get_ref_checked(t) is None
    g.get_or_alloc_mut(t)
    ref = g.get_ref_checked(t)
    assert ref is not None
    np.testing.assert_array_equal(ref, [0.0])


def test_get_ref_checked_is_read_only() -> None:
    """The returned view cannot be written."""
    g = Gradients.leaky()
    t = t64([1.0, 2.0])
    g.get_or_alloc_mut(t)[...] = 5.0
    ref = g.get_ref_checked(t)
    assert ref is not None
    assert not ref.flags.writeable
    with pytest.raises(ValueError):
        ref[0] = 1.0
    np.testing.assert_array_equal(g.get(t).numpy(), [5.0, 5.0])


def test_get_ref_checked_is_a_view() -> None:
    """get_ref_checked() does not copy: it shows the stored buffer."""
    g = Gradients.leaky()
    t = t64([1.0, 2.0])
    buf = g.get_or_alloc_mut(t)
    ref = g.get_ref_checked(t)
    assert ref is not None
    assert np.shares_memory(ref, buf)


# ----- get_or_alloc_mut ------------------------------------------------------------------------------


def test_get_or_alloc_mut_allocates_zeros_lazily() -> None:
    """No buffer exists until get_or_alloc_mut() asks; then zeros of the tensor's shape and dtype."""
    g = Gradients.leaky()
    t = DEV.ones((3, 2))
    assert t not in g
    buf = g.get_or_alloc_mut(t)
    assert t in g
    assert t.id in g
    assert buf.shape == (3, 2)
    assert buf.dtype == np.float32
    np.testing.assert_array_equal(buf, np.zeros((3, 2)))


def test_get_or_alloc_mut_writes_persist() -> None:
    """Writes into the returned buffer are the stored gradient; a second call sees them."""
    g = Gradients.leaky()
    t = t64([1.0, 2.0])
    g.get_or_alloc_mut(t)[...] += 2.5
    buf2 = g.get_or_alloc_mut(t)
    np.testing.assert_array_equal(buf2, [2.5, 2.5])
    buf2[1] = -1.0
    np.testing.assert_array_equal(g.get(t).numpy(), [2.5, -1.0])


# ----- mut_and_ref and friends --------------------------------------------------------------------


def test_mut_and_ref_same_tensor_raises() -> None:
    """mut_and_ref(t, t) is an error, as in dfdx."""
    g = Gradients.leaky()
    t = t64([1.0])
    with pytest.raises(ValueError, match="same tensor"):
        g.mut_and_ref(t, t)


def test_mut_and_ref_same_id_raises() -> None:
    """A tensor and its traced alias share an id: still the same tensor."""
    g = Gradients.leaky()
    t = t64([1.0])
    with pytest.raises(ValueError):
        g.mut_and_ref(t, t.leaky_trace())


def test_mut_and_ref_returns_writable_and_read_only() -> None:
    """(l's buffer, r's read-only gradient); r absent reads as zeros and is not allocated."""
    g = Gradients.leaky()
    l, r = t64([1.0, 2.0]).requires_grad_(), t64([[1.0], [2.0], [3.0]])
    gl, gr = g.mut_and_ref(l, r)
    assert gl.shape == (2,)
    assert gl.flags.writeable
    assert gr.shape == (3, 1)
    assert not gr.flags.writeable
    np.testing.assert_array_equal(gr, np.zeros((3, 1)))
    assert r not in g
    gl += 4.0
    np.testing.assert_array_equal(g.get(l).numpy(), [4.0, 4.0])


def test_mut_and_ref_reads_existing_ref() -> None:
    """r's stored gradient is what mut_and_ref returns as its second element."""
    g = Gradients.leaky()
    l, r = t64([1.0]).requires_grad_(), t64([1.0])
    g.get_or_alloc_mut(r)[...] = 3.0
    gl, gr = g.mut_and_ref(l, r)
    gl += 2.0 * gr
    np.testing.assert_array_equal(g.get(l).numpy(), [6.0])


@pytest.mark.parametrize("which", ["l1=l2", "l1=r", "l2=r"])
def test_muts_and_ref_duplicates_raise(which: str) -> None:
    """muts_and_ref needs three distinct tensors."""
    g = Gradients.leaky()
    a, b = t64([1.0]), t64([2.0])
    args = {"l1=l2": (a, a, b), "l1=r": (a, b, a), "l2=r": (b, a, a)}[which]
    with pytest.raises(ValueError, match="distinct"):
        g.muts_and_ref(*args)


def test_muts_and_ref_distinct() -> None:
    """Three distinct tensors: two writable buffers and a read-only one."""
    g = Gradients.leaky()
    a, b, r = t64([1.0]), t64([2.0, 3.0]), t64([4.0])
    ga, gb, gr = g.muts_and_ref(a, b, r)
    assert (ga.shape, gb.shape, gr.shape) == ((1,), (2,), (1,))
    assert ga.flags.writeable and gb.flags.writeable
    assert not gr.flags.writeable


@pytest.mark.parametrize("which", ["in ls", "l is r"])
def test_many_and_ref_duplicates_raise(which: str) -> None:
    """many_and_ref rejects a tensor listed twice, or listed and also the ref."""
    g = Gradients.leaky()
    a, b, c = t64([1.0]), t64([2.0]), t64([3.0])
    ls, r = ([a, b, a], c) if which == "in ls" else ([a, b], b)
    with pytest.raises(ValueError, match="distinct"):
        g.many_and_ref(ls, r)


def test_many_and_ref_distinct() -> None:
    """Distinct tensors give one writable buffer per l and r's read-only gradient."""
    g = Gradients.leaky()
    ls = [t64([1.0]), t64([2.0, 3.0]), t64([[4.0]])]
    r = t64([5.0])
    bufs, gr = g.many_and_ref(iter(ls), r)
    assert [b.shape for b in bufs] == [(1,), (2,), (1, 1)]
    assert all(b.flags.writeable for b in bufs)
    assert not gr.flags.writeable


# ----- grad_remove / grad_replace ---------------------------------------------------------------


def test_grad_remove_returns_and_removes() -> None:
    """grad_remove() pops the gradient as an untraced tensor of t's shape and dtype; removing
    again gives None."""
    g = Gradients.leaky()
    t = t64([1.0, 2.0])
    buf = g.get_or_alloc_mut(t)
    buf[...] = [1.0, -1.0]
    removed = g.grad_remove(t)
    assert isinstance(removed, Tensor)
    assert removed.shape == (2,)
    assert removed.dtype == np.float64
    assert not removed.requires_grad
    assert removed.id != t.id
    assert removed.device is t.device
    np.testing.assert_array_equal(removed.numpy(), [1.0, -1.0])
    assert removed.numpy() is buf  # the store's own buffer: popping copies nothing
    assert t not in g
    assert g.grad_remove(t) is None
    np.testing.assert_array_equal(g.get(t).numpy(), [0.0, 0.0])


def test_grad_remove_copies_a_shared_buffer() -> None:
    """A buffer the store shares (copy-on-write) is copied on removal: writing into the result
    changes neither the caller's array given to grad_replace nor another stored gradient."""
    g = Gradients.leaky()
    t = t64([1.0, 2.0])
    mine = np.array([3.0, 4.0])
    g.grad_replace(t, mine)
    removed = g.grad_remove(t)
    assert removed is not None
    assert not np.shares_memory(removed.numpy(), mine)
    removed.numpy()[...] = 0.0
    np.testing.assert_array_equal(mine, [3.0, 4.0])
    # two ids holding one buffer (add's backward stores the output's gradient as both inputs')
    a, b = t64([1.0, 2.0]), t64([5.0, 6.0])
    g2 = Gradients.leaky()
    at, bt = a.trace(g2), b.trace(g2)
    (at + bt).sum().backward()
    ra = g2.grad_remove(a)
    assert ra is not None
    ra.numpy()[...] = 7.0
    np.testing.assert_array_equal(g2.get(b).numpy(), [1.0, 1.0])


def test_grad_replace_sets_gradient() -> None:
    """grad_replace() stores the given values."""
    g = Gradients.leaky()
    t = t64([1.0, 2.0])
    g.get_or_alloc_mut(t)[...] = 9.0
    g.grad_replace(t, np.array([0.5, 0.25]))
    np.testing.assert_array_equal(g.get(t).numpy(), [0.5, 0.25])


def test_grad_replace_wrong_shape_raises() -> None:
    """A gradient of another shape is a ShapeError naming both shapes."""
    g = Gradients.leaky()
    t = t64([1.0, 2.0])
    with pytest.raises(ShapeError, match=r"\(3,\).*\(2,\)"):
        g.grad_replace(t, np.zeros(3))
    assert t not in g


def test_grad_replace_wrong_dtype_raises() -> None:
    """A gradient of another dtype is a DTypeError naming both dtypes."""
    g = Gradients.leaky()
    t = t64([1.0, 2.0])
    with pytest.raises(DTypeError, match=r"float32.*float64"):
        g.grad_replace(t, np.zeros(2, dtype=np.float32))
    assert t not in g


def test_grad_replace_does_not_write_callers_array() -> None:
    """Updating a replaced gradient in place copies it first: the caller's array is untouched."""
    g = Gradients.leaky()
    t = t64([1.0, 2.0])
    mine = np.array([1.0, 1.0])
    g.grad_replace(t, mine)
    g.get_or_alloc_mut(t)[...] += 5.0
    np.testing.assert_array_equal(mine, [1.0, 1.0])
    np.testing.assert_array_equal(g.get(t).numpy(), [6.0, 6.0])


def test_grad_replace_then_backward_accumulates_without_touching_caller() -> None:
    """A backward pass accumulating onto a replaced gradient leaves the caller's array alone."""
    g = Gradients.leaky()
    x = t64([1.0, 2.0])
    mine = np.array([10.0, 10.0])
    g.grad_replace(x, mine)
    (x.trace(g) * 3.0).sum().backward()
    np.testing.assert_array_equal(g.get(x).numpy(), [13.0, 13.0])
    np.testing.assert_array_equal(mine, [10.0, 10.0])


# ----- leafs ----------------------------------------------------------------------------------------


def _store_with(*ts: Tensor[Any, Any]) -> Gradients:
    g = Gradients.leaky()
    for i, t in enumerate(ts):
        g.get_or_alloc_mut(t)[...] = i + 1.0
    return g


def test_retain_leafs_drops_others_now() -> None:
    """retain_leafs() drops every gradient not named, immediately."""
    a, b, c = t64([1.0]), t64([1.0]), t64([1.0])
    g = _store_with(a, b, c)
    g.retain_leafs([a, c])
    assert set(g.ids()) == {a.id, c.id}
    np.testing.assert_array_equal(g.get(c).numpy(), [3.0])


def test_retain_leafs_accepts_ids_and_accumulates() -> None:
    """Leafs given by id count; two calls keep the union."""
    a, b, c = t64([1.0]), t64([1.0]), t64([1.0])
    g = _store_with(a, b, c)
    g.retain_leafs([a.id])
    g.get_or_alloc_mut(b)[...] = 2.0
    g.retain_leafs([b])
    assert set(g.ids()) == {a.id, b.id}


def test_drop_non_leafs_without_leafs_is_noop() -> None:
    """With no leafs marked (a leaky store) drop_non_leafs() keeps everything."""
    a, b = t64([1.0]), t64([1.0])
    g = _store_with(a, b)
    g.drop_non_leafs()
    assert len(g) == 2


def test_drop_non_leafs_drops_later_gradients() -> None:
    """Gradients added after retain_leafs() go at the next drop_non_leafs()."""
    a, b = t64([1.0]), t64([1.0])
    g = _store_with(a)
    g.retain_leafs([a])
    g.get_or_alloc_mut(b)
    assert b in g
    g.drop_non_leafs()
    assert b not in g
    assert a in g


def test_retain_current_grads_as_leafs() -> None:
    """Everything present now becomes a leaf; what comes later is dropped."""
    a, b, c = t64([1.0]), t64([1.0]), t64([1.0])
    g = _store_with(a, b)
    g.retain_current_grads_as_leafs()
    g.get_or_alloc_mut(c)
    g.drop_non_leafs()
    assert set(g.ids()) == {a.id, b.id}
    np.testing.assert_array_equal(g.get(b).numpy(), [2.0])


def test_retain_current_grads_between_passes() -> None:
    """After one pass, retain_current_grads_as_leafs keeps pass-1 gradients (intermediates too)
    and a second pass drops its new intermediates."""
    x = t64([1.0, 2.0])
    g = Gradients.leaky()
    h1 = x.trace(g) * 2.0
    h1.sum().backward()
    g.retain_current_grads_as_leafs()
    h2 = x.trace(g) * 3.0
    h2.sum().backward()
    assert h1 in g
    assert h2 not in g
    np.testing.assert_array_equal(g.get(x).numpy(), [5.0, 5.0])


# ----- merge_from, len, contains ------------------------------------------------------------------


def test_merge_from_moves_and_adds() -> None:
    """merge_from moves other's buffers, adds overlapping ones and empties other."""
    a, b, c = t64([1.0]), t64([1.0]), t64([1.0])
    g1 = _store_with(a, b)  # a=1, b=2
    g2 = Gradients.leaky()
    g2.get_or_alloc_mut(b)[...] = 10.0
    g2.get_or_alloc_mut(c)[...] = 20.0
    g1.merge_from(g2)
    assert len(g2) == 0
    np.testing.assert_array_equal(g1.get(a).numpy(), [1.0])
    np.testing.assert_array_equal(g1.get(b).numpy(), [12.0])
    np.testing.assert_array_equal(g1.get(c).numpy(), [20.0])


def test_contains_len_ids() -> None:
    """`in` takes tensors or ids; len and ids() list the stored gradients."""
    a, b = t64([1.0]), t64([1.0])
    g = _store_with(a)
    assert a in g and a.id in g
    assert b not in g and b.id not in g
    assert len(g) == 1
    assert list(g.ids()) == [a.id]


# ----- copy-on-write after backward ----------------------------------------------------------------


def test_add_zero_shares_buffer_with_output() -> None:
    """Precondition of the tests below: y = x + 0 stores y's gradient buffer as x's."""
    x = t64([1.0, 2.0])
    y = x.leaky_trace() + 0.0
    g = y.sum().backward()
    rx, ry = g.get_ref_checked(x), g.get_ref_checked(y)
    assert rx is not None and ry is not None
    assert np.shares_memory(rx, ry)


def test_cow_write_input_keeps_output() -> None:
    """y = x + 0: writing x's gradient leaves y's alone."""
    x = t64([1.0, 2.0])
    y = x.leaky_trace() + 0.0
    g = y.sum().backward()
    g.get_or_alloc_mut(x)[...] += 10.0
    np.testing.assert_array_equal(g.get(x).numpy(), [11.0, 11.0])
    np.testing.assert_array_equal(g.get(y).numpy(), [1.0, 1.0])


def test_cow_write_output_keeps_input() -> None:
    """y = x + 0: writing y's gradient leaves x's alone."""
    x = t64([1.0, 2.0])
    y = x.leaky_trace() + 0.0
    g = y.sum().backward()
    g.get_or_alloc_mut(y)[...] = -3.0
    np.testing.assert_array_equal(g.get(y).numpy(), [-3.0, -3.0])
    np.testing.assert_array_equal(g.get(x).numpy(), [1.0, 1.0])


def test_cow_mul_by_one_alias() -> None:
    """y = x * 1.0 aliases like x + 0: writing x's gradient leaves y's alone."""
    x = t64([1.0, 2.0])
    y = x.leaky_trace() * 1.0
    g = y.sum().backward()
    g.get_or_alloc_mut(x)[0] = 7.0
    np.testing.assert_array_equal(g.get(y).numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(g.get(x).numpy(), [7.0, 1.0])


def test_cow_add_two_inputs() -> None:
    """z = x + w: x, w and z share one buffer; writing any one changes only it."""
    x, w = t64([1.0, 2.0]), t64([3.0, 4.0])
    z = x.leaky_trace() + w
    g = z.sum().backward()
    g.get_or_alloc_mut(x)[...] = 5.0
    g.get_or_alloc_mut(w)[...] += 1.0
    np.testing.assert_array_equal(g.get(x).numpy(), [5.0, 5.0])
    np.testing.assert_array_equal(g.get(w).numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(g.get(z).numpy(), [1.0, 1.0])


def test_cow_chain_of_aliases() -> None:
    """y = (x + 0) + 0: three tensors share a buffer; writing the middle one changes only it."""
    x = t64([1.0, 2.0])
    h = x.leaky_trace() + 0.0
    y = h + 0.0
    g = y.sum().backward()
    g.get_or_alloc_mut(h)[...] = 0.0
    np.testing.assert_array_equal(g.get(h).numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(g.get(x).numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(g.get(y).numpy(), [1.0, 1.0])


def test_cow_mut_and_ref() -> None:
    """mut_and_ref(x, y) on aliased gradients: updating x does not change y's read view."""
    x = t64([1.0, 2.0])
    y = x.leaky_trace() + 0.0
    g = y.sum().backward()
    gx, gy = g.mut_and_ref(x, y)
    gx += 2.0 * gy
    np.testing.assert_array_equal(gy, [1.0, 1.0])
    np.testing.assert_array_equal(g.get(x).numpy(), [3.0, 3.0])


def test_cow_merge_from_keeps_sharing_flag() -> None:
    """Aliased buffers moved by merge_from stay copy-on-write in the new store."""
    x = t64([1.0, 2.0])
    y = x.leaky_trace() + 0.0
    src = y.sum().backward()
    dst = Gradients.leaky()
    dst.merge_from(src)
    dst.get_or_alloc_mut(x)[...] = 9.0
    np.testing.assert_array_equal(dst.get(y).numpy(), [1.0, 1.0])


X = [[0.5, 2.0], [1.5, 3.0]]

# f, df/dx for d/dx sum(f(x)) evaluated at X
OPS: dict[str, tuple[Callable[[Tensor[Any, Any]], Tensor[Any, Any]], Callable[[Any], Any]]] = {
    "relu": (lambda t: t.relu(), lambda x: (x > 0).astype(np.float64)),
    "exp": (lambda t: t.exp(), np.exp),
    "sin": (lambda t: t.sin(), np.cos),
    "log": (lambda t: t.log(), lambda x: 1.0 / x),
    "scale": (lambda t: t * 2.0, lambda x: np.full_like(x, 2.0)),
    "neg": (lambda t: -t, lambda x: np.full_like(x, -1.0)),
    "rsub": (lambda t: 1.0 - t, lambda x: np.full_like(x, -1.0)),
    "rdiv": (lambda t: 1.0 / t, lambda x: -1.0 / x**2),
    "square": (lambda t: t * t, lambda x: 2.0 * x),
    "div": (lambda t: t / t.exp(), lambda x: (1.0 - x) * np.exp(-x)),
    "sub": (lambda t: t - t * 3.0, lambda x: np.full_like(x, -2.0)),
    "matmul_eye": (lambda t: t @ t64(np.eye(2)), lambda x: np.ones_like(x)),
    "sum": (lambda t: t.sum(), lambda x: np.ones_like(x)),
    "mean0": (lambda t: t.mean(axis=0), lambda x: np.full_like(x, 0.5)),
    "bias_add": (lambda t: t + t64([1.0, 2.0]), lambda x: np.ones_like(x)),
    "log_softmax": (
        lambda t: t.log_softmax(-1),
        lambda x: 1.0 - 2.0 * np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True),
    ),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_cow_op_backward_into_aliased_gradient(name: str) -> None:
    """loss = sum(f(x)) + sum(x + 0): the identity's backward runs first and aliases x's gradient
    to y = x + 0's; f's backward then adds into x's gradient, which must not change y's."""
    f, df = OPS[name]
    x = t64(X)
    xt = x.leaky_trace()
    fx = f(xt)
    y = xt + 0.0
    g = (fx.sum() + y.sum()).backward()
    xs = np.array(X)
    np.testing.assert_allclose(g.get(x).numpy(), df(xs) + 1.0, rtol=1e-12)
    np.testing.assert_array_equal(g.get(y).numpy(), np.ones((2, 2)))


def test_backward_frees_intermediate_gradients_as_it_goes() -> None:
    """With leafs marked, each op's closure takes its output's gradient out of the store:
    by the time the first-recorded closure runs, only the leaf's gradient is left."""
    dev = Cpu()
    x = dev.tensor([1.0, 2.0, 3.0])
    grads = Gradients.leaky()
    grads.retain_leafs([x])
    xt = x.trace(grads)
    seen: list[set[int]] = []
    xt.tape.add_backward_op(lambda g: seen.append(set(g.ids())))  # recorded first: runs last
    y = (xt.exp() * 3.0 + xt).sin()
    y.sum().backward()
    assert seen == [{x.id}]


def test_leaky_store_keeps_intermediate_gradients() -> None:
    """A leaky store (no leafs marked) keeps every intermediate's gradient."""
    dev = Cpu()
    xt = dev.tensor([1.0, 2.0]).leaky_trace()
    y = xt * 2.0
    z = y.sin()
    grads = z.sum().backward()
    np.testing.assert_allclose(grads.get(z).numpy(), np.ones(2))
    np.testing.assert_allclose(grads.get(y).numpy(), np.cos(y.numpy()), rtol=1e-6)
    np.testing.assert_allclose(grads.get(xt).numpy(), 2.0 * np.cos(y.numpy()), rtol=1e-6)


def test_reused_store_does_not_accumulate_stale_shared_ids() -> None:
    """A store reused for many steps (alloc_grads / zero_grads) names only stored gradients in
    its copy-on-write set: add's backward aliases its output's gradient, which backward has
    already released, so that id must not be kept (it leaked one id per add per step)."""
    from gradtape import nn

    dev = Cpu(seed=0)
    lin = nn.Linear(4, 4, dev=dev)
    grads = lin.alloc_grads()
    for _ in range(20):
        x = dev.tensor(np.ones((2, 4), np.float32)).trace(grads)
        h = lin(x)
        (h + h.relu() + h).sum().backward()
        assert grads._shared <= set(grads._data), "shared ids must be stored ids"
        lin.zero_grads(grads)
    assert not grads._shared and not grads._data


def test_leaky_store_keeps_aliased_gradients_copy_on_write() -> None:
    """In a leaky store add's output keeps its gradient, aliased by both inputs: writing one
    input's gradient in place (get_or_alloc_mut) leaves the others unchanged."""
    store = Gradients.leaky()
    a, b = DEV.tensor([1.0, 2.0]).trace(store), DEV.tensor([3.0, 4.0]).trace(store)
    s = a + b
    grads = s.sum().backward()
    assert {a.id, s.id} <= grads._shared
    grads.get_or_alloc_mut(a)[...] = 7.0
    np.testing.assert_array_equal(grads.get(s).numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(grads.get(b).numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(grads.get(a).numpy(), [7.0, 7.0])
