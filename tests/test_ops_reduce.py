"""maximum/minimum/pow, comparisons and ``where``, the reductions max/min/var/std/logsumexp and
softmax (with its fused backward kernel): gradients against finite differences (float64),
float32 forwards against numpy, hand-checked ties and edge cases, PyTorch where installed, and
errors that name the op and the shapes."""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, DTypeError, Gradients, NoneTape, ShapeError, TapeError, Tensor
from gradtape import ops as gops
from gradtape.devices.kernels import softmax as ks
from gradtape.devices.kernels.elementwise import PARALLEL_THRESHOLD
from gradtape.ops import binary, compare, reduce
from gradtape.tape import NONE_TAPE
from gradtape.testing import gradcheck

Array = np.ndarray[Any, Any]
T = Tensor[Any, Any]
Fn = Callable[..., Any]

DEV = Cpu(seed=0)
_RNG = np.random.default_rng(4321)


def rnd(*shape: int) -> Array:
    """Standard normal float64 samples (ties have probability 0)."""
    return _RNG.standard_normal(shape)


def pos(*shape: int) -> Array:
    """Positive float64 samples in [0.5, 2)."""
    return _RNG.uniform(0.5, 2.0, shape)


def nc(arr: Array) -> T:
    """A tensor over the transposed (non-C-contiguous) view of ``arr``."""
    t: T = Tensor(arr.T, DEV)
    assert not t.data.flags.c_contiguous
    return t


def f32(*shape: int) -> Array:
    return np.asarray(_RNG.standard_normal(shape), dtype=np.float32)


def grads_of(fn: Fn, *inputs: Array | T) -> list[Array]:
    """Gradients of the scalar ``fn(*inputs)`` w.r.t. each input (arrays become tensors of
    their own dtype)."""
    xs = [x if isinstance(x, Tensor) else DEV.tensor(x, dtype=x.dtype) for x in inputs]
    store = Gradients.leaky()
    grads = fn(*(x.trace(store) for x in xs)).backward()
    return [np.asarray(grads.get(x).numpy()) for x in xs]


# ===== (1) maximum, minimum, pow ===========================================================

_BIN: dict[str, tuple[Fn, Callable[..., Array], Callable[..., Array]]] = {
    "maximum": (binary.maximum, rnd, rnd),
    "minimum": (binary.minimum, rnd, rnd),
    "pow": (binary.pow, pos, rnd),
}


def _binary_cases() -> list[Any]:
    cases = []
    for name, (f, lhs, rhs) in _BIN.items():
        table: list[tuple[str, Fn, list[Any]]] = [
            ("same_shape", f, [lhs(2, 3), rhs(2, 3)]),
            ("size1_dims", f, [lhs(1, 3), rhs(1, 3)]),
            ("matrix_bias_row", f, [lhs(2, 3), rhs(3)]),
            ("bias_row_matrix", f, [lhs(3), rhs(2, 3)]),
            ("col_row", f, [lhs(3, 1), rhs(1, 4)]),
            ("rank3", f, [lhs(2, 1, 3), rhs(2, 1)]),
            ("rank0_rank0", f, [lhs(), rhs()]),
            ("rank0_matrix", f, [lhs(), rhs(2, 2)]),
            ("noncontig_lhs", f, [nc(lhs(3, 2)), rhs(2, 3)]),
            ("noncontig_both", f, [nc(lhs(3, 2)), nc(rhs(3, 2))]),
            ("scalar_rhs", lambda a, f=f: f(a, 0.3), [lhs(2, 3)]),
            ("np_scalar_rhs", lambda a, f=f: f(a, np.float64(1.5)), [lhs(3)]),
            ("reused", lambda a, b, f=f: f(a, b) * f(b, a), [lhs(2, 2), pos(2, 2)]),
        ]
        cases += [pytest.param(fn, inputs, id=f"{name}-{cid}") for cid, fn, inputs in table]
    return cases


@pytest.mark.parametrize(("fn", "inputs"), _binary_cases())
def test_binary_gradcheck(fn: Fn, inputs: list[Any]) -> None:
    """maximum/minimum/pow gradients match central differences in float64."""
    assert gradcheck(fn, inputs) is True


def test_maximum_of_a_tensor_with_itself_splits_the_tie() -> None:
    """maximum(a, a) is a everywhere tied: 0.5 + 0.5 = 1 flows to a (and gradcheck agrees)."""
    assert gradcheck(lambda a: binary.maximum(a, a), [rnd(2, 3)])
    (g,) = grads_of(lambda a: binary.maximum(a, a).sum(), f32(2, 3))
    np.testing.assert_array_equal(g, np.ones((2, 3), np.float32))


@pytest.mark.parametrize(
    ("op", "ga_want", "gb_want"),
    [
        (binary.maximum, [0.5, 0.0, 1.0, 0.0], [0.5, 1.0, 0.0, 0.0]),
        (binary.minimum, [0.5, 1.0, 0.0, 0.0], [0.5, 0.0, 1.0, 0.0]),
    ],
    ids=["maximum", "minimum"],
)
def test_max_min_ties_split_evenly(op: Fn, ga_want: list[float], gb_want: list[float]) -> None:
    """A tie sends 0.5 of the gradient to each operand (dfdx); NaN sends none."""
    a = np.array([1.0, 2.0, 3.0, np.nan], np.float32)
    b = np.array([1.0, 3.0, 2.0, 0.0], np.float32)
    ga, gb = grads_of(lambda x, y: op(x, y).sum(), a, b)
    np.testing.assert_array_equal(ga, ga_want)
    np.testing.assert_array_equal(gb, gb_want)
    assert ga.dtype == np.float32


