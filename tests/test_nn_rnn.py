"""``nn.LSTM``, ``nn.GRU``, ``nn.RNN`` and their cells, written as the PyTorch user's program:
the same model in torch and gradtape from identical weights (float64), ``output``, ``h_n``,
``c_n``, every parameter's ``.grad`` and the input's and initial states' gradients compared,
over num_layers 1/2, batch_first, bidirectional, hx given/omitted and unbatched input; the ops'
gradcheck and second rule (against torch's double backward); the kernels' float32 path; and
bad input refused naming the layer (or op) and the shapes."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import gradtape as gt
from gradtape import Cpu, DTypeError, GradientTape, ShapeError, Tensor, nn, ops
from gradtape.autograd import grad
from gradtape.devices.kernels import rnn as _kr
from gradtape.testing import gradcheck

torch: Any = pytest.importorskip("torch")

Array = np.ndarray[Any, Any]
RTOL, ATOL = 1e-9, 1e-11
KINDS = ["LSTM", "GRU", "RNN", "RNN_relu"]


def _pair(kind: str, i: int, h: int, **kw: Any) -> tuple[Any, Any]:
    """A gradtape layer (float64, seeded) and the torch layer with the same weights."""
    dev = Cpu(seed=7)
    if kind.startswith("RNN"):
        act = "relu" if kind.endswith("relu") else "tanh"
        ours: Any = nn.RNN(i, h, nonlinearity=act, dev=dev, dtype=np.float64, **kw)
        ref = torch.nn.RNN(i, h, nonlinearity=act, dtype=torch.float64, **kw)
    else:
        ours = getattr(nn, kind)(i, h, dev=dev, dtype=np.float64, **kw)
        ref = getattr(torch.nn, kind)(i, h, dtype=torch.float64, **kw)
    _copy(ours, ref)
    return ours, ref


def _copy(ours: Any, ref: Any) -> None:
    mine = dict(ours.named_parameters())
    theirs = dict(ref.named_parameters())
    assert list(mine) == list(theirs)  # names and PyTorch's order
    with torch.no_grad():
        for name, p in theirs.items():
            assert mine[name].shape == tuple(p.shape), name
            p.copy_(torch.from_numpy(mine[name].numpy().copy()))


def _close(got: Any, want: Any, what: str) -> None:
    want = want.detach().numpy() if hasattr(want, "detach") else want
    got = got.numpy() if isinstance(got, Tensor) else got
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=what)


def _run_both(kind: str, ours: Any, ref: Any, x: Array, hx: list[Array] | None, seed: int = 1) -> None:
    """The same program in both libraries: forward, a weighted sum of every output, backward;
    then every value and gradient compared."""
    rng = np.random.default_rng(seed)
    dev = Cpu()
    lstm = kind == "LSTM"
    # torch
    xt = torch.tensor(x, requires_grad=True)
    hts = [torch.tensor(a, requires_grad=True) for a in hx] if hx is not None else None
    t_hx = None if hts is None else (tuple(hts) if lstm else hts[0])
    t_out, t_state = ref(xt, t_hx)
    t_states = list(t_state) if lstm else [t_state]
    ws = [rng.standard_normal(tuple(t_out.shape))] + [rng.standard_normal(tuple(s.shape)) for s in t_states]
    t_loss = sum((o * torch.tensor(w)).sum() for o, w in zip([t_out, *t_states], ws, strict=True))
    t_loss.backward()
    # gradtape, the same program
    xg = dev.tensor(x, requires_grad=True)
    hgs = [dev.tensor(a, requires_grad=True) for a in hx] if hx is not None else None
    g_hx = None if hgs is None else (tuple(hgs) if lstm else hgs[0])
    out, state = ours(xg, g_hx)
    states = list(state) if lstm else [state]
    loss = None
    for o, w in zip([out, *states], ws, strict=True):
        term = (o * dev.tensor(w)).sum()
        loss = term if loss is None else loss + term
    assert loss is not None
    loss.backward()
    _close(out, t_out, "output")
    for k, (s, ts) in enumerate(zip(states, t_states, strict=True)):
        _close(s, ts, "h_n" if k == 0 else "c_n")
    assert xg.grad is not None
    _close(xg.grad, xt.grad, "input.grad")
    if hgs is not None and hts is not None:
        for k, (hg, ht) in enumerate(zip(hgs, hts, strict=True)):
            assert hg.grad is not None
            _close(hg.grad, ht.grad, "h_0.grad" if k == 0 else "c_0.grad")
    theirs = dict(ref.named_parameters())
    for name, p in ours.named_parameters():
        assert p.grad is not None, f"{name}: no gradient"
        _close(p.grad, theirs[name].grad, f"{name}.grad")


LAYER_CASES = [
    pytest.param(kind, layers, bf, bidir, with_hx, id=f"{kind}-L{layers}-bf{int(bf)}-bi{int(bidir)}-hx{int(with_hx)}")
    for kind, layers, bf, bidir, with_hx in itertools.product(
        KINDS, (1, 2), (False, True), (False, True), (False, True)
    )
    if kind in ("LSTM", "GRU") or (bf == bidir)  # the plain RNNs on a subset: the op is shared
]


@pytest.mark.parametrize(("kind", "layers", "batch_first", "bidirectional", "with_hx"), LAYER_CASES)
def test_layer_equals_torch(kind: str, layers: int, batch_first: bool, bidirectional: bool, with_hx: bool) -> None:
    ours, ref = _pair(kind, 3, 4, num_layers=layers, batch_first=batch_first, bidirectional=bidirectional)
    rng = np.random.default_rng(0)
    seq, batch = 5, 2
    x = rng.standard_normal((batch, seq, 3) if batch_first else (seq, batch, 3))
    nstate = 2 if kind == "LSTM" else 1
    ndir = 2 if bidirectional else 1
    hx = [rng.standard_normal((layers * ndir, batch, 4)) for _ in range(nstate)] if with_hx else None
    _run_both(kind, ours, ref, x, hx)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("with_hx", [False, True])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_unbatched_input_equals_torch(kind: str, with_hx: bool, bidirectional: bool) -> None:
    """``(L, I)`` input and ``(num_layers * D, H)`` states, as PyTorch takes them (batch_first
    is ignored for unbatched input, as in PyTorch)."""
    ours, ref = _pair(kind, 3, 4, num_layers=2, bidirectional=bidirectional, batch_first=True)
    rng = np.random.default_rng(2)
    ndir = 2 if bidirectional else 1
    hx = [rng.standard_normal((2 * ndir, 4)) for _ in range(2 if kind == "LSTM" else 1)] if with_hx else None
    _run_both(kind, ours, ref, rng.standard_normal((6, 3)), hx)


@pytest.mark.parametrize("kind", KINDS)
def test_without_bias_and_length_one(kind: str) -> None:
    ours, ref = _pair(kind, 2, 3, bias=False)
    assert all("bias" not in n for n, _ in ours.named_parameters())
    _run_both(kind, ours, ref, np.random.default_rng(3).standard_normal((1, 2, 2)), None)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN", "RNN_relu"])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("with_hx", [False, True])
def test_cells_equal_torch(kind: str, batched: bool, with_hx: bool) -> None:
    dev = Cpu(seed=4)
    name = "RNN" if kind.startswith("RNN") else kind
    kw = {"nonlinearity": "relu"} if kind == "RNN_relu" else {}
    ours: Any = getattr(nn, f"{name}Cell")(3, 5, dev=dev, dtype=np.float64, **kw)
    ref = getattr(torch.nn, f"{name}Cell")(3, 5, dtype=torch.float64, **kw)
    assert [n for n, _ in ours.named_parameters()] == ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]
    _copy(ours, ref)
    rng = np.random.default_rng(5)
    lead = (4,) if batched else ()
    x = rng.standard_normal((*lead, 3))
    nstate = 2 if kind == "LSTM" else 1
    hx = [rng.standard_normal((*lead, 5)) for _ in range(nstate)] if with_hx else None
    xt = torch.tensor(x, requires_grad=True)
    hts = [torch.tensor(a, requires_grad=True) for a in hx] if hx is not None else None
    t_res = ref(xt, None if hts is None else (tuple(hts) if kind == "LSTM" else hts[0]))
    t_outs = list(t_res) if kind == "LSTM" else [t_res]
    ws = [rng.standard_normal(tuple(o.shape)) for o in t_outs]
    sum((o * torch.tensor(w)).sum() for o, w in zip(t_outs, ws, strict=True)).backward()
    xg = dev.tensor(x, requires_grad=True)
    hgs = [dev.tensor(a, requires_grad=True) for a in hx] if hx is not None else None
    res = ours(xg, None if hgs is None else (tuple(hgs) if kind == "LSTM" else hgs[0]))
    outs = list(res) if kind == "LSTM" else [res]
    loss = outs[0].sum() * 0.0
    for o, w in zip(outs, ws, strict=True):
        loss = loss + (o * dev.tensor(w)).sum()
    loss.backward()
    for o, t in zip(outs, t_outs, strict=True):
        _close(o, t, "output")
    _close(xg.grad, xt.grad, "input.grad")
    if hgs is not None and hts is not None:
        for hg, ht in zip(hgs, hts, strict=True):
            _close(hg.grad, ht.grad, "hx.grad")
    theirs = dict(ref.named_parameters())
    for n, p in ours.named_parameters():
        _close(p.grad, theirs[n].grad, f"{n}.grad")


def test_training_loop_in_pytorch_spelling() -> None:
    """A word-language-model-style loop: embedding-free LSTM + linear head, hidden state
    carried (detached) between batches, Adam, three steps: losses and parameters stay equal."""
    dev = Cpu(seed=1)
    ours = nn.LSTM(4, 6, num_layers=2, dev=dev, dtype=np.float64)
    head = nn.Linear(6, 3, dev=dev, dtype=np.float64)
    ref = torch.nn.LSTM(4, 6, num_layers=2, dtype=torch.float64)
    ref_head = torch.nn.Linear(6, 3, dtype=torch.float64)
    _copy(ours, ref)
    _copy(head, ref_head)
    params = ours.parameters() + head.parameters()
    opt = gt.optim.Adam(params, lr=0.01)
    t_opt = torch.optim.Adam(list(ref.parameters()) + list(ref_head.parameters()), lr=0.01)
    rng = np.random.default_rng(8)
    hidden: Any = None
    t_hidden: Any = None
    for _ in range(3):
        x, y = rng.standard_normal((5, 2, 4)), rng.standard_normal((5, 2, 3))
        opt.zero_grad()
        out, hidden = ours(dev.tensor(x), hidden)
        loss = gt.losses.mse_loss(head(out), dev.tensor(y))
        loss.backward()
        opt.step()
        hidden = (hidden[0].detach(), hidden[1].detach())
        t_opt.zero_grad()
        t_out, t_hidden = ref(torch.tensor(x), t_hidden)
        t_loss = torch.nn.functional.mse_loss(ref_head(t_out), torch.tensor(y))
        t_loss.backward()
        t_opt.step()
        t_hidden = (t_hidden[0].detach(), t_hidden[1].detach())
        np.testing.assert_allclose(float(loss.item()), float(t_loss.item()), rtol=1e-10)
    theirs = dict(ref.named_parameters())
    for n, p in ours.named_parameters():
        _close(p, theirs[n], n)


# ----- usage modes (tests/test_nn_usage.py's three ways) ----------------------------------------


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_only_the_input_traced_and_only_parameters_watched(kind: str) -> None:
    ours, ref = _pair(kind, 3, 4, num_layers=2, bidirectional=True)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 2, 3))
    w = rng.standard_normal((4, 2, 8))
    t_out = ref(torch.tensor(x))[0]
    (t_out * torch.tensor(w)).sum().backward()
    theirs = {n: p.grad for n, p in ref.named_parameters()}
    dev = Cpu()
    # dfdx: the input traced into a store that keeps the parameters' gradients
    grads = ours.alloc_grads()
    out = ours(dev.tensor(x).trace(grads))[0]
    g = (out * dev.tensor(w)).sum().backward()
    for n, p in ours.named_parameters():
        _close(g.get(p), theirs[n], f"traced: {n}")
    # TensorFlow: only the parameters watched by a context tape
    params = ours.parameters()
    with GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(params)
        loss = (ours(dev.tensor(x))[0] * dev.tensor(w)).sum()
    gs = tape.gradient(loss, params)
    assert isinstance(gs, list)
    for (n, _), gp in zip(ours.named_parameters(), gs, strict=True):
        assert isinstance(gp, Tensor), n
        _close(gp, theirs[n], f"watched: {n}")


def test_inference_records_nothing() -> None:
    lstm = nn.LSTM(3, 4, dev=Cpu(seed=0), dtype=np.float64)
    with gt.no_grad():
        out, (h, c) = lstm(Cpu().randn((5, 2, 3), np.float64))
    assert not out.requires_grad and not h.requires_grad and not c.requires_grad


# ----- the ops: gradcheck, second rule ----------------------------------------------------------


def _op_inputs(kind: str, t: int, b: int, i: int, h: int, seed: int) -> list[Array]:
    rng = np.random.default_rng(seed)
    g = {"LSTM": 4, "GRU": 3}.get(kind, 1)
    arrays = [rng.standard_normal((t, b, i)), rng.standard_normal((b, h))]
    if kind == "LSTM":
        arrays.append(rng.standard_normal((b, h)))
    arrays += [rng.standard_normal((g * h, i)) * 0.7, rng.standard_normal((g * h, h)) * 0.7]
    arrays += [rng.standard_normal(g * h) * 0.3, rng.standard_normal(g * h) * 0.3]
    return arrays


def _op(kind: str, reverse: bool) -> Any:
    """The op as a function of its tensors, its outputs joined into one tensor."""

    lstm: Any = ops.lstm_layer
    gru: Any = ops.gru_layer
    rnn: Any = ops.rnn_layer

    def run(*ts: Tensor[Any, Any]) -> Tensor[Any, Any]:
        if kind == "LSTM":
            out, hn, cn = lstm(*ts, reverse=reverse)
            return ops.concat([out.reshape((-1,)), hn.reshape((-1,)), (cn * 0.5).reshape((-1,))], axis=0)
        if kind == "GRU":
            out, hn = gru(*ts, reverse=reverse)
        else:
            act = "relu" if kind == "RNN_relu" else "tanh"
            out, hn = rnn(*ts, nonlinearity=act, reverse=reverse)
        return ops.concat([out.reshape((-1,)), (hn * 0.5).reshape((-1,))], axis=0)

    return run


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("reverse", [False, True])
def test_ops_gradcheck(kind: str, reverse: bool) -> None:
    assert gradcheck(_op(kind, reverse), _op_inputs(kind, 3, 2, 2, 3, seed=11))


def _torch_op(kind: str, ts: list[Any], reverse: bool) -> Any:
    """The same single-layer recurrence through torch's own layer, its weights given as
    tensors (``torch.func.functional_call``); ``reverse`` reads the flipped sequence."""
    x = ts[0].flip(0) if reverse else ts[0]
    names = ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]
    i, h = ts[0].shape[2], ts[1].shape[1]
    if kind == "LSTM":
        layer: Any = torch.nn.LSTM(i, h, dtype=torch.float64)
        hx: Any = (ts[1][None], ts[2][None])
        weights = ts[3:]
    else:
        if kind == "GRU":
            layer = torch.nn.GRU(i, h, dtype=torch.float64)
        else:
            layer = torch.nn.RNN(i, h, nonlinearity="relu" if kind == "RNN_relu" else "tanh", dtype=torch.float64)
        hx, weights = ts[1][None], ts[2:]
    out, state = torch.func.functional_call(layer, dict(zip(names, weights, strict=True)), (x, hx))
    out = out.flip(0) if reverse else out
    if kind == "LSTM":
        return torch.cat([out.reshape(-1), state[0].reshape(-1), (state[1] * 0.5).reshape(-1)])
    return torch.cat([out.reshape(-1), (state * 0.5).reshape(-1)])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("reverse", [False, True])
def test_second_rule_equals_torch_double_backward(kind: str, reverse: bool) -> None:
    """Gradients of gradients (``create_graph=True``) run the op's second rule; its first
    gradients equal the kernels', and the gradient of ``sum_k <grad_k, u_k>`` equals torch's
    double backward for every input."""
    arrays = _op_inputs(kind, 3, 2, 2, 3, seed=12)
    rng = np.random.default_rng(13)
    fn = _op(kind, reverse)
    v = rng.standard_normal(fn(*(Cpu().tensor(a) for a in arrays)).shape)
    u = [rng.standard_normal(a.shape) for a in arrays]
    dev = Cpu()
    ts = [dev.tensor(a, requires_grad=True) for a in arrays]
    first = grad((fn(*ts) * dev.tensor(v)).sum(), ts, create_graph=True)
    plain = grad((fn(*ts) * dev.tensor(v)).sum(), ts)
    total: Any = None
    for f, p, uk in zip(first, plain, u, strict=True):
        assert f is not None and p is not None
        np.testing.assert_allclose(f.numpy(), p.numpy(), rtol=1e-10, atol=1e-12)
        term = (f * dev.tensor(uk)).sum()
        total = term if total is None else total + term
    second = grad(total, ts)
    tt = [torch.tensor(a, requires_grad=True) for a in arrays]
    y = (_torch_op(kind, tt, reverse) * torch.tensor(v)).sum()
    g1 = torch.autograd.grad(y, tt, create_graph=True)
    s = sum((gk * torch.tensor(uk)).sum() for gk, uk in zip(g1, u, strict=True))
    g2 = torch.autograd.grad(s, tt, allow_unused=True)
    for k, (ours, theirs) in enumerate(zip(second, g2, strict=True)):
        want = np.zeros(arrays[k].shape) if theirs is None else theirs.numpy()
        got = np.zeros(arrays[k].shape) if ours is None else ours.numpy()
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10, err_msg=f"input {k}")
    assert any(g is not None and np.abs(g.numpy()).max() > 0 for g in second)


def _penalty_gradient_equals_torch(kind: str, layers: int, bidirectional: bool, x: Array) -> None:
    """The gradient penalty's gradient, ``d/dtheta |d(|out|^2)/dx|^2``, through the layer under
    ``create_graph`` (the stacked op's second rule) equals torch's, for every parameter and
    the input."""
    ours, ref = _pair(kind, x.shape[2], 3, num_layers=layers, bidirectional=bidirectional)
    xt = torch.tensor(x, requires_grad=True)
    (gx,) = torch.autograd.grad(ref(xt)[0].pow(2).sum(), [xt], create_graph=True)
    gx.pow(2).sum().backward()
    xg = Cpu().tensor(x, requires_grad=True)
    (ggx,) = grad((ours(xg)[0] ** 2).sum(), [xg], create_graph=True)
    assert ggx is not None
    (ggx**2).sum().backward()
    theirs = dict(ref.named_parameters())
    for n, p in ours.named_parameters():
        assert p.grad is not None, n
        np.testing.assert_allclose(p.grad.numpy(), theirs[n].grad.numpy(), rtol=1e-8, atol=1e-10, err_msg=n)
    assert xg.grad is not None
    np.testing.assert_allclose(xg.grad.numpy(), xt.grad.numpy(), rtol=1e-8, atol=1e-10)


def test_layer_hessian_vector_product_through_two_layers() -> None:
    """A stacked bidirectional GRU: the second rule through both layers and both directions."""
    _penalty_gradient_equals_torch("GRU", 2, True, np.random.default_rng(14).standard_normal((3, 2, 2)))


# ----- float32: the kernels' polynomial sigmoid and tanh --------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_float32_equals_torch_float32(kind: str) -> None:
    """At a realistic size (64 steps, hidden 32, two layers): the output stays float32 and
    close to torch's float32, and so do the gradients."""
    dev = Cpu(seed=9)
    name = "RNN" if kind.startswith("RNN") else kind
    kw = {"nonlinearity": "relu"} if kind == "RNN_relu" else {}
    ours: Any = getattr(nn, name)(16, 32, num_layers=2, dev=dev, **kw)
    ref = getattr(torch.nn, name)(16, 32, num_layers=2, **kw)
    _copy(ours, ref)
    x = np.random.default_rng(10).standard_normal((64, 8, 16)).astype(np.float32)
    out = ours(dev.tensor(x, requires_grad=True))[0]
    assert out.dtype == np.float32
    out.sum().backward()
    t_out = ref(torch.tensor(x))[0]
    t_out.sum().backward()
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-4, atol=2e-5)
    theirs = dict(ref.named_parameters())
    for n, p in ours.named_parameters():
        want = theirs[n].grad.numpy()
        assert p.grad is not None and p.grad.dtype == np.float32
        np.testing.assert_allclose(p.grad.numpy(), want, rtol=1e-3, atol=1e-4 * np.abs(want).max(), err_msg=n)


