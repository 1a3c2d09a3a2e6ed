"""Issue 27, optimizers and schedules: PyTorch programs port by renaming.

Each test is a PyTorch user's training loop on a gradtape model (``opt.zero_grad();
loss.backward(); opt.step(); sched.step()``, or gradtape's store spelling) and the same loop
in PyTorch from identical float64 weights; every parameter is compared after every step, and
schedules' rates (and OneCycleLR's momentum) epoch by epoch, including runs saved and resumed
mid-way against PyTorch's own resumed run. Bad arguments are refused, naming the optimizer or
schedule and the argument, where PyTorch refuses them.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import gradtape as gt
from gradtape import losses, nn, optim
from gradtape.devices.kernels import optim as ko
from gradtape.devices.kernels.elementwise import PARALLEL_THRESHOLD, _fast_same
from gradtape.optim import lr_scheduler

torch: Any = pytest.importorskip("torch")

Array = np.ndarray[Any, Any]
F64 = np.float64
RTOL = 1e-10


@pytest.fixture(autouse=True)
def _torch_float64() -> Iterator[None]:
    """PyTorch keeps scalar state (NAdam's mu_product, step counts) in the default dtype: make
    it float64 so that both sides compute in float64."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


# ----- the model, on both sides ------------------------------------------------------------


def _model(seed: int = 0) -> tuple[nn.Module, Any]:
    """A gradtape MLP 4 -> 8 -> 3 (tanh) and the torch MLP with the same float64 weights."""
    dev = gt.Cpu(seed=seed)
    model = nn.Sequential(nn.Linear(4, 8, dev=dev, dtype=F64), nn.Tanh(), nn.Linear(8, 3, dev=dev, dtype=F64))
    ref = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).double()
    with torch.no_grad():
        for p, q in zip(model.parameters(), ref.parameters(), strict=True):
            q.copy_(torch.from_numpy(np.array(p.data)))
    return model, ref


def _batches(n: int, seed: int = 0) -> list[tuple[Array, Array]]:
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((6, 4)), rng.standard_normal((6, 3))) for _ in range(n)]


def _same_params(model: nn.Module, ref: Any, rtol: float = RTOL, what: str = "") -> None:
    for (name, p), q in zip(model.named_parameters(), ref.parameters(), strict=True):
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=rtol, atol=1e-13, err_msg=f"{name} {what}")


def _torch_step(ref: Any, topt: Any, x: Array, y: Array) -> float:
    topt.zero_grad()
    loss = torch.nn.functional.mse_loss(ref(torch.from_numpy(x)), torch.from_numpy(y))
    loss.backward()
    topt.step()
    return float(loss.item())


def _our_step(model: nn.Module, opt: optim.Optimizer, x: Array, y: Array) -> float:
    """PyTorch's spelling: ``.grad`` filled by ``backward()``."""
    dev = gt.Cpu()
    opt.zero_grad()
    loss = losses.mse_loss(model(dev.tensor(x)), dev.tensor(y))
    loss.backward()
    opt.step()
    return loss.item()


def _our_store_step(model: nn.Module, opt: optim.Optimizer, x: Array, y: Array) -> float:
    """gradtape's store spelling: ``opt.step(grads)``."""
    dev = gt.Cpu()
    grads = model.alloc_grads()
    loss = losses.mse_loss(model(dev.tensor(x).trace(grads)), dev.tensor(y))
    grads = loss.backward()
    opt.step(grads)
    model.zero_grads(grads)
    return loss.item()


# ----- the new optimizers against torch.optim ----------------------------------------------

CONFIGS: list[tuple[str, dict[str, Any]]] = [
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "eps": 1e-5, "weight_decay": 0.1}),
    ("Adadelta", {"lr": 0.3, "maximize": True}),
    ("Adagrad", {}),
    ("Adagrad", {"lr": 0.05, "lr_decay": 0.1, "weight_decay": 0.05, "initial_accumulator_value": 0.2, "eps": 1e-8}),
    ("Adamax", {}),
    ("Adamax", {"lr": 0.01, "betas": (0.3, 0.9), "eps": 1e-6, "weight_decay": 0.1}),
    ("Adamax", {"maximize": True}),
    ("NAdam", {}),
    ("NAdam", {"lr": 0.01, "betas": (0.8, 0.95), "weight_decay": 0.1, "momentum_decay": 0.01}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("RAdam", {}),
    ("RAdam", {"lr": 0.01, "betas": (0.5, 0.9), "weight_decay": 0.1}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
    ("SGD", {}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.05, "momentum": 0.5, "maximize": True}),
    ("Adam", {"lr": 0.01, "maximize": True}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.5, "maximize": True}),
    ("Rprop", {}),
    ("Rprop", {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.08)}),
    ("Rprop", {"lr": 0.02, "step_sizes": (0.01, 0.005), "maximize": True}),  # min > max: max wins, as torch's clamp
    ("ASGD", {}),
    ("ASGD", {"lr": 0.05, "lambd": 0.1, "alpha": 0.6, "t0": 3, "weight_decay": 0.1}),  # averages from step 6
    ("ASGD", {"lr": 0.05, "t0": 0.5, "maximize": True}),
]
STEPS = 8  # RAdam's rectification starts at step 6


@pytest.mark.parametrize("spelling", ["torch", "store"])
@pytest.mark.parametrize(("name", "kw"), CONFIGS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CONFIGS)])
def test_training_loop_matches_torch(name: str, kw: dict[str, Any], spelling: str) -> None:
    model, ref = _model(1)
    opt = getattr(optim, name)(model.parameters(), **kw)
    topt = getattr(torch.optim, name)(ref.parameters(), foreach=False, **kw)
    step = _our_step if spelling == "torch" else _our_store_step
    for i, (x, y) in enumerate(_batches(STEPS, 1)):
        loss = step(model, opt, x, y)
        tloss = _torch_step(ref, topt, x, y)
        assert loss == pytest.approx(tloss, rel=RTOL)
        _same_params(model, ref, what=f"after step {i + 1}")
    _same_state(opt, topt)


