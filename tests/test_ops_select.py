"""Issue 27's ops by index and order, written as a PyTorch user writes them: argmax/argmin,
topk/sort/argsort, take_along_axis (PyTorch's gather), scatter_add, index_add, masked_fill,
one_hot, split/chunk, flip, repeat/tile, cumsum/cumprod/prod, and var/std's ``unbiased=``.

Each differentiable op: values and gradients equal PyTorch's in float64 from the same inputs,
``gradcheck``, float32 forwards stay float32, the second rule's Hessian equals PyTorch's
double backward (``torch.autograd.functional.hessian``), and bad input raises an error naming
the op, the argument and the shapes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, DTypeError, Gradients, ShapeError, Tensor, ops
from gradtape.autograd import grad
from gradtape.testing import gradcheck

torch: Any = pytest.importorskip("torch")

Array = np.ndarray[Any, Any]
DEV = Cpu(seed=0)
_RNG = np.random.default_rng(2027)


def normal(shape: tuple[int, ...]) -> Array:
    """Standard normal float64 samples (ties have probability 0)."""
    return _RNG.standard_normal(shape)


def away(shape: tuple[int, ...]) -> Array:
    """Values in +-[0.5, 1.5]: products stay moderate, no zeros."""
    out: Array = _RNG.uniform(0.5, 1.5, shape) * _RNG.choice([-1.0, 1.0], shape)
    return out


def zeros_in(shape: tuple[int, ...]) -> Array:
    """Like :func:`away`, with exact zeros: one in row 0, two in row 1, none in the others."""
    x = away(shape)
    x[0, 1] = 0.0
    x[1, 0] = x[1, -2] = 0.0
    return x


def i64(a: Any) -> Tensor[Any, Any]:
    return DEV.tensor(np.asarray(a, dtype=np.int64))


def t64(a: Any) -> Any:
    return torch.tensor(np.asarray(a, dtype=np.int64))


@dataclass(frozen=True)
class Case:
    """One differentiable use: ``ours(*tensors)`` and PyTorch's ``theirs(*tensors)`` (the same
    callable when the spelling is the same), the inputs' shapes and their sampler."""

    ours: Callable[..., Any]
    theirs: Callable[..., Any] | None = None
    shapes: list[tuple[int, ...]] = field(default_factory=lambda: [(3, 4)])
    sample: Callable[[tuple[int, ...]], Array] = normal

    def torch_fn(self) -> Callable[..., Any]:
        return self.ours if self.theirs is None else self.theirs


TAKE = np.array([[2, 0, 2], [1, 1, 3]])  # repeated entries: their gradients accumulate
TAKE0 = np.array([[2, 0], [0, 0], [1, 2], [2, 2]])
SCAT = np.array([[2, 0, 2], [2, 1, 0]])  # into (3, 4) along dim 0 (column 3 gets nothing), repeats
MASK = np.array([[True, False, False, True]])

CASES: dict[str, Case] = {
    "topk": Case(lambda x: x.topk(2, dim=1).values, shapes=[(3, 5)]),
    "topk_smallest_dim0": Case(lambda x: x.topk(3, dim=0, largest=False).values, shapes=[(4, 3)]),
    "sort_descending_dim0": Case(lambda x: x.sort(dim=0, descending=True).values, shapes=[(4, 3)]),
    "sort_last_dim": Case(lambda x: x.sort().values, shapes=[(2, 3, 4)]),
    "take_along_axis": Case(lambda x: x.take_along_axis(i64(TAKE), 1), lambda x: x.gather(1, t64(TAKE))),
    "take_along_axis_dim0": Case(
        lambda x: ops.take_along_axis(x, i64(TAKE0), dim=0), lambda x: torch.gather(x, 0, t64(TAKE0)), [(3, 2)]
    ),
    "scatter_add": Case(
        lambda x, s: x.scatter_add(0, i64(SCAT), s), lambda x, s: x.scatter_add(0, t64(SCAT), s), [(3, 4), (2, 3)]
    ),
    "index_add": Case(
        lambda x, s: x.index_add(1, i64([0, 3, 0]), s, alpha=2.5),
        lambda x, s: x.index_add(1, t64([0, 3, 0]), s, alpha=2.5),
        [(2, 4), (2, 3)],
    ),
    "masked_fill": Case(
        lambda x: x.masked_fill(DEV.tensor(MASK), -1.5), lambda x: x.masked_fill(torch.tensor(MASK), -1.5)
    ),
    "masked_fill_tensor_value": Case(
        lambda x, v: x.masked_fill(DEV.tensor(MASK), v), lambda x, v: x.masked_fill(torch.tensor(MASK), v), [(3, 4), ()]
    ),
    "split_one_piece_used": Case(lambda x: x.split([1, 3], dim=1)[1], shapes=[(2, 4)]),
    "split_two_pieces": Case(lambda x: (lambda p: p[0] * p[2])(x.split(2)), shapes=[(5, 3)]),
    "chunk": Case(lambda x: (lambda p: p[0] * p[1].exp())(x.chunk(3, dim=1)), shapes=[(2, 5)]),
    "flip": Case(lambda x: x.flip(0, 1)),
    "flip_last": Case(lambda x: x.flip([-1]), shapes=[(2, 3, 2)]),
    "cumsum": Case(lambda x: x.cumsum(1)),
    "cumsum_dim0": Case(lambda x: x.cumsum(dim=0), shapes=[(4, 2)]),
    "cumprod": Case(lambda x: x.cumprod(1), sample=away, shapes=[(3, 5)]),
    "cumprod_zeros": Case(lambda x: x.cumprod(dim=1), sample=zeros_in, shapes=[(3, 5)]),
    "cumprod_zeros_dim0": Case(lambda x: x.T.cumprod(0), lambda x: x.T.cumprod(0), [(3, 4)], zeros_in),
    "prod_dim": Case(lambda x: x.prod(1), sample=away),
    "prod_all": Case(lambda x: x.prod(), sample=away, shapes=[(2, 3)]),
    "prod_zeros_keepdim": Case(lambda x: x.prod(dim=1, keepdim=True), sample=zeros_in, shapes=[(3, 4)]),
    "prod_zeros_all": Case(lambda x: x[:2].prod() + x[2:].prod(), sample=zeros_in, shapes=[(3, 3)]),
    "repeat": Case(lambda x: x.repeat(2, 1, 3), shapes=[(2, 3)]),
    "tile": Case(lambda x: x.tile((2,)), shapes=[(2, 3)]),
}


