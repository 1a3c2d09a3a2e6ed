"""``Tensor.realize`` (dfdx's ``realize``): a run-time checked change of a tensor's shape type."""

from __future__ import annotations

from typing import Any, NewType
from typing import Literal as L

import numpy as np
import numpy.typing as npt
import pytest

from gradtape import Cpu, Gradients, GradientTape, OwnedTape, Rank2, ShapeError, Tensor
from gradtape.shapes import check_realize, realize

Batch = NewType("Batch", int)


def test_realize_returns_the_same_tensor_with_its_tape() -> None:
    """No copy, no op: same object, id, data and tape; gradients flow as before."""
    dev = Cpu()
    x = dev.randn((4, 3)).trace(Gradients.leaky())
    y = x.realize(tuple[L[4], L[3]])
    assert y is x and y.tape is x.tape and y.data is x.data
    grads = (y * 2.0).sum().backward()
    np.testing.assert_array_equal(grads.get(x).numpy(), np.full((4, 3), 2.0, np.float32))


def test_function_form_and_untraced_tensors() -> None:
    """``realize(x, shape)`` is the method; an untraced float64 tensor stays untraced, same id."""
    dev = Cpu()
    x = dev.randn((2, 5), np.float64)
    y = realize(x, tuple[int, L[5]])
    assert y is x and y.id == x.id and y.tape is x.tape and y.dtype == np.float64
    assert Tensor.realize is realize


def test_realize_in_the_middle_of_a_graph_records_nothing() -> None:
    """A realize between ops adds no backward op: the gradient is that of the same graph
    without it, and the tape holds as many ops."""
    dev = Cpu(seed=1)
    w = dev.randn((3, 2), np.float64)
    xs = dev.randn((4, 3), np.float64)

    def loss(with_realize: bool) -> tuple[npt.NDArray[np.float64], int]:
        grads = Gradients.leaky()
        h: Tensor[Any, OwnedTape] = xs.trace(grads).matmul(w)
        if with_realize:
            h = h.realize(tuple[L[4], int])
        out = h.relu().sum()
        assert isinstance(out.tape, GradientTape)
        n = len(out.tape)
        return out.backward().get(xs).numpy(), n

    (g0, n0), (g1, n1) = loss(False), loss(True)
    np.testing.assert_array_equal(g0, g1)
    assert n0 == n1


@pytest.mark.parametrize(
    "shape",
    [
        tuple[L[4], L[3]],
        tuple[int, L[3]],
        tuple[Batch, int],
        tuple[int, int],
        tuple[int, ...],
        Rank2[L[4], L[3]],  # type: ignore[misc]  # works at run time; mypy wants tuple[...] as a value
    ],
)
def test_matching_shapes_pass(shape: object) -> None:
    check_realize(shape, (4, 3))


def test_scalar_and_vector() -> None:
    check_realize(tuple[()], ())
    check_realize(tuple[L[5]], (5,))
    with pytest.raises(ShapeError, match=r"shape \(\) \(rank 0\) is not \(5,\) \(rank 1\)"):
        check_realize(tuple[L[5]], ())


def test_mismatches_raise_naming_both_shapes() -> None:
    dev = Cpu()
    x = dev.zeros((4, 3))
    with pytest.raises(ShapeError, match=r"dim 1 of shape \(4, 3\) is 3, the type \(4, 5\) wants 5"):
        x.realize(tuple[L[4], L[5]])
    with pytest.raises(ShapeError, match=r"shape \(4, 3\) \(rank 2\) is not \(4, 3, int\) \(rank 3\)"):
        x.realize(tuple[L[4], L[3], int])  # type: ignore[type-var]  # mypy rejects the rank too
    with pytest.raises(ShapeError, match=r"is not \(Batch,\)"):
        x.realize(tuple[Batch])  # type: ignore[type-var]


@pytest.mark.parametrize("shape", [list[int], int, tuple[str, int], tuple[float, ...], "tuple[int]"])
def test_not_a_shape_type_is_a_type_error(shape: object) -> None:
    with pytest.raises(TypeError, match="realize"):
        check_realize(shape, (4, 3))
