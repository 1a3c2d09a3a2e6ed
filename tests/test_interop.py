"""Interop: tensors cross to numpy, PyTorch and JAX and back without copies (DLPack, from_numpy).

Sharing is proved by writing through one side and reading through the other (JAX arrays are
immutable: there the buffer pointers are compared instead).
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pytest

import gradtape
from gradtape import Cpu, DTypeError, Gradients, NoneTape, Tensor, from_dlpack

DEV = Cpu()


@pytest.fixture
def torch() -> Any:
    """PyTorch (skipped when missing)."""
    return pytest.importorskip("torch", reason="PyTorch is not installed")


@pytest.fixture
def jnp() -> Any:
    """jax.numpy on the CPU (skipped when JAX is missing)."""
    reason = "JAX is not installed (an optional test dependency)"
    pytest.importorskip("jax", reason=reason, exc_type=ImportError)
    return pytest.importorskip("jax.numpy", reason=reason, exc_type=ImportError)


def _ptr(a: np.ndarray[Any, Any]) -> int:
    return int(a.__array_interface__["data"][0])


def _aligned(shape: tuple[int, ...], dtype: Any, align: int = 64) -> np.ndarray[Any, Any]:
    """A zeroed C-contiguous array whose buffer starts on an ``align``-byte boundary (XLA
    shares only such buffers)."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape)) * dt.itemsize
    raw = np.zeros(n + align, np.uint8)
    off = (-_ptr(raw)) % align
    out: np.ndarray[Any, Any] = raw[off : off + n].view(dt).reshape(shape)
    assert _ptr(out) % align == 0
    return out


# ----- gradtape <-> PyTorch ------------------------------------------------------------------


def test_gradtape_to_torch_shares_memory(torch: Any) -> None:
    """torch.from_dlpack(t) is a view of t's buffer: writes go both ways."""
    t = DEV.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    x = torch.from_dlpack(t)
    assert tuple(x.shape) == (3, 4) and x.dtype == torch.float32
    assert x.data_ptr() == _ptr(t.data)
    x[1, 2] = -7.0
    assert t.data[1, 2] == -7.0
    t.data[0, 0] = 42.0
    assert float(x[0, 0]) == 42.0


def test_torch_to_gradtape_shares_memory(torch: Any) -> None:
    """gradtape.from_dlpack(x) is an untraced leaf over x's buffer: writes go both ways."""
    x = torch.arange(6, dtype=torch.float64).reshape(2, 3)
    t = from_dlpack(x)
    assert isinstance(t, Tensor) and t.tape is gradtape.tape.NONE_TAPE
    assert t.is_leaf and not t.requires_grad
    assert t.shape == (2, 3) and t.dtype == np.float64
    assert _ptr(t.data) == x.data_ptr()
    x[0, 1] = 100.0
    assert t.data[0, 1] == 100.0
    t.data[1, 2] = -1.0
    assert float(x[1, 2]) == -1.0
    assert isinstance(t.device, Cpu)


def test_torch_round_trip_is_the_same_buffer(torch: Any) -> None:
    """torch -> gradtape -> torch ends on the original storage."""
    x = torch.randn(4, 5)
    back = torch.from_dlpack(from_dlpack(x))
    back[2, 3] = 9.0
    assert float(x[2, 3]) == 9.0
    assert back.data_ptr() == x.data_ptr()


def test_strided_torch_tensor_is_shared_not_copied(torch: Any) -> None:
    """A transposed / sliced torch tensor stays a strided view (no copy) and gradtape's ops
    and gradients on it equal those on a contiguous copy and PyTorch's."""
    base = torch.randn(6, 8, dtype=torch.float64)
    xt = base.t()[::2]  # (4, 6), non-contiguous
    t = from_dlpack(xt)
    assert not t.data.flags.c_contiguous
    assert _ptr(t.data) == xt.data_ptr()
    base[0, 0] = 5.0  # element (0, 0) of xt
    assert t.data[0, 0] == 5.0

    def f(a: Tensor[Any, Any]) -> Tensor[Any, Any]:
        return ((a.relu() * a.tanh()) @ a.T).sum() + a.softmax(-1).max() + a.layer_norm().square().mean()

    g = f(t.leaky_trace()).backward().get(t)
    c = DEV.from_numpy(np.ascontiguousarray(t.data))
    gc = f(c.leaky_trace()).backward().get(c)
    np.testing.assert_allclose(g.data, gc.data, rtol=1e-12, atol=1e-12)

    xr = xt.detach().clone().requires_grad_(True)
    ln = torch.nn.functional.layer_norm(xr, (xr.shape[-1],))
    out = ((xr.relu() * xr.tanh()) @ xr.T).sum() + xr.softmax(-1).max() + ln.square().mean()
    out.backward()
    np.testing.assert_allclose(g.data, xr.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_export_of_traced_tensor_is_allowed_and_detached(torch: Any) -> None:
    """A tensor on a live tape exports its values (shared); backward is unaffected and no
    gradient flows through the export."""
    x = DEV.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=np.float64)
    grads = Gradients.leaky()
    xt = x.trace(grads)
    y = xt * xt
    assert xt.tape.OWNS_TAPE and y.tape.OWNS_TAPE
    ty = torch.from_dlpack(y)
    assert ty.data_ptr() == _ptr(y.data) and not ty.requires_grad
    np.testing.assert_array_equal(ty.numpy(), [[1.0, 4.0], [9.0, 16.0]])
    g = y.sum().backward()
    np.testing.assert_array_equal(g.get(x).data, [[2.0, 4.0], [6.0, 8.0]])


