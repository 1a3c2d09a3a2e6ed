"""PyTorch's ``torch.nn.utils.rnn`` on gradtape: :func:`pad_sequence`, and packed sequences
(:class:`PackedSequence`, :func:`pack_padded_sequence`, :func:`pad_packed_sequence`,
:func:`pack_sequence`, :func:`unpack_sequence`, :func:`unpad_sequence`).

A batch of sequences of different lengths is packed time step by time step, longest first:
``data`` holds step 0 of every sequence, then step 1 of those at least 2 long, and so on;
``batch_sizes[t]`` says how many sequences have a step ``t`` (PyTorch's layout, so a
``PackedSequence`` from a port reads the same). ``nn.LSTM``/``GRU``/``RNN`` given one run each
sequence only over its own steps: its final states are those after its last step and the
reverse direction starts there, which padding and a masked loss would get wrong. That
recurrence runs as recorded per-step ops (``recurrent_stack``'s ``lengths``), slower than the
padded batch's fused kernels. Packing and unpacking are gathers, so gradients flow back to
the padded input.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, TypeVar

import numpy as np

from gradtape.devices import _arrays
from gradtape.devices.default import host_device
from gradtape.errors import ShapeError
from gradtape.ops.shape import concat, stack
from gradtape.ops.spatial import pad
from gradtape.tape import NONE_TAPE, Tape
from gradtape.tensor import Tensor

__all__ = [
    "PackedSequence",
    "pack_padded_sequence",
    "pack_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpack_sequence",
    "unpad_sequence",
]

Array = np.ndarray[Any, Any]

T = TypeVar("T", bound=Tape)


def pad_sequence(
    sequences: Sequence[Tensor[Any, T]],
    batch_first: bool = False,
    padding_value: float = 0.0,
    padding_side: str = "right",
) -> Tensor[Any, T]:
    """PyTorch's ``pad_sequence``: tensors of shapes ``(L_i, *)`` padded with ``padding_value``
    to the longest ``L`` and stacked, ``(L, B, *)`` (``batch_first=True``: ``(B, L, *)``);
    ``padding_side="left"`` pads in front. Gradient: each sequence gets its own rows back.

    Raises:
        TypeError: an item is not a tensor. ShapeError: the list is empty, or the items'
            trailing dims differ. ValueError: ``padding_side`` is neither ``"right"`` nor ``"left"``.
    """
    if padding_side not in ("right", "left"):
        raise ValueError(f"pad_sequence: padding_side must be 'right' or 'left', got {padding_side!r}")
    items = list(sequences)
    if not items:
        raise ShapeError("pad_sequence: expected a non-empty sequence of tensors")
    for t in items:
        if not isinstance(t, Tensor):
            raise TypeError(f"pad_sequence: sequences must hold Tensors, got {type(t).__name__}")
        if t.ndim < 1 or t.shape[1:] != items[0].shape[1:]:
            raise ShapeError(
                f"pad_sequence: every sequence needs shape (L, *trailing) with one trailing shape, got "
                f"{[tuple(x.shape) for x in items]}"
            )
    longest = max(t.shape[0] for t in items)
    rest = items[0].ndim - 1
    padded = []
    for t in items:
        extra = longest - t.shape[0]
        before, after = (extra, 0) if padding_side == "left" else (0, extra)
        padded.append(pad(t, (0, 0) * rest + (before, after), value=padding_value) if extra else t)
    out: Tensor[Any, T] = stack(padded, 0 if batch_first else 1)
    return out


class PackedSequence(NamedTuple):
    """PyTorch's ``PackedSequence``: sequences of different lengths packed step by step.

    Fields:
        data: ``(sum of lengths, *)``: step 0 of every sequence (longest first), then step 1
            of those with one, ...
        batch_sizes: int64 ``(max length,)`` on the CPU: how many sequences have step ``t``
            (non-increasing).
        sorted_indices: int64 ``(B,)``: the batch column of each packed sequence, longest
            first (``None`` where the batch was packed already sorted,
            ``enforce_sorted=True``).
        unsorted_indices: its inverse permutation (``None`` with it).

    Made by :func:`pack_padded_sequence` or :func:`pack_sequence`; read back with
    :func:`pad_packed_sequence`; ``nn.LSTM``/``GRU``/``RNN`` take and return one.
    """

    data: Tensor[Any, Any]
    batch_sizes: Tensor[Any, Any]
    sorted_indices: Tensor[Any, Any] | None = None
    unsorted_indices: Tensor[Any, Any] | None = None

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """``data`` and the indices moved or cast as :meth:`Tensor.to` does; ``batch_sizes``
        stays on the CPU (PyTorch's rule)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        idx = [None if i is None else i.to(data.device) for i in (self.sorted_indices, self.unsorted_indices)]
        return PackedSequence(data, self.batch_sizes, idx[0], idx[1])

    def cuda(self, device: Any = None) -> PackedSequence:
        """:meth:`to` the GPU (``"cuda"``, or ``device``)."""
        return self.to("cuda" if device is None else device)

    def cpu(self) -> PackedSequence:
        """:meth:`to` the CPU."""
        return self.to("cpu")

    def float(self) -> PackedSequence:
        """``data`` as float32."""
        return self.to(np.float32)

    def double(self) -> PackedSequence:
        """``data`` as float64."""
        return self.to(np.float64)

    @property
    def is_cuda(self) -> bool:
        """Whether ``data`` is on a GPU."""
        return bool(self.data.is_cuda)


def _ints(op: str, what: str, v: object) -> Array:
    """``v`` (a list, numpy array or CPU tensor of ints) as a 1-D int64 numpy array.

    Raises:
        TypeError: it is not integers, or a GPU tensor (PyTorch asks for a CPU one).
    """
    if isinstance(v, Tensor):
        if v.is_cuda:
            raise TypeError(f"{op}: {what} must be on the CPU (a list or a CPU int64 tensor), got a GPU tensor")
        v = v.numpy()
    a = np.asarray(v)
    if a.ndim != 1 or (a.size and a.dtype.kind not in "iu"):
        raise TypeError(f"{op}: {what} must be a 1-D sequence of ints, got {a.dtype} of shape {a.shape}")
    return a.astype(np.int64)


def _cpu_ints(a: Array) -> Tensor[Any, Any]:
    return Tensor(np.ascontiguousarray(a, np.int64), host_device(), NONE_TAPE)


def _above(a: Array, n: int) -> Array:
    """``[count(a > i) for i in range(n)]``: the batch sizes of non-increasing lengths ``a``
    (``n`` the longest), and the lengths of batch sizes ``a`` (``n`` the first size)."""
    return (a[None, :] > np.arange(n)[:, None]).sum(axis=1)  # type: ignore[no-any-return]


def _positions(sizes: Array, cols: Array) -> tuple[Array, Array]:
    """The ``(step, batch column)`` of each packed row, in packed order: step ``t`` holds the
    first ``sizes[t]`` of the columns ``cols`` (longest first)."""
    steps = np.repeat(np.arange(len(sizes)), sizes)
    columns = np.concatenate([cols[:n] for n in sizes]) if len(sizes) else np.zeros(0, np.int64)
    return steps, columns


def pack_padded_sequence(
    input: Tensor[Any, Any], lengths: Any, batch_first: bool = False, enforce_sorted: bool = True
) -> PackedSequence:
    """Pack a padded batch (PyTorch's ``pack_padded_sequence``).

    Args:
        input: ``(T, B, *)`` (``batch_first``: ``(B, T, *)``), column ``b`` valid for its
            first ``lengths[b]`` steps.
        lengths: ``B`` ints in ``[1, T]``: a list, numpy array or CPU int tensor.
        enforce_sorted: the lengths must already be non-increasing (then ``sorted_indices``
            is ``None``); with ``False`` the columns are sorted here (longest first, ties in
            their order) and the permutation is kept for unpacking.

    Returns:
        A :class:`PackedSequence`; gradients of its ``data`` flow back to ``input``'s valid
        steps.

    Raises:
        ShapeError: ``input`` has fewer than 2 dims, or ``lengths`` is not one per column.
        ValueError: a length below 1 or above ``T`` (PyTorch: "Length of all samples has to be
            greater than 0").
        RuntimeError: ``enforce_sorted`` and the lengths are not non-increasing (PyTorch's
            error, which names ``enforce_sorted=False``).
        TypeError: ``input`` is not a tensor, or the lengths are not ints on the CPU.
    """
    op = "pack_padded_sequence"
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}: input must be a Tensor, got {type(input).__name__}")
    if input.ndim < 2:
        raise ShapeError(f"{op}: input must have shape (T, B, *) or (B, T, *), got {input.shape}")
    nt, nb = (input.shape[1], input.shape[0]) if batch_first else input.shape[:2]
    lens = _ints(op, "lengths", lengths)
    if lens.shape != (nb,):
        raise ShapeError(f"{op}: expected {nb} lengths (one per sequence of the batch), got {lens.shape[0]}")
    if nb and (lens.min() < 1 or lens.max() > nt):
        raise ValueError(f"{op}: every length must be in [1, {nt}] (the padded length), got {lens.tolist()}")
    if enforce_sorted:
        if np.any(np.diff(lens) > 0):
            raise RuntimeError(
                f"{op}: `lengths` array must be sorted in decreasing order when `enforce_sorted` is True "
                f"(got {lens.tolist()}); pass enforce_sorted=False to sort it here"
            )
        order = None
    else:
        order = np.argsort(-lens, kind="stable")
    ls = lens if order is None else lens[order]
    sizes = _above(ls, int(ls[0]) if nb else 0)
    t_idx, b_idx = _positions(sizes, np.arange(nb) if order is None else order)
    data = input[b_idx, t_idx] if batch_first else input[t_idx, b_idx]
    if order is None:
        return PackedSequence(data, _cpu_ints(sizes))
    back = np.argsort(order)
    return PackedSequence(data, _cpu_ints(sizes), _on(data, order), _on(data, back))


