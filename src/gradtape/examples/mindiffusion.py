"""minDiffusion's DDPM with its small U-Net, ported from PyTorch by renaming.

    python -m gradtape.examples.mindiffusion [--steps N] [--batch-size B] [--lr LR]
        [--n-feat F] [--n-T T] [--samples K] [--seed S] [--no-progress]

The program is cloneofsimo/minDiffusion's ``superminddpm.py`` (Ho, Jain and Abbeel 2020,
"Denoising Diffusion Probabilistic Models", Algorithms 1 and 2) in the form its CIFAR-10
script trains: ``mindiffusion/ddpm.py``'s ``DDPM`` (timesteps ``1 .. n_T``) with the
``NaiveUnet`` of ``mindiffusion/unet.py`` as the noise model, the way a PyTorch user ports it: the same classes
(``Conv3``, ``UnetDown``, ``UnetUp``, ``TimeSiren``, ``NaiveUnet``, ``DDPM``), the same
``ddpm_schedules``, ``register_buffer`` for the schedules, ``randint`` timesteps and
``randn_like`` noise drawn inside ``forward``, ``nn.MSELoss``, ``optim.Adam``, a loss EMA, and
the sampling loop under ``no_grad()``. ``tests/test_examples_mindiffusion.py`` runs PyTorch's
original structure from the same weights for three steps and compares every loss and gradient.

What differs from the original, and why:

- Data: scikit-learn's digits (1797 8x8 images, no download) instead of MNIST, scaled to
  [0, 1], upsampled to 16x16 (each pixel repeated 2x2) and shifted by -0.5 (the original's
  ``Normalize((0.5,), (1.0))``).
- Sizes: the U-Net's three halvings go 16 -> 8 -> 4 -> 2, so ``to_vec`` is ``AvgPool2d(2)``
  and ``up0`` ``ConvTranspose2d(2F, 2F, 2, 2)`` where the original (for 32x32) has 4 and 4,
  4, and the defaults are small for a 2-core CPU: ``n_feat`` 16 (original 256), ``n_T`` 400
  (original 1000), Adam's lr 1e-3 (original 2e-4), 800 steps of 32 images.
- ``TimeSiren`` converts the timestep fraction to the layer's dtype: ``ts / n_T`` of an int64
  tensor is float32 (PyTorch's default dtype), and gradtape never converts silently when a
  float64 model meets it (PyTorch would refuse the mix too; the test's PyTorch model converts
  the same way).

Output: the loss EMA every 100 steps, then the quality of ``--samples`` generated images,
judged by a logistic-regression classifier trained on the real digits (images averaged back
to 8x8): the mean confidence of its most likely class and the number of distinct classes it
assigns, beside the same figures for real test digits and for pure noise.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from tqdm import tqdm

import gradtape as gt
from gradtape import nn, ops, optim
from gradtape.examples._cli import nonnegative_int, positive_int

__all__ = [
    "DDPM",
    "Conv3",
    "NaiveUnet",
    "TimeSiren",
    "UnetDown",
    "UnetUp",
    "ddpm_schedules",
    "load_digits_16",
    "main",
]

Tensor = gt.Tensor[Any, Any]


def ddpm_schedules(beta1: float, beta2: float, T: int, dev: gt.Cpu) -> dict[str, Tensor]:
    """DDPM's precomputed schedules for ``t = 0 .. T`` (Ho et al. 2020, eq. 4 and Algorithm 2).

    ``beta_t`` rises linearly from ``beta1`` to ``beta2``; ``alpha_t = 1 - beta_t``;
    ``alphabar_t = prod_{s <= t} alpha_s`` (as ``exp(cumsum(log alpha))``). Each entry is a
    float32 tensor of shape ``(T + 1,)``, computed as the original computes it.

    Raises:
        ValueError: unless ``0 < beta1 < beta2 < 1``.
    """
    if not 0.0 < beta1 < beta2 < 1.0:
        raise ValueError(f"ddpm_schedules: need 0 < beta1 < beta2 < 1, got {beta1}, {beta2}")
    beta_t = (beta2 - beta1) * dev.arange(0, T + 1, dtype=np.float32) / T + beta1
    sqrt_beta_t = beta_t.sqrt()
    alpha_t = 1 - beta_t
    log_alpha_t = alpha_t.log()
    alphabar_t = log_alpha_t.cumsum(dim=0).exp()

    sqrtab = alphabar_t.sqrt()
    oneover_sqrta = 1 / alpha_t.sqrt()

    sqrtmab = (1 - alphabar_t).sqrt()
    mab_over_sqrtmab_inv = (1 - alpha_t) / sqrtmab

    return {
        "alpha_t": alpha_t,
        "oneover_sqrta": oneover_sqrta,
        "sqrt_beta_t": sqrt_beta_t,
        "alphabar_t": alphabar_t,
        "sqrtab": sqrtab,
        "sqrtmab": sqrtmab,
        "mab_over_sqrtmab": mab_over_sqrtmab_inv,
    }


class Conv3(nn.Module):
    """Three 3x3 convolutions, each followed by ``GroupNorm(8, C)`` and ReLU; with ``is_res``
    the last two form a residual branch and the sum is divided by 1.414.

    Shapes: ``(B, in_channels, H, W) -> (B, out_channels, H, W)``.
    """

    def __init__(
        self, in_channels: int, out_channels: int, is_res: bool = False, *, dev: gt.Cpu, dtype: Any = np.float32
    ) -> None:
        self.main = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, 3, 1, 1, dev=dev, dtype=dtype),
            nn.GroupNorm(8, out_channels, dev=dev, dtype=dtype),
            nn.ReLU(),
        )
        self.conv = nn.Sequential(
            nn.Conv2d(out_channels, out_channels, 3, 1, 1, dev=dev, dtype=dtype),
            nn.GroupNorm(8, out_channels, dev=dev, dtype=dtype),
            nn.ReLU(),
            nn.Conv2d(out_channels, out_channels, 3, 1, 1, dev=dev, dtype=dtype),
            nn.GroupNorm(8, out_channels, dev=dev, dtype=dtype),
            nn.ReLU(),
        )
        self.is_res = is_res

    def forward(self, x: Tensor) -> Tensor:
        x = self.main(x)
        if self.is_res:
            x = x + self.conv(x)
            return x / 1.414
        y: Tensor = self.conv(x)
        return y


class UnetDown(nn.Module):
    """``Conv3`` then ``MaxPool2d(2)``: ``(B, C_in, H, W) -> (B, C_out, H/2, W/2)``."""

    def __init__(self, in_channels: int, out_channels: int, *, dev: gt.Cpu, dtype: Any = np.float32) -> None:
        layers = [Conv3(in_channels, out_channels, dev=dev, dtype=dtype), nn.MaxPool2d(2)]
        self.model = nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        y: Tensor = self.model(x)
        return y


class UnetUp(nn.Module):
    """Concatenate the skip connection on the channels, ``ConvTranspose2d(k=2, s=2)``, two
    ``Conv3``: ``(B, C_x, H, W), (B, C_skip, H, W) -> (B, out_channels, 2H, 2W)`` with
    ``C_x + C_skip = in_channels``."""

    def __init__(self, in_channels: int, out_channels: int, *, dev: gt.Cpu, dtype: Any = np.float32) -> None:
        layers = [
            nn.ConvTranspose2d(in_channels, out_channels, 2, 2, dev=dev, dtype=dtype),
            Conv3(out_channels, out_channels, dev=dev, dtype=dtype),
            Conv3(out_channels, out_channels, dev=dev, dtype=dtype),
        ]
        self.model = nn.Sequential(*layers)

    def forward(self, x: Tensor, skip: Tensor) -> Tensor:  # type: ignore[override]  # two inputs
        x = ops.cat((x, skip), 1)
        y: Tensor = self.model(x)
        return y


class TimeSiren(nn.Module):
    """The timestep embedding: ``lin2(sin(lin1(t)))`` for ``t`` of shape ``(B,)`` (or any
    shape with ``B`` elements), giving ``(B, emb_dim)``."""

    def __init__(self, emb_dim: int, *, dev: gt.Cpu, dtype: Any = np.float32) -> None:
        self.lin1 = nn.Linear(1, emb_dim, bias=False, dev=dev, dtype=dtype)
        self.lin2 = nn.Linear(emb_dim, emb_dim, dev=dev, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        # ts / n_T is float32 (PyTorch's default dtype); gradtape does not convert silently.
        x = x.view(-1, 1).to(self.lin1.weight.dtype)
        x = self.lin1(x).sin()
        return self.lin2(x)


class NaiveUnet(nn.Module):
    """minDiffusion's small U-Net for 16x16 images (see the module docstring for the sizes).

    ``forward(x, t)``: ``x (B, in_channels, 16, 16)``, ``t (B,)`` the timestep fractions;
    returns the predicted noise ``(B, out_channels, 16, 16)``. ``n_feat`` must be a multiple
    of 8 (``GroupNorm(8, .)``).
    """

    def __init__(
        self, in_channels: int, out_channels: int, n_feat: int = 256, *, dev: gt.Cpu, dtype: Any = np.float32
    ) -> None:
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.n_feat = n_feat

        self.init_conv = Conv3(in_channels, n_feat, is_res=True, dev=dev, dtype=dtype)

        self.down1 = UnetDown(n_feat, n_feat, dev=dev, dtype=dtype)
        self.down2 = UnetDown(n_feat, 2 * n_feat, dev=dev, dtype=dtype)
        self.down3 = UnetDown(2 * n_feat, 2 * n_feat, dev=dev, dtype=dtype)

        self.to_vec = nn.Sequential(nn.AvgPool2d(2), nn.ReLU())

        self.timeembed = TimeSiren(2 * n_feat, dev=dev, dtype=dtype)

        self.up0 = nn.Sequential(
            nn.ConvTranspose2d(2 * n_feat, 2 * n_feat, 2, 2, dev=dev, dtype=dtype),
            nn.GroupNorm(8, 2 * n_feat, dev=dev, dtype=dtype),
            nn.ReLU(),
        )

        self.up1 = UnetUp(4 * n_feat, 2 * n_feat, dev=dev, dtype=dtype)
        self.up2 = UnetUp(4 * n_feat, n_feat, dev=dev, dtype=dtype)
        self.up3 = UnetUp(2 * n_feat, n_feat, dev=dev, dtype=dtype)
        self.out = nn.Conv2d(2 * n_feat, self.out_channels, 3, 1, 1, dev=dev, dtype=dtype)

    def forward(self, x: Tensor, t: Tensor) -> Tensor:  # type: ignore[override]  # two inputs
        x = self.init_conv(x)

        down1 = self.down1(x)
        down2 = self.down2(down1)
        down3 = self.down3(down2)

        thro = self.to_vec(down3)
        temb = self.timeembed(t).view(-1, self.n_feat * 2, 1, 1)

        thro = self.up0(thro + temb)

        up1 = self.up1(thro, down3) + temb
        up2 = self.up2(up1, down2)
        up3 = self.up3(up2, down1)

        return self.out(ops.cat((up3, x), 1))


class DDPM(nn.Module):
    """Denoising diffusion (Ho et al. 2020): ``forward(x)`` is Algorithm 1's loss for a batch
    ``x (B, C, H, W)`` (a random timestep per image, ``x_t = sqrt(abar_t) x + sqrt(1 - abar_t)
    eps``, the criterion between ``eps`` and ``eps_model(x_t, t / n_T)``); ``sample`` is
    Algorithm 2. Randomness comes from ``dev``'s generator.

    The schedules are buffers (``register_buffer``), in the model's ``dtype``.
    """

    # the buffers register_buffer makes, declared for the type checker
    alpha_t: Tensor
    oneover_sqrta: Tensor
    sqrt_beta_t: Tensor
    alphabar_t: Tensor
    sqrtab: Tensor
    sqrtmab: Tensor
    mab_over_sqrtmab: Tensor

    def __init__(
        self,
        eps_model: nn.Module,
        betas: tuple[float, float],
        n_T: int,
        criterion: nn.Module | None = None,
        *,
        dev: gt.Cpu,
        dtype: Any = np.float32,
    ) -> None:
        self.eps_model = eps_model
        self.dev = dev
        for k, v in ddpm_schedules(betas[0], betas[1], n_T, dev).items():
            self.register_buffer(k, v.to_dtype(dtype))
        self.n_T = n_T
        self.criterion = nn.MSELoss() if criterion is None else criterion

    def forward(self, x: Tensor) -> Tensor:
        _ts = self.dev.randint(1, self.n_T + 1, (x.shape[0],))  # t ~ Uniform{1, ..., n_T}
        eps = self.dev.randn_like(x)  # eps ~ N(0, 1)
        x_t = self.sqrtab[_ts, None, None, None] * x + self.sqrtmab[_ts, None, None, None] * eps
        loss: Tensor = self.criterion(eps, self.eps_model(x_t, _ts / self.n_T))
        return loss

    def sample(self, n_sample: int, size: tuple[int, ...]) -> Tensor:
        """Algorithm 2: ``n_sample`` images of ``size`` from pure noise, ``n_T`` denoising
        steps. Call under ``gt.no_grad()``."""
        dtype = self.sqrtab.dtype
        x_i = self.dev.randn((n_sample, *size), dtype=dtype)
        for i in range(self.n_T, 0, -1):
            z: Tensor | float = self.dev.randn((n_sample, *size), dtype=dtype) if i > 1 else 0.0
            # torch.tensor(i / n_T) is float32, PyTorch's default dtype
            eps = self.eps_model(x_i, self.dev.tensor(np.full((n_sample, 1), i / self.n_T, dtype=np.float32)))
            x_i = self.oneover_sqrta[i] * (x_i - eps * self.mab_over_sqrtmab[i]) + self.sqrt_beta_t[i] * z
        return x_i


def load_digits_16() -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """scikit-learn's digits as float32 ``(1797, 1, 16, 16)`` images in [-0.5, 0.5] (each 8x8
    pixel repeated 2x2) and their int64 labels."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)
    x = np.repeat(np.repeat(x, 2, axis=1), 2, axis=2)[:, None] - np.float32(0.5)
    return np.ascontiguousarray(x), d.target.astype(np.int64)


