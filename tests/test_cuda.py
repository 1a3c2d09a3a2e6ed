"""Issue 31: the ``Cuda`` device, tested on a real GPU.

Every test here needs CuPy, numba-cuda and an NVIDIA GPU and is skipped without them (CI has
none; the numba-cuda kernels themselves are tested on the CPU under numba-cuda's simulator in
tests/test_cuda_kernels.py). On a GPU machine: ``python -m pytest tests/test_cuda.py``.

What runs here, as a PyTorch user writes it:
- every row of tests/test_torch_namespace.py (``torch.<op>`` and ``F.<fn>`` spelled
  ``gradtape``) with its tensors made with ``device="cuda"``: values and the gradients of
  every input against PyTorch float64 (on the GPU where PyTorch has CUDA);
- a model trained with ``model.to("cuda")``, SGD with momentum and Adam: losses and parameters
  against the same model trained on the ``Cpu`` device from the same weights;
- ``.to``/``.cuda()``/``.cpu()`` moves, differentiable both ways, and the errors a user meets.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

if os.environ.get("GRADTAPE_FAKE_CUPY") == "1":  # CI: CuPy's CPU stand-in, numba-cuda's simulator
    import fakecupy

    fakecupy.install()

import gradtape
from gradtape.devices.cuda import cuda_available

if not cuda_available():
    pytest.skip("needs CuPy, numba-cuda and an NVIDIA GPU (pip install 'gradtape[cuda]')", allow_module_level=True)

import test_torch_namespace as tn

from gradtape import nn, optim

torch: Any = pytest.importorskip("torch")
TORCH_DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


NOT_YET_ON_THE_GPU: frozenset[str] = frozenset(
    e for name in ("inverse", "det", "logdet", "slogdet", "cholesky", "pinverse", "matrix_power") for e in tn.TOP[name]
)
"""Rows whose op still calls a CPU-only path (a numba CPU kernel, a host allocation) on a GPU
tensor: such a row fails loudly (CuPy refuses the host array, numba refuses the GPU array,
gradtape.linalg raises DeviceError: its forwards are numpy's LAPACK), never with a wrong
number, and is listed here as a strict xfail, so a row that starts to pass must leave the
list. Every other row runs on the GPU (the LSTM/GRU and the Mamba scan, which have no row
here, do not)."""


def _rows(calls: dict[str, list[str]]) -> list[Any]:
    return [
        pytest.param(e, marks=pytest.mark.xfail(strict=True, reason="not on the GPU yet", raises=Exception))
        if e in NOT_YET_ON_THE_GPU
        else e
        for es in calls.values()
        for e in es
    ]


@pytest.mark.parametrize("expr", _rows(tn.TOP))
def test_torch_ops_on_the_gpu(expr: str) -> None:
    tn._compare(expr, device="cuda", torch_device=TORCH_DEVICE)


@pytest.mark.parametrize("expr", _rows(tn.FUNCTIONAL))
def test_torch_functional_on_the_gpu(expr: str) -> None:
    tn._compare(expr, device="cuda", torch_device=TORCH_DEVICE)


SIMULATED = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
"""On the CPU stand-in the numba-cuda kernels run in the simulator, a Python thread per GPU
thread: the models are kept small there."""
WIDTH, BATCH, STEPS = (8, 16, 4) if SIMULATED else (128, 256, 20)


def _mlp(seed: int, dtype: Any) -> nn.Sequential:
    gradtape.manual_seed(seed)
    w = WIDTH
    return nn.Sequential(nn.Linear(64, w), nn.ReLU(), nn.Linear(w, w), nn.Tanh(), nn.Linear(w, 10)).to(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("opt", ["sgd", "adam", "adamw"])
def test_training_on_the_gpu_matches_the_cpu(dtype: Any, opt: str) -> None:
    """The same model from the same weights, trained 20 steps on each device (4 in the
    simulator), PyTorch's loop."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, 64)).astype(dtype)
    y = rng.integers(0, 10, BATCH)
    results = []
    for device in ("cpu", "cuda"):
        model = _mlp(0, dtype).to(device)
        if opt == "sgd":
            o: Any = optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-4)
        elif opt == "adam":
            o = optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-4)
        else:
            o = optim.AdamW(model.parameters(), lr=1e-3, amsgrad=True)
        xs, ys = gradtape.tensor(x, device=device), gradtape.tensor(y, device=device)
        losses = []
        for _ in range(STEPS):
            o.zero_grad()
            loss = gradtape.nn.functional.cross_entropy(model(xs), ys)
            loss.backward()
            o.step()
            losses.append(loss.item())
        assert all(p.is_cuda == (device == "cuda") for p in model.parameters())
        results.append((losses, [p.cpu().numpy() for p in model.parameters()]))
    (cl, cp), (gl, gp) = results
    tol = 2e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(gl, cl, rtol=tol)
    for a, b in zip(gp, cp, strict=True):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_moves_are_differentiable_both_ways() -> None:
    x = gradtape.tensor([1.0, -2.0, 3.0], requires_grad=True)
    xg = x.cuda()
    assert xg.is_cuda and not x.is_cuda and xg.device == gradtape.devices.cuda.Cuda(0)
    y = (xg * xg).sum()
    y.backward()
    assert x.grad is not None and not x.grad.is_cuda
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, -4.0, 6.0])
    w = gradtape.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    (w.cpu() * 3.0).sum().backward()
    assert w.grad is not None and w.grad.is_cuda
    np.testing.assert_array_equal(w.grad.cpu().numpy(), [3.0, 3.0])
    assert w.to("cuda") is w and x.to("cpu") is x