def test_float32_sigmoid_and_tanh_kernels_are_accurate() -> None:
    """The kernels' float32 tanh (Cephes' tanhf) and sigmoid (Cephes' expf) against float64
    libm: within a few ulp relative error everywhere, exactly 0 and +-1 at the ends, NaN kept."""
    v = np.concatenate([np.linspace(-20, 20, 200001), [0.0, 1e-30, -1e-7, 0.624, 0.626, 100.0, -100.0, np.nan]])
    v32 = v.astype(np.float32)
    n = v32.size
    gx = v32.reshape(1, -1).copy()
    h = np.empty_like(gx)
    _kr._rnn_fwd_step_serial(gx, np.zeros_like(gx), h, False)
    want = np.tanh(v32.astype(np.float64))
    np.testing.assert_allclose(h[0], want, rtol=4e-7, atol=1e-38)
    assert np.isnan(h[0, -1]) and h[0, -3] == 1.0 and h[0, -2] == -1.0
    # the LSTM step's input gate is sigmoid(gx + gh): read it back from the saved gates
    gates = np.zeros((1, 4 * n), np.float32)
    gates[0, :n] = v32
    cells = [np.empty((1, n), np.float32) for _ in range(3)]
    _kr._lstm_fwd_step_serial(gates, np.zeros_like(gates), np.zeros((1, n), np.float32), *cells)
    want = 1 / (1 + np.exp(-v32.astype(np.float64)))
    np.testing.assert_allclose(gates[0, :n], want, rtol=4e-7, atol=1e-38)
    assert np.isnan(gates[0, n - 1]) and gates[0, n - 3] == 1.0 and gates[0, n - 2] == 0.0