# ----- gradtape <-> numpy --------------------------------------------------------------------


def test_gradtape_to_numpy_via_dlpack_shares_memory() -> None:
    """np.from_dlpack(t) views t's buffer; copy=True gives an independent copy."""
    t = DEV.tensor(np.arange(5, dtype=np.float64))
    a = np.from_dlpack(t)
    assert np.shares_memory(a, t.data)
    a[3] = -3.0
    assert t.data[3] == -3.0
    b = np.from_dlpack(t, copy=True)
    assert not np.shares_memory(b, t.data)
    c = np.from_dlpack(t, device="cpu")
    assert np.shares_memory(c, t.data)


def test_dlpack_device_is_cpu() -> None:
    """__dlpack_device__ reports (kDLCPU, 0)."""
    assert DEV.zeros((2,)).__dlpack_device__() == (1, 0)


def test_readonly_tensor_exports_readonly() -> None:
    """A read-only buffer (a broadcast_to output) is exported read-only to DLPack 1.0
    consumers and refused by the legacy protocol, which cannot mark it."""
    t = DEV.tensor([1.0, 2.0, 3.0]).broadcast_to((2, 3))
    assert not t.data.flags.writeable
    a = np.from_dlpack(t)
    assert not a.flags.writeable and np.shares_memory(a, t.data)
    with pytest.raises(BufferError):
        t.__dlpack__()


def test_cpu_from_numpy_shares_memory() -> None:
    """Cpu.from_numpy holds the array itself: writes go both ways, layout is kept."""
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = DEV.from_numpy(a)
    assert t.data is a and t.device is DEV and t.is_leaf and not t.requires_grad
    a[2, 3] = 77.0
    assert t.data[2, 3] == 77.0
    np.from_dlpack(t)[0, 0] = -1.0
    assert a[0, 0] == -1.0
    v = a.T
    tv = DEV.from_numpy(v)
    assert tv.shape == (4, 3) and np.shares_memory(tv.data, a) and not tv.data.flags.c_contiguous


def test_from_dlpack_of_numpy_and_of_a_tensor() -> None:
    """from_dlpack takes numpy arrays and gradtape tensors (a new leaf over the same buffer,
    on the tensor's own device)."""
    a = np.linspace(0.0, 1.0, 4)
    t = from_dlpack(a)
    a[1] = 5.0
    assert t.data[1] == 5.0
    dev = Cpu(seed=7)
    src = dev.tensor([1.0, 2.0]).leaky_trace()
    u = from_dlpack(src)
    assert u.device is dev and u.id != src.id and u.tape is gradtape.tape.NONE_TAPE
    assert np.shares_memory(u.data, src.data)
    other = Cpu(seed=1)
    assert from_dlpack(a, device=other).device is other


def test_from_numpy_rejects_non_arrays() -> None:
    """from_numpy wants a numpy array (lists go to Cpu.tensor)."""
    with pytest.raises(TypeError, match=r"from_numpy: expected a numpy array, got list"):
        DEV.from_numpy([1.0, 2.0])  # type: ignore[arg-type]


def test_from_dlpack_rejects_non_dlpack_objects() -> None:
    """from_dlpack wants an object implementing __dlpack__."""
    with pytest.raises(TypeError, match=r"from_dlpack: expected an array implementing __dlpack__ .*got list"):
        from_dlpack([1.0, 2.0])  # type: ignore[call-overload]


def test_torch_tensor_requiring_grad_must_be_detached(torch: Any) -> None:
    """PyTorch refuses to export a tensor that requires grad; its detach() crosses."""
    x = torch.ones(2, requires_grad=True)
    with pytest.raises(BufferError, match=r"detach"):
        from_dlpack(x)
    assert from_dlpack(x.detach()).data.tolist() == [1.0, 1.0]


