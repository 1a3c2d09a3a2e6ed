"""Higher-order derivatives, first step: the differentiable backward of the elementwise ops,
pow and the sum/mean reductions (each beside its first rule, ``gradtape.tape.register_diff``).

Gradients of gradients come from two front ends: TensorFlow's nested tapes (an inner tape's
``gradient`` computed while an outer tape records) and PyTorch's ``grad(..., create_graph=True)``.
Checked: seed 004's nested example with its numbers, the third and fourth derivatives of x**4,
Hessians against ``torch.func.hessian``, and a clear error for an op without a differentiable
backward yet (never a silent zero).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, Gradients, GradientTape, TapeError, Tensor
from gradtape.autograd import grad

dev = Cpu(seed=0)
Array = np.ndarray[Any, Any]


def test_seed_nested_example_second_derivative() -> None:
    """Seed 004, exactly: dy/dx = 6.0 from the inner tape, d2y/dx2 = 2.0 from the outer."""
    x = dev.tensor(np.float32(3.0))
    with GradientTape() as g:
        with GradientTape() as gg:
            gg.watch(x)
            y = x * x
        dy_dx = gg.gradient(y, [x])[0]  # Will compute to 6.0
    d2y_dx2 = g.gradient(dy_dx, [x])[0]  # Will compute to 2.0
    assert dy_dx.item() == 6.0
    assert d2y_dx2.item() == 2.0


def test_x4_third_and_fourth_derivatives_nested_tapes() -> None:
    x = dev.tensor(np.array(2.0))
    with GradientTape() as t4:
        with GradientTape() as t3:
            with GradientTape() as t2:
                with GradientTape() as t1:
                    t1.watch(x)
                    y = x**4
                d1 = t1.gradient(y, x)
            d2 = t2.gradient(d1, x)
        d3 = t3.gradient(d2, x)
    d4 = t4.gradient(d3, x)
    assert [d1.item(), d2.item(), d3.item(), d4.item()] == [32.0, 48.0, 48.0, 24.0]


def test_x4_third_and_fourth_derivatives_create_graph() -> None:
    x = dev.tensor(np.array(2.0))
    y = x.leaky_trace() ** 4
    (d1,) = grad(y, x, create_graph=True)
    assert d1 is not None
    (d2,) = grad(d1, x, create_graph=True)
    assert d2 is not None
    (d3,) = grad(d2, x, create_graph=True)
    assert d3 is not None
    (d4,) = grad(d3, x)
    assert d4 is not None
    assert [d1.item(), d2.item(), d3.item(), d4.item()] == [32.0, 48.0, 48.0, 24.0]


def _hessian(f: Callable[[Tensor[Any, Any]], Tensor[Any, Any]], x0: Array) -> Array:
    """Rows of the Hessian: d/dx of (d f/dx . e_i), with the first gradient recorded. Also
    checks that the ops' two rules agree: the first gradient computed by the second rules
    (create_graph) equals the one the fused first rules give."""
    n = x0.size
    rows = []
    for i in range(n):
        x = dev.tensor(x0)
        (gx,) = grad(f(x.leaky_trace()), x, create_graph=True)
        assert gx is not None
        if i == 0:
            (g1,) = grad(f(x.leaky_trace()), x, allow_unused=True)
            np.testing.assert_allclose(gx.numpy(), np.zeros(n) if g1 is None else g1.numpy(), rtol=1e-9, atol=1e-12)
        e = np.zeros(n)
        e[i] = 1.0
        (row,) = grad((gx * dev.tensor(e)).sum(), x, allow_unused=True)
        rows.append(np.zeros(n) if row is None else row.numpy())
    return np.stack(rows)


def _torch_or_none() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch


def _check_hessian(f: Callable[[Any], Any], x0: Array, torch: Any, rtol: float, atol: float) -> None:
    """gradtape's Hessian of ``f`` at ``x0`` against PyTorch's (``rtol``/``atol``), or against
    finite differences of the gradient when PyTorch is not installed (their own tolerance)."""
    want = _reference_hessian(f, x0, torch)
    if torch is None:
        rtol, atol = max(rtol, 1e-6), max(atol, 1e-6)
    np.testing.assert_allclose(_hessian(f, x0), want, rtol=rtol, atol=atol)


def _reference_hessian(f: Callable[[Any], Any], x0: Array, torch: Any) -> Array:
    """``torch.func.hessian`` of the same function, or, without PyTorch, central finite
    differences of gradtape's (first-order, fused) gradient."""
    if torch is not None:
        out: Array = torch.func.hessian(f)(torch.tensor(x0)).numpy()
        return out
    eps, n = 1e-6, x0.size
    cols = []
    for j in range(n):
        pair = []
        for step in (eps, -eps):
            xp = x0.copy()
            xp[j] += step
            x = dev.tensor(xp)
            (g,) = grad(f(x.leaky_trace()), x, allow_unused=True)
            pair.append(np.zeros(n) if g is None else g.numpy())
        cols.append((pair[0] - pair[1]) / (2 * eps))
    return np.stack(cols, axis=1)


