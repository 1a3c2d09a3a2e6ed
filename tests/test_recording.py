"""The recording model (``gradtape.tape.op_tape``): no gradient silently missing.

Each bug of the old rule ("an op whose operands are all untraced records nothing") is
reproduced the way a user met it, only the input traced, and compared with PyTorch in
float64; then the rule's other promises: untraced inference records nothing, a store keeps
its own gradients when tapes merge, ``detach``/``requires_grad``/``split_tape`` on
parameters, and the errors. Every layer's parameters against PyTorch, in all three ways of
taking gradients, are in tests/test_nn_usage.py.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import pytest

import gradtape
from gradtape import Cpu, Gradients, GradientTape, TapeError, Tensor, nn, ops
from gradtape import tape as tp
from gradtape.tape import NONE_TAPE, PARAM, TapeSet

torch: Any = pytest.importorskip("torch")

Array = np.ndarray[Any, Any]
F64 = np.float64


def t64(a: Array) -> Any:
    return torch.from_numpy(np.array(a, dtype=F64)).requires_grad_()


def close(a: Array, b: Any) -> None:
    np.testing.assert_allclose(a, b.detach().numpy() if hasattr(b, "detach") else b, rtol=1e-10, atol=1e-12)


# ----- the bugs of the issue, as users met them ----------------------------------------------


def test_batchnorm_affine_gradients_with_only_the_input_traced() -> None:
    """The issue's snippet: bn's bias got zeros; PyTorch gives the column sums of w."""
    dev = Cpu(seed=0)
    bn = nn.BatchNorm1d(4, dtype=F64, dev=dev)
    x, w = np.random.default_rng(0).standard_normal((2, 8, 4))
    g = (bn(dev.tensor(x).trace(bn.alloc_grads())) * dev.tensor(w)).sum().backward()
    tb = torch.nn.BatchNorm1d(4).double()
    (tb(torch.from_numpy(x)) * torch.from_numpy(w)).sum().backward()
    assert bn.bias is not None  # affine=True (the default)
    close(g.get(bn.bias).numpy(), w.sum(axis=0))
    close(g.get(bn.bias).numpy(), tb.bias.grad)
    assert bn.weight is not None
    close(g.get(bn.weight).numpy(), tb.weight.grad)
    assert np.abs(g.get(bn.weight).numpy()).min() > 0


def test_user_module_parameter_through_an_op_first() -> None:
    """The issue's Scaled module: ``log_scale.exp()`` happens before it meets traced data."""

    class Scaled(nn.Module):
        def __init__(self, dev: Cpu) -> None:
            self.w = dev.randn((4, 3), F64)
            self.log_scale = dev.tensor(np.array([0.1, -0.2, 0.3]))

        def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
            return (x @ self.w) * self.log_scale.exp()

    dev = Cpu(seed=1)
    m = Scaled(dev)
    x = np.random.default_rng(1).standard_normal((5, 4))
    grads = m.alloc_grads()
    g = m(dev.tensor(x).trace(grads)).sum().backward()
    tw, ts, tx = t64(m.w.data), t64(m.log_scale.data), torch.from_numpy(x)
    ((tx @ tw) * ts.exp()).sum().backward()
    close(g.get(m.log_scale).numpy(), ts.grad)
    close(g.get(m.w).numpy(), tw.grad)
    close(grads.get(m.log_scale).numpy(), ts.grad)  # the user's own store object, too


def test_parameter_ops_in_any_order() -> None:
    """A parameter's op may come before or after the input is first used; a parameter may be
    used twice, one path through an op and one directly."""
    dev = Cpu(seed=2)

    class M(nn.Module):
        def __init__(self) -> None:
            self.a = dev.tensor(np.array([0.5, -1.5]))

        def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
            s = (self.a * self.a).sum()  # parameters only, first
            y = x * self.a + s
            return (y * self.a.tanh()).sum()  # a parameter op after the traced data

    m = M()
    x = np.array([[1.0, 2.0], [3.0, -1.0]])
    g = m(dev.tensor(x).trace(m.alloc_grads())).backward()
    ta, tx = t64(m.a.data), torch.from_numpy(x)
    y = tx * ta + (ta * ta).sum()
    (y * ta.tanh()).sum().backward()
    close(g.get(m.a).numpy(), ta.grad)


