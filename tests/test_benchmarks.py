"""The benchmark workloads compute what they claim: every implementation of the tape chains
gives the hand-written numpy gradient (short chains, so this runs in a second), and the
model-scale workload (9) runs end to end at toy sizes with its peers' losses matching."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's benchmarks/

from benchmarks.workloads import tape

Array = np.ndarray[Any, Any]
REPEATS = 20


def _scalar_impls() -> dict[str, Callable[[], tuple[Any, Callable[[], Array]]]]:
    x0 = tape.chain_input()
    impls: dict[str, Callable[[], tuple[Any, Callable[[], Array]]]] = {
        "gradtape": lambda: tape.gradtape_chain(x0, REPEATS),
        "torch": lambda: tape.torch_chain(pytest.importorskip("torch"), x0, REPEATS),
        "autograd": lambda: tape.autograd_chain(
            pytest.importorskip("autograd"), pytest.importorskip("autograd.numpy"), x0, REPEATS
        ),
    }
    return impls


def _tensor_impls() -> dict[str, Callable[[], tuple[Any, Callable[[], Array]]]]:
    x0, w0 = tape.tensor_inputs()
    return {
        "gradtape": lambda: tape.gradtape_tensor_chain(x0, w0, REPEATS),
        "torch": lambda: tape.torch_tensor_chain(pytest.importorskip("torch"), x0, w0, REPEATS),
        "autograd": lambda: tape.autograd_tensor_chain(pytest.importorskip("autograd.numpy"), x0, w0, REPEATS),
    }


@pytest.mark.parametrize("name", ["gradtape", "torch", "autograd"])
def test_scalar_chain_gradients_match_numpy(name: str) -> None:
    """y = (y * 0.999).sin() + x: d(sum y)/dx equals the hand-written numpy backward."""
    _, grad = _scalar_impls()[name]()
    _, ref = tape.numpy_chain(tape.chain_input(), REPEATS)
    want = ref()
    assert np.abs(want).max() > 1.0  # a real gradient, not zeros
    np.testing.assert_allclose(grad(), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["gradtape", "torch", "autograd"])
def test_tensor_chain_gradients_match_numpy(name: str) -> None:
    """y = (y * w).tanh() + x: the gradients of x and w equal the hand-written numpy backward."""
    _, grad = _tensor_impls()[name]()
    _, ref = tape.numpy_tensor_chain(*tape.tensor_inputs(), REPEATS)
    want = ref()
    assert want.shape == (2 * tape.N,) and np.abs(want[tape.N :]).max() > 0.1
    np.testing.assert_allclose(grad(), want, rtol=1e-4, atol=1e-5)


def test_scan_workload_implementations_agree() -> None:
    """The selective-scan workload's gradtape step and PyTorch loop give the same gradients
    (a small shape: the workload's own check runs at full size)."""
    from benchmarks.workloads import scan

    torch = pytest.importorskip("torch")
    arrays = scan.inputs((2, 40, 8, 4), seed=1)
    ours, theirs = scan.gradtape_step(arrays)(), scan.torch_step(torch, arrays)()
    assert set(ours) == set(theirs) == {"x", "dt", "A", "B", "C", "D", "z"}
    for k in theirs:
        assert np.abs(theirs[k]).max() > 0
        np.testing.assert_allclose(ours[k], theirs[k], rtol=2e-3, atol=2e-4, err_msg=k)


def test_model_workload_runs_at_tiny_sizes_without_jax() -> None:
    """Workload 9 end to end at toy sizes with JAX switched off (so it passes without JAX):
    every row is timed, the peers' losses from the same initial weights agree with
    gradtape's, and the drift check runs."""
    import numba

    from benchmarks.common import Config
    from benchmarks.workloads import model

    res = model.run(Config(quick=True, threads=numba.get_num_threads()), tiny=True, use_jax=False)
    cases = model.make_cases(tiny=True)
    # every row has a gradtape.capture row too (bit for bit the eager step's losses), the
    # transformers' included (positions made inside forward, fused attention, store clipping)
    captured = [r for r in res.rows if r.metric.endswith("gradtape.capture")]
    assert [r.metric.split(" ")[0] for r in captured] == ["1", "2", "3", "4", "5", "6", "7", "8"]
    refused = [n.split(" ")[0] for n in res.notes if "gradtape.capture runs it eagerly" in n]
    assert refused == []
    assert len(cases) == 8 and len(res.rows) == 3 * len(cases) + 1 + len(captured)
    assert "jax: disabled" in res.notes
    for row in res.rows:
        assert row.gradtape is not None and row.gradtape > 0
        assert row.peers.get("jax") is None
    for case in cases:
        d = res.details[case.key]
        losses = d["losses_first_two_steps"]["gradtape"]
        assert all(np.isfinite(losses)) and losses[0] > 1.0  # ~log(classes) at init
        if case.train:
            assert losses[1] != losses[0]  # the optimizer moved the weights
        for peer, (g1, g2) in d["loss_rel_gap_vs_gradtape"].items():
            assert g1 <= model.FIRST_RTOL and g2 <= model.SECOND_RTOL, (case.key, peer, g1, g2)
            if peer in (model.CAPTURED, model.FLAT):
                assert g1 == g2 == 0.0  # a replay is the eager computation, bit for bit
    assert res.details["drift"]["ratio"] > 0


@pytest.mark.parametrize("key", ["conv_block", "seq_default"])
def test_model_workload_jax_matches_gradtape(key: str) -> None:
    """The JAX-jit version of a workload-9 row (whole step jitted, optimizer written out)
    gives gradtape's first two losses from the same initial weights (toy sizes; a conv row
    with SGD, a transformer row with AdamW and clipping: the rows' other JAX forwards are
    made of the same pieces, and the full-size run checks every row)."""
    pytest.importorskip("jax")
    import numba

    from benchmarks.common import Config
    from benchmarks.workloads import model

    case = next(c for c in model.make_cases(tiny=True) if c.key == key)
    impls, _ = model.make_impls(case, Config(quick=True, threads=numba.get_num_threads()))
    assert "jax" in impls
    losses = model.check_losses(impls)
    gaps = model.loss_gaps(losses)
    assert gaps["jax"][0] <= model.FIRST_RTOL and gaps["jax"][1] <= model.SECOND_RTOL, losses
