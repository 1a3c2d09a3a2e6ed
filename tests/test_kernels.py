"""The fused elementwise kernels (addmul, axpy, adddiv, relu_backward, fill, copy): values
against numpy for every layout and both dtypes, the serial/parallel switch, clear errors, and
the numba cache fallback of ``_jit.jit``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numba
import numpy as np
import pytest

import gradtape
from gradtape import DTypeError, ShapeError
from gradtape.devices.kernels import _jit
from gradtape.devices.kernels import elementwise as k

Array = np.ndarray[Any, Any]
N_PAR = k.PARALLEL_THRESHOLD + 3
ALPHA = -0.75

# name -> (number of array operands, call, numpy expression of the new ``out``)
KERNELS: dict[str, tuple[int, Callable[[Array, list[Array]], None], Callable[[Array, list[Array]], Array]]] = {
    "addmul": (2, lambda o, x: k.addmul(o, x[0], x[1]), lambda o, x: o + x[0] * x[1]),
    "adddiv": (2, lambda o, x: k.adddiv(o, x[0], x[1]), lambda o, x: o + x[0] / x[1]),
    "relu_backward": (2, lambda o, x: k.relu_backward(o, x[0], x[1]), lambda o, x: o + np.where(x[0] > 0, x[1], 0)),
    "axpy": (1, lambda o, x: k.axpy(o, ALPHA, x[0]), lambda o, x: o + o.dtype.type(ALPHA) * x[0]),
    "copy": (1, lambda o, x: k.copy(o, x[0]), lambda o, x: np.broadcast_to(x[0], o.shape).copy()),
    "fill": (0, lambda o, x: k.fill(o, 2.5), lambda o, x: np.full_like(o, 2.5)),
}


def _vals(rng: np.random.Generator, shape: tuple[int, ...], dtype: type[np.floating[Any]]) -> Array:
    """Values in +-[0.5, 2): safe divisors, no relu ties at 0, mixed signs."""
    mag = rng.uniform(0.5, 2.0, shape)
    sign = np.where(rng.random(shape) < 0.4, -1.0, 1.0)
    return np.asarray(mag * sign, dtype=dtype)


def _layout(name: str, dtype: type[np.floating[Any]]) -> tuple[Array, Array, list[Array]]:
    """``(base, out, operands)`` for a layout; ``out`` may be a view into ``base``."""
    rng = np.random.default_rng(7)

    def v(*shape: int) -> Array:
        return _vals(rng, shape, dtype)

    if name == "1d":
        base = v(7)
        return base, base, [v(7), v(7)]
    if name == "2d":
        base = v(3, 4)
        return base, base, [v(3, 4), v(3, 4)]
    if name == "rank0":
        base = v()
        return base, base, [v(), v()]
    if name == "strided_in":
        base = v(5)
        return base, base, [v(10)[::2], v(15)[::3]]
    if name == "reversed_in":
        base = v(6)
        return base, base, [v(6)[::-1], v(6)]
    if name == "strided_out":
        base = v(12)
        return base, base[1::2], [v(6), v(12)[::2]]
    if name == "transposed_in":
        base = v(3, 4)
        return base, base, [v(4, 3).T, v(3, 8)[:, ::2]]
    if name == "transposed_out":
        base = v(4, 3)
        return base, base.T, [v(3, 4), v(4, 3).T]
    if name == "broadcast":
        base = v(3, 4)
        return base, base, [v(4), v(3, 1)]
    if name == "broadcast_scalar":
        base = v(3, 4)
        return base, base, [v(), v(1, 4)]
    if name == "broadcast_view_1d":
        base = v(6)
        return base, base, [np.broadcast_to(v(1), (6,)), v(6)]
    if name == "broadcast_view_2d":
        base = v(3, 4)
        return base, base, [np.broadcast_to(v(4), (3, 4)), v(3, 4)]
    if name == "parallel_1d":
        base = v(N_PAR)
        return base, base, [v(N_PAR), v(N_PAR)]
    if name == "parallel_2d":
        rows = k.PARALLEL_THRESHOLD // 256 + 1
        base = v(rows, 256)
        return base, base, [v(rows, 256), v(rows, 256)]
    if name == "parallel_strided":
        base = v(N_PAR)
        return base, base, [v(2 * N_PAR)[::2], v(N_PAR)]
    raise AssertionError(name)


LAYOUTS = [
    "1d",
    "2d",
    "rank0",
    "strided_in",
    "reversed_in",
    "strided_out",
    "transposed_in",
    "transposed_out",
    "broadcast",
    "broadcast_scalar",
    "broadcast_view_1d",
    "broadcast_view_2d",
    "parallel_1d",
    "parallel_2d",
    "parallel_strided",
]
DTYPES = [np.float32, np.float64]


def _only_path(monkeypatch: pytest.MonkeyPatch, parallel: bool) -> None:
    """Make the kernels of the path that must not run raise."""

    def boom(*args: Any) -> None:
        raise AssertionError("wrong serial/parallel kernel chosen")

    unwanted = "_serial" if parallel else "_parallel"
    for name in dir(k):
        if name.startswith("_") and name.endswith(unwanted):
            monkeypatch.setattr(k, name, boom)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("kernel", list(KERNELS))
def test_kernel_matches_numpy(
    kernel: str, layout: str, dtype: type[np.floating[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each kernel updates ``out`` in place exactly as the numpy expression, in ``out``'s dtype,
    on the serial path below PARALLEL_THRESHOLD and the parallel one above it."""
    arity, call, expr = KERNELS[kernel]
    base, out, ins = _layout(layout, dtype)
    ins = ins[:arity]
    _only_path(monkeypatch, parallel=layout.startswith("parallel"))
    base_before = base.copy()
    want = np.asarray(expr(out.copy(), ins), dtype=dtype)
    call(out, ins)
    assert out.dtype == dtype
    np.testing.assert_allclose(out, want, rtol=1e-6 if dtype is np.float32 else 1e-15, atol=0)
    if layout == "strided_out":  # writes through the view touch nothing else
        np.testing.assert_array_equal(base[::2], base_before[::2])


