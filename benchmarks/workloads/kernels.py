"""Workload 3, fused elementwise kernels on 16M float32: memory bandwidth in GB/s.

- ``addmul``: ``out += a * b``. gradtape's ``gradtape.devices.kernels.elementwise.addmul``
  (one numba pass, ``prange`` over the machine's threads at this size) against numpy's
  ``out += a * b`` (two passes and a 64 MB temporary) and PyTorch's ``out.addcmul_(a, b)``.
- ``relu_backward``: ``out += g * (x > 0)``, the fused unary backward. gradtape's
  ``relu_backward`` kernel against numpy's ``out += g * (x > 0)`` (faster here than
  ``np.where``) and PyTorch's
  own ReLU backward (``torch.ops.aten.threshold_backward(g, x, 0)``, what autograd runs)
  accumulated with ``out.add_``.

GB/s counts 16 bytes per element for both (read ``out`` and two inputs, write ``out``),
whatever traffic an implementation's temporaries add. The PyTorch tensors share the
numpy arrays' memory (``torch.from_numpy``). Timed in blocks per implementation with a
pause at each switch (see ``benchmarks.common.blockwise``): the numba and PyTorch thread
pools must not alternate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.common import Config, Row, Target, WorkloadResult, blockwise, load_torch, median, settle, spread

NAME = "kernels"
TITLE = "3. Fused kernels on 16M float32 (addmul, relu_backward): GB/s"

Array = np.ndarray[Any, Any]

SIZE = 1 << 24
BYTES_PER_ELEMENT = 16


def run(cfg: Config) -> WorkloadResult:
    from gradtape.devices.kernels import elementwise as k

    res = WorkloadResult(NAME, TITLE)
    n = SIZE
    rng = np.random.default_rng(0)
    out = np.zeros(n, np.float32)
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    zero = np.float32(0)
    torch = load_torch(cfg.threads)
    if torch is None:
        res.note("torch: not installed, skipped")
    res.note("autograd: no kernel-level API, not applicable")

    # Correctness first: every implementation adds the same thing.
    ref = a * b
    check = np.zeros(n, np.float32)
    k.addmul(check, a, b)
    assert np.array_equal(check, ref), "gradtape addmul disagrees with numpy"
    ref = np.where(a > 0, b, zero)
    check[:] = 0
    k.relu_backward(check, a, b)
    assert np.array_equal(check, ref), "gradtape relu_backward disagrees with numpy"
    del ref, check

    families: dict[str, dict[str, Callable[[], object]]] = {
        "addmul": {
            "gradtape": lambda: k.addmul(out, a, b),
            "numpy": lambda: np.add(out, np.multiply(a, b), out=out),
        },
        "relu_backward": {
            "gradtape": lambda: k.relu_backward(out, a, b),
            "numpy": lambda: np.add(out, np.multiply(b, a > 0), out=out),
        },
    }
    if torch is not None:
        to, ta, tb = torch.from_numpy(out), torch.from_numpy(a), torch.from_numpy(b)
        threshold_backward = torch.ops.aten.threshold_backward
        families["addmul"]["torch"] = lambda: to.addcmul_(ta, tb)
        families["relu_backward"]["torch"] = lambda: to.add_(threshold_backward(tb, ta, 0))

    nrep = cfg.reps(15, 3)
    settle()
    gbs_all: dict[str, dict[str, float]] = {}
    for fam, fns in families.items():
        times = blockwise(fns, nrep, warmup=2, rounds=cfg.reps(5, 1))
        gbs = {name: n * BYTES_PER_ELEMENT / median(t) / 1e9 for name, t in times.items()}
        gbs_all[fam] = gbs
        res.details[fam] = {
            name: {"gb_per_s": gbs[name], "ms": spread([x * 1e3 for x in t])} for name, t in times.items()
        }
        res.rows.append(
            Row(
                NAME,
                f"{fam} (16M f32)",
                "GB/s",
                "higher",
                gbs["gradtape"],
                {"torch": gbs.get("torch"), "numpy": gbs["numpy"]},
                Target("torch", ">=", 0.9) if fam == "addmul" else None,
            )
        )
    res.details.update({"elements": n, "bytes_per_element": BYTES_PER_ELEMENT, "repeats": nrep})
    return res
