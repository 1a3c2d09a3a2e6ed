"""The Tensor API (array facts, tracing, tape plumbing, errors) and the Cpu device's creation methods."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, DTypeError, Gradients, GradientTape, NoneTape, ShapeError, TapeError, Tensor
from gradtape.tape import NONE_TAPE

DEV = Cpu()


def t64(values: Any) -> Tensor[Any, Any]:
    """An untraced float64 tensor."""
    return DEV.tensor(np.array(values, dtype=np.float64))


# ----- array facts ---------------------------------------------------------------------------------


def test_shape_dtype_ndim_size() -> None:
    """shape, dtype, ndim and size describe the data."""
    t = DEV.zeros((2, 3, 4))
    assert t.shape == (2, 3, 4)
    assert t.dtype == np.float32
    assert t.ndim == 3
    assert t.size == 24


def test_numpy_is_the_tensors_buffer() -> None:
    """numpy() returns the values (the tensor's own buffer)."""
    t = DEV.tensor([[1.0, 2.0], [3.0, 4.0]])
    a = t.numpy()
    np.testing.assert_array_equal(a, [[1.0, 2.0], [3.0, 4.0]])
    assert a is t.data


def test_asarray_uses_array_protocol() -> None:
    """np.asarray(t) gives the values; a dtype request converts."""
    t = DEV.tensor([1.0, 2.0])
    a = np.asarray(t)
    np.testing.assert_array_equal(a, [1.0, 2.0])
    assert a.dtype == np.float32
    b = np.asarray(t, dtype=np.float64)
    assert b.dtype == np.float64
    np.testing.assert_array_equal(b, [1.0, 2.0])


def test_array_copy_true_copies() -> None:
    """np.array(t, copy=True) does not share memory with the tensor."""
    t = DEV.tensor([1.0, 2.0])
    c = np.array(t, copy=True)
    c[0] = 5.0
    assert t.numpy()[0] == 1.0


def test_item_of_scalar() -> None:
    """item() of a one-element tensor is a Python float."""
    v = DEV.tensor([1.5, 2.0]).sum().item()
    assert isinstance(v, float)
    assert v == 3.5
    assert DEV.tensor([[2.5]]).item() == 2.5


def test_item_of_many_elements_raises() -> None:
    """item() of a tensor with several elements is a ShapeError naming its shape."""
    with pytest.raises(ShapeError, match=r"\(2,\)"):
        DEV.tensor([1.0, 2.0]).item()


def test_len() -> None:
    """len() is the first dim; a 0-d tensor has no len."""
    assert len(DEV.zeros((4, 2))) == 4
    with pytest.raises(TypeError):
        len(DEV.zeros(()))


# ----- trace / split_tape / put_tape / retaped -----------------------------------------------------


def test_trace_shares_id_and_data() -> None:
    """x.trace(grads) is the same tensor (id, data) on a new tape filling grads."""
    x = DEV.tensor([1.0, 2.0])
    g = Gradients.leaky()
    xt = x.trace(g)
    assert xt.id == x.id
    assert xt.data is x.data
    assert isinstance(xt.tape, GradientTape)
    assert xt.tape.gradients is g
    assert x.tape is NONE_TAPE


def test_leaky_trace_shares_id_and_data() -> None:
    """leaky_trace() is trace into a fresh leaky store."""
    x = DEV.tensor([1.0, 2.0])
    xt = x.leaky_trace()
    assert xt.id == x.id
    assert xt.data is x.data
    assert isinstance(xt.tape, GradientTape)
    assert len(xt.tape) == 0


def test_trace_twice_gives_separate_tapes() -> None:
    """Each trace starts its own tape."""
    x = DEV.tensor([1.0])
    a, b = x.leaky_trace(), x.leaky_trace()
    assert a.tape is not b.tape
    c = a.leaky_trace()
    assert c.tape is not a.tape
    assert c.id == x.id


def test_is_leaf() -> None:
    """Traced and created tensors are leafs; op outputs are not."""
    x = DEV.tensor([1.0]).leaky_trace()
    assert x.is_leaf
    assert not (x * 2.0).is_leaf
    assert DEV.tensor([1.0]).is_leaf


def test_split_tape() -> None:
    """split_tape() gives (untraced same tensor, its tape)."""
    xt = DEV.tensor([1.0, 2.0]).leaky_trace()
    plain, tape = xt.split_tape()
    assert tape is xt.tape
    assert plain.tape is NONE_TAPE
    assert plain.id == xt.id
    assert plain.data is xt.data


def test_put_tape() -> None:
    """put_tape() gives the same tensor carrying the given tape."""
    x = DEV.tensor([1.0, 2.0])
    tape = GradientTape()
    y = x.put_tape(tape)
    assert y.tape is tape
    assert y.id == x.id
    assert y.data is x.data
    assert x.tape is NONE_TAPE


def test_put_tape_rejects_non_tape() -> None:
    """put_tape() of something that is not a tape is a TypeError."""
    x = DEV.tensor([1.0])
    bad: Any = Gradients.leaky()
    with pytest.raises(TypeError, match="put_tape"):
        x.put_tape(bad)


def test_retaped() -> None:
    """retaped() drops the tape on the copy only; retaped(tape) puts another."""
    xt = DEV.tensor([1.0]).leaky_trace()
    r = xt.retaped()
    assert r.tape is NONE_TAPE
    assert isinstance(xt.tape, GradientTape)
    assert r.id == xt.id
    other = GradientTape()
    assert xt.retaped(other).tape is other
    assert xt.tape is not other


def test_hand_written_op_with_split_and_put_tape() -> None:
    """dfdx's negate, written by hand with split_tape/add_backward_op/put_tape, gets d/dx = -1."""
    x = t64([1.0, 2.0])
    xp, tape = x.leaky_trace().split_tape()
    y = DEV.tensor(-xp.numpy())

    def backward(grads: Gradients) -> None:
        gx, gy = grads.mut_and_ref(xp, y)
        DEV.axpy(gx, -1.0, gy)

    tape.add_backward_op(backward)
    yt = y.put_tape(tape)
    g = (yt * 3.0).sum().backward()
    np.testing.assert_array_equal(g.get(x).numpy(), [-3.0, -3.0])


def test_ops_keep_tape_of_traced_input() -> None:
    """An op on a traced and an untraced tensor records onto the traced one's tape."""
    xt = DEV.tensor([1.0]).leaky_trace()
    w = DEV.tensor([2.0])
    y = w * xt
    assert isinstance(y.tape, GradientTape)
    assert y.tape._root() is xt.tape
    assert len(xt.tape) == 1


def test_put_tape_with_a_fresh_none_tape_instance() -> None:
    """A tensor carrying NoneTape() (not the shared instance) works like an untraced tensor."""
    x = DEV.tensor([1.0, 2.0]).put_tape(NoneTape())
    y = x * 2.0 + x
    np.testing.assert_array_equal(y.numpy(), [3.0, 6.0])
    assert isinstance(y.tape, NoneTape)


# ----- backward errors -----------------------------------------------------------------------------


def test_backward_without_tape_raises() -> None:
    """backward() of an untraced tensor (nothing recorded it) is a TapeError naming its shape
    and saying it does not require grad."""
    t: Any = DEV.zeros((2, 3))
    with pytest.raises(TapeError, match=r"\(2, 3\) does not require grad.*nothing recorded it"):
        t.backward()


def test_backward_of_untraced_scalar_raises() -> None:
    """Even a scalar needs a recorded history: the result of untraced ops requires no grad."""
    t: Any = DEV.zeros((2, 3)).sum()
    with pytest.raises(TapeError, match=r"shape \(\) does not require grad.*nothing recorded it"):
        t.backward()


def test_backward_of_leaf_requiring_grad_raises() -> None:
    """backward() of a leaf that requires grad (no op recorded it) is a TapeError too."""
    t: Any = DEV.zeros((2, 3)).requires_grad_()
    with pytest.raises(TapeError, match=r"does not require grad.*it is a leaf"):
        t.backward()


def test_backward_non_scalar_raises() -> None:
    """backward() of a traced result with more than one element is a TapeError naming its shape
    (PyTorch's message); the tape is not consumed."""
    t: Any = DEV.zeros((2, 3)).leaky_trace() * 2.0
    with pytest.raises(TapeError, match=r"only for one-element outputs; got shape \(2, 3\)"):
        t.backward()
    assert not t.tape.consumed


def test_backward_of_one_element_result() -> None:
    """backward() without a gradient works on any one-element result, not only shape () (PyTorch)."""
    x = DEV.tensor(np.array([[3.0]]))
    g = (x.leaky_trace() * 2.0).backward()
    np.testing.assert_array_equal(g.get(x).numpy(), [[2.0]])


def test_backward_twice_raises() -> None:
    """backward() consumes the tape: a second call raises."""
    loss = DEV.tensor([1.0]).leaky_trace().sum()
    loss.backward()
    with pytest.raises(TapeError):
        loss.backward()


# ----- dtype and shape errors ----------------------------------------------------------------------


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_dtype_mix_raises_naming_op_and_shapes(op: str) -> None:
    """float32 meets float64: DTypeError naming the op, both dtypes and both shapes."""
    a: Any = DEV.zeros((2, 3), dtype=np.float32)
    b: Any = DEV.ones((3,), dtype=np.float64)
    with pytest.raises(DTypeError) as ei:
        getattr(a, op)(b)
    msg = str(ei.value)
    assert msg.startswith(op)
    for s in ("float32", "float64", "(2, 3)", "(3,)"):
        assert s in msg


def test_dtype_mix_same_shape_add_raises() -> None:
    """The same-shape fast path of + also refuses to mix dtypes."""
    a = DEV.zeros((2,), dtype=np.float32)
    b: Any = DEV.zeros((2,), dtype=np.float64)
    with pytest.raises(DTypeError, match="add"):
        a + b


def test_dtype_mix_matmul_raises() -> None:
    """matmul of float32 and float64: DTypeError naming matmul and both shapes."""
    a = DEV.zeros((2, 3), dtype=np.float32)
    b: Any = DEV.zeros((3, 4), dtype=np.float64)
    with pytest.raises(DTypeError) as ei:
        a @ b
    msg = str(ei.value)
    assert "matmul" in msg and "(2, 3)" in msg and "(3, 4)" in msg


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_elementwise_shape_mismatch_raises(op: str) -> None:
    """Shapes that do not broadcast: ShapeError naming the op and both shapes."""
    a: Any = DEV.zeros((3,))
    b: Any = DEV.zeros((4,))
    with pytest.raises(ShapeError) as ei:
        getattr(a, op)(b)
    msg = str(ei.value)
    assert op in msg and "(3,)" in msg and "(4,)" in msg


def test_shape_mismatch_traced_records_nothing() -> None:
    """A failing op on traced tensors neither merges nor records."""
    a, b = DEV.zeros((3,)).leaky_trace(), DEV.zeros((4,)).leaky_trace()
    with pytest.raises(ShapeError):
        a + b
    assert isinstance(a.tape, GradientTape)
    assert a.tape._root() is a.tape
    assert len(a.tape) == 0
    assert isinstance(b.tape, GradientTape)
    assert b.tape._root() is b.tape


def test_matmul_inner_dim_mismatch_raises() -> None:
    """matmul with different inner dims: ShapeError naming matmul and both shapes."""
    a = DEV.zeros((2, 3))
    b: Any = DEV.zeros((4, 2))
    with pytest.raises(ShapeError) as ei:
        a @ b
    msg = str(ei.value)
    assert "matmul" in msg and "(2, 3)" in msg and "(4, 2)" in msg


def test_matmul_rank0_raises() -> None:
    """matmul needs operands of rank 1 or more (numpy's rule); 1-D..4-D are supported."""
    a: Any = DEV.zeros(())
    with pytest.raises(ShapeError, match="matmul"):
        a @ DEV.zeros((3, 2))


# ----- numpy interop must not escape the tape --------------------------------------------------------


def test_array_ufunc_is_none() -> None:
    """Tensor opts out of numpy ufuncs, so numpy defers to the tensor's operators."""
    assert Tensor.__array_ufunc__ is None


BINOPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "@": operator.matmul,
}


