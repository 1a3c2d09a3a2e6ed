"""Seed 003, a PyTorch-style autograd module, on gradtape's one tape: the grad modes.

The seed's ``no_grad`` / ``enable_grad`` / ``set_grad_enabled`` examples as the seed writes
them, with its outcomes: ``tensor([1.], requires_grad=True)`` (``dev.tensor``: gradtape's
tensors are made by a device), ``y.requires_grad``, ``y.backward()`` on a one-element result
and ``x.grad``. Then the modes' other promises: thread-local, decorators (generators too),
nesting with context tapes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import gradtape
from gradtape import (
    Cpu,
    GradientTape,
    Tensor,
    enable_grad,
    is_grad_enabled,
    nn,
    no_grad,
    set_grad_enabled,
)

dev = Cpu(seed=0)


@pytest.fixture(autouse=True)
def _grad_mode_restored() -> Iterator[None]:
    assert is_grad_enabled()
    yield
    set_grad_enabled(True)


# ----- enable_grad -----------------------------------------------------------------------------


def test_seed_enable_grad_example() -> None:
    x = dev.tensor([1.0], requires_grad=True)
    with no_grad():
        with enable_grad():
            y = x * 2
    assert y.requires_grad
    y.backward()
    assert x.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), [2.0])  # tensor([2.])
    assert x.grad.dtype == np.float32


def test_seed_enable_grad_decorators() -> None:
    x = dev.tensor([1.0], requires_grad=True)

    @enable_grad()
    def doubler(x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return x * 2

    with no_grad():
        z = doubler(x)
    assert z.requires_grad

    @enable_grad()
    def tripler(x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return x * 3

    with no_grad():
        z = tripler(x)
    assert z.requires_grad


# ----- no_grad ---------------------------------------------------------------------------------


def test_seed_no_grad_example() -> None:
    x = dev.tensor([1.0], requires_grad=True)
    with no_grad():
        y = x * 2
    assert not y.requires_grad

    @no_grad()
    def doubler(x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return x * 2

    z = doubler(x)
    assert not z.requires_grad

    @no_grad()
    def tripler(x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return x * 3

    z = tripler(x)
    assert not z.requires_grad


def test_seed_no_grad_factory_exception() -> None:
    """A parameter made under no_grad still requires grad (the seed's ``nn.Parameter``)."""
    with no_grad():
        a = nn.Parameter(dev.rand((10,)))
    assert a.requires_grad
    with no_grad():
        lin = nn.Linear(10, 1, dev=dev)
    assert lin.weight.requires_grad


def test_no_grad_records_nothing_on_parameters_or_watched_tensors() -> None:
    lin = nn.Linear(3, 2, dev=dev)
    x = dev.randn((4, 3))
    grads = lin.alloc_grads()
    with no_grad():
        assert not lin(x.trace(grads)).requires_grad
    x0 = dev.tensor(np.float32(2.0))
    with GradientTape(persistent=True) as tape:
        tape.watch(x0)
        with no_grad():
            y = x0 * x0
        z = x0 * 3.0
    assert tape.gradient(y, x0) is None
    assert tape.gradient(z, x0).item() == 3.0


def test_no_grad_without_parentheses() -> None:
    x = dev.tensor([1.0], requires_grad=True)

    @no_grad
    def doubler(x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return x * 2

    assert not doubler(x).requires_grad and is_grad_enabled()


# ----- set_grad_enabled ------------------------------------------------------------------------


def test_seed_set_grad_enabled_example() -> None:
    x = dev.tensor([1.0], requires_grad=True)
    is_train = False
    with set_grad_enabled(is_train):
        y = x * 2
    assert not y.requires_grad
    _ = set_grad_enabled(True)
    y = x * 2
    assert y.requires_grad
    _ = set_grad_enabled(False)
    y = x * 2
    assert not y.requires_grad
    assert not is_grad_enabled()


def test_set_grad_enabled_restores_and_decorates() -> None:
    x = dev.tensor([1.0], requires_grad=True)
    with no_grad():
        with set_grad_enabled(True):
            assert (x * 2).requires_grad
        assert not is_grad_enabled()
    assert is_grad_enabled()

    @set_grad_enabled(False)
    def f(x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return x * 2

    assert is_grad_enabled()  # decorating does not change the mode around it
    assert not f(x).requires_grad
    assert is_grad_enabled()
    with pytest.raises(TypeError, match=r"set_grad_enabled: mode must be a bool, got int"):
        set_grad_enabled(1)  # type: ignore[arg-type]


def test_generator_runs_in_the_mode() -> None:
    x = dev.tensor([1.0], requires_grad=True)

    @no_grad()
    def gen(x: Tensor[Any, Any]) -> Iterator[Tensor[Any, Any]]:
        yield x * 2
        yield x * 3

    it = gen(x)
    first = next(it)
    assert is_grad_enabled()  # between resumptions the caller's mode holds
    assert (x * 2).requires_grad
    assert [first.requires_grad, next(it).requires_grad] == [False, False]


# ----- threads ---------------------------------------------------------------------------------


def test_no_grad_in_one_thread_does_not_change_the_other() -> None:
    x = dev.tensor([1.0], requires_grad=True)
    entered, checked = threading.Event(), threading.Event()
    seen: list[bool] = []

    def other() -> None:
        with no_grad():
            entered.set()
            checked.wait(5)
            seen.append((x * 2).requires_grad)

    th = threading.Thread(target=other)
    th.start()
    assert entered.wait(5)
    assert is_grad_enabled() and (x * 2).requires_grad  # the other thread is inside no_grad
    checked.set()
    th.join()
    assert seen == [False]
    assert (x * 2).requires_grad


# ----- functional grad ---------------------------------------------------------------------------

from gradtape import Gradients, TapeError  # noqa: E402
from gradtape.autograd import Function, FunctionCtx, grad  # noqa: E402
from gradtape.testing import gradcheck  # noqa: E402

torch: Any = pytest.importorskip("torch")


def test_seed_grad_with_allow_unused() -> None:
    """``grad(outputs, inputs)``: a tuple, one gradient per input; an unused input raises
    unless ``allow_unused=True``, then gives None; against torch.autograd.grad."""
    xs, us = np.array([1.0, -2.0, 3.0]), np.array([0.5])
    x, u = dev.tensor(xs), dev.tensor(us)
    y = (x.leaky_trace() * x.leaky_trace()).sum() * 3.0  # one store per trace: merged tapes
    with pytest.raises(TapeError, match=r"grad: inputs\[1\] \(shape \(1,\)\) was not used .* allow_unused=True"):
        grad(y, [x, u], retain_graph=True)
    gx, gu = grad(y, [x, u], allow_unused=True)
    tx, tu = torch.tensor(xs, requires_grad=True), torch.tensor(us, requires_grad=True)
    tgx, tgu = torch.autograd.grad((tx * tx).sum() * 3.0, [tx, tu], allow_unused=True)
    assert gx is not None and gu is None and tgu is None
    np.testing.assert_array_equal(gx.numpy(), tgx.numpy())


def test_grad_outputs_seed_a_vector_jacobian_product() -> None:
    xs, v = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    xt = dev.tensor(xs).leaky_trace()
    y = xt * xt
    with pytest.raises(ValueError, match=r"grad: outputs\[0\] has shape \(2,\): .* pass grad_outputs"):
        grad(y, xt, retain_graph=True)
    with pytest.raises(ValueError, match=r"grad: 2 grad_outputs for 1 outputs"):
        grad(y, xt, grad_outputs=[v, v], retain_graph=True)
    (g,) = grad(y, xt, grad_outputs=[v])
    tx = torch.tensor(xs, requires_grad=True)
    (tg,) = torch.autograd.grad(tx * tx, tx, grad_outputs=torch.tensor(v))
    np.testing.assert_array_equal(g.numpy(), tg.numpy())  # type: ignore[union-attr]


def test_retain_graph_differentiates_the_same_pass_again() -> None:
    xt = dev.tensor(np.array([1.0, 2.0])).leaky_trace()
    y = (xt * xt).sum()
    first = grad(y, xt, retain_graph=True)[0]
    second = grad(y, xt)[0]
    assert first is not None and second is not None
    np.testing.assert_array_equal(first.numpy(), second.numpy())
    with pytest.raises(TapeError, match=r"grad: this tape was already run .* retain_graph=True"):
        grad(y, xt)
    xt2 = dev.tensor(np.array([1.0, 2.0])).leaky_trace()
    (gx,) = grad((xt2 * xt2 * xt2).sum(), xt2, create_graph=True)  # 3 x**2, recorded
    assert gx is not None and gx.requires_grad
    (h,) = grad(gx.sum(), xt2)  # 6 x
    assert h is not None
    np.testing.assert_array_equal(h.numpy(), [6.0, 12.0])


def test_grad_leaves_the_stores_alone_and_reaches_intermediates() -> None:
    store = Gradients.leaky()
    x = dev.tensor(np.array([1.0, 2.0]))
    h = x.trace(store) * 2.0
    y = (h * h).sum()
    gh, gx = grad(y, [h, x])
    assert gh is not None and gx is not None
    np.testing.assert_array_equal(gh.numpy(), [4.0, 8.0])
    np.testing.assert_array_equal(gx.numpy(), [8.0, 16.0])
    assert len(store) == 0


# ----- backward(gradient) ----------------------------------------------------------------------


def test_backward_with_a_seed_gradient_matches_torch() -> None:
    xs, v = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[1.0, 0.5], [-1.0, 2.0]])
    x = dev.tensor(xs)
    grads = (x.leaky_trace().exp() * 2.0).backward(dev.tensor(v))
    tx = torch.tensor(xs, requires_grad=True)
    (tx.exp() * 2.0).backward(torch.tensor(v))
    np.testing.assert_allclose(grads.get(x).numpy(), tx.grad.numpy(), rtol=1e-12)
    y = x.leaky_trace() * 2.0
    with pytest.raises(
        gradtape.ShapeError, match=r"backward: gradient has shape \(2,\), the tensor it seeds has shape"
    ):
        y.backward(np.ones(2))
    with pytest.raises(
        TapeError, match=r"backward: grad can be implicitly created only for one-element outputs; got shape \(2, 2\)"
    ):
        y.backward()


def test_backward_retain_graph() -> None:
    x = dev.tensor(np.array([1.0, 2.0]))
    y = (x.leaky_trace() * x.leaky_trace()).sum()
    g1 = y.backward(retain_graph=True).get(x).numpy().copy()
    g2 = y.backward().get(x).numpy()  # the same store: gradients accumulate, as torch's .grad
    np.testing.assert_array_equal(g1, [2.0, 4.0])
    np.testing.assert_array_equal(g2, [4.0, 8.0])
    with pytest.raises(TapeError, match=r"backward: this tape was already run"):
        y.backward()


# ----- Function ----------------------------------------------------------------------------------


class Softplus(Function):
    """A numerically stable softplus with a fused backward: y = log1p(exp(-|x|)) + max(x, 0),
    dy/dx = sigmoid(x), computed from the saved input in one expression."""

    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        xd = x.numpy()
        ctx.save_for_backward(x)
        return x.device.tensor(np.log1p(np.exp(-np.abs(xd))) + np.maximum(xd, 0.0))

    @staticmethod
    def backward(ctx: FunctionCtx, g: Tensor[Any, Any]) -> Array:
        (x,) = ctx.saved_tensors
        assert x is not None
        return g.numpy() / (1.0 + np.exp(-x.numpy()))


Array = np.ndarray[Any, Any]


def test_function_gradchecks_and_matches_torch() -> None:
    assert gradcheck(lambda t: Softplus.apply(t), [dev.randn((3, 4), np.float64) * 4.0])
    xs = np.array([-30.0, -1.0, 0.0, 2.0, 40.0])
    x = dev.tensor(xs)
    y = Softplus.apply(x.leaky_trace())
    np.testing.assert_allclose(y.numpy(), torch.nn.functional.softplus(torch.tensor(xs)).numpy(), rtol=1e-12)
    tx = torch.tensor(xs, requires_grad=True)
    torch.nn.functional.softplus(tx).sum().backward()
    np.testing.assert_allclose(y.sum().backward().get(x).numpy(), tx.grad.numpy(), rtol=1e-12)


def test_function_with_and_without_retain_graph() -> None:
    x = dev.tensor(np.array([0.5, -2.0]))
    y = Softplus.apply(x.leaky_trace()).sum()
    g1 = y.backward(retain_graph=True).get(x).numpy().copy()
    g2 = y.backward().get(x).numpy()  # accumulated into the same store
    np.testing.assert_allclose(g1, 1 / (1 + np.exp(-x.numpy())), rtol=1e-12)
    np.testing.assert_allclose(g2, 2 * g1, rtol=1e-15)


def test_function_inside_a_module_trains_its_parameter() -> None:
    """The Function applied to a parameter (only the input traced) reaches the parameter."""

    class M(nn.Module):
        def __init__(self) -> None:
            self.b = dev.tensor(np.array([0.1, -0.3]))

        def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
            s: Tensor[Any, Any] = Softplus.apply(self.b)
            return (x * s).sum()

    m = M()
    xs = np.array([2.0, 3.0])
    g = m(dev.tensor(xs).trace(m.alloc_grads())).backward()
    np.testing.assert_allclose(g.get(m.b).numpy(), xs / (1 + np.exp(-m.b.numpy())), rtol=1e-12)
    with no_grad():
        assert not Softplus.apply(m.b).requires_grad  # inference: nothing records
    assert Softplus.apply(m.b).requires_grad  # a parameter requires grad: the op records


class MulAdd(Function):
    """Several inputs and outputs and a non-tensor argument: (a * b * k, a + b)."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor[Any, Any], k: float, b: Tensor[Any, Any]) -> tuple[Any, Any]:
        ctx.save_for_backward(a, b)
        ctx.k = k  # type: ignore[attr-defined]
        return a * b * k, a + b

    @staticmethod
    def backward(ctx: FunctionCtx, g1: Tensor[Any, Any], g2: Tensor[Any, Any]) -> tuple[Any, None, Any]:
        a, b = ctx.saved_tensors
        assert a is not None and b is not None
        k = ctx.k  # type: ignore[attr-defined]
        ga = g1 * b * k + g2 if ctx.needs_input_grad[0] else None
        gb = g1 * a * k + g2 if ctx.needs_input_grad[2] else None
        return ga, None, gb


def test_function_several_inputs_outputs_and_needs_input_grad() -> None:
    a, b = dev.randn((2, 3), np.float64), dev.randn((2, 3), np.float64)
    assert gradcheck(lambda s, t: MulAdd.apply(s, 3.0, t)[0] * 2.0 + MulAdd.apply(s, 3.0, t)[1], [a, b])
    seen: list[tuple[bool, ...]] = []

    class Probe(Function):
        @staticmethod
        def forward(ctx: FunctionCtx, x: Tensor[Any, Any], y: Tensor[Any, Any]) -> Tensor[Any, Any]:
            seen.append(ctx.needs_input_grad)
            return x * y

        @staticmethod
        def backward(ctx: FunctionCtx, g: Tensor[Any, Any]) -> tuple[None, None]:
            return None, None

    Probe.apply(a.leaky_trace(), b)
    Probe.apply(a, b)
    assert seen == [(True, False), (False, False)]


def test_function_errors_name_the_class() -> None:
    class BadCount(Function):
        @staticmethod
        def forward(ctx: FunctionCtx, x: Tensor[Any, Any], y: Tensor[Any, Any]) -> Tensor[Any, Any]:
            return x + y

        @staticmethod
        def backward(ctx: FunctionCtx, g: Tensor[Any, Any]) -> Tensor[Any, Any]:
            return g

    class BadShape(Function):
        @staticmethod
        def forward(ctx: FunctionCtx, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
            return x.sum()

        @staticmethod
        def backward(ctx: FunctionCtx, g: Tensor[Any, Any]) -> Tensor[Any, Any]:
            return g

    class BadForward(Function):
        @staticmethod
        def forward(ctx: FunctionCtx, x: Tensor[Any, Any]) -> Any:
            return x.numpy()

    x = dev.tensor(np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match=r"BadCount.backward returned 1 gradient\(s\) for the 2 argument\(s\)"):
        BadCount.apply(x.leaky_trace(), x).sum().backward()
    with pytest.raises(
        gradtape.ShapeError, match=r"BadShape.backward: gradient 0 has shape \(\), its input has shape \(2,\)"
    ):
        BadShape.apply(x.leaky_trace()).backward()
    with pytest.raises(TypeError, match=r"BadForward.forward must return a Tensor or a tuple of Tensors, got ndarray"):
        BadForward.apply(x)


def _retained(name: str) -> tuple[Any, Any]:
    """(a scalar loss recorded through op family ``name``, the tensor whose gradient to read)."""
    from gradtape import losses

    d = Cpu(seed=4)
    x = d.randn((4, 6), np.float64)
    if name == "cross_entropy":
        return losses.cross_entropy(x.leaky_trace(), [0, 1, 2, 3]), x
    if name == "soft_cross_entropy":
        p = np.full((4, 6), 1 / 6)
        return losses.cross_entropy(x.leaky_trace(), d.tensor(p)), x
    if name == "mse":
        return losses.mse_loss(x.leaky_trace(), np.zeros((4, 6))), x
    if name == "conv2d":
        conv = nn.Conv2d(2, 3, 3, padding=1, dev=d, dtype=np.float64)
        xi = d.randn((2, 2, 5, 5), np.float64)
        return (conv(xi.trace(conv.alloc_grads())) ** 2).sum(), conv.weight
    if name == "max_pool":
        xi = d.randn((1, 2, 4, 4), np.float64)
        return (nn.MaxPool2d(2)(xi.leaky_trace()) ** 2).sum(), xi
    if name == "layer_norm":
        ln = nn.LayerNorm(6, dev=d, dtype=np.float64)
        return (ln(x.trace(ln.alloc_grads())) ** 3).sum(), ln.weight
    if name == "batch_norm":
        bn = nn.BatchNorm1d(6, dev=d, dtype=np.float64)
        return (bn(x.trace(bn.alloc_grads())) ** 3).sum(), bn.weight
    if name == "attention":
        m = nn.MultiHeadAttention(6, 2, dev=d, dtype=np.float64)
        q = d.randn((2, 3, 6), np.float64)
        return (m(q.trace(m.alloc_grads())) ** 2).sum(), m.in_proj_weight
    if name == "embedding":
        e = nn.Embedding(5, 3, dev=d, dtype=np.float64)
        idx = d.tensor(np.array([0, 3, 3]))
        return (e(idx.trace(e.alloc_grads())) ** 2).sum(), e.weight
    raise AssertionError(name)


@pytest.mark.parametrize(
    "name",
    [
        "cross_entropy",
        "soft_cross_entropy",
        "mse",
        "conv2d",
        "max_pool",
        "layer_norm",
        "batch_norm",
        "attention",
        "embedding",
    ],
)
def test_retain_graph_runs_every_family_again(name: str) -> None:
    """A second backward over a retained pass adds the same gradient again: no backward
    overwrites what it saved (cross_entropy's kernel wrote over its softmax, which a rerun
    then read as garbage)."""
    loss, t = _retained(name)
    first = loss.backward(retain_graph=True).get(t).numpy().copy()
    second = loss.backward().get(t).numpy()
    assert np.abs(first).max() > 0
    np.testing.assert_allclose(second, 2 * first, rtol=1e-12, atol=1e-14)
