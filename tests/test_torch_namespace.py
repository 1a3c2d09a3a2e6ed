"""Issue 27, "a PyTorch program ports by renaming": ``torch.<op>`` and ``torch.nn.functional``
spelled ``gradtape.<op>`` and ``gradtape.nn.functional``.

Each row is a call written as a PyTorch user writes it (PyTorch's positional order, ``dim``,
its defaults) and evaluated twice: with ``L``/``F`` bound to ``torch`` /
``torch.nn.functional`` on float64 tensors that require grad, and bound to ``gradtape`` /
``gradtape.nn.functional`` on the same values. The results must agree (tuples and lists
element by element), and so must the gradients of ``sum(out * w)`` (``w`` fixed weights) with
respect to every float input. A name whose gradtape meaning differed from PyTorch's (numpy's
``var`` default, ``max(x, 1)`` as ``amax``) would fail here; those follow PyTorch at the top of
the package (:mod:`gradtape._torch_ops`) and keep numpy's in ``gradtape.ops``.

The last tests check that every exported name has a row, that the exported lists match
PyTorch's names, and that ``gradtape.ops`` keeps its own defaults.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gradtape
import gradtape.nn.functional as gF
from gradtape import ops

torch: Any = pytest.importorskip("torch")
tF: Any = torch.nn.functional

_R = np.random.default_rng(27)
INPUTS: dict[str, np.ndarray[Any, Any]] = {
    "A": _R.standard_normal((3, 4)),
    "B": _R.standard_normal((3, 4)),
    "C": _R.standard_normal((3, 4)),
    "P": np.abs(_R.standard_normal((3, 4))) + 0.5,
    "U": np.tanh(_R.standard_normal((3, 4))) * 0.9,
    "Q": _R.uniform(0.05, 0.95, (3, 4)),
    "M": _R.standard_normal((4, 5)),
    "V": _R.standard_normal((4,)),
    "X4": _R.standard_normal((2, 3, 6, 6)),
    "W4": _R.standard_normal((4, 3, 3, 3)),
    "WT": _R.standard_normal((3, 4, 3, 3)),
    "X3": _R.standard_normal((2, 3, 7)),
    "W3": _R.standard_normal((4, 3, 3)),
    "X4P": _R.standard_normal((2, 8, 4, 4)),
    "QKV": _R.standard_normal((2, 2, 5, 4)),
    "IDX": np.array([2, 0, 1]),
    "IDX3": np.array([3, 0, 1]),
    "IDX2": np.array([[0, 1, 0, 2], [1, 0, 2, 1], [2, 2, 1, 0]]),
    "MASK": _R.standard_normal((3, 4)) > 0,
    "Y01": (_R.uniform(size=(3, 4)) > 0.5).astype(np.float64),
    "YPM": np.array([1.0, -1.0, 1.0]),
    "YPM4": np.where(_R.uniform(size=(3, 4)) > 0.5, 1.0, -1.0),
    "X5C": _R.standard_normal((2, 3, 4, 5, 4)),  # conv3d
    "W5C": _R.standard_normal((4, 3, 2, 3, 2)),
    "WT5C": _R.standard_normal((3, 4, 2, 3, 2)),
}
CONSTANT = {"IDX", "IDX3", "IDX2", "MASK", "Y01", "YPM", "YPM4"}

# torch.<name>(...) as L.<name>(...)
TOP: dict[str, list[str]] = {
    # session 19, batch 4: ordering, selection and shaping composed of gradtape ops
    "nonzero": ["L.nonzero(A > 0)", "L.nonzero(A > 0, as_tuple=True)"],
    "argwhere": ["L.argwhere(A > 0.5)"],
    "unique": ["L.unique(IDX2)", "L.unique(IDX2, return_inverse=True, return_counts=True)"],
    "searchsorted": ["L.searchsorted(YPM.sort().values, A)", "L.searchsorted(V.sort().values, A, right=True)"],
    "bucketize": ["L.bucketize(A, V.sort().values)", "L.bucketize(A, V.sort().values, right=True)"],
    "diff": ["L.diff(A)", "L.diff(A, 2, 0)", "L.diff(A, dim=0)"],
    "cummax": ["L.cummax(A, 1)", "L.cummax(A, 0)"],
    "cummin": ["L.cummin(A, 1)"],
    "logcumsumexp": ["L.logcumsumexp(A, 1)", "L.logcumsumexp(A, 0)"],
    "kthvalue": ["L.kthvalue(A, 2, 1)", "L.kthvalue(A, 3, 0, True)"],
    "median": ["L.median(A)", "L.median(A, 1)", "L.median(A, 0, keepdim=True)"],
    "nansum": ["L.nansum(L.log(A))", "L.nansum(L.log(A), 1)"],
    "nanmean": ["L.nanmean(L.log(A))", "L.nanmean(L.log(P), 0)"],
    "rot90": ["L.rot90(A)", "L.rot90(A, 2)", "L.rot90(A, 3, (1, 0))", "L.rot90(X3, 1, (1, 2))"],
    "fliplr": ["L.fliplr(A)"],
    "flipud": ["L.flipud(A)"],
    "block_diag": ["L.block_diag(A, M, V)"],
    "cartesian_prod": ["L.cartesian_prod(V, A[0, :2])", "L.cartesian_prod(V, V, A[1, :2])"],
    "tensor_split": ["L.tensor_split(A, 3, 1)", "L.tensor_split(A, [1, 3], dim=1)", "L.tensor_split(A, 2)"],
    "column_stack": ["L.column_stack([A, V[:3], B])"],
    "dstack": ["L.dstack([A, B])", "L.dstack([V, V])"],
    "take": ["L.take(A, IDX2)", "L.take(A, IDX - 3)"],
    # order statistics, integrals, pdist and torch.compile (gradtape._torch_stats)
    "quantile": [
        *("L.quantile(A, 0.3)", "L.quantile(A, 0.25, 1)", "L.quantile(A, Q[0], 0, True)"),
        *("L.quantile(A, Q[0, :2], None, True)", "L.quantile(L.log(A), 0.5, 1)"),
        "L.quantile(A, Q[0, :3].detach(), dim=1, interpolation='lower')",
        *("L.quantile(A, 0.5, 0, interpolation='higher')", "L.quantile(A, 0.5, 1, interpolation='midpoint')"),
        *("L.quantile(A, Q[1].detach(), dim=1, interpolation='nearest')", "L.quantile(V, 0.5)"),
    ],
    "nanquantile": [
        *("L.nanquantile(L.log(A), 0.4, 1)", "L.nanquantile(L.log(A), Q[0, :3], 0)"),
        "L.nanquantile(L.log(A), Q[0, :3].detach(), 1, True, interpolation='midpoint')",
    ],
    "mode": ["L.mode(A)", "L.mode(L.cat([A, A[:, :2]], 1), 1, True)", "L.mode(IDX2, 0)", "L.mode(L.round(A * 2), 1)"],
    "pdist": ["L.pdist(A)", "L.pdist(M, 1)", "L.pdist(M, 0.5)", "L.pdist(L.cat([A, A[:1]]), 3)"],
    "trapezoid": ["L.trapezoid(A)", "L.trapezoid(A, V)", "L.trapezoid(A, dx=0.5, dim=0)", "L.trapezoid(A, B, dim=0)"],
    "trapz": ["L.trapz(A, V)", "L.trapz(A, dx=2.0)"],
    "cumulative_trapezoid": [
        *("L.cumulative_trapezoid(A)", "L.cumulative_trapezoid(A, V)"),
        *("L.cumulative_trapezoid(A, dx=0.3, dim=0)", "L.cumulative_trapezoid(A, B)"),
    ],
    "compile": ["L.compile(lambda t: L.sin(t) * 2, backend='eager')(A)"],
    "conv_transpose1d": ["L.conv_transpose1d(X3, W3.transpose(0, 1), None, 2, 1)"],
    # torch.linalg's functions at the top (gradtape.linalg)
    "inverse": ["L.inverse(A[:, :3])", "L.inverse(X4[0, :, :3, :3])"],
    "det": ["L.det(A[:, :3])", "L.det(X4[0, :, :3, :3])"],
    "logdet": ["L.logdet(A[:, :3] @ A[:, :3].T + L.eye(3, dtype=L.float64))"],
    "slogdet": ["L.slogdet(A[:, :3])", "L.slogdet(X4[0, :, :3, :3])"],
    "cholesky": [
        "L.cholesky(A[:, :3] @ A[:, :3].T + L.eye(3, dtype=L.float64))",
        "L.cholesky(A[:, :3] @ A[:, :3].T + L.eye(3, dtype=L.float64), True)",
    ],
    "pinverse": ["L.pinverse(A)", "L.pinverse(M, 1e-10)"],
    "matrix_power": ["L.matrix_power(A[:, :3], 3)", "L.matrix_power(A[:, :3], -2)", "L.matrix_power(A[:, :3], 0)"],
    # products with a scaled sum, other products, scatter and counting (gradtape._torch_more)
    "addmm": [
        "L.addmm(C[:, :1], A, M)",
        "L.addmm(M[0], A, M, beta=0.5, alpha=-2.0)",
        "L.addmm(L.log(A[:, :1]), A, M, beta=0)",
        "L.addmm(A @ M, A, M, alpha=0)",
    ],
    "addmv": ["L.addmv(A[:, 0], A, V)", "L.addmv(V[0], A, V, beta=2.0, alpha=0.5)"],
    "addr": ["L.addr(A, A[:, 0], V)", "L.addr(M[0, :4], A[:, 1], V, beta=0, alpha=3.0)"],
    "baddbmm": [
        "L.baddbmm(X3[:, :, :3], X3, X3.transpose(1, 2))",
        "L.baddbmm(V[:3], X3, X3.transpose(1, 2), beta=0.5, alpha=2.0)",
    ],
    "addbmm": ["L.addbmm(A[:, :3], X3, X3.transpose(1, 2))", "L.addbmm(V[0], X3, X3.transpose(1, 2), alpha=-1.0)"],
    "kron": ["L.kron(A, V)", "L.kron(A[:2, :2], X3)", "L.kron(V[0], A)", "L.kron(IDX2, IDX)"],
    "trace": ["L.trace(A)", "L.trace(M.T)", "L.trace(IDX2)"],
    "inner": [
        "L.inner(A, B)",
        "L.inner(V, V)",
        "L.inner(A, X3[..., :4])",
        "L.inner(A[0, 0], M)",
        "L.inner(IDX2, IDX2)",
    ],
    "vdot": ["L.vdot(V, A[0])", "L.vdot(IDX, IDX3)"],
    "scatter": [
        "L.scatter(A, 0, IDX2, B)",
        "L.scatter(A, 1, IDX2, B)",  # repeated positions: the last write stays, every writer gets g
        "L.scatter(A, 1, IDX2[:, :2], B.detach())",  # PyTorch's src gradient fails when src is larger
        "L.scatter(A, 1, IDX2, 2.5)",
        "L.scatter(A, 0, IDX2[:2], value=-1.0)",
        "L.scatter(A[1, 2], 0, IDX[1], B[0, 0])",
        "L.scatter(IDX2, 1, IDX2, IDX2 * 10)",
        "L.scatter(A.detach(), 1, IDX2, B.detach(), reduce='add')",
        "L.scatter(A.detach(), 1, IDX2, 2.0, reduce='multiply')",
    ],
    "bincount": [
        "L.bincount(IDX2.flatten())",
        "L.bincount(IDX, A[0, :3].detach(), 5)",
        "L.bincount(IDX3, minlength=6)",
    ],
    "histc": ["L.histc(A)", "L.histc(A, 5, -1, 1)", "L.histc(X3, bins=4, min=-0.5, max=0.5)"],
    # session 19: gradtape._torch_more, PyTorch's functions composed of gradtape ops
    "addcdiv": ["L.addcdiv(A, B, P, value=0.5)"],
    "addcmul": ["L.addcmul(A, B, C)", "L.addcmul(A, B, V, value=-2.0)"],
    "broadcast_tensors": ["L.broadcast_tensors(A, V)", "L.broadcast_tensors(A[:, :1], V)"],
    "clone": ["L.clone(A)"],
    "concatenate": ["L.concatenate([A, B])", "L.concatenate((A, B), axis=1)"],
    "cross": ["L.cross(A[:, :3], B[:, :3], dim=1)", "L.cross(A[:, :3], B[:, :3])", "L.cross(A[:3], B[:3], dim=0)"],
    "detach": ["L.detach(A) * A"],
    "diag": [
        "L.diag(V)",
        "L.diag(V, 1)",
        "L.diag(V, -2)",
        "L.diag(A)",
        "L.diag(A, 1)",
        "L.diag(A, -1)",
        "L.diag(M, 2)",
    ],
    "logaddexp": ["L.logaddexp(A, B)", "L.logaddexp(A, A)", "L.logaddexp(A, V)"],
    "logit": ["L.logit(Q)", "L.logit(Q, eps=0.2)"],
    "masked_select": ["L.masked_select(A, MASK)", "L.masked_select(A, V > 0)"],
    "meshgrid": [
        "L.meshgrid(V, A[0], indexing='ij')",
        "L.meshgrid(V, A[0], indexing='xy')",
        "L.meshgrid([V, V], indexing='ij')",
    ],
    "narrow": ["L.narrow(A, 1, 1, 2)", "L.narrow(A, 0, -2, 2)"],
    "numel": ["L.tensor(L.numel(A))"],
    "repeat_interleave": [
        "L.repeat_interleave(A, 2)",
        "L.repeat_interleave(A, 2, dim=1)",
        "L.repeat_interleave(A, IDX, dim=0)",
    ],
    "std_mean": ["L.std_mean(A)", "L.std_mean(A, 1, keepdim=True)", "L.std_mean(A, dim=0, correction=0)"],
    "t": ["L.t(A)", "L.t(V)"],
    "take_along_dim": ["L.take_along_dim(A, IDX2, dim=1)", "L.take_along_dim(A, IDX)"],
    "tensordot": ["L.tensordot(A, M, 1)", "L.tensordot(X3, X3, dims=([0, 1], [0, 1]))", "L.tensordot(A, B, dims=2)"],
    "var_mean": ["L.var_mean(A)", "L.var_mean(A, 1)", "L.var_mean(A, dim=(0, 1), unbiased=False)"],
    # issue 27, session 19: what PyTorch programs call most, beyond the list
    "all": ["L.all(A > 0)", "L.all(A > -1, dim=1)", "L.all(IDX2, 0, keepdim=True)"],
    "allclose": ["L.tensor(L.allclose(A, A + 1e-9))", "L.tensor(L.allclose(A, B))"],
    "amax": ["L.amax(A, 1)", "L.amax(A, (0, 1), keepdim=True)", "L.amax(A)"],
    "amin": ["L.amin(A, 0)", "L.amin(IDX2, -1)"],
    "any": ["L.any(A > 1)", "L.any(A > 1, dim=0)", "L.any(IDX2, 1, keepdim=True)"],
    "bmm": ["L.bmm(X3, X3.transpose(1, 2))"],
    "clamp_max": ["L.clamp_max(A, 0.2)"],
    "clamp_min": ["L.clamp_min(A, 0.1)"],
    "dot": ["L.dot(V, V * 2)"],
    "equal": ["L.tensor(L.equal(A, A))", "L.tensor(L.equal(A, B))"],
    "exp2": ["L.exp2(A)"],
    "hstack": ["L.hstack([A, B])", "L.hstack([V, V])"],
    "isclose": ["L.isclose(A, A + 1e-9)", "L.isclose(A, B, atol=0.5)"],
    "isfinite": ["L.isfinite(L.log(A))", "L.isfinite(IDX2)"],
    "isinf": ["L.isinf(1 / (IDX2 * 1.0))"],
    "isnan": ["L.isnan(L.log(A))"],
    "log10": ["L.log10(P)"],
    "log2": ["L.log2(P)"],
    "logical_and": ["L.logical_and(A > 0, B > 0)"],
    "logical_not": ["L.logical_not(A > 0)", "L.logical_not(IDX2)"],
    "logical_or": ["L.logical_or(A > 0, MASK)"],
    "logical_xor": ["L.logical_xor(A > 0, B > 0)"],
    "mm": ["L.mm(A, M)"],
    "movedim": ["L.movedim(X3, 0, -1)", "L.movedim(X4, (0, 1), (2, 3))"],
    "nan_to_num": ["L.nan_to_num(A)", "L.nan_to_num(L.log(A), nan=1.0, neginf=-5.0)"],
    "reciprocal": ["L.reciprocal(P)"],
    "rsqrt": ["L.rsqrt(P)"],
    "swapaxes": ["L.swapaxes(X3, 0, 2)"],
    "unbind": ["L.unbind(A)", "L.unbind(X3, 1)"],
    "vstack": ["L.vstack([A, B])", "L.vstack([V, V])"],
    "abs": ["L.abs(A)", "L.abs(IDX2 - 1)"],
    "acos": ["L.acos(U)"],
    "add": ["L.add(A, B)", "L.add(A, 2.0)"],
    "argmax": ["L.argmax(A, 1)", "L.argmax(A, dim=0, keepdim=True)"],
    "argmin": ["L.argmin(A, dim=0)"],
    "argsort": ["L.argsort(A, 1)", "L.argsort(A, dim=0, descending=True)"],
    "asin": ["L.asin(U)"],
    "atan": ["L.atan(A)"],
    "atan2": ["L.atan2(A, B)"],
    "broadcast_to": ["L.broadcast_to(V, (3, 4))"],
    "cat": ["L.cat([A, B], 1)", "L.cat((A, B))", "L.cat([A, B], dim=-1)"],
    "cdist": ["L.cdist(A, B)"],
    "ceil": ["L.ceil(A * 3)", "L.ceil(IDX2)"],
    "chunk": ["L.chunk(A, 2, 1)", "L.chunk(A, 3)"],
    "clamp": ["L.clamp(A, -0.5, 0.5)", "L.clamp(A, min=0.1)", "L.clamp(A, max=0.2)", "L.clamp(IDX2, 0, 1)"],
    "clip": ["L.clip(A, -0.5, 0.5)", "L.clip(IDX2, max=1)"],
    "concat": ["L.concat([A, B], 1)"],
    "conv1d": ["L.conv1d(X3, W3, None, 1, 1)"],
    "conv2d": ["L.conv2d(X4, W4, None, 2, 1)", "L.conv2d(X4, W4, stride=1, padding=1)"],
    "conv_transpose2d": ["L.conv_transpose2d(X4, WT, None, 2, 1)"],
    "conv3d": ["L.conv3d(X5C, W5C, None, 2, 1)", "L.conv3d(X5C, W5C, V, padding='same')"],
    "conv_transpose3d": ["L.conv_transpose3d(X5C, WT5C, None, 2, 1, 1)"],
    "cos": ["L.cos(A)"],
    "cosh": ["L.cosh(A)"],
    "cosine_similarity": ["L.cosine_similarity(A, B)", "L.cosine_similarity(A, B, 0)"],
    "cumprod": ["L.cumprod(A, 1)", "L.cumprod(A, dim=0)"],
    "cumsum": ["L.cumsum(A, 0)", "L.cumsum(A, dim=1)"],
    "div": [
        *("L.div(A, P)", "L.div(A, 2.0)", "L.div(IDX2, IDX2 + 1)", "L.div(IDX2, 2)"),
        *("L.div(A * 5, P, rounding_mode='floor')", "L.div(A * 5, 2.0, rounding_mode='trunc')"),
        *("L.div(IDX2 - 1, 2, rounding_mode='floor')", "L.div(IDX2 - 1, IDX2 + 1, rounding_mode='trunc')"),
    ],
    "dropout": ["L.dropout(A, 0.5, False)"],
    "einsum": ["L.einsum('ij,jk->ik', A, M)", "L.einsum('ij,ij->i', A, B)"],
    "eq": ["L.eq(A, A)"],
    "erf": ["L.erf(A)"],
    "erfc": ["L.erfc(A)"],
    "exp": ["L.exp(A)"],
    "expm1": ["L.expm1(A)"],
    "fix": ["L.fix(A * 3)"],
    "flatten": ["L.flatten(X4)", "L.flatten(X4, 1)", "L.flatten(X4, 1, 2)"],
    "flip": ["L.flip(A, (1,))", "L.flip(A, [0, 1])"],
    "floor": ["L.floor(A * 3)", "L.floor(IDX2)"],
    "floor_divide": [
        "L.floor_divide(IDX2 * 3 - 4, 2)",
        "L.floor_divide(IDX2 * 3 - 4, IDX2 + 1)",
        "L.floor_divide(A.detach(), P.detach())",
    ],
    "fmod": ["L.fmod(A, P)", "L.fmod(A, 0.7)", "L.fmod(IDX2 * 3 - 4, 3)", "L.fmod(IDX2 * 3 - 4, IDX2 + 1)"],
    "gather": ["L.gather(A, 1, IDX2[:, :2])", "L.gather(A, 0, IDX2)"],
    "ge": ["L.ge(A, B)"],
    "group_norm": ["L.group_norm(X4P, 4)"],
    "gt": ["L.gt(A, B)"],
    "index_add": ["L.index_add(A, 0, IDX, B)"],
    "index_select": ["L.index_select(A, 0, IDX)", "L.index_select(A, 1, IDX)"],
    "layer_norm": ["L.layer_norm(A, (4,))"],
    "le": ["L.le(A, B)"],
    "lerp": ["L.lerp(A, B, 0.3)"],
    "log": ["L.log(P)"],
    "log1p": ["L.log1p(P)"],
    "log_softmax": ["L.log_softmax(A, 1)", "L.log_softmax(A, dim=0)"],
    "logsumexp": ["L.logsumexp(A, 1)", "L.logsumexp(A, dim=0, keepdim=True)"],
    "lt": ["L.lt(A, B)"],
    "masked_fill": ["L.masked_fill(A, MASK, 0.0)"],
    "matmul": ["L.matmul(A, M)", "L.matmul(A, V)"],
    "max": ["L.max(A)", "L.max(A, 1)", "L.max(A, 0, True)", "L.max(A, dim=1)", "L.max(A, B)"],
    "max_pool2d": ["L.max_pool2d(X4, 2)"],
    "max_pool3d": ["L.max_pool3d(X5C, 2)", "L.max_pool3d(X5C, (3, 2, 3), (1, 2, 1), 1)"],
    "maximum": ["L.maximum(A, B)"],
    "mean": ["L.mean(A)", "L.mean(A, 1)", "L.mean(A, 1, True)", "L.mean(A, dim=(0, 1))"],
    "min": ["L.min(A)", "L.min(A, 0)", "L.min(A, dim=1, keepdim=True)", "L.min(A, B)"],
    "minimum": ["L.minimum(A, B)"],
    "mul": ["L.mul(A, B)", "L.mul(A, 3.0)"],
    "ne": ["L.ne(A, B)"],
    "neg": ["L.neg(A)"],
    "norm": ["L.norm(A)", "L.norm(A, dim=1)", "L.norm(A, 1, 1)"],
    "outer": ["L.outer(V, V)"],
    "pairwise_distance": ["L.pairwise_distance(A, B)"],
    "permute": ["L.permute(X4, (0, 2, 3, 1))"],
    "pixel_shuffle": ["L.pixel_shuffle(X4P, 2)"],
    "pixel_unshuffle": ["L.pixel_unshuffle(X4, 2)"],
    "pow": ["L.pow(P, 1.5)", "L.pow(P, B)", "L.pow(IDX2, 3)", "L.pow(IDX2 + 1, 0.5)"],
    "prelu": ["L.prelu(A, P[0, :1])"],
    "prod": ["L.prod(A, 1)", "L.prod(A)"],
    "relu": ["L.relu(A)"],
    "remainder": [
        "L.remainder(A, P)",
        "L.remainder(A, -0.7)",
        "L.remainder(IDX2 * 3 - 4, 3)",
        "L.remainder(IDX2 * 3 - 4, IDX2 + 1)",
    ],
    "reshape": ["L.reshape(A, (2, 6))", "L.reshape(A, (-1,))"],
    "rms_norm": ["L.rms_norm(A, (4,))", "L.rms_norm(A, (4,), V)"],
    "roll": ["L.roll(A, 1, 1)", "L.roll(A, -1, 0)"],
    "round": ["L.round(A * 3)", "L.round(A, decimals=1)", "L.round(IDX2)"],
    "scatter_add": ["L.scatter_add(A, 1, IDX2, B)"],
    "selu": ["L.selu(A)"],
    "sign": ["L.sign(A)", "L.sign(IDX2 - 1)"],
    "sigmoid": ["L.sigmoid(A)"],
    "sin": ["L.sin(A)"],
    "sinh": ["L.sinh(A)"],
    "softmax": ["L.softmax(A, 1)", "L.softmax(A, dim=0)"],
    "sort": ["L.sort(A, 1)", "L.sort(A, 1, True)", "L.sort(A, dim=0, descending=True)"],
    "split": ["L.split(A, 2, 1)", "L.split(A, [1, 3], 1)", "L.split(A, 2)"],
    "sqrt": ["L.sqrt(P)"],
    "square": ["L.square(A)", "L.square(IDX2 - 1)"],
    "squeeze": ["L.squeeze(A[:1], 0)", "L.squeeze(A[:1])"],
    "stack": ["L.stack([A, B])", "L.stack([A, B], 1)", "L.stack((A, B), dim=-1)"],
    "std": [
        "L.std(A)",
        "L.std(A, 1)",
        "L.std(A, dim=0, keepdim=True)",
        "L.std(A, unbiased=False)",
        "L.std(A, correction=0)",
    ],
    "sub": ["L.sub(A, B)"],
    "sum": ["L.sum(A)", "L.sum(A, 1)", "L.sum(A, (0, 1), True)", "L.sum(A, dim=0)"],
    "tan": ["L.tan(U)"],
    "tanh": ["L.tanh(A)"],
    "tile": ["L.tile(A, (2, 1))"],
    "topk": ["L.topk(A, 2)", "L.topk(A, 2, 0)", "L.topk(A, 2, largest=False)"],
    "transpose": ["L.transpose(X4, 1, 3)", "L.transpose(A, 0, 1)"],
    "tril": ["L.tril(A)", "L.tril(A, 1)"],
    "triu": ["L.triu(A, -1)"],
    "trunc": ["L.trunc(A * 3)", "L.trunc(IDX2)"],
    "unsqueeze": ["L.unsqueeze(A, 1)", "L.unsqueeze(A, -1)"],
    "var": [
        "L.var(A)",
        "L.var(A, 1)",
        "L.var(A, dim=0, keepdim=True)",
        "L.var(A, unbiased=False)",
        "L.var(A, correction=0)",
    ],
    "where": ["L.where(MASK, A, B)"],
}

# torch.nn.functional.<name>(...) as F.<name>(...)
FUNCTIONAL: dict[str, list[str]] = {
    # PyTorch's remaining common functions, composed of gradtape ops (nn/functional.py); the random
    # ones in eval mode, with p=0, or summed to a constant (gumbel_softmax): their draws are gradtape's
    "bilinear": [
        "F.bilinear(A, B[:, :3], X4[0, :2, :4, :3])",
        "F.bilinear(X3[:, :, :4], X3[:, :, 3:], X4[1, :, :4, :4], V[:3])",
    ],
    "local_response_norm": ["F.local_response_norm(X4P, 3)", "F.local_response_norm(X3, 2, 0.5, 0.5, 2.0)"],
    "unfold": [
        "F.unfold(X4, 3)",
        "F.unfold(X4, (2, 3), dilation=(2, 1), padding=1, stride=(2, 1))",
        "F.unfold(X4[0], 2)",
    ],
    "fold": [
        "F.fold(F.unfold(X4, 3, padding=1), (6, 6), 3, padding=1)",
        "F.fold(X4P.reshape(2, 8, 16)[:, :4], (5, 5), 2)",
    ],
    "channel_shuffle": ["F.channel_shuffle(X4P, 4)", "F.channel_shuffle(X3, 3)"],
    "gumbel_softmax": ["F.gumbel_softmax(A, hard=True).sum(-1)", "F.gumbel_softmax(A, 0.5, dim=0).sum(0)"],
    "rrelu": ["F.rrelu(A)", "F.rrelu(A, 0.1, 0.3)", "F.rrelu(A, training=False)"],
    "alpha_dropout": ["F.alpha_dropout(A)", "F.alpha_dropout(A, 0.2, False)"],
    "feature_alpha_dropout": ["F.feature_alpha_dropout(X4, 0.5)"],
    "dropout1d": ["F.dropout1d(X3, 0.5, False)", "F.dropout1d(A, 0.0)"],
    "dropout2d": ["F.dropout2d(X4, 0.5, False)", "F.dropout2d(X4, 0.0)"],
    "dropout3d": ["F.dropout3d(X4, p=0.3, training=False)"],
    "lp_pool1d": ["F.lp_pool1d(X3 * X3, 2, 3)", "F.lp_pool1d(P, 3, 3, 2, True)"],
    "lp_pool2d": ["F.lp_pool2d(X4 * X4, 2, 2)", "F.lp_pool2d(X4 * X4 + 0.1, 1.5, (3, 2), 2, True)"],
    "batch_norm": [
        "F.batch_norm(X4, None, None, V[:3], V[1:], True)",
        "F.batch_norm(X3, Y01[0, :3], Y01[1, :3] + 0.5, training=False)",
        "F.batch_norm(A, None, None, training=True, momentum=0.2, eps=1e-3)",
    ],
    "upsample": ["F.upsample(X4, scale_factor=2)"],
    "upsample_nearest": ["F.upsample_nearest(X4, size=(8, 9))"],
    "upsample_bilinear": ["F.upsample_bilinear(X4, scale_factor=1.5)"],
    # session 19: 1-D pooling
    "conv_transpose1d": [
        "F.conv_transpose1d(X3, W3.transpose(0, 1))",
        "F.conv_transpose1d(X3, W3.transpose(0, 1)[:, :2], None, 2, 1, 1)",
        "F.conv_transpose1d(X3, W3.transpose(0, 1), V, stride=2, dilation=2)",
    ],
    "max_pool1d": ["F.max_pool1d(X3, 3)", "F.max_pool1d(X3, 3, 2, 1)", "F.max_pool1d(X3[0], 2)"],
    "avg_pool1d": ["F.avg_pool1d(X3, 2)", "F.avg_pool1d(X3, 3, 2, 1)"],
    "adaptive_avg_pool1d": ["F.adaptive_avg_pool1d(X3, 3)", "F.adaptive_avg_pool1d(X3, 5)"],
    "adaptive_max_pool1d": ["F.adaptive_max_pool1d(X3, 3)", "F.adaptive_max_pool1d(X3[0], 2)"],
    # session 19: more of PyTorch's activations
    "celu": ["F.celu(A)", "F.celu(A, 0.5)"],
    "glu": ["F.glu(A)", "F.glu(X4P, 1)"],
    "hardshrink": ["F.hardshrink(A)", "F.hardshrink(A, 0.3)"],
    "hardtanh": ["F.hardtanh(A)", "F.hardtanh(A, -0.5, 0.25)"],
    "relu6": ["F.relu6(A * 8)"],
    "softmin": ["F.softmin(A, dim=1)", "F.softmin(A, 0)"],
    "softshrink": ["F.softshrink(A)", "F.softshrink(A, 0.3)"],
    "softsign": ["F.softsign(A)"],
    "tanhshrink": ["F.tanhshrink(A)"],
    "threshold": ["F.threshold(A, 0.1, 20.0)"],
    "adaptive_avg_pool2d": ["F.adaptive_avg_pool2d(X4, (3, 3))", "F.adaptive_avg_pool2d(X4, 1)"],
    "adaptive_max_pool2d": ["F.adaptive_max_pool2d(X4, 2)"],
    "max_pool3d": ["F.max_pool3d(X5C, 2)", "F.max_pool3d(X5C[0], 3, 2, 1)", "F.max_pool3d(X5C, (2, 3, 1), stride=1)"],
    "avg_pool3d": ["F.avg_pool3d(X5C, 2)", "F.avg_pool3d(X5C, (3, 2, 3), (1, 2, 1), 1)"],
    "adaptive_avg_pool3d": ["F.adaptive_avg_pool3d(X5C, (3, 2, 3))", "F.adaptive_avg_pool3d(X5C[0], 1)"],
    "adaptive_max_pool3d": ["F.adaptive_max_pool3d(X5C, (3, None, 3))", "F.adaptive_max_pool3d(X5C, 2, True)"],
    "avg_pool2d": ["F.avg_pool2d(X4, 2)", "F.avg_pool2d(X4, 3, 1, 1)"],
    "binary_cross_entropy": ["F.binary_cross_entropy(Q, Y01)", "F.binary_cross_entropy(Q, Y01, reduction='sum')"],
    "binary_cross_entropy_with_logits": ["F.binary_cross_entropy_with_logits(A, Y01)"],
    "conv1d": ["F.conv1d(X3, W3, None, 1, 1)"],
    "conv2d": ["F.conv2d(X4, W4, None, 1, 1)", "F.conv2d(X4, W4, V, stride=2)"],
    "conv_transpose2d": ["F.conv_transpose2d(X4, WT, None, 2, 1)"],
    "conv3d": ["F.conv3d(X5C, W5C, None, 1, 1)", "F.conv3d(X5C, W5C, V, stride=(2, 1, 2))"],
    "conv_transpose3d": ["F.conv_transpose3d(X5C, WT5C, V, 2, 1, 1)"],
    "cosine_embedding_loss": ["F.cosine_embedding_loss(A, B, YPM)"],
    "cosine_similarity": ["F.cosine_similarity(A, B)", "F.cosine_similarity(A, B, dim=0)"],
    "cross_entropy": [
        "F.cross_entropy(A, IDX3)",
        "F.cross_entropy(A, IDX3, reduction='none')",
        "F.cross_entropy(A, IDX3, label_smoothing=0.1)",
        "F.cross_entropy(A, IDX3, ignore_index=0)",
        "F.cross_entropy(X4[:, :3, 0, :4], IDX2[:2])",
    ],
    "ctc_loss": [
        "F.ctc_loss(F.log_softmax(X3.permute(2, 0, 1), -1), IDX2[:2, :3] % 2 + 1, (7, 5), (3, 2))",
        "F.ctc_loss(F.log_softmax(X3.permute(2, 0, 1), -1), IDX % 2 + 1, [7, 6], [2, 1], reduction='none')",
        "F.ctc_loss(F.log_softmax(X3.permute(2, 0, 1), -1), IDX2[:2, :3] % 2, (7, 2), (3, 3), 2, 'sum', True)",
    ],
    "dropout": ["F.dropout(A, 0.5, False)", "F.dropout(A, p=0.2, training=False)"],
    "elu": ["F.elu(A)", "F.elu(A, 0.5)"],
    "embedding": ["F.embedding(IDX, M)"],
    "embedding_bag": [
        "F.embedding_bag(IDX2, M)",
        "F.embedding_bag(IDX3, M, IDX[1:], mode='sum', per_sample_weights=A[0, :3])",
        "F.embedding_bag(IDX2, M, mode='max', padding_idx=0)",
        "F.embedding_bag(IDX3, M, IDX[1:] * 3, include_last_offset=True, mode='max')",
    ],
    "gaussian_nll_loss": ["F.gaussian_nll_loss(A, B, P)"],
    "gelu": ["F.gelu(A)", "F.gelu(A, approximate='tanh')"],
    "group_norm": ["F.group_norm(X4P, 4)", "F.group_norm(X4P, 2, X4P[0, :, 0, 0], X4P[1, :, 0, 0])"],
    "hardsigmoid": ["F.hardsigmoid(A)"],
    "hardswish": ["F.hardswish(A)"],
    "hinge_embedding_loss": ["F.hinge_embedding_loss(A, YPM4)"],
    "huber_loss": ["F.huber_loss(A, B)", "F.huber_loss(A, B, delta=0.5)"],
    "instance_norm": ["F.instance_norm(X4)"],
    "interpolate": [
        "F.interpolate(X4, scale_factor=2, mode='nearest')",
        "F.interpolate(X4, size=(9, 9), mode='bilinear', align_corners=False)",
        "F.interpolate(X4, scale_factor=1.5, mode='bicubic')",
        "F.interpolate(X3, size=5, mode='nearest-exact')",
        "F.interpolate(X4, size=(4, 3), mode='area')",
    ],
    # sampling grids (ops/spatial.py): standard normal points, many outside [-1, 1]
    "grid_sample": [
        "F.grid_sample(X4, X4P[:, :2].permute(0, 2, 3, 1), align_corners=False)",
        "F.grid_sample(X4, X4P[:, 2:4].permute(0, 2, 3, 1), 'nearest', 'border', align_corners=True)",
        "F.grid_sample(X4, X4P[:, 4:6].permute(0, 2, 3, 1), mode='bicubic', padding_mode='reflection', "
        "align_corners=False)",
        "F.grid_sample(X4[:, :, None], X4P[:, :3].permute(0, 2, 3, 1)[:, None], padding_mode='reflection', "
        "align_corners=True)",
    ],
    "affine_grid": [
        "F.affine_grid(A.reshape(2, 2, 3), (2, 3, 5, 4), align_corners=False)",
        "F.grid_sample(X4, F.affine_grid(A.reshape(2, 2, 3) * 0.5, (2, 3, 4, 5), align_corners=True), "
        "align_corners=True)",
        "F.affine_grid(X4[0, :2, :3, :4] * 0.5, [2, 1, 3, 2, 4], align_corners=True)",
    ],
    "kl_div": ["F.kl_div(F.log_softmax(A, 1), F.softmax(B, 1), reduction='batchmean')"],
    "l1_loss": ["F.l1_loss(A, B)"],
    "layer_norm": ["F.layer_norm(A, (4,))", "F.layer_norm(A, (4,), V, V)"],
    "leaky_relu": ["F.leaky_relu(A)", "F.leaky_relu(A, 0.2)"],
    "linear": ["F.linear(A, M.T)", "F.linear(M.T, A, C[:, 0])"],
    "log_softmax": ["F.log_softmax(A, dim=1)", "F.log_softmax(A, 0)"],
    "logsigmoid": ["F.logsigmoid(A)"],
    "margin_ranking_loss": ["F.margin_ranking_loss(A[:, 0], B[:, 0], YPM)"],
    "max_pool2d": ["F.max_pool2d(X4, 2)", "F.max_pool2d(X4, 3, 2, 1)"],
    "mish": ["F.mish(A)"],
    "mse_loss": ["F.mse_loss(A, B)", "F.mse_loss(A, B, reduction='sum')"],
    "multi_margin_loss": [
        "F.multi_margin_loss(A, IDX3)",
        "F.multi_margin_loss(A, IDX3, 2, 0.5, P[0].detach(), reduction='none')",
        "F.multi_margin_loss(A, IDX3, p=2, reduction='sum')",
        "F.multi_margin_loss(V, IDX3[0], margin=-0.2, weight=P[0].detach())",
    ],
    "multilabel_margin_loss": [
        "F.multilabel_margin_loss(A, L.tensor([[3, 0, -1, 1], [0, 1, 2, 3], [-1, 0, 0, 0]]))",
        "F.multilabel_margin_loss(A, L.tensor([[1, -1, 0, 0], [2, 3, -1, 2], [0, 1, 2, -1]]), reduction='none')",
        "F.multilabel_margin_loss(A[1], L.tensor([2, 0, -1, 3]), reduction='sum')",
    ],
    "multilabel_soft_margin_loss": [
        "F.multilabel_soft_margin_loss(A, Y01)",
        "F.multilabel_soft_margin_loss(A, Q, P[0].detach(), reduction='none')",
        "F.multilabel_soft_margin_loss(A[0], Y01[0], reduction='sum')",
    ],
    "nll_loss": ["F.nll_loss(F.log_softmax(A, 1), IDX3)", "F.nll_loss(F.log_softmax(A, 1), IDX3, reduction='sum')"],
    "normalize": ["F.normalize(A)", "F.normalize(A, dim=0)", "F.normalize(A, p=1.0, dim=1)"],
    "one_hot": ["F.one_hot(IDX3, 5)", "F.one_hot(IDX3)"],
    "pad": ["F.pad(A, (1, 2))", "F.pad(A, (1, 1, 2, 0), value=0.5)", "F.pad(X4, (1, 1, 1, 1), mode='reflect')"],
    "pairwise_distance": ["F.pairwise_distance(A, B)"],
    "pdist": ["F.pdist(A, 3)", "F.pdist(M.T, float('inf'))", "F.pdist(L.cat([M, M[:1]]))"],
    "pixel_shuffle": ["F.pixel_shuffle(X4P, 2)"],
    "pixel_unshuffle": ["F.pixel_unshuffle(X4, 2)"],
    "poisson_nll_loss": ["F.poisson_nll_loss(A, P)"],
    "prelu": ["F.prelu(A, P[0, :1])"],
    "relu": ["F.relu(A)"],
    "rms_norm": ["F.rms_norm(A, (4,))", "F.rms_norm(A, [4], V, 1e-5)"],
    "scaled_dot_product_attention": [
        "F.scaled_dot_product_attention(QKV, QKV * 0.5, QKV[:, :, :, :3])",
        "F.scaled_dot_product_attention(QKV, QKV * 0.5, QKV, is_causal=True)",
    ],
    "selu": ["F.selu(A)"],
    "sigmoid": ["F.sigmoid(A)"],
    "silu": ["F.silu(A)"],
    "smooth_l1_loss": ["F.smooth_l1_loss(A, B)", "F.smooth_l1_loss(A, B, beta=0.5)"],
    "soft_margin_loss": ["F.soft_margin_loss(A, YPM4)", "F.soft_margin_loss(A * 30, YPM4, reduction='none')"],
    "softmax": ["F.softmax(A, dim=1)", "F.softmax(A, 0)"],
    "softplus": ["F.softplus(A)", "F.softplus(A, 2.0)"],
    "tanh": ["F.tanh(A)"],
    "triplet_margin_loss": ["F.triplet_margin_loss(A, B, C)"],
}


def _leaves(lib: str, device: str = "cpu") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in INPUTS.items():
        if lib == "torch":
            out[k] = torch.tensor(v, requires_grad=k not in CONSTANT and v.dtype.kind == "f", device=device)
        else:
            out[k] = gradtape.tensor(v, requires_grad=k not in CONSTANT and v.dtype.kind == "f", device=device)
    return out


def _flat(r: Any) -> list[Any]:
    """The tensors of a result: itself, or the members of a tuple/list (values, indices)."""
    if isinstance(r, (tuple, list)):
        return [x for item in r for x in _flat(item)]
    return [r]


def _np(t: Any) -> np.ndarray[Any, Any]:
    return np.asarray(t.detach().cpu().numpy() if hasattr(t, "detach") else t.cpu().numpy())


def _compare(expr: str, device: str = "cpu", torch_device: str = "cpu") -> None:
    """Evaluate ``expr`` with torch (tensors on ``torch_device``) and gradtape (on ``device``:
    tests/test_cuda.py runs every row on a GPU) and compare values and gradients."""
    envs = []
    for lib in ("torch", "gradtape"):
        leaves = _leaves(lib, torch_device if lib == "torch" else device)
        ns = {"L": torch, "F": tF} if lib == "torch" else {"L": gradtape, "F": gF}
        out = eval(expr, {**ns, **leaves})
        envs.append((leaves, _flat(out)))
    (t_leaves, t_out), (g_leaves, g_out) = envs
    assert len(t_out) == len(g_out), f"{expr}: torch gives {len(t_out)} tensors, gradtape {len(g_out)}"
    for i, (t, g) in enumerate(zip(t_out, g_out, strict=True)):
        tv, gv = _np(t), _np(g)
        assert tv.shape == gv.shape, f"{expr} [{i}]: torch shape {tv.shape}, gradtape {gv.shape}"
        if tv.dtype.kind == "f":
            np.testing.assert_allclose(gv, tv, rtol=1e-6, atol=1e-9, err_msg=f"{expr} [{i}]")
        else:
            np.testing.assert_array_equal(gv.astype(tv.dtype), tv, err_msg=f"{expr} [{i}]")
    # gradients of sum(out * w) over the float results, w fixed
    w_rng = np.random.default_rng(1)
    t_loss: Any = 0.0
    g_loss: Any = 0.0
    for t, g in zip(t_out, g_out, strict=True):
        if t.dtype.is_floating_point and t.requires_grad:
            w = w_rng.standard_normal(tuple(t.shape))
            t_loss = t_loss + (t * torch.tensor(w, device=torch_device)).sum()
            g_loss = g_loss + (g * gradtape.tensor(w, device=device)).sum()
    if isinstance(t_loss, float):
        return
    t_loss.backward()
    g_loss.backward()
    for k, tl in t_leaves.items():
        if tl.grad is None:
            continue
        gg = g_leaves[k].grad
        assert gg is not None, f"{expr}: no gradient for {k} (torch has one)"
        assert gg.device == g_leaves[k].device, f"{expr}: d/d{k} on {gg.device}, the tensor on {g_leaves[k].device}"
        np.testing.assert_allclose(_np(gg), _np(tl.grad), rtol=1e-6, atol=1e-9, err_msg=f"{expr}: d/d{k}")


@pytest.mark.parametrize("expr", [e for calls in TOP.values() for e in calls])
def test_torch_ops_spelled_gradtape(expr: str) -> None:
    _compare(expr)


@pytest.mark.parametrize("expr", [e for calls in FUNCTIONAL.values() for e in calls])
def test_torch_nn_functional_spelled_gradtape(expr: str) -> None:
    _compare(expr)


def test_every_export_has_a_row_and_is_pytorchs_name() -> None:
    """The ops at the package's top and in gradtape.nn.functional are exactly the rows above,
    and each is PyTorch's name there."""
    exported_ops = {n for n in dir(gradtape) if callable(getattr(gradtape, n)) and hasattr(torch, n)}
    exported_ops -= {n for n in dir(gradtape) if isinstance(getattr(gradtape, n), type)}  # classes
    creation = {
        *("tensor", "from_numpy", "zeros", "ones", "empty", "full", "randn", "rand", "randint", "arange"),
        *("linspace", "eye", "zeros_like", "ones_like", "empty_like", "full_like", "randn_like", "rand_like"),
        *("manual_seed", "initial_seed", "get_default_device", "set_default_device"),
        *("no_grad", "enable_grad", "inference_mode", "is_grad_enabled", "set_grad_enabled"),
        *("is_inference_mode_enabled", "from_dlpack", "as_tensor", "is_tensor", "get_default_dtype"),
        *("save", "load"),  # tests/test_serialization.py
    }
    random = {"multinomial", "randperm", "bernoulli", "normal"}  # test_multinomial, test_randperm_and_bernoulli
    assert exported_ops - creation - random == set(TOP), sorted((exported_ops - creation) ^ set(TOP))
    assert set(gF.__all__) == set(FUNCTIONAL), sorted(set(gF.__all__) ^ set(FUNCTIONAL))
    assert all(hasattr(tF, n) for n in gF.__all__)
    assert all(hasattr(torch, n) for n in TOP)


