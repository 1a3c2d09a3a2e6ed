"""Issue 15's first failures: copies that shared gradients, index arrays that leaked numba
errors or were truncated, and Python protocols (iter, float, int) on tensors.

Each test is written the way a user hit the failure: an EMA copy of a model, a target array
read from a big-endian file, ``list()`` of a scalar.
"""

from __future__ import annotations

import copy
import pickle
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

from gradtape import Cpu, NoneTape, TapeError, Tensor, nn, ops
from gradtape.errors import DTypeError, ShapeError
from gradtape.losses import cross_entropy, mse_loss
from gradtape.nn import checkpoint

F64 = np.float64


def _model(dev: Cpu) -> nn.Linear[int, int]:
    return nn.Linear(3, 2, dtype=F64, dev=dev)


def _grad_of_weight(m: nn.Linear[int, int], x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    g = m(m.weight.device.tensor(x).leaky_trace()).sum().backward()
    return g.get(m.weight).numpy().copy()


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_a_copied_model_has_its_own_parameters_and_gradients(how: str) -> None:
    """The issue's repro: (m(x).sum() + m2(x).sum()).backward() gave m.weight twice its
    gradient when m2 was a copy of m. Now each model gets exactly its own gradient."""
    dev = Cpu(seed=0)
    m = _model(dev)
    m2 = copy.deepcopy(m) if how == "deepcopy" else pickle.loads(pickle.dumps(m))
    assert {p.id for p in m.parameters()}.isdisjoint(p.id for p in m2.parameters())
    for p, q in zip(m.parameters(), m2.parameters(), strict=True):
        np.testing.assert_array_equal(p.numpy(), q.numpy())
        assert not np.shares_memory(p.numpy(), q.numpy())
        assert q.requires_grad and q.dtype == p.dtype
    x = np.random.default_rng(0).standard_normal((4, 3))
    alone = _grad_of_weight(m, x)
    xt = dev.tensor(x).leaky_trace()
    g = (m(xt).sum() + m2(xt).sum()).backward()
    np.testing.assert_allclose(g.get(m.weight).numpy(), alone)
    np.testing.assert_allclose(g.get(m2.weight).numpy(), alone)
    # the copy trains apart: updating it leaves the original untouched
    m2.weight.data[...] += 1.0
    assert not np.allclose(m.weight.numpy(), m2.weight.numpy())


def test_deepcopy_of_a_traced_tensor_is_refused_with_a_clear_error() -> None:
    dev = Cpu()
    x = dev.ones((2,)).leaky_trace()
    with pytest.raises(TapeError, match=r"deepcopy: tensor of shape \(2,\).*detach"):
        copy.deepcopy(x)
    with pytest.raises(TapeError, match=r"pickle: .*detach"):
        pickle.dumps(x * 2.0)
    y = copy.deepcopy(x.detach())
    assert y.id != x.id and not y.requires_grad


def test_loading_a_checkpoint_keeps_the_target_ids(tmp_path: Path) -> None:
    """load() writes into the target's tensors: ids (and so optimizer state and stores keyed
    by them) survive, as PyTorch's load_state_dict keeps the parameter objects."""
    dev = Cpu(seed=1)
    src, dst = _model(dev), _model(dev)
    ids = [p.id for p in dst.parameters()]
    checkpoint.save(src, tmp_path / "m.safetensors")
    checkpoint.load(dst, tmp_path / "m.safetensors")
    assert [p.id for p in dst.parameters()] == ids
    for p, q in zip(src.parameters(), dst.parameters(), strict=True):
        np.testing.assert_array_equal(p.numpy(), q.numpy())


@pytest.mark.parametrize("order", ["<i8", ">i8", ">i4", "<u2"])
def test_index_arrays_of_any_byte_order_and_width(order: str) -> None:
    """A big-endian target array leaked a numba TypingError from cross_entropy; every index
    argument now goes through one conversion (ops._util.int_indices)."""
    dev = Cpu(seed=0)
    logits = dev.randn((3, 4), dtype=F64)
    native = cross_entropy(logits, np.array([0, 1, 2])).item()
    assert cross_entropy(logits, np.array([0, 1, 2], dtype=order)).item() == pytest.approx(native, rel=1e-12)
    w = dev.randn((5, 2), dtype=F64)
    idx = np.array([4, 0, 3], dtype=order)
    np.testing.assert_array_equal(ops.embedding(idx, w).numpy(), w.numpy()[[4, 0, 3]])
    np.testing.assert_array_equal(w.index_select(idx).numpy(), w.numpy()[[4, 0, 3]])
    np.testing.assert_array_equal(w.gather(idx[::-1]).numpy(), w.numpy()[[3, 0, 4]])  # non-contiguous


@pytest.mark.parametrize(
    "call",
    [
        lambda w: ops.embedding(np.array([1.7, 2.2]), w),
        lambda w: ops.embedding([1.7, 2.2], w),  # type: ignore[list-item]  # mypy rejects it too
        lambda w: w.index_select(np.array([True, False])),
        lambda w: cross_entropy(w, np.array([0.0, 1.0, 1.0, 0.0, 1.0])),
    ],
)
def test_float_and_bool_indices_raise_instead_of_truncating(call: object) -> None:
    """nn.Embedding read rows 1 and 2 for [1.7, 2.2]; floats and bools are not indices."""
    w = Cpu().randn((5, 2))
    with pytest.raises(DTypeError, match=r"^(embedding|index_select|cross_entropy): .*(integer|dtype)"):
        call(w)  # type: ignore[operator]


def test_iteration_float_and_int_follow_numpy_and_pytorch() -> None:
    dev = Cpu()
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        list(dev.ones(()))
    rows = list(dev.tensor(np.arange(6.0).reshape(2, 3)))
    assert [r.shape for r in rows] == [(3,), (3,)]
    np.testing.assert_array_equal(rows[1].numpy(), [3.0, 4.0, 5.0])
    assert float(dev.tensor([2.5])) == 2.5 and int(dev.tensor([[-2.7]])) == -2
    with pytest.raises(ShapeError, match=r"item: tensor of shape \(2,\) has 2 elements"):
        float(dev.ones((2,)))
    # iterating a traced tensor records each row: gradients flow back through it
    x = dev.tensor(np.arange(6.0).reshape(2, 3)).leaky_trace()
    first, second = x
    g = (first + second * 2.0).sum().backward()
    np.testing.assert_array_equal(g.get(x).numpy(), [[1.0] * 3, [2.0] * 3])


LIST: Any = [1.0]  # typed Any: mypy rejects these calls statically too (see tests/typing)
ARRAY: Any = np.ones((1, 1, 3, 3))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda dev: ops.relu(LIST), r"^relu: a must be a Tensor, got list \(wrap arrays"),
        (
            lambda dev: ops.conv2d(ARRAY, dev.ones((1, 1, 2, 2))),
            r"^conv2d: x must be a Tensor, got ndarray",
        ),
        (lambda dev: ops.linear(dev.ones((2, 3)), dev.ones((4, 3)), b=LIST), r"^linear: b must be a Tensor, got list"),
        (lambda dev: ops.concat([dev.ones((2,)), LIST]), r"^concat: tensors\[1\] must be a Tensor, got list"),
        (
            lambda dev: ops.stack(cast(Any, dev.ones((2,)))),
            r"^stack: tensors must be a list or tuple of tensors, got Tensor",
        ),
        (lambda dev: ops.embedding([0], LIST), r"^embedding: weight must be a Tensor, got list"),
        (lambda dev: mse_loss(LIST, dev.ones((1,))), r"^mse_loss: input must be a Tensor, got list"),
        (lambda dev: dev.ones((2, 3)).sum(axis=1.5), r"^sum: axis must be None, an int or a tuple of ints, got 1.5"),
        (lambda dev: ops.mean(dev.ones((2, 3)), axis=True), r"^mean: axis must be None, an int or a tuple of ints"),
        (lambda dev: dev.ones((2, 3)).max(axis=(0, 1.0)), r"^max: axis must be None, an int or a tuple of ints"),
    ],
)
def test_non_tensor_operands_and_axes_name_the_op_and_the_argument(call: Any, message: str) -> None:
    """ops.relu([1.0]) raised AttributeError: 'list' object has no attribute 'data', and
    a.sum(axis=1.5) "'float' object is not iterable". The functional API checks its tensor
    arguments, read from each op's typed signature (ops._util.checked), and the shared axis
    helper checks axes."""
    with pytest.raises(TypeError, match=message):
        call(Cpu())


