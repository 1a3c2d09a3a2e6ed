"""Every ``gradtape.nn`` layer with parameters trains as PyTorch does, used the way users train.

For each layer (and a few configurations of it) the gradient of ``loss = sum(out * w)`` (``w``
a fixed random projection, so the output gradient is not all ones) with respect to every
parameter, and to the input, must equal ``torch.nn``'s in float64. The torch module gets a
copy of gradtape's parameter values and the same input.

The gradients are taken the three ways a user takes them, not the way
:func:`gradtape.testing.gradcheck` does. gradcheck traces every parameter itself, and that
hid a bug: BatchNorm's ``weight``/``bias`` got silently-zero gradients when only the input
was traced. The three ways:

1. ``dfdx``: the documented usage. Trace only the input into ``m.alloc_grads()`` (plus
   ``retain_leafs([x])`` for the input's gradient); the parameters are plain tensors the
   module holds; ``loss.backward()``. The gradients are read from both the returned store
   and the ``alloc_grads`` store.
2. ``watch_params``: TensorFlow style, ``GradientTape(watch_accessed_variables=False)``
   as a context, ``tape.watch(m.parameters())`` with the input untraced,
   ``tape.gradient(loss, params)``.
3. ``auto_watch``: TensorFlow style, ``GradientTape()`` as a context that watches the
   module's parameters by itself; ``tape.watch(x)``;
   ``tape.gradient(loss, [x, m.parameters()])`` gives back the nested structure.

Usage 1 failed before the recording model of ``gradtape.tape.op_tape``: BatchNorm's affine
parameters and the key/value projections of cross-attention (untraced key/value) got zero
gradients, because an op on parameters alone recorded nothing.

Tolerance: ``rtol=1e-9, atol=1e-10`` (float64 throughout). Each comparison counts the
parameters it compared against the module's, so a parameter cannot be skipped silently. A
gradient that is all zeros fails on its own, with its own message, unless torch's is zero too
(no entry above ``atol``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from gradtape import Cpu, GradientTape, Tensor, nn

torch: Any = pytest.importorskip("torch")

Array = np.ndarray[Any, Any]
F64 = np.float64
RTOL, ATOL = 1e-9, 1e-10

# ----- the layers ------------------------------------------------------------------------------


@dataclass
class Case:
    """A gradtape layer, the equivalent torch module (same parameter names and values) and
    the input. ``x`` is the input that is traced (usage 1) or watched (usage 3); ``consts``
    are further inputs that are never traced (cross-attention's key and value)."""

    ours: nn.Module
    ref: Any
    x: Array
    consts: tuple[Array, ...] = ()
    forward: Callable[[Tensor[Any, Any], tuple[Tensor[Any, Any], ...]], Tensor[Any, Any]] | None = None
    """How to call ``ours`` on ``(x, consts)``; default ``ours(x)``."""
    ref_forward: Callable[[Any, tuple[Any, ...]], Any] | None = None
    """How to call ``ref`` on the torch tensors; default ``ref(x)``."""
    x_grad: bool = True
    """Whether ``x`` is differentiable (not for Embedding's indices)."""

    def run(self, x: Tensor[Any, Any], consts: tuple[Tensor[Any, Any], ...]) -> Tensor[Any, Any]:
        if self.forward is None:
            out: Tensor[Any, Any] = self.ours(x)
            return out
        return self.forward(x, consts)

    def run_ref(self, x: Any, consts: tuple[Any, ...]) -> Any:
        return self.ref(x) if self.ref_forward is None else self.ref_forward(x, consts)


def _pair(ours: nn.Module, ref: Any, rng: np.random.Generator) -> Any:
    """Make ``ref`` (a torch module) float64 with ``ours``' parameter values; returns ``ref``.

    Parameters that are constant at initialisation (norms' ones and zeros, attention's zero
    biases) are first set to random values in ``ours``, so that no gradient path is trivial."""
    ref = ref.double()
    names = [n for n, _ in ours.named_parameters()]
    assert names == [n for n, _ in ref.named_parameters()], "gradtape and torch name the parameters alike"
    with torch.no_grad():
        for (name, p), (_, q) in zip(ours.named_parameters(), ref.named_parameters(), strict=True):
            assert p.shape == tuple(q.shape), name
            assert p.dtype == F64, name
            if np.ptp(p.data) == 0:
                p.data[...] = rng.uniform(-1.0, 1.0, p.shape)
            q.copy_(torch.from_numpy(p.data.copy()))
    return ref


def _rng(dev: Cpu) -> np.random.Generator:
    return np.random.default_rng(dev.seed + 1)


def _linear(dev: Cpu, bias: bool, shape: tuple[int, ...]) -> Case:
    ours = nn.Linear(shape[-1], 3, bias, dev=dev, dtype=F64)
    rng = _rng(dev)
    return Case(ours, _pair(ours, torch.nn.Linear(shape[-1], 3, bias), rng), rng.standard_normal(shape))


def _bilinear(dev: Cpu) -> Case:
    ours = nn.Bilinear(4, 5, 3, dev=dev, dtype=F64)
    rng = _rng(dev)
    ref = _pair(ours, torch.nn.Bilinear(4, 5, 3), rng)
    return Case(
        ours,
        ref,
        rng.standard_normal((3, 4)),
        (rng.standard_normal((3, 5)),),
        forward=lambda x, c: ours(x, c[0]),
        ref_forward=lambda x, c: ref(x, c[0]),
    )


def _embedding(dev: Cpu, as_array: bool) -> Case:
    ours = nn.Embedding(6, 3, dev=dev, dtype=F64)
    ref = _pair(ours, torch.nn.Embedding(6, 3), _rng(dev))
    idx = np.array([[0, 2, 2], [5, 0, 1]], dtype=np.int64)  # repeated rows: the gradient accumulates
    # as_array: the documented index-array input (untraced output, so no dfdx usage); else a
    # tensor holding the indices, whose tape the output carries
    fwd = (lambda x, c: ours(x.numpy().astype(np.int64))) if as_array else None
    return Case(ours, ref, idx, forward=fwd, ref_forward=lambda x, c: ref(x.long()), x_grad=False)


def _embedding_bag(dev: Cpu, mode: str) -> Case:
    ours = nn.EmbeddingBag(6, 3, mode=mode, padding_idx=4, dev=dev, dtype=F64)
    ref = _pair(ours, torch.nn.EmbeddingBag(6, 3, mode=mode, padding_idx=4), _rng(dev))
    idx = np.array([0, 2, 2, 5, 4, 1, 2], dtype=np.int64)  # repeated rows, a padding entry, an empty bag
    offsets = np.array([0, 3, 3, 5])
    psw = np.linspace(0.5, 2.0, idx.size) if mode == "sum" else None
    return Case(
        ours,
        ref,
        idx,
        forward=lambda x, c: ours(x, offsets, None if psw is None else x._like(psw)),
        ref_forward=lambda x, c: ref(
            x.long(), torch.from_numpy(offsets), None if psw is None else torch.from_numpy(psw)
        ),
        x_grad=False,
    )


def _conv1d(dev: Cpu) -> Case:
    ours = nn.Conv1d(2, 4, 3, stride=2, padding=1, dev=dev, dtype=F64)
    rng = _rng(dev)
    return Case(ours, _pair(ours, torch.nn.Conv1d(2, 4, 3, stride=2, padding=1), rng), rng.standard_normal((2, 2, 7)))


def _conv2d(dev: Cpu) -> Case:
    ours = nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2, dev=dev, dtype=F64)
    ref = torch.nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2)
    rng = _rng(dev)
    return Case(ours, _pair(ours, ref, rng), rng.standard_normal((2, 4, 5, 5)))


