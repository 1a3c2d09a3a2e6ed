"""PyTorch programs' use of ``nn`` ported by renaming (issue 27, "nn Module and init").

Each test is written as the PyTorch user writes the program: the same model is built in
``torch.nn`` and ``gradtape.nn``, weights go from one to the other through
``state_dict`` / ``load_state_dict(strict=True)`` (both directions), and outputs and
gradients are compared in float64. Covered:

- ``Module``: ``apply``, ``named_modules``, ``modules``, ``children``, ``named_children``,
  ``register_buffer`` (persistent or not), ``state_dict`` (PyTorch's keys and order, tied
  weights under both names, BatchNorm's ``num_batches_tracked``), ``load_state_dict`` (the
  ``(missing_keys, unexpected_keys)`` result, PyTorch's errors), ``to`` / ``double``;
  BatchNorm's ``momentum=None``.
- ``gradtape.nn.init``: every initialiser against PyTorch's documented formula (the same
  draws from a seeded generator, compared exactly) and its statistics; ``calculate_gain`` and
  the fans against ``torch.nn.init``'s.
- Layers: LeakyReLU, ELU, GELU, Softmax, LogSoftmax, Identity, Dropout2d, Unflatten,
  Embedding(padding_idx=); ModuleList / ModuleDict used as PyTorch's.
- ``gradtape.nn.utils``: clip_grad_norm_, clip_grad_value_, parameters_to_vector,
  vector_to_parameters.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, Tensor, nn, optim
from gradtape.devices.cuda import cuda_available
from gradtape.errors import DTypeError, ShapeError
from gradtape.losses import cross_entropy
from gradtape.testing import gradcheck

torch: Any = pytest.importorskip("torch")
tnn: Any = torch.nn
F: Any = torch.nn.functional

Array = np.ndarray[Any, Any]
F64 = np.float64
RTOL, ATOL = 1e-10, 1e-12


@pytest.fixture
def dev() -> Cpu:
    return Cpu(seed=0)


def _np(t: Any) -> Array:
    """A gradtape or torch tensor's values as a numpy array."""
    if isinstance(t, Tensor):
        return np.asarray(t.data)
    return np.asarray(t.detach().numpy())


def _to_torch(sd: dict[str, Tensor[Any, Any]]) -> dict[str, Any]:
    """A gradtape state dict as torch tensors (what ``torch.save`` of a gradtape model holds)."""
    return {k: torch.from_numpy(np.array(v.data)) for k, v in sd.items()}


# ----- one model, both libraries ----------------------------------------------------------------


class TinyGPT(nn.Module):
    """nanoGPT's skeleton: tied token embedding and head, a causal-mask buffer, a LayerNorm and
    an MLP with GELU, and a BatchNorm1d head on a pooled vector (for its buffers)."""

    mask: Tensor[Any, Any]
    pos: Tensor[Any, Any]

    def __init__(self, dev: Cpu, vocab: int = 11, d: int = 8, n: int = 5) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, d, padding_idx=0, dev=dev, dtype=F64)
        self.blocks = nn.ModuleList(
            [
                nn.Sequential(nn.LayerNorm(d, dtype=F64), nn.Linear(d, 2 * d, dev=dev, dtype=F64), nn.GELU("tanh"))
                for _ in range(2)
            ]
        )
        self.proj = nn.ModuleDict({"a": nn.Linear(2 * d, d, dev=dev, dtype=F64)})
        self.bn = nn.BatchNorm1d(d, dtype=F64)
        self.lm_head = nn.Linear(d, vocab, bias=False, dev=dev, dtype=F64)
        self.lm_head.weight = self.wte.weight  # tied, as nanoGPT
        self.register_buffer("mask", dev.tensor(np.tril(np.ones((n, n)))), persistent=False)
        self.register_buffer("pos", dev.tensor(np.linspace(0.0, 1.0, n * d).reshape(n, d)))

    def forward(self, idx: Any) -> Any:
        x = self.wte(idx) + self.pos
        h = x
        for block in self.blocks:
            h = self.proj["a"](block(h)) + h
        att = h @ h.transpose(-1, -2) * self.mask
        h = att @ h
        pooled = self.bn(h.mean(axis=1))
        return self.lm_head(h + pooled.reshape((pooled.shape[0], 1, pooled.shape[1])))


def _torch_tiny_gpt(vocab: int = 11, d: int = 8, n: int = 5) -> Any:
    class TorchTinyGPT(tnn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.wte = tnn.Embedding(vocab, d, padding_idx=0)
            self.blocks = tnn.ModuleList(
                [tnn.Sequential(tnn.LayerNorm(d), tnn.Linear(d, 2 * d), tnn.GELU("tanh")) for _ in range(2)]
            )
            self.proj = tnn.ModuleDict({"a": tnn.Linear(2 * d, d)})
            self.bn = tnn.BatchNorm1d(d)
            self.lm_head = tnn.Linear(d, vocab, bias=False)
            self.lm_head.weight = self.wte.weight
            self.register_buffer("mask", torch.tril(torch.ones(n, n, dtype=torch.float64)), persistent=False)
            self.register_buffer("pos", torch.linspace(0.0, 1.0, n * d, dtype=torch.float64).reshape(n, d))

        def forward(self, idx: Any) -> Any:
            x = self.wte(idx) + self.pos
            h = x
            for block in self.blocks:
                h = self.proj["a"](block(h)) + h
            att = h @ h.transpose(-1, -2) * self.mask
            h = att @ h
            pooled = self.bn(h.mean(dim=1))
            return self.lm_head(h + pooled[:, None, :])

    torch.manual_seed(0)  # its unnormalised attention can overflow for some draws: one fixed, tested draw
    return TorchTinyGPT().double()


def test_state_dict_keys_order_and_tied_weights_are_torchs(dev: Cpu) -> None:
    ours, ref = TinyGPT(dev), _torch_tiny_gpt()
    assert list(ours.state_dict()) == list(ref.state_dict())
    keys = list(ours.state_dict())
    assert "wte.weight" in keys and "lm_head.weight" in keys  # tied: both names, as PyTorch
    assert "bn.num_batches_tracked" in keys and "pos" in keys and "mask" not in keys  # mask is not persistent
    # named_parameters reports the tied tensor once, as PyTorch
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in ref.named_parameters()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in ref.named_buffers()]
    assert len(ours.parameters()) == len(list(ref.parameters()))
    assert all(not any(b is p for p in ours.parameters()) for b in ours.buffers())
    sd = ours.state_dict()
    assert sd["wte.weight"].data is sd["lm_head.weight"].data  # one array under two names
    nbt = sd["bn.num_batches_tracked"]
    assert nbt.shape == () and nbt.dtype == np.int64
    # keep_vars=False: untraced tensors sharing the arrays; keep_vars=True: the tensors themselves
    assert sd["wte.weight"] is not ours.wte.weight and not sd["wte.weight"].requires_grad
    assert ours.state_dict(keep_vars=True)["wte.weight"] is ours.wte.weight
    assert list(ours.state_dict(prefix="m.")) == ["m." + k for k in keys]