def test_parallel_threshold_boundary(monkeypatch: pytest.MonkeyPatch) -> None:
    """Exactly PARALLEL_THRESHOLD elements go parallel; one fewer stays serial."""
    n = k.PARALLEL_THRESHOLD
    for size, parallel in ((n - 1, False), (n, True)):
        with monkeypatch.context() as m:
            _only_path(m, parallel)
            out = np.ones(size, np.float32)
            k.addmul(out, np.full(size, 2.0, np.float32), np.full(size, 3.0, np.float32))
            assert out.min() == out.max() == 7.0


def test_kernels_are_exact_on_known_values() -> None:
    """Hand-computed results on tiny float32 inputs."""
    out = np.array([1.0, 2.0, 3.0], np.float32)
    k.addmul(out, np.array([2.0, 3.0, 4.0], np.float32), np.array([0.5, -1.0, 2.0], np.float32))
    assert out.tolist() == [2.0, -1.0, 11.0]
    k.axpy(out, 2, np.array([1.0, 1.0, 0.5], np.float32))
    assert out.tolist() == [4.0, 1.0, 12.0]
    k.adddiv(out, np.array([1.0, 3.0, 1.0], np.float32), np.array([4.0, 2.0, -8.0], np.float32))
    assert out.tolist() == [4.25, 2.5, 11.875]
    k.relu_backward(out, np.array([-1.0, 0.0, 1e-30], np.float32), np.array([5.0, 5.0, 5.0], np.float32))
    assert out.tolist() == [4.25, 2.5, 16.875]


def test_relu_backward_at_zero_adds_nothing() -> None:
    """x == 0 (and -0.0) counts as not positive on both paths."""
    for n in (4, N_PAR):
        x = np.zeros(n, np.float64)
        x[1::2] = -0.0
        out = np.zeros(n)
        k.relu_backward(out, x, np.ones(n))
        assert not out.any()