def test_maximum_with_a_scalar_ties_and_broadcast_sums() -> None:
    """maximum(a, 0) is relu with 0.5 at 0; a broadcast row's gradient sums over the batch."""
    (g,) = grads_of(lambda x: binary.maximum(x, 0.0).sum(), np.array([-1.0, 0.0, 2.0], np.float32))
    np.testing.assert_array_equal(g, [0.0, 0.5, 1.0])
    m = np.array([[1.0, 5.0], [3.0, 5.0]], np.float32)
    row = np.array([2.0, 5.0], np.float32)
    gm, gr = grads_of(lambda x, r: binary.maximum(x, r).sum(), m, row)
    np.testing.assert_array_equal(gm, [[0.0, 0.5], [1.0, 0.5]])
    np.testing.assert_array_equal(gr, [1.0, 1.0])


def test_pow_tensor_exponent_grads_by_hand() -> None:
    """d(a**b)/da = b a**(b-1), d(a**b)/db = a**b log a."""
    a = np.array([[0.5, 2.0, 3.0]], np.float64)
    b = np.array([[2.0, -1.0, 0.5]], np.float64)
    ga, gb = grads_of(lambda x, y: binary.pow(x, y).sum(), a, b)
    np.testing.assert_allclose(ga, b * a ** (b - 1), rtol=1e-12)
    np.testing.assert_allclose(gb, a**b * np.log(a), rtol=1e-12)


def test_pow_edge_cases_at_zero_and_negative_base() -> None:
    """0**b: d/db = 0 for b >= 0, d/da = 0 for b == 0 / b > 1, inf for 0 < b < 1; a < 0 with an
    integer b: finite d/da, NaN d/db (PyTorch's conventions)."""
    a = np.array([0.0, 0.0, 0.0, 0.0, -2.0])
    b = np.array([0.0, 0.5, 1.0, 2.0, 3.0])
    ga, gb = grads_of(lambda x, y: binary.pow(x, y).sum(), a, b)
    np.testing.assert_array_equal(ga, [0.0, np.inf, 1.0, 0.0, 12.0])
    np.testing.assert_array_equal(gb[:4], [0.0, 0.0, 0.0, 0.0])
    assert np.isnan(gb[4])


def test_pow_scalar_exponent_goes_to_the_unary_op() -> None:
    """binary.pow with a number is unary.pow: the same values and gradient."""
    x = pos(2, 3)
    assert gradcheck(lambda a: binary.pow(a, 2.5), [x])
    np.testing.assert_array_equal(binary.pow(DEV.tensor(x), 2.5).numpy(), gops.pow(DEV.tensor(x), 2.5).numpy())


_F32_BINARY = [
    pytest.param(binary.maximum, np.maximum, id="maximum"),
    pytest.param(binary.minimum, np.minimum, id="minimum"),
    pytest.param(binary.pow, np.power, id="pow"),
]


@pytest.mark.parametrize(("fn", "np_fn"), _F32_BINARY)
@pytest.mark.parametrize("shapes", [((2, 3), (2, 3)), ((2, 3), (3,)), ((3, 1), (1, 4)), ((), ())], ids=str)
def test_binary_float32_forward_matches_numpy(fn: Fn, np_fn: Fn, shapes: tuple[Any, Any]) -> None:
    """The float32 forward equals numpy's and stays float32."""
    a = np.abs(f32(*shapes[0])) + np.float32(0.1)
    b = f32(*shapes[1])
    out = fn(DEV.tensor(a), DEV.tensor(b))
    want = np_fn(a, b)
    assert out.dtype == np.float32 and out.shape == np.shape(want)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)


def test_maximum_and_pow_bound_and_exported() -> None:
    """Tensor.maximum/minimum are bound; gradtape.ops exports them."""
    a, b = DEV.tensor([1.0, 4.0]), DEV.tensor([2.0, 3.0])
    assert a.maximum(b).numpy().tolist() == [2.0, 4.0]
    assert a.minimum(b).numpy().tolist() == [1.0, 3.0]
    # the functional API is the op behind an argument check (ops._util.checked)
    assert inspect.unwrap(gops.maximum) is binary.maximum and inspect.unwrap(gops.minimum) is binary.minimum


@pytest.mark.parametrize("op", [binary.maximum, binary.minimum, binary.pow], ids=lambda f: f.__name__)
def test_binary_errors_name_op_and_shapes(op: Fn) -> None:
    """Non-broadcasting shapes: ShapeError naming the op and both shapes; mixed dtypes: DTypeError."""
    a = DEV.tensor(np.ones((2, 3), np.float32))
    with pytest.raises(ShapeError, match=rf"{op.__name__}: shapes \(2, 3\) and \(4,\)"):
        op(a, DEV.tensor(np.ones(4, np.float32)))
    with pytest.raises(DTypeError, match=rf"{op.__name__}: dtypes differ: float32 \(2, 3\) and float64"):
        op(a, DEV.tensor(np.ones((2, 3)), dtype=np.float64))


def test_maximum_rejects_a_raw_array() -> None:
    with pytest.raises(TypeError, match="maximum: expected a Tensor or a Python number, got ndarray"):
        binary.maximum(DEV.tensor([1.0]), np.ones(1))  # type: ignore[call-overload]


def test_binary_against_torch() -> None:
    """maximum/minimum (ties included) and pow agree with PyTorch, values and gradients."""
    torch = pytest.importorskip("torch")
    a = np.array([[1.0, 2.0, 0.5], [-1.0, 3.0, 3.0]])
    b = np.array([1.0, 2.5, 3.0])
    for ours, theirs in ((binary.maximum, torch.maximum), (binary.minimum, torch.minimum)):
        ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
        (theirs(ta, tb) * torch.tensor(np.arange(6.0).reshape(2, 3))).sum().backward()
        w = DEV.tensor(np.arange(6.0).reshape(2, 3), dtype=np.float64)
        ga, gb = grads_of(lambda x, y, ours=ours, w=w: (ours(x, y) * w).sum(), a, b)
        np.testing.assert_allclose(ga, ta.grad.numpy())
        np.testing.assert_allclose(gb, tb.grad.numpy())
    pa, pb = pos(2, 3), rnd(3)
    ta, tb = torch.tensor(pa, requires_grad=True), torch.tensor(pb, requires_grad=True)
    y = ta**tb
    y.sum().backward()
    ga, gb = grads_of(lambda x, e: binary.pow(x, e).sum(), pa, pb)
    np.testing.assert_allclose(
        binary.pow(DEV.tensor(pa, dtype=np.float64), DEV.tensor(pb, dtype=np.float64)).numpy(), y.detach().numpy()
    )
    np.testing.assert_allclose(ga, ta.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gb, tb.grad.numpy(), rtol=1e-12)