def _conv2d_dilated(dev: Cpu) -> Case:
    ours = nn.Conv2d(2, 3, 2, padding=2, dilation=2, bias=False, dev=dev, dtype=F64)
    ref = torch.nn.Conv2d(2, 3, 2, padding=2, dilation=2, bias=False)
    rng = _rng(dev)
    return Case(ours, _pair(ours, ref, rng), rng.standard_normal((2, 2, 4, 5)))


def _conv_transpose2d(dev: Cpu, groups: int) -> Case:
    c = 2 * groups
    ours = nn.ConvTranspose2d(
        c, 3 * groups, 3, stride=2, padding=1, groups=groups, output_padding=1, dev=dev, dtype=F64
    )
    ref = torch.nn.ConvTranspose2d(c, 3 * groups, 3, stride=2, padding=1, groups=groups, output_padding=1)
    rng = _rng(dev)
    return Case(ours, _pair(ours, ref, rng), rng.standard_normal((2, c, 3, 3)))


def _conv3d(dev: Cpu) -> Case:
    ours = nn.Conv3d(4, 6, 3, stride=(1, 2, 2), padding=1, groups=2, dev=dev, dtype=F64)
    ref = torch.nn.Conv3d(4, 6, 3, stride=(1, 2, 2), padding=1, groups=2)
    rng = _rng(dev)
    return Case(ours, _pair(ours, ref, rng), rng.standard_normal((2, 4, 3, 4, 5)))


