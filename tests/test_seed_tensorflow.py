"""Seed 004, TensorFlow's ``GradientTape``, on gradtape's one tape.

The seed's three examples exactly as it writes them (``tf.constant(3.)`` is
``dev.tensor(np.float32(3.0))``), with its numbers, then the rest of the documented
behaviour: watching structures, ``None`` for unconnected sources, ``watched_variables``,
``watch_accessed_variables``, ``output_gradients``, nesting, threads, and the errors.
"""

from __future__ import annotations

import gc
import threading
import weakref
from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, Gradients, GradientTape, ShapeError, TapeError, Tensor, nn

dev = Cpu(seed=0)


def constant(v: float) -> Tensor[tuple[()], Any]:
    """``tf.constant(v)``: a float32 scalar."""
    return dev.tensor(np.float32(v))


def value(t: Any) -> float:
    assert isinstance(t, Tensor)
    return t.item()


# ----- the seed's examples --------------------------------------------------------------------


def test_seed_first_example() -> None:
    x = constant(3.0)
    with GradientTape() as g:
        g.watch(x)
        y = x * x
    grad = g.gradient(y, [x])[0]  # Will compute to 6.0
    assert value(grad) == 6.0
    assert grad.dtype == np.float32 and grad.shape == ()


def test_seed_nested_example_first_order() -> None:
    """The nested example: the inner tape's dy/dx is 6.0; the outer tape, which never called
    watch, recorded the same ops (watch marks x on every active tape) and gives 6.0 for y.
    (The outer tape's second derivative is the higher-order issue's.)"""
    x = constant(3.0)
    with GradientTape(persistent=True) as g:
        with GradientTape() as gg:
            gg.watch(x)
            y = x * x
        dy_dx = gg.gradient(y, [x])[0]  # Will compute to 6.0
    assert value(dy_dx) == 6.0
    assert value(g.gradient(y, [x])[0]) == 6.0
    assert [t.id for t in g.watched_variables()] == [x.id]


def test_seed_persistent_example() -> None:
    """The seed's persistent example (its comments swap the two names: z = x**4 gives
    4 x**3 = 108 at x = 3, y = x**2 gives 6)."""
    x = constant(3.0)
    with GradientTape(persistent=True) as g:
        g.watch(x)
        y = x * x
        z = y * y
    dz_dx = g.gradient(z, [x])[0]
    dy_dx = g.gradient(y, [x])[0]
    assert value(dz_dx) == 108.0
    assert value(dy_dx) == 6.0
    ref = weakref.ref(g)
    del g  # Drop the reference to the tape
    gc.collect()
    assert ref() is None


def test_non_persistent_second_gradient_raises() -> None:
    x = constant(3.0)
    with GradientTape() as g:
        g.watch(x)
        y = x * x
    g.gradient(y, [x])
    with pytest.raises(TapeError, match=r"already used by gradient\(\).*persistent=True"):
        g.gradient(y, [x])
    with pytest.raises(RuntimeError):  # TensorFlow's exception type
        g.gradient(y, [x])


def test_gradient_inside_own_context_raises_unless_persistent() -> None:
    x = constant(3.0)
    with GradientTape() as g:
        g.watch(x)
        y = x * x
        with pytest.raises(TapeError, match=r"inside the non-persistent tape's own with block"):
            g.gradient(y, x)
    assert value(g.gradient(y, x)) == 6.0
    with GradientTape(persistent=True) as p:
        p.watch(x)
        y = x * x
        assert value(p.gradient(y, x)) == 6.0


# ----- structures, unconnected sources, watched variables ------------------------------------


def test_sources_structure_comes_back() -> None:
    a, b, c = constant(1.0), constant(2.0), constant(5.0)
    with GradientTape() as g:
        g.watch({"a": a, "rest": (b, [c])})
        y = a * b + b * 3.0
    out = g.gradient(y, {"a": a, "rest": (b, [c])})
    assert value(out["a"]) == 2.0
    assert value(out["rest"][0]) == 4.0
    assert out["rest"][1] == [None]  # c is watched but unconnected
    assert isinstance(out["rest"], tuple)


def test_unconnected_gradients_zero() -> None:
    a, c = constant(1.0), constant(5.0)
    with GradientTape() as g:
        g.watch([a, c])
        y = a * 2.0
    ga, gc_ = g.gradient(y, [a, c], unconnected_gradients="zero")
    assert value(ga) == 2.0 and value(gc_) == 0.0


def test_module_parameters_are_watched_automatically() -> None:
    lin = nn.Linear(3, 2, dev=dev)
    x = dev.randn((4, 3))
    with GradientTape() as g:
        loss = lin(x).sum()
    gw, gb = g.gradient(loss, [lin.weight, lin.bias])
    np.testing.assert_allclose(gw.numpy(), np.tile(x.numpy().sum(axis=0), (2, 1)), rtol=1e-6)
    np.testing.assert_array_equal(gb.numpy(), [4.0, 4.0])
    assert [t.id for t in g.watched_variables()] == [lin.weight.id, lin.bias.id]  # type: ignore[union-attr]


