"""Exact gradients of the graph shapes a tape must get right (values computed by hand, float64).

Reuse (``x * x``), merged tapes, diamonds, residuals, weight sharing, dead branches,
dfdx-style traced inputs with parameters that require grad (and the error for a plain tensor's
gradient), ``retain_leafs`` and a leaky store reused over passes.
The last tests compare the same graphs against PyTorch when it is installed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, Gradients, TapeError, Tensor
from gradtape.tape import NONE_TAPE, PARAM

DEV = Cpu()


def t64(values: Any) -> Tensor[Any, Any]:
    """An untraced float64 tensor."""
    return DEV.tensor(np.array(values, dtype=np.float64))


def t64p(values: Any) -> Tensor[Any, Any]:
    """A float64 leaf that requires grad (a parameter, PyTorch's ``requires_grad=True``)."""
    return t64(values).requires_grad_()


def check(grads: Gradients, t: Tensor[Any, Any], expected: Any) -> None:
    """Assert ``grads``' gradient of ``t`` equals ``expected``."""
    got = grads.get(t)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got.numpy(), np.array(expected, dtype=np.float64), rtol=1e-12, atol=1e-12)


def check_grad(t: Tensor[Any, Any], expected: Any) -> None:
    """Assert ``t.grad`` (what backward accumulated into a leaf that requires grad) equals ``expected``."""
    got = t.grad
    assert got is not None
    assert got.dtype == np.float64
    np.testing.assert_allclose(got.numpy(), np.array(expected, dtype=np.float64), rtol=1e-12, atol=1e-12)


# ----- a tensor used twice -----------------------------------------------------------------------


def test_mul_self() -> None:
    """d/dx sum(x * x) = 2x."""
    x = t64([1.0, -2.0, 3.0])
    g = (x.leaky_trace() * x.leaky_trace()).sum().backward()
    check(g, x, [2.0, -4.0, 6.0])


def test_mul_same_traced_tensor() -> None:
    """The same traced tensor on both sides of * gets 2x."""
    x = t64([1.0, -2.0, 3.0])
    xt = x.leaky_trace()
    g = (xt * xt).sum().backward()
    check(g, x, [2.0, -4.0, 6.0])


def test_add_self() -> None:
    """d/dx sum(x + x) = 2, and the output's gradient stays 1."""
    x = t64([1.0, -2.0, 3.0])
    xt = x.leaky_trace()
    y = xt + xt
    g = y.sum().backward()
    check(g, x, [2.0, 2.0, 2.0])
    check(g, y, [1.0, 1.0, 1.0])


def test_sub_self_is_zero() -> None:
    """d/dx sum(x - x) = 0."""
    x = t64([1.0, -2.0, 3.0])
    xt = x.leaky_trace()
    g = (xt - xt).sum().backward()
    check(g, x, [0.0, 0.0, 0.0])


def test_div_self_is_zero() -> None:
    """d/dx sum(x / x) = 1/x - x/x**2 = 0."""
    x = t64([1.0, -2.0, 4.0])
    xt = x.leaky_trace()
    g = (xt / xt).sum().backward()
    check(g, x, [0.0, 0.0, 0.0])


def test_cube_by_reuse() -> None:
    """d/dx sum(x * x * x) = 3x**2."""
    x = t64([1.0, -2.0, 0.5])
    xt = x.leaky_trace()
    g = (xt * xt * xt).sum().backward()
    check(g, x, [3.0, 12.0, 0.75])


def test_matmul_self() -> None:
    """d/dA sum(A @ A) = rowsum(A)[q] + colsum(A)[p] = [[7, 11], [9, 13]] for A = [[1, 2], [3, 4]]."""
    a = t64([[1.0, 2.0], [3.0, 4.0]])
    at = a.leaky_trace()
    g = (at @ at).sum().backward()
    check(g, a, [[7.0, 11.0], [9.0, 13.0]])


# ----- separately traced inputs ----------------------------------------------------------------


def test_two_traced_inputs_merge_into_one_store() -> None:
    """x.trace(g1) * y.trace(g2): the returned store holds both gradients."""
    x, y = t64([1.0, 2.0]), t64([3.0, -4.0])
    g1, g2 = Gradients.leaky(), Gradients.leaky()
    g = (x.trace(g1) * y.trace(g2)).sum().backward()
    assert g is g1 or g is g2
    check(g, x, [3.0, -4.0])
    check(g, y, [1.0, 2.0])