def _inputs(case: Case) -> list[Array]:
    return [case.sample(s) if s else np.asarray(_RNG.standard_normal()) for s in case.shapes]


def _ours_with_grads(case: Case, arrays: list[Array], w: Array | None = None) -> tuple[Array, list[Array]]:
    xs = [DEV.tensor(a) for a in arrays]
    store = Gradients.leaky()
    out = case.ours(*(x.trace(store) for x in xs))
    weights = np.linspace(-1.0, 2.0, out.size).reshape(out.shape) if w is None else w
    grads = (out * DEV.tensor(weights)).sum().backward()
    return out.numpy(), [grads.get(x).numpy() for x in xs]


def _torch_with_grads(case: Case, arrays: list[Array]) -> tuple[Array, list[Array]]:
    xs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = case.torch_fn()(*xs)
    weights = torch.tensor(np.linspace(-1.0, 2.0, out.numel()).reshape(tuple(out.shape)))
    (out * weights).sum().backward()
    return out.detach().numpy(), [x.grad.numpy() for x in xs]


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_equal_torch_float64(name: str) -> None:
    case = CASES[name]
    arrays = _inputs(case)
    got, got_grads = _ours_with_grads(case, arrays)
    want, want_grads = _torch_with_grads(case, arrays)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    for k, (g, w) in enumerate(zip(got_grads, want_grads, strict=True)):
        np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-13, err_msg=f"{name}: gradient of input {k}")


@pytest.mark.parametrize("name", list(CASES))
def test_gradcheck(name: str) -> None:
    case = CASES[name]
    assert gradcheck(case.ours, _inputs(case))


@pytest.mark.parametrize("name", list(CASES))
def test_float32_stays_float32_and_matches_torch(name: str) -> None:
    case = CASES[name]
    arrays = _inputs(case)
    out = case.ours(*(DEV.tensor(a.astype(np.float32)) for a in arrays))
    want = case.torch_fn()(*(torch.tensor(a) for a in arrays)).numpy()
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), want, rtol=2e-6, atol=1e-6)


def _scalar(case: Case, shapes: list[tuple[int, ...]]) -> Callable[[Any], Any]:
    """``sum(op(*h(pieces))**3)`` of one flat vector cut into the inputs, ``h(x) = x + 0.3 x**2``
    (its derivative is not 0 at 0: zeros of cumprod/prod inputs stay zeros and still count)."""
    sizes = [int(np.prod(s)) for s in shapes]
    bounds = np.cumsum([0, *sizes]).tolist()

    def f(flat: Any) -> Any:
        ours = isinstance(flat, Tensor)
        pieces = [flat[lo:hi].reshape(s) for lo, hi, s in zip(bounds[:-1], bounds[1:], shapes, strict=True)]
        y = (case.ours if ours else case.torch_fn())(*(p + p * p * 0.3 for p in pieces))
        return (y * y * y).sum()

    return f


