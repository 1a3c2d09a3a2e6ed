"""PyTorch's ``device=`` on every layer with parameters (issue 31: "building a layer on the GPU").

PyTorch layers take ``device=`` and ``dtype=`` keywords, and PyTorch code passes them through
(``factory_kwargs = {"device": device, "dtype": dtype}`` in Mamba's and Hugging Face's
layers). gradtape's layers take them too, beside gradtape's ``dev=``: a device object,
``"cpu"``, ``"cuda"``/``"cuda:N"`` or a ``gradtape.device``, resolved in one helper
(``gradtape.devices.default.pick_device``), whose errors name the layer. The GPU side
(``device="cuda"``) is in tests/test_cuda.py, which reuses :data:`LAYERS`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import gradtape
from gradtape import nn

LAYERS: dict[str, Callable[..., nn.Module]] = {
    "Linear": lambda **kw: nn.Linear(4, 3, **kw),
    "Bilinear": lambda **kw: nn.Bilinear(4, 5, 3, **kw),
    "Embedding": lambda **kw: nn.Embedding(10, 4, **kw),
    "EmbeddingBag": lambda **kw: nn.EmbeddingBag(10, 4, mode="sum", padding_idx=0, **kw),
    "Conv1d": lambda **kw: nn.Conv1d(2, 3, 3, **kw),
    "Conv2d": lambda **kw: nn.Conv2d(2, 3, 3, **kw),
    "ConvTranspose1d": lambda **kw: nn.ConvTranspose1d(2, 3, 3, **kw),
    "ConvTranspose2d": lambda **kw: nn.ConvTranspose2d(2, 3, 3, **kw),
    "Conv3d": lambda **kw: nn.Conv3d(2, 3, 3, **kw),
    "ConvTranspose3d": lambda **kw: nn.ConvTranspose3d(2, 3, 3, **kw),
    "LayerNorm": lambda **kw: nn.LayerNorm(4, **kw),
    "RMSNorm": lambda **kw: nn.RMSNorm(4, **kw),
    "GroupNorm": lambda **kw: nn.GroupNorm(2, 4, **kw),
    "BatchNorm1d": lambda **kw: nn.BatchNorm1d(4, **kw),
    "BatchNorm2d": lambda **kw: nn.BatchNorm2d(4, **kw),
    "BatchNorm3d": lambda **kw: nn.BatchNorm3d(4, **kw),
    "InstanceNorm1d": lambda **kw: nn.InstanceNorm1d(4, affine=True, track_running_stats=True, **kw),
    "InstanceNorm2d": lambda **kw: nn.InstanceNorm2d(4, affine=True, **kw),
    "InstanceNorm3d": lambda **kw: nn.InstanceNorm3d(4, affine=True, **kw),
    "PReLU": lambda **kw: nn.PReLU(4, **kw),
    "RNN": lambda **kw: nn.RNN(4, 3, **kw),
    "LSTM": lambda **kw: nn.LSTM(4, 3, num_layers=2, bidirectional=True, **kw),
    "GRU": lambda **kw: nn.GRU(4, 3, **kw),
    "RNNCell": lambda **kw: nn.RNNCell(4, 3, **kw),
    "LSTMCell": lambda **kw: nn.LSTMCell(4, 3, **kw),
    "GRUCell": lambda **kw: nn.GRUCell(4, 3, **kw),
    "MultiheadAttention": lambda **kw: nn.MultiheadAttention(8, 2, **kw),
    "MultiHeadAttention": lambda **kw: nn.MultiHeadAttention(8, 2, **kw),
    "TransformerEncoderLayer": lambda **kw: nn.TransformerEncoderLayer(8, 2, 16, **kw),
    "TransformerDecoderLayer": lambda **kw: nn.TransformerDecoderLayer(8, 2, 16, **kw),
    "Transformer": lambda **kw: nn.Transformer(8, 2, 1, 1, 16, **kw),
    "Mamba": lambda **kw: nn.Mamba(8, **kw),
    "MambaBlock": lambda **kw: nn.MambaBlock(8, **kw),
}
"""Every gradtape layer whose constructor takes a device, built small, by name."""


def _state(m: nn.Module) -> list[tuple[str, Any]]:
    return [(k, v.numpy()) for k, v in m.state_dict().items()]


def test_every_layer_with_parameters_is_listed() -> None:
    """A new layer with a ``dev=`` keyword must join :data:`LAYERS` (and so the GPU test)."""
    import inspect

    found = {
        name
        for name in dir(nn)
        if inspect.isclass(obj := getattr(nn, name))
        and issubclass(obj, nn.Module)
        and "dev" in inspect.signature(obj.__init__).parameters
    }
    assert found == set(LAYERS)


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_device_cpu_builds_the_layer_dev_would(name: str) -> None:
    """``device="cpu"``, ``device=gradtape.device("cpu")`` and no device draw from the default
    device's generator; ``device=Cpu(seed=...)`` is ``dev=Cpu(seed=...)``: the same
    parameters, bit for bit, in each case, on the CPU."""
    make = LAYERS[name]
    states = []
    for kw in ({}, {"device": "cpu"}, {"device": gradtape.device("cpu")}, {"device": None}):
        gradtape.manual_seed(7)
        states.append(_state(make(**kw)))
    for other in states[1:]:
        assert [k for k, _ in other] == [k for k, _ in states[0]]
        for (_, a), (_, b) in zip(other, states[0], strict=True):
            np.testing.assert_array_equal(a, b)
    by_dev, by_device = make(dev=gradtape.Cpu(seed=3)), make(device=gradtape.Cpu(seed=3))
    for (_, a), (_, b) in zip(_state(by_dev), _state(by_device), strict=True):
        np.testing.assert_array_equal(a, b)
    assert all(not p.is_cuda for p in by_device.parameters())


@pytest.mark.parametrize("name", ["Linear", "LayerNorm", "LSTM", "TransformerEncoderLayer", "BatchNorm2d"])
def test_bad_devices_name_the_layer(name: str) -> None:
    make = LAYERS[name]
    with pytest.raises(ValueError, match=rf"{name}: unknown device 'tpu'"):
        make(device="tpu")
    with pytest.raises(TypeError, match=rf"{name}: pass dev= or device=, not both"):
        make(dev=gradtape.Cpu(), device="cpu")
    with pytest.raises(TypeError, match=rf"{name}: device must be a Cpu, a Cuda, 'cpu' or 'cuda', got int"):
        make(device=3)


def test_pytorch_factory_kwargs_pass_through() -> None:
    """Mamba's reference layer (``mamba_simple.py``) as PyTorch code writes it: the device and
    dtype handed to every sub-layer as ``**factory_kwargs``; the model runs in float64."""

    class Block(nn.Module):
        def __init__(self, d_model: int, device: Any = None, dtype: Any = None) -> None:
            super().__init__()
            factory_kwargs = {"device": device, "dtype": dtype}
            self.in_proj = nn.Linear(d_model, 2 * d_model, bias=False, **factory_kwargs)
            self.conv1d = nn.Conv1d(d_model, d_model, 3, groups=d_model, padding=2, **factory_kwargs)
            self.norm = nn.LayerNorm(d_model, **factory_kwargs)

        def forward(self, x: Any) -> Any:
            h = self.in_proj(self.norm(x))[..., : x.shape[-1]]
            return self.conv1d(h.transpose(1, 2))[..., : x.shape[1]].transpose(1, 2)

    block = Block(4, device="cpu", dtype=np.float64)
    x = gradtape.randn(2, 5, 4, dtype=np.float64, requires_grad=True)
    y = block(x)
    y.sum().backward()
    assert y.shape == (2, 5, 4) and y.dtype == np.float64
    assert x.grad is not None and all(p.grad is not None for p in block.parameters())


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_dtype_none_is_pytorchs_default_float32(name: str) -> None:
    """PyTorch code passes ``dtype=None`` through (``factory_kwargs``): the parameters are
    float32, PyTorch's default dtype, as with no dtype at all (numpy alone reads ``None`` as
    float64, which made such a port silently train in float64)."""
    layer = LAYERS[name](device=None, dtype=None)
    floats = [t for t in layer.state_dict().values() if t.dtype.kind == "f"]
    assert floats and all(t.dtype == np.float32 for t in floats), name