@pytest.mark.parametrize("kernel", ["addmul", "adddiv", "relu_backward", "axpy", "copy"])
@pytest.mark.parametrize("where", ["same_shape", "broadcast", "first_operand"])
def test_dtype_mix_raises_dtype_error(kernel: str, where: str) -> None:
    """A float64 operand with a float32 out raises DTypeError naming both dtypes, out untouched."""
    arity, call, _ = KERNELS[kernel]
    out = np.zeros((2, 3), np.float32)
    good = np.ones((2, 3), np.float32)
    bad = np.ones((2, 3) if where == "same_shape" else (3,), np.float64)
    ins: list[Array] = [bad] if arity == 1 else [bad, good] if where == "first_operand" else [good, bad]
    with pytest.raises(DTypeError, match=r"float64.*float32"):
        call(out, ins)
    assert not out.any()


@pytest.mark.parametrize("kernel", list(KERNELS))
@pytest.mark.parametrize("dtype", [np.int64, np.float16, np.complex128])
def test_non_float_out_raises_dtype_error(kernel: str, dtype: type[np.generic]) -> None:
    """An out that is not float32/float64 raises DTypeError naming its dtype."""
    arity, call, _ = KERNELS[kernel]
    out = np.zeros(3, dtype)
    with pytest.raises(DTypeError, match=np.dtype(dtype).name):
        call(out, [out.copy()] * arity)


@pytest.mark.parametrize("kernel", ["addmul", "adddiv", "relu_backward"])
def test_int_operand_raises_dtype_error(kernel: str) -> None:
    """Integer operands never reach numba: DTypeError."""
    _, call, _ = KERNELS[kernel]
    with pytest.raises(DTypeError, match="int64"):
        call(np.zeros(3), [np.ones(3, np.int64), np.ones(3)])


@pytest.mark.parametrize("kernel", ["addmul", "adddiv", "relu_backward", "axpy", "copy"])
@pytest.mark.parametrize(
    ("out_shape", "in_shape"),
    [((3,), (4,)), ((2, 3), (3, 2)), ((3, 1), (3, 4)), ((3,), (2, 3))],
)
def test_wrong_shape_raises_shape_error_naming_shapes(
    kernel: str, out_shape: tuple[int, ...], in_shape: tuple[int, ...]
) -> None:
    """An operand that does not broadcast to out's shape raises ShapeError naming both shapes."""
    arity, call, _ = KERNELS[kernel]
    out = np.zeros(out_shape)
    ins = [np.ones(in_shape)] * arity
    with pytest.raises(ShapeError) as info:
        call(out, ins)
    assert str(in_shape) in str(info.value)
    assert str(out_shape) in str(info.value)
    assert kernel in str(info.value)
    assert not out.any()


@pytest.mark.parametrize("kernel", list(KERNELS))
@pytest.mark.parametrize("size", [3, N_PAR], ids=["small", "large"])
def test_read_only_out_raises_value_error(kernel: str, size: int) -> None:
    """A read-only out raises ValueError ('read-only') and is left unchanged."""
    arity, call, _ = KERNELS[kernel]
    out = np.zeros(size)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        call(out, [np.ones(size)] * arity)
    assert not out.any()


def test_read_only_operands_are_fine() -> None:
    """Read-only inputs (e.g. gradients handed out read-only) are accepted."""
    a = np.full(4, 2.0)
    a.flags.writeable = False
    out = np.ones(4)
    k.addmul(out, a, a)
    k.axpy(out, 1.0, a)
    assert out.tolist() == [7.0] * 4


@pytest.mark.parametrize("kernel", list(KERNELS))
def test_non_array_out_raises_type_error(kernel: str) -> None:
    """A list as out is a TypeError, not a numba error."""
    arity, call, _ = KERNELS[kernel]
    with pytest.raises(TypeError, match="numpy array"):
        call([0.0, 0.0], [np.ones(2)] * arity)  # type: ignore[arg-type]


