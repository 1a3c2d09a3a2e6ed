"""The typing suite's type-checker runs, shared by its test files so that each checker analyses
gradtape once per configuration, and the checkers run side by side.

- mypy: two incremental caches, one per configuration kind, both kept between sessions in the
  repository's git-ignored ``.mypy_cache`` (delete it for a cold run):

  - the project's configuration (pyproject.toml, no plugin; tests/test_static.py,
    tests/test_typing.py, the README blocks checked without the plugin, the plugin programs
    checked without it, the catalog's ``mypy``): mypy's default place, ``.mypy_cache``
    itself. When tests/test_static.py is part of the session, its run over the project's
    whole tree (src, tests, benchmarks, scripts) comes first, so that the other runs find
    gradtape checked in the cache (a run that only imports gradtape analyses it with its
    errors ignored, and the whole-tree run would analyse it again); without it (the typing
    suite alone) no run pays for the tests', benchmarks' and scripts' analysis.
  - the configurations with gradtape's plugin (:func:`readme_mypy_config`: the README tests,
    tests/test_mypy_plugin.py; the catalog's ``mypy+plugin``): :data:`PLUGIN_CACHE`, one
    directory per version of mypy and of the plugin's source (mypy checks gradtape's own
    modules for changes itself). Its results do not depend on gradtape coming from the
    cache (tests/test_mypy_plugin.py checks a fresh run against a cached one; d690506 fixed
    the one case that did), so it no longer starts empty each session.
- pyright: one run (strict, tests/typing/pyrightconfig.json's settings, this tree's ``src``
  first) over every program set: tests/typing/{pass,fail,plugin} and the catalog; its JSON
  report is shared by tests/test_pyright.py and scripts/typing_catalog.py
  (``--pyright-report``).
- At the first use (:func:`start`), pyright and the first mypy run with the plugin (the
  programs of tests/typing/plugin) start as subprocesses (each from its own thread), and
  this process goes on with the runs of the project's configuration, so that the two cores
  work at once.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from functools import cache
from pathlib import Path
from typing import Any

from mypy import api as mypy_api
from mypy import version as mypy_version

ROOT = Path(__file__).resolve().parents[1]
TYPING = ROOT / "tests" / "typing"
PYPROJECT = ROOT / "pyproject.toml"
MYPY_CACHE = ROOT / ".mypy_cache"
"""The cache of the project's configuration (mypy's default cache directory)."""
PYRIGHT_FILES = sorted(
    p for d in ("pass", "fail", "plugin", "catalog/valid", "catalog/bugs") for p in (TYPING / d).glob("*.py")
)
"""Every program the shared pyright run checks."""

_TMP = tempfile.TemporaryDirectory(prefix="gradtape-typing-")  # removed at exit
PLUGIN_SOURCE = ROOT / "src" / "gradtape" / "mypy_plugin.py"
_PLUGIN_KEY = hashlib.sha256(f"{mypy_version.__version__}\n".encode() + PLUGIN_SOURCE.read_bytes()).hexdigest()[:16]
PLUGIN_CACHE = MYPY_CACHE / f"gradtape-plugin-{_PLUGIN_KEY}"
"""The cache of the configurations with gradtape's plugin, kept between sessions: one directory
per mypy version and plugin source (mypy itself sees gradtape's own changes module by module;
older directories are removed at the first use)."""
PLUGIN_PROGRAMS = sorted((TYPING / "plugin").glob("*.py"))
_LOCK = threading.Lock()
_background: list[threading.Thread] = []
_plugin_cache_ready = threading.Event()
_pyright_done = threading.Event()
_pyright_result: dict[str, Any] = {}
_prefetched: dict[tuple[str, ...], tuple[str, str, int]] = {}


def readme_mypy_block() -> str:
    """README's recommended mypy configuration: its ``[tool.mypy]`` toml block (strict, the
    plugin, allow_redefinition)."""
    import re

    toml = re.search(r"```toml\n(\[tool\.mypy\]\n.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    assert toml is not None, "README has no [tool.mypy] toml block"
    return toml.group(1)


def _skipped_peers() -> str:
    """pyproject.toml's ``[[tool.mypy.overrides]]`` tables that skip a module (the optional
    peers: torch, autograd, mpi4py), as toml text."""
    import tomllib

    tables = tomllib.loads(PYPROJECT.read_text())["tool"]["mypy"].get("overrides", [])
    skipped = [t for t in tables if t.get("follow_imports") == "skip"]
    assert skipped, "pyproject.toml no longer skips the optional peers (torch, ...) under mypy"
    text = ""
    for table in skipped:
        text += "\n[[tool.mypy.overrides]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in table.items())
    return text


def readme_mypy_config() -> Path:
    """README's recommended mypy configuration (:func:`readme_mypy_block`) with this tree's
    stubs and Python 3.11, as a config file; and, as in pyproject.toml, the optional peers
    (torch, ...) skipped: einops imports torch where it is installed, and analysing torch's
    own sources (some 1,400 modules) cost the plugin cache's first run three quarters of its
    time without changing any result on gradtape's programs (they never name torch)."""
    config = Path(_TMP.name) / "readme-mypy.toml"
    text = readme_mypy_block() + f'mypy_path = "{(ROOT / "stubs").as_posix()}"\npython_version = "3.11"\n'
    text += _skipped_peers()
    if not config.exists() or config.read_text() != text:
        config.write_text(text)
    return config


