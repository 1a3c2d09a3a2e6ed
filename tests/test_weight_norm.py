"""``gradtape.nn.utils.weight_norm`` / ``remove_weight_norm`` / ``spectral_norm`` /
``remove_spectral_norm``, written as a PyTorch user's program and compared with PyTorch in
float64 from identical weights: forward values and the gradients of the new parameters over
several SGD steps, the power iteration's buffers, the state dict's keys, and the errors."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import gradtape
from gradtape import nn
from gradtape.nn.utils import remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm

torch = pytest.importorskip("torch")

RTOL, ATOL = 1e-10, 1e-12


def _pair(kind: str) -> tuple[Any, Any, tuple[int, ...]]:
    """A gradtape layer and a torch layer holding the same float64 weights, and an input shape."""
    torch.manual_seed(0)
    if kind == "linear":
        tm: Any = torch.nn.Linear(5, 4).double()
        gm: Any = nn.Linear(5, 4, dtype=np.float64)
        shape: tuple[int, ...] = (3, 5)
    elif kind == "conv2d":
        tm = torch.nn.Conv2d(2, 3, 3, padding=1).double()
        gm = nn.Conv2d(2, 3, 3, padding=1, dtype=np.float64)
        shape = (2, 2, 5, 5)
    else:
        tm = torch.nn.ConvTranspose2d(2, 3, 3).double()
        gm = nn.ConvTranspose2d(2, 3, 3, dtype=np.float64)
        shape = (2, 2, 4, 4)
    gm.load_state_dict({k: v.numpy() for k, v in tm.state_dict().items()})
    return gm, tm, shape


def _torch_weight_norm(m: Any, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch deprecates the hook API for parametrizations
        return torch.nn.utils.weight_norm(m, **kw)


def _close(a: Any, b: Any) -> None:
    a = a.data if isinstance(a, gradtape.Tensor) else a
    b = b.detach().numpy() if hasattr(b, "detach") else b
    assert np.shape(a) == np.shape(b)
    np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)


def _train_in_step(gm: Any, tm: Any, shape: tuple[int, ...], names: list[str], steps: int = 4) -> None:
    """``steps`` SGD steps on both models; forward values and every named parameter's gradient
    and value compared after each."""
    gopt = gradtape.optim.SGD(gm.parameters(), lr=0.1)
    topt = torch.optim.SGD(tm.parameters(), lr=0.1)
    rng = np.random.default_rng(1)
    for _ in range(steps):
        x = rng.standard_normal(shape)
        gy = gm(gradtape.tensor(x))
        ty = tm(torch.tensor(x))
        _close(gy, ty)
        (gy * gy).sum().backward()
        (ty * ty).sum().backward()
        for n in names:
            _close(getattr(gm, n).grad, getattr(tm, n).grad)
        gopt.step()
        topt.step()
        gopt.zero_grad()
        topt.zero_grad()
        for n in names:
            _close(getattr(gm, n), getattr(tm, n))


# ----- weight_norm -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["linear", "conv2d"])
@pytest.mark.parametrize("dim", [0, None, 1, -1, -2])
def test_weight_norm_trains_as_torch(kind: str, dim: int | None) -> None:
    gm, tm, shape = _pair(kind)
    assert weight_norm(gm, name="weight", dim=dim) is gm
    _torch_weight_norm(tm, name="weight", dim=dim)
    assert list(gm.state_dict()) == list(tm.state_dict())
    assert [n for n, _ in gm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    _close(gm.weight_g, tm.weight_g)
    _close(gm.weight_v, tm.weight_v)
    _close(gm.weight, tm.weight)
    assert isinstance(gm, type(gm).__mro__[1]) and type(gm).__name__ == type(tm).__name__
    _train_in_step(gm, tm, shape, ["weight_g", "weight_v", "bias"])


def test_weight_norm_gradient_reaches_g_and_v_not_a_stale_weight() -> None:
    gm, _, _ = _pair("linear")
    weight_norm(gm)
    assert "weight" not in dict(gm.named_parameters())
    x = gradtape.tensor(np.ones((2, 5)))
    gm(x).sum().backward()
    g0 = gm.weight_g.grad.data.copy()
    assert np.abs(g0).sum() > 0 and np.abs(gm.weight_v.grad.data).sum() > 0
    # a change of g changes the next forward's weight (it is recomputed, not cached)
    gm.weight_g.data *= 2.0
    w = gm.weight_g.data * gm.weight_v.data / np.linalg.norm(gm.weight_v.data, axis=1, keepdims=True)
    np.testing.assert_allclose(gm.weight.data, w)
    np.testing.assert_allclose(gm(x).data, x.data @ w.T + gm.bias.data)
    # and the gradient of the weight is the one of g * v / ||v||, by hand
    gm.weight_g.grad = None
    gm.weight_v.grad = None
    gm(x).sum().backward()
    gw = np.full((4, 5), 2.0)  # d(sum(x @ w.T))/dw for x of ones, 2 rows
    nv = np.linalg.norm(gm.weight_v.data, axis=1, keepdims=True)
    np.testing.assert_allclose(gm.weight_g.grad.data, (gw * gm.weight_v.data).sum(1, keepdims=True) / nv)


def test_remove_weight_norm_restores_a_plain_weight() -> None:
    gm, tm, shape = _pair("conv2d")
    weight_norm(gm, dim=1)
    _torch_weight_norm(tm, dim=1)
    _train_in_step(gm, tm, shape, ["weight_g", "weight_v"], steps=2)
    cls = type(gm)
    assert remove_weight_norm(gm) is gm
    torch.nn.utils.remove_weight_norm(tm)
    assert type(gm) is cls.__mro__[1] is nn.Conv2d
    assert list(gm.state_dict()) == list(tm.state_dict()) == ["bias", "weight"]
    _close(gm.weight, tm.weight)
    assert "weight" in dict(gm.named_parameters())
    _train_in_step(gm, tm, shape, ["weight", "bias"], steps=2)


def test_weight_norm_loads_a_torch_checkpoint() -> None:
    gm, tm, shape = _pair("linear")
    weight_norm(gm)
    _torch_weight_norm(tm)
    with torch.no_grad():
        tm.weight_g.mul_(3.0)
    gm.load_state_dict(tm.state_dict())
    x = np.random.default_rng(0).standard_normal(shape)
    _close(gm(gradtape.tensor(x)), tm(torch.tensor(x)))


def test_weight_norm_errors() -> None:
    gm, _, _ = _pair("linear")
    with pytest.raises(AttributeError, match=r"Linear has no parameter 'wieght'.*'weight', 'bias'"):
        weight_norm(gm, name="wieght")
    with pytest.raises(IndexError, match=r"dim 2 is out of range for Linear.weight of 2 dims"):
        weight_norm(gm, dim=2)
    with pytest.raises(TypeError, match="dim must be an int or None"):
        weight_norm(gm, dim=0.5)  # type: ignore[arg-type]
    weight_norm(gm)
    with pytest.raises(RuntimeError, match=r"two weight_norm hooks on the same parameter 'weight' of Linear"):
        weight_norm(gm)
    with pytest.raises(RuntimeError, match="weight_norm is already applied"):
        spectral_norm(gm)
    with pytest.raises(AttributeError, match="computed by weight_norm"):
        gm.weight = gradtape.tensor(np.zeros((4, 5)))
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found in Linear"):
        remove_spectral_norm(gm)
    remove_weight_norm(gm)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found in Linear"):
        remove_weight_norm(gm)
    with pytest.raises(TypeError, match=r"expected a gradtape nn\.Module"):
        weight_norm(torch.nn.Linear(2, 2))


def test_weight_norm_and_spectral_norm_on_two_parameters() -> None:
    class Two(nn.Module):
        def __init__(self) -> None:
            self.a = gradtape.tensor(np.arange(6.0).reshape(2, 3) + 1)
            self.b = gradtape.tensor(np.arange(6.0).reshape(3, 2) - 2)

        def forward(self, x: Any) -> Any:
            return (x @ self.a) @ self.b

    m: Any = Two()
    weight_norm(m, "a")
    spectral_norm(m, "b")
    assert list(m.state_dict()) == ["a_g", "a_v", "b_orig", "b_u", "b_v"]
    m(gradtape.tensor(np.ones((1, 2)))).sum().backward()
    assert all(getattr(m, n).grad is not None for n in ("a_g", "a_v", "b_orig"))
    remove_weight_norm(m, "a")
    assert type(m).__name__ == "Two" and type(m) is not Two
    remove_spectral_norm(m, "b")
    assert type(m) is Two
    assert list(m.state_dict()) == ["a", "b"]


# ----- spectral_norm ---------------------------------------------------------------------------


def _spectral_pair(kind: str, **kw: Any) -> tuple[Any, Any, tuple[int, ...]]:
    gm, tm, shape = _pair(kind)
    spectral_norm(gm, **kw)
    torch.nn.utils.spectral_norm(tm, **kw)
    for n in ("weight_u", "weight_v"):  # the same random start
        getattr(gm, n).data[...] = getattr(tm, n).numpy()
    return gm, tm, shape


@pytest.mark.parametrize(
    ("kind", "kw"),
    [("linear", {}), ("conv2d", {}), ("conv2d", {"n_power_iterations": 3, "dim": 1}), ("convT", {})],
)
def test_spectral_norm_trains_as_torch(kind: str, kw: dict[str, Any]) -> None:
    gm, tm, shape = _spectral_pair(kind, **kw)
    assert list(gm.state_dict()) == list(tm.state_dict())
    assert [n for n, _ in gm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert [n for n, _ in gm.named_buffers()] == [n for n, _ in tm.named_buffers()]
    gopt = gradtape.optim.SGD(gm.parameters(), lr=0.05)
    topt = torch.optim.SGD(tm.parameters(), lr=0.05)
    rng = np.random.default_rng(2)
    for step in range(5):
        train = step != 3
        gm.train(train)
        tm.train(train)
        x = rng.standard_normal(shape)
        gy = gm(gradtape.tensor(x))
        ty = tm(torch.tensor(x))
        _close(gy, ty)
        _close(gm.weight_u, tm.weight_u)
        _close(gm.weight_v, tm.weight_v)
        (gy * gy).sum().backward()
        (ty * ty).sum().backward()
        _close(gm.weight_orig.grad, tm.weight_orig.grad)
        _close(gm.bias.grad, tm.bias.grad)
        gopt.step()
        topt.step()
        gopt.zero_grad()
        topt.zero_grad()


def test_spectral_norm_eval_leaves_the_buffers_and_uses_them() -> None:
    gm, tm, shape = _spectral_pair("linear")
    gm.eval()
    tm.eval()
    u0 = gm.weight_u.data.copy()
    x = np.random.default_rng(3).standard_normal(shape)
    _close(gm(gradtape.tensor(x)), tm(torch.tensor(x)))
    np.testing.assert_array_equal(gm.weight_u.data, u0)
    _close(gm.weight, tm.weight)


def test_spectral_norm_two_forwards_one_backward() -> None:
    """The second training forward updates u, v in place; the first forward's backward must
    still use the u, v it computed with (as PyTorch, which clones them)."""
    gm, tm, shape = _spectral_pair("linear")
    rng = np.random.default_rng(4)
    x1, x2 = rng.standard_normal(shape), rng.standard_normal(shape)
    gl = gm(gradtape.tensor(x1)).sum() + (gm(gradtape.tensor(x2)) ** 2).sum()
    tl = tm(torch.tensor(x1)).sum() + (tm(torch.tensor(x2)) ** 2).sum()
    gl.backward()
    tl.backward()
    _close(gm.weight_orig.grad, tm.weight_orig.grad)


def test_spectral_norm_sigma_is_the_largest_singular_value() -> None:
    gm, _, _ = _pair("linear")
    spectral_norm(gm, n_power_iterations=50)
    gm(gradtape.tensor(np.ones((1, 5))))
    assert abs(np.linalg.svd(gm.weight.data, compute_uv=False)[0] - 1.0) < 1e-8


def test_remove_spectral_norm() -> None:
    gm, tm, shape = _spectral_pair("conv2d")
    x = np.random.default_rng(5).standard_normal(shape)
    gm(gradtape.tensor(x))
    tm(torch.tensor(x))
    remove_spectral_norm(gm)
    torch.nn.utils.remove_spectral_norm(tm)
    assert type(gm) is nn.Conv2d
    assert list(gm.state_dict()) == list(tm.state_dict())
    _close(gm.weight, tm.weight)


@pytest.mark.parametrize(
    ("call", "err", "match"),
    [
        (lambda m: spectral_norm(m, name="w"), AttributeError, "Linear has no parameter 'w'"),
        (lambda m: spectral_norm(m, n_power_iterations=0), ValueError, "n_power_iterations to be positive"),
        (lambda m: spectral_norm(m, dim=3), IndexError, "dim 3 is out of range for Linear.weight"),
        (lambda m: spectral_norm(spectral_norm(m)), RuntimeError, "two spectral_norm hooks on the same parameter"),
        (lambda m: weight_norm(spectral_norm(m)), RuntimeError, "spectral_norm is already applied"),
    ],
)
def test_spectral_norm_errors(call: Callable[[Any], Any], err: type[Exception], match: str) -> None:
    gm, _, _ = _pair("linear")
    with pytest.raises(err, match=match):
        call(gm)


def test_copies_and_pickles_keep_the_norms_apart() -> None:
    import copy
    import pickle

    gm, _, shape = _spectral_pair("linear")
    weight_norm(gm, "bias", dim=None)
    x = gradtape.tensor(np.random.default_rng(6).standard_normal(shape))
    gm.eval()
    y = gm(x).data
    for other in (copy.deepcopy(gm), pickle.loads(pickle.dumps(gm))):
        assert type(other) is not type(gm) and type(other).__name__ == "Linear"
        assert list(other.state_dict()) == list(gm.state_dict())
        np.testing.assert_array_equal(other(x).data, y)
        assert other.weight_orig is not gm.weight_orig
        remove_spectral_norm(other)
        remove_weight_norm(other, "bias")
        assert type(other) is nn.Linear
    np.testing.assert_array_equal(gm(x).data, y)  # the original keeps its norms


def test_inputs_are_still_checked() -> None:
    gm, _, _ = _pair("linear")
    weight_norm(gm)
    with pytest.raises(TypeError, match="Linear"):
        gm([[1.0] * 5])


# ----- the parametrization API (torch.nn.utils.parametrizations / parametrize) -----------------

P = gradtape.nn.utils.parametrizations
parametrize = gradtape.nn.utils.parametrize


def _train_parametrized(gm: Any, tm: Any, shape: tuple[int, ...], names: list[str], steps: int = 4) -> None:
    gopt = gradtape.optim.SGD(gm.parameters(), lr=0.05)
    topt = torch.optim.SGD(tm.parameters(), lr=0.05)
    gp, tp = dict(gm.named_parameters()), dict(tm.named_parameters())
    bufs = [n for n, _ in tm.named_buffers()]
    rng = np.random.default_rng(7)
    for step in range(steps):
        train = step != 2
        gm.train(train)
        tm.train(train)
        x = rng.standard_normal(shape)
        gy = gm(gradtape.tensor(x))
        ty = tm(torch.tensor(x))
        _close(gy, ty)
        gb, tb = dict(gm.named_buffers()), dict(tm.named_buffers())
        for n in bufs:
            _close(gb[n], tb[n])
        (gy * gy).sum().backward()
        (ty * ty).sum().backward()
        for n in names:
            _close(gp[n].grad, tp[n].grad)
        gopt.step()
        topt.step()
        gopt.zero_grad()
        topt.zero_grad()


@pytest.mark.parametrize("kind", ["linear", "conv2d"])
@pytest.mark.parametrize("dim", [0, None, 1])
def test_parametrizations_weight_norm_trains_as_torch(kind: str, dim: int | None) -> None:
    gm, tm, shape = _pair(kind)
    assert P.weight_norm(gm, dim=dim) is gm
    torch.nn.utils.parametrizations.weight_norm(tm, dim=dim)
    assert type(gm).__name__ == type(tm).__name__ == f"Parametrized{type(tm).__mro__[1].__name__}"
    assert parametrize.is_parametrized(gm, "weight") and not parametrize.is_parametrized(gm, "bias")
    assert list(gm.state_dict()) == list(tm.state_dict())
    assert [n for n, _ in gm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    _close(gm.parametrizations.weight.original0, tm.parametrizations.weight.original0)
    _close(gm.weight, tm.weight)
    names = ["parametrizations.weight.original0", "parametrizations.weight.original1", "bias"]
    _train_parametrized(gm, tm, shape, names)
    parametrize.remove_parametrizations(gm, "weight")
    torch.nn.utils.parametrize.remove_parametrizations(tm, "weight")
    assert type(gm) is (nn.Linear if kind == "linear" else nn.Conv2d)
    assert not parametrize.is_parametrized(gm)
    assert list(gm.state_dict()) == list(tm.state_dict())
    _close(gm.weight, tm.weight)


@pytest.mark.parametrize(("kind", "kw"), [("linear", {}), ("conv2d", {"n_power_iterations": 2}), ("convT", {})])
def test_parametrizations_spectral_norm_trains_as_torch(kind: str, kw: dict[str, Any]) -> None:
    gm, tm, shape = _pair(kind)
    P.spectral_norm(gm, **kw)
    torch.nn.utils.parametrizations.spectral_norm(tm, **kw)
    assert list(gm.state_dict()) == list(tm.state_dict())
    for n in ("_u", "_v"):  # the same random start
        getattr(gm.parametrizations.weight[0], n).data[...] = getattr(tm.parametrizations.weight[0], n).numpy()
    _train_parametrized(gm, tm, shape, ["parametrizations.weight.original", "bias"])
    original = gm.parametrizations.weight.original
    parametrize.remove_parametrizations(gm, "weight")
    torch.nn.utils.parametrize.remove_parametrizations(tm, "weight")
    assert gm.weight is original  # the optimizer's tensor stays the parameter
    _close(gm.weight, tm.weight)


def test_register_parametrization_of_a_users_module() -> None:
    class Symmetric(nn.Module):
        def forward(self, x: Any) -> Any:
            return x.triu() + x.triu(1).T

    class Sq(nn.Module):
        def __init__(self) -> None:
            self.weight = gradtape.tensor(np.arange(9.0).reshape(3, 3))

        def forward(self, x: Any) -> Any:
            return x @ self.weight

    m: Any = parametrize.register_parametrization(Sq(), "weight", Symmetric())
    np.testing.assert_array_equal(m.weight.data, m.weight.data.T)
    m(gradtape.tensor(np.ones((1, 3)))).sum().backward()
    g = m.parametrizations.weight.original.grad.data
    np.testing.assert_array_equal(g, np.triu(np.full((3, 3), 1.0)) + np.triu(np.full((3, 3), 1.0), 1))
    m.weight = gradtape.tensor(np.eye(3))  # right_inverse: stored in the original
    np.testing.assert_array_equal(m.parametrizations.weight.original.data, np.eye(3))
    with pytest.raises(ValueError, match="may not change the shape"):

        class Row(nn.Module):
            def forward(self, x: Any) -> Any:
                return x[0]

        parametrize.register_parametrization(Sq(), "weight", Row())
    with pytest.raises(ValueError, match="Sq has no parameter or buffer with name 'w'"):
        parametrize.register_parametrization(Sq(), "w", Symmetric())
    with pytest.raises(ValueError, match="does not have a parametrization on 'weight'"):
        parametrize.remove_parametrizations(Sq(), "weight")


def test_parametrizations_errors() -> None:
    gm, _, _ = _pair("linear")
    with pytest.raises(ValueError, match="Linear has no parameter or buffer with name 'wieght'"):
        P.weight_norm(gm, "wieght")
    with pytest.raises(IndexError, match="dim 2 is out of range"):
        P.weight_norm(gm, dim=2)
    with pytest.raises(ValueError, match="n_power_iterations to be positive"):
        P.spectral_norm(gm, n_power_iterations=0)
    P.weight_norm(gm)
    with pytest.raises(AttributeError, match="no parameter 'weight'"):
        weight_norm(gm)