def test_errors_are_never_numba_errors() -> None:
    """Every bad call above raises a gradtape error or a plain ValueError/TypeError."""
    from numba.core.errors import NumbaError

    bad_calls: list[Callable[[], None]] = [
        lambda: k.addmul(np.zeros(3, np.float32), np.ones(3), np.ones(3)),
        lambda: k.adddiv(np.zeros(3), np.ones(4), np.ones(4)),
        lambda: k.relu_backward(np.zeros(3), np.ones(3, np.int32), np.ones(3)),
        lambda: k.axpy(np.zeros(3, np.int32), 1.0, np.ones(3)),
        lambda: k.axpy(np.zeros(3), 1.0, np.ones(3, np.float32)),
        lambda: k.copy(np.zeros((2, 2)), np.ones((2, 3))),
    ]
    for call in bad_calls:
        with pytest.raises((gradtape.GradtapeError, ValueError, TypeError)) as info:
            call()
        assert not isinstance(info.value, NumbaError)
        assert isinstance(info.value, gradtape.GradtapeError)


def test_addmul_with_overlapping_operand_matches_numpy() -> None:
    """out = arr[1:], a = arr[:-1]: the result equals numpy's ``out += a * b``."""
    arr = np.arange(6, dtype=np.float64)
    want = arr.copy()
    want[1:] += want[:-1] * np.ones(5)
    k.addmul(arr[1:], arr[:-1], np.ones(5))
    np.testing.assert_array_equal(arr, want)


# ----- the numba cache fallback ------------------------------------------------------------


def _double(x: float) -> float:
    return 2.0 * x


def test_jit_falls_back_to_no_cache_with_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    """When numba.njit(cache=True) raises, jit() warns and compiles with cache=False."""
    real_njit = numba.njit
    calls: list[dict[str, Any]] = []

    def fake_njit(*args: Any, **kwargs: Any) -> Any:
        calls.append(dict(kwargs))
        if kwargs.get("cache"):
            raise RuntimeError("cannot cache function '_double': no locator available")
        return real_njit(*args, **kwargs)

    monkeypatch.setattr(numba, "njit", fake_njit)
    with pytest.warns(RuntimeWarning, match=r"cannot cache _double.*no locator.*without a cache"):
        fast_double = _jit.jit(parallel=False)(_double)
    assert fast_double(3.5) == 7.0
    assert [c["cache"] for c in calls] == [True, False]
    assert all(c["nogil"] and c["error_model"] == "numpy" and c["parallel"] is False for c in calls)


