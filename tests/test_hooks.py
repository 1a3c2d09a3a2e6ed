"""Tensor hooks and post-accumulate hooks (seed 003's PyTorch-style autograd), against PyTorch.

``register_hook`` sees and may replace the gradient flowing into a tensor; the replaced
gradient must change every upstream gradient exactly as PyTorch's does. The post-accumulate
hook fires once per parameter per backward pass, when the parameter's gradient is final, the
parameters used last first (newest first).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, Gradients, ShapeError, Tensor, engine, nn
from gradtape import tape as tp

torch: Any = pytest.importorskip("torch")

dev = Cpu(seed=0)


@pytest.fixture(autouse=True)
def _no_hooks_left() -> Any:
    yield
    engine._tensor_hooks.clear()
    engine._post_hooks.clear()
    tp._first_use.clear()


def test_hook_doubling_an_intermediate_gradient_matches_torch() -> None:
    xs, ws = np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.25, -2.0])
    x = dev.tensor(xs)
    h = (x.leaky_trace() * dev.tensor(ws)).tanh()
    seen: list[Any] = []

    def double(g: Tensor[Any, Any]) -> Tensor[Any, Any]:
        seen.append(g.numpy().copy())
        return g * 2.0

    h.register_hook(double)
    g = (h * h).sum().backward()
    tx = torch.tensor(xs, requires_grad=True)
    th = (tx * torch.tensor(ws)).tanh()
    th.register_hook(lambda g: g * 2.0)
    (th * th).sum().backward()
    np.testing.assert_allclose(g.get(x).numpy(), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(seen[0], 2 * th.detach().numpy(), rtol=1e-12)  # the gradient before the hook
    assert len(seen) == 1


def test_hook_on_a_leaf_and_on_a_parameter() -> None:
    lin = nn.Linear(3, 2, dev=dev, dtype=np.float64)
    x = dev.randn((4, 3), np.float64)
    lin.weight.register_hook(lambda g: g * 0.0)
    calls: list[int] = []
    h = x.register_hook(lambda g: calls.append(1))
    grads = Gradients.leaky()
    g = lin(x.trace(grads)).sum().backward()
    np.testing.assert_array_equal(g.get(lin.weight).numpy(), 0.0)
    assert np.abs(g.get(x).numpy()).max() > 0 and calls == [1]
    h.remove()
    lin(x.trace(Gradients.leaky())).sum().backward()
    assert calls == [1]  # removed


def test_hook_returning_a_wrong_shape_raises() -> None:
    x = dev.tensor(np.array([1.0, 2.0]))
    y = x.leaky_trace() * 2.0
    y.register_hook(lambda g: np.ones(3))
    with pytest.raises(
        ShapeError, match=r"register_hook: the hook returned a gradient of shape \(3,\), the tensor has"
    ):
        y.sum().backward()
    with pytest.raises(TypeError, match=r"register_hook: expected a callable, got int"):
        x.register_hook(3)  # type: ignore[arg-type]


def test_hook_on_a_hand_written_op_output() -> None:
    """The output of a split_tape/put_tape op: its hook fires before the op's closure."""
    x = dev.tensor(np.array([1.0, 3.0]))

    def square(t: Tensor[Any, Any]) -> Tensor[Any, Any]:
        p, tape = t.split_tape()
        y = p.device.tensor(p.data * p.data)

        def backward(grads: Gradients) -> None:
            gx, gy = grads.mut_and_ref(p, y)
            gx += 2 * p.data * gy

        tape.add_backward_op(backward)
        return y.put_tape(tape)

    y = square(x.leaky_trace())
    y.register_hook(lambda g: g * 10.0)
    g = y.sum().backward()
    np.testing.assert_array_equal(g.get(x).numpy(), [20.0, 60.0])


def test_post_accumulate_hook_once_per_parameter_newest_first() -> None:
    m = nn.Sequential(
        nn.Linear(3, 4, dev=dev), nn.ReLU(), nn.Linear(4, 4, dev=dev), nn.ReLU(), nn.Linear(4, 2, dev=dev)
    )
    order: list[str] = []
    finals: dict[str, Any] = {}
    handles = []
    for name, p in m.named_parameters():

        def hook(t: Tensor[Any, Any], grads: Gradients, name: str = name) -> None:
            order.append(name)
            finals[name] = grads.get(t).numpy().copy()

        handles.append(p.register_post_accumulate_grad_hook(hook))
    grads = m.alloc_grads()
    g = m(dev.randn((5, 3)).trace(grads)).sum().backward()
    assert order == ["4.bias", "4.weight", "2.bias", "2.weight", "0.bias", "0.weight"]
    for name, p in m.named_parameters():  # the gradient was final when the hook saw it
        np.testing.assert_array_equal(finals[name], g.get(p).numpy())
    m.zero_grads(g)
    order.clear()
    m(dev.randn((5, 3)).trace(g)).sum().backward()
    assert len(order) == 6  # once per backward pass
    for h in handles:
        h.remove()
    order.clear()
    m(dev.randn((5, 3)).trace(g)).sum().backward()
    assert order == []


def test_post_accumulate_hook_as_optimizer_in_backward() -> None:
    """An SGD step inside backward gives the parameters of a step after backward."""
    m1 = nn.Linear(3, 2, dev=Cpu(seed=3), dtype=np.float64)
    m2 = nn.Linear(3, 2, dev=Cpu(seed=3), dtype=np.float64)
    x = dev.randn((4, 3), np.float64)
    lr = 0.1
    for p in m1.parameters():

        def step(t: Tensor[Any, Any], grads: Gradients) -> None:
            t.data -= lr * grads.get(t).numpy()

        p.register_post_accumulate_grad_hook(step)
    m1(x.trace(m1.alloc_grads())).square().sum().backward()
    g = m2(x.trace(m2.alloc_grads())).square().sum().backward()
    for p1, p2 in zip(m1.parameters(), m2.parameters(), strict=True):
        np.testing.assert_allclose(p1.numpy(), p2.numpy() - lr * g.get(p2).numpy(), rtol=1e-12)
