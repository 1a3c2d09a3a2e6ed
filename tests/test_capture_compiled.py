"""gradtape.capture's compiled replays (issue 30): after a plan has replayed once, its runs of
items whose kernels a trace takes (products on oneDNN, the bias and ReLU kernels, the fused
backward kernels, cross-entropy's backward, SGD's update) replay as one generated numba
function each, the other items as before. Every compiled replay must give the eager step's
numbers bit for bit, leave the Python objects (gradient stores, ``.grad``, optimizer state) as
the eager step does, and fall back to the item-by-item replay wherever a traced assumption no
longer holds: never a wrong number, never a gradient the caller keeps overwritten later."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import numba
import numba.core.event
import numpy as np
import pytest

import gradtape as gt
from gradtape import Tensor, nn, optim

Array = np.ndarray[Any, Any]


def _mlp(dev: gt.Cpu, act: type[nn.Module] = nn.ReLU) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(64, 128, dev=dev), act(), nn.Linear(128, 128, dev=dev), act(), nn.Linear(128, 10, dev=dev)
    )


def _batches(n: int = 8) -> list[tuple[Array, Array]]:
    rng = np.random.default_rng(3)
    return [(rng.standard_normal((64, 64)).astype(np.float32), rng.integers(0, 10, 64)) for _ in range(n)]


class _Trained(NamedTuple):
    losses: list[float]
    params: list[Array]
    f: Any  # the step function, captured or not
    grads: list[Array]  # the .grad arrays after the last step
    opt: Any


def _train(
    mode: str | None,
    spelling: str = "torch",
    steps: int = 50,
    act: type[nn.Module] = nn.ReLU,
    opt: Callable[[Any], Any] = lambda ps: optim.SGD(ps, lr=0.05, momentum=0.9),
    seed: int = 5,
    head: Callable[[Tensor[Any, Any]], Tensor[Any, Any]] = lambda t: t,
    between: Callable[[int, Any], None] | None = None,
) -> _Trained:
    """``steps`` steps of the digits MLP from one seed: eager (``mode=None``), or under
    ``gradtape.capture`` item by item (``"flat"``) or compiled (``"compiled"``). PyTorch's
    spelling (``zero_grad`` first, ``loss.backward()``, ``opt.step()``) or gradtape's (a traced
    batch, the store, ``opt.step(grads)``, ``zero_grads``); ``opt`` makes the optimizer, ``head``
    is applied to the logits, ``between(i, opt)`` runs before call ``i``."""
    dev = gt.Cpu(seed=seed)
    m = _mlp(dev, act)
    o = opt(m.parameters())
    store = m.alloc_grads()

    def torch_step(x: Tensor[Any, Any], y: Array) -> Tensor[Any, Any]:
        o.zero_grad()
        loss = nn.functional.cross_entropy(head(m(x)), y)
        loss.backward()
        o.step()
        return loss

    def gradtape_step(x: Tensor[Any, Any], y: Array) -> Tensor[Any, Any]:
        loss = nn.functional.cross_entropy(head(m(x.trace(store))), y)
        grads = loss.backward()
        o.step(grads)
        m.zero_grads(grads)
        return loss

    step: Any = torch_step if spelling == "torch" else gradtape_step
    f = step if mode is None else gt.capture(step, compile=mode == "compiled")
    batches = _batches()
    losses = []
    for i in range(steps):
        if between is not None:
            between(i, o)
        x, y = batches[i % len(batches)]
        losses.append(f(dev.tensor(x), y).item())
    grads = [p.grad.numpy().copy() for p in m.parameters() if p.grad is not None]
    return _Trained(losses, [p.numpy().copy() for p in m.parameters()], f, grads, o)


def _same(got: list[Array], want: list[Array]) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("spelling", ["torch", "gradtape"])
def test_a_compiled_training_step_equals_eager_and_flat_bit_for_bit(spelling: str) -> None:
    """50 SGD-momentum steps: eager, captured item by item, captured compiled. Every loss,
    every parameter and the .grad left after the last step agree to the last bit; of the 48
    replays, the first traces, the second checks against a flat replay, the other 46 are
    compiled."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        eager = _train(None, spelling)
        flat = _train("flat", spelling)
        compiled = _train("compiled", spelling)
    f = compiled.f
    assert f.compiled_replays == 46, f.compile_reason
    assert flat.f.compiled_replays == 0
    for got in (flat, compiled):
        assert got.losses == eager.losses
        _same(got.params, eager.params)
        _same(got.grads, eager.grads)


