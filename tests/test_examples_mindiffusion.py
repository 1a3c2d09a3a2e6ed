"""minDiffusion's DDPM + NaiveUnet (``gradtape.examples.mindiffusion``) against PyTorch.

PyTorch's side is the original's structure (``mindiffusion/ddpm.py``'s ``DDPM`` and
``ddpm_schedules``, ``mindiffusion/unet.py``'s U-Net with the example's 16x16 sizes), in
float64. Both start from the same weights (gradtape's ``state_dict`` loaded strictly into
PyTorch's module, schedules included), draw the same timesteps and noise (the random calls
inside ``forward`` return one numpy draw on both sides), and run three Adam steps: every loss,
every parameter gradient and the updated parameters must agree. The no-grad sampling loop is
compared too, and the program runs end to end with a tiny setting.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gradtape as gt
from gradtape import optim
from gradtape.examples import mindiffusion as ex

torch: Any = pytest.importorskip("torch")
tnn: Any = torch.nn
F64 = np.float64
N_FEAT = 8
N_T = 20


def _torch_classes() -> tuple[Any, Any]:
    """The original's classes, as minDiffusion writes them (16x16 sizes in ``NaiveUnet``)."""

    def ddpm_schedules(beta1: float, beta2: float, T: int) -> dict[str, Any]:
        beta_t = (beta2 - beta1) * torch.arange(0, T + 1, dtype=torch.float32) / T + beta1
        sqrt_beta_t = torch.sqrt(beta_t)
        alpha_t = 1 - beta_t
        log_alpha_t = torch.log(alpha_t)
        alphabar_t = torch.cumsum(log_alpha_t, dim=0).exp()
        sqrtab = torch.sqrt(alphabar_t)
        oneover_sqrta = 1 / torch.sqrt(alpha_t)
        sqrtmab = torch.sqrt(1 - alphabar_t)
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

    class Conv3(tnn.Module):  # type: ignore[misc]
        def __init__(self, in_channels: int, out_channels: int, is_res: bool = False) -> None:
            super().__init__()
            self.main = tnn.Sequential(
                tnn.Conv2d(in_channels, out_channels, 3, 1, 1), tnn.GroupNorm(8, out_channels), tnn.ReLU()
            )
            self.conv = tnn.Sequential(
                tnn.Conv2d(out_channels, out_channels, 3, 1, 1),
                tnn.GroupNorm(8, out_channels),
                tnn.ReLU(),
                tnn.Conv2d(out_channels, out_channels, 3, 1, 1),
                tnn.GroupNorm(8, out_channels),
                tnn.ReLU(),
            )
            self.is_res = is_res

        def forward(self, x: Any) -> Any:
            x = self.main(x)
            if self.is_res:
                x = x + self.conv(x)
                return x / 1.414
            return self.conv(x)

    class UnetDown(tnn.Module):  # type: ignore[misc]
        def __init__(self, in_channels: int, out_channels: int) -> None:
            super().__init__()
            self.model = tnn.Sequential(Conv3(in_channels, out_channels), tnn.MaxPool2d(2))

        def forward(self, x: Any) -> Any:
            return self.model(x)

    class UnetUp(tnn.Module):  # type: ignore[misc]
        def __init__(self, in_channels: int, out_channels: int) -> None:
            super().__init__()
            self.model = tnn.Sequential(
                tnn.ConvTranspose2d(in_channels, out_channels, 2, 2),
                Conv3(out_channels, out_channels),
                Conv3(out_channels, out_channels),
            )

        def forward(self, x: Any, skip: Any) -> Any:
            return self.model(torch.cat((x, skip), 1))

    class TimeSiren(tnn.Module):  # type: ignore[misc]
        def __init__(self, emb_dim: int) -> None:
            super().__init__()
            self.lin1 = tnn.Linear(1, emb_dim, bias=False)
            self.lin2 = tnn.Linear(emb_dim, emb_dim)

        def forward(self, x: Any) -> Any:
            x = x.view(-1, 1).to(self.lin1.weight.dtype)  # the float32 fraction, as the example
            x = torch.sin(self.lin1(x))
            return self.lin2(x)

    class NaiveUnet(tnn.Module):  # type: ignore[misc]
        def __init__(self, in_channels: int, out_channels: int, n_feat: int = 256) -> None:
            super().__init__()
            self.in_channels = in_channels
            self.out_channels = out_channels
            self.n_feat = n_feat
            self.init_conv = Conv3(in_channels, n_feat, is_res=True)
            self.down1 = UnetDown(n_feat, n_feat)
            self.down2 = UnetDown(n_feat, 2 * n_feat)
            self.down3 = UnetDown(2 * n_feat, 2 * n_feat)
            self.to_vec = tnn.Sequential(tnn.AvgPool2d(2), tnn.ReLU())
            self.timeembed = TimeSiren(2 * n_feat)
            self.up0 = tnn.Sequential(
                tnn.ConvTranspose2d(2 * n_feat, 2 * n_feat, 2, 2), tnn.GroupNorm(8, 2 * n_feat), tnn.ReLU()
            )
            self.up1 = UnetUp(4 * n_feat, 2 * n_feat)
            self.up2 = UnetUp(4 * n_feat, n_feat)
            self.up3 = UnetUp(2 * n_feat, n_feat)
            self.out = tnn.Conv2d(2 * n_feat, self.out_channels, 3, 1, 1)

        def forward(self, x: Any, t: Any) -> Any:
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
            return self.out(torch.cat((up3, x), 1))

    class DDPM(tnn.Module):  # type: ignore[misc]
        def __init__(self, eps_model: Any, betas: tuple[float, float], n_T: int) -> None:
            super().__init__()
            self.eps_model = eps_model
            for k, v in ddpm_schedules(betas[0], betas[1], n_T).items():
                self.register_buffer(k, v)
            self.n_T = n_T
            self.criterion = tnn.MSELoss()

        def forward(self, x: Any) -> Any:
            _ts = torch.randint(1, self.n_T + 1, (x.shape[0],)).to(x.device)
            eps = torch.randn_like(x)
            x_t = self.sqrtab[_ts, None, None, None] * x + self.sqrtmab[_ts, None, None, None] * eps
            return self.criterion(eps, self.eps_model(x_t, _ts / self.n_T))

        def sample(self, n_sample: int, size: tuple[int, ...], device: Any) -> Any:
            x_i = torch.randn(n_sample, *size).to(device)
            for i in range(self.n_T, 0, -1):
                z = torch.randn(n_sample, *size).to(device) if i > 1 else 0
                eps = self.eps_model(x_i, torch.tensor(i / self.n_T).to(device).repeat(n_sample, 1))
                x_i = self.oneover_sqrta[i] * (x_i - eps * self.mab_over_sqrtmab[i]) + self.sqrt_beta_t[i] * z
            return x_i

    return NaiveUnet, DDPM