def test_gradtape_ops_keep_their_own_defaults() -> None:
    """``gradtape.ops`` keeps numpy's conventions (documented there); only the PyTorch-named
    exports change them."""
    a = gradtape.tensor(INPUTS["A"])
    np.testing.assert_allclose(ops.var(a).numpy(), INPUTS["A"].var())
    np.testing.assert_allclose(gradtape.var(a).numpy(), INPUTS["A"].var(ddof=1))
    np.testing.assert_allclose(ops.max(a, 1).numpy(), INPUTS["A"].max(1))
    assert gradtape.max(a, 1).indices.dtype == np.int64


def test_pytorch_named_wrappers_refuse_bad_input() -> None:
    a = gradtape.tensor(INPUTS["A"])
    with pytest.raises(ValueError, match="dropout: inplace=True is not supported"):
        gF.dropout(a, 0.5, True, True)
    with pytest.raises(gradtape.ShapeError, match=r"rms_norm: normalized_shape \(3, 4\) must be the input's last dim"):
        gF.rms_norm(a, (3, 4))
    with pytest.raises(gradtape.ShapeError, match="max"):
        gradtape.max(a, 5)


def test_multinomial() -> None:
    """``torch.multinomial(probs, n, replacement=False)``: distinct class indices per row, drawn
    from the default device's generator (random: checked by its properties, not PyTorch's
    numbers)."""
    gradtape.manual_seed(0)
    probs = gradtape.tensor(INPUTS["P"])
    got = gradtape.multinomial(probs, 3).numpy()
    assert got.shape == (3, 3) and got.dtype == np.int64
    assert all(len(set(row)) == 3 for row in got) and got.min() >= 0 and got.max() < 4
    assert gradtape.multinomial(probs, 6, replacement=True).shape == (3, 6)


