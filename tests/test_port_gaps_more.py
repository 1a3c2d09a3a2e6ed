"""PyTorch port gaps (gradtape._torch_stats): ``torch.quantile`` / ``nanquantile``,
``torch.mode``, ``F.pdist``, ``torch.trapezoid`` / ``trapz`` / ``cumulative_trapezoid``,
``F.multilabel_margin_loss`` / ``nn.MultiLabelMarginLoss`` and ``torch.compile``.

Each test is written as the PyTorch user's program and run on both libraries in float64:
values and gradients must agree, gradcheck must pass where the op is differentiable, and bad
input must raise errors naming the op. (tests/test_torch_namespace.py has their single-call
rows.)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gradtape
import gradtape.nn.functional as gF
from gradtape.testing import gradcheck

torch: Any = pytest.importorskip("torch")
tF: Any = torch.nn.functional

_R = np.random.default_rng(2026)


def _both(
    fn_torch: Any,
    fn_gt: Any,
    arrays: list[np.ndarray[Any, Any]],
    rtol: float = 1e-10,
    seed: int = 0,
    grads: bool = True,
) -> None:
    """``fn(*tensors)`` on both libraries: the same values, and (``grads``) the same gradients
    of ``sum(out * w)`` for every float input."""
    tt = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    gg = [gradtape.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    t_out, g_out = fn_torch(*tt), fn_gt(*gg)
    t_list = list(t_out) if isinstance(t_out, tuple) else [t_out]
    g_list = list(g_out) if isinstance(g_out, tuple) else [g_out]
    assert len(t_list) == len(g_list)
    for t, g in zip(t_list, g_list, strict=True):
        assert tuple(t.shape) == tuple(g.shape), (t.shape, g.shape)
        assert str(t.dtype).removeprefix("torch.") == str(g.dtype), (t.dtype, g.dtype)
        np.testing.assert_allclose(g.numpy(), t.detach().numpy(), rtol=rtol, atol=1e-12)
    w = np.random.default_rng(seed).standard_normal(tuple(t_list[0].shape))
    if not t_list[0].requires_grad or not grads:
        return
    (t_list[0] * torch.tensor(w)).sum().backward()
    (g_list[0] * gradtape.tensor(w)).sum().backward()
    for a, b in zip(tt, gg, strict=True):
        if a.requires_grad and a.grad is not None:
            assert b.grad is not None
            np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), rtol=rtol, atol=1e-12)


# ----- quantile / nanquantile -----------------------------------------------------------------

MODES = ["linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("interpolation", MODES)
@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
def test_quantile_matches_pytorch_in_every_mode_and_layout(name: str, interpolation: str) -> None:
    a = _R.standard_normal((4, 7))
    a_nan = a.copy()
    a_nan[1, 2], a_nan[3, :] = np.nan, np.nan
    q1 = np.array([0.0, 0.1, 0.5, 0.75, 1.0])
    cases: list[tuple[Any, Any, bool]] = [(0.3, None, False), (0.5, 1, False), (q1, 0, True), (q1, None, True)]
    cases += [(0.62, -1, True), (np.array(0.4), 1, False)]
    for x in (a, a_nan, a[0]):
        for q, dim, keepdim in cases:
            if x.ndim == 1 and dim not in (None, 0, -1):
                continue

            def run(lib: Any, xt: Any, q: Any = q, dim: Any = dim, keepdim: bool = keepdim) -> Any:
                qq = lib.tensor(q) if isinstance(q, np.ndarray) else q
                return getattr(lib, name)(xt, qq, dim, keepdim, interpolation=interpolation)

            # quantile of a flattened slice with several NaNs: NaN, its gradient to one of them
            # (PyTorch's pick follows its sort's order of NaNs, which is not stable)
            grads = not (name == "quantile" and dim is None and np.isnan(x).sum() > 1)
            _both(lambda xt, run=run: run(torch, xt), lambda xt, run=run: run(gradtape, xt), [x], grads=grads)
    # the method spellings
    _both(
        lambda xt: getattr(xt, name)(0.3, 0, interpolation=interpolation),
        lambda xt: getattr(xt, name)(0.3, 0, interpolation=interpolation),
        [a_nan],
    )


def test_quantile_gradient_reaches_q_and_second_order() -> None:
    """A ``q`` that requires grad gets PyTorch's gradient (``'linear'``); gradients of
    gradients agree with PyTorch's double backward; gradcheck passes for input and q."""
    x0, q0 = _R.standard_normal((3, 6)), np.array([0.2, 0.55, 0.9])
    res = []
    for lib in (torch, gradtape):
        x, q = lib.tensor(x0, requires_grad=True), lib.tensor(q0, requires_grad=True)
        y = (lib.quantile(x, q, dim=1) ** 3).sum() + (lib.nanquantile(x * x, 0.35, 0) ** 2).sum()
        grad: Any = torch.autograd.grad if lib is torch else gradtape.autograd.grad
        gx, gq = grad(y, [x, q], create_graph=True)
        ((gx**2).sum() + (gq * gq).sum()).backward()
        res.append([v.detach().numpy() for v in (gx, gq, x.grad, q.grad)])
    for got, want in zip(res[1], res[0], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    for mode in MODES:
        assert gradcheck(lambda x, mode=mode: gradtape.quantile(x, 0.37, 1, interpolation=mode), [x0])
    assert gradcheck(lambda x, q: gradtape.quantile(x, q, 0), [x0, q0])
    assert gradcheck(lambda x: gradtape.nanquantile(x, gradtape.tensor(q0), None, True), [x0])


def test_quantile_keeps_float32_and_refuses_bad_input() -> None:
    x = gradtape.tensor(_R.standard_normal((3, 4)).astype(np.float32))
    assert gradtape.quantile(x, 0.5, 1).dtype == np.float32
    np.testing.assert_allclose(
        gradtape.quantile(x, 0.3, 0).numpy(), torch.quantile(torch.tensor(x.numpy()), 0.3, 0).numpy(), rtol=1e-6
    )
    with pytest.raises(ValueError, match=r"^quantile: q must be in the range \[0, 1\] but got 1.5"):
        gradtape.quantile(x, 1.5)
    with pytest.raises(ValueError, match=r"^nanquantile: q must be in the range"):
        gradtape.nanquantile(x, gradtape.tensor(np.array([0.2, -0.1], np.float32)))
    with pytest.raises(ValueError, match=r"^quantile: interpolation must be one of linear, lower, higher"):
        gradtape.quantile(x, 0.5, interpolation="foo")
    with pytest.raises(gradtape.DTypeError, match=r"^quantile: q must have the input's dtype float32"):
        gradtape.quantile(x, gradtape.tensor([0.5], dtype=gradtape.float64))
    with pytest.raises(gradtape.DTypeError, match=r"^quantile: input must be a float tensor"):
        gradtape.quantile(gradtape.tensor([1, 2, 3]), 0.5)
    with pytest.raises(gradtape.ShapeError, match=r"^quantile: q must be a scalar or 1-D tensor, got shape \(2, 2\)"):
        gradtape.quantile(x, gradtape.tensor(np.full((2, 2), 0.5, np.float32)))
    with pytest.raises(gradtape.ShapeError, match=r"^quantile: the input tensor must be non-empty, got shape \(0, 4\)"):
        gradtape.quantile(gradtape.zeros(0, 4), 0.5)
    with pytest.raises(gradtape.ShapeError, match="quantile"):
        gradtape.quantile(x, 0.5, 2)
    with pytest.raises(TypeError, match=r"^quantile: q must be a number or a tensor, got list"):
        gradtape.quantile(x, [0.5])  # type: ignore[arg-type]


# ----- mode -----------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 5, 16, 17, 33, 100, 257])
def test_mode_values_and_indices_are_pytorchs(n: int) -> None:
    """The smallest most frequent value, at PyTorch 2's CPU position (the last of its run in
    ``std::sort``'s order: the last occurrence up to 16 elements, the introsort's beyond)."""
    rng = np.random.default_rng(n)
    for trial in range(20):
        x = rng.integers(0, 1 + trial % 5, (3, n, 2)).astype(np.float64)
        for dim, keepdim in ((1, False), (1, True), (-2, False)):
            t = torch.mode(torch.tensor(x), dim, keepdim)
            g = gradtape.mode(gradtape.tensor(x), dim, keepdim)
            np.testing.assert_array_equal(g.values.numpy(), t.values.numpy())
            np.testing.assert_array_equal(g.indices.numpy(), t.indices.numpy())
            assert g.indices.dtype == np.int64
    ints = rng.integers(-3, 3, (4, n))
    t, g = torch.mode(torch.tensor(ints)), gradtape.tensor(ints).mode()
    np.testing.assert_array_equal(g.values.numpy(), t.values.numpy())
    np.testing.assert_array_equal(g.indices.numpy(), t.indices.numpy())


def test_mode_gradient_goes_to_the_chosen_element() -> None:
    base = np.round(_R.standard_normal((4, 40)) * 1.5)
    _both(lambda x: torch.mode(x, 1), lambda x: gradtape.mode(x, 1), [base])
    _both(lambda x: torch.mode(x, 0, True), lambda x: gradtape.mode(x, 0, True), [base])
    _both(lambda x: x.mode(), lambda x: x.mode(), [_R.standard_normal((2, 5))])
    _both(lambda x: torch.mode(x), lambda x: gradtape.mode(x), [np.array(2.5)])
    assert gradcheck(lambda x: gradtape.mode(x, 1).values, [_R.standard_normal((3, 5))])


def test_mode_refuses_bad_input() -> None:
    with pytest.raises(gradtape.ShapeError, match=r"^mode: expected reduction dim 0 to have non-zero size"):
        gradtape.mode(gradtape.zeros(0))
    with pytest.raises(gradtape.ShapeError, match="mode"):
        gradtape.mode(gradtape.zeros(2, 3), 2)
    with pytest.raises(TypeError, match=r"^mode: "):
        gradtape.mode([1.0, 2.0])  # type: ignore[arg-type]


# ----- pdist ----------------------------------------------------------------------------------


@pytest.mark.parametrize("p", [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, float("inf")])
def test_pdist_matches_pytorch_with_zero_distances_and_ties(p: float) -> None:
    x = _R.standard_normal((6, 4))
    x[4] = x[1]  # a zero distance
    x[5, :2] = x[0, :2]  # zero differences in some coordinates
    x[3, 1] = x[2, 1] + abs(x[3, 0] - x[2, 0])  # a tie of |d| for inf (up to rounding)
    _both(lambda t: torch.pdist(t, p), lambda t: gradtape.pdist(t, p), [x])
    _both(lambda t: tF.pdist(t, p), lambda t: gF.pdist(t, p), [x[:3]])
    ties = np.array([[0.0, 0.0, 1.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])  # exact ties and a zero row
    _both(lambda t: torch.pdist(t, p), lambda t: gradtape.pdist(t, p), [ties])


def test_pdist_shapes_gradcheck_second_order_and_errors() -> None:
    for n in (0, 1, 2):
        assert gradtape.pdist(gradtape.zeros(n, 3)).shape == tuple(torch.pdist(torch.zeros(n, 3)).shape)
    x0 = _R.standard_normal((5, 3))
    for p in (1.0, 1.5, 2.0, 3.0, float("inf")):
        assert gradcheck(lambda x, p=p: gradtape.pdist(x, p), [x0])
    # second order: PyTorch's pdist has no double backward; compare with the same distances
    # written from torch ops (away from zero distances, where the two agree)
    i, j = np.triu_indices(5, 1)
    for p in (2.0, 3.0, 1.5):
        res = []
        for lib in (torch, gradtape):
            x: Any = lib.tensor(x0, requires_grad=True)
            d: Any
            if lib is torch:
                d = ((x[i] - x[j]).abs() ** p).sum(-1) ** (1 / p)
            else:
                d = gradtape.pdist(x, p)
            grad: Any = torch.autograd.grad if lib is torch else gradtape.autograd.grad
            (gx,) = grad((d**2).sum() + d.sum(), [x], create_graph=True)
            (gx**2).sum().backward()
            res.append((gx.detach().numpy(), x.grad.numpy()))
        np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-9)
        np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-9)
    f32 = gradtape.tensor(x0.astype(np.float32))
    assert gradtape.pdist(f32).dtype == np.float32
    with pytest.raises(gradtape.ShapeError, match=r"^pdist: only supports 2-D tensors \(N, M\), got shape \(3,\)"):
        gradtape.pdist(gradtape.zeros(3))
    with pytest.raises(ValueError, match=r"^pdist: only supports non-negative p values, got p=-1.0"):
        gradtape.pdist(f32, -1)
    with pytest.raises(gradtape.DTypeError, match=r"^pdist: input must be a float tensor"):
        gradtape.pdist(gradtape.tensor([[1, 2], [3, 4]]))
    with pytest.raises(TypeError, match=r"^pdist: p must be a number, got str"):
        gradtape.pdist(f32, "fro")  # type: ignore[arg-type]


