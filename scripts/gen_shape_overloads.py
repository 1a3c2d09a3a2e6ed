"""Generate the overload tables of gradtape's shape-typed ops.

Some typed signatures are too many to write by hand, or would repeat the same table in
every function of a family. This script writes each table between its
``BEGIN GENERATED <name>`` and ``END GENERATED <name>`` marker lines (the ``@overload``
stubs only: the implementation, with its docstring, follows the ``END`` line by hand).
One section of this file per module, in the order of ``TARGETS``:

- ``ops/shape.py``: ``transpose`` and ``permute`` (ranks 2 to 4, one overload per axis pair
  or permutation, each axis accepted as a non-negative or negative ``Literal``) and the tape
  overloads of ``concat`` and ``stack`` (tuples of 2 to 4 tensors, one of which owns a tape);
- ``ops/binary.py``: ``add``, ``sub``, ``mul``, ``div``, ``maximum``, ``minimum`` and ``pow``
  (a number, a tensor of the same shape, or a broadcast of :func:`broadcast_pairs`: a
  rank-0 tensor, trailing dims, one size-1 dim; the tape-kind rule);
- ``ops/compare.py``: ``lt``, ``le``, ``gt``, ``ge``, ``eq`` and ``ne`` (same shape or a
  broadcast of :func:`broadcast_pairs`; the output is an untraced mask);
- ``ops/reduce.py``: the reductions ``sum``, ``mean``, ``max``, ``min``, ``var``, ``std`` and
  ``logsumexp`` (all axes -> ``Rank0``; one ``Literal`` axis of a rank 1 to 4 tensor -> that
  dim dropped, or ``Literal[1]`` with ``keepdims=True``; anything else -> ``Tensor[Any, T]``);
- ``ops/linalg.py``: ``matmul`` (eight rank pairs) and ``linear`` (a rank-2 or rank-3
  input), each with the tape-kind rule;
- ``ops/conv.py``: ``conv1d``, ``conv2d`` and ``conv_transpose2d`` (channels checked when
  ``groups`` is left out, unchecked with ``groups=`` by keyword), with the tape-kind rule;
- ``ops/nn.py``: ``layer_norm`` (last axis by default, or ``normalized_shape``);
- ``losses.py``: the elementwise losses ``mse_loss``, ``l1_loss``, ``huber_loss``,
  ``smooth_l1_loss``, ``binary_cross_entropy_with_logits`` and ``kl_div``.
- ``nn/attention.py``: ``MultiHeadAttention.forward`` (a method: the block is indented in the
  class body), self- and cross-attention for each way the query and key widths may meet,
  the cross-attention rows with the tape-kind rule.

Most tables apply **the tape-kind rule** (:func:`tape_rule`): the output owns a tape
(``OwnedTape``) if any input does, else it has the first input's tape kind. Tables of three
overloads or fewer that appear once (``rms_norm``, ``prelu``, ``where``, ``embedding``, ...)
are written by hand where they are clearer.

Usage::

    python scripts/gen_shape_overloads.py          # rewrite the blocks in place
    python scripts/gen_shape_overloads.py --check  # exit 1 if a block is out of date

``tests/test_static.py`` runs ``--check`` (which also fails on ``GENERATED`` markers in a
module this script does not know), so an edit to this script must be followed by a run of
it. The output is what ``ruff format`` writes (lines up to 120 characters; a longer
signature gets its parameters on one indented line, or one per line with a trailing comma
when they do not fit there either), and the same on every run.
"""

from __future__ import annotations

import functools
import itertools
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "gradtape"
LINE = 120
"""ruff's line length (pyproject.toml)."""
DIMS = "ABCD"

_BLOCK = re.compile(
    r"(?P<begin>^[ ]*# ----- BEGIN GENERATED (?P<name>\w+)[^\n]*\n)(?P<body>.*?)"
    r"(?P<end>^[ ]*# ----- END GENERATED (?P=name) -----$)",
    re.M | re.S,
)
"""A block: at module level, or indented in a class body (a method's overloads)."""
_MARKER = re.compile(r"^[ ]*# ----- (BEGIN|END) GENERATED ", re.M)


# ----- building blocks ---------------------------------------------------------------------


def _lit(axis: int, rank: int) -> str:
    return f"Literal[{axis}, {axis - rank}]"


def _rank(dims: Sequence[str]) -> str:
    return f"Rank{len(dims)}[{', '.join(dims)}]"