class _FakeCuda:
    """An array that claims to live on CUDA device 1."""

    def __dlpack__(self, /, *, stream: Any = None) -> Any:
        raise AssertionError("from_dlpack must check the device before importing")

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, 1)


def test_from_dlpack_rejects_non_cpu_devices() -> None:
    """An array on a GPU raises BufferError naming the device and the fix."""
    with pytest.raises(BufferError, match=r"from_dlpack: the array lives on device CUDA:1 .*x\.cpu\(\)"):
        from_dlpack(_FakeCuda())


# ----- dtypes --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.bool_, np.int64, np.int32, np.uint8])
def test_dtype_round_trips_numpy(dtype: Any) -> None:
    """float32, float64, bool and integer arrays cross both ways with their dtype, shared."""
    a = (np.arange(6) % 3).astype(dtype).reshape(2, 3)
    for t in (from_dlpack(a), DEV.from_numpy(a)):
        assert t.dtype == a.dtype and np.shares_memory(t.data, a)
        back = np.from_dlpack(t)
        assert back.dtype == a.dtype and np.shares_memory(back, a)
        np.testing.assert_array_equal(back, a)


@pytest.mark.parametrize("name", ["float32", "float64", "bool", "int64"])
def test_dtype_round_trips_torch(torch: Any, name: str) -> None:
    """float32, float64, bool and int64 torch tensors cross both ways with their dtype, shared."""
    x = (torch.arange(6) % 2).to(getattr(torch, name)).reshape(3, 2)
    t = from_dlpack(x)
    assert t.dtype == np.dtype(name) and _ptr(t.data) == x.data_ptr()
    y = torch.from_dlpack(t)
    assert y.dtype == x.dtype and y.data_ptr() == x.data_ptr()
    assert torch.equal(x, y)


def test_torch_bool_mask_and_int_indices_work_in_ops(torch: Any) -> None:
    """A torch bool mask drives where; torch int64 indices drive index_select."""
    x = DEV.tensor([[1.0, -2.0], [-3.0, 4.0]])
    mask = from_dlpack(torch.tensor([[True, False], [False, True]]))
    np.testing.assert_array_equal(gradtape.ops.where(mask, x, 0.0).data, [[1.0, 0.0], [0.0, 4.0]])
    idx = from_dlpack(torch.tensor([1, 0, 1]))
    np.testing.assert_array_equal(x.index_select(idx.data, 0).data[:, 0], [-3.0, 1.0, -3.0])


@pytest.mark.parametrize("dtype", [np.float16, np.complex64, np.complex128, np.longdouble])
def test_unsupported_numpy_dtypes_raise(dtype: Any) -> None:
    """float16, complex, long double: DTypeError naming the function and the dtype."""
    a = np.zeros(3, dtype)
    name = str(np.dtype(dtype))
    with pytest.raises(DTypeError, match=rf"from_numpy: dtype {name} "):
        DEV.from_numpy(a)
    if dtype is not np.longdouble:  # DLPack has no long double
        with pytest.raises(DTypeError, match=rf"from_dlpack: dtype {name} "):
            from_dlpack(a)


def test_object_and_byteswapped_arrays_raise() -> None:
    """from_numpy rejects object arrays and non-native byte order."""
    with pytest.raises(DTypeError, match=r"from_numpy: dtype object"):
        DEV.from_numpy(np.array([1, "a"], dtype=object))
    swapped = np.zeros(3, np.dtype(np.float32).newbyteorder())
    with pytest.raises(DTypeError, match=r"from_numpy: dtype >f4 .*non-native byte order"):
        DEV.from_numpy(swapped)


@pytest.mark.parametrize("name", ["float16", "bfloat16", "complex64", "complex128"])
def test_unsupported_torch_dtypes_raise(torch: Any, name: str) -> None:
    """float16, bfloat16 and complex torch tensors: DTypeError naming from_dlpack and the dtype."""
    x = torch.zeros(3, dtype=getattr(torch, name))
    with pytest.raises(DTypeError, match=rf"from_dlpack: dtype (torch\.)?{name} "):
        from_dlpack(x)


# ----- gradients through imported tensors ----------------------------------------------------


