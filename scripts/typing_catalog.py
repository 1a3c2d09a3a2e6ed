"""Count what mypy and pyright catch on the catalog of realistic programs (tests/typing/catalog).

The catalog has two folders:

- ``valid/``: programs that run correctly, written as users write them (PyTorch-style
  unannotated code, annotated modules, broadcasting, keepdims reductions, conv nets,
  attention, training loops, ...). Any error a checker reports in one of them is a **false
  alarm**.
- ``bugs/``: programs with exactly one shape or tape bug, on the line marked ``# BUG``; the
  first line of the module docstring names the bug's class (``class: matmul-inner``). A bug
  is **caught** when the checker reports an error on that line, **missed** otherwise (pyright's
  ``reportUnknown*`` errors alone, "type is unknown", do not count as catching it); a bug
  program is **noisy** when the checker also reports errors on other lines (``noisy*``:
  not counting pyright's ``reportUnknown*`` follow-on errors).

Four checkers, each on all catalog files in one run:

- ``mypy``: ``mypy --strict`` with the project's configuration (``pyproject.toml``'s
  ``[tool.mypy]``, copied into a temporary config with any ``plugins`` line removed),
  ``--no-error-summary``, a fresh cache directory (or ``--mypy-cache``);
- ``mypy+plugin``: the configuration README recommends: the same with ``plugins`` set to
  gradtape's mypy plugin (``gradtape.mypy_plugin``; with ``--src``, the plugin file of that
  tree) and ``allow_redefinition = true`` (``h = layer(h)`` rebinds ``h`` to a new shape); a
  fresh cache directory (or ``--mypy-plugin-cache``);
- ``pyright``: pyright in strict mode with a temporary ``pyrightconfig.json`` like
  tests/typing/pyrightconfig.json (stubs, Python 3.11, ``reportUnusedExpression`` off); or,
  with ``--pyright-report``, the report of such a run that the caller made over a set of files
  holding the catalog (tests/_checkers.py's one pyright run for the whole typing suite);
- ``pyrefly``: ``pyrefly check`` with tests/typing/pyrefly.toml (its ``strict`` preset, the
  settings that file explains), ``src`` first on the search path; counted only where
  ``pyrefly`` is installed (``pip install pyrefly pyrefly-shape-extensions``), reported as
  skipped otherwise.

The gradtape source tree checked against is ``--src`` (default: this repository's ``src``):
mypy gets it first on ``MYPYPATH``, pyright in ``extraPaths`` and pyrefly first on its
``search-path``, so it wins over the installed package. The script checks that it did: mypy's
verbose log must show ``gradtape/__init__.py`` parsed from that tree, pyright's verbose search
paths (a run with the same configuration on an empty file) must list that tree before any
other path holding a ``gradtape`` package, and pyrefly's
``dump-config`` must list it as its first search path; otherwise it stops.

Usage::

    python scripts/typing_catalog.py                      # this tree
    python scripts/typing_catalog.py --src /tmp/before/src  # another tree (a git worktree)
    python scripts/typing_catalog.py --json > counts.json
    python scripts/typing_catalog.py --checkers mypy,pyright --details
    python scripts/typing_catalog.py --checkers pyrefly
    python scripts/typing_catalog.py --mypy-cache .mypy_cache  # reuse (and fill) mypy's cache

Only errors count (mypy notes, pyright and pyrefly warnings and infos are ignored). Errors reported in files
outside the catalog (for example in the gradtape tree itself) are counted apart and not
charged to any program.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CATALOG = ROOT / "tests" / "typing" / "catalog"
CHECKERS = ("mypy", "mypy+plugin", "pyright", "pyrefly")
PYREFLY_CONFIG = ROOT / "tests" / "typing" / "pyrefly.toml"
_CLASS = re.compile(r'^\s*(?:"""|\'\'\')\s*class:\s*([\w-]+)', re.S)
_MYPY_LINE = re.compile(
    r"^(?P<path>.+?):(?P<line>\d+): (?P<sev>error|note|warning): (?P<msg>.*?)(?:  \[(?P<code>[\w-]+)\])?$"
)
_MYPY_GRADTAPE = re.compile(r"(/\S*/gradtape/__init__\.pyi?)\b")