def _overload(name: str, params: Sequence[str], ret: str, indent: str = "", comment: str = "") -> str:
    """One ``@overload`` stub in ``ruff format``'s layout: on one line if it fits, else the
    parameters on one indented line, else one parameter per line with a trailing comma.
    ``indent``: a method's (its ``self`` among ``params``); ``comment``: a pragma comment
    (``# type: ignore[...]``, which ``ruff format`` leaves out of the line length) after the
    stub on one line, else after the ``(``, which puts one parameter on each line."""
    one = f"{indent}def {name}({', '.join(params)}) -> {ret}: ..."
    if len(one) <= LINE:
        return f"{indent}@overload\n{one}{'  ' + comment if comment else ''}\n"
    opening = f"{indent}def {name}(" + (f"  {comment}" if comment else "")
    hugged = f"{indent}    {', '.join(params)}"
    if len(hugged) <= LINE and not comment:
        return f"{indent}@overload\n{opening}\n{hugged}\n{indent}) -> {ret}: ...\n"
    body = "".join(_param_line(p, indent) for p in params)
    return f"{indent}@overload\n{opening}\n{body}{indent}) -> {ret}: ...\n"


def _param_line(param: str, indent: str = "") -> str:
    """One parameter on its own line; a ``tuple[...]`` too long for it gets its items on an
    indented line between the brackets, as ``ruff format`` writes it."""
    line = f"{indent}    {param},\n"
    m = re.fullmatch(r"(\w+: tuple)\[(.*)\]", param)
    if len(line) - 1 <= LINE or m is None:
        return line
    return f"{indent}    {m[1]}[\n{indent}        {m[2]}\n{indent}    ],\n"


@dataclass(frozen=True)
class Arg:
    """A tensor parameter whose tape kind :func:`tape_rule` fills in."""

    name: str
    shape: str
    optional: bool = False
    """``| None = None`` (a bias), except in the row where this argument owns the tape."""
    also: str = ""
    """More types accepted in the row where this argument has no tape (an array target)."""

    def render(self, tape: str) -> str:
        typ = f"Tensor[{self.shape}, {tape}]"
        if self.also and tape == "NoneTape":
            typ = f"{typ} | {self.also}"
        return f"{self.name}: {typ} | None = None" if self.optional and tape != "OwnedTape" else f"{self.name}: {typ}"


KW_IF_OWNED = "*?"
"""In :func:`tape_rule`'s parameters: a ``*`` in the rows where a tensor after it owns the
tape (and so has no default), left out in the other rows (``layer_norm``'s ``weight`` and
``bias`` become keyword-only where one of them is required)."""


def tape_rule(
    name: str,
    params: Sequence[Arg | str],
    ret: str,
    generic: bool = True,
    indent: str = "",
    generic_comment: str = "",
) -> str:
    """Overloads of ``name`` under the tape-kind rule: the output ``Tensor[ret, ...]`` owns a
    tape if any tensor argument does, else it has the first one's tape kind.

    For tensor arguments ``x, y, z`` (the :class:`Arg` entries of ``params``, other entries
    are copied as they are), in this order::

        x: T,    y: NoneTape,  z: NoneTape   -> T
        x: Tape, y: OwnedTape, z: Tape       -> OwnedTape
        x: Tape, y: Tape,      z: OwnedTape  -> OwnedTape
        x: T,    y: T,         z: T          -> T           (unless generic=False)

    The first row covers an owned ``x`` (``T`` is ``OwnedTape``) and tape-free inference; the
    last one generic code where every argument has the same tape type ``T``. ``indent`` and
    ``generic_comment`` (the last row's) as :func:`_overload`'s: for a method, ``params``
    starts with its ``self``.
    """
    args = [p for p in params if isinstance(p, Arg)]

    def row(tapes: dict[str, str], out: str, comment: str = "") -> str:
        owned = next((a.name for a in args if tapes[a.name] == "OwnedTape"), None)
        rendered: list[str] = []
        for i, p in enumerate(params):
            if isinstance(p, Arg):
                rendered.append(p.render(tapes[p.name]))
            elif p != KW_IF_OWNED:
                rendered.append(p)
            elif owned is not None and any(isinstance(q, Arg) and q.name == owned for q in params[i + 1 :]):
                rendered.append("*")
        return _overload(name, rendered, f"Tensor[{ret}, {out}]", indent, comment)

    first, rest = args[0].name, args[1:]
    out = [row({first: "T", **{a.name: "NoneTape" for a in rest}}, "T")]
    for owner in rest:
        out.append(row({first: "Tape", **{a.name: "OwnedTape" if a is owner else "Tape" for a in rest}}, "OwnedTape"))
    if generic:
        out.append(row({a.name: "T" for a in args}, "T", generic_comment))
    return "".join(out)