def _on(like: Tensor[Any, Any], a: Array) -> Tensor[Any, Any]:
    """int64 ``a`` as a tensor on ``like``'s device (PyTorch keeps the indices with ``data``)."""
    return Tensor(_arrays.into_memory_of(np.ascontiguousarray(a, np.int64), like.data), like.device, NONE_TAPE)


def _layout(seq: PackedSequence) -> tuple[Array, Array, Array]:
    """``(batch_sizes, lengths of the packed columns, their batch columns)`` of ``seq``.

    Raises:
        TypeError: ``seq`` is not a PackedSequence. ValueError: its batch sizes are not a
            non-increasing positive sequence adding up to ``data``'s rows.
    """
    if not isinstance(seq, PackedSequence):
        raise TypeError(f"expected a PackedSequence, got {type(seq).__name__}")
    sizes = _ints("PackedSequence", "batch_sizes", seq.batch_sizes)
    if not len(sizes) or sizes.min() < 1 or np.any(np.diff(sizes) > 0) or sizes.sum() != seq.data.shape[0]:
        raise ValueError(
            f"PackedSequence: batch_sizes must be positive, non-increasing and add up to data's {seq.data.shape[0]} "
            f"rows, got {sizes.tolist()}"
        )
    nb = int(sizes[0])
    lens = _above(sizes, nb)
    cols = (
        np.arange(nb)
        if seq.sorted_indices is None
        else _ints("PackedSequence", "sorted_indices", seq.sorted_indices.cpu())
    )
    return sizes, lens, cols


