"""Static checks as part of the suite: ``mypy --strict`` and ``ruff`` over the project."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mypy import api as mypy_api

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_strict_is_clean() -> None:
    """mypy --strict (configured in pyproject.toml) passes on src/, tests/, benchmarks/ and scripts/."""
    targets = [str(ROOT / d) for d in ("src", "tests", "benchmarks", "scripts") if (ROOT / d).is_dir()]
    out, err, status = mypy_api.run(["--config-file", str(ROOT / "pyproject.toml"), *targets])
    assert status == 0, out + err


def test_ruff_is_clean() -> None:
    """ruff's lint rules (pyproject.toml) pass on the whole tree."""
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    if not Path(ruff).exists():
        pytest.fail("ruff is not installed: install the test extra, pip install -e '.[test]'")
    proc = subprocess.run([ruff, "check", str(ROOT)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
