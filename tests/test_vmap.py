"""``torch.func.vmap`` renamed: ``gradtape.func.vmap`` written as a PyTorch user writes it
(PyTorch's "Per-sample-gradients" tutorial, batched dot products and matrix-vector products,
batched Jacobians), evaluated with ``L`` bound to torch and to gradtape (``F`` to their
``func``) on the same float64 values; results, gradients and errors must agree."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gradtape
from gradtape import func as gfunc
from gradtape import nn

torch: Any = pytest.importorskip("torch")
tfunc: Any = torch.func

_R = np.random.default_rng(11)
XS = _R.standard_normal((5, 3))
YS = _R.standard_normal((5, 3))
W = _R.standard_normal((3,))
M = _R.standard_normal((4, 3))


def _np(v: Any) -> Any:
    if isinstance(v, (tuple, list)):
        return [_np(t) for t in v]
    if isinstance(v, dict):
        return {k: _np(t) for k, t in sorted(v.items())}
    return v.detach().numpy() if hasattr(v, "detach") else np.asarray(v)


def _close(a: Any, b: Any) -> None:
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), (a, b)
        for x, y in zip(a, b, strict=True):
            _close(x, y)
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys()
        for k in a:
            _close(a[k], b[k])
    else:
        assert np.shape(a) == np.shape(b), (np.shape(a), np.shape(b))
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def _run(expr: Any, *arrays: np.ndarray[Any, Any]) -> None:
    """``expr(L, F, *tensors)`` with torch and with gradtape; the results must agree."""
    theirs = expr(torch, tfunc, *[torch.tensor(a) for a in arrays])
    ours = expr(gradtape, gfunc, *[gradtape.tensor(a) for a in arrays])
    _close(_np(ours), _np(theirs))


def f_two(L: Any, x: Any, y: Any) -> Any:
    return L.sin(x) * y.sum(), (x * y).sum()


CASES: dict[str, Any] = {
    "dot": lambda L, F, x, y, w, m: F.vmap(L.dot)(x, y),
    "in_dims (0, None)": lambda L, F, x, y, w, m: F.vmap(L.dot, in_dims=(0, None))(x, w),
    "in_dims (None, 0)": lambda L, F, x, y, w, m: F.vmap(lambda a, b: m @ (a * b), in_dims=(None, 0))(w, x),
    "in_dims=1": lambda L, F, x, y, w, m: F.vmap(lambda a: a * a.sum(), in_dims=1)(x),
    "in_dims=-1": lambda L, F, x, y, w, m: F.vmap(lambda a: L.exp(a) / a.sum(), in_dims=-1)(y),
    "in_dims (1, 0)": lambda L, F, x, y, w, m: F.vmap(lambda a, b: a[:3] * b, in_dims=(1, 0))(m, x[:3]),
    "out_dims=1": lambda L, F, x, y, w, m: F.vmap(lambda a: L.tanh(a) * w, out_dims=1)(x),
    "out_dims=-1": lambda L, F, x, y, w, m: F.vmap(lambda a: L.outer(a, w), out_dims=-1)(x),
    "out_dims=-2": lambda L, F, x, y, w, m: F.vmap(lambda a: L.outer(a, w), out_dims=-2)(x),
    "two outputs": lambda L, F, x, y, w, m: F.vmap(lambda a, b: f_two(L, a, b))(x, y),
    "two outputs, out_dims (1, 0)": lambda L, F, x, y, w, m: F.vmap(lambda a, b: f_two(L, a, b), out_dims=(1, 0))(x, y),
    "out_dims (0,) for one output": lambda L, F, x, y, w, m: F.vmap(lambda a: a * 2, out_dims=(0,))(x),
    "out_dims None, unbatched output": lambda L, F, x, y, w, m: F.vmap(lambda a: (a * w, m.sum(0)), out_dims=(0, None))(
        x
    ),
    "unbatched output is expanded": lambda L, F, x, y, w, m: F.vmap(lambda a: m * 2)(x),
    "dict in, dict out": lambda L, F, x, y, w, m: F.vmap(
        lambda d: {"s": (d["a"] * d["b"]).sum(), "p": d["a"] * d["b"]}, in_dims=({"a": 0, "b": None},)
    )({"a": x, "b": w}),
    "dict out_dims": lambda L, F, x, y, w, m: F.vmap(lambda a: {"s": a.sum(), "t": a * 3}, out_dims={"s": 0, "t": 1})(
        x
    ),
    "list in_dims": lambda L, F, x, y, w, m: F.vmap(lambda p: p[0] + p[1], in_dims=([0, None],))([x, w]),
    "tuple argument, one in_dim": lambda L, F, x, y, w, m: F.vmap(lambda p: p[0] * p[1])((x, y)),
    "keyword arguments are not batched": lambda L, F, x, y, w, m: F.vmap(lambda a, *, scale: a * scale)(x, scale=w),
    "non-tensor argument with in_dim None": lambda L, F, x, y, w, m: F.vmap(lambda a, k: a * k, in_dims=(0, None))(
        x, 2.5
    ),
    "nested: batched matrix-vector": lambda L, F, x, y, w, m: F.vmap(F.vmap(L.dot, in_dims=(0, None)))(
        x[:, None, :] * m, y
    ),
    "nested: outer product of batches": lambda L, F, x, y, w, m: F.vmap(
        F.vmap(L.dot, in_dims=(None, 0)), in_dims=(0, None)
    )(x, y),
    "chunk_size=2": lambda L, F, x, y, w, m: F.vmap(lambda a, b: f_two(L, a, b), out_dims=(1, 0), chunk_size=2)(x, y),
    "vmap(jacrev(f))": lambda L, F, x, y, w, m: F.vmap(F.jacrev(lambda a: L.sin(a) * a.sum()))(x),
    "vmap(jacrev(f)) in_dims (0, None)": lambda L, F, x, y, w, m: F.vmap(
        F.jacrev(lambda a, mm: L.tanh(mm @ a), argnums=(0, 1)), in_dims=(0, None)
    )(x, m),
    "vmap(grad(f))": lambda L, F, x, y, w, m: F.vmap(F.grad(lambda a, b: (L.sin(a) * b).sum()))(x, y),
    "vmap(grad(f)) argnums=1": lambda L, F, x, y, w, m: F.vmap(
        F.grad(lambda a, b: (L.sin(a) * b).sum() ** 2, argnums=1), in_dims=(None, 0)
    )(w, y),
    "vmap(hessian(f))": lambda L, F, x, y, w, m: F.vmap(F.hessian(lambda a: (L.sin(a) * a).sum()))(x),
    "grad(vmap(f))": lambda L, F, x, y, w, m: F.grad(lambda a: (F.vmap(L.dot, in_dims=(0, None))(x, a) ** 2).sum())(w),
    "jacrev(vmap(f))": lambda L, F, x, y, w, m: F.jacrev(lambda a: F.vmap(lambda r: L.tanh(r * a))(x))(w),
    "vjp of vmap": lambda L, F, x, y, w, m: F.vjp(lambda a: F.vmap(lambda r, s: L.sin(r) * s)(a, y), x)[1](y * 0 + 1),
}


@pytest.mark.parametrize("name", list(CASES))
def test_vmap_equals_torch_func(name: str) -> None:
    _run(CASES[name], XS, YS, W, M)


def test_vmap_is_the_loop_it_stands_for() -> None:
    """vmap(f)(x) is stack([f(x[0]), f(x[1]), ...]) (also against plain numpy)."""
    x = gradtape.tensor(XS)
    out = gfunc.vmap(lambda r: (r * r).sum())(x)
    np.testing.assert_allclose(out.numpy(), (XS * XS).sum(1), rtol=1e-12)
    batched = gfunc.vmap(gfunc.vmap(gradtape.dot, in_dims=(0, None)))(gradtape.tensor(XS[:, None, :] * M), x)
    np.testing.assert_allclose(batched.numpy(), np.einsum("bij,bj->bi", XS[:, None, :] * M, XS), rtol=1e-12)


def test_gradients_of_a_loss_through_vmap_equal_torch() -> None:
    """loss.backward() through a vmapped function reaches the batched input and the unbatched
    weight it closes over, as in PyTorch."""

    def run(L: Any, F: Any, chunk: int | None) -> Any:
        x = L.tensor(XS, requires_grad=True)
        w = L.tensor(W, requires_grad=True)
        m = L.tensor(M, requires_grad=True)

        def per_example(r: Any, v: Any) -> Any:
            return L.tanh(m @ (r * v)).sum() + (r * r).sum()

        out = F.vmap(per_example, in_dims=(0, None), chunk_size=chunk)(x, w)
        loss = (out**2).mean()
        loss.backward()
        return [loss, x.grad, w.grad, m.grad]

    theirs = run(torch, tfunc, None)
    for chunk in (None, 2, 5, 7):
        _close(_np(run(gradtape, gfunc, chunk)), _np(theirs))


# ----- PyTorch's tutorial "Per-sample-gradients" ------------------------------------------


def _mlp_pair() -> tuple[Any, Any]:
    gradtape.manual_seed(4)
    model = nn.Sequential(
        nn.Linear(6, 8, dtype=np.float64),
        nn.Tanh(),
        nn.Linear(8, 8, dtype=np.float64),
        nn.ReLU(),
        nn.Linear(8, 3, dtype=np.float64),
    )
    tmodel = torch.nn.Sequential(
        torch.nn.Linear(6, 8, dtype=torch.float64),
        torch.nn.Tanh(),
        torch.nn.Linear(8, 8, dtype=torch.float64),
        torch.nn.ReLU(),
        torch.nn.Linear(8, 3, dtype=torch.float64),
    )
    tmodel.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in model.state_dict().items()})
    return model, tmodel


def _per_sample_grads(L: Any, F: Any, NF: Any, model: Any, data: Any, targets: Any) -> Any:
    """The tutorial's program, line for line, with ``L``/``F``/``NF`` for torch, torch.func and
    torch.nn.functional."""
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def compute_loss(params: Any, buffers: Any, sample: Any, target: Any) -> Any:
        batch = sample.unsqueeze(0)
        targets = target.unsqueeze(0)
        predictions = F.functional_call(model, (params, buffers), (batch,))
        return NF.cross_entropy(predictions, targets)

    ft_compute_grad = F.grad(compute_loss)
    ft_compute_sample_grad = F.vmap(ft_compute_grad, in_dims=(None, None, 0, 0))
    return ft_compute_sample_grad(params, buffers, data, targets)


def test_per_sample_gradients_tutorial_equals_torch_func() -> None:
    model, tmodel = _mlp_pair()
    data = _R.standard_normal((7, 6))
    targets = _R.integers(0, 3, 7)
    theirs = _per_sample_grads(
        torch, tfunc, torch.nn.functional, tmodel, torch.tensor(data), torch.tensor(targets, dtype=torch.int64)
    )
    ours = _per_sample_grads(
        gradtape, gfunc, nn.functional, model, gradtape.tensor(data), gradtape.tensor(targets.astype(np.int64))
    )
    assert set(ours) == set(theirs) == {n for n, _ in tmodel.named_parameters()}
    for k in theirs:
        assert ours[k].shape == (7, *tmodel.get_parameter(k).shape)
    _close(_np(ours), _np(theirs))
    # and each row is that sample's gradient by an ordinary backward pass
    for i in (0, 6):
        model.zero_grad()
        loss = nn.functional.cross_entropy(model(gradtape.tensor(data[i : i + 1])), gradtape.tensor(targets[i : i + 1]))
        loss.backward()
        for k, p in model.named_parameters():
            np.testing.assert_allclose(ours[k].numpy()[i], p.grad.numpy(), rtol=1e-10, atol=1e-13)


def test_per_sample_gradients_leave_the_model_untouched() -> None:
    model, _ = _mlp_pair()
    before = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    _per_sample_grads(
        gradtape,
        gfunc,
        nn.functional,
        model,
        gradtape.tensor(_R.standard_normal((3, 6))),
        gradtape.tensor(np.array([0, 2, 1])),
    )
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(before[k], v.numpy())
    assert all(p.grad is None for p in model.parameters())


# ----- randomness --------------------------------------------------------------------------


def test_randomness_modes() -> None:
    x = gradtape.tensor(XS)

    def noisy(r: Any) -> Any:
        return r * 0 + gradtape.rand(3, dtype=np.float64)

    gradtape.manual_seed(1)
    expected_next = gradtape.rand(2).numpy()
    gradtape.manual_seed(1)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        gfunc.vmap(noisy)(x)
    np.testing.assert_array_equal(gradtape.rand(2).numpy(), expected_next)  # the generator was put back

    same = gfunc.vmap(noisy, randomness="same")(x).numpy()
    assert same.shape == (5, 3) and (same == same[0]).all()
    different = gfunc.vmap(noisy, randomness="different")(x).numpy()
    assert different.shape == (5, 3) and len({tuple(r) for r in different}) == 5

    with pytest.raises(RuntimeError, match="randomness error mode"):
        tfunc.vmap(lambda r: r * torch.rand(3, dtype=torch.float64))(torch.tensor(XS))


def test_dropout_in_training_mode_needs_a_randomness_mode() -> None:
    drop = nn.Dropout(0.5)
    x = gradtape.tensor(np.ones((4, 6)))
    with pytest.raises(RuntimeError, match="randomness"):
        gfunc.vmap(drop)(x)
    assert gfunc.vmap(drop, randomness="different")(x).shape == (4, 6)
    drop.eval()
    np.testing.assert_array_equal(gfunc.vmap(drop)(x).numpy(), np.ones((4, 6)))


def test_empty_batch() -> None:
    ours = gfunc.vmap(lambda r: r * 2, out_dims=1)(gradtape.tensor(np.zeros((0, 3))))
    theirs = tfunc.vmap(lambda r: r * 2, out_dims=1)(torch.zeros((0, 3), dtype=torch.float64))
    assert ours.shape == tuple(theirs.shape) == (3, 0)
    assert gfunc.vmap(lambda r: r.sum() * 2)(gradtape.tensor(np.zeros((0, 3)))).shape == (0,)
    x = gradtape.tensor(np.zeros((2, 0, 3)), requires_grad=True)
    out = gfunc.vmap(lambda r: r * 2, in_dims=1, out_dims=2)(x)
    assert out.shape == (2, 3, 0)
    out.sum().backward()
    assert x.grad is not None and x.grad.shape == (2, 0, 3)


# ----- errors --------------------------------------------------------------------------------

ERRORS: dict[str, tuple[type[Exception], str, Any]] = {
    "batch sizes differ": (
        ValueError,
        r"same size in the mapped dimension, got sizes \[5, 4\]",
        lambda L, F, x, m: F.vmap(L.mul)(x, m),
    ),
    "in_dim out of range": (
        ValueError,
        r"Got in_dim=2 for some input, but that input is a Tensor of dimensionality 2",
        lambda L, F, x, m: F.vmap(L.sum, in_dims=2)(x),
    ),
    "in_dim out of range, negative": (
        ValueError,
        r"expected in_dim to satisfy -2 <= in_dim < 2",
        lambda L, F, x, m: F.vmap(L.sum, in_dims=-3)(x),
    ),
    "0-d input": (ValueError, "dimensionality 0", lambda L, F, x, m: F.vmap(L.sum)(x[0, 0])),
    "no batched inputs": (
        ValueError,
        "Expected at least one Tensor to vmap over",
        lambda L, F, x, m: F.vmap(L.mul, in_dims=(None, None))(x, x),
    ),
    "in_dims None": (
        ValueError,
        "expected `in_dims` to be int or a",
        lambda L, F, x, m: F.vmap(L.sum, in_dims=None)(x),
    ),
    "in_dims a list": (
        ValueError,
        "expected `in_dims` to be int",
        lambda L, F, x, m: F.vmap(L.mul, in_dims=[0, 0])(x, x),
    ),
    "in_dims too short": (
        ValueError,
        "in_dims is not compatible with the structure of `inputs`",
        lambda L, F, x, m: F.vmap(L.mul, in_dims=(0,))(x, x),
    ),
    "in_dim a float": (
        ValueError,
        "in_dim must be either an integer dimension or None",
        lambda L, F, x, m: F.vmap(L.mul, in_dims=(0.0, 0))(x, x),
    ),
    "in_dim for a number": (
        ValueError,
        "We cannot vmap over non-Tensor arguments",
        lambda L, F, x, m: F.vmap(L.mul)(x, 2.0),
    ),
    "no inputs": (ValueError, "got no inputs", lambda L, F, x, m: F.vmap(lambda: x)()),
    "out_dim out of range": (
        IndexError,
        r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)",
        lambda L, F, x, m: F.vmap(lambda a: a * 2, out_dims=2)(x),
    ),
    "out_dim out of range, negative": (
        IndexError,
        "Dimension out of range",
        lambda L, F, x, m: F.vmap(lambda a: a * 2, out_dims=-3)(x),
    ),
    "out_dims too long": (
        ValueError,
        "out_dims is not compatible with the structure of `outputs`",
        lambda L, F, x, m: F.vmap(lambda a: (a, a), out_dims=(0, 0, 0))(x),
    ),
    "out_dims a string": (
        ValueError,
        "`out_dims` must be an int, None or a python collection of ints",
        lambda L, F, x, m: F.vmap(lambda a: a, out_dims="a")(x),
    ),
    "out_dims None for a batched output": (
        ValueError,
        "can not return a BatchedTensor when out_dim is None",
        lambda L, F, x, m: F.vmap(lambda a: a * 2, out_dims=None)(x),
    ),
    "a number returned": (ValueError, "must only return Tensors", lambda L, F, x, m: F.vmap(lambda a: 3)(x)),
    "randomness unknown": (
        RuntimeError,
        "Only allowed values for randomness are 'error', 'different', or 'same'",
        lambda L, F, x, m: F.vmap(lambda a: a, randomness="sometimes")(x),
    ),
    "chunk_size 0": (
        ValueError,
        r"chunk_size should be None or greater than 0. \(got 0\)",
        lambda L, F, x, m: F.vmap(lambda a: a, chunk_size=0)(x),
    ),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_follow_torch_func(name: str) -> None:
    exc, match, expr = ERRORS[name]
    with pytest.raises(exc, match=match):
        expr(torch, tfunc, torch.tensor(XS), torch.tensor(M))
    with pytest.raises(exc, match=match):
        expr(gradtape, gfunc, gradtape.tensor(XS), gradtape.tensor(M))


def test_batch_size_error_names_each_input() -> None:
    x, m = gradtape.tensor(XS), gradtape.tensor(M)
    with pytest.raises(ValueError) as info:
        gfunc.vmap(lambda d, b: d["x"] * b, in_dims=({"x": 0}, 1))({"x": x}, m.T)
    msg = str(info.value)
    assert "got sizes [5, 4]" in msg
    assert "args[0]['x'] has size 5 at in_dim 0" in msg and "args[1] has size 4 at in_dim 1" in msg


def test_outputs_of_different_shapes_are_refused() -> None:
    x = gradtape.tensor(np.arange(6.0).reshape(3, 2))
    with pytest.raises(ValueError, match=r"shape \(1,\) for batch element 0 but \(2,\) for element 1"):
        gfunc.vmap(lambda r: r[: int(r.numpy()[0]) // 2 % 2 + 1])(x)


def test_an_unbatched_output_equal_across_the_batch_that_requires_grad_is_refused() -> None:
    """``out_dims=None`` on an output that is computed per element and requires grad: equal
    values (a batch of identical rows) do not prove it is independent of the batch, and returning
    element 0's output would send its whole gradient to row 0 (a silently partial gradient).
    PyTorch raises here (the output is batched); so does gradtape, saying why."""
    x = gradtape.tensor(np.ones((3, 2)), requires_grad=True)
    with pytest.raises(ValueError, match="cannot tell that it does not depend on the batch"):
        gfunc.vmap(lambda a: a * 2, out_dims=None)(x)
    tx = torch.ones((3, 2), dtype=torch.float64, requires_grad=True)
    with pytest.raises(ValueError, match="can not return a BatchedTensor when out_dim is None"):
        tfunc.vmap(lambda a: a * 2, out_dims=None)(tx)
    same = gradtape.tensor(np.arange(2.0), requires_grad=True)  # the same tensor each element: fine
    assert gfunc.vmap(lambda a: same, out_dims=None)(x) is same
