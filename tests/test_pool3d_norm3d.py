"""3-D pooling and normalisation as a PyTorch user writes them: ``nn.MaxPool3d``,
``nn.AvgPool3d``, ``nn.AdaptiveAvgPool3d``, ``nn.AdaptiveMaxPool3d``, ``nn.BatchNorm3d``,
``nn.InstanceNorm3d`` and ``F.max_pool3d`` & co., each against PyTorch's module of the same
name in float64 from identical weights and inputs: outputs, the input's gradient and every
parameter's gradient (of ``sum(out * w)``, ``w`` fixed random weights), over a grid of
configurations; gradients of gradients; BatchNorm3d's running statistics over several
training steps and its eval mode; the bad-input errors; and a small model
(BatchNorm3d -> MaxPool3d -> AdaptiveAvgPool3d -> flatten -> Linear) trained step by step
beside PyTorch's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gradtape as gt
import gradtape.nn.functional as gF
from gradtape import nn, optim
from gradtape.autograd import grad

torch: Any = pytest.importorskip("torch")
tnn: Any = torch.nn
tF: Any = torch.nn.functional
F64 = np.float64
RTOL, ATOL = 1e-10, 1e-12


def _both(a: np.ndarray[Any, Any]) -> tuple[Any, Any]:
    """The same values as a gradtape leaf and a torch leaf, both requiring grad."""
    return gt.tensor(a.copy(), requires_grad=True), torch.tensor(a.copy(), requires_grad=True)


def _close(ours: Any, theirs: Any, what: str, atol: float = ATOL) -> None:
    assert ours is not None, f"{what}: gradtape gave None"
    got = ours.numpy() if hasattr(ours, "numpy") else np.asarray(ours)
    want = theirs.detach().numpy() if hasattr(theirs, "detach") else np.asarray(theirs)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != torch's {want.shape}"
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=atol, err_msg=what)


def _compare_call(ours: Any, theirs: Any, a: np.ndarray[Any, Any], seed: int = 0) -> None:
    """``ours(x)`` against ``theirs(x)``: values, and the gradient of ``sum(out * w)`` with
    respect to the input."""
    x, xt = _both(a)
    y, yt = ours(x), theirs(xt)
    _close(y, yt, "output")
    w = np.random.default_rng(seed).standard_normal(tuple(yt.shape))
    (y * gt.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    _close(x.grad, xt.grad, "input gradient")


# ----- window pools ---------------------------------------------------------------------------------

# (input shape, kernel_size, stride, padding)
WINDOWS = [
    ((2, 3, 4, 4, 4), 2, None, 0),
    ((2, 3, 5, 6, 7), 3, 2, 1),
    ((1, 2, 5, 6, 7), (2, 3, 2), (1, 2, 2), (1, 1, 0)),
    ((2, 2, 6, 5, 4), (3, 1, 2), (2, 1, 1), (1, 0, 1)),
    ((3, 4, 3, 4, 5), (1, 2, 3), 1, 0),
    ((2, 3, 7, 3, 3), (4, 3, 3), (3, 1, 2), (2, 1, 1)),
    ((3, 5, 6, 7), (2, 2, 3), (2, 1, 2), (0, 1, 1)),  # unbatched (C, D, H, W)
    ((1, 1, 1, 1, 1), 1, None, 0),
]


@pytest.mark.parametrize(("shape", "k", "s", "p"), WINDOWS)
@pytest.mark.parametrize("kind", ["Max", "Avg"])
def test_pool3d_layers_match_torch(kind: str, shape: tuple[int, ...], k: Any, s: Any, p: Any) -> None:
    ours = getattr(nn, f"{kind}Pool3d")(k, s, p)
    theirs = getattr(tnn, f"{kind}Pool3d")(k, s, p)
    _compare_call(ours, theirs, np.random.default_rng(1).standard_normal(shape))


@pytest.mark.parametrize(("shape", "k", "s", "p"), WINDOWS[:4])
def test_pool3d_functional_and_top_level_spellings(shape: tuple[int, ...], k: Any, s: Any, p: Any) -> None:
    a = np.random.default_rng(2).standard_normal(shape)
    _compare_call(lambda x: gF.max_pool3d(x, k, s, p), lambda x: tF.max_pool3d(x, k, s, p), a)
    _compare_call(lambda x: gF.avg_pool3d(x, k, s, p), lambda x: tF.avg_pool3d(x, k, s, p), a)
    _compare_call(lambda x: gt.max_pool3d(x, k, s, p), lambda x: torch.max_pool3d(x, k, s, p), a)
    _compare_call(lambda x: gF.max_pool3d(x, k, stride=s, padding=p), lambda x: tF.max_pool3d(x, k, s, p), a)


def test_max_pool3d_ties_and_nan_follow_torchs_scan_order() -> None:
    """Many equal values in each window (rounded inputs): the gradient goes where PyTorch's goes
    (the first maximum in (d, h, w) order); with NaNs, the last NaN wins, as PyTorch's kernel."""
    rng = np.random.default_rng(3)
    configs: list[tuple[Any, Any, Any]] = [(2, None, 0), (3, 2, 1), ((3, 2, 2), (1, 1, 1), (1, 1, 0))]
    for config in configs:
        a = np.round(rng.standard_normal((2, 2, 5, 5, 6)))
        _compare_call(nn.MaxPool3d(*config), tnn.MaxPool3d(*config), a)
    a = rng.standard_normal((1, 2, 4, 4, 4))
    a[0, 0, 0, 0, 1] = a[0, 0, 1, 1, 0] = a[0, 1, 3, 2, 2] = np.nan
    x, xt = _both(a)
    y, yt = nn.MaxPool3d(2)(x), tnn.MaxPool3d(2)(xt)
    np.testing.assert_array_equal(np.isnan(y.numpy()), np.isnan(yt.detach().numpy()))
    y.sum().backward()
    yt.sum().backward()
    _close(x.grad, xt.grad, "gradient with NaNs")