def test_randperm_and_bernoulli() -> None:
    """``torch.randperm(n)`` and ``torch.bernoulli(p)`` (random: checked by their properties
    and by seeding, not PyTorch's numbers): a permutation, int64; draws of 0/1 in ``p``'s
    dtype whose frequency is ``p``; ``manual_seed`` repeats both."""
    gradtape.manual_seed(3)
    perm = gradtape.randperm(500)
    assert perm.dtype == np.int64 and sorted(perm.numpy().tolist()) == list(range(500))
    assert perm.numpy().tolist() != list(range(500))
    assert gradtape.randperm(0).shape == (0,) and gradtape.randperm(4, dtype=gradtape.int32).dtype == np.int32
    probs = gradtape.full((4000,), 0.25, dtype=gradtape.float64)
    draws = gradtape.bernoulli(probs)
    assert draws.dtype == np.float64 and set(np.unique(draws.numpy())) <= {0.0, 1.0}
    assert abs(draws.numpy().mean() - 0.25) < 0.03  # 4000 draws: the standard error is 0.007
    assert not draws.requires_grad
    np.testing.assert_array_equal(gradtape.bernoulli(gradtape.zeros(5), p=1.0).numpy(), np.ones(5))
    gradtape.manual_seed(7)
    first = (gradtape.randperm(10).numpy(), gradtape.bernoulli(probs).numpy())
    gradtape.manual_seed(7)
    np.testing.assert_array_equal(gradtape.randperm(10).numpy(), first[0])
    np.testing.assert_array_equal(gradtape.bernoulli(probs).numpy(), first[1])
    with pytest.raises(TypeError, match="randperm"):
        gradtape.randperm(-1)
    with pytest.raises(ValueError, match="bernoulli: probabilities"):
        gradtape.bernoulli(gradtape.tensor([0.5, 1.5]))
    with pytest.raises(gradtape.DTypeError, match="bernoulli"):
        gradtape.bernoulli(gradtape.tensor([0, 1]))