def test_every_exported_function_is_checked_and_methods_are_not_wrapped() -> None:
    """A new op exported from gradtape.ops or gradtape.losses is covered without editing
    this test; Tensor methods call the unwrapped op (no per-call cost)."""
    import inspect

    from gradtape import Tensor, losses
    from gradtape.ops._util import _tensor_params

    wrapped = 0
    for module in (ops, losses):
        for name in module.__all__:
            fn = getattr(module, name)
            takes_tensors = bool(_tensor_params(inspect.unwrap(fn)))
            assert (fn is not inspect.unwrap(fn)) == takes_tensors, name
            wrapped += takes_tensors
    assert wrapped >= 60  # all but where (whose operands may be numbers)
    assert Tensor.relu is inspect.unwrap(ops.relu) and Tensor.relu is not ops.relu
    assert inspect.unwrap(ops.relu) is not ops.relu


@pytest.mark.parametrize("dtype", [np.int64, np.uint8, np.int32])
def test_attention_rejects_integer_masks_like_pytorch(dtype: type) -> None:
    """A 0/1 integer mask was added to the scores (masking nothing); PyTorch raises too."""
    dev = Cpu(seed=0)
    mha = nn.MultiHeadAttention(8, 2, dev=dev)
    x = dev.randn((2, 3, 8))
    causal = np.triu(np.ones((3, 3)), k=1)
    with pytest.raises(DTypeError, match=r"MultiHeadAttention: attn_mask must be bool .* got dtype (int|uint)"):
        mha(x, attn_mask=causal.astype(dtype))
    # the bool and float forms mask the same keys
    as_bool = mha(x, attn_mask=causal.astype(bool)).numpy()
    as_float = mha(x, attn_mask=np.where(causal > 0, -np.inf, 0.0)).numpy()
    np.testing.assert_allclose(as_bool, as_float, rtol=1e-6)


