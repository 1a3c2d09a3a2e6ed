"""Users' dtype reports, each fixed in a shared rule (``ops._util``'s float rule and
``int_indices``, ``Cpu.tensor``'s dtype inference, the ``pow`` dispatch, var/std's forward).

Each test is the user's program: an integer tensor averaged, a complex array given to
``dev.tensor``, float indices given to an embedding, a scalar ``gather``, a float16 batch,
``2.0 ** t`` and ``a ** b``, the variance of data far from 0; compared against PyTorch (in
float64 where numbers are compared) or numpy where they apply.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import gradtape
from gradtape import Cpu, Tensor, functional, nn, ops
from gradtape.errors import DTypeError

F64 = np.float64
Array = np.ndarray[Any, Any]

COUNTS = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int64)
MASK = np.array([[True, False, True], [False, True, True]])


# ----- 1. float ops refuse integer and bool tensors, as methods and as functions ----------------

Call = Callable[[Any], Any]
FLOAT_OPS: dict[str, tuple[Call, Call]] = {
    # op: (the Tensor method spelling, the functional spelling)
    "mean": (lambda t: t.mean(), lambda t: ops.mean(t)),
    "var": (lambda t: t.var(), lambda t: ops.var(t)),
    "std": (lambda t: t.std(axis=0), lambda t: ops.std(t, axis=0)),
    "logsumexp": (lambda t: t.logsumexp(axis=1), lambda t: ops.logsumexp(t, axis=1)),
    "softmax": (lambda t: t.softmax(-1), lambda t: ops.softmax(t, -1)),
    "log_softmax": (lambda t: t.log_softmax(-1), lambda t: ops.log_softmax(t, -1)),
    "exp": (lambda t: t.exp(), lambda t: ops.exp(t)),
    "log": (lambda t: t.log(), lambda t: ops.log(t)),
    "sin": (lambda t: t.sin(), lambda t: ops.sin(t)),
    "cos": (lambda t: t.cos(), lambda t: ops.cos(t)),
    "tanh": (lambda t: t.tanh(), lambda t: ops.tanh(t)),
    "sqrt": (lambda t: t.sqrt(), lambda t: ops.sqrt(t)),
    "recip": (lambda t: t.recip(), lambda t: ops.recip(t)),
    "nans_to": (lambda t: t.nans_to(0.0), lambda t: ops.nans_to(t, 0.0)),
    "leaky_relu": (lambda t: t.leaky_relu(0.1), lambda t: ops.leaky_relu(t, 0.1)),
    # div of two integer or bool tensors is PyTorch's true division, float32; abs, square,
    # pow, clamp, sign and the rounding ops run PyTorch's integer kernels (dtype kept):
    # tests/test_int_arithmetic.py compares them with PyTorch
    # the method path raised numpy's "Unsupported dtype dtype('int64') for random"
    "dropout": (lambda t: t.dropout(0.5), lambda t: ops.dropout(t, 0.5)),
    "matmul": (lambda t: t @ t.T, lambda t: ops.matmul(t, t.T)),
}


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("data", [COUNTS, MASK], ids=["int64", "bool"])
@pytest.mark.parametrize("op", list(FLOAT_OPS))
def test_float_ops_refuse_integer_and_bool_tensors_on_both_paths(op: str, data: Array) -> None:
    """``Tensor(int64).mean()`` returned an int64 0 (bool too), ``mask.exp()`` a float16 array,
    while ``gradtape.ops.mean`` refused: the methods skipped the functional API's check. Both
    spellings now raise the same DTypeError naming the op, the dtype and the shape. (The
    elementwise ops check after numpy's forward, which may warn on log(0) first.)"""
    dev = Cpu()
    t = dev.tensor(data)
    name = op.split()[0]
    want = rf"^{name}: \w+ has dtype {data.dtype} \(shape \(2, 3\)\); {name} takes float32 or float64"
    method, function = FLOAT_OPS[op]
    with pytest.raises(DTypeError, match=want):
        method(t)
    with pytest.raises(DTypeError, match=want):
        function(t)


@pytest.mark.parametrize("data", [COUNTS, MASK], ids=["int64", "bool"])
def test_pytorch_refuses_the_integer_mean_too_and_exact_reductions_still_count(data: Array) -> None:
    """PyTorch refuses ``mean``/``var``/``std`` of integers and bools; ``sum``/``max``/``min`` are
    exact on them (``(pred == y).sum()`` counts) in both libraries and both spellings."""
    torch = pytest.importorskip("torch")
    dev = Cpu()
    t, tt = dev.tensor(data), torch.tensor(data)
    for name in ("mean", "var", "std"):
        with pytest.raises(RuntimeError):
            getattr(tt, name)()
        with pytest.raises(DTypeError, match=rf"^{name}: "):
            getattr(t, name)()
    for name in ("sum", "max", "min"):
        got, via_ops = getattr(t, name)(), getattr(ops, name)(t)
        want = getattr(tt, name)()
        assert got.item() == via_ops.item() == want.item()
    assert t.sum().dtype == np.int64 and str(tt.sum().dtype) == "torch.int64"
    np.testing.assert_allclose(dev.tensor(data, dtype=np.float32).mean().item(), tt.float().mean().item(), rtol=1e-7)
    got, want = 2.0**t, 2.0**tt  # a float base: PyTorch's float32 (it used to raise here)
    assert got.dtype == np.float32 and str(want.dtype) == "torch.float32"
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_index_ops_comparisons_and_arithmetic_still_take_integer_tensors() -> None:
    """The rule refuses only float ops: index ops, comparisons and exact arithmetic take any dtype."""
    dev = Cpu()
    table = dev.tensor(COUNTS)
    np.testing.assert_array_equal(ops.embedding([1, 0], table).numpy(), COUNTS[[1, 0]])
    np.testing.assert_array_equal(table.gather([1], axis=1).numpy(), COUNTS[:, [1]])
    np.testing.assert_array_equal((table > 2).numpy(), COUNTS > 2)
    np.testing.assert_array_equal((table + table).numpy(), COUNTS * 2)


@pytest.mark.parametrize("data", [COUNTS, MASK], ids=["int64", "bool"])
def test_true_division_by_a_number_promotes_integers_to_float32_as_pytorch(data: Array) -> None:
    """``int_t / 2`` gave a float64 tensor unasked; PyTorch's true division promotes integers and
    bools to its default dtype, float32, which the accuracy idiom ``(pred == y).sum() / len(y)``
    relies on. Both spellings, both sides, against PyTorch."""
    torch = pytest.importorskip("torch")
    dev = Cpu()
    t, tt = dev.tensor(data), torch.tensor(data)
    for got, want in ((t / 4, tt / 4), (ops.div(t, 4), tt / 4), (3 / t, 3 / tt), (t.sum() / 6, tt.sum() / 6)):
        assert got.dtype == np.float32 and str(want.dtype) == "torch.float32"
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    pred, y = dev.tensor(np.array([1, 2, 2, 0])), dev.tensor(np.array([1, 2, 0, 0]))
    assert ((pred == y).sum() / 4).item() == pytest.approx(0.75)


def test_negation_is_exact_on_integers_in_both_spellings_as_in_pytorch() -> None:
    """``-t`` worked on an int64 tensor while ``ops.neg(t)`` refused it: negation is exact on
    integers (PyTorch's ``torch.neg`` takes them), so both spellings now give PyTorch's result."""
    torch = pytest.importorskip("torch")
    dev = Cpu()
    t = dev.tensor(COUNTS)
    want = torch.neg(torch.tensor(COUNTS)).numpy()
    for got in (-t, ops.neg(t)):
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got.numpy(), want)
    with pytest.raises(RuntimeError):  # PyTorch refuses negating bools
        torch.neg(torch.tensor(MASK))
    m = dev.tensor(MASK)
    refusal = r"^neg: a has dtype bool \(shape \(2, 3\)\); negation is not defined"
    with pytest.raises(DTypeError, match=refusal):
        -m  # noqa: B018
    with pytest.raises(DTypeError, match=refusal):
        ops.neg(m)