def test_gradients_left_for_the_caller_are_never_overwritten_by_a_later_call() -> None:
    """PyTorch's loop leaves each step's gradients in .grad: a compiled call hands them out
    as copies, so the arrays a caller kept from one step keep that step's values after the
    next steps, as eager gives new arrays at every step."""
    kept: list[tuple[Array, Array]] = []

    def keep(i: int, opt: Any) -> None:  # before call i: the first weight's .grad from call i - 1
        g = opt.params[0].grad
        if i:
            assert g is not None
            kept.append((g.data, g.data.copy()))

    got = _train("compiled", steps=13, seed=1, between=keep)
    assert got.f.compiled_replays == 9
    assert len(kept) == 12
    for held, values in kept:
        np.testing.assert_array_equal(held, values)
    assert len({id(h) for h, _ in kept}) == len(kept)


def test_a_learning_rate_changed_between_calls_is_read() -> None:
    """An optimizer's learning rate set between calls (an epoch's schedule, outside the step):
    the compiled run that traced the old rate replays item by item for that call and is traced
    again; every loss and parameter as eager's."""

    def halve(i: int, opt: Any) -> None:
        if i in (60, 100):
            opt.param_groups[0]["lr"] *= 0.5

    eager = _train(None, steps=130, seed=2, between=halve)
    got = _train("compiled", steps=130, seed=2, between=halve)
    assert got.losses == eager.losses
    _same(got.params, eager.params)
    f = got.f
    # calls 2-59: trace, check, 56 compiled; the rate changed at call 60 (56 calls after the
    # trace): one flat, trace, check, 37 compiled; changed again at call 100, 37 calls after
    # that trace: the optimizer's run replays item by item from then on, the others compiled
    assert f.compiled_replays == 56 + 37 + 29, f.compile_reason
    assert f.compile_reason is not None and "within 50 calls" in f.compile_reason
    assert f.replays == 128


class _ReplayCompiles(numba.core.event.Listener):
    """Counts numba's compiles of generated replay functions (``_replay``)."""

    def __init__(self) -> None:
        self.count = 0

    def on_start(self, event: numba.core.event.Event) -> None:
        fn = getattr(event.data.get("dispatcher"), "py_func", None)
        self.count += getattr(fn, "__name__", None) == "_replay"

    def on_end(self, event: numba.core.event.Event) -> None:
        pass


def test_a_second_capture_of_the_same_step_reuses_its_compiled_replays() -> None:
    """A new capture of the same step (a fresh model and optimizer from the same recipe)
    generates the same replay functions and takes them from the first capture's compile
    (numba compiles nothing again), with eager's numbers; a step that differs only in a
    number the replay bakes in (SGD's learning rate) gets its own, with its own numbers."""
    first = _train("compiled", steps=6, seed=7)
    listener = _ReplayCompiles()
    with numba.core.event.install_listener("numba:compile", listener):
        again = _train("compiled", steps=6, seed=7)
    assert listener.count == 0
    assert again.f.compiled_replays == first.f.compiled_replays == 2
    eager = _train(None, steps=6, seed=7)
    assert again.losses == eager.losses
    _same(again.params, eager.params)

    def faster(ps: Any) -> Any:
        return optim.SGD(ps, lr=0.1, momentum=0.9)

    with numba.core.event.install_listener("numba:compile", listener):
        other = _train("compiled", steps=6, seed=7, opt=faster)
    assert listener.count > 0
    want = _train(None, steps=6, seed=7, opt=faster)
    assert other.f.compiled_replays == 2
    assert other.losses == want.losses
    _same(other.params, want.params)