def test_jit_passes_options_when_caching_works(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without an error jit() calls numba.njit once, with cache=True and its options, no warning;
    ``fastmath`` is always set (``False``: strict), so no kernel inherits its caller's flags."""
    calls: list[dict[str, Any]] = []

    def fake_njit(**kwargs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        calls.append(kwargs)
        return lambda fn: fn

    monkeypatch.setattr(numba, "njit", fake_njit)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _jit.jit(parallel=True)(_double) is _double
    assert calls == [{"cache": True, "nogil": True, "error_model": "numpy", "parallel": True, "fastmath": False}]


def _run(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def test_import_with_unwritable_numba_cache_dir(tmp_path: Path) -> None:
    """``import gradtape`` succeeds with NUMBA_CACHE_DIR pointing at a read-only directory."""
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("running as root: a 0o500 directory is still writable")
        proc = _run("import gradtape; print('ok')", {**os.environ, "NUMBA_CACHE_DIR": str(ro)})
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "ok"
    finally:
        ro.chmod(0o700)


def test_import_and_kernels_work_with_no_cache_location_at_all(tmp_path: Path) -> None:
    """With every numba cache location blocked (a file where each directory must go, so this
    holds for root too), gradtape imports, warns, and its kernels run uncached."""
    blocker = tmp_path / "blocker"
    blocker.write_text("not a directory")
    site = tmp_path / "site"
    src = Path(gradtape.__file__).resolve().parent
    shutil.copytree(src, site / "gradtape", ignore=shutil.ignore_patterns("__pycache__"))
    for d in [site / "gradtape", *(p for p in (site / "gradtape").rglob("*") if p.is_dir())]:
        (d / "__pycache__").write_text("blocks numba's in-tree cache")
    env = {
        **os.environ,
        "PYTHONPATH": str(site),
        "PYTHONDONTWRITEBYTECODE": "1",
        "NUMBA_CACHE_DIR": str(blocker / "numba"),
        "XDG_CACHE_HOME": str(blocker / "xdg"),
        "HOME": str(blocker),
    }
    code = (
        "import numpy as np, gradtape\n"
        "from gradtape.devices.kernels import elementwise as k\n"
        "o = np.zeros(3); k.addmul(o, np.ones(3), np.full(3, 2.0))\n"
        "print(gradtape.__file__); print(o.tolist())\n"
    )
    proc = _run(code, env)
    assert proc.returncode == 0, proc.stderr
    where, values = proc.stdout.splitlines()
    assert Path(where).is_relative_to(site)
    assert values == "[2.0, 2.0, 2.0]"
    assert "compiling without a cache" in proc.stderr


@pytest.mark.parametrize(
    ("given", "layer", "expected"),
    [(None, "omp", "PASSIVE"), ("ACTIVE", "omp", "ACTIVE"), (None, None, "unset"), ("ACTIVE", None, "ACTIVE")],
)
def test_openmp_workers_do_not_spin_unless_asked(given: str | None, layer: str | None, expected: str) -> None:
    """Where numba's kernels run on OpenMP, importing gradtape sets OMP_WAIT_POLICY=PASSIVE
    (spinning workers would starve OpenBLAS); on TBB (the default where the tbb wheel
    loads) it leaves the variable alone, so PyTorch's OpenMP in the same process keeps its
    own policy. A value the user set is never changed."""
    from gradtape.devices.kernels import _jit

    if layer is None and not _jit.TBB_LOADED:
        pytest.skip("no tbb here: numba's kernels run on OpenMP")
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "NUMBA_THREADING_LAYER")}
    if given is not None:
        env["OMP_WAIT_POLICY"] = given
    if layer is not None:
        env["NUMBA_THREADING_LAYER"] = layer
    code = "import os, gradtape; print(os.environ.get('OMP_WAIT_POLICY', 'unset'))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == expected


_FAULTS = """
import resource, sys
import numpy as np
import gradtape
from gradtape.devices.kernels import _malloc
a = [np.ones(s) for s in (3 << 20, 5 << 20)]  # 24 and 40 MB, touched: the heap grows once
del a
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):  # a step's large temporaries, allocated, written and freed
    a, b = np.ones(3 << 20), np.ones(5 << 20)
    del a, b
print(_malloc.TUNED, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux only")
def test_malloc_thresholds_stop_large_temporaries_from_faulting() -> None:
    """Importing gradtape sets glibc's mmap and trim thresholds, so arrays of 24 and 40 MB
    freed and allocated again come back without page faults; GRADTAPE_MALLOC=default and a
    MALLOC_* variable of the user's keep glibc's defaults (and the faults)."""
    from gradtape.devices.kernels import _malloc

    if not _malloc.TUNED:
        pytest.skip("not glibc, or the environment keeps malloc's defaults")
    base = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GRADTAPE_MALLOC"}

    def run(**extra: str) -> tuple[str, int]:
        out = subprocess.run(
            [sys.executable, "-c", _FAULTS], env={**base, **extra}, capture_output=True, text=True, check=True
        )
        tuned, faults = out.stdout.split()
        return tuned, int(faults)

    tuned, faults = run()
    default, default_faults = run(GRADTAPE_MALLOC="default")
    user, _ = run(MALLOC_TOP_PAD_="0")
    assert (tuned, default, user) == ("True", "False", "False")
    # 20 rounds of 64 MB written: 327,680 small pages (640 huge ones) by default; with the
    # thresholds almost none fault (measured 0 against 11,076)
    assert default_faults >= 200 and faults * 10 <= default_faults, (faults, default_faults)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [7, 2047, 2048, 64 * 128, (1 << 20) + 3])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_relu_forward_equals_np_maximum(dtype: Any, size: int, layout: str) -> None:
    """The relu kernel (serial, parallel) and its np.maximum path agree with np.maximum(x, 0)
    bit for bit, NaN (propagated), -0.0 (to 0.0) and infinities included."""
    from gradtape.devices.kernels import activations as ka

    rng = np.random.default_rng(size)
    x = rng.standard_normal(size).astype(dtype)
    x[:5] = [np.nan, -0.0, 0.0, -np.inf, np.inf]
    if layout == "transposed":
        x = np.ascontiguousarray(x[: size - size % 7].reshape(7, -1)).T
    got = ka.relu(x)
    want = np.maximum(x, dtype(0))
    assert got.shape == x.shape and got.dtype == x.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_relu_forward_rejects_integers() -> None:
    """An integer array is a DTypeError naming the dtype, not a numba error."""
    from gradtape.devices.kernels import activations as ka

    with pytest.raises(DTypeError, match="relu: input has dtype int64"):
        ka.relu(np.arange(4096))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided_1d", "large"])
def test_relu_grad_equals_masked_gradient(dtype: Any, layout: str) -> None:
    """relu_grad(x, g) == g * (x > 0) as a new array, on every path (serial, parallel, numpy)."""
    rng = np.random.default_rng(3)
    n = (1 << 20) + 5 if layout == "large" else 24
    x = rng.standard_normal(n).astype(dtype)
    g = rng.standard_normal(n).astype(dtype)
    x[:3] = [0.0, np.nan, -0.0]
    if layout == "transposed":
        x, g = x.reshape(4, 6).T, g.reshape(4, 6).T
    elif layout == "strided_1d":
        x, g = x[::2], g[::2]
    got = k.relu_grad(x, g)
    assert got.shape == x.shape and got.dtype == x.dtype
    np.testing.assert_array_equal(got, np.where(x > 0, g, 0))


def test_relu_grad_errors_name_shapes_and_dtypes() -> None:
    """Mismatched shapes are a ShapeError, mixed or integer dtypes a DTypeError."""
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ShapeError, match=r"\(3, 2\)"):
        k.relu_grad(x, np.ones((3, 2), np.float32))
    with pytest.raises(ShapeError, match=r"x \(2, 3\) and g \(1, 3\)"):
        k.relu_grad(x, np.ones((1, 3), np.float32))  # broadcastable is not enough
    with pytest.raises(DTypeError, match="float64"):
        k.relu_grad(x, np.ones((2, 3), np.float64))
    with pytest.raises(DTypeError, match="int64"):
        k.relu_grad(np.ones(3, np.int64), np.ones(3, np.int64))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(64, 128), (1, 3), (0, 5), (7, 1)])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_sum_rows_equals_numpy_axis0_sum(dtype: Any, shape: tuple[int, int], layout: str) -> None:
    """sum_rows(x) is x.sum(axis=0) exactly (same order of additions), kernel or numpy path."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal(shape).astype(dtype)
    if layout == "transposed":
        x = np.ascontiguousarray(x.T).T
    got = k.sum_rows(x)
    assert got.dtype == x.dtype and got.shape == (shape[1],)
    np.testing.assert_array_equal(got, x.sum(axis=0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(64, 128), (1, 3), (0, 5), (2048, 1024)])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_add_rows_equals_numpy_broadcast_add(dtype: Any, shape: tuple[int, int], layout: str) -> None:
    """add_rows(out, b) is numpy's out += b bit for bit, on the serial kernel, the two-thread
    one (2048 x 1024 is past PARALLEL_THRESHOLD) and numpy's path (a transposed out)."""
    assert 2048 * 1024 >= k.PARALLEL_THRESHOLD
    rng = np.random.default_rng(6)
    out = rng.standard_normal(shape).astype(dtype)
    if layout == "transposed":
        out = np.ascontiguousarray(out.T).T
    b = rng.standard_normal(shape[1]).astype(dtype)
    want = out + b
    k.add_rows(out, b)
    np.testing.assert_array_equal(out, want)


def test_add_rows_of_a_wrong_width_is_numpys_error() -> None:
    """A bias of another length is numpy's broadcasting ValueError, nothing written."""
    out = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="broadcast"):
        k.add_rows(out, np.ones(4, np.float32))
    np.testing.assert_array_equal(out, 1.0)