def test_torch_checkpoint_loads_strictly_and_trains_the_same(dev: Cpu) -> None:
    """torch's state_dict -> gradtape (strict), then three training steps compared (outputs,
    every parameter gradient, running statistics), then gradtape's state_dict -> torch (strict)."""
    ours, ref = TinyGPT(dev), _torch_tiny_gpt()
    with torch.no_grad():  # a non-zero padding row: looked up as it is, never trained
        ref.wte.weight[0] = 0.25
    result = ours.load_state_dict(ref.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    assert ours.lm_head.weight is ours.wte.weight  # still tied after loading
    rng = np.random.default_rng(3)
    lr = 0.05
    for _ in range(3):
        idx = rng.integers(0, 11, size=(4, 5))
        idx[:, 0] = 0  # the padding index in every row
        targets = rng.integers(0, 11, size=(20,))
        out = ours(idx)
        loss = cross_entropy(out.reshape((20, 11)), targets)
        loss.backward()
        t_out = ref(torch.from_numpy(idx))
        t_loss = F.cross_entropy(t_out.reshape(20, 11), torch.from_numpy(targets))
        t_loss.backward()
        np.testing.assert_allclose(_np(out), _np(t_out), rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(float(loss.data), t_loss.item(), rtol=RTOL)
        for (name, p), (_, q) in zip(ours.named_parameters(), ref.named_parameters(), strict=True):
            assert p.grad is not None, name
            np.testing.assert_allclose(_np(p.grad), _np(q.grad), rtol=1e-9, atol=1e-11, err_msg=name)
        with torch.no_grad():
            for p, q in zip(ours.parameters(), ref.parameters(), strict=True):
                p.data -= lr * p.grad.data if p.grad is not None else 0.0
                q -= lr * q.grad
        ours.zero_grad()
        ref.zero_grad()
    for key, value in ref.state_dict().items():
        np.testing.assert_allclose(_np(ours.state_dict()[key]), _np(value), rtol=1e-9, atol=1e-11, err_msg=key)
    assert int(ours.bn.num_batches_tracked.data) == 3  # type: ignore[union-attr]
    # and back: gradtape's checkpoint loads strictly into a fresh torch model
    fresh = _torch_tiny_gpt()
    fresh.load_state_dict(_to_torch(ours.state_dict()))  # strict
    ours.eval()
    fresh.eval()
    idx = rng.integers(0, 11, size=(2, 5))
    np.testing.assert_allclose(_np(ours(idx)), _np(fresh(torch.from_numpy(idx))), rtol=RTOL, atol=ATOL)


def test_safetensors_file_of_a_batchnorm_model_loads_strictly_in_torch(dev: Cpu, tmp_path: Path) -> None:
    from safetensors.torch import load_file

    ours = nn.Sequential(nn.Linear(3, 4, dev=dev), nn.BatchNorm1d(4, momentum=None), nn.Linear(4, 2, dev=dev))
    ours(dev.randn((6, 3)))
    nn.save(ours, tmp_path / "m.safetensors")
    ref = tnn.Sequential(tnn.Linear(3, 4), tnn.BatchNorm1d(4, momentum=None), tnn.Linear(4, 2))
    ref.load_state_dict(load_file(str(tmp_path / "m.safetensors")))  # strict
    assert int(ref[1].num_batches_tracked) == 1
    # a file from before num_batches_tracked existed still loads strictly (PyTorch's rule for BatchNorm)
    from safetensors.numpy import load_file as np_load
    from safetensors.numpy import save_file

    old = {k: v for k, v in np_load(str(tmp_path / "m.safetensors")).items() if "num_batches" not in k}
    save_file(old, str(tmp_path / "old.safetensors"))
    nn.load(ours, tmp_path / "old.safetensors")
    assert ours.load_state_dict(old).missing_keys == []
    assert int(ours[1].num_batches_tracked.data) == 1  # type: ignore[attr-defined]  # kept


def test_load_state_dict_result_and_errors(dev: Cpu) -> None:
    first = nn.Linear(3, 4, dev=dev)
    ours = nn.Sequential(first, nn.BatchNorm1d(4))
    ref = tnn.Sequential(tnn.Linear(3, 4), tnn.BatchNorm1d(4))
    sd = ref.state_dict()
    del sd["0.bias"]
    sd["extra"] = torch.zeros(2)
    ours_res = ours.load_state_dict(sd, strict=False)
    ref_res = ref.load_state_dict(sd, strict=False)
    assert ours_res.missing_keys == ref_res.missing_keys == ["0.bias"]
    assert ours_res.unexpected_keys == ref_res.unexpected_keys == ["extra"]
    missing, unexpected = ours_res  # a named tuple, as PyTorch's
    assert (missing, unexpected) == (["0.bias"], ["extra"])
    with pytest.raises(RuntimeError, match=r"Missing key\(s\) in state_dict: \"0.bias\"") as info:
        ours.load_state_dict(sd)
    assert 'Unexpected key(s) in state_dict: "extra"' in str(info.value) and "Sequential" in str(info.value)
    # a size mismatch is an error even when not strict, and nothing is written
    before = np.array(first.weight.data)
    bad = dict(ref.state_dict())
    bad["0.weight"] = torch.zeros(5, 3)
    with pytest.raises(RuntimeError, match=r"size mismatch for 0.weight.*\(5, 3\).*\(4, 3\)"):
        ours.load_state_dict(bad, strict=False)
    np.testing.assert_array_equal(first.weight.data, before)
    with pytest.raises(TypeError, match="mapping"):
        ours.load_state_dict([1, 2])  # type: ignore[arg-type]
    # float32 values fill a float64 model (cast as torch's copy_)
    wide_lin = nn.Linear(3, 4, dev=dev, dtype=F64)
    wide = nn.Sequential(wide_lin, nn.BatchNorm1d(4, dtype=F64))
    wide.load_state_dict(ref.state_dict())
    assert wide_lin.weight.dtype == F64
    np.testing.assert_array_equal(wide_lin.weight.data, ref[0].weight.detach().numpy().astype(F64))


# ----- Module: traversal, apply, buffers, conversion ---------------------------------------------


class _Net(nn.Module):
    def __init__(self, dev: Cpu) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 2, 3, dev=dev), nn.BatchNorm2d(2), nn.LeakyReLU(0.2))
        self.heads = nn.ModuleList([nn.Linear(2, 3, dev=dev), nn.Linear(3, 1, dev=dev)])
        self.shared = self.heads[0]  # the same module under a second name


def _torch_net() -> Any:
    class _Net(tnn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.features = tnn.Sequential(tnn.Conv2d(1, 2, 3), tnn.BatchNorm2d(2), tnn.LeakyReLU(0.2))
            self.heads = tnn.ModuleList([tnn.Linear(2, 3), tnn.Linear(3, 1)])
            self.shared = self.heads[0]

    return _Net()


def test_module_traversal_and_apply_follow_torch(dev: Cpu) -> None:
    ours, ref = _Net(dev), _torch_net()
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in ref.named_modules()]
    assert [type(m).__name__ for m in ours.modules()] == [type(m).__name__ for m in ref.modules()]
    assert [type(m).__name__ for m in ours.children()] == [type(m).__name__ for m in ref.children()]
    all_ours = [n for n, _ in ours.named_modules(remove_duplicate=False)]
    assert all_ours == [n for n, _ in ref.named_modules(remove_duplicate=False)]
    assert "shared" in all_ours
    assert [n for n, _ in ours.named_modules(prefix="net")][:2] == ["net", "net.features"]
    seen_ours: list[str] = []
    seen_ref: list[str] = []
    assert ours.apply(lambda m: seen_ours.append(type(m).__name__)) is ours
    ref.apply(lambda m: seen_ref.append(type(m).__name__))
    assert seen_ours == seen_ref  # children first, each module once
    assert list(ours.state_dict()) == list(ref.state_dict())  # the shared module under both names
    with pytest.raises(TypeError, match="apply: fn must be callable"):
        ours.apply(3)  # type: ignore[arg-type]


