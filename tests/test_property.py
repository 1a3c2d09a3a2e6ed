"""Property test: random programs built from gradtape's ops, with intermediates reused,
differentiate like finite differences say they should.

Hypothesis draws a program: inputs of shape (3, 3), then a sequence of steps, each applying
an op to operands picked from everything computed so far (so tensors are reused, tapes merge
and gradients accumulate from several consumers), and a final sum of some of the values.
The ops are smooth where they are used (denominators and logs kept away from 0), so the
float64 tape gradient must match central differences.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradtape import Cpu, Tensor
from gradtape.testing import gradcheck

T = Tensor[Any, Any]

UNARY: list[tuple[str, Callable[[T], T]]] = [
    ("sin", lambda t: t.sin()),
    ("neg", lambda t: -t),
    ("scale", lambda t: t * 0.7),
    ("shift", lambda t: 1.5 - t),
    ("exp_sin", lambda t: t.sin().exp()),
    ("log1p_sq", lambda t: (t * t + 1.0).log()),
    ("recip_soft", lambda t: 1.0 / (t * t + 1.0)),
    ("log_softmax", lambda t: t.log_softmax()),
    ("center", lambda t: t - t.mean()),
    ("row_sum", lambda t: t + t.sum(axis=1, keepdims=True) * 0.1),
]
BINARY: list[tuple[str, Callable[[T, T], T]]] = [
    ("add", lambda a, b: a + b),
    ("sub", lambda a, b: a - b),
    ("mul", lambda a, b: a * b),
    ("div_soft", lambda a, b: a / (b * b + 1.0)),
    ("matmul", lambda a, b: (a @ b) * 0.3),
    ("bias_row", lambda a, b: a + b.mean(axis=0)),
]


@st.composite
def programs(draw: st.DrawFn) -> tuple[int, list[tuple[str, int, int]], list[int]]:
    """(number of inputs, steps as (op name, operand index, operand index), outputs summed)."""
    n_inputs = draw(st.integers(1, 3))
    steps = []
    for k in range(draw(st.integers(1, 8))):
        avail = n_inputs + k
        if draw(st.booleans()):
            name = draw(st.sampled_from([n for n, _ in UNARY]))
        else:
            name = draw(st.sampled_from([n for n, _ in BINARY]))
        steps.append((name, draw(st.integers(0, avail - 1)), draw(st.integers(0, avail - 1))))
    total = n_inputs + len(steps)
    outs = draw(st.lists(st.integers(0, total - 1), min_size=1, max_size=3))
    return n_inputs, steps, outs


def _run(steps: list[tuple[str, int, int]], outs: list[int]) -> Callable[..., T]:
    unary, binary = dict(UNARY), dict(BINARY)

    def program(*inputs: T) -> T:
        vals = list(inputs)
        for name, i, j in steps:
            vals.append(unary[name](vals[i]) if name in unary else binary[name](vals[i], vals[j]))
        result = vals[outs[0]].sum()
        for k in outs[1:]:
            result = result + vals[k].sum() * 0.5
        return result

    return program


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(0, 2**16))
def test_random_programs_match_finite_differences(
    prog: tuple[int, list[tuple[str, int, int]], list[int]], seed: int
) -> None:
    """Every random program's gradients pass gradcheck in float64."""
    n_inputs, steps, outs = prog
    rng = np.random.default_rng(seed)
    dev = Cpu(seed=seed)
    inputs = [dev.tensor(rng.uniform(-1.0, 1.0, size=(3, 3)), dtype=np.float64) for _ in range(n_inputs)]
    fn = _run(steps, outs)
    assert gradcheck(fn, inputs, atol=1e-5, rtol=1e-4) is True
