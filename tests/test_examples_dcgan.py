"""``python -m gradtape.examples.dcgan`` against pytorch/examples' ``dcgan/main.py`` (issue 27).

The original's ``Generator`` and ``Discriminator`` (with the example's 8x8 stacks: the same
layer kinds, the original's first and upsampling layers), ``weights_init`` and loop body
(D on the real batch labelled 1 and on ``fake.detach()`` labelled 0, then G through the
updated D with the fakes labelled 1; ``BCELoss``, two ``Adam(betas=(0.5, 0.999))``) are written
below in PyTorch as the original writes them, in float64. The gradtape example's networks
(float64, initialised by ``apply(weights_init)``) give their weights and BatchNorm buffers to
the torch networks through ``state_dict``; both run three steps on the same real batches, with
the noise drawn once in numpy and fed to both. Every loss and D output, every parameter's
``.grad`` after the D update and after the G update, and the updated parameters and running
statistics must agree to 1e-9. The learning rate is 0.01 (the original's 0.0002 would move the
parameters too little for the comparison to say much).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, nn, optim
from gradtape.examples import dcgan

torch: Any = pytest.importorskip("torch")
tnn: Any = torch.nn

RTOL, ATOL = 1e-9, 1e-12


def torch_weights_init(m: Any) -> None:
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        torch.nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        torch.nn.init.normal_(m.weight, 1.0, 0.02)
        torch.nn.init.zeros_(m.bias)


class TorchGenerator(tnn.Module):  # type: ignore[misc]
    def __init__(self, nz: int, ngf: int, nc: int = 1) -> None:
        super().__init__()
        self.main = tnn.Sequential(
            tnn.ConvTranspose2d(nz, ngf * 2, 4, 1, 0, bias=False),
            tnn.BatchNorm2d(ngf * 2),
            tnn.ReLU(True),
            tnn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),
            tnn.BatchNorm2d(ngf),
            tnn.ReLU(True),
            tnn.ConvTranspose2d(ngf, nc, 3, 1, 1, bias=False),
            tnn.Tanh(),
        )

    def forward(self, input: Any) -> Any:
        return self.main(input)


class TorchDiscriminator(tnn.Module):  # type: ignore[misc]
    def __init__(self, ndf: int, nc: int = 1) -> None:
        super().__init__()
        self.main = tnn.Sequential(
            tnn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            tnn.LeakyReLU(0.2, inplace=True),
            tnn.Conv2d(ndf, ndf * 2, 3, 1, 1, bias=False),
            tnn.BatchNorm2d(ndf * 2),
            tnn.LeakyReLU(0.2, inplace=True),
            tnn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
            tnn.Sigmoid(),
        )

    def forward(self, input: Any) -> Any:
        output = self.main(input)
        return output.view(-1, 1).squeeze(1)


def _same(ours: nn.Module, ref: Any, what: str, grads: bool) -> None:
    """Every parameter (or its ``.grad``) and, for values, every buffer of ``ours`` equals ``ref``'s."""
    pairs = zip(ours.named_parameters(), ref.named_parameters(), strict=True)
    for (name, p), (tname, q) in pairs:
        assert name == tname
        if grads:
            assert p.grad is not None, f"{name}.grad is None ({what})"
            np.testing.assert_allclose(
                p.grad.numpy(), q.grad.numpy(), rtol=RTOL, atol=ATOL, err_msg=f"{name}.grad {what}"
            )
        else:
            np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=RTOL, atol=ATOL, err_msg=f"{name} {what}")
    if not grads:
        for (name, b), (_, tb) in zip(ours.named_buffers(), ref.named_buffers(), strict=True):
            np.testing.assert_allclose(b.numpy(), tb.numpy(), rtol=RTOL, atol=ATOL, err_msg=f"{name} {what}")


def test_weights_init_is_the_originals() -> None:
    """``apply(weights_init)``: conv weights N(0, 0.02), BatchNorm weights N(1, 0.02) and biases 0."""
    netG = dcgan.Generator(16, 16, dev=Cpu(seed=0), dtype=np.float64)
    netG.apply(dcgan.weights_init)
    layers: list[Any] = list(netG.main)
    w = np.concatenate([layers[i].weight.numpy().ravel() for i in (0, 3, 6)])
    assert abs(w.mean()) < 0.002 and abs(w.std() - 0.02) < 0.001
    bn = np.concatenate([layers[i].weight.numpy() for i in (1, 4)])
    assert abs(bn.mean() - 1.0) < 0.01 and 0.01 < bn.std() < 0.03
    assert all(not layers[i].bias.numpy().any() for i in (1, 4))


