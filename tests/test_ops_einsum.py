"""``einsum`` as PyTorch programs write it (``torch.einsum``): values and every operand's
gradient equal PyTorch's in float64, second derivatives equal torch's double backward,
gradcheck, and errors that name the equation and the shapes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gradtape
from gradtape import Cpu, DTypeError, ShapeError, ops
from gradtape.testing import gradcheck

torch = pytest.importorskip("torch")

DEV = Cpu(seed=0)
R = np.random.default_rng(0)

# (equation, operand shapes)
CASES: list[tuple[str, list[tuple[int, ...]]]] = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),  # implicit output
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),  # attention scores
    ("bhqk,bhkd->bhqd", [(2, 3, 4, 6), (2, 3, 6, 5)]),
    ("i,j->ij", [(3,), (4,)]),  # outer
    ("i,i->", [(5,), (5,)]),  # dot
    ("ij->ji", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("ijk->j", [(2, 3, 4)]),  # i and k summed away
    ("ij,k->ik", [(3, 4), (5,)]),  # j only in the first operand
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),  # ellipsis, broadcast batch
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (6, 4, 5)]),  # ellipsis with size-1 broadcast
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),  # bilinear, three operands
    ("ab,bc,cd,de->ae", [(2, 3), (3, 4), (4, 5), (5, 2)]),  # a chain: opt_einsum's order
]


def _ids(c: tuple[str, list[tuple[int, ...]]]) -> str:
    return c[0]


@pytest.mark.parametrize("case", CASES, ids=[f"{i}:{c[0]}" for i, c in enumerate(CASES)])
def test_values_and_gradients_equal_torch(case: tuple[str, list[tuple[int, ...]]]) -> None:
    eq, shapes = case
    arrays = [R.standard_normal(s) for s in shapes]
    tts = [torch.tensor(a, requires_grad=True) for a in arrays]
    yt = torch.einsum(eq, *tts)
    w = R.standard_normal(tuple(yt.shape))
    (yt * torch.from_numpy(np.asarray(w))).sum().backward()

    ts = [DEV.tensor(a, requires_grad=True) for a in arrays]
    y = ops.einsum(eq, *ts)
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), rtol=1e-12, atol=1e-13)
    (y * DEV.tensor(np.asarray(w))).sum().backward()
    for t, tt in zip(ts, tts, strict=True):
        assert t.grad is not None and tt.grad is not None
        np.testing.assert_allclose(t.grad.numpy(), tt.grad.numpy(), rtol=1e-12, atol=1e-13)


def test_the_same_tensor_twice_gets_both_gradients() -> None:
    a = R.standard_normal((3, 4))
    x, xt = DEV.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    ops.einsum("ij,kj->ik", x, x).sum().backward()
    torch.einsum("ij,kj->ik", xt, xt).sum().backward()
    assert x.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-13)


@pytest.mark.parametrize("case", [CASES[0], CASES[4], CASES[9], CASES[11], CASES[12]], ids=_ids)
def test_second_derivatives_equal_torch_double_backward(case: tuple[str, list[tuple[int, ...]]]) -> None:
    eq, shapes = case
    arrays = [R.standard_normal(s) for s in shapes]
    tts = [torch.tensor(a, requires_grad=True) for a in arrays]
    gts = torch.autograd.grad((torch.einsum(eq, *tts) ** 2).sum(), tts, create_graph=True)
    vs = [R.standard_normal(s) for s in shapes]
    hts = torch.autograd.grad(sum((g * torch.from_numpy(v)).sum() for g, v in zip(gts, vs, strict=True)), tts)

    ts = [DEV.tensor(a, requires_grad=True) for a in arrays]
    gs = gradtape.autograd.grad((ops.einsum(eq, *ts) ** 2).sum(), ts, create_graph=True)
    total: Any = 0.0
    for g, v in zip(gs, vs, strict=True):
        assert g is not None
        total = total + (g * DEV.tensor(v)).sum()
    hs = gradtape.autograd.grad(total, ts)
    for h, ht in zip(hs, hts, strict=True):
        assert h is not None
        np.testing.assert_allclose(h.numpy(), ht.numpy(), rtol=1e-11, atol=1e-12)


def test_gradcheck_three_operands() -> None:
    arrays = [R.standard_normal(s) for s in [(2, 3), (4, 3, 5), (2, 5)]]
    assert gradcheck(lambda a, b, c: ops.einsum("bn,anm,bm->ba", a, b, c), arrays)


def test_float32_stays_float32_and_the_list_form_works() -> None:
    a = DEV.tensor(R.standard_normal((3, 4)).astype(np.float32))
    b = DEV.tensor(R.standard_normal((4, 2)).astype(np.float32))
    y = ops.einsum("ij,jk->ik", [a, b])
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.numpy(), a.numpy() @ b.numpy(), rtol=1e-5)


def test_bad_equations_and_operands_are_refused_naming_einsum() -> None:
    a, b = DEV.tensor(np.ones((3, 4))), DEV.tensor(np.ones((5, 6)))
    with pytest.raises(
        ShapeError, match=r"einsum: subscript 'j' has sizes 4 and 5 in 'ij,jk->ik' for shapes \(3, 4\), \(5, 6\)"
    ):
        ops.einsum("ij,jk->ik", a, b)
    with pytest.raises(ValueError, match="has 2 operands, got 1 tensors"):
        ops.einsum("ij,jk->ik", a)
    with pytest.raises(ValueError, match=r"operand subscripts 'ijk' name 3 dims, the tensor has shape \(3, 4\)"):
        ops.einsum("ijk->i", a)
    with pytest.raises(ValueError, match="diagonal"):
        ops.einsum("ii->i", DEV.tensor(np.ones((3, 3))))
    with pytest.raises(ValueError, match="output subscripts"):
        ops.einsum("ij->iz", a)
    with pytest.raises(DTypeError, match="einsum: operands must share one float dtype"):
        ops.einsum("ij,jk->ik", a, DEV.tensor(np.ones((4, 2), np.float32)))
    with pytest.raises(TypeError, match="einsum: operand 1 must be a Tensor"):
        ops.einsum("ij,jk->ik", a, np.ones((4, 2)))


def test_the_cached_plans_cannot_be_mutated_by_a_caller() -> None:
    from gradtape.ops.einsum import _pair_plan, _plan

    subs, out, sizes = _plan("ij,jk->ik", ((3, 4), (4, 2)))
    assert subs == ("ij", "jk") and out == "ik" and dict(sizes) == {"i": 3, "j": 4, "k": 2}
    with pytest.raises(TypeError):
        sizes["i"] = 7  # type: ignore[index]
    with pytest.raises(AttributeError):
        subs.append("x")  # type: ignore[attr-defined]
    assert _plan("ij,jk->ik", ((3, 4), (4, 2))) == (("ij", "jk"), "ik", sizes)
    plan = _pair_plan("ij", (3, 4), "jk", (4, 2), "ik")
    assert all(isinstance(f, (tuple, str, bool)) for f in plan)
    a, b = DEV.tensor(R.standard_normal((3, 4))), DEV.tensor(R.standard_normal((4, 2)))
    np.testing.assert_allclose(ops.einsum("ij,jk->ik", a, b).numpy(), a.numpy() @ b.numpy(), rtol=1e-12)