def test_two_traced_inputs_merge_either_order() -> None:
    """The same with the operands swapped."""
    x, y = t64([1.0, 2.0]), t64([3.0, -4.0])
    g1, g2 = Gradients.leaky(), Gradients.leaky()
    g = (y.trace(g2) * x.trace(g1)).sum().backward()
    check(g, x, [3.0, -4.0])
    check(g, y, [1.0, 2.0])


def test_merged_input_used_again_through_old_tape() -> None:
    """After z = x * y merged the tapes, y.exp() (recorded via y's old tape) still counts."""
    x, y = t64([1.0, 2.0]), t64([0.0, 1.0])
    xt, yt = x.leaky_trace(), y.leaky_trace()
    z = xt * yt
    w = yt.exp()
    g = (z + w).sum().backward()
    check(g, x, [0.0, 1.0])
    check(g, y, [1.0 + 1.0, 2.0 + np.e])


def test_merge_with_longer_tape_then_old_tape_used() -> None:
    """y's tape (longer) merged into x's; later ops through either tape all count."""
    x, y = t64([2.0]), t64([3.0])
    xt, yt = x.leaky_trace(), y.leaky_trace()
    y3 = yt * yt * yt  # y's tape records 2 ops, x's none
    z = xt * y3  # merge
    u = xt * 5.0  # recorded through x's tape
    v = yt * 7.0  # recorded through y's tape
    g = (z + u + v).sum().backward()
    check(g, x, [27.0 + 5.0])  # y**3 + 5
    check(g, y, [3.0 * 2.0 * 9.0 + 7.0])  # 3 x y**2 + 7


def test_same_tensor_traced_twice_acts_as_one() -> None:
    """x.leaky_trace() twice shares x's id: x_a * x_b has gradient 2x."""
    x = t64([1.5, -1.0])
    g = (x.leaky_trace() * x.leaky_trace()).sum().backward()
    check(g, x, [3.0, -2.0])


# ----- diamonds, residuals, sharing ------------------------------------------------------------


def test_diamond() -> None:
    """a -> b = 3a, c = a + 1 -> d = b * c: dd/da = 6a + 3; db = c; dc = b."""
    a = t64([1.0, 2.0, -1.0])
    at = a.leaky_trace()
    b = at * 3.0
    c = at + 1.0
    g = (b * c).sum().backward()
    check(g, a, [9.0, 15.0, -3.0])
    check(g, b, [2.0, 3.0, 0.0])
    check(g, c, [3.0, 6.0, -3.0])


def test_diamond_with_matmul_and_relu() -> None:
    """a -> b = relu(a), c = a @ I2 -> d = b * c; dd/da = [a > 0] * a + relu(a) = 2a where a > 0 else 0."""
    a = t64([[1.0, -2.0], [3.0, 0.5]])
    eye = t64([[1.0, 0.0], [0.0, 1.0]])
    at = a.leaky_trace()
    g = (at.relu() * (at @ eye)).sum().backward()
    check(g, a, [[2.0, 0.0], [6.0, 1.0]])


def test_residual_relu() -> None:
    """y = relu(x) + x: dy/dx = [x > 0] + 1."""
    x = t64([-1.0, 2.0, 0.5])
    xt = x.leaky_trace()
    g = (xt.relu() + xt).sum().backward()
    check(g, x, [1.0, 2.0, 2.0])


def test_residual_matmul() -> None:
    """y = x @ W + x: dL/dx = rowsum(W) + 1, dL/dW = x.T @ 1."""
    x = t64([[1.0, 2.0]])
    w = t64p([[1.0, 2.0], [3.0, 4.0]])
    xt = x.leaky_trace()
    g = (xt @ w + xt).sum().backward()
    check(g, x, [[4.0, 8.0]])
    check(g, w, [[1.0, 1.0], [2.0, 2.0]])
    check_grad(w, [[1.0, 1.0], [2.0, 2.0]])