def test_pool3d_float32_stays_float32_and_matches_torch() -> None:
    a = np.random.default_rng(4).standard_normal((2, 3, 6, 5, 4)).astype(np.float32)
    for ours, theirs in [
        (nn.MaxPool3d(2, 1, 1), tnn.MaxPool3d(2, 1, 1)),
        (nn.AvgPool3d(3, 2, 1), tnn.AvgPool3d(3, 2, 1)),
    ]:
        y = ours(gt.tensor(a))
        assert y.dtype == np.float32
        np.testing.assert_allclose(y.numpy(), theirs(torch.from_numpy(a)).numpy(), rtol=1e-6, atol=1e-6)


# ----- adaptive pools --------------------------------------------------------------------------------

# (input shape, output_size)
ADAPTIVE = [
    ((2, 3, 4, 4, 4), 2),
    ((2, 3, 5, 6, 7), (2, 3, 4)),
    ((2, 3, 5, 6, 7), (3, 4, 5)),  # overlapping bins
    ((1, 2, 5, 6, 7), (None, 3, 1)),
    ((2, 2, 7, 3, 5), (7, 3, 5)),  # identity
    ((2, 2, 3, 4, 5), (5, 6, 7)),  # larger than the input
    ((3, 5, 6, 7), (2, None, 3)),  # unbatched
    ((2, 3, 4, 5, 6), 1),  # global pooling
]


@pytest.mark.parametrize(("shape", "size"), ADAPTIVE)
@pytest.mark.parametrize("kind", ["Max", "Avg"])
def test_adaptive_pool3d_layers_match_torch(kind: str, shape: tuple[int, ...], size: Any) -> None:
    ours = getattr(nn, f"Adaptive{kind}Pool3d")(size)
    theirs = getattr(tnn, f"Adaptive{kind}Pool3d")(size)
    _compare_call(ours, theirs, np.random.default_rng(5).standard_normal(shape))


