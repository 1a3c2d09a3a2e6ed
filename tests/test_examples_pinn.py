"""The physics-informed example (``python -m gradtape.examples.pinn``): its loss and parameter
gradients equal PyTorch's for the same network (u'' by nested ``grad(create_graph=True)``),
and a short run fits sin(pi x)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from gradtape import Cpu
from gradtape.examples import pinn


def test_loss_and_gradients_equal_torch() -> None:
    torch: Any = pytest.importorskip("torch")
    dev = Cpu(seed=1)
    model = pinn.PINN(8, dev)
    xs = np.random.default_rng(1).uniform(0, 1, (10, 1))
    loss = pinn.residual_loss(model, xs, dev)
    g = loss.backward()

    layers = [torch.nn.Linear(1, 8), torch.nn.Linear(8, 8), torch.nn.Linear(8, 1)]
    with torch.no_grad():
        for tl, gl in zip(layers, (model.l1, model.l2, model.l3), strict=True):
            tl.double()
            tl.weight.copy_(torch.from_numpy(gl.weight.numpy()))
            assert gl.bias is not None
            tl.bias.copy_(torch.from_numpy(gl.bias.numpy()))
    x = torch.tensor(xs, requires_grad=True)
    u = x * (1 - x) * layers[2](layers[1](layers[0](x).tanh()).tanh())
    (du,) = torch.autograd.grad(u.sum(), x, create_graph=True)
    (d2u,) = torch.autograd.grad(du.sum(), x, create_graph=True)
    tloss = ((d2u + math.pi**2 * torch.sin(math.pi * x)) ** 2).mean()
    tloss.backward()
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-11)
    for tl, gl in zip(layers, (model.l1, model.l2, model.l3), strict=True):
        assert gl.bias is not None
        np.testing.assert_allclose(g.get(gl.weight).numpy(), tl.weight.grad.numpy(), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(g.get(gl.bias).numpy(), tl.bias.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_a_short_run_fits_sin(capsys: pytest.CaptureFixture[str]) -> None:
    assert pinn.main(["--steps", "300", "--points", "32"]) == 0
    out = capsys.readouterr().out
    losses = [float(line.split()[-1]) for line in out.splitlines() if line.startswith("step")]
    assert losses[-1] < losses[0] / 100
    err = float(out.splitlines()[-1].split(":")[1].split()[0])
    assert err < 5e-3
