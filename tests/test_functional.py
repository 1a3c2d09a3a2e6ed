"""gradtape.functional against torch.autograd.functional (float64): vjp, jvp (double-vjp),
hvp, jacobian, hessian, on functions built from ops that have a differentiable backward."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, ShapeError, Tensor
from gradtape import functional as F
from gradtape.autograd import grad

torch: Any = pytest.importorskip("torch")
TF = torch.autograd.functional
dev = Cpu(seed=0)


def f1(x: Any) -> Any:
    """R^4 -> R^3: a small network-like map (same expression on both libraries)."""
    h = x.reshape((2, 2)).tanh()
    y = (h @ h.T).sum(axis=0) if isinstance(x, Tensor) else (h @ h.T).sum(dim=0)
    return y.exp() * (x * x).sum().sigmoid()


def f2(a: Any, b: Any) -> Any:
    """(R^3, R^3) -> R: scalar, two inputs."""
    return ((a * b).sin() + a**3 / (b * b + 1.0)).sum()


X = np.array([0.3, -0.7, 1.1, 0.5])
A, B = np.array([0.2, -1.0, 0.8]), np.array([1.5, 0.3, -0.4])


def arr(t: Any) -> Any:
    return t.numpy() if isinstance(t, Tensor) else t.detach().numpy()


def test_vjp() -> None:
    out, g = F.vjp(f1, dev.tensor(X), dev.tensor(np.array([0.5, 1.0])))
    tout, tg = TF.vjp(f1, torch.tensor(X), torch.tensor([0.5, 1.0]))
    np.testing.assert_allclose(arr(out), arr(tout), rtol=1e-12)
    np.testing.assert_allclose(arr(g), arr(tg), rtol=1e-10)
    with pytest.raises(ShapeError, match=r"vjp: v\[0\] has shape \(3,\), outputs\[0\] has shape \(2,\)"):
        F.vjp(f1, dev.tensor(X), dev.tensor(np.ones(3)))


def test_jvp_by_double_vjp() -> None:
    v = np.array([1.0, 0.5, -0.25, 2.0])
    _, jv = F.jvp(f1, dev.tensor(X), dev.tensor(v))
    _, tjv = TF.jvp(f1, torch.tensor(X), torch.tensor(v))
    np.testing.assert_allclose(arr(jv), arr(tjv), rtol=1e-10)


def test_hvp_two_inputs() -> None:
    va, vb = np.array([1.0, 2.0, -1.0]), np.array([0.5, 0.0, 1.0])
    val, (ha, hb) = F.hvp(f2, (dev.tensor(A), dev.tensor(B)), (dev.tensor(va), dev.tensor(vb)))
    tval, (tha, thb) = TF.hvp(f2, (torch.tensor(A), torch.tensor(B)), (torch.tensor(va), torch.tensor(vb)))
    np.testing.assert_allclose(val.item(), tval.item(), rtol=1e-12)
    np.testing.assert_allclose(arr(ha), arr(tha), rtol=1e-10)
    np.testing.assert_allclose(arr(hb), arr(thb), rtol=1e-10)


def test_jacobian_and_hessian() -> None:
    np.testing.assert_allclose(arr(F.jacobian(f1, dev.tensor(X))), arr(TF.jacobian(f1, torch.tensor(X))), rtol=1e-10)
    h = F.hessian(f2, (dev.tensor(A), dev.tensor(B)))
    th = TF.hessian(f2, (torch.tensor(A), torch.tensor(B)))
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(arr(h[i][j]), arr(th[i][j]), rtol=1e-10, atol=1e-12)
    with pytest.raises(RuntimeError, match=r"hessian: The Tensor returned by the function given to hessian should"):
        F.hessian(f1, dev.tensor(X))


W3x4 = np.arange(12.0).reshape(3, 4) / 7.0 - 0.5


def test_create_graph_differentiable_wrt_traced_inputs() -> None:
    """As in PyTorch: with create_graph=True and a traced input, vjp/jacobian/hessian results
    are differentiable with respect to that input (a third derivative for the Hessian)."""
    x = dev.tensor(X).leaky_trace()
    tx = torch.tensor(X, requires_grad=True)

    _, g = F.vjp(lambda t: (t * t * t).sum(), x, create_graph=True)
    (gg,) = grad(g.sum(), x)
    np.testing.assert_allclose(arr(gg), 6.0 * X, rtol=1e-12)

    w = W3x4[:2]
    x = dev.tensor(X).leaky_trace()  # grad consumed the last pass's tape: trace again (dfdx model)
    jac = F.jacobian(f1, x, create_graph=True)
    tjac = TF.jacobian(f1, tx, create_graph=True)
    np.testing.assert_allclose(arr(jac), arr(tjac), rtol=1e-10)
    (dj,) = grad((jac * dev.tensor(w)).sum(), x)
    (tdj,) = torch.autograd.grad((tjac * torch.tensor(w)).sum(), tx)
    np.testing.assert_allclose(arr(dj), arr(tdj), rtol=1e-9, atol=1e-12)

    a, b = dev.tensor(A).leaky_trace(), dev.tensor(B).leaky_trace()
    ta, tb = torch.tensor(A, requires_grad=True), torch.tensor(B, requires_grad=True)
    h = F.hessian(f2, (a, b), create_graph=True)
    th = TF.hessian(f2, (ta, tb), create_graph=True)
    wh = W3x4[:3, :3]
    total = (h[0][0] * dev.tensor(wh)).sum() + (h[0][1] * dev.tensor(wh)).sum()
    total = total + (h[1][0] * dev.tensor(wh)).sum() + (h[1][1] * dev.tensor(wh)).sum()
    third = grad(total, (a, b))
    tthird = torch.autograd.grad(sum((th[i][j] * torch.tensor(wh)).sum() for i in range(2) for j in range(2)), (ta, tb))
    for got, want in zip(third, tthird, strict=True):
        np.testing.assert_allclose(arr(got), arr(want), rtol=1e-9, atol=1e-12)


def test_create_graph_untraced_input_gives_values_only() -> None:
    """An untraced input: the recorded Jacobian still has PyTorch's values, and the caller's
    tensor is left untraced (a fresh traced copy is used)."""
    x = dev.tensor(X)
    jac = F.jacobian(f1, x, create_graph=True)
    np.testing.assert_allclose(arr(jac), arr(TF.jacobian(f1, torch.tensor(X))), rtol=1e-10)
    assert not x.requires_grad
