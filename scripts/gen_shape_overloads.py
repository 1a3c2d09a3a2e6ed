"""Generate the overload tables of gradtape's shape-typed ops.

Some typed signatures are too many to write by hand, or would repeat the same table in
every function of a family. This script writes each table between its
``BEGIN GENERATED <name>`` and ``END GENERATED <name>`` marker lines:

- ``src/gradtape/ops/shape.py``: ``transpose`` and ``permute`` (ranks 2 to 4, one overload
  per axis pair or permutation, each axis accepted as a non-negative or negative
  ``Literal``) and the tape overloads of ``concat`` and ``stack`` (tuples of 2 to 4
  tensors, one of which owns a tape);
- ``src/gradtape/ops/binary.py``: ``add``, ``sub``, ``mul``, ``div``, ``maximum``,
  ``minimum`` and ``pow`` (a number, a tensor of the same shape with the tape-kind rule, or
  a broadcast row vector);
- ``src/gradtape/ops/reduce.py``: the reductions ``sum``, ``mean``, ``max``, ``min``,
  ``var``, ``std`` and ``logsumexp`` (all axes -> ``Rank0``; one ``Literal`` axis of a rank
  1 to 3 tensor -> that dim dropped; anything else -> ``Tensor[Any, T]``).

Usage::

    python scripts/gen_shape_overloads.py          # rewrite the blocks in place
    python scripts/gen_shape_overloads.py --check  # exit 1 if a block is out of date

``tests/test_ops_shape.py`` runs ``--check``, so an edit to this script must be followed by
a run of it. The output is already in ``ruff format`` style (lines up to 120 characters,
longer signatures exploded with a trailing comma).
"""

from __future__ import annotations

import functools
import itertools
import re
import sys
from collections.abc import Callable
from pathlib import Path

OPS = Path(__file__).resolve().parents[1] / "src" / "gradtape" / "ops"
RANKS = (2, 3, 4)
"""Ranks that get exact ``transpose`` / ``permute`` overloads."""
TUPLE_LENGTHS = (2, 3, 4)
"""Lengths of the tuples of tensors that get mixed-tape ``concat`` / ``stack`` overloads."""
BINARY_OPS = ("add", "sub", "mul", "div", "maximum", "minimum", "pow")
"""The elementwise binary ops of ``ops/binary.py`` that share one overload table."""
REDUCE_RANKS = (1, 2, 3)
"""Ranks whose single-``Literal``-axis reductions get exact overloads."""
DIMS = "ABCD"
LINE = 120

_BLOCK = re.compile(
    r"(?P<begin>^# ----- BEGIN GENERATED (?P<name>\w+)[^\n]*\n)(?P<body>.*?)"
    r"(?P<end>^# ----- END GENERATED (?P=name) -----$)",
    re.M | re.S,
)


def _lit(axis: int, rank: int) -> str:
    return f"Literal[{axis}, {axis - rank}]"


def _rank(dims: list[str] | str) -> str:
    return f"Rank{len(dims)}[{', '.join(dims)}]"


def _overload(name: str, params: list[str], ret: str) -> str:
    one = f"def {name}({', '.join(params)}) -> {ret}: ..."
    if len(one) <= LINE:
        return f"@overload\n{one}\n"
    body = "".join(f"    {p},\n" for p in params)
    return f"@overload\ndef {name}(\n{body}) -> {ret}: ...\n"


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


def _sequence_block(name: str) -> str:
    """Tape overloads of ``concat`` / ``stack``: a tuple with an owned tape at any position
    gives an owned tape; otherwise the element type's tape kind (a TypeVar) is kept."""
    out = []
    for n in TUPLE_LENGTHS:
        for k in range(n):
            elems = ", ".join("Tensor[Any, OwnedTape]" if m == k else "Tensor[Any, Tape]" for m in range(n))
            params = [f"tensors: tuple[{elems}]", "axis: int = 0"]
            out.append(_overload(name, params, "Tensor[Any, OwnedTape]"))
    out.append(_overload(name, ["tensors: Sequence[Tensor[Any, T]]", "axis: int = 0"], "Tensor[Any, T]"))
    return "".join(out)