def test_errors_a_user_meets() -> None:
    g = gradtape.tensor([1.0, 2.0], device="cuda")
    c = gradtape.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match=r"numpy: the tensor \(shape \(2,\)\) is on cuda:0; .*t\.cpu\(\)\.numpy\(\)"):
        g.numpy()
    with pytest.raises(TypeError, match="cuda:0"):
        np.asarray(g)
    with pytest.raises(gradtape.DeviceError, match=r"add: .*cuda:0.*cpu"):
        _ = g + c
    with pytest.raises(RuntimeError, match="no GPU 99"):
        gradtape.Cuda(99)
    assert "device='cuda:0'" in repr(g)
    assert g.sum().item() == 3.0


def test_readme_gpu_example_runs() -> None:
    """README's GPU example, as written (a GPU run; on the stand-in in CI)."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", readme, flags=re.S) if '.to("cuda")' in b)
    ns: dict[str, Any] = {"print": lambda *a: None}
    exec(compile(block, "README.md:gpu", "exec"), ns)
    assert all(p.is_cuda and p.grad is not None and p.grad.is_cuda for p in ns["model"].parameters())
    assert np.isfinite(ns["loss"].item())


def test_checkpoints_move_between_devices(tmp_path: Any) -> None:
    """A checkpoint saved from a GPU model loads onto the CPU and back (safetensors files and
    load_state_dict), values intact."""
    gpu = _mlp(3, np.float32).to("cuda")
    path = tmp_path / "gpu.safetensors"
    nn.save(gpu, path)
    cpu = _mlp(4, np.float32)
    nn.load(cpu, path)
    for a, b in zip(cpu.parameters(), gpu.parameters(), strict=True):
        assert not a.is_cuda and b.is_cuda
        np.testing.assert_array_equal(a.numpy(), b.cpu().numpy())
    again = _mlp(5, np.float32).to("cuda")
    nn.load(again, path)
    other = _mlp(6, np.float32).to("cuda")
    other.load_state_dict(cpu.state_dict())
    for a, b, c in zip(again.parameters(), other.parameters(), cpu.parameters(), strict=True):
        assert a.is_cuda and b.is_cuda
        np.testing.assert_array_equal(a.cpu().numpy(), c.numpy())
        np.testing.assert_array_equal(b.cpu().numpy(), c.numpy())
    cpu.load_state_dict(gpu.state_dict())
    np.testing.assert_array_equal(cpu.parameters()[0].numpy(), gpu.parameters()[0].cpu().numpy())


@pytest.mark.parametrize(
    "expr",
    [
        "g + c",
        "g @ c.T",
        "gradtape.maximum(g, c)",
        "g < c",
        "gradtape.cat([g, c])",
        "gradtape.stack([c, g])",
        "gradtape.where(c > 0, g, g)",
        "F.linear(g, c)",
        "F.mse_loss(g, c)",
        "F.binary_cross_entropy(g.sigmoid(), c)",
        "F.cross_entropy(g, gradtape.tensor([0, 1]))",
        "F.cosine_embedding_loss(g, c, gradtape.tensor([1.0, -1.0]))",
    ],
)
def test_ops_mixing_devices_name_both(expr: str) -> None:
    """Tensors on two devices in one op: DeviceError naming the op and both devices (PyTorch's
    RuntimeError, "Expected all tensors to be on the same device"), never CuPy's TypeError."""
    import gradtape.nn.functional as F

    g = gradtape.tensor(np.ones((2, 3), np.float32), device="cuda", requires_grad=True)
    c = gradtape.tensor(np.ones((2, 3), np.float32), requires_grad=True)
    op = expr.split("(")[0].split(".")[-1] if "(" in expr.split(" ")[0] else None
    with pytest.raises(
        gradtape.DeviceError, match=rf"{op or ''}.*: tensors on different devices: .*(cuda:0.*cpu|cpu.*cuda:0)"
    ):
        eval(expr, {"gradtape": gradtape, "F": F, "g": g, "c": c})