def _our_hessian(f: Callable[[Any], Any], x0: Array) -> Array:
    """Rows of the Hessian from the recorded gradient (the ops' second rules); also checks that
    the recorded gradient equals the first-order one."""
    rows = []
    for i in range(x0.size):
        x = DEV.tensor(x0)
        (gx,) = grad(f(x.leaky_trace()), x, create_graph=True)
        assert gx is not None
        if i == 0:
            (g1,) = grad(f(x.leaky_trace()), x)
            assert g1 is not None
            np.testing.assert_allclose(gx.numpy(), g1.numpy(), rtol=1e-11, atol=1e-13)
        e = np.zeros(x0.size)
        e[i] = 1.0
        (row,) = grad((gx * DEV.tensor(e)).sum(), x, allow_unused=True)
        rows.append(np.zeros(x0.size) if row is None else row.numpy())
    return np.stack(rows)


@pytest.mark.parametrize("name", list(CASES))
def test_second_rule_hessian_equals_torch_double_backward(name: str) -> None:
    case = CASES[name]
    arrays = _inputs(case)
    x0 = np.concatenate([a.reshape(-1) for a in arrays])
    f = _scalar(case, [a.shape for a in arrays])
    want = torch.autograd.functional.hessian(f, torch.tensor(x0)).numpy()
    np.testing.assert_allclose(_our_hessian(f, x0), want, rtol=1e-9, atol=1e-11)


