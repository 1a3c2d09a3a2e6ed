"""README's "Typing a model end to end" section cannot rot: its code blocks go through mypy.

tests/test_repo.py checks the typed model block and the quoted wrong-inner-dim message; this
file checks the other blocks of the section: the list of mistakes (mypy rejects exactly the
lines marked ``# error``), the ``realize`` block (passes, reveals the type its comment
states, rejects the line its comment says is rejected, and runs, printing the message
quoted), and the numbers of typing test cases the section claims. pyrefly (tests/typing/pyrefly.toml)
checks the section's blocks too, in one run: it rejects exactly the listed mistakes and
accepts the rest (skipped where pyrefly is not installed).
"""

from __future__ import annotations

import re
import tempfile
from functools import cache
from pathlib import Path

import _checkers
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
TYPING = ROOT / "tests" / "typing"


def _section() -> str:
    start = README.index("## Typing a model end to end\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else len(README)]


def _block(marker: str) -> str:
    blocks = [b for b in re.findall(r"```python\n(.*?)```", _section(), flags=re.S) if marker in b]
    assert len(blocks) == 1, f"expected one python block with {marker!r} in the section, got {len(blocks)}"
    return str(blocks[0])


def _mypy(path: Path, source: str) -> list[tuple[int, str, str]]:
    """``(line, kind, message)`` for each error or note mypy --strict gives ``source``."""
    path.write_text(source)
    out, err, _ = _checkers.mypy(
        ["--config-file", str(ROOT / "pyproject.toml"), "--no-error-summary", "--hide-error-context", str(path)],
        plugin=False,
    )
    assert not err, err
    found = []
    for line in out.splitlines():
        m = re.match(r"^[^:]+:(\d+): (error|note): (.*)$", line)
        if m:
            found.append((int(m[1]), m[2], m[3]))
    return found


def test_the_listed_mistakes_are_rejected_on_exactly_the_marked_lines(tmp_path: Path) -> None:
    block = _block("# error: (3, 5) is not (3, 4)")
    marked = {i for i, line in enumerate(block.splitlines(), start=1) if "# error:" in line}
    assert len(marked) >= 4
    errors = {ln for ln, kind, _ in _mypy(tmp_path / "readme_mistakes.py", block) if kind == "error"}
    assert errors == marked


def _mypy_with_plugin(path: Path, source: str) -> list[tuple[int, str, str]]:
    """As :func:`_mypy`, with the configuration README's toml block gives (the plugin; the
    optional peers skipped as in pyproject.toml: tests/_checkers.py)."""
    toml = re.search(r"```toml\n(\[tool\.mypy\]\n.*?)```", _section(), flags=re.S)
    assert toml is not None
    assert toml.group(1) == _checkers.readme_mypy_block()  # the block the shared configuration is made of
    path.write_text(source)
    args = ["--config-file", str(_checkers.readme_mypy_config()), "--no-error-summary", "--hide-error-context"]
    out, err, _ = _checkers.mypy([*args, str(path)], plugin=True)  # the plugin cache
    assert not err, err
    return [(int(m[1]), m[2], m[3]) for m in re.finditer(r"^[^:\n]+:(\d+): (error|note): (.*)$", out, flags=re.M)]


def test_the_plugin_block_computes_conv_and_reshape_shapes(tmp_path: Path) -> None:
    """The plugin subsection's block: with the plugin, mypy reveals the conv/pool output and
    the Linear's result its comments state and rejects exactly the reshape line, with the
    message quoted; without the plugin only the widened Linear(8 * 13 * 13) is rejected; at
    run time the reshape raises."""
    from gradtape import ShapeError

    block = _block("nn.Linear(8 * 13 * 13")
    lines = block.splitlines()
    stated = {
        i: m.group(2) for i, ln in enumerate(lines, 1) if (m := re.match(r"^(h|logits) = .*  # (Tensor\[.*\])$", ln))
    }
    assert len(stated) == 2
    probe = block + "".join(f"reveal_type({lines[i - 1].split(' = ')[0]})\n" for i in stated)
    results = _mypy_with_plugin(tmp_path / "readme_plugin.py", probe)
    notes = [msg for _, kind, msg in results if kind == "note"]
    for want, note in zip(stated.values(), notes, strict=True):
        got = re.search(r'Revealed type is "(.*)"', note)
        assert got is not None
        assert _readable(got.group(1)) == re.sub(r"Rank\d\[", "tuple[", want), (got.group(1), want)
    marked = {i: ln.split("# error: ", 1)[1] for i, ln in enumerate(lines, 1) if "# error: " in ln}
    errors = {ln: msg for ln, kind, msg in results if kind == "error"}
    assert list(errors) == list(marked)
    for ln, msg in errors.items():
        assert msg == marked[ln] + "  [gradtape-shape]"

    # without the plugin: only the annotated Linear(8 * 13 * 13, ...) line, as README says
    off = [r for r in _mypy(tmp_path / "readme_plugin_off.py", block) if r[1] == "error"]
    assert [ln for ln, _, _ in off] == [next(i for i, ln in enumerate(lines, 1) if "nn.Linear(8 * 13 * 13" in ln)]
    assert 'expected "Literal[1352]"' in off[0][2]

    bad = next(i for i in marked)
    ns: dict[str, object] = {"__name__": "readme_plugin"}
    exec(compile("\n".join(lines[: bad - 1]), "README.md:plugin", "exec"), ns)
    assert ns["logits"].shape == (4, 10)  # type: ignore[attr-defined]
    with pytest.raises(ShapeError, match="reshape: cannot reshape"):
        exec(compile("\n".join(lines), "README.md:plugin", "exec"), {"__name__": "readme_plugin"})


def _readable(t: str) -> str:
    """mypy's spelling of a type as the README writes it (``Rank2[...]``, ``L[...]``, no modules)."""
    t = re.sub(r"\b(gradtape\.\w+|readme_\w+)\.", "", t)
    return t.replace("Literal[", "L[")


def test_the_realize_block_checks_reveals_rejects_and_runs(tmp_path: Path) -> None:
    block = _block("def load(")
    # the type the comment on `y = ...` states is the one mypy reveals
    stated = re.search(r"^y = .*# (Tensor\[.*\])$", block, flags=re.M)
    assert stated is not None
    results = _mypy(tmp_path / "readme_realize.py", block + "reveal_type(y)\n")
    assert [kind for _, kind, _ in results] == ["note"], results
    revealed = re.search(r'Revealed type is "(.*)"', results[0][2])
    assert revealed is not None
    want = stated.group(1).replace("Rank2[", "tuple[")
    assert _readable(revealed.group(1)) == want, (revealed.group(1), want)

    # the line the block says mypy rejects is rejected
    rejected = re.search(r"^# (\S+) is rejected by mypy", block, flags=re.M)
    assert rejected is not None
    bad = block.replace(rejected.group(0), rejected.group(1) + "  #", 1)
    line = bad.splitlines().index(next(ln for ln in bad.splitlines() if ln.startswith(rejected.group(1)))) + 1
    errors = [(ln, msg) for ln, kind, msg in _mypy(tmp_path / "readme_realize_bad.py", bad) if kind == "error"]
    assert [ln for ln, _ in errors] == [line], errors

    # it runs, and the message it prints is the one quoted
    printed: list[str] = []
    ns: dict[str, object] = {"__name__": "readme_realize", "print": lambda *a: printed.append(" ".join(map(str, a)))}
    exec(compile(block, "README.md:realize", "exec"), ns)
    quoted = re.search(r"print\(e\)  # (.*)$", block, flags=re.M)
    assert quoted is not None
    assert printed == [quoted.group(1)]
    assert ns["y"].shape == (32, 10)  # type: ignore[attr-defined]


def _count(folder: str, tag: str) -> int:
    return sum(len(re.findall(rf"# {tag}: \S", p.read_text())) for p in (TYPING / folder).glob("*.py"))


@pytest.mark.parametrize(
    ("claim", "folder", "tag"), [("reveal_type", "pass", "R"), ("lines it must reject", "fail", "E")]
)
def test_the_counts_the_section_states_hold(claim: str, folder: str, tag: str) -> None:
    """The section's "N+ reveal_type pins" and "M+ lines it must reject" stay true as tests/typing changes."""
    m = re.search(rf"(\d+)\+ (?:`?{re.escape(claim)}`?)", _section())
    assert m is not None, f"the section no longer states a number of {claim!r}"
    assert _count(folder, tag) >= int(m.group(1))


_PYREFLY_DIR = tempfile.TemporaryDirectory(prefix="gradtape-pyrefly-readme-")  # removed at exit


@cache
def _pyrefly_blocks() -> dict[str, tuple[str, dict[int, str]]]:
    """The section's python blocks, each checked by pyrefly (one run over all of them): by
    file name, the block's source and pyrefly's errors by line. The realize block gets its
    "rejected by mypy" line uncommented, as a separate file."""
    blocks = re.findall(r"```python\n(.*?)```", _section(), flags=re.S)
    sources = {f"readme_block{i}.py": str(b) for i, b in enumerate(blocks)}
    realize = _block("def load(")
    rejected = re.search(r"^# (\S+) is rejected by mypy", realize, flags=re.M)
    assert rejected is not None
    sources["readme_realize_bad.py"] = realize.replace(rejected.group(0), rejected.group(1) + "  #", 1)
    folder = Path(_PYREFLY_DIR.name)
    for name, source in sources.items():
        (folder / name).write_text(source)
    found = _checkers.pyrefly([folder / n for n in sources])
    errors: dict[str, dict[int, str]] = {n: {} for n in sources}
    for path, rows in found.items():
        for line, severity, kind, message in rows:
            if severity == "error":
                errors[Path(path).name][line] = f"{message} [{kind}]"
    return {n: (sources[n], errors[n]) for n in sources}


def test_pyrefly_rejects_the_listed_mistakes_and_accepts_the_other_blocks() -> None:
    """Under pyrefly the mistakes block is rejected on exactly its ``# error`` lines, the
    realize block's rejected line is rejected, and every other block checks clean up to the
    line that is an error only for mypy's plugin (the plugin block's reshape: pyrefly has no
    plugin, so it passes that line, which the shape check refuses at run time)."""
    checked = _pyrefly_blocks()
    assert len(checked) >= 5
    for name, (source, errors) in checked.items():
        lines = source.splitlines()
        if "# error: (3, 5) is not (3, 4)" in source:
            marked = {i for i, line in enumerate(lines, 1) if "# error:" in line}
            assert set(errors) == marked, (name, errors)
        elif name == "readme_realize_bad.py":
            rejected = re.search(r"^# (\S+) is rejected by mypy", _block("def load("), flags=re.M)
            assert rejected is not None
            bad = next(i for i, line in enumerate(lines, 1) if line.startswith(rejected.group(1) + "  #"))
            assert list(errors) == [bad], errors
        else:
            plugin_only = {i for i, line in enumerate(lines, 1) if "# error: reshape:" in line}
            assert not set(errors) - plugin_only, (name, errors)