# ----- 2. complex input: errors that name the op or constructor and the dtype -------------------


def test_a_hook_returning_a_complex_gradient_is_refused_not_truncated() -> None:
    """A ``register_hook`` function returning a complex gradient silently lost its imaginary
    part (cast to the tensor's dtype); PyTorch refuses a hook result of another dtype too."""
    dev = Cpu()
    w = dev.tensor(np.ones(3)).requires_grad_()
    w.register_hook(lambda g: g.numpy() * (1 + 1j))
    with pytest.raises(DTypeError, match=r"^register_hook: the hook returned a gradient of dtype complex128"):
        (w * 2.0).sum().backward()


def test_a_complex_learning_rate_is_refused_naming_the_optimizer_and_argument() -> None:
    """``SGD(params, lr=1j)`` raised float()'s bare TypeError, which names nothing."""
    from gradtape import optim

    model = nn.Linear(2, 2, dev=Cpu())
    with pytest.raises(TypeError, match=r"^SGD: lr must be a real number, got complex 1j"):
        optim.SGD(model.parameters(), lr=1j)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^Adam: lr must be a real number"):
        optim.Adam(model.parameters(), lr=1j)  # type: ignore[arg-type]


def test_complex_data_is_refused_by_the_constructors_naming_them_and_the_dtype() -> None:
    dev = Cpu()
    for data in (np.array([1 + 2j]), [1 + 2j], 1 + 2j, np.complex64(1)):
        with pytest.raises(DTypeError, match=r"^tensor: cannot make a tensor from dtype complex(64|128) .*complex"):
            dev.tensor(data)
        with pytest.raises(DTypeError, match=r"^tensor: cannot make a tensor from dtype complex"):
            dev.tensor(data, dtype=np.float32)  # an explicit dtype does not drop the imaginary part
    with pytest.raises(DTypeError, match=r"^tensor: dtype complex64 is not supported"):
        dev.tensor([1.0], dtype=np.complex64)
    with pytest.raises(DTypeError, match=r"^Tensor: dtype complex128 "):
        Tensor(np.array([1j]), dev)
    with pytest.raises(DTypeError, match=r"^from_numpy: dtype complex128 "):
        dev.from_numpy(np.array([1j]))


