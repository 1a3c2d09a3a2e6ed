"""The typing test programs under pyright (strict mode), as under mypy (tests/test_typing.py).

One pyright run covers both folders, and tests/typing/plugin and the catalog too (tests/_checkers.py:
tests/typing/pyrightconfig.json's settings, this tree's ``src`` first; scripts/typing_catalog.py
reads the same report): files in ``pass/`` must have no error; in ``fail/`` every line marked ``# E:`` must
have an error (any rule: pyright's names differ from mypy's codes) and no other line may.
``reveal_type`` pins (``# R:``, written in mypy's spelling) are compared after mapping the
two spellings onto each other (``Rank2[`` -> ``tuple[``, ``OwnedTape`` -> ``GradientTape``,
no module prefixes); where the checkers genuinely infer different types, the line's
expression and pyright's type are listed in ``PYRIGHT_DIFFERS`` and checked too.

Skipped when the ``pyright`` command is missing or cannot start (the PyPI wrapper fetches
pyright from the npm registry on first use).
"""

from __future__ import annotations

import re
from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import Any

import _checkers
import pytest

TYPING = Path(__file__).resolve().parent / "typing"
PASS = sorted((TYPING / "pass").glob("*.py"))
FAIL = sorted((TYPING / "fail").glob("*.py"))
PLUGIN = sorted((TYPING / "plugin").glob("*.py"))  # mypy-plugin programs: pyright must accept

PYRIGHT_DIFFERS: dict[tuple[str, str], str] = {
    # pyright keeps the literal dims of a shape tuple written in the program, where mypy
    # widens them to int (both are correct; pyright's is more precise)
    ("ok_conv.py", "up"): "Tensor[tuple[Literal[8], Literal[3], int, int], GradientTape]",
    ("ok_spatial.py", "up"): "Tensor[tuple[Literal[2], Literal[3], int, int], GradientTape]",
    ("ok_spatial.py", "pooled"): "Tensor[tuple[Literal[2], Literal[3], int, int], GradientTape]",
    ("ok_spatial.py", "flow"): "Tensor[tuple[Literal[2], int, int, Literal[2]], GradientTape]",
    ("ok_spatial.py", "warped"): "Tensor[tuple[Literal[2], Literal[3], int, int], GradientTape]",
    ("ok_core.py", "u"): "Tensor[tuple[Literal[5], Literal[6]], NoneTape]",
    ("ok_core.py", "u @ v"): "Tensor[tuple[Literal[5], Literal[7]], NoneTape]",
    ("ok_mamba.py", "scan"): "Tensor[tuple[Literal[2], Literal[8], Literal[4]], GradientTape]",
    ("ok_broadcast.py", "outer"): "Tensor[tuple[Literal[5], Literal[7]], NoneTape]",
    ("ok_shape.py", "a.permute(axes)"): "Tensor[tuple[Literal[4], Literal[3]], NoneTape]",
    ("ok_shape.py", "r3"): "Tensor[tuple[Literal[2], Literal[6]], NoneTape]",
    ("ok_shape.py", "b3"): "Tensor[tuple[Literal[2], Literal[4]], NoneTape]",
    # the same for reshape((-1,)): pyright types the inferred dim as Literal[-1] where mypy
    # says int; a known gap for pyright users (an overload per position of -1 would fix it)
    ("ok_shape.py", "r4"): "Tensor[tuple[Literal[-1]], GradientTape]",
    # an untyped (Any-shaped) tensor: mypy keeps Tensor[Any, T], pyright collapses to Any
    ("ok_core.py", "untyped.sum(axis=0)"): "Any",
    ("ok_core.py", "untyped.var(axis=1)"): "Any",
    # sizes as separate ints (PyTorch's ``torch.ones(8, 64)``): a TypeVarTuple, whose literal
    # dims mypy keeps and pyright widens to int (a tuple of sizes keeps them under both)
    ("ok_creation.py", "gradtape.ones(8, 64)"): "Tensor[tuple[int, int], NoneTape]",
    ("ok_nnmod.py", "l1(u)"): "Any",
    ("ok_shape.py", "u.transpose(0, 1)"): "Any",
    ("ok_shape.py", "u.permute((1, 0))"): "Any",
    ("ok_shape.py", "u.expand_dims(0)"): "Any",
    ("ok_shape.py", "u.squeeze()"): "Any",
    ("ok_shape.py", "u[0]"): "Any",
    ("ok_shape.py", "u.gather([0])"): "Any",
    ("ok_realize.py", "anyrank"): "Any",
    ("ok_shape.py", "concat(many)"): "Any",
    # a list of differently shaped tensors: mypy joins the items to object, pyright keeps them
    ("ok_broadcast.py", "ops.concat([c5, c2], axis=1)"): "Tensor[tuple[Literal[8], int], NoneTape]",
    ("ok_realize.py", "scalar"): "Any",
}

