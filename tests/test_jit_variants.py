"""Kernels written once and compiled serial and parallel (``_jit.serial_and_parallel``): each
variant keeps its own entries in numba's on-disk cache, every kernel module's dispatchers
have distinct cache names, and the cache fallback of ``_jit.jit`` holds for both variants."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import numba
import numpy as np
import pytest

import gradtape
from gradtape.devices.kernels import _jit

MODULES = ["activations", "attention", "conv", "elementwise", "norm", "optim", "pool", "scan", "scatter", "softmax"]

_KERNEL = """
import numba
from gradtape.devices.kernels._jit import serial_and_parallel


def _scale(out, x):
    for i in numba.prange(out.shape[0]):
        out[i] = 2.0 * x[i]


_scale_serial, _scale_parallel = serial_and_parallel(_scale)
"""

_PROBE = """
import json
import numpy as np
from numba.np.ufunc import parallel as threads
import variants_kernel as vk
from gradtape.devices.kernels import elementwise as ke

def counts(d):
    return [sum(d.stats.cache_hits.values()), sum(d.stats.cache_misses.values())]

x = np.arange(5.0)
o = np.empty(5)
vk._scale_serial(o, x)
threads_after_serial = threads._is_initialized
r = np.empty(5)
vk._scale_parallel(r, x)
a = np.zeros(7, np.float32)
b = np.full(7, 3.0, np.float32)
ke._addmul_serial(a, b, b)
ke._addmul_parallel(a, b, b)
print(json.dumps({
    "threads_after_serial": threads_after_serial,
    "threads_after_parallel": threads._is_initialized,
    "scale": [counts(vk._scale_serial), counts(vk._scale_parallel)],
    "addmul": [counts(ke._addmul_serial), counts(ke._addmul_parallel)],
    "values": [o.tolist(), r.tolist(), a.tolist()],
}))
"""


def test_serial_and_parallel_variants_load_their_own_cached_code(tmp_path: Path) -> None:
    """numba names cache files by module, qualname and line and keys them by signature and
    bytecode, not by ``parallel``: one function compiled both ways would load one variant's
    machine code for the other in the next process. Two fresh processes sharing a cache
    directory: the first compiles each variant (a miss each, no hit), the second loads each
    from the cache (a hit each), and only the parallel variant starts numba's threads."""
    (tmp_path / "variants_kernel.py").write_text(_KERNEL)
    src = str(Path(gradtape.__file__).resolve().parent.parent)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), src]),
        "NUMBA_CACHE_DIR": str(tmp_path / "numba_cache"),
    }
    runs = []
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, "-c", _PROBE], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, proc.stderr
        runs.append(json.loads(proc.stdout.splitlines()[-1]))
    first, second = runs
    for kernel in ("scale", "addmul"):
        assert first[kernel] == [[0, 1], [0, 1]], (kernel, first)  # [hits, misses] of serial, parallel
        assert second[kernel] == [[1, 0], [1, 0]], (kernel, second)
    for run in runs:
        assert run["threads_after_serial"] is False, run
        assert run["threads_after_parallel"] is True, run
        assert run["values"] == [[0.0, 2.0, 4.0, 6.0, 8.0]] * 2 + [[18.0] * 7]
    names = sorted(p.name for p in (tmp_path / "numba_cache").rglob("variants_kernel.*.nbi"))
    assert [n.split("-")[0] for n in names] == ["variants_kernel._scale_parallel", "variants_kernel._scale_serial"]


def _dispatchers(module: Any) -> dict[str, Any]:
    return {name: v for name, v in vars(module).items() if isinstance(v, numba.core.registry.CPUDispatcher)}


@pytest.mark.parametrize("name", MODULES)
def test_kernel_modules_give_every_dispatcher_its_own_cache_name(name: str) -> None:
    """In each kernel module no two dispatchers share numba's cache name (qualname and first
    line), each ``_x_serial``/``_x_parallel`` is compiled with ``parallel`` off/on, and a pair
    made by ``serial_and_parallel`` runs one body (the same code object)."""
    module = importlib.import_module(f"gradtape.devices.kernels.{name}")
    found = _dispatchers(module)
    assert found, name
    keys = [(d.py_func.__qualname__, d.py_func.__code__.co_firstlineno) for d in found.values()]
    assert len(set(keys)) == len(keys), sorted(keys)
    for attr, d in found.items():
        parallel = bool(d.targetoptions.get("parallel"))
        if attr.endswith("_parallel"):
            assert parallel, attr
        elif attr.endswith("_serial"):
            assert not parallel, attr
        body = vars(module).get(attr.removesuffix("_serial")) if attr.endswith("_serial") else None
        if isinstance(body, types.FunctionType) and body.__code__ is d.py_func.__code__:  # serial_and_parallel
            twin = found[attr.removesuffix("_serial") + "_parallel"]
            assert twin.py_func.__code__ is body.__code__, attr
            assert (d.py_func.__qualname__, twin.py_func.__qualname__) == (
                attr,
                attr.removesuffix("_serial") + "_parallel",
            )