def test_parallel_step_kernels_equal_the_serial_ones() -> None:
    rng = np.random.default_rng(15)
    b, nh = 9, 40
    gx = rng.standard_normal((b, 4 * nh)).astype(np.float32)
    gh = rng.standard_normal((b, 4 * nh)).astype(np.float32)
    cp = rng.standard_normal((b, nh)).astype(np.float32)
    res = []
    for k in (_kr._lstm_fwd_step_serial, _kr._lstm_fwd_step_parallel):
        g = gx.copy()
        outs = [np.empty_like(cp) for _ in range(3)]
        k(g, gh, cp, *outs)
        res.append([g, *outs])
    for a, b_ in zip(*res, strict=True):
        np.testing.assert_array_equal(a, b_)


# ----- construction ------------------------------------------------------------------------------


def test_parameters_follow_pytorch_names_shapes_and_init() -> None:
    ours = nn.LSTM(10, 20, num_layers=2, bidirectional=True, dev=Cpu(seed=0))
    ref = torch.nn.LSTM(10, 20, num_layers=2, bidirectional=True)
    assert [(n, p.shape) for n, p in ours.named_parameters()] == [
        (n, tuple(p.shape)) for n, p in ref.named_parameters()
    ]
    bound = 1 / np.sqrt(20)
    for n, p in ours.named_parameters():
        assert p.dtype == np.float32, n
        assert np.abs(p.numpy()).max() <= bound and np.abs(p.numpy()).max() > 0.8 * bound, n
    assert len(ours.all_weights) == 4 and len(ours.all_weights[0]) == 4
    ours.flatten_parameters()
    assert repr(ours) == "LSTM(10, 20, num_layers=2, bidirectional=True)"
    gru = nn.GRU(5, 7, bias=False, batch_first=True, dev=Cpu(seed=0))
    assert [(n, p.shape) for n, p in gru.named_parameters()] == [("weight_ih_l0", (21, 5)), ("weight_hh_l0", (21, 7))]
    rnn = nn.RNN(5, 7, 1, "relu", dev=Cpu(seed=0))  # nonlinearity is the fourth argument, as in PyTorch
    assert rnn.nonlinearity == "relu" and repr(rnn) == "RNN(5, 7, nonlinearity='relu')"
    assert [n for n, _ in nn.GRUCell(3, 4, bias=False, dev=Cpu()).named_parameters()] == ["weight_ih", "weight_hh"]