def test_three_training_steps_equal_the_torch_original() -> None:
    nz, ngf, ndf, batch, lr = 5, 3, 3, 6, 0.01
    dev = Cpu(seed=4)
    netG = dcgan.Generator(nz, ngf, dev=dev, dtype=np.float64)
    netG.apply(dcgan.weights_init)
    netD = dcgan.Discriminator(ndf, dev=dev, dtype=np.float64)
    netD.apply(dcgan.weights_init)
    tG, tD = TorchGenerator(nz, ngf).double(), TorchDiscriminator(ndf).double()
    for ours, ref in ((netG, tG), (netD, tD)):
        ref.load_state_dict({k: torch.from_numpy(np.array(v.data)) for k, v in ours.state_dict().items()}, strict=True)
    optimizerD = optim.Adam(netD.parameters(), lr=lr, betas=(0.5, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=lr, betas=(0.5, 0.999))
    toptD = torch.optim.Adam(tD.parameters(), lr=lr, betas=(0.5, 0.999))
    toptG = torch.optim.Adam(tG.parameters(), lr=lr, betas=(0.5, 0.999))
    criterion, tcriterion = nn.BCELoss(), tnn.BCELoss()

    images, _ = dcgan.load_digits_images()
    rng = np.random.default_rng(0)
    for step in range(3):
        real = images[rng.choice(len(images), batch, replace=False)].astype(np.float64)
        noise = rng.standard_normal((batch, nz, 1, 1))  # drawn once, fed to both
        # ---- gradtape: the example's (1) D update, then its (2) G update
        errD, D_x, D_G_z1, fake = dcgan.update_d(netD, netG, optimizerD, criterion, dev.tensor(real), dev.tensor(noise))
        # ---- PyTorch: the original's (1)
        tD.zero_grad()
        real_cpu = torch.from_numpy(real)
        label = torch.full((batch,), 1.0, dtype=real_cpu.dtype)
        output = tD(real_cpu)
        errD_real = tcriterion(output, label)
        errD_real.backward()
        tD_x = output.mean().item()
        tfake = tG(torch.from_numpy(noise))
        label.fill_(0.0)
        output = tD(tfake.detach())
        errD_fake = tcriterion(output, label)
        errD_fake.backward()
        tD_G_z1 = output.mean().item()
        terrD = errD_real + errD_fake
        toptD.step()
        for got, want, what in ((errD, terrD.item(), "errD"), (D_x, tD_x, "D(x)"), (D_G_z1, tD_G_z1, "D(G(z))")):
            np.testing.assert_allclose(got, want, rtol=RTOL, err_msg=f"{what} at step {step}")
        np.testing.assert_allclose(fake.numpy(), tfake.detach().numpy(), rtol=RTOL, atol=ATOL)
        _same(netD, tD, f"after the D update of step {step}", grads=True)
        if step == 0:  # fake.detach(): D's backward leaves G's .grad alone
            assert all(p.grad is None for p in netG.parameters())

        errG, D_G_z2 = dcgan.update_g(netD, netG, optimizerG, criterion, fake)
        # ---- PyTorch: the original's (2)
        tG.zero_grad()
        label.fill_(1.0)
        output = tD(tfake)
        terrG = tcriterion(output, label)
        terrG.backward()
        tD_G_z2 = output.mean().item()
        toptG.step()
        np.testing.assert_allclose(errG, terrG.item(), rtol=RTOL, err_msg=f"errG at step {step}")
        np.testing.assert_allclose(D_G_z2, tD_G_z2, rtol=RTOL, err_msg=f"D(G(z)) of the G step {step}")
        _same(netG, tG, f"after the G update of step {step}", grads=True)
        _same(netD, tD, f"after the G update of step {step} (G's backward adds into D's)", grads=True)
        _same(netG, tG, f"after step {step}", grads=False)
        _same(netD, tD, f"after step {step}", grads=False)


def test_main_dry_run_and_a_short_training(capsys: pytest.CaptureFixture[str]) -> None:
    """``--dry-run`` runs one cycle; two epochs of a small GAN at a high learning rate (a few
    seconds) raise the classifier's inception score of the generated images well above the
    untrained generator's (measured 1.06 -> 2.59 for these settings)."""
    dcgan.main(["--dry-run", "--samples", "20", "--nz", "8", "--ngf", "8", "--ndf", "8"])
    out = capsys.readouterr().out
    assert re.search(r"\[0/1\]\[0/\d+\] Loss_D: [\d.]+ Loss_G: [\d.]+ D\(x\): [\d.]+", out), out
    res = dcgan.train(niter=2, nz=16, ngf=8, ndf=8, lr=2e-3, samples=200, verbose=False)
    assert len(res.loss_d) == 2 and all(0.0 < v < 5.0 for v in res.loss_d + res.loss_g)
    assert res.score_after[0] > res.score_before[0] + 0.5
    assert res.score_real[0] > 7.0 and res.score_real[1] > 0.9  # the reader reads real digits


def test_cli_rejects_bad_flags() -> None:
    for argv in (["--nz", "0"], ["--beta1", "1.5"], ["--lr", "-1"]):
        with pytest.raises(SystemExit):
            dcgan.main(argv)