def test_weight_shared_in_two_matmuls() -> None:
    """out = (x @ W) @ W, W untraced but requiring grad: dW = h.T @ 1 + x.T @ (1 @ W.T) = [[6, 8], [4, 8]];
    dx = [[1, 5]]."""
    x = t64([[1.0, 2.0]])
    w = t64p([[1.0, 0.0], [2.0, 1.0]])
    h = x.leaky_trace() @ w
    g = (h @ w).sum().backward()
    check(g, w, [[6.0, 8.0], [4.0, 8.0]])
    check_grad(w, [[6.0, 8.0], [4.0, 8.0]])
    check(g, x, [[1.0, 5.0]])
    check(g, h, [[1.0, 3.0]])


def test_weight_shared_by_two_traced_inputs() -> None:
    """x1 @ W + x2 @ W with x1, x2 on separate tapes: dW = x1.T @ 1 + x2.T @ 1."""
    x1, x2 = t64([[1.0, 2.0]]), t64([[3.0, -1.0]])
    w = t64p([[1.0, 0.0], [2.0, 1.0]])
    g = (x1.trace(Gradients.leaky()) @ w + x2.trace(Gradients.leaky()) @ w).sum().backward()
    check(g, w, [[4.0, 4.0], [1.0, 1.0]])
    check_grad(w, [[4.0, 4.0], [1.0, 1.0]])
    check(g, x1, [[1.0, 3.0]])
    check(g, x2, [[1.0, 3.0]])


# ----- branches not connected to the loss ------------------------------------------------------


def test_dead_branch_on_same_tape() -> None:
    """c = exp(x) is recorded but unused: x's gradient is unaffected, c has none."""
    x = t64([1.0, 2.0])
    xt = x.leaky_trace()
    c = xt.exp()
    g = (xt * 2.0).sum().backward()
    check(g, x, [2.0, 2.0])
    assert g.get_ref_checked(c) is None
    check(g, c, [0.0, 0.0])


def test_traced_input_only_in_dead_branch() -> None:
    """y's tape merged via an unused x + y: y has no gradient, x's is exact."""
    x, y = t64([1.0, 2.0]), t64([5.0, 6.0])
    xt, yt = x.leaky_trace(), y.leaky_trace()
    w = xt + yt
    g = (xt * 3.0).sum().backward()
    assert g.get_ref_checked(y) is None
    assert g.get_ref_checked(w) is None
    check(g, y, [0.0, 0.0])
    check(g, x, [3.0, 3.0])


def test_dead_branch_matmul_untraced_param() -> None:
    """A param used only in a dead matmul branch gets no gradient (zeros from the store, ``.grad``
    stays None); the live param does."""
    x = t64([[1.0, 2.0]])
    w_live, w_dead = t64p([[1.0], [1.0]]), t64p([[2.0], [3.0]])
    xt = x.leaky_trace()
    _unused = xt @ w_dead
    g = (xt @ w_live).sum().backward()
    assert g.get_ref_checked(w_dead) is None
    check(g, w_dead, [[0.0], [0.0]])
    assert w_dead.grad is None
    check(g, w_live, [[1.0], [2.0]])
    check_grad(w_live, [[1.0], [2.0]])
    check(g, x, [[1.0, 1.0]])


# ----- dfdx style: trace the input, parameters require grad but stay untraced -------------------


def test_untraced_params_get_gradients() -> None:
    """h = x @ W + b with only x traced and W, b requiring grad: W and b get their gradients (in
    the store and in ``.grad``), and stay untraced (no tape of their own)."""
    x = t64([[1.0, 2.0], [3.0, 4.0]])
    w = t64p([[1.0, -1.0, 0.0], [0.0, 2.0, 1.0]])
    b = t64p([0.5, 0.0, -1.0])
    g = (x.leaky_trace() @ w + b).sum().backward()
    check(g, w, [[4.0, 4.0, 4.0], [6.0, 6.0, 6.0]])
    check(g, b, [2.0, 2.0, 2.0])
    check(g, x, [[0.0, 3.0], [0.0, 3.0]])
    check_grad(w, [[4.0, 4.0, 4.0], [6.0, 6.0, 6.0]])
    check_grad(b, [2.0, 2.0, 2.0])
    assert w.tape is PARAM and not w.tape.OWNS_TAPE
    assert b.tape is PARAM and not b.tape.OWNS_TAPE