# ===== (2) comparisons and where ===========================================================

_CMP: list[tuple[str, Fn, Fn]] = [
    ("lt", operator.lt, np.less),
    ("le", operator.le, np.less_equal),
    ("gt", operator.gt, np.greater),
    ("ge", operator.ge, np.greater_equal),
    ("eq", operator.eq, np.equal),
    ("ne", operator.ne, np.not_equal),
]
_CMP_IDS = [c[0] for c in _CMP]

A_CMP = np.array([[1.0, 2.0, 3.0], [3.0, np.nan, -1.0]], np.float32)
B_ROW = np.array([1.0, 5.0, 3.0], np.float32)


@pytest.mark.parametrize(("name", "pyop", "npop"), _CMP, ids=_CMP_IDS)
@pytest.mark.parametrize("rhs", ["tensor", "row", "scalar", "np_scalar", "noncontig"])
def test_comparison_masks_match_numpy(name: str, pyop: Fn, npop: Fn, rhs: str) -> None:
    """Function, method and operator give numpy's bool mask (NaN compares unequal), untraced."""
    a_arr = A_CMP
    b_arr: Any = {
        "tensor": A_CMP[::-1].copy(),
        "row": B_ROW,
        "scalar": 2.0,
        "np_scalar": np.float64(2.0),
        "noncontig": np.ascontiguousarray(A_CMP[::-1].T).T,
    }[rhs]
    a = DEV.tensor(a_arr).leaky_trace()
    b: Any = Tensor(b_arr, DEV) if isinstance(b_arr, np.ndarray) else b_arr
    want = npop(a_arr, b_arr)
    for out in (getattr(compare, name)(a, b), getattr(a, name)(b), pyop(a, b)):
        assert isinstance(out, Tensor)
        assert out.dtype == np.bool_
        assert out.tape is NONE_TAPE and out.is_leaf
        np.testing.assert_array_equal(out.numpy(), want)


@pytest.mark.parametrize(("pyop", "npop"), [(operator.lt, np.less), (operator.ge, np.greater_equal)])
def test_reflected_comparisons(pyop: Fn, npop: Fn) -> None:
    """A number (Python or numpy) on the left calls the tensor's reflected comparison."""
    a = DEV.tensor(A_CMP)
    for left in (2.0, np.float64(2.0), np.float32(2.0)):
        out = pyop(left, a)
        assert isinstance(out, Tensor)
        np.testing.assert_array_equal(out.numpy(), npop(2.0, A_CMP))


def test_masks_carry_no_gradient_but_inputs_keep_their_tape() -> None:
    """Comparing a traced tensor leaves its tape usable: the gradient ignores the mask."""
    x = DEV.tensor(np.array([1.0, -2.0, 3.0], np.float32))
    (g,) = grads_of(lambda a: gops.where(a > 0.0, a, 0.0).sum() + (a * float((a > 0.0).numpy().sum())).sum(), x)
    np.testing.assert_array_equal(g, [3.0, 2.0, 3.0])  # the mask, plus the constant count 2


def test_eq_keeps_tensors_hashable_by_identity() -> None:
    """With __eq__ bound, tensors still hash by identity and work as dict keys / set members."""
    a, b = DEV.tensor([1.0, 2.0]), DEV.tensor([1.0, 2.0])
    assert hash(a) == object.__hash__(a) and hash(a) != hash(b)
    d = {a: "a", b: "b"}
    assert d[a] == "a" and d[b] == "b"
    assert len({a, b, a}) == 2
    assert Tensor.__dict__["__hash__"] is object.__hash__


def test_eq_with_foreign_objects_is_python_identity() -> None:
    """``t == None`` / ``t == "x"`` fall back to identity (False); ``!=`` to True."""
    a = DEV.tensor([1.0])
    assert (a == None) is False  # noqa: E711
    assert (a == "x") is False
    assert (a != None) is True  # noqa: E711
    assert a in [a]