@pytest.mark.parametrize("op", sorted(BINOPS))
def test_ndarray_op_tensor_raises_type_error(op: str) -> None:
    """ndarray (op) tensor raises TypeError instead of returning a tape-less ndarray."""
    arr = np.ones((2, 2), dtype=np.float32)
    t = DEV.ones((2, 2)).leaky_trace()
    with pytest.raises(TypeError):
        BINOPS[op](arr, t)
    assert isinstance(t.tape, GradientTape)
    assert len(t.tape) == 0  # nothing was recorded


@pytest.mark.parametrize("op", sorted(BINOPS))
def test_tensor_op_ndarray_raises_type_error(op: str) -> None:
    """tensor (op) ndarray raises TypeError (wrap arrays with dev.tensor)."""
    arr = np.ones((2, 2), dtype=np.float32)
    t = DEV.ones((2, 2)).leaky_trace()
    with pytest.raises(TypeError):
        BINOPS[op](t, arr)


def test_numpy_scalar_times_tensor_keeps_tape_and_dtype() -> None:
    """np.float64(2) * float32 tensor is the tensor's __rmul__: float32, on the tape."""
    t = DEV.tensor([1.0, 2.0]).leaky_trace()
    y = np.float64(2.0) * t
    assert isinstance(y, Tensor)
    assert y.dtype == np.float32
    assert y.tape is t.tape
    np.testing.assert_array_equal(y.numpy(), [2.0, 4.0])