def test_dropout_between_layers_only_in_training() -> None:
    dev = Cpu(seed=3)
    lstm = nn.LSTM(3, 8, num_layers=2, dropout=0.5, dev=dev, dtype=np.float64)
    x = dev.randn((4, 2, 3), np.float64)
    a = lstm(x)[0].numpy()
    b = lstm(x)[0].numpy()
    assert not np.allclose(a, b)  # two masks
    lstm.eval()
    np.testing.assert_array_equal(lstm(x)[0].numpy(), lstm(x)[0].numpy())
    ref = torch.nn.LSTM(3, 8, num_layers=2, dropout=0.5, dtype=torch.float64).eval()
    _copy(lstm, ref)
    np.testing.assert_allclose(lstm(x)[0].numpy(), ref(torch.tensor(x.numpy()))[0].detach().numpy(), rtol=1e-10)
    with pytest.warns(UserWarning, match="num_layers=1"):
        nn.GRU(3, 4, dropout=0.2, dev=dev)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: nn.LSTM(3, 0, dev=Cpu()), "LSTM: hidden_size must be an int >= 1, got 0"),
        (lambda: nn.GRU(3, 4, num_layers=0, dev=Cpu()), "GRU: num_layers must be an int >= 1, got 0"),
        (lambda: nn.RNN(3, 4, nonlinearity="sigmoid", dev=Cpu()), "RNN: unknown nonlinearity 'sigmoid'"),
        (lambda: nn.LSTM(3, 4, dropout=1.5, dev=Cpu()), r"LSTM: dropout must be a number in \[0, 1\], got 1.5"),
        (lambda: nn.RNNCell(3, 4, nonlinearity="gelu", dev=Cpu()), "RNNCell: unknown nonlinearity 'gelu'"),
    ],
)
def test_bad_construction_is_refused(make: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


# ----- bad input -----------------------------------------------------------------------------------


def _lstm2() -> Any:
    return nn.LSTM(3, 4, num_layers=2, dev=Cpu(seed=0), dtype=np.float64)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda: _lstm2()(Cpu().randn((5, 2, 6), np.float64)),
            ShapeError,
            r"LSTM: input has 6 features in its last dim \(shape \(5, 2, 6\)\), expected input_size=3",
        ),
        (
            lambda: _lstm2()(Cpu().randn((5,), np.float64)),
            ShapeError,
            r"LSTM: expected an input of 2 dims \(unbatched\) or 3 dims \(batched\), got shape \(5\)",
        ),
        (
            lambda: _lstm2()(Cpu().randn((5, 2, 3), np.float64), (Cpu().zeros((2, 3, 4), np.float64),) * 2),
            ShapeError,
            r"LSTM: expected h_0 of shape \(2, 2, 4\) \(num_layers \* num_directions, batch, hidden_size\), "
            r"got \(2, 3, 4\)",
        ),
        (
            lambda: _lstm2()(
                Cpu().randn((5, 2, 3), np.float64),
                (Cpu().zeros((2, 2, 4), np.float64), Cpu().zeros((1, 2, 4), np.float64)),
            ),
            ShapeError,
            r"LSTM: expected c_0 of shape \(2, 2, 4\) .* got \(1, 2, 4\)",
        ),
        (
            lambda: _lstm2()(Cpu().randn((5, 2, 3), np.float64), Cpu().zeros((2, 2, 4), np.float64)),
            TypeError,
            r"LSTM: hx must be a tuple \(h_0, c_0\) of tensors, got Tensor",
        ),
        (
            lambda: nn.GRU(3, 4, dev=Cpu())(Cpu().randn((5, 3)), Cpu().zeros((1, 2, 4))),
            ShapeError,
            r"GRU: expected hx of shape \(1, 4\) \(num_layers \* num_directions, hidden_size\), got \(1, 2, 4\)",
        ),
        (
            lambda: nn.RNN(3, 4, bidirectional=True, dev=Cpu())(Cpu().randn((5, 2, 3)), Cpu().zeros((1, 2, 4))),
            ShapeError,
            r"RNN: expected hx of shape \(2, 2, 4\)",
        ),
        (
            lambda: nn.GRU(3, 4, dev=Cpu())(Cpu().randn((5, 2, 3), np.float64)),
            DTypeError,
            r"GRU: input has dtype float64 \(shape \(5, 2, 3\)\), the parameters are float32",
        ),
        (
            lambda: nn.LSTM(3, 4, dev=Cpu())(np.zeros((5, 2, 3), np.float32)),  # type: ignore[call-overload]
            TypeError,
            r"LSTM: input must be a Tensor, got ndarray",
        ),
        (
            lambda: nn.LSTM(3, 4, dev=Cpu())(Cpu().zeros((0, 2, 3))),
            ShapeError,
            r"lstm_layer: input \(0, 2, 3\) has length 0",
        ),
        (
            lambda: nn.LSTMCell(3, 4, dev=Cpu())(Cpu().randn((2, 5))),
            ShapeError,
            r"LSTMCell: input has 5 features in its last dim \(shape \(2, 5\)\), expected input_size=3",
        ),
        (
            lambda: nn.GRUCell(3, 4, dev=Cpu())(Cpu().randn((2, 3)), Cpu().zeros((3, 4))),
            ShapeError,
            r"GRUCell: expected hx of shape \(2, 4\) \(batch, hidden_size\), got \(3, 4\)",
        ),
    ],
)
def test_bad_input_is_refused_naming_the_layer_and_shapes(call: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call()


def _good_op_args() -> dict[str, Tensor[Any, Any]]:
    dev = Cpu()
    return {
        "input": dev.zeros((5, 2, 3)),
        "h0": dev.zeros((2, 4)),
        "c0": dev.zeros((2, 4)),
        "weight_ih": dev.zeros((16, 3)),
        "weight_hh": dev.zeros((16, 4)),
        "bias_ih": dev.zeros((16,)),
        "bias_hh": dev.zeros((16,)),
    }


@pytest.mark.parametrize(
    ("arg", "bad", "message"),
    [
        (
            "h0",
            (3, 4),
            r"lstm_layer: h0 must have shape \(2, 4\) .*got \(3, 4\); shapes: input \(5, 2, 3\), h0 \(3, 4\)",
        ),
        ("c0", (2, 5), r"lstm_layer: c0 must have shape \(2, 4\)"),
        ("weight_ih", (16, 2), r"lstm_layer: weight_ih must have shape \(16, 3\) .*got \(16, 2\)"),
        ("weight_hh", (12, 4), r"lstm_layer: weight_hh must have shape \(16, 4\) .*got \(12, 4\)"),
        ("bias_hh", (12,), r"lstm_layer: bias_hh must have shape \(16,\)"),
        ("input", (2, 3), r"lstm_layer: input must be \(T, B, input_size\), got shape \(2, 3\)"),
    ],
)
def test_op_shape_errors_name_the_op_the_argument_and_shapes(arg: str, bad: tuple[int, ...], message: str) -> None:
    args = _good_op_args()
    args[arg] = Cpu().zeros(bad)
    with pytest.raises(ShapeError, match=message):
        ops.lstm_layer(**args)  # type: ignore[arg-type]


def test_op_dtype_and_argument_errors() -> None:
    args = _good_op_args()
    args["h0"] = Cpu().zeros((2, 4), np.float64)
    with pytest.raises(DTypeError, match=r"lstm_layer: all tensors must be float32, or all float64; got .*h0 float64"):
        ops.lstm_layer(**args)  # type: ignore[arg-type]
    args = _good_op_args()
    args["c0"] = Cpu().tensor(np.zeros((2, 4), np.int64))
    with pytest.raises(DTypeError, match="lstm_layer: c0 has dtype int64"):
        ops.lstm_layer(**args)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="gru_layer: weight_ih must be a Tensor, got list"):
        ops.gru_layer(Cpu().zeros((1, 1, 1)), Cpu().zeros((1, 1)), [[0.0]], Cpu().zeros((3, 1)))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="rnn_layer: nonlinearity must be 'tanh' or 'relu', got 'sigmoid'"):
        ops.rnn_layer(
            Cpu().zeros((1, 1, 1)), Cpu().zeros((1, 1)), Cpu().zeros((1, 1)), Cpu().zeros((1, 1)), None, None, "sigmoid"
        )