def test_apply_initialises_like_the_pytorch_idiom(dev: Cpu) -> None:
    """DCGAN's ``weights_init`` through ``model.apply``."""

    def weights_init(m: nn.Module) -> None:
        name = type(m).__name__
        if name.find("Conv") != -1:
            nn.init.normal_(m.weight, 0.0, 0.02)  # type: ignore[attr-defined]
        elif name.find("BatchNorm") != -1:
            nn.init.normal_(m.weight, 1.0, 0.02)  # type: ignore[attr-defined]
            nn.init.constant_(m.bias, 0)  # type: ignore[attr-defined]

    net = _Net(Cpu(seed=5)).apply(weights_init)
    conv, bn = net.features[0], net.features[1]
    assert isinstance(conv, nn.Conv2d) and isinstance(bn, nn.BatchNorm2d)
    assert bn.weight is not None and bn.bias is not None
    assert abs(float(conv.weight.data.std()) - 0.02) < 0.015 and float(np.abs(bn.weight.data - 1).max()) < 0.1
    assert not bn.bias.data.any()
    again = _Net(Cpu(seed=5)).apply(weights_init)
    np.testing.assert_array_equal(again.features[0].weight.data, conv.weight.data)  # type: ignore[attr-defined]


def test_register_buffer_as_torch(dev: Cpu) -> None:
    class M(nn.Module):
        table: Tensor[Any, Any]
        _scratch: Tensor[Any, Any]

        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(2, 2, dev=dev, dtype=F64)
            self.register_buffer("table", dev.tensor(np.arange(4.0)))
            self.register_buffer("_scratch", dev.tensor(np.zeros(2)), persistent=False)
            self.register_buffer("later", None)

    m = M()
    assert [n for n, _ in m.named_parameters()] == ["lin.weight", "lin.bias"]
    assert [n for n, _ in m.named_buffers()] == ["table", "_scratch"]  # None is not listed
    assert list(m.state_dict()) == ["table", "lin.weight", "lin.bias"]  # own buffers, then children
    assert not m.table.requires_grad
    m.table = dev.tensor(np.ones(4))  # assigning keeps it a buffer
    assert not m.table.requires_grad and next(n for n, _ in m.named_buffers()) == "table"
    later = dev.tensor(np.ones(1))
    m.later = later  # registered as a None buffer
    assert "later" in m.state_dict() and all(p is not later for p in m.parameters())
    with pytest.raises(TypeError, match="buffer 'table'"):
        m.table = [1.0]  # type: ignore[assignment]
    with pytest.raises(KeyError, match="attribute 'lin' already exists"):
        m.register_buffer("lin", dev.tensor(np.zeros(1)))
    with pytest.raises(KeyError, match="contain"):
        m.register_buffer("a.b", None)
    with pytest.raises(KeyError, match="empty"):
        m.register_buffer("", None)
    with pytest.raises(TypeError, match="cannot assign a ndarray"):
        m.register_buffer("raw", np.zeros(2))  # type: ignore[arg-type]
    del m.table
    assert "table" not in m.state_dict()
    m.table = dev.tensor(np.zeros(4))  # no longer a buffer: a parameter now, as in PyTorch
    assert m.table.requires_grad

    ref = tnn.Module()
    ref.register_buffer("table", torch.arange(4.0))
    with pytest.raises(KeyError, match="already exists"):
        ref.register_buffer("training", None)  # the error gradtape copies
    with pytest.raises(KeyError, match="already exists"):
        m.register_buffer("training", None)


def test_register_parameter_and_add_module(dev: Cpu) -> None:
    m = nn.Module()
    m.register_parameter("scale", dev.tensor(np.ones(3)))
    m.add_module("fc", nn.Linear(3, 2, dev=dev))
    m.register_module("act", nn.ReLU())
    assert [n for n, _ in m.named_parameters()] == ["scale", "fc.weight", "fc.bias"]
    assert [n for n, _ in m.named_children()] == ["fc", "act"]
    with pytest.raises(KeyError, match="already exists"):
        m.add_module("scale", nn.ReLU())
    with pytest.raises(KeyError, match="already exists"):
        m.register_parameter("fc", dev.tensor(np.ones(1)))
    with pytest.raises(TypeError, match="is not a Module"):
        m.add_module("x", 3)  # type: ignore[arg-type]
    with pytest.raises(KeyError, match=r"'\.'|'_'"):
        m.register_parameter("a.b", None)


def test_to_double_converts_parameters_and_float_buffers(dev: Cpu) -> None:
    lin = nn.Linear(3, 4, dev=dev)
    m = nn.Sequential(lin, nn.BatchNorm1d(4))
    ids = [id(t) for t in m.state_dict(keep_vars=True).values()]
    assert m.double() is m
    sd = m.state_dict(keep_vars=True)
    assert [id(t) for t in sd.values()] == ids  # the same tensors, converted in place
    assert all(t.dtype == F64 for k, t in sd.items() if "num_batches" not in k)
    assert sd["1.num_batches_tracked"].dtype == np.int64
    m.to(np.float32)
    assert lin.weight.dtype == np.float32
    m.to("float64")
    assert lin.weight.dtype == F64
    m.to("torch.float32")
    assert lin.weight.dtype == np.float32
    other = Cpu(seed=4)
    m.to(other, np.float64)
    assert lin.weight.device is other and lin.weight.dtype == F64
    assert m.to("cpu") is m and m.cpu() is m
    if not cuda_available():  # without CuPy or a GPU, "cuda" says what is missing (tests/gpu move models there)
        with pytest.raises(RuntimeError, match=r"Cuda: .*(pip install 'gradtape\[cuda\]'|no GPU)"):
            m.to("cuda")
    with pytest.raises(ValueError, match="not 'mps'"):
        m.to("mps")
    with pytest.raises(TypeError, match="expected a dtype, a device or a tensor"):
        m.to(3)
    with pytest.raises(DTypeError):
        m.to(np.int32)


def test_requires_grad_freezes_a_module(dev: Cpu) -> None:
    m = nn.Linear(3, 2, dev=dev)
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    m.requires_grad_()
    assert all(p.requires_grad for p in m.parameters())