@pytest.mark.parametrize(("shape", "size"), ADAPTIVE[:5])
def test_adaptive_max_pool3d_indices_and_ties_match_torch(shape: tuple[int, ...], size: Any) -> None:
    a = np.round(np.random.default_rng(6).standard_normal(shape))  # many ties
    values, indices = gF.adaptive_max_pool3d(gt.tensor(a), size, True)
    tvalues, tindices = tF.adaptive_max_pool3d(torch.from_numpy(a), size, True)
    _close(values, tvalues, "values")
    assert indices.dtype == np.int64
    np.testing.assert_array_equal(indices.numpy(), tindices.numpy())
    _, layer_indices = nn.AdaptiveMaxPool3d(size, return_indices=True)(gt.tensor(a))
    np.testing.assert_array_equal(layer_indices.numpy(), tindices.numpy())
    _compare_call(lambda x: gF.adaptive_max_pool3d(x, size), lambda x: tF.adaptive_max_pool3d(x, size), a)
    _compare_call(lambda x: gF.adaptive_avg_pool3d(x, size), lambda x: tF.adaptive_avg_pool3d(x, size), a)


def test_adaptive_max_pool3d_nan_wins_as_in_torch() -> None:
    a = np.random.default_rng(7).standard_normal((1, 1, 4, 4, 4))
    a[0, 0, 0, 1, 1] = a[0, 0, 1, 0, 3] = np.nan
    values, indices = gF.adaptive_max_pool3d(gt.tensor(a), 1, True)
    tvalues, tindices = tF.adaptive_max_pool3d(torch.from_numpy(a), 1, True)
    assert np.isnan(values.numpy()).all() and np.isnan(tvalues.numpy()).all()
    np.testing.assert_array_equal(indices.numpy(), tindices.numpy())


# ----- gradients of gradients -----------------------------------------------------------------------

SECOND: dict[str, tuple[Any, tuple[int, ...]]] = {
    "max_pool3d": (lambda f, x: f.max_pool3d(x, (2, 3, 2), (1, 2, 1), (1, 1, 0)), (1, 2, 4, 5, 4)),
    "avg_pool3d": (lambda f, x: f.avg_pool3d(x, 3, 2, 1), (1, 2, 5, 5, 4)),
    "adaptive_avg_pool3d": (lambda f, x: f.adaptive_avg_pool3d(x, (2, 3, 3)), (2, 1, 5, 4, 5)),
    "adaptive_max_pool3d": (lambda f, x: f.adaptive_max_pool3d(x, (3, 2, 3)), (2, 1, 5, 4, 5)),
}


@pytest.mark.parametrize("name", list(SECOND))
def test_second_order_gradients_match_torch(name: str) -> None:
    """``d/dx sum(grad(sum(pool(x * tanh x) ** 3), x) * v)`` with ``create_graph=True``."""
    pool, shape = SECOND[name]
    rng = np.random.default_rng(8)
    a, v = rng.standard_normal(shape), rng.standard_normal(shape)
    x, xt = _both(a)
    (g,) = grad((pool(gF, x * x.tanh()) ** 3).sum(), x, create_graph=True)
    (gt_,) = torch.autograd.grad((pool(tF, xt * xt.tanh()) ** 3).sum(), xt, create_graph=True)
    _close(g, gt_, "first derivative")
    assert g is not None
    (h,) = grad((g * gt.tensor(v)).sum(), x)
    (ht,) = torch.autograd.grad((gt_ * torch.tensor(v)).sum(), xt)
    _close(h, ht, "second derivative")


# ----- BatchNorm3d ------------------------------------------------------------------------------------


def _copy_params(ours: nn.Module, theirs: Any, rng: np.random.Generator) -> None:
    """Random parameters, the same in both (PyTorch's names)."""
    mine = dict(ours.named_parameters())
    with torch.no_grad():
        for name, q in theirs.named_parameters():
            a = rng.standard_normal(tuple(q.shape))
            q.copy_(torch.from_numpy(a))
            mine[name].data[...] = a


