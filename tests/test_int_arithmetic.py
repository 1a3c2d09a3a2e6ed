"""Integer, bool and mixed arithmetic as a PyTorch user writes it, compared with PyTorch:
each expression is evaluated with ``torch`` and with ``gradtape`` on the same values, and the
result's dtype name and values must agree (or both must raise)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gradtape
from gradtape.errors import DivisionByZeroError, TapeError

torch: Any = pytest.importorskip("torch")

EXPRS = [
    *("a + 1", "a - 1", "a * 2", "1 - a", "2 * a", "1 + a", "a + b", "a - b", "a * b"),
    *("a / 2", "2 / a", "a / b", "a.div(b)", "L.div(a, b)"),
    *("a + 1.5", "a * 2.5", "1.5 - a", "a - 0.5", "a / 2.5"),
    *("a + f", "f + a", "a * f", "f * a", "a - f", "f - a", "a / f", "f / a"),
    *("a // 2", "a % 3", "a // b", "a % b", "-7 // b", "-7 % b", "a // -3", "a % -3"),
    *("L.remainder(a, b)", "L.fmod(a, b)", "L.floor_divide(a, b)", "L.fmod(a, -3)", "a.remainder(3)"),
    *("a % 2.5", "a // 2.5", "f % b", "f // b", "L.fmod(f, b)"),
    *("a < 3", "a == b", "a >= b", "-a", "L.maximum(a, b)", "a + w", "w * a", "w // b"),
    # PyTorch's integer kernels of abs, pow, square, clamp, sign and the rounding ops
    *("abs(a)", "a.abs()", "a ** 2", "a ** 0", "a ** 3", "a ** -1", "a ** 2.5", "a ** -1.0", "L.pow(a, b)"),
    *("2 ** a", "2.0 ** a", "L.pow(a, w)", "L.pow(a, f)", "L.square(a)", "a.square()"),
    *("L.clamp(a, 0, 6)", "a.clamp(min=1)", "a.clamp(max=3)", "a.clamp(0.5)", "L.clip(a, 1, 5)", "a.clamp(-1, 300)"),
    *("L.sign(a)", "a.sign()", "L.floor(a)", "a.ceil()", "L.round(a)", "a.trunc()", "L.fix(a)", "a.round(decimals=1)"),
    *(
        "L.div(a, 2, rounding_mode='floor')",
        "L.div(a, -3, rounding_mode='trunc')",
        "L.div(a, b, rounding_mode='trunc')",
    ),
    *("L.div(a, b, rounding_mode='floor')", "a.div(2.5, rounding_mode='floor')", "L.div(f, b, rounding_mode='trunc')"),
    *("L.div(a, 0, rounding_mode='floor')", "a.div(b, rounding_mode='round')"),
]

VALUES = {
    "int64": ([5, -7, 0, 9], [2, 3, -4, 1]),
    "int32": ([5, -7, 0, 9], [2, 3, -4, 1]),
    "uint8": ([5, 7, 0, 250], [2, 3, 4, 1]),
    "bool": ([True, False, True, False], [True, True, True, True]),
    "float32": ([5.5, -7.25, 0.0, 9.0], [2.0, 3.0, -4.0, 1.5]),
}


def _eval(lib: Any, expr: str, dtype: str) -> tuple[str, Any]:
    av, bv = VALUES[dtype]
    a = lib.tensor(av, dtype=getattr(lib, dtype))
    b = lib.tensor(bv, dtype=getattr(lib, dtype))
    f = lib.tensor([1.5, 2.0, -0.5, 3.0])  # float32, PyTorch's default
    w = lib.tensor([3, -2, 4, 1], dtype=lib.int32)
    try:
        r = eval(expr, {"L": lib, "a": a, "b": b, "f": f, "w": w})
    except Exception as e:  # both libraries must refuse the same expressions
        return "error", type(e).__name__
    data = r.detach().numpy() if lib is torch else r.numpy()
    return str(r.dtype).removeprefix("torch."), np.asarray(data)


@pytest.mark.parametrize("dtype", list(VALUES))
@pytest.mark.parametrize("expr", EXPRS)
def test_dtype_and_values_follow_pytorch(expr: str, dtype: str) -> None:
    (tdt, tv), (gdt, gv) = _eval(torch, expr, dtype), _eval(gradtape, expr, dtype)
    if tdt == "error" or gdt == "error":
        assert tdt == gdt, f"{expr} on {dtype}: torch {tdt} {tv}, gradtape {gdt} {gv}"
        return
    assert gdt == tdt, f"{expr} on {dtype}: torch gives {tdt}, gradtape {gdt}"
    np.testing.assert_allclose(gv, tv, rtol=1e-6, err_msg=f"{expr} on {dtype}")


def test_integer_floor_and_remainder_with_negative_operands_and_broadcasting() -> None:
    a = np.array([[-7], [7], [-1], [0]])
    b = np.array([3, -3, 2])
    ga, gb, ta, tb = gradtape.tensor(a), gradtape.tensor(b), torch.tensor(a), torch.tensor(b)
    for g, t in [(ga // gb, ta // tb), (ga % gb, ta % tb), (gradtape.fmod(ga, gb), torch.fmod(ta, tb))]:
        assert g.shape == tuple(t.shape) and str(g.dtype) == "int64"
        np.testing.assert_array_equal(g.numpy(), t.numpy())
    np.testing.assert_array_equal((ga % gb).numpy(), a % b)  # Python's sign convention


@pytest.mark.parametrize("expr", ["a // z", "a % z", "L.fmod(a, z)", "a // 0", "a % 0", "L.remainder(a, 0)", "7 // a"])
def test_integer_division_by_zero_raises_as_pytorch(expr: str) -> None:
    z = np.array([1, 0, 2])
    with pytest.raises(RuntimeError):
        eval(expr, {"L": torch, "a": torch.tensor([4, 0, 6]), "z": torch.tensor(z)})
    with pytest.raises(DivisionByZeroError, match="division by zero") as err:
        eval(expr, {"L": gradtape, "a": gradtape.tensor([4, 0, 6]), "z": gradtape.tensor(z)})
    assert isinstance(err.value, RuntimeError) and isinstance(err.value, ZeroDivisionError)
    assert any(op in str(err.value) for op in ("floor_divide", "remainder", "fmod"))


def test_float_division_by_zero_is_inf_or_nan_without_warnings() -> None:
    import warnings

    a, z = [1.0, -1.0, 0.0], [0.0, 0.0, 0.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for expr in ["a // z", "a % z", "L.fmod(a, z)"]:
            g = eval(expr, {"L": gradtape, "a": gradtape.tensor(a), "z": gradtape.tensor(z)})
            t = eval(expr, {"L": torch, "a": torch.tensor(a), "z": torch.tensor(z)})
            np.testing.assert_array_equal(g.numpy(), t.numpy(), err_msg=expr)


def test_gradients_of_remainder_and_fmod_with_a_number_follow_pytorch() -> None:
    x = np.array([5.5, -7.25, 2.0, -0.5])
    for expr in [
        "x % 2.5",
        "L.fmod(x, -2.5)",
        "x % -3",
        "L.remainder(x, L.tensor([2.5, -3.0, 1.5, 2.0], dtype=L.float64))",
    ]:
        g = gradtape.tensor(x, requires_grad=True)
        t = torch.tensor(x, requires_grad=True)
        eval(expr, {"L": gradtape, "x": g}).sum().backward()
        eval(expr, {"L": torch, "x": t}).sum().backward()
        assert g.grad is not None
        np.testing.assert_allclose(g.grad.numpy(), t.grad.numpy(), err_msg=expr)


def test_a_number_modulo_a_tensor_differentiates_in_the_divisor() -> None:
    """``7.0 % x``: PyTorch has no derivative for ``remainder(Scalar, Tensor)``; gradtape gives
    the one ``remainder(Tensor, Tensor)`` has, ``d/dx = -floor(7 / x)``."""
    x = np.array([5.5, -7.25, 2.0, -0.5])
    g = gradtape.tensor(x, requires_grad=True)
    y = 7.0 % g
    np.testing.assert_array_equal(y.numpy(), torch.remainder(7.0, torch.tensor(x)).numpy())
    y.sum().backward()
    assert g.grad is not None
    np.testing.assert_array_equal(g.grad.numpy(), -np.floor(7.0 / x))


def test_floor_divide_is_not_differentiable_as_in_pytorch() -> None:
    x = gradtape.tensor([5.5, -7.25], requires_grad=True)
    y = x // 2.0
    np.testing.assert_array_equal(y.numpy(), [2.0, -4.0])
    with pytest.raises(TapeError, match="floor_divide: not differentiable"):
        y.sum().backward()
    assert (x.detach() // 2.0).requires_grad is False


def test_integer_results_are_untraced_and_bad_operands_name_the_op() -> None:
    idx = gradtape.tensor([1, 2, 3])
    assert not (idx + 1).requires_grad and str((idx + 1).dtype) == "int64"
    with pytest.raises(TypeError, match="remainder"):
        idx % "2"  # type: ignore[operator]
    with pytest.raises(gradtape.errors.DTypeError, match="sub: subtraction with a bool tensor"):
        gradtape.tensor([True]) - 1