_REVEAL = re.compile(r'^Type of "(?P<expr>.*)" is "(?P<type>.*)"$', re.S)


@cache
def _pyright() -> dict[str, list[dict[str, Any]]]:
    report = _checkers.pyright_report()
    if isinstance(report, str):
        pytest.skip(report)
    by_file: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for diag in report["generalDiagnostics"]:
        by_file[Path(diag["file"]).resolve().as_posix()].append(diag)
    assert report["summary"]["filesAnalyzed"] == len(_checkers.PYRIGHT_FILES)
    assert set(PASS + FAIL + PLUGIN) <= set(_checkers.PYRIGHT_FILES)
    return by_file


def _line(diag: dict[str, Any]) -> int:
    return int(diag["range"]["start"]["line"]) + 1


def _mypy_spelling(t: str) -> str:
    t = t.replace("gradtape.tensor.", "").replace("gradtape.tape.", "").replace("builtins.", "")
    t = t.replace("]?", "]")  # mypy's inferred literal (``Literal[8]?``, an argument's) is pyright's Literal[8]
    t = re.sub(r"\bgradtape$", "", t)  # a pin cut short to fit the line
    return re.sub(r"\b(ok|bad)_\w+\.", "", t)  # types declared in the test file itself


def _pyright_spelling(t: str) -> str:
    t = re.sub(r"\bRank0\b", "tuple[()]", t)
    t = re.sub(r"\bRank[1-6]\[", "tuple[", t)
    return t.replace("OwnedTape", "GradientTape")


@pytest.mark.parametrize("path", PLUGIN, ids=lambda p: p.name)
def test_pyright_accepts_plugin_programs(path: Path) -> None:
    """pyright has no plugins: a program written for gradtape.mypy_plugin still gets no error
    (its ``# P:`` lines are errors only under mypy with the plugin)."""
    errors = [f"{_line(d)}: {d['message']}" for d in _pyright().get(path.as_posix(), []) if d["severity"] == "error"]
    assert not errors, f"{path.name}: pyright rejects:\n" + "\n".join(errors)


@pytest.mark.parametrize("path", PASS, ids=lambda p: p.name)
def test_pyright_accepts(path: Path) -> None:
    """No pyright error (strict mode) in a program mypy accepts, and the same revealed types."""
    diags = _pyright().get(path.as_posix(), [])
    errors = [f"{_line(d)}: {d['message']}" for d in diags if d["severity"] == "error"]
    assert not errors, f"{path.name}: pyright rejects valid code:\n" + "\n".join(errors)
    reveals = {_line(d): _REVEAL.match(d["message"]) for d in diags if d["severity"] == "information"}
    for i, line in enumerate(path.read_text().splitlines(), start=1):
        pin = re.search(r"# R: (.+)$", line)
        if pin is None:
            continue
        m = reveals.get(i)
        assert m is not None, f"{path.name}:{i}: pyright revealed nothing"
        got = _pyright_spelling(m["type"])
        key = (path.name, m["expr"])
        if key in PYRIGHT_DIFFERS:
            assert got == PYRIGHT_DIFFERS[key], f"{path.name}:{i}: pyright now says {got!r}"
        else:
            want = _mypy_spelling(pin.group(1).strip())
            assert want in got, f"{path.name}:{i}: pyright revealed {got!r}, mypy's pin is {want!r}"


@pytest.mark.parametrize("path", FAIL, ids=lambda p: p.name)
def test_pyright_rejects(path: Path) -> None:
    """pyright (strict mode) reports an error on each line marked ``# E:``, and on no other."""
    errors = {_line(d) for d in _pyright().get(path.as_posix(), []) if d["severity"] == "error"}
    marked = {i for i, line in enumerate(path.read_text().splitlines(), start=1) if re.search(r"# E: \S+", line)}
    assert marked, f"{path.name} marks no line"
    assert not marked - errors, f"{path.name}: pyright no longer catches lines {sorted(marked - errors)}"
    assert not errors - marked, f"{path.name}: pyright flags unmarked lines {sorted(errors - marked)}"


def test_every_listed_difference_is_still_a_pin() -> None:
    """PYRIGHT_DIFFERS names only reveal_type lines that exist (no stale entries)."""
    exprs = {
        (p.name, m.group(1))
        for p in PASS
        for line in p.read_text().splitlines()
        if (m := re.search(r"reveal_type\((.*)\)  # R: ", line))
    }
    assert set(PYRIGHT_DIFFERS) <= exprs, sorted(set(PYRIGHT_DIFFERS) - exprs)