def _compare_params(ours: nn.Module, theirs: Any, atol: float = ATOL) -> None:
    mine = dict(ours.named_parameters())
    for name, q in theirs.named_parameters():
        _close(mine[name].grad, q.grad, f"{name}.grad", atol)


def _compare_buffers(ours: nn.Module, theirs: Any) -> None:
    mine = dict(ours.named_buffers())
    theirs_b = dict(theirs.named_buffers())
    assert set(mine) == set(theirs_b), (sorted(mine), sorted(theirs_b))
    for name, b in theirs_b.items():
        np.testing.assert_allclose(mine[name].numpy(), b.numpy(), rtol=RTOL, atol=ATOL, err_msg=name)


@pytest.mark.parametrize("momentum", [0.1, 0.5, None])
@pytest.mark.parametrize("affine", [True, False])
def test_batchnorm3d_train_eval_and_running_stats_match_torch(momentum: float | None, affine: bool) -> None:
    rng = np.random.default_rng(9)
    ours = nn.BatchNorm3d(3, momentum=momentum, affine=affine, dtype=F64)
    theirs = tnn.BatchNorm3d(3, momentum=momentum, affine=affine).double()
    _copy_params(ours, theirs, rng)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for step in range(4):  # training steps: batch statistics, running statistics moved
        a = rng.standard_normal((2 + step, 3, 3, 4, 2)) * (1 + step) + step
        x, xt = _both(a)
        y, yt = ours(x), theirs(xt)
        _close(y, yt, f"train output, step {step}")
        w = rng.standard_normal(tuple(yt.shape))
        (y * gt.tensor(w)).sum().backward()
        (yt * torch.tensor(w)).sum().backward()
        _close(x.grad, xt.grad, f"input gradient, step {step}")
        _compare_params(ours, theirs)
        _compare_buffers(ours, theirs)
        for p in ours.parameters():
            p.grad = None
        theirs.zero_grad()
    assert ours.num_batches_tracked is not None and int(ours.num_batches_tracked.numpy()) == 4
    ours.eval()
    theirs.eval()
    a = rng.standard_normal((2, 3, 2, 3, 4))
    x, xt = _both(a)
    y, yt = ours(x), theirs(xt)
    _close(y, yt, "eval output")
    (y * y).sum().backward()
    (yt * yt).sum().backward()
    _close(x.grad, xt.grad, "eval input gradient")
    _compare_params(ours, theirs)
    _compare_buffers(ours, theirs)  # eval mode leaves them alone


def test_batchnorm3d_loads_torchs_state_dict_and_without_running_stats() -> None:
    rng = np.random.default_rng(10)
    theirs = tnn.BatchNorm3d(4).double()
    theirs.train()
    with torch.no_grad():
        theirs(torch.from_numpy(rng.standard_normal((3, 4, 2, 2, 2)) * 3 + 1))
    ours = nn.BatchNorm3d(4, dtype=F64)
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    ours.eval()
    theirs.eval()
    _compare_call(ours, theirs, rng.standard_normal((2, 4, 3, 2, 2)))
    plain = nn.BatchNorm3d(4, track_running_stats=False, dtype=F64)
    tplain = tnn.BatchNorm3d(4, track_running_stats=False).double()
    assert list(plain.state_dict()) == list(tplain.state_dict())
    plain.eval()
    tplain.eval()
    _compare_call(plain, tplain, rng.standard_normal((2, 4, 3, 2, 2)))


