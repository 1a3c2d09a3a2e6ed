"""Issue 29: large float32 products on oneDNN's matmul primitive where OpenBLAS's kernels are
older than the CPU (:mod:`gradtape.devices.kernels.onednn_matmul`).

The plans are checked directly against float64 products (every layout a model feeds them:
transposed and sliced views, batched and broadcast operands, attention's 4-D heads), and
through gradtape's ops against PyTorch float64: ``linear`` and ``matmul`` values and
gradients, and a transformer layer's training step. The choice rule and its switches are
checked too. Skipped where the oneDNN wheel is not installed.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import gradtape
from gradtape import ops
from gradtape.devices.kernels import blas
from gradtape.devices.kernels import onednn as _od
from gradtape.devices.kernels import onednn_matmul as om

pytestmark = pytest.mark.skipif(not _od.available(), reason=f"oneDNN not available: {_od.info()}")

torch: Any = pytest.importorskip("torch")

R = np.random.default_rng(29)


def f32(*shape: int) -> np.ndarray[Any, Any]:
    return R.standard_normal(shape).astype(np.float32)


def _forcing(monkeypatch: pytest.MonkeyPatch, min_macs: int) -> None:
    """oneDNN takes every eligible product from one multiply-add, whatever the machine's rule
    says: on its threads from ``min_macs``, on one-thread plans below."""
    monkeypatch.setattr(blas, "_MATMUL_CHOICE", (True, "forced by the test"))
    monkeypatch.setattr(om, "MIN_MACS", min_macs)
    monkeypatch.setattr(om, "SERIAL_MIN_MACS", 1)


@pytest.fixture
def forced(monkeypatch: pytest.MonkeyPatch) -> None:
    """oneDNN takes every eligible product on its multithreaded plans."""
    _forcing(monkeypatch, 1)


@pytest.fixture
def forced_serial(monkeypatch: pytest.MonkeyPatch) -> None:
    """oneDNN takes every eligible product on one-thread plans (every product is below
    ``MIN_MACS``)."""
    _forcing(monkeypatch, 1 << 40)


Pair = tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]

CASES: dict[str, Callable[[], Pair]] = {
    "plain": lambda: (f32(64, 32), f32(32, 48)),
    "weight transposed (linear)": lambda: (f32(64, 32), f32(48, 32).T),
    "input transposed (grad_w = g^T x)": lambda: (f32(32, 64).T, f32(32, 48)),
    "both transposed": lambda: (f32(32, 64).T, f32(48, 32).T),
    "column slice": lambda: (f32(64, 64)[:, :32], f32(32, 48)),
    "row slice": lambda: (f32(80, 32)[8:72], f32(32, 48)),
    "batched": lambda: (f32(3, 64, 32), f32(3, 32, 48)),
    "batch broadcast to a matrix": lambda: (f32(3, 64, 32), f32(32, 48)),
    "matrix against a batch": lambda: (f32(64, 32), f32(3, 32, 48)),
    "4-D heads": lambda: (f32(2, 4, 16, 8), f32(2, 4, 8, 16)),
    "4-D heads, keys transposed": lambda: (f32(2, 4, 16, 8), f32(2, 4, 16, 8).transpose(0, 1, 3, 2)),
    "4-D heads from a (B, T, H, D) view": lambda: (f32(2, 16, 4, 8).transpose(0, 2, 1, 3), f32(2, 4, 8, 16)),
    "size-1 batch broadcast": lambda: (f32(2, 4, 16, 8), f32(1, 4, 8, 16)),
    "one row": lambda: (f32(1, 256), f32(256, 64)),
}


@pytest.mark.parametrize("case", CASES)
def test_plans_match_float64_products(case: str, forced: None) -> None:
    a, b = CASES[case]()
    got = om.matmul(a, b)
    assert got is not None, f"{case}: oneDNN did not take it"
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert got.shape == want.shape and got.dtype == np.float32 and got.flags.c_contiguous
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    # blas.matmul, the one entry every op uses, routes it there
    np.testing.assert_array_equal(blas.matmul(a, b), got)


@pytest.mark.parametrize("case", CASES)
def test_one_thread_plans_match_float64_products(case: str, forced_serial: None) -> None:
    """The plans small products get (made under one OpenMP thread, run on the caller's):
    every layout, against float64, and routed there by ``blas.matmul``."""
    a, b = CASES[case]()
    p = om.plan(a, b, serial=True)
    assert p is not None and p.serial, f"{case}: oneDNN did not take it"
    got = p.run(a, b)
    assert got is not None
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert got.shape == want.shape and got.dtype == np.float32 and got.flags.c_contiguous
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    np.testing.assert_array_equal(blas.matmul(a, b), got)
    out = np.full(want.shape, np.nan, np.float32)
    assert om.matmul(a, b, out, serial=True) is out
    np.testing.assert_array_equal(out, got)


def test_one_thread_plans_leave_the_openmp_thread_count_as_it_was(forced_serial: None) -> None:
    """Making a one-thread plan, and running it, set the calling thread's OpenMP count to 1 and
    back, also when oneDNN refuses the geometry."""
    lib = _od._load()
    assert lib is not None and lib.omp is not None
    set_threads, max_threads = lib.omp
    before = max_threads()
    a, b = f32(24, 40), f32(40, 56)
    p = om.plan(a, b, serial=True)
    assert p is not None
    assert max_threads() == before
    set_threads(3)
    try:
        assert p.run(a, b) is not None  # the run sets 1 for kernels that read it then (gemm:jit)
        assert max_threads() == 3
        with pytest.raises(_od.OneDNNError), lib.one_thread():
            assert max_threads() == 1
            raise _od.OneDNNError("refused")
        assert max_threads() == 3
    finally:
        set_threads(before)


def test_the_routing_by_size() -> None:
    """Where the machine's rule picks oneDNN: a product from ``SERIAL_MIN_MACS`` up to
    ``MIN_MACS`` goes to a one-thread plan, a larger one to a plan on oneDNN's threads, a
    smaller one to numpy (float64 ones too)."""
    if not blas.matmul_choice()[0]:
        pytest.skip(f"this machine's products stay on OpenBLAS: {blas.matmul_info()}")
    small, mid, large = (f32(32, 32), f32(32, 32)), (f32(64, 128), f32(128, 128)), (f32(256, 256), f32(256, 256))
    assert 64 * 128 * 128 < om.MIN_MACS and 64 * 128 * 128 >= om.SERIAL_MIN_MACS and 256**3 >= om.MIN_MACS
    om._PLANS.clear()
    np.testing.assert_array_equal(blas.matmul(*small), np.matmul(*small))
    assert not om._PLANS
    for (a, b), serial in ((mid, True), (large, False)):
        got = blas.matmul(a, b)
        p = om.plan(a, b, serial=serial)
        assert p is not None and p.serial is serial
        assert len(om._PLANS) == (1 if serial else 2)  # the call above made this very plan
        np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-4)
    a64 = mid[0].astype(np.float64)
    np.testing.assert_array_equal(blas.matmul(a64, mid[1]), np.matmul(a64, mid[1]))


def test_without_numba_s_caller_products_run_through_ctypes(
    forced_serial: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where numba cannot compile the function that calls oneDNN, the same calls run through
    ctypes (a warning says so) and give the same product."""
    a, b = f32(40, 24), f32(24, 8).T.copy().T  # an F-ordered operand: another rank triple's caller

    class Uncompilable:
        def compile(self, sig: Any) -> None:
            raise RuntimeError("no LLVM intrinsics in this numba")

    monkeypatch.setattr(om, "_run_compiled", Uncompilable())
    monkeypatch.setattr(om, "_FALLBACK", None)
    monkeypatch.setattr(om, "_PLANS", OrderedDict())
    with pytest.warns(RuntimeWarning, match="through ctypes"):
        got = om.matmul(a, b, serial=True)
    assert got is not None
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


def test_a_forked_child_leaves_products_to_numpy(forced_serial: None) -> None:
    """oneDNN's OpenMP pool does not survive ``fork``: in the child the plans made before are
    not used, and the product is numpy's."""
    import os

    a, b = f32(64, 32), f32(32, 48)
    assert om.plan(a, b, serial=True) is not None
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report and exit without running pytest's teardown
        ok = om.plan(a, b, serial=True) is None and np.array_equal(blas.matmul(a, b), np.matmul(a, b))
        os.write(w, b"1" if ok else b"0")
        os._exit(0)
    os.close(w)
    got = os.read(r, 1)
    os.close(r)
    os.waitpid(pid, 0)
    assert got == b"1"


@pytest.mark.parametrize(
    ("what", "a", "b"),
    [
        ("float64", np.ones((64, 32)), np.ones((32, 8))),
        ("mixed dtypes", np.ones((64, 32), np.float32), np.ones((32, 8))),
        ("a vector", np.ones(32, np.float32), np.ones((32, 8), np.float32)),
        ("5-D", np.ones((1, 1, 1, 2, 3), np.float32), np.ones((1, 1, 1, 3, 2), np.float32)),
        (
            "a broadcast (zero-stride) operand",
            np.broadcast_to(np.ones((1, 32), np.float32), (64, 32)),
            np.ones((32, 8), np.float32),
        ),
        ("a reversed view", np.ones((64, 32), np.float32)[::-1], np.ones((32, 8), np.float32)),
        ("inner dims that differ", np.ones((4, 3), np.float32), np.ones((4, 3), np.float32)),
    ],
)
def test_what_oneDNN_does_not_take_is_left_to_numpy(what: str, a: Any, b: Any, forced: None) -> None:
    assert om.matmul(a, b) is None, what
    if what == "inner dims that differ":
        with pytest.raises(ValueError):
            blas.matmul(a, b)
    else:
        np.testing.assert_array_equal(blas.matmul(a, b), np.matmul(a, b))


@pytest.mark.parametrize("serial", [False, True])
def test_a_busy_plan_hands_the_product_to_this_thread_s_twin(serial: bool, forced: None) -> None:
    """While another thread runs a plan, a product of its geometry runs on this thread's twin
    of it: the same values bit for bit (numpy's would differ in the last bits); two threads
    running products of one geometry at once get the values a single thread gets."""
    import threading

    a, b = f32(64, 32), f32(32, 48)
    p = om.plan(a, b, serial=serial)
    assert p is not None
    want = p.run(a, b)
    assert want is not None
    with p.lock:  # another thread is running this plan
        got = p.run(a, b)
        assert got is not None and np.array_equal(got, want)
        assert threading.get_ident() in p._twins
        np.testing.assert_array_equal(om.matmul(a, b, serial=serial), want)
    results: list[bool] = []

    def work() -> None:
        outs = [om.matmul(a, b, serial=serial) for _ in range(300)]
        results.append(all(o is not None and np.array_equal(o, want) for o in outs))

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True, True, True]