def test_truth_value_is_defined_for_one_element_only() -> None:
    """bool(mask) works for one element; a larger mask raises (numpy/PyTorch), so
    ``if a == b:`` cannot silently test the tensor's length."""
    assert bool(DEV.tensor(1.0) == 1.0) is True
    assert bool(DEV.tensor([1.0]) > 2.0) is False
    with pytest.raises(ValueError, match=r"truth value of a tensor of shape \(2,\) \(2 elements\) is ambiguous"):
        bool(DEV.tensor([1.0, 2.0]) == DEV.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(DEV.tensor(np.zeros(0, np.float32)))


def test_comparison_errors() -> None:
    """Shapes that do not broadcast name the op and both shapes; dtypes must agree."""
    a = DEV.tensor(np.ones((2, 3), np.float32))
    with pytest.raises(ShapeError, match=r"lt: shapes \(2, 3\) and \(4,\) do not broadcast"):
        _ = a < DEV.tensor(np.ones(4, np.float32))
    with pytest.raises(ShapeError, match=r"eq: shapes \(2, 3\) and \(2,\)"):
        _ = a == DEV.tensor(np.ones(2, np.float32))
    with pytest.raises(DTypeError, match=r"ge: dtypes differ: float32 \(2, 3\) and float64"):
        compare.ge(a, DEV.tensor(np.ones((2, 3)), dtype=np.float64))
    with pytest.raises(TypeError, match="gt: expected a Tensor or a Python number, got list"):
        compare.gt(a, [1.0])  # type: ignore[call-overload]


# ----- where -------------------------------------------------------------------------------


def _mask(*shape: int) -> Array:
    m = _RNG.random(shape) < 0.5
    return np.asarray(m)


def _where_cases() -> list[Any]:
    w = gops.where
    m23, m21, m3, m0 = _mask(2, 3), _mask(2, 1), _mask(3), _mask()
    return [
        pytest.param(lambda a, b: w(m23, a, b), [rnd(2, 3), rnd(2, 3)], id="same_shape"),
        pytest.param(lambda a, b: w(m21, a, b), [rnd(2, 3), rnd(3)], id="cond_col-a_matrix-b_row"),
        pytest.param(lambda a, b: w(m23, a, b), [rnd(1, 3), rnd(2, 1)], id="both_broadcast"),
        pytest.param(lambda a, b: w(m3, a, b), [rnd(2, 1), rnd()], id="cond_row-b_rank0"),
        pytest.param(lambda a, b: w(m0, a, b), [rnd(), rnd()], id="rank0"),
        pytest.param(lambda a: w(m23, a, 0.5), [rnd(2, 3)], id="b_scalar"),
        pytest.param(lambda b: w(m23, -1.0, b), [rnd(3)], id="a_scalar"),
        pytest.param(lambda a, b: w(m23.T, a, b), [nc(rnd(2, 3)), rnd(3, 2)], id="noncontig"),
        pytest.param(lambda a, b: w(a > b, a, b), [rnd(2, 3), rnd(2, 3)], id="cond_from_comparison"),
        pytest.param(lambda a: w(m23, a, a * 2.0), [rnd(2, 3)], id="same_tensor_both_sides"),
        pytest.param(lambda a, b: a.where(m23, b), [rnd(2, 3), rnd(2, 3)], id="method"),
    ]


@pytest.mark.parametrize(("fn", "inputs"), _where_cases())
def test_where_gradcheck(fn: Fn, inputs: list[Any]) -> None:
    """where's gradients (to a where cond holds, to b elsewhere, summed back) match differences."""
    assert gradcheck(fn, inputs) is True


def test_where_grads_by_hand() -> None:
    """grad_a = cond, grad_b = not cond, summed over the dims broadcasting added to b."""
    cond = np.array([[True, False, True], [False, False, True]])
    a = f32(2, 3)
    b = f32(3)
    ga, gb = grads_of(lambda x, y: gops.where(cond, x, y).sum(), a, b)
    np.testing.assert_array_equal(ga, cond.astype(np.float32))
    np.testing.assert_array_equal(gb, (~cond).sum(axis=0).astype(np.float32))
    out = gops.where(cond, DEV.tensor(a), DEV.tensor(b))
    np.testing.assert_array_equal(out.numpy(), np.where(cond, a, b))
    assert out.dtype == np.float32


def test_where_accepts_masks_of_every_kind() -> None:
    """A comparison tensor, a numpy bool array and a nested list of bools select alike; a
    float32 tensor with a Python or numpy float scalar stays float32."""
    a = DEV.tensor(np.array([1.0, -2.0, 3.0], np.float32))
    want = [1.0, 0.0, 3.0]
    for cond in (a > 0.0, np.array([True, False, True]), [True, False, True]):
        out = gops.where(cond, a, np.float64(0.0))  # type: ignore[arg-type]
        assert out.dtype == np.float32
        assert out.numpy().tolist() == want


def test_where_untraced_operand_gets_its_gradient() -> None:
    """Every tensor operand of where gets its gradient, as in every other binary op: the
    untraced ``b`` (requiring grad) of ``where(mask, a.leaky_trace(), b)`` gets ``g`` where the
    mask is False (it once got nothing), in the store and in ``.grad``; a plain operand's
    gradient cannot be asked for; a store that keeps only ``a`` skips it."""
    a, b = DEV.tensor([1.0, 2.0]), DEV.tensor([3.0, 4.0], requires_grad=True)
    w = DEV.tensor([5.0, 7.0])
    grads = (gops.where(np.array([True, False]), a.leaky_trace(), b) * w).sum().backward()
    assert grads.get(a).numpy().tolist() == [5.0, 0.0]
    assert grads.get(b).numpy().tolist() == [0.0, 7.0]
    assert b.grad is not None and b.grad.numpy().tolist() == [0.0, 7.0]
    plain = DEV.tensor([3.0, 4.0])
    grads = gops.where(np.array([True, False]), a.leaky_trace(), plain).sum().backward()
    assert grads.get(a).numpy().tolist() == [1.0, 0.0]
    with pytest.raises(TapeError, match="does not require grad"):
        grads.get(plain)
    store = Gradients.leaky()
    store.retain_leafs([a])
    grads = gops.where(np.array([True, False]), a.trace(store), b).sum().backward()
    assert grads.get(a).numpy().tolist() == [1.0, 0.0]
    assert b not in grads


def test_where_errors() -> None:
    """Non-bool masks, shapes that do not broadcast, mixed dtypes and two numbers are rejected."""
    a = DEV.tensor(np.ones((2, 3), np.float32))
    with pytest.raises(DTypeError, match=r"where: cond must be a bool mask .*float32 and shape \(2, 3\)"):
        gops.where(a, a, a)
    with pytest.raises(DTypeError, match=r"where: cond must be a bool mask .*int64"):
        gops.where(np.array([1, 0, 1]), a, 0.0)
    with pytest.raises(ShapeError, match=r"where: shapes \(4,\) \(cond\), \(2, 3\) \(a\) and \(2, 3\) \(b\)"):
        gops.where(np.ones(4, bool), a, a)
    with pytest.raises(ShapeError, match=r"where: shapes \(2, 3\) \(cond\), \(2, 3\) \(a\) and \(2,\) \(b\)"):
        gops.where(np.ones((2, 3), bool), a, DEV.tensor(np.ones(2, np.float32)))
    with pytest.raises(DTypeError, match=r"where: dtypes differ: float32 \(2, 3\) and float64"):
        gops.where(np.ones((2, 3), bool), a, DEV.tensor(np.ones((2, 3)), dtype=np.float64))
    with pytest.raises(TypeError, match="where: a or b must be a tensor"):
        gops.where(np.ones(2, bool), 1.0, 2.0)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="where: expected a Tensor or a Python number, got list"):
        gops.where(np.ones(2, bool), [1.0, 2.0], 2.0)  # type: ignore[call-overload]