def _same_state(opt: optim.Optimizer, topt: Any, rtol: float = 1e-9) -> None:
    """``state_dict()["state"]`` as PyTorch's: the same parameters and keys (PyTorch's names),
    and the same step counts, scalars (NAdam's ``mu_product``, ASGD's ``eta`` and ``mu``) and
    arrays (ASGD's average ``ax``, Rprop's ``prev`` and ``step_size``, the moments...)."""
    ours, theirs = opt.state_dict()["state"], topt.state_dict()["state"]
    assert sorted(ours) == sorted(theirs)
    for i, st in ours.items():
        assert sorted(st) == sorted(theirs[i]), f"params[{i}]"
        for k, v in st.items():
            if isinstance(v, np.ndarray):
                np.testing.assert_allclose(v, theirs[i][k].numpy(), rtol=rtol, atol=1e-13, err_msg=k)
            elif k == "step":
                assert isinstance(v, int) and v == int(theirs[i][k])
            else:
                assert isinstance(v, float) and v == pytest.approx(float(theirs[i][k]), rel=1e-12), k


SWITCHED = ["SGD", "Adam", "AdamW", "RMSprop", "Adadelta", "Adagrad", "Adamax", "NAdam", "RAdam", "Rprop", "ASGD"]


def test_defaults_are_pytorchs() -> None:
    """Every optimizer's signature is PyTorch's: the same parameters in the same order, kinds
    (positional or keyword-only) and defaults, PyTorch's implementation switches (``foreach``,
    ``fused``, ``capturable``, ``differentiable``) included, so a constructor call ports as
    written."""
    import inspect

    for name in (*SWITCHED, "LBFGS"):
        ours = inspect.signature(getattr(optim, name)).parameters
        theirs = inspect.signature(getattr(torch.optim, name)).parameters
        assert list(ours) == list(theirs), name
        for k, v in theirs.items():
            assert ours[k].kind == v.kind, f"{name}: {k}"
            if v.default is not inspect.Parameter.empty:
                assert ours[k].default == v.default, f"{name}({k}=...)"


@pytest.mark.parametrize("name", SWITCHED)
def test_implementation_switches_port_and_change_nothing(name: str) -> None:
    """PyTorch's ``foreach=``/``fused=``/``capturable=`` as a ported program passes them (each
    optimizer takes the ones PyTorch's does): the run equals PyTorch's run with the same
    switches, the groups keep them as PyTorch's do (same keys), and ``differentiable=True``,
    autograd through ``step()``, is refused naming the optimizer."""
    import inspect

    theirs = inspect.signature(getattr(torch.optim, name)).parameters
    taken = [k for k in ("foreach", "fused", "capturable") if k in theirs]
    kw: dict[str, Any] = {k: False for k in taken}  # what a CPU program passes (capturable=True is CUDA's)
    model, ref = _model(4)
    opt = getattr(optim, name)(model.parameters(), lr=0.01, **kw)
    topt = getattr(torch.optim, name)(ref.parameters(), lr=0.01, **kw)
    assert sorted(opt.param_groups[0]) == sorted(topt.param_groups[0]), name
    for k in taken:
        assert opt.param_groups[0][k] == topt.param_groups[0][k], f"{name}: {k}"
    for x, y in _batches(4, 4):
        _our_step(model, opt, x, y)
        _torch_step(ref, topt, x, y)
        _same_params(model, ref)
    assert getattr(optim, name)(model.parameters(), foreach=True).param_groups[0]["foreach"] is True
    with pytest.raises(ValueError, match=f"{name}: differentiable=True"):
        getattr(optim, name)(model.parameters(), differentiable=True)


WD = {"weight_decay": 0.1}


@pytest.mark.parametrize(
    ("name", "groups", "kw"),
    [
        ("Adagrad", [{"lr_decay": 0.2}, {"lr": 0.05, "initial_accumulator_value": 0.5}], WD),
        ("NAdam", [{"decoupled_weight_decay": True}, {"momentum_decay": 0.02, "betas": (0.7, 0.9)}], WD),
        ("Adadelta", [{"rho": 0.5}, {"weight_decay": 0.2}], WD),
        ("RAdam", [{"weight_decay": 0.0}, {"lr": 0.02}], WD),
        ("Rprop", [{"etas": (0.4, 1.3)}, {"lr": 0.02, "step_sizes": (1e-4, 0.05)}], {"etas": (0.6, 1.1)}),
        ("ASGD", [{"t0": 2}, {"lr": 0.02, "lambd": 0.01, "alpha": 0.5}], WD),
    ],
)
def test_parameter_groups_match_torch(name: str, groups: list[dict[str, Any]], kw: dict[str, Any]) -> None:
    model, ref = _model(2)
    ps, tps = model.parameters(), list(ref.parameters())
    opt = getattr(optim, name)([{"params": ps[:2], **groups[0]}, {"params": ps[2:], **groups[1]}], **kw)
    topt = getattr(torch.optim, name)(
        [{"params": tps[:2], **groups[0]}, {"params": tps[2:], **groups[1]}], **kw, foreach=False
    )
    for x, y in _batches(5, 2):
        _our_step(model, opt, x, y)
        _torch_step(ref, topt, x, y)
        _same_params(model, ref)
    _same_state(opt, topt)


RESUMED: list[tuple[str, dict[str, Any]]] = [
    ("Adadelta", {}),
    ("Adagrad", {}),
    ("Adamax", {}),
    ("NAdam", {}),
    ("RAdam", {}),
    ("Rprop", {"etas": (0.4, 1.3)}),
    ("ASGD", {"t0": 2, "lambd": 0.01}),  # eta, mu and the average ax carried across the save
]