def _padded(
    seq: PackedSequence, layout: tuple[Array, Array, Array], total: int, value: float, unsort: bool
) -> Tensor[Any, Any]:
    """``(total, B, *)`` from ``seq`` (its :func:`_layout`): the packed rows at their steps,
    ``value`` elsewhere; the batch in the original column order (``unsort``) or in the packed
    one. One gather, so ``data`` gets its gradient back."""
    sizes, lens, cols = layout
    nb = len(lens)
    start = np.concatenate([[0], np.cumsum(sizes)[:-1]])  # row of step t's first sequence
    pos = np.full((total, nb), int(sizes.sum()), np.int64)  # the fill row
    for t, n in enumerate(sizes):
        pos[t, :n] = start[t] + np.arange(n)
    if unsort:
        where = np.empty(nb, np.int64)
        where[cols] = np.arange(nb)
        pos = pos[:, where]
    data = seq.data
    fill = data._like(_arrays.full((1, *data.shape[1:]), value, data.dtype, data.data))
    out: Tensor[Any, Any] = concat([data, fill], 0)[pos]
    return out


def pad_packed_sequence(
    sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0, total_length: int | None = None
) -> tuple[Tensor[Any, Any], Tensor[Any, Any]]:
    """Unpack to a padded batch (PyTorch's ``pad_packed_sequence``): the inverse of
    :func:`pack_padded_sequence`.

    Returns:
        ``(padded, lengths)``: ``(T, B, *)`` (``batch_first``: ``(B, T, *)``) in the original
        column order, ``padding_value`` after each sequence's end, ``T`` the longest length or
        ``total_length``; ``lengths`` an int64 CPU tensor ``(B,)``. Gradients flow to
        ``sequence.data``.

    Raises:
        ValueError: ``total_length`` below the longest length, or a malformed sequence.
        TypeError: ``sequence`` is not a PackedSequence.
    """
    layout = _layout(sequence)
    sizes, lens, cols = layout
    total = len(sizes) if total_length is None else int(total_length)
    if total < len(sizes):
        raise ValueError(
            f"pad_packed_sequence: expected total_length to be at least the length of the longest sequence "
            f"({len(sizes)}), got total_length={total_length}"
        )
    out = _padded(sequence, layout, total, float(padding_value), True)
    back = np.empty_like(lens)
    back[cols] = lens
    return (out.transpose(0, 1) if batch_first else out), _cpu_ints(back)