# ----- trapezoid ------------------------------------------------------------------------------


def test_trapezoid_family_matches_pytorch() -> None:
    y = _R.standard_normal((3, 5))
    x1 = np.sort(_R.standard_normal(5))
    x2 = np.sort(_R.standard_normal((3, 5)), 1)
    for name in ("trapezoid", "trapz", "cumulative_trapezoid"):
        for kw in ({}, {"dx": 0.3}, {"dim": 0}, {"dx": 2.0, "dim": 0}):
            _both(
                lambda t, kw=kw, name=name: getattr(torch, name)(t, **kw),
                lambda t, kw=kw, name=name: getattr(gradtape, name)(t, **kw),
                [y],
            )
        for xs in (x1, x2, x2[:1]):
            _both(
                lambda t, s, name=name: getattr(torch, name)(t, s),
                lambda t, s, name=name: getattr(gradtape, name)(t, s),
                [y, xs],
            )
        _both(
            lambda t, s, name=name: getattr(torch, name)(t, s, dim=0),
            lambda t, s, name=name: getattr(gradtape, name)(t, s, dim=0),
            [y, x1[:3]],
        )
        for short in (y[:, :1], y[:, :2]):
            _both(
                lambda t, name=name: getattr(torch, name)(t), lambda t, name=name: getattr(gradtape, name)(t), [short]
            )
        # integer sample points, as PyTorch (cast to y's dtype)
        _both(
            lambda t, name=name: getattr(torch, name)(t, torch.arange(5) * 2),
            lambda t, name=name: getattr(gradtape, name)(t, gradtape.tensor(np.arange(5) * 2)),
            [y],
        )
        assert gradcheck(lambda t, s, name=name: getattr(gradtape, name)(t, s), [y, x2])
        assert gradcheck(lambda t, name=name: getattr(gradtape, name)(t, dx=0.7, dim=0), [y])
    assert gradtape.trapezoid(gradtape.zeros(3, 0)).shape == (3,)