@pytest.mark.parametrize("momentum", [None, 0.3])
def test_batch_norm_momentum_and_count_match_torch(dev: Cpu, momentum: float | None) -> None:
    ours, ref = nn.BatchNorm2d(3, momentum=momentum, dtype=F64), tnn.BatchNorm2d(3, momentum=momentum).double()
    rng = np.random.default_rng(0)
    for _ in range(4):
        x = rng.standard_normal((4, 3, 2, 2)) * 3 + 1
        np.testing.assert_allclose(_np(ours(dev.tensor(x))), _np(ref(torch.from_numpy(x))), rtol=RTOL, atol=ATOL)
    for name, buf in ref.named_buffers():
        np.testing.assert_allclose(_np(getattr(ours, name)), _np(buf), rtol=RTOL, atol=ATOL, err_msg=name)
    ours.eval()
    ref.eval()
    x = rng.standard_normal((2, 3, 2, 2))
    np.testing.assert_allclose(_np(ours(dev.tensor(x))), _np(ref(torch.from_numpy(x))), rtol=RTOL, atol=ATOL)
    ours.reset_running_stats()
    ref.reset_running_stats()
    for name, buf in ref.named_buffers():
        np.testing.assert_array_equal(_np(getattr(ours, name)), _np(buf), err_msg=name)


def test_batch_norm_without_running_stats_has_torchs_state(dev: Cpu) -> None:
    ours, ref = nn.BatchNorm1d(3, track_running_stats=False, dtype=F64), tnn.BatchNorm1d(3, track_running_stats=False)
    assert list(ours.state_dict()) == list(ref.state_dict()) == ["weight", "bias"]
    assert ours.running_mean is None and ref.running_mean is None
    x = np.random.default_rng(1).standard_normal((5, 3))
    ours.eval()
    ref.double().eval()
    np.testing.assert_allclose(_np(ours(dev.tensor(x))), _np(ref(torch.from_numpy(x))), rtol=RTOL, atol=ATOL)
    with pytest.raises(ValueError, match="momentum"):
        nn.BatchNorm1d(3, momentum="0.1")  # type: ignore[arg-type]


# ----- layers ------------------------------------------------------------------------------------

ACTIVATIONS: dict[str, tuple[Callable[[], nn.Module], Callable[[], Any]]] = {
    "LeakyReLU": (lambda: nn.LeakyReLU(0.2, inplace=True), lambda: tnn.LeakyReLU(0.2, inplace=False)),
    "LeakyReLU-default": (lambda: nn.LeakyReLU(), lambda: tnn.LeakyReLU()),
    "ELU": (lambda: nn.ELU(alpha=0.7), lambda: tnn.ELU(alpha=0.7)),
    "GELU": (lambda: nn.GELU(), lambda: tnn.GELU()),
    "GELU-tanh": (lambda: nn.GELU(approximate="tanh"), lambda: tnn.GELU(approximate="tanh")),
    "Softmax": (lambda: nn.Softmax(dim=1), lambda: tnn.Softmax(dim=1)),
    "LogSoftmax": (lambda: nn.LogSoftmax(dim=-1), lambda: tnn.LogSoftmax(dim=-1)),
    "Identity": (lambda: nn.Identity(54, unused="x"), lambda: tnn.Identity(54, unused="x")),
    "ReLU": (lambda: nn.ReLU(inplace=True), lambda: tnn.ReLU()),
    "SiLU": (lambda: nn.SiLU(inplace=True), lambda: tnn.SiLU()),
    "Unflatten": (lambda: nn.Unflatten(1, (2, -1)), lambda: tnn.Unflatten(1, (2, -1))),
    # session 19: the rest of PyTorch's common activation layers
    "ReLU6": (lambda: nn.ReLU6(inplace=True), lambda: tnn.ReLU6()),
    "Hardtanh": (lambda: nn.Hardtanh(-0.5, 1.5), lambda: tnn.Hardtanh(-0.5, 1.5)),
    "Softsign": (lambda: nn.Softsign(), lambda: tnn.Softsign()),
    "Tanhshrink": (lambda: nn.Tanhshrink(), lambda: tnn.Tanhshrink()),
    "Softshrink": (lambda: nn.Softshrink(0.3), lambda: tnn.Softshrink(0.3)),
    "Hardshrink": (lambda: nn.Hardshrink(0.3), lambda: tnn.Hardshrink(0.3)),
    "Threshold": (lambda: nn.Threshold(0.1, -2.0), lambda: tnn.Threshold(0.1, -2.0)),
    "CELU": (lambda: nn.CELU(0.5), lambda: tnn.CELU(0.5)),  # PyTorch rounds alpha to float32: 0.5 is exact
    "Softplus": (lambda: nn.Softplus(beta=2.0, threshold=3.0), lambda: tnn.Softplus(beta=2.0, threshold=3.0)),
    "LogSigmoid": (lambda: nn.LogSigmoid(), lambda: tnn.LogSigmoid()),
    "Mish": (lambda: nn.Mish(), lambda: tnn.Mish()),
    "SELU": (lambda: nn.SELU(), lambda: tnn.SELU()),
    "Hardswish": (lambda: nn.Hardswish(), lambda: tnn.Hardswish()),
    "Hardsigmoid": (lambda: nn.Hardsigmoid(), lambda: tnn.Hardsigmoid()),
    "GLU": (lambda: nn.GLU(1), lambda: tnn.GLU(1)),
    "Softmin": (lambda: nn.Softmin(dim=2), lambda: tnn.Softmin(dim=2)),
    "Softmax2d": (lambda: nn.Softmax2d(), lambda: tnn.Softmax2d()),
    "MaxPool1d": (lambda: nn.MaxPool1d(2), lambda: tnn.MaxPool1d(2)),
    "AvgPool1d": (lambda: nn.AvgPool1d(3, 1, 1), lambda: tnn.AvgPool1d(3, 1, 1)),
    "AdaptiveAvgPool1d": (lambda: nn.AdaptiveAvgPool1d(3), lambda: tnn.AdaptiveAvgPool1d(3)),
    "AdaptiveMaxPool1d": (lambda: nn.AdaptiveMaxPool1d(2), lambda: tnn.AdaptiveMaxPool1d(2)),
}


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_layer_values_and_gradients_equal_torchs(dev: Cpu, name: str) -> None:
    make_ours, make_ref = ACTIVATIONS[name]
    ours, ref = make_ours(), make_ref()
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 4, 5)) * 2
    a[0, 0, :2] = 0.0  # the kinks at 0
    x = dev.tensor(a, requires_grad=True)
    tx = torch.from_numpy(a.copy()).requires_grad_()
    y, ty = ours(x), ref(tx)
    assert y.shape == tuple(ty.shape)
    rtol = 1e-7 if name == "Hardsigmoid" else RTOL  # PyTorch's float64 hardsigmoid uses a float32 1/6
    np.testing.assert_allclose(_np(y), _np(ty), rtol=rtol, atol=ATOL)
    w = rng.standard_normal(y.shape)
    (y * dev.tensor(w)).sum().backward()
    (ty * torch.from_numpy(w)).sum().backward()
    assert x.grad is not None
    np.testing.assert_allclose(_np(x.grad), _np(tx.grad), rtol=rtol, atol=ATOL)
    if name != "Identity":
        assert repr(ours).split("(")[0] == repr(ref).split("(")[0]


