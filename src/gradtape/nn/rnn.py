"""Recurrent layers with PyTorch's names, arguments, parameters and results: :class:`LSTM`,
:class:`GRU`, :class:`RNN` and their single-step cells :class:`LSTMCell`, :class:`GRUCell`,
:class:`RNNCell`.

Each layer and direction runs as one op over the whole sequence (:func:`gradtape.ops.lstm_layer`,
:func:`~gradtape.ops.gru_layer`, :func:`~gradtape.ops.rnn_layer`): the input projection of
every step as one matrix product, a time loop of one BLAS product and one fused numba kernel
per step, and a backward that does the same in reverse and forms the weight gradients as single
products over every step (see :mod:`gradtape.ops.rnn`). A cell is the same op over one step.
"""

from __future__ import annotations

import functools
import warnings
from typing import TYPE_CHECKING, Any, Generic, Literal, overload

import numpy as np
import numpy.typing as npt

from gradtape import tape as _tp
from gradtape.devices.cpu import Cpu
from gradtape.devices.default import AnyDevice, DeviceSpec, pick_device, pick_dtype
from gradtape.errors import DTypeError, ShapeError
from gradtape.nn._init import kaiming_uniform
from gradtape.nn._typing import HS, B, I, N, O, T, Z
from gradtape.nn.module import Module
from gradtape.nn.utils.rnn import PackedSequence, _repack, _unpack_sorted
from gradtape.ops.nn import _generator, dropout_mask
from gradtape.ops.rnn import gru_layer, lstm_layer, recurrent_stack, rnn_layer  # unwrapped: the layer checks its inputs
from gradtape.shapes import AnyShape, Rank1, Rank2, Rank3
from gradtape.tensor import Tensor

__all__ = ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNCell"]

State = tuple[Tensor[Any, Any], Tensor[Any, Any]]
"""An LSTM's ``(h, c)`` pair of states. (An alias, so that ``Module.__call__``'s argument check,
which reads the annotations, leaves the optional pair to the layer's own check.)"""

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _positive(name: str, what: str, v: object) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise ValueError(f"{name}: {what} must be an int >= 1, got {v!r}")
    return int(v)


def _shape_text(s: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(d) for d in s) + ")"


def _layer_mask(x: Tensor[Any, Any], shape: tuple[int, ...], dtype: np.dtype[Any], p: float) -> np.ndarray[Any, Any]:
    """An inter-layer dropout mask drawn again from ``x``'s device generator (for
    :func:`gradtape.capture`'s replays)."""
    return dropout_mask(shape, dtype, p, _generator(None, x))


def _check_state(name: str, arg: str, t: object, want: tuple[int, ...], dtype: np.dtype[Any], what: str) -> None:
    """A hidden or cell state: a tensor of shape ``want`` and the parameters' dtype."""
    if not isinstance(t, Tensor):
        raise TypeError(f"{name}: {arg} must be a Tensor, got {type(t).__name__}")
    if t.shape != want:
        raise ShapeError(f"{name}: expected {arg} of shape {_shape_text(want)} ({what}), got {_shape_text(t.shape)}")
    if t.dtype != dtype:
        raise DTypeError(f"{name}: {arg} has dtype {t.dtype} (shape {t.shape}), the parameters are {dtype}")


def _check_input(
    name: str, x: object, input_size: int, dtype: np.dtype[Any], ranks: tuple[int, int]
) -> Tensor[Any, Any]:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: input must be a Tensor, got {type(x).__name__}")
    lo, hi = ranks
    if x.ndim not in ranks:
        raise ShapeError(
            f"{name}: expected an input of {lo} dims (unbatched) or {hi} dims (batched), "
            f"got shape {_shape_text(x.shape)}"
        )
    if x.shape[-1] != input_size:
        raise ShapeError(
            f"{name}: input has {x.shape[-1]} features in its last dim (shape {_shape_text(x.shape)}), "
            f"expected input_size={input_size}"
        )
    if x.dtype != dtype:
        raise DTypeError(f"{name}: input has dtype {x.dtype} (shape {x.shape}), the parameters are {dtype}")
    return x