FUNCTIONS: dict[str, Callable[[Any], Any]] = {
    # scalar functions built from one op family each, written so that the same expression runs
    # on a gradtape tensor and on a torch tensor
    "mul-add-sub": lambda x: (x * x * 3.0 - x * 0.5 + x).sum(),
    "div": lambda x: (1.0 / (x * x + 1.0) + x / (x + 3.0)).sum(),
    "pow": lambda x: (x**3 + x**2.5).sum(),
    "exp-log": lambda x: (x.exp() * x.log()).sum(),
    "sin-cos": lambda x: (x.sin() * x.cos() + x.sin() * x.sin()).sum(),
    "tanh-sigmoid": lambda x: (x.tanh() * x.sigmoid()).sum(),
    "sqrt-square": lambda x: (x.sqrt() * x.square() + x.square()).mean(),
    "recip": lambda x: (x.recip() if isinstance(x, Tensor) else x.reciprocal()).sum() * 2.0,
    "relu": lambda x: (x.relu() * x).sum(),
    "broadcast": lambda x: (x * x.sum()).sum() + (x * x.mean()).sum(),
    "matmul-reshape-transpose": lambda x: ((x.reshape((2, 2)) @ x.reshape((2, 2)).T).tanh() @ x.reshape((2, 2))).sum(),
    "broadcast_to": lambda x: (
        (x.reshape((1, 4)).broadcast_to((3, 4)) * x.exp()).sum()
        if isinstance(x, Tensor)
        else (x.reshape(1, 4).broadcast_to(3, 4) * x.exp()).sum()
    ),
}


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_hessian_matches_torch(name: str) -> None:
    torch: Any = _torch_or_none()
    f = FUNCTIONS[name]
    x0 = np.array([0.7, 1.3, 2.1, 0.4])
    _check_hessian(f, x0, torch, rtol=1e-10, atol=1e-12)


def _no_second_rule(grads: Any, g: Array, entry: Any) -> None:
    """The first rule of an op recorded as an entry that registers no second rule (``2 x``)."""
    grads._accum(entry[2], g * 2.0)


def test_an_op_without_a_differentiable_backward_raises_naming_it() -> None:
    x = dev.tensor(np.array([1.0, 2.0]))
    xt = x.leaky_trace()
    p, tape = xt.split_tape()
    y = p.device.tensor(p.data * 2.0)
    tape._record((y.id, _no_second_rule, p.id))
    loss = (y.put_tape(tape) * 3.0).sum()
    with pytest.raises(TapeError, match=r"grad: the backward of op '_no_second_rule' has no differentiable form yet"):
        grad(loss, x, create_graph=True)