@pytest.mark.parametrize(("name", "kw"), RESUMED, ids=[n for n, _ in RESUMED])
def test_state_dict_resume_matches_torch(name: str, kw: dict[str, Any]) -> None:
    """Train 3 steps, save, rebuild model and optimizer, load, train 4 more: every parameter
    and the whole state as torch's uninterrupted run."""
    model, ref = _model(3)
    opt = getattr(optim, name)(model.parameters(), lr=0.05, **kw)
    topt = getattr(torch.optim, name)(ref.parameters(), lr=0.05, foreach=False, **kw)
    batches = _batches(7, 3)
    for x, y in batches[:3]:
        _our_step(model, opt, x, y)
        _torch_step(ref, topt, x, y)
    saved = opt.state_dict()
    weights = [p.data.copy() for p in model.parameters()]
    model2, _ = _model(99)
    for p, w in zip(model2.parameters(), weights, strict=True):
        p.data[...] = w
    opt2 = getattr(optim, name)(model2.parameters(), lr=1.0)
    opt2.load_state_dict(saved)
    assert opt2.param_groups[0]["lr"] == 0.05
    for x, y in batches[3:]:
        _our_step(model2, opt2, x, y)
        _torch_step(ref, topt, x, y)
        _same_params(model2, ref)
    _same_state(opt2, topt)


def test_adagrad_state_exists_from_construction_like_torch() -> None:
    model, ref = _model(4)
    opt = optim.Adagrad(model.parameters(), initial_accumulator_value=0.3)
    topt = torch.optim.Adagrad(ref.parameters(), initial_accumulator_value=0.3)
    ours, theirs = opt.state_dict()["state"], topt.state_dict()["state"]
    assert sorted(ours) == sorted(theirs)
    for i in ours:
        assert ours[i]["step"] == 0
        np.testing.assert_array_equal(ours[i]["sum"], theirs[i]["sum"].numpy())


@pytest.mark.parametrize("name", ["Adadelta", "Adagrad", "Adamax", "NAdam", "RAdam", "Rprop", "ASGD"])
def test_float32_follows_torch(name: str) -> None:
    """float32 parameters (the fused kernels compute in float32, as PyTorch): close to torch's
    float32 run."""
    rng = np.random.default_rng(5)
    w0 = rng.standard_normal((7, 5)).astype(np.float32)
    p = gt.Cpu().tensor(w0.copy(), requires_grad=True)
    tp = torch.tensor(w0.copy(), requires_grad=True)
    opt = getattr(optim, name)([p], lr=0.01)
    topt = getattr(torch.optim, name)([tp], lr=0.01, foreach=False)
    for _ in range(6):
        g = rng.standard_normal((7, 5)).astype(np.float32)
        p.grad = g.copy()
        tp.grad = torch.from_numpy(g.copy())
        opt.step()
        topt.step()
    assert p.dtype == np.float32
    np.testing.assert_allclose(p.data, tp.detach().numpy(), rtol=2e-5, atol=2e-6)