def test_plain_tensor_used_with_traced_input_has_no_gradient_to_ask_for() -> None:
    """A plain tensor (not requiring grad, not traced) used directly with a traced x: asking the
    store for its gradient raises and says why, even where every path to the loss is a direct
    use, and also where one path went through an untraced op first (once a partial gradient);
    backward leaves its ``.grad`` None, and x's gradient is still exact."""
    x = t64([[1.0, 2.0], [3.0, 4.0]])
    w = t64([[1.0, -1.0, 0.0], [0.0, 2.0, 1.0]])
    b = t64([0.5, 0.0, -1.0])
    b2 = b * 2.0  # untraced op on b: records nothing
    g = (x.leaky_trace() @ w + b + b2).sum().backward()
    for t in (w, b):
        with pytest.raises(TapeError, match="does not require grad"):
            g.get(t)
        with pytest.raises(TapeError, match="does not require grad"):
            g.grad(t)
        assert t.grad is None
        assert t.tape is NONE_TAPE
    check(g, x, [[0.0, 3.0], [0.0, 3.0]])


def test_untraced_param_on_left_of_op() -> None:
    """W @ x and b * x with x traced on the right still give W and b (requiring grad) gradients."""
    x = t64([[1.0], [2.0]])
    w = t64p([[1.0, 1.0], [0.0, 3.0]])
    b = t64p([[2.0], [5.0]])
    g = ((w @ x.leaky_trace()) * b).sum().backward()
    # y = W x = [[3], [6]]; dL/dy = b; dW = b @ x.T; dx = W.T @ b
    check(g, w, [[2.0, 4.0], [5.0, 10.0]])
    check(g, x, [[2.0], [17.0]])
    check(g, b, [[3.0], [6.0]])
    check_grad(w, [[2.0, 4.0], [5.0, 10.0]])
    check_grad(b, [[3.0], [6.0]])


# ----- which gradients are kept ------------------------------------------------------------------


def test_retain_leafs_drops_intermediates() -> None:
    """With retain_leafs([W, b]) only W's and b's gradients remain after backward."""
    x = t64([[1.0, 2.0]])
    w = t64p([[1.0], [3.0]])
    b = t64p([0.5])
    grads = Gradients.leaky()
    grads.retain_leafs([w, b])
    xt = x.trace(grads)
    h = xt @ w
    y = h + b
    loss = y.sum()
    g = loss.backward()
    assert g is grads
    assert set(g.ids()) == {w.id, b.id}
    for t in (h, y, loss, x):
        assert t not in g
    check(g, w, [[1.0], [2.0]])
    check(g, b, [1.0])


def test_retain_leafs_including_input() -> None:
    """Retaining the traced input too keeps its gradient (and still drops intermediates)."""
    x = t64([[1.0, 2.0]])
    w = t64p([[1.0], [3.0]])
    grads = Gradients.leaky()
    grads.retain_leafs([w, x])
    h = x.trace(grads) @ w
    g = h.sum().backward()
    assert set(g.ids()) == {w.id, x.id}
    check(g, x, [[1.0, 3.0]])
    check(g, w, [[1.0], [2.0]])


def test_leaky_store_keeps_intermediates() -> None:
    """A leaky store keeps the gradients of intermediates and of the loss itself."""
    x = t64([1.0, 2.0])
    xt = x.leaky_trace()
    h = xt * 2.0
    loss = h.sum()
    g = loss.backward()
    check(g, h, [1.0, 1.0])
    check(g, loss, 1.0)
    check(g, x, [2.0, 2.0])


def test_leaky_store_accumulates_over_two_passes() -> None:
    """Two backward passes into one leaky store sum: d(x*x)/dx + d(3x)/dx = 2x + 3."""
    x = t64([1.0, -2.0])
    grads = Gradients.leaky()
    xt = x.trace(grads)
    (xt * xt).sum().backward()
    check(grads, x, [2.0, -4.0])
    xt2 = x.trace(grads)
    g = (xt2 * 3.0).sum().backward()
    assert g is grads
    check(grads, x, [5.0, -1.0])


def test_leaky_store_accumulates_param_over_two_passes() -> None:
    """An untraced W requiring grad used in two passes gets x1.T @ 1 + x2.T @ 1, in the store and
    in ``.grad`` alike."""
    w = t64p([[1.0], [1.0]])
    grads = Gradients.leaky()
    for xs in ([[1.0, 2.0]], [[10.0, 20.0]]):
        (t64(xs).trace(grads) @ w).sum().backward()
    check(grads, w, [[11.0], [22.0]])
    check_grad(w, [[11.0], [22.0]])