COMPLEX_ARGS: dict[str, Callable[[Tensor[Any, Any]], Any]] = {
    "mul": lambda t: t * 1j,  # type: ignore[operator]
    "add": lambda t: 1j + t,  # type: ignore[operator]
    "div": lambda t: t / np.complex64(1j),  # type: ignore[operator]
    "pow": lambda t: t ** (1 + 2j),  # type: ignore[operator]
    "rpow": lambda t: (1 + 2j) ** t,  # type: ignore[operator]
    "clamp": lambda t: t.clamp(max=1j),  # type: ignore[arg-type]
    "maximum": lambda t: ops.maximum(t, 1j),  # type: ignore[call-overload]
    "lt": lambda t: t < 1j,  # type: ignore[operator]
    "var": lambda t: t.var(correction=1j),  # type: ignore[call-overload]
    "std": lambda t: t.std(ddof=1j),  # type: ignore[call-overload]
    "gather": lambda t: t.gather(1j),  # type: ignore[call-overload]
    "rand": lambda t: t.device.rand((2,), low=1j),  # type: ignore[arg-type]
    "Cpu": lambda t: Cpu(seed=1j),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("op", list(COMPLEX_ARGS))
def test_complex_arguments_raise_an_error_naming_the_op_and_the_type(op: str) -> None:
    """A complex scalar where a real number belongs: TypeError (DTypeError for index arrays)
    naming the op, never numpy's or Python's unnamed ``float() argument ...``."""
    t = Cpu().tensor([1.0, 2.0])
    with pytest.raises((TypeError, DTypeError), match=rf"^{op}: .*complex"):
        COMPLEX_ARGS[op](t)


# ----- 3. embedding indices: a float tensor is refused, not truncated ----------------------------


def test_embedding_refuses_float_and_bool_index_tensors_as_pytorch_does() -> None:
    """``nn.Embedding(5, 2)(dev.tensor([1.7, 2.2]))`` read rows 1 and 2 (a list was refused)."""
    torch = pytest.importorskip("torch")
    dev = Cpu(seed=0)
    emb = nn.Embedding(5, 2, dev=dev, dtype=F64)
    ref = torch.nn.Embedding(5, 2, dtype=torch.float64)
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(emb.weight.numpy()))
    with pytest.raises(RuntimeError, match="indices"):
        ref(torch.tensor([1.7, 2.2]))
    with pytest.raises(DTypeError, match=r"^embedding: indices must be integers, got dtype float32 of shape \(2,\)"):
        emb(dev.tensor([1.7, 2.2]))
    with pytest.raises(DTypeError, match=r"^embedding: indices must be integers, got dtype bool"):
        emb(dev.tensor([True, False]))
    # integer tensors (any width, a traced one included) still look up and train the table
    idx = np.array([[4, 0], [2, 2]])
    for index in (dev.tensor(idx), dev.tensor(idx, dtype=np.int32), dev.tensor(idx).leaky_trace()):
        out = emb(index)
        want = ref(torch.from_numpy(idx))
        np.testing.assert_allclose(out.numpy(), want.detach().numpy(), rtol=0)
    w = np.linspace(-1.0, 1.0, 8).reshape(2, 2, 2)
    g = (emb(dev.tensor(idx).leaky_trace()) * dev.tensor(w)).sum().backward().get(emb.weight)
    ref.weight.grad = None
    (ref(torch.from_numpy(idx)) * torch.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(g.numpy(), ref.weight.grad.numpy(), rtol=1e-15)


# ----- 4. a scalar index drops the axis, as np.take does -----------------------------------------


@pytest.mark.parametrize(
    ("index", "axis"),
    [(3, 0), (-1, 0), (2, 1), (np.int64(1), -1), (np.array(2), 0), ("tensor", 1)],
    ids=["3-axis0", "neg-axis0", "2-axis1", "np.int64-axis-1", "0d-array", "0d-tensor"],
)
def test_gather_with_a_scalar_index_matches_np_take_and_its_gradient(index: Any, axis: int) -> None:
    """``gather(x, 3, axis=0)`` gave shape ``(1, 3)``; ``np.take(x, 3, axis=0)`` is ``(3,)``. The
    gradient is PyTorch's for ``x.select(axis, index)``."""
    torch = pytest.importorskip("torch")
    dev = Cpu(seed=1)
    x0 = dev.randn((4, 3), dtype=F64).numpy()
    idx = dev.tensor(np.array(2)) if isinstance(index, str) else index
    i = 2 if isinstance(index, str) else int(index)
    want = np.take(x0, i, axis=axis)
    x = dev.tensor(x0).leaky_trace()
    y = ops.gather(x, idx, axis=axis)
    assert y.shape == want.shape
    np.testing.assert_array_equal(y.numpy(), want)
    assert x.gather(idx, axis).shape == want.shape
    w = np.arange(1.0, want.size + 1).reshape(want.shape)
    g = (y * dev.tensor(w)).sum().backward().get(x)
    xt = torch.tensor(x0, requires_grad=True)
    (xt.select(axis, i) * torch.from_numpy(w)).sum().backward()
    np.testing.assert_array_equal(g.numpy(), xt.grad.numpy())


def test_a_scalar_index_in_embedding_and_index_select_follows_pytorch() -> None:
    """F.embedding of a 0-d index gives one row ``(dim,)``; index_select of a 0-d index keeps the
    axis (PyTorch's ``index_select`` takes 0-d indices as one entry)."""
    torch = pytest.importorskip("torch")
    dev = Cpu(seed=2)
    w0 = dev.randn((5, 3), dtype=F64).numpy()
    w = dev.tensor(w0)
    assert ops.embedding(3, w).shape == torch.nn.functional.embedding(torch.tensor(3), torch.from_numpy(w0)).shape
    np.testing.assert_array_equal(ops.embedding(3, w).numpy(), w0[3])
    got = w.index_select(np.array(1), axis=1)
    want = torch.index_select(torch.from_numpy(w0), 1, torch.tensor(1))
    assert got.shape == tuple(want.shape) == (5, 1)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


# ----- 5. float16 and long double are not converted silently -----------------------------------


@pytest.mark.parametrize("dtype", [np.float16, np.longdouble])
def test_a_float16_or_long_double_array_raises_unless_a_dtype_is_given(dtype: Any) -> None:
    """``dev.tensor(float16 array)`` silently became float32; PyTorch keeps float16, which
    gradtape does not compute in: it now says so, and ``dtype=np.float32`` converts."""
    torch = pytest.importorskip("torch")
    dev = Cpu()
    x = np.array([[0.1, 1.5], [-2.25, 3.0]], dtype=dtype)
    name = np.dtype(dtype).name
    with pytest.raises(DTypeError, match=rf"^tensor: data has dtype {name} .*pass dtype=np.float32"):
        dev.tensor(x)
    with pytest.raises(DTypeError, match=rf"^tensor: data has dtype {name} "):
        dev.tensor(list(x.ravel()))  # numpy scalars of that dtype, in a list
    t = dev.tensor(x, dtype=np.float32)
    assert t.dtype == np.float32
    np.testing.assert_array_equal(t.numpy(), torch.tensor(x.astype(np.float64), dtype=torch.float32).numpy())
    if dtype is np.float16:
        with pytest.raises(DTypeError, match=r"^tensor: data has dtype float16"):
            dev.tensor(torch.from_numpy(x))
        assert dev.tensor(torch.from_numpy(x), dtype=np.float64).dtype == np.float64


def test_the_other_inferred_dtypes_follow_torch_tensor() -> None:
    """Arrays keep their dtype (a big-endian float64 file stays float64, not float32), Python
    floats give float32, ints int64, bools bool, as ``torch.tensor``."""
    torch = pytest.importorskip("torch")
    dev = Cpu()
    cases: list[Any] = [
        np.array([1.0, 2.0], dtype=">f8"),
        np.array([1, 2], dtype=">i4"),
        np.float64(2.5),
        torch.tensor([1.0, 2.0], dtype=torch.float64),
        [1.5, 2.0],
        [1, 2],
        [True, False],
        2.5,
    ]
    for data in cases:
        t = dev.tensor(data)
        if isinstance(data, np.ndarray):
            want = torch.tensor(data.astype(data.dtype.newbyteorder("=")))
        else:
            want = data.clone() if isinstance(data, torch.Tensor) else torch.tensor(data)
        assert t.dtype == np.dtype(str(want.dtype).removeprefix("torch.")), data
        assert t.data.dtype.isnative
        np.testing.assert_array_equal(t.numpy(), want.numpy())


# ----- 6. pow with a tensor exponent, and a number base ------------------------------------------


def test_tensor_exponents_match_pytorch_values_and_both_gradients() -> None:
    """``a ** b`` and ``gradtape.ops.pow(a, b)`` raised TypeError for a tensor ``b``."""
    torch = pytest.importorskip("torch")
    dev = Cpu(seed=3)
    a0 = dev.rand((3, 4), 0.5, 2.0, dtype=F64).numpy()
    b0 = dev.randn((4,), dtype=F64).numpy()
    a, b = dev.tensor(a0, requires_grad=True), dev.tensor(b0, requires_grad=True)
    at, bt = torch.tensor(a0, requires_grad=True), torch.tensor(b0, requires_grad=True)
    y, yt = a**b, at**bt
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), rtol=1e-14)
    np.testing.assert_allclose(ops.pow(a, b).numpy(), y.numpy(), rtol=0)
    np.testing.assert_allclose(a.pow(b).numpy(), y.numpy(), rtol=0)
    np.testing.assert_allclose(ops.pow(a, 3.0).numpy(), (at**3.0).detach().numpy(), rtol=1e-14)
    (y * y).sum().backward()
    (yt * yt).sum().backward()
    assert a.grad is not None and b.grad is not None
    np.testing.assert_allclose(a.grad.numpy(), at.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), bt.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("base", [2.0, 0.5, 10, 0.0, -2.0])