def test_benchmark_workload_steps_agree() -> None:
    """benchmarks/workloads/rnn.py's gradtape and PyTorch steps give the same gradients (a
    small shape; the workload checks the full one before timing)."""
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[1])  # the checkout's benchmarks/
    if root not in sys.path:
        sys.path.insert(0, root)
    from benchmarks.workloads import rnn as workload

    shape = (5, 3, 4, 6)
    arrays = workload.inputs(shape, seed=1)
    for kind in ("LSTM", "GRU"):
        model = workload.gradtape_model(kind, shape)
        ours = workload.gradtape_step(model, arrays)()
        theirs = workload.torch_step(torch, kind, model, arrays, threads=1)()
        assert ours.keys() == theirs.keys() and len(ours) == 8
        for name in theirs:
            np.testing.assert_allclose(ours[name], theirs[name], rtol=1e-4, atol=1e-5, err_msg=f"{kind} {name}")


# ----- the stacked op on threads (kernels.rnn.Stack) -------------------------------------------


@pytest.fixture
def threaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every stack runs on threads, whatever its size and the machine's cores."""
    monkeypatch.setattr(_kr, "PIPELINE_MACS", 0)
    monkeypatch.setattr(_kr, "_cores", lambda: 2)
    monkeypatch.setattr(_kr, "_others_busy", lambda: 1.0)


