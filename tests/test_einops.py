"""einops on gradtape tensors, as vit-pytorch and the diffusion U-Nets write it: rearrange,
reduce, repeat, pack/unpack and the Rearrange/Reduce layers, compared with the same calls on
torch tensors in float64 (values and gradients), and differentiated twice."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import einops
import numpy as np
import pytest

import gradtape
from gradtape import Cpu, nn

torch = pytest.importorskip("torch")

DEV = Cpu(seed=0)
X = np.random.default_rng(0).standard_normal((2, 3, 4, 6))

CALLS: dict[str, Callable[[Any], Any]] = {
    "patches (vit)": lambda x: einops.rearrange(x, "b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=2, p2=3),
    "heads split": lambda x: einops.rearrange(x, "b c h (n d) -> b n c h d", n=2),
    "transpose": lambda x: einops.rearrange(x, "b c h w -> w h c b"),
    "reduce mean": lambda x: einops.reduce(x, "b c h w -> b c", "mean"),
    "reduce max pool": lambda x: einops.reduce(x, "b c (h 2) (w 2) -> b c h w", "max"),
    "reduce sum keep": lambda x: einops.reduce(x, "b c h w -> b c 1 1", "sum"),
    "reduce min": lambda x: einops.reduce(x, "b c h w -> c", "min"),
    "repeat new axis": lambda x: einops.repeat(x, "b c h w -> b c h w k", k=3),
    "repeat tile": lambda x: einops.repeat(x, "b c h w -> b (r c) h w", r=2),
    "repeat interleave": lambda x: einops.repeat(x, "b c h w -> b (c r) h w", r=2),
    "einsum": lambda x: einops.einsum(x, x, "b c h w, b d h w -> b c d"),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_values_and_gradients_equal_torch(name: str) -> None:
    xt = torch.tensor(X, requires_grad=True)
    yt = CALLS[name](xt)
    w = np.random.default_rng(1).standard_normal(tuple(yt.shape))
    (yt * torch.from_numpy(w)).sum().backward()

    x = DEV.tensor(X, requires_grad=True)
    y = CALLS[name](x)
    assert isinstance(y, gradtape.Tensor)
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), rtol=1e-13, atol=1e-13)
    (y * DEV.tensor(w)).sum().backward()
    assert x.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-13, atol=1e-13)


def test_pack_and_unpack_round_trip_with_gradients() -> None:
    x = DEV.tensor(X, requires_grad=True)
    cls = DEV.tensor(np.ones((2, 3)), requires_grad=True)
    tokens = einops.rearrange(x, "b c h w -> b (h w) c")
    packed, ps = einops.pack([cls, tokens], "b * c")
    assert packed.shape == (2, 25, 3)
    back = einops.unpack(packed * 2.0, ps, "b * c")
    np.testing.assert_array_equal(back[1].numpy(), 2 * tokens.numpy())
    (back[0].sum() + (back[1] * back[1]).sum()).backward()
    assert cls.grad is not None and x.grad is not None
    np.testing.assert_array_equal(cls.grad.numpy(), np.full((2, 3), 2.0))
    np.testing.assert_allclose(x.grad.numpy(), 8 * X, rtol=1e-15)


def test_second_derivative_through_rearrange_and_reduce() -> None:
    xt = torch.tensor(X, requires_grad=True)
    v = np.random.default_rng(2).standard_normal(X.shape)

    def f(x: Any) -> Any:
        return (einops.reduce(einops.rearrange(x, "b c h w -> b h w c") ** 3, "b h w c -> b c", "sum") ** 2).sum()

    (gt,) = torch.autograd.grad(f(xt), xt, create_graph=True)
    (ht,) = torch.autograd.grad((gt * torch.from_numpy(v)).sum(), xt)
    x = DEV.tensor(X, requires_grad=True)
    (g,) = gradtape.autograd.grad(f(x), x, create_graph=True)
    assert g is not None
    (h,) = gradtape.autograd.grad((g * DEV.tensor(v)).sum(), x)
    assert h is not None
    np.testing.assert_allclose(h.numpy(), ht.numpy(), rtol=1e-12)


def test_rearrange_and_reduce_layers_in_a_sequential_model() -> None:
    """vit-pytorch's patch embedding and pooling head, with torch's einops layers beside."""
    from einops.layers.torch import Rearrange as TRearrange
    from einops.layers.torch import Reduce as TReduce

    lin = nn.Linear(2 * 3 * 3, 8, dev=DEV, dtype=np.float64)
    model = nn.Sequential(
        nn.Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=2, p2=3),
        lin,
        nn.Reduce("b n d -> b d", "mean"),
    )
    tlin = torch.nn.Linear(18, 8, dtype=torch.float64)
    assert lin.bias is not None
    with torch.no_grad():
        tlin.weight.copy_(torch.from_numpy(lin.weight.numpy()))
        tlin.bias.copy_(torch.from_numpy(lin.bias.numpy()))
    tmodel = torch.nn.Sequential(
        TRearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=2, p2=3), tlin, TReduce("b n d -> b d", "mean")
    )
    out, tout = model(DEV.tensor(X)), tmodel(torch.from_numpy(X))
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-13)
    out.sum().backward()
    tout.sum().backward()
    assert lin.weight.grad is not None
    np.testing.assert_allclose(lin.weight.grad.numpy(), tlin.weight.grad.numpy(), rtol=1e-12)
    assert repr(model[0]) == "Rearrange('b c (h p1) (w p2) -> b (h w) (p1 p2 c)', p1=2, p2=3)"


def test_a_pattern_that_does_not_fit_is_einops_error() -> None:
    with pytest.raises(einops.EinopsError, match="Shape mismatch"):
        einops.rearrange(DEV.tensor(X), "b c (h p) w -> b c h p w", p=5)
    with pytest.raises(NotImplementedError, match="no 'any' reduction"):
        einops.reduce(DEV.tensor(X), "b c h w -> b", "any")