def test_imported_tensor_is_differentiable_like_torch(torch: Any) -> None:
    """A tensor from from_dlpack can be traced or require grad; its gradient equals PyTorch's and backward
    writes nothing into the source tensors."""
    xs = torch.randn(3, 4, dtype=torch.float64)
    ws = torch.randn(4, 2, dtype=torch.float64)
    xs0, ws0 = xs.clone(), ws.clone()
    x, w = from_dlpack(xs), from_dlpack(ws).requires_grad_()
    grads = Gradients.leaky()
    xt = x.trace(grads)

    loss = ((xt @ w).tanh() * 2.0).sum() + (xt * xt).sum() + xt.sin().mean() + xt.relu().sum()
    g = loss.backward()
    gx, gw = g.get(x), g.get(w)

    xr, wr = xs0.clone().requires_grad_(True), ws0.clone().requires_grad_(True)
    ((xr @ wr).tanh() * 2.0).sum().add((xr * xr).sum()).add(xr.sin().mean()).add(xr.relu().sum()).backward()
    np.testing.assert_allclose(gx.data, xr.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gw.data, wr.grad.numpy(), rtol=1e-12, atol=1e-12)
    assert torch.equal(xs, xs0) and torch.equal(ws, ws0)
    assert not np.shares_memory(gx.data, x.data) and not np.shares_memory(gw.data, w.data)
    assert w.grad is not None  # backward also filled the .grad of w, which requires grad
    np.testing.assert_allclose(w.grad.data, wr.grad.numpy(), rtol=1e-12, atol=1e-12)
    assert not np.shares_memory(w.grad.data, w.data)
    assert isinstance(float(loss.item()), float)


def test_gradient_into_shared_numpy_leaf_leaves_source_alone() -> None:
    """Accumulating gradients of a leaf used many times never writes into the source array."""
    a = np.array([[1.0, -2.0, 3.0]], dtype=np.float32)
    a0 = a.copy()
    t = DEV.from_numpy(a)
    tt = t.leaky_trace()
    loss = tt.sum() + tt.reshape((3,)).sum() + tt.T.sum() + (tt * tt).sum()
    g = loss.backward().get(t)
    np.testing.assert_array_equal(g.data, 3.0 + 2.0 * a0)
    np.testing.assert_array_equal(a, a0)


def test_from_dlpack_preserves_shape_type() -> None:
    """from_dlpack of a gradtape tensor keeps its shape type (typed overload)."""
    t: Tensor[tuple[int, int], NoneTape] = DEV.zeros((2, 3))
    u: Tensor[tuple[int, int], NoneTape] = from_dlpack(t)
    assert u.shape == (2, 3)


# ----- JAX -----------------------------------------------------------------------------------


def test_jax_to_gradtape_shares_buffer(jnp: Any) -> None:
    """from_dlpack of a JAX array views JAX's buffer (read-only: JAX arrays are immutable)."""
    ja = jnp.arange(12, dtype=jnp.float32).reshape(3, 4)
    t = from_dlpack(ja)
    assert _ptr(t.data) == ja.unsafe_buffer_pointer()
    assert t.dtype == np.float32 and t.shape == (3, 4)
    assert not t.data.flags.writeable
    np.testing.assert_array_equal(t.data, np.arange(12, dtype=np.float32).reshape(3, 4))
    g = (t.leaky_trace() * 3.0).sum().backward().get(t)
    np.testing.assert_array_equal(g.data, np.full((3, 4), 3.0, np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_gradtape_to_jax_shares_aligned_buffer(jnp: Any, dtype: Any) -> None:
    """jax.numpy.from_dlpack of a tensor shares its buffer when it is 64-byte aligned (XLA's
    rule; JAX copies other buffers) and round-trips back to the same buffer."""
    a = _aligned((4, 4), dtype)
    a[...] = (np.arange(16) % 2).reshape(4, 4)
    t = DEV.from_numpy(a)
    ja = jnp.from_dlpack(t)
    assert ja.unsafe_buffer_pointer() == _ptr(t.data)
    assert ja.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(np.asarray(ja), a)
    back = from_dlpack(ja)
    assert _ptr(back.data) == _ptr(a)


# ----- the package ---------------------------------------------------------------------------


def test_import_gradtape_gives_submodules() -> None:
    """A bare ``import gradtape`` (fresh interpreter) exposes the subpackages and from_dlpack."""
    code = textwrap.dedent(
        """
        import gradtape
        for name in ("nn", "optim", "losses", "ops", "functional", "autograd", "autodiff", "testing"):
            getattr(gradtape, name)
        gradtape.nn.Linear
        gradtape.optim.SGD
        assert "from_dlpack" in gradtape.__all__ and gradtape.from_dlpack.__module__ == "gradtape.devices.cpu"
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_readme_interop_block_runs(torch: Any) -> None:
    """README's interop example runs (it asserts what it claims)."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    start = readme.index("## Interop: numpy, PyTorch, JAX\n")
    section = readme[start : readme.index("\n## ", start + 1)]
    (block,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    exec(compile(block, "README.md:interop", "exec"), {})
