"""Static checks as part of the suite: ``mypy --strict`` and ``ruff`` over the project, and
the generated overload tables (``scripts/gen_shape_overloads.py``) up to date."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import _checkers
import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_strict_is_clean() -> None:
    """mypy --strict (configured in pyproject.toml) passes on src/, tests/, benchmarks/ and scripts/."""
    out, err, status = _checkers.project_mypy()  # the typing suite's first mypy run (tests/_checkers.py)
    assert status == 0, out + err


def _ruff() -> str:
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    if not Path(ruff).exists():
        pytest.fail("ruff is not installed: install the test extra, pip install -e '.[test]'")
    return ruff


def test_ruff_is_clean() -> None:
    """ruff's lint rules (pyproject.toml) pass on the whole tree."""
    proc = subprocess.run([_ruff(), "check", str(ROOT)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _generated_modules() -> list[Path]:
    return [p for p in sorted((ROOT / "src").rglob("*.py")) if "# ----- BEGIN GENERATED " in p.read_text()]


def test_generated_overloads_are_up_to_date() -> None:
    """scripts/gen_shape_overloads.py --check: every module's generated blocks match the
    script, and no module has markers the script does not know."""
    assert len(_generated_modules()) >= 8
    script = ROOT / "scripts" / "gen_shape_overloads.py"
    proc = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr


def test_generated_modules_are_ruff_formatted() -> None:
    """The modules with generated blocks are as ``ruff format`` writes them, so that
    formatting the tree never fights the generator."""
    modules = [str(p) for p in _generated_modules()]
    proc = subprocess.run([_ruff(), "format", "--check", *modules], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
