"""State-space layers: :class:`Mamba` (the selective SSM mixer) and :class:`MambaBlock` (its
pre-norm residual block), after Gu and Dao (2023), "Mamba: Linear-Time Sequence Modeling with
Selective State Spaces", and the reference implementation (state-spaces/mamba,
``mamba_ssm/modules/mamba_simple.py``: ``Mamba`` on its reference path, ``Block`` with
``fused_add_norm=False``), with the same parameter names."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, cast, overload

import numpy as np
import numpy.typing as npt

from gradtape.devices.default import AnyDevice, DeviceSpec, pick_device, pick_dtype
from gradtape.errors import ShapeError
from gradtape.nn._typing import B, E, Lq, T, W
from gradtape.nn.conv import Conv1d
from gradtape.nn.linear import Linear
from gradtape.nn.module import Module
from gradtape.nn.norm import RMSNorm
from gradtape.ops.scan import selective_scan  # the unwrapped ops: Module.__call__ checked x
from gradtape.ops.shape import transpose
from gradtape.ops.unary import exp, silu, softplus
from gradtape.shapes import AnyShape, Rank3
from gradtape.tape import NoneTape
from gradtape.tensor import Tensor

__all__ = ["Mamba", "MambaBlock"]

_DT_FLOOR = 1e-4
"""The reference's ``dt_init_floor``: initial step sizes are clamped below at this value."""


def _check_input(name: str, x: Any, d_model: int) -> None:
    if x.ndim != 3 or x.shape[-1] != d_model:
        raise ShapeError(f"{name}: expected an input of shape (B, L, {d_model}), got {x.shape}")
    if x.shape[1] == 0:
        raise ShapeError(f"{name}: input of shape {x.shape} has length 0 (nothing to scan)")


class _SameWidth(Module, Generic[E]):
    """A layer ``(B, L, E) -> (B, L, E)`` of width ``E``: the typed ``forward`` of
    :class:`Mamba` and :class:`MambaBlock`, which implement ``_forward``."""

    @overload
    def forward(self, x: AnyShape) -> Any: ...
    @overload
    def forward(self, x: Tensor[Rank3[B, Lq, E], T]) -> Tensor[Rank3[B, Lq, E], T]: ...
    @overload
    def forward(self, x: Tensor[Rank3[B, Lq, int], T]) -> Tensor[Rank3[B, Lq, int], T]: ...
    @overload
    def forward(self: _SameWidth[int], x: Tensor[Rank3[B, Lq, W], T]) -> Tensor[Rank3[B, Lq, W], T]: ...
    @overload
    def forward(self, x: Tensor[AnyShape, T]) -> Tensor[Any, T]: ...
    def forward(self, x: Any) -> Any:
        """``(B, L, d_model) -> (B, L, d_model)`` as the class says, ``x``'s dtype and tape kind."""
        return self._forward(x)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward

    def _forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        raise NotImplementedError


