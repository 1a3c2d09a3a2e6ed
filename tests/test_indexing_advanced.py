"""Advanced indexing, ``t[index tensor]`` and ``t[mask]``, as PyTorch programs write it
(``logits[torch.arange(B), targets]``, ``x[x > 0]``, ``emb[ids]``), compared with PyTorch in
float64: values, gradients (repeated picks accumulate), second derivatives, and errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import gradtape
from gradtape import Cpu, DTypeError, Tensor
from gradtape.testing import gradcheck

torch = pytest.importorskip("torch")

DEV = Cpu(seed=0)
RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 5, 3))

# each case: (name, key builder given (library module, x array) -> key); the same key written
# with torch's tensors and with gradtape's (or plain lists/arrays)
IDX = np.array([2, 0, 2, 3])
COLS = np.array([[1, 4], [0, 0]])


def _t(lib: Any, a: np.ndarray[Any, Any]) -> Any:
    return torch.from_numpy(a) if lib is torch else DEV.tensor(a)


CASES: dict[str, Callable[[Any], Any]] = {
    "int tensor (repeats)": lambda lib: _t(lib, IDX),
    "list": lambda lib: [3, 1, 1],
    "negative": lambda lib: _t(lib, np.array([-1, 0, -4])),
    "arange pairs": lambda lib: (_t(lib, np.arange(4)), _t(lib, np.array([4, 0, 2, 2]))),
    "slice then array": lambda lib: (slice(None), _t(lib, np.array([1, 1, 3]))),
    "ellipsis then array": lambda lib: (Ellipsis, _t(lib, np.array([2, 0]))),
    "2-d index": lambda lib: (_t(lib, np.array([[0, 1], [3, 3]])), _t(lib, COLS)),
    "mask 1-d": lambda lib: _t(lib, np.array([True, False, True, True])),
    "mask 2-d": lambda lib: _t(lib, X[..., 0] > 0),
    "mask after int": lambda lib: (1, _t(lib, np.array([True, False, False, True, True]))),
    "int, array, slice": lambda lib: (2, _t(lib, np.array([4, 1])), slice(0, 2)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_equal_pytorch(name: str) -> None:
    xt = torch.tensor(X, requires_grad=True)
    yt = xt[CASES[name](torch)]
    w = np.random.default_rng(1).standard_normal(tuple(yt.shape))
    (yt * torch.from_numpy(w)).sum().backward()

    x = DEV.tensor(X, requires_grad=True)
    y = x[CASES[name](gradtape)]
    np.testing.assert_array_equal(y.numpy(), yt.detach().numpy())
    (y * DEV.tensor(w)).sum().backward()
    assert x.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=0, atol=1e-15)


@pytest.mark.parametrize("name", ["int tensor (repeats)", "arange pairs", "mask 2-d", "int, array, slice"])
def test_gradcheck(name: str) -> None:
    key = CASES[name](gradtape)
    assert gradcheck(lambda t: t[key] * t[key], [X])


@pytest.mark.parametrize("name", ["int tensor (repeats)", "mask 1-d", "2-d index"])
def test_second_derivative_equals_torch_double_backward(name: str) -> None:
    """d/dx of sum(d/dx sum(x[k]**3) * v): the gradient's own gradient, through getitem's
    second rule (an add-at scatter whose backward indexes again)."""
    v = np.random.default_rng(2).standard_normal(X.shape)
    xt = torch.tensor(X, requires_grad=True)
    (gt,) = torch.autograd.grad((xt[CASES[name](torch)] ** 3).sum(), xt, create_graph=True)
    (ht,) = torch.autograd.grad((gt * torch.from_numpy(v)).sum(), xt)

    x = DEV.tensor(X, requires_grad=True)
    (g,) = gradtape.autograd.grad((x[CASES[name](gradtape)] ** 3).sum(), x, create_graph=True)
    assert g is not None
    np.testing.assert_allclose(g.numpy(), gt.detach().numpy(), atol=1e-12)
    (h,) = gradtape.autograd.grad((g * DEV.tensor(v)).sum(), x)
    assert h is not None
    np.testing.assert_allclose(h.numpy(), ht.numpy(), atol=1e-12)


def test_cross_entropy_by_hand_as_pytorch_writes_it() -> None:
    """``-log_softmax(logits)[arange(B), targets].mean()``: the pattern of minGPT-era code."""
    logits = RNG.standard_normal((6, 5))
    targets = np.array([4, 0, 1, 1, 3, 2])
    lt = torch.tensor(logits, requires_grad=True)
    loss_t = -torch.log_softmax(lt, dim=1)[torch.arange(6), torch.from_numpy(targets)].mean()
    loss_t.backward()

    lg = DEV.tensor(logits, requires_grad=True)
    loss = -lg.log_softmax(axis=1)[DEV.tensor(np.arange(6)), DEV.tensor(targets)].mean()
    loss.backward()
    assert lg.grad is not None
    np.testing.assert_allclose(loss.item(), loss_t.item(), rtol=1e-14)
    np.testing.assert_allclose(lg.grad.numpy(), lt.grad.numpy(), atol=1e-15)


def test_an_index_picked_from_an_untraced_tensor_keeps_the_tape_of_the_traced_one() -> None:
    grads = gradtape.Gradients.leaky()
    x = DEV.tensor(X)
    xt = x.trace(grads)
    y = xt[DEV.tensor(IDX)]
    g = y.sum().backward()
    counts = np.bincount(IDX, minlength=4).astype(float)
    np.testing.assert_array_equal(g.get(x).numpy(), np.broadcast_to(counts[:, None, None], X.shape))


def test_bad_indices_are_refused_naming_getitem_and_the_shape() -> None:
    x: Tensor[Any, Any] = DEV.tensor(X)
    with pytest.raises(
        IndexError, match=r"getitem: index 4 is out of bounds for axis 0 of size 4 \(tensor of shape \(4, 5, 3\)\)"
    ):
        x[DEV.tensor(np.array([0, 4]))]
    with pytest.raises(IndexError, match=r"index -6 is out of bounds for axis 1 of size 5"):
        x[:, [0, -6]]
    with pytest.raises(DTypeError, match=r"getitem: index must be integers, got dtype float64"):
        x[np.array([0.0, 1.0])]
    with pytest.raises(IndexError, match=r"bool mask of shape \(3,\) does not match the dims \(4,\)"):
        x[np.array([True, False, True])]
    with pytest.raises(IndexError, match=r"getitem: shape mismatch.*tensor of shape \(4, 5, 3\)"):
        x[np.array([0, 1]), np.array([0, 1, 2])]
    with pytest.raises(TypeError, match=r"getitem: index 1\.5 of type float"):
        x[1.5]  # type: ignore[call-overload]


def test_pytorch_spellings_of_gather_and_index_select_run_pytorchs_ops() -> None:
    """``x.gather(1, idx)`` and ``x.index_select(0, idx)`` as PyTorch writes them; gradtape's
    own ``gather(indices, axis)`` (numpy's take) keeps its meaning."""
    a = RNG.standard_normal((3, 4))
    idx = np.array([[0, 3], [1, 1], [2, 0]])
    rows = np.array([2, 0, 2])
    xt = torch.tensor(a, requires_grad=True)
    yt = xt.gather(1, torch.from_numpy(idx)) * 2 + torch.gather(xt, 0, torch.from_numpy(idx[:2] % 3)).sum()
    zt = xt.index_select(0, torch.from_numpy(rows))
    (yt.sum() + (zt * zt).sum()).backward()

    x = DEV.tensor(a, requires_grad=True)
    y = x.gather(1, DEV.tensor(idx)) * 2 + gradtape.ops.gather(x, 0, idx[:2] % 3).sum()
    z = x.index_select(0, DEV.tensor(rows))
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), rtol=1e-15)
    np.testing.assert_allclose(z.numpy(), zt.detach().numpy(), rtol=1e-15)
    (y.sum() + (z * z).sum()).backward()
    assert x.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-14)
    # gradtape's order: numpy's take along axis 1 (the output is (3, 3, 2))
    assert x.gather(idx[:, :1].ravel().tolist(), 1).shape == (3, 3)
    assert x.gather(idx, 1).shape == (3, 3, 2)