def _run_kernel(
    kernels: Any, n_state: int, shape: tuple[int, ...], scalars: tuple[Any, ...], signed: bool = False
) -> None:
    """The fused kernel (serial or parallel by size) against its numpy form, the reference.
    ``signed``: the gradient and the first state buffer of either sign, a tenth of them 0."""
    rng = np.random.default_rng(6)
    arrs = [np.abs(rng.standard_normal(shape)) + 0.1 for _ in range(2 + n_state)]  # p, g, state
    if signed:
        for a in arrs[1:3]:
            a *= rng.choice([-1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0], size=shape)
    ref = [a.copy() for a in arrs]
    assert _fast_same(arrs[0], *arrs[1:])  # the kernel runs, not the numpy form
    ko._run(kernels, arrs[0], arrs[1:], *scalars)
    kernels[2](ref[0], *ref[1:], *scalars)
    for got, want in zip(arrs, ref, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


KERNELS = [
    (ko.ADADELTA, 2, (0.9, 0.8, 1e-6, 0.1), False),
    (ko.ADAGRAD, 1, (0.05, 1e-10, 0.1), False),
    (ko.ADAMAX, 2, (0.002, 0.9, 0.999, 1e-8, 0.1), False),
    (ko.NADAM, 2, (0.999, 0.1, 0.9, 0.999, 0.3, 1e-8, 0.01, 0.02), False),
    (ko.RADAM, 2, (0.999, 0.1, 0.9, 0.999, 0.01, 1e-8, True), False),
    (ko.RADAM, 2, (1.0, 0.0, 0.9, 0.999, 0.01, 1e-8, False), False),
    (ko.RPROP, 2, (0.5, 1.2, 0.3, 1.0), True),  # g * prev of each sign and 0; both bounds hit
    (ko.RPROP, 2, (0.5, 1.2, 2.0, 1.0), True),  # min > max: max, as torch's clamp
    (ko.ASGD, 1, (0.999, 0.05, 0.1, 0.5, True), True),
    (ko.ASGD, 1, (1.0, 0.05, 0.0, 1.0, False), True),
]


@pytest.mark.parametrize(("kernels", "n_state", "scalars", "signed"), KERNELS)
def test_kernels_match_numpy_serial_and_parallel(
    kernels: Any, n_state: int, scalars: tuple[Any, ...], signed: bool
) -> None:
    _run_kernel(kernels, n_state, (40, 30), scalars, signed)  # serial kernel
    _run_kernel(kernels, n_state, (PARALLEL_THRESHOLD + 5,), scalars, signed)  # parallel kernel


@pytest.mark.parametrize(
    ("name", "kw"),
    [(n, WD) for n in ("Adadelta", "Adagrad", "Adamax", "NAdam", "RAdam")]
    + [("Rprop", {"step_sizes": (1e-3, 0.3)}), ("ASGD", {"t0": 2, **WD})],
)
def test_non_contiguous_parameter_equals_contiguous(name: str, kw: dict[str, Any]) -> None:
    """An F-ordered parameter takes the numpy form; a C-contiguous one the fused kernel."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((5, 7))
    a: gt.Tensor[Any, Any] = gt.Tensor(x.copy().T, gt.Cpu())
    b = gt.Cpu().tensor(x.T.copy(), requires_grad=True)
    assert not a.data.flags.c_contiguous and b.data.flags.c_contiguous
    data = a.data
    oa = getattr(optim, name)([a], lr=0.1, **kw)
    ob = getattr(optim, name)([b], lr=0.1, **kw)
    for _ in range(7):
        g = rng.standard_normal((7, 5))
        grads = gt.Gradients()
        grads.grad_replace(a, g.copy())
        grads.grad_replace(b, g.copy())
        oa.step(grads)
        ob.step(grads)
    assert a.data is data  # in place
    np.testing.assert_allclose(a.data, b.data, rtol=1e-13)
    for sa, sb in zip(oa.state_dict()["state"][0].values(), ob.state_dict()["state"][0].values(), strict=True):
        np.testing.assert_allclose(sa, sb, rtol=1e-13)


# ----- LBFGS ------------------------------------------------------------------------------


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
@pytest.mark.parametrize("spelling", ["torch", "store"])
def test_lbfgs_closure_loop_matches_torch(line_search_fn: str | None, spelling: str) -> None:
    """pytorch/examples' time_sequence_prediction loop: ``loss = opt.step(closure)``."""
    model, ref = _model(9)
    dev = gt.Cpu()
    x, y = _batches(1, 9)[0]
    kw: dict[str, Any] = {"lr": 0.8, "max_iter": 12, "history_size": 5, "line_search_fn": line_search_fn}
    opt = optim.LBFGS(model.parameters(), **kw)
    topt = torch.optim.LBFGS(ref.parameters(), **kw)

    def closure() -> Any:
        opt.zero_grad()
        loss = losses.mse_loss(model(dev.tensor(x)), dev.tensor(y))
        loss.backward()
        return loss

    def store_closure() -> Any:
        grads = model.alloc_grads()
        loss = losses.mse_loss(model(dev.tensor(x).trace(grads)), dev.tensor(y))
        return loss, loss.backward()

    def tclosure() -> Any:
        topt.zero_grad()
        loss = torch.nn.functional.mse_loss(ref(torch.from_numpy(x)), torch.from_numpy(y))
        loss.backward()
        return loss

    for i in range(4):
        loss = opt.step(closure if spelling == "torch" else store_closure)
        tloss = topt.step(tclosure)
        assert float(loss) == pytest.approx(tloss.item(), rel=1e-9), f"step {i}"
        _same_params(model, ref, rtol=1e-8, what=f"after step {i}")
        tstate = topt.state[next(iter(ref.parameters()))]
        assert opt.state[0]["func_evals"] == tstate["func_evals"]
        assert opt.state[0]["n_iter"] == tstate["n_iter"]
        assert len(opt.state[0]["old_dirs"]) == len(tstate["old_dirs"])


def test_lbfgs_state_dict_resume_matches_torch() -> None:
    model, ref = _model(10)
    dev = gt.Cpu()
    x, y = _batches(1, 10)[0]
    kw: dict[str, Any] = {"lr": 1.0, "max_iter": 5, "line_search_fn": "strong_wolfe"}
    topt = torch.optim.LBFGS(ref.parameters(), **kw)

    def make_closure(m: nn.Module, o: optim.LBFGS) -> Callable[[], Any]:
        def closure() -> Any:
            o.zero_grad()
            loss = losses.mse_loss(m(dev.tensor(x)), dev.tensor(y))
            loss.backward()
            return loss

        return closure

    def tclosure() -> Any:
        topt.zero_grad()
        loss = torch.nn.functional.mse_loss(ref(torch.from_numpy(x)), torch.from_numpy(y))
        loss.backward()
        return loss

    opt = optim.LBFGS(model.parameters(), **kw)
    opt.step(make_closure(model, opt))
    topt.step(tclosure)
    saved = opt.state_dict()
    model2, _ = _model(0)
    for p, q in zip(model2.parameters(), model.parameters(), strict=True):
        p.data[...] = q.data
    opt2 = optim.LBFGS(model2.parameters(), **kw)
    opt2.load_state_dict(saved)
    for _ in range(2):
        opt2.step(make_closure(model2, opt2))
        topt.step(tclosure)
        _same_params(model2, ref, rtol=1e-8)


def test_lbfgs_stops_at_an_optimum_and_returns_the_first_loss() -> None:
    p = gt.Cpu().tensor(np.array([3.0, -1.0]), requires_grad=True)
    opt = optim.LBFGS([p], line_search_fn="strong_wolfe")
    calls = []

    def closure() -> Any:
        opt.zero_grad()
        loss = ((p - gt.Cpu().tensor(np.array([1.0, 2.0]))) ** 2).sum()
        loss.backward()
        calls.append(loss.item())
        return loss

    first = opt.step(closure)
    assert first.item() == pytest.approx(13.0)
    np.testing.assert_allclose(p.data, [1.0, 2.0], atol=1e-6)
    n = len(calls)
    assert n <= opt.max_eval
    opt.step(closure)  # at the optimum: one evaluation, no move
    assert len(calls) == n + 1


def test_lbfgs_errors() -> None:
    model, _ = _model(11)
    ps = model.parameters()
    with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options"):
        optim.LBFGS([{"params": ps[:2]}, {"params": ps[2:]}])
    with pytest.raises(ValueError, match="LBFGS: line_search_fn must be None or 'strong_wolfe'"):
        optim.LBFGS(ps, line_search_fn="wolfe")
    with pytest.raises(ValueError, match="LBFGS: max_iter"):
        optim.LBFGS(ps, max_iter=0)
    with pytest.raises(ValueError, match="LBFGS: history_size"):
        optim.LBFGS(ps, history_size=0)
    with pytest.raises(ValueError, match="LBFGS: lr"):
        optim.LBFGS(ps, lr=-1.0)
    opt = optim.LBFGS(ps)
    with pytest.raises(TypeError, match=r"LBFGS\.step: closure must be a callable"):
        opt.step(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"LBFGS\.step: the closure must return the loss"):
        opt.step(lambda: "loss")
    p32 = gt.Cpu().tensor(np.zeros(2, np.float32), requires_grad=True)
    with pytest.raises(gt.DTypeError, match="LBFGS: the parameters mix dtypes"):
        optim.LBFGS([ps[0], p32])


# ----- bad arguments, refused as PyTorch refuses them -------------------------------------

BAD: list[tuple[str, dict[str, Any], str]] = [
    ("Adadelta", {"lr": -0.1}, "Adadelta: lr"),
    ("Adadelta", {"rho": 1.5}, r"Adadelta: rho must be in \[0, 1\]"),
    ("Adadelta", {"rho": -0.1}, "Adadelta: rho"),
    ("Adadelta", {"eps": -1e-6}, "Adadelta: eps"),
    ("Adadelta", {"weight_decay": -0.1}, "Adadelta: weight_decay"),
    ("Adagrad", {"lr": -0.1}, "Adagrad: lr"),
    ("Adagrad", {"lr_decay": -0.1}, "Adagrad: lr_decay"),
    ("Adagrad", {"initial_accumulator_value": -1.0}, "Adagrad: initial_accumulator_value"),
    ("Adagrad", {"eps": -1.0}, "Adagrad: eps"),
    ("Adamax", {"betas": (1.0, 0.999)}, r"Adamax: betas\[0\]"),
    ("Adamax", {"betas": (0.9, -0.1)}, r"Adamax: betas\[1\]"),
    ("Adamax", {"weight_decay": -1.0}, "Adamax: weight_decay"),
    ("NAdam", {"momentum_decay": -1.0}, "NAdam: momentum_decay"),
    ("NAdam", {"betas": (0.9, 1.0)}, r"NAdam: betas\[1\]"),
    ("NAdam", {"eps": -1.0}, "NAdam: eps"),
    ("RAdam", {"lr": -1.0}, "RAdam: lr"),
    ("RAdam", {"betas": (-0.5, 0.9)}, r"RAdam: betas\[0\]"),
    ("SGD", {"lr": 0.1, "nesterov": True}, "SGD: nesterov"),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.5, "nesterov": True}, "SGD: nesterov"),
    ("SGD", {"lr": 0.1, "momentum": -0.9}, "SGD: momentum"),
    ("Rprop", {"lr": -1.0}, "Rprop: lr"),
    ("Rprop", {"etas": (1.0, 1.2)}, r"Rprop: etas must satisfy 0 < etas\[0\] < 1 < etas\[1\]"),
    ("Rprop", {"etas": (0.0, 1.2)}, "Rprop: etas"),
    ("Rprop", {"etas": (0.5, 1.0)}, "Rprop: etas"),
    ("Rprop", {"etas": (0.5, float("nan"))}, "Rprop: etas"),
    ("ASGD", {"lr": -0.1}, "ASGD: lr"),
    ("ASGD", {"weight_decay": -0.1}, "ASGD: weight_decay"),
]