def plugin_programs_args() -> list[str]:
    """tests/test_mypy_plugin.py's mypy arguments for tests/typing/plugin with the plugin."""
    config = readme_mypy_config()
    return ["--config-file", str(config), "--no-error-summary", "--hide-error-context", *map(str, PLUGIN_PROGRAMS)]


def _fill_plugin_cache() -> None:
    """The first run with the plugin (:func:`plugin_programs_args`), in a subprocess: fills the
    plugin cache; its output is kept for the test that asks for that run."""
    args = plugin_programs_args()
    cmd = [sys.executable, "-m", "mypy", *args, "--show-traceback", "--cache-dir", str(PLUGIN_CACHE)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=900)
    _prefetched[tuple(args)] = (proc.stdout, proc.stderr, proc.returncode)


def pyright_config(cfg_dir: Path, files: list[Path], src: Path) -> Path:
    """A strict pyright configuration in ``cfg_dir`` over ``files`` (tests/typing/pyrightconfig.json's
    settings), with ``src`` in ``extraPaths`` so that it wins over an installed gradtape."""
    config = {
        "include": [os.path.relpath(p, cfg_dir) for p in files],  # pyright ignores absolute ones
        "extraPaths": [str(src)],
        "stubPath": str(ROOT / "stubs"),
        "pythonVersion": "3.11",
        "typeCheckingMode": "strict",
        "reportUnusedExpression": "none",
    }
    cfg_dir.mkdir(parents=True, exist_ok=True)
    path = cfg_dir / "pyrightconfig.json"
    path.write_text(json.dumps(config, indent=2))
    return path


def _run_pyright() -> None:
    """One pyright run over :data:`PYRIGHT_FILES`; the parsed report (or why there is none) in
    ``_pyright_result``."""
    try:
        exe = shutil.which("pyright") or str(Path(sys.executable).parent / "pyright")
        if not Path(exe).exists():
            _pyright_result["skip"] = "pyright is not installed (pip install pyright)"
            return
        cfg = pyright_config(Path(_TMP.name) / "pyright", PYRIGHT_FILES, ROOT / "src")
        cmd = [exe, "--outputjson", "-p", str(cfg), "--pythonpath", sys.executable]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=cfg.parent)
            _pyright_result["report"] = json.loads(proc.stdout)
        except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
            _pyright_result["skip"] = f"pyright could not run here: {exc}"
            return
        _pyright_result["config"] = str(cfg)
    finally:
        _pyright_done.set()


def _plugin_lane() -> None:
    try:
        _fill_plugin_cache()
    finally:
        _plugin_cache_ready.set()


def start() -> None:
    """Start the background checker runs (once): pyright, and the first mypy run with the plugin."""
    with _LOCK:
        if not _background:
            for old in MYPY_CACHE.glob("gradtape-plugin-*"):
                if old != PLUGIN_CACHE:
                    shutil.rmtree(old, ignore_errors=True)
            for lane in (_run_pyright, _plugin_lane):
                _background.append(threading.Thread(target=lane, name=f"typing-{lane.__name__}", daemon=True))
                _background[-1].start()