def test_deepcopy_and_pickle_keep_the_device() -> None:
    """copy.deepcopy(model) (an EMA or target network) and pickling keep GPU tensors on the GPU."""
    import copy
    import pickle

    model = _mlp(7, np.float32).to("cuda")
    twin = copy.deepcopy(model)
    for a, b in zip(model.parameters(), twin.parameters(), strict=True):
        assert b.is_cuda and a.id != b.id
        np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())
    t = gradtape.tensor([[1.0, 2.0]], device="cuda")
    back = pickle.loads(pickle.dumps(t))
    assert back.is_cuda and back.cpu().numpy().tolist() == [[1.0, 2.0]]


@pytest.mark.parametrize(
    ("kind", "kwargs"),
    [
        ("LSTM", {"num_layers": 2, "bidirectional": True}),
        ("GRU", {"num_layers": 2, "batch_first": True}),
        ("RNN", {"nonlinearity": "relu"}),
    ],
)
def test_recurrent_layers_on_the_gpu_match_pytorch(kind: str, kwargs: dict[str, Any]) -> None:
    """nn.LSTM/GRU/RNN moved to the GPU: outputs, final states and every parameter's gradient
    against PyTorch float64 from the same weights (the GPU runs the recurrence as recorded ops)."""
    gradtape.manual_seed(11)
    g_layer = getattr(nn, kind)(3, 4, **kwargs).to(np.float64).to("cuda")
    t_layer = getattr(torch.nn, kind)(3, 4, **kwargs).double()
    t_layer.load_state_dict({k: torch.from_numpy(v.cpu().numpy().copy()) for k, v in g_layer.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 2, 3))
    if kwargs.get("batch_first"):
        x = x.transpose(1, 0, 2).copy()
    gx = gradtape.tensor(x, device="cuda", requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    g_out, g_state = g_layer(gx)
    t_out, t_state = t_layer(tx)
    g_h = g_state[0] if kind == "LSTM" else g_state
    t_h = t_state[0] if kind == "LSTM" else t_state
    assert g_out.is_cuda and g_h.is_cuda
    np.testing.assert_allclose(g_out.cpu().numpy(), t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(g_h.cpu().numpy(), t_h.detach().numpy(), rtol=1e-10, atol=1e-12)
    (g_out.sum() + g_h.sum()).backward()
    (t_out.sum() + t_h.sum()).backward()
    assert gx.grad is not None and gx.grad.is_cuda
    np.testing.assert_allclose(gx.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)
    for (name, p), tp in zip(g_layer.named_parameters(), t_layer.parameters(), strict=True):
        assert p.grad is not None and p.grad.is_cuda, name
        np.testing.assert_allclose(p.grad.cpu().numpy(), tp.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("gated", [False, True])
def test_selective_scan_on_the_gpu_matches_pytorch(gated: bool) -> None:
    """Mamba's selective scan on the GPU (recorded ops): output and every input's gradient
    against PyTorch float64's sequential recurrence."""
    import test_ops_scan as ts

    from gradtape import ops

    arrays: list[Any] = ts._inputs(2, 6, 3, 2)
    if not gated:
        arrays[6] = None
    w = np.random.default_rng(3).standard_normal((2, 6, 3))
    want_y, want_g = ts._reference(arrays, w)
    leaves: list[Any] = [None if a is None else gradtape.tensor(a, device="cuda", requires_grad=True) for a in arrays]
    y = ops.selective_scan(*leaves)
    assert y.is_cuda
    (y * gradtape.tensor(w, device="cuda")).sum().backward()
    np.testing.assert_allclose(y.cpu().numpy(), want_y, rtol=1e-10, atol=1e-12)
    for leaf, want in zip(leaves, want_g, strict=True):
        if leaf is not None and want is not None:
            assert leaf.grad is not None and leaf.grad.is_cuda
            np.testing.assert_allclose(leaf.grad.cpu().numpy(), want, rtol=1e-9, atol=1e-11)


INDEX_KEYS: dict[str, Any] = {
    "bool mask": lambda x, dev: x > 0,
    "int tensors": lambda x, dev: (
        gradtape.tensor(np.array([0, 2, 2]), device=dev),
        gradtape.tensor(np.array([1, 3, 3]), device=dev),
    ),
    "row picks (logits[arange(B), targets])": lambda x, dev: (
        gradtape.arange(3, device=dev),
        gradtape.tensor(np.array([3, 0, 3]), device=dev),
    ),
    "slice and int tensor": lambda x, dev: (slice(1, None), gradtape.tensor(np.array([0, 0, 2]), device=dev)),
    "list": lambda x, dev: [2, 0, 2],
    "mask over rows": lambda x, dev: gradtape.tensor(np.array([True, False, True]), device=dev),
}


@pytest.mark.parametrize("key", list(INDEX_KEYS))
def test_advanced_indexing_on_the_gpu_gets_its_gradient(key: str) -> None:
    """``x[mask]`` and ``x[idx_tensor, ...]`` on the GPU used to take the basic-index path
    (the key's GPU arrays were not recognized as index arrays), whose backward added into a
    copy: the right values with a silently zero gradient. Values and gradients (repeated
    picks accumulating) against the CPU's."""
    a = np.random.default_rng(3).standard_normal((3, 4))
    got = []
    for dev in ("cpu", "cuda"):
        x = gradtape.tensor(a, device=dev, requires_grad=True)
        y = x[INDEX_KEYS[key](x, dev)]
        w = gradtape.tensor(np.linspace(0.5, 1.5, y.numel()).reshape(y.shape), device=dev)
        (y * w).sum().backward()
        assert x.grad is not None
        got.append((y.cpu().numpy(), x.grad.cpu().numpy()))
    (cy, cg), (gy, gg) = got
    np.testing.assert_allclose(gy, cy, rtol=1e-12)
    np.testing.assert_allclose(gg, cg, rtol=1e-12)
    assert np.abs(gg).sum() > 0


def test_a_write_into_a_saved_gpu_array_is_refused_at_backward() -> None:
    """An optimizer step (or a tensor's in-place write) between the forward and backward
    rewrites an array the forward saved: backward refuses (PyTorch's version-counter error).
    The check looked for numpy arrays only, so on the GPU the gradient was silently computed
    from the new values."""
    for dev in ("cpu", "cuda"):
        w = gradtape.tensor(np.array([1.0, 2.0, 3.0]), device=dev, requires_grad=True)
        x = gradtape.tensor(np.array([4.0, 5.0, 6.0]), device=dev, requires_grad=True)
        y = (w * x).sum()
        w.grad = gradtape.ones(3, device=dev, dtype=gradtape.float64)
        optim.SGD([w], lr=0.1).step()
        with pytest.raises(gradtape.TapeError, match="written in place"):
            y.backward()
        z = (x * x).sum()
        with gradtape.no_grad():
            x.fill_(1.0)
        with pytest.raises(gradtape.TapeError, match="written in place"):
            z.backward()


def test_optimizer_state_dict_on_the_gpu_is_a_snapshot_and_loads_on_either_device() -> None:
    """Adam's state on the GPU: ``state_dict()`` copies the arrays (it held the live buffers,
    which later steps changed in place); ``load_state_dict`` restores it onto GPU or CPU
    parameters, and a resumed run continues as the uninterrupted one."""

    def run(dev: str, steps: int, opt_state: Any = None) -> tuple[Any, Any, np.ndarray[Any, Any]]:
        w = gradtape.tensor(np.array([1.0, -2.0, 3.0]), device=dev, requires_grad=True)
        opt = optim.Adam([w], lr=0.1)
        if opt_state is not None:
            w.data[...] = opt_state[1]
            opt.load_state_dict(opt_state[0])
        for _ in range(steps):
            opt.zero_grad()
            (w * w * w).sum().backward()
            opt.step()
        return opt, w, w.cpu().numpy()

    opt, w, _ = run("cuda", 2)
    saved = opt.state_dict()
    snapshot = {k: (v.get() if hasattr(v, "get") else v) for k, v in saved["state"][0].items()}
    weights = w.data.copy()
    opt.zero_grad()
    (w * w * w).sum().backward()
    opt.step()
    for k, v in saved["state"][0].items():
        np.testing.assert_array_equal(np.asarray(v.get() if hasattr(v, "get") else v), np.asarray(snapshot[k]))
    _, _, straight = run("cuda", 5)
    for dev in ("cuda", "cpu"):
        _, _, resumed = run(dev, 3, (saved, weights if dev == "cuda" else weights.get()))
        np.testing.assert_allclose(resumed, straight, rtol=1e-12)


def test_save_on_the_gpu_and_load_anywhere(tmp_path: Any) -> None:
    """``gradtape.save`` of GPU tensors writes host arrays: ``load`` puts them back on the GPU,
    or on the CPU with ``map_location="cpu"`` (the checkpoint of a GPU run read on a laptop)."""
    w = gradtape.tensor(np.arange(6.0).reshape(2, 3), device="cuda", requires_grad=True)
    path = tmp_path / "gpu.pt"
    gradtape.save({"w": w, "step": 7}, path)
    on_gpu = gradtape.load(path)
    on_cpu = gradtape.load(path, map_location="cpu")
    assert on_gpu["w"].is_cuda and not on_cpu["w"].is_cuda and on_cpu["step"] == 7
    assert on_gpu["w"].requires_grad and on_cpu["w"].requires_grad
    np.testing.assert_array_equal(on_cpu["w"].detach().numpy(), np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(on_gpu["w"].detach().cpu().numpy(), np.arange(6.0).reshape(2, 3))


@pytest.mark.parametrize("name", sorted(__import__("test_layer_devices").LAYERS))
def test_layers_built_on_the_gpu(name: str) -> None:
    """PyTorch's ``nn.Linear(..., device="cuda")`` (and gradtape's ``dev=Cuda()``): every
    parameter and buffer on the GPU, drawn from the GPU's generator as PyTorch draws CUDA
    layers' weights; the layer's state loads onto a CPU twin."""
    import test_layer_devices as tl

    make = tl.LAYERS[name]
    for kw in ({"device": "cuda"}, {"device": "cuda:0"}, {"dev": gradtape.Cuda()}):
        layer = make(**kw)
        tensors = list(layer.state_dict().values())
        assert tensors and all(t.is_cuda for t in tensors), name
    twin = make()
    twin.load_state_dict(layer.state_dict())
    for a, b in zip(twin.state_dict().values(), layer.state_dict().values(), strict=True):
        np.testing.assert_array_equal(a.numpy(), b.cpu().numpy())


def test_a_model_built_on_the_gpu_trains_as_one_moved_there() -> None:
    """``nn.Linear(..., device="cuda")`` layers train as the same weights moved with
    ``.to("cuda")`` (PyTorch's two spellings of a GPU model)."""
    built = nn.Sequential(nn.Linear(6, WIDTH, device="cuda"), nn.Tanh(), nn.Linear(WIDTH, 3, device="cuda"))
    moved = nn.Sequential(nn.Linear(6, WIDTH), nn.Tanh(), nn.Linear(WIDTH, 3))
    moved.load_state_dict({k: v.cpu() for k, v in built.state_dict().items()})
    moved = moved.to("cuda")
    x = gradtape.randn(BATCH, 6, device="cuda")
    y = gradtape.tensor(np.arange(BATCH) % 3, device="cuda")
    for model in (built, moved):
        opt = optim.SGD(model.parameters(), lr=0.1)
        for _ in range(STEPS):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
    for a, b in zip(built.parameters(), moved.parameters(), strict=True):
        np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())


def test_nn_init_fills_gpu_tensors_in_place() -> None:
    """PyTorch's ``model.apply(init_weights)`` on a model already on the GPU: every ``nn.init``
    fill writes into the GPU arrays, with the values the same calls give a CPU model from the
    same seed (the draws come from the default device's generator)."""
    from gradtape.nn import init

    def init_weights(m: Any) -> None:
        if isinstance(m, nn.Linear) and m.bias is not None:
            init.xavier_uniform_(m.weight)
            init.zeros_(m.bias)
        elif isinstance(m, nn.Conv2d) and m.bias is not None:
            init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            init.trunc_normal_(m.bias, std=0.02)
        elif isinstance(m, nn.Embedding):
            init.orthogonal_(m.weight)
        elif isinstance(m, nn.LayerNorm) and m.weight is not None and m.bias is not None:
            init.normal_(m.weight, 1.0, 0.1)
            init.constant_(m.bias, 0.5)

    def build() -> nn.Sequential:
        return nn.Sequential(nn.Embedding(6, 4), nn.Linear(4, 4), nn.LayerNorm(4), nn.Conv2d(1, 2, 3))

    states = []
    for device in ("cpu", "cuda"):
        model = build().to(device)
        gradtape.manual_seed(3)
        model.apply(init_weights)
        assert all(p.is_cuda == (device == "cuda") for p in model.parameters())
        states.append([p.cpu().numpy() for p in model.parameters()])
    for a, b in zip(*states, strict=True):
        np.testing.assert_array_equal(a, b)
    w = gradtape.zeros(3, 3, device="cuda")
    init.eye_(w)
    np.testing.assert_array_equal(w.cpu().numpy(), np.eye(3))


def test_tensor_hooks_fire_on_gpu_gradients() -> None:
    """PyTorch's ``register_hook`` on a GPU tensor (gradient scaling, logging): the hook sees
    the GPU gradient and its return value replaces it, as on the CPU."""
    seen: list[Any] = []
    x = gradtape.tensor([1.0, -2.0, 3.0], device="cuda", requires_grad=True)
    h = x * x

    def halve(g: Any) -> Any:
        seen.append(g.cpu().numpy())
        return g * 0.5

    h.register_hook(halve)
    x.register_hook(lambda g: g + 1.0)
    h.sum().backward()
    assert x.grad is not None and x.grad.is_cuda
    np.testing.assert_array_equal(seen[0], [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [2.0, -1.0, 4.0])


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_packed_sequences_on_the_gpu_match_the_cpu(kind: str) -> None:
    """``pack_padded_sequence`` -> ``nn.LSTM``/``GRU`` -> ``pad_packed_sequence`` on the GPU:
    outputs, final states and gradients as the same program on the CPU."""
    from gradtape.nn.utils import rnn as rnn_utils

    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 5, 2))
    lengths = [2, 5, 3]
    results = []
    for device in ("cpu", "cuda"):
        gradtape.manual_seed(1)
        layer = getattr(nn, kind)(2, 3, num_layers=2, bidirectional=True, batch_first=True, dtype=np.float64)
        layer = layer.to(device)
        xs = gradtape.tensor(x, device=device, requires_grad=True)
        packed = rnn_utils.pack_padded_sequence(xs, lengths, batch_first=True, enforce_sorted=False)
        out, state = layer(packed)
        h_n = state[0] if kind == "LSTM" else state
        padded, lens = rnn_utils.pad_packed_sequence(out, batch_first=True)
        (padded.sum() + (h_n * h_n).sum()).backward()
        assert padded.is_cuda == (device == "cuda") and not lens.is_cuda
        assert xs.grad is not None
        results.append([padded.cpu().numpy(), h_n.cpu().numpy(), xs.grad.cpu().numpy()])
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)


def test_scatter_adds_on_the_gpu_are_the_cpus_bit_for_bit() -> None:
    """Repeated indices (an embedding's backward, a gather's, advanced indexing's) sum on the
    GPU in numpy's order, one pick after another, so float32 gradients have the CPU's bits on
    every run (CuPy's add.at adds atomically, in any order: the stand-in's add.at adds in a
    new random order at each call, so this fails on the CPU too where the GPU path uses it).
    Keys of every kind: one index array, a 2-D one, a tuple with a slice, a non-contiguous
    target."""
    from gradtape.devices.kernels import cuda as kc

    cp = __import__("cupy")
    rng = np.random.default_rng(0)
    values = rng.standard_normal((300, 4)).astype(np.float32) * np.float32(1e3)
    emb = {d: nn.Embedding(7, 4).to(d) for d in ("cpu", "cuda")}
    emb["cuda"].load_state_dict({k: v for k, v in emb["cpu"].state_dict().items()})
    tokens = rng.integers(0, 7, (50, 6))
    grads = []
    for d, layer in emb.items():
        (
            layer(gradtape.tensor(tokens, device=d)) * gradtape.tensor(values[:50, None, :].repeat(6, 1), device=d)
        ).sum().backward()
        assert layer.weight.grad is not None
        grads.append(layer.weight.grad.cpu().numpy())
    np.testing.assert_array_equal(grads[1], grads[0])
    cases: list[tuple[Any, Any, Any]] = [
        (np.zeros((7, 4), np.float32), rng.integers(0, 7, 300), values),
        (rng.standard_normal((5, 4)).astype(np.float32), rng.integers(0, 5, (30, 10)), values.reshape(30, 10, 4)),
        (np.zeros((4, 9), np.float32), (slice(None), rng.integers(0, 9, 300)), values.T),
        (np.zeros((9, 6), np.float32)[:, ::2], rng.integers(0, 9, 300), values[:, :3]),
    ]
    for target, key, vals in cases:
        want = target.copy()
        np.add.at(want, key, vals)
        got = (
            cp.asarray(target.copy()) if target.flags.c_contiguous else cp.asarray(np.zeros((9, 6), np.float32))[:, ::2]
        )
        gkey = (
            tuple(k if isinstance(k, slice) else cp.asarray(k) for k in key)
            if isinstance(key, tuple)
            else cp.asarray(key)
        )
        kc.add_at(got, gkey, cp.asarray(vals))
        np.testing.assert_array_equal(cp.asnumpy(got), want)


def test_set_default_device_cuda_builds_a_pytorch_program_on_the_gpu() -> None:
    """PyTorch's ``torch.set_default_device("cuda")`` at the top of a program: layers, factories
    and datasets made without a device land on the GPU; ``manual_seed`` repeats their draws;
    ``"cpu"``, ``from_numpy`` and ``.cpu()`` stay on the CPU; the model trains as the same
    weights on the CPU; ``set_default_device("cpu")`` comes back to the CPU device of before."""
    from gradtape.data import DataLoader, TensorDataset

    before = gradtape.get_default_device()
    gradtape.set_default_device("cuda")
    try:
        assert gradtape.get_default_device() is gradtape.devices.default.as_device("test", "cuda")
        gradtape.manual_seed(4)
        model = nn.Sequential(nn.Linear(6, WIDTH), nn.Tanh(), nn.Linear(WIDTH, 3))
        assert all(p.is_cuda for p in model.parameters())
        x = gradtape.randn(BATCH, 6)
        gradtape.manual_seed(4)
        again = nn.Sequential(nn.Linear(6, WIDTH), nn.Tanh(), nn.Linear(WIDTH, 3))
        for a, b in zip(model.parameters(), again.parameters(), strict=True):
            np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())
        y = gradtape.tensor(np.arange(BATCH) % 3)
        assert x.is_cuda and y.is_cuda
        assert not gradtape.zeros(2, device="cpu").is_cuda
        assert not gradtape.from_numpy(np.ones(2, np.float32)).is_cuda
        assert gradtape.zeros(2, device="cpu").device is before
        loader = DataLoader(TensorDataset(x.cpu().numpy(), y.cpu().numpy()), batch_size=BATCH)
        xb, yb = next(iter(loader))
        assert xb.is_cuda and yb.is_cuda
        on_cpu = nn.Sequential(nn.Linear(6, WIDTH, device="cpu"), nn.Tanh(), nn.Linear(WIDTH, 3, device="cpu"))
        on_cpu.load_state_dict({k: v.cpu() for k, v in model.state_dict().items()})
        for m, xs, ys in ((model, x, y), (on_cpu, x.cpu(), y.cpu())):
            opt = optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
            for _ in range(STEPS):
                opt.zero_grad()
                nn.functional.cross_entropy(m(xs), ys).backward()
                opt.step()
        for a, b in zip(model.parameters(), on_cpu.parameters(), strict=True):
            np.testing.assert_allclose(a.cpu().numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    finally:
        gradtape.set_default_device("cpu")
    assert gradtape.get_default_device() is before
