"""Seed 002, Burn's ``AutodiffBackend`` trait, on gradtape: its accessors with their semantics.

Burn's gradient accessors are :class:`~gradtape.gradients.Gradients` methods taking and giving
tensors: ``grad`` (a copy of the gradient, ``None`` when there is none), ``grad_remove`` (pops
it), ``grad_replace`` (sets it, registering it if absent). Burn's ``inner`` / ``from_inner`` and
their int and bool counterparts are in :mod:`gradtape.autodiff`: gradtape's autodiff backend is
its tape layer, the inner backend the untraced tensor (and the numpy array it holds). The
numbers are exact: float64 tensors and a power-of-two learning rate, so every value below is
computed without rounding (``y = (x * x).sum()`` has gradient ``2 x``).
"""

from __future__ import annotations

from typing import Any, Literal, assert_type, cast

import numpy as np
import pytest

from gradtape import Cpu, DTypeError, Gradients, GradientTape, NoneTape, ShapeError, TapeError, Tensor, nn, no_grad
from gradtape.autodiff import bool_from_inner, bool_inner, from_inner, inner, int_from_inner, int_inner
from gradtape.ops import where
from gradtape.optim import SGD
from gradtape.shapes import Rank1

dev = Cpu(seed=0)

X = [1.0, 2.0, 3.0]


def f64(values: Any) -> Tensor[Any, NoneTape]:
    """An untraced float64 tensor."""
    return dev.tensor(np.array(values, dtype=np.float64))


def square_sum_grads(x: Tensor[Any, Any]) -> Gradients:
    """``backward`` of ``y = (x * x).sum()`` traced from ``x``: ``x``'s gradient is ``2 x``."""
    xt = x.trace(Gradients.leaky())
    return (xt * xt).sum().backward()


# ----- grad ------------------------------------------------------------------------------------


def test_seed_grad_after_backward_is_the_analytic_gradient() -> None:
    """``B::grad(&x, &grads)``: the gradient as an inner (untraced) tensor of x's shape and dtype."""
    x = f64(X)
    grads = square_sum_grads(x)
    g = grads.grad(x)
    assert g is not None
    assert isinstance(g, Tensor)
    assert g.shape == (3,)
    assert g.dtype == np.float64
    assert g.device is x.device
    assert not g.requires_grad
    assert g.is_leaf
    np.testing.assert_array_equal(g.numpy(), [2.0, 4.0, 6.0])


def test_seed_grad_is_a_copy() -> None:
    """Writing into the returned gradient does not change the store."""
    x = f64(X)
    grads = square_sum_grads(x)
    g = grads.grad(x)
    assert g is not None
    g.numpy()[...] = -1.0
    again = grads.grad(x)
    assert again is not None
    np.testing.assert_array_equal(again.numpy(), [2.0, 4.0, 6.0])
    assert not np.shares_memory(g.numpy(), again.numpy())


def test_seed_grad_absent_is_none_where_get_is_zeros() -> None:
    """``Option`` in Burn: no gradient is ``None``, told apart from a zero gradient (``get``). A
    tensor that requires grad but did not reach the loss has none; a plain tensor that took no
    part is an error for both (gradtape gives no silently-zero gradient)."""
    x, unrelated, plain = f64(X), f64([5.0, 6.0]).requires_grad_(), f64([7.0, 8.0])
    grads = square_sum_grads(x)
    assert grads.grad(unrelated) is None
    np.testing.assert_array_equal(grads.get(unrelated).numpy(), [0.0, 0.0])
    with pytest.raises(TapeError, match="does not require grad"):
        grads.grad(plain)
    with pytest.raises(TapeError, match="does not require grad"):
        grads.get(plain)
    zero = f64([0.0])
    g = Gradients.leaky()
    (zero.trace(g) * 0.0).sum().backward()
    got = g.grad(zero)
    assert got is not None  # a gradient that is zero is still a gradient
    np.testing.assert_array_equal(got.numpy(), [0.0])


def test_seed_grad_typing_keeps_the_shape_type() -> None:
    """mypy: ``grad``/``grad_remove`` give ``Tensor[S, NoneTape] | None``, ``inner`` ``Tensor[S, NoneTape]``."""
    x = cast(Tensor[Rank1[Literal[3]], NoneTape], f64(X))
    grads = square_sum_grads(x)
    assert_type(grads.grad(x), Tensor[Rank1[Literal[3]], NoneTape] | None)
    assert_type(inner(x), Tensor[Rank1[Literal[3]], NoneTape])
    assert_type(from_inner(x), Tensor[Rank1[Literal[3]], NoneTape])
    assert_type(grads.grad_remove(x), Tensor[Rank1[Literal[3]], NoneTape] | None)