def test_plan_cache_is_bounded(forced: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(om, "CACHE_SIZE", 4)
    for k in range(1, 9):
        assert om.matmul(f32(8, k), f32(k, 8)) is not None
    assert len(om._PLANS) <= 4


def test_ops_linear_and_matmul_match_pytorch_float64(forced: None) -> None:
    """linear (its weight read transposed) and a batched matmul through oneDNN: values and the
    gradients of every operand equal PyTorch's in float64 within float32's rounding."""
    x, w, bias, y = f32(64, 96), f32(48, 96), f32(48), f32(4, 96, 32)
    g1, g2 = f32(64, 48), f32(4, 64, 32)
    ours = [gradtape.tensor(v, requires_grad=True) for v in (x, w, bias, y)]
    theirs = [torch.tensor(v.astype(np.float64), requires_grad=True) for v in (x, w, bias, y)]
    o1, o2 = ops.linear(ours[0], ours[1], ours[2]), ops.matmul(ours[0], ours[3])
    t1, t2 = torch.nn.functional.linear(theirs[0], theirs[1], theirs[2]), theirs[0] @ theirs[3]
    for o, t in ((o1, t1), (o2, t2)):
        np.testing.assert_allclose(o.numpy(), t.detach().numpy(), rtol=1e-4, atol=1e-4)
    ((o1 * gradtape.tensor(g1)).sum() + (o2 * gradtape.tensor(g2)).sum()).backward()
    ((t1 * torch.tensor(g1.astype(np.float64))).sum() + (t2 * torch.tensor(g2.astype(np.float64))).sum()).backward()
    for name, a, b in zip(("x", "weight", "bias", "y"), ours, theirs, strict=True):
        assert a.grad is not None, name
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-3, err_msg=name)
    assert len(om._PLANS) >= 4  # the products above went through plans