def test_trapezoid_refuses_bad_input() -> None:
    y = gradtape.tensor(_R.standard_normal((3, 5)))
    with pytest.raises(TypeError, match=r"^trapezoid: give x or dx, not both"):
        gradtape.trapezoid(y, y, dx=1.0)
    with pytest.raises(
        gradtape.ShapeError, match=r"^trapezoid: a 1-D x must have y's size 5 along dim 1, got x of shape \(4,\)"
    ):
        gradtape.trapezoid(y, gradtape.zeros(4, dtype=gradtape.float64))
    with pytest.raises(gradtape.ShapeError, match=r"^cumulative_trapezoid: x of shape \(2, 5\) does not broadcast"):
        gradtape.cumulative_trapezoid(y, gradtape.zeros(2, 5, dtype=gradtape.float64))
    with pytest.raises(gradtape.ShapeError, match=r"^trapz: y must have at least 1 dim"):
        gradtape.trapz(gradtape.tensor(1.0))
    with pytest.raises(gradtape.DTypeError, match=r"^trapezoid: y must be a float tensor"):
        gradtape.trapezoid(gradtape.tensor([1, 2]))
    with pytest.raises(TypeError, match=r"^trapezoid: dx must be a number, got str"):
        gradtape.trapezoid(y, dx="1")  # type: ignore[arg-type]
    with pytest.raises(gradtape.ShapeError, match="trapezoid"):
        gradtape.trapezoid(y, dim=2)


