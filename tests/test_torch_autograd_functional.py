"""``torch.autograd.functional`` renamed: ``gradtape.autograd.functional`` with PyTorch's
arguments (``strict``, ``vectorize``, ``strategy``), compared with PyTorch in float64 on the
same functions and points: values, and the errors PyTorch raises."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gradtape
from gradtape.autograd.functional import hessian, hvp, jacobian, jvp, vhp, vjp

torch: Any = pytest.importorskip("torch")
TAF: Any = torch.autograd.functional

_R = np.random.default_rng(31)
XA = _R.standard_normal((3,))
XB = _R.standard_normal((2, 3))
VA = _R.standard_normal((3,))
VB = _R.standard_normal((2, 3))


def f_two(lib: Any, a: Any, b: Any) -> Any:
    """Two inputs, two outputs: (tanh(b) @ a, sum(a * a) * b)."""
    return lib.tanh(b) @ a, (a * a).sum() * b


def f_scalar(lib: Any, a: Any, b: Any) -> Any:
    """A scalar of two inputs, as a one-element vector (PyTorch accepts single-element outputs)."""
    return (lib.exp(b).sum(dim=0) * lib.sin(a)).sum().reshape(1)


def _np(x: Any) -> Any:
    if isinstance(x, (tuple, list)):
        return [_np(t) for t in x]
    return x.detach().numpy() if hasattr(x, "detach") else x.numpy()


def _both(fn: Any, name: str, f: Any, *args: Any, **kw: Any) -> tuple[Any, Any]:
    gt_args = [tuple(gradtape.tensor(a) for a in x) if isinstance(x, tuple) else x for x in args]
    th_args = [tuple(torch.tensor(a) for a in x) if isinstance(x, tuple) else x for x in args]
    ours = fn(lambda *xs: f(gradtape, *xs), *gt_args, **kw)
    theirs = getattr(TAF, name)(lambda *xs: f(torch, *xs), *th_args, **kw)
    return _np(ours), _np(theirs)


def _close(a: Any, b: Any) -> None:
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _close(x, y)
        return
    np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    "kw",
    [{}, {"vectorize": True}, {"vectorize": True, "strategy": "forward-mode"}, {"strict": True}],
    ids=["plain", "vectorize", "forward-mode", "strict"],
)
def test_jacobian_equals_pytorchs(kw: dict[str, Any]) -> None:
    ours, theirs = _both(jacobian, "jacobian", f_two, (XA, XB), **kw)
    _close(ours, theirs)


@pytest.mark.parametrize("kw", [{}, {"vectorize": True}, {"strict": True}], ids=["plain", "vectorize", "strict"])
def test_hessian_of_a_single_element_output_equals_pytorchs(kw: dict[str, Any]) -> None:
    ours, theirs = _both(hessian, "hessian", f_scalar, (XA, XB), **kw)
    _close(ours, theirs)


@pytest.mark.parametrize(("fn", "name"), [(vjp, "vjp"), (jvp, "jvp")])
def test_vjp_and_jvp_equal_pytorchs(fn: Any, name: str) -> None:
    if name == "vjp":
        v = (torch.tensor(XB @ XA * 0 + 1.0), torch.tensor(VB))
        gv: Any = (gradtape.tensor(v[0].numpy()), gradtape.tensor(VB))
    else:
        v = (torch.tensor(VA), torch.tensor(VB))
        gv = (gradtape.tensor(VA), gradtape.tensor(VB))
    ours = fn(lambda a, b: f_two(gradtape, a, b), (gradtape.tensor(XA), gradtape.tensor(XB)), gv, strict=True)
    theirs = getattr(TAF, name)(lambda a, b: f_two(torch, a, b), (torch.tensor(XA), torch.tensor(XB)), v, strict=True)
    _close(_np(ours), _np(theirs))


@pytest.mark.parametrize(("fn", "name"), [(hvp, "hvp"), (vhp, "vhp")])
def test_hvp_and_vhp_equal_pytorchs(fn: Any, name: str) -> None:
    gv = (gradtape.tensor(VA), gradtape.tensor(VB))
    ours = fn(lambda a, b: f_scalar(gradtape, a, b), (gradtape.tensor(XA), gradtape.tensor(XB)), gv)
    theirs = getattr(TAF, name)(
        lambda a, b: f_scalar(torch, a, b), (torch.tensor(XA), torch.tensor(XB)), (torch.tensor(VA), torch.tensor(VB))
    )
    _close(_np(ours), _np(theirs))
    one = np.array([0.7])
    ours1 = fn(lambda x: (x * x * x).sum(), gradtape.tensor(one))  # v omitted: one-element input
    theirs1 = getattr(TAF, name)(lambda x: (x * x * x).sum(), torch.tensor(one))
    _close(_np(ours1), _np(theirs1))


def _independent(lib: Any, a: Any, b: Any) -> Any:
    return a * 2.0  # b unused


@pytest.mark.parametrize(
    ("fn", "name", "args"),
    [
        (jacobian, "jacobian", ()),
        (vjp, "vjp", ("V",)),
        (jvp, "jvp", ("VV",)),
    ],
)
def test_strict_refuses_an_independent_input_like_pytorch(fn: Any, name: str, args: tuple[str, ...]) -> None:
    def extra(lib: Any) -> tuple[Any, ...]:
        if args == ("V",):
            return (lib.tensor(VA),)
        if args == ("VV",):
            return ((lib.tensor(VA), lib.tensor(VB)),)
        return ()

    with pytest.raises(RuntimeError, match="independent of input 1"):
        getattr(TAF, name)(
            lambda a, b: _independent(torch, a, b), (torch.tensor(XA), torch.tensor(XB)), *extra(torch), strict=True
        )
    with pytest.raises(RuntimeError, match="independent of input 1"):
        fn(
            lambda a, b: _independent(gradtape, a, b),
            (gradtape.tensor(XA), gradtape.tensor(XB)),
            *extra(gradtape),
            strict=True,
        )
    # without strict: zeros for the unused input, as PyTorch's
    ours = fn(lambda a, b: _independent(gradtape, a, b), (gradtape.tensor(XA), gradtape.tensor(XB)), *extra(gradtape))
    theirs = getattr(TAF, name)(
        lambda a, b: _independent(torch, a, b), (torch.tensor(XA), torch.tensor(XB)), *extra(torch)
    )
    _close(_np(ours), _np(theirs))


def test_argument_checks_follow_pytorch() -> None:
    x = np.array([1.0, 2.0])
    for lib, mod in ((torch, TAF), (gradtape, None)):
        t = lib.tensor(x)
        jac = mod.jacobian if mod is not None else jacobian
        hes = mod.hessian if mod is not None else hessian
        hv = mod.hvp if mod is not None else hvp
        with pytest.raises(NotImplementedError, match="vectorize=True"):
            jac(lambda a: a * 2.0, t, strategy="forward-mode")
        with pytest.raises(AssertionError if mod is not None else ValueError, match="forward-mode"):
            jac(lambda a: a * 2.0, t, strategy="sideways")  # PyTorch asserts; gradtape raises ValueError
        with pytest.raises(RuntimeError, match="strict=True"):
            jac(lambda a: a * 2.0, t, strict=True, vectorize=True)
        with pytest.raises(RuntimeError, match="single element"):
            hes(lambda a: a * 2.0, t)
        with pytest.raises(RuntimeError, match="v can only be None"):
            hv(lambda a: (a * a).sum(), t)
        with pytest.raises(
            RuntimeError, match="jacobian of the user-provided function with respect to input 0 is independent"
        ):
            hes(lambda a: a.sum() * 3.0, t, strict=True)
