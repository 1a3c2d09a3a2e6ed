"""``torch.func`` renamed: ``gradtape.func``'s transforms written as a PyTorch user writes them,
evaluated with ``L`` bound to torch and to gradtape on the same float64 values; results and
errors must agree."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gradtape
from gradtape import func as gfunc
from gradtape import nn

torch: Any = pytest.importorskip("torch")
tfunc: Any = torch.func

_R = np.random.default_rng(5)
X = _R.standard_normal((3,))
Y = _R.standard_normal((2, 3))
W = _R.standard_normal((3,))


def f_scalar(L: Any, x: Any, y: Any) -> Any:
    return (L.sin(x) * (y @ x).sum() + L.exp(y).sum(0) * x).sum()


def f_vec(L: Any, x: Any, y: Any) -> Any:
    return L.tanh(y @ x) * x[:2]


def f_two(L: Any, x: Any, y: Any) -> Any:
    return L.tanh(y @ x), (x * x).sum()


def _np(v: Any) -> Any:
    if isinstance(v, (tuple, list)):
        return [_np(t) for t in v]
    if isinstance(v, dict):
        return {k: _np(t) for k, t in sorted(v.items())}
    return v.detach().numpy() if hasattr(v, "detach") else np.asarray(v)


def _close(a: Any, b: Any) -> None:
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), (a, b)
        for x, y in zip(a, b, strict=True):
            _close(x, y)
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys()
        for k in a:
            _close(a[k], b[k])
    else:
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def _run(expr: Any, *arrays: np.ndarray[Any, Any]) -> None:
    """``expr(L, F, *tensors)`` with torch and with gradtape; the results must agree."""
    theirs = expr(torch, tfunc, *[torch.tensor(a) for a in arrays])
    ours = expr(gradtape, gfunc, *[gradtape.tensor(a) for a in arrays])
    _close(_np(ours), _np(theirs))


CASES: dict[str, Any] = {
    "grad": lambda L, F, x, y: F.grad(lambda a, b: f_scalar(L, a, b))(x, y),
    "grad argnums=1": lambda L, F, x, y: F.grad(lambda a, b: f_scalar(L, a, b), argnums=1)(x, y),
    "grad argnums=(0,1)": lambda L, F, x, y: F.grad(lambda a, b: f_scalar(L, a, b), argnums=(0, 1))(x, y),
    "grad argnums=-1": lambda L, F, x, y: F.grad(lambda a, b: f_scalar(L, a, b), argnums=-1)(x, y),
    "grad of grad": lambda L, F, x, y: F.grad(lambda a: F.grad(lambda b: (L.sin(b) * b).sum())(a).sum())(x),
    "grad has_aux": lambda L, F, x, y: F.grad(lambda a, b: (f_scalar(L, a, b), b * 2), has_aux=True)(x, y),
    "grad_and_value": lambda L, F, x, y: F.grad_and_value(lambda a, b: f_scalar(L, a, b))(x, y),
    "grad_and_value has_aux": lambda L, F, x, y: F.grad_and_value(
        lambda a, b: (f_scalar(L, a, b), a + 1), has_aux=True
    )(x, y),
    "grad of a dict": lambda L, F, x, y: F.grad(lambda d: f_scalar(L, d["x"], d["y"]))({"x": x, "y": y}),
    "grad of a tuple": lambda L, F, x, y: F.grad(lambda t, s: f_scalar(L, t[0], t[1]) * s)((x, y), x[0]),
    "grad unused input": lambda L, F, x, y: F.grad(lambda a, b: (a * a).sum(), argnums=(0, 1))(x, y),
    "jacrev": lambda L, F, x, y: F.jacrev(lambda a, b: f_vec(L, a, b))(x, y),
    "jacrev argnums=(0,1)": lambda L, F, x, y: F.jacrev(lambda a, b: f_vec(L, a, b), argnums=(0, 1))(x, y),
    "jacrev two outputs": lambda L, F, x, y: F.jacrev(lambda a, b: f_two(L, a, b))(x, y),
    "jacrev two outputs, two args": lambda L, F, x, y: F.jacrev(lambda a, b: f_two(L, a, b), argnums=(0, 1))(x, y),
    "jacfwd": lambda L, F, x, y: F.jacfwd(lambda a, b: f_vec(L, a, b), argnums=1)(x, y),
    "jacrev of jacrev": lambda L, F, x, y: F.jacrev(F.jacrev(lambda a: L.sin(a) * a.sum()))(x),
    "hessian": lambda L, F, x, y: F.hessian(lambda a, b: f_scalar(L, a, b))(x, y),
    "hessian argnums=(0,1)": lambda L, F, x, y: F.hessian(lambda a, b: f_scalar(L, a, b), argnums=(0, 1))(x, y),
    "jvp": lambda L, F, x, y: F.jvp(lambda a, b: f_vec(L, a, b), (x, y), (x * 0 + 1, y * 2)),
    "jvp has_aux": lambda L, F, x, y: F.jvp(lambda a: (L.sin(a), a * 3), (x,), (x,), has_aux=True),
    "vjp": lambda L, F, x, y: (lambda o, fn: (o, fn(o * 0 + 1), fn(o)))(*F.vjp(lambda a, b: f_vec(L, a, b), x, y)),
    "vjp two outputs": lambda L, F, x, y: (lambda o, fn: (o, fn((o[0] + 1, o[1] * 0 + 2))))(
        *F.vjp(lambda a, b: f_two(L, a, b), x, y)
    ),
    "vjp has_aux": lambda L, F, x, y: (lambda o, fn, aux: (o, fn(o), aux))(
        *F.vjp(lambda a: (L.sin(a), a.sum()), x, has_aux=True)
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_transform_equals_torch_func(name: str) -> None:
    _run(CASES[name], X, Y)


def _linear_pair() -> tuple[Any, Any]:
    gradtape.manual_seed(3)
    model = nn.Sequential(nn.Linear(3, 4, dtype=np.float64), nn.Tanh(), nn.Linear(4, 2, dtype=np.float64))
    tmodel = torch.nn.Sequential(
        torch.nn.Linear(3, 4, dtype=torch.float64), torch.nn.Tanh(), torch.nn.Linear(4, 2, dtype=torch.float64)
    )
    tmodel.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in model.state_dict().items()})
    return model, tmodel


def test_functional_call_and_grad_over_a_parameter_dict() -> None:
    """The meta-learning idiom: the loss as a function of a parameter dict, differentiated
    with grad, the module's own parameters untouched."""
    model, tmodel = _linear_pair()
    x = _R.standard_normal((5, 3))

    def run(L: Any, F: Any, m: Any, xs: Any) -> Any:
        params = {k: v.detach() * 1.5 for k, v in m.named_parameters()}

        def loss(p: Any, inp: Any) -> Any:
            return (F.functional_call(m, p, (inp,)) ** 2).sum()

        return F.grad(loss)(params, xs), F.functional_call(m, params, xs)

    before = [p.numpy().copy() for p in model.parameters()]
    ours = run(gradtape, gfunc, model, gradtape.tensor(x))
    theirs = run(torch, tfunc, tmodel, torch.tensor(x))
    _close(_np(ours), _np(theirs))
    for a, b in zip(before, model.parameters(), strict=True):
        np.testing.assert_array_equal(a, b.numpy())
    out = model(gradtape.tensor(x))
    np.testing.assert_allclose(out.numpy(), tmodel(torch.tensor(x)).detach().numpy(), rtol=1e-12)