# ----- ops/shape.py ------------------------------------------------------------------------

RANKS = (2, 3, 4)
"""Ranks that get exact ``transpose`` / ``permute`` overloads."""
TUPLE_LENGTHS = (2, 3, 4)
"""Lengths of the tuples of tensors that get mixed-tape ``concat`` / ``stack`` overloads."""


def transpose_block() -> str:
    """Overloads of ``transpose(a, ax0, ax1)``: every ordered axis pair of ranks 2 to 4."""
    out = [_overload("transpose", ["a: Tensor[AnyShape, T]", "ax0: int", "ax1: int"], "Tensor[Any, T]")]
    for n in RANKS:
        dims = list(DIMS[:n])
        for i, j in itertools.product(range(n), repeat=2):
            swapped = list(dims)
            swapped[i], swapped[j] = swapped[j], swapped[i]
            params = [f"a: Tensor[{_rank(dims)}, T]", f"ax0: {_lit(i, n)}", f"ax1: {_lit(j, n)}"]
            out.append(_overload("transpose", params, f"Tensor[{_rank(swapped)}, T]"))
    out.append(_overload("transpose", ["a: Tensor[Any, T]", "ax0: int", "ax1: int"], "Tensor[Any, T]"))
    return "".join(out)


def permute_block() -> str:
    """Overloads of ``permute(a, axes)``: every permutation of ranks 2 to 4."""
    out = [_overload("permute", ["a: Tensor[AnyShape, T]", "axes: Sequence[int]"], "Tensor[Any, T]")]
    for n in RANKS:
        dims = list(DIMS[:n])
        for perm in itertools.permutations(range(n)):
            axes = f"tuple[{', '.join(_lit(k, n) for k in perm)}]"
            params = [f"a: Tensor[{_rank(dims)}, T]", f"axes: {axes}"]
            out.append(_overload("permute", params, f"Tensor[{_rank([dims[k] for k in perm])}, T]"))
    out.append(_overload("permute", ["a: Tensor[Any, T]", "axes: Sequence[int]"], "Tensor[Any, T]"))
    return "".join(out)


def _concat_patterns() -> list[tuple[str, str, str]]:
    """``(element shape, axis type, result shape)`` of ``concat``: ranks 1 to 4, one
    ``Literal`` axis; the axis dim of the elements may differ (``Any``), the result's is
    their sum, ``int`` (the mypy plugin computes it)."""
    out = []
    for n in REDUCE_RANKS:
        dims = list(DIMS[:n])
        for k in range(n):
            axis = f"axis: {_lit(k, n)}" + (" = 0" if k == 0 else "")
            out.append((_rank(_at(dims, k, "Any")), axis, _rank(_at(dims, k, "int"))))
    return out


def _stack_patterns(new: str) -> list[tuple[str, str, str]]:
    """``(element shape, axis type, result shape)`` of ``stack``: elements of rank 0 to 3 and
    one shape, a new dim ``new`` at a ``Literal`` axis."""
    out = []
    for n in range(4):
        dims = list(DIMS[:n])
        elem = _rank(dims) if n else "Rank0"
        for k in range(n + 1):
            axis = f"axis: {_lit(k, n + 1)}" + (" = 0" if k == 0 else "")
            out.append((elem, axis, _rank([*dims[:k], new, *dims[k:]])))
    return out


def _at(dims: Sequence[str], axis: int, dim: str) -> list[str]:
    return [dim if k == axis else d for k, d in enumerate(dims)]