def _judge(images: np.ndarray[Any, Any], clf: Any) -> tuple[float, int]:
    """Mean top-class probability of ``clf`` on 16x16 images averaged back to 8x8 in the
    classifier's [0, 16] scale, and the number of distinct predicted classes."""
    x8 = images.reshape(-1, 8, 2, 8, 2).mean(axis=(2, 4)) + 0.5
    p = clf.predict_proba(np.clip(x8, 0.0, 1.0).reshape(len(images), 64) * 16.0)
    return float(p.max(axis=1).mean()), len(set(p.argmax(axis=1).tolist()))


def main(argv: Sequence[str] | None = None) -> float:
    """Train the DDPM on the digits and judge its samples; returns the final loss EMA."""
    ap = argparse.ArgumentParser(prog="python -m gradtape.examples.mindiffusion", description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=positive_int, default=800)
    ap.add_argument("--batch-size", type=positive_int, default=32)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--n-feat", type=positive_int, default=16, help="U-Net width (a multiple of 8)")
    ap.add_argument("--n-T", type=positive_int, default=400, help="diffusion steps")
    ap.add_argument("--samples", type=nonnegative_int, default=64, help="images to generate and judge")
    ap.add_argument("--seed", type=nonnegative_int, default=0)
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    if args.n_feat % 8:
        ap.error(f"--n-feat must be a multiple of 8 (GroupNorm(8, C)), got {args.n_feat}")

    dev = gt.Cpu(seed=args.seed)
    images, labels = load_digits_16()
    rng = np.random.default_rng(args.seed)

    ddpm = DDPM(eps_model=NaiveUnet(1, 1, n_feat=args.n_feat, dev=dev), betas=(1e-4, 0.02), n_T=args.n_T, dev=dev)
    opt = optim.Adam(ddpm.parameters(), lr=args.lr)

    ddpm.train()
    loss_ema: float | None = None
    start = time.perf_counter()
    bar = tqdm(range(args.steps), disable=args.no_progress or not sys.stderr.isatty(), file=sys.stderr)
    order = rng.permutation(len(images))
    at = 0
    for step in bar:
        if at + args.batch_size > len(order):
            order, at = rng.permutation(len(images)), 0
        x = dev.tensor(images[order[at : at + args.batch_size]])
        at += args.batch_size
        opt.zero_grad()
        loss = ddpm(x)
        loss.backward()
        loss_ema = loss.item() if loss_ema is None else 0.9 * loss_ema + 0.1 * loss.item()
        bar.set_description(f"loss: {loss_ema:.4f}")
        opt.step()
        if (step + 1) % 100 == 0 or step + 1 == args.steps:
            print(f"step {step + 1}: loss ema {loss_ema:.4f}")
    train_s = time.perf_counter() - start
    assert loss_ema is not None
    print(f"training: {args.steps} steps in {train_s:.1f} s ({1000 * train_s / args.steps:.0f} ms/step)")

    if args.samples:
        from sklearn.linear_model import LogisticRegression

        x8 = images.reshape(-1, 8, 2, 8, 2).mean(axis=(2, 4)) + 0.5
        split = len(images) * 3 // 4
        clf = LogisticRegression(max_iter=2000).fit(x8[:split].reshape(split, 64) * 16.0, labels[:split])
        ddpm.eval()
        start = time.perf_counter()
        with gt.no_grad():
            xh = ddpm.sample(args.samples, (1, 16, 16)).numpy()
        sample_s = time.perf_counter() - start
        real = _judge(images[split : split + args.samples], clf)
        noise = _judge(rng.uniform(-0.5, 0.5, (args.samples, 1, 16, 16)), clf)
        gen = _judge(xh, clf)
        print(f"sampling: {args.samples} images, {args.n_T} steps, {sample_s:.1f} s")
        print("classifier confidence (mean top-class probability) / distinct classes:")
        print(f"  real test digits {real[0]:.3f} / {real[1]}")
        print(f"  generated        {gen[0]:.3f} / {gen[1]}")
        print(f"  uniform noise    {noise[0]:.3f} / {noise[1]}")
    return loss_ema


if __name__ == "__main__":
    main()