def test_where_against_torch() -> None:
    torch = pytest.importorskip("torch")
    cond = _mask(2, 1)
    a, b = rnd(2, 3), rnd(3)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    w = rnd(2, 3)
    (torch.where(torch.tensor(cond), ta, tb) * torch.tensor(w)).sum().backward()
    wt = DEV.tensor(w, dtype=np.float64)
    ga, gb = grads_of(lambda x, y: (gops.where(cond, x, y) * wt).sum(), a, b)
    np.testing.assert_allclose(ga, ta.grad.numpy())
    np.testing.assert_allclose(gb, tb.grad.numpy())


# ===== (3) reductions: max, min, var, std, logsumexp =======================================

_AXES: list[tuple[str, dict[str, Any], Callable[[], Array | T]]] = [
    ("all", {}, lambda: rnd(2, 3)),
    ("all_rank0", {}, lambda: rnd()),
    ("1d_axis0", {"axis": 0}, lambda: rnd(4)),
    ("axis0", {"axis": 0}, lambda: rnd(2, 3)),
    ("axis1", {"axis": 1}, lambda: rnd(2, 3)),
    ("axis_neg1", {"axis": -1}, lambda: rnd(3, 4)),
    ("axis_neg2", {"axis": -2}, lambda: rnd(3, 2)),
    ("axis_tuple", {"axis": (0, 2)}, lambda: rnd(2, 1, 3)),
    ("axis_tuple_neg", {"axis": (-1, 0)}, lambda: rnd(2, 2, 3)),
    ("size1_axis", {"axis": 1}, lambda: rnd(3, 1)),
    ("keepdims_all", {"keepdims": True}, lambda: rnd(2, 3)),
    ("keepdims_axis1", {"axis": 1, "keepdims": True}, lambda: rnd(2, 3)),
    ("keepdims_tuple", {"axis": (0, 2), "keepdims": True}, lambda: rnd(2, 2, 3)),
    ("noncontig_axis0", {"axis": 0}, lambda: nc(rnd(3, 2))),
    ("noncontig_all", {}, lambda: nc(rnd(3, 2))),
]
_RED_OPS = ["max", "min", "var", "std", "logsumexp"]


def _reduce_cases() -> list[Any]:
    cases = []
    for op in _RED_OPS:
        for cid, kw, make in _AXES:
            cases.append(pytest.param(lambda a, op=op, kw=kw: getattr(a, op)(**kw), [make()], id=f"{op}-{cid}"))
    for op in ("var", "std"):  # Bessel's correction where every slice has >= 2 elements
        for cid, kw, make in _AXES:
            if cid in ("all_rank0", "size1_axis"):
                continue
            kw1 = {**kw, "correction": 1}
            cases.append(pytest.param(lambda a, op=op, kw=kw1: getattr(a, op)(**kw), [make()], id=f"{op}-corr1-{cid}"))
    cases.append(pytest.param(lambda a: a.var(axis=1, ddof=1.5), [rnd(2, 4)], id="var-ddof1.5"))
    cases.append(pytest.param(lambda a: a.max(axis=1) * a.min(axis=1), [rnd(2, 3)], id="max-times-min"))
    cases.append(pytest.param(lambda a: a.std(axis=0) / a.logsumexp(axis=0), [pos(3, 2)], id="std-over-lse"))
    return cases


@pytest.mark.parametrize(("fn", "inputs"), _reduce_cases())
def test_reduce_gradcheck(fn: Fn, inputs: list[Any]) -> None:
    """Reduction gradients match central differences in float64, over every axis set."""
    assert gradcheck(fn, inputs) is True


_NP_RED: dict[str, Fn] = {
    "max": np.max,
    "min": np.min,
    "var": np.var,
    "std": np.std,
    "logsumexp": lambda x, axis=None, keepdims=False: np.log(
        np.sum(np.exp(x.astype(np.float64)), axis=axis, keepdims=keepdims)
    ),
}


@pytest.mark.parametrize("op", _RED_OPS)
@pytest.mark.parametrize(
    ("shape", "kw"),
    [((2, 3), {}), ((2, 3), {"axis": 0}), ((4, 5), {"axis": -1, "keepdims": True}), ((2, 3, 4), {"axis": (0, 2)})],
    ids=["all", "axis0", "last-kd", "tuple"],
)
@pytest.mark.parametrize("noncontig", [False, True], ids=["contig", "noncontig"])
def test_reduce_float32_forward_matches_numpy(
    op: str, shape: tuple[int, ...], kw: dict[str, Any], noncontig: bool
) -> None:
    """float32 forwards equal numpy's (var/std: numpy's default ddof=0) and stay float32."""
    x = f32(*shape)
    t: T = Tensor(np.ascontiguousarray(x.T).T, DEV) if noncontig else DEV.tensor(x)
    out = getattr(t, op)(**kw)
    want = np.asarray(_NP_RED[op](x, **kw))
    assert out.dtype == np.float32 and out.shape == want.shape
    np.testing.assert_allclose(out.numpy(), want, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("op", ["var", "std"])
@pytest.mark.parametrize("ddof", [0, 1, 2])
def test_var_std_correction_matches_numpy_ddof(op: str, ddof: int) -> None:
    """correction= and ddof= both give numpy's ddof."""
    x = f32(3, 5)
    want = getattr(np, op)(x, axis=1, ddof=ddof)
    np.testing.assert_allclose(getattr(DEV.tensor(x), op)(axis=1, correction=ddof).numpy(), want, rtol=2e-6)
    np.testing.assert_allclose(getattr(DEV.tensor(x), op)(axis=1, ddof=ddof).numpy(), want, rtol=2e-6)


def test_max_min_ties_split_evenly_over_the_slice() -> None:
    """k tied maxima each get g/k (dfdx's max_to, torch.amax); others 0."""
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0], [0.0, -1.0, 5.0]], np.float32)
    (g,) = grads_of(lambda a: a.max(axis=1).sum(), x)
    np.testing.assert_allclose(g, np.array([[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3], [0, 0, 1]]), rtol=1e-7)
    (g,) = grads_of(lambda a: a.min(axis=1).sum(), x)
    np.testing.assert_allclose(g, np.array([[1, 0, 0], [1 / 3, 1 / 3, 1 / 3], [0, 1, 0]]), rtol=1e-7)
    (g,) = grads_of(lambda a: a.max(), x)  # 5.0 is unique over the whole array
    want = np.zeros((3, 3), np.float32)
    want[2, 2] = 1.0
    np.testing.assert_array_equal(g, want)
    (g,) = grads_of(lambda a: a.max(axis=0).sum(), np.ones((4, 2), np.float32))
    np.testing.assert_array_equal(g, np.full((4, 2), 0.25, np.float32))