def test_composed_functions_refuse_a_list_naming_themselves() -> None:
    """gradtape._torch_more's functions check their tensor arguments (a list where a tensor
    belongs raises TypeError naming the function, not an AttributeError from inside it)."""
    from gradtape import _torch_more

    a = gradtape.tensor(INPUTS["A"])
    extra: dict[str, tuple[Any, ...]] = {
        "addcdiv": (a, a),
        "addcmul": (a, a),
        "cross": (a,),
        "logaddexp": (a,),
        "masked_select": (a > 0,),
        "narrow": (0, 0, 1),
        "repeat_interleave": (2,),
        "take_along_dim": (gradtape.tensor(INPUTS["IDX2"]),),
        "tensordot": (a,),
        "bucketize": (a,),
        "searchsorted": (a,),
        "cummax": (0,),
        "cummin": (0,),
        "logcumsumexp": (0,),
        "kthvalue": (1,),
        "take": (gradtape.tensor(INPUTS["IDX"]),),
        "tensor_split": (2,),
        **{name: (a, a) for name in ("addmm", "addmv", "addr", "baddbmm", "addbmm")},
        **{name: (a,) for name in ("kron", "inner", "vdot")},
        "scatter": (0, gradtape.tensor(INPUTS["IDX2"]), a),
    }
    for name in _torch_more.__all__:
        fn = getattr(_torch_more, name)
        with pytest.raises(TypeError, match=f"^{name}: "):
            fn([[1.0, 2.0]], *extra.get(name, ()))