_AXES = "axis: int | tuple[int, ...]"
_MOMENTS = ["*", "correction: float = 0", "ddof: float | None = None"]
"""The keyword-only parameters of ``var`` and ``std``."""


def _reduce_block(name: str, extra: list[str]) -> str:
    """Overloads of a reduction ``name(a, axis=None, keepdims=False, *extra)``."""
    out = [
        _overload(name, ["a: Tensor[S, T]", "axis: None = None", *extra], "Tensor[Rank0, T]"),
        _overload(name, ["a: Tensor[AnyShape, T]", _AXES, "keepdims: bool = False", *extra], "Tensor[Any, T]"),
    ]
    for n in REDUCE_RANKS:
        dims = list(DIMS[:n])
        for k in range(n):
            kept = dims[:k] + dims[k + 1 :]
            ret = f"Tensor[{_rank(kept)}, T]" if kept else "Tensor[Rank0, T]"
            out.append(_overload(name, [f"a: Tensor[{_rank(dims)}, T]", f"axis: {_lit(k, n)}", *extra], ret))
    params = ["a: Tensor[Any, T]", f"{_AXES} | None = None", "keepdims: bool = False", *extra]
    out.append(_overload(name, params, "Tensor[Any, T]"))
    return "".join(out)


def _binary_block(name: str) -> str:
    """Overloads of an elementwise binary op ``name(a, b)``: ``b`` a Python number, a tensor
    of ``a``'s shape (the result owns a tape if either input does), or a row vector
    broadcast over a rank-2 ``a`` (a bias)."""
    rows = [
        (["a: Tensor[S, T]", "b: float"], "Tensor[S, T]"),
        (["a: Tensor[S, T]", "b: Tensor[S, NoneTape]"], "Tensor[S, T]"),
        (["a: Tensor[S, Tape]", "b: Tensor[S, OwnedTape]"], "Tensor[S, OwnedTape]"),
        (["a: Tensor[S, T]", "b: Tensor[S, T]"], "Tensor[S, T]"),
        (["a: Tensor[Rank2[A, B], T]", "b: Tensor[Rank1[B], NoneTape]"], "Tensor[Rank2[A, B], T]"),
        (["a: Tensor[Rank2[A, B], Tape]", "b: Tensor[Rank1[B], OwnedTape]"], "Tensor[Rank2[A, B], OwnedTape]"),
    ]
    return "".join(_overload(name, params, ret) for params, ret in rows)


TARGETS: dict[str, dict[str, Callable[[], str]]] = {
    "binary.py": {name: functools.partial(_binary_block, name) for name in BINARY_OPS},
    "shape.py": {
        "transpose": transpose_block,
        "permute": permute_block,
        "concat": lambda: _sequence_block("concat"),
        "stack": lambda: _sequence_block("stack"),
    },
    "reduce.py": {
        "sum": lambda: _reduce_block("sum", []),
        "mean": lambda: _reduce_block("mean", []),
        "max": lambda: _reduce_block("max", []),
        "min": lambda: _reduce_block("min", []),
        "var": lambda: _reduce_block("var", _MOMENTS),
        "std": lambda: _reduce_block("std", _MOMENTS),
        "logsumexp": lambda: _reduce_block("logsumexp", []),
    },
}
"""For each module under ``src/gradtape/ops``, its generated blocks by name."""


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


def main(argv: list[str]) -> int:
    """Rewrite the blocks (or, with ``--check``, report whether they are up to date)."""
    stale = []
    for module, blocks in TARGETS.items():
        path = OPS / module
        old = path.read_text()
        new = render(old, blocks, str(path))
        if new == old:
            continue
        if "--check" in argv:
            stale.append(path)
        else:
            path.write_text(new)
            print(f"rewrote {path}")
    for path in stale:
        print(f"{path} is out of date: run python scripts/gen_shape_overloads.py", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
