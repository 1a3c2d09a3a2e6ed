"""PyTorch's spelling of a training step against torch itself: ``opt.step()`` reading each
parameter's ``.grad``, ``opt.zero_grad()``, and ``gradtape.nn.utils`` (``clip_grad_norm_``,
``clip_grad_value_``, ``parameters_to_vector``, ``vector_to_parameters``).

Each test is written as a PyTorch user's program on a gradtape model and the same program on
a torch model with identical float64 weights. The gradients torch's ``backward()`` computes
are assigned to the gradtape parameters' ``.grad`` (standing in for gradtape's own
``loss.backward()``), so only the optimizer and clipping code is compared.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from test_optim import CONFIGS as STORE_CONFIGS

import gradtape.optim as go
from gradtape import Cpu, DTypeError, Gradients, ShapeError, Tensor, nn
from gradtape.nn.utils import clip_grad_norm_, clip_grad_value_, parameters_to_vector, vector_to_parameters

torch = pytest.importorskip("torch")

Array = np.ndarray[Any, Any]
RTOL = 1e-12


def _models(seed: int = 0) -> tuple[list[Tensor[Any, Any]], Any]:
    """A gradtape MLP's parameters (4 -> 8 -> 8 -> 3, six tensors) and the torch MLP with the
    same float64 weights."""
    dev = Cpu(seed=seed)
    model = nn.Sequential(
        nn.Linear(4, 8, dev=dev, dtype=np.float64),
        nn.Tanh(),
        nn.Linear(8, 8, dev=dev, dtype=np.float64),
        nn.Tanh(),
        nn.Linear(8, 3, dev=dev, dtype=np.float64),
    )
    tmodel = torch.nn.Sequential(
        torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)
    ).double()
    params = model.parameters()
    assert [p.shape for p in params] == [tuple(tp.shape) for tp in tmodel.parameters()]
    with torch.no_grad():
        for p, tp in zip(params, tmodel.parameters(), strict=True):
            tp.copy_(torch.from_numpy(p.data.copy()))
    return params, tmodel


def _backward(
    tmodel: Any, params: list[Tensor[Any, Any]], rng: np.random.Generator, skip: tuple[int, ...] = ()
) -> None:
    """torch: ``loss.backward()`` on a random batch; gradtape: the same gradients assigned to
    ``.grad``. Parameters in ``skip`` get no gradient on either side (``.grad`` left as it is:
    ``None`` after ``zero_grad()``)."""
    x = torch.from_numpy(rng.standard_normal((5, 4)))
    y = torch.from_numpy(rng.standard_normal((5, 3)))
    loss = ((tmodel(x) - y) ** 2).mean() * 10.0
    loss.backward()
    for i, (p, tp) in enumerate(zip(params, tmodel.parameters(), strict=True)):
        if i in skip:
            tp.grad = None
        else:
            p.grad = tp.grad.numpy().copy()


def _assert_params_equal(params: list[Tensor[Any, Any]], tmodel: Any) -> None:
    for p, tp in zip(params, tmodel.parameters(), strict=True):
        np.testing.assert_allclose(p.data, tp.detach().numpy(), rtol=RTOL, atol=1e-14)


def _assert_grads_equal(params: list[Tensor[Any, Any]], tmodel: Any) -> None:
    for p, tp in zip(params, tmodel.parameters(), strict=True):
        if tp.grad is None:
            assert p.grad is None
        else:
            assert p.grad is not None
            np.testing.assert_allclose(p.grad.data, tp.grad.numpy(), rtol=RTOL, atol=1e-15)


# ----- opt.step() / opt.zero_grad() against torch.optim ------------------------------------

# the store form's configurations (tests/test_optim.py), plus plain momentum
CONFIGS: list[tuple[str, dict[str, Any]]] = [("SGD", {"lr": 0.1, "momentum": 0.9}), *STORE_CONFIGS]


@pytest.mark.parametrize(("name", "kw"), CONFIGS)
@pytest.mark.parametrize("set_to_none", [True, False])
def test_training_loop_matches_torch(name: str, kw: dict[str, Any], set_to_none: bool) -> None:
    params, tmodel = _models()
    opt = getattr(go, name)(params, **kw)
    topt = getattr(torch.optim, name)(tmodel.parameters(), **kw)
    rng = np.random.default_rng(1)
    for _ in range(6):
        opt.zero_grad(set_to_none=set_to_none)
        topt.zero_grad(set_to_none=set_to_none)
        _assert_grads_equal(params, tmodel)
        _backward(tmodel, params, rng)
        opt.step()
        topt.step()
        _assert_params_equal(params, tmodel)


@pytest.mark.parametrize(("name", "kw"), [CONFIGS[2], CONFIGS[5], CONFIGS[7], CONFIGS[9]])
def test_parameter_without_grad_is_skipped_like_torch(name: str, kw: dict[str, Any]) -> None:
    """A parameter whose ``.grad`` is None is not updated and its state (momentum buffer,
    Adam's step count) does not advance; the later steps then match torch's too."""
    params, tmodel = _models()
    opt = getattr(go, name)(params, **kw)
    topt = getattr(torch.optim, name)(tmodel.parameters(), **kw)
    rng = np.random.default_rng(2)
    frozen = params[0].data.copy()
    for it, skip in enumerate([(0,), (0, 3), (), (3,), ()]):
        opt.zero_grad()
        topt.zero_grad()
        _backward(tmodel, params, rng, skip)
        assert all(params[i].grad is None for i in skip)
        opt.step()
        topt.step()
        _assert_params_equal(params, tmodel)
        if it == 0:
            np.testing.assert_array_equal(params[0].data, frozen)
            assert opt.state[0] == {} and 0 not in opt.state_dict()["state"]
    steps = [s.get("step") for s in opt.state]
    if "step" in opt._state_keys:  # Adam, RMSprop: params[0] missed 2 of 5 steps, params[3] 2
        assert steps == [3, 5, 5, 3, 5, 5]


def test_zero_grad_modes() -> None:
    params, tmodel = _models()
    opt = go.SGD(params, lr=0.1)
    topt = torch.optim.SGD(tmodel.parameters(), lr=0.1)
    rng = np.random.default_rng(3)
    _backward(tmodel, params, rng, skip=(5,))
    arrays = [p.grad.data if p.grad is not None else None for p in params]
    opt.zero_grad(set_to_none=False)
    topt.zero_grad(set_to_none=False)
    _assert_grads_equal(params, tmodel)
    assert params[5].grad is None  # None stays None, as in torch
    for p, a in zip(params[:5], arrays[:5], strict=True):
        assert p.grad is not None and p.grad.data is a  # zeroed in place
        assert not a.any()
    opt.zero_grad()  # PyTorch 2's default: set_to_none=True
    topt.zero_grad()
    assert all(p.grad is None for p in params)
    _assert_grads_equal(params, tmodel)
    opt.step()  # no gradient anywhere: nothing happens, as in torch
    topt.step()
    _assert_params_equal(params, tmodel)
    assert all(s == {} for s in opt.state)


def test_zero_grad_in_place_refuses_a_read_only_grad() -> None:
    params, _ = _models()
    params[0].grad = np.ones(params[0].shape)
    ro = np.ones(params[1].shape)
    ro.flags.writeable = False
    params[1].grad = ro
    opt = go.SGD(params, lr=0.1)
    with pytest.raises(ValueError, match="read-only"):
        opt.zero_grad(set_to_none=False)
    assert params[0].grad is not None and params[0].grad.data.all()  # checked before any is zeroed
    opt.zero_grad()
    assert params[1].grad is None


def test_store_form_ignores_dot_grad() -> None:
    """``step(grads)`` reads the store only; ``step()`` reads ``.grad`` only; same update."""
    a, _ = _models()
    b, _ = _models()
    rng = np.random.default_rng(4)
    gs = [rng.standard_normal(p.shape) for p in a]
    store = Gradients()
    for p, g in zip(a, gs, strict=True):
        store.grad_replace(p, g.copy())
        p.grad = np.full(p.shape, 1e6)  # not read by step(store)
    for p, g in zip(b, gs, strict=True):
        p.grad = g.copy()
    opt_a, opt_b = go.Adam(a, lr=0.01), go.Adam(b, lr=0.01)
    for _ in range(3):
        opt_a.step(store)
        opt_b.step()
    for pa, pb in zip(a, b, strict=True):
        np.testing.assert_array_equal(pa.data, pb.data)
    for p in b:  # step() never writes .grad
        assert p.grad is not None


def test_param_groups_read_dot_grad() -> None:
    params, tmodel = _models()
    tps = list(tmodel.parameters())
    opt = go.AdamW([{"params": params[0::2]}, {"params": params[1::2], "weight_decay": 0.0}], lr=0.01)
    topt = torch.optim.AdamW([{"params": tps[0::2]}, {"params": tps[1::2], "weight_decay": 0.0}], lr=0.01)
    rng = np.random.default_rng(5)
    for _ in range(4):
        opt.zero_grad()
        topt.zero_grad()
        _backward(tmodel, params, rng)
        opt.step()
        topt.step()
        _assert_params_equal(params, tmodel)


def test_step_errors() -> None:
    params, _ = _models()
    p = params[0]
    with pytest.raises(ShapeError):  # the Tensor refuses a wrong-shaped gradient itself
        p.grad = np.zeros((2, 2))
    with pytest.raises(DTypeError):
        p.grad = np.zeros(p.shape, np.float32)
    with pytest.raises(TypeError):
        p.grad = [[0.0] * 4] * 8  # type: ignore[assignment]
    opt = go.SGD(params, lr=0.1)
    p.grad = np.zeros(p.shape)
    p.data = np.zeros((3, 3))  # the parameter's array replaced after its gradient was set
    with pytest.raises(ShapeError, match=r"params\[0\]\.grad"):
        opt.step()
    p.data = np.zeros((8, 4), np.float32)
    with pytest.raises(DTypeError, match=r"params\[0\]\.grad"):
        opt.step()
    p.data = np.zeros((8, 4))
    p.data.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        opt.step()


# ----- gradtape.nn.utils against torch.nn.utils --------------------------------------------


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 3.0, "inf"])
@pytest.mark.parametrize("max_norm", [0.05, 1e3])
def test_clip_grad_norm_matches_torch(norm_type: Any, max_norm: float) -> None:
    params, tmodel = _models()
    _backward(tmodel, params, np.random.default_rng(6), skip=(2,))
    arrays = [None if p.grad is None else p.grad.data for p in params]
    total = clip_grad_norm_(params, max_norm=max_norm, norm_type=norm_type)
    ttotal = torch.nn.utils.clip_grad_norm_(tmodel.parameters(), max_norm=max_norm, norm_type=norm_type)
    assert isinstance(total, Tensor) and total.shape == () and total.dtype == np.float64
    assert ttotal.dtype == torch.float64
    assert float(total) == pytest.approx(float(ttotal), rel=RTOL)
    _assert_grads_equal(params, tmodel)
    for p, a in zip(params, arrays, strict=True):  # scaled in place
        assert (p.grad is None) if a is None else (p.grad is not None and p.grad.data is a)


def test_clip_grad_norm_single_tensor_float32_and_no_grads() -> None:
    rng = np.random.default_rng(7)
    g = rng.standard_normal((3, 5)).astype(np.float32)
    p = Cpu(seed=0).tensor(np.zeros((3, 5), np.float32))
    tp = torch.zeros((3, 5), requires_grad=True)
    p.grad, tp.grad = g.copy(), torch.from_numpy(g.copy())
    total = clip_grad_norm_(p, 0.5)  # a single tensor, as torch accepts
    ttotal = torch.nn.utils.clip_grad_norm_(tp, 0.5)
    assert total.dtype == np.float32 and ttotal.dtype == torch.float32
    assert float(total) == pytest.approx(float(ttotal), rel=1e-6)
    assert p.grad is not None
    np.testing.assert_allclose(p.grad.data, tp.grad.numpy(), rtol=1e-6)
    # nothing has a gradient: torch returns tensor(0.) (float32)
    p.grad, tp.grad = None, None
    total = clip_grad_norm_([p], 1.0)
    ttotal = torch.nn.utils.clip_grad_norm_([tp], 1.0)
    assert float(total) == float(ttotal) == 0.0 and total.dtype == np.float32
    assert float(clip_grad_norm_([], 1.0)) == 0.0


def test_clip_grad_norm_nonfinite() -> None:
    params, tmodel = _models()
    _backward(tmodel, params, np.random.default_rng(8))
    g0 = params[0].grad
    assert g0 is not None
    g0.data[0, 0] = math.inf
    tp0 = next(iter(tmodel.parameters()))
    tp0.grad[0, 0] = math.inf
    before = [p.grad.data.copy() for p in params if p.grad is not None]
    with pytest.raises(RuntimeError, match="error_if_nonfinite"):  # torch's type; also a ValueError
        clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    with pytest.raises(RuntimeError):
        torch.nn.utils.clip_grad_norm_(tmodel.parameters(), 1.0, error_if_nonfinite=True)
    with pytest.raises(ValueError, match="error_if_nonfinite"):
        clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    for p, b in zip(params, before, strict=True):  # nothing scaled
        assert p.grad is not None
        np.testing.assert_array_equal(p.grad.data, b)
    total = clip_grad_norm_(params, 1.0)  # as torch: the norm is inf, every gradient times 0
    ttotal = torch.nn.utils.clip_grad_norm_(tmodel.parameters(), 1.0)
    assert float(total) == float(ttotal) == math.inf
    for p, tp in zip(params, tmodel.parameters(), strict=True):
        assert p.grad is not None
        np.testing.assert_array_equal(p.grad.data, tp.grad.numpy())


def test_store_form_and_dot_grad_form_agree() -> None:
    """``optim.clip_grad_norm_(params, grads, ...)`` and ``nn.utils.clip_grad_norm_(params, ...)``
    share one implementation; the store form refuses PyTorch's call rather than guessing."""
    params, tmodel = _models()
    _backward(tmodel, params, np.random.default_rng(9))
    store = Gradients()
    for p in params:
        assert p.grad is not None
        store.grad_replace(p, p.grad.data.copy())
    for norm_type in (2.0, 1.0, math.inf):
        a = go.clip_grad_norm_(params, store, 0.3, norm_type=norm_type)
        b = clip_grad_norm_(params, 0.3, norm_type=norm_type)
        assert isinstance(a, float) and a == float(b)
        for p in params:
            assert p.grad is not None
            np.testing.assert_array_equal(store.get(p).numpy(), p.grad.data)
    with pytest.raises(TypeError, match=r"gradtape\.nn\.utils\.clip_grad_norm_"):
        go.clip_grad_norm_(params, 1.0)  # type: ignore[call-arg, arg-type]
    with pytest.raises(TypeError, match=r"gradtape\.nn\.utils\.clip_grad_norm_"):
        go.clip_grad_norm_(params, max_norm=1.0)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"gradtape\.nn\.utils\.clip_grad_norm_"):
        go.clip_grad_norm_(params, 1.0, 2.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Gradients"):
        go.clip_grad_norm_(params, params, 1.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("clip_value", [0.01, 0.1, 1e3])
def test_clip_grad_value_matches_torch(clip_value: float) -> None:
    params, tmodel = _models()
    _backward(tmodel, params, np.random.default_rng(10), skip=(1,))
    arrays = [None if p.grad is None else p.grad.data for p in params]
    clip_grad_value_(params, clip_value)  # returns None, as torch's
    torch.nn.utils.clip_grad_value_(tmodel.parameters(), clip_value)
    _assert_grads_equal(params, tmodel)
    for p, a in zip(params, arrays, strict=True):
        assert (p.grad is None) if a is None else (p.grad is not None and p.grad.data is a)


def test_parameters_to_vector_and_back_match_torch() -> None:
    params, tmodel = _models()
    vec = parameters_to_vector(params)
    tvec = torch.nn.utils.parameters_to_vector(tmodel.parameters())
    assert vec.shape == (sum(p.data.size for p in params),) and vec.dtype == np.float64
    np.testing.assert_array_equal(vec.data, tvec.detach().numpy())
    assert not any(np.shares_memory(vec.data, p.data) for p in params)  # a copy
    new = np.arange(vec.shape[0], dtype=np.float64) / 7.0
    arrays = [p.data for p in params]
    vector_to_parameters(Cpu(seed=0).tensor(new), params)
    torch.nn.utils.vector_to_parameters(torch.from_numpy(new.copy()), tmodel.parameters())
    _assert_params_equal(params, tmodel)
    assert all(p.data is a for p, a in zip(params, arrays, strict=True))  # written in place
    np.testing.assert_array_equal(parameters_to_vector(params).data, new)


# ----- argument errors ------------------------------------------------------------------

BAD: list[tuple[Callable[[list[Tensor[Any, Any]]], object], type[Exception], str]] = [
    (lambda ps: clip_grad_norm_(ps, -1.0), ValueError, "max_norm"),
    (lambda ps: clip_grad_norm_(ps, float("nan")), ValueError, "max_norm"),
    (lambda ps: clip_grad_norm_(ps, 1.0, norm_type=0.0), ValueError, "norm_type"),
    (lambda ps: clip_grad_norm_(ps, 1.0, norm_type=-2.0), ValueError, "norm_type"),
    (lambda ps: clip_grad_norm_(3.0, 1.0), TypeError, "iterable"),  # type: ignore[arg-type]
    (lambda ps: clip_grad_norm_([ps[0], np.zeros(3)], 1.0), TypeError, r"parameters\[1\]"),  # type: ignore[list-item]
    (lambda ps: clip_grad_value_(ps, -0.1), ValueError, "clip_value"),
    (lambda ps: clip_grad_value_(ps, float("nan")), ValueError, "clip_value"),
    (lambda ps: parameters_to_vector([]), ValueError, "empty"),
    (lambda ps: vector_to_parameters([1.0, 2.0], ps), TypeError, "vec"),  # type: ignore[arg-type]
    (lambda ps: vector_to_parameters(np.zeros(3), ps), ShapeError, "3 elements|vec"),
    (lambda ps: vector_to_parameters(np.zeros((1, 8)), ps), ShapeError, "1-D"),
]


@pytest.mark.parametrize(("call", "exc", "word"), BAD)
def test_bad_arguments_raise(call: Callable[[list[Tensor[Any, Any]]], object], exc: type[Exception], word: str) -> None:
    dev = Cpu(seed=0)
    ps = [dev.tensor(np.zeros((2, 2))), dev.tensor(np.zeros(4))]
    for p in ps:
        p.grad = np.ones(p.shape)
    with pytest.raises(exc, match=word):
        call(ps)


def test_clipping_refuses_a_read_only_grad_before_scaling_any() -> None:
    dev = Cpu(seed=0)
    a, b = dev.tensor(np.zeros(3)), dev.tensor(np.zeros(3))
    a.grad = np.full(3, 10.0)
    ro = np.full(3, 10.0)
    ro.flags.writeable = False
    b.grad = ro
    for call in (lambda: clip_grad_norm_([a, b], 1.0), lambda: clip_grad_value_([a, b], 1.0)):
        with pytest.raises(ValueError, match="read-only"):
            call()
        assert a.grad is not None
        np.testing.assert_array_equal(a.grad.data, 10.0)