def test_products_scatter_and_counts_refuse_bad_input_naming_the_op() -> None:
    """addmm's family, kron/trace/inner/vdot, scatter, bincount and histc: the errors a user
    meets name the op and the shapes (never a numpy traceback)."""
    a, m, v = (gradtape.tensor(INPUTS[k]) for k in ("A", "M", "V"))
    idx = gradtape.tensor(INPUTS["IDX2"])
    ints = gradtape.tensor(INPUTS["IDX"])
    with pytest.raises(gradtape.ShapeError, match=r"^addmm: mat1 of shape \(3, 4\) and mat2 of shape \(3, 4\)"):
        gradtape.addmm(a, a, a)
    with pytest.raises(gradtape.ShapeError, match=r"^addmm: input of shape \(4, 5\) does not broadcast .* \(3, 5\)"):
        gradtape.addmm(m, a, m)
    with pytest.raises(gradtape.ShapeError, match=r"^addmm: mat1 must be a matrix \(2-D\), got shape \(4,\)"):
        gradtape.addmm(a, v, m)
    with pytest.raises(gradtape.DTypeError, match=r"^addmm: mat2 has dtype float32 .*input has dtype float64"):
        gradtape.addmm(a[:, :1], a, m.float())
    with pytest.raises(gradtape.DTypeError, match=r"^addr: vec1 has dtype int64"):
        gradtape.addr(a, ints, v)
    with pytest.raises(TypeError, match=r"^addmv: beta must be a number, got str"):
        gradtape.addmv(a[:, 0], a, v, beta="1")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        gradtape.addmm(a, a, m, 2.0)  # type: ignore[call-arg]  # beta is keyword-only, as PyTorch's
    with pytest.raises(gradtape.ShapeError, match=r"^baddbmm: batch1 of shape \(2, 3, 7\) and batch2 of shape"):
        gradtape.baddbmm(a, gradtape.tensor(INPUTS["X3"]), gradtape.tensor(INPUTS["X3"]))
    with pytest.raises(gradtape.ShapeError, match=r"^addbmm: batch1 and batch2 must be 3-D"):
        gradtape.addbmm(a, a, m)
    with pytest.raises(gradtape.ShapeError, match=r"^trace: expects a matrix \(2-D\), got shape \(4,\)"):
        gradtape.trace(v)
    with pytest.raises(
        gradtape.ShapeError, match=r"^inner: the last dims must match, got shapes \(3, 4\) and \(4, 5\)"
    ):
        gradtape.inner(a, m)
    with pytest.raises(gradtape.ShapeError, match=r"^vdot: expects two 1-D tensors, got shapes \(3, 4\) and \(3, 4\)"):
        gradtape.vdot(a, a)
    with pytest.raises(gradtape.DTypeError, match=r"^kron: both inputs must have the same dtype"):
        gradtape.kron(a, v.float())
    with pytest.raises(IndexError, match=r"^scatter: index 2 is out of range for dim 1 of size 2"):
        gradtape.scatter(a[:, :2], 1, idx, a)
    with pytest.raises(
        gradtape.ShapeError, match=r"^scatter: index of shape \(3, 4\) is larger than src of shape \(2, 4\)"
    ):
        gradtape.scatter(a, 0, idx, a[:2])
    with pytest.raises(gradtape.ShapeError, match=r"^scatter: index has 1 dims \(shape \(3,\)\), input has 2"):
        gradtape.scatter(a, 0, ints, a)
    with pytest.raises(gradtape.DTypeError, match=r"^scatter: src has dtype float32 .*input has dtype float64"):
        gradtape.scatter(a, 0, idx, a.float())
    with pytest.raises(gradtape.DTypeError, match=r"^scatter: index must be integers, got dtype float64"):
        gradtape.scatter(a, 0, a, a)
    with pytest.raises(TypeError, match=r"^scatter: got both src and value"):
        gradtape.scatter(a, 0, idx, a, value=1.0)
    with pytest.raises(TypeError, match=r"^scatter: missing src \(a tensor\) or value \(a number\)"):
        gradtape.scatter(a, 0, idx)
    with pytest.raises(ValueError, match=r"^scatter: reduce must be 'add' or 'multiply', got 'mean'"):
        gradtape.scatter(a, 0, idx, a, reduce="mean")
    with pytest.raises(gradtape.DTypeError, match=r"^bincount: input must be a 1-D tensor of non-negative integers"):
        gradtape.bincount(v)
    with pytest.raises(ValueError, match=r"^bincount: input must be non-negative, got -1"):
        gradtape.bincount(ints - 1)
    with pytest.raises(gradtape.ShapeError, match=r"^bincount: input must be .*got shape \(3, 4\)"):
        gradtape.bincount(idx)
    with pytest.raises(
        gradtape.ShapeError, match=r"^bincount: weights must be 1-D of input's length, got shape \(4,\)"
    ):
        gradtape.bincount(ints, v)
    with pytest.raises(ValueError, match=r"^bincount: minlength must be >= 0, got -1"):
        gradtape.bincount(ints, minlength=-1)
    with pytest.raises(gradtape.DTypeError, match=r"^histc: input must be a float tensor, got dtype int64"):
        gradtape.histc(ints)
    with pytest.raises(ValueError, match=r"^histc: bins must be > 0, got 0"):
        gradtape.histc(a, 0)
    with pytest.raises(TypeError, match=r"^histc: bins must be an int, got 2.5"):
        gradtape.histc(a, 2.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^histc: max must be larger than min, got min=1.0, max=0.0"):
        gradtape.histc(a, 4, 1, 0)
    with pytest.raises(ValueError, match=r"^histc: range of \[nan, nan\] is not finite"):
        gradtape.histc(gradtape.tensor(np.array([1.0, np.nan])))
    # no gradient where PyTorch has none: an error on the way back, never a silent zero
    w = gradtape.tensor(INPUTS["V"][:3], requires_grad=True)
    with pytest.raises(gradtape.TapeError, match=r"^bincount: not differentiable"):
        (gradtape.bincount(ints, w) * 2.0).sum().backward()
    p = gradtape.tensor(INPUTS["A"], requires_grad=True)
    with pytest.raises(gradtape.TapeError, match=r"^scatter: not differentiable .*scatter_add"):
        gradtape.scatter(p, 1, idx, 2.0, reduce="add").sum().backward()
    assert not gradtape.histc(p).requires_grad and not gradtape.bincount(ints).requires_grad


def test_scatter_gradients_where_pytorch_has_none_or_fails() -> None:
    """``scatter``'s gradients where PyTorch cannot compare them: a ``src`` larger than
    ``index`` (PyTorch's backward fails on the shape) gets ``g`` gathered at ``index`` and zeros
    beyond it; and the second rule (gradients of gradients of ``addmm`` and ``scatter``) agrees
    with PyTorch's double backward."""
    x = gradtape.tensor(INPUTS["A"], requires_grad=True)
    src = gradtape.tensor(INPUTS["B"], requires_grad=True)
    idx = INPUTS["IDX2"][:, :2]
    w = np.random.default_rng(3).standard_normal((3, 4))
    (gradtape.scatter(x, 1, gradtape.tensor(idx), src) * gradtape.tensor(w)).sum().backward()
    want = np.zeros((3, 4))
    want[:, :2] = np.take_along_axis(w, idx, 1)
    assert src.grad is not None and x.grad is not None
    np.testing.assert_allclose(src.grad.numpy(), want)
    written = np.zeros((3, 4), bool)
    np.put_along_axis(written, idx, True, 1)
    np.testing.assert_allclose(x.grad.numpy(), np.where(written, 0.0, w))
    # second order: d/dmat1 of sum(d out/d mat2 * c), both libraries
    rng = np.random.default_rng(4)
    vals = {k: rng.standard_normal(s) for k, s in (("i", (3, 5)), ("a", (3, 4)), ("b", (4, 5)), ("s", (3, 4)))}
    results = []
    for lib in (torch, gradtape):
        t = {k: lib.tensor(v, requires_grad=True) for k, v in vals.items()}
        y = lib.addmm(t["i"], t["a"] ** 2, t["b"], beta=0.5, alpha=2.0).sum()
        y = y + (lib.scatter(t["a"], 1, lib.tensor(INPUTS["IDX2"]), t["s"] ** 3) ** 2).sum()
        grad = torch.autograd.grad if lib is torch else gradtape.autograd.grad
        ga, gs = grad(y, [t["a"], t["s"]], create_graph=True)
        assert ga is not None and gs is not None
        (ga.sum() + gs.sum()).backward()
        results.append([np.asarray(t[k].grad.detach().numpy()) for k in ("a", "b", "s")])
    for got, ref in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)