def pack_sequence(sequences: Sequence[Tensor[Any, Any]], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of ``(L_i, *)`` tensors (PyTorch's ``pack_sequence``):
    :func:`pad_sequence` then :func:`pack_padded_sequence` with their lengths. Errors as those."""
    items = list(sequences)
    lengths = [t.shape[0] if isinstance(t, Tensor) and t.ndim else 0 for t in items]
    return pack_padded_sequence(pad_sequence(items), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded: Tensor[Any, Any], lengths: Any, batch_first: bool = False) -> list[Tensor[Any, Any]]:
    """The sequences of a padded batch, ``padded[:lengths[b], b]`` each (PyTorch's
    ``unpad_sequence``).

    Raises:
        ShapeError: ``lengths`` is not one per column. ValueError: a length outside ``[0, T]``.
    """
    x = padded.transpose(0, 1) if batch_first else padded
    lens = _ints("unpad_sequence", "lengths", lengths)
    if lens.shape != (x.shape[1],):
        raise ShapeError(f"unpad_sequence: expected {x.shape[1]} lengths, got {lens.shape[0]}")
    if len(lens) and (lens.min() < 0 or lens.max() > x.shape[0]):
        raise ValueError(f"unpad_sequence: every length must be in [0, {x.shape[0]}], got {lens.tolist()}")
    return [x[: int(n), b] for b, n in enumerate(lens)]


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor[Any, Any]]:
    """The sequences of a :class:`PackedSequence`, in their original order (PyTorch's
    ``unpack_sequence``)."""
    padded, lengths = pad_packed_sequence(packed_sequences)
    return unpad_sequence(padded, lengths)


def _unpack_sorted(seq: PackedSequence) -> tuple[Tensor[Any, Any], Array]:
    """What a recurrent layer runs on: ``(x, lengths)``, ``x`` ``(T, B, *)`` in the packed
    column order with zeros after each end, ``lengths`` of those columns."""
    layout = _layout(seq)
    return _padded(seq, layout, len(layout[0]), 0.0, False), layout[1]


def _repack(seq: PackedSequence, out: Tensor[Any, Any]) -> PackedSequence:
    """A recurrent layer's ``(T, B, *)`` output (packed column order) packed as ``seq`` is."""
    sizes = _ints("PackedSequence", "batch_sizes", seq.batch_sizes)
    t_idx, b_idx = _positions(sizes, np.arange(int(sizes[0])))
    return PackedSequence(out[t_idx, b_idx], seq.batch_sizes, seq.sorted_indices, seq.unsorted_indices)