THREAD_CASES = [
    pytest.param(kind, layers, bidir, with_hx, id=f"{kind}-L{layers}-bi{int(bidir)}-hx{int(with_hx)}")
    for kind, layers, bidir, with_hx in itertools.product(KINDS, (3,), (False, True), (False, True))
    if kind in ("LSTM", "GRU") or not with_hx
]


@pytest.mark.parametrize(("kind", "layers", "bidirectional", "with_hx"), THREAD_CASES)
def test_threaded_stack_equals_torch(
    threaded: None, kind: str, layers: int, bidirectional: bool, with_hx: bool
) -> None:
    """The wavefront (unidirectional: layers one chunk of steps apart, 9 steps = two full
    chunks and a short one) and the side-by-side directions (bidirectional) give torch's
    values and gradients."""
    ours, ref = _pair(kind, 3, 5, num_layers=layers, bidirectional=bidirectional)
    assert _kr.CHUNK == 4
    rng = np.random.default_rng(2)
    seq, batch = 9, 2
    x = rng.standard_normal((seq, batch, 3))
    ndir = 2 if bidirectional else 1
    nstate = 2 if kind == "LSTM" else 1
    hx = [rng.standard_normal((layers * ndir, batch, 5)) for _ in range(nstate)] if with_hx else None
    _run_both(kind, ours, ref, x, hx)


