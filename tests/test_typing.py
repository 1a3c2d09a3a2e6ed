"""Programs mypy and pyrefly must accept (tests/typing/pass) and reject (tests/typing/fail).

One mypy run covers every file (file names must be unique across both folders:
``ok_*.py`` and ``bad_*.py``). In ``fail/`` each line that must be rejected ends with
``# E: <error-code>``; any other error is a false alarm and fails the test. A line
ending with ``# R: <text>`` must make ``reveal_type`` print a type containing ``<text>``.

pyrefly (tests/typing/pyrefly.toml: its strict preset) gets the same folders in one run: no
error in ``pass/`` but the lines listed in ``PYREFLY_FALSE_ALARMS``; in ``fail/`` an error
on each marked line (any error kind: pyrefly's names differ from mypy's codes) except the
lines listed in ``PYREFLY_MISSES``, and on no other line.
Skipped when pyrefly is not installed. (pyright: tests/test_pyright.py.)

With gradtape's mypy plugin (README's configuration), the programs listed in ``PLUGIN_FAIL``
are rejected on exactly their marked lines with the same codes too (pass/ is checked with the
plugin by tests/test_mypy_plugin.py).
"""

from __future__ import annotations

import re
from collections import defaultdict
from functools import cache
from pathlib import Path

import _checkers
import pytest

ROOT = Path(__file__).resolve().parents[1]
TYPING = Path(__file__).resolve().parent / "typing"
PASS = sorted((TYPING / "pass").glob("*.py"))
FAIL = sorted((TYPING / "fail").glob("*.py"))

PYREFLY_CONFIG = TYPING / "pyrefly.toml"

PYREFLY_MISSES: dict[str, set[int]] = {
    # marked lines of fail/ that pyrefly does not reject, by file (none today: it rejects every
    # one); a line it starts missing fails test_pyrefly_rejects, one it starts catching must be
    # removed from here
}

PYREFLY_FALSE_ALARMS: dict[str, set[int]] = {
    # valid lines pyrefly 1.4 rejects, by file. pyrefly widens the literals of a shape it infers
    # for a type variable: unannotated ``dev.zeros((2, 3))`` is ``Tensor[tuple[int, int]]`` to it
    # (mypy and pyright keep ``Literal[2], Literal[3]``), so stacking a list of such tensors into
    # an annotated literal shape is refused. (Stack's new dim of a list, which pyrefly took as a
    # type variable's default where mypy and pyright solved it from the annotation, is typed
    # ``Any`` now, and its three lines here are accepted.)
    "ok_stack_list.py": {18},
}

PLUGIN_FAIL = [TYPING / "fail" / "bad_rnn.py"]
"""fail/ programs also pinned under mypy with the plugin (one run; the plugin adds width checks
of its own, and must neither lose a rejection nor add one)."""

_LINE = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): (?P<kind>error|note): (?P<msg>.*?)(?:  \[(?P<code>[\w-]+)\])?$")


@cache
def _mypy_output() -> dict[str, list[tuple[int, str, str, str]]]:
    out, err, _ = _checkers.mypy(
        ["--config-file", str(ROOT / "pyproject.toml"), "--no-error-summary", "--hide-error-context"]
        + [str(p) for p in PASS + FAIL],
        plugin=False,
    )
    assert not err, err
    found: dict[str, list[tuple[int, str, str, str]]] = defaultdict(list)
    stray = [raw for raw in out.splitlines() if ": error:" in raw and not _LINE.match(raw)]
    assert not stray, "mypy errors not tied to a line:\n" + "\n".join(stray)
    for raw in out.splitlines():
        m = _LINE.match(raw)
        if m:
            name = Path(m["path"]).resolve().as_posix()
            found[name].append((int(m["line"]), m["kind"], m["code"] or "", m["msg"]))
    return found


def _marks(path: Path, tag: str) -> dict[int, str]:
    marks = {}
    for i, line in enumerate(path.read_text().splitlines(), start=1):
        m = re.search(rf"# {tag}: (.+)$", line)
        if m:
            marks[i] = m.group(1).strip()
    return marks


def _check_reveals(path: Path, results: list[tuple[int, str, str, str]]) -> None:
    for line, want in _marks(path, "R").items():
        notes = [msg for ln, kind, _, msg in results if ln == line and kind == "note"]
        assert any(want in n for n in notes), f"{path.name}:{line}: reveal_type wanted {want!r}, mypy said {notes}"


@pytest.mark.parametrize("path", PASS, ids=lambda p: p.name)
def test_mypy_accepts(path: Path) -> None:
    """A valid program gets no error (no false alarms)."""
    results = _mypy_output().get(path.resolve().as_posix(), [])
    errors = [f"{ln}: {msg} [{code}]" for ln, kind, code, msg in results if kind == "error"]
    assert not errors, f"{path.name}: mypy flagged valid code:\n" + "\n".join(errors)
    _check_reveals(path, results)