# ----- grad_remove -----------------------------------------------------------------------------


def test_seed_grad_remove_pops_the_gradient() -> None:
    """``B::grad_remove``: returns the gradient and removes it; then ``grad`` is ``None``."""
    x = f64(X)
    grads = square_sum_grads(x)
    removed = grads.grad_remove(x)
    assert removed is not None
    assert removed.shape == (3,)
    assert removed.dtype == np.float64
    assert not removed.requires_grad
    np.testing.assert_array_equal(removed.numpy(), [2.0, 4.0, 6.0])
    assert grads.grad(x) is None
    assert x not in grads
    assert grads.grad_remove(x) is None
    np.testing.assert_array_equal(grads.get(x).numpy(), [0.0, 0.0, 0.0])


def test_seed_grad_remove_then_backward_starts_from_zero() -> None:
    """A popped gradient no longer accumulates: the next pass into the store starts from zero."""
    x = f64(X)
    grads = Gradients.leaky()
    for _ in range(2):
        xt = x.trace(grads)
        grads = (xt * xt).sum().backward()
    got = grads.grad(x)
    assert got is not None
    np.testing.assert_array_equal(got.numpy(), [4.0, 8.0, 12.0])  # leaky: two passes accumulated
    grads.grad_remove(x)
    xt = x.trace(grads)
    grads = (xt * xt).sum().backward()
    got = grads.grad(x)
    assert got is not None
    np.testing.assert_array_equal(got.numpy(), [2.0, 4.0, 6.0])


# ----- grad_replace ----------------------------------------------------------------------------


def test_seed_grad_replace_registers_an_absent_gradient() -> None:
    """``B::grad_replace``: "If no gradient existed for the provided tensor, register it": for a
    tensor that requires grad, and for a plain one (whose gradient the user then owns)."""
    x, w, plain = f64(X), f64([1.0, 1.0]).requires_grad_(), f64([2.0, 2.0])
    grads = square_sum_grads(x)
    assert grads.grad(w) is None
    with pytest.raises(TapeError, match="does not require grad"):
        grads.grad(plain)
    grads.grad_replace(w, f64([0.5, -0.25]))
    grads.grad_replace(plain, f64([1.5, 0.75]))
    got = grads.grad(w)
    assert got is not None
    np.testing.assert_array_equal(got.numpy(), [0.5, -0.25])
    np.testing.assert_array_equal(grads.get(w).numpy(), [0.5, -0.25])
    got_plain = grads.grad(plain)
    assert got_plain is not None
    np.testing.assert_array_equal(got_plain.numpy(), [1.5, 0.75])
    np.testing.assert_array_equal(grads.get(plain).numpy(), [1.5, 0.75])
    np.testing.assert_array_equal(grads.get(x).numpy(), [2.0, 4.0, 6.0])  # others untouched


def test_seed_grad_replace_replaces_a_present_gradient() -> None:
    """Replacing a present gradient: ``get`` and ``grad`` return the new one, from a tensor or an array."""
    x = f64(X)
    grads = square_sum_grads(x)
    g = grads.grad(x)
    assert g is not None
    grads.grad_replace(x, g * 0.5)  # Burn's round trip: read, transform, write back
    np.testing.assert_array_equal(grads.get(x).numpy(), [1.0, 2.0, 3.0])
    grads.grad_replace(x, np.array([-1.0, 0.0, 1.0]))
    np.testing.assert_array_equal(grads.get(x).numpy(), [-1.0, 0.0, 1.0])


def test_seed_grad_replace_with_a_tensor_never_writes_it() -> None:
    """The gradient tensor is stored uncopied but copied before the store writes into it: a
    backward pass accumulating onto the replaced gradient leaves the caller's tensor alone."""
    x = f64(X)
    mine = f64([10.0, 10.0, 10.0])
    grads = Gradients.leaky()
    grads.grad_replace(x, mine)
    xt = x.trace(grads)
    grads = (xt * xt).sum().backward()
    np.testing.assert_array_equal(grads.get(x).numpy(), [12.0, 14.0, 16.0])
    np.testing.assert_array_equal(mine.numpy(), [10.0, 10.0, 10.0])