def test_sum_rows_rejects_non_2d() -> None:
    """A 1-D or 3-D array is a ShapeError naming its shape."""
    with pytest.raises(ShapeError, match=r"sum_rows: expected a 2-D array, got shape \(2, 3, 4\)"):
        k.sum_rows(np.zeros((2, 3, 4), np.float32))


def test_cross_entropy_kernels_check_their_inputs() -> None:
    """The fused cross-entropy kernels index rows by the targets without bounds checks, so
    their wrappers reject what would read or write out of bounds, naming shapes and dtypes;
    an out-of-range index in the backward leaves the softmax untouched."""
    from gradtape.devices.kernels import softmax as ks

    x = np.zeros((3, 4), np.float32)
    with pytest.raises(ShapeError, match=r"targets of shape \(2,\) do not match logits of shape \(3, 4\)"):
        ks.cross_entropy_forward(x, np.array([0, 1]))
    with pytest.raises(DTypeError, match="targets must be an integer array, got float64"):
        ks.cross_entropy_forward(x, np.zeros(3))
    with pytest.raises(ShapeError, match=r"logits must be a 2-D array \(N, C\), got shape \(3, 4, 1\)"):
        ks.cross_entropy_forward(x[..., None], np.array([0, 1, 2]))
    with pytest.raises(DTypeError, match="logits have dtype int64"):
        ks.cross_entropy_forward(np.zeros((3, 4), np.int64), np.array([0, 1, 2]))
    with pytest.raises(ValueError, match=r"class indices must lie in \[0, 4\), got min 0 and max 4"):
        ks.cross_entropy_forward(x, np.array([0, 4, 1]))
    _, p = ks.cross_entropy_forward(x, np.array([0, 3, 1]))
    before = p.copy()
    with pytest.raises(ValueError, match=r"class indices must lie in \[0, 4\), got min -1 and max 2"):
        ks.cross_entropy_backward(p, np.array([2, -1, 0]), 1.0)
    np.testing.assert_array_equal(p, before)
    with pytest.raises(ShapeError, match=r"targets of shape \(4,\)"):
        ks.cross_entropy_backward(p, np.array([0, 1, 2, 3]), 1.0)
    g = ks.cross_entropy_backward(p, np.array([0, 3, 1]), 0.5)
    want = before * 0.5
    want[[0, 1, 2], [0, 3, 1]] -= 0.5
    np.testing.assert_allclose(g, want, rtol=1e-6)


def test_relu_and_sum_rows_take_array_likes() -> None:
    """Nested lists are converted, as numpy's own functions do, rather than failing on .dtype."""
    from gradtape.devices.kernels import activations as ka

    np.testing.assert_array_equal(ka.relu([-1.0, 2.0, np.nan]), [0.0, 2.0, np.nan])
    np.testing.assert_array_equal(k.sum_rows([[1.0, 2.0], [3.0, 4.0]]), [4.0, 6.0])


def test_the_float32_exp_copies_are_the_same_code() -> None:
    """rnn.py and scan.py each keep a copy of Cephes' ``expf`` (numba's cache covers a
    kernel's own module only): the two must stay the same code."""
    from gradtape.devices.kernels import rnn, scan

    a, b = rnn._expf.__code__, scan._expf.__code__
    assert (a.co_code, a.co_consts[1:], a.co_names) == (b.co_code, b.co_consts[1:], b.co_names)