@pytest.mark.parametrize(("name", "kw", "message"), BAD)
def test_bad_arguments_refused_like_torch(name: str, kw: dict[str, Any], message: str) -> None:
    model, ref = _model(12)
    with pytest.raises(ValueError, match=message):
        getattr(optim, name)(model.parameters(), **kw)
    with pytest.raises(ValueError):  # PyTorch refuses the same arguments
        getattr(torch.optim, name)(ref.parameters(), **kw)


@pytest.mark.parametrize(
    ("name", "kw", "error", "message"),
    [
        ("Rprop", {"step_sizes": (1e-6,)}, ValueError, "Rprop: step_sizes must be a pair"),
        ("Rprop", {"step_sizes": 0.1}, TypeError, "Rprop: step_sizes must be a pair"),
        ("Rprop", {"step_sizes": (float("nan"), 50)}, ValueError, "Rprop: step_sizes must not hold NaN"),
        ("Rprop", {"etas": (0.5, "1.2")}, TypeError, r"Rprop: etas\[1\] must be a real number"),
        ("ASGD", {"t0": float("nan")}, ValueError, "ASGD: t0 must be a number"),
        ("ASGD", {"lambd": None}, TypeError, "ASGD: lambd must be a real number"),
        ("ASGD", {"alpha": 1j}, TypeError, "ASGD: alpha must be a real number"),
    ],
)
def test_rprop_asgd_refuse_what_torch_fails_on_later(
    name: str, kw: dict[str, Any], error: type[Exception], message: str
) -> None:
    """Arguments PyTorch takes unchecked and then fails on (at the first step, or with NaN
    parameters) are refused when the optimizer is built, naming the argument; what PyTorch
    takes and runs (``t0=inf``, ``step_sizes`` with min > max) is taken."""
    p = gt.Cpu().tensor(np.zeros(2), requires_grad=True)
    with pytest.raises(error, match=message):
        getattr(optim, name)([p], **kw)
    assert optim.ASGD([p], t0=math.inf, lambd=-1e-4).t0 == math.inf
    assert optim.Rprop([p], step_sizes=(1.0, 0.5)).step_sizes == (1.0, 0.5)


# ----- schedules: the lr sequence, and a run saved and resumed ------------------------------


def _sgd_pair(lr: float = 0.1, groups: int = 1, **kw: Any) -> tuple[optim.Optimizer, Any]:
    ps = [gt.Cpu().tensor(np.zeros(2), requires_grad=True) for _ in range(groups)]
    tps = [torch.zeros(2, requires_grad=True) for _ in range(groups)]
    if groups == 1:
        return optim.SGD(ps, lr=lr, **kw), torch.optim.SGD(tps, lr=lr, **kw)
    return (
        optim.SGD([{"params": [p], "lr": lr * (i + 1)} for i, p in enumerate(ps)], lr=lr, **kw),
        torch.optim.SGD([{"params": [p], "lr": lr * (i + 1)} for i, p in enumerate(tps)], lr=lr, **kw),
    )


Factory = Callable[[Any, Any], Any]  # (lr_scheduler module, optimizer) -> schedule

SCHEDULES: list[tuple[str, Factory]] = [
    ("StepLR", lambda m, o: m.StepLR(o, step_size=3, gamma=0.5)),
    ("MultiStepLR", lambda m, o: m.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3)),
    ("ExponentialLR", lambda m, o: m.ExponentialLR(o, gamma=0.8)),
    ("LinearLR", lambda m, o: m.LinearLR(o, start_factor=0.25, end_factor=0.9, total_iters=6)),
    ("LambdaLR", lambda m, o: m.LambdaLR(o, lr_lambda=lambda e: 1.0 / (1.0 + e) ** 0.5)),
    ("CosineAnnealingLR", lambda m, o: m.CosineAnnealingLR(o, T_max=5, eta_min=0.01)),
    ("CosineAnnealingWarmRestarts", lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.001)),
    ("OneCycleLR", lambda m, o: m.OneCycleLR(o, max_lr=1.0, total_steps=15)),
    ("OneCycleLR-3", lambda m, o: m.OneCycleLR(o, max_lr=[0.5, 2.0], total_steps=14, three_phase=True,
                                               anneal_strategy="linear", pct_start=0.25)),
    ("SequentialLR", lambda m, o: m.SequentialLR(
        o, [m.LinearLR(o, start_factor=0.1, total_iters=3), m.CosineAnnealingLR(o, T_max=6),
            m.ExponentialLR(o, gamma=0.9)], milestones=[3, 9])),
]  # fmt: skip
EPOCHS = 14