class Mamba(_SameWidth[E]):
    """The Mamba mixer (Gu and Dao 2023; ``Mamba`` in state-spaces/mamba's ``mamba_simple.py``,
    its reference path): a gated, selective state-space layer, ``(B, L, d_model) -> (B, L,
    d_model)``, causal (position ``t`` of the output depends on positions ``<= t`` only).

    With ``d_inner = expand * d_model`` and ``R = dt_rank`` (``ceil(d_model / 16)`` for
    ``"auto"``), forward on ``h (B, L, d_model)``::

        x, z = split(in_proj(h), [d_inner, d_inner])             # (B, L, d_inner) each
        x = silu(conv1d(x^T)[..., :L]^T)                          # depthwise causal conv over time
        dt, Bs, Cs = split(x_proj(x), [R, d_state, d_state])
        dt = softplus(dt_proj(dt))                                # (B, L, d_inner), positive
        A = -exp(A_log)                                           # (d_inner, d_state), negative
        y = selective_scan(x, dt, A, Bs, Cs, D, z)                # y_t * silu(z_t), see the op
        out = out_proj(y)

    The convolution runs over time with ``d_inner`` channels (``groups = d_inner``, kernel
    ``d_conv``, ``d_conv - 1`` zeros of padding each side, the output cut to the first ``L``
    steps: left padding only, hence causal). All of it is gradtape ops (slices, transposes,
    :func:`~gradtape.ops.selective_scan`'s fused kernels), so every parameter and the input get
    gradients, on a traced input or under a ``GradientTape`` context.

    Args:
        d_model: the width ``E`` of the input and output.
        d_state: ``N``, the SSM state size per channel (default 16).
        d_conv: the convolution's kernel size (default 4).
        expand: ``d_inner = expand * d_model`` (default 2).
        dt_rank: the rank of the step-size projection, an int or ``"auto"`` (``ceil(d_model / 16)``).
        dt_min, dt_max: the range of the initial step sizes ``softplus(dt_proj.bias)``.
        dev, device: a ``Cpu`` or ``Cuda``, or PyTorch's ``"cpu"``/``"cuda"``/``"cuda:N"``
            (:func:`gradtape.devices.default.pick_device`): the device
            whose seeded generator initialises the parameters (default:
            :func:`gradtape.get_default_device`, which :func:`gradtape.manual_seed` seeds).
        dtype: float32 (default) or float64.

    Parameters (the reference's names, shapes and initialisation):
        ``in_proj.weight (2 d_inner, d_model)`` (no bias); ``conv1d.weight (d_inner, 1, d_conv)``
        and ``conv1d.bias (d_inner,)`` (PyTorch's conv init); ``x_proj.weight (R + 2 d_state,
        d_inner)`` (no bias); ``dt_proj.weight (d_inner, R)``, ``U(-R**-0.5, R**-0.5)``, and
        ``dt_proj.bias (d_inner,)``, the inverse softplus of step sizes log-uniform in
        ``[dt_min, dt_max]`` (clamped below at 1e-4); ``A_log (d_inner, d_state)``, row
        ``log(1, 2, ..., d_state)`` for every channel (S4D-real); ``D (d_inner,)``, ones;
        ``out_proj.weight (d_model, d_inner)`` (no bias). Linear weights use PyTorch's default
        init, as the reference does.

    Typed ``Mamba[E]``, ``E`` the width (annotate ``mixer: Mamba[L[64]] = Mamba(64, dev=dev)``;
    unannotated it is ``Mamba[int]``): shape-preserving, ``Tensor[Rank3[B, L, E], T] ->
    Tensor[Rank3[B, L, E], T]`` with the input's tape kind; another static width is a type
    error, an ``int`` (dynamic) width on either side is checked at run time.

    Raises:
        ValueError: ``d_model``, ``d_state``, ``d_conv``, ``expand * d_model`` or ``dt_rank`` < 1,
            or ``dt_min``, ``dt_max`` not ``0 < dt_min <= dt_max``.
        ShapeError: (forward) an input that is not ``(B, L, d_model)``, or of length 0; the
            message names ``Mamba`` and the shape.
        DTypeError: (forward) the input's dtype is not the parameters'.

    ``no_weight_decay`` names ``A_log`` and ``D``, the parameters the reference marks
    ``_no_weight_decay``: give them a parameter group with ``weight_decay=0`` (the seq
    example does, see :func:`gradtape.examples.seq.param_groups`).
    """

    no_weight_decay: ClassVar[frozenset[str]] = frozenset({"A_log", "D"})

    def __init__(
        self,
        d_model: E,
        d_state: int = 16,
        d_conv: int = 4,
        expand: float = 2,
        dt_rank: int | Literal["auto"] = "auto",
        dt_min: float = 0.001,
        dt_max: float = 0.1,
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        dev = pick_device(type(self).__name__, device, dev)
        dtype = pick_dtype(dtype)
        dm = cast(int, d_model)  # E names the width at type level; an int at run time
        d_inner = int(expand * dm)
        rank = math.ceil(dm / 16) if dt_rank == "auto" else dt_rank
        for name, v in (("d_model", dm), ("d_state", d_state), ("d_conv", d_conv), ("d_inner", d_inner)):
            if not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"Mamba: {name} must be an int >= 1, got {v!r}")
        if not isinstance(rank, (int, np.integer)) or isinstance(rank, bool) or rank < 1:
            raise ValueError(f"Mamba: dt_rank must be 'auto' or an int >= 1, got {dt_rank!r}")
        if not 0.0 < dt_min <= dt_max:
            raise ValueError(f"Mamba: need 0 < dt_min <= dt_max, got dt_min={dt_min}, dt_max={dt_max}")
        self.d_model, self.d_state, self.d_conv, self.expand = dm, d_state, d_conv, expand
        self.d_inner, self.dt_rank = d_inner, int(rank)
        self.in_proj: Linear[E, int] = Linear(d_model, 2 * d_inner, bias=False, dev=dev, dtype=dtype)
        self.conv1d: Conv1d[int, int] = Conv1d(
            d_inner, d_inner, d_conv, padding=d_conv - 1, groups=d_inner, dev=dev, dtype=dtype
        )
        self.x_proj: Linear[int, int] = Linear(d_inner, self.dt_rank + 2 * d_state, bias=False, dev=dev, dtype=dtype)
        self.dt_proj: Linear[int, int] = Linear(self.dt_rank, d_inner, dev=dev, dtype=dtype)
        std = self.dt_rank**-0.5  # the reference's dt_init="random", dt_scale=1
        self.dt_proj.weight = dev.rand((d_inner, self.dt_rank), -std, std, dtype)
        u = dev.rng.random(d_inner)
        dt = np.maximum(np.exp(u * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)), _DT_FLOOR)
        inv_dt = dt + np.log(-np.expm1(-dt))  # softplus(inv_dt) == dt
        self.dt_proj.bias = dev.tensor(inv_dt, dtype)
        a = np.broadcast_to(np.arange(1, d_state + 1, dtype=np.float64), (d_inner, d_state))
        self.A_log: Tensor[Any, NoneTape] = dev.tensor(np.log(a), dtype)
        self.D: Tensor[Any, NoneTape] = dev.ones((d_inner,), dtype)
        self.out_proj: Linear[int, E] = Linear(d_inner, d_model, bias=False, dev=dev, dtype=dtype)

    def _forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        _check_input("Mamba", x, self.d_model)
        length, di, r, n = x.shape[1], self.d_inner, self.dt_rank, self.d_state
        xz = self.in_proj(x)  # (B, L, 2 d_inner)
        xs, z = xz[:, :, :di], xz[:, :, di:]
        conv = self.conv1d(transpose(xs, 1, 2))[:, :, :length]  # (B, d_inner, L): causal
        xc = silu(transpose(conv, 1, 2))
        x_dbl = self.x_proj(xc)  # (B, L, R + 2N)
        dt = softplus(self.dt_proj(x_dbl[:, :, :r]))
        bs, cs = x_dbl[:, :, r : r + n], x_dbl[:, :, r + n :]
        a = -exp(self.A_log)
        return self.out_proj(selective_scan(xc, dt, a, bs, cs, self.D, z))

    def extra_repr(self) -> str:
        return (
            f"d_model={self.d_model}, d_state={self.d_state}, d_conv={self.d_conv}, expand={self.expand}, "
            f"d_inner={self.d_inner}, dt_rank={self.dt_rank}"
        )