def test_what_a_trace_cannot_take_stays_python_and_the_rest_compiles() -> None:
    """tanh's forward (numpy's exp) replays as a Python item between the compiled runs, with
    Adam's step compiled after the backward; the numbers are eager's."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        def adam(ps: Any) -> Any:
            return optim.Adam(ps, lr=1e-3)

        eager = _train(None, act=nn.Tanh, opt=adam)
        compiled = _train("compiled", act=nn.Tanh, opt=adam)
    assert compiled.losses == eager.losses
    _same(compiled.params, eager.params)
    assert compiled.f.compiled_replays == 46


@pytest.mark.parametrize("kind", ["adamw", "adam-amsgrad"])
def test_adam_steps_compile_with_their_step_counts_and_bias_corrections(kind: str) -> None:
    """Adam's kernels take a step size that changes at every step: a compiled call advances
    each parameter's step count and computes this step's numbers in Python, as the eager step
    does, and the kernels read them. 40 steps equal eager's bit for bit, the optimizer's
    state_dict (step counts, moments) too."""

    def make(ps: Any) -> Any:
        if kind == "adamw":
            return optim.AdamW(ps, lr=1e-3, weight_decay=0.05)
        return optim.Adam(ps, lr=1e-3, weight_decay=1e-3, amsgrad=True)

    eager = _train(None, steps=40, opt=make, seed=8)
    got = _train("compiled", steps=40, opt=make, seed=8)
    assert got.losses == eager.losses
    _same(got.params, eager.params)
    want, have = eager.opt.state_dict()["state"], got.opt.state_dict()["state"]
    for i, st in want.items():
        assert have[i]["step"] == st["step"] == 40
        for key, value in st.items():
            if key != "step":
                np.testing.assert_array_equal(have[i][key], value)
    assert got.f.compiled_replays == 36, got.f.compile_reason


def test_an_item_computing_outside_its_traced_kernels_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay kernel declared traceable that computes in numpy (here ReLU's forward made so)
    is run compiled without that computation, which would leave the ReLU stale: the check
    against a flat replay catches it, and that run replays item by item, with eager's numbers."""
    from gradtape.devices.kernels import activations

    def numpy_relu(x: Array, out: Array | None = None) -> Array:
        res: Array = np.maximum(x, x.dtype.type(0), out=out)
        return res

    monkeypatch.setattr(activations, "relu", numpy_relu)
    eager = _train(None, steps=12)
    compiled = _train("compiled", steps=12)
    assert compiled.losses == eager.losses
    _same(compiled.params, eager.params)
    f = compiled.f
    # the forward's run (with the ReLUs) replays item by item; the backward's and the step's compile
    assert f.compiled_replays == 8
    assert f.compile_reason is not None and "other values compiled" in f.compile_reason


def test_a_hand_written_backward_closure_runs_as_python() -> None:
    """A step with an op whose backward is a hand-written closure (add_backward_op): its
    backward pass replays as Python (the closure is opaque), the forward runs compiled; eager's
    numbers."""

    def my_relu(t: Tensor[Any, Any]) -> Tensor[Any, Any]:  # dfdx's spelling of a custom op
        x, tape = t.split_tape()
        y = x.relu()

        def backward(grads: gt.Gradients) -> None:
            gx, gy = grads.mut_and_ref(x, y)
            gx += gy * (x.data > 0)

        tape.add_backward_op(backward)
        return y.put_tape(tape)

    def sgd(ps: Any) -> Any:
        return optim.SGD(ps, lr=0.05)

    eager = _train(None, steps=10, opt=sgd, seed=4, head=my_relu)
    got = _train("compiled", steps=10, opt=sgd, seed=4, head=my_relu)
    assert got.losses == eager.losses
    _same(got.params, eager.params)
    f = got.f
    # the optimizer's step reads .grad arrays the Python backward makes anew at each call: the
    # check catches its run, which replays item by item; the forward stays compiled
    assert f.compiled_replays == 6, f.compile_reason
    assert f.compile_reason is not None and "reading arrays a Python item makes anew" in f.compile_reason