def test_max_nan_slice_gives_nan_gradient() -> None:
    """A NaN in a slice makes its max NaN and its gradient NaN (as torch.amax); other slices
    are unaffected."""
    x = np.array([[1.0, np.nan], [2.0, 3.0]], np.float32)
    out = DEV.tensor(x).max(axis=1)
    assert np.isnan(out.numpy()[0]) and out.numpy()[1] == 3.0
    (g,) = grads_of(lambda a: a.max(axis=1).sum(), x)
    assert np.isnan(g[0]).all()
    np.testing.assert_array_equal(g[1], [0.0, 1.0])


def test_std_of_a_constant_slice_has_zero_gradient() -> None:
    """std == 0 has no derivative; the gradient is 0 there (PyTorch), not NaN."""
    x = np.array([[2.0, 2.0, 2.0], [1.0, 2.0, 3.0]], np.float32)
    (g,) = grads_of(lambda a: a.std(axis=1).sum(), x)
    np.testing.assert_array_equal(g[0], [0.0, 0.0, 0.0])
    np.testing.assert_allclose(g[1], (x[1] - 2.0) / (3 * np.std(x[1])), rtol=1e-6)


def test_var_grad_by_hand() -> None:
    """d var / dx = 2 (x - mean) / (n - correction)."""
    x = np.array([1.0, 2.0, 4.0, 7.0])
    (g,) = grads_of(lambda a: a.var(correction=1), x)
    np.testing.assert_allclose(g, 2 * (x - x.mean()) / 3, rtol=1e-12)


def test_var_with_no_degrees_of_freedom_is_numpys_nan() -> None:
    """n - correction <= 0 divides by 0 as numpy does (nan for one element), without raising."""
    out = DEV.tensor([[1.0], [2.0]]).var(axis=1, correction=1)
    with pytest.warns(RuntimeWarning, match="Degrees of freedom"), np.errstate(invalid="ignore"):
        want = np.var(np.array([[1.0], [2.0]], np.float32), axis=1, ddof=1)
    np.testing.assert_array_equal(out.numpy(), want)
    assert np.isnan(out.numpy()).all()


def test_logsumexp_is_stable_and_handles_infinities() -> None:
    """No overflow at 1000, the exact log(n) shift for equal entries, -inf for an all -inf
    slice (gradient 0), +inf propagates, and an empty reduction is -inf."""
    x = np.array([[1000.0, 1000.0], [-1000.0, -1000.0]], np.float32)
    out = DEV.tensor(x).logsumexp(axis=1)
    np.testing.assert_allclose(out.numpy(), [1000 + np.log(2), -1000 + np.log(2)], rtol=1e-6)
    (g,) = grads_of(lambda a: a.logsumexp(axis=1).sum(), x)
    np.testing.assert_allclose(g, np.full((2, 2), 0.5), rtol=1e-6)
    y = np.array([[-np.inf, -np.inf], [np.inf, 1.0], [-np.inf, 0.0]], np.float32)
    out = DEV.tensor(y).logsumexp(axis=1)
    assert out.numpy().tolist() == [-np.inf, np.inf, 0.0]
    (g,) = grads_of(lambda a: a.logsumexp(axis=1).sum(), y[[0, 2]])  # the +inf row's loss is inf
    np.testing.assert_array_equal(g, [[0.0, 0.0], [0.0, 1.0]])
    empty = DEV.tensor(np.zeros((2, 0), np.float32)).logsumexp(axis=1)
    assert empty.numpy().tolist() == [-np.inf, -np.inf]


def test_logsumexp_grad_is_softmax() -> None:
    x = f32(3, 4)
    (g,) = grads_of(lambda a: a.logsumexp(axis=-1).sum(), x)
    sm = np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(g, sm, rtol=1e-5)


def test_reductions_bound_and_exported() -> None:
    for name in _RED_OPS:
        assert getattr(Tensor, name) is getattr(reduce, name)
        assert getattr(gops, name).__wrapped__ is getattr(reduce, name)


def test_reduction_errors() -> None:
    """Empty slices, bad axes and conflicting corrections raise, naming the op and shape."""
    e = DEV.tensor(np.zeros((2, 0), np.float32))
    with pytest.raises(ShapeError, match=r"max: reduction over 0 elements \(shape \(2, 0\), axes \(1,\)\)"):
        e.max(axis=1)
    with pytest.raises(ShapeError, match=r"min: reduction over 0 elements \(shape \(2, 0\)"):
        e.min()
    assert e.max(axis=0).shape == (0,)  # reducing a non-empty axis of an empty array is fine
    with pytest.raises(ShapeError, match=r"var: reduction over 0 elements \(shape \(2, 0\)"):
        e.var(axis=1)
    with pytest.raises(ShapeError, match=r"std: reduction over 0 elements"):
        e.std()
    x = DEV.tensor(np.ones((2, 3), np.float32))
    for op in _RED_OPS:
        with pytest.raises(ShapeError, match=rf"{op}: axis 2 is out of range"):
            getattr(x, op)(axis=2)
        with pytest.raises(ShapeError, match=rf"{op}: repeated axis"):
            getattr(x, op)(axis=(0, -2))
    with pytest.raises(ValueError, match=r"var: got correction=1 and ddof=2"):
        x.var(correction=1, ddof=2)
    with pytest.raises(ValueError, match="std: correction must be a finite number"):
        x.std(correction=float("nan"))