def test_python_scalar_keeps_float32() -> None:
    """A Python float operand does not promote a float32 tensor."""
    t = DEV.tensor([1.0, 2.0])
    for y in (t + 1.5, 1.5 - t, t * 0.5, 2.0 / t):
        assert y.dtype == np.float32


# ----- Cpu device ---------------------------------------------------------------------------------------


def test_tensor_from_list_infers_dtype_as_torch() -> None:
    """dev.tensor(list) infers the dtype as torch.tensor does: Python floats give float32,
    Python ints int64, Python bools bool."""
    t = DEV.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert t.dtype == np.float32
    np.testing.assert_array_equal(t.numpy(), [[1, 2], [3, 4]])
    assert DEV.tensor([1, 2.5]).dtype == np.float32  # any float makes it float
    ti = DEV.tensor([[1, 2], [3, 4]])
    assert ti.dtype == np.int64
    np.testing.assert_array_equal(ti.numpy(), [[1, 2], [3, 4]])
    tb = DEV.tensor([True, False])
    assert tb.dtype == np.bool_
    np.testing.assert_array_equal(tb.numpy(), [True, False])


def test_tensor_keeps_float64_array() -> None:
    """A float64 numpy array keeps its dtype."""
    assert DEV.tensor(np.zeros(2, dtype=np.float64)).dtype == np.float64
    assert DEV.tensor(np.zeros(2, dtype=np.float32)).dtype == np.float32