def test_leaky_store_accumulates_after_aliasing_pass() -> None:
    """A first pass that aliases x's gradient to the output's (x + 0) still accumulates correctly."""
    x = t64([1.0, 2.0])
    grads = Gradients.leaky()
    y = x.trace(grads) + 0.0
    y.sum().backward()
    (x.trace(grads) * 4.0).sum().backward()
    check(grads, x, [5.0, 5.0])
    check(grads, y, [1.0, 1.0])


# ----- against PyTorch ---------------------------------------------------------------------------

Graph = Callable[[Sequence[Any]], Any]

GRAPHS: dict[str, tuple[Graph, list[Any]]] = {
    "mul_self": (lambda v: (v[0] * v[0]).sum(), [[1.0, -2.0, 3.0]]),
    "add_self": (lambda v: ((v[0] + v[0]) * v[0]).sum(), [[1.0, -2.0, 3.0]]),
    "matmul_self": (lambda v: (v[0] @ v[0]).sum(), [[[1.0, 2.0], [3.0, 4.0]]]),
    "diamond": (lambda v: ((v[0] * 3.0) * (v[0] + 1.0)).sum(), [[1.0, 2.0, -1.0]]),
    "residual": (lambda v: ((v[0] @ v[1]).relu() + v[0]).exp().sum(), [[[0.1, -0.2]], [[0.3, -1.0], [0.5, 0.2]]]),
    "shared_weight": (lambda v: ((v[0] @ v[1]) @ v[1]).sum(), [[[1.0, 2.0]], [[1.0, 0.0], [2.0, 1.0]]]),
    "bias": (
        lambda v: (v[0] @ v[1] + v[2]).exp().sum(),
        [[[0.1, 0.2], [0.3, 0.4]], [[1.0, -1.0], [0.0, 0.5]], [0.1, 0.2]],
    ),
    "log_softmax": (lambda v: (v[0].log_softmax(-1) * v[1]).sum(), [[[0.1, 2.0, -1.0]], [[1.0, 0.0, 3.0]]]),
}


def _gradtape_grads(graph: Graph, values: list[Any], split: bool) -> list[np.ndarray[Any, Any]]:
    """Gradients of graph's scalar output w.r.t. each input: only the first traced and the others
    requiring grad (dfdx style, with parameters), or each input traced into its own store
    (``split``). The ones requiring grad also have it in ``.grad``, equal to the store's."""
    xs = [t64(v) for v in values]
    ins: list[Tensor[Any, Any]] = [
        x.trace(Gradients.leaky()) if split or i == 0 else x.requires_grad_() for i, x in enumerate(xs)
    ]
    g = graph(ins).backward()
    assert isinstance(g, Gradients)
    out = [g.get(x).numpy() for x in xs]
    for x, a in zip(xs, out, strict=True):
        if x.requires_grad:
            gx = x.grad
            assert gx is not None
            np.testing.assert_array_equal(gx.numpy(), a)
    return out


@pytest.mark.parametrize("split", [False, True], ids=["first_traced", "all_traced_separately"])
@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_matches_torch(name: str, split: bool) -> None:
    """gradtape's gradients equal PyTorch's (float64) for the graphs above."""
    torch = pytest.importorskip("torch")
    graph, values = GRAPHS[name]
    tins = [torch.tensor(np.array(v, dtype=np.float64), requires_grad=True) for v in values]
    graph(tins).backward()
    expected = [t.grad.numpy() for t in tins]
    got = _gradtape_grads(graph, values, split)
    for e, a in zip(expected, got, strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-12)


def test_many_separately_traced_inputs_then_first_reused() -> None:
    """acc = x_i + acc over 1200 separately traced inputs, then the first input is used again."""
    x = t64([1.0, 2.0])
    first = x.leaky_trace()
    acc = first * 1.0
    for _ in range(1200):
        acc = (x.leaky_trace() * 1.0) + acc
    g = (acc + first.sin()).sum().backward()
    check(g, x, 1201.0 + np.cos([1.0, 2.0]))