def sequence_block(name: str) -> str:
    """Overloads of ``concat`` / ``stack(tensors, axis=0)``, in this order:

    1. untyped elements (``AnyShape``): an untyped result;
    2. elements of known rank and one tape kind (``NoneTape`` or ``OwnedTape``), a
       ``Literal`` axis: the result's shape (``concat``: the axis dim ``int``; ``stack``: a
       new dim, ``Literal[n]`` for a tuple of ``n`` tensors, ``int`` for a list);
    3. other ranks or an ``int`` axis, one tape kind: an untyped result of that kind; a list
       mixing the two tape kinds: an owned, untyped result;
    4. a tuple (2 to 4 tensors) with an owned tape at any position among other tape kinds:
       an owned, untyped result;
    5. as 2 and 3 with a generic tape kind ``T`` (generic code).
    """
    if name == "concat":
        shaped = [("Sequence", elem, axis, ret) for elem, axis, ret in _concat_patterns()]
    else:
        shaped = []
        for n in (2, 3):
            shaped += [(f"tuple{n}", elem, axis, ret) for elem, axis, ret in _stack_patterns(f"Literal[{n}]")]
        shaped += [("Sequence", elem, axis, ret) for elem, axis, ret in _stack_patterns("int")]

    def container(kind: str, elem: str) -> str:
        if kind == "Sequence":
            return f"Sequence[{elem}]"
        return f"tuple[{', '.join([elem] * int(kind[-1]))}]"

    def rows(tape: str) -> str:
        return "".join(
            _overload(name, [f"tensors: {container(kind, f'Tensor[{elem}, {tape}]')}", axis], f"Tensor[{ret}, {tape}]")
            for kind, elem, axis, ret in shaped
        )

    out = [_overload(name, ["tensors: Sequence[Tensor[AnyShape, T]]", "axis: int = 0"], "Tensor[Any, T]")]
    out += [rows("NoneTape"), rows("OwnedTape")]
    for tape in ("NoneTape", "OwnedTape"):  # other ranks or axes, one tape kind
        out.append(
            _overload(name, [f"tensors: Sequence[Tensor[Any, {tape}]]", "axis: int = 0"], f"Tensor[Any, {tape}]")
        )
    # a list literal mixing tape kinds (mypy and pyright check each item against the union;
    # with shape variables in it mypy cannot solve them, so the shape is left untyped)
    mixed = "tensors: Sequence[Tensor[Any, OwnedTape] | Tensor[Any, NoneTape]]"
    out.append(_overload(name, [mixed, "axis: int = 0"], "Tensor[Any, OwnedTape]"))
    for n in TUPLE_LENGTHS:
        for k in range(n):
            elems = ", ".join("Tensor[Any, OwnedTape]" if m == k else "Tensor[Any, Tape]" for m in range(n))
            params = [f"tensors: tuple[{elems}]", "axis: int = 0"]
            out.append(_overload(name, params, "Tensor[Any, OwnedTape]"))
    out.append(rows("T"))
    out.append(_overload(name, ["tensors: Sequence[Tensor[Any, T]]", "axis: int = 0"], "Tensor[Any, T]"))
    return "".join(out)


# ----- ops/binary.py -----------------------------------------------------------------------

BINARY_OPS = ("add", "sub", "mul", "div", "maximum", "minimum", "pow")
"""The elementwise binary ops that share one overload table."""


ONE = "Literal[1]"


def _with_one(dims: Sequence[str], axis: int) -> list[str]:
    return [ONE if k == axis else d for k, d in enumerate(dims)]


def broadcast_pairs() -> list[tuple[str, str, str]]:
    """``(a, b, a op b)`` shape types of the broadcasts the binary and comparison tables accept
    besides equal shapes, in this order:

    - a scalar (rank-0) tensor on either side: ``(S) op ()`` and ``() op (S)`` give ``S``;
    - rank extension, ``b``'s dims the trailing dims of ``a``'s (a bias ``(B, L, D) + (D,)``,
      a positional table ``(B, L, D) + (L, D)``), ranks 2 to 4;
    - one size-1 dim (``Literal[1]``, what ``keepdims=True`` leaves) on either side, the
      other dims equal (``x - x.mean(axis=1, keepdims=True)``), ranks 2 to 4;
    - an outer product over the last two dims, ``(.., A, 1) op (.., 1, B)``, ranks 2 and 3.

    A shape pair not listed (two size-1 dims, ``(D,) + (B, D)``) is still computed at run
    time; its static type is then rejected, so write it with ``broadcast_to`` or ``expand_dims``.
    """
    pairs = [("S", "Rank0", "S"), ("Rank0", "S", "S")]
    for n in (2, 3, 4):
        dims = list(DIMS[:n])
        pairs += [(_rank(dims), _rank(dims[n - k :]), _rank(dims)) for k in range(1, n)]
    for n in (2, 3, 4):
        dims = list(DIMS[:n])
        for axis in range(n):
            pairs.append((_rank(dims), _rank(_with_one(dims, axis)), _rank(dims)))
            pairs.append((_rank(_with_one(dims, axis)), _rank(dims), _rank(dims)))
    for n in (2, 3):  # an outer product over the last two dims: (.., A, 1) op (.., 1, B)
        dims = list(DIMS[:n])
        pairs.append((_rank(_with_one(dims, n - 1)), _rank(_with_one(dims, n - 2)), _rank(dims)))
    return pairs


