"""In-place writes between a forward pass and its backward (gradtape.tape.note_writes and the
check in gradtape.engine): an array a recorded op saved and that is then written in place
would silently give the gradient of the new values; backward refuses instead, as PyTorch's
version counter makes its backward raise. Written as the PyTorch user writes the program, with
PyTorch's own behaviour alongside."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, TapeError, nn, no_grad, optim

torch: Any = pytest.importorskip("torch")


def test_writing_an_input_the_product_saved_is_refused_like_pytorch() -> None:
    wt = torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64, requires_grad=True)
    xt = torch.tensor([3.0, 4.0, 5.0], dtype=torch.float64)
    yt = (wt * xt).sum()
    xt[0] = 5.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        yt.backward()

    dev = Cpu()
    w = dev.tensor(np.array([0.0, 1.0, 2.0]), requires_grad=True)
    x = dev.tensor(np.array([3.0, 4.0, 5.0]))
    y = (w * x).sum()
    x[0] = 5.0
    with pytest.raises(TapeError, match=r"backward: an array of shape \(3,\) \(float64\) that the recorded op .*mul"):
        y.backward()
    assert w.grad is None  # nothing partial was deposited


@pytest.mark.parametrize("write", ["fill_", "zero_", "copy_", "setitem"])
def test_every_in_place_method_is_caught(write: str) -> None:
    dev = Cpu()
    w = dev.tensor(np.ones(3), requires_grad=True)
    x = dev.tensor(np.arange(3.0))
    y = (w * x.exp()).sum() + (w * x).sum()
    if write == "fill_":
        x.fill_(2.0)
    elif write == "zero_":
        x.zero_()
    elif write == "copy_":
        x.copy_(np.ones(3))
    else:
        x[1:] = 0.0
    with pytest.raises(TapeError, match="written in place after the op ran"):
        y.backward()


def test_an_optimizer_step_before_the_backward_of_an_older_graph_is_refused_like_pytorch() -> None:
    """The classic GAN mistake: D is updated, then G's loss, computed through the old D, is
    backpropagated; PyTorch raises, gradtape too (it would use the updated weights)."""
    dev = Cpu(seed=0)
    d_net = nn.Linear(3, 1, dev=dev, dtype=np.float64)
    g_net = nn.Linear(2, 3, dev=dev, dtype=np.float64)
    opt_d = optim.SGD(d_net.parameters(), lr=0.1)
    z = dev.randn((4, 2), np.float64)
    errG = d_net(g_net(z)).sum()  # through D before its update
    d_net(g_net(z).detach()).sum().backward()
    opt_d.step()
    with pytest.raises(TapeError, match="optimizer step"):
        errG.backward()

    td, tg = torch.nn.Linear(3, 1).double(), torch.nn.Linear(2, 3).double()
    t_opt = torch.optim.SGD(td.parameters(), lr=0.1)
    tz = torch.randn(4, 2, dtype=torch.float64)
    t_err = td(tg(tz)).sum()
    td(tg(tz).detach()).sum().backward()
    t_opt.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        t_err.backward()


def test_the_usual_loops_are_not_refused_and_equal_pytorch() -> None:
    """Writes after the backward, or before the op that reads the buffer (a reused input
    buffer, a parameter update under no_grad, the optimizer's step): every gradient equals
    PyTorch's."""
    dev = Cpu(seed=1)
    model = nn.Linear(3, 2, dev=dev, dtype=np.float64)
    bias = model.bias
    assert bias is not None
    ref = torch.nn.Linear(3, 2).double()
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(model.weight.numpy().copy()))
        ref.bias.copy_(torch.from_numpy(bias.numpy().copy()))
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    t_opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    batch = dev.tensor(np.zeros((4, 3)))  # one buffer, refilled every step
    t_batch = torch.zeros(4, 3, dtype=torch.float64)
    rng = np.random.default_rng(0)
    for _ in range(4):
        data = rng.standard_normal((4, 3))
        batch.copy_(data)
        t_batch.copy_(torch.from_numpy(data))
        opt.zero_grad()
        t_opt.zero_grad()
        (model(batch) ** 2).mean().backward()
        (ref(t_batch) ** 2).mean().backward()
        opt.step()
        t_opt.step()
        with no_grad():
            bias.fill_(0.5)
        with torch.no_grad():
            ref.bias.fill_(0.5)
    np.testing.assert_allclose(model.weight.numpy(), ref.weight.detach().numpy(), rtol=1e-12)
    assert model.weight.grad is not None
    np.testing.assert_allclose(model.weight.grad.numpy(), ref.weight.grad.numpy(), rtol=1e-12)


def test_a_write_through_a_detached_parameter_is_caught() -> None:
    """``detach()`` of a parameter shares its writeable memory: a write through it before the
    backward is a write into what the op saved."""
    dev = Cpu()
    w = dev.tensor(np.ones(3), requires_grad=True)
    y = (w * w).sum()
    w.detach()[0] = 3.0
    with pytest.raises(TapeError, match="written in place"):
        y.backward()