def test_a_number_base_matches_pytorch_value_and_gradient(base: float) -> None:
    """``2.0 ** a`` raised TypeError (no ``__rpow__``). Value ``base ** a``, gradient
    ``log(base) * base ** a`` (PyTorch's edges for base 0 and negative bases)."""
    torch = pytest.importorskip("torch")
    x0 = np.array([-1.5, -1.0, 0.0, 0.5, 2.0, 3.0])
    x = Cpu().tensor(x0, requires_grad=True)
    xt = torch.tensor(x0, requires_grad=True)
    with np.errstate(all="ignore"):
        y = base**x
    yt = base**xt
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), rtol=1e-15, equal_nan=True)
    y.sum().backward()
    yt.sum().backward()
    assert x.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-14, equal_nan=True)
    if base == 2.0:
        np.testing.assert_allclose(x.grad.numpy(), math.log(2.0) * 2.0**x0, rtol=1e-15)


def test_a_number_base_is_float32_preserving_and_twice_differentiable() -> None:
    torch = pytest.importorskip("torch")
    dev = Cpu(seed=4)
    x32 = dev.randn((5,))
    assert (2.0**x32).dtype == np.float32 and (2**x32).dtype == np.float32
    x0 = dev.randn((4,), dtype=F64).numpy()

    def f(t: Any) -> Any:
        return (3.0**t * t + 2.0 ** (t * t)).sum()

    got = functional.hessian(f, dev.tensor(x0))
    want = torch.func.hessian(f)(torch.tensor(x0))
    np.testing.assert_allclose(np.asarray(got.numpy()), want.numpy(), rtol=1e-12)