class _RNNBase(Module):
    """The stacked, optionally bidirectional recurrence shared by :class:`LSTM`, :class:`GRU`
    and :class:`RNN` (PyTorch's ``RNNBase``)."""

    mode: str
    _names: list[tuple[str, str, str, str]]

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int,
        bias: bool,
        batch_first: bool,
        dropout: float,
        bidirectional: bool,
        dev: Cpu,
        dtype: npt.DTypeLike,
    ) -> None:
        name = type(self).__name__
        self.mode = mode
        self.input_size = _positive(name, "input_size", input_size)
        self.hidden_size = _positive(name, "hidden_size", hidden_size)
        self.num_layers = _positive(name, "num_layers", num_layers)
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0.0 <= dropout <= 1.0:
            raise ValueError(f"{name}: dropout must be a number in [0, 1], got {dropout!r}")
        if dropout > 0 and self.num_layers == 1:
            warnings.warn(
                f"{name}: dropout adds dropout after all but the last recurrent layer, so dropout={dropout} "
                "with num_layers=1 does nothing",
                UserWarning,
                stacklevel=3,
            )
        self.bias = bool(bias)
        self.batch_first = bool(batch_first)
        self.dropout = float(dropout)
        self.bidirectional = bool(bidirectional)
        nh, ng = self.hidden_size, _GATES[mode] * self.hidden_size
        ndir = 2 if self.bidirectional else 1
        self._names = []
        for layer in range(self.num_layers):
            width = self.input_size if layer == 0 else nh * ndir
            for d in range(ndir):
                sfx = f"l{layer}{'_reverse' if d else ''}"
                names = (f"weight_ih_{sfx}", f"weight_hh_{sfx}", f"bias_ih_{sfx}", f"bias_hh_{sfx}")
                setattr(self, names[0], kaiming_uniform(dev, (ng, width), nh, dtype))
                setattr(self, names[1], kaiming_uniform(dev, (ng, nh), nh, dtype))
                if self.bias:
                    setattr(self, names[2], kaiming_uniform(dev, (ng,), nh, dtype))
                    setattr(self, names[3], kaiming_uniform(dev, (ng,), nh, dtype))
                self._names.append(names)

    @property
    def _dtype(self) -> np.dtype[Any]:
        w: Tensor[Any, Any] = getattr(self, self._names[0][0])
        return w.dtype

    @property
    def all_weights(self) -> list[list[Tensor[Any, Any]]]:
        """The parameters per layer and direction, ``[[weight_ih_l0, weight_hh_l0, bias_ih_l0,
        bias_hh_l0], ...]`` (PyTorch's ``all_weights``; without biases when ``bias=False``)."""
        return [[getattr(self, n) for n in names if hasattr(self, n)] for names in self._names]

    def flatten_parameters(self) -> None:
        """Does nothing (PyTorch's packs the weights for cuDNN); here so ported code runs."""

    def _weights(self, k: int) -> tuple[Any, Any, Any, Any]:
        wi, wh, bi, bh = self._names[k]
        if self.bias:
            return getattr(self, wi), getattr(self, wh), getattr(self, bi), getattr(self, bh)
        return getattr(self, wi), getattr(self, wh), None, None

    def _run(self, input: Any, hx: Any) -> tuple[Any, Tensor[Any, Any], Tensor[Any, Any] | None]:
        """``(output, h_n, c_n)`` (``c_n`` ``None`` but for the LSTM), in PyTorch's layouts;
        ``output`` a :class:`~gradtape.nn.utils.rnn.PackedSequence` for a packed ``input``."""
        name = type(self).__name__
        dtype = self._dtype
        packed = input if isinstance(input, PackedSequence) else None
        lengths = None
        if packed is not None:  # each sequence over its own steps, in the packed column order
            input, lengths = _unpack_sorted(packed)
        x = _check_input(name, input, self.input_size, dtype, (2, 3))
        batched = x.ndim == 3
        if not batched:
            x = x.unsqueeze(1)
        elif self.batch_first and packed is None:
            x = x.transpose(0, 1)
        nb = x.shape[1]
        ndir = 2 if self.bidirectional else 1
        nk = self.num_layers * ndir
        want = (nk, nb, self.hidden_size) if batched else (nk, self.hidden_size)
        what = (
            "num_layers * num_directions, batch, hidden_size" if batched else "num_layers * num_directions, hidden_size"
        )
        lstm = self.mode == "LSTM"
        h0: Any = None
        c0: Any = None
        if hx is not None:
            if lstm:
                if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                    raise TypeError(f"{name}: hx must be a tuple (h_0, c_0) of tensors, got {type(hx).__name__}")
                h0, c0 = hx
                _check_state(name, "h_0", h0, want, dtype, what)
                _check_state(name, "c_0", c0, want, dtype, what)
            else:
                _check_state(name, "hx", hx, want, dtype, what)
                h0 = hx
            if not batched:
                h0 = h0.unsqueeze(1)
                c0 = c0.unsqueeze(1) if c0 is not None else None
            if packed is not None and packed.sorted_indices is not None:  # hx is in the batch's order
                order = packed.sorted_indices
                h0, c0 = h0[:, order], (c0[:, order] if c0 is not None else None)
        masks: list[Any] = [None] * (self.num_layers - 1)
        if self.dropout > 0 and self.training:
            gen = _generator(None, x)
            shape = (x.shape[0], nb, ndir * self.hidden_size)
            for layer in range(self.num_layers - 1):  # drawn in the order dropout would draw them
                masks[layer] = m = (
                    np.zeros(shape, dtype) if self.dropout == 1 else dropout_mask(shape, dtype, self.dropout, gen)
                )
                if _tp._recorder is not None:  # gradtape.capture: a replay draws each mask again
                    if self.dropout == 1:
                        _tp._recorder.constant(m)
                    else:
                        _tp._recorder.drawn(m, functools.partial(_layer_mask, x, shape, dtype, self.dropout))
        weights = [self._weights(k) for k in range(nk)]
        output, h_n, c_n = recurrent_stack(self.mode, x, h0, c0, weights, ndir, masks, lengths)
        if packed is not None:
            back = packed.unsorted_indices
            if back is not None:
                h_n, c_n = h_n[:, back], (c_n[:, back] if c_n is not None else None)
            return _repack(packed, output), h_n, c_n
        if not batched:
            output, h_n = output.squeeze(1), h_n.squeeze(1)
            c_n = c_n.squeeze(1) if c_n is not None else None
        elif self.batch_first:
            output = output.transpose(0, 1)
        return output, h_n, c_n

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.mode == "RNN_RELU":
            s += ", nonlinearity='relu'"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