@pytest.mark.parametrize("threads", [False, True])
def test_dropout_masks_between_layers_as_torch_applies_them(monkeypatch: pytest.MonkeyPatch, threads: bool) -> None:
    """Training-mode dropout between layers: the same masks as :func:`ops.nn.dropout` would
    draw from the device's generator, applied to every layer's output but the last; values and
    gradients equal torch's program of single-layer LSTMs with those masks between them."""
    from gradtape.ops.nn import dropout_mask

    if threads:
        monkeypatch.setattr(_kr, "PIPELINE_MACS", 0)
        monkeypatch.setattr(_kr, "_cores", lambda: 2)
        monkeypatch.setattr(_kr, "_others_busy", lambda: 1.0)
    seq, batch, h, p = 6, 2, 4, 0.4
    ours = nn.LSTM(3, h, num_layers=3, dropout=p, dev=Cpu(seed=5), dtype=np.float64)
    gen = Cpu(seed=11).rng  # dropout draws from the input's device, as ops.dropout does
    masks = [dropout_mask((seq, batch, h), np.dtype(np.float64), p, gen) for _ in range(2)]
    x = np.random.default_rng(4).standard_normal((seq, batch, 3))
    w = np.random.default_rng(5).standard_normal((seq, batch, h))
    xg = Cpu(seed=11).tensor(x, requires_grad=True)
    out, _ = ours(xg)
    (out * Cpu().tensor(w)).sum().backward()
    refs = [torch.nn.LSTM(3 if k == 0 else h, h, dtype=torch.float64) for k in range(3)]
    with torch.no_grad():
        for k, r in enumerate(refs):
            for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                getattr(r, f"{name}_l0").copy_(torch.from_numpy(getattr(ours, f"{name}_l{k}").numpy().copy()))
    xt = torch.tensor(x, requires_grad=True)
    y = xt
    for k, r in enumerate(refs):
        y = r(y)[0]
        if k < 2:
            y = y * torch.from_numpy(masks[k])
    (y * torch.tensor(w)).sum().backward()
    _close(out, y, "output")
    assert xg.grad is not None
    _close(xg.grad, xt.grad, "input.grad")
    for k, r in enumerate(refs):
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            got = getattr(ours, f"{name}_l{k}").grad
            assert got is not None
            _close(got, getattr(r, f"{name}_l0").grad, f"{name}_l{k}.grad")