METHODS = [
    *("A.type_as(B)", "IDX2.type_as(A)", "A.view_as(B.T)", "A.reshape_as(B.T)", "V.expand_as(A)", "X3.mT"),
    *("A.select(1, 2)", "A.select(0, -1)", "A.narrow(1, 1, 2)", "X4.unflatten(1, (3, 1))", "A.unflatten(1, (2, -1))"),
    *("A.masked_select(A > 0)", "(A > 0).nonzero()"),
    *("A.quantile(0.3, 1)", "A.nanquantile(Q[0].detach(), 0, interpolation='higher')", "A.mode(0)"),
]


@pytest.mark.parametrize("expr", METHODS)
def test_tensor_methods_spelled_as_pytorchs(expr: str) -> None:
    """PyTorch's Tensor methods (conversions and shape helpers): values and gradients."""
    _compare(expr)


def test_tolist_and_is_contiguous() -> None:
    a = INPUTS["A"]
    assert gradtape.tensor(a).tolist() == torch.tensor(a).tolist()
    assert gradtape.tensor(a).T.is_contiguous() is torch.tensor(a).T.is_contiguous() is False


def test_in_place_arithmetic_in_a_pytorch_training_loop() -> None:
    """A PyTorch program's hand-written loop: in-place init (``normal_``, ``uniform_``,
    ``zero_``), SGD by ``p.sub_(p.grad, alpha=lr)`` and ``p.mul_`` weight decay under
    ``no_grad``, ``clamp_`` of a constrained parameter, ``masked_fill_``; the same program text
    runs on both libraries from identical starting values and gives the same parameters."""
    program = """
w = L.tensor(W0, requires_grad=True)
s = L.tensor(S0, requires_grad=True)
with L.no_grad():
    w.mul_(0.5).add_(0.1)
    s.clamp_(0.2, 1.5)
for _ in range(3):
    loss = ((X @ w) * s).pow(2).mean()
    loss.backward()
    with L.no_grad():
        w.sub_(w.grad, alpha=0.1)
        w.mul_(1 - 1e-3)
        s.sub_(s.grad * 0.05).clamp_(0.2, 1.5)
        w.masked_fill_(w.abs() < 1e-3, 0.0)
    w.grad = None
    s.grad = None
"""
    rng = np.random.default_rng(5)
    env0 = {"W0": rng.standard_normal((4, 3)), "S0": rng.uniform(0.0, 2.0, 3), "X": rng.standard_normal((6, 4))}
    out = []
    for lib in (torch, gradtape):
        env: dict[str, Any] = {"L": lib, **{k: (v if k != "X" else lib.tensor(v)) for k, v in env0.items()}}
        exec(program, env)
        out.append((env["w"].detach().numpy(), env["s"].detach().numpy()))
    np.testing.assert_allclose(out[1][0], out[0][0], rtol=1e-12)
    np.testing.assert_allclose(out[1][1], out[0][1], rtol=1e-12)
    w = gradtape.tensor(env0["W0"], requires_grad=True)
    with pytest.raises(gradtape.TapeError, match="add_: in-place write"):
        w.add_(1.0)  # outside no_grad: PyTorch refuses too
    counts = gradtape.tensor([1, 2])
    with pytest.raises(gradtape.DTypeError, match="add_"):
        counts.add_(0.5)
    with pytest.raises(gradtape.ShapeError, match="add_"):
        gradtape.zeros(3).add_(gradtape.zeros(2, 3))
    gradtape.manual_seed(0)
    u = gradtape.zeros(2000).uniform_(-1.0, 3.0)
    n = gradtape.zeros(2000, dtype=gradtape.float64).normal_(2.0, 0.5)
    assert -1.0 <= u.min().item() and u.max().item() < 3.0 and abs(u.mean().item() - 1.0) < 0.1
    assert abs(n.mean().item() - 2.0) < 0.05 and abs(n.std().item() - 0.5) < 0.05