def test_seed_grad_replace_takes_only_a_traced_tensors_values() -> None:
    """A traced tensor as the gradient: its values are stored, its tape plays no part."""
    x = f64([1.0, 2.0])
    traced = f64([3.0, 4.0]).leaky_trace()
    grads = Gradients.leaky()
    grads.grad_replace(x, traced)
    np.testing.assert_array_equal(grads.get(x).numpy(), [3.0, 4.0])
    assert traced.id not in grads


def test_seed_grad_replace_wrong_shape_raises() -> None:
    """A gradient of another shape is a ShapeError naming grad_replace and both shapes; the
    store is unchanged."""
    x = f64(X)
    grads = square_sum_grads(x)
    with pytest.raises(ShapeError, match=r"grad_replace: gradient tensor shape \(2,\) != tensor shape \(3,\)"):
        grads.grad_replace(x, f64([1.0, 2.0]))
    with pytest.raises(ShapeError, match=r"grad_replace: gradient shape \(3, 1\) != tensor shape \(3,\)"):
        grads.grad_replace(x, np.zeros((3, 1)))
    np.testing.assert_array_equal(grads.get(x).numpy(), [2.0, 4.0, 6.0])


def test_seed_grad_replace_wrong_dtype_raises() -> None:
    """A gradient of another dtype is a DTypeError naming grad_replace and both dtypes."""
    x = f64(X)
    grads = square_sum_grads(x)
    g32 = dev.tensor(np.array(X, dtype=np.float32))
    with pytest.raises(DTypeError, match=r"grad_replace: gradient tensor dtype float32 != tensor dtype float64"):
        grads.grad_replace(x, g32)
    with pytest.raises(DTypeError, match=r"grad_replace: gradient dtype int64 != tensor dtype float64"):
        grads.grad_replace(x, np.array([1, 2, 3], dtype=np.int64))
    np.testing.assert_array_equal(grads.get(x).numpy(), [2.0, 4.0, 6.0])
    fresh, plain = f64([0.0]).requires_grad_(), f64([0.0])
    with pytest.raises(DTypeError, match="float32"):
        grads.grad_replace(fresh, np.zeros(1, np.float32))
    assert grads.grad(fresh) is None  # a refused gradient registers nothing
    with pytest.raises(DTypeError, match="float32"):
        grads.grad_replace(plain, np.zeros(1, np.float32))
    assert plain not in grads
    with pytest.raises(TapeError, match="does not require grad"):  # nor makes a plain tensor's gradient yours
        grads.grad(plain)


def test_seed_grad_replace_before_an_optimizer_step_changes_that_step() -> None:
    """Replace the weight's gradient of a tiny ``nn.Linear`` between backward and ``SGD.step``:
    the weight moves by exactly ``-lr * replaced``, the bias by ``-lr *`` its own gradient."""
    lin = nn.Linear(2, 2, dev=dev, dtype=np.float64)
    w0, b0 = lin.weight.numpy().copy(), lin.bias.numpy().copy() if lin.bias is not None else None
    assert b0 is not None
    grads = lin.alloc_grads()
    x = f64([[1.0, 2.0]])
    grads = lin(x.trace(grads)).sum().backward()
    real = grads.grad(lin.weight)
    assert real is not None
    np.testing.assert_array_equal(real.numpy(), [[1.0, 2.0], [1.0, 2.0]])  # d(sum(x W^T + b))/dW
    replaced = np.array([[0.5, -1.0], [2.0, 0.25]])
    grads.grad_replace(lin.weight, f64(replaced))
    lr = 0.5
    SGD(lin.parameters(), lr=lr).step(grads)
    np.testing.assert_array_equal(lin.weight.numpy(), w0 - lr * replaced)
    assert not np.array_equal(lin.weight.numpy(), w0 - lr * real.numpy())
    np.testing.assert_array_equal(lin.bias.numpy() if lin.bias is not None else None, b0 - lr * np.ones(2))
    lin.zero_grads(grads)  # grad_remove for every parameter
    assert grads.grad(lin.weight) is None
    assert len(grads) == 0


# ----- inner / from_inner ----------------------------------------------------------------------