def test_reductions_against_torch() -> None:
    """amax/amin with ties, var/std with correction 0 and 1, logsumexp: values and gradients."""
    torch = pytest.importorskip("torch")
    x = np.array([[1.0, 3.0, 3.0, 0.5], [2.0, 2.0, -1.0, 2.0], [0.1, 0.2, 0.3, 0.4]])
    w = rnd(3)
    cases: list[tuple[Fn, Fn]] = [
        (lambda a: a.max(axis=1), lambda t: t.amax(1)),
        (lambda a: a.min(axis=1), lambda t: t.amin(1)),
        (lambda a: a.var(axis=1), lambda t: t.var(1, correction=0)),
        (lambda a: a.var(axis=1, correction=1), lambda t: t.var(1)),
        (lambda a: a.std(axis=1), lambda t: t.std(1, correction=0)),
        (lambda a: a.std(axis=1, correction=1), lambda t: t.std(1)),
        (lambda a: a.logsumexp(axis=1), lambda t: torch.logsumexp(t, 1)),
    ]
    wt = DEV.tensor(w, dtype=np.float64)
    for ours, theirs in cases:
        tx = torch.tensor(x, requires_grad=True)
        y = theirs(tx)
        (y * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(ours(DEV.tensor(x, dtype=np.float64)).numpy(), y.detach().numpy(), rtol=1e-12)
        (g,) = grads_of(lambda a, ours=ours: (ours(a) * wt).sum(), x)
        np.testing.assert_allclose(g, tx.grad.numpy(), rtol=1e-10, atol=1e-14)


# ===== (4) softmax =========================================================================


def _np_softmax(x: Array, axis: int) -> Array:
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=axis, keepdims=True))
    return np.asarray(e / e.sum(axis=axis, keepdims=True))


_SOFTMAX_CASES = [
    pytest.param(lambda a: a.softmax(), [rnd(2, 3)], id="2x3-default"),
    pytest.param(lambda a: a.softmax(axis=0), [rnd(2, 3)], id="2x3-axis0"),
    pytest.param(lambda a: a.softmax(axis=-1), [rnd(1, 4)], id="1x4"),
    pytest.param(lambda a: a.softmax(axis=1), [rnd(3, 1)], id="3x1-size1-axis"),
    pytest.param(lambda a: a.softmax(axis=0), [rnd(5)], id="1d"),
    pytest.param(lambda a: a.softmax(axis=1), [rnd(2, 3, 2)], id="rank3-axis1"),
    pytest.param(lambda a: a.softmax(axis=-1), [rnd(2, 2, 3)], id="rank3-last"),
    pytest.param(lambda a: a.softmax(axis=-1), [nc(rnd(3, 2))], id="noncontig-last"),
    pytest.param(lambda a: a.softmax(axis=0), [nc(rnd(3, 2))], id="noncontig-axis0"),
    pytest.param(lambda a: a.softmax() * a.softmax(), [rnd(2, 3)], id="reused-kernel-accumulates"),
    pytest.param(lambda a: gops.softmax(a.log_softmax() * 2.0, axis=-1), [rnd(2, 3)], id="after-log_softmax"),
]


@pytest.mark.parametrize(("fn", "inputs"), _SOFTMAX_CASES)
def test_softmax_gradcheck(fn: Fn, inputs: list[Any]) -> None:
    assert gradcheck(fn, inputs) is True