_LAYER_DOC = """

    Args:
        input_size: ``I``, the features of each input step.
        hidden_size: ``H``, the features of the hidden state.
        num_layers: recurrent layers stacked (the second reads the first's output).
        bias: whether the layers have ``bias_ih`` and ``bias_hh``.
        batch_first: input and output are ``(B, L, ...)`` instead of ``(L, B, ...)`` (the
            states ``h_0``/``h_n`` stay ``(num_layers * D, B, H)``, as in PyTorch).
        dropout: dropout probability on the output of every layer but the last (training
            mode only; a ``UserWarning`` when ``num_layers == 1``, as PyTorch gives).
        bidirectional: also run every layer from the last step to the first (``D = 2``); the
            two directions' outputs are concatenated on the feature dim.
        dev, device: a ``Cpu`` or ``Cuda``, or PyTorch's ``"cpu"``/``"cuda"``/``"cuda:N"``
            (:func:`gradtape.devices.default.pick_device`): the device
            whose seeded generator initialises the parameters (default:
            :func:`gradtape.get_default_device`, which :func:`gradtape.manual_seed` seeds).
        dtype: float32 (default) or float64.

    Parameters (PyTorch's names, shapes and initialisation ``U(-1/sqrt(H), 1/sqrt(H))``, in
    PyTorch's order), for layer ``k`` and ``G`` gates: ``weight_ih_l{k}`` ``(G H, I)`` for
    ``k = 0``, ``(G H, D H)`` above; ``weight_hh_l{k}`` ``(G H, H)``; ``bias_ih_l{k}``,
    ``bias_hh_l{k}`` ``(G H,)``; the reverse direction's the same with the suffix
    ``_reverse``. A PyTorch ``state_dict`` loads as it is.

    Forward: ``input`` ``(L, B, I)`` (``(B, L, I)`` with ``batch_first``) or unbatched
    ``(L, I)``, and an optional initial state (zeros when omitted) of shape
    ``(num_layers * D, B, H)`` (unbatched ``(num_layers * D, H)``). Returns ``output``
    ``(L, B, D H)`` (``(B, L, D H)`` with ``batch_first``, ``(L, D H)`` unbatched), the last
    layer's hidden state at every step, and the final state(s) of every layer and direction.
    Gradients reach the input, the initial states and every parameter.

    Typed ``[I, H, O]`` (input size, hidden size, output width), from the constructor:
    ``O = H``, or with ``bidirectional=True`` (a literal) ``O`` is ``Any`` to the checkers, so
    an annotation gives it, ``lstm: nn.LSTM[L[8], L[16], L[32]] = nn.LSTM(8, 16,
    bidirectional=True, dev=dev)`` (types have no arithmetic: mypy, pyright and pyrefly accept
    any ``O`` there, and an unannotated layer's output has any width; gradtape's mypy plugin
    computes ``O = 2 H`` from constant arguments, rejects another annotated literal and types
    the outputs ``2 H`` wide). An input ``(..., I)`` (rank 3, either layout, or
    unbatched rank 2) gives an output ``(..., O)`` with the input's leading dims and tape
    kind; the final states are ``(int, int, H)`` (``(int, H)`` unbatched): their first dim
    depends on ``num_layers``, their batch dim on ``batch_first``. Another static last dim
    than ``I`` is a type error; an ``int`` one, or a layer built without an annotation
    (``[int, int, int]``), is checked at run time.

    Raises:
        ValueError: ``input_size``, ``hidden_size`` or ``num_layers`` not an int >= 1, or
            ``dropout`` outside ``[0, 1]``.
        ShapeError: (forward) an input that is not 2-D or 3-D or whose last dim is not
            ``input_size``; an initial state of the wrong shape; an empty sequence. The
            message names the layer and the shapes.
        DTypeError: (forward) an input or state whose dtype is not the parameters'.
        TypeError: (forward) an input or state that is not a tensor (a list, an array).
"""