def _opt_step(opt: Any) -> None:
    opt.step()  # no gradients: nothing moves, but torch records that the optimizer stepped


def _record(opt: Any, sched: Any, epochs: int) -> list[list[float]]:
    """The rates (and momentum, where a schedule cycles it) after construction and each step."""
    out = []
    for e in range(epochs + 1):
        if e:
            _opt_step(opt)
            sched.step()
        row = [max(float(v), 0.0) for v in sched.get_last_lr()]  # PyTorch's negative rates are gradtape's 0
        for g in opt.param_groups:
            row.append(float(g["momentum"]) if "momentum" in g else float(g["betas"][0]))
        assert row[: len(opt.param_groups)] == [max(float(g["lr"]), 0.0) for g in opt.param_groups]
        out.append(row)
    return out


def _resumed(
    module: Any, make_opt: Callable[[], Any], factory: Factory, stop: int, epochs: int
) -> tuple[list[list[float]], int]:
    """Run ``stop`` epochs, save both state dicts, build a fresh optimizer and schedule, load
    them, and record the rest: the sequence and the resumed schedule's ``last_epoch``."""
    opt = make_opt()
    sched = factory(module, opt)
    head = _record(opt, sched, stop)
    saved_opt, saved_sched = opt.state_dict(), sched.state_dict()
    opt2 = make_opt()
    sched2 = factory(module, opt2)
    opt2.load_state_dict(saved_opt)
    sched2.load_state_dict(saved_sched)
    resumed_at = sched2.last_epoch
    tail = _record(opt2, sched2, epochs - stop)
    return head + tail[1:], resumed_at


def _pair(kind: str, groups: int) -> tuple[optim.Optimizer, Any]:
    """A fresh gradtape optimizer and the same torch one: SGD with momentum, or Adam (whose
    beta1 OneCycleLR cycles), ``groups`` parameter groups with rates 0.1, 0.2, ..."""
    if kind == "SGD":
        return _sgd_pair(0.1, groups, momentum=0.9)
    ps = [gt.Cpu().tensor(np.zeros(2), requires_grad=True) for _ in range(groups)]
    tps = [torch.zeros(2, requires_grad=True) for _ in range(groups)]
    return (
        optim.Adam([{"params": [p], "lr": 0.1 * (i + 1)} for i, p in enumerate(ps)], lr=0.1),
        torch.optim.Adam([{"params": [p], "lr": 0.1 * (i + 1)} for i, p in enumerate(tps)], lr=0.1),
    )


@pytest.mark.parametrize(("name", "factory"), SCHEDULES, ids=[n for n, _ in SCHEDULES])
@pytest.mark.parametrize("kind", ["SGD", "Adam"])
def test_schedule_matches_torch_and_resumes_exactly(name: str, factory: Factory, kind: str) -> None:
    groups = 2 if name == "OneCycleLR-3" else 1
    o = _pair(kind, groups)[0]
    got = _record(o, factory(lr_scheduler, o), EPOCHS)
    t = _pair(kind, groups)[1]
    want = _record(t, factory(torch.optim.lr_scheduler, t), EPOCHS)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    for stop in (4, 7):
        got_r, at = _resumed(lr_scheduler, lambda: _pair(kind, groups)[0], factory, stop, EPOCHS)
        want_r, tat = _resumed(torch.optim.lr_scheduler, lambda: _pair(kind, groups)[1], factory, stop, EPOCHS)
        assert at == tat == stop
        np.testing.assert_allclose(got_r, want_r, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(got_r, got, rtol=1e-12, atol=1e-15)  # exactly where it left off


def test_cosine_resume_continues_the_schedule_issue_example() -> None:
    """The issue's run: cosine over 8 epochs from 0.1, resumed at epoch 4 -> 0.05, 0.031, 0.015,
    0.004 (it restarted from the decayed rate before: 0.05, 0.048, ...)."""
    model, _ = _model(13)
    opt = optim.SGD(model.parameters(), lr=0.1)
    sched = lr_scheduler.CosineAnnealingLR(opt, T_max=8)
    for _ in range(4):
        opt.step()
        sched.step()
    ckpt = {"opt": opt.state_dict(), "sched": sched.state_dict()}
    assert ckpt["opt"]["param_groups"][0]["initial_lr"] == 0.1
    opt = optim.SGD(model.parameters(), lr=0.1)
    sched = lr_scheduler.CosineAnnealingLR(opt, T_max=8)
    opt.load_state_dict(ckpt["opt"])
    sched.load_state_dict(ckpt["sched"])
    lrs = [opt.param_groups[0]["lr"]]
    for _ in range(3):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
    np.testing.assert_allclose(lrs, [0.05 * (1 + math.cos(math.pi * e / 8)) for e in range(4, 8)], rtol=1e-12)
    np.testing.assert_allclose(lrs, [0.05, 0.0309, 0.0146, 0.0038], atol=1e-4)


@pytest.mark.parametrize("last_epoch", [3, 6])
def test_resume_with_last_epoch_argument_like_torch(last_epoch: int) -> None:
    """PyTorch's older resume: load the optimizer, then build the schedule with last_epoch."""
    seqs = []
    for mod, (o, _) in ((lr_scheduler, _sgd_pair(0.2)), (torch.optim.lr_scheduler, _sgd_pair(0.2)[::-1])):
        first = mod.StepLR(o, step_size=2, gamma=0.5)
        for _ in range(last_epoch):
            _opt_step(o)
            first.step()
        sched = mod.StepLR(o, step_size=2, gamma=0.5, last_epoch=last_epoch)
        seqs.append(_record(o, sched, 5))
    np.testing.assert_allclose(seqs[0], seqs[1], rtol=1e-12)
    fresh, _ = _sgd_pair(0.2)
    with pytest.raises(KeyError, match="initial_lr"):
        lr_scheduler.StepLR(fresh, step_size=2, last_epoch=3)


def test_warm_restarts_fractional_epochs_like_torch() -> None:
    """PyTorch's documented per-batch use: ``sched.step(epoch + i / iters)``."""
    rows = []
    for mod, o in ((lr_scheduler, _sgd_pair(0.1)[0]), (torch.optim.lr_scheduler, _sgd_pair(0.1)[1])):
        sched = mod.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2, eta_min=0.0)
        row = []
        for epoch in range(7):
            for i in range(4):
                _opt_step(o)
                sched.step(epoch + i / 4)
                row.append(sched.get_last_lr()[0])
        rows.append(row)
        assert sched.last_epoch == 6
    np.testing.assert_allclose(rows[0], rows[1], rtol=1e-12, atol=1e-15)