def test_the_device_line_every_pytorch_program_starts_with() -> None:
    """``device = torch.device("cuda" if torch.cuda.is_available() else "cpu")`` and what
    programs then do with it, as PyTorch: ``.to(device)``, ``device=device``, ``device.type``;
    ``torch.as_tensor``, ``torch.is_tensor``, ``torch.get_default_dtype``."""
    program = """
device = L.device("cuda" if L.cuda.is_available() else "cpu")
x = L.as_tensor(A, dtype=L.float32, device=device)
y = L.zeros(3, device=device)
kind, index = device.type, device.index
dtype = L.get_default_dtype()
is_t = L.is_tensor(x) and not L.is_tensor(A)
n_gpus = L.cuda.device_count()
"""
    results = []
    for lib in (torch, gradtape):
        env: dict[str, Any] = {"L": lib, "A": INPUTS["A"]}
        exec(program, env)
        results.append(env)
    t, g = results
    assert g["kind"] == "cpu" or gradtape.cuda.is_available()
    assert (g["kind"], g["index"], str(g["device"])) == (t["kind"], t["index"], str(t["device"])) or not (
        torch.cuda.is_available() == gradtape.cuda.is_available()
    )
    assert str(g["dtype"]) == str(t["dtype"]).removeprefix("torch.") and g["is_t"] and t["is_t"]
    np.testing.assert_allclose(g["x"].numpy(), t["x"].numpy())
    assert repr(gradtape.device("cuda", 1)) == repr(torch.device("cuda", 1)) == "device(type='cuda', index=1)"
    assert str(gradtape.device("cuda:0")) == "cuda:0" and gradtape.device("cpu").index is None
    with pytest.raises(ValueError, match="unknown device type"):
        gradtape.device("tpu")
    a = np.ones(3, np.float32)
    shared = gradtape.as_tensor(a)
    a[0] = 5.0
    assert shared.numpy()[0] == 5.0  # a numpy array's memory is shared, as torch.as_tensor's
    assert gradtape.as_tensor(shared) is shared
    if not gradtape.cuda.is_available():
        assert gradtape.cuda.device_count() == 0
        gradtape.cuda.manual_seed(0)  # silently ignored without CUDA, as PyTorch's


