"""gradtape.capture (issue 30, first step: inference): a module or function called under
no_grad is recorded on its second call and replayed after; every replay must give the eager
call's values bit for bit, and every change a plan cannot cover must fall back to eager (a
guard) or refuse the capture loudly (a RuntimeWarning naming why), never replay a wrong plan."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import gradtape as gt
from gradtape import Tensor, nn
from gradtape.examples.digits import CNN

Array = np.ndarray[Any, Any]


def _nothing() -> Any:
    """A context that checks nothing (the eager runs' counterpart of pytest.warns)."""
    import contextlib

    return contextlib.nullcontext()


def _eager_then_captured(run: Any) -> tuple[Any, Any]:
    """``run(False)`` then ``run(True)``, every warning an error (a refused capture warns)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return run(False), run(True)


def _same_arrays(got: Any, want: Any) -> None:
    """Equal lists of arrays, to the last bit."""
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)


def _mlp(dev: gt.Cpu) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(64, 128, dev=dev), nn.ReLU(), nn.Linear(128, 128, dev=dev), nn.ReLU(), nn.Linear(128, 10, dev=dev)
    )


def _batches(n: int, shape: tuple[int, ...] = (64, 64), seed: int = 0) -> list[Array]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(n)]


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_replays_equal_the_eager_calls_bit_for_bit(model: str) -> None:
    """The digits MLP and CNN in eval mode, 50 batches: call 1 eager, call 2 recorded, 48
    replays, each output equal to the eager model's on the same batch."""
    dev = gt.Cpu(seed=1)
    m: Any = _mlp(dev) if model == "mlp" else CNN(dev)
    m.eval()
    predict = gt.capture(m)
    with gt.no_grad():
        for x in _batches(50):
            want = m(dev.tensor(x)).numpy().copy()
            got = predict(dev.tensor(x))
            assert isinstance(got, Tensor) and not got.requires_grad
            np.testing.assert_array_equal(got.numpy(), want)
    assert (predict.eager_calls, predict.recorded, predict.replays) == (1, 1, 48)
    assert predict.reason is None


def test_results_are_new_tensors_each_call() -> None:
    """A replay writes the plan's buffers; the tensors returned before keep their values."""
    dev = gt.Cpu(seed=2)
    m = _mlp(dev)
    predict = gt.capture(m)
    xs = _batches(4)
    with gt.no_grad():
        outs = [predict(dev.tensor(x)) for x in xs]
        for x, out in zip(xs, outs, strict=True):
            np.testing.assert_array_equal(out.numpy(), m(dev.tensor(x)).numpy())


def test_a_new_shape_dtype_or_argument_value_gets_its_own_plan() -> None:
    """Batch size, dtype and a Python argument are the plan's key: each new key runs eagerly,
    records, then replays its own plan; the old key's plan still replays."""
    dev = gt.Cpu(seed=3)
    m = _mlp(dev)

    def run(x: Tensor[Any, Any], depth: int) -> Tensor[Any, Any]:
        h = x
        for layer in list(m.children())[: 2 * depth + 1]:
            h = layer(h)
        return h

    f = gt.capture(run)
    with gt.no_grad():
        for x in _batches(3) + _batches(3, (16, 64), 1) + _batches(3, seed=2):
            for depth in (0, 1):
                np.testing.assert_array_equal(f(dev.tensor(x), depth).numpy(), run(dev.tensor(x), depth).numpy())
        x64 = dev.tensor(_batches(1)[0].astype(np.float64))
        with pytest.raises(gt.errors.DTypeError):  # float64 input, float32 weights: eager's error, every time
            f(x64, 0)
    assert f.replays == 2 * 4 + 2 * 1  # two keys by batch size and depth each: 4 (64 rows) + 1 (16 rows)


def test_replaced_parameter_arrays_and_module_mode_record_again() -> None:
    """load_state_dict (new arrays) and model.train() invalidate the plan: the next call
    records again; in-place updates of a parameter are read by the replay itself."""
    dev = gt.Cpu(seed=4)
    m = _mlp(dev)
    m.eval()
    predict = gt.capture(m)
    x = dev.tensor(_batches(1)[0])
    with gt.no_grad():
        for _ in range(3):
            predict(x)
        assert predict.replays == 1
        weight = dict(m.named_parameters())["0.weight"]
        weight.mul_(0.5)  # in place, as an optimizer step: replayed as it is
        np.testing.assert_array_equal(predict(x).numpy(), m(x).numpy())
        m.load_state_dict({k: v.numpy() * 2 for k, v in m.state_dict().items()})
        np.testing.assert_array_equal(predict(x).numpy(), m(x).numpy())
        replays, recorded = predict.replays, predict.recorded
        weight.data = weight.data * 3  # a new array: the plan's guard fails, the call records
        np.testing.assert_array_equal(predict(x).numpy(), m(x).numpy())
        assert (predict.replays, predict.recorded) == (replays, recorded + 1)
        m.train()
        np.testing.assert_array_equal(predict(x).numpy(), m(x).numpy())
        assert (predict.replays, predict.recorded) == (replays, recorded + 2)
        np.testing.assert_array_equal(predict(x).numpy(), m(x).numpy())
        assert predict.replays == replays + 1


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("records", "records a tape"),
        ("item", r"reads a tensor's values on the host \(item\(\)"),
        ("masked_select", "indexes a tensor of shape \\(64, 128\\) with a boolean mask"),
        ("derived", r"from host data \(dev.tensor\(...\)\) whose values differ between two calls"),
        ("returns_unreplayable", "returns a tensor of shape \\(64,\\)"),
        ("branch", "runs other kernels on a second recording"),
        ("inplace", "writes a tensor in place"),
        ("custom", r"from host data \(dev.tensor\(...\)\) whose values differ"),
    ],
)
def test_what_cannot_be_replayed_runs_eagerly_with_a_warning(
    case: str, reason: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each refused call warns once, naming the reason, and every call gives the eager values."""
    if case == "returns_unreplayable":  # every op replays or refuses by name now: one stands in
        monkeypatch.setattr(gt.losses, "replayable", lambda *args, **kwargs: None)
    dev = gt.Cpu(seed=5)
    m = _mlp(dev)
    bias = dev.tensor(np.ones(10, np.float32))

    class Double(gt.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x.device.from_numpy(np.tanh(x.data))  # numpy on the data: opaque to a replay

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            raise AssertionError("not called: the test runs under no_grad")

    def fn(x: Tensor[Any, Any]) -> Any:
        if case == "item":
            _ = m(x).sum().item()
        if case == "masked_select":  # a shape that depends on the values: no plan can replay it
            h = m[0](x)
            return m[2](m[1](gt.masked_select(h, h == h).reshape((64, 128))))
        if case == "derived":  # the dfdx seed's dev.tensor(-x.data): host data made from the argument
            return m(x + dev.tensor(-x.data))
        if case == "returns_unreplayable":  # an op that tells the recorder nothing (patched above)
            y = m(x) + bias
            labels = np.arange(64) % 10
            return nn.functional.cross_entropy(y, labels, label_smoothing=0.1, reduction="none")
        if case == "branch":  # a host constant, and Python control flow on the argument's values
            y = m(x + dev.tensor(np.zeros((64, 64), np.float32)))
            return y * 2.0 if float(x.data[0, 0]) > 0 else y + 1.0
        if case == "inplace":
            y = m(x)
            y.mul_(2.0)
            return y
        if case == "custom":
            return Double.apply(m(x))
        return m(x)

    f = gt.capture(fn)
    xs = _batches(4)
    ctx = gt.no_grad() if case != "records" else gt.enable_grad()
    with pytest.warns(RuntimeWarning, match=reason), ctx:
        outs = [f(dev.tensor(x)) for x in xs]
    assert f.replays == 0 and f.reason is not None
    with ctx:
        for x, out in zip(xs, outs, strict=True):
            np.testing.assert_array_equal(out.detach().numpy(), fn(dev.tensor(x)).detach().numpy())
    with warnings.catch_warnings(), ctx:
        warnings.simplefilter("error")  # once per captured function
        f(dev.tensor(xs[0]))


def test_structured_results_and_unhashable_arguments() -> None:
    """A tuple/dict of tensors and numbers comes back in its structure; an unhashable
    argument (a list) runs eagerly with a warning."""
    dev = gt.Cpu(seed=6)
    m = _mlp(dev)

    def fn(x: Tensor[Any, Any]) -> Any:
        h = m[1](m[0](x))
        return {"hidden": h, "out": (m[4](m[3](m[2](h))), 3, None)}

    f = gt.capture(fn)
    with gt.no_grad():
        for x in _batches(3):
            got, want = f(dev.tensor(x)), fn(dev.tensor(x))
            assert got["out"][1:] == (3, None)
            np.testing.assert_array_equal(got["hidden"].numpy(), want["hidden"].numpy())
            np.testing.assert_array_equal(got["out"][0].numpy(), want["out"][0].numpy())
        assert f.replays == 1
        g = gt.capture(lambda xs: m(xs[0]))
        with pytest.warns(RuntimeWarning, match="unhashable"):
            g([dev.tensor(_batches(1)[0])])


def test_numpy_arguments_and_capture_errors() -> None:
    """A numpy batch wrapped inside the function is an input like a tensor; capture() checks
    its arguments."""
    dev = gt.Cpu(seed=7)
    m = _mlp(dev)
    f = gt.capture(lambda a: m(dev.from_numpy(a)))  # shares the array: dev.tensor(a) would copy it
    with gt.no_grad():
        for x in _batches(4):
            np.testing.assert_array_equal(f(x).numpy(), m(dev.tensor(x)).numpy())
    assert f.replays == 2
    copied = gt.capture(lambda a: m(dev.tensor(a)))
    with gt.no_grad(), pytest.warns(RuntimeWarning, match="from host data"):
        for x in _batches(3):
            np.testing.assert_array_equal(copied(x).numpy(), m(dev.tensor(x)).numpy())
    with pytest.raises(TypeError, match="expected a function or a module"):
        gt.capture(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_plans"):
        gt.capture(m, max_plans=0)


def test_readme_example_runs_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    """README's capture example, run as written, prints what its comment says."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", readme, flags=re.S) if "@gradtape.capture" in b]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # replayed, not refused
        exec(compile(block, "README.md", "exec"), {})
    assert capsys.readouterr().out.strip().splitlines() == ["capture(train_step: 8 replays, 1 recorded, 1 eager)", "6"]


def test_returning_an_input_or_a_parameter_and_an_input_that_requires_grad() -> None:
    """An input or a parameter returned as it is comes back as a copy of its current values;
    an input that requires grad is another key than one that does not."""
    dev = gt.Cpu(seed=8)
    m = _mlp(dev)
    weight = dict(m.named_parameters())["4.weight"]

    def fn(x: Tensor[Any, Any]) -> Any:
        return x, weight, m(x)

    f = gt.capture(fn)
    xs = _batches(4)
    with gt.no_grad():
        for i, x in enumerate(xs):
            got = f(dev.tensor(x))
            np.testing.assert_array_equal(got[0].numpy(), x)
            np.testing.assert_array_equal(got[1].numpy(), weight.numpy())
            assert (got[1] is weight) == (i == 0)  # the first call is the eager one: the parameter itself
        weight.mul_(2.0)
        np.testing.assert_array_equal(f(dev.tensor(xs[0]))[1].numpy(), weight.numpy())
    assert f.replays == 3
    with gt.no_grad():
        f(dev.tensor(xs[0], requires_grad=True))
    assert f.replays == 3 and f.eager_calls == 2


# ----- training steps ------------------------------------------------------------------------


def _digits_batches(n: int = 8) -> list[tuple[Array, Array]]:
    rng = np.random.default_rng(9)
    return [(rng.standard_normal((64, 64)).astype(np.float32), rng.integers(0, 10, 64)) for _ in range(n)]


def _torch_step(forward: Any, opt: Any) -> Any:
    """PyTorch's training step over ``forward`` (a model): ``zero_grad``, ``F.cross_entropy``,
    ``loss.backward()``, ``opt.step()``; it returns the loss tensor."""

    def step(x: Tensor[Any, Any], y: Array) -> Tensor[Any, Any]:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(forward(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def _train(model: str, spelling: str, captured: bool, steps: int = 50, adam: bool = False) -> tuple[Any, ...]:
    """``steps`` training steps of the digits MLP or CNN from one seed, in gradtape's spelling
    (a traced batch, the store backward returns, ``opt.step(grads)``, ``zero_grads``) or
    PyTorch's (``zero_grad``, ``loss.backward()``, ``opt.step()``), the step function eager
    or under gradtape.capture: the losses, the parameters after, the captured function."""
    from gradtape import optim
    from gradtape.losses import cross_entropy

    dev = gt.Cpu(seed=10)
    m: Any = _mlp(dev) if model == "mlp" else CNN(dev)
    opt: Any = optim.Adam(m.parameters(), lr=1e-3) if adam else optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
    store = m.alloc_grads()

    def gradtape_step(x: Tensor[Any, Any], y: Array) -> Tensor[Any, Any]:
        loss = cross_entropy(m(x.trace(store)), y)
        grads = loss.backward()
        opt.step(grads)
        m.zero_grads(grads)
        return loss

    step: Any = gradtape_step if spelling == "gradtape" else _torch_step(m, opt)
    f = gt.capture(step) if captured else step
    batches = _digits_batches()
    losses = [f(dev.tensor(x), y).item() for x, y in (batches[i % len(batches)] for i in range(steps))]
    return losses, [p.numpy().copy() for p in m.parameters()], f


@pytest.mark.parametrize("model", ["mlp", "cnn"])
@pytest.mark.parametrize("spelling", ["gradtape", "torch"])
def test_training_steps_replay_bit_for_bit(model: str, spelling: str) -> None:
    """50 SGD-momentum steps of the digits MLP and CNN, eager and captured from the same
    initial weights: every loss and every parameter after equal to the last bit (the replays
    rerun the forward kernels, the recorded backward entries and the optimizer's step, and
    refresh what the backward reads: the CNN's im2col columns and arg-max indices, the
    softmax cross-entropy keeps)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        eager_losses, eager_params, _ = _train(model, spelling, False)
        losses, params, f = _train(model, spelling, True)
    assert losses == eager_losses
    for a, b in zip(params, eager_params, strict=True):
        np.testing.assert_array_equal(a, b)
    assert (f.eager_calls, f.recorded, f.replays) == (1, 1, 48)


def test_adam_and_a_learning_rate_schedule_inside_the_step_replay() -> None:
    """Adam's state and a StepLR stepped inside the captured step are Python the replay reruns
    (an optimizer step and a scheduler step are recorded as calls)."""
    from gradtape import optim

    def run(captured: bool) -> tuple[list[float], list[Array], float]:
        dev = gt.Cpu(seed=11)
        m = _mlp(dev)
        opt = optim.Adam(m.parameters(), lr=1e-2)
        sched = optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)

        def step(x: Tensor[Any, Any], y: Array) -> Tensor[Any, Any]:
            opt.zero_grad()
            loss = nn.functional.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            sched.step()
            return loss

        f: Any = gt.capture(step) if captured else step
        batches = _digits_batches()
        losses = [f(dev.tensor(x), y).item() for x, y in (batches[i % 8] for i in range(20))]
        return losses, [p.numpy().copy() for p in m.parameters()], opt.param_groups[0]["lr"]

    runs = [run(False), run(True)]
    (l0, p0, lr0), (l1, p1, lr1) = runs
    assert l0 == l1 and lr0 == lr1 == 1e-2 * 0.5**4
    for a, b in zip(p0, p1, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_hand_written_closure_replays_when_it_reads_replayed_arrays() -> None:
    """dfdx's spelling of a custom op (split_tape, add_backward_op, mut_and_ref): a closure
    reading the op's input and output tensors replays as it is; one reading an array its
    forward made with numpy is refused, loudly, since a replay would feed it stale values."""
    from gradtape import Gradients, optim
    from gradtape.losses import cross_entropy

    def my_relu(t: Tensor[Any, Any], own_mask: bool) -> Tensor[Any, Any]:
        x, tape = t.split_tape()
        y = x.relu()

        def backward(grads: Gradients) -> None:
            gx, gy = grads.mut_and_ref(x, y)
            gx += gy * (x.data > 0)

        mask = x.data > 0  # numpy in the forward: a replay would not recompute it

        def backward_own(grads: Gradients) -> None:
            gx, gy = grads.mut_and_ref(x, y)
            gx += gy * mask

        tape.add_backward_op(backward_own if own_mask else backward)
        return y.put_tape(tape)

    def run(own_mask: bool, captured: bool) -> tuple[list[float], list[Array], Any]:
        dev = gt.Cpu(seed=12)
        fc1, fc2 = nn.Linear(64, 32, dev=dev), nn.Linear(32, 10, dev=dev)
        params = [*fc1.parameters(), *fc2.parameters()]
        opt = optim.SGD(params, lr=0.1)

        def step(x: Tensor[Any, Any], y: Array) -> Tensor[Any, Any]:
            opt.zero_grad()
            loss = cross_entropy(fc2(my_relu(fc1(x), own_mask)), y)
            loss.backward()
            opt.step()
            return loss

        f: Any = gt.capture(step) if captured else step
        batches = _digits_batches()
        refused = captured and own_mask
        with pytest.warns(RuntimeWarning, match="a hand-written closure's own array") if refused else _nothing():
            losses = [f(dev.tensor(x), y).item() for x, y in (batches[i % 8] for i in range(10))]
        return losses, [p.numpy().copy() for p in params], f

    for own_mask in (False, True):
        runs = [run(own_mask, False), run(own_mask, True)]
        (l0, p0, _), (l1, p1, f) = runs
        assert l0 == l1
        for a, b in zip(p0, p1, strict=True):
            np.testing.assert_array_equal(a, b)
        assert f.replays == (0 if own_mask else 8)


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("float", "returns a Python float, which a replay would return unchanged"),
        ("hook", "tensors with hooks"),
        ("retain", "again \\(retain_graph\\)"),
        ("manual_sgd", r"changes Linear.weight in place outside a recorded call"),
    ],
)
def test_training_steps_that_cannot_be_replayed_run_eagerly(case: str, reason: str) -> None:
    """A float computed in Python from a clip norm (a replay would return it unchanged), a
    tensor hook, a retained graph and a parameter updated by numpy on its ``.data`` are not
    replayed: the step runs eagerly, with one warning naming why, and trains as eagerly."""
    from gradtape import optim

    def run(captured: bool) -> tuple[list[float], Any]:
        dev = gt.Cpu(seed=13)
        m = nn.Sequential(nn.Linear(64, 32, dev=dev), nn.ReLU())
        head = nn.Linear(32, 10, dev=dev)
        params = [*m.parameters(), *head.parameters()]
        opt = optim.SGD(params, lr=0.1)
        if case == "hook":
            params[0].register_hook(lambda g: g)

        def step(x: Tensor[Any, Any], y: Array) -> Any:
            opt.zero_grad()
            loss = nn.functional.cross_entropy(head(m(x)), y)
            grads = loss.backward(retain_graph=case == "retain")
            if case == "float":
                norm = optim.clip_grad_norm_(params, grads, 1.0)
                opt.step()
                return loss, 2.0 * norm
            if case == "manual_sgd":  # the word language model example's update, numpy on .data
                for p in params:
                    assert p.grad is not None
                    p.data -= 0.1 * p.grad.data
                return loss
            opt.step()
            return loss

        f: Any = gt.capture(step) if captured else step
        batches = _digits_batches()
        with pytest.warns(RuntimeWarning, match=reason) if captured else _nothing():
            gt.manual_seed(0)
            results = [f(dev.tensor(x), y) for x, y in (batches[i % 8] for i in range(6))]
        return [r[0].item() if isinstance(r, tuple) else r.item() for r in results], f

    runs = [run(False), run(True)]
    assert runs[1][1].replays == 0
    assert runs[0][0] == runs[1][0]


def test_freezing_a_parameter_records_the_step_again() -> None:
    """A parameter frozen between calls (requires_grad_(False)) gets no gradient and no update
    eagerly; the plan recorded with it trainable must not replay: the call records again."""
    from gradtape import optim

    def run(captured: bool) -> tuple[list[float], list[Array], Any]:
        dev = gt.Cpu(seed=16)
        m = _mlp(dev)
        step = _torch_step(m, optim.SGD(m.parameters(), lr=0.1))
        f: Any = gt.capture(step) if captured else step
        losses = []
        for i, (x, y) in enumerate(_digits_batches() * 2):
            if i == 6:
                dict(m.named_parameters())["0.weight"].requires_grad_(False)
            losses.append(f(dev.tensor(x), y).item())
        return losses, [p.numpy().copy() for p in m.parameters()], f

    (l0, p0, _), (l1, p1, f) = run(False), run(True)
    assert l0 == l1 and f.recorded == 2
    for a, b in zip(p0, p1, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_conv_block_on_onednn_replays_bit_for_bit() -> None:
    """Workload 9's conv block at a size oneDNN runs (the replay writes its output in place)
    next to one the numba + BLAS kernels run (im2col columns refreshed): 12 steps each, eager
    and captured, equal to the last bit."""
    from gradtape import optim
    from gradtape.devices.kernels import conv as kconv

    def run(captured: bool, channels: int, side: int) -> tuple[list[float], list[Array]]:
        dev = gt.Cpu(seed=14)
        m = nn.Sequential(
            nn.Conv2d(3, channels, 3, padding=1, dev=dev),
            nn.ReLU(),
            nn.Conv2d(channels, channels, 3, padding=1, dev=dev),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(channels * (side // 2) ** 2, 10, dev=dev),
        )
        step = _torch_step(m, optim.SGD(m.parameters(), lr=0.01, momentum=0.9))
        f: Any = gt.capture(step) if captured else step
        rng = np.random.default_rng(15)
        batches = [
            (rng.standard_normal((8, 3, side, side)).astype(np.float32), rng.integers(0, 10, 8)) for _ in range(3)
        ]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            losses = [f(dev.tensor(x), y).item() for x, y in (batches[i % 3] for i in range(12))]
        if captured:
            assert f.replays == 10
        return losses, [p.numpy().copy() for p in m.parameters()]

    for channels, side in ((32, 16), (4, 6)):
        eager, captured = run(False, channels, side), run(True, channels, side)
        assert eager[0] == captured[0]
        for a, b in zip(eager[1], captured[1], strict=True):
            np.testing.assert_array_equal(a, b)
    assert kconv.forward.__doc__ is not None and "replay" in kconv.forward.__doc__


def test_residual_blocks_with_scalar_and_broadcast_arithmetic_replay() -> None:
    """A residual MLP written with ``+``, ``-``, ``*``, ``/`` between tensors (same shape and
    broadcast) and with numbers: trained 20 steps and evaluated, eager and captured, equal to
    the last bit (the arithmetic ops replay, their 0-d constants kept by the plan)."""
    from gradtape import optim

    def run(captured: bool) -> tuple[list[float], list[Array], Any, Array]:
        dev = gt.Cpu(seed=17)
        fc1, fc2, head = nn.Linear(64, 32, dev=dev), nn.Linear(32, 32, dev=dev), nn.Linear(32, 10, dev=dev)
        shift = dev.tensor(np.linspace(-1, 1, 32).astype(np.float32))
        params = [*fc1.parameters(), *fc2.parameters(), *head.parameters()]

        def model(x: Tensor[Any, Any]) -> Tensor[Any, Any]:
            h = fc1(x).relu()
            h = h + fc2(h) * 0.5  # same-shape add, scalar mul
            h = (h - shift) / 2.0 + 1.0  # broadcast sub, scalar div and add
            return head(3.0 - h * h)  # rsub, same-shape mul

        step = _torch_step(model, optim.SGD(params, lr=0.05, momentum=0.9))
        f: Any = gt.capture(step) if captured else step
        g: Any = gt.capture(model) if captured else model
        batches = _digits_batches()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            losses = [f(dev.tensor(x), y).item() for x, y in (batches[i % 8] for i in range(20))]
            with gt.no_grad():
                outs = [g(dev.tensor(x)).numpy().copy() for x, _ in batches[:4]]
        return losses, [p.numpy().copy() for p in params], f, outs[-1]

    (l0, p0, _, o0), (l1, p1, f, o1) = run(False), run(True)
    assert l0 == l1 and f.replays == 18
    for a, b in zip(p0, p1, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(o0, o1)


def test_a_regression_with_a_mean_squared_error_replays() -> None:
    """sum and mean replay (here a hand-written MSE, ``((pred - y) * (pred - y)).mean()``, and a
    row-sum feature): 20 Adam steps of a small regression, eager and captured, equal to the
    last bit."""
    from gradtape import optim

    def run(captured: bool) -> tuple[list[float], list[Array], Any]:
        dev = gt.Cpu(seed=18)
        fc1, fc2 = nn.Linear(8, 16, dev=dev), nn.Linear(16, 1, dev=dev)
        params = [*fc1.parameters(), *fc2.parameters()]
        opt = optim.Adam(params, lr=1e-2)

        def step(x: Tensor[Any, Any], y: Tensor[Any, Any]) -> Tensor[Any, Any]:
            opt.zero_grad()
            h = fc1(x).tanh()
            pred = fc2(h) + h.sum(axis=1, keepdims=True) / 16.0
            d = pred - y
            loss = (d * d).mean()
            loss.backward()
            opt.step()
            return loss

        f: Any = gt.capture(step) if captured else step
        rng = np.random.default_rng(19)
        data = [(rng.standard_normal((32, 8)), rng.standard_normal((32, 1))) for _ in range(4)]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            losses = [f(dev.tensor(x, dtype=np.float32), dev.tensor(y, dtype=np.float32)).item() for x, y in data * 5]
        return losses, [p.numpy().copy() for p in params], f

    (l0, p0, _), (l1, p1, f) = run(False), run(True)
    assert l0 == l1 and f.replays == 18
    for a, b in zip(p0, p1, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("clip", ["norm", "value", "store"])
def test_dropout_and_clipping_inside_the_step_replay_bit_for_bit(clip: str) -> None:
    """PyTorch's step with ``nn.Dropout`` and ``clip_grad_norm_`` (or ``clip_grad_value_``, or
    the store form ``optim.clip_grad_norm_``): a replay draws fresh dropout masks from the
    device's generator in the eager order and reruns the clipping on the replayed gradients,
    so 20 captured steps equal 20 eager ones to the last bit, and the clip norm returned from
    the step (a tensor, or the store form's float) is each replay's own."""
    from gradtape import optim

    def run(captured: bool) -> tuple[list[float], list[float], list[Array], Any]:
        dev = gt.Cpu(seed=21)
        m = nn.Sequential(nn.Linear(64, 64, dev=dev), nn.ReLU(), nn.Dropout(0.3), nn.Linear(64, 10, dev=dev))
        opt = optim.Adam(m.parameters(), lr=3e-3)

        def step(x: Tensor[Any, Any], y: Array) -> tuple[Tensor[Any, Any], Any]:
            opt.zero_grad()
            loss = nn.functional.cross_entropy(m(x), y)
            grads = loss.backward()
            norm: Any = None
            if clip == "norm":  # PyTorch's form: the norm as a 0-d tensor
                norm = nn.utils.clip_grad_norm_(m.parameters(), 0.5)
            elif clip == "store":  # the store form: the norm as a Python float
                norm = optim.clip_grad_norm_(m.parameters(), grads, 0.5)
            else:
                nn.utils.clip_grad_value_(m.parameters(), 0.01)
            opt.step()
            return loss, norm

        f: Any = gt.capture(step) if captured else step
        losses, norms = [], []
        for x, y in (b for i in range(20) for b in [_digits_batches()[i % 8]]):
            loss, norm = f(dev.tensor(x), y)
            losses.append(loss.item())
            norms.append(0.0 if norm is None else float(norm))
        return losses, norms, [p.numpy().copy() for p in m.parameters()], f

    eager, captured = _eager_then_captured(run)
    assert captured[3].replays == 18
    assert captured[0] == eager[0] and captured[1] == eager[1]
    assert len(set(eager[1])) > 10 or clip == "value"  # the norms change step by step: none is stale
    _same_arrays(captured[2], eager[2])


def test_dropout_draws_fresh_masks_at_every_replay() -> None:
    """Inference with dropout in training mode: each replay of the same input gives another
    output (a fresh mask from the generator), the ones the eager calls give from the same
    generator state."""

    def run(captured: bool) -> list[Array]:
        dev = gt.Cpu(seed=4)
        m = nn.Sequential(nn.Linear(64, 32, dev=dev), nn.Dropout(0.5))
        f: Any = gt.capture(m) if captured else m
        x = dev.tensor(_batches(1)[0])
        with gt.no_grad():
            return [f(x).numpy().copy() for _ in range(6)]

    eager, captured = run(False), run(True)
    for a, b in zip(eager, captured, strict=True):
        np.testing.assert_array_equal(a, b)
    assert len({a.tobytes() for a in captured[2:]}) == 4  # the replays differ from each other


def _seq_step(model: str, captured: bool, steps: int, checkpoint: bool = False) -> tuple[list[float], list[Array], Any]:
    """``steps`` AdamW steps of the seq example's character model (its spelling: codes made a
    tensor with ``dev.tensor``, ``cross_entropy`` of the flattened logits, ``clip_grad_norm_``
    to 1), on random windows of codes; ``checkpoint``: each block under
    ``gradtape.checkpoint`` (the example's ``--checkpoint``)."""
    from gradtape import optim
    from gradtape.examples.seq import CharMamba, CharTransformer
    from gradtape.losses import cross_entropy

    vocab, length = 23, 24
    dev = gt.Cpu(seed=17)
    net: Any
    if model == "transformer":  # positions from dev.tensor(np.arange(L)) inside forward: a constant
        net = CharTransformer(vocab, length, width=32, heads=4, layers=2, dev=dev, checkpoint=checkpoint)
    else:
        net = CharMamba(vocab, length, width=24, layers=2, dev=dev, checkpoint=checkpoint)
    params = net.parameters()
    opt = optim.AdamW(params, lr=1e-2, betas=(0.9, 0.99), weight_decay=0.01)

    def step(x: Tensor[Any, Any], y: Array) -> Tensor[Any, Any]:
        opt.zero_grad()
        logits = net(x)
        loss = cross_entropy(logits.reshape((-1, vocab)), y.reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        return loss

    f: Any = gt.capture(step) if captured else step
    rng = np.random.default_rng(2)
    losses = []
    for _ in range(steps):
        x, y = rng.integers(0, vocab, (4, length)), rng.integers(0, vocab, (4, length))
        losses.append(f(dev.tensor(x), y).item())
    return losses, [p.numpy().copy() for p in params], f


@pytest.mark.parametrize("model", ["transformer", "mamba"])
def test_the_character_models_train_50_steps_bit_for_bit(model: str) -> None:
    """The seq example's transformer (embeddings, layer norm, fused attention, a positions
    tensor made inside forward) and Mamba (causal depthwise convolution, silu, softplus, the
    selective scan, RMS norm): 50 captured AdamW steps with clipping equal 50 eager ones to the
    last bit. The transformer's step is recorded twice (its positions are host data: the second
    recording checks they are a constant)."""
    (eager_losses, eager_params, _), (losses, params, f) = _eager_then_captured(lambda c: _seq_step(model, c, 50))
    assert losses == eager_losses
    _same_arrays(params, eager_params)
    recorded = 2 if model == "transformer" else 1
    assert (f.eager_calls, f.recorded, f.replays) == (1, recorded, 49 - recorded)


@pytest.mark.parametrize("model", ["transformer", "mamba"])
def test_checkpointed_blocks_replay_bit_for_bit(model: str) -> None:
    """The character models with each block under ``gradtape.checkpoint`` (activations
    recomputed in backward): 12 captured steps equal 12 eager ones to the last bit. A replay
    reruns the checkpoint's backward as recorded; its closure reads the causal mask (a numpy
    array made in forward: a constant once two recordings agree), its outputs' CRC-32s for the
    determinism check and the generators' snapshot, both taken again at each replay."""
    run = lambda c: _seq_step(model, c, 12, checkpoint=True)  # noqa: E731
    (eager_losses, eager_params, _), (losses, params, f) = _eager_then_captured(run)
    assert losses == eager_losses
    _same_arrays(params, eager_params)
    assert f.replays >= 8


def test_dropout_inside_a_checkpoint_replays_fresh_masks_bit_for_bit() -> None:
    """Dropout inside a checkpointed block: the backward's recomputation must draw the masks
    the forward drew. A replay draws fresh ones in the forward and retakes the generators'
    snapshot first, so the recomputation redraws the same: 10 captured steps equal 10 eager
    ones from the same seed, and two replays on one batch give different losses."""
    from gradtape import optim

    def run(captured: bool) -> tuple[list[float], list[Array], Any]:
        dev = gt.Cpu(seed=4)
        block = nn.Sequential(nn.Linear(16, 32, dev=dev), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 16, dev=dev))
        head = nn.Linear(16, 4, dev=dev)
        params = block.parameters() + head.parameters()
        opt = optim.SGD(params, lr=0.05)

        def step(x: Tensor[Any, Any], y: Array) -> Tensor[Any, Any]:
            opt.zero_grad()
            loss = nn.functional.cross_entropy(head(gt.checkpoint(block, x)), y)
            loss.backward()
            opt.step()
            return loss

        f: Any = gt.capture(step) if captured else step
        rng = np.random.default_rng(5)
        batches = [(rng.standard_normal((8, 16)).astype(np.float32), rng.integers(0, 4, 8)) for _ in range(3)]
        losses = [f(dev.tensor(x), y).item() for x, y in (batches[i % 3] for i in range(10))]
        after = [p.numpy().copy() for p in params]
        if captured:
            opt.param_groups[0]["lr"] = 0.0  # two replays on one batch and the same weights
            x, y = batches[0]
            assert f(dev.tensor(x), y).item() != f(dev.tensor(x), y).item()  # fresh masks
        return losses, after, f

    (eager_losses, eager_params, _), (losses, params, f) = _eager_then_captured(run)
    assert losses == eager_losses
    _same_arrays(params, eager_params)
    assert f.replays >= 8


def test_a_constant_is_trusted_only_after_a_call_with_other_arguments() -> None:
    """A tensor made from host data inside the call becomes a constant of the plan only when a
    recording on *other* arguments makes it with the same values: calls that repeat the same
    batch keep recording (eagerly) and never bake an array that could depend on it."""
    dev = gt.Cpu(seed=2)
    m = _mlp(dev)

    def fn(x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        y: Tensor[Any, Any] = m(x + dev.tensor(np.full((64, 64), 0.5, np.float32)))
        return y

    f = gt.capture(fn)
    a, b = (dev.tensor(x) for x in _batches(2))
    with gt.no_grad():
        for _ in range(4):
            np.testing.assert_array_equal(f(a).numpy(), fn(a).numpy())
        assert (f.replays, f.recorded) == (0, 3)
        np.testing.assert_array_equal(f(b).numpy(), fn(b).numpy())  # other values: the constant holds
        assert (f.replays, f.recorded) == (0, 4)
        for x in (a, b, a):
            np.testing.assert_array_equal(f(x).numpy(), fn(x).numpy())
        assert f.replays == 3


def _example_step(example: str, captured: bool, steps: int) -> tuple[list[float], list[Array], Any]:
    """``steps`` training steps of an example's model written as the example's own loop
    writes them (its optimizer, its loss, its spelling), from a seeded device."""
    from gradtape import optim
    from gradtape.losses import nll_loss

    dev = gt.Cpu(seed=31)
    rng = np.random.default_rng(5)
    model: Any
    if example == "mnist":  # PyTorch's MNIST example: dropout, log_softmax, nll_loss, Adadelta
        from gradtape.examples.mnist import Net

        model = Net(dev=dev)
        opt: Any = optim.Adadelta(model.parameters(), lr=1.0)

        def mnist_step(data: Tensor[Any, Any], target: Tensor[Any, Any]) -> Tensor[Any, Any]:
            opt.zero_grad()
            output = model(data)
            loss = nll_loss(output, target)
            loss.backward()
            opt.step()
            return loss

        step: Any = mnist_step

        def batch() -> tuple[Any, ...]:
            return dev.tensor(rng.random((16, 1, 8, 8), dtype=np.float32)), dev.tensor(rng.integers(0, 10, 16))

    elif example == "nanogpt":  # dropout, tied embeddings, positions from arange, clipping, AdamW groups
        from gradtape.examples.nanogpt import GPT, GPTConfig

        model = GPT(
            GPTConfig(block_size=16, vocab_size=30, n_layer=2, n_head=2, n_embd=32, dropout=0.1), dev=dev, verbose=False
        )
        opt = model.configure_optimizers(0.1, 1e-3, (0.9, 0.95), "cpu")

        def gpt_step(x: Tensor[Any, Any], y: Tensor[Any, Any]) -> Any:
            _, loss = model(x, y)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            return loss

        step = gpt_step

        def batch() -> tuple[Any, ...]:
            return dev.tensor(rng.integers(0, 30, (4, 16))), dev.tensor(rng.integers(0, 30, (4, 16)))

    else:  # minDiffusion: random timesteps and noise drawn inside forward, group norm, transposed convs, cat
        from gradtape.examples import mindiffusion as md

        model = md.DDPM(md.NaiveUnet(1, 1, n_feat=16, dev=dev), (1e-4, 0.02), 50, dev=dev)
        opt = optim.Adam(model.parameters(), lr=2e-4)

        def ddpm_step(x: Tensor[Any, Any]) -> Tensor[Any, Any]:
            opt.zero_grad()
            loss: Tensor[Any, Any] = model(x)
            loss.backward()
            opt.step()
            return loss

        step = ddpm_step

        def batch() -> tuple[Any, ...]:
            return (dev.tensor(rng.random((8, 1, 16, 16), dtype=np.float32)),)

    f: Any = gt.capture(step) if captured else step
    losses = [f(*batch()).item() for _ in range(steps)]
    return losses, [p.numpy().copy() for p in model.parameters()], f


@pytest.mark.parametrize("example", ["mnist", "nanogpt", "mindiffusion"])
def test_the_examples_train_bit_for_bit(example: str) -> None:
    """The mnist, nanoGPT and minDiffusion examples' training steps, captured, equal their
    eager runs from the same seed to the last bit over 12 steps: dropout masks, minDiffusion's
    timesteps and noise (drawn inside ``forward``) are fresh at each replay, drawn from the
    device's generator in the eager order."""
    (eager_losses, eager_params, _), (losses, params, f) = _eager_then_captured(lambda c: _example_step(example, c, 12))
    assert losses == eager_losses
    assert len(set(losses)) == len(losses)
    _same_arrays(params, eager_params)
    assert f.replays >= 9


def test_keyword_arguments_in_any_order_replay_into_their_own_buffers() -> None:
    """Tensor keyword arguments given in another order than their names' sort order: each
    replay copies each argument into its own recorded buffer (they were matched by position
    once, swapping equal-shaped inputs silently)."""
    dev = gt.Cpu(seed=3)

    def fn(b: Tensor[Any, Any], a: Tensor[Any, Any]) -> Tensor[Any, Any]:
        out: Tensor[Any, Any] = a * 2.0 - b
        return out

    f = gt.capture(fn)
    with gt.no_grad():
        for x, y in zip(_batches(5, seed=1), _batches(5, seed=2), strict=True):
            got = f(b=dev.tensor(x), a=dev.tensor(y))
            np.testing.assert_array_equal(got.numpy(), fn(b=dev.tensor(x), a=dev.tensor(y)).numpy())
    assert f.replays == 3


def test_batch_norm_running_statistics_update_at_every_replay() -> None:
    """A CNN with BatchNorm2d trained 10 captured steps: the running mean and variance and
    ``num_batches_tracked`` equal the eager run's to the last bit (the update is a recorded
    call; once it was numpy on the buffers, skipped by every replay), and the model in eval
    mode, captured, replays the eager eval outputs (the running statistics read in gradtape
    ops at each replay)."""
    from gradtape import optim

    def run(captured: bool) -> tuple[list[float], list[Array], Any, Any]:
        dev = gt.Cpu(seed=8)
        m = nn.Sequential(
            nn.Conv2d(3, 8, 3, dev=dev),
            nn.BatchNorm2d(8, dev=dev),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(288, 10, dev=dev),
        )
        step = _torch_step(m, optim.SGD(m.parameters(), lr=0.05, momentum=0.9))
        f: Any = gt.capture(step) if captured else step
        rng = np.random.default_rng(4)
        batches = [(rng.standard_normal((8, 3, 8, 8)).astype(np.float32), rng.integers(0, 10, 8)) for _ in range(10)]
        losses = [f(dev.tensor(x), y).item() for x, y in batches]
        bn: Any = m[1]
        stats = [bn.running_mean.numpy().copy(), bn.running_var.numpy().copy(), bn.num_batches_tracked.numpy().copy()]
        m.eval()
        predict: Any = gt.capture(m) if captured else m
        with gt.no_grad():
            evals = [predict(dev.tensor(x)).numpy().copy() for x, _ in batches[:5]]
        return losses, stats, evals, (f, predict)

    eager, captured = _eager_then_captured(run)
    assert captured[0] == eager[0]
    _same_arrays(captured[1], eager[1])
    assert int(captured[1][2]) == 10
    _same_arrays(captured[2], eager[2])
    f, predict = captured[3]
    assert f.replays == 8 and predict.replays == 3


def test_a_module_writing_its_buffer_with_numpy_is_refused() -> None:
    """A module whose forward updates a buffer through numpy on ``.data`` (a replay would not
    rerun it) refuses the capture with a warning naming the buffer, and runs eagerly."""

    class Counting(nn.Module):
        seen: Tensor[Any, Any]

        def __init__(self, dev: gt.Cpu) -> None:
            super().__init__()
            self.lin = nn.Linear(64, 10, dev=dev)
            self.register_buffer("seen", dev.zeros((64,)))

        def forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
            self.seen.data[...] += x.data.sum(axis=0)
            out: Tensor[Any, Any] = self.lin(x)
            return out

    dev = gt.Cpu(seed=1)
    m = Counting(dev)
    f = gt.capture(m)
    with pytest.warns(RuntimeWarning, match=r"changes Counting.seen in place"), gt.no_grad():
        for x in _batches(4):
            f(dev.tensor(x))
    assert f.replays == 0
    np.testing.assert_allclose(m.seen.numpy(), sum(x.sum(axis=0) for x in _batches(4)), rtol=1e-5)


@pytest.mark.parametrize("kind", ["lstm", "lstm_dropout", "gru_bidirectional"])
def test_recurrent_layers_train_bit_for_bit(kind: str) -> None:
    """A 2-layer LSTM (with inter-layer dropout too, and a bidirectional GRU) with a linear
    head, 10 captured Adam steps from the same weights as 10 eager ones: equal to the last
    bit. A replay makes the recurrent kernels' stack anew (it copies the transposed weights the
    optimizer has just changed), draws the dropout masks again from the device's generator, and
    the recorded backward runs that stack."""
    from gradtape import optim

    def run(captured: bool) -> tuple[list[float], list[Array], Any]:
        dev = gt.Cpu(seed=6)
        if kind.startswith("lstm"):
            p = 0.3 if kind == "lstm_dropout" else 0.0
            rnn: Any = nn.LSTM(12, 16, num_layers=2, batch_first=True, dropout=p, dev=dev)
        else:
            rnn = nn.GRU(12, 16, batch_first=True, bidirectional=True, dev=dev)
        head = nn.Linear(16 if kind.startswith("lstm") else 32, 5, dev=dev)
        params = [*rnn.parameters(), *head.parameters()]
        opt = optim.Adam(params, lr=1e-2)

        def step(x: Tensor[Any, Any], y: Array) -> Tensor[Any, Any]:
            opt.zero_grad()
            out, _ = rnn(x)
            loss = nn.functional.cross_entropy(head(out[:, -1]), y)
            loss.backward()
            opt.step()
            return loss

        f: Any = gt.capture(step) if captured else step
        rng = np.random.default_rng(3)
        losses = [
            f(dev.tensor(rng.standard_normal((6, 7, 12)).astype(np.float32)), rng.integers(0, 5, 6)).item()
            for _ in range(10)
        ]
        return losses, [p.numpy().copy() for p in params], f

    eager, captured = _eager_then_captured(run)
    assert captured[0] == eager[0]
    _same_arrays(captured[1], eager[1])
    assert captured[2].replays == 8


@pytest.mark.parametrize("op", ["gather", "torch_gather", "index_select", "getitem", "embedding", "where"])
def test_index_and_mask_arguments_are_read_at_every_replay(op: str) -> None:
    """Ops whose indices or masks are arguments of the captured function (negative indices
    too, which gather wraps): every replay uses the call's own indices, in the forward and in
    the gradient, as the eager calls do."""
    from gradtape import optim

    rng = np.random.default_rng(12)
    dev = gt.Cpu(seed=12)
    w = dev.tensor(rng.standard_normal((6, 5)), requires_grad=True)
    opt = optim.SGD([w], lr=0.0)

    def fn(idx: Tensor[Any, Any]) -> Tensor[Any, Any]:
        opt.zero_grad()
        if op == "gather":
            y = gt.ops.gather(w, idx, 0)
        elif op == "torch_gather":  # torch.gather(input, dim, index): take_along_axis
            y = gt.gather(w, 1, idx)
        elif op == "index_select":
            y = gt.index_select(w, 0, idx)
        elif op == "getitem":
            y = w[idx, 1:]
        elif op == "embedding":
            y = nn.functional.embedding(idx, w)
        else:
            y = gt.where(idx, w, w * 2.0)
        (y * y).sum().backward()
        return y

    f = gt.capture(fn)
    for _ in range(6):
        if op == "where":
            idx = dev.tensor(rng.standard_normal((6, 5)) > 0)
        elif op == "torch_gather":
            idx = dev.tensor(rng.integers(0, 5, (6, 3)))
        else:
            idx = dev.tensor(rng.integers(-6 if op == "gather" else 0, 6, 7))
        got = f(idx).numpy()
        assert w.grad is not None
        g_got = w.grad.numpy().copy()
        want = fn(idx).numpy()
        np.testing.assert_array_equal(got, want)
        assert w.grad is not None
        np.testing.assert_array_equal(g_got, w.grad.numpy())
    assert f.replays == 4


@pytest.mark.parametrize("spelling", ["tensorflow", "torch"])
def test_functional_gradients_replay(spelling: str) -> None:
    """TensorFlow's ``tape.gradient(y, [x, w])`` and PyTorch's ``torch.autograd.grad(y, [x,
    w])`` (a pass into a separate store, gradients returned as new tensors) replay: each call's
    gradients are the eager call's, bit for bit."""
    dev = gt.Cpu(seed=0)
    rng = np.random.default_rng(0)
    w = dev.tensor(rng.standard_normal((4, 3)).astype(np.float32), requires_grad=True)

    def step(x: Tensor[Any, Any]) -> Any:
        if spelling == "tensorflow":
            with gt.GradientTape() as g:
                g.watch(x)
                y = ((x @ w).tanh() ** 2).sum()
            return g.gradient(y, [x, w])
        y = ((x @ w).tanh() ** 2).sum()
        return gt.autograd.grad(y, [x, w])

    f = gt.capture(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(5):
            x = dev.tensor(rng.standard_normal((5, 4)).astype(np.float32), requires_grad=spelling == "torch")
            _same_arrays([t.numpy() for t in f(x)], [t.numpy() for t in step(x)])
    assert f.replays == 3


def test_a_replayed_cross_entropy_computes_its_softmax_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The softmax cross-entropy's backward overwrites the forward's softmax with the
    gradient. A replay refreshes that softmax, and its backward must use it, as the eager pass
    does, not compute the softmax a second time (it did: the recorded pass had spent it, so
    every replayed backward recomputed it from the logits). Losses and parameters stay the
    eager run's, bit for bit."""
    from gradtape.devices.kernels import softmax as ks

    eager_losses, eager_params, _ = _train("mlp", "torch", False, steps=6)
    calls: list[int] = []
    forward = ks.cross_entropy_forward

    def counted(x: Array, t: Array, out: Array | None = None) -> Any:
        calls.append(1)
        return forward(x, t, out)

    monkeypatch.setattr(ks, "cross_entropy_forward", counted)
    losses, params, f = _train("mlp", "torch", True, steps=6)
    assert (f.eager_calls, f.recorded, f.replays) == (1, 1, 4)
    assert len(calls) == 6  # one per step: two eager calls, four replays
    assert losses == eager_losses
    _same_arrays(params, eager_params)


def test_one_hot_replays_with_its_range_check_and_refuses_an_inferred_class_count() -> None:
    """``F.one_hot(y, 10)`` replays, and a replay given an index out of range raises
    PyTorch's error as the eager call does (a replay skipping the check would give a row of
    zeros). Without ``num_classes`` the class count, the output's shape, comes from the
    values: the capture is refused, with the reason."""
    dev = gt.Cpu(seed=0)
    rng = np.random.default_rng(0)
    w = dev.tensor(rng.standard_normal((10, 3)).astype(np.float32))

    def encode(y: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return nn.functional.one_hot(y, 10).to(gt.float32) @ w

    f = gt.capture(encode)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(5):
            y = dev.tensor(rng.integers(0, 10, 7))
            np.testing.assert_array_equal(f(y).numpy(), encode(y).numpy())
    assert f.replays == 3
    with pytest.raises(IndexError, match="class index 10 is out of range for 10 classes"):
        f(dev.tensor(np.array([1, 10, 2, 3, 4, 5, 6])))

    g = gt.capture(lambda y: nn.functional.one_hot(y))
    with pytest.warns(RuntimeWarning, match="one_hot without num_classes"):
        for _ in range(3):
            y = dev.tensor(rng.integers(0, 10, 7))
            np.testing.assert_array_equal(g(y).numpy(), nn.functional.one_hot(y).numpy())
    assert g.replays == 0


def _twelve_sgd_steps(
    captured: bool,
    seeds: tuple[int, int],
    loss_of: Callable[[Any, Tensor[Any, Any], Tensor[Any, Any]], Tensor[Any, Any]],
    labels: Callable[[np.random.Generator, int], Array],
    setup: Callable[[gt.Cpu], Any] = lambda dev: dev,
    before: Callable[[Any, int], None] = lambda state, i: None,
) -> tuple[list[float], list[Array], Any]:
    """12 SGD steps (momentum 0.9) of the digits MLP in PyTorch's spelling, the loss
    ``loss_of(state, logits, y)`` with ``state = setup(dev)``, captured or not; ``labels(rng,
    i)`` draws step ``i``'s targets and ``before(state, i)`` runs before it. Returns the
    losses, the final parameters and the step function."""
    from gradtape import optim

    dev = gt.Cpu(seed=seeds[0])
    m = _mlp(dev)
    opt = optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
    state = setup(dev)

    def step(x: Tensor[Any, Any], y: Tensor[Any, Any]) -> Tensor[Any, Any]:
        opt.zero_grad()
        out = loss_of(state, m(x), y)
        out.backward()
        opt.step()
        return out

    f: Any = gt.capture(step) if captured else step
    rng = np.random.default_rng(seeds[1])
    losses = []
    for i in range(12):
        before(state, i)
        y = labels(rng, i)
        losses.append(f(dev.tensor(rng.standard_normal((64, 64)).astype(np.float32)), dev.tensor(y)).item())
    return losses, [p.numpy().copy() for p in m.parameters()], f


@pytest.mark.parametrize("loss", ["ignore_index", "label_smoothing", "none"])
def test_cross_entropy_with_padding_smoothing_or_per_sample_losses_replays(loss: str) -> None:
    """PyTorch's ``F.cross_entropy(logits, y, ignore_index=-100)`` with padded targets (a
    different number ignored in each batch, so the mean's divisor changes at every step),
    ``label_smoothing=0.1``, and ``reduction="none"`` summed by the caller: 12 captured SGD
    steps equal 12 eager ones to the last bit."""

    def loss_of(dev: Any, logits: Tensor[Any, Any], y: Tensor[Any, Any]) -> Tensor[Any, Any]:
        if loss == "ignore_index":
            return nn.functional.cross_entropy(logits, y, ignore_index=-100)
        if loss == "label_smoothing":
            return nn.functional.cross_entropy(logits, y, label_smoothing=0.1)
        return nn.functional.cross_entropy(logits, y, reduction="none").sum() / 64.0

    def labels(rng: np.random.Generator, i: int) -> Array:
        y = rng.integers(0, 10, 64)
        if loss == "ignore_index":
            y[rng.random(64) < 0.1 + 0.05 * (i % 4)] = -100  # padding: another count each step
        return y

    def run(captured: bool) -> tuple[list[float], list[Array], Any]:
        return _twelve_sgd_steps(captured, (6, 8), loss_of, labels)

    (eager_losses, eager_params, _), (losses, params, f) = _eager_then_captured(run)
    assert losses == eager_losses
    _same_arrays(params, eager_params)
    assert f.replays >= 9


@pytest.mark.parametrize("kind", ["tensor", "float64 array", "list"])
@pytest.mark.parametrize(
    "loss", ["cross_entropy", "nll_loss", "cross_entropy smoothed", "binary_cross_entropy", "with_logits"]
)
def test_class_weighted_losses_replay_and_read_the_weight_as_it_is(loss: str, kind: str) -> None:
    """PyTorch's class-weighted losses for imbalanced data (``F.cross_entropy(logits, y,
    weight=w)``, ``F.nll_loss(F.log_softmax(logits), y, weight=w)``, with label smoothing and
    padding, ``F.binary_cross_entropy(p, t, weight=w)``, ``binary_cross_entropy_with_logits``
    with ``weight=w, pos_weight=w``), the weights a tensor made before the
    step, a float64 numpy array (converted to float32 at each call) or a list: 12 captured SGD
    steps equal 12 eager ones to the last bit, and a weight the caller changes in place after
    step 6 is read by the replays as the eager steps read it."""
    base = [0.5 + 0.1 * c for c in range(10)]
    F = nn.functional

    def setup(dev: gt.Cpu) -> tuple[gt.Cpu, Any]:
        w = {"tensor": dev.tensor(np.array(base, np.float32)), "float64 array": np.array(base), "list": list(base)}
        return dev, w[kind]

    def loss_of(state: Any, logits: Tensor[Any, Any], y: Tensor[Any, Any]) -> Tensor[Any, Any]:
        dev, w = state
        if loss == "cross_entropy":
            return F.cross_entropy(logits, y, weight=w)
        if loss == "nll_loss":
            return F.nll_loss(F.log_softmax(logits, dim=1), y, weight=w)
        if loss == "cross_entropy smoothed":
            return F.cross_entropy(logits, y, weight=w, ignore_index=-100, label_smoothing=0.1)
        one_hot = (y.reshape((64, 1)) == dev.arange(10)).float()  # one probability per class, weighted
        if loss == "with_logits":  # the weight as both PyTorch's weight and pos_weight
            return F.binary_cross_entropy_with_logits(logits, one_hot, weight=w, pos_weight=w)
        return F.binary_cross_entropy(logits.sigmoid(), one_hot, weight=w)

    def labels(rng: np.random.Generator, i: int) -> Array:
        y = rng.integers(0, 10, 64)
        y[rng.random(64) < 0.1] = -100 if loss == "cross_entropy smoothed" else y[0]
        return y

    def before(state: Any, i: int) -> None:
        if i == 6 and kind != "list":  # the caller changes its weights in place (not all alike:
            w = state[1]  # the weighted mean divides a common factor out)
            (w.data if kind == "tensor" else w)[::2] *= 3.0

    def run(captured: bool) -> tuple[list[float], list[Array], Any]:
        return _twelve_sgd_steps(captured, (9, 10), loss_of, labels, setup, before)

    (eager_losses, eager_params, _), (losses, params, f) = _eager_then_captured(run)
    assert losses == eager_losses
    _same_arrays(params, eager_params)
    assert f.replays >= 8, f.reason


@pytest.mark.parametrize("op", ["index_add", "scatter_add"])
def test_scatter_ops_read_new_indices_at_every_replay(op: str) -> None:
    """A message-passing step (PyTorch's ``index_add`` / ``scatter_add`` of edge messages into
    node rows) with another edge list at each call: every replay must scatter at the new
    indices (positions computed again from the index tensor, and checked again), values and
    gradients equal to the eager call's, bit for bit; an index out of range raises at replay
    as it does eagerly."""
    dev = gt.Cpu(seed=0)
    rng = np.random.default_rng(0)
    w = dev.tensor(rng.standard_normal((5, 6)).astype(np.float32), requires_grad=True)

    def step(h: Tensor[Any, Any], src: Tensor[Any, Any], dst: Tensor[Any, Any]) -> Tensor[Any, Any]:
        msg = (h @ w)[src]  # (E, 6) messages from the source nodes
        zeros = gt.zeros((7, 6))
        out = gt.index_add(zeros, 0, dst, msg) if op == "index_add" else gt.scatter_add(zeros, 0, dst, msg)
        (out.tanh() ** 2).sum().backward()
        return out

    def edges() -> tuple[Tensor[Any, Any], Tensor[Any, Any]]:
        dst = rng.integers(0, 7, 9)
        index = dst if op == "index_add" else np.repeat(dst[:, None], 6, 1)
        return dev.tensor(rng.integers(0, 9, 9)), dev.tensor(index)

    f = gt.capture(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(6):
            h = dev.tensor(rng.standard_normal((9, 5)).astype(np.float32))
            src, dst = edges()
            w.grad = None
            got = f(h, src, dst).numpy()
            assert w.grad is not None
            g_got = w.grad.numpy().copy()
            w.grad = None
            want = step(h, src, dst).numpy()
            assert w.grad is not None
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(g_got, w.grad.numpy())
    assert (f.eager_calls, f.recorded, f.replays) == (1, 2, 3)  # gt.zeros inside: host data, recorded twice
    src, dst = edges()
    bad = dst.numpy().copy()
    bad.reshape(-1)[0] = 7
    with pytest.raises(IndexError):
        f(h, src, dev.tensor(bad))