def test_a_transformer_layer_trains_as_pytorch_float64(forced: None) -> None:
    """A TransformerEncoderLayer's three AdamW steps (attention's batched products, the
    feed-forward linears) with every product on oneDNN: losses equal PyTorch float64's."""
    gradtape.manual_seed(0)
    ours = gradtape.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
    theirs = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True).double()
    theirs.load_state_dict({k: torch.tensor(v.numpy().astype(np.float64)) for k, v in ours.state_dict().items()})
    x = f32(4, 16, 32)
    opt_o = gradtape.optim.AdamW(ours.parameters(), lr=1e-3)
    opt_t = torch.optim.AdamW(theirs.parameters(), lr=1e-3)
    for _ in range(3):
        opt_o.zero_grad()
        lo = (ours(gradtape.tensor(x)) ** 2).mean()
        lo.backward()
        opt_o.step()
        opt_t.zero_grad()
        lt = (theirs(torch.tensor(x.astype(np.float64))) ** 2).mean()
        lt.backward()
        opt_t.step()
        np.testing.assert_allclose(lo.item(), lt.item(), rtol=1e-4)


def test_the_choice_rule_and_its_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    lib = _od._load()
    assert lib is not None
    monkeypatch.setattr(blas, "_MATMUL_CHOICE", None)
    core = blas.openblas_core()
    use, why = blas.matmul_choice()
    assert use == ("avx512" in lib.isa and core not in blas.AVX512_CORES), why
    assert blas.matmul_info() == why
    for forced_value, expect in (("onednn", True), ("openblas", False)):
        monkeypatch.setattr(blas, "_MATMUL_CHOICE", None)
        monkeypatch.setenv("GRADTAPE_MATMUL", forced_value)
        assert blas.matmul_choice()[0] is expect
    monkeypatch.setattr(blas, "_MATMUL_CHOICE", None)
    monkeypatch.setenv("GRADTAPE_MATMUL", "mkl")
    with pytest.raises(ValueError, match="GRADTAPE_MATMUL='mkl'"):
        blas.matmul_choice()
    monkeypatch.setattr(blas, "_MATMUL_CHOICE", None)