@dataclass
class Program:
    """One catalog file: its kind (``valid`` or ``bug``), and for a bug its line and class."""

    path: Path
    kind: str
    bug_line: int | None = None
    bug_class: str | None = None


@dataclass
class Diagnostic:
    """One error a checker reported: 1-based line, rule/code, message."""

    line: int
    code: str
    message: str


@dataclass
class CheckerResult:
    """What one checker reported on the catalog, and where it resolved ``gradtape``."""

    checker: str
    resolved: str
    diagnostics: dict[str, list[Diagnostic]] = field(default_factory=dict)  # by absolute path
    outside: list[str] = field(default_factory=list)  # errors in files outside the catalog
    skipped: str | None = None


def load_catalog() -> list[Program]:
    """The catalog's programs, valid ones first; checks each bug file's marker and class."""
    programs = [Program(p, "valid") for p in sorted((CATALOG / "valid").glob("*.py"))]
    for p in sorted((CATALOG / "bugs").glob("*.py")):
        text = p.read_text()
        lines = [i for i, line in enumerate(text.splitlines(), 1) if line.rstrip().endswith("# BUG")]
        m = _CLASS.match(text)
        if len(lines) != 1 or m is None:
            sys.exit(f"{p}: a bug program needs exactly one '# BUG' line and a 'class: <name>' docstring")
        programs.append(Program(p, "bug", lines[0], m.group(1)))
    return programs


def _mypy_config(tmp: Path, plugin: str | None) -> Path:
    """The project's mypy configuration with ``plugins`` removed, or set to ``[plugin]``."""
    text = (ROOT / "pyproject.toml").read_text()
    out: list[str] = []
    section = ""
    skipping = False
    for line in text.splitlines():
        stripped = line.strip()
        if skipping:  # the rest of a multi-line plugins = [...] value
            skipping = not stripped.endswith("]")
            continue
        if stripped.startswith("["):
            section = stripped
        if section == "[tool.mypy]" and re.match(r"plugins\s*=", stripped):
            skipping = "[" in stripped and not stripped.endswith("]")
            continue
        out.append(line)
        if stripped == "[tool.mypy]" and plugin is not None:
            out.append(f"plugins = [{json.dumps(plugin)}]")
            out.append("allow_redefinition = true")
    cfg = tmp / ("mypy-plugin.toml" if plugin else "mypy.toml")
    cfg.write_text("\n".join(out) + "\n")
    got = tomllib.loads(cfg.read_text())["tool"]["mypy"].get("plugins")
    if got != ([plugin] if plugin else None):
        sys.exit(f"could not write the mypy config {cfg}: plugins = {got!r}")
    return cfg


def run_mypy(programs: list[Program], src: Path, plugin: bool, tmp: Path, cache_dir: Path | None) -> CheckerResult:
    """``mypy --strict`` (the project's config) on every catalog file, ``src`` first on MYPYPATH;
    mypy's cache in ``cache_dir``, else a fresh one."""
    name = "mypy+plugin" if plugin else "mypy"
    plugin_ref: str | None = None
    if plugin:
        plugin_file = src / "gradtape" / "mypy_plugin.py"
        if not plugin_file.is_file():
            return CheckerResult(name, "", skipped=f"no {plugin_file}")
        # the installed plugin module for this tree; that tree's plugin file for another one
        plugin_ref = "gradtape.mypy_plugin" if src.resolve() == (ROOT / "src").resolve() else str(plugin_file)
    cfg = _mypy_config(tmp, plugin_ref)
    env = dict(os.environ)
    stubs = src.parent / "stubs"
    env["MYPYPATH"] = os.pathsep.join(str(p) for p in (src, stubs) if p.is_dir())
    cache = tmp / f"cache-{name}" if cache_dir is None else cache_dir
    cmd = [sys.executable, "-m", "mypy", "--config-file", str(cfg), "--no-error-summary", "--no-pretty"]
    cmd += ["--show-absolute-path", "--show-error-codes", "--no-color-output", "--cache-dir", str(cache), "-v"]
    cmd += [str(p.path) for p in programs]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
    if proc.returncode not in (0, 1):
        sys.exit(f"{name} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr[-3000:]}")
    found = sorted({m.group(1) for m in _MYPY_GRADTAPE.finditer(proc.stderr)})
    want = (src / "gradtape" / "__init__.py").resolve()
    if [Path(f).resolve() for f in found] != [want]:
        sys.exit(f"{name}: gradtape resolved to {found or 'nothing'}, not {want}")
    result = CheckerResult(name, str(want.parent))
    catalog = {str(p.path.resolve()) for p in programs}
    for line in proc.stdout.splitlines():
        m = _MYPY_LINE.match(line)
        if m is None or m.group("sev") != "error":
            continue
        path = str(Path(m.group("path")).resolve())
        if path not in catalog:
            result.outside.append(line)
            continue
        diag = Diagnostic(int(m.group("line")), m.group("code") or "", m.group("msg"))
        result.diagnostics.setdefault(path, []).append(diag)
    for diags in result.diagnostics.values():
        diags.sort(key=lambda d: d.line)
    return result