def test_third_derivative_through_cumprod_with_zeros_and_prod() -> None:
    """The second rules are themselves differentiable: d3/dx3 through cumprod and prod with a
    zero in the input, against PyTorch's triple backward."""
    x0 = np.array([0.7, 0.0, -1.2, 0.9])

    def f(x: Any) -> Any:
        return (x.cumprod(0) * x.cumprod(0)).sum() + (x * x).prod()

    x = DEV.tensor(x0)
    (g1,) = grad(f(x.leaky_trace()), x, create_graph=True)
    assert g1 is not None
    (g2,) = grad(g1.sum(), x, create_graph=True)
    assert g2 is not None
    (g3,) = grad((g2 * DEV.tensor(np.arange(1.0, 5.0))).sum(), x)
    assert g3 is not None
    xt = torch.tensor(x0, requires_grad=True)
    (t1,) = torch.autograd.grad(f(xt), xt, create_graph=True)
    (t2,) = torch.autograd.grad(t1.sum(), xt, create_graph=True)
    (t3,) = torch.autograd.grad((t2 * torch.arange(1.0, 5.0, dtype=torch.float64)).sum(), xt)
    np.testing.assert_allclose(g2.numpy(), t2.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(g3.numpy(), t3.numpy(), rtol=1e-10, atol=1e-12)


# ----- argmax / argmin / sort / argsort / topk: PyTorch's results --------------------------


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize(
    "kw", [{}, {"dim": 0}, {"dim": 1}, {"dim": -1, "keepdim": True}, {"keepdim": True}, {"dim": 2}]
)
def test_argmax_argmin_equal_torch(op: str, kw: dict[str, Any]) -> None:
    a = np.round(normal((3, 4, 5)) * 2)  # ties: the first position wins in both
    a[1, 2, 3] = np.nan
    got = getattr(DEV.tensor(a), op)(**kw)
    want = getattr(torch.tensor(a), op)(**kw)
    assert got.dtype == np.int64 and got.shape == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    ints = np.round(normal((3, 4)) * 3).astype(np.int64)
    kw2 = {k: v for k, v in kw.items() if k != "dim" or v < 2}
    np.testing.assert_array_equal(
        getattr(DEV.tensor(ints), op)(**kw2).numpy(), getattr(torch.tensor(ints), op)(**kw2).numpy()
    )


def test_argmax_is_an_untracked_int64_constant_with_axis_spelling_too() -> None:
    x = DEV.tensor(normal((2, 3)), requires_grad=True)
    i = x.argmax(dim=1)
    assert i.dtype == np.int64 and not i.requires_grad
    np.testing.assert_array_equal(ops.argmax(x, axis=1, keepdims=True).numpy(), x.argmax(1, True).numpy())
    assert ops.argmin(DEV.tensor(np.array(2.5))).numpy() == 0  # 0-d: as torch.argmin(torch.tensor(2.5))
    np.testing.assert_array_equal(x.argmin(dim=None, keepdim=True).numpy(), [[np.argmin(x.numpy())]])


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_sort_argsort_with_ties_and_nan_equal_torch_stable(descending: bool, dim: int) -> None:
    a = np.round(normal((5, 6)))  # many ties
    a[2, 3] = np.nan
    values, indices = DEV.tensor(a).sort(dim=dim, descending=descending, stable=True)
    want = torch.tensor(a).sort(dim=dim, descending=descending, stable=True)
    np.testing.assert_array_equal(values.numpy(), want.values.numpy())
    np.testing.assert_array_equal(indices.numpy(), want.indices.numpy())
    assert indices.dtype == np.int64
    np.testing.assert_array_equal(
        DEV.tensor(a).argsort(dim=dim, descending=descending).numpy(),
        torch.argsort(torch.tensor(a), dim=dim, descending=descending, stable=True).numpy(),
    )


@pytest.mark.parametrize(("k", "dim", "largest"), [(1, -1, True), (3, 1, True), (2, 0, False), (0, 1, True)])
def test_topk_equal_torch_and_is_a_named_pair(k: int, dim: int, largest: bool) -> None:
    a = normal((4, 5))
    a[1, 2] = np.nan  # counts as the largest, as in PyTorch
    got = ops.topk(DEV.tensor(a), k, dim=dim, largest=largest)
    want = torch.topk(torch.tensor(a), k, dim=dim, largest=largest)
    values, indices = got
    assert values is got.values and indices is got.indices
    np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
    np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
    assert got.indices.dtype == np.int64 and not got.indices.requires_grad


def test_topk_and_sort_of_a_0d_tensor_give_0d_results() -> None:
    x = DEV.tensor(np.array(1.5))
    v, i = x.topk(1)
    assert v.shape == () and i.shape == () and v.item() == 1.5 and int(i.item()) == 0
    assert x.sort().values.shape == ()


def test_topk_gradient_goes_to_picked_positions_only() -> None:
    x = torch.tensor([[0.1, 0.9, 0.5], [0.3, 0.2, 0.8]], dtype=torch.float64, requires_grad=True)
    ours = DEV.tensor(x.detach().numpy(), requires_grad=True)
    ours.topk(2, dim=1).values.sum().backward()
    x.topk(2, dim=1).values.sum().backward()
    assert ours.grad is not None
    np.testing.assert_array_equal(ours.grad.numpy(), x.grad.numpy())
    np.testing.assert_array_equal(ours.grad.numpy(), [[0, 1, 1], [1, 0, 1]])


# ----- take_along_axis (PyTorch's gather) vs gather (numpy's take) -------------------------


def test_take_along_axis_is_torch_gather_and_gather_stays_numpy_take() -> None:
    """The same call shape means different things: ``ops.gather``/``Tensor.gather`` keep
    numpy's ``take`` (existing callers unchanged); ``take_along_axis`` is ``torch.gather``."""
    a = normal((3, 4))
    idx = np.array([[0, 3], [2, 2], [1, 0]])
    np.testing.assert_array_equal(
        DEV.tensor(a).take_along_axis(i64(idx), dim=1).numpy(), torch.tensor(a).gather(1, t64(idx)).numpy()
    )
    np.testing.assert_array_equal(ops.gather(DEV.tensor(a), idx, axis=1).numpy(), np.take(a, idx, axis=1))
    np.testing.assert_array_equal(DEV.tensor(a).gather(idx, 1).numpy(), np.take(a, idx, axis=1))
    assert "take_along_axis" in (ops.gather.__doc__ or "") and "gather" in (ops.take_along_axis.__doc__ or "")


def test_take_along_axis_with_a_smaller_index_picks_the_leading_slices_as_torch() -> None:
    a = normal((4, 5, 3))
    idx = np.array([[[1], [0]], [[4], [4]]])  # (2, 2, 1) along dim 1: no broadcasting, as torch.gather
    got = ops.take_along_axis(DEV.tensor(a), idx, 1)
    np.testing.assert_array_equal(got.numpy(), torch.gather(torch.tensor(a), 1, t64(idx)).numpy())
    assert ops.take_along_axis(DEV.tensor(a), idx, axis=1).shape == (2, 2, 1)


def test_scatter_add_and_index_add_accumulate_repeats_like_torch() -> None:
    x = normal((3, 4))
    src = normal((3, 5))
    idx = np.array([[0, 0, 2, 0], [0, 1, 2, 2]])
    np.testing.assert_allclose(
        DEV.tensor(x).scatter_add(0, idx, DEV.tensor(src)).numpy(),
        torch.tensor(x).scatter_add(0, t64(idx), torch.tensor(src)).numpy(),
        rtol=1e-15,
    )
    sel = [2, 2, 0]
    np.testing.assert_allclose(
        DEV.tensor(x).index_add(0, sel, DEV.tensor(src[:, :4]), alpha=-2).numpy(),
        torch.tensor(x).index_add(0, t64(sel), torch.tensor(src[:, :4]), alpha=-2).numpy(),
        rtol=1e-15,
    )
    xi = np.arange(12).reshape(3, 4)
    got = DEV.tensor(xi).scatter_add(1, i64([[3, 3], [0, 1], [2, 2]]), DEV.tensor(np.ones((3, 2), np.int64)))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(
        got.numpy(), torch.tensor(xi).scatter_add(1, t64([[3, 3], [0, 1], [2, 2]]), torch.ones(3, 2, dtype=torch.int64))
    )


@pytest.mark.parametrize("op", ["scatter_add", "gather"])
def test_zero_dim_scatter_add_and_gather_keep_scalar_gradients_like_torch(op: str) -> None:
    """0-d input, index and src (PyTorch takes them): values and every gradient 0-d, as
    PyTorch's (the source's gradient came back with shape (1,))."""
    x, src = DEV.tensor(np.array(1.5), requires_grad=True), DEV.tensor(np.array(2.0), requires_grad=True)
    xt = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)
    st = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    if op == "scatter_add":
        y, yt = x.scatter_add(0, np.array(0), src), xt.scatter_add(0, torch.tensor(0), st)
    else:
        y, yt = x.gather(0, np.array(0)), xt.gather(0, torch.tensor(0))
    (y * 3.0).backward()
    (yt * 3.0).backward()
    assert y.shape == tuple(yt.shape) == ()
    assert x.grad is not None and xt.grad is not None
    assert x.grad.shape == () and float(x.grad.numpy()) == float(xt.grad)
    if op == "scatter_add":
        assert src.grad is not None and st.grad is not None
        assert src.grad.shape == () and float(src.grad.numpy()) == float(st.grad)


