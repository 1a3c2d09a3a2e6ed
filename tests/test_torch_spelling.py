"""Issue 27, "a PyTorch program ports by renaming": PyTorch's spellings of gradtape's tensor
methods and ops, each written as PyTorch code and run on both libraries from the same float64
inputs: ``view``/``reshape`` varargs, ``flatten``, ``contiguous``, ``dim``, ``numel``,
``expand``, ``t``, ``permute`` varargs, ``float``/``double``/``long``/``to``, ``size()``,
``cat``/``concat``/``stack`` with ``dim=``, reductions with ``dim=``/``keepdim=`` (``max``/``min``
returning ``(values, indices)``), and ``__setitem__`` off the tape.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, Gradients, ShapeError, TapeError, Tensor, ops
from gradtape.autograd import grad
from gradtape.testing import gradcheck

torch: Any = pytest.importorskip("torch")

Array = np.ndarray[Any, Any]
DEV = Cpu(seed=0)
_RNG = np.random.default_rng(27)


def cat_ours(x: Any, y: Any) -> Any:
    return ops.cat((x, y), 1) if isinstance(x, Tensor) else torch.cat((x, y), 1)


def stack_ours(x: Any, y: Any) -> Any:
    return (ops.stack if isinstance(x, Tensor) else torch.stack)([x, y], dim=-1)


def concat_dim(x: Any, y: Any) -> Any:
    return ops.concat([x, y], dim=0) if isinstance(x, Tensor) else torch.concat([x, y], dim=0)


def flatten_fn(x: Any) -> Any:
    return (ops if isinstance(x, Tensor) else torch).flatten(x, 1, 2)


# (PyTorch code run on both, input shapes)
CASES: dict[str, tuple[Callable[..., Any], list[tuple[int, ...]]]] = {
    "view_varargs": (lambda x: x.view(2, -1) * 2.0, [(2, 3, 2)]),
    "view_tuple": (lambda x: x.view((3, 4)).exp(), [(2, 6)]),
    "reshape_varargs": (lambda x: x.reshape(-1, 2).sin(), [(3, 4)]),
    "flatten_method": (lambda x: x.flatten(1) ** 2, [(2, 3, 2)]),
    "flatten_all": (lambda x: x.flatten().exp(), [(2, 3)]),
    "ops_flatten": (flatten_fn, [(2, 2, 3, 2)]),
    "contiguous": (lambda x: x.transpose(0, 1).contiguous() * x.transpose(0, 1), [(2, 3)]),
    "expand": (lambda x: x.expand(4, -1, 3).sin(), [(2, 1)]),
    "t": (lambda x: x.t() @ x, [(3, 2)]),
    "t_1d": (lambda x: x.t() * x, [(3,)]),
    "permute_varargs": (lambda x: x.permute(2, 0, 1) ** 3, [(2, 3, 2)]),
    "double": (lambda x: x.double() * x, [(2, 3)]),
    "cat": (cat_ours, [(2, 3), (2, 2)]),
    "concat_dim": (concat_dim, [(2, 3), (1, 3)]),
    "stack_dim": (stack_ours, [(2, 3), (2, 3)]),
    "sum_dim_keepdim": (lambda x: x.sum(dim=1, keepdim=True) * x, [(3, 4)]),
    "mean_dims": (lambda x: x.mean(dim=(0, 2)).exp(), [(2, 3, 2)]),
    "logsumexp_dim": (lambda x: x.logsumexp(dim=-1), [(3, 4)]),
    "var_dim": (lambda x: x.var(dim=1, unbiased=True), [(3, 4)]),
    "std_dim_keepdim": (lambda x: x.std(dim=0, keepdim=True, unbiased=True) * x, [(3, 4)]),
    "prod_dim": (lambda x: x.prod(dim=1), [(3, 4)]),
    "max_dim_values": (lambda x: x.max(dim=1).values.exp(), [(3, 4)]),
    "max_dim_keepdim": (lambda x: x.max(dim=0, keepdim=True)[0] * x, [(3, 4)]),
    "min_dim": (lambda x: x.min(dim=-1).values ** 2, [(2, 3, 4)]),
    "max_all": (lambda x: x.max() * x, [(2, 3)]),
}


def _ours(fn: Callable[..., Any], arrays: list[Array]) -> tuple[Array, list[Array]]:
    xs = [DEV.tensor(a) for a in arrays]
    store = Gradients.leaky()
    out = fn(*(x.trace(store) for x in xs))
    w = np.linspace(-1.0, 2.0, out.numel()).reshape(out.shape)
    grads = (out * DEV.tensor(w)).sum().backward()
    return out.numpy(), [grads.get(x).numpy() for x in xs]


def _theirs(fn: Callable[..., Any], arrays: list[Array]) -> tuple[Array, list[Array]]:
    xs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*xs)
    w = torch.tensor(np.linspace(-1.0, 2.0, out.numel()).reshape(tuple(out.shape)))
    (out * w).sum().backward()
    return out.detach().numpy(), [x.grad.numpy() for x in xs]


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_equal_torch_float64(name: str) -> None:
    fn, shapes = CASES[name]
    arrays = [_RNG.standard_normal(s) for s in shapes]
    got, got_grads = _ours(fn, arrays)
    want, want_grads = _theirs(fn, arrays)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    for g, w in zip(got_grads, want_grads, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-13)
    assert gradcheck(fn, arrays)


@pytest.mark.parametrize("name", ["view_varargs", "cat", "sum_dim_keepdim", "max_dim_values", "double", "t"])
def test_second_order_equals_torch_hessian(name: str) -> None:
    fn, shapes = CASES[name]
    sizes = [int(np.prod(s)) for s in shapes]
    bounds = np.cumsum([0, *sizes]).tolist()

    def f(flat: Any) -> Any:
        pieces = [flat[lo:hi].reshape(s) for lo, hi, s in zip(bounds[:-1], bounds[1:], shapes, strict=True)]
        y = fn(*(p + p * p * 0.3 for p in pieces))
        return (y * y * y).sum()

    x0 = _RNG.standard_normal(bounds[-1])
    want = torch.autograd.functional.hessian(f, torch.tensor(x0)).numpy()
    rows = []
    for i in range(x0.size):
        x = DEV.tensor(x0)
        (gx,) = grad(f(x.leaky_trace()), x, create_graph=True)
        assert gx is not None
        e = np.zeros(x0.size)
        e[i] = 1.0
        (row,) = grad((gx * DEV.tensor(e)).sum(), x, allow_unused=True)
        rows.append(np.zeros(x0.size) if row is None else row.numpy())
    np.testing.assert_allclose(np.stack(rows), want, rtol=1e-9, atol=1e-10)


def test_max_min_with_dim_return_values_and_indices_as_torch() -> None:
    a = _RNG.standard_normal((3, 5))
    x, tx = DEV.tensor(a), torch.tensor(a)
    for op in ("max", "min"):
        for keepdim in (False, True):
            got = getattr(x, op)(dim=1, keepdim=keepdim)
            want = getattr(tx, op)(dim=1, keepdim=keepdim)
            values, indices = got
            np.testing.assert_array_equal(values.numpy(), want.values.numpy())
            np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
            assert indices.dtype == np.int64
    assert x.max(axis=1).shape == (3,)  # gradtape's axis= keeps returning the values alone
    v, i = ops.max(DEV.tensor(np.array(2.5)), dim=0)  # a 0-d input, as torch.max(t0, 0)
    assert (v.item(), int(i.numpy())) == (2.5, 0)


def test_size_is_numpy_count_and_torch_callable() -> None:
    x = DEV.tensor(np.zeros((2, 3, 4)))
    tx = torch.zeros(2, 3, 4)
    n: int = x.size
    assert n == 24 == x.numel() == tx.numel()
    assert x.size() == tuple(tx.size()) == (2, 3, 4)
    assert x.size(0) == tx.size(0) and x.size(-1) == tx.size(-1) == 4
    assert x.dim() == tx.dim() == 3
    assert x.size + 1 == 25 and type(x.size + 1) is int
    with pytest.raises(IndexError, match=r"size: dim 3 .*\(2, 3, 4\)"):
        x.size(3)
    with pytest.raises(TypeError, match="size: dim must be an int"):
        x.size(1.0)  # type: ignore[call-overload]


def test_dtype_conversions() -> None:
    a = _RNG.standard_normal((2, 3)) * 3
    x = DEV.tensor(a)
    assert x.float().dtype == np.float32 and x.float().double().dtype == np.float64
    np.testing.assert_array_equal(x.long().numpy(), torch.tensor(a).long().numpy())
    assert x.long().dtype == np.int64 and not x.leaky_trace().long().requires_grad
    mask = x > 0
    np.testing.assert_array_equal(mask.float().numpy(), (torch.tensor(a) > 0).float().numpy())
    assert x.to(np.float32).dtype == np.float32 and x.to("int64").dtype == np.int64
    with pytest.raises(TypeError, match="to: expects a dtype"):
        x.to(object())
    g = grad(x.leaky_trace().float().sum(), x)[0]  # float64 -> float32 is differentiable
    assert g is not None and g.dtype == np.float64


def test_setitem_off_the_tape_writes_as_torch() -> None:
    a = _RNG.standard_normal((3, 4))
    logits, tl = DEV.tensor(a.copy()), torch.tensor(a)
    mask = np.triu(np.ones((3, 4), bool), 1)
    logits[DEV.tensor(mask)] = float("-inf")
    tl[torch.tensor(mask)] = float("-inf")
    logits[:, 0] = 0
    tl[:, 0] = 0
    logits[1] = DEV.tensor(np.arange(4.0))
    tl[1] = torch.arange(4.0, dtype=torch.float64)
    np.testing.assert_array_equal(logits.numpy(), tl.numpy())


def test_setitem_refused_on_recorded_or_grad_tensors() -> None:
    x = DEV.tensor(np.ones((2, 3)))
    for t in (x.leaky_trace(), DEV.tensor(np.ones(3)).requires_grad_(), x.leaky_trace() * 2):
        with pytest.raises(TapeError, match=r"__setitem__: .*masked_fill.*where"):
            t[0] = 0.0
    assert isinstance(TapeError("x"), RuntimeError)
    with pytest.raises(ValueError, match="read-only"):
        DEV.tensor(np.ones((1, 3))).expand(2, 3)[0, 0] = 1.0


def test_both_spellings_refused() -> None:
    x = DEV.tensor(np.ones((2, 3)))
    for call in (
        lambda: x.sum(axis=0, dim=0),
        lambda: x.mean(keepdims=True, keepdim=True),
        lambda: ops.var(x, axis=1, dim=1),
        lambda: x.max(axis=0, dim=0),  # type: ignore[call-overload]
        lambda: ops.logsumexp(x, axis=0, dim=1),
        lambda: x.prod(keepdim=False, keepdims=True),
        lambda: ops.prod(x, 0, axis=0),
    ):
        with pytest.raises(TypeError, match=r"^(sum|mean|var|max|logsumexp|prod): got"):
            call()
    with pytest.raises(TypeError, match="concat: got axis=1 and dim=0"):
        ops.concat([x, x], 1, dim=0)
    with pytest.raises(TypeError, match="stack: got axis=1"):
        ops.stack([x, x], axis=1, dim=0)
    with pytest.raises(TypeError, match="cat: got dim=1 and axis=0"):
        ops.cat([x, x], 1, axis=0)


def test_bad_shapes_name_the_op() -> None:
    x = DEV.tensor(np.ones((2, 3, 4)))
    with pytest.raises(ShapeError, match=r"reshape: cannot reshape .*\(2, 3, 4\)"):
        x.view(5, -1)
    with pytest.raises(ShapeError, match="flatten: start_dim 2 comes after end_dim 1"):
        x.flatten(2, 1)
    with pytest.raises(ShapeError, match="flatten: start_dim 3 is out of range"):
        ops.flatten(x, 3)
    with pytest.raises(ShapeError, match="expand: 2 sizes"):
        x.expand(3, 4)
    with pytest.raises(ShapeError, match="expand: -1 for the new leading dim"):
        x.expand(-1, 2, 3, 4)
    with pytest.raises(ShapeError, match="broadcast_to: cannot broadcast"):
        x.expand(2, 5, 4)
    with pytest.raises(ShapeError, match=r"t: expects .* \(2, 3, 4\)"):
        x.t()
    with pytest.raises(ShapeError, match="permute"):
        x.permute(0, 1)
    with pytest.raises(ShapeError, match=r"max: dim 3 is out of range .*\(2, 3, 4\)"):
        x.max(dim=3)
    assert x.contiguous() is x
    assert ops.flatten(DEV.tensor(np.array(3.0))).shape == (1,)
