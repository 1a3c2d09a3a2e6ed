"""Seed 000, dfdx's ``GradientTape``: its negate example, written as the seed writes it.

The seed's closure does ``t_grad += t.data() * result_grad`` with ``addmul`` after reusing
the negated data as the derivative; here the same op records that closure with
``add_backward_op`` and reads the two gradients with ``mut_and_ref``, and the tape is consumed
by ``execute`` (a second call raises), as the seed says.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, Gradients, GradientTape, TapeError, Tensor

dev = Cpu()


def negate(t: Tensor[Any, Any]) -> Tensor[Any, Any]:
    x, tape = t.split_tape()
    minus_one = np.full(x.shape, -1.0, x.dtype)  # the derivative, allocated once in forward
    result = x.device.tensor(-x.data, dtype=x.dtype)

    def backward(grads: Gradients) -> None:
        t_grad, result_grad = grads.mut_and_ref(x, result)
        x.device.addmul(t_grad, minus_one, result_grad)  # t_grad += -1 * result_grad

    tape.add_backward_op(backward)
    return result.put_tape(tape)


def test_seed_negate_example() -> None:
    x = dev.tensor(np.array([1.0, -2.0, 3.0]))
    w = dev.tensor(np.array([0.5, 2.0, -1.0]))
    grads = (negate(x.leaky_trace()) * w).sum().backward()
    np.testing.assert_array_equal(grads.get(x).numpy(), [-0.5, -2.0, 1.0])


def test_execute_consumes_the_tape_and_append_moves_the_ops() -> None:
    a, b = GradientTape(), GradientTape()
    log: list[str] = []
    a.add_backward_op(lambda g: log.append("a"))
    b.add_backward_op(lambda g: log.append("b"))
    a.append(b)
    assert len(a) == 2 and len(b) == 2  # b forwards to a: one tape
    a.execute()
    assert log == ["b", "a"]  # newest first
    with pytest.raises(TapeError, match=r"execute: this tape was already run"):
        a.execute()