def binary_block(name: str) -> str:
    """Overloads of an elementwise binary op ``name(a, b)``: ``b`` a Python number, a tensor
    of ``a``'s shape, or one of the broadcasts of :func:`broadcast_pairs`, each with the
    tape-kind rule."""
    same = tape_rule(name, [Arg("a", "S"), Arg("b", "S")], "S")
    out = _overload(name, ["a: Tensor[S, T]", "b: float"], "Tensor[S, T]") + same
    for a, b, ret in broadcast_pairs():
        out += tape_rule(name, [Arg("a", a), Arg("b", b)], ret)
    # equal shapes again, last (rows that never match): when nothing matches, mypy's message
    # cites the first tensor row and pyright's the last row whose `a` fitted; "expected a
    # tensor of a's shape" is the one that helps
    return out + same


# ----- ops/compare.py ----------------------------------------------------------------------

COMPARE_OPS = ("lt", "le", "gt", "ge", "eq", "ne")
"""The comparisons that share one overload table."""


def compare_block(name: str) -> str:
    """Overloads of a comparison ``name(a, b)``: ``b`` a number or a tensor of ``a``'s shape,
    or one of the broadcasts of :func:`broadcast_pairs`; the mask never has a tape."""
    same = _overload(name, ["a: Tensor[S, Any]", "b: float | Tensor[S, Any]"], "Tensor[S, NoneTape]")
    out = same
    for a, b, ret in broadcast_pairs():
        out += _overload(name, [f"a: Tensor[{a}, Any]", f"b: Tensor[{b}, Any]"], f"Tensor[{ret}, NoneTape]")
    return out + same  # repeated last for pyright's error message, as in binary_block


# ----- ops/reduce.py -----------------------------------------------------------------------

REDUCE_RANKS = (1, 2, 3, 4)
"""Ranks whose single-``Literal``-axis reductions get exact overloads."""
_AXES = "axis: int | tuple[int, ...]"
MOMENTS = ("*", "correction: float = 0", "ddof: float | None = None")
"""The keyword-only parameters of ``var`` and ``std``."""
REDUCTIONS: dict[str, Sequence[str]] = {
    "sum": (),
    "mean": (),
    "max": (),
    "min": (),
    "var": MOMENTS,
    "std": MOMENTS,
    "logsumexp": (),
}
"""Each reduction with the parameters that follow ``keepdims``."""


def reduce_block(name: str) -> str:
    """Overloads of a reduction ``name(a, axis=None, keepdims=False, *extra)``: all axes give
    ``Rank0`` (with ``keepdims=True``: every dim ``Literal[1]``, ranks 1 to 4); one ``Literal``
    axis of a rank 1 to 4 tensor drops that dim (with ``keepdims=True``: makes it
    ``Literal[1]``); anything else (a tuple of axes, an ``int`` axis) gives ``Tensor[Any, T]``."""
    extra = REDUCTIONS[name]
    drop, keep = "keepdims: Literal[False] = False", "keepdims: Literal[True]"
    out = [
        _overload(name, ["a: Tensor[S, T]", "axis: None = None", drop, *extra], "Tensor[Rank0, T]"),
        _overload(
            name,
            ["a: Tensor[AnyShape, T]", f"{_AXES} | None = None", "keepdims: bool = False", *extra],
            "Tensor[Any, T]",
        ),
    ]
    for n in REDUCE_RANKS:
        dims = list(DIMS[:n])
        ones = _rank([ONE] * n)
        out.append(_overload(name, [f"a: Tensor[{_rank(dims)}, T]", "axis: None", keep, *extra], f"Tensor[{ones}, T]"))
        out.append(
            _overload(
                name, [f"a: Tensor[{_rank(dims)}, T]", "axis: None = None", "*", keep, *extra[1:]], f"Tensor[{ones}, T]"
            )
        )
    for n in REDUCE_RANKS:
        dims = list(DIMS[:n])
        for k in range(n):
            kept = dims[:k] + dims[k + 1 :]
            ret = f"Tensor[{_rank(kept)}, T]" if kept else "Tensor[Rank0, T]"
            out.append(_overload(name, [f"a: Tensor[{_rank(dims)}, T]", f"axis: {_lit(k, n)}", drop, *extra], ret))
            one = f"Tensor[{_rank(_with_one(dims, k))}, T]"
            out.append(_overload(name, [f"a: Tensor[{_rank(dims)}, T]", f"axis: {_lit(k, n)}", keep, *extra], one))
    params = ["a: Tensor[Any, T]", f"{_AXES} | None = None", "keepdims: bool = False", *extra]
    out.append(_overload(name, params, "Tensor[Any, T]"))
    return "".join(out)