def test_compiled_inference_equals_eager() -> None:
    """A module captured under no_grad: its forward replays as one compiled call, which reads
    a C-contiguous batch where the caller holds it and copies one in another layout (every
    other batch here is Fortran-ordered) into its buffer first."""
    dev = gt.Cpu(seed=6)
    m = _mlp(dev)
    f = gt.capture(m)
    xs = [x if i % 2 else np.asfortranarray(x) for i, (x, _) in enumerate(_batches())]
    with gt.no_grad():
        want = [m(Tensor(x, dev)).numpy() for x in xs * 3]
        got = [f(Tensor(x, dev)).numpy() for x in xs * 3]  # Tensor(x, dev) keeps x's layout
    assert not Tensor(xs[0], dev).data.flags.c_contiguous
    _same(got, want)
    assert f.compiled_replays == len(got) - 4


def test_compile_false_keeps_the_item_by_item_replay() -> None:
    eager = _train(None, steps=8)
    flat = _train("flat", steps=8)
    assert flat.losses == eager.losses
    assert flat.f.compiled_replays == 0 and flat.f.compile_reason is None
    with pytest.raises(TypeError, match="compile must be a bool"):
        gt.capture(lambda: None, compile=1)  # type: ignore[arg-type]


def test_zero_grad_clears_a_grad_set_between_calls() -> None:
    """``zero_grad`` clears every ``.grad`` at every compiled call, including one that was
    already ``None`` when the step was traced and that the caller set between calls (a
    parameter the loss does not reach): after the call it is ``None``, as eagerly."""

    def run(mode: str | None) -> tuple[list[bool], Any]:
        spare = nn.Linear(4, 4, dev=gt.Cpu(seed=11))  # in the optimizer, not in the loss
        seen: list[bool] = []

        def make(ps: Any) -> Any:
            return optim.SGD([*ps, *spare.parameters()], lr=0.05)

        def between(i: int, opt: Any) -> None:  # before call i: what call i - 1 left, then set it
            if i:
                seen.append(spare.weight.grad is None)
            if i >= 6:
                spare.weight.grad = gt.Cpu().tensor(np.ones((4, 4), np.float32))

        return seen, _train(mode, steps=17, opt=make, seed=11, between=between).f

    eager, (got, f) = run(None)[0], run("compiled")
    assert got == eager == [True] * 16
    assert f.compiled_replays > 0


@pytest.fixture
def openblas_products(monkeypatch: pytest.MonkeyPatch) -> None:
    """Products on numpy's OpenBLAS, as on a machine whose OpenBLAS runs AVX-512 kernels (an
    Intel Xeon: ``blas.matmul_choice`` keeps OpenBLAS there) or one without oneDNN."""
    from gradtape.devices.kernels import blas

    if not blas._GEMM[np.dtype(np.float32)]:
        pytest.skip("numpy's BLAS is not the scipy-openblas64 its wheels bundle")
    monkeypatch.setattr(blas, "_MATMUL_CHOICE", (False, "OpenBLAS (test)"))


@pytest.mark.usefixtures("openblas_products")
@pytest.mark.parametrize("spelling", ["torch", "gradtape"])
def test_products_on_openblas_compile_too(spelling: str) -> None:
    """Where numpy's OpenBLAS runs the products, a compiled replay calls the same
    ``cblas_sgemm`` numpy's matmul calls (row-major, ``w.T`` read in place as a transposed
    operand, one thread where gradtape's matmul sets one): 46 of 48 replays compiled, every loss,
    parameter and .grad equal to eager's, bit for bit."""
    eager = _train(None, spelling)
    compiled = _train("compiled", spelling)
    assert compiled.f.compiled_replays == 46, compiled.f.compile_reason
    assert compiled.losses == eager.losses
    _same(compiled.params, eager.params)
    _same(compiled.grads, eager.grads)