class LSTM(_RNNBase, Generic[I, HS, O]):
    __doc__ = (
        """A multi-layer long short-term memory network (Hochreiter and Schmidhuber 1997; PyTorch's
    ``torch.nn.LSTM`` without ``proj_size``). Per layer and step, gates in the order ``i, f, g,
    o`` (the rows of ``weight_ih``/``weight_hh``)::

        i = sigmoid(W_ii x_t + b_ii + W_hi h_{t-1} + b_hi)
        f = sigmoid(W_if x_t + b_if + W_hf h_{t-1} + b_hf)
        g = tanh(W_ig x_t + b_ig + W_hg h_{t-1} + b_hg)
        o = sigmoid(W_io x_t + b_io + W_ho h_{t-1} + b_ho)
        c_t = f c_{t-1} + i g;  h_t = o tanh(c_t)

    ``lstm(input, (h_0, c_0))`` or ``lstm(input)`` returns ``(output, (h_n, c_n))``."""
        + _LAYER_DOC
    )

    @overload
    def __init__(
        self: LSTM[I, HS, HS],
        input_size: I,
        hidden_size: HS,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: Literal[False] = False,
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None: ...
    @overload
    def __init__(
        self: LSTM[I, HS, Any],
        input_size: I,
        hidden_size: HS,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        *,
        bidirectional: Literal[True],
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None: ...
    @overload
    def __init__(
        self: LSTM[I, HS, Any],
        input_size: I,
        hidden_size: HS,
        num_layers: int,
        bias: bool,
        batch_first: bool,
        dropout: float,
        bidirectional: Literal[True],
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None: ...
    @overload
    def __init__(
        self: LSTM[I, HS, int],
        input_size: I,
        hidden_size: HS,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None: ...
    def __init__(
        self,
        input_size: Any,
        hidden_size: Any,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        dev = pick_device(type(self).__name__, device, dev)
        dtype = pick_dtype(dtype)
        super().__init__(
            "LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, dev, dtype
        )

    @overload
    def forward(
        self, input: PackedSequence, hx: State | None = None
    ) -> tuple[PackedSequence, tuple[Tensor[Rank3[int, int, HS], Any], Tensor[Rank3[int, int, HS], Any]]]: ...
    @overload
    def forward(self, input: AnyShape, hx: State | None = None) -> Any: ...
    @overload
    def forward(
        self, input: Tensor[Rank3[N, B, I], T], hx: State | None = None
    ) -> tuple[Tensor[Rank3[N, B, O], T], tuple[Tensor[Rank3[int, int, HS], T], Tensor[Rank3[int, int, HS], T]]]: ...
    @overload
    def forward(
        self, input: Tensor[Rank3[N, B, int], T], hx: State | None = None
    ) -> tuple[Tensor[Rank3[N, B, O], T], tuple[Tensor[Rank3[int, int, HS], T], Tensor[Rank3[int, int, HS], T]]]: ...
    @overload
    def forward(
        self: LSTM[int, HS, O], input: Tensor[Rank3[N, B, Z], T], hx: State | None = None
    ) -> tuple[Tensor[Rank3[N, B, O], T], tuple[Tensor[Rank3[int, int, HS], T], Tensor[Rank3[int, int, HS], T]]]: ...
    @overload
    def forward(
        self, input: Tensor[Rank2[N, I], T], hx: State | None = None
    ) -> tuple[Tensor[Rank2[N, O], T], tuple[Tensor[Rank2[int, HS], T], Tensor[Rank2[int, HS], T]]]: ...
    @overload
    def forward(
        self, input: Tensor[Rank2[N, int], T], hx: State | None = None
    ) -> tuple[Tensor[Rank2[N, O], T], tuple[Tensor[Rank2[int, HS], T], Tensor[Rank2[int, HS], T]]]: ...
    @overload
    def forward(
        self: LSTM[int, HS, O], input: Tensor[Rank2[N, Z], T], hx: State | None = None
    ) -> tuple[Tensor[Rank2[N, O], T], tuple[Tensor[Rank2[int, HS], T], Tensor[Rank2[int, HS], T]]]: ...
    @overload
    def forward(
        self, input: Tensor[AnyShape, T], hx: State | None = None
    ) -> tuple[Tensor[Any, T], tuple[Tensor[Any, T], Tensor[Any, T]]]: ...
    def forward(self, input: Any, hx: State | None = None) -> Any:
        """``(output, (h_n, c_n))`` for ``input`` and the initial ``(h_0, c_0)`` (zeros if
        ``None``); see the class docstring for the shapes."""
        out, hn, cn = self._run(input, hx)
        assert cn is not None
        return out, (hn, cn)

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward


class GRU(_RNNBase, Generic[I, HS, O]):
    __doc__ = (
        """A multi-layer gated recurrent unit network (Cho et al. 2014; PyTorch's
    ``torch.nn.GRU``). Per layer and step, gates in the order ``r, z, n``::

        r = sigmoid(W_ir x_t + b_ir + W_hr h_{t-1} + b_hr)
        z = sigmoid(W_iz x_t + b_iz + W_hz h_{t-1} + b_hz)
        n = tanh(W_in x_t + b_in + r (W_hn h_{t-1} + b_hn))
        h_t = (1 - z) n + z h_{t-1}

    ``gru(input, h_0)`` or ``gru(input)`` returns ``(output, h_n)``."""
        + _LAYER_DOC
    )

    @overload
    def __init__(
        self: GRU[I, HS, HS],
        input_size: I,
        hidden_size: HS,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: Literal[False] = False,
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None: ...
    @overload
    def __init__(
        self: GRU[I, HS, Any],
        input_size: I,
        hidden_size: HS,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        *,
        bidirectional: Literal[True],
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None: ...
    @overload
    def __init__(
        self: GRU[I, HS, Any],
        input_size: I,
        hidden_size: HS,
        num_layers: int,
        bias: bool,
        batch_first: bool,
        dropout: float,
        bidirectional: Literal[True],
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None: ...
    @overload
    def __init__(
        self: GRU[I, HS, int],
        input_size: I,
        hidden_size: HS,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None: ...
    def __init__(
        self,
        input_size: Any,
        hidden_size: Any,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        dev = pick_device(type(self).__name__, device, dev)
        dtype = pick_dtype(dtype)
        super().__init__(
            "GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, dev, dtype
        )

    @overload
    def forward(
        self, input: PackedSequence, hx: Tensor[Any, Any] | None = None
    ) -> tuple[PackedSequence, Tensor[Rank3[int, int, HS], Any]]: ...
    @overload
    def forward(self, input: AnyShape, hx: Tensor[Any, Any] | None = None) -> Any: ...
    @overload
    def forward(
        self, input: Tensor[Rank3[N, B, I], T], hx: Tensor[Any, Any] | None = None
    ) -> tuple[Tensor[Rank3[N, B, O], T], Tensor[Rank3[int, int, HS], T]]: ...
    @overload
    def forward(
        self, input: Tensor[Rank3[N, B, int], T], hx: Tensor[Any, Any] | None = None
    ) -> tuple[Tensor[Rank3[N, B, O], T], Tensor[Rank3[int, int, HS], T]]: ...
    @overload
    def forward(
        self: GRU[int, HS, O], input: Tensor[Rank3[N, B, Z], T], hx: Tensor[Any, Any] | None = None
    ) -> tuple[Tensor[Rank3[N, B, O], T], Tensor[Rank3[int, int, HS], T]]: ...
    @overload
    def forward(
        self, input: Tensor[Rank2[N, I], T], hx: Tensor[Any, Any] | None = None
    ) -> tuple[Tensor[Rank2[N, O], T], Tensor[Rank2[int, HS], T]]: ...
    @overload
    def forward(
        self, input: Tensor[Rank2[N, int], T], hx: Tensor[Any, Any] | None = None
    ) -> tuple[Tensor[Rank2[N, O], T], Tensor[Rank2[int, HS], T]]: ...
    @overload
    def forward(
        self: GRU[int, HS, O], input: Tensor[Rank2[N, Z], T], hx: Tensor[Any, Any] | None = None
    ) -> tuple[Tensor[Rank2[N, O], T], Tensor[Rank2[int, HS], T]]: ...
    @overload
    def forward(
        self, input: Tensor[AnyShape, T], hx: Tensor[Any, Any] | None = None
    ) -> tuple[Tensor[Any, T], Tensor[Any, T]]: ...
    def forward(self, input: Any, hx: Tensor[Any, Any] | None = None) -> Any:
        """``(output, h_n)`` for ``input`` and the initial ``h_0`` (zeros if ``None``)."""
        out, hn, _ = self._run(input, hx)
        return out, hn

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward


class RNN(_RNNBase, Generic[I, HS, O]):
    __doc__ = (
        """A multi-layer Elman network (Elman 1990; PyTorch's ``torch.nn.RNN``):
    ``h_t = act(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)`` per layer and step, ``act`` tanh or
    relu (``nonlinearity``, the fourth argument as in PyTorch; anything else raises
    ``ValueError``). ``rnn(input, h_0)`` or ``rnn(input)`` returns ``(output, h_n)``."""
        + _LAYER_DOC
    )

    @overload
    def __init__(
        self: RNN[I, HS, HS],
        input_size: I,
        hidden_size: HS,
        num_layers: int = 1,
        nonlinearity: str = "tanh",
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: Literal[False] = False,
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None: ...
    @overload
    def __init__(
        self: RNN[I, HS, Any],
        input_size: I,
        hidden_size: HS,
        num_layers: int = 1,
        nonlinearity: str = "tanh",
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        *,
        bidirectional: Literal[True],
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None: ...
    @overload
    def __init__(
        self: RNN[I, HS, Any],
        input_size: I,
        hidden_size: HS,
        num_layers: int,
        nonlinearity: str,
        bias: bool,
        batch_first: bool,
        dropout: float,
        bidirectional: Literal[True],
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None: ...
    @overload
    def __init__(
        self: RNN[I, HS, int],
        input_size: I,
        hidden_size: HS,
        num_layers: int = 1,
        nonlinearity: str = "tanh",
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None: ...
    def __init__(
        self,
        input_size: Any,
        hidden_size: Any,
        num_layers: int = 1,
        nonlinearity: str = "tanh",
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        dev = pick_device(type(self).__name__, device, dev)
        dtype = pick_dtype(dtype)
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN: unknown nonlinearity {nonlinearity!r}; choose 'tanh' or 'relu'")
        self.nonlinearity = nonlinearity
        mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"
        super().__init__(
            mode, input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, dev, dtype
        )

    @overload
    def forward(
        self, input: PackedSequence, hx: Tensor[Any, Any] | None = None
    ) -> tuple[PackedSequence, Tensor[Rank3[int, int, HS], Any]]: ...
    @overload
    def forward(self, input: AnyShape, hx: Tensor[Any, Any] | None = None) -> Any: ...
    @overload
    def forward(
        self, input: Tensor[Rank3[N, B, I], T], hx: Tensor[Any, Any] | None = None
    ) -> tuple[Tensor[Rank3[N, B, O], T], Tensor[Rank3[int, int, HS], T]]: ...
    @overload
    def forward(
        self, input: Tensor[Rank3[N, B, int], T], hx: Tensor[Any, Any] | None = None
    ) -> tuple[Tensor[Rank3[N, B, O], T], Tensor[Rank3[int, int, HS], T]]: ...
    @overload
    def forward(
        self: RNN[int, HS, O], input: Tensor[Rank3[N, B, Z], T], hx: Tensor[Any, Any] | None = None
    ) -> tuple[Tensor[Rank3[N, B, O], T], Tensor[Rank3[int, int, HS], T]]: ...
    @overload
    def forward(
        self, input: Tensor[Rank2[N, I], T], hx: Tensor[Any, Any] | None = None
    ) -> tuple[Tensor[Rank2[N, O], T], Tensor[Rank2[int, HS], T]]: ...
    @overload
    def forward(
        self, input: Tensor[Rank2[N, int], T], hx: Tensor[Any, Any] | None = None
    ) -> tuple[Tensor[Rank2[N, O], T], Tensor[Rank2[int, HS], T]]: ...
    @overload
    def forward(
        self: RNN[int, HS, O], input: Tensor[Rank2[N, Z], T], hx: Tensor[Any, Any] | None = None
    ) -> tuple[Tensor[Rank2[N, O], T], Tensor[Rank2[int, HS], T]]: ...
    @overload
    def forward(
        self, input: Tensor[AnyShape, T], hx: Tensor[Any, Any] | None = None
    ) -> tuple[Tensor[Any, T], Tensor[Any, T]]: ...
    def forward(self, input: Any, hx: Tensor[Any, Any] | None = None) -> Any:
        """``(output, h_n)`` for ``input`` and the initial ``h_0`` (zeros if ``None``)."""
        out, hn, _ = self._run(input, hx)
        return out, hn

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward


# ----- cells ------------------------------------------------------------------------------------


class _CellBase(Module):
    """One step of a recurrence (PyTorch's ``RNNCellBase``): parameters ``weight_ih (G H, I)``,
    ``weight_hh (G H, H)``, ``bias_ih``, ``bias_hh (G H,)`` (``None`` without bias), initialised
    ``U(-1/sqrt(H), 1/sqrt(H))``."""

    mode: str
    weight_ih: Tensor[Any, Any]
    weight_hh: Tensor[Any, Any]
    bias_ih: Tensor[Any, Any] | None
    bias_hh: Tensor[Any, Any] | None

    def __init__(
        self, mode: str, input_size: object, hidden_size: object, bias: bool, dev: Cpu, dtype: npt.DTypeLike
    ) -> None:
        name = type(self).__name__
        self.mode = mode
        self.input_size = _positive(name, "input_size", input_size)
        self.hidden_size = _positive(name, "hidden_size", hidden_size)
        nh, ng = self.hidden_size, _GATES[self.mode] * self.hidden_size
        self.weight_ih = kaiming_uniform(dev, (ng, self.input_size), nh, dtype)
        self.weight_hh = kaiming_uniform(dev, (ng, nh), nh, dtype)
        self.bias_ih = kaiming_uniform(dev, (ng,), nh, dtype) if bias else None
        self.bias_hh = kaiming_uniform(dev, (ng,), nh, dtype) if bias else None

    def _step(self, input: Any, hx: Any) -> tuple[Tensor[Any, Any], Tensor[Any, Any] | None]:
        """``(h', c')`` (``c'`` ``None`` but for the LSTM cell), unbatched as the input."""
        name = type(self).__name__
        dtype = self.weight_ih.dtype
        x = _check_input(name, input, self.input_size, dtype, (1, 2))
        batched = x.ndim == 2
        nb = x.shape[0] if batched else 1
        want = (nb, self.hidden_size) if batched else (self.hidden_size,)
        what = "batch, hidden_size" if batched else "hidden_size"
        lstm = self.mode == "LSTM"
        h0: Any = None
        c0: Any = None
        if hx is not None:
            if lstm:
                if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                    raise TypeError(f"{name}: hx must be a tuple (h_0, c_0) of tensors, got {type(hx).__name__}")
                h0, c0 = hx
                _check_state(name, "h_0", h0, want, dtype, what)
                _check_state(name, "c_0", c0, want, dtype, what)
                c0 = c0.reshape((nb, self.hidden_size))
            else:
                _check_state(name, "hx", hx, want, dtype, what)
                h0 = hx
            h0 = h0.reshape((nb, self.hidden_size))
        zero = x._like(np.zeros((nb, self.hidden_size), dtype))
        h0 = zero if h0 is None else h0
        x3 = x.reshape((1, nb, self.input_size))
        w = (self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        cn: Tensor[Any, Any] | None = None
        if lstm:
            _, hn, cn = lstm_layer(x3, h0, zero if c0 is None else c0, *w)
        elif self.mode == "GRU":
            _, hn = gru_layer(x3, h0, *w)
        else:
            _, hn = rnn_layer(x3, h0, *w, "relu" if self.mode == "RNN_RELU" else "tanh")
        if not batched:
            hn = hn.reshape((self.hidden_size,))
            cn = cn.reshape((self.hidden_size,)) if cn is not None else None
        return hn, cn

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias_ih is None:
            s += ", bias=False"
        if self.mode == "RNN_RELU":
            s += ", nonlinearity='relu'"
        return s


_CELL_DOC = """

    Args:
        input_size: ``I``; hidden_size: ``H``; bias: whether there are ``bias_ih``/``bias_hh``.
        dev, device: a ``Cpu`` or ``Cuda``, or PyTorch's ``"cpu"``/``"cuda"``/``"cuda:N"``
            (:func:`gradtape.devices.default.pick_device`): the device
            whose seeded generator initialises the parameters (default:
            :func:`gradtape.get_default_device`, which :func:`gradtape.manual_seed` seeds).
        dtype: float32 (default) or float64.

    Parameters: ``weight_ih (G H, I)``, ``weight_hh (G H, H)``, ``bias_ih``, ``bias_hh (G H,)``
    (PyTorch's names, shapes and ``U(-1/sqrt(H), 1/sqrt(H))`` initialisation).

    Forward: ``input (B, I)`` or unbatched ``(I,)``, state(s) ``(B, H)`` / ``(H,)`` (zeros when
    omitted). One step of the layer's op (:mod:`gradtape.ops.rnn`).

    Typed ``[I, H]`` from ``input_size`` and ``hidden_size``: ``(B, I) -> (B, H)`` (unbatched
    ``(I,) -> (H,)``), the input's tape kind; another static input width than ``I`` is a type
    error, an ``int`` one (or an unannotated ``[int, int]`` cell) is checked at run time.

    Raises:
        ValueError: ``input_size`` or ``hidden_size`` not an int >= 1.
        ShapeError: (forward) an input that is not 1-D or 2-D or whose last dim is not
            ``input_size``, or a state of the wrong shape, naming the cell and the shapes.
        DTypeError: (forward) an input or state whose dtype is not the parameters'.
"""


class LSTMCell(_CellBase, Generic[I, HS]):
    __doc__ = (
        """One LSTM step (PyTorch's ``torch.nn.LSTMCell``): ``cell(input, (h, c))`` or
    ``cell(input)`` returns ``(h', c')``, the equations of :class:`LSTM` (``G = 4``)."""
        + _CELL_DOC
    )

    def __init__(
        self,
        input_size: I,
        hidden_size: HS,
        bias: bool = True,
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        dev = pick_device(type(self).__name__, device, dev)
        dtype = pick_dtype(dtype)
        super().__init__("LSTM", input_size, hidden_size, bias, dev, dtype)

    @overload
    def forward(self, input: AnyShape, hx: State | None = None) -> Any: ...
    @overload
    def forward(
        self, input: Tensor[Rank2[B, I], T], hx: State | None = None
    ) -> tuple[Tensor[Rank2[B, HS], T], Tensor[Rank2[B, HS], T]]: ...
    @overload
    def forward(
        self, input: Tensor[Rank2[B, int], T], hx: State | None = None
    ) -> tuple[Tensor[Rank2[B, HS], T], Tensor[Rank2[B, HS], T]]: ...
    @overload
    def forward(
        self: LSTMCell[int, HS], input: Tensor[Rank2[B, Z], T], hx: State | None = None
    ) -> tuple[Tensor[Rank2[B, HS], T], Tensor[Rank2[B, HS], T]]: ...
    @overload
    def forward(
        self, input: Tensor[Rank1[I], T], hx: State | None = None
    ) -> tuple[Tensor[Rank1[HS], T], Tensor[Rank1[HS], T]]: ...
    @overload
    def forward(
        self, input: Tensor[Rank1[int], T], hx: State | None = None
    ) -> tuple[Tensor[Rank1[HS], T], Tensor[Rank1[HS], T]]: ...
    @overload
    def forward(
        self: LSTMCell[int, HS], input: Tensor[Rank1[Z], T], hx: State | None = None
    ) -> tuple[Tensor[Rank1[HS], T], Tensor[Rank1[HS], T]]: ...
    @overload
    def forward(self, input: Tensor[AnyShape, T], hx: State | None = None) -> tuple[Tensor[Any, T], Tensor[Any, T]]: ...
    def forward(self, input: Any, hx: State | None = None) -> Any:
        """``(h', c')`` after one step from ``hx = (h, c)`` (zeros if ``None``)."""
        hn, cn = self._step(input, hx)
        assert cn is not None
        return hn, cn

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward


class GRUCell(_CellBase, Generic[I, HS]):
    __doc__ = (
        """One GRU step (PyTorch's ``torch.nn.GRUCell``): ``cell(input, h)`` or ``cell(input)``
    returns ``h'``, the equations of :class:`GRU` (``G = 3``)."""
        + _CELL_DOC
    )

    def __init__(
        self,
        input_size: I,
        hidden_size: HS,
        bias: bool = True,
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        dev = pick_device(type(self).__name__, device, dev)
        dtype = pick_dtype(dtype)
        super().__init__("GRU", input_size, hidden_size, bias, dev, dtype)

    @overload
    def forward(self, input: AnyShape, hx: Tensor[Any, Any] | None = None) -> Any: ...
    @overload
    def forward(self, input: Tensor[Rank2[B, I], T], hx: Tensor[Any, Any] | None = None) -> Tensor[Rank2[B, HS], T]: ...
    @overload
    def forward(
        self, input: Tensor[Rank2[B, int], T], hx: Tensor[Any, Any] | None = None
    ) -> Tensor[Rank2[B, HS], T]: ...
    @overload
    def forward(
        self: GRUCell[int, HS], input: Tensor[Rank2[B, Z], T], hx: Tensor[Any, Any] | None = None
    ) -> Tensor[Rank2[B, HS], T]: ...
    @overload
    def forward(self, input: Tensor[Rank1[I], T], hx: Tensor[Any, Any] | None = None) -> Tensor[Rank1[HS], T]: ...
    @overload
    def forward(self, input: Tensor[Rank1[int], T], hx: Tensor[Any, Any] | None = None) -> Tensor[Rank1[HS], T]: ...
    @overload
    def forward(
        self: GRUCell[int, HS], input: Tensor[Rank1[Z], T], hx: Tensor[Any, Any] | None = None
    ) -> Tensor[Rank1[HS], T]: ...
    @overload
    def forward(self, input: Tensor[AnyShape, T], hx: Tensor[Any, Any] | None = None) -> Tensor[Any, T]: ...
    def forward(self, input: Any, hx: Tensor[Any, Any] | None = None) -> Any:
        """``h'`` after one step from ``hx`` (zeros if ``None``)."""
        return self._step(input, hx)[0]

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward


class RNNCell(_CellBase, Generic[I, HS]):
    __doc__ = (
        """One Elman step (PyTorch's ``torch.nn.RNNCell``): ``h' = act(W_ih x + b_ih + W_hh h +
    b_hh)`` with ``act`` ``nonlinearity`` (``'tanh'`` or ``'relu'``, else ``ValueError``);
    ``cell(input, h)`` or ``cell(input)`` returns ``h'`` (``G = 1``)."""
        + _CELL_DOC
    )

    def __init__(
        self,
        input_size: I,
        hidden_size: HS,
        bias: bool = True,
        nonlinearity: str = "tanh",
        *,
        dev: AnyDevice | None = None,
        device: DeviceSpec = None,
        dtype: npt.DTypeLike = np.float32,
    ) -> None:
        dev = pick_device(type(self).__name__, device, dev)
        dtype = pick_dtype(dtype)
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: unknown nonlinearity {nonlinearity!r}; choose 'tanh' or 'relu'")
        self.nonlinearity = nonlinearity
        mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"
        super().__init__(mode, input_size, hidden_size, bias, dev, dtype)

    @overload
    def forward(self, input: AnyShape, hx: Tensor[Any, Any] | None = None) -> Any: ...
    @overload
    def forward(self, input: Tensor[Rank2[B, I], T], hx: Tensor[Any, Any] | None = None) -> Tensor[Rank2[B, HS], T]: ...
    @overload
    def forward(
        self, input: Tensor[Rank2[B, int], T], hx: Tensor[Any, Any] | None = None
    ) -> Tensor[Rank2[B, HS], T]: ...
    @overload
    def forward(
        self: RNNCell[int, HS], input: Tensor[Rank2[B, Z], T], hx: Tensor[Any, Any] | None = None
    ) -> Tensor[Rank2[B, HS], T]: ...
    @overload
    def forward(self, input: Tensor[Rank1[I], T], hx: Tensor[Any, Any] | None = None) -> Tensor[Rank1[HS], T]: ...
    @overload
    def forward(self, input: Tensor[Rank1[int], T], hx: Tensor[Any, Any] | None = None) -> Tensor[Rank1[HS], T]: ...
    @overload
    def forward(
        self: RNNCell[int, HS], input: Tensor[Rank1[Z], T], hx: Tensor[Any, Any] | None = None
    ) -> Tensor[Rank1[HS], T]: ...
    @overload
    def forward(self, input: Tensor[AnyShape, T], hx: Tensor[Any, Any] | None = None) -> Tensor[Any, T]: ...
    def forward(self, input: Any, hx: Tensor[Any, Any] | None = None) -> Any:
        """``h'`` after one step from ``hx`` (zeros if ``None``)."""
        return self._step(input, hx)[0]

    if TYPE_CHECKING:  # calls type as forward; at run time Module.__call__ calls self.forward
        __call__ = forward