# ----- ops/linalg.py -----------------------------------------------------------------------

MATMUL_SHAPES = (
    ("Rank1[B]", "Rank1[B]", "Rank0"),
    ("Rank1[B]", "Rank2[B, C]", "Rank1[C]"),
    ("Rank2[A, B]", "Rank1[B]", "Rank1[A]"),
    ("Rank2[A, B]", "Rank2[B, C]", "Rank2[A, C]"),
    ("Rank3[D, A, B]", "Rank3[D, B, C]", "Rank3[D, A, C]"),
    ("Rank3[D, A, B]", "Rank2[B, C]", "Rank3[D, A, C]"),
    ("Rank4[E, D, A, B]", "Rank4[E, D, B, C]", "Rank4[E, D, A, C]"),
    ("Rank4[E, D, A, B]", "Rank2[B, C]", "Rank4[E, D, A, C]"),
)
"""``(a, b, a @ b)`` shape types that ``matmul`` computes (the inner dim is ``B``). For each
rank of ``a`` the pair users mean most (a matrix or batch times a 2-D weight) comes last.
When no row matches, mypy's message cites the first row and pyright's the last row whose
``a`` fitted, so :func:`matmul_block` starts with the 2-D pair and ends by repeating this
table (rows that never match, there for pyright's message)."""


def _inner(shape: str, dim: str) -> str:
    return re.sub(r"\bB\b", dim, shape)


def matmul_block() -> str:
    """Overloads of ``matmul(a, b)``: each rank pair of ``MATMUL_SHAPES``, tape-kind rule; then
    each pair again with a dynamic (``int``) inner dim on one side, which matches any inner
    dim on the other (checked at run time), so ``dev.zeros((n, 4)) @ w`` is no false alarm
    where mypy widened the ``4`` to ``int``."""
    first = sorted(MATMUL_SHAPES, key=lambda row: row[:2] != ("Rank2[A, B]", "Rank2[B, C]"))
    rows = [*first]  # mypy's error cites the first row: the 2-D one
    rows += [(_inner(a, "int"), _inner(b, "Any"), ret) for a, b, ret in MATMUL_SHAPES]
    rows += [(_inner(a, "Any"), _inner(b, "int"), ret) for a, b, ret in MATMUL_SHAPES]
    rows += MATMUL_SHAPES  # never matched (repeats): pyright's error cites the last row `a` fits
    return "".join(tape_rule("matmul", [Arg("a", a), Arg("b", b)], ret) for a, b, ret in rows)


def linear_block() -> str:
    """Overloads of ``linear(x, w, b=None)``: a ``(B, I)`` or ``(D, B, I)`` input, tape-kind rule."""
    out = []
    for batch in (["B"], ["D", "B"]):
        tensors = [Arg("x", _rank([*batch, "I"])), Arg("w", "Rank2[O, I]"), Arg("b", "Rank1[O]", optional=True)]
        out.append(tape_rule("linear", tensors, _rank([*batch, "O"])))
    return "".join(out)


# ----- ops/conv.py -------------------------------------------------------------------------

CONVS = {"conv2d": 2, "conv1d": 1, "conv_transpose2d": 2}
"""The convolutions and their number of spatial dims."""


