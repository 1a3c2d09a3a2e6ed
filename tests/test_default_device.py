"""Issue 27, "a PyTorch program ports by renaming": no device named anywhere.

PyTorch programs build layers and tensors without a device and seed them with
``torch.manual_seed``. The first test is such a program, written once in PyTorch's spelling
and run twice: as written, on PyTorch (float64), and with ``torch`` renamed to ``gradtape``
(float32), weights and data copied from gradtape's run into PyTorch's; the losses of every
step and the final weights must agree. The others pin the parts: the default device and
its seed, PyTorch's creation functions at the top of the package, its dtype names, and the
errors.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import gradtape
from gradtape import Cpu, DTypeError, nn

torch: Any = pytest.importorskip("torch")

PROGRAM = """
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 3))
x = torch.randn(32, 4)
y = torch.randint(0, 3, (32,))
scale = torch.ones(3, requires_grad=True)
opt = torch.optim.SGD([*model.parameters(), scale], lr=0.1, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()


def train(steps):
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn(model(x) * scale, y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses
"""


@pytest.fixture(autouse=True)
def _fresh_default() -> Iterator[None]:
    """Each test starts from a fresh default device and leaves one behind."""
    gradtape.set_default_device(None)
    yield
    gradtape.set_default_device(None)


def _run(source: str) -> dict[str, Any]:
    ns: dict[str, Any] = {"__name__": "program"}
    exec(compile(source, "<program>", "exec"), ns)
    return ns


def test_a_pytorch_program_renamed_trains_as_pytorch() -> None:
    ours = _run(PROGRAM.replace("torch", "gradtape"))
    theirs = _run(PROGRAM)
    # identical weights and data: gradtape's draws, copied into PyTorch's objects (float64)
    state = {k: torch.tensor(np.asarray(v.numpy(), np.float64)) for k, v in ours["model"].state_dict().items()}
    theirs["model"].double().load_state_dict(state, strict=True)
    theirs["x"] = torch.tensor(ours["x"].numpy().astype(np.float64))
    theirs["y"] = torch.tensor(ours["y"].numpy())
    with torch.no_grad():
        theirs["scale"].data = theirs["scale"].data.double()
    assert ours["x"].dtype == np.float32 and ours["y"].dtype == np.int64
    assert ours["scale"].requires_grad and ours["scale"].is_leaf

    got, want = ours["train"](5), theirs["train"](5)
    np.testing.assert_allclose(got, want, rtol=2e-5)
    for k, v in ours["model"].state_dict().items():
        np.testing.assert_allclose(v.numpy(), theirs["model"].state_dict()[k].numpy(), rtol=1e-4, atol=1e-5, err_msg=k)
    np.testing.assert_allclose(ours["scale"].numpy(), theirs["scale"].detach().numpy(), rtol=1e-4)
    assert got[-1] < got[0]


def test_manual_seed_reseeds_the_default_device_layers_and_factories_use() -> None:
    gradtape.manual_seed(3)
    a, xa = nn.Linear(5, 2), gradtape.randn(4, 5)
    gradtape.manual_seed(3)
    b, xb = nn.Linear(5, 2), gradtape.randn(4, 5)
    np.testing.assert_array_equal(a.weight.numpy(), b.weight.numpy())
    np.testing.assert_array_equal(xa.numpy(), xb.numpy())
    gradtape.manual_seed(4)
    c = nn.Linear(5, 2)
    assert not np.array_equal(a.weight.numpy(), c.weight.numpy())
    assert gradtape.initial_seed() == 4
    # the same device object throughout: tensors made before a reseed stay on it
    assert a.weight.device is c.weight.device is gradtape.get_default_device()
    # what a named device gives, the default gives after the same seed
    gradtape.manual_seed(7)
    np.testing.assert_array_equal(nn.Linear(5, 2).weight.numpy(), nn.Linear(5, 2, dev=Cpu(seed=7)).weight.numpy())


@pytest.mark.parametrize(
    "call",
    [
        "Linear(3, 4)",
        "Bilinear(3, 5, 4)",
        "Embedding(10, 4)",
        "EmbeddingBag(10, 4)",
        "Conv1d(2, 4, 3)",
        "Conv2d(3, 8, 3)",
        "ConvTranspose2d(3, 8, 3)",
        "Conv3d(2, 4, 3)",
        "ConvTranspose3d(2, 4, 3)",
        "LSTM(4, 8, 2)",
        "GRU(4, 8, bidirectional=True)",
        "RNN(4, 8)",
        "LSTMCell(4, 8)",
        "GRUCell(4, 8)",
        "RNNCell(4, 8)",
        "MultiheadAttention(8, 2)",
        "TransformerEncoderLayer(8, 2, 16)",
        "TransformerDecoderLayer(8, 2, 16)",
        "Transformer(8, 2, 1, 1, 16)",
        "LayerNorm(8)",
        "BatchNorm2d(8)",
        "BatchNorm3d(8)",
        "InstanceNorm3d(8, affine=True)",
        "GroupNorm(2, 8)",
        "Mamba(8)",
    ],
)
def test_every_parameterised_layer_builds_without_a_device(call: str) -> None:
    """PyTorch's constructor call, as written (``nn.Conv2d(3, 8, 3)``), builds on the default
    device."""
    layer = eval(f"nn.{call}")
    params = list(layer.parameters())
    assert params
    assert all(p.device is gradtape.get_default_device() for p in params), type(layer).__name__


def test_set_default_device() -> None:
    dev = Cpu(seed=11)
    gradtape.set_default_device(dev)
    assert gradtape.get_default_device() is dev
    assert nn.Linear(2, 2).weight.device is dev
    assert gradtape.zeros(2).device is dev
    gradtape.set_default_device("cpu")  # PyTorch's spelling: the default stays
    assert gradtape.get_default_device() is dev
    gradtape.set_default_device(None)
    assert gradtape.get_default_device() is not dev
    with pytest.raises(ValueError, match="set_default_device: unknown device 'tpu'"):
        gradtape.set_default_device("tpu")
    with pytest.raises(TypeError, match="set_default_device: expected a Cpu, a Cuda"):
        gradtape.set_default_device(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="manual_seed: seed must be an int"):
        gradtape.manual_seed(1.5)  # type: ignore[arg-type]


def _same(ours: Any, theirs: Any) -> None:
    assert ours.shape == tuple(theirs.shape)
    assert ours.dtype == np.dtype(str(theirs.dtype).removeprefix("torch.")), (ours.dtype, theirs.dtype)


def test_set_default_device_cuda_without_a_gpu_says_what_is_missing() -> None:
    """``set_default_device("cuda")`` where CuPy, numba-cuda or a GPU is missing raises the
    ``Cuda`` device's error, which names the missing piece, and the default stays the CPU."""
    from gradtape.devices.cuda import cuda_available

    if cuda_available():
        pytest.skip("a GPU is here: tests/test_cuda.py runs set_default_device('cuda')")
    before = gradtape.get_default_device()
    with pytest.raises(RuntimeError, match=r"Cuda: .*(CuPy|numba-cuda|CUDA|GPU)"):
        gradtape.set_default_device("cuda")
    with pytest.raises(RuntimeError, match=r"Cuda: .*(CuPy|numba-cuda|CUDA|GPU)"):
        gradtape.set_default_device(gradtape.device("cuda:0"))
    assert gradtape.get_default_device() is before
    assert gradtape.zeros(2).device is before


@pytest.mark.parametrize(
    "call",
    [
        "zeros(2, 3)",
        "zeros((2, 3))",
        "zeros([2, 3])",
        "zeros(4)",
        "zeros(())",
        "ones(2, 3, dtype=torch.float64)",
        "ones(5, dtype=torch.long)",
        "ones(2, dtype=torch.bool)",
        "empty(3, 1)",
        "full((2, 2), 7.0)",
        "full((2,), 3, dtype=torch.int64)",
        "randn(3, 4)",
        "randn(3, 4, dtype=torch.double)",
        "rand(5)",
        "randint(10, (3, 2))",
        "randint(2, 10, (4,))",
        "arange(5)",
        "arange(1.0, 2.0, 0.25)",
        "arange(0, 10, 3, dtype=torch.float32)",
        "eye(3)",
        "eye(2, 4, dtype=torch.float64)",
        "linspace(0, 1, 5)",
        "tensor([[1.0, 2.0], [3.0, 4.0]])",
        "tensor([1, 2, 3])",
        "tensor(2.5)",
        "tensor([True, False])",
    ],
)
def test_creation_functions_match_pytorch(call: str) -> None:
    """Shape and dtype as PyTorch gives them; the values too where they are not random."""
    ours = eval(f"gradtape.{call.replace('torch.', 'gradtape.')}")
    theirs = eval(f"torch.{call}")
    _same(ours, theirs)
    if not call.startswith(("rand", "empty")):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    if call.startswith("randint"):
        lo, hi = (0, 10) if call.startswith("randint(10") else (2, 10)
        assert ours.numpy().min() >= lo and ours.numpy().max() < hi
    if call.startswith("rand("):
        assert 0.0 <= ours.numpy().min() and ours.numpy().max() < 1.0


def test_like_functions_keep_shape_dtype_and_device() -> None:
    dev = Cpu(seed=2)
    x = dev.randn((3, 2), np.float64)
    for f in (gradtape.zeros_like, gradtape.ones_like, gradtape.empty_like, gradtape.randn_like, gradtape.rand_like):
        y = f(x)
        assert y.shape == (3, 2) and y.dtype == np.float64 and y.device is dev, f.__name__
    np.testing.assert_array_equal(gradtape.full_like(x, 2.0).numpy(), np.full((3, 2), 2.0))
    assert gradtape.zeros_like(x, dtype=gradtape.float32).dtype == np.float32
    # randn_like draws from x's device generator, as Cpu.randn_like does
    a = gradtape.randn_like(Cpu(seed=9).zeros((4,)))
    b = Cpu(seed=9).randn((4,))
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_requires_grad_factories_are_leaves_that_get_grad() -> None:
    w = gradtape.zeros(3, requires_grad=True)
    x = gradtape.randn(3, requires_grad=True)
    (w * x + x).sum().backward()
    assert w.grad is not None and x.grad is not None
    np.testing.assert_allclose(w.grad.numpy(), x.numpy())
    np.testing.assert_allclose(x.grad.numpy(), w.numpy() + 1.0)


def test_dtype_names_are_pytorchs() -> None:
    pairs = {
        "float32": "float32",
        "float": "float32",
        "float64": "float64",
        "double": "float64",
        "int64": "int64",
        "long": "int64",
        "int32": "int32",
        "int": "int32",
        "int16": "int16",
        "short": "int16",
        "int8": "int8",
        "uint8": "uint8",
        "bool": "bool",
    }
    for name, np_name in pairs.items():
        assert getattr(gradtape, name) == np.dtype(np_name), name
        assert str(getattr(torch, name)).removeprefix("torch.") == np_name, name
    # a star import does not shadow Python's float, int, bool
    assert not {"float", "int", "bool"} & set(gradtape.__all__)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        ("zeros(2, -1)", TypeError, r"zeros: size must be non-negative ints"),
        ("zeros(2.0)", TypeError, r"zeros: size must be non-negative ints"),
        ("randn(2, dtype=gradtape.int64)", DTypeError, r"randn"),
        ("ones(2, dtype=gradtape.long, requires_grad=True)", DTypeError, r"ones: requires_grad=True needs a float"),
        ("zeros(2, device='mps')", ValueError, r"zeros: unknown device 'mps'"),
        ("zeros(2, device=gradtape.Cpu(), dev=gradtape.Cpu())", TypeError, r"zeros: pass dev= or device=, not both"),
        ("randint(1, 2, 3, 4)", TypeError, r"randint: expected \(high, size\) or \(low, high, size\)"),
        ("randint(5, 2, (3,))", ValueError, r"randint"),
        ("linspace(0, 1, -2)", TypeError, r"linspace: steps must be a non-negative int"),
        ("eye(-1)", TypeError, r"eye: n must be a non-negative int"),
        ("zeros_like(np.zeros(3))", TypeError, r"zeros_like: expected a Tensor"),
    ],
)
def test_bad_input_is_refused_naming_the_function(call: str, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        eval(f"gradtape.{call}")


def test_devices_given_explicitly_are_used() -> None:
    dev = Cpu(seed=5)
    assert gradtape.zeros(2, dev=dev).device is dev
    assert gradtape.zeros(2, device=dev).device is dev
    assert gradtape.zeros(2, device="cpu").device is gradtape.get_default_device()
    np.testing.assert_array_equal(gradtape.randn(3, dev=Cpu(seed=5)).numpy(), dev.randn((3,)).numpy())