def test_scatter_add_from_a_larger_src_adds_and_differentiates_only_the_covered_part() -> None:
    """PyTorch adds ``src[:2, :3]`` of a larger ``src`` (its backward then fails on the shape);
    gradtape gives the uncovered part a zero gradient."""
    x, src = normal((3, 4)), normal((2, 5))
    got = DEV.tensor(x).scatter_add(0, i64(SCAT), DEV.tensor(src))
    want = torch.tensor(x).scatter_add(0, t64(SCAT), torch.tensor(src))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-15)
    assert gradcheck(lambda a, s: a.scatter_add(0, i64(SCAT), s), [x, src])
    s_t = DEV.tensor(src, requires_grad=True)
    DEV.tensor(x).scatter_add(0, i64(SCAT), s_t).sum().backward()
    assert s_t.grad is not None
    np.testing.assert_array_equal(s_t.grad.numpy(), np.pad(np.ones((2, 3)), ((0, 0), (0, 2))))


# ----- masked_fill / one_hot / split / chunk / repeat / tile -------------------------------


def test_masked_fill_with_minus_inf_broadcast_mask_and_integers() -> None:
    a = normal((2, 3, 3)).astype(np.float32)
    causal = np.triu(np.ones((3, 3), bool), k=1)
    got = DEV.tensor(a).masked_fill(DEV.tensor(causal), float("-inf"))
    want = torch.tensor(a).masked_fill(torch.tensor(causal), float("-inf"))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    ints = np.arange(6).reshape(2, 3)
    got_i = ops.masked_fill(DEV.tensor(ints), ints % 2 == 0, 7)
    np.testing.assert_array_equal(got_i.numpy(), torch.tensor(ints).masked_fill(torch.tensor(ints % 2 == 0), 7))