def test_tensor_int_array_keeps_its_dtype() -> None:
    """An integer numpy array keeps its dtype (as torch.tensor); dtype= makes it float."""
    assert DEV.tensor(np.arange(3, dtype=np.int64)).dtype == np.int64
    assert DEV.tensor(np.arange(3, dtype=np.int32)).dtype == np.int32
    t = DEV.tensor(np.arange(3), dtype=np.float32)
    assert t.dtype == np.float32
    np.testing.assert_array_equal(t.numpy(), [0.0, 1.0, 2.0])


def test_tensor_explicit_dtype() -> None:
    """dtype= converts."""
    assert DEV.tensor([1.0], dtype=np.float64).dtype == np.float64
    assert DEV.tensor(np.zeros(1), dtype=np.float32).dtype == np.float32


def test_tensor_copies_data() -> None:
    """dev.tensor copies its input."""
    src = np.array([1.0, 2.0])
    t = DEV.tensor(src)
    src[0] = 9.0
    assert t.numpy()[0] == 1.0


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float16, np.complex128, np.bool_])
def test_bad_dtype_raises(dtype: Any) -> None:
    """zeros makes float32 and float64 tensors only; dev.tensor refuses float16 and complex (and
    makes integer and bool tensors, which cannot require grad)."""
    with pytest.raises(DTypeError):
        DEV.zeros((2,), dtype=dtype)
    if np.dtype(dtype).kind in "biu":
        t = DEV.tensor([1.0], dtype=dtype)
        assert t.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(t.numpy(), np.array([1], dtype=dtype))
        with pytest.raises(DTypeError, match="only float tensors can require gradients"):
            DEV.tensor([1.0], dtype=dtype, requires_grad=True)
    else:
        with pytest.raises(DTypeError):
            DEV.tensor([1.0], dtype=dtype)