def test_watch_accessed_variables_false() -> None:
    lin = nn.Linear(3, 2, dev=dev)
    x = dev.randn((4, 3))
    with GradientTape(watch_accessed_variables=False) as g:
        loss = lin(x).sum()
    assert g.gradient(loss, [lin.weight]) == [None]
    assert g.watched_variables() == ()
    with GradientTape(watch_accessed_variables=False) as g:
        g.watch(lin.weight)
        loss = lin(x).sum()
    gw, gb = g.gradient(loss, [lin.weight, lin.bias])
    assert gw is not None and gb is None


def test_output_gradients_seed_a_non_scalar_target() -> None:
    x = dev.tensor(np.array([1.0, 2.0, 3.0]))
    with GradientTape(persistent=True) as g:
        g.watch(x)
        y = x * x
    np.testing.assert_array_equal(g.gradient(y, x).numpy(), [2.0, 4.0, 6.0])  # ones: d sum(y)
    w = np.array([1.0, 0.0, -1.0])
    np.testing.assert_array_equal(g.gradient(y, x, output_gradients=w).numpy(), [2.0, 0.0, -6.0])
    np.testing.assert_array_equal(g.gradient([y, x * 1.0], x).numpy(), [2.0, 4.0, 6.0])  # x*1.0: outside the block
    bad = r"output_gradients\[0\] has shape \(2,\), the tensor it seeds has shape \(3,\)"
    with pytest.raises(ShapeError, match=bad):
        g.gradient(y, x, output_gradients=np.ones(2))


def test_ops_after_the_block_are_not_recorded() -> None:
    x = constant(3.0)
    with GradientTape(persistent=True) as g:
        g.watch(x)
        y = x * x
    z = y * 2.0
    assert g.gradient(z, x) is None
    assert value(g.gradient(y, x)) == 6.0
    assert not z.requires_grad


def test_intermediate_as_source() -> None:
    x = constant(3.0)
    with GradientTape() as g:
        g.watch(x)
        y = x * x
        z = y * y
    gy, gx = g.gradient(z, [y, x])
    assert value(gy) == 18.0 and value(gx) == 108.0


# ----- the dfdx front end on the same tape, stores and ids -------------------------------------


def test_context_tape_and_trace_on_the_same_forward() -> None:
    """Inside a context, a dfdx-traced input still backpropagates into its store; the context
    tape gives the same gradients for the same ids."""
    lin = nn.Linear(3, 2, dev=dev)
    x = dev.randn((4, 3))
    grads = lin.alloc_grads()
    with GradientTape() as g:
        loss = lin(x.trace(grads)).sum()
    gw = g.gradient(loss, lin.weight)
    back = loss.backward()
    assert back is grads
    np.testing.assert_allclose(grads.get(lin.weight).numpy(), gw.numpy(), rtol=1e-6)


def test_nested_tapes_each_record_what_they_watch() -> None:
    """An op records on every active tape that watches an input: the inner tape watches b
    only, the outer a and (through the inner's watch) b."""
    a, b = constant(2.0), constant(5.0)
    with GradientTape(persistent=True) as outer:
        outer.watch(a)
        with GradientTape(persistent=True) as inner:
            inner.watch(b)
            y = a * b
            z = a * a
    assert value(outer.gradient(y, a)) == 5.0 and value(outer.gradient(y, b)) == 2.0
    assert inner.gradient(y, a) is None and value(inner.gradient(y, b)) == 2.0
    assert inner.gradient(z, a) is None and value(outer.gradient(z, a)) == 4.0


def test_a_context_records_only_its_own_thread() -> None:
    x = constant(3.0)
    other: list[bool] = []
    with GradientTape() as g:
        g.watch(x)

        def work() -> None:
            other.append((x * x).requires_grad)

        th = threading.Thread(target=work)
        th.start()
        th.join()
        y = x * x
    assert other == [False]
    assert value(g.gradient(y, x)) == 6.0


def test_execute_runs_a_context_tape_dfdx_style() -> None:
    """``execute`` (dfdx) on a context tape fills its store; closures added by hand run too."""
    x = constant(3.0)
    store = Gradients.leaky()
    with GradientTape(store) as g:
        g.watch(x)
        y = x * x
    yid = y.id
    g.add_backward_op(lambda grads: grads._accum(yid, np.ones((), np.float32)))
    assert g.execute() is store
    assert store.get(x).item() == 6.0


# ----- errors ----------------------------------------------------------------------------------


def test_errors_name_the_tape_and_the_object() -> None:
    x = constant(3.0)
    with GradientTape() as g:
        with pytest.raises(TypeError, match=r"GradientTape.watch: tensor\[1\] must be a Tensor .* got int"):
            g.watch([x, 3])
        g.watch(x)
        y = x * x
    with pytest.raises(TypeError, match=r"GradientTape.gradient: target must be a Tensor .* got float"):
        g.gradient(6.0, x)
    with pytest.raises(TypeError, match=r"GradientTape.gradient: sources\['k'\] must be a Tensor .* got str"):
        g.gradient(y, {"k": "x"})
    with pytest.raises(TapeError, match=r"watch: the tape is not recording"):
        g.watch(x)
    g.gradient(y, x)
    with pytest.raises(TapeError, match=r"consumed"):
        with g:
            pass
    with pytest.raises(ValueError, match=r"unconnected_gradients must be 'none' or 'zero'"):
        GradientTape(persistent=True).gradient(y, x, unconnected_gradients="zeros")  # type: ignore[arg-type]