# ----- 7. var / std in float32 on data far from 0 -------------------------------------------


@pytest.mark.parametrize("correction", [0, 1])
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("op", ["var", "std"])
def test_float32_var_and_std_of_large_mean_data_are_as_accurate_as_pytorch(
    op: str, axis: int | tuple[int, ...] | None, correction: int
) -> None:
    """var/std of ``1e4 + randn`` in float32 had relative errors of 1e-5 to 5e-4 (a float32 sum
    down a strided axis, squared); PyTorch's are about 1e-8. Now within float32's rounding of
    the exact (float64) result, as PyTorch's float32 result is."""
    torch = pytest.importorskip("torch")
    data = (1e4 + np.random.default_rng(5).standard_normal((4000, 6))).astype(np.float32)
    x = Cpu().tensor(data)
    got = getattr(x, op)(axis=axis, correction=correction)
    assert got.dtype == np.float32
    exact = getattr(torch.from_numpy(data).double(), op)(dim=axis, correction=correction).numpy()
    theirs = getattr(torch.from_numpy(data), op)(dim=axis, correction=correction).numpy()
    eps32 = float(np.finfo(np.float32).eps)
    np.testing.assert_allclose(got.numpy(), exact, rtol=eps32)  # one rounding: <= eps / 2
    assert np.max(np.abs(got.numpy() - exact) / exact) <= max(eps32, np.max(np.abs(theirs - exact) / exact))


@pytest.mark.parametrize("op", ["var", "std"])
def test_var_and_std_gradients_are_unchanged_and_match_pytorch(op: str) -> None:
    """Same API and defaults (``correction=0``, numpy's); float64 values agree with numpy's
    two-pass ``np.var``/``np.std`` to rounding (PyTorch's float64 Welford is off by about 1e-12
    here) and gradients with PyTorch's, also for data far from 0."""
    torch = pytest.importorskip("torch")
    x0 = 1e4 + np.random.default_rng(6).standard_normal((50, 4))
    w = np.linspace(0.5, 1.5, 4)
    x = Cpu().tensor(x0, requires_grad=True)
    xt = torch.tensor(x0, requires_grad=True)
    y = getattr(x, op)(axis=0)
    yt = getattr(xt, op)(dim=0, correction=0)
    np.testing.assert_allclose(y.numpy(), getattr(np, op)(x0, axis=0), rtol=1e-15)
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), rtol=1e-11)
    (y * Cpu().tensor(w)).sum().backward()
    (yt * torch.from_numpy(w)).sum().backward()
    assert x.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-15)
    assert gradtape.testing.gradcheck(lambda t: getattr(t, op)(axis=1, correction=1), [Cpu().randn((3, 5), F64)])