def test_bad_data_dtype_raises() -> None:
    """Complex or string data is refused."""
    with pytest.raises(DTypeError):
        DEV.tensor(np.array([1 + 2j]))
    with pytest.raises(DTypeError):
        DEV.tensor(np.array(["a"]))


@pytest.mark.parametrize("make", ["zeros", "ones", "randn", "rand"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_creation_shape_and_dtype(make: str, dtype: Any) -> None:
    """zeros/ones/randn/rand give the asked shape and dtype, untraced."""
    t = getattr(DEV, make)((3, 2), dtype=dtype)
    assert t.shape == (3, 2)
    assert t.dtype == np.dtype(dtype)
    assert t.tape is NONE_TAPE


def test_creation_default_dtype_float32() -> None:
    """Creation methods default to float32."""
    for t in (DEV.zeros((2,)), DEV.ones((2,)), DEV.randn((2,)), DEV.rand((2,))):
        assert t.dtype == np.float32


def test_zeros_and_ones_values() -> None:
    """zeros are 0, ones are 1."""
    np.testing.assert_array_equal(DEV.zeros((2, 2)).numpy(), np.zeros((2, 2)))
    np.testing.assert_array_equal(DEV.ones((3,), dtype=np.float64).numpy(), np.ones(3))


def test_seeded_randn_reproducible() -> None:
    """Two Cpu(seed=1) give the same samples; another seed gives different ones."""
    a = Cpu(seed=1).randn((4, 3), dtype=np.float64).numpy()
    b = Cpu(seed=1).randn((4, 3), dtype=np.float64).numpy()
    c = Cpu(seed=2).randn((4, 3), dtype=np.float64).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_seeded_rand_reproducible_and_in_range() -> None:
    """rand is reproducible and in [low, high)."""
    a = Cpu(seed=3).rand((1000,), low=-2.0, high=5.0).numpy()
    b = Cpu(seed=3).rand((1000,), low=-2.0, high=5.0).numpy()
    np.testing.assert_array_equal(a, b)
    assert a.min() >= -2.0 and a.max() < 5.0
    assert a.dtype == np.float32


def test_successive_samples_differ() -> None:
    """The generator advances: two draws from one device differ."""
    dev = Cpu(seed=0)
    assert not np.array_equal(dev.randn((5,)).numpy(), dev.randn((5,)).numpy())


def test_bad_shape_raises() -> None:
    """Shapes are tuples of non-negative ints."""
    bad: Any = [2, 3]
    with pytest.raises(TypeError):
        DEV.zeros(bad)
    with pytest.raises(TypeError):
        DEV.ones((2, -1))


def test_float64_end_to_end() -> None:
    """A float64 forward and backward stays float64."""
    x = DEV.randn((2, 3), dtype=np.float64)
    w = DEV.randn((3, 1), dtype=np.float64).requires_grad_()
    g = (x.leaky_trace() @ w).exp().sum().backward()
    gw = g.get(w)
    assert gw.dtype == np.float64
    expected = x.numpy().T @ np.exp(x.numpy() @ w.numpy())
    np.testing.assert_allclose(gw.numpy(), expected, rtol=1e-12)
    assert w.grad is not None and w.grad.dtype == np.float64
    np.testing.assert_allclose(w.grad.numpy(), expected, rtol=1e-12)