@pytest.mark.parametrize("name", [n for n in ACTIVATIONS if n != "Identity"])
def test_layer_gradcheck(name: str) -> None:
    layer = ACTIVATIONS[name][0]()
    a = np.random.default_rng(5).standard_normal((2, 4, 3)) + 0.05  # away from the kinks
    assert gradcheck(lambda x: layer(x), [a])


def test_softmax_implicit_dim_is_torchs_legacy_choice(dev: Cpu) -> None:
    a = np.random.default_rng(0).standard_normal((2, 3, 4))
    with pytest.warns(UserWarning, match="implicit dimension"):
        y = nn.Softmax()(dev.tensor(a))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ty = tnn.Softmax()(torch.from_numpy(a))
    np.testing.assert_allclose(_np(y), _np(ty), rtol=RTOL)


def test_layer_argument_errors(dev: Cpu) -> None:
    with pytest.raises(TypeError, match="LeakyReLU: negative_slope"):
        nn.LeakyReLU("0.1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="ELU: alpha"):
        nn.ELU(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="GELU: approximate"):
        nn.GELU("fast")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Dropout2d: dropout probability"):
        nn.Dropout2d(1.5)
    with pytest.raises(ShapeError, match=r"Unflatten: sizes \(2, 4\) don't multiply up.*\(5\)"):
        nn.Unflatten(1, (2, 4))(dev.randn((3, 5)))
    with pytest.raises(ShapeError, match="Unflatten: dim 2 is out of range"):
        nn.Unflatten(2, (1, 5))(dev.randn((3, 5)))
    with pytest.raises(ValueError, match="one -1"):
        nn.Unflatten(1, (-1, -1))
    with pytest.raises(TypeError, match="Unflatten: unflattened_size"):
        nn.Unflatten(1, 5)  # type: ignore[arg-type]
    with pytest.raises(ShapeError, match="Dropout2d: expected a 4-D"):
        nn.Dropout2d()(dev.randn((3, 5)))
    with pytest.raises(ShapeError, match="softmax"):
        nn.Softmax(dim=3)(dev.randn((3, 5)))


def test_dropout2d_drops_whole_channels(dev: Cpu) -> None:
    p = 0.4
    a = np.random.default_rng(0).standard_normal((64, 16, 3, 3)) + 5.0  # no zeros of its own
    layer = nn.Dropout2d(p)
    x = Cpu(seed=1).tensor(a, requires_grad=True)
    y = layer(x)
    ratio = _np(y) / a
    per_channel = ratio.reshape(64, 16, 9)
    np.testing.assert_allclose(per_channel, np.broadcast_to(per_channel[..., :1], per_channel.shape), rtol=1e-14)
    factors = per_channel[..., 0]
    assert set(np.unique(factors).round(12)) <= {0.0, round(1 / (1 - p), 12)}
    assert abs(float((factors == 0).mean()) - p) < 0.05  # 1024 channels
    y.sum().backward()
    assert x.grad is not None
    np.testing.assert_allclose(_np(x.grad), np.broadcast_to(factors[..., None, None], a.shape), rtol=1e-14)
    again = nn.Dropout2d(p)(Cpu(seed=1).tensor(a))
    np.testing.assert_array_equal(_np(again), _np(y))  # the device's seed fixes the mask
    layer.eval()
    assert layer(x) is x
    assert not _np(nn.Dropout2d(1.0)(dev.tensor(a))).any()
    assert nn.Dropout2d(0.0)(x) is x
    with pytest.warns(UserWarning, match=r"\(N, C, L\)"):
        three = nn.Dropout2d(0.5)(dev.tensor(a[:, :, :, 0]))
    assert np.all((_np(three) == 0).all(axis=2) | (_np(three) != 0).all(axis=2))


@pytest.mark.parametrize("padding_idx", [None, 2, -1])
def test_embedding_padding_idx_as_torch(dev: Cpu, padding_idx: int | None) -> None:
    ours = nn.Embedding(6, 3, padding_idx, dev=dev, dtype=F64)
    ref = tnn.Embedding(6, 3, padding_idx=padding_idx).double()
    if padding_idx is not None:
        assert not ours.weight.data[padding_idx].any()  # initialised to zeros, as torch
        assert ours.padding_idx == ref.padding_idx
    ref.load_state_dict(_to_torch(ours.state_dict()))
    idx = np.array([[0, 2, 5, 2], [5, 5, 1, 3]])
    w = np.random.default_rng(2).standard_normal((2, 4, 3))
    for _ in range(2):  # the second pass with a non-zero padding row
        y, ty = ours(idx), ref(torch.from_numpy(idx))
        np.testing.assert_allclose(_np(y), _np(ty), rtol=RTOL)
        ours.zero_grad()
        ref.zero_grad()
        (y * y * dev.tensor(w)).sum().backward()
        (ty * ty * torch.from_numpy(w)).sum().backward()
        assert ours.weight.grad is not None
        np.testing.assert_allclose(_np(ours.weight.grad), _np(ref.weight.grad), rtol=RTOL, atol=ATOL)
        ours.weight.data[:] += 0.5
        with torch.no_grad():
            ref.weight += 0.5
    with pytest.raises(ValueError, match="padding_idx must be within"):
        nn.Embedding(6, 3, padding_idx=6, dev=dev)


def test_embedding_padding_idx_under_no_grad_and_traced(dev: Cpu) -> None:
    from gradtape import no_grad

    emb = nn.Embedding(4, 2, padding_idx=1, dev=dev, dtype=F64)
    with no_grad():
        y = emb([1, 2])
    assert not y.requires_grad and not y.data[0].any()
    store = emb.alloc_grads()
    idx = dev.tensor(np.array([1, 1, 3])).trace(store)
    grads = (emb(idx) * 2.0).sum().backward()
    g = _np(grads.get(emb.weight))
    assert not g[1].any() and g[3].tolist() == [2.0, 2.0]


# ----- ModuleList / ModuleDict as PyTorch's ------------------------------------------------------


def test_module_list_api_matches_torch(dev: Cpu) -> None:
    def lin(i: int) -> nn.Linear[int, int]:
        return nn.Linear(i + 1, i + 2, dev=dev)

    ours, ref = nn.ModuleList([lin(0), lin(1)]), tnn.ModuleList([tnn.Linear(1, 2), tnn.Linear(2, 3)])

    def same() -> None:
        assert [n for n, _ in ours.named_parameters()] == [n for n, _ in ref.named_parameters()]
        assert [p.shape for p in ours.parameters()] == [tuple(p.shape) for p in ref.parameters()]

    assert ours.append(lin(2)) is ours
    assert ref.append(tnn.Linear(3, 4)) is ref
    assert ours.extend([lin(3)]) is ours
    ref.extend([tnn.Linear(4, 5)])
    ours.insert(1, lin(9))
    ref.insert(1, tnn.Linear(10, 11))
    same()
    sub, tsub = ours[1:3], ref[1:3]
    assert isinstance(sub, nn.ModuleList) and sub[0] is ours[1] and len(sub) == len(tsub) == 2
    assert ours[-1] is list(ours)[-1]
    del ours[0]
    del ref[0]
    same()
    ours[0] = lin(5)
    ref[0] = tnn.Linear(6, 7)
    same()
    assert ours.pop(0).in_features == ref.pop(0).in_features == 6  # type: ignore[attr-defined]
    ours += [lin(7)]
    ref += [tnn.Linear(8, 9)]
    same()
    assert len(ours + ours) == len(ref + ref)
    with pytest.raises(IndexError):
        ours[10]


def test_module_dict_api_matches_torch(dev: Cpu) -> None:
    ours = nn.ModuleDict({"b": nn.Linear(1, 2, dev=dev), "a": nn.Linear(2, 3, dev=dev)})
    ref = tnn.ModuleDict({"b": tnn.Linear(1, 2), "a": tnn.Linear(2, 3)})
    ours["c"] = nn.Linear(3, 4, dev=dev)
    ref["c"] = tnn.Linear(3, 4)
    ours.update([("d", nn.ReLU()), ("b", nn.Linear(5, 6, dev=dev))])
    ref.update([("d", tnn.ReLU()), ("b", tnn.Linear(5, 6))])
    assert list(ours.keys()) == list(ref.keys()) == ["b", "a", "c", "d"]
    assert list(ours) == list(ref)
    assert [type(m).__name__ for m in ours.values()] == [type(m).__name__ for m in ref.values()]
    assert [k for k, _ in ours.items()] == [k for k, _ in ref.items()]
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in ref.named_parameters()]
    assert ("a" in ours) == ("a" in ref) and len(ours) == len(ref)
    assert type(ours.pop("a")).__name__ == type(ref.pop("a")).__name__ == "Linear"
    assert list(ours.state_dict()) == list(ref.state_dict())
    ours.clear()
    ref.clear()
    assert len(ours) == len(ref) == 0
    with pytest.raises(KeyError):
        ours["a.b"] = nn.ReLU()