class MambaBlock(_SameWidth[E]):
    """A pre-norm residual Mamba block: ``x + mixer(norm(x))`` with ``norm`` an
    :class:`~gradtape.nn.RMSNorm` (the reference's ``Block(dim, Mamba, RMSNorm)`` with
    ``fused_add_norm=False``, as ``MambaLMHeadModel`` stacks them; the reference carries the
    residual stream separately, which is the same sum). ``(B, L, d_model) -> (B, L, d_model)``,
    causal.

    Args:
        d_model, d_state, d_conv, expand, dt_rank, dt_min, dt_max: as :class:`Mamba`.
        norm_eps: the RMSNorm's eps (default 1e-5, the reference's ``norm_epsilon``).
        dev, device: a ``Cpu`` or ``Cuda``, or PyTorch's ``"cpu"``/``"cuda"``/``"cuda:N"``
            (:func:`gradtape.devices.default.pick_device`): the device
            whose seeded generator initialises the parameters (default:
            :func:`gradtape.get_default_device`, which :func:`gradtape.manual_seed` seeds).
        dtype: float32 (default) or float64.

    Parameters: ``norm.weight (d_model,)`` (ones) and the mixer's, ``mixer.in_proj.weight``,
    ``mixer.A_log``, ... (see :class:`Mamba`), as the reference names them.

    Typed ``MambaBlock[E]`` as :class:`Mamba`.

    Raises:
        ValueError: as :class:`Mamba`. ShapeError: (forward) an input that is not
            ``(B, L, d_model)``, or of length 0, naming ``MambaBlock`` and the shape.
    """

    def __init__(
        self,
        d_model: E,
        d_state: int = 16,
        d_conv: int = 4,
        expand: float = 2,
        dt_rank: int | Literal["auto"] = "auto",
        dt_min: float = 0.001,
        dt_max: float = 0.1,
        norm_eps: float = 1e-5,
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        dev = pick_device(type(self).__name__, device, dev)
        dtype = pick_dtype(dtype)
        self.d_model = cast(int, d_model)
        self.mixer: Mamba[E] = Mamba(d_model, d_state, d_conv, expand, dt_rank, dt_min, dt_max, dev=dev, dtype=dtype)
        self.norm: RMSNorm[E] = RMSNorm(d_model, norm_eps, dev=dev, dtype=dtype)

    def _forward(self, x: Tensor[Any, Any]) -> Tensor[Any, Any]:
        """``x + mixer(norm(x))``."""
        _check_input("MambaBlock", x, self.d_model)
        out: Tensor[Any, Any] = x + self.mixer.forward(self.norm.forward(x))
        return out

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}"