def _pyright_command() -> list[str]:
    exe = shutil.which("pyright") or str(Path(sys.executable).parent / "pyright")
    if not Path(exe).exists():
        sys.exit("pyright is not installed (pip install -e '.[test]')")
    return [exe]


def _pyright_resolution(stdout: str, config_dir: Path) -> Path | None:
    """The directory ``import gradtape`` resolves to, from pyright's ``--verbose`` search
    paths (pyright takes the first search path holding the package)."""
    paths: list[Path] = []
    in_block = False
    for line in stdout.splitlines():
        if line.strip() == "Search paths:":
            in_block = True
            continue
        if in_block:
            if not line.startswith("    "):
                break
            paths.append(Path(line.strip()))
    for base in paths:
        for cand in (base / "gradtape" / "__init__.pyi", base / "gradtape" / "__init__.py", base / "gradtape.pyi"):
            if cand.is_file():
                return cand.parent.resolve() if cand.name.startswith("__init__") else cand.resolve()
    return None


def _pyright_config(cfg_dir: Path, files: list[Path], src: Path) -> Path:
    """The strict configuration (in ``cfg_dir``) for ``files``, ``src`` in ``extraPaths``."""
    stubs = src.parent / "stubs"
    config: dict[str, Any] = {
        "include": [os.path.relpath(p, cfg_dir) for p in files],  # pyright ignores absolute ones
        "extraPaths": [str(src)],
        "stubPath": str(stubs if stubs.is_dir() else ROOT / "stubs"),
        "pythonVersion": "3.11",
        "typeCheckingMode": "strict",
        "reportUnusedExpression": "none",
    }
    cfg_dir.mkdir(parents=True)
    (cfg_dir / "pyrightconfig.json").write_text(json.dumps(config, indent=2))
    return cfg_dir / "pyrightconfig.json"


