"""gradtape.distributions as PyTorch programs use torch.distributions: REINFORCE's
``-(Categorical(logits=...).log_prob(action) * R).sum()``, a VAE's ``Normal(mu, std).rsample()``,
Bernoulli likelihoods; log_prob, entropy and their gradients equal PyTorch's in float64, second
derivatives through them equal torch's double backward, sampling follows the probabilities."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gradtape
from gradtape import Cpu, DTypeError, ShapeError
from gradtape.distributions import Bernoulli, Categorical, Normal

torch = pytest.importorskip("torch")
td = pytest.importorskip("torch.distributions")

DEV = Cpu(seed=0)
RNG = np.random.default_rng(0)
LOGITS = RNG.standard_normal((3, 5))
PROBS = RNG.random((3, 5))
PROBS[1, 2] = 0.0  # a class that never happens: log_prob of others and entropy stay finite
ACT = np.array([4, 0, 3])


def _pair(a: np.ndarray[Any, Any]) -> tuple[Any, Any]:
    return DEV.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


@pytest.mark.parametrize("kind", ["logits", "probs"])
@pytest.mark.parametrize("value", ["row", "broadcast"])
def test_categorical_log_prob_and_entropy_equal_pytorch(kind: str, value: str) -> None:
    base = LOGITS if kind == "logits" else PROBS
    ours, theirs = _pair(base)
    a = ACT if value == "row" else np.array([[4, 0, 3], [1, 1, 0]])
    d, dt = Categorical(**{kind: ours}), td.Categorical(**{kind: theirs})
    w = RNG.standard_normal(a.shape)
    lp, lpt = d.log_prob(DEV.tensor(a)), dt.log_prob(torch.from_numpy(a))
    np.testing.assert_allclose(lp.numpy(), lpt.detach().numpy(), rtol=1e-13, atol=1e-15)
    ent, entt = d.entropy(), dt.entropy()
    np.testing.assert_allclose(ent.numpy(), entt.detach().numpy(), rtol=1e-13, atol=1e-15)
    ((lp * DEV.tensor(w)).sum() + ent.sum()).backward()
    ((lpt * torch.from_numpy(w)).sum() + entt.sum()).backward()
    assert ours.grad is not None
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_reinforce_loss_and_its_second_derivative_equal_pytorch() -> None:
    """The policy-gradient loss of pytorch/examples' reinforce.py, differentiated twice."""
    ours, theirs = _pair(LOGITS)
    ret = np.array([1.5, -0.5, 2.0])
    v = RNG.standard_normal(LOGITS.shape)
    loss_t = -(td.Categorical(logits=theirs).log_prob(torch.from_numpy(ACT)) * torch.from_numpy(ret)).sum()
    (gt,) = torch.autograd.grad(loss_t, theirs, create_graph=True)
    (ht,) = torch.autograd.grad((gt * torch.from_numpy(v)).sum(), theirs)
    loss = -(Categorical(logits=ours).log_prob(ACT) * DEV.tensor(ret)).sum()
    (g,) = gradtape.autograd.grad(loss, ours, create_graph=True)
    assert g is not None
    np.testing.assert_allclose(g.numpy(), gt.detach().numpy(), atol=1e-14)
    (h,) = gradtape.autograd.grad((g * DEV.tensor(v)).sum(), ours)
    assert h is not None
    np.testing.assert_allclose(h.numpy(), ht.numpy(), atol=1e-13)


@pytest.mark.parametrize("kind", ["logits", "probs"])
def test_bernoulli_equals_pytorch(kind: str) -> None:
    base = RNG.standard_normal((2, 4)) * 3 if kind == "logits" else RNG.random((2, 4))
    ours, theirs = _pair(base)
    x = (RNG.random((2, 4)) < 0.5).astype(np.float64)
    d, dt = Bernoulli(**{kind: ours}), td.Bernoulli(**{kind: theirs})
    lp, lpt = d.log_prob(x), dt.log_prob(torch.from_numpy(x))
    np.testing.assert_allclose(lp.numpy(), lpt.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(d.entropy().numpy(), dt.entropy().detach().numpy(), rtol=1e-12, atol=1e-14)
    (lp.sum() + d.entropy().sum()).backward()
    (lpt.sum() + dt.entropy().sum()).backward()
    assert ours.grad is not None
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-11, atol=1e-13)


