"""Seed 003, a PyTorch-style autograd module, on gradtape's one tape: the grad modes.

The seed's ``no_grad`` / ``enable_grad`` / ``set_grad_enabled`` examples with its outcomes.
Its ``tensor([1.], requires_grad=True)`` is a traced tensor (``leaky_trace()``), and its
``requires_grad`` of a result is whether the result carries a tape (``Tensor.requires_grad``);
its ``y.backward()`` on a one-element result is ``y.sum().backward()``. Then the modes'
other promises: thread-local, decorators (generators too), nesting with context tapes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from gradtape import (
    Cpu,
    GradientTape,
    Tensor,
    enable_grad,
    is_grad_enabled,
    nn,
    no_grad,
    set_grad_enabled,
)

dev = Cpu(seed=0)


def tensor_requiring_grad(v: list[float]) -> Tensor[Any, Any]:
    """``tensor(v, requires_grad=True)``."""
    return dev.tensor(np.array(v, np.float32)).leaky_trace()


@pytest.fixture(autouse=True)
def _grad_mode_restored() -> Iterator[None]:
    assert is_grad_enabled()
    yield
    set_grad_enabled(True)


# ----- enable_grad -----------------------------------------------------------------------------


def test_seed_enable_grad_example() -> None:
    x = tensor_requiring_grad([1.0])
    with no_grad():
        with enable_grad():
            y = x * 2
    assert y.requires_grad
    grads = y.sum().backward()
    np.testing.assert_array_equal(grads.get(x).numpy(), [2.0])  # x.grad


def test_seed_enable_grad_decorators() -> None:
    x = tensor_requiring_grad([1.0])

    @enable_grad()
    def doubler(x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return x * 2

    with no_grad():
        z = doubler(x)
    assert z.requires_grad

    @enable_grad()
    def tripler(x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return x * 3

    with no_grad():
        z = tripler(x)
    assert z.requires_grad


# ----- no_grad ---------------------------------------------------------------------------------


def test_seed_no_grad_example() -> None:
    x = tensor_requiring_grad([1.0])
    with no_grad():
        y = x * 2
    assert not y.requires_grad

    @no_grad()
    def doubler(x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return x * 2

    z = doubler(x)
    assert not z.requires_grad

    @no_grad()
    def tripler(x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return x * 3

    z = tripler(x)
    assert not z.requires_grad


def test_seed_no_grad_factory_exception() -> None:
    """A parameter made under no_grad is still a parameter (PyTorch's nn.Parameter)."""
    with no_grad():
        lin = nn.Linear(10, 1, dev=dev)
    assert lin.weight.requires_grad


def test_no_grad_records_nothing_on_parameters_or_watched_tensors() -> None:
    lin = nn.Linear(3, 2, dev=dev)
    x = dev.randn((4, 3))
    grads = lin.alloc_grads()
    with no_grad():
        assert not lin(x.trace(grads)).requires_grad
    x0 = dev.tensor(np.float32(2.0))
    with GradientTape(persistent=True) as tape:
        tape.watch(x0)
        with no_grad():
            y = x0 * x0
        z = x0 * 3.0
    assert tape.gradient(y, x0) is None
    assert tape.gradient(z, x0).item() == 3.0


def test_no_grad_without_parentheses() -> None:
    x = tensor_requiring_grad([1.0])

    @no_grad
    def doubler(x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return x * 2

    assert not doubler(x).requires_grad and is_grad_enabled()


# ----- set_grad_enabled ------------------------------------------------------------------------


def test_seed_set_grad_enabled_example() -> None:
    x = tensor_requiring_grad([1.0])
    is_train = False
    with set_grad_enabled(is_train):
        y = x * 2
    assert not y.requires_grad
    _ = set_grad_enabled(True)
    y = x * 2
    assert y.requires_grad
    _ = set_grad_enabled(False)
    y = x * 2
    assert not y.requires_grad
    assert not is_grad_enabled()


def test_set_grad_enabled_restores_and_decorates() -> None:
    x = tensor_requiring_grad([1.0])
    with no_grad():
        with set_grad_enabled(True):
            assert (x * 2).requires_grad
        assert not is_grad_enabled()
    assert is_grad_enabled()

    @set_grad_enabled(False)
    def f(x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return x * 2

    assert is_grad_enabled()  # decorating does not change the mode around it
    assert not f(x).requires_grad
    assert is_grad_enabled()
    with pytest.raises(TypeError, match=r"set_grad_enabled: mode must be a bool, got int"):
        set_grad_enabled(1)  # type: ignore[arg-type]


def test_generator_runs_in_the_mode() -> None:
    x = tensor_requiring_grad([1.0])

    @no_grad()
    def gen(x: Tensor[Any, Any]) -> Iterator[Tensor[Any, Any]]:
        yield x * 2
        yield x * 3

    it = gen(x)
    first = next(it)
    assert is_grad_enabled()  # between resumptions the caller's mode holds
    assert (x * 2).requires_grad
    assert [first.requires_grad, next(it).requires_grad] == [False, False]


# ----- threads ---------------------------------------------------------------------------------


def test_no_grad_in_one_thread_does_not_change_the_other() -> None:
    x = tensor_requiring_grad([1.0])
    entered, checked = threading.Event(), threading.Event()
    seen: list[bool] = []

    def other() -> None:
        with no_grad():
            entered.set()
            checked.wait(5)
            seen.append((x * 2).requires_grad)

    th = threading.Thread(target=other)
    th.start()
    assert entered.wait(5)
    assert is_grad_enabled() and (x * 2).requires_grad  # the other thread is inside no_grad
    checked.set()
    th.join()
    assert seen == [False]
    assert (x * 2).requires_grad