def _twice(out: Any, x: Any) -> None:
    for i in numba.prange(out.shape[0]):
        out[i] = 2.0 * x[i]


def test_serial_and_parallel_compiles_two_named_variants_with_the_same_results() -> None:
    """The serial variant (``prange`` read as ``range``) and the parallel one give the same
    values; neither is the original function, whose name and qualname stay as they were."""
    serial, parallel = _jit.serial_and_parallel(_twice)
    x = np.linspace(-1.0, 1.0, 1001).astype(np.float32)
    a, b = np.empty_like(x), np.empty_like(x)
    serial(a, x)
    parallel(b, x)
    np.testing.assert_array_equal(a, 2 * x)
    np.testing.assert_array_equal(b, 2 * x)
    s_fn: Any = serial
    p_fn: Any = parallel
    assert (s_fn.py_func.__name__, p_fn.py_func.__name__) == ("_twice_serial", "_twice_parallel")
    assert s_fn.py_func.__qualname__ == "_twice_serial" and p_fn.py_func.__qualname__ == "_twice_parallel"
    assert (s_fn.targetoptions.get("parallel"), p_fn.targetoptions.get("parallel")) == (False, True)
    assert _twice.__qualname__ == "_twice"


def test_serial_and_parallel_keeps_options_and_falls_back_to_no_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both variants get jit()'s options (fastmath included); where numba cannot cache, each
    warns (naming the caller's file) and compiles with cache=False."""
    real_njit = numba.njit
    calls: list[dict[str, Any]] = []

    def fake_njit(*args: Any, **kwargs: Any) -> Any:
        calls.append(dict(kwargs))
        if kwargs.get("cache"):
            raise RuntimeError("cannot cache function: no locator available")
        return real_njit(*args, **kwargs)

    monkeypatch.setattr(numba, "njit", fake_njit)
    with pytest.warns(RuntimeWarning, match=r"cannot cache _twice_(serial|parallel).*without a cache") as record:
        serial, parallel = _jit.serial_and_parallel(_twice, fastmath=_jit.REASSOC)
    assert [Path(w.filename) for w in record] == [Path(__file__)] * 2  # the warning names the caller
    assert [(c["cache"], c["parallel"]) for c in calls] == [(True, False), (False, False), (True, True), (False, True)]
    assert all(c["nogil"] and c["error_model"] == "numpy" and c["fastmath"] == set(_jit.REASSOC) for c in calls)
    x = np.arange(4.0)
    for kernel in (serial, parallel):
        out = np.empty(4)
        kernel(out, x)
        np.testing.assert_array_equal(out, 2 * x)


def test_serial_and_parallel_rejects_a_compiled_kernel() -> None:
    """A numba dispatcher (already compiled once) is refused with a TypeError naming its type."""
    compiled = numba.njit(_twice)
    with pytest.raises(TypeError, match="serial_and_parallel: expects a plain Python function, got CPUDispatcher"):
        _jit.serial_and_parallel(compiled)


_INHERIT_KERNEL = """
from gradtape.devices.kernels._jit import REASSOC, jit


@jit()
def strict_fma_probe(a, b, c):
    return a * b + c


@jit(fastmath=REASSOC)
def fast_caller(a, b, c):
    return strict_fma_probe(a, b, c)
"""

_INHERIT_PROBE = """
import json
import inherit_kernel as ik

a = 1.0 + 2.0**-30
c = -(1.0 + 2.0**-29)  # a * a = 1 + 2**-29 + 2**-60: rounded, the strict sum is 0; fused, 2**-60
fused = ik.fast_caller(a, a, c)  # compiles the strict helper for a REASSOC caller first
print(json.dumps({"fused": fused, "helper": ik.strict_fma_probe(a, a, c)}))
"""


def test_a_strict_kernel_keeps_strict_arithmetic_whoever_compiles_it_first(tmp_path: Path) -> None:
    """numba lets a kernel that does not set ``fastmath`` inherit the flags of the kernel whose
    compilation compiled it. A strict helper first reached from a ``REASSOC`` kernel then kept
    contracted (FMA) arithmetic for every later call, from Python too: the float32 ``exp`` of
    the attention softmax lost accuracy (2.3 ulp against 0.1) when the softmax compiled
    before the first direct call, so results depended on the order kernels compiled in.
    ``_jit.jit`` always sets the flag; a fresh process, no cache."""
    (tmp_path / "inherit_kernel.py").write_text(_INHERIT_KERNEL)
    src = str(Path(gradtape.__file__).resolve().parent.parent)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), src]),
        "NUMBA_CACHE_DIR": str(tmp_path / "numba_cache"),
    }
    proc = subprocess.run(
        [sys.executable, "-c", _INHERIT_PROBE], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.splitlines()[-1])
    assert got["helper"] == 0.0, got  # strict: the product rounded before the sum