def test_a_hand_written_closure_raises() -> None:
    x = dev.tensor(np.array([1.0, 2.0]))

    def double(t: Tensor[Any, Any]) -> Tensor[Any, Any]:
        p, tape = t.split_tape()
        y = p.device.tensor(p.data * 2.0)

        def backward(grads: Any) -> None:
            gx, gy = grads.mut_and_ref(p, y)
            gx += 2.0 * gy

        tape.add_backward_op(backward)
        return y.put_tape(tape)

    y = double(x.leaky_trace()).sum()
    with pytest.raises(TapeError, match=r"hand-written backward closure .*cannot be differentiated again"):
        grad(y, x, create_graph=True)


def test_linear_layer_hessian_and_a_gradient_penalty_match_torch() -> None:
    """A WGAN-GP style step: loss = mean(critic(x)) + (|d critic / d x| - 1)**2, and the
    critic's parameter gradients against PyTorch's (create_graph through linear and tanh)."""
    torch: Any = pytest.importorskip("torch")
    from gradtape import nn

    d = Cpu(seed=5)
    l1, l2 = nn.Linear(3, 4, dev=d, dtype=np.float64), nn.Linear(4, 1, dev=d, dtype=np.float64)
    xs = np.random.default_rng(5).standard_normal((6, 3))

    def critic(x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return l2(l1(x).tanh())

    x = dev.tensor(xs)
    grads = Gradients.leaky()
    out = critic(x.trace(grads))
    (gx,) = grad(out.sum(), x, create_graph=True)
    assert gx is not None
    norm = (gx * gx).sum(axis=1).sqrt()
    loss = out.mean() + ((norm - 1.0) ** 2).mean() * 10.0
    g = loss.backward()

    t1, t2 = torch.nn.Linear(3, 4).double(), torch.nn.Linear(4, 1).double()
    with torch.no_grad():
        for tl, gl in ((t1, l1), (t2, l2)):
            tl.weight.copy_(torch.from_numpy(gl.weight.numpy()))
            assert gl.bias is not None
            tl.bias.copy_(torch.from_numpy(gl.bias.numpy()))
    tx = torch.tensor(xs, requires_grad=True)
    tout = t2(t1(tx).tanh())
    (tgx,) = torch.autograd.grad(tout.sum(), tx, create_graph=True)
    tloss = tout.mean() + ((tgx.pow(2).sum(dim=1).sqrt() - 1.0) ** 2).mean() * 10.0
    tloss.backward()
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-12)
    for gl, tl in ((l1, t1), (l2, t2)):
        assert gl.bias is not None
        np.testing.assert_allclose(g.get(gl.weight).numpy(), tl.weight.grad.numpy(), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(g.get(gl.bias).numpy(), tl.bias.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_a_function_with_a_backward_in_gradtape_ops_is_differentiable_again() -> None:
    """A user's Function whose backward uses gradtape ops: its second derivative comes for free;
    one returning arrays raises when differentiated again."""
    from gradtape.autograd import Function, FunctionCtx

    class Cube(Function):
        @staticmethod
        def forward(ctx: FunctionCtx, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx: FunctionCtx, g: Tensor[Any, Any]) -> Tensor[Any, Any]:
            (x,) = ctx.saved_tensors
            assert x is not None
            return g * x * x * 3.0

    class CubeRaw(Cube):
        @staticmethod
        def backward(ctx: FunctionCtx, g: Tensor[Any, Any]) -> Any:
            (x,) = ctx.saved_tensors
            assert x is not None
            return g.numpy() * x.numpy() ** 2 * 3.0

    x = dev.tensor(np.array([1.0, 2.0]))
    (g1,) = grad(Cube.apply(x.leaky_trace()).sum(), x, create_graph=True)
    assert g1 is not None
    np.testing.assert_array_equal(g1.numpy(), [3.0, 12.0])
    (g2,) = grad(g1.sum(), x)
    assert g2 is not None
    np.testing.assert_array_equal(g2.numpy(), [6.0, 12.0])
    with pytest.raises(
        TapeError, match=r"CubeRaw.backward returned a ndarray for argument 0: a gradient of a gradient"
    ):
        grad(CubeRaw.apply(x.leaky_trace()).sum(), x, create_graph=True)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "silu", "leaky_relu", "abs"])