@pytest.mark.parametrize("num_classes", [-1, 6])
def test_one_hot_equals_torch(num_classes: int) -> None:
    labels = np.array([[0, 3], [4, 1], [3, 3]])
    got = ops.one_hot(DEV.tensor(labels), num_classes)
    want = torch.nn.functional.one_hot(torch.tensor(labels), num_classes)
    assert got.dtype == np.int64 and not got.requires_grad
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("n", [0, 1, 5, 6, 7])
@pytest.mark.parametrize("arg", [1, 2, 4, 10])
def test_split_and_chunk_sizes_equal_torch(n: int, arg: int) -> None:
    a = normal((2, n))
    for name in ("split", "chunk"):
        got = getattr(DEV.tensor(a), name)(arg, dim=1)
        want = getattr(torch.tensor(a), name)(arg, dim=1)
        assert isinstance(got, tuple) and [p.shape for p in got] == [tuple(p.shape) for p in want], name
        for p, q in zip(got, want, strict=True):
            np.testing.assert_array_equal(p.numpy(), q.numpy())
    sections = [n - n // 2, 0, n // 2]
    got_s = ops.split(DEV.tensor(a), sections, axis=1)
    assert [p.shape[1] for p in got_s] == [p.shape[1] for p in torch.tensor(a).split(sections, 1)]


def test_split_pieces_used_partly_give_the_whole_gradient() -> None:
    """One recorded op for all pieces: unused pieces give 0, used ones their gradient, also
    through two backward passes into one leaky store and under create_graph."""
    x = DEV.tensor(normal((6, 2)), requires_grad=True)
    a, _, c = x.split(2)
    (a.sum() * 2.0 + (c * c).sum()).backward()
    assert x.grad is not None
    want = np.concatenate([np.full((2, 2), 2.0), np.zeros((2, 2)), 2 * x.numpy()[4:]])
    np.testing.assert_allclose(x.grad.numpy(), want)


@pytest.mark.parametrize(("shape", "reps"), [((2, 3), (2, 2)), ((3,), (2, 1, 2)), ((2, 1, 3), (1, 4, 1)), ((), (3,))])
def test_repeat_and_tile_equal_torch(shape: tuple[int, ...], reps: tuple[int, ...]) -> None:
    a = np.asarray(normal(shape))
    np.testing.assert_array_equal(DEV.tensor(a).repeat(*reps).numpy(), torch.tensor(a).repeat(*reps).numpy())
    np.testing.assert_array_equal(DEV.tensor(a).repeat(reps).numpy(), torch.tensor(a).repeat(reps).numpy())
    short = reps[1:]
    np.testing.assert_array_equal(ops.tile(DEV.tensor(a), short).numpy(), torch.tile(torch.tensor(a), short).numpy())


def test_flip_cumsum_cumprod_prod_of_0d_and_integers_as_torch() -> None:
    s = DEV.tensor(np.array(3.0))
    assert s.cumsum(0).item() == 3.0 and s.cumprod(-1).item() == 3.0 and s.prod(0).item() == 3.0
    assert s.flip(0).item() == 3.0
    ints = np.array([[1, 2, 3], [0, 4, 5]], np.int32)
    for op, kw in (("cumsum", {"dim": 1}), ("cumprod", {"dim": 0}), ("prod", {"dim": 1}), ("prod", {})):
        got = getattr(DEV.tensor(ints), op)(**kw)
        want = getattr(torch.tensor(ints), op)(**kw)
        assert got.dtype == np.int64 and want.dtype == torch.int64
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert ops.cumsum(DEV.tensor(normal((2, 3))), axis=1).shape == (2, 3)


def test_float32_forwards_equal_the_numpy_expressions() -> None:
    a = normal((3, 4)).astype(np.float32)
    x = DEV.tensor(a)
    for got, want in (
        (x.cumsum(1), np.cumsum(a, 1)),
        (x.cumprod(0), np.cumprod(a, 0)),
        (x.prod(1), np.prod(a, 1)),
        (x.flip(1), a[:, ::-1]),
        (x.repeat(1, 2), np.tile(a, (1, 2))),
        (x.sort(0).values, np.sort(a, 0)),
    ):
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got.numpy(), want)


# ----- var / std: unbiased= and correction= ------------------------------------------------


@pytest.mark.parametrize("op", ["var", "std"])
def test_var_std_unbiased_and_correction_equal_torch_and_default_stays_numpy(op: str) -> None:
    a = normal((4, 5))
    x = DEV.tensor(a)
    np.testing.assert_allclose(getattr(x, op)().numpy(), getattr(np, op)(a), rtol=1e-13)  # numpy's ddof=0
    for kw in ({"unbiased": True}, {"unbiased": False}, {"correction": 1}, {"correction": 0}, {"correction": 2}):
        got = getattr(x, op)(axis=1, **kw)
        want = getattr(torch.tensor(a), op)(dim=1, **kw)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-13, err_msg=f"{op}({kw})")
    assert gradcheck(lambda t: getattr(t, op)(axis=0, unbiased=True), [a])


# ----- bad input ---------------------------------------------------------------------------

X = DEV.tensor(normal((2, 3)))
XI = DEV.tensor(np.arange(6).reshape(2, 3))
EMPTY = DEV.tensor(np.zeros((0, 3)))
SRC = DEV.tensor(normal((2, 3)))

