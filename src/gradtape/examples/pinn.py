"""A physics-informed network: fit u(x) with u'' = -pi^2 sin(pi x) on [0, 1], u(0) = u(1) = 0.

    python -m gradtape.examples.pinn [--steps 1500] [--points 64] [--hidden 32] [--lr 3e-3] [--seed 0]

The exact solution is ``sin(pi x)``. The network is ``u(x) = x (1 - x) N(x)`` with ``N`` a
1-32-32-1 tanh MLP (``gradtape.nn``, float64): the factor ``x (1 - x)`` makes the boundary
conditions hold exactly (Lagaris et al. 1998, "Artificial neural networks for solving
ordinary and partial differential equations"; the residual loss is Raissi et al. 2019's PINN).
Each step draws collocation points in (0, 1), computes ``u''`` with two nested
``gradtape.autograd.grad(..., create_graph=True)`` calls (gradients of gradients, recorded on
the same tape), and minimises ``mean((u'' + pi^2 sin(pi x))^2)`` with Adam: the loss's
gradient with respect to the parameters flows back through both derivative computations.
Prints the loss as it falls and, at the end, the largest error ``max |u - sin(pi x)|`` on a
grid of 201 points.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from gradtape import Cpu, Tensor, nn, no_grad, optim
from gradtape.autograd import grad
from gradtape.examples._cli import nonnegative_int, positive_int

__all__ = ["PINN", "main", "residual_loss", "train"]


class PINN(nn.Module):
    """``u(x) = x (1 - x) N(x)``, ``N`` a tanh MLP ``1 -> hidden -> hidden -> 1`` (float64).

    Input ``x (P, 1)``, output ``(P, 1)``; ``u(0) = u(1) = 0`` for any parameters.
    """

    def __init__(self, hidden: int, dev: Cpu) -> None:
        self.l1 = nn.Linear(1, hidden, dev=dev, dtype=np.float64)
        self.l2 = nn.Linear(hidden, hidden, dev=dev, dtype=np.float64)
        self.l3 = nn.Linear(hidden, 1, dev=dev, dtype=np.float64)

    def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        """``x (P, 1) -> u (P, 1)``."""
        n = self.l3(self.l2(self.l1(x).tanh()).tanh())
        out: Tensor[Any, Any] = x * (1.0 - x) * n
        return out


def residual_loss(model: PINN, xs: np.ndarray[Any, Any], dev: Cpu) -> Tensor[Any, Any]:
    """``mean((u''(x) + pi^2 sin(pi x))^2)`` over the points ``xs`` (shape ``(P, 1)``), with
    ``u''`` from two nested ``grad(..., create_graph=True)`` calls; a traced scalar whose
    ``backward()`` gives the parameters' gradients."""
    x = dev.tensor(xs)
    u = model(x.trace(model.alloc_grads()))
    (du,) = grad(u.sum(), x, create_graph=True)
    assert du is not None
    (d2u,) = grad(du.sum(), x, create_graph=True)
    assert d2u is not None
    r = d2u + dev.tensor(math.pi**2 * np.sin(math.pi * xs))
    loss: Tensor[Any, Any] = (r * r).mean()
    return loss


def max_error(model: PINN, dev: Cpu, points: int = 201) -> float:
    """``max |u(x) - sin(pi x)|`` on ``points`` evenly spaced x in [0, 1]."""
    xs = np.linspace(0.0, 1.0, points).reshape(-1, 1)
    with no_grad():
        u = model(dev.tensor(xs)).numpy()
    return float(np.abs(u - np.sin(math.pi * xs)).max())


def train(steps: int, points: int, hidden: int, lr: float, seed: int, log_every: int = 0) -> tuple[PINN, list[float]]:
    """Train a :class:`PINN` for ``steps`` Adam steps on ``points`` fresh collocation points a
    step; return the model and the loss of every step."""
    dev = Cpu(seed=seed)
    rng = np.random.default_rng(seed)
    model = PINN(hidden, dev)
    opt = optim.Adam(model.parameters(), lr=lr)
    losses: list[float] = []
    for step in range(steps):
        xs = rng.uniform(0.0, 1.0, (points, 1))
        loss = residual_loss(model, xs, dev)
        grads = loss.backward()
        opt.step(grads)
        losses.append(loss.item())
        if log_every and (step % log_every == 0 or step == steps - 1):
            print(f"step {step:5d}  residual loss {losses[-1]:.3e}")
    return model, losses


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point (see the module docstring)."""
    p = argparse.ArgumentParser(prog="python -m gradtape.examples.pinn", description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=positive_int, default=1500, help="Adam steps (default 1500)")
    p.add_argument("--points", type=positive_int, default=64, help="collocation points a step (default 64)")
    p.add_argument("--hidden", type=positive_int, default=32, help="hidden width (default 32)")
    p.add_argument("--lr", type=float, default=3e-3, help="Adam learning rate (default 3e-3)")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="seed (default 0)")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    model, _ = train(args.steps, args.points, args.hidden, args.lr, args.seed, log_every=max(1, args.steps // 10))
    err = max_error(model, Cpu())
    print(f"max |u - sin(pi x)| on [0, 1]: {err:.2e}  ({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