def _conv_transpose3d(dev: Cpu) -> Case:
    ours = nn.ConvTranspose3d(2, 3, 2, stride=2, padding=1, output_padding=1, dev=dev, dtype=F64)
    ref = torch.nn.ConvTranspose3d(2, 3, 2, stride=2, padding=1, output_padding=1)
    rng = _rng(dev)
    return Case(ours, _pair(ours, ref, rng), rng.standard_normal((2, 2, 3, 2, 3)))


def _layer_norm(dev: Cpu, normalized: tuple[int, ...]) -> Case:
    ours = nn.LayerNorm(normalized, dev=dev, dtype=F64)
    rng = _rng(dev)
    return Case(ours, _pair(ours, torch.nn.LayerNorm(normalized), rng), rng.standard_normal((2, 3, 4)))


def _rms_norm(dev: Cpu) -> Case:
    ours = nn.RMSNorm(4, dev=dev, dtype=F64)  # eps None: the dtype's machine epsilon, in both
    rng = _rng(dev)
    return Case(ours, _pair(ours, torch.nn.RMSNorm(4), rng), rng.standard_normal((2, 3, 4)))


def _mamba(dev: Cpu, block: bool) -> Case:
    """nn.Mamba / nn.MambaBlock against tests/test_nn_mamba.py's PyTorch implementation of the
    reference (torch has no Mamba layer)."""
    from test_nn_mamba import RefBlock, RefMamba

    ours: nn.Mamba[int] | nn.MambaBlock[int]
    if block:
        ours = nn.MambaBlock(6, d_state=4, dev=dev, dtype=F64)
        ref = RefBlock(ours)
    else:
        ours = nn.Mamba(6, d_state=4, dev=dev, dtype=F64)
        ref = RefMamba(ours)
    rng = _rng(dev)
    return Case(ours, _pair(ours, ref, rng), rng.standard_normal((2, 5, 6)))


def _batch_norm(dev: Cpu, shape: tuple[int, ...], train: bool) -> Case:
    """Training mode; or eval mode after one training-mode forward pass has moved the running
    statistics (compared with torch's, which must have moved alike)."""
    ours: nn.BatchNorm1d | nn.BatchNorm2d
    if len(shape) == 4:
        ours, ref = nn.BatchNorm2d(3, dev=dev, dtype=F64), torch.nn.BatchNorm2d(3)
    else:
        ours, ref = nn.BatchNorm1d(3, dev=dev, dtype=F64), torch.nn.BatchNorm1d(3)
    rng = _rng(dev)
    ref = _pair(ours, ref, rng)
    if not train:
        step = rng.standard_normal(shape) * 2.0 + 0.5
        ours(dev.tensor(step))
        with torch.no_grad():
            ref(torch.from_numpy(step))
        for name, buf in ours.named_buffers():
            np.testing.assert_allclose(buf.numpy(), getattr(ref, name).numpy(), rtol=RTOL, atol=ATOL, err_msg=name)
        ours.eval()
        ref.eval()
    return Case(ours, ref, rng.standard_normal(shape))


def _channel_norm(dev: Cpu, group: bool) -> Case:
    """nn.GroupNorm (2 groups of 2 channels) or nn.InstanceNorm2d(affine=True), issue 27."""
    ours: nn.GroupNorm[int] | nn.InstanceNorm2d
    if group:
        ours, ref = nn.GroupNorm(2, 4, dev=dev, dtype=F64), torch.nn.GroupNorm(2, 4)
    else:
        ours, ref = nn.InstanceNorm2d(4, affine=True, dev=dev, dtype=F64), torch.nn.InstanceNorm2d(4, affine=True)
    rng = _rng(dev)
    return Case(ours, _pair(ours, ref, rng), rng.standard_normal((2, 4, 3, 2)))


def _causal(lq: int, lk: int) -> Array:
    """``(lq, lk)`` boolean mask, ``True`` (blocked) where key ``j > i``."""
    return np.triu(np.ones((lq, lk), bool), 1)