def run_pyright(programs: list[Program], src: Path, tmp: Path, shared: Path | None) -> CheckerResult:
    """pyright (strict) on every catalog file, ``src`` in ``extraPaths``; with ``shared`` (a
    ``--pyright-report`` file: ``files``, ``config``, ``report``), that run's report instead,
    after checking that its configuration is this one and that it checked every catalog file."""
    # where gradtape resolves: pyright's verbose search paths, from a run of the same
    # configuration on an empty file (they do not depend on the files checked)
    probe = _pyright_config(tmp / "pyright-paths", [tmp / "pyright-paths" / "empty.py"], src)
    (probe.parent / "empty.py").write_text("")
    base = [*_pyright_command(), "--pythonpath", sys.executable]
    verbose = subprocess.run([*base, "-p", str(probe), "--verbose"], capture_output=True, text=True, cwd=probe.parent)
    resolved = _pyright_resolution(verbose.stdout, probe.parent)
    want = (src / "gradtape").resolve()
    if resolved != want:
        sys.exit(f"pyright: gradtape resolves to {resolved}, not {want}\n{verbose.stdout[:3000]}")
    if shared is None:
        files = [p.path for p in programs]
        cfg = _pyright_config(tmp / "pyright", files, src)
        proc = subprocess.run([*base, "-p", str(cfg), "--outputjson"], capture_output=True, text=True, cwd=cfg.parent)
        try:
            report = json.loads(proc.stdout)
        except json.JSONDecodeError:
            sys.exit(f"pyright failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        stderr = proc.stderr
    else:
        given = json.loads(shared.read_text())
        files = [Path(f) for f in given["files"]]
        report, stderr = given["report"], ""
        config = json.loads(Path(given["config"]).read_text())
        config.pop("include")
        mine = json.loads(probe.read_text())
        mine.pop("include")
        if config != mine:
            sys.exit(f"{shared}: pyright ran with {config}, not {mine}")
        absent = {str(p.path.resolve()) for p in programs} - {str(f.resolve()) for f in files}
        if absent:
            sys.exit(f"{shared}: pyright did not check {sorted(absent)}")
    analyzed = report.get("summary", {}).get("filesAnalyzed")
    if analyzed != len(files):
        sys.exit(f"pyright analyzed {analyzed} files, not the {len(files)} it was given:\n{stderr[-3000:]}")
    result = CheckerResult("pyright", str(want))
    catalog = {str(p.path.resolve()) for p in programs}
    for d in report.get("generalDiagnostics", []):
        if d.get("severity") != "error":
            continue
        path = str(Path(d["file"]).resolve())
        line = int(d["range"]["start"]["line"]) + 1
        if path not in catalog:
            result.outside.append(f"{path}:{line}: {d['message']}")
            continue
        diag = Diagnostic(line, d.get("rule", ""), " ".join(d["message"].split()))
        result.diagnostics.setdefault(path, []).append(diag)
    for diags in result.diagnostics.values():
        diags.sort(key=lambda d: d.line)
    return result


def pyrefly_command() -> list[str] | None:
    """The ``pyrefly`` executable (this interpreter's, else the one on ``PATH``), or ``None``."""
    local = Path(sys.executable).parent / "pyrefly"
    exe = str(local) if local.exists() else shutil.which("pyrefly")
    return [exe] if exe else None


def pyrefly_config(tmp: Path, src: Path) -> Path:
    """tests/typing/pyrefly.toml with its search path replaced by ``src`` (and that tree's
    stubs), absolute, and no ``project-includes`` (the files are given on the command line)."""
    config = tomllib.loads(PYREFLY_CONFIG.read_text())
    stubs = src.parent / "stubs"
    search = [str(src), str(stubs if stubs.is_dir() else ROOT / "stubs")]
    lines = [f"search-path = {json.dumps(search)}"]
    for key, value in config.items():
        if key in ("project-includes", "search-path") or isinstance(value, dict):
            continue
        lines.append(f"{key} = {json.dumps(value)}")
    for table, values in config.items():
        if isinstance(values, dict):
            lines.append(f"[{table}]")
            lines += [f"{json.dumps(k)} = {json.dumps(v)}" for k, v in values.items()]
    cfg = tmp / "pyrefly" / "pyrefly.toml"
    cfg.parent.mkdir()
    cfg.write_text("\n".join(lines) + "\n")
    return cfg


def run_pyrefly(programs: list[Program], src: Path, tmp: Path) -> CheckerResult:
    """pyrefly (tests/typing/pyrefly.toml's settings) on every catalog file, ``src`` first."""
    exe = pyrefly_command()
    if exe is None:
        why = "pyrefly is not installed (pip install pyrefly pyrefly-shape-extensions)"
        return CheckerResult("pyrefly", "", skipped=why)
    cfg = pyrefly_config(tmp, src)
    files = [str(p.path) for p in programs]
    dump = subprocess.run([*exe, "dump-config", "-c", str(cfg), files[0]], capture_output=True, text=True, cwd=ROOT)
    m = re.search(r"Search path \(from config file\): \[\"([^\"]+)\"", dump.stdout)
    want = (src / "gradtape").resolve()
    if m is None or Path(m.group(1)).resolve() != src.resolve():
        sys.exit(f"pyrefly: {src} is not its first search path:\n{dump.stdout[:3000]}{dump.stderr[-3000:]}")
    cmd = [*exe, "check", "-c", str(cfg), "--output-format", "json", "--summary=none", "--relative-to", ""]
    proc = subprocess.run([*cmd, *files], capture_output=True, text=True, cwd=ROOT)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        sys.exit(f"pyrefly failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    result = CheckerResult("pyrefly", str(want))
    catalog = {str(p.path.resolve()) for p in programs}
    for d in report["errors"]:
        if d.get("severity") != "error":
            continue
        path = str((ROOT / d["path"]).resolve())
        if path not in catalog:
            result.outside.append(f"{path}:{d['line']}: {d['description']}")
            continue
        diag = Diagnostic(int(d["line"]), d.get("name", ""), " ".join(d["description"].split()))
        result.diagnostics.setdefault(path, []).append(diag)
    for diags in result.diagnostics.values():
        diags.sort(key=lambda d: d.line)
    return result


def score(programs: list[Program], result: CheckerResult) -> dict[str, Any]:
    """False alarms on valid programs; caught / missed / noisy bugs, overall and per class."""
    false_alarms: dict[str, list[dict[str, Any]]] = {}
    caught: list[str] = []
    missed: list[str] = []
    noisy: dict[str, list[dict[str, Any]]] = {}
    per_class: dict[str, dict[str, int]] = defaultdict(lambda: {"total": 0, "caught": 0, "missed": 0, "noisy": 0})
    bug_errors: dict[str, list[dict[str, Any]]] = {}
    noisy_beyond_cascade = 0
    unknown_only: list[str] = []
    for p in programs:
        diags = result.diagnostics.get(str(p.path.resolve()), [])
        if p.kind == "valid":
            if diags:
                false_alarms[p.path.name] = [asdict(d) for d in diags]
            continue
        assert p.bug_class is not None
        row = per_class[p.bug_class]
        row["total"] += 1
        on_line = [d for d in diags if d.line == p.bug_line]
        others = [d for d in diags if d.line != p.bug_line]
        bug_errors[p.path.name] = [asdict(d) for d in on_line]
        if on_line and all(_is_cascade(d) for d in on_line):
            unknown_only.append(p.path.name)  # "type is unknown" is not a shape diagnosis
        if on_line and not all(_is_cascade(d) for d in on_line):
            caught.append(p.path.name)
            row["caught"] += 1
        else:
            missed.append(p.path.name)
            row["missed"] += 1
        if others:
            noisy[p.path.name] = [asdict(d) for d in others]
            row["noisy"] += 1
            if not all(_is_cascade(d) for d in others):
                noisy_beyond_cascade += 1
    valid = [p for p in programs if p.kind == "valid"]
    return {
        "checker": result.checker,
        "gradtape": result.resolved,
        "skipped": result.skipped,
        "valid": len(valid),
        "false_alarms": len(false_alarms),
        "bugs": len(programs) - len(valid),
        "caught": len(caught),
        "missed": len(missed),
        "noisy": len(noisy),
        "noisy_beyond_unknown_cascade": noisy_beyond_cascade,
        "per_class": dict(sorted(per_class.items())),
        "false_alarm_programs": false_alarms,
        "missed_programs": {name: _class_of(programs, name) for name in missed},
        "missed_with_only_unknown_errors": unknown_only,
        "caught_errors": {k: v for k, v in bug_errors.items() if v},
        "noisy_programs": noisy,
        "errors_outside_catalog": len(result.outside),
    }


def _class_of(programs: list[Program], name: str) -> str:
    return next(p.bug_class or "" for p in programs if p.path.name == name)


def _is_cascade(d: Diagnostic | dict[str, Any]) -> bool:
    """pyright's ``reportUnknown*`` errors: a value typed ``Unknown`` (often the result of a
    call the checker already rejected) used again."""
    code = d.code if isinstance(d, Diagnostic) else d["code"]
    return str(code).startswith("reportUnknown")


def _first(diags: list[dict[str, Any]]) -> str:
    """The most telling error of a program: the first one that is not an Unknown cascade."""
    d = next((d for d in diags if not _is_cascade(d)), diags[0])
    more = f" (+{len(diags) - 1} more)" if len(diags) > 1 else ""
    return f"line {d['line']} [{d['code']}] {d['message'][:150]}{more}"


def print_report(scores: list[dict[str, Any]], src: Path, details: bool) -> None:
    """One table per checker, then a summary line per checker."""
    print(f"gradtape source: {src}")
    for s in scores:
        print(f"\n== {s['checker']} ==")
        if s["skipped"]:
            print(f"skipped: {s['skipped']}")
            continue
        print(f"gradtape resolved to {s['gradtape']}")
        print(f"valid programs: {s['valid']}, with errors (false alarms): {s['false_alarms']}")
        for name, diags in s["false_alarm_programs"].items():
            print(f"  {name}: {_first(diags)}")
        print(
            f"bug programs: {s['bugs']}, caught: {s['caught']}, missed: {s['missed']}, noisy: {s['noisy']} "
            f"({s['noisy_beyond_unknown_cascade']} with errors other than reportUnknown* cascades)"
        )
        print(f"  {'class':<18} {'total':>5} {'caught':>6} {'missed':>6} {'noisy':>5}")
        for cls, row in s["per_class"].items():
            print(f"  {cls:<18} {row['total']:>5} {row['caught']:>6} {row['missed']:>6} {row['noisy']:>5}")
        for n, c in s["missed_programs"].items():
            why = " (only reportUnknown* errors on the line)" if n in s["missed_with_only_unknown_errors"] else ""
            print(f"  missed {n} ({c}){why}")
        for name, diags in s["noisy_programs"].items():
            print(f"  noisy {name}: {_first(diags)}")
        if details:
            for name, diags in s["caught_errors"].items():
                print(f"  caught {name}: {_first(diags)}")
        if s["errors_outside_catalog"]:
            print(f"  ({s['errors_outside_catalog']} errors outside the catalog, not counted)")
    header = ("checker", "valid", "false alarms", "bugs", "caught", "missed", "noisy", "noisy*")
    print("\n{:<12} {:>5} {:>12} {:>5} {:>6} {:>6} {:>5} {:>6}".format(*header))
    for s in scores:
        if s["skipped"]:
            print(f"{s['checker']:<12} skipped: {s['skipped']}")
            continue
        print(
            f"{s['checker']:<12} {s['valid']:>5} {s['false_alarms']:>12} {s['bugs']:>5} "
            f"{s['caught']:>6} {s['missed']:>6} {s['noisy']:>5} {s['noisy_beyond_unknown_cascade']:>6}"
        )
    print("noisy*: noisy apart from pyright's reportUnknown* follow-on errors")


def main(argv: list[str] | None = None) -> int:
    """Run the checkers and print the tables (or ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the gradtape source tree (holding gradtape/)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--checkers", default=",".join(CHECKERS), help=f"comma-separated subset of {CHECKERS}")
    parser.add_argument("--details", action="store_true", help="also print the error that caught each bug")
    parser.add_argument(
        "--mypy-cache",
        type=Path,
        help="mypy's cache directory for the mypy checker (kept); default: a fresh one",
    )
    parser.add_argument(
        "--mypy-plugin-cache", type=Path, help="the same for mypy+plugin (another configuration: another directory)"
    )
    parser.add_argument(
        "--pyright-report",
        type=Path,
        help="JSON with the files, config and --outputjson report of a pyright run over the catalog "
        "and more (tests/_checkers.py), used instead of running pyright on the catalog",
    )
    args = parser.parse_args(argv)
    src: Path = args.src.resolve()
    if not (src / "gradtape" / "__init__.py").is_file():
        parser.error(f"{src} holds no gradtape package")
    chosen = [c.strip() for c in args.checkers.split(",") if c.strip()]
    unknown = sorted(set(chosen) - set(CHECKERS))
    if unknown:
        parser.error(f"unknown checkers {unknown}; choose from {CHECKERS}")
    programs = load_catalog()
    scores: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="typing-catalog-") as d:
        tmp = Path(d)

        def run(checker: str) -> CheckerResult:
            if checker == "pyright":
                return run_pyright(programs, src, tmp, args.pyright_report)
            if checker == "pyrefly":
                return run_pyrefly(programs, src, tmp)
            plugin = checker == "mypy+plugin"
            cache_dir = args.mypy_plugin_cache if plugin else args.mypy_cache
            return run_mypy(programs, src, plugin, tmp, cache_dir)

        # each checker is a process of its own (their config files differ): two at a time
        with ThreadPoolExecutor(max_workers=2) as pool:
            results = list(pool.map(run, chosen))
        scores.extend(score(programs, result) for result in results)
    if args.json:
        json.dump({"src": str(src), "checkers": scores}, sys.stdout, indent=2)
        print()
    else:
        print_report(scores, src, args.details)
    return 0


if __name__ == "__main__":
    sys.exit(main())