def test_cross_attention_untraced_key_value() -> None:
    """Only the query traced: the K and V rows of in_proj got zeros (all layers and more
    configurations: tests/test_nn_usage.py)."""
    dev = Cpu(seed=3)
    mha = nn.MultiHeadAttention(4, 2, dev=dev, dtype=F64)
    rng = np.random.default_rng(3)
    q, kv = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4))
    g = mha(dev.tensor(q).trace(mha.alloc_grads()), dev.tensor(kv), dev.tensor(kv)).sum().backward()
    tm = torch.nn.MultiheadAttention(4, 2, batch_first=True).double()
    with torch.no_grad():
        tm.in_proj_weight.copy_(torch.from_numpy(mha.in_proj_weight.data))
        tm.out_proj.weight.copy_(torch.from_numpy(mha.out_proj.weight.data))
    tk = torch.from_numpy(kv)
    tm(torch.from_numpy(q), tk, tk)[0].sum().backward()
    got = g.get(mha.in_proj_weight).numpy()
    close(got, tm.in_proj_weight.grad)
    assert np.abs(got[4:]).max() > 1e-3  # the key and value rows


def test_where_untraced_tensor_operand() -> None:
    """``where(mask, a.leaky_trace(), b)``: b gets its gradient when it requires grad, as
    ``a.leaky_trace() * b`` does; a plain b's gradient is refused (it took no part)."""
    dev = Cpu()
    mask = np.array([True, False, True])
    a, b, w = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0]), np.array([2.0, -1.0, 0.5])
    bt = dev.tensor(b, requires_grad=True)
    g = (ops.where(mask, dev.tensor(a).leaky_trace(), bt) * dev.tensor(w)).sum().backward()
    ta, tb = t64(a), t64(b)
    (torch.where(torch.from_numpy(mask), ta, tb) * torch.from_numpy(w)).sum().backward()
    close(g.get(bt).numpy(), tb.grad)
    assert bt.grad is not None
    close(bt.grad.numpy(), tb.grad)
    plain = dev.tensor(b)
    g = (ops.where(mask, dev.tensor(a).leaky_trace(), plain) * dev.tensor(w)).sum().backward()
    with pytest.raises(TapeError, match=r"does not require grad"):
        g.get(plain)


def test_alloc_grads_store_merged_with_leaky_trace() -> None:
    """A model's store merged (by an op) with a leaky_trace() input: the leaky input's
    gradient is in the store backward returns; the model's store keeps its parameters and
    does not start keeping everything (the leaky input is gone after its next pass)."""
    dev = Cpu(seed=4)
    lin = nn.Linear(3, 2, dev=dev, dtype=F64)
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    grads = lin.alloc_grads()
    yt = dev.tensor(y)
    g = (lin(dev.tensor(x).trace(grads)) * yt.leaky_trace()).sum().backward()
    tl = torch.nn.Linear(3, 2).double()
    with torch.no_grad():
        tl.weight.copy_(torch.from_numpy(lin.weight.data))
        assert lin.bias is not None
        tl.bias.copy_(torch.from_numpy(lin.bias.data))
    ty = t64(y)
    (tl(torch.from_numpy(x)) * ty).sum().backward()
    close(g.get(yt).numpy(), ty.grad)
    close(g.get(lin.weight).numpy(), tl.weight.grad)
    close(grads.get(lin.weight).numpy(), tl.weight.grad)
    lin.zero_grads(g)
    g2 = lin(dev.tensor(x).trace(g)).sum().backward()
    assert yt not in g2 and set(g2.ids()) == {p.id for p in lin.parameters()}