def _mha(dev: Cpu, kind: str, masked: bool) -> Case:
    """Self-attention of ``x``; or cross-attention where only the query ``x`` is traced and
    the key/value are untraced tensors (``"cross"``: one memory tensor as both key and value,
    ``"cross-kv"``: two tensors)."""
    ours = nn.MultiHeadAttention(8, 2, dev=dev, dtype=F64)
    rng = _rng(dev)
    ref = _pair(ours, torch.nn.MultiheadAttention(8, 2, dropout=0.0, batch_first=True), rng)
    x = rng.standard_normal((2, 3, 8))
    lk = 3 if kind == "self" else 4
    mask = _causal(3, lk) if masked else None
    tmask = None if mask is None else torch.from_numpy(mask)
    if kind == "self":
        return Case(
            ours,
            ref,
            x,
            forward=lambda q, c: ours(q, attn_mask=mask),
            ref_forward=lambda q, c: ref(q, q, q, attn_mask=tmask, need_weights=False)[0],
        )
    if kind == "cross":
        return Case(
            ours,
            ref,
            x,
            consts=(rng.standard_normal((2, lk, 8)),),
            forward=lambda q, c: ours(q, c[0], c[0], attn_mask=mask),
            ref_forward=lambda q, c: ref(q, c[0], c[0], attn_mask=tmask, need_weights=False)[0],
        )
    return Case(
        ours,
        ref,
        x,
        consts=(rng.standard_normal((2, lk, 8)), rng.standard_normal((2, lk, 8))),
        forward=lambda q, c: ours(q, c[0], c[1], attn_mask=mask),
        ref_forward=lambda q, c: ref(q, c[0], c[1], attn_mask=tmask, need_weights=False)[0],
    )


def _encoder(dev: Cpu, norm_first: bool, masked: bool) -> Case:
    ours = nn.TransformerEncoderLayer(
        8, 2, 16, dropout=0.0, batch_first=True, norm_first=norm_first, dev=dev, dtype=F64
    )
    ref = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, norm_first=norm_first, batch_first=True)
    rng = _rng(dev)
    ref = _pair(ours, ref, rng)
    mask = _causal(3, 3) if masked else None
    tmask = None if mask is None else torch.from_numpy(mask)
    return Case(
        ours,
        ref,
        rng.standard_normal((2, 3, 8)),
        forward=lambda x, c: ours(x, mask),
        ref_forward=lambda x, c: ref(x, src_mask=tmask),
    )


def _sequential(dev: Cpu) -> Case:
    ours = nn.Sequential(nn.Linear(4, 5, dev=dev, dtype=F64), nn.ReLU(), nn.Linear(5, 3, dev=dev, dtype=F64))
    ref = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3))
    rng = _rng(dev)
    return Case(ours, _pair(ours, ref, rng), rng.standard_normal((3, 4)))


def _residual(dev: Cpu) -> Case:
    ours = nn.Residual(nn.Sequential(nn.Linear(4, 4, dev=dev, dtype=F64), nn.Tanh()))
    # torch has no Residual: a ModuleDict names the parameters "f.0.weight", "f.0.bias" alike
    ref = torch.nn.ModuleDict({"f": torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh())})
    rng = _rng(dev)
    ref = _pair(ours, ref, rng)
    return Case(ours, ref, rng.standard_normal((3, 4)), ref_forward=lambda x, c: x + ref["f"](x))


