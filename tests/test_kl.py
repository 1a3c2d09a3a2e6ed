"""gradtape.distributions.kl_divergence and register_kl against torch.distributions, written as
the PyTorch user's program: values and the gradients of ``sum(kl * w)`` in every parameter of
both distributions to 1e-10 (probabilities 0 and 1 included), a Hessian against
``torch.func.hessian``, PyTorch's dispatch (most specific pair, the ambiguity warning) and its
``NotImplementedError`` for an unregistered pair."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, Gradients, Tensor, distributions
from gradtape.autograd import grad
from gradtape.distributions import Bernoulli, Categorical, Distribution, Normal, kl_divergence, register_kl

torch: Any = pytest.importorskip("torch")
D: Any = torch.distributions

Array = np.ndarray[Any, Any]
DEV = Cpu(seed=0)
RNG = np.random.default_rng(0)

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")


def _close(a: Array, b: Array, msg: str = "") -> None:
    np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, equal_nan=True, err_msg=msg)


def compare(ours: Callable[..., Any], theirs: Callable[..., Any], floats: list[Array]) -> None:
    store = Gradients.leaky()
    xs = [DEV.tensor(a, dtype=np.float64) for a in floats]
    out = ours(*(x.trace(store) for x in xs))
    txs = [torch.tensor(a, requires_grad=True) for a in floats]
    tout = theirs(*txs)
    assert out.shape == tuple(tout.shape)
    _close(out.numpy(), tout.detach().numpy(), "value")
    w = RNG.standard_normal(out.shape)
    grads = (out * DEV.tensor(w)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    for k, (x, tx) in enumerate(zip(xs, txs, strict=True)):
        _close(grads.get(x).numpy(), tx.grad.numpy(), f"gradient of parameter {k}")


def test_normal_normal_matches_torch() -> None:
    loc_p, scale_p = RNG.standard_normal((3, 4)), RNG.uniform(0.1, 3.0, (3, 4))
    loc_q, scale_q = RNG.standard_normal(4) * 5, RNG.uniform(0.01, 10.0, 4)
    compare(
        lambda a, b, c, d: kl_divergence(Normal(a, b), Normal(c, d)),
        lambda a, b, c, d: D.kl_divergence(D.Normal(a, b), D.Normal(c, d)),
        [loc_p, scale_p, loc_q, scale_q],
    )


@pytest.mark.parametrize("param", ["probs", "logits"])
def test_bernoulli_bernoulli_matches_torch(param: str) -> None:
    if param == "probs":
        p = np.array([0.3, 0.0, 1.0, 0.5, 0.0, 1.0, 0.999, 0.2])
        q = np.array([0.6, 0.4, 0.2, 0.0, 0.0, 1.0, 0.001, 1.0])
    else:
        p, q = RNG.standard_normal(8) * 4, RNG.standard_normal(8) * 4
    compare(
        lambda a, b: kl_divergence(Bernoulli(**{param: a}), Bernoulli(**{param: b})),
        lambda a, b: D.kl_divergence(D.Bernoulli(**{param: a}), D.Bernoulli(**{param: b})),
        [p, q],
    )


@pytest.mark.parametrize("param", ["probs", "logits"])
def test_categorical_categorical_matches_torch(param: str) -> None:
    if param == "probs":
        p = RNG.uniform(0.1, 1.0, (3, 4))
        q = RNG.uniform(0.1, 1.0, (3, 4))
        p[0, 1] = 0.0  # p gives a class probability 0: its term is 0
        q[1, 2] = 0.0  # q gives it 0 and p does not: inf
        p[2, 3] = q[2, 3] = 0.0
    else:
        p, q = RNG.standard_normal((3, 4)) * 3, RNG.standard_normal(4) * 3
    compare(
        lambda a, b: kl_divergence(Categorical(**{param: a}), Categorical(**{param: b})),
        lambda a, b: D.kl_divergence(D.Categorical(**{param: a}), D.Categorical(**{param: b})),
        [p, q],
    )


def test_kl_hessian_matches_torch() -> None:
    x0 = np.array([0.3, 1.2, -0.5, 0.7])

    def ours(t: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return kl_divergence(Normal(t[0:1], t[1:2]), Normal(t[2:3], t[3:4])).sum() + kl_divergence(
            Categorical(logits=t), Categorical(logits=t * t)
        )

    def theirs(t: Any) -> Any:
        return D.kl_divergence(D.Normal(t[0:1], t[1:2]), D.Normal(t[2:3], t[3:4])).sum() + D.kl_divergence(
            D.Categorical(logits=t), D.Categorical(logits=t * t)
        )

    want = torch.func.hessian(theirs)(torch.tensor(x0)).numpy()
    rows = []
    for i in range(x0.size):
        x = DEV.tensor(x0)
        (gx,) = grad(ours(x.leaky_trace()), x, create_graph=True)
        assert gx is not None
        e = np.zeros(x0.size)
        e[i] = 1.0
        (row,) = grad((gx * DEV.tensor(e)).sum(), x)
        assert row is not None
        rows.append(row.numpy())
    _close(np.stack(rows), want)


def test_unregistered_pair_raises_not_implemented() -> None:
    n = Normal(DEV.tensor(np.zeros(2)), DEV.tensor(np.ones(2)))
    b = Bernoulli(DEV.tensor(np.full(2, 0.5)))
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented for p type Normal and q type"):
        kl_divergence(n, b)
    with pytest.raises(NotImplementedError, match="p type Bernoulli and q type Normal"):
        kl_divergence(b, n)


def test_register_kl_dispatches_to_the_most_specific_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    # registrations here stay out of the module's registry
    monkeypatch.setattr(distributions, "_KL_REGISTRY", dict(distributions._KL_REGISTRY))
    monkeypatch.setattr(distributions, "_KL_MEMOIZE", {})

    class MyNormal(Normal):
        pass

    class Other(Distribution):
        pass

    n = Normal(DEV.tensor(np.zeros(2)), DEV.tensor(np.ones(2)))
    m = MyNormal(DEV.tensor(np.zeros(2)), DEV.tensor(np.ones(2)))
    # a subclass falls back on its base's pair
    _close(kl_divergence(m, n).numpy(), np.zeros(2))

    @register_kl(MyNormal, Normal)
    def kl_mine(p: Any, q: Any) -> Tensor[Any, Any]:
        return DEV.tensor(np.full(2, 7.0))

    assert kl_mine(m, n).numpy()[0] == 7.0
    _close(kl_divergence(m, n).numpy(), np.full(2, 7.0))
    _close(kl_divergence(n, m).numpy(), np.zeros(2))  # (Normal, MyNormal): the base pair

    @register_kl(Normal, MyNormal)
    def kl_other(p: Any, q: Any) -> Tensor[Any, Any]:
        return DEV.tensor(np.full(2, 9.0))

    with pytest.warns(RuntimeWarning, match="Ambiguous kl_divergence"):
        got = kl_divergence(m, m)
    _close(got.numpy(), np.full(2, 7.0))  # PyTorch's choice: the order by p's type first
    with pytest.raises(TypeError, match="type_p"):
        register_kl(int, Normal)  # type: ignore[arg-type]
    with pytest.raises(NotImplementedError):
        kl_divergence(Other(), n)