# ----- nn.init -----------------------------------------------------------------------------------

GAINS: list[tuple[str, float | None]] = [
    *((n, None) for n in ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d")),
    ("conv_transpose3d", None),
    ("sigmoid", None),
    ("tanh", None),
    ("relu", None),
    ("leaky_relu", None),
    ("leaky_relu", 0.2),
    ("leaky_relu", math.sqrt(5)),
    ("leaky_relu", 0),
    ("selu", None),
]


@pytest.mark.parametrize(("nonlinearity", "param"), GAINS)
def test_calculate_gain_is_torchs_table(nonlinearity: str, param: float | None) -> None:
    assert nn.init.calculate_gain(nonlinearity, param) == pytest.approx(
        tnn.init.calculate_gain(nonlinearity, param), rel=1e-15
    )


def test_calculate_gain_errors_are_torchs() -> None:
    with pytest.raises(ValueError, match="unsupported nonlinearity 'swish'"):
        nn.init.calculate_gain("swish")
    with pytest.raises(ValueError, match="not a valid number"):
        nn.init.calculate_gain("leaky_relu", "0.1")  # type: ignore[arg-type]


SHAPES = [(4, 3), (5, 2, 3), (6, 3, 3, 2), (2, 7, 1, 1), (3, 4, 2, 2, 2)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_fans_are_torchs(shape: tuple[int, ...]) -> None:
    t = Cpu().zeros(shape)
    assert nn.init.calculate_fan_in_and_fan_out(t) == tnn.init._calculate_fan_in_and_fan_out(torch.zeros(shape))
    with pytest.raises(ShapeError, match="fewer than 2 dimensions"):
        nn.init.calculate_fan_in_and_fan_out(Cpu().zeros((3,)))


def _torch_fan(shape: tuple[int, ...], mode: str) -> int:
    fan: int = tnn.init._calculate_correct_fan(torch.zeros(shape), mode)
    return fan


INITS: list[tuple[str, dict[str, Any], Callable[[tuple[int, ...], np.random.Generator], Array]]] = [
    # (name, kwargs, the documented formula drawing from the same generator)
    ("uniform_", {"a": -0.5, "b": 2.0}, lambda s, g: g.uniform(-0.5, 2.0, s)),
    ("normal_", {"mean": 1.0, "std": 0.3}, lambda s, g: g.normal(1.0, 0.3, s)),
    (
        "xavier_uniform_",
        {"gain": 2.0},
        lambda s, g: (
            g.uniform(-1, 1, s) * 2.0 * math.sqrt(6.0 / sum(tnn.init._calculate_fan_in_and_fan_out(torch.zeros(s))))
        ),
    ),
    (
        "xavier_normal_",
        {"gain": 0.5},
        lambda s, g: g.normal(
            0.0, 0.5 * math.sqrt(2.0 / sum(tnn.init._calculate_fan_in_and_fan_out(torch.zeros(s)))), s
        ),
    ),
    (
        "kaiming_uniform_",
        {"a": math.sqrt(5)},  # PyTorch's Linear/Conv default
        lambda s, g: (
            g.uniform(-1, 1, s)
            * tnn.init.calculate_gain("leaky_relu", math.sqrt(5))
            * math.sqrt(3.0 / _torch_fan(s, "fan_in"))
        ),
    ),
    (
        "kaiming_uniform_",
        {"mode": "fan_out", "nonlinearity": "relu"},
        lambda s, g: g.uniform(-1, 1, s) * math.sqrt(2.0) * math.sqrt(3.0 / _torch_fan(s, "fan_out")),
    ),
    (
        "kaiming_normal_",
        {"a": 0.1, "mode": "fan_in"},
        lambda s, g: g.normal(0.0, tnn.init.calculate_gain("leaky_relu", 0.1) / math.sqrt(_torch_fan(s, "fan_in")), s),
    ),
    (
        "kaiming_normal_",
        {"mode": "FAN_OUT", "nonlinearity": "relu"},
        lambda s, g: g.normal(0.0, math.sqrt(2.0) / math.sqrt(_torch_fan(s, "fan_out")), s),
    ),
]


@pytest.mark.parametrize(("name", "kwargs", "formula"), INITS, ids=[f"{n}-{k}" for n, k, _ in INITS])
@pytest.mark.parametrize("shape", [(4, 3), (6, 3, 3, 2)], ids=str)
def test_init_is_torchs_formula_in_place(
    name: str,
    kwargs: dict[str, Any],
    formula: Callable[[tuple[int, ...], np.random.Generator], Array],
    shape: tuple[int, ...],
) -> None:
    fn = getattr(nn.init, name)
    for dtype in (F64, np.float32):
        w = Cpu().zeros(shape, dtype)
        array = w.data
        assert fn(w, **kwargs, generator=np.random.default_rng(11)) is w  # returns the tensor
        assert w.data is array and w.dtype == dtype  # in place
        want = formula(shape, np.random.default_rng(11))
        # uniform_ scales U(a, b) directly, the bounds formulas scale U(-1, 1): equal up to rounding
        np.testing.assert_allclose(w.data, want.astype(dtype), rtol=1e-12 if dtype == F64 else 1e-6, atol=1e-12)


@pytest.mark.parametrize(
    ("name", "kwargs", "check"),
    [
        ("kaiming_uniform_", {"nonlinearity": "relu"}, "uniform"),
        ("kaiming_normal_", {"nonlinearity": "relu", "mode": "fan_out"}, "normal"),
        ("xavier_uniform_", {}, "uniform"),
        ("xavier_normal_", {"gain": 3.0}, "normal"),
    ],
)
def test_init_statistics_match_torchs(name: str, kwargs: dict[str, Any], check: str) -> None:
    """The same call in both libraries on a conv weight: the same bound (uniform) and the same
    standard deviation (to sampling error) as torch's own draws."""
    shape = (64, 32, 3, 3)
    w = getattr(nn.init, name)(Cpu(seed=1).zeros(shape, F64), **kwargs)
    tw = getattr(tnn.init, name)(torch.zeros(shape, dtype=torch.float64), **kwargs)
    ours, theirs = _np(w), _np(tw)
    assert abs(ours.std() - theirs.std()) < 0.02 * theirs.std()
    assert abs(ours.mean()) < 0.02 * theirs.std()
    if check == "uniform":
        bound = np.sqrt(3.0) * theirs.std()
        assert np.abs(ours).max() <= bound * 1.01 and np.abs(ours).max() > bound * 0.99


def test_trunc_normal_is_torchs_method_and_distribution() -> None:
    """PyTorch's inverse-CDF method exactly (the same uniform draws through torch.erfinv), and
    the truncated normal's moments."""
    mean, std, a, b = 0.5, 2.0, -1.0, 3.0
    w = nn.init.trunc_normal_(Cpu().zeros((200, 100), F64), mean, std, a, b, generator=np.random.default_rng(4))

    def cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    lo, hi = cdf((a - mean) / std), cdf((b - mean) / std)
    u = np.random.default_rng(4).uniform(2 * lo - 1, 2 * hi - 1, (200, 100))
    want = (torch.erfinv(torch.from_numpy(u)) * (std * math.sqrt(2.0)) + mean).clamp(a, b).numpy()
    np.testing.assert_allclose(w.data, want, rtol=1e-12, atol=1e-13)
    assert w.data.min() >= a and w.data.max() <= b
    # moments of N(mean, std) truncated to [a, b]
    al, be = (a - mean) / std, (b - mean) / std

    def pdf(x: float) -> float:
        return math.exp(-x * x / 2) / math.sqrt(2 * math.pi)

    z = cdf(be) - cdf(al)
    m = mean + std * (pdf(al) - pdf(be)) / z
    v = std**2 * (1 + (al * pdf(al) - be * pdf(be)) / z - ((pdf(al) - pdf(be)) / z) ** 2)
    assert abs(w.data.mean() - m) < 0.03 and abs(w.data.var() - v) < 0.05 * v
    # PyTorch's defaults: N(0, 1) cut at +-2
    d = nn.init.trunc_normal_(Cpu(seed=2).zeros((10000,), np.float32))
    assert d.dtype == np.float32 and d.data.min() >= -2 and d.data.max() <= 2 and abs(d.data.std() - 0.88) < 0.03
    with pytest.warns(UserWarning, match="more than 2 std"):
        nn.init.trunc_normal_(Cpu().zeros((3,)), mean=10.0, std=1.0, a=-1.0, b=1.0)


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 2, 3, 3), (4, 4)], ids=str)
def test_orthogonal_is_orthogonal_times_gain(shape: tuple[int, ...]) -> None:
    w = nn.init.orthogonal_(Cpu(seed=3).zeros(shape, F64), gain=1.5)
    m = w.data.reshape(shape[0], -1)
    rows, cols = m.shape
    gram = m @ m.T if rows <= cols else m.T @ m
    np.testing.assert_allclose(gram, 1.5**2 * np.eye(min(rows, cols)), atol=1e-12)
    # the same method as torch: from the same normal matrix, torch's QR sign convention
    flat = np.random.default_rng(9).standard_normal((rows, cols))
    ours = nn.init.orthogonal_(Cpu().zeros(shape, F64), generator=np.random.default_rng(9)).data.reshape(rows, cols)
    t = torch.from_numpy(flat.T if rows < cols else flat)
    q, r = torch.linalg.qr(t)
    q = q * torch.sign(torch.diag(r))
    want = (q.T if rows < cols else q).numpy()
    np.testing.assert_allclose(ours, want, atol=1e-12)
    with pytest.raises(ShapeError, match="2 or more dimensions"):
        nn.init.orthogonal_(Cpu().zeros((3,)))