CASES: dict[str, Callable[[Cpu], Case]] = {
    "Linear-2d": lambda dev: _linear(dev, True, (3, 4)),
    "Linear-3d": lambda dev: _linear(dev, True, (2, 3, 4)),
    "Linear-nobias-2d": lambda dev: _linear(dev, False, (3, 4)),
    "Linear-nobias-3d": lambda dev: _linear(dev, False, (2, 3, 4)),
    "Bilinear": _bilinear,
    "Embedding-index-tensor": lambda dev: _embedding(dev, as_array=False),
    "Embedding-index-array": lambda dev: _embedding(dev, as_array=True),
    "EmbeddingBag-sum-per-sample-weights": lambda dev: _embedding_bag(dev, "sum"),
    "EmbeddingBag-max": lambda dev: _embedding_bag(dev, "max"),
    "Conv1d-stride-pad": _conv1d,
    "Conv2d-stride-pad-groups": _conv2d,
    "Conv2d-dilation-nobias": _conv2d_dilated,
    "ConvTranspose2d": lambda dev: _conv_transpose2d(dev, 1),
    "ConvTranspose2d-groups": lambda dev: _conv_transpose2d(dev, 2),
    "Conv3d-stride-pad-groups": _conv3d,
    "ConvTranspose3d": _conv_transpose3d,
    "LayerNorm": lambda dev: _layer_norm(dev, (4,)),
    "LayerNorm-2dims": lambda dev: _layer_norm(dev, (3, 4)),
    "RMSNorm": _rms_norm,
    "BatchNorm1d-2d-train": lambda dev: _batch_norm(dev, (4, 3), train=True),
    "BatchNorm1d-3d-train": lambda dev: _batch_norm(dev, (4, 3, 5), train=True),
    "BatchNorm2d-train": lambda dev: _batch_norm(dev, (3, 3, 2, 2), train=True),
    "BatchNorm2d-eval": lambda dev: _batch_norm(dev, (3, 3, 2, 2), train=False),
    "GroupNorm": lambda dev: _channel_norm(dev, group=True),
    "InstanceNorm2d-affine": lambda dev: _channel_norm(dev, group=False),
    "MultiHeadAttention-self": lambda dev: _mha(dev, "self", masked=False),
    "MultiHeadAttention-self-mask": lambda dev: _mha(dev, "self", masked=True),
    "MultiHeadAttention-cross": lambda dev: _mha(dev, "cross", masked=False),
    "MultiHeadAttention-cross-kv-mask": lambda dev: _mha(dev, "cross-kv", masked=True),
    "TransformerEncoderLayer-postnorm": lambda dev: _encoder(dev, norm_first=False, masked=False),
    "TransformerEncoderLayer-prenorm": lambda dev: _encoder(dev, norm_first=True, masked=False),
    "TransformerEncoderLayer-postnorm-mask": lambda dev: _encoder(dev, norm_first=False, masked=True),
    "Mamba": lambda dev: _mamba(dev, block=False),
    "MambaBlock": lambda dev: _mamba(dev, block=True),
    "Sequential": _sequential,
    "Residual": _residual,
}

# ----- torch's gradients and the comparison ------------------------------------------------------


@dataclass
class Grads:
    """One way's results: the forward output, each parameter's gradient (in the order of
    ``named_parameters``; ``None`` where there is none) and the input's gradient."""

    out: Array
    params: list[Array | None]
    x: Array | None = None


def _reference(case: Case, rng: np.random.Generator) -> tuple[Array, Grads]:
    """``(w, torch's results)`` for ``loss = sum(out * w)``, ``w`` drawn from ``rng``."""
    tx = torch.from_numpy(case.x.copy())
    if case.x_grad:
        tx.requires_grad_(True)
    out = case.run_ref(tx, tuple(torch.from_numpy(c.copy()) for c in case.consts))
    w = rng.standard_normal(tuple(out.shape))
    (out * torch.from_numpy(w)).sum().backward()
    params = [None if q.grad is None else q.grad.numpy() for _, q in case.ref.named_parameters()]
    gx = tx.grad.numpy() if case.x_grad else None
    return w, Grads(out.detach().numpy(), params, gx)


def _assert_grad(what: str, got: Array | None, want: Array | None) -> None:
    if want is None:  # torch: not connected to the loss
        assert got is None or not np.any(got), f"{what}: torch has no gradient, gradtape has {got}"
        return
    assert got is not None, f"{what}: gradtape has no gradient (None), torch's is\n{want}"
    assert got.shape == want.shape, f"{what}: gradient shape {got.shape}, torch's {want.shape}"
    if np.abs(want).max(initial=0.0) > ATOL:  # not merely rounding noise around a zero gradient
        assert np.any(got), f"{what}: gradtape's gradient is all zeros, torch's is\n{want}"
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=what)


def _mismatches(case: Case, got: Grads, want: Grads, where: str, check_x: bool) -> list[str]:
    """How ``got`` differs from torch's ``want``: the output, every parameter's gradient
    (counted) and, with ``check_x``, the input's; one message per difference."""
    errors: list[str] = []

    def check(what: str, g: Array | None, t: Array | None) -> None:
        try:
            _assert_grad(f"{where}: {what}", g, t)
        except AssertionError as e:
            errors.append(str(e))

    np.testing.assert_allclose(got.out, want.out, rtol=RTOL, atol=ATOL, err_msg=f"{where}: forward output")
    names = [n for n, _ in case.ours.named_parameters()]
    assert len(got.params) == len(names), f"{where}: {len(got.params)} gradients for {len(names)} parameters"
    compared = 0
    for name, g, t in zip(names, got.params, want.params, strict=True):
        check(f"parameter {name}", g, t)
        compared += 1
    assert compared == len(case.ours.parameters()) == len(list(case.ref.parameters())) > 0
    if check_x:
        check("input", got.x, want.x)
    return errors