def test_normal_log_prob_entropy_and_rsample_gradients_equal_pytorch() -> None:
    mu, mut = _pair(RNG.standard_normal((4, 3)))
    sd, sdt = _pair(RNG.random((4, 3)) + 0.5)
    x = RNG.standard_normal((2, 4, 3))
    d, dt = Normal(mu, sd), td.Normal(mut, sdt)
    lp, lpt = d.log_prob(x), dt.log_prob(torch.from_numpy(x))
    np.testing.assert_allclose(lp.numpy(), lpt.detach().numpy(), rtol=1e-13)
    np.testing.assert_allclose(d.entropy().numpy(), dt.entropy().detach().numpy(), rtol=1e-13)
    # rsample's gradient: d(loc + scale * eps)/dloc = 1, /dscale = eps (the draw's own eps)
    z = d.rsample((5,))
    assert z.shape == (5, 4, 3)
    eps = (z.numpy() - mu.numpy()) / sd.numpy()
    (lp.sum() + d.entropy().sum() + z.sum()).backward()
    (lpt.sum() + dt.entropy().sum()).backward()
    assert mu.grad is not None and sd.grad is not None
    np.testing.assert_allclose(mu.grad.numpy(), mut.grad.numpy() + 5, rtol=1e-12)
    np.testing.assert_allclose(sd.grad.numpy(), sdt.grad.numpy() + eps.sum(axis=0), rtol=1e-11)


def test_vae_kl_by_reparameterization_trains_the_encoder_outputs() -> None:
    """A VAE's sampled term: gradients reach mu and log-variance through rsample."""
    mu = DEV.tensor(np.zeros((8, 2)), requires_grad=True)
    logvar = DEV.tensor(np.zeros((8, 2)), requires_grad=True)
    z = Normal(mu, (logvar * 0.5).exp()).rsample()
    (z * z).mean().backward()
    assert mu.grad is not None and logvar.grad is not None
    assert np.abs(logvar.grad.numpy()).sum() > 0 and np.all(np.isfinite(mu.grad.numpy()))


def test_sampling_follows_the_probabilities_and_the_device_seed() -> None:
    p = np.array([[0.1, 0.6, 0.0, 0.3], [0.25, 0.25, 0.25, 0.25]])
    d = Categorical(probs=Cpu(seed=3).tensor(p))
    s = d.sample((20000,))
    assert s.shape == (20000, 2) and s.dtype == np.int64
    freq = np.stack([np.bincount(s.numpy()[:, i], minlength=4) / 20000 for i in range(2)])
    np.testing.assert_allclose(freq, p, atol=0.015)
    assert (s.numpy()[:, 0] != 2).all()
    again = Categorical(probs=Cpu(seed=3).tensor(p)).sample((20000,))
    np.testing.assert_array_equal(again.numpy(), s.numpy())
    b = Bernoulli(probs=Cpu(seed=1).tensor(np.array([0.2, 0.9]))).sample((10000,))
    np.testing.assert_allclose(b.numpy().mean(axis=0), [0.2, 0.9], atol=0.02)
    n = Normal(Cpu(seed=2).tensor(np.array([1.0, -3.0])), 2.0).sample((20000,))
    np.testing.assert_allclose(n.numpy().mean(axis=0), [1.0, -3.0], atol=0.06)
    np.testing.assert_allclose(n.numpy().std(axis=0), [2.0, 2.0], atol=0.06)


def test_bad_arguments_are_refused_naming_the_distribution() -> None:
    with pytest.raises(ValueError, match="Categorical: either `probs` or `logits`"):
        Categorical()
    with pytest.raises(ValueError, match=r"Categorical.log_prob: value must be in \[0, 5\)"):
        Categorical(logits=LOGITS).log_prob(np.array([5, 0, 0]))
    with pytest.raises(DTypeError, match=r"Categorical\.log_prob: value must be integer"):
        Categorical(logits=LOGITS).log_prob(np.array([0.0, 1.0, 2.0]))
    with pytest.raises(ShapeError, match=r"value of shape \(2,\) does not broadcast with batch_shape \(3,\)"):
        Categorical(logits=LOGITS).log_prob(np.array([0, 1]))
    with pytest.raises(ValueError, match="Normal: scale must be positive"):
        Normal(0.0, np.array([1.0, 0.0]))
    with pytest.raises(ShapeError, match=r"Normal: loc of shape \(3,\) and scale of shape \(2,\)"):
        Normal(np.zeros(3), np.ones(2))
    with pytest.raises(DTypeError, match="Bernoulli: logits must be a float tensor"):
        Bernoulli(logits=DEV.tensor(np.array([1, 2])))