def test_hessian_of_activation_families_matches_torch(name: str) -> None:
    torch: Any = _torch_or_none()
    fn: Any = torch.nn.functional if torch is not None else None
    w = np.array([[1.0, -2.0, 0.5, 3.0], [0.25, 1.5, -1.0, 2.0]])

    def f(x: Any) -> Any:
        ours = isinstance(x, Tensor)
        m = x.reshape((2, 2)) if ours else x.reshape(2, 2)
        if name == "softmax":
            y = m.softmax(-1)
        elif name == "log_softmax":
            y = m.log_softmax(-1)
        elif name == "silu":
            y = m.silu() if ours else fn.silu(m)
        elif name == "leaky_relu":
            y = m.leaky_relu(0.1) * m if ours else fn.leaky_relu(m, 0.1) * m
        else:
            y = m.abs() * m
        wt = dev.tensor(w[:, :2]) if ours else torch.tensor(w[:, :2])
        return (y * wt * y).sum()

    x0 = np.array([0.7, -1.3, 2.1, 0.4])
    _check_hessian(f, x0, torch, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["where", "mse_loss", "cross_entropy"])
def test_hessian_through_where_and_losses_matches_torch(name: str) -> None:
    torch: Any = _torch_or_none()
    from gradtape import losses, ops

    mask = np.array([True, False, True, True])
    target = np.array([0.5, -0.25, 1.0, 2.0])

    def f(x: Any) -> Any:
        ours = isinstance(x, Tensor)
        if name == "where":
            y = ops.where(mask, x * x, x.exp()) if ours else torch.where(torch.tensor(mask), x * x, x.exp())
            return (y * y).sum()
        if name == "mse_loss":
            h = x.tanh()
            return losses.mse_loss(h, target) if ours else torch.nn.functional.mse_loss(h, torch.tensor(target))
        m = (x * x).reshape((2, 2)) if ours else (x * x).reshape(2, 2)
        cls = [1, 0]
        return losses.cross_entropy(m, cls) if ours else torch.nn.functional.cross_entropy(m, torch.tensor(cls))

    x0 = np.array([0.7, -1.3, 0.9, 0.4])
    _check_hessian(f, x0, torch, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["getitem", "concat", "stack"])
def test_hessian_through_indexing_concat_stack_matches_torch(name: str) -> None:
    torch: Any = _torch_or_none()
    from gradtape import ops

    def f(x: Any) -> Any:
        ours = isinstance(x, Tensor)
        if name == "getitem":
            y = x[1:3] * x[0] + x[3] * x[3]
        elif name == "concat":
            y = ops.concat((x * x, x.exp())) if ours else torch.cat((x * x, x.exp()))
        else:
            y = ops.stack((x.sin(), x * x), axis=1) if ours else torch.stack((x.sin(), x * x), dim=1)
        return (y * y).sum()

    x0 = np.array([0.7, -1.3, 0.9, 0.4])
    _check_hessian(f, x0, torch, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["max", "min", "var", "std", "logsumexp"])
def test_hessian_through_reductions_matches_torch(name: str) -> None:
    torch: Any = _torch_or_none()

    def f(x: Any) -> Any:
        ours = isinstance(x, Tensor)
        m = (x * x.exp()).reshape((2, 2)) if ours else (x * x.exp()).reshape(2, 2)
        if name == "max":
            r = m.max(axis=1) if ours else m.amax(dim=1)
        elif name == "min":
            r = m.min(axis=0) if ours else m.amin(dim=0)
        elif name == "var":
            r = m.var(axis=1) if ours else m.var(dim=1, correction=0)  # gradtape's default: numpy's
        elif name == "std":
            r = m.std(axis=0, correction=1) if ours else m.std(dim=0)
        else:
            r = m.logsumexp(axis=1) if ours else m.logsumexp(dim=1)
        return (r * r).sum()

    x0 = np.array([0.7, -1.3, 0.9, 0.4])
    _check_hessian(f, x0, torch, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["clamp", "gelu", "gelu_tanh", "softplus"])