def test_functional_call_ties_weights_and_checks_keys_like_torch() -> None:
    class Tied(nn.Module):
        def __init__(self, lib_nn: Any, dtype: Any) -> None:
            super().__init__()
            self.a = lib_nn.Linear(2, 2, bias=False, dtype=dtype)
            self.b = lib_nn.Linear(2, 2, bias=False, dtype=dtype)
            self.b.weight = self.a.weight

        def forward(self, x: Any) -> Any:
            return self.b(self.a(x))

    class TTied(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.a = torch.nn.Linear(2, 2, bias=False, dtype=torch.float64)
            self.b = torch.nn.Linear(2, 2, bias=False, dtype=torch.float64)
            self.b.weight = self.a.weight

        def forward(self, x: Any) -> Any:
            return self.b(self.a(x))

    w = np.array([[1.0, 2.0], [3.0, -1.0]])
    x = np.array([[0.5, -0.25]])
    m, tm = Tied(nn, np.float64), TTied()
    with torch.no_grad():
        tm.a.weight.copy_(torch.from_numpy(m.a.weight.numpy().copy()))  # the same (tied) weights in both
    ours = gfunc.functional_call(m, {"a.weight": gradtape.tensor(w)}, gradtape.tensor(x))
    theirs = tfunc.functional_call(tm, {"a.weight": torch.tensor(w)}, torch.tensor(x))
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-12)
    untied = gfunc.functional_call(m, {"a.weight": gradtape.tensor(w)}, gradtape.tensor(x), tie_weights=False)
    tuntied = tfunc.functional_call(tm, {"a.weight": torch.tensor(w)}, torch.tensor(x), tie_weights=False)
    np.testing.assert_allclose(untied.numpy(), tuntied.detach().numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="Missing key"):
        tfunc.functional_call(tm, {"a.weight": torch.tensor(w)}, torch.tensor(x), tie_weights=False, strict=True)
    with pytest.raises(RuntimeError, match="Missing key"):
        gfunc.functional_call(m, {"a.weight": gradtape.tensor(w)}, gradtape.tensor(x), tie_weights=False, strict=True)
    with pytest.raises(ValueError, match="multiple dictionaries"):
        tfunc.functional_call(tm, ({"a.weight": torch.tensor(w)}, {"a.weight": torch.tensor(w)}), torch.tensor(x))
    with pytest.raises(ValueError, match="multiple dictionaries"):
        gfunc.functional_call(
            m, ({"a.weight": gradtape.tensor(w)}, {"a.weight": gradtape.tensor(w)}), gradtape.tensor(x)
        )


ERRORS: dict[str, Any] = {
    "non-scalar output": lambda L, F, x: F.grad(lambda a: a * 2)(x),
    "argnums out of range": lambda L, F, x: F.grad(lambda a: a.sum(), argnums=1)(x),
    "argnums not int": lambda L, F, x: F.grad(lambda a: a.sum(), argnums=[0])(x),
    "has_aux without a pair": lambda L, F, x: F.grad(lambda a: a.sum(), has_aux=True)(x),
    "jvp primals not a tuple": lambda L, F, x: F.jvp(lambda a: a, x, (x,)),
    "jacfwd randomness": lambda L, F, x: F.jacfwd(lambda a: a, randomness="sometimes")(x),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_follow_torch_func(name: str) -> None:
    with pytest.raises(RuntimeError):
        ERRORS[name](torch, tfunc, torch.tensor(X))
    with pytest.raises(RuntimeError):
        ERRORS[name](gradtape, gfunc, gradtape.tensor(X))