@cache
def project_mypy() -> tuple[str, str, int]:
    """``mypy`` with pyproject.toml on src/, tests/, benchmarks/ and scripts/ (tests/test_static.py):
    stdout, stderr, exit status. Where tests/test_static.py is in the session, the first run of
    the project's configuration (:func:`project_cache_ready`), so that gradtape is checked (not
    only analysed as an import) once; the background runs start first."""
    start()
    targets = [str(ROOT / d) for d in ("src", "tests", "benchmarks", "scripts") if (ROOT / d).is_dir()]
    return mypy_api.run(["--config-file", str(PYPROJECT), "--cache-dir", str(MYPY_CACHE), *targets])


def project_cache_ready() -> None:
    """Before a run of the project's configuration: where tests/test_static.py is part of the
    session (pytest imported it when collecting), its whole-tree run (:func:`project_mypy`)
    first, so that gradtape is checked once (a run that only imports gradtape analyses it with
    its errors ignored, which the whole-tree run would redo); otherwise nothing."""
    start()
    if "test_static" in sys.modules:
        project_mypy()


def mypy(args: list[str], *, plugin: bool) -> tuple[str, str, int]:
    """``mypy.api.run(args)`` with the cache for the configuration's kind (``plugin``: a
    configuration loading gradtape's plugin; it waits for the background run that starts that
    cache). The project's configuration waits for :func:`project_cache_ready`."""
    start()
    if not plugin:
        project_cache_ready()
    else:
        _plugin_cache_ready.wait()
        if tuple(args) in _prefetched:
            return _prefetched.pop(tuple(args))
    return mypy_api.run([*args, "--cache-dir", str(PLUGIN_CACHE if plugin else MYPY_CACHE)])


def mypy_plugin_cache_ready() -> None:
    """Wait until the background run has filled the plugin cache (before another process uses it)."""
    start()
    _plugin_cache_ready.wait()


def pyright_report() -> dict[str, Any] | str:
    """The shared pyright run's JSON report over :data:`PYRIGHT_FILES`, or why pyright could not
    run (a reason to skip)."""
    start()
    _pyright_done.wait()
    if "skip" in _pyright_result:
        return str(_pyright_result["skip"])
    report: dict[str, Any] = _pyright_result["report"]
    return report


def pyright_report_file() -> Path | None:
    """The shared pyright report as scripts/typing_catalog.py's ``--pyright-report`` reads it
    (the files checked, the configuration, the report), or ``None`` where pyright could not run."""
    report = pyright_report()
    if isinstance(report, str):
        return None
    path = Path(_TMP.name) / "pyright-report.json"
    if not path.exists():
        data = {"files": [str(p) for p in PYRIGHT_FILES], "config": _pyright_result["config"], "report": report}
        path.write_text(json.dumps(data))
    return path


PYREFLY_CONFIG = TYPING / "pyrefly.toml"


def pyrefly(paths: list[Path]) -> dict[str, list[tuple[int, str, str, str]]]:
    """pyrefly (tests/typing/pyrefly.toml: its strict preset) over ``paths`` in one run: its
    diagnostics by resolved path (posix), each ``(line, severity, error kind, message)``.
    Skips the calling test when pyrefly is not installed; fails naming pyrefly's output when
    it does not report JSON."""
    import pytest

    local = Path(sys.executable).parent / "pyrefly"
    exe = str(local) if local.exists() else shutil.which("pyrefly")
    if exe is None:
        pytest.skip("pyrefly is not installed (pip install pyrefly pyrefly-shape-extensions)")
    cmd = [exe, "check", "-c", str(PYREFLY_CONFIG), "--output-format", "json", "--summary=none", "--relative-to", ""]
    proc = subprocess.run([*cmd, *(str(p) for p in paths)], capture_output=True, text=True, timeout=600)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise AssertionError(
            f"pyrefly failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        ) from None
    found: dict[str, list[tuple[int, str, str, str]]] = {}
    for d in report["errors"]:
        key = Path(d["path"]).resolve().as_posix()
        found.setdefault(key, []).append((int(d["line"]), d["severity"], d["name"], d["description"]))
    return found