def conv_block(name: str) -> str:
    """Overloads of ``conv1d`` / ``conv2d`` / ``conv_transpose2d(x, w, b=None, ...)``, tape-kind
    rule: first with ``groups`` left out (``Literal[1]``), where ``x``'s channels ``C`` must be
    ``w``'s (``w``'s first dim for the transposed convolution), then with ``groups: int`` by
    keyword, where they are checked at run time only."""
    transposed = name == "conv_transpose2d"
    nd = CONVS[name]
    spatial, sizes = ["Any"] * nd, ["int"] * nd
    ints = f"Int{nd}"
    out = []
    for grouped in (False, True):
        groups = ["*", "groups: int"] if grouped else ["groups: Literal[1] = 1"]
        if transposed:
            o = "Any" if grouped else "O"
            x, w, ret = ["N", "C", *spatial], ["C", o, *spatial], ["N", "int" if grouped else "O", *sizes]
            rest = [f"stride: {ints} = 1", f"padding: {ints} = 0", f"output_padding: {ints} = 0", *groups]
            rest.append(f"dilation: {ints} = 1")
        else:
            c = "Any" if grouped else "C"
            o = "O"
            x, w, ret = ["N", c, *spatial], ["O", c, *spatial], ["N", "O", *sizes]
            rest = [f"stride: {ints} = 1", f"padding: Padding{nd} = 0", f"dilation: {ints} = 1", *groups]
        tensors = [Arg("x", _rank(x)), Arg("w", _rank(w)), Arg("b", f"Rank1[{o}]", optional=True)]
        out.append(tape_rule(name, [*tensors, *rest], _rank(ret)))
    return "".join(out)


# ----- ops/nn.py ---------------------------------------------------------------------------


def layer_norm_block() -> str:
    """Overloads of ``layer_norm(x, normalized_shape=None, weight=None, bias=None, eps=1e-5)``,
    tape-kind rule: over the last axis ``N`` (``weight`` and ``bias`` of shape ``Rank1[N]``),
    or over ``normalized_shape`` (untyped ``weight`` and ``bias``)."""
    modes = (
        ("tuple[*Ts, N]", "normalized_shape: None = None", "Rank1[N]"),
        ("S", "normalized_shape: int | tuple[int, ...]", "Any"),
    )
    return "".join(
        tape_rule(
            "layer_norm",
            [Arg("x", x), nshape, KW_IF_OWNED, Arg("weight", p, True), Arg("bias", p, True), "eps: float = 1e-5"],
            x,
        )
        for x, nshape, p in modes
    )


# ----- losses.py ---------------------------------------------------------------------------

_MEAN_SUM = 'reduction: Reduction = "mean"'
LOSSES: dict[str, Sequence[str]] = {
    "mse_loss": [_MEAN_SUM],
    "l1_loss": [_MEAN_SUM],
    "huber_loss": [_MEAN_SUM, "delta: float = 1.0"],
    "smooth_l1_loss": [_MEAN_SUM, "beta: float = 1.0"],
    "binary_cross_entropy_with_logits": [_MEAN_SUM, "pos_weight: npt.ArrayLike | None = None"],
    "kl_div": ['reduction: Literal["mean", "sum", "batchmean"] = "mean"', "log_target: bool = False"],
}
"""Each elementwise loss with the parameters that follow ``target``."""


def loss_block(name: str) -> str:
    """Overloads of a loss ``name(input, target, ...)``: a scalar of ``input``'s tape kind,
    tape-kind rule; the target has ``input``'s shape and may be an array when untraced."""
    tensors = [Arg("input", "S"), Arg("target", "S", also="ArrayTarget")]
    return tape_rule(name, [*tensors, *LOSSES[name]], "Rank0")


# ----- nn/attention.py ---------------------------------------------------------------------

_MASK = "attn_mask: npt.ArrayLike | None = None"
_METHOD = "    "
"""The indent of a method's overloads."""


def _rank3(length: str, width: str) -> str:
    return f"Rank3[B, {length}, {width}]"


