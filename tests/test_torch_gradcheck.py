"""``torch.autograd.gradcheck`` and ``gradgradcheck`` renamed: each check is written as a
PyTorch user writes it (a custom ``autograd.Function`` under test, double-precision inputs
that require grad) and run in both libraries; they must pass and fail on the same functions."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gradtape

torch: Any = pytest.importorskip("torch")

_R = np.random.default_rng(11)
A = _R.standard_normal((3, 2))
B = _R.standard_normal((2, 4))


def _functions(L: Any) -> dict[str, tuple[Any, bool, bool]]:
    """name -> (function, first derivative right, second derivative right)."""

    class Cube(L.autograd.Function):  # type: ignore[misc]
        @staticmethod
        def forward(ctx: Any, a: Any) -> Any:
            ctx.save_for_backward(a)
            return a * a * a

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (a,) = ctx.saved_tensors
            return g * 3 * a * a

    class WrongCube(Cube):  # a first derivative off by a factor
        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (a,) = ctx.saved_tensors
            return g * 2 * a * a

    class FlatCube(Cube):  # right first derivative, computed from a detached input: no second
        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (a,) = ctx.saved_tensors
            return g * 3 * a.detach() * a.detach()

    return {
        "tanh of a product": (lambda a, b: L.tanh(a @ b), True, True),
        "two outputs": (lambda a, b: (L.sin(a) * 2, (a @ b).sum(0)), True, True),
        "custom cube": (lambda a, b: Cube.apply(a) @ b, True, True),
        "wrong cube": (lambda a, b: WrongCube.apply(a) @ b, False, False),
        "flat cube": (lambda a, b: FlatCube.apply(a) @ b, True, False),
    }


def _inputs(L: Any) -> tuple[Any, Any]:
    return L.tensor(A, requires_grad=True), L.tensor(B, requires_grad=True)


def _passes(check: Any, fn: Any, inputs: Any, **kw: Any) -> bool:
    return bool(check(fn, inputs, raise_exception=False, **kw))


@pytest.mark.parametrize("name", list(_functions(gradtape)))
def test_gradcheck_passes_and_fails_where_torchs_does(name: str) -> None:
    fn, first, _ = _functions(gradtape)[name]
    tfn, tfirst, _ = _functions(torch)[name]
    assert _passes(torch.autograd.gradcheck, tfn, _inputs(torch)) is tfirst
    assert _passes(gradtape.autograd.gradcheck, fn, _inputs(gradtape)) is first
    assert _passes(gradtape.autograd.gradcheck, fn, _inputs(gradtape), check_forward_ad=True) is first
    if not first:
        with pytest.raises(
            gradtape.autograd.GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"
        ):
            gradtape.autograd.gradcheck(fn, _inputs(gradtape))
        with pytest.raises(RuntimeError):  # PyTorch's GradcheckError is a RuntimeError; so is gradtape's
            gradtape.autograd.gradcheck(fn, _inputs(gradtape))


@pytest.mark.parametrize("name", list(_functions(gradtape)))
def test_gradgradcheck_passes_and_fails_where_torchs_does(name: str) -> None:
    fn, _, second = _functions(gradtape)[name]
    tfn, _, tsecond = _functions(torch)[name]
    assert _passes(torch.autograd.gradgradcheck, tfn, _inputs(torch)) is tsecond
    assert _passes(gradtape.autograd.gradgradcheck, fn, _inputs(gradtape)) is second


def test_only_inputs_that_require_grad_are_checked_and_refusals_follow_torch() -> None:
    x = gradtape.tensor(A, requires_grad=True)
    const = gradtape.tensor(B)  # not checked, passed through
    assert gradtape.autograd.gradcheck(lambda a, b, k: gradtape.tanh(a @ b) * k, (x, const, 2.0))
    for L in (torch, gradtape):
        with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
            L.autograd.gradcheck(lambda a: a * 2, (L.tensor(A),))
    with pytest.warns(UserWarning, match="not a double precision"):
        gradtape.autograd.gradcheck(
            lambda a: a * 2,
            (gradtape.tensor(A.astype(np.float32), requires_grad=True),),
            eps=1e-2,
            atol=1e-2,
            rtol=1e-2,
        )
    with pytest.raises(NotImplementedError, match="vmap"):
        gradtape.autograd.gradcheck(lambda a: a * 2, (x,), check_batched_grad=True)
