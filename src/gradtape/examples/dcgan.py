"""pytorch/examples' ``dcgan/main.py`` (Radford et al. 2015), ported to gradtape, on 8x8 digits.

    python -m gradtape.examples.dcgan [--batchSize B] [--nz Z] [--ngf G] [--ndf D]
        [--niter N] [--lr LR] [--beta1 B1] [--manualSeed S] [--samples N] [--dry-run]

The program is pytorch/examples' ``dcgan/main.py`` written the way a PyTorch user ports it by
renaming (``torch.nn`` -> ``gradtape.nn``, ``torch.optim`` -> ``gradtape.optim``,
``torch.randn`` -> ``dev.randn``): a :class:`Generator` of ``ConvTranspose2d`` / ``BatchNorm2d``
/ ``ReLU`` layers ending in ``Tanh``, a :class:`Discriminator` of ``Conv2d`` / ``BatchNorm2d`` /
``LeakyReLU(0.2)`` layers ending in ``Sigmoid``, both initialised by
``net.apply(weights_init)`` (conv weights ``N(0, 0.02)``, BatchNorm weights ``N(1, 0.02)`` and
biases 0), ``nn.BCELoss``, two ``optim.Adam`` with ``betas=(0.5, 0.999)``, and the original's
loop: (1) update D on a real batch labelled 1 and on ``fake.detach()`` labelled 0 (both
``backward()`` calls accumulate into D's ``.grad``), (2) update G through D with the fake batch
labelled 1, noise ``randn(b, nz, 1, 1)``.

What differs from the original, and why:

- Data: scikit-learn's bundled digits (1797 8x8 grey images, no download), scaled from
  [0, 16] to [-1, 1] as the original's ``Normalize((0.5,), (0.5,))`` scales MNIST, one
  channel. The original's 64x64 stacks have 5 layers each; for 8x8 images the generator is
  ``nz -> (ngf*2) x 4 x 4`` (``ConvTranspose2d(nz, ngf*2, 4, 1, 0)``, the original's first layer)
  ``-> ngf x 8 x 8`` (``ConvTranspose2d(ngf*2, ngf, 4, 2, 1)``, its upsampling layer)
  ``-> 1 x 8 x 8`` (``ConvTranspose2d(ngf, 1, 3, 1, 1)`` and ``Tanh``), and the discriminator
  its mirror ``1 x 8 x 8 -> ndf x 4 x 4`` (``Conv2d(1, ndf, 4, 2, 1)``, LeakyReLU)
  ``-> (ndf*2) x 4 x 4`` (``Conv2d(ndf, ndf*2, 3, 1, 1)``, BatchNorm2d, LeakyReLU)
  ``-> 1`` (``Conv2d(ndf*2, 1, 4, 1, 0)``, ``Sigmoid``). Defaults ``nz=32``, ``ngf=ndf=32``,
  30 epochs; the original's learning rate and betas.
- ``torch.full`` is ``dev.full``.
- No image files or checkpoints are written (``vutils.save_image``): instead a quality score.

Quality score (:func:`digit_score`): a logistic-regression digits classifier (scikit-learn,
fitted on a fixed 75% of the digits) reads generated images; the score is the classifier's
Inception score ``exp(E_x KL(p(y|x) || p(y)))`` (1: all images alike or unreadable, 10: each
confidently one digit and all ten digits equally often) and its mean top-class probability.
Printed for images from a fixed noise batch before and after training and for the held-out
25% real digits (the ceiling).

Measured on the shared 2-core VM with Python 3.11.7 (default flags, seed 0): last epoch's mean
Loss_D 1.21 and Loss_G 0.89; 500 generated images score 5.69 with mean confidence 0.80
(untrained generator 1.21 / 0.24, held-out real digits 8.25 / 0.94); generated pixel
mean/std -0.39/0.73 against the real -0.39/0.75; 84 s of training (49 s CPU) under other
jobs' load.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from gradtape import Cpu, Tensor, nn, no_grad, optim
from gradtape.data import DataLoader, TensorDataset
from gradtape.examples._cli import nonnegative_float, nonnegative_int, positive_int

if TYPE_CHECKING:
    from sklearn.linear_model import LogisticRegression

__all__ = [
    "Discriminator",
    "Generator",
    "Result",
    "digit_classifier",
    "digit_score",
    "load_digits_images",
    "main",
    "train",
    "update_d",
    "update_g",
    "weights_init",
]

Array = np.ndarray[Any, Any]

real_label = 1.0
fake_label = 0.0


def load_digits_images() -> tuple[Array, Array]:
    """All 1797 digits as float32 images ``(N, 1, 8, 8)`` in ``[-1, 1]`` and their labels ``(N,)``."""
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    images = (x.astype(np.float32) / 8.0 - 1.0).reshape(-1, 1, 8, 8)
    return images, y.astype(np.int64)


# custom weights initialization called on netG and netD
def weights_init(m: Any) -> None:
    """The original's ``weights_init``: conv (and transposed conv) weights ``N(0, 0.02)``,
    BatchNorm weights ``N(1, 0.02)`` and biases 0; other modules unchanged. Apply it with
    ``net.apply(weights_init)``."""
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        nn.init.normal_(m.weight, 1.0, 0.02)
        nn.init.zeros_(m.bias)


class Generator(nn.Module):
    """Noise ``(B, nz, 1, 1)`` -> images ``(B, nc, 8, 8)`` in ``(-1, 1)`` (the original's
    ``Generator``, its stack cut to 8x8 as the module docstring says)."""

    def __init__(self, nz: int, ngf: int, nc: int = 1, *, dev: Cpu, dtype: npt.DTypeLike = np.float32) -> None:
        super().__init__()
        self.main = nn.Sequential(
            # input is Z, going into a convolution
            nn.ConvTranspose2d(nz, ngf * 2, 4, 1, 0, bias=False, dev=dev, dtype=dtype),
            nn.BatchNorm2d(ngf * 2, dev=dev, dtype=dtype),
            nn.ReLU(True),
            # state size. (ngf*2) x 4 x 4
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False, dev=dev, dtype=dtype),
            nn.BatchNorm2d(ngf, dev=dev, dtype=dtype),
            nn.ReLU(True),
            # state size. (ngf) x 8 x 8
            nn.ConvTranspose2d(ngf, nc, 3, 1, 1, bias=False, dev=dev, dtype=dtype),
            nn.Tanh(),
            # state size. (nc) x 8 x 8
        )

    def forward(self, input: Tensor[Any, Any]) -> Tensor[Any, Any]:
        """Images ``(B, nc, 8, 8)`` for noise ``(B, nz, 1, 1)``."""
        output: Tensor[Any, Any] = self.main(input)
        return output


class Discriminator(nn.Module):
    """Images ``(B, nc, 8, 8)`` -> the probability ``(B,)`` that each is real (the original's
    ``Discriminator``, its stack cut to 8x8 as the module docstring says)."""

    def __init__(self, ndf: int, nc: int = 1, *, dev: Cpu, dtype: npt.DTypeLike = np.float32) -> None:
        super().__init__()
        self.main = nn.Sequential(
            # input is (nc) x 8 x 8
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False, dev=dev, dtype=dtype),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf) x 4 x 4
            nn.Conv2d(ndf, ndf * 2, 3, 1, 1, bias=False, dev=dev, dtype=dtype),
            nn.BatchNorm2d(ndf * 2, dev=dev, dtype=dtype),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf*2) x 4 x 4
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False, dev=dev, dtype=dtype),
            nn.Sigmoid(),
        )

    def forward(self, input: Tensor[Any, Any]) -> Tensor[Any, Any]:
        """Probabilities ``(B,)`` for images ``(B, nc, 8, 8)``."""
        output: Tensor[Any, Any] = self.main(input)
        return output.view(-1, 1).squeeze(1)


def update_d(
    netD: Discriminator,
    netG: Generator,
    optimizerD: optim.Adam,
    criterion: nn.BCELoss,
    real: Tensor[Any, Any],
    noise: Tensor[Any, Any],
) -> tuple[float, float, float, Tensor[Any, Any]]:
    """(1) Update D network: maximize log(D(x)) + log(1 - D(G(z))). Returns ``(errD, D_x,
    D_G_z1, fake)``: the summed loss of the real and the fake batch, D's mean output on each,
    and ``fake = netG(noise)`` (recorded, for :func:`update_g`)."""
    # train with real
    netD.zero_grad()
    batch_size = real.shape[0]
    label = real.device.full((batch_size,), real_label, dtype=real.dtype)
    output = netD(real)
    errD_real = criterion(output, label)
    errD_real.backward()
    D_x = output.mean().item()

    # train with fake
    fake = netG(noise)
    label.fill_(fake_label)
    output = netD(fake.detach())
    errD_fake = criterion(output, label)
    errD_fake.backward()
    D_G_z1 = output.mean().item()
    errD = errD_real + errD_fake
    optimizerD.step()
    return errD.item(), D_x, D_G_z1, fake


def update_g(
    netD: Discriminator,
    netG: Generator,
    optimizerG: optim.Adam,
    criterion: nn.BCELoss,
    fake: Tensor[Any, Any],
) -> tuple[float, float]:
    """(2) Update G network: maximize log(D(G(z))), through the updated D, with the fake batch
    labelled real. Returns ``(errG, D_G_z2)``. The backward also adds into D's ``.grad``, which
    the next :func:`update_d` zeroes, as in the original."""
    netG.zero_grad()
    label = fake.device.full((fake.shape[0],), real_label, dtype=fake.dtype)  # fake labels are real
    output = netD(fake)
    errG = criterion(output, label)
    errG.backward()
    D_G_z2 = output.mean().item()
    optimizerG.step()
    return errG.item(), D_G_z2


# ----- the quality score ----------------------------------------------------------------------


def digit_classifier(images: Array, labels: Array) -> LogisticRegression:
    """A multinomial logistic regression (scikit-learn, ``C=1``) fitted on ``images`` flattened
    (``(N, 64)`` pixels in ``[-1, 1]``): the reader :func:`digit_score` uses."""
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(max_iter=2000).fit(images.reshape(len(images), -1), labels)


def digit_score(clf: LogisticRegression, images: Array) -> tuple[float, float]:
    """``(inception score, mean top-class probability)`` of ``images (N, 1, 8, 8)`` under the
    classifier ``clf``: ``exp(mean_x KL(p(y|x) || p(y)))`` with ``p(y)`` the mean of ``p(y|x)``
    over the images (between 1 and the number of classes), and ``mean_x max_y p(y|x)``."""
    p = np.asarray(clf.predict_proba(images.reshape(len(images), -1)), dtype=np.float64)
    p = np.clip(p, 1e-12, 1.0)
    marginal = p.mean(axis=0, keepdims=True)
    kl = (p * (np.log(p) - np.log(marginal))).sum(axis=1)
    return float(np.exp(kl.mean())), float(p.max(axis=1).mean())


@dataclass
class Result:
    """What :func:`train` returns: the two networks, the mean ``Loss_D`` / ``Loss_G`` of every
    epoch, the scores (inception score, mean confidence; :func:`digit_score`) of a fixed
    noise batch's images before and after training and of the held-out real digits, the mean
    and standard deviation of the generated and of the real pixels, and the training time."""

    netG: Generator
    netD: Discriminator
    loss_d: list[float]
    loss_g: list[float]
    score_before: tuple[float, float]
    score_after: tuple[float, float]
    score_real: tuple[float, float]
    pixels_fake: tuple[float, float]
    pixels_real: tuple[float, float]
    seconds: float


def train(
    batch_size: int = 64,
    nz: int = 32,
    ngf: int = 32,
    ndf: int = 32,
    niter: int = 30,
    lr: float = 0.0002,
    beta1: float = 0.5,
    seed: int = 0,
    samples: int = 500,
    dry_run: bool = False,
    verbose: bool = True,
) -> Result:
    """The original's training program on the digits: both networks built and initialised with
    ``apply(weights_init)``, ``niter`` epochs of shuffled batches (the last, smaller, batch
    kept, as the original's ``DataLoader``), :func:`update_d` then :func:`update_g` on each.
    ``dry_run``: one batch. Scores ``samples`` images from a fixed noise batch.

    Raises:
        ValueError: ``batch_size``, ``nz``, ``ngf``, ``ndf``, ``niter`` or ``samples`` < 1.
    """
    for name, v in (("batch_size", batch_size), ("nz", nz), ("ngf", ngf), ("ndf", ndf), ("niter", niter)):
        if v < 1:
            raise ValueError(f"{name} must be >= 1, got {v}")
    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    dev = Cpu(seed=seed)  # the original: torch.manual_seed(opt.manualSeed)
    images, labels = load_digits_images()
    split = np.random.default_rng(0).permutation(len(images))  # the classifier's fixed 75/25 split
    cut = len(images) * 3 // 4
    clf = digit_classifier(images[split[:cut]], labels[split[:cut]])
    dataloader = DataLoader(TensorDataset(dev.tensor(images)), batch_size=batch_size, shuffle=True, generator=seed)

    netG = Generator(nz, ngf, dev=dev)
    netG.apply(weights_init)
    netD = Discriminator(ndf, dev=dev)
    netD.apply(weights_init)
    criterion = nn.BCELoss()
    fixed_noise = dev.randn((samples, nz, 1, 1))

    # setup optimizer
    optimizerD = optim.Adam(netD.parameters(), lr=lr, betas=(beta1, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=lr, betas=(beta1, 0.999))

    def sample() -> Array:
        # as the original's netG(fixed_noise): training mode (BatchNorm on the batch's statistics)
        with no_grad():
            out: Array = netG(fixed_noise).numpy()
        return out

    score_before = digit_score(clf, sample())
    loss_d: list[float] = []
    loss_g: list[float] = []
    if dry_run:
        niter = 1
    started = time.perf_counter()
    for epoch in range(niter):
        sum_d = sum_g = 0.0
        n = 0
        for i, data in enumerate(dataloader, 0):
            real_cpu = data[0]
            noise = dev.randn((real_cpu.shape[0], nz, 1, 1))
            errD, D_x, D_G_z1, fake = update_d(netD, netG, optimizerD, criterion, real_cpu, noise)
            errG, D_G_z2 = update_g(netD, netG, optimizerG, criterion, fake)
            sum_d += errD
            sum_g += errG
            n += 1
            if verbose and (i % 10 == 0 or dry_run):
                print(
                    f"[{epoch}/{niter}][{i}/{len(dataloader)}] Loss_D: {errD:.4f} Loss_G: {errG:.4f} "
                    f"D(x): {D_x:.4f} D(G(z)): {D_G_z1:.4f} / {D_G_z2:.4f}"
                )
            if dry_run:
                break
        loss_d.append(sum_d / n)
        loss_g.append(sum_g / n)
    seconds = time.perf_counter() - started
    fake_images = sample()
    held_out = images[split[cut:]]
    return Result(
        netG,
        netD,
        loss_d,
        loss_g,
        score_before,
        digit_score(clf, fake_images),
        digit_score(clf, held_out),
        (float(fake_images.mean()), float(fake_images.std())),
        (float(images.mean()), float(images.std())),
        seconds,
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point (see the module docstring; the original's flag names)."""
    ap = argparse.ArgumentParser(prog="python -m gradtape.examples.dcgan", description=__doc__.split("\n")[0])
    ap.add_argument("--batchSize", type=positive_int, default=64, help="input batch size (default: 64)")
    ap.add_argument("--nz", type=positive_int, default=32, help="size of the latent z vector (default: 32)")
    ap.add_argument("--ngf", type=positive_int, default=32, help="number of generator filters (default: 32)")
    ap.add_argument("--ndf", type=positive_int, default=32, help="number of discriminator filters (default: 32)")
    ap.add_argument("--niter", type=positive_int, default=30, help="number of epochs to train for (default: 30)")
    ap.add_argument("--lr", type=nonnegative_float, default=0.0002, help="learning rate (default: 0.0002)")
    ap.add_argument("--beta1", type=nonnegative_float, default=0.5, help="beta1 for adam (default: 0.5)")
    ap.add_argument("--manualSeed", type=nonnegative_int, default=0, help="manual seed (default: 0)")
    ap.add_argument("--samples", type=positive_int, default=500, help="generated images scored (default: 500)")
    ap.add_argument("--dry-run", action="store_true", help="check a single training cycle works")
    args = ap.parse_args(argv)
    if args.beta1 >= 1.0:
        ap.error(f"argument --beta1: must be < 1, got {args.beta1}")
    print(f"Random Seed:  {args.manualSeed}")
    res = train(
        args.batchSize,
        args.nz,
        args.ngf,
        args.ndf,
        args.niter,
        args.lr,
        args.beta1,
        args.manualSeed,
        args.samples,
        args.dry_run,
    )
    print(f"trained {len(res.loss_d)} epochs in {res.seconds:.1f} s")
    print(f"last epoch: mean Loss_D {res.loss_d[-1]:.4f}  mean Loss_G {res.loss_g[-1]:.4f}")
    print("digits classifier on images (inception score, 1..10; mean top-class probability):")
    print(f"  generator before training: {res.score_before[0]:.2f}  {res.score_before[1]:.3f}")
    print(f"  generator after training:  {res.score_after[0]:.2f}  {res.score_after[1]:.3f}")
    print(f"  held-out real digits:      {res.score_real[0]:.2f}  {res.score_real[1]:.3f}")
    print(
        f"pixel mean/std: generated {res.pixels_fake[0]:.3f}/{res.pixels_fake[1]:.3f}, "
        f"real {res.pixels_real[0]:.3f}/{res.pixels_real[1]:.3f}"
    )


if __name__ == "__main__":
    main()
