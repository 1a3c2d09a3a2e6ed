"""float32 ``nn.LSTM`` and ``nn.GRU`` on oneDNN's ``vanilla_lstm``/``lbr_gru`` primitives
(``gradtape.devices.kernels.onednn.Rnn``), written as the PyTorch user's program: the same layer
in torch (float64) and gradtape (float32, identical weights), ``output``, ``h_n``, ``c_n``, every
parameter's ``.grad`` and the input's and initial states' gradients compared, over 1 and 2
layers, bidirectional, ``bias=False``, ``batch_first``, ``T = 1``, ``hx`` given or omitted;
dropout between layers against gradtape's own numba path with the same masks; inference under
``no_grad``; second-order gradients; and which path runs: oneDNN above the size bound, numba
for float64, the Elman RNN, small layers, ``GRADTAPE_ONEDNN=0`` and a forked child."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
from collections import OrderedDict
from typing import Any

import numpy as np
import pytest

import gradtape as gt
from gradtape import Cpu, Tensor, nn
from gradtape.autograd import grad
from gradtape.devices.kernels import onednn
from gradtape.devices.kernels import rnn as _kr

torch: Any = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not onednn.available(), reason=onednn.info())

Array = np.ndarray[Any, Any]
Plans = OrderedDict[tuple[Any, ...], Any]


@pytest.fixture
def plans(monkeypatch: pytest.MonkeyPatch) -> Plans:
    """oneDNN for every float32 LSTM and GRU whatever its size, and an empty plan cache to look
    into: its keys are ``(cell, T, N, I, H, directions, training)``, one per layer shape run."""
    fresh: Plans = OrderedDict()
    monkeypatch.setattr(onednn, "_RNN_PLANS", fresh)
    monkeypatch.setattr(_kr, "ONEDNN_MIN_MACS", 0)
    monkeypatch.setattr(_kr, "ONEDNN_MIN_MACS_GRU", 0)
    return fresh


def _numba_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_kr, "ONEDNN_MIN_MACS", 1 << 62)
    monkeypatch.setattr(_kr, "ONEDNN_MIN_MACS_GRU", 1 << 62)


def _pair(i: int, h: int, kind: str = "LSTM", **kw: Any) -> tuple[Any, Any]:
    """A float32 gradtape ``nn.LSTM`` (or ``GRU``) and a float64 torch one holding the same
    numbers."""
    ours = getattr(nn, kind)(i, h, dev=Cpu(seed=7), **kw)
    ref = getattr(torch.nn, kind)(i, h, dtype=torch.float64, **kw)
    mine = dict(ours.named_parameters())
    with torch.no_grad():
        for name, p in ref.named_parameters():
            assert mine[name].shape == tuple(p.shape), name
            p.copy_(torch.from_numpy(mine[name].numpy().astype(np.float64)))
    return ours, ref


def _close(got: Any, want: Any, what: str, tol: float = 2e-5) -> None:
    """float32 against float64: within ``tol`` of the largest magnitude (many roundings over
    the steps and the products' sums)."""
    want = want.detach().numpy() if hasattr(want, "detach") else np.asarray(want)
    got = got.numpy() if isinstance(got, Tensor) else np.asarray(got)
    assert got.dtype == np.float32 and got.shape == want.shape, (what, got.dtype, got.shape, want.shape)
    err = float(np.abs(got.astype(np.float64) - want).max()) / (float(np.abs(want).max()) or 1.0)
    assert err < tol, f"{what}: relative error {err:.2e}"


def _run_both(ours: Any, ref: Any, x: Array, hx: list[Array] | None, seed: int = 1) -> None:
    """Forward, a weighted sum of ``output``, ``h_n`` and (the LSTM's) ``c_n``, backward, in
    both; then every value and gradient compared. ``hx``: ``[h_0, c_0]`` (LSTM) or ``[h_0]``."""
    rng = np.random.default_rng(seed)
    lstm = isinstance(ref, torch.nn.LSTM)
    xt = torch.tensor(x.astype(np.float64), requires_grad=True)
    hts = None if hx is None else [torch.tensor(a.astype(np.float64), requires_grad=True) for a in hx]
    t_hx = None if hts is None else tuple(hts) if lstm else hts[0]
    t_out, t_state = ref(xt, t_hx)
    t_all = [t_out, *(t_state if lstm else [t_state])]
    ws = [rng.standard_normal(tuple(t.shape)) for t in t_all]
    sum((t * torch.tensor(w)).sum() for t, w in zip(t_all, ws, strict=True)).backward()
    dev = Cpu()
    xg = dev.tensor(x, requires_grad=True)
    hgs = None if hx is None else [dev.tensor(a, requires_grad=True) for a in hx]
    out, state = ours(xg, None if hgs is None else tuple(hgs) if lstm else hgs[0])
    g_all = [out, *(state if lstm else [state])]
    loss = sum(((t * dev.tensor(w.astype(np.float32))).sum() for t, w in zip(g_all, ws, strict=True)), start=0.0)
    assert isinstance(loss, Tensor)
    loss.backward()
    for got, want, what in zip(g_all, t_all, ("output", "h_n", "c_n"), strict=False):
        _close(got, want, what)
    assert xg.grad is not None
    _close(xg.grad, xt.grad, "input.grad")
    if hgs is not None and hts is not None:
        for hg, ht, what in zip(hgs, hts, ("h_0.grad", "c_0.grad"), strict=False):
            assert hg.grad is not None
            _close(hg.grad, ht.grad, what)
    theirs = dict(ref.named_parameters())
    for name, p in ours.named_parameters():
        assert p.grad is not None, f"{name}: no gradient"
        _close(p.grad, theirs[name].grad, f"{name}.grad")


# (num_layers, bidirectional, bias, batch_first, T, hx given)
CASES = [
    (1, False, True, False, 7, True),
    (1, False, True, False, 7, False),
    (2, False, True, False, 6, True),
    (2, True, True, False, 5, True),
    (1, True, True, False, 6, False),
    (2, False, False, True, 5, True),
    (2, True, False, True, 4, False),
    (2, True, True, False, 1, True),
    (1, False, True, True, 1, False),
    (3, True, True, False, 3, True),
]


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
@pytest.mark.parametrize(
    ("layers", "bidir", "bias", "batch_first", "steps", "with_hx"),
    CASES,
    ids=[f"L{c[0]}-bi{int(c[1])}-bias{int(c[2])}-bf{int(c[3])}-T{c[4]}-hx{int(c[5])}" for c in CASES],
)
def test_on_onednn_equals_torch_float64(
    plans: Plans, kind: str, layers: int, bidir: bool, bias: bool, batch_first: bool, steps: int, with_hx: bool
) -> None:
    """Every output and gradient of the oneDNN path equals PyTorch's float64 LSTM/GRU on the
    same float32 numbers; a training plan per layer shape ran (layer 0 reads ``I``, above ``D H``)."""
    ni, nh, nb = 5, 6, 3
    ours, ref = _pair(ni, nh, kind, num_layers=layers, bidirectional=bidir, bias=bias, batch_first=batch_first)
    rng = np.random.default_rng(layers * 10 + steps)
    x = rng.standard_normal((nb, steps, ni) if batch_first else (steps, nb, ni)).astype(np.float32)
    nd = 2 if bidir else 1
    states = 2 if kind == "LSTM" else 1
    hx = [rng.standard_normal((layers * nd, nb, nh)).astype(np.float32) for _ in range(states)] if with_hx else None
    _run_both(ours, ref, x, hx)
    cell = kind.lower()
    want = {(cell, steps, nb, ni, nh, nd, True)}
    want |= {(cell, steps, nb, nd * nh, nh, nd, True)} if layers > 1 else set()
    assert set(plans) == want
    assert all(p is not None for p in plans.values())


def test_unbatched_input(plans: Plans) -> None:
    """A 2-D ``(T, I)`` sequence runs as a batch of one."""
    ours, ref = _pair(4, 5, num_layers=2, bidirectional=True)
    x = np.random.default_rng(3).standard_normal((6, 4)).astype(np.float32)
    t_out, _ = ref(torch.tensor(x.astype(np.float64)))
    out, (h, c) = ours(Cpu().tensor(x))
    _close(out, t_out, "output")
    assert h.shape == (4, 5) and c.shape == (4, 5)
    assert plans


def _dropout_run(kind: str, layers: int, bidir: bool) -> list[Array]:
    """A training-mode LSTM/GRU with dropout 0.4 between layers, its input on a seeded device
    (the masks come from the input's device): output, h_n, (c_n) and every gradient."""
    ours = getattr(nn, kind)(4, 6, num_layers=layers, dropout=0.4, bidirectional=bidir, dev=Cpu(seed=2))
    dev = Cpu(seed=11)
    x = dev.tensor(np.random.default_rng(4).standard_normal((7, 3, 4)).astype(np.float32), requires_grad=True)
    out, state = ours(x)
    states = list(state) if kind == "LSTM" else [state]
    w = np.random.default_rng(5).standard_normal(out.shape).astype(np.float32)
    loss = (out * dev.tensor(w)).sum() + states[0].sum()
    if kind == "LSTM":
        loss = loss + (states[1] * states[1]).sum()
    loss.backward()
    assert x.grad is not None
    return [out.numpy(), *(s.numpy() for s in states), x.grad.numpy()] + [
        p.grad.numpy() for _, p in ours.named_parameters() if p.grad is not None
    ]


@pytest.mark.parametrize(("kind", "layers", "bidir"), [("LSTM", 2, False), ("LSTM", 3, True), ("GRU", 3, True)])
def test_dropout_between_layers_equals_the_numba_path(
    plans: Plans, monkeypatch: pytest.MonkeyPatch, kind: str, layers: int, bidir: bool
) -> None:
    """Dropout between layers (torch's masks differ from ours): the oneDNN path gives the numba
    path's values and gradients with the same masks (the same device seed)."""
    got = _dropout_run(kind, layers, bidir)
    assert plans
    _numba_only(monkeypatch)
    plans.clear()
    want = _dropout_run(kind, layers, bidir)
    assert not plans
    assert len(got) == len(want) == (4 if kind == "LSTM" else 3) + 4 * layers * (2 if bidir else 1)
    for k, (a, b) in enumerate(zip(got, want, strict=True)):
        scale = float(np.abs(b).max()) or 1.0
        assert float(np.abs(a - b).max()) / scale < 1e-5, k


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_no_grad_runs_an_inference_plan(plans: Plans, kind: str) -> None:
    """Under ``no_grad`` the forward is oneDNN's inference primitive (no workspace) and the
    values are torch's."""
    ours, ref = _pair(5, 6, kind, num_layers=2, bidirectional=True)
    x = np.random.default_rng(6).standard_normal((5, 2, 5)).astype(np.float32)
    with gt.no_grad():
        out, state = ours(Cpu().tensor(x, requires_grad=True))
    assert not out.requires_grad
    with torch.no_grad():
        t_out, t_state = ref(torch.tensor(x.astype(np.float64)))
    got_all, want_all = ((out, *state), (t_out, *t_state)) if kind == "LSTM" else ((out, state), (t_out, t_state))
    for got, want, what in zip(got_all, want_all, ("output", "h_n", "c_n"), strict=False):
        _close(got, want, what)
    cell = kind.lower()
    assert set(plans) == {(cell, 5, 2, 5, 6, 2, False), (cell, 5, 2, 12, 6, 2, False)}


def test_float64_elman_and_small_layers_stay_on_numba(monkeypatch: pytest.MonkeyPatch) -> None:
    """float64 (oneDNN has no float64 RNN on CPU), the Elman RNN and, at the default size bound,
    a small float32 LSTM run on the numba kernels; a float32 LSTM or GRU above the bound on
    oneDNN."""
    fresh: Plans = OrderedDict()
    monkeypatch.setattr(onednn, "_RNN_PLANS", fresh)
    x64 = Cpu().tensor(np.ones((8, 16, 64)))
    nn.LSTM(64, 64, dev=Cpu(seed=0), dtype=np.float64)(x64)[0].sum().backward()
    nn.GRU(64, 64, dev=Cpu(seed=0), dtype=np.float64)(x64)[0].sum().backward()
    x32 = Cpu().tensor(np.ones((8, 16, 64), np.float32))
    nn.RNN(64, 64, dev=Cpu(seed=0))(x32)[0].sum().backward()
    nn.LSTM(3, 4, dev=Cpu(seed=0))(Cpu().tensor(np.ones((5, 2, 3), np.float32)))[0].sum().backward()
    nn.GRU(64, 64, dev=Cpu(seed=0))(x32)[0].sum().backward()  # 8 * 16 * 192 * 128 = 3M multiply-adds
    assert not fresh
    nn.LSTM(64, 64, dev=Cpu(seed=0))(x32)[0].sum().backward()  # 8 * 16 * 256 * 128 = 4M
    nn.GRU(64, 64, dev=Cpu(seed=0))(Cpu().tensor(np.ones((16, 16, 64), np.float32)))[0].sum().backward()  # 6M
    assert list(fresh) == [("lstm", 8, 16, 64, 64, 1, True), ("gru", 16, 16, 64, 64, 1, True)]


def _penalty_grads(create: Any) -> list[Array]:
    """``d/dtheta |d(|out|^2)/dx|^2`` (a gradient penalty: gradients of gradients through the
    layer) and the input's, for a 2-layer bidirectional LSTM/GRU made by ``create``."""
    ours, x = create()
    (gx,) = grad((ours(x)[0] ** 2).sum(), [x], create_graph=True)
    assert gx is not None
    (gx**2).sum().backward()
    return [x.grad.numpy()] + [p.grad.numpy() for _, p in ours.named_parameters()]


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_second_order_gradients_equal_the_numba_path_and_torch(
    plans: Plans, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """``create_graph`` through the layer runs the stack's second rule (gradtape ops): the same
    numbers on the oneDNN path as on the numba path, and close to torch's float64."""
    x0 = np.random.default_rng(9).standard_normal((4, 2, 3)).astype(np.float32)

    def create() -> tuple[Any, Any]:
        ours, _ = _pair(3, 4, kind, num_layers=2, bidirectional=True)
        return ours, Cpu().tensor(x0, requires_grad=True)

    got = _penalty_grads(create)
    assert plans
    _numba_only(monkeypatch)
    want = _penalty_grads(create)
    for k, (a, b) in enumerate(zip(got, want, strict=True)):
        assert float(np.abs(a - b).max()) / (float(np.abs(b).max()) or 1.0) < 1e-5, k
    _, ref = _pair(3, 4, kind, num_layers=2, bidirectional=True)
    xt = torch.tensor(x0.astype(np.float64), requires_grad=True)
    (gx,) = torch.autograd.grad(ref(xt)[0].pow(2).sum(), [xt], create_graph=True)
    gx.pow(2).sum().backward()
    refs = [xt.grad] + [p.grad for p in ref.parameters()]
    for k, (a, t) in enumerate(zip(got, refs, strict=True)):
        _close(a, t, f"penalty gradient {k}", tol=1e-4)


def test_plan_backward_twice_and_bad_shapes(plans: Plans) -> None:
    """The plan itself: its outputs and workspace start on a cache line, a second backward of
    one forward gives the same gradients (oneDNN overwrites its weight gradients, it does not
    add to them), and arrays of other shapes than planned are refused naming the op and the
    shapes."""
    plan = onednn.rnn_plan("lstm", 3, 2, 4, 5, 1, True)
    assert plan is not None
    rng = np.random.default_rng(1)

    def r(*shape: int) -> Array:
        return rng.standard_normal(shape).astype(np.float32)

    run = plan.forward(r(3, 2, 4), r(1, 2, 5), r(1, 2, 5), r(1, 20, 4), r(1, 20, 5), r(1, 20))
    assert run.workspace is not None and run.cn is not None
    assert all(a.ctypes.data % onednn.ALIGN == 0 for a in (run.y, run.hn, run.cn, run.workspace))
    g = (r(3, 2, 5), r(1, 2, 5), r(1, 2, 5))
    first, second = plan.backward(run, *g), plan.backward(run, *g)
    assert all(a is not None and a.ctypes.data % onednn.ALIGN == 0 for a in first)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match=r"lstm \(T=3, N=2, I=4, H=5, directions=1.*x must have shape \(3, 2, 4\)"):
        plan.forward(r(3, 2, 5), r(1, 2, 5), r(1, 2, 5), r(1, 20, 4), r(1, 20, 5), r(1, 20))
    inference = onednn.rnn_plan("lstm", 3, 2, 4, 5, 1, False)
    assert inference is not None
    run = inference.forward(*run[:6])
    assert run.workspace is None
    with pytest.raises(onednn.OneDNNError, match="not a training one"):
        inference.backward(run, *g)


_CHILD_CODE = """
import numpy as np
from gradtape import Cpu, nn
from gradtape.devices.kernels import onednn, rnn
rnn.ONEDNN_MIN_MACS = rnn.ONEDNN_MIN_MACS_GRU = 0
lstm = nn.LSTM(3, 4, num_layers=2, dev=Cpu(seed=0))
out = lstm(Cpu().tensor(np.ones((5, 2, 3), np.float32)))[0]
out.sum().backward()
print(onednn.available(), len(onednn._RNN_PLANS), float(out.numpy().sum()))
"""


def test_switched_off_by_environment_falls_back() -> None:
    """``GRADTAPE_ONEDNN=0``: the LSTM runs on numba (no plan made) and gives its numbers."""
    env = {**os.environ, "GRADTAPE_ONEDNN": "0"}
    run = subprocess.run([sys.executable, "-c", _CHILD_CODE], env=env, capture_output=True, text=True, check=True)
    off, count, total = run.stdout.split()
    assert (off, count) == ("False", "0")
    lstm = nn.LSTM(3, 4, num_layers=2, dev=Cpu(seed=0))
    np.testing.assert_allclose(float(total), float(lstm(Cpu().tensor(np.ones((5, 2, 3), np.float32)))[0].numpy().sum()))


def _child(queue: Any) -> None:
    _kr.ONEDNN_MIN_MACS = 0
    lstm = nn.LSTM(3, 4, num_layers=2, dev=Cpu(seed=0))
    before = len(onednn._RNN_PLANS)
    out = lstm(Cpu().tensor(np.ones((5, 2, 3), np.float32)))[0].numpy()
    queue.put((onednn.available(), len(onednn._RNN_PLANS) - before, out))


def test_a_forked_child_falls_back_to_numba(plans: Plans) -> None:
    """A forked child (GNU OpenMP's pool does not survive fork) runs the LSTM on numba, with
    the parent's numbers."""
    lstm = nn.LSTM(3, 4, num_layers=2, dev=Cpu(seed=0))
    ref = lstm(Cpu().tensor(np.ones((5, 2, 3), np.float32)))[0].numpy()
    assert plans
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(queue,))
    proc.start()
    available, made, out = queue.get(timeout=120)
    proc.join(timeout=60)
    assert available is False and made == 0
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