def test_pad_sequence_as_pytorchs() -> None:
    """``torch.nn.utils.rnn.pad_sequence`` spelled ``gradtape.nn.utils.rnn.pad_sequence``: values
    and each sequence's gradient, batch first or not, padding on either side."""
    rng = np.random.default_rng(2)
    seqs = [rng.standard_normal((n, 3)) for n in (2, 5, 3)]
    for kwargs in ({}, {"batch_first": True, "padding_value": -1.0}, {"padding_side": "left"}):
        tl = [torch.tensor(s, requires_grad=True) for s in seqs]
        gl = [gradtape.tensor(s, requires_grad=True) for s in seqs]
        t = torch.nn.utils.rnn.pad_sequence(tl, **kwargs)
        g = gradtape.nn.utils.rnn.pad_sequence(gl, **kwargs)
        np.testing.assert_allclose(g.numpy(), t.detach().numpy())
        w = rng.standard_normal(tuple(t.shape))
        (t * torch.tensor(w)).sum().backward()
        (g * gradtape.tensor(w)).sum().backward()
        for a, b in zip(gl, tl, strict=True):
            assert a.grad is not None and b.grad is not None
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy())
    with pytest.raises(gradtape.ShapeError, match="pad_sequence"):
        gradtape.nn.utils.rnn.pad_sequence([gradtape.zeros(2, 3), gradtape.zeros(2, 4)])


def test_normal_as_pytorchs() -> None:
    """``torch.normal``: numbers with ``size``, or tensors (broadcast); draws of the right mean
    and spread; the gradient to a tensor mean/std exactly 0, as PyTorch's (a draw, not a
    reparameterisation); ``manual_seed`` repeats it."""
    gradtape.manual_seed(4)
    d = gradtape.normal(2.0, 0.5, size=(4000,))
    assert d.dtype == np.float32 and d.shape == (4000,) and not d.requires_grad
    assert abs(d.mean().item() - 2.0) < 0.05 and abs(d.std().item() - 0.5) < 0.05
    mean = gradtape.zeros((3, 1000), dtype=gradtape.float64, requires_grad=True)
    std = gradtape.tensor([[0.1], [1.0], [3.0]], dtype=gradtape.float64, requires_grad=True)
    y = gradtape.normal(mean, std)
    assert y.shape == (3, 1000) and y.requires_grad
    np.testing.assert_allclose(y.detach().numpy().std(axis=1), [0.1, 1.0, 3.0], rtol=0.1)
    (y * 3.0).sum().backward()
    tm = torch.zeros((3, 1000), dtype=torch.float64, requires_grad=True)
    ts = torch.tensor([[0.1], [1.0], [3.0]], dtype=torch.float64, requires_grad=True)
    (torch.normal(tm, ts) * 3.0).sum().backward()
    for g, t in ((mean.grad, tm.grad), (std.grad, ts.grad)):
        assert g is not None and t is not None
        np.testing.assert_array_equal(g.numpy(), t.numpy())
    gradtape.manual_seed(9)
    a = gradtape.normal(0.0, 1.0, size=(5,)).numpy()
    gradtape.manual_seed(9)
    np.testing.assert_array_equal(gradtape.normal(0.0, 1.0, size=(5,)).numpy(), a)
    with pytest.raises(TypeError, match="give size"):
        gradtape.normal(0.0, 1.0)
    with pytest.raises(ValueError, match="std must be >= 0"):
        gradtape.normal(gradtape.zeros(3), -1.0)
