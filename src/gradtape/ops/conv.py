"""Convolutions with PyTorch's semantics: conv1d, conv2d, conv3d (cross-correlation),
conv_transpose1d, conv_transpose2d and conv_transpose3d.

Layouts are PyTorch's: ``x (N, C_in, [[D,] H,] W)``, ``w (C_out, C_in / groups, [[KD,] KH,] KW)``
for convolutions and ``w (C_in, C_out / groups, [KD,] KH, KW)`` for the transposed ones; an
optional bias ``b (C_out,)``. ``stride``, ``padding``, ``dilation`` (and ``output_padding``)
are an int or one per spatial dim; convolutions also take ``padding="valid"`` (0) or
``"same"`` (stride 1 only; an odd total padding puts the extra row/column at the end, as
PyTorch). Zero padding only. float32 and float64, not mixed; inputs of any layout.

Output size of a convolution, per spatial dim (input ``L``, padding ``p`` each side, dilation
``d``, kernel ``K``, stride ``s``)::

    L_out = floor((L + 2p - d*(K-1) - 1) / s) + 1

and of the transposed convolution (``op`` the output padding)::

    L_out = (L - 1)*s - 2p + d*(K-1) + op + 1

Forward and backward (``g`` the output's gradient; ``G`` groups, ``g(o)`` the group of
output channel ``o``)::

    y[n, o, i, j]   = b[o] + sum_{c, a, e} w[o, c, a, e] * xpad[n, g(o)*C_in/G + c, i*sh + a*dh, j*sw + e*dw]
    grad_w[o, c, a, e] = sum_{n, i, j} g[n, o, i, j] * xpad[n, g(o)*C_in/G + c, i*sh + a*dh, j*sw + e*dw]
    grad_x = the same sum scattered back (col2im), with the padding cropped
    grad_b[o] = sum_{n, i, j} g[n, o, i, j]

``conv_transpose2d`` is the gradient of ``conv2d`` with respect to its input, so its forward
is conv2d's input backward and its backward is conv2d's forward (for ``grad_x``) and conv2d's
weight backward with the roles of input and output gradient swapped (for ``grad_w``).
conv1d runs conv2d's code on a height-1 image. conv3d and conv_transpose3d (layout ``NCDHW``)
run the same formulas with a third spatial index on
:mod:`gradtape.devices.kernels.conv3d` (chunked vol2col + one BLAS product per chunk and
group; the columns are rebuilt in backward rather than kept; GPU arrays run the same im2col +
batched product with array functions, on cuBLAS).

Kernels: float32 convolutions from :data:`~gradtape.devices.kernels.conv.ONEDNN_MIN_MACS`
multiply-adds run on oneDNN, the library PyTorch's CPU convolutions use, when the optional
``onednn`` extra is installed (:mod:`gradtape.devices.kernels.onednn`: forward, input and weight
gradients through its C API). Otherwise (:mod:`gradtape.devices.kernels.conv`): ``groups == 1``
runs chunked im2col + BLAS:
the batch is cut into chunks (columns plus output of about 16 MB), a numba pass writes the columns
straight from the unpadded input (zero padding fused, no ``np.pad`` copy), and one BLAS
product per chunk computes it; backward runs one product per chunk for the weight gradient
(columns of up to 4 MB in all kept from the forward, larger ones rebuilt per chunk) and computes the
input gradient of a stride-1 conv as a convolution of the output gradient with the flipped
kernel (strided: one product and a fused numba col2im straight into the unpadded gradient).
Grouped and depthwise convolutions run direct numba loops. That module's docstring has the
measurements behind the choices. The bias is added while the output is written. Gradients
of leafs the store does not keep (``Gradients.wants``) are skipped, so a traced input batch
costs no ``grad_x``.

Typing: ``conv2d(Tensor[Rank4[N, C, Any, Any], T], Tensor[Rank4[O, C, Any, Any], ...])``
returns ``Tensor[Rank4[N, O, int, int], ...]`` when ``groups`` is left out: mypy rejects an
input whose channel dim ``C`` differs from the weight's (and a bias that is not ``Rank1[O]``).
With ``groups=`` given (by keyword, even ``groups=1``) the weight's ``C_in / groups`` is
checked at run time only.
``conv_transpose2d`` checks ``x``'s ``C_in`` against ``w``'s first dim for any ``groups``.
``conv3d`` and ``conv_transpose3d`` are typed likewise on ``Rank5`` tensors.
The output owns a tape if any input does.

Runtime errors (:class:`~gradtape.errors.ShapeError` names the op and the shapes): wrong
ranks, channel mismatch, ``groups`` not dividing the channels, a bias of the wrong shape, a
(dilated) kernel larger than the padded input, an empty output;
:class:`~gradtape.errors.DTypeError` for float32 meeting float64; ``ValueError`` for a
stride or dilation below 1, negative padding, ``output_padding`` not smaller than stride or
dilation, ``padding="same"`` with a stride; ``TypeError`` for arguments that are not ints.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar

import numpy as np

from gradtape import tape as _tp
from gradtape._typing import T, typed_as
from gradtape.devices.kernels import conv as _kc
from gradtape.devices.kernels import conv3d as _k3
from gradtape.errors import ShapeError
from gradtape.grad_mode import enable_grad
from gradtape.ops._function import Function, FunctionCtx
from gradtape.ops._signatures import conv as _sig
from gradtape.ops._util import refill, replayable, tensor_operand
from gradtape.tape import NONE_TAPE, Tape, op_tape, record

if TYPE_CHECKING:
    from gradtape.gradients import Gradients
    from gradtape.tensor import Tensor

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]

Array = np.ndarray[Any, Any]
# type variables of the overload tables (ops/_signatures/conv.py)
N = TypeVar("N")
C = TypeVar("C")
O = TypeVar("O")

Int1: TypeAlias = int | tuple[int]
"""An int, or a 1-tuple (conv1d's stride, padding, dilation)."""
Int2: TypeAlias = int | tuple[int, int]
"""An int for both spatial dims, or ``(height, width)``."""
Int3: TypeAlias = int | tuple[int, int, int]
"""An int for the three spatial dims, or ``(depth, height, width)``."""
Padding1: TypeAlias = Int1 | Literal["valid", "same"]
Padding2: TypeAlias = Int2 | Literal["valid", "same"]
Padding3: TypeAlias = Int3 | Literal["valid", "same"]


# ----- argument checks ---------------------------------------------------------------------


def _ints(op: str, name: str, v: object, nd: int, low: int) -> tuple[int, ...]:
    """``v`` (an int or a tuple of ``nd`` ints) as a tuple of ``nd`` ints ``>= low``."""
    # the common spellings first (every conv and pool call checks three or four of these: a
    # tenth of a small inference step's Python time went to the general path below)
    if v.__class__ is int:
        if v >= low:
            return (v,) * nd
    elif v.__class__ is tuple and len(v) == nd and all(i.__class__ is int and i >= low for i in v):
        return v
    vals = (v,) * nd if isinstance(v, (int, np.integer)) else v
    if (
        not isinstance(vals, (tuple, list))
        or len(vals) != nd
        or not all(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in vals)
    ):
        raise TypeError(f"{op}: {name} must be an int or a tuple of {nd} ints, got {v!r}")
    if any(i < low for i in vals):
        raise ValueError(f"{op}: {name} must be >= {low}, got {v!r}")
    return tuple(int(i) for i in vals)


def _groups(op: str, groups: object) -> int:
    if not isinstance(groups, (int, np.integer)) or isinstance(groups, bool):
        raise TypeError(f"{op}: groups must be an int, got {groups!r}")
    if groups < 1:
        raise ValueError(f"{op}: groups must be >= 1, got {groups}")
    return int(groups)


def _padding(
    op: str, padding: object, k: tuple[int, ...], dilation: tuple[int, ...], stride: tuple[int, ...]
) -> list[tuple[int, int]]:
    """``(before, after)`` zero padding per spatial dim."""
    nd = len(k)
    if padding == "valid":
        return [(0, 0)] * nd
    if padding == "same":
        if any(s != 1 for s in stride):
            raise ValueError(f"{op}: padding='same' needs stride 1, got stride {stride}")
        total = [d * (kk - 1) for d, kk in zip(dilation, k, strict=True)]
        return [(t // 2, t - t // 2) for t in total]
    if isinstance(padding, str):
        raise ValueError(f"{op}: padding must be an int, a tuple of ints, 'valid' or 'same', got {padding!r}")
    return [(p, p) for p in _ints(op, "padding", padding, nd, 0)]


def _layout(nd: int) -> str:
    return {1: "(N, C, L)", 2: "(N, C, H, W)"}.get(nd, "(N, C, D, H, W)")


def _weight_layout(nd: int, transposed: bool) -> str:
    spatial = {1: "K", 2: "KH, KW"}.get(nd, "KD, KH, KW")
    return f"(C_in, C_out/groups, {spatial})" if transposed else f"(C_out, C_in/groups, {spatial})"


def _check_conv(op: str, nd: int, xd: Array, wd: Array, bd: Array | None, groups: int, transposed: bool) -> int:
    """Check ranks, channels and the bias; return the output channel count."""
    if xd.ndim != nd + 2 or wd.ndim != nd + 2:
        # (conv_transpose1d checks its ranks itself and runs this check as conv_transpose2d)
        wl = _weight_layout(nd, transposed)
        raise ShapeError(f"{op}: expects x {_layout(nd)} and w {wl}, got x {xd.shape} and w {wd.shape}")
    c = xd.shape[1]
    shapes = f"x {xd.shape}, w {wd.shape}"
    if any(k < 1 for k in wd.shape[2:]):
        raise ShapeError(f"{op}: empty kernel: {shapes}")
    if transposed:
        if wd.shape[0] != c:
            raise ShapeError(f"{op}: x has {c} channels but w's first dim (C_in) is {wd.shape[0]}: {shapes}")
        if c % groups:
            raise ShapeError(f"{op}: groups={groups} does not divide the {c} input channels: {shapes}")
        c_out = wd.shape[1] * groups
    else:
        c_out = wd.shape[0]
        if c % groups or c_out % groups:
            raise ShapeError(
                f"{op}: groups={groups} must divide x's {c} channels and w's {c_out} output channels: {shapes}"
            )
        if wd.shape[1] * groups != c:
            raise ShapeError(
                f"{op}: x has {c} channels but w expects C_in/groups * groups = {wd.shape[1]} * {groups} = "
                f"{wd.shape[1] * groups}: {shapes}"
            )
    if bd is not None and bd.shape != (c_out,):
        raise ShapeError(f"{op}: bias must have shape ({c_out},) (the output channels), got {bd.shape}: {shapes}")
    return int(c_out)


# ----- tape plumbing ---------------------------------------------------------------------

Backward = Callable[[Array, bool, bool, bool], tuple[Array | None, Array | None, Array | None]]


def _record(
    x: Tensor[Any, Any],
    w: Tensor[Any, Any],
    b: Tensor[Any, Any] | None,
    data: Array,
    tape: Tape,
    rule: Backward,
    f: Callable[[Any, Any], Any] | None = None,
) -> Any:
    """Wrap ``data`` as the output of an op on ``(x, w, b)`` and record its backward:
    ``rule(g, want_x, want_w, want_b)`` returns fresh gradient arrays (or ``None``) for each.
    ``f(x, w)``, the op without its bias on tensors with the same settings, gives the second
    rule (see :func:`_bilinear_vjp`)."""
    out = x._from_op(data, tape)
    if tape is not NONE_TAPE:
        xid, wid, x_leaf, w_leaf = x.id, w.id, x._leaf, w._leaf
        bid, b_leaf = (b.id, b._leaf) if b is not None else (-1, True)

        def conv_backward(grads: Gradients, g: Array) -> None:
            want_b = bid >= 0 and grads.wants(bid, b_leaf)
            gx, gw, gb = rule(g, grads.wants(xid, x_leaf), grads.wants(wid, w_leaf), want_b)
            if gx is not None:
                grads._accum(xid, gx)
            if gw is not None:
                grads._accum(wid, gw)
            if gb is not None:
                grads._accum(bid, gb)

        xd, wd, diff = x.data, w.data, None
        if f is not None:
            op = f

            def conv_diff(g: Any, rebuild: Any) -> list[tuple[int, Any]]:
                gx, gw = _bilinear_vjp(op, g, rebuild(xid, xd), rebuild(wid, wd))
                res = [(xid, gx), (wid, gw)]
                if bid >= 0:  # the bias's gradient: g summed over all but the channel axis
                    res.append((bid, g.sum(axis=tuple(i for i in range(g.ndim) if i != 1))))
                return res

            diff = conv_diff
        record(tape, out, conv_backward, diff)
    return out


def _bilinear_vjp(f: Callable[[Any, Any], Any], g: Any, x: Any, w: Any) -> tuple[Any, Any]:
    """The gradients ``(gx, gw)`` of ``<g, f(x, w)>`` for an op ``f`` linear in each argument
    (a convolution), as a recorded op differentiable to any order: its forward runs ``f``'s
    own first rule; its backward is, with cotangents ``(ax, aw)``,
    ``d/dg = f(ax, w) + f(x, aw)``, ``d/dx = gx(g; w=aw)``, ``d/dw = gw(g; x=ax)`` (each ``f`` or
    this op again), because ``<ax, gx(g; w)> = <f(ax, w), g>`` and likewise for ``w``."""

    def first_order(gd: Array, xa: Any, wa: Any) -> tuple[Array, Array]:
        with enable_grad():
            xs, ws = xa.detach().leaky_trace(), wa.detach().leaky_trace()
            grads = f(xs, ws).backward(gd)
        return grads.get(xs).numpy(), grads.get(ws).numpy()

    class BilinearVJP(Function):
        @staticmethod
        def forward(ctx: FunctionCtx, gt: Any, xt: Any, wt: Any) -> tuple[Any, Any]:
            ctx.save_for_backward(gt, xt, wt)
            gx, gw = first_order(gt.data, xt, wt)
            return xt._like(gx), wt._like(gw)

        @staticmethod
        def backward(ctx: FunctionCtx, ax: Any, aw: Any) -> tuple[Any, Any, Any]:
            gt, xt, wt = ctx.saved_tensors
            dg = f(ax, wt) + f(xt, aw)
            dx = BilinearVJP.apply(gt, xt, aw)[0]
            dw = BilinearVJP.apply(gt, ax, wt)[1]
            return dg, dx, dw

    out: tuple[Any, Any] = BilinearVJP.apply(g, x, w)
    return out


def _tapes(x: Tensor[Any, Any], w: Tensor[Any, Any], b: Tensor[Any, Any] | None) -> Tape:
    return op_tape(x, w) if b is None else op_tape(x, w, b)


# ----- convolution -------------------------------------------------------------------------


def _conv(
    op: str, nd: int, x: Any, w: Any, b: Any, stride: object, padding: object, dilation: object, groups: object
) -> Any:
    w = tensor_operand(op, x, w)
    b = None if b is None else tensor_operand(op, x, b)
    xd, wd = x.data, w.data
    bd = None if b is None else b.data
    g_ = _groups(op, groups)
    o = _check_conv(op, nd, xd, wd, bd, g_, transposed=False)
    s = _ints(op, "stride", stride, nd, 1)
    d = _ints(op, "dilation", dilation, nd, 1)
    k = tuple(int(i) for i in wd.shape[2:])
    pads = _padding(op, padding, k, d, s)
    sizes = tuple(int(i) for i in xd.shape[2:])
    padded = tuple(n_ + lo + hi for n_, (lo, hi) in zip(sizes, pads, strict=True))
    eff = tuple(di * (ki - 1) + 1 for di, ki in zip(d, k, strict=True))
    if any(p_ < e for p_, e in zip(padded, eff, strict=True)):
        raise ShapeError(
            f"{op}: kernel {k} (dilated to {eff}) is larger than the padded input {padded}: "
            f"x {xd.shape}, w {wd.shape}, padding {padding!r}, dilation {d}"
        )
    out_sz = tuple((p_ - e) // si + 1 for p_, e, si in zip(padded, eff, s, strict=True))
    n = xd.shape[0]
    if nd == 3:
        return _conv3d(
            op, x, w, b, s, pads, d, g_, (out_sz[0], out_sz[1], out_sz[2]), (stride, padding, dilation, groups)
        )
    if nd == 1:  # a height-1 image through conv2d's kernels
        x4, w4 = xd[:, :, None, :], wd[:, :, None, :]
        s2, d2, pads2, out_hw = (1, s[0]), (1, d[0]), [(0, 0), pads[0]], (1, out_sz[0])
    else:
        x4, w4, s2, d2, pads2, out_hw = xd, wd, (s[0], s[1]), (d[0], d[1]), pads, (out_sz[0], out_sz[1])
    pads4 = ((pads2[0][0], pads2[0][1]), (pads2[1][0], pads2[1][1]))
    tape = _tapes(x, w, b)
    out4, cols = _kc.forward(x4, w4, s2, pads4, d2, g_, out_hw, keep_cols=tape is not NONE_TAPE, bias=bd)
    x_shape, w_shape = xd.shape, wd.shape

    def rule(g: Array, want_x: bool, want_w: bool, want_b: bool) -> tuple[Array | None, Array | None, Array | None]:
        g4 = g.reshape(n, o, *out_hw)
        gx = gw = gb = None
        if want_x or want_w:
            gx, gw = _kc.backward(g4, x4, w4, s2, pads4, d2, g_, want_x, want_w, cols=cols)
            gx = None if gx is None else gx.reshape(x_shape)
            gw = None if gw is None else gw.reshape(w_shape)
        if want_b:
            gb = _kc.bias_grad(g4)
        return gx, gw, gb

    result = _record(
        x,
        w,
        b,
        out4.reshape((n, o, *out_sz)),
        tape,
        rule,
        lambda a, c: _conv(op, nd, a, c, None, stride, padding, dilation, groups),
    )
    if _tp._recorder is not None:
        args = (x4, w4, s2, pads4, d2, g_, out_hw, bd, cols)
        replayable(op, out4, _conv_into, args, (x, w, b), tape, train=True, writes=tuple(cols or ()))
    return result


def _conv_into(
    out: Array, x4: Array, w4: Array, s: Any, pads: Any, d: Any, g: int, hw: Any, bd: Any, cols: list[Array] | None
) -> None:
    """:func:`_conv`'s forward into ``out`` (a replay of :func:`gradtape.capture`), and the
    im2col columns its recorded backward reads into ``cols``."""
    y, fresh = _kc.forward(x4, w4, s, pads, d, g, hw, keep_cols=cols is not None, bias=bd, out=out)
    if y is not out:  # oneDNN wrote into out; the numba + BLAS paths make a new array
        np.copyto(out, y)
    if cols is not None:
        assert fresh is not None and len(fresh) == len(cols)
        for kept, new in zip(cols, fresh, strict=True):
            np.copyto(kept, new)


def _triple(v: tuple[int, ...]) -> tuple[int, int, int]:
    return (v[0], v[1], v[2])


def _conv3d(
    op: str,
    x: Any,
    w: Any,
    b: Any,
    s: tuple[int, ...],
    pads: list[tuple[int, int]],
    d: tuple[int, ...],
    groups: int,
    out_sz: tuple[int, int, int],
    settings: tuple[Any, ...],
) -> Any:
    """:func:`conv3d` once :func:`_conv` has checked the arguments: the forward on
    :mod:`gradtape.devices.kernels.conv3d`, its first rule, and ``conv3d`` itself (with the same
    ``settings``: stride, padding, dilation, groups) as the second rule's bilinear op."""
    xd, wd = x.data, w.data
    bd = None if b is None else b.data
    s3, d3 = _triple(s), _triple(d)
    p3 = ((pads[0][0], pads[0][1]), (pads[1][0], pads[1][1]), (pads[2][0], pads[2][1]))
    out = _k3.forward(xd, wd, s3, p3, d3, groups, out_sz, bd)

    def rule(g: Array, want_x: bool, want_w: bool, want_b: bool) -> tuple[Array | None, Array | None, Array | None]:
        gx = gw = None
        if want_x or want_w:
            gx, gw = _k3.backward(g, xd, wd, s3, p3, d3, groups, want_x, want_w)
        return gx, gw, (_kc.bias_grad(g) if want_b else None)

    tape = _tapes(x, w, b)
    stride, padding, dilation, groups_ = settings
    result = _record(x, w, b, out, tape, rule, lambda a, c: conv3d(a, c, None, stride, padding, dilation, groups_))
    if _tp._recorder is not None:  # the backward reads x and w only (no kept columns)
        args = (_k3.forward, xd, wd, s3, p3, d3, groups, out_sz, bd)
        replayable(op, out, refill, args, (x, w, b), tape, True)
    return result


@typed_as(_sig.conv2d)
def conv2d(x: Any, w: Any, b: Any = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1, groups: Any = 1) -> Any:
    """2-D cross-correlation of ``x (N, C_in, H, W)`` with ``w (C_out, C_in/groups, KH, KW)``
    plus an optional bias ``b (C_out,)``, as ``torch.nn.functional.conv2d``.

    Returns ``(N, C_out, H_out, W_out)`` with ``H_out = floor((H + 2*ph - dh*(KH-1) - 1)/sh) + 1``
    (likewise ``W_out``), of ``x``'s dtype. Gradients for ``x``, ``w`` and ``b`` (formulas in
    the module docstring). Pass ``groups`` by keyword: the typed signature has it keyword-only.

    Raises:
        ShapeError: ``x`` or ``w`` is not 4-D; ``x``'s channels are not ``w.shape[1] * groups``;
            ``groups`` does not divide ``C_in`` or ``C_out``; ``b`` is not ``(C_out,)``; the
            dilated kernel is larger than the padded input (all name the shapes).
        DTypeError: float32 meets float64.
        ValueError: stride/dilation/groups < 1, negative padding, ``padding="same"`` with stride > 1.
        TypeError: stride/padding/dilation/groups are not ints (or pairs of ints).
    """
    return _conv("conv2d", 2, x, w, b, stride, padding, dilation, groups)


@typed_as(_sig.conv1d)
def conv1d(x: Any, w: Any, b: Any = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1, groups: Any = 1) -> Any:
    """1-D cross-correlation of ``x (N, C_in, L)`` with ``w (C_out, C_in/groups, K)`` plus an
    optional bias ``b (C_out,)``, as ``torch.nn.functional.conv1d``.

    Returns ``(N, C_out, L_out)`` with ``L_out = floor((L + 2p - d*(K-1) - 1)/s) + 1``, of
    ``x``'s dtype; runs :func:`conv2d`'s kernels on a height-1 image. Gradients for ``x``,
    ``w`` and ``b``. Pass ``groups`` by keyword.

    Raises:
        ShapeError, DTypeError, ValueError, TypeError: as :func:`conv2d` (with 3-D tensors).
    """
    return _conv("conv1d", 1, x, w, b, stride, padding, dilation, groups)


@typed_as(_sig.conv3d)
def conv3d(x: Any, w: Any, b: Any = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1, groups: Any = 1) -> Any:
    """3-D cross-correlation of ``x (N, C_in, D, H, W)`` with ``w (C_out, C_in/groups, KD, KH,
    KW)`` plus an optional bias ``b (C_out,)``, as ``torch.nn.functional.conv3d``.

    ``y[n, o, i, j, l] = b[o] + sum_{c, a, e, f} w[o, c, a, e, f] * xpad[n, g(o)*C_in/G + c,
    i*sd + a*dd, j*sh + e*dh, l*sw + f*dw]`` (``xpad`` the zero padded input, ``g(o)`` the
    group of output channel ``o``). Returns ``(N, C_out, D_out, H_out, W_out)`` with ``D_out =
    floor((D + 2*pd - dd*(KD-1) - 1)/sd) + 1`` (likewise ``H_out``, ``W_out``), of ``x``'s dtype
    (float32 or float64, not mixed). ``stride``, ``padding``, ``dilation``: an int or a triple;
    ``padding`` also ``"valid"`` (0) or ``"same"`` (stride 1 only; an odd total padding puts the
    extra plane/row/column at the end, as PyTorch). Pass ``groups`` by keyword: the typed
    signature has it keyword-only.

    Gradients (``g`` the output's gradient): ``grad_w[o, c, a, e, f] = sum_{n, i, j, l} g[n, o,
    i, j, l] * xpad[n, g(o)*C_in/G + c, i*sd + a*dd, j*sh + e*dh, l*sw + f*dw]``, ``grad_x`` the
    same products scattered back to where the forward read them (padding dropped), ``grad_b[o]
    = sum_{n, i, j, l} g[n, o, i, j, l]``; gradients of gradients to any order (the op is
    bilinear in ``x`` and ``w``). Runs vol2col + BLAS (:mod:`gradtape.devices.kernels.conv3d`).

    Raises:
        ShapeError: ``x`` or ``w`` is not 5-D; ``x``'s channels are not ``w.shape[1] * groups``;
            ``groups`` does not divide ``C_in`` or ``C_out``; ``b`` is not ``(C_out,)``; the
            dilated kernel is larger than the padded input (all name the op and the shapes).
        DTypeError: float32 meets float64, or an integer tensor.
        ValueError: stride/dilation/groups < 1, negative padding, ``padding="same"`` with stride > 1.
        TypeError: stride/padding/dilation/groups are not ints (or triples of ints).
    """
    return _conv("conv3d", 3, x, w, b, stride, padding, dilation, groups)


def conv_transpose1d(
    x: Tensor[Any, T],
    w: Tensor[Any, Any],
    b: Tensor[Any, Any] | None = None,
    stride: int = 1,
    padding: int = 0,
    output_padding: int = 0,
    groups: int = 1,
    dilation: int = 1,
) -> Tensor[Any, Any]:
    """1-D transposed convolution of ``x (N, C_in, L)`` with ``w (C_in, C_out/groups, K)`` plus
    an optional bias ``(C_out,)``, as ``torch.nn.functional.conv_transpose1d``: ``L_out = (L -
    1) s - 2p + d (K - 1) + output_padding + 1``. Runs :func:`conv_transpose2d` on ``(N, C_in,
    1, L)`` with a ``(1, K)`` kernel; gradients as there.

    Raises:
        ShapeError: ``x`` is not 3-D or ``w`` not 3-D (or as :func:`conv_transpose2d`, whose
            messages then name this op). ValueError, TypeError: as :func:`conv_transpose2d`.
    """
    op = "conv_transpose1d"
    w = tensor_operand(op, x, w)
    if x.data.ndim != 3 or w.data.ndim != 3:
        raise ShapeError(
            f"{op}: expects x (N, C_in, L) and w (C_in, C_out/groups, K), got {x.data.shape} and {w.data.shape}"
        )
    one = []
    for name, v in (
        ("stride", stride),
        ("padding", padding),
        ("output_padding", output_padding),
        ("dilation", dilation),
    ):
        v1 = v[0] if isinstance(v, (tuple, list)) and len(v) == 1 else v
        if isinstance(v1, bool) or not isinstance(v1, (int, np.integer)):
            raise TypeError(f"{op}: {name} must be an int, got {v!r}")
        one.append(int(v1))
    s_, p_, o_, d_ = one
    n, c, length = x.data.shape
    try:
        y = conv_transpose2d(
            x.reshape((n, c, 1, length)),
            w.reshape((*w.data.shape[:2], 1, w.data.shape[2])),
            b,
            (1, s_),
            (0, p_),
            (0, o_),
            groups=groups,
            dilation=(1, d_),
        )
    except (ShapeError, ValueError, TypeError) as e:
        raise type(e)(f"{op}: {str(e).split(': ', 1)[-1]}") from None
    return y.reshape((n, y.shape[1], y.shape[3]))


# ----- transposed convolution --------------------------------------------------------------


@typed_as(_sig.conv_transpose2d)
def conv_transpose2d(
    x: Any,
    w: Any,
    b: Any = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: Any = 1,
    dilation: Any = 1,
) -> Any:
    """2-D transposed convolution of ``x (N, C_in, H, W)`` with ``w (C_in, C_out/groups, KH, KW)``
    plus an optional bias ``b (C_out,)``, as ``torch.nn.functional.conv_transpose2d``
    (the gradient of :func:`conv2d` w.r.t. its input, with the same ``w``).

    Returns ``(N, C_out, H_out, W_out)``, ``C_out = w.shape[1] * groups`` and
    ``H_out = (H - 1)*sh - 2*ph + dh*(KH - 1) + oph + 1`` (likewise ``W_out``). ``padding``
    removes rows/columns from the border of the full output; ``output_padding`` (< stride or
    < dilation) adds rows/columns at the end. Pass ``groups`` by keyword (positionally it is
    the 7th argument, as in PyTorch, which the typed signature does not cover).

    Gradients: ``grad_x = conv2d(g, w, stride, padding, dilation, groups)`` (cropped to
    ``(H, W)``), ``grad_w`` = conv2d's weight gradient with ``g`` as the input and ``x`` as
    the output's gradient, ``grad_b = sum(g, (0, 2, 3))``.

    Raises:
        ShapeError: ``x``/``w`` not 4-D; ``x``'s channels differ from ``w.shape[0]``;
            ``groups`` does not divide them; ``b`` is not ``(C_out,)``; the output is empty.
        DTypeError: float32 meets float64.
        ValueError: stride/dilation/groups < 1, negative padding or output padding,
            ``output_padding`` not smaller than either stride or dilation.
        TypeError: arguments that are not ints (or pairs of ints).
    """
    op = "conv_transpose2d"
    w = tensor_operand(op, x, w)
    b = None if b is None else tensor_operand(op, x, b)
    xd, wd = x.data, w.data
    bd = None if b is None else b.data
    g_ = _groups(op, groups)
    c_out = _check_conv(op, 2, xd, wd, bd, g_, transposed=True)
    s = _ints(op, "stride", stride, 2, 1)
    d = _ints(op, "dilation", dilation, 2, 1)
    p = _ints(op, "padding", padding, 2, 0)
    opad = _ints(op, "output_padding", output_padding, 2, 0)
    if any(o_ >= si and o_ >= di for o_, si, di in zip(opad, s, d, strict=True)):
        raise ValueError(
            f"{op}: output_padding {opad} must be smaller than either stride {s} or dilation {d} (per dim)"
        )
    n, _, h, wid = xd.shape
    k = (int(wd.shape[2]), int(wd.shape[3]))
    out_hw = tuple(
        (i - 1) * si - 2 * pi + di * (ki - 1) + oi + 1
        for i, si, pi, di, ki, oi in zip((h, wid), s, p, d, k, opad, strict=True)
    )
    if out_hw[0] < 1 or out_hw[1] < 1:
        raise ShapeError(
            f"{op}: output size {out_hw} is empty: x {xd.shape}, w {wd.shape}, stride {s}, padding {p}, "
            f"output_padding {opad}, dilation {d}"
        )
    s2, d2 = (s[0], s[1]), (d[0], d[1])
    pads = ((p[0], p[0]), (p[1], p[1]))
    shape4 = (n, c_out, out_hw[0], out_hw[1])
    out = _transposed(xd, wd, shape4, s2, pads, d2, g_, bd)

    def rule(g: Array, want_x: bool, want_w: bool, want_b: bool) -> tuple[Array | None, Array | None, Array | None]:
        gx = _kc.forward(g, wd, s2, pads, d2, g_, (h, wid))[0] if want_x else None
        gw = _kc.backward_weight(g, xd, wd.shape, s2, pads, d2, g_) if want_w else None
        gb = _kc.bias_grad(g) if want_b else None
        return gx, gw, gb

    tape = _tapes(x, w, b)
    result = _record(
        x,
        w,
        b,
        out,
        tape,
        rule,
        lambda a, c: conv_transpose2d(a, c, None, stride, padding, output_padding, groups, dilation),
    )
    if _tp._recorder is not None:  # the backward reads x and w only
        replayable(op, out, refill, (_transposed, xd, wd, shape4, s2, pads, d2, g_, bd), (x, w, b), tape, True)
    return result


def _transposed(
    xd: Array, wd: Array, shape4: tuple[int, ...], s2: Any, pads: Any, d2: Any, g_: int, bd: Array | None
) -> Array:
    """:func:`conv_transpose2d`'s output ``shape4``: conv2d's input gradient of ``xd`` with
    ``wd``, plus the bias per channel."""
    out: Array = _kc.backward_input(xd, wd, shape4, s2, pads, d2, g_)
    if bd is not None:
        out += bd.reshape(1, shape4[1], 1, 1)
    return out


@typed_as(_sig.conv_transpose3d)
def conv_transpose3d(
    x: Any,
    w: Any,
    b: Any = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: Any = 1,
    dilation: Any = 1,
) -> Any:
    """3-D transposed convolution of ``x (N, C_in, D, H, W)`` with ``w (C_in, C_out/groups, KD,
    KH, KW)`` plus an optional bias ``b (C_out,)``, as ``torch.nn.functional.conv_transpose3d``
    (the gradient of :func:`conv3d` w.r.t. its input, with the same ``w``).

    Returns ``(N, C_out, D_out, H_out, W_out)``, ``C_out = w.shape[1] * groups`` and ``D_out =
    (D - 1)*sd - 2*pd + dd*(KD - 1) + opd + 1`` (likewise ``H_out``, ``W_out``), of ``x``'s
    dtype (float32 or float64, not mixed). ``stride``, ``padding``, ``output_padding``,
    ``dilation``: an int or a triple. ``padding`` removes planes/rows/columns from the border of
    the full output; ``output_padding`` (< stride or < dilation, per dim) adds them at the end.
    Pass ``groups`` by keyword (positionally it is the 7th argument, as in PyTorch, which the
    typed signature does not cover).

    Gradients: ``grad_x = conv3d(g, w, stride, padding, dilation, groups)`` (the first ``(D, H,
    W)`` outputs), ``grad_w`` = conv3d's weight gradient with ``g`` as the input and ``x`` as
    the output's gradient, ``grad_b = sum(g, (0, 2, 3, 4))``; gradients of gradients to any
    order.

    Raises:
        ShapeError: ``x``/``w`` not 5-D; ``x``'s channels differ from ``w.shape[0]``;
            ``groups`` does not divide them; ``b`` is not ``(C_out,)``; the output is empty
            (all name the op and the shapes).
        DTypeError: float32 meets float64, or an integer tensor.
        ValueError: stride/dilation/groups < 1, negative padding or output padding,
            ``output_padding`` not smaller than either stride or dilation.
        TypeError: arguments that are not ints (or triples of ints).
    """
    op = "conv_transpose3d"
    w = tensor_operand(op, x, w)
    b = None if b is None else tensor_operand(op, x, b)
    xd, wd = x.data, w.data
    bd = None if b is None else b.data
    g_ = _groups(op, groups)
    c_out = _check_conv(op, 3, xd, wd, bd, g_, transposed=True)
    s = _triple(_ints(op, "stride", stride, 3, 1))
    d = _triple(_ints(op, "dilation", dilation, 3, 1))
    p = _ints(op, "padding", padding, 3, 0)
    opad = _ints(op, "output_padding", output_padding, 3, 0)
    if any(o_ >= si and o_ >= di for o_, si, di in zip(opad, s, d, strict=True)):
        raise ValueError(
            f"{op}: output_padding {opad} must be smaller than either stride {s} or dilation {d} (per dim)"
        )
    n = xd.shape[0]
    in_sz = _triple(tuple(int(i) for i in xd.shape[2:]))
    k = tuple(int(i) for i in wd.shape[2:])
    out_sz = _triple(
        tuple(
            (i - 1) * si - 2 * pi + di * (ki - 1) + oi + 1
            for i, si, pi, di, ki, oi in zip(in_sz, s, p, d, k, opad, strict=True)
        )
    )
    if min(out_sz) < 1:
        raise ShapeError(
            f"{op}: output size {out_sz} is empty: x {xd.shape}, w {wd.shape}, stride {s}, padding {p}, "
            f"output_padding {opad}, dilation {d}"
        )
    pads = ((p[0], p[0]), (p[1], p[1]), (p[2], p[2]))
    shape5 = (n, c_out, *out_sz)
    out = _transposed3d(xd, wd, shape5, s, pads, d, g_, bd)

    def rule(g: Array, want_x: bool, want_w: bool, want_b: bool) -> tuple[Array | None, Array | None, Array | None]:
        gx = _k3.forward(g, wd, s, pads, d, g_, in_sz) if want_x else None
        gw = _k3.backward_weight(g, xd, wd.shape, s, pads, d, g_) if want_w else None
        gb = _kc.bias_grad(g) if want_b else None
        return gx, gw, gb

    tape = _tapes(x, w, b)
    result = _record(
        x,
        w,
        b,
        out,
        tape,
        rule,
        lambda a, c: conv_transpose3d(a, c, None, stride, padding, output_padding, groups, dilation),
    )
    if _tp._recorder is not None:  # the backward reads x and w only
        replayable(op, out, refill, (_transposed3d, xd, wd, shape5, s, pads, d, g_, bd), (x, w, b), tape, True)
    return result


def _transposed3d(
    xd: Array, wd: Array, shape5: tuple[int, ...], s: Any, pads: Any, d: Any, g_: int, bd: Array | None
) -> Array:
    """:func:`conv_transpose3d`'s output ``shape5``: conv3d's input gradient of ``xd`` with
    ``wd``, plus the bias per channel."""
    out: Array = _k3.backward_input(xd, wd, shape5, s, pads, d, g_)
    if bd is not None:
        out += bd.reshape(1, shape5[1], 1, 1, 1)
    return out