# ----- multilabel_margin_loss -----------------------------------------------------------------

TARGETS = np.array([[3, 0, -1, 1, 2], [0, 1, 2, 3, 4], [-1, 0, 0, 0, 0], [4, 4, 1, -1, -1]])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multilabel_margin_loss_as_pytorchs(reduction: str) -> None:
    x = _R.standard_normal((4, 5)) * 0.5
    _both(
        lambda t, y: tF.multilabel_margin_loss(t, y, reduction=reduction),
        lambda t, y: gF.multilabel_margin_loss(t, y, reduction=reduction),
        [x, TARGETS],
    )
    _both(
        lambda t, y: torch.nn.MultiLabelMarginLoss(reduction=reduction)(t, y),
        lambda t, y: gradtape.nn.MultiLabelMarginLoss(reduction=reduction)(t, y),
        [x[1], TARGETS[0]],
    )
    assert gradcheck(lambda t: gF.multilabel_margin_loss(t, gradtape.tensor(TARGETS), reduction=reduction), [x + 0.013])


def test_multilabel_margin_loss_in_a_training_loop_and_errors() -> None:
    """A PyTorch program: a linear classifier trained with ``nn.MultiLabelMarginLoss`` and SGD,
    the same parameters at every step on both libraries."""
    w0, xs = _R.standard_normal((5, 3)) * 0.3, _R.standard_normal((4, 3))
    out = []
    for lib in (torch, gradtape):
        model = lib.nn.Linear(3, 5, bias=False).double()
        with lib.no_grad():
            model.weight.copy_(lib.tensor(w0))
        opt = lib.optim.SGD(model.parameters(), lr=0.5)
        crit = lib.nn.MultiLabelMarginLoss()
        steps = []
        for _ in range(4):
            opt.zero_grad()
            loss = crit(model(lib.tensor(xs)), lib.tensor(TARGETS))
            loss.backward()
            opt.step()
            steps.append((loss.item(), model.weight.detach().numpy().copy()))
        out.append(steps)
    for (lt, wt), (lg, wg) in zip(out[0], out[1], strict=True):
        assert abs(lt - lg) < 1e-12
        np.testing.assert_allclose(wg, wt, rtol=1e-12)
    x = gradtape.tensor(_R.standard_normal((4, 5)))
    with pytest.raises(gradtape.ShapeError, match=r"^multilabel_margin_loss: target of shape \(4, 4\) must have"):
        gF.multilabel_margin_loss(x, gradtape.tensor(TARGETS[:, :4]))
    with pytest.raises(gradtape.DTypeError, match=r"^multilabel_margin_loss: target must be an integer tensor"):
        gF.multilabel_margin_loss(x, x)
    with pytest.raises(ValueError, match=r"^multilabel_margin_loss: target index 5 is out of range for 5 classes"):
        gF.multilabel_margin_loss(x, gradtape.tensor(TARGETS + 1))
    with pytest.raises(ValueError, match=r"^multilabel_margin_loss: reduction must be"):
        gF.multilabel_margin_loss(x, gradtape.tensor(TARGETS), reduction="avg")
    with pytest.raises(gradtape.ShapeError, match=r"^multilabel_margin_loss: input must have shape \(N, C\) or"):
        gF.multilabel_margin_loss(x.reshape(2, 2, 5), gradtape.tensor(TARGETS.reshape(2, 2, 5)))
    with pytest.raises(ValueError, match="MultiLabelMarginLoss: reduction"):
        gradtape.nn.MultiLabelMarginLoss(reduction="avg")