def test_hessian_of_more_activations_matches_torch(name: str) -> None:
    torch: Any = _torch_or_none()
    fn: Any = torch.nn.functional if torch is not None else None

    def f(x: Any) -> Any:
        ours = isinstance(x, Tensor)
        if name == "clamp":
            y = (x * x).clamp(0.2, 1.0) * x
        elif name == "gelu":
            y = x.gelu() if ours else fn.gelu(x)
        elif name == "gelu_tanh":
            y = x.gelu("tanh") if ours else fn.gelu(x, approximate="tanh")
        else:
            y = x.softplus(2.0, 1.5) if ours else fn.softplus(x, 2.0, 1.5)
        return (y * y * x).sum()

    x0 = np.array([0.7, -1.3, 0.9, 0.4])
    _check_hessian(f, x0, torch, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["layer_norm", "rms_norm"])
def test_hessian_through_norms_matches_torch(name: str) -> None:
    torch: Any = _torch_or_none()
    w, b = np.array([1.5, -0.5]), np.array([0.25, 2.0])

    def f(x: Any) -> Any:
        ours = isinstance(x, Tensor)
        m = (x * x.exp()).reshape((2, 2)) if ours else (x * x.exp()).reshape(2, 2)
        if ours:
            y = (
                m.layer_norm(weight=dev.tensor(w), bias=dev.tensor(b))
                if name == "layer_norm"
                else m.rms_norm(dev.tensor(w), 1e-6)
            )
        elif name == "layer_norm":
            y = torch.nn.functional.layer_norm(m, (2,), torch.tensor(w), torch.tensor(b))
        else:
            y = torch.nn.functional.rms_norm(m, (2,), torch.tensor(w), 1e-6)
        return (y * y * y).sum()

    x0 = np.array([0.7, -1.3, 0.9, 0.4])
    _check_hessian(f, x0, torch, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("name", ["gather", "index_select", "embedding"])
def test_hessian_through_gather_and_embedding_matches_torch(name: str) -> None:
    torch: Any = _torch_or_none()
    from gradtape import ops

    idx = np.array([1, 0, 1, 1])

    def f(x: Any) -> Any:
        ours = isinstance(x, Tensor)
        m = (x * x.sin()).reshape((2, 2)) if ours else (x * x.sin()).reshape(2, 2)
        if name == "gather":
            y = ops.gather(m, idx, axis=1) if ours else m[:, torch.tensor(idx)]
        elif name == "index_select":
            y = ops.index_select(m, idx[:3], axis=0) if ours else m[torch.tensor(idx[:3])]
        else:
            y = ops.embedding(idx.reshape(2, 2), m) if ours else m[torch.tensor(idx.reshape(2, 2))]
        return (y * y * y).sum()

    x0 = np.array([0.7, -1.3, 0.9, 0.4])
    _check_hessian(f, x0, torch, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["matmul_nd", "matmul_broadcast", "dropout"])
def test_hessian_through_batched_matmul_and_dropout(name: str) -> None:
    torch: Any = _torch_or_none()
    from gradtape import ops

    mask = np.array([2.0, 2.0, 0.0, 2.0, 0.0, 0.0, 2.0, 0.0])  # dropout(p=0.5, rng=default_rng(1))

    def f(x: Any) -> Any:
        ours = isinstance(x, Tensor)
        h = x * x.tanh()
        if name == "matmul_nd":
            a = h.reshape((2, 2, 2)) if ours else h.reshape(2, 2, 2)
            y = a @ (a * 0.5).exp()
        elif name == "matmul_broadcast":
            a = h.reshape((2, 2, 2)) if ours else h.reshape(2, 2, 2)
            w = h[:4].reshape((2, 2)) if ours else h[:4].reshape(2, 2)
            y = a @ w
        else:
            if ours:
                y = ops.dropout(h, 0.5, rng=np.random.default_rng(1))
                np.testing.assert_array_equal(y.numpy(), h.numpy() * mask)
            else:
                y = h * torch.tensor(mask)
        return (y * y * y).sum()

    x0 = np.array([0.7, -1.3, 0.9, 0.4, 0.2, -0.5, 1.1, 0.3])
    _check_hessian(f, x0, torch, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["conv1d", "conv2d", "conv2d_strided_grouped", "conv_transpose2d"])
def test_hessian_through_convolutions_matches_torch(name: str) -> None:
    torch: Any = _torch_or_none()
    from gradtape import ops

    fn: Any = torch.nn.functional if torch is not None else None
    rng = np.random.default_rng(3)
    w1 = rng.standard_normal((2, 1, 2))
    w2 = rng.standard_normal((2, 1, 2, 2))
    wg = rng.standard_normal((2, 1, 2, 2))
    wt = rng.standard_normal((1, 2, 2, 2))
    bias = np.array([0.3, -0.2])

    def f(x: Any) -> Any:
        ours = isinstance(x, Tensor)
        h = x * x.tanh()

        def c(a: Any) -> Any:
            return dev.tensor(a) if ours else torch.tensor(a)

        if name == "conv1d":
            a = h.reshape((1, 1, 8)) if ours else h.reshape(1, 1, 8)
            y = ops.conv1d(a, c(w1), c(bias), padding=1) if ours else fn.conv1d(a, c(w1), c(bias), padding=1)
        elif name == "conv2d":
            a = h.reshape((1, 1, 2, 4)) if ours else h.reshape(1, 1, 2, 4)
            y = ops.conv2d(a, c(w2), c(bias), padding=1) if ours else fn.conv2d(a, c(w2), c(bias), padding=1)
        elif name == "conv2d_strided_grouped":
            a = h.reshape((1, 2, 2, 2)) if ours else h.reshape(1, 2, 2, 2)
            y = (
                ops.conv2d(a, c(wg), None, stride=2, padding=1, groups=2)
                if ours
                else fn.conv2d(a, c(wg), None, stride=2, padding=1, groups=2)
            )
        else:
            a = h.reshape((1, 1, 2, 4)) if ours else h.reshape(1, 1, 2, 4)
            y = (
                ops.conv_transpose2d(a, c(wt), c(bias), stride=2)
                if ours
                else fn.conv_transpose2d(a, c(wt), c(bias), stride=2)
            )
        return (y * y * y).sum()

    x0 = np.array([0.7, -1.3, 0.9, 0.4, 0.2, -0.5, 1.1, 0.3])
    _check_hessian(f, x0, torch, rtol=1e-9, atol=1e-12)


def test_weight_hessian_through_conv2d_matches_torch() -> None:
    """Second derivatives with respect to the kernel (the bilinear rule's w side)."""
    torch: Any = _torch_or_none()
    from gradtape import ops

    xs = np.random.default_rng(4).standard_normal((1, 1, 3, 3))

    def f(w: Any) -> Any:
        ours = isinstance(w, Tensor)
        k = w.reshape((1, 1, 2, 2)) if ours else w.reshape(1, 1, 2, 2)
        y = ops.conv2d(dev.tensor(xs), k) if ours else torch.nn.functional.conv2d(torch.tensor(xs), k)
        return (y * y * y).sum()

    w0 = np.array([0.5, -0.25, 0.75, 0.1])
    _check_hessian(f, w0, torch, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["max_pool2d", "min_pool2d", "avg_pool2d", "upscale_nearest", "upscale_bilinear"])
def test_hessian_through_pooling_and_upscaling_matches_torch(name: str) -> None:
    torch: Any = _torch_or_none()
    from gradtape import ops

    fn: Any = torch.nn.functional if torch is not None else None

    def f(x: Any) -> Any:
        ours = isinstance(x, Tensor)
        h = x * x.tanh()
        a = h.reshape((1, 2, 2, 4)) if ours else h.reshape(1, 2, 2, 4)
        if name == "max_pool2d":
            y = ops.max_pool2d(a, 2) if ours else fn.max_pool2d(a, 2)
        elif name == "min_pool2d":
            y = ops.min_pool2d(a, 2) if ours else -fn.max_pool2d(-a, 2)
        elif name == "avg_pool2d":
            y = ops.avg_pool2d(a, 2, 1, 1) if ours else fn.avg_pool2d(a, 2, 1, 1)
        elif name == "upscale_nearest":
            y = ops.upscale2d(a, scale_factor=2) if ours else fn.interpolate(a, scale_factor=2, mode="nearest")
        else:
            y = (
                ops.upscale2d(a, (3, 5), mode="bilinear", align_corners=True)
                if ours
                else fn.interpolate(a, (3, 5), mode="bilinear", align_corners=True)
            )
        return (y * y * y).sum()

    x0 = np.array([0.7, -1.3, 0.9, 0.4, 0.2, -0.5, 1.1, 0.3, 0.6, -0.9, 0.15, 1.4, -0.35, 0.8, -1.1, 0.45])
    _check_hessian(f, x0, torch, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["l1_loss", "huber_loss", "smooth_l1_loss", "kl_div", "kl_div_log_target", "soft_ce"])
def test_hessian_through_more_losses_matches_torch(name: str) -> None:
    torch: Any = _torch_or_none()
    from gradtape import losses

    fn: Any = torch.nn.functional if torch is not None else None
    target = np.array([0.5, -0.25, 1.0, 0.2])
    probs = np.array([[0.2, 0.8], [0.6, 0.4]])

    def f(x: Any) -> Any:
        ours = isinstance(x, Tensor)
        h = x * x.sin()
        t = dev.tensor(target) if ours else torch.tensor(target)
        if name == "l1_loss":
            return losses.l1_loss(h * h, t) if ours else fn.l1_loss(h * h, t)
        if name == "huber_loss":
            return losses.huber_loss(h * h, t, delta=0.3) if ours else fn.huber_loss(h * h, t, delta=0.3)
        if name == "smooth_l1_loss":
            return losses.smooth_l1_loss(h * h, t, beta=0.3) if ours else fn.smooth_l1_loss(h * h, t, beta=0.3)
        m = h.reshape((2, 2)) if ours else h.reshape(2, 2)
        pt = dev.tensor(probs) if ours else torch.tensor(probs)
        if name == "kl_div":
            lq = m.log_softmax(1)
            return losses.kl_div(lq, pt, "batchmean") if ours else fn.kl_div(lq, pt, reduction="batchmean")
        if name == "kl_div_log_target":
            lq, lp = m.log_softmax(1), (m * 0.5).log_softmax(1)
            if ours:
                return losses.kl_div(lq, lp, "sum", log_target=True)
            return fn.kl_div(lq, lp, reduction="sum", log_target=True)
        return losses.cross_entropy(m, pt) if ours else fn.cross_entropy(m, pt)

    x0 = np.array([0.7, -1.3, 0.9, 0.4])
    _check_hessian(f, x0, torch, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("pos_weight", [False, True])
def test_hessian_through_bce_with_logits_matches_torch(pos_weight: bool) -> None:
    torch: Any = _torch_or_none()
    from gradtape import losses

    pw = np.array([2.0, 0.5, 1.5, 3.0])

    def f(x: Any) -> Any:
        ours = isinstance(x, Tensor)
        logits = x * x.sin()
        t = (x * 0.5).sigmoid()  # a target that depends on x: its gradient's second rule too
        if ours:
            return losses.binary_cross_entropy_with_logits(logits, t, pos_weight=pw if pos_weight else None)
        return torch.nn.functional.binary_cross_entropy_with_logits(
            logits, t, pos_weight=torch.tensor(pw) if pos_weight else None
        )

    x0 = np.array([0.7, -1.3, 0.9, 0.4])
    _check_hessian(f, x0, torch, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["roll", "tril", "triu", "prelu", "prelu_channels", "nans_to"])
def test_hessian_through_roll_tri_prelu_nans_to_matches_torch(name: str) -> None:
    torch: Any = _torch_or_none()
    from gradtape import ops

    def f(x: Any) -> Any:
        ours = isinstance(x, Tensor)
        h = x * x.sin()
        m = h.reshape((2, 2)) if ours else h.reshape(2, 2)
        if name == "roll":
            y = ops.roll(m, 1, 1) * m if ours else torch.roll(m, 1, 1) * m
        elif name == "tril":
            y = m.tril(0) * m if ours else torch.tril(m, 0) * m
        elif name == "triu":
            y = m.triu(1) * m if ours else torch.triu(m, 1) * m
        elif name == "prelu":
            a = h * 0.8 - 0.3
            w = a[:1]
            y = a.prelu(w) * a if ours else torch.nn.functional.prelu(a, w) * a
        elif name == "prelu_channels":
            a = (h * 0.8 - 0.3).reshape((1, 2, 2)) if ours else (h * 0.8 - 0.3).reshape(1, 2, 2)
            w = h[:2] * 0.5
            y = a.prelu(w) * a if ours else torch.nn.functional.prelu(a, w) * a
        else:
            y = (h * h).nans_to(0.0) if ours else torch.nan_to_num(h * h, nan=0.0)
        return (y * y).sum()

    x0 = np.array([0.7, -1.3, 0.9, 0.4])
    _check_hessian(f, x0, torch, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["maximum", "minimum", "maximum_scalar", "minimum_scalar", "pow_tensor", "pow_zero"])
def test_hessian_through_extrema_and_tensor_pow_matches_torch(name: str) -> None:
    torch: Any = _torch_or_none()
    from gradtape import ops

    def f(x: Any) -> Any:
        ours = isinstance(x, Tensor)
        a, b = x * x.sin(), x.exp() * 0.5
        if name == "maximum":
            y = ops.maximum(a, b) if ours else torch.maximum(a, b)
        elif name == "minimum":
            y = ops.minimum(a, b) if ours else torch.minimum(a, b)
        elif name == "maximum_scalar":
            y = ops.maximum(a, 0.1) if ours else torch.clamp(a, min=0.1)
        elif name == "minimum_scalar":
            y = ops.minimum(a, 0.1) if ours else torch.clamp(a, max=0.1)
        elif name == "pow_tensor":
            y = ops.binary.pow(b, a) if ours else torch.pow(b, a)
        else:
            y = a**0.0 * b
        return (y * y * x).sum()

    x0 = np.array([0.7, -1.3, 0.9, 0.4])
    _check_hessian(f, x0, torch, rtol=1e-9, atol=1e-12)


@pytest.mark.filterwarnings(r"ignore:Using backward\(\) with create_graph=True:UserWarning")
def test_backward_create_graph_like_pytorch() -> None:
    """``loss.backward(create_graph=True)``: the store's gradient is a recorded tensor; a
    second backward through it accumulates onto the first, as PyTorch's ``.grad`` does."""
    torch: Any = pytest.importorskip("torch")
    from gradtape import nn

    xs = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
    lin = nn.Linear(3, 2, dev=Cpu(seed=2), dtype=np.float64)
    x = dev.tensor(xs)
    grads = Gradients.leaky()
    loss = lin(x.trace(grads)).tanh().square().sum()
    g = loss.backward(create_graph=True)
    gx = g.get(x)
    assert gx.requires_grad
    (gx * gx).sum().backward()

    tl = torch.nn.Linear(3, 2).double()
    with torch.no_grad():
        tl.weight.copy_(torch.from_numpy(lin.weight.numpy()))
        assert lin.bias is not None
        tl.bias.copy_(torch.from_numpy(lin.bias.numpy()))
    tx = torch.tensor(xs, requires_grad=True)
    tl(tx).tanh().square().sum().backward(create_graph=True)
    (tx.grad * tx.grad).sum().backward()
    np.testing.assert_allclose(grads.get_ref_checked(x), tx.grad.detach().numpy(), rtol=1e-10)  # type: ignore[arg-type]
    np.testing.assert_allclose(grads.get_ref_checked(lin.weight), tl.weight.grad.detach().numpy(), rtol=1e-10)  # type: ignore[arg-type]
