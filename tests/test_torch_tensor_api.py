"""Issue 27, "a PyTorch program ports by renaming": the tensor and module API a ported program
leans on, written as PyTorch code and run on both libraries from the same float64 values:
``next(model.parameters())``, ``new_zeros``/``new_ones``/``new_full``/``new_empty``/
``new_tensor``, the in-place ``fill_``/``zero_``/``copy_`` (off the tape, and on parameters under
``no_grad()``), ``clone``, and the read-only ``detach()`` of a recorded tensor that turns a
silently wrong gradient into an error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, DTypeError, ShapeError, TapeError, Tensor, nn, no_grad, optim
from gradtape.autograd import grad
from gradtape.functional import hessian
from gradtape.testing import gradcheck

torch: Any = pytest.importorskip("torch")

DEV = Cpu(seed=0)
_RNG = np.random.default_rng(2727)


def _pair(shape: tuple[int, ...], requires_grad: bool = False) -> tuple[Tensor[Any, Any], Any]:
    a = _RNG.standard_normal(shape)
    return DEV.tensor(a.copy(), requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad)


# ----- parameters(): a list that next() steps through -------------------------------------


def test_next_of_parameters_as_pytorch() -> None:
    model = nn.Sequential(nn.Linear(3, 4, dev=DEV), nn.ReLU(), nn.Linear(4, 2, dev=DEV))
    tmodel = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    weight = next(model.parameters())  # the first parameter, as PyTorch's generator gives
    assert weight.shape == next(tmodel.parameters()).shape == (4, 3)
    params, tparams = model.parameters(), tmodel.parameters()
    got = [next(params).shape for _ in range(4)]
    assert got == [tuple(next(tparams).shape) for _ in range(4)]
    with pytest.raises(StopIteration):
        next(params)
    with pytest.raises(StopIteration):
        next(tparams)
    # ... and still the list gradtape's callers use: reusable, len, indexing, for not moving next()
    params = model.parameters()
    assert len(params) == 4 and params[0] is weight
    assert [p.shape for p in params] == [p.shape for p in params] == got
    assert next(params) is weight and next(params) is params[1]
    assert len(list(params)) == 4
    assert next(model.parameters(recurse=False), None) is None  # Sequential owns none itself
    opt = optim.SGD(model.parameters(), lr=0.1)  # an optimizer still sees every parameter
    assert len(opt.param_groups[0]["params"]) == 4


# ----- new_* constructors -----------------------------------------------------------------


def test_new_constructors_as_pytorch() -> None:
    for dtype, tdtype in ((np.float64, torch.float64), (np.float32, torch.float32), (np.int64, torch.int64)):
        x, tx = DEV.tensor(np.ones((2, 3), dtype)), torch.ones(2, 3, dtype=tdtype)
        pairs = [
            (x.new_zeros(2, 3), tx.new_zeros(2, 3)),
            (x.new_zeros((4,)), tx.new_zeros((4,))),
            (x.new_zeros(()), tx.new_zeros(())),
            (x.new_ones([2, 1]), tx.new_ones([2, 1])),
            (x.new_full((2, 2), 3.5), tx.new_full((2, 2), 3.5)),
            (x.new_tensor([[1.7, -1.7], [2.0, 0.5]]), tx.new_tensor([[1.7, -1.7], [2.0, 0.5]])),
            (x.new_tensor(np.array([1, 2], np.int32)), tx.new_tensor(np.array([1, 2], np.int32))),
            (x.new_zeros(x.size(), dtype=np.float32), tx.new_zeros(tx.size(), dtype=torch.float32)),
            (x.new_ones(3, dtype=np.int64), tx.new_ones(3, dtype=torch.int64)),
        ]
        for ours, theirs in pairs:
            assert ours.shape == tuple(theirs.shape)
            assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
            assert ours.is_leaf and not ours.requires_grad and ours.device is x.device
        empty = x.new_empty(3, 2)
        assert empty.shape == (3, 2) and empty.dtype == x.dtype
    x, _ = _pair((3,), requires_grad=True)
    src = np.arange(3.0)
    copy = x.new_tensor(src)  # a copy, whatever data is
    src[0] = 9.0
    assert copy.numpy()[0] == 0.0
    y = x.new_tensor(x * 2)  # values only: never recorded
    assert not y.requires_grad and y.is_leaf
    z = x.new_zeros(2, requires_grad=True)
    assert z.requires_grad and z.is_leaf


def test_new_constructors_refuse_bad_sizes_and_dtypes() -> None:
    x = DEV.tensor(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"new_zeros: negative size in \(-1, 2\) \(tensor of shape \(2, 3\)\)"):
        x.new_zeros(-1, 2)
    with pytest.raises(TypeError, match=r"new_ones: sizes must be ints, got \(2.5,\) \(tensor of shape \(2, 3\)\)"):
        x.new_ones(2.5)
    with pytest.raises(DTypeError, match=r"new_full: dtype float16 .*tensor float64 \(2, 3\)"):
        x.new_full((2,), 1.0, dtype=np.float16)
    with pytest.raises(TypeError, match=r"new_empty: dtype must be a numpy dtype"):
        x.new_empty(2, dtype=object())
    with pytest.raises(TypeError, match=r"new_full: fill_value must be a number, got str"):
        x.new_full((2,), "a")
    with pytest.raises(TypeError, match=r"new_tensor: data must be numeric"):
        x.new_tensor([[1.0], "a"])


# ----- fill_, zero_, copy_ ----------------------------------------------------------------

# each in-place write, on a tensor of shape (3,)
_WRITES: list[tuple[str, Callable[[Tensor[Any, Any]], Any]]] = [
    ("__setitem__", lambda t: t.__setitem__(0, 5.0)),
    ("fill_", lambda t: t.fill_(5.0)),
    ("zero_", lambda t: t.zero_()),
    ("copy_", lambda t: t.copy_(np.zeros(3))),
]


def test_inplace_fills_and_copies_as_pytorch() -> None:
    x, tx = _pair((2, 3))
    assert x.fill_(2.5) is x
    tx.fill_(2.5)
    np.testing.assert_array_equal(x.numpy(), tx.numpy())
    x.fill_(DEV.tensor(np.array(-1.0)))  # a 0-d tensor as the value
    tx.fill_(torch.tensor(-1.0, dtype=torch.float64))
    np.testing.assert_array_equal(x.numpy(), tx.numpy())
    assert x.zero_() is x
    tx.zero_()
    np.testing.assert_array_equal(x.numpy(), tx.numpy())
    row, trow = _pair((3,))
    assert x.copy_(row) is x  # broadcast over the rows
    tx.copy_(trow)
    np.testing.assert_array_equal(x.numpy(), tx.numpy())
    full, tfull = _pair((2, 3))
    x.copy_(full.numpy().astype(np.float32))  # an array, cast to x's dtype
    tx.copy_(tfull.float())
    np.testing.assert_array_equal(x.numpy(), tx.numpy())
    ints, tints = DEV.tensor(np.zeros(3, np.int64)), torch.zeros(3, dtype=torch.int64)
    ints.copy_(DEV.tensor(np.array([1.7, -1.7, 2.2])))  # float -> int truncates, as PyTorch
    tints.copy_(torch.tensor([1.7, -1.7, 2.2], dtype=torch.float64))
    np.testing.assert_array_equal(ints.numpy(), tints.numpy())


def test_parameter_updates_under_no_grad_as_pytorch() -> None:
    model = nn.Linear(3, 2, dev=DEV, dtype=np.float64)
    tmodel = torch.nn.Linear(3, 2).double()
    w_new = _RNG.standard_normal((2, 3))
    bias = model.bias
    assert bias is not None
    with no_grad():
        model.weight.copy_(w_new)
        bias.fill_(0.5)
        model.weight[0, 0] = 1.0
    with torch.no_grad():
        tmodel.weight.copy_(torch.tensor(w_new))
        tmodel.bias.fill_(0.5)
        tmodel.weight[0, 0] = 1.0
    x = _RNG.standard_normal((4, 3))
    (model(DEV.tensor(x)) ** 2).sum().backward()
    (tmodel(torch.tensor(x)) ** 2).sum().backward()
    for p, tp in zip(model.parameters(), tmodel.parameters(), strict=True):
        np.testing.assert_array_equal(p.numpy(), tp.detach().numpy())
        assert p.grad is not None and tp.grad is not None
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-12)
    lr = 0.1
    for p, tp in zip(model.parameters(), tmodel.parameters(), strict=True):
        assert p.grad is not None
        with no_grad():  # README's spelling of PyTorch's p.data.add_(p.grad, alpha=-lr)
            p.copy_(p - lr * p.grad)
        tp.data.add_(tp.grad, alpha=-lr)
        np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=1e-12)
        with pytest.raises(AttributeError, match="add_"):  # .data is the numpy array: loud
            p.data.add_(p.grad, alpha=-lr)  # type: ignore[attr-defined]
    with no_grad():
        bias.zero_()
    assert not bias.numpy().any() and bias.requires_grad


def test_inplace_refused_on_the_tape_naming_method_and_shape() -> None:
    p = DEV.tensor(np.ones(3), requires_grad=True)
    recorded = p * 2
    for t, what in ((p, "requires grad"), (recorded, "is recorded on a tape")):
        for name, call in _WRITES:
            with pytest.raises(TapeError, match=rf"^{name}: in-place write into a tensor of shape \(3,\) that {what}"):
                call(t)
    with no_grad(), pytest.raises(TapeError, match=r"^fill_: .*shape \(3,\) that is recorded"):
        recorded.fill_(0.0)  # no_grad() frees parameters, never a recorded tensor
    plain = DEV.tensor(np.zeros(3))
    with pytest.raises(TapeError, match=r"^copy_: src of shape \(3,\) requires grad.*shape \(3,\).*no_grad"):
        plain.copy_(recorded)
    with no_grad():
        plain.copy_(recorded)  # values only, as PyTorch under no_grad
    np.testing.assert_array_equal(plain.numpy(), 2.0 * np.ones(3))
    with pytest.raises(ShapeError, match=r"^copy_: src of shape \(2,\) does not broadcast to the tensor's shape \(3,"):
        plain.copy_(np.zeros(2))
    with pytest.raises(TypeError, match=r"^copy_: src must be a Tensor or a numpy array, got list"):
        plain.copy_([1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match=r"^fill_: value must be a number or a 0-d tensor, got a tensor of shape \(1"):
        plain.fill_(DEV.tensor(np.ones(1)))
    with pytest.raises(ValueError, match=r"^zero_: tensor of shape \(2, 3\) is read-only"):
        plain.expand(2, 3).zero_()


# ----- detach() of a recorded tensor is read-only; clone() ------------------------------------


def test_write_into_detached_recorded_tensor_is_refused_not_a_wrong_gradient() -> None:
    x, tx = _pair((3,), requires_grad=True)
    y, ty = (x * x).exp(), (tx * tx).exp()  # exp's backward reads its output y
    z = y.detach()
    np.testing.assert_array_equal(z.numpy(), ty.detach().numpy())
    for name, call in _WRITES:
        with pytest.raises(ValueError, match=rf"^{name}: tensor of shape \(3,\) is a detach\(\) of a tensor.*clone"):
            call(z)
    with pytest.raises(ValueError, match=r"^__setitem__: tensor of shape \(3,\) is read-only.*detach\(\).*clone"):
        z.reshape(3)[0] = 5.0  # a view of it: still read-only
    c = z.clone()  # the fix the error names
    c[0] = 5.0
    assert c.numpy()[0] == 5.0 and z.numpy()[0] != 5.0
    y.sum().backward()
    ty.sum().backward()
    assert x.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)  # the gradient is right
    # detach() of an untraced tensor or a parameter shares a writeable buffer, as PyTorch's
    for t in (DEV.tensor(np.zeros(3)), x):
        t.detach()[0] = 7.0
        assert t.numpy()[0] == 7.0


def test_clone_as_pytorch() -> None:
    x, tx = _pair((2, 3), requires_grad=True)
    c, tc = x.clone(), tx.clone()
    assert not c.is_leaf and not tc.is_leaf and c.requires_grad
    assert not np.shares_memory(c.numpy(), x.numpy())
    (c * c * c).sum().backward()
    (tc * tc * tc).sum().backward()
    assert x.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    a = _RNG.standard_normal(3)
    h = hessian(lambda v: (v.clone() ** 3).sum(), DEV.tensor(a))
    tv = torch.tensor(a, requires_grad=True)  # PyTorch's Hessian by double backward
    (tg,) = torch.autograd.grad((tv.clone() ** 3).sum(), tv, create_graph=True)
    th = torch.stack([torch.autograd.grad(tg[i], tv, retain_graph=True)[0] for i in range(3)])
    np.testing.assert_allclose(h.numpy(), th.numpy(), rtol=1e-12)
    assert gradcheck(lambda v: v.clone() * v, [DEV.tensor(a)])
    g = grad((x.clone() ** 2).sum(), x, create_graph=True)[0]
    assert g is not None
    (gg,) = grad(g.sum(), x)
    assert gg is not None
    np.testing.assert_allclose(gg.numpy(), 2.0 * np.ones((2, 3)))  # d/dx sum(2x): through clone twice
    ints = DEV.tensor(np.arange(3))
    ci = ints.clone()
    ci[0] = 5
    assert ci.is_leaf and ints.numpy()[0] == 0 and ci.dtype == np.int64


# ----- PyTorch's composed functions as Tensor methods (gradtape._torch_more) --------------------

tn: Any = pytest.importorskip("test_torch_namespace")  # its inputs and its torch/gradtape comparison

COMPOSED_METHODS = [
    *("C[:, :1].addmm(A, M)", "M[0].addmm(A, M, beta=0.5, alpha=2.0)", "A[:, 0].addmv(A, V)"),
    *("A.addr(A[:, 0], V, alpha=2.0)", "X3[:, :, :3].baddbmm(X3, X3.transpose(1, 2), beta=0.5)"),
    *("A[:, :3].addbmm(X3, X3.transpose(1, 2))", "A.kron(V)", "A[:, :3].trace()", "M.trace()", "IDX2.trace()"),
    *(
        "A.inner(B)",
        "V.vdot(A[1])",
        "A.scatter(1, IDX2, B)",
        "A.scatter(0, IDX2, value=3.0)",
        "A.scatter(1, IDX2, 2.5)",
    ),
    *("IDX2.flatten().bincount()", "IDX.bincount(A[0, :3].detach(), minlength=4)"),
    *("A.histc()", "A.histc(bins=6, min=-1, max=1)"),
]


@pytest.mark.parametrize("expr", COMPOSED_METHODS)
def test_composed_functions_as_methods_as_pytorchs(expr: str) -> None:
    """``x.addmm(m1, m2)``, ``x.scatter(dim, index, src)``, ``x.trace()``, ... spelled as
    PyTorch's methods: values and gradients against PyTorch (tests/test_torch_namespace.py's
    comparison, on its inputs)."""
    tn._compare(expr)


def test_trace_is_pytorchs_without_an_argument_and_dfdxs_with_one() -> None:
    """``x.trace()`` is PyTorch's (the diagonal's sum) at run time, for ported programs;
    ``x.trace(gradients)`` stays dfdx's (the same tensor on a new tape), the only form the type
    checkers know (typed code spells PyTorch's ``gradtape.trace(x)``)."""
    from gradtape import trace
    from gradtape.gradients import Gradients

    x, tx = _pair((3, 4), requires_grad=True)
    np.testing.assert_allclose(x.trace().item(), tx.trace().item())  # type: ignore[call-arg]
    np.testing.assert_allclose(trace(x).item(), tx.trace().item())
    grads = Gradients.leaky()
    traced = x.trace(grads)
    assert traced.id == x.id and traced.tape.OWNS_TAPE and traced.is_leaf
    (traced * traced).sum().backward()
    np.testing.assert_allclose(grads.get(x).numpy(), 2.0 * x.numpy())