def test_two_leaky_stores_each_get_their_gradients() -> None:
    """Two stores merged by an op: each gets the gradients it keeps."""
    dev = Cpu()
    sa, sb = Gradients.leaky(), Gradients.leaky()
    a, b = dev.tensor(np.array([1.0, 2.0])), dev.tensor(np.array([3.0, 4.0]))
    (a.trace(sa) * b.trace(sb)).sum().backward()
    np.testing.assert_array_equal(sa.get(a).numpy(), [3.0, 4.0])
    np.testing.assert_array_equal(sb.get(b).numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(sb.get(a).numpy(), [3.0, 4.0])


# ----- inference records nothing ---------------------------------------------------------------


def _mlp(dev: Cpu) -> nn.Sequential:
    return nn.Sequential(nn.Linear(4, 8, dev=dev), nn.ReLU(), nn.LayerNorm(8, dev=dev), nn.Linear(8, 2, dev=dev))


def test_no_grad_inference_records_nothing() -> None:
    """Under no_grad (and inference_mode) a model's output carries no tape; outside it, as in
    PyTorch, parameters record (the output requires grad)."""
    dev = Cpu(seed=5)
    m = _mlp(dev)
    with gradtape.no_grad():
        out = m(dev.randn((3, 4)))
        assert out.tape is NONE_TAPE and not out.requires_grad
        bn = nn.BatchNorm1d(8, dev=dev)
        assert bn(dev.randn((3, 8))).tape is NONE_TAPE
    with gradtape.inference_mode():
        assert m(dev.randn((3, 4))).tape is NONE_TAPE
    assert tp.direct
    out = m(dev.randn((3, 4)))
    assert isinstance(out.tape, gradtape.GradientTape) and out.requires_grad


def test_parameters_record_whenever_grad_mode_is_on() -> None:
    """An op on parameters alone records on a new tape of its own (no traced pass needed),
    which joins the traced tape when the result meets traced data; the tape is freed with
    the tensors that hold it."""
    dev = Cpu(seed=6)
    m = _mlp(dev)
    w: Tensor[Any, Any] = m.parameters()[0]
    wt = w.T
    assert isinstance(wt.tape, gradtape.GradientTape) and wt.requires_grad
    ref = weakref.ref(wt.tape)
    del wt
    assert ref() is None  # freed with the tensor (no cycle: no collection needed)
    with gradtape.no_grad():
        assert not w.T.requires_grad
    with GradientTape():
        assert w.T.requires_grad


def test_parameters_are_marked_buffers_are_not() -> None:
    """Module attributes that are parameters carry PARAM; buffers and private tensors do not."""
    dev = Cpu()
    bn = nn.BatchNorm1d(3, dev=dev)
    assert bn.weight is not None and bn.weight.tape is PARAM and bn.weight.requires_grad
    assert bn.running_mean is not None  # typed Optional: None without track_running_stats
    assert bn.running_mean.tape is NONE_TAPE and not bn.running_mean.requires_grad

    class M(nn.Module):
        def __init__(self) -> None:
            self.p = dev.zeros((2,))
            self._cache = dev.zeros((2,))

    m = M()
    assert m.p.tape is PARAM and m._cache.tape is NONE_TAPE
    assert "NoneTape, requires_grad" in repr(m.p)


# ----- detach, requires_grad, split_tape ------------------------------------------------------


def test_detach_stops_the_gradient() -> None:
    """``detach()``: new id, same data, no gradient through it; ``retaped`` keeps the id. The data
    of a recorded tensor's detach() is a read-only view of the same buffer (no copy)."""
    dev = Cpu()
    x = dev.tensor(np.array([1.0, 2.0]))
    xt = x.leaky_trace()
    d = xt.detach()
    assert d.id != x.id and d.tape is NONE_TAPE and not d.requires_grad
    assert np.shares_memory(d.data, x.data) and d.data.shape == x.data.shape and not d.data.flags.writeable
    assert x.detach().data is x.data  # an untraced tensor's detach() shares the array itself
    g = (xt * d).sum().backward()  # d is a constant: d/dx (x * c) = c
    np.testing.assert_array_equal(g.get(x).numpy(), [1.0, 2.0])
    assert xt.retaped().id == x.id


def test_requires_grad_follows_the_seed() -> None:
    """PyTorch's ``requires_grad`` is whether a result carries a tape (seed 003)."""
    dev = Cpu()
    x = dev.tensor(np.array([1.0]))
    assert not x.requires_grad and not (x * 2).requires_grad
    xt = x.leaky_trace()
    assert xt.requires_grad and (xt * 2).requires_grad


def test_hand_written_op_on_a_parameter() -> None:
    """README's ``split_tape``/``add_backward_op``/``put_tape`` op applied to a parameter (not
    to traced data) records on the parameter's own tape, so the parameter gets its gradient."""
    dev = Cpu()

    def square(t: Tensor[Any, Any]) -> Tensor[Any, Any]:
        x, tape = t.split_tape()
        y = x.device.tensor(x.data * x.data, dtype=x.dtype)
        two_x = 2 * x.data

        def backward(grads: Gradients) -> None:
            gx, gy = grads.mut_and_ref(x, y)
            x.device.addmul(gx, two_x, gy)

        tape.add_backward_op(backward)
        return y.put_tape(tape)

    class M(nn.Module):
        def __init__(self) -> None:
            self.w = dev.tensor(np.array([1.0, -3.0]))

        def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
            return (x * square(self.w)).sum()

    m = M()
    g = m(dev.tensor(np.array([2.0, 5.0])).trace(m.alloc_grads())).backward()
    np.testing.assert_array_equal(g.get(m.w).numpy(), [2.0 * 2 * 1.0, 5.0 * 2 * -3.0])
    with gradtape.no_grad():
        assert square(m.w).tape is NONE_TAPE  # inference: nothing records, the closure is dropped


# ----- errors ----------------------------------------------------------------------------------


def test_backward_twice_names_the_call() -> None:
    dev = Cpu()
    loss = (dev.tensor(np.array([1.0])).leaky_trace() * 2).sum()
    loss.backward()
    again = r"backward: this tape was already run by an earlier backward.*retain_graph=True"
    with pytest.raises(TapeError, match=again):
        loss.backward()


def test_backward_of_a_context_only_loss_says_use_gradient() -> None:
    dev = Cpu()
    x = dev.tensor(np.array([3.0]))
    with GradientTape() as tape:
        tape.watch(x)
        y = (x * x).sum()
    assert isinstance(y.tape, TapeSet)
    with pytest.raises(TapeError, match=r"recorded only by GradientTape contexts; call tape.gradient"):
        y.backward()


def test_gradient_tape_rejects_a_bool_store() -> None:
    with pytest.raises(TypeError, match=r"persistent=True"):
        GradientTape(True)  # type: ignore[arg-type]


def test_a_training_loop_keeps_no_tape_alive() -> None:
    """A loop that traces once per step (dfdx) or records on parameters (PyTorch) leaves no
    tape alive behind it: recording keeps no per-thread list."""
    dev = Cpu()
    m = nn.Linear(3, 2, dev=dev)
    grads = m.alloc_grads()
    x = dev.randn((4, 3))
    refs = []
    for _ in range(50):
        out = m(x.trace(grads))
        refs.append(weakref.ref(out.tape))
        grads = out.sum().backward()
        m.zero_grads(grads)
        out2: Any = m(x)  # PyTorch's spelling: parameters record, no input traced
        refs.append(weakref.ref(out2.tape))
        out2.sum().backward()
    del out, out2
    assert not any(r() is not None for r in refs)  # freed as they go: no collection needed