def test_seed_inner_shares_memory_and_id_and_drops_the_tape() -> None:
    """``B::inner``: the same tensor off autodiff: same array (no copy), same id, no tape."""
    x = f64(X)
    xt = x.leaky_trace()
    i = inner(xt)
    assert np.shares_memory(i.numpy(), xt.numpy())
    assert i.numpy() is xt.numpy()
    assert i.id == xt.id == x.id
    assert i.shape == (3,)
    assert i.dtype == np.float64
    assert i.device is xt.device
    assert not i.requires_grad
    assert xt.requires_grad  # the argument keeps its tape


def test_seed_inner_records_nothing_in_a_traced_pass() -> None:
    """An op on ``inner(xt)`` inside a traced pass gives an untraced output, for a traced input
    and for a module parameter (which otherwise records whenever grad mode is on)."""
    lin = nn.Linear(3, 1, dev=dev, dtype=np.float64)
    grads = lin.alloc_grads()
    xt = f64(X).trace(grads)
    y = inner(xt) * 2.0
    assert not y.requires_grad
    np.testing.assert_array_equal(y.numpy(), [2.0, 4.0, 6.0])
    assert (lin.weight * 2.0).requires_grad  # a parameter records (grad mode is on) ...
    assert not (inner(lin.weight) * 2.0).requires_grad  # ... its inner tensor does not
    assert lin.weight.requires_grad  # and stays a parameter
    with GradientTape() as tape:
        tape.watch(xt)
        assert not (inner(xt) * 2.0).requires_grad
    (xt * 1.0).sum().backward()  # end the traced pass
    assert (lin.weight * 2.0).requires_grad  # a parameter records outside a traced pass too ...
    assert not (inner(lin.weight) * 2.0).requires_grad  # ... its inner tensor still does not
    with no_grad():
        assert not (lin.weight * 2.0).requires_grad


def test_seed_from_inner_is_a_fresh_leaf_sharing_memory() -> None:
    """``B::from_inner``: back on autodiff as a new leaf: same array, new id, no history."""
    x = f64(X)
    xt = x.leaky_trace()
    a = from_inner(inner(xt))
    assert np.shares_memory(a.numpy(), x.numpy())
    assert a.id != x.id
    assert a.is_leaf
    assert not a.requires_grad
    assert a.device is x.device
    assert a.dtype == np.float64
    # a leaf of its own: tracing it gives its gradient, and none reaches x
    g = Gradients.leaky()
    at = a.trace(g)
    g = (at * at).sum().backward()
    ga = g.grad(a)
    assert ga is not None
    np.testing.assert_array_equal(ga.numpy(), [2.0, 4.0, 6.0])
    assert x not in g
    assert g.get_ref_checked(x) is None
    with pytest.raises(TapeError, match="does not require grad"):  # x took no part in a's pass
        g.grad(x)