# ----- the three usages ---------------------------------------------------------------------------


def _array(g: object) -> Array | None:
    """A gradient ``tape.gradient`` returned (a tensor, an array or ``None``) as an array."""
    if g is None:
        return None
    return np.asarray(g.data if isinstance(g, Tensor) else g)


def _inputs(case: Case, dev: Cpu) -> tuple[Tensor[Any, Any], tuple[Tensor[Any, Any], ...]]:
    return dev.tensor(case.x), tuple(dev.tensor(c) for c in case.consts)


def _dfdx(case: Case, dev: Cpu, w: Array) -> list[tuple[str, Grads, bool]]:
    """Usage 1: trace only the input into ``alloc_grads()``; read both stores."""
    m = case.ours
    x, consts = _inputs(case, dev)
    grads = m.alloc_grads()
    grads.retain_leafs([x])
    out = case.run(x.trace(grads), consts)
    g = (out * dev.tensor(w)).sum().backward()
    kept = {p.id for p in m.parameters()} | {x.id}
    assert set(g.ids()) <= kept, "alloc_grads + retain_leafs keeps the parameters' and the input's gradients only"
    return [
        (f"dfdx, store {name}", Grads(out.numpy(), [s.get(p).numpy() for p in m.parameters()], s.get(x).numpy()), True)
        for name, s in (("backward() returned", g), ("from alloc_grads()", grads))
    ]


def _watch_params(case: Case, dev: Cpu, w: Array) -> list[tuple[str, Grads, bool]]:
    """Usage 2: the parameters watched, the input untraced."""
    params = case.ours.parameters()
    x, consts = _inputs(case, dev)
    with GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(params)
        out = case.run(x, consts)
        loss = (out * dev.tensor(w)).sum()
    gs = tape.gradient(loss, params)
    assert isinstance(gs, list) and len(gs) == len(params), f"tape.gradient(loss, params) gave {gs!r}"
    return [("watch_params", Grads(out.numpy(), [_array(g) for g in gs]), False)]


def _auto_watch(case: Case, dev: Cpu, w: Array) -> list[tuple[str, Grads, bool]]:
    """Usage 3: the parameters watched by the tape itself, the input by ``tape.watch(x)``."""
    params = case.ours.parameters()
    x, consts = _inputs(case, dev)
    with GradientTape() as tape:
        if case.x_grad:
            tape.watch(x)
        out = case.run(x, consts)
        loss = (out * dev.tensor(w)).sum()
    sources: list[Any] = [x, params] if case.x_grad else [params]  # Embedding's indices have no gradient
    result = tape.gradient(loss, sources)
    assert isinstance(result, list) and len(result) == len(sources), f"tape.gradient(loss, {sources!r}) gave {result!r}"
    gx, gps = result if case.x_grad else (None, result[0])
    assert isinstance(gps, list) and len(gps) == len(params), f"parameters' gradients: {gps!r}"
    return [("auto_watch", Grads(out.numpy(), [_array(g) for g in gps], _array(gx)), case.x_grad)]


USAGES: dict[str, Callable[[Case, Cpu, Array], list[tuple[str, Grads, bool]]]] = {
    "dfdx": _dfdx,
    "watch_params": _watch_params,
    "auto_watch": _auto_watch,
}

# an index array gives an untraced output: there is nothing to trace in the dfdx usage
_NOT_APPLICABLE = {("Embedding-index-array", "dfdx")}
PAIRS = [
    pytest.param(case, usage, id=f"{case}-{usage}")
    for case in CASES
    for usage in USAGES
    if (case, usage) not in _NOT_APPLICABLE
]


@pytest.mark.parametrize(("case_name", "usage"), PAIRS)
def test_gradients_match_torch(case_name: str, usage: str) -> None:
    dev = Cpu(seed=0)
    case = CASES[case_name](dev)
    w, want = _reference(case, np.random.default_rng(7))
    results = USAGES[usage](case, dev, w)
    assert results
    errors = [e for where, got, check_x in results for e in _mismatches(case, got, want, where, check_x)]
    assert not errors, "\n\n".join(errors)