@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("noncontig", [False, True], ids=["contig", "noncontig"])
def test_softmax_float32_forward_matches_numpy(axis: int, noncontig: bool) -> None:
    x = f32(3, 4)
    t: T = Tensor(np.ascontiguousarray(x.T).T, DEV) if noncontig else DEV.tensor(x)
    out = t.softmax(axis=axis)
    assert out.dtype == np.float32 and out.shape == (3, 4)
    np.testing.assert_allclose(out.numpy(), _np_softmax(x, axis), rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(out.numpy().sum(axis=axis), 1.0, rtol=1e-6)


def test_softmax_is_stable_for_large_inputs() -> None:
    """Inputs of 1e4 do not overflow: the max is subtracted first."""
    out = DEV.tensor([[1e4, 1e4 - 1.0, -1e4]]).softmax()
    np.testing.assert_allclose(out.numpy(), [[1 / (1 + np.exp(-1)), np.exp(-1) / (1 + np.exp(-1)), 0.0]], rtol=1e-6)


def test_softmax_grad_by_hand() -> None:
    """d sum(w * softmax(x)) / dx = y * (w - sum(w * y))."""
    x, w = f32(2, 3), f32(2, 3)
    wt = DEV.tensor(w)
    (g,) = grads_of(lambda a: (a.softmax() * wt).sum(), x)
    y = _np_softmax(x, -1)
    np.testing.assert_allclose(g, y * (w - (w * y).sum(axis=1, keepdims=True)), rtol=1e-5, atol=1e-7)


def test_softmax_errors() -> None:
    with pytest.raises(ShapeError, match=r"softmax: axis 2 is out of range"):
        DEV.tensor(np.ones((2, 3), np.float32)).softmax(axis=2)
    with pytest.raises(ShapeError, match=r"softmax: needs a non-empty axis -1, got shape \(2, 0\)"):
        DEV.tensor(np.ones((2, 0), np.float32)).softmax()
    with pytest.raises(ShapeError, match=r"softmax: needs a non-empty axis -1, got shape \(\)"):
        DEV.tensor(1.0).softmax()


def test_softmax_against_torch() -> None:
    torch = pytest.importorskip("torch")
    x, w = rnd(3, 4), rnd(3, 4)
    for axis in (0, 1):
        tx = torch.tensor(x, requires_grad=True)
        y = torch.softmax(tx, axis)
        (y * torch.tensor(w)).sum().backward()
        wt = DEV.tensor(w, dtype=np.float64)
        np.testing.assert_allclose(
            DEV.tensor(x, dtype=np.float64).softmax(axis).numpy(), y.detach().numpy(), rtol=1e-12
        )
        (g,) = grads_of(lambda a, axis=axis, wt=wt: (a.softmax(axis) * wt).sum(), x)
        np.testing.assert_allclose(g, tx.grad.numpy(), rtol=1e-10, atol=1e-15)


def test_softmax_and_log_softmax_take_torchs_dim() -> None:
    """``F.softmax(x, dim=1)`` and ``F.log_softmax(x, dim=-1)`` as PyTorch spells them (also as
    Tensor methods), equal to PyTorch's; ``axis`` and ``dim`` together are refused; no
    argument is the last axis."""
    torch = pytest.importorskip("torch")
    x = rnd(2, 3, 4)
    t = DEV.tensor(x, dtype=np.float64)
    for d in (0, 1, -1):
        np.testing.assert_allclose(gops.softmax(t, dim=d).numpy(), torch.softmax(torch.tensor(x), dim=d), rtol=1e-12)
        np.testing.assert_allclose(
            t.log_softmax(dim=d).numpy(), torch.log_softmax(torch.tensor(x), dim=d), rtol=1e-12, atol=1e-15
        )
    np.testing.assert_array_equal(t.softmax().numpy(), t.softmax(dim=-1).numpy())
    np.testing.assert_array_equal(t.log_softmax().numpy(), t.log_softmax(2).numpy())
    with pytest.raises(TypeError, match=r"softmax: got axis=1 and dim=1; pass one of them"):
        gops.softmax(t, 1, dim=1)
    with pytest.raises(TypeError, match=r"log_softmax: got axis=0 and dim=2; pass one of them"):
        t.log_softmax(axis=0, dim=2)
    with pytest.raises(ShapeError, match=r"softmax: axis 3 is out of range"):
        t.softmax(dim=3)


# ----- the fused kernel --------------------------------------------------------------------


def _np_softmax_backward(out: Array, y: Array, g: Array, axis: int) -> Array:
    o64, y64, g64 = (a.astype(np.float64) for a in (out, y, g))
    return np.asarray(o64 + y64 * (g64 - (g64 * y64).sum(axis=axis, keepdims=True)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize(
    ("shape", "axis", "layout"),
    [
        ((4, 7), -1, "c"),
        ((1, 1), -1, "c"),
        ((5,), 0, "c"),
        ((2, 3, 5), -1, "c"),
        ((4, 7), 0, "c"),
        ((4, 7), -1, "transposed"),
        ((2, 3, 5), 1, "c"),
        ((512, 300), -1, "c"),  # above PARALLEL_THRESHOLD: the prange kernel
        ((300, 512), 1, "transposed"),
    ],
    ids=lambda v: str(v).replace(" ", ""),
)
def test_softmax_backward_kernel_matches_numpy(dtype: Any, shape: tuple[int, ...], axis: int, layout: str) -> None:
    """The fused kernel (and its fallback) computes out += y * (g - sum(g*y)) in place."""

    def make() -> Array:
        x = _RNG.standard_normal(shape[::-1] if layout == "transposed" else shape).astype(dtype)
        return x.T if layout == "transposed" else x

    y = np.asarray(_np_softmax(make(), axis), dtype=dtype)
    if layout == "transposed":
        y = np.ascontiguousarray(y.T).T
    g, out = make(), make()
    want = _np_softmax_backward(out, y, g, axis)
    before = out
    ks.softmax_backward(out, y, g, axis)
    assert out is before and out.dtype == dtype
    tol = 2e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out, want, rtol=tol, atol=tol)


def test_softmax_backward_uses_the_compiled_kernels() -> None:
    """Last axis of C-contiguous arrays: the serial kernel for small, prange for large inputs."""
    small = np.ones((2, 3), np.float32) / 3
    ks.softmax_backward(np.zeros_like(small), small, small.copy())
    assert ks._softmax_backward_serial.signatures  # type: ignore[attr-defined]
    n = PARALLEL_THRESHOLD // 128 + 1
    big = np.full((n, 128), 1 / 128, np.float32)
    ks.softmax_backward(np.zeros_like(big), big, big.copy())
    assert ks._softmax_backward_parallel.signatures  # type: ignore[attr-defined]


def test_softmax_backward_kernel_aliasing_out_and_g() -> None:
    """out may be g itself (the gradient updated in place from itself)."""
    y = np.asarray(_np_softmax(f32(3, 4), -1), np.float32)
    g = f32(3, 4)
    want = _np_softmax_backward(g, y, g, -1)
    ks.softmax_backward(g, y, g)
    np.testing.assert_allclose(g, want, rtol=2e-5, atol=2e-6)


def test_softmax_backward_kernel_errors() -> None:
    y = np.ones((2, 3), np.float32)
    with pytest.raises(ShapeError, match=r"softmax_backward: y \(2, 3\) and g \(3,\) must have out's shape \(2, 3\)"):
        ks.softmax_backward(np.zeros((2, 3), np.float32), y, np.ones(3, np.float32))
    with pytest.raises(ShapeError, match=r"softmax_backward: axis 2 is out of range for out of shape \(2, 3\)"):
        ks.softmax_backward(np.zeros((2, 3), np.float32), y, y, 2)
    with pytest.raises(DTypeError, match="float64"):
        ks.softmax_backward(np.zeros((2, 3), np.float32), y.astype(np.float64), y)
    ro = np.zeros((2, 3), np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        ks.softmax_backward(ro, y, y)


def test_softmax_bound_and_exported() -> None:
    """Tensor.softmax is the op; gradtape.ops.softmax is the function too."""
    from gradtape.ops.softmax import softmax

    assert Tensor.softmax is softmax and inspect.unwrap(gops.softmax) is softmax
    mask: Tensor[Any, NoneTape] = DEV.tensor([1.0]) > 0.0
    assert mask.numpy().tolist() == [True]