def test_constant_fills_are_exact_and_in_place(dev: Cpu) -> None:
    lin = nn.Linear(4, 3, dev=dev)
    w = lin.weight
    arr = w.data
    assert nn.init.zeros_(w) is w and w.data is arr and not w.data.any()
    assert nn.init.ones_(w) is w and np.all(w.data == 1)
    assert nn.init.constant_(w, 0.25) is w and np.all(w.data == np.float32(0.25))
    assert nn.init.eye_(w) is w
    np.testing.assert_array_equal(w.data, np.eye(3, 4))
    np.testing.assert_array_equal(w.data, tnn.init.eye_(torch.empty(3, 4)).numpy())
    assert w.requires_grad and w.is_leaf  # still the layer's parameter
    count = Cpu().tensor(np.zeros((), np.int64))
    nn.init.constant_(count, 3)
    assert int(count.data) == 3 and count.dtype == np.int64
    with pytest.raises(ShapeError, match="eye_: only tensors with 2 dimensions"):
        nn.init.eye_(Cpu().zeros((2, 2, 2)))


def test_init_is_reproducible_from_the_device_seed() -> None:
    def draw(seed: int) -> list[Array]:
        lin = nn.Linear(8, 4, dev=Cpu(seed=seed))
        nn.init.kaiming_normal_(lin.weight, nonlinearity="relu")
        assert lin.bias is not None
        nn.init.uniform_(lin.bias, -0.1, 0.1)
        return [np.array(lin.weight.data), np.array(lin.bias.data)]

    a, b, c = draw(7), draw(7), draw(8)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[0], c[0])
    # generator= a device, a Generator or an int seed
    t1 = nn.init.normal_(Cpu().zeros((5,)), generator=Cpu(seed=3))
    t2 = nn.init.normal_(Cpu().zeros((5,)), generator=np.random.default_rng(3))
    t3 = nn.init.normal_(Cpu().zeros((5,)), generator=3)
    np.testing.assert_array_equal(t1.data, t2.data)
    np.testing.assert_array_equal(t2.data, t3.data)


def test_init_errors_name_the_function() -> None:
    with pytest.raises(TypeError, match="kaiming_uniform_: expected a gradtape Tensor"):
        nn.init.kaiming_uniform_(np.zeros((2, 2)))  # type: ignore[type-var]
    with pytest.raises(DTypeError, match="normal_: expected a float32/float64 tensor"):
        nn.init.normal_(Cpu().tensor(np.zeros((2, 2), np.int64)))
    with pytest.raises(ValueError, match="kaiming_normal_: mode 'fan' not supported"):
        nn.init.kaiming_normal_(Cpu().zeros((2, 2)), mode="fan")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unsupported nonlinearity"):
        nn.init.kaiming_normal_(Cpu().zeros((2, 2)), nonlinearity="gelu")  # type: ignore[arg-type]
    with pytest.raises(ShapeError, match="fewer than 2"):
        nn.init.xavier_uniform_(Cpu().zeros((3,)))
    with pytest.raises(ValueError, match="uniform_: expected a <= b"):
        nn.init.uniform_(Cpu().zeros((3,)), 1.0, 0.0)
    with pytest.raises(TypeError, match="generator must be"):
        nn.init.normal_(Cpu().zeros((3,)), generator="seed")
    frozen = Cpu().zeros((2, 2))
    frozen.data.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        nn.init.zeros_(frozen)
    with pytest.warns(UserWarning, match="zero-element"):
        nn.init.kaiming_uniform_(Cpu().zeros((0, 3)))