def test_step_with_an_epoch_uses_the_closed_form_like_torch() -> None:
    rows = []
    for mod, o in ((lr_scheduler, _sgd_pair(0.1)[0]), (torch.optim.lr_scheduler, _sgd_pair(0.1)[1])):
        sched = mod.CosineAnnealingLR(o, T_max=10)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            for epoch in (3, 7, 2):
                _opt_step(o)
                sched.step(epoch)
                rows.append(sched.get_last_lr()[0])
    np.testing.assert_allclose(rows[:3], rows[3:], rtol=1e-12)
    with pytest.warns(UserWarning, match="deprecated"):
        lr_scheduler.StepLR(_sgd_pair()[0], 2).step(3)


def test_one_cycle_cycles_adam_beta1_in_the_training_loop_like_torch() -> None:
    """OneCycleLR per batch on Adam: rate and beta1 cycle, so every parameter follows torch."""
    model, ref = _model(14)
    opt = optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.99))
    topt = torch.optim.Adam(ref.parameters(), lr=1e-3, betas=(0.9, 0.99), foreach=False)
    sched = lr_scheduler.OneCycleLR(opt, max_lr=0.05, epochs=2, steps_per_epoch=5)
    tsched = torch.optim.lr_scheduler.OneCycleLR(topt, max_lr=0.05, epochs=2, steps_per_epoch=5)
    for x, y in _batches(10, 14):
        _our_step(model, opt, x, y)
        _torch_step(ref, topt, x, y)
        sched.step()
        tsched.step()
        _same_params(model, ref)
        assert opt.param_groups[0]["betas"] == pytest.approx(topt.param_groups[0]["betas"], rel=1e-12)
        assert sched.get_last_lr() == pytest.approx(tsched.get_last_lr(), rel=1e-12)
    with pytest.raises(ValueError, match="OneCycleLR: tried to step 11 times"):
        sched.step()


def test_one_cycle_cycles_sgd_momentum_and_stores_its_keys() -> None:
    model, ref = _model(15)
    opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.5, nesterov=True)
    topt = torch.optim.SGD(ref.parameters(), lr=0.01, momentum=0.5, nesterov=True)
    sched = lr_scheduler.OneCycleLR(opt, max_lr=0.2, total_steps=6, base_momentum=0.8, max_momentum=0.9)
    tsched = torch.optim.lr_scheduler.OneCycleLR(topt, max_lr=0.2, total_steps=6, base_momentum=0.8, max_momentum=0.9)
    for k in ("initial_lr", "max_lr", "min_lr", "max_momentum", "base_momentum", "momentum"):
        assert opt.param_groups[0][k] == pytest.approx(topt.param_groups[0][k], rel=1e-12), k
    for x, y in _batches(6, 15):
        _our_step(model, opt, x, y)
        _torch_step(ref, topt, x, y)
        sched.step()
        tsched.step()
        _same_params(model, ref)
        assert opt.param_groups[0]["momentum"] == pytest.approx(topt.param_groups[0]["momentum"], rel=1e-12)


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"mode": "max", "factor": 0.5, "patience": 1, "threshold": 0.1, "threshold_mode": "abs", "cooldown": 2},
        {"factor": 0.3, "patience": 0, "min_lr": [0.01, 0.05], "threshold_mode": "rel", "eps": 1e-3},
    ],
)
def test_reduce_lr_on_plateau_matches_torch_and_resumes(kw: dict[str, Any]) -> None:
    metrics = [1.0, 0.9, 0.95, 0.95, 0.96, 0.89, 0.89, 0.9, 0.91, 0.5, 0.6, 0.7, 0.7, 0.7, 0.8, 0.9]
    if not kw:
        metrics = metrics * 2  # patience 10 needs a longer plateau

    def run(mod: Any, o: Any, resume_at: int | None) -> list[list[float]]:
        sched = mod.ReduceLROnPlateau(o, **kw)
        rows = [list(sched.get_last_lr())]
        for i, m in enumerate(metrics):
            if i == resume_at:
                so, ss = o.state_dict(), sched.state_dict()
                o = _sgd_pair(0.1, 2)[0 if mod is lr_scheduler else 1]
                sched = mod.ReduceLROnPlateau(o, **kw)
                o.load_state_dict(so)
                sched.load_state_dict(ss)
            _opt_step(o)
            sched.step(m if mod is lr_scheduler else torch.tensor(m))
            rows.append(list(sched.get_last_lr()))
            assert sched.last_epoch == i + 1
        return rows

    ours = run(lr_scheduler, _sgd_pair(0.1, 2)[0], None)
    theirs = run(torch.optim.lr_scheduler, _sgd_pair(0.1, 2)[1], None)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    assert ours[-1] != ours[0]  # the schedule did reduce
    for at in (3, 8):
        np.testing.assert_allclose(run(lr_scheduler, _sgd_pair(0.1, 2)[0], at), theirs, rtol=1e-12)