# ----- torch.compile --------------------------------------------------------------------------

PROGRAM = """
model = L.nn.Sequential(L.nn.Linear(4, 8), L.nn.Tanh(), L.nn.Dropout(0.0), L.nn.Linear(8, 3)).double()
model.load_state_dict({k: L.tensor(v) for k, v in STATE.items()})
if COMPILE:
    model = L.compile(model, **KWARGS)
opt = L.optim.Adam(model.parameters(), lr=0.05)
losses, params = [], []
model.train()
for x, y in BATCHES:
    opt.zero_grad()
    loss = L.nn.functional.cross_entropy(model(L.tensor(x)), L.tensor(y))
    loss.backward()
    opt.step()
    losses.append(loss.item())
    params.append([p.detach().numpy().copy() for p in model.parameters()])
model.eval()
with L.no_grad():
    final = model(L.tensor(BATCHES[0][0])).numpy()
state_keys = list(model.state_dict())
is_module = isinstance(model, L.nn.Module)
"""


def test_compile_in_a_pytorch_training_loop_equals_the_uncompiled_run() -> None:
    """``model = torch.compile(model)`` then PyTorch's loop: on gradtape, the same numbers bit for
    bit as without ``compile`` (it returns the model), and PyTorch's (``backend='eager'``)."""
    ref = gradtape.nn.Sequential(
        gradtape.nn.Linear(4, 8), gradtape.nn.Tanh(), gradtape.nn.Dropout(0.0), gradtape.nn.Linear(8, 3)
    )
    state = {k: np.asarray(v.numpy(), np.float64) for k, v in ref.state_dict().items()}
    batches = [(_R.standard_normal((6, 4)), _R.integers(0, 3, 6)) for _ in range(5)]
    runs: dict[str, dict[str, Any]] = {}
    for key, lib, compiled, kwargs in (
        ("gt", gradtape, False, {}),
        ("gt_compiled", gradtape, True, {}),
        ("gt_modes", gradtape, True, {"mode": "max-autotune", "fullgraph": True, "dynamic": False}),
        ("torch", torch, True, {"backend": "eager"}),
    ):
        env: dict[str, Any] = {"L": lib, "STATE": state, "BATCHES": batches, "COMPILE": compiled, "KWARGS": kwargs}
        exec(PROGRAM, env)
        runs[key] = env
    plain = runs["gt"]
    for key in ("gt_compiled", "gt_modes"):
        assert runs[key]["losses"] == plain["losses"]
        for a, b in zip(runs[key]["params"], plain["params"], strict=True):
            for pa, pb in zip(a, b, strict=True):
                np.testing.assert_array_equal(pa, pb)
        np.testing.assert_array_equal(runs[key]["final"], plain["final"])
        assert runs[key]["is_module"]
    t = runs["torch"]
    np.testing.assert_allclose(plain["losses"], t["losses"], rtol=1e-10)
    for a, b in zip(plain["params"], t["params"], strict=True):
        for pa, pb in zip(a, b, strict=True):
            np.testing.assert_allclose(pa, pb, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(plain["final"], t["final"], rtol=1e-9)
    assert [k.removeprefix("_orig_mod.") for k in t["state_keys"]] == plain["state_keys"]


def test_compile_returns_its_argument_and_validates_torchs_keywords() -> None:
    model = gradtape.nn.Linear(3, 2)
    compiled = gradtape.compile(model)
    assert compiled is model and isinstance(compiled, gradtape.nn.Module)
    compiled.eval()
    assert not model.training
    assert list(compiled.state_dict()) == ["weight", "bias"] and len(list(compiled.parameters())) == 2

    def f(x: Any) -> Any:
        return x * 2

    assert gradtape.compile(f, backend="aot_eager", options={"trace.enabled": True}) is f
    assert gradtape.compile(mode="reduce-overhead")(f) is f  # @torch.compile(mode=...) as a decorator
    assert gradtape.compile(f, backend=lambda gm, inputs: gm, disable=True) is f
    with pytest.raises(RuntimeError, match=r"unrecognized mode=fast, should be one of: default, lite"):
        gradtape.compile(f, mode="fast")
    with pytest.raises(RuntimeError, match="Either mode or options can be specified"):
        gradtape.compile(f, mode="default", options={})
    with pytest.raises(RuntimeError, match=r"^compile: invalid backend 'foo'"):
        gradtape.compile(f, backend="foo")
    with pytest.raises(TypeError, match=r"^compile: model must be a callable"):
        gradtape.compile(3)
    with pytest.raises(TypeError, match=r"^compile: dynamic must be a bool or None"):
        gradtape.compile(f, dynamic="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^compile: options must be a dict"):
        gradtape.compile(f, options=["x"])  # type: ignore[arg-type]
    for name in ("quantile", "nanquantile", "mode", "pdist", "trapezoid", "trapz", "cumulative_trapezoid"):
        doc = getattr(gradtape, name).__doc__
        assert doc and "Raises:" in doc, name