def test_embedding_layer_rejects_float_indices() -> None:
    """nn.Embedding read rows 1 and 2 for [1.7, 2.2]."""
    emb = nn.Embedding(5, 2, dev=Cpu())
    with pytest.raises(DTypeError, match=r"embedding: indices must be integers, got dtype float64"):
        emb(np.array([1.7, 2.2]))


def test_to_dtype_is_differentiable_both_ways() -> None:
    """dfdx's to_dtype: the gradient comes back in the input's dtype, to second order."""
    from gradtape import functional

    dev = Cpu(seed=0)
    x64 = dev.randn((4,), dtype=np.float64)
    x = x64.leaky_trace()
    y = x.to_dtype(np.float32)
    assert y.dtype == np.float32
    g = (y * y).sum().backward().get(x)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g.numpy(), 2 * x64.numpy(), rtol=1e-6)
    h = functional.hessian(lambda t: (ops.to_dtype(t, np.float32) ** 3).sum().to_dtype(np.float64), x64)
    np.testing.assert_allclose(np.asarray(h.numpy()), np.diag(6 * x64.numpy()), rtol=1e-5)
    with pytest.raises(DTypeError, match=r"to_dtype: casts between float32 and float64, got dtype int64"):
        x64.to_dtype(np.int64)
    with pytest.raises(DTypeError, match=r"to_dtype: a has dtype bool"):
        ops.to_dtype(Tensor(np.array([True]), dev), np.float32)


def test_recording_on_a_consumed_tape_names_the_users_call() -> None:
    """It said 'add_backward_op: this tape was consumed', naming no call the user made."""
    dev = Cpu()
    y = dev.randn((3,)).leaky_trace() * 2.0
    y.sum().backward()
    with pytest.raises(TapeError, match=r"^mul: an input's tape was consumed by execute\(\)/backward\(\)"):
        y * 3.0
    with pytest.raises(TapeError, match=r"^Linear: an input's tape was consumed"):
        nn.Linear(3, 2, dev=dev)(y)


def test_integer_and_bool_tensors_are_first_class_kinds() -> None:
    """Burn's int/bool kinds: comparisons give bool tensors, index ops take integer tensors
    (gradients flow to the indexed tensor), float-only ops refuse them naming the op."""
    dev = Cpu(seed=0)
    a = dev.randn((3, 4), dtype=F64)
    mask = a > 0.0
    assert mask.dtype == np.bool_ and not mask.requires_grad
    idx: Tensor[Any, NoneTape] = Tensor(np.array([2, 0, 2]), dev)
    np.testing.assert_array_equal(a.index_select(idx).numpy(), a.numpy()[[2, 0, 2]])
    np.testing.assert_array_equal(ops.embedding(idx, a).numpy(), a.numpy()[[2, 0, 2]])
    x = a.leaky_trace()
    g = x.index_select(idx).sum().backward().get(x).numpy()
    np.testing.assert_array_equal(g.sum(axis=1), [4.0, 0.0, 8.0])
    np.testing.assert_array_equal(ops.where(mask, a, 0.0).numpy(), np.where(a.numpy() > 0, a.numpy(), 0.0))
    with pytest.raises(DTypeError, match=r"^softmax: input has dtype int64"):
        idx.softmax()
    with pytest.raises(DTypeError, match=r"^exp: a has dtype bool"):
        ops.exp(mask)