@pytest.mark.parametrize("path", FAIL, ids=lambda p: p.name)
def test_mypy_rejects(path: Path) -> None:
    """Every marked line is rejected with its error code, and nothing else is."""
    expected = _marks(path, "E")
    assert expected, f"{path.name} marks no expected error"
    results = _mypy_output().get(path.resolve().as_posix(), [])
    got = {(ln, code) for ln, kind, code, _ in results if kind == "error"}
    missing = sorted((ln, code) for ln, code in expected.items() if (ln, code) not in got)
    extra = sorted((ln, code) for ln, code in got if expected.get(ln) != code)
    assert not missing, f"{path.name}: mypy no longer catches {missing}"
    assert not extra, f"{path.name}: unexpected errors {extra}: {results}"
    _check_reveals(path, results)


@cache
def _pyrefly_output() -> dict[str, list[tuple[int, str, str, str]]]:
    """pyrefly's diagnostics on pass/ and fail/ (one run), by resolved path, as
    ``(line, severity, error kind, message)``."""
    found = _checkers.pyrefly(PASS + FAIL)
    checked = {Path(path) for path, rows in found.items() if any(kind == "reveal-type" for _, _, kind, _ in rows)}
    assert checked >= {p.resolve() for p in PASS if "reveal_type(" in p.read_text()}, "pyrefly skipped files"
    return found


@pytest.mark.parametrize("path", PASS, ids=lambda p: p.name)
def test_pyrefly_accepts(path: Path) -> None:
    """No pyrefly error (strict preset) in a valid program."""
    results = _pyrefly_output().get(path.resolve().as_posix(), [])
    known = PYREFLY_FALSE_ALARMS.get(path.name, set())
    errors = [f"{ln}: {msg} [{kind}]" for ln, sev, kind, msg in results if sev == "error" and ln not in known]
    assert not errors, f"{path.name}: pyrefly flagged valid code:\n" + "\n".join(errors)
    flagged = {ln for ln, sev, _, _ in results if sev == "error"}
    assert known <= flagged, (
        f"{path.name}: pyrefly accepts lines {sorted(known - flagged)}: shrink PYREFLY_FALSE_ALARMS"
    )


@pytest.mark.parametrize("path", FAIL, ids=lambda p: p.name)
def test_pyrefly_rejects(path: Path) -> None:
    """pyrefly reports an error on each marked line it is known to catch, and on no other."""
    marked = set(_marks(path, "E"))
    assert marked, f"{path.name} marks no expected error"
    misses = PYREFLY_MISSES.get(path.name, set())
    assert misses <= marked, f"{path.name}: PYREFLY_MISSES lists unmarked lines {sorted(misses - marked)}"
    results = _pyrefly_output().get(path.resolve().as_posix(), [])
    got = {ln for ln, sev, _, _ in results if sev == "error"}
    assert not (marked - misses) - got, f"{path.name}: pyrefly no longer catches lines {sorted(marked - misses - got)}"
    assert not misses & got, f"{path.name}: pyrefly now catches lines {sorted(misses & got)}: shrink PYREFLY_MISSES"
    extra = sorted(got - marked)
    assert not extra, f"{path.name}: pyrefly flags unmarked lines {[r for r in results if r[0] in extra]}"


@cache
def _mypy_plugin_output() -> dict[str, list[tuple[int, str, str, str]]]:
    config = _checkers.readme_mypy_config()
    out, err, _ = _checkers.mypy(
        ["--config-file", str(config), "--no-error-summary", "--hide-error-context", *map(str, PLUGIN_FAIL)],
        plugin=True,
    )
    assert not err, err
    found: dict[str, list[tuple[int, str, str, str]]] = defaultdict(list)
    for raw in out.splitlines():
        m = _LINE.match(raw)
        assert m, f"unparsed mypy output: {raw}"
        found[Path(m["path"]).resolve().as_posix()].append((int(m["line"]), m["kind"], m["code"] or "", m["msg"]))
    return found


@pytest.mark.parametrize("path", PLUGIN_FAIL, ids=lambda p: p.name)
def test_mypy_plugin_rejects(path: Path) -> None:
    """With the plugin, every marked line is rejected with its code, and nothing else is."""
    expected = _marks(path, "E")
    results = _mypy_plugin_output().get(path.resolve().as_posix(), [])
    got = {(ln, code) for ln, kind, code, _ in results if kind == "error"}
    assert got == set(expected.items()), f"{path.name}: with the plugin {sorted(got)}: {results}"