def test_seed_inner_keeps_the_id_from_inner_stops_the_gradient() -> None:
    """In an op next to a traced tensor the two differ: a recorded op gives every operand its
    gradient, and ``inner(xt)``'s id is x's, so it lands on x (``2 x``); ``from_inner(xt)`` is
    another tensor, so x gets only the traced operand's share (``x``)."""
    x = f64(X)
    xt = x.trace(Gradients.leaky())
    g_inner = (xt * inner(xt)).sum().backward().grad(x)
    xt = x.trace(Gradients.leaky())
    g_from = (xt * from_inner(xt)).sum().backward().grad(x)
    assert g_inner is not None and g_from is not None
    np.testing.assert_array_equal(g_inner.numpy(), [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(g_from.numpy(), [1.0, 2.0, 3.0])


def test_seed_from_inner_wraps_an_array_without_copying() -> None:
    """A float32/float64 C-contiguous array is wrapped as is, on a new ``Cpu()`` or the given
    device; other layouts are copied to C order (as ``Cpu.tensor`` stores them)."""
    for dt in (np.float32, np.float64):
        arr = np.arange(6, dtype=dt).reshape(2, 3)
        t = from_inner(arr)
        assert t.numpy() is arr
        assert t.dtype == np.dtype(dt)
        assert t.shape == (2, 3)
        assert isinstance(t.device, Cpu)
        assert not t.requires_grad
        assert t.is_leaf
    arr = np.arange(6, dtype=np.float64).reshape(2, 3)
    assert from_inner(arr, device=dev).device is dev
    strided = arr.T
    t = from_inner(strided)
    assert not np.shares_memory(t.numpy(), arr)
    assert t.numpy().flags.c_contiguous
    np.testing.assert_array_equal(t.numpy(), strided)


def test_seed_inner_from_inner_wrong_kind_raises() -> None:
    """The float conversions take float32/float64 only, naming the function and the dtype."""
    mask = f64(X) > 1.5
    with pytest.raises(DTypeError, match=r"inner: expected a float tensor .* got dtype bool .*use bool_inner"):
        inner(mask)
    with pytest.raises(DTypeError, match=r"from_inner: expected a float array .* got dtype int64"):
        from_inner(np.array([1, 2], dtype=np.int64))
    with pytest.raises(DTypeError, match=r"from_inner: .* got dtype float16"):
        from_inner(np.zeros(2, np.float16))
    with pytest.raises(TypeError, match=r"from_inner: expected a Tensor or a numpy array, got list"):
        from_inner([1.0, 2.0])  # type: ignore[call-overload]
    with pytest.raises(TypeError, match=r"inner: expected a Tensor, got ndarray"):
        inner(np.zeros(2))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"from_inner: device applies to numpy arrays only"):
        from_inner(f64(X), device=dev)  # type: ignore[call-overload]


# ----- int / bool ------------------------------------------------------------------------------


def test_seed_bool_inner_and_from_inner_on_comparison_masks() -> None:
    """gradtape's bool tensors are the comparison ops' masks: ``bool_inner`` keeps the id and
    array, ``bool_from_inner`` makes a new leaf on the same array; both feed ``where``."""
    xt = f64(X).leaky_trace()
    mask = xt > 1.5
    assert mask.dtype == np.bool_
    mi = bool_inner(mask)
    assert mi.id == mask.id
    assert mi.numpy() is mask.numpy()
    assert not mi.requires_grad
    mo = bool_from_inner(mi)
    assert mo.id != mask.id
    assert np.shares_memory(mo.numpy(), mask.numpy())
    assert mo.dtype == np.bool_
    arr = np.array([True, False, True])
    ma = bool_from_inner(arr, device=dev)
    assert ma.numpy() is arr
    assert ma.device is dev
    grads = where(ma, xt, 0.0).sum().backward()
    g = grads.grad(xt)
    assert g is not None
    np.testing.assert_array_equal(g.numpy(), [1.0, 0.0, 1.0])
    with pytest.raises(DTypeError, match=r"bool_inner: expected a bool tensor .* got dtype float64"):
        bool_inner(xt)
    with pytest.raises(DTypeError, match=r"bool_from_inner: expected a bool array .* got dtype int8 .*int_inner"):
        bool_from_inner(np.zeros(2, np.int8))


def test_seed_int_inner_and_from_inner() -> None:
    """gradtape creates no int tensors itself, but a Tensor holds an integer array as given
    (and a mask's sum is int64): ``int_inner`` / ``int_from_inner`` convert them, signed or
    unsigned, and refuse floats and bools."""
    idx: Tensor[Any, NoneTape] = Tensor(np.array([0, 2], dtype=np.int64), dev)
    ii = int_inner(idx)
    assert ii.id == idx.id
    assert ii.numpy() is idx.numpy()
    assert ii.dtype == np.int64
    io = int_from_inner(ii)
    assert io.id != idx.id
    assert np.shares_memory(io.numpy(), idx.numpy())
    counted = (f64(X) > 1.5).sum()
    assert int_inner(counted).item() == 2
    u = np.array([1, 2, 3], dtype=np.uint8)
    tu = int_from_inner(u)
    assert tu.numpy() is u
    assert tu.dtype == np.uint8
    assert isinstance(tu.device, Cpu)
    traced: Tensor[Any, Any] = Tensor(np.array([1, 2], dtype=np.int32), dev).leaky_trace()
    assert traced.requires_grad
    assert not int_inner(traced).requires_grad
    with pytest.raises(DTypeError, match=r"int_inner: expected an int tensor .* got dtype float64 .*use inner"):
        int_inner(f64(X))
    with pytest.raises(DTypeError, match=r"int_from_inner: expected an int array .* got dtype bool"):
        int_from_inner(np.array([True]))
    with pytest.raises(DTypeError, match=r"int_inner: .* got dtype float32"):
        int_inner(dev.tensor([1.0]))