def test_lambda_lr_saves_a_callable_objects_state_like_torch() -> None:
    class Warmup:
        def __init__(self, n: int) -> None:
            self.n = n

        def __call__(self, epoch: int) -> float:
            return min(1.0, (epoch + 1) / self.n)

    o, _ = _sgd_pair(0.1)
    sched = lr_scheduler.LambdaLR(o, Warmup(4))
    saved = sched.state_dict()
    assert saved["lr_lambdas"] == [{"n": 4}]
    fn = Warmup(10)
    o2, _ = _sgd_pair(0.1)
    sched2 = lr_scheduler.LambdaLR(o2, fn)
    sched2.load_state_dict(saved)
    assert fn.n == 4
    assert lr_scheduler.LambdaLR(o, lambda e: 1.0).state_dict()["lr_lambdas"] == [None]


def test_sequential_lr_state_dict_holds_each_schedule() -> None:
    o, _ = _sgd_pair(0.1)
    warm = lr_scheduler.LinearLR(o, start_factor=0.5, total_iters=2)
    cos = lr_scheduler.CosineAnnealingLR(o, T_max=4)
    seq = lr_scheduler.SequentialLR(o, [warm, cos], milestones=[2])
    for _ in range(3):
        seq.step()
    t = _sgd_pair(0.1)[1]
    ts = torch.optim.lr_scheduler
    tseq = ts.SequentialLR(
        t, [ts.LinearLR(t, start_factor=0.5, total_iters=2), ts.CosineAnnealingLR(t, T_max=4)], milestones=[2]
    )
    for _ in range(3):
        tseq.step()
    sd, tsd = seq.state_dict(), tseq.state_dict()
    assert sd["last_epoch"] == tsd["last_epoch"] == 3
    assert [s["last_epoch"] for s in sd["_schedulers"]] == [s["last_epoch"] for s in tsd["_schedulers"]] == [1, 1]
    assert "optimizer" not in sd and all("optimizer" not in s for s in sd["_schedulers"])


SCHED_BAD: list[tuple[Callable[[Any, Any], Any], type[Exception], str]] = [
    (lambda m, o: m.LinearLR(o, start_factor=0.0), ValueError, "LinearLR: start_factor"),
    (lambda m, o: m.LinearLR(o, end_factor=1.5), ValueError, "LinearLR: end_factor"),
    (lambda m, o: m.OneCycleLR(o, max_lr=0.1), ValueError, "OneCycleLR: you must define either total_steps"),
    (lambda m, o: m.OneCycleLR(o, max_lr=0.1, total_steps=0), ValueError, "OneCycleLR: total_steps"),
    (lambda m, o: m.OneCycleLR(o, max_lr=0.1, total_steps=10, pct_start=1.5), ValueError, "OneCycleLR: pct_start"),
    (lambda m, o: m.OneCycleLR(o, max_lr=0.1, total_steps=10, anneal_strategy="exp"), ValueError, "anneal_strategy"),
    (lambda m, o: m.OneCycleLR(o, max_lr=[0.1, 0.2], total_steps=10), ValueError, "OneCycleLR: max_lr must have"),
    (lambda m, o: m.ReduceLROnPlateau(o, factor=1.0), ValueError, "ReduceLROnPlateau: factor"),
    (lambda m, o: m.ReduceLROnPlateau(o, mode="avg"), ValueError, "ReduceLROnPlateau: mode"),
    (lambda m, o: m.ReduceLROnPlateau(o, threshold_mode="pct"), ValueError, "ReduceLROnPlateau: threshold mode"),
    (lambda m, o: m.ReduceLROnPlateau(o, min_lr=[0.1, 0.2]), ValueError, "ReduceLROnPlateau: min_lr"),
    (lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=0), ValueError, "CosineAnnealingWarmRestarts: T_0"),
    (lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0), ValueError, "CosineAnnealingWarmRestarts: T_mult"),
    (lambda m, o: m.SequentialLR(o, [m.StepLR(o, 2)], milestones=[3]), ValueError, "SequentialLR expects one"),
    (lambda m, o: m.SequentialLR(o, [], milestones=[]), ValueError, "SequentialLR expects at least one"),
    (lambda m, o: m.LambdaLR(o, [lambda e: 1.0] * 2), ValueError, "LambdaLR: lr_lambda must have the same length"),
    (lambda m, o: m.StepLR(object(), 2), TypeError, "StepLR: object is not an Optimizer"),
]  # fmt: skip


@pytest.mark.parametrize(("make", "error", "message"), SCHED_BAD)
def test_schedule_bad_arguments_refused_like_torch(
    make: Callable[[Any, Any], Any], error: type[Exception], message: str
) -> None:
    o, t = _sgd_pair(0.1)
    with pytest.raises(error, match=message):
        make(lr_scheduler, o)
    with pytest.raises(Exception):  # noqa: B017  (PyTorch refuses it too, with its own type)
        make(torch.optim.lr_scheduler, t)


def test_schedule_errors_on_other_optimizers() -> None:
    o, _ = _sgd_pair(0.1)
    other, _ = _sgd_pair(0.1)
    with pytest.raises(ValueError, match="SequentialLR expects all schedulers to belong to the same optimizer"):
        lr_scheduler.SequentialLR(o, [lr_scheduler.StepLR(other, 2), lr_scheduler.StepLR(o, 2)], milestones=[2])
    with pytest.raises(ValueError, match="SequentialLR does not support ReduceLROnPlateau"):
        lr_scheduler.SequentialLR(o, [lr_scheduler.StepLR(o, 2), lr_scheduler.ReduceLROnPlateau(o)], milestones=[2])
    p = gt.Cpu().tensor(np.zeros(2), requires_grad=True)
    with pytest.raises(ValueError, match="OneCycleLR: optimizer must support momentum or beta1"):
        lr_scheduler.OneCycleLR(optim.Adagrad([p]), max_lr=0.1, total_steps=10)
    assert lr_scheduler.LambdaLR(o, lambda e: -1.0).get_last_lr() == [0.0]  # no negative rate (the one difference)


def test_old_module_path_and_exports() -> None:
    from gradtape.optim import schedules

    assert schedules.StepLR is lr_scheduler.StepLR is optim.StepLR
    assert optim.lr_scheduler is lr_scheduler
    for name in lr_scheduler.__all__:
        assert hasattr(torch.optim.lr_scheduler, name), name