BAD: list[tuple[str, Callable[[], Any], type[Exception], str]] = [
    ("argmax-dim", lambda: X.argmax(dim=2), ShapeError, r"argmax: dim 2 is out of range .*shape \(2, 3\)"),
    ("argmax-float-dim", lambda: X.argmax(dim=1.0), TypeError, r"argmax: dim must be an int, got 1\.0"),  # type: ignore[call-overload]
    ("argmax-empty", lambda: EMPTY.argmax(), ShapeError, r"argmax: input of shape \(0, 3\) has no elements"),
    ("argmin-empty-dim", lambda: EMPTY.argmin(dim=0), ShapeError, r"argmin: dim 0 .* shape \(0, 3\) has size 0"),
    ("argmax-bool", lambda: DEV.tensor(np.ones(3, bool)).argmax(), DTypeError, r"argmax: input has dtype bool"),
    ("argmax-dim-and-axis", lambda: X.argmax(dim=0, axis=1), TypeError, r"argmax: got dim=0 and axis=1"),
    ("topk-k-too-large", lambda: X.topk(4), ValueError, r"topk: k=4 is out of range for dim 1 of size 3 .*\(2, 3\)"),
    ("topk-k-negative", lambda: X.topk(-1, dim=0), ValueError, r"topk: k=-1 is out of range for dim 0 of size 2"),
    ("topk-k-float", lambda: X.topk(1.0), TypeError, r"topk: k must be an int"),  # type: ignore[arg-type]
    ("topk-dim", lambda: X.topk(1, dim=-3), ShapeError, r"topk: dim -3 is out of range"),
    ("sort-dim", lambda: X.sort(dim=2), ShapeError, r"sort: dim 2 is out of range .*\(2, 3\)"),
    ("sort-descending", lambda: X.sort(descending="yes"), TypeError, r"sort: the order flag must be a bool"),  # type: ignore[call-overload]
    ("argsort-dim", lambda: X.argsort(dim=5), ShapeError, r"argsort: dim 5 is out of range"),
    (
        "take-range",
        lambda: X.take_along_axis(i64([[0, 3]]), 1),
        IndexError,
        r"take_along_axis: index 3 is out of range for dim 1 of size 3 "
        r"\(index of shape \(1, 2\), input of shape \(2, 3\)\)",
    ),
    (
        "take-negative",
        lambda: X.take_along_axis(i64([[-1]]), 1),
        IndexError,
        r"take_along_axis: index -1 is out of range",
    ),
    (
        "take-float-index",
        lambda: X.take_along_axis(DEV.tensor([[0.0]]), 1),
        DTypeError,
        r"take_along_axis: index must be integers, got dtype float32",
    ),
    (
        "take-rank",
        lambda: X.take_along_axis(i64([0, 1]), 1),
        ShapeError,
        r"take_along_axis: index has 1 dims \(shape \(2,\)\), input has 2 \(shape \(2, 3\)\)",
    ),
    (
        "take-larger",
        lambda: X.take_along_axis(i64([[0], [0], [0]]), 1),
        ShapeError,
        r"take_along_axis: index of shape \(3, 1\) is larger than input of shape \(2, 3\) outside dim 1",
    ),
    ("take-no-dim", lambda: ops.take_along_axis(X, i64([[0]])), TypeError, r"take_along_axis: dim is required"),
    ("take-dim", lambda: X.take_along_axis(i64([[0]]), 2), ShapeError, r"take_along_axis: dim 2 is out of range"),
    (
        "scatter-range",
        lambda: X.scatter_add(0, i64([[2, 0, 0]]), SRC),
        IndexError,
        r"scatter_add: index 2 is out of range for dim 0 of size 2",
    ),
    (
        "scatter-float",
        lambda: X.scatter_add(0, np.zeros((1, 3)), SRC),
        DTypeError,
        r"scatter_add: index must be integers, got dtype float64",
    ),
    (
        "scatter-dtype",
        lambda: X.scatter_add(0, i64([[0]]), SRC.to_dtype(np.float32)),
        DTypeError,
        r"scatter_add: src has dtype float32 \(shape \(2, 3\)\), input has dtype float64",
    ),
    (
        "scatter-src-small",
        lambda: X.scatter_add(1, i64([[0, 1, 2, 0]]), SRC),
        ShapeError,
        r"scatter_add: index of shape \(1, 4\) is larger than src of shape \(2, 3\)",
    ),
    (
        "scatter-src-list",
        lambda: X.scatter_add(0, i64([[0]]), [[1.0]]),  # type: ignore[arg-type]
        TypeError,
        r"scatter_add: src must be a Tensor",
    ),
    ("scatter-dim", lambda: X.scatter_add(2, i64([[0]]), SRC), ShapeError, r"scatter_add: dim 2 is out of range"),
    (
        "index_add-2d",
        lambda: X.index_add(0, [[0]], SRC),
        ShapeError,
        r"index_add: index must be 1-D, got shape \(1, 1\)",
    ),
    (
        "index_add-source",
        lambda: X.index_add(1, [0, 1], SRC),
        ShapeError,
        r"index_add: source of shape \(2, 3\) does not fit input of shape \(2, 3\) with 2 indices "
        r"along dim 1 \(want source of shape \(2, 2\)\)",
    ),
    (
        "index_add-range",
        lambda: X.index_add(0, [0, 2], SRC),
        IndexError,
        r"index_add: index 2 is out of range for dim 0 of size 2",
    ),
    ("index_add-float", lambda: X.index_add(0, [0.0, 1.0], SRC), DTypeError, r"index_add: index must be integers"),
    (
        "index_add-alpha",
        lambda: X.index_add(0, [0, 1], SRC, alpha="2"),  # type: ignore[arg-type]
        TypeError,
        r"index_add: alpha must be a number",
    ),
    (
        "masked_fill-float-mask",
        lambda: X.masked_fill(X, 0.0),
        DTypeError,
        r"masked_fill: mask must be bool, got dtype float64 of shape \(2, 3\)",
    ),
    (
        "masked_fill-shape",
        lambda: X.masked_fill(np.ones((3, 1), bool), 0.0),
        ShapeError,
        r"masked_fill: mask of shape \(3, 1\) does not broadcast to input of shape \(2, 3\)",
    ),
    (
        "masked_fill-grows",
        lambda: X.masked_fill(np.ones((2, 1, 3), bool), 0.0),
        ShapeError,
        r"masked_fill: mask of shape \(2, 1, 3\) does not broadcast",
    ),
    (
        "masked_fill-value",
        lambda: X.masked_fill(np.ones((2, 3), bool), "0"),
        TypeError,
        r"masked_fill: value must be a number or a 0-d tensor",
    ),
    (
        "masked_fill-value-shape",
        lambda: X.masked_fill(np.ones((2, 3), bool), SRC),
        ShapeError,
        r"masked_fill: a tensor value must be 0-d, got shape \(2, 3\)",
    ),
    (
        "masked_fill-int-inf",
        lambda: XI.masked_fill(np.ones((2, 3), bool), float("inf")),
        ValueError,
        r"masked_fill: value inf does not fit input of dtype int64",
    ),
    (
        "one_hot-float",
        lambda: ops.one_hot(X),
        DTypeError,
        r"one_hot: tensor must hold integer class indices, got dtype float64 \(shape \(2, 3\)\)",
    ),
    ("one_hot-range", lambda: ops.one_hot(XI, 5), IndexError, r"one_hot: class index 5 is out of range for 5 classes"),
    ("one_hot-negative", lambda: ops.one_hot(i64([1, -1])), IndexError, r"one_hot: class index -1 is out of range"),
    (
        "one_hot-empty",
        lambda: ops.one_hot(i64(np.zeros((0,)))),
        ValueError,
        r"one_hot: cannot infer num_classes from an empty tensor",
    ),
    (
        "split-sections",
        lambda: X.split([1, 1], dim=1),
        ValueError,
        r"split: sections \[1, 1\] must be non-negative and add up to the size 3 of dim 1 \(shape \(2, 3\)\)",
    ),
    ("split-zero", lambda: X.split(0), ValueError, r"split: split size 0 is invalid for dim 0 of size 2"),
    ("split-float", lambda: X.split(1.5), TypeError, r"split: split_size_or_sections must be an int or a list of ints"),  # type: ignore[arg-type]
    (
        "split-0d",
        lambda: DEV.tensor(np.array(1.0)).split(1),
        ShapeError,
        r"split: expects a tensor of at least 1 dim, got shape \(\)",
    ),
    ("split-dim", lambda: X.split(1, dim=2), ShapeError, r"split: dim 2 is out of range"),
    ("chunk-zero", lambda: X.chunk(0), ValueError, r"chunk: chunks must be positive, got 0 \(shape \(2, 3\)\)"),
    ("chunk-float", lambda: X.chunk(2.0), TypeError, r"chunk: chunks must be an int"),  # type: ignore[arg-type]
    (
        "flip-repeat",
        lambda: X.flip(0, -2),
        ShapeError,
        r"flip: dims \(0, -2\) repeat a dim \(input of shape \(2, 3\)\)",
    ),
    ("flip-none", lambda: ops.flip(X), TypeError, r"flip: dims is required"),
    ("flip-range", lambda: X.flip(2), ShapeError, r"flip: dims 2 is out of range"),
    ("flip-float", lambda: X.flip(0.0), TypeError, r"flip: dims must be ints"),  # type: ignore[arg-type]
    (
        "repeat-few",
        lambda: X.repeat(2),
        ShapeError,
        r"repeat: 1 sizes \(2,\) for a tensor of 2 dims \(shape \(2, 3\)\)",
    ),
    ("repeat-negative", lambda: X.repeat(1, -1), ValueError, r"repeat: repeats must be non-negative, got \(1, -1\)"),
    ("tile-negative", lambda: X.tile(-2), ValueError, r"tile: repeats must be non-negative"),
    ("cumsum-no-dim", lambda: X.cumsum(), TypeError, r"cumsum: dim is required \(input of shape \(2, 3\)\)"),
    ("cumsum-dim", lambda: X.cumsum(2), ShapeError, r"cumsum: dim 2 is out of range for a tensor of shape \(2, 3\)"),
    ("cumprod-float-dim", lambda: X.cumprod(0.5), TypeError, r"cumprod: dim must be an int"),  # type: ignore[arg-type]
    ("prod-dim", lambda: X.prod(dim=3), ShapeError, r"prod: axis 3 is out of range for a tensor of 2 dims"),
    ("prod-repeated", lambda: X.prod(dim=(0, -2)), ShapeError, r"prod: repeated axis"),
    (
        "var-unbiased-and-correction",
        lambda: X.var(unbiased=True, correction=1),
        ValueError,
        r"var: got unbiased=True and correction/ddof",
    ),
    ("std-unbiased-type", lambda: X.std(unbiased=1), TypeError, r"std: unbiased must be a bool"),  # type: ignore[call-overload]
    ("functional-list", lambda: ops.topk([1.0, 2.0], 1), TypeError, r"topk: input must be a Tensor"),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("name", "call", "error", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_refused_naming_the_op(
    name: str, call: Callable[[], Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        call()