def mha_forward_block() -> str:
    """Overloads of ``MultiHeadAttention.forward(q, k=None, v=None, attn_mask=None)``: an
    ``Any`` query first (pyright then gives ``Any``, not Unknown); then, for each way the
    widths may meet, self-attention (``k`` and ``v`` left out, where it applies) and
    cross-attention under the tape-kind rule (a traced decoder query over an untraced encoder
    output trains): the layer's width ``E`` on both sides; a query of run-time (``int``)
    width with keys of any width ``W2``; ``E`` queries with ``int`` keys; a layer of run-time
    width (``MultiHeadAttention[int]``) taking any query width ``W``; an untyped query last.
    The ``int`` rows' generic row overlaps the ``E`` rows where they agree, hence the ignored
    ``overload-overlap``."""
    ignore = "# type: ignore[overload-overlap]"
    out = [_overload("forward", ["self", "q: AnyShape", "k: Any = None", "v: Any = None", _MASK], "Any", _METHOD)]
    # (self, query width, key width, result width, with a self-attention row, generic row's comment)
    for me, qw, kw, rw, self_attention, comment in (
        ("self", "E", "E", "E", True, ""),
        ("self", "int", "W2", "E", True, ignore),
        ("self", "E", "int", "E", False, ignore),
        ("self: MultiHeadAttention[int]", "W", "W2", "W", True, ""),
    ):
        q, ret = f"Tensor[{_rank3('Lq', qw)}, T]", _rank3("Lq", rw)
        if self_attention:
            params = [me, f"q: {q}", "k: None = None", "v: None = None", _MASK]
            out.append(_overload("forward", params, f"Tensor[{ret}, T]", _METHOD))
        tensors = [Arg("q", _rank3("Lq", qw)), Arg("k", _rank3("Lk", kw)), Arg("v", _rank3("Lk", kw), optional=True)]
        out.append(tape_rule("forward", [me, *tensors, _MASK], ret, indent=_METHOD, generic_comment=comment))
    untyped = ["q: Tensor[AnyShape, T]", "k: Tensor[Any, Any] | None = None", "v: Tensor[Any, Any] | None = None"]
    out.append(_overload("forward", ["self", *untyped, _MASK], "Tensor[Any, T]", _METHOD))
    return "".join(out)


# ----- the modules -------------------------------------------------------------------------


def _each(names: Sequence[str], block: Callable[[str], str]) -> dict[str, Callable[[], str]]:
    """``{name: block(name)}`` for a family of ops that share one table, lazily."""
    return {name: functools.partial(block, name) for name in names}


TARGETS: dict[str, dict[str, Callable[[], str]]] = {
    "ops/shape.py": {
        "transpose": transpose_block,
        "permute": permute_block,
        **_each(("concat", "stack"), sequence_block),
    },
    "ops/binary.py": _each(BINARY_OPS, binary_block),
    "ops/compare.py": _each(COMPARE_OPS, compare_block),
    "ops/reduce.py": _each(tuple(REDUCTIONS), reduce_block),
    "ops/linalg.py": {"matmul": matmul_block, "linear": linear_block},
    "ops/conv.py": _each(tuple(CONVS), conv_block),
    "ops/nn.py": {"layer_norm": layer_norm_block},
    "losses.py": _each(tuple(LOSSES), loss_block),
    "nn/attention.py": {"mha_forward": mha_forward_block},
}
"""For each module under ``src/gradtape``, its generated blocks by name."""


def render(text: str, blocks: dict[str, Callable[[], str]], where: str = "text") -> str:
    """Return ``text`` (a module's source) with every block of ``blocks`` rewritten.

    Raises:
        ValueError: a block named in ``blocks`` has no markers in ``text``, or ``text`` has
            markers for a block not in ``blocks``.
    """
    seen: set[str] = set()

    def fill(m: re.Match[str]) -> str:
        name = m["name"]
        if name not in blocks:
            raise ValueError(f"{where}: unknown generated block {name!r}")
        seen.add(name)
        return m["begin"] + blocks[name]() + m["end"]

    new = _BLOCK.sub(fill, text)
    missing = sorted(set(blocks) - seen)
    if missing:
        raise ValueError(f"{where}: no marker lines for blocks {missing}")
    return new


def unknown_modules() -> list[Path]:
    """Modules under ``src/gradtape`` with ``GENERATED`` markers that ``TARGETS`` does not list."""
    known = {SRC / module for module in TARGETS}
    return [p for p in sorted(SRC.rglob("*.py")) if p not in known and _MARKER.search(p.read_text())]


def main(argv: list[str]) -> int:
    """Rewrite the blocks (or, with ``--check``, report whether they are up to date)."""
    check = "--check" in argv
    stale = []
    for module, blocks in TARGETS.items():
        path = SRC / module
        old = path.read_text()
        new = render(old, blocks, str(path))
        if new == old:
            continue
        if check:
            stale.append(path)
        else:
            path.write_text(new)
            print(f"rewrote {path}")
    for path in stale:
        print(f"{path} is out of date: run python scripts/gen_shape_overloads.py", file=sys.stderr)
    unknown = unknown_modules()
    for path in unknown:
        print(f"{path} has GENERATED markers but is not in TARGETS of {Path(__file__).name}", file=sys.stderr)
    return 1 if stale or unknown else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