# ----- nn.utils ----------------------------------------------------------------------------------


def _grads_pair(dev: Cpu) -> tuple[nn.Module, Any]:
    ours = nn.Sequential(nn.Linear(3, 4, dev=dev, dtype=F64), nn.Tanh(), nn.Linear(4, 2, dev=dev, dtype=F64))
    ref = tnn.Sequential(tnn.Linear(3, 4), tnn.Tanh(), tnn.Linear(4, 2)).double()
    ref.load_state_dict(_to_torch(ours.state_dict()))
    x = np.random.default_rng(0).standard_normal((5, 3)) * 4
    (ours(dev.tensor(x)) ** 2).sum().backward()
    (ref(torch.from_numpy(x)) ** 2).sum().backward()
    return ours, ref


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
def test_clip_grad_norm_returns_torchs_total_norm(dev: Cpu, norm_type: float) -> None:
    ours, ref = _grads_pair(dev)
    total = nn.utils.clip_grad_norm_(ours.parameters(), max_norm=0.5, norm_type=norm_type)
    t_total = tnn.utils.clip_grad_norm_(ref.parameters(), max_norm=0.5, norm_type=norm_type)
    assert isinstance(total, Tensor) and total.shape == () and total.dtype == F64
    np.testing.assert_allclose(float(total.data), t_total.item(), rtol=1e-12)
    for p, q in zip(ours.parameters(), ref.parameters(), strict=True):
        assert p.grad is not None
        np.testing.assert_allclose(_np(p.grad), _np(q.grad), rtol=1e-12)


def test_clip_grad_value_and_parameter_vectors_are_torchs(dev: Cpu) -> None:
    ours, ref = _grads_pair(dev)
    nn.utils.clip_grad_value_(ours.parameters(), clip_value=0.3)
    tnn.utils.clip_grad_value_(ref.parameters(), clip_value=0.3)
    for p, q in zip(ours.parameters(), ref.parameters(), strict=True):
        assert p.grad is not None
        assert np.abs(_np(p.grad)).max() <= 0.3 and np.any(np.abs(_np(p.grad)) == 0.3)
        np.testing.assert_allclose(_np(p.grad), _np(q.grad), rtol=1e-12)
    vec = nn.utils.parameters_to_vector(ours.parameters())
    t_vec = tnn.utils.parameters_to_vector(ref.parameters())
    np.testing.assert_array_equal(_np(vec), _np(t_vec))
    new = np.arange(vec.shape[0], dtype=F64)
    nn.utils.vector_to_parameters(dev.tensor(new), ours.parameters())
    tnn.utils.vector_to_parameters(torch.from_numpy(new), ref.parameters())
    for (name, p), (_, q) in zip(ours.named_parameters(), ref.named_parameters(), strict=True):
        np.testing.assert_array_equal(_np(p), _np(q), err_msg=name)


def test_parameter_list_and_dict_train_and_save_as_pytorchs(dev: Cpu) -> None:
    """A model holding per-layer scales in nn.ParameterList and biases in nn.ParameterDict (a
    list of tensors is refused: PyTorch needs these containers too): the same parameter names
    and state_dict keys as PyTorch's, the same loss and gradients from identical weights, and
    SGD steps that train every entry."""
    rng = np.random.default_rng(11)
    scales = [rng.standard_normal(4) for _ in range(3)]
    biases = {"a": rng.standard_normal(4), "b": rng.standard_normal(4)}
    x = rng.standard_normal((5, 4))

    class Ours(nn.Module):
        def __init__(self) -> None:
            self.scales = nn.ParameterList([dev.tensor(s, dtype=F64) for s in scales])
            self.biases = nn.ParameterDict({k: dev.tensor(v, dtype=F64) for k, v in biases.items()})

        def forward(self, h: Any) -> Any:
            for s in self.scales:
                h = (h * s).tanh()
            return h + self.biases["a"] - self.biases["b"]

    class Ref(tnn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.scales = tnn.ParameterList([tnn.Parameter(torch.tensor(s)) for s in scales])
            self.biases = tnn.ParameterDict({k: tnn.Parameter(torch.tensor(v)) for k, v in biases.items()})

        def forward(self, h: Any) -> Any:
            for s in self.scales:
                h = (h * s).tanh()
            return h + self.biases["a"] - self.biases["b"]

    ours, ref = Ours(), Ref()
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in ref.named_parameters()]
    assert list(nn.state_dict(ours)) == list(ref.state_dict())
    opt, topt = optim.SGD(ours.parameters(), lr=0.1), torch.optim.SGD(ref.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        topt.zero_grad()
        loss, tloss = (ours(dev.tensor(x, dtype=F64)) ** 2).mean(), (ref(torch.tensor(x)) ** 2).mean()
        loss.backward()
        tloss.backward()
        np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-12)
        for (name, p), (_, tp) in zip(ours.named_parameters(), ref.named_parameters(), strict=True):
            assert p.grad is not None, name
            np.testing.assert_allclose(_np(p.grad), _np(tp.grad), rtol=1e-10, err_msg=name)
        opt.step()
        topt.step()
    assert len(ours.scales) == 3 and "a" in ours.biases and list(ours.biases) == ["a", "b"]
    with pytest.raises(TypeError, match="ParameterList"):
        nn.ParameterList([[1.0, 2.0]])  # type: ignore[list-item]
    with pytest.raises(KeyError, match="cannot name a parameter"):
        nn.ParameterDict({"a.b": dev.tensor(biases["a"])})


def test_conv_transpose1d_layer_equals_torchs(dev: Cpu) -> None:
    """nn.ConvTranspose1d from PyTorch's weights: output and every gradient in float64."""
    rng = np.random.default_rng(4)
    ref = tnn.ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2).double()
    ours = nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2, dev=dev, dtype=F64)
    assert ours.weight.shape == tuple(ref.weight.shape)
    ours.load_state_dict({k: dev.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    a = rng.standard_normal((2, 4, 5))
    x, tx = dev.tensor(a, requires_grad=True), torch.from_numpy(a.copy()).requires_grad_()
    y, ty = ours(x), ref(tx)
    np.testing.assert_allclose(_np(y), _np(ty), rtol=1e-12)
    w = rng.standard_normal(y.shape)
    (y * dev.tensor(w)).sum().backward()
    (ty * torch.from_numpy(w)).sum().backward()
    assert ours.bias is not None
    for g, t in ((x.grad, tx.grad), (ours.weight.grad, ref.weight.grad), (ours.bias.grad, ref.bias.grad)):
        assert g is not None
        np.testing.assert_allclose(_np(g), _np(t), rtol=1e-11)