def _pair() -> tuple[gt.Cpu, ex.DDPM, Any]:
    dev = gt.Cpu(seed=1)
    ours = ex.DDPM(ex.NaiveUnet(1, 1, n_feat=N_FEAT, dev=dev, dtype=F64), (1e-4, 0.02), N_T, dev=dev, dtype=F64)
    NaiveUnet, DDPM = _torch_classes()
    ref = DDPM(NaiveUnet(1, 1, n_feat=N_FEAT), (1e-4, 0.02), N_T).double()
    ref.load_state_dict({k: torch.from_numpy(np.array(v.numpy())) for k, v in ours.state_dict().items()}, strict=True)
    return dev, ours, ref


def test_three_adam_steps_match_pytorch(monkeypatch: pytest.MonkeyPatch) -> None:
    dev, ours, ref = _pair()
    images = ex.load_digits_16()[0].astype(F64)
    rng = np.random.default_rng(0)
    opt = optim.Adam(ours.parameters(), lr=1e-3)
    topt = torch.optim.Adam(ref.parameters(), lr=1e-3)
    names = [n for n, _ in ours.named_parameters()]
    assert names == [n for n, _ in ref.named_parameters()]
    for step in range(3):
        x = images[rng.choice(len(images), 6, replace=False)]
        ts = rng.integers(1, N_T + 1, 6)
        eps = rng.standard_normal(x.shape)
        monkeypatch.setattr(dev, "randint", lambda *a, _ts=ts, **k: dev.tensor(_ts))
        monkeypatch.setattr(dev, "randn_like", lambda t, _e=eps: dev.tensor(_e))
        monkeypatch.setattr(torch, "randint", lambda *a, _ts=ts, **k: torch.from_numpy(_ts))
        monkeypatch.setattr(torch, "randn_like", lambda t, _e=eps: torch.from_numpy(_e))

        opt.zero_grad()
        loss = ours(dev.tensor(x))
        loss.backward()
        topt.zero_grad()
        tloss = ref(torch.from_numpy(x))
        tloss.backward()
        np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-9, err_msg=f"loss at step {step}")
        # The conv biases before a GroupNorm of one channel per group have a zero gradient
        # (the norm removes them), so both sides hold rounding noise there: the tolerance is
        # relative to the largest gradient.
        scale = max(float(np.abs(q.grad.numpy()).max()) for q in ref.parameters())
        for (name, p), (_, q) in zip(ours.named_parameters(), ref.named_parameters(), strict=True):
            assert p.grad is not None, f"{name}.grad is None at step {step}"
            np.testing.assert_allclose(
                p.grad.numpy(), q.grad.numpy(), rtol=1e-9, atol=1e-12 * scale, err_msg=f"{name} step {step}"
            )
        opt.step()
        topt.step()
    # Adam moves the biases whose gradient is rounding noise by ~lr * noise / eps (< 1e-10).
    for (name, p), (_, q) in zip(ours.named_parameters(), ref.named_parameters(), strict=True):
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-9, atol=1e-9, err_msg=name)

    # Algorithm 2 under no_grad from the same draws: the same images.
    ref.eval()
    ours.eval()
    draws = [rng.standard_normal((2, 1, 16, 16)) for _ in range(N_T + 1)]
    it = iter(draws)
    monkeypatch.setattr(dev, "randn", lambda *a, **k: dev.tensor(next(it)))
    with gt.no_grad():
        mine = ours.sample(2, (1, 16, 16)).numpy()
    it2 = iter(draws)
    monkeypatch.setattr(torch, "randn", lambda *a, **k: torch.from_numpy(next(it2)))
    with torch.no_grad():
        theirs = ref.sample(2, (1, 16, 16), "cpu").numpy()
    np.testing.assert_allclose(mine, theirs, rtol=1e-7, atol=1e-9)


def test_program_runs(capsys: pytest.CaptureFixture[str]) -> None:
    ema = ex.main(["--steps", "3", "--batch-size", "8", "--n-T", "5", "--samples", "4", "--no-progress"])
    out = capsys.readouterr().out
    assert np.isfinite(ema) and "loss ema" in out and "generated" in out


def test_bad_width_is_refused() -> None:
    with pytest.raises(SystemExit):
        ex.main(["--n-feat", "12", "--steps", "1"])
