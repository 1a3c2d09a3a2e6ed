"""``gradtape.mypy_plugin``: the programs in tests/typing/plugin under mypy --strict, with the
plugin and without it.

With the plugin, each line ending ``# P: <error-code>`` must be rejected with that code and no
other line may be (a false alarm fails); a line ending ``# R: <text>`` must make
``reveal_type`` print a type containing ``<text>``. Without the plugin the same programs must
type-check with no error at all (the plugin only adds checks, never needs code changes).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from mypy import api as mypy_api

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = sorted((Path(__file__).resolve().parent / "typing" / "plugin").glob("*.py"))
_LINE = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): (?P<kind>error|note): (?P<msg>.*?)(?:  \[(?P<code>[\w-]+)\])?$")


def _run(path: Path, plugin: bool, tmp_path: Path) -> list[tuple[int, str, str, str]]:
    config = tmp_path / ("with.toml" if plugin else "without.toml")
    plugins = 'plugins = ["gradtape.mypy_plugin"]\n' if plugin else ""
    config.write_text(
        f'[tool.mypy]\nstrict = true\nmypy_path = "{(ROOT / "stubs").as_posix()}"\npython_version = "3.11"\n' + plugins
    )
    out, err, _ = mypy_api.run(
        ["--config-file", str(config), "--no-error-summary", "--hide-error-context", "--no-incremental", str(path)]
    )
    assert not err, err
    found: list[tuple[int, str, str, str]] = []
    for raw in out.splitlines():
        m = _LINE.match(raw)
        assert m, f"unparsed mypy output: {raw}"
        found.append((int(m["line"]), m["kind"], m["code"] or "", m["msg"]))
    return found


def _marks(path: Path, tag: str) -> dict[int, str]:
    mark = re.compile(rf"  # {tag}: (?P<text>.+)$")  # a code comment after code, not prose
    marks: dict[int, str] = {}
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        m = mark.search(line)
        if m and not line.lstrip().startswith("#"):
            marks[n] = m["text"].strip()
    return marks


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.name)
def test_with_plugin(path: Path, tmp_path: Path) -> None:
    found = _run(path, True, tmp_path)
    errors = {line: code for line, kind, code, _ in found if kind == "error"}
    assert errors == _marks(path, "P"), f"{path.name}: errors with the plugin:\n{found}"
    reveals = {line: msg for line, kind, _, msg in found if kind == "note" and msg.startswith("Revealed type")}
    for line, want in _marks(path, "R").items():
        assert want in reveals.get(line, ""), f"{path.name}:{line}: want {want!r}, got {reveals.get(line)!r}"


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.name)
def test_without_plugin_no_false_alarm(path: Path, tmp_path: Path) -> None:
    errors = [f for f in _run(path, False, tmp_path) if f[1] == "error"]
    assert not errors, f"{path.name}: errors without the plugin: {errors}"


def test_plugin_entry_point() -> None:
    from mypy.plugin import Plugin

    from gradtape.mypy_plugin import GradtapePlugin, plugin

    assert plugin("1.14.0") is GradtapePlugin
    assert issubclass(GradtapePlugin, Plugin)


def test_module_call_passes_every_argument() -> None:
    """At run time ``model(...)`` forwards positional and keyword arguments to ``forward``."""
    import numpy as np

    from gradtape import Cpu, Tensor, nn

    class Scaled(nn.Module):
        def forward(self, x: Tensor[Any, Any], factor: float, *, bias: float = 0.0) -> Tensor[Any, Any]:  # type: ignore[override]
            return x * factor + bias

    dev = Cpu()
    out = Scaled()(dev.tensor(np.array([1.0, 2.0])), 3.0, bias=1.0)
    np.testing.assert_allclose(out.numpy(), [4.0, 7.0])
