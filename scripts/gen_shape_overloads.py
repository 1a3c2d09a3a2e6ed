"""Generate the overload tables of ``src/gradtape/ops/shape.py``.

The typed signatures of ``transpose`` and ``permute`` (ranks 2 to 4, one overload per axis
pair or permutation, each axis accepted as a non-negative or negative ``Literal``) and the
tape overloads of ``concat`` and ``stack`` (tuples of 2 to 4 tensors, one of which owns a
tape) are too many to write by hand. This script writes each table between its
``BEGIN GENERATED <name>`` and ``END GENERATED <name>`` marker lines in shape.py.

Usage::

    python scripts/gen_shape_overloads.py          # rewrite the blocks in place
    python scripts/gen_shape_overloads.py --check  # exit 1 if a block is out of date

``tests/test_ops_shape.py`` runs ``--check``, so an edit to this script must be followed by
a run of it. The output is already in ``ruff format`` style (lines up to 120 characters,
longer signatures exploded with a trailing comma).
"""

from __future__ import annotations

import itertools
import re
import sys
from collections.abc import Callable
from pathlib import Path

TARGET = Path(__file__).resolve().parents[1] / "src" / "gradtape" / "ops" / "shape.py"
RANKS = (2, 3, 4)
"""Ranks that get exact ``transpose`` / ``permute`` overloads."""
TUPLE_LENGTHS = (2, 3, 4)
"""Lengths of the tuples of tensors that get mixed-tape ``concat`` / ``stack`` overloads."""
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


BLOCKS: dict[str, Callable[[], str]] = {
    "transpose": transpose_block,
    "permute": permute_block,
    "concat": lambda: _sequence_block("concat"),
    "stack": lambda: _sequence_block("stack"),
}


def render(text: str) -> str:
    """Return ``text`` (shape.py's source) with every generated block rewritten.

    Raises:
        ValueError: a block named in :data:`BLOCKS` has no markers in ``text``.
    """
    seen: set[str] = set()

    def fill(m: re.Match[str]) -> str:
        name = m["name"]
        if name not in BLOCKS:
            raise ValueError(f"unknown generated block {name!r}")
        seen.add(name)
        return m["begin"] + BLOCKS[name]() + m["end"]

    new = _BLOCK.sub(fill, text)
    missing = sorted(set(BLOCKS) - seen)
    if missing:
        raise ValueError(f"{TARGET}: no marker lines for blocks {missing}")
    return new


def main(argv: list[str]) -> int:
    """Rewrite the blocks (or, with ``--check``, report whether they are up to date)."""
    old = TARGET.read_text()
    new = render(old)
    if "--check" in argv:
        if new != old:
            print(f"{TARGET} is out of date: run python scripts/gen_shape_overloads.py", file=sys.stderr)
            return 1
        return 0
    if new != old:
        TARGET.write_text(new)
        print(f"rewrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