def test_threaded_stack_second_rule_equals_torch(threaded: None) -> None:
    """A 3-layer LSTM whose first-order pass ran on threads (the second rule chains the
    layers' own)."""
    _penalty_gradient_equals_torch("LSTM", 3, False, np.random.default_rng(15).standard_normal((5, 2, 2)))


@pytest.mark.parametrize("where", ["project", "run_backward"])
def test_a_failing_thread_raises_instead_of_hanging(
    threaded: None, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """An error in one layer's thread reaches the caller, after every other thread stopped
    (the layers waiting on it are woken, not left waiting)."""
    original = getattr(_kr.Recurrence, where)

    def broken(self: Any, *args: Any) -> None:
        if self.x.shape[2] != 3:  # a layer above the first, on a pool thread
            raise RuntimeError("boom in a layer thread")
        original(self, *args)

    monkeypatch.setattr(_kr.Recurrence, where, broken)
    lstm = nn.LSTM(3, 4, num_layers=3, dev=Cpu(seed=1), dtype=np.float64)
    x = Cpu().tensor(np.ones((9, 2, 3)), requires_grad=True)
    with pytest.raises(RuntimeError, match="boom in a layer thread"):
        lstm(x)[0].sum().backward()
    monkeypatch.setattr(_kr.Recurrence, where, original)
    lstm(x)[0].sum().backward()  # the pool still works
    assert x.grad is not None


def test_threaded_stack_leaves_blas_threads_as_it_found_them(threaded: None) -> None:
    """The stack runs numpy's BLAS on one thread while its threads work (a process-wide
    setting in numpy's OpenBLAS) and gives gradtape's count back after, errors included."""
    from gradtape.devices.kernels import blas

    if blas._SET is None:
        pytest.skip("numpy's BLAS is not a multithreaded OpenBLAS")
    lstm = nn.LSTM(3, 4, num_layers=2, dev=Cpu(seed=1), dtype=np.float64)
    gru = nn.GRU(3, 4, num_layers=2, bidirectional=True, dev=Cpu(seed=1), dtype=np.float64)
    for layer in (lstm, gru):
        layer(Cpu().tensor(np.ones((5, 2, 3)), requires_grad=True))[0].sum().backward()
        assert blas._SET(blas._THREADS) == blas._THREADS  # the count it replaced


def test_threads_only_while_other_processes_keep_a_core_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stack overlaps its layers on threads only while other processes use the CPU
    (measured faster there, slower on an idle machine: kernels.rnn.OTHERS_BUSY); a process
    spinning on a core shows up in the sample."""
    import subprocess
    import sys
    import time

    monkeypatch.setattr(_kr, "PIPELINE_MACS", 0)
    monkeypatch.setattr(_kr, "_cores", lambda: 2)
    h0: list[Array] = [np.zeros((2, 3))] * 2
    w: list[tuple[Array, Array, Array | None, Array | None]] = [(np.ones((12, 3)), np.ones((12, 3)), None, None)] * 2
    monkeypatch.setattr(_kr, "_others_busy", lambda: 0.0)
    assert not _kr.Stack("lstm", np.ones((4, 2, 3)), h0, h0, w, 1, [None]).threaded
    monkeypatch.setattr(_kr, "_others_busy", lambda: 1.0)
    assert _kr.Stack("lstm", np.ones((4, 2, 3)), h0, h0, w, 1, [None]).threaded
    monkeypatch.undo()
    if not Path("/proc/stat").exists():
        pytest.skip("no /proc/stat")
    monkeypatch.setattr(_kr, "_LOAD", [0.0, 0.0, 0.0, 0.0])
    assert _kr._others_busy() == 0.0  # the first sample only sets the baseline
    spin = subprocess.Popen([sys.executable, "-c", "import time\nt = time.time()\nwhile time.time() - t < 1.5: pass"])
    try:
        time.sleep(1.2)
        busy = _kr._others_busy()
    finally:
        spin.wait()
    assert busy > 0.5, busy