def test_products_into_out_and_its_slices(forced: None) -> None:
    """``out=``: a whole array, and the row/column blocks causal attention writes (strided
    slices of a bigger array), computed in place; an ``out`` oneDNN cannot write (another
    dtype, one that overlaps an operand) is left to numpy."""
    a, b = f32(2, 64, 32), f32(2, 32, 64)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    whole = np.empty((2, 64, 64), np.float32)
    assert om.matmul(a, b, whole) is whole
    np.testing.assert_allclose(whole, want, rtol=1e-5, atol=1e-4)
    big = np.zeros((2, 64, 80), np.float32)
    block = big[:, 16:48, :40]
    got = om.matmul(a[:, 16:48], b[:, :, :40], block)
    assert got is block
    np.testing.assert_allclose(big[:, 16:48, :40], want[:, 16:48, :40], rtol=1e-5, atol=1e-4)
    assert not big[:, :16].any() and not big[:, :, 40:].any()  # nothing written outside the block
    np.testing.assert_allclose(blas.matmul(a, b, out=np.empty((2, 64, 64), np.float32)), want, rtol=1e-5, atol=1e-4)
    assert om.matmul(a, b, np.empty((2, 64, 64))) is None  # float64 out
    sq = f32(64, 64)
    assert om.matmul(sq, f32(64, 64), sq) is None  # out is an operand