@pytest.mark.usefixtures("openblas_products")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(2, 3, 9, 16), (4, 8, 128, 16)])
def test_batched_and_broadcast_openblas_products_compile(dtype: type[np.floating[Any]], shape: Any) -> None:
    """Attention-shaped batched products (``q @ k.transpose(-2, -1)``, then ``@ v``), one of
    them broadcasting a weight over the batch, compiled on OpenBLAS in float32 and float64:
    one product per matrix of the batch, as numpy's matmul loop runs them; at the larger shape
    the two attention products run one matrix per numba thread (``blas._gemm_parallel``), in
    the compiled replay too."""
    dev = gt.Cpu(seed=2)
    w = dev.tensor(np.random.default_rng(0).standard_normal((16, 24)).astype(dtype))

    def f(q: Tensor[Any, Any], k: Tensor[Any, Any], v: Tensor[Any, Any]) -> Tensor[Any, Any]:
        s = q @ k.transpose(-2, -1)
        return (s @ v) @ w

    rng = np.random.default_rng(1)
    calls = [[rng.standard_normal(shape).astype(dtype) for _ in range(3)] for _ in range(4)]
    g = gt.capture(f)
    with gt.no_grad():
        for q, k, v in calls * 2:
            want = f(dev.tensor(q), dev.tensor(k), dev.tensor(v)).numpy()
            np.testing.assert_array_equal(g(dev.tensor(q), dev.tensor(k), dev.tensor(v)).numpy(), want)
    assert g.compiled_replays == len(calls) * 2 - 4, g.compile_reason  # eager, recorded, traced, checked


@pytest.mark.usefixtures("openblas_products")
def test_products_numpy_runs_another_way_stay_python() -> None:
    """``x @ x.T`` (numpy's ``syrk``, then a copied triangle) and a matrix-vector product
    (``gemv``) are not traced as ``gemm``: the capture names why and replays them as Python,
    with eager's numbers."""
    dev = gt.Cpu(seed=2)

    def gram(x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return (x @ x.T).relu()

    def matvec(x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return (x @ x[0]).relu()

    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((12, 12)).astype(np.float32) for _ in range(4)]
    for fn, why in ((gram, "syrk"), (matvec, "core dim of 0 or 1")):
        g = gt.capture(fn)
        with gt.no_grad():
            for x in xs:
                np.testing.assert_array_equal(g(dev.tensor(x)).numpy(), fn(dev.tensor(x)).numpy())
        assert g.compiled_replays == 0
        assert g.compile_reason is not None and why in g.compile_reason, g.compile_reason


def test_a_step_the_check_rejects_leaves_the_parameters_as_eager() -> None:
    """The second replay checks each compiled run against the flat items; a run that fails
    (here the optimizer step, whose ``.grad`` arrays a Python backward makes anew at each call)
    must leave nothing of its compiled try. On the checked call the bias's gradient is zero
    (every class picked twice), so the flat step leaves the bias as it was: the check compared
    only arrays the flat items changed, so the compiled try's update of the bias from the
    traced gradients stayed, and every later loss was off (found with ``multi_margin_loss``,
    which picks the target's logit this way)."""
    from gradtape import ops

    def run(mode: str | None) -> tuple[list[float], list[Array]]:
        dev = gt.Cpu(seed=1)
        m = nn.Linear(5, 3, dev=dev, dtype=np.float64)
        o = optim.SGD(m.parameters(), lr=0.1)

        def step(x: Tensor[Any, Any], y: Tensor[Any, Any]) -> Tensor[Any, Any]:
            o.zero_grad()
            out = m(x)
            loss = (out - ops.take_along_axis(out, y.reshape((6, 1)), 1)).sum()
            loss.backward()
            o.step()
            return loss

        f = step if mode is None else gt.capture(step, compile=mode == "compiled")
        rng = np.random.default_rng(0)
        losses = []
        for _ in range(8):
            x, y = dev.tensor(rng.standard_normal((6, 5))), dev.tensor(rng.integers(0, 3, 6))
            losses.append(f(x, y).item())
        return losses, [p.numpy().copy() for p in m.parameters()]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eager, compiled = run(None), run("compiled")
    assert compiled[0] == eager[0]
    _same(compiled[1], eager[1])