# ----- InstanceNorm3d -----------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(2, 3, 3, 4, 2), (3, 3, 4, 2)])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("track", [False, True])
def test_instancenorm3d_matches_torch(shape: tuple[int, ...], affine: bool, track: bool) -> None:
    rng = np.random.default_rng(11)
    ours = nn.InstanceNorm3d(3, affine=affine, track_running_stats=track, dtype=F64)
    theirs = tnn.InstanceNorm3d(3, affine=affine, track_running_stats=track).double()
    _copy_params(ours, theirs, rng)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for step in range(2):
        x, xt = _both(rng.standard_normal(shape) * (step + 1) + step)
        y, yt = ours(x), theirs(xt)
        _close(y, yt, "output")
        w = rng.standard_normal(tuple(yt.shape))
        (y * gt.tensor(w)).sum().backward()
        (yt * torch.tensor(w)).sum().backward()
        _close(x.grad, xt.grad, "input gradient")
        _compare_params(ours, theirs)
        for p in ours.parameters():
            p.grad = None
        theirs.zero_grad()
    if track:
        ours.eval()
        theirs.eval()
        _compare_call(ours, theirs, rng.standard_normal(shape))


# ----- bad input ----------------------------------------------------------------------------------------


def _x(shape: tuple[int, ...]) -> Any:
    return gt.tensor(np.zeros(shape))


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: gF.max_pool3d(_x((2, 3, 4, 4)[:3]), 2), gt.ShapeError, r"max_pool3d: expects x .*\(2, 3, 4\)"),
        (lambda: gF.avg_pool3d(_x((1, 2, 3, 4, 4, 4)), 2), gt.ShapeError, r"avg_pool3d: .*\(1, 2, 3, 4, 4, 4\)"),
        (lambda: gF.max_pool3d(_x((1, 2, 4, 4, 4)), 2, padding=2), ValueError, r"max_pool3d: padding \(2, 2, 2\)"),
        (lambda: gF.max_pool3d(_x((1, 2, 2, 4, 4)), 3), gt.ShapeError, r"max_pool3d: kernel \(3, 3, 3\) is larger"),
        (lambda: gF.avg_pool3d(_x((1, 2, 4, 4, 4)), (2, 2)), TypeError, r"avg_pool3d: kernel_size must be"),  # type: ignore[arg-type]
        (lambda: gF.avg_pool3d(_x((1, 2, 4, 4, 4)), 2, 0), ValueError, r"avg_pool3d: stride must be >= 1"),
        (lambda: gF.max_pool3d(_x((1, 2, 4, 4, 4)), 2.0), TypeError, r"max_pool3d: kernel_size"),  # type: ignore[call-overload]
        (lambda: gF.max_pool3d(np.zeros((1, 2, 4, 4, 4)), 2), TypeError, r"max_pool3d"),  # type: ignore[call-overload]
        (lambda: gF.max_pool3d(gt.tensor(np.zeros((1, 2, 4, 4, 4), np.int64)), 2), gt.DTypeError, r"max_pool3d"),
        (lambda: gF.adaptive_avg_pool3d(_x((2, 4, 4)), 2), gt.ShapeError, r"adaptive_avg_pool3d: .*\(2, 4, 4\)"),
        (lambda: gF.adaptive_max_pool3d(_x((1, 2, 0, 4, 4)), 2), gt.ShapeError, r"adaptive_max_pool3d: .*non-zero"),
        (lambda: gF.adaptive_avg_pool3d(_x((1, 2, 4, 4, 4)), (2, 2)), TypeError, r"adaptive_avg_pool3d: output_size"),  # type: ignore[arg-type]
        (lambda: gF.adaptive_max_pool3d(_x((1, 2, 4, 4, 4)), 0), ValueError, r"adaptive_max_pool3d: output_size"),
        (lambda: nn.MaxPool3d(2)(_x((2, 4, 4))), gt.ShapeError, r"max_pool3d: expects x"),
        (lambda: nn.AdaptiveAvgPool3d(2)(_x((4, 4))), gt.ShapeError, r"adaptive_avg_pool3d"),
        (lambda: nn.BatchNorm3d(3)(_x((2, 3, 4, 4))), gt.ShapeError, r"BatchNorm3d: expected a 5-D input"),
        (lambda: nn.BatchNorm3d(3)(_x((2, 4, 2, 2, 2))), gt.ShapeError, r"BatchNorm3d: .*\(2, 4, 2, 2, 2\)"),
        (lambda: nn.BatchNorm3d(3)(_x((1, 3, 1, 1, 1))), ValueError, r"BatchNorm3d: expected more than 1 value"),
        (lambda: nn.BatchNorm3d(3, momentum=2.0), ValueError, r"BatchNorm3d: momentum"),
        (lambda: nn.InstanceNorm3d(3)(_x((2, 3, 4))), gt.ShapeError, r"InstanceNorm3d: expected a 4-D or 5-D"),
        (lambda: nn.InstanceNorm3d(3, affine=True)(_x((2, 4, 2, 2, 2))), gt.ShapeError, r"InstanceNorm3d: .*4"),
    ],
)
def test_bad_input_is_refused_naming_the_op_and_shape(call: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        call()


# ----- a small 3-D model trained as in PyTorch --------------------------------------------------------


class Model(nn.Module):
    def __init__(self) -> None:
        self.bn = nn.BatchNorm3d(2, dtype=F64)
        self.pool = nn.MaxPool3d(2, 1, 1)
        self.avg = nn.AvgPool3d((1, 2, 2), 1)
        self.gap = nn.AdaptiveAvgPool3d((2, 1, 2))
        self.norm = nn.InstanceNorm3d(2, affine=True, dtype=F64)
        self.fc = nn.Linear(2 * 2 * 1 * 2, 3, dtype=F64)

    def forward(self, x: Any) -> Any:
        h = self.gap(self.avg(self.pool(self.bn(x)).relu()))
        h = self.norm(h)
        return self.fc(h.reshape((h.shape[0], -1)))


class TorchModel(torch.nn.Module):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.bn = tnn.BatchNorm3d(2)
        self.pool = tnn.MaxPool3d(2, 1, 1)
        self.avg = tnn.AvgPool3d((1, 2, 2), 1)
        self.gap = tnn.AdaptiveAvgPool3d((2, 1, 2))
        self.norm = tnn.InstanceNorm3d(2, affine=True)
        self.fc = tnn.Linear(2 * 2 * 1 * 2, 3)

    def forward(self, x: Any) -> Any:
        h = self.gap(self.avg(torch.relu(self.pool(self.bn(x)))))
        h = self.norm(h)
        return self.fc(h.reshape(h.shape[0], -1))


def test_a_small_3d_model_trains_step_by_step_as_torch() -> None:
    rng = np.random.default_rng(12)
    ours, theirs = Model(), TorchModel().double()
    _copy_params(ours, theirs, rng)
    opt = optim.SGD(ours.parameters(), lr=0.1, momentum=0.9)
    topt = torch.optim.SGD(theirs.parameters(), lr=0.1, momentum=0.9)
    for step in range(5):
        a = rng.standard_normal((4, 2, 4, 5, 4))
        labels = rng.integers(0, 3, 4)
        opt.zero_grad()
        loss = gF.cross_entropy(ours(gt.tensor(a)), gt.tensor(labels))
        loss.backward()
        topt.zero_grad()
        tloss = tF.cross_entropy(theirs(torch.from_numpy(a)), torch.from_numpy(labels))
        tloss.backward()
        np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-10, err_msg=f"loss at step {step}")
        _compare_params(ours, theirs, atol=1e-10)  # a bias behind a norm: its gradient is 0 up to rounding
        opt.step()
        topt.step()
        mine = dict(ours.named_parameters())
        for name, q in theirs.named_parameters():
            _close(mine[name], q, f"{name} after step {step}", atol=1e-10)
        _compare_buffers(ours.bn, theirs.bn)
    ours.eval()
    theirs.eval()
    a = rng.standard_normal((3, 2, 4, 5, 4))
    with torch.no_grad():
        want = theirs(torch.from_numpy(a))
    _close(ours(gt.tensor(a)), want, "eval logits")
