"""``gradtape.mypy_plugin``: the programs in tests/typing/plugin under mypy --strict, with the
plugin and without it.

With the plugin, each line ending ``# P: <error-code>`` must be rejected with that code and no
other line may be (a false alarm fails); a line ending ``# R: <text>`` must make
``reveal_type`` print a type containing ``<text>``. Without the plugin the same programs must
type-check with no error (the plugin only adds checks, never needs code changes), except the
lines ending ``# M: <error-code>``: false alarms of mypy alone that the plugin removes (a
constant like ``8 * 13 * 13`` that mypy widens to ``int``), which mypy without the plugin must
still reject with that code and the plugin must accept. pyright accepts every program
(tests/test_pyright.py).
"""

from __future__ import annotations

import re
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import _checkers
import pytest

ROOT = Path(__file__).resolve().parents[1]
PLUGIN_DIR = Path(__file__).resolve().parent / "typing" / "plugin"
PROGRAMS = sorted(PLUGIN_DIR.glob("*.py"))


_LINE = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): (?P<kind>error|note): (?P<msg>.*?)(?:  \[(?P<code>[\w-]+)\])?$")


@cache
def _run_paths(paths: tuple[Path, ...], plugin: bool) -> dict[Path, list[tuple[int, str, str, str]]]:
    """mypy's errors and notes on ``paths`` (files or folders), one run per mode, by file as
    ``(line, kind, code, message)``. With the plugin: README's recommended configuration (strict,
    the plugin, allow_redefinition; the optional peers skipped as in pyproject.toml); without:
    the project's (pyproject.toml: strict, overrides only for gradtape's own modules and the
    optional peers). Each kind shares its mypy cache with the rest of the typing suite
    (tests/_checkers.py), so gradtape is analysed once; the run of tests/typing/plugin with the
    plugin is made in the background at the session's start."""
    config = _checkers.readme_mypy_config() if plugin else ROOT / "pyproject.toml"
    args = ["--config-file", str(config), "--no-error-summary", "--hide-error-context"] + [str(p) for p in paths]
    if plugin and paths == tuple(PROGRAMS):
        assert args == _checkers.plugin_programs_args()  # the session's first plugin run, made in the background
    out, err, _ = _checkers.mypy(args, plugin=plugin)
    assert not err, err
    found: dict[Path, list[tuple[int, str, str, str]]] = {}
    for raw in out.splitlines():
        m = _LINE.match(raw)
        assert m, f"unparsed mypy output: {raw}"
        found.setdefault(Path(m["path"]).resolve(), []).append((int(m["line"]), m["kind"], m["code"] or "", m["msg"]))
    return found


def _run(path: Path, plugin: bool) -> list[tuple[int, str, str, str]]:
    """mypy's errors and notes on one program of tests/typing/plugin (all of them are checked
    in one run per mode), or on a folder (its own run; messages prefixed with the file)."""
    if path in PROGRAMS:
        return _run_paths(tuple(PROGRAMS), plugin).get(path.resolve(), [])
    return [
        (line, kind, code, f"{file.name}:{line}: {msg}")
        for file, items in _run_paths((path,), plugin).items()
        for line, kind, code, msg in items
    ]


def _marks(path: Path, tag: str) -> dict[int, str]:
    mark = re.compile(rf"  # {tag}: (?P<text>.+)$")  # a code comment after code, not prose
    marks: dict[int, str] = {}
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        m = mark.search(line)
        if m and not line.lstrip().startswith("#"):
            marks[n] = m["text"].strip()
    return marks


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.name)
def test_with_plugin(path: Path) -> None:
    found = _run(path, True)
    errors = {line: code for line, kind, code, _ in found if kind == "error"}
    assert errors == _marks(path, "P"), f"{path.name}: errors with the plugin:\n{found}"
    reveals = {line: msg for line, kind, _, msg in found if kind == "note" and msg.startswith("Revealed type")}
    for line, want in _marks(path, "R").items():
        assert want in reveals.get(line, ""), f"{path.name}:{line}: want {want!r}, got {reveals.get(line)!r}"


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.name)
def test_without_plugin_no_false_alarm(path: Path) -> None:
    found = _run(path, False)
    errors = {line: code for line, kind, code, _ in found if kind == "error"}
    assert errors == _marks(path, "M"), f"{path.name}: errors without the plugin:\n{found}"


SHAPE_ERRORS = {
    "reshape.py": [
        "reshape: cannot reshape (8, 5) (40 elements) to (6, 7) (42 elements)",
        "reshape: cannot reshape (8, 5) (40 elements) to (6, -1): 40 is not a multiple of 6",
        "reshape: invalid target shape (-1, -1) for a tensor of shape (8, 5) "
        "(dims must be >= 0, at most one may be -1)",
        "reshape: cannot reshape (8, 5) (40 elements) to (41,) (41 elements)",
    ],
    "concat_stack.py": [
        "concat: tensors of shapes (2, 3) and (4, 3) differ in dim 0 (joined along axis 1)",
        "concat: tensors of shapes (2, 3) and (4, 3) differ in dim 0 (joined along axis 1)",  # cat(dim=1)
        "concat: tensors of shapes (2, 3) and (4, 3) differ in dim 0 (joined along axis 1)",  # concat(dim=1)
        "concat: tensors of shapes (2, 3) and (2, 3, 1) have different ranks",
        "stack: tensors of shapes (2, 3) and (2, 5) differ in dim 1 (joined)",
        "concat: axis 2 is out of range for tensors of shape (2, 3) (valid axes: -2 to 1)",
        "stack: a list of 2 tensors of shape (2, 3) gives (2, 2, 3) (axis 0), the expected type has 5 there",
    ],
    "realize.py": [
        "realize: dim 1 of shape (32, 60) is 60, the type (Batch, 64) wants 64",
        "realize: dim 0 of shape (32, 60) is 32, the type (31, int) wants 31",
        "realize: dim 0 of shape (5,) is 5, the type (4,) wants 4",
        "realize: dim 1 of shape (int, 60) is 60, the type (3, 64) wants 64",
    ],
    "layer_calls.py": [
        "LayerNorm[64] called on a tensor of shape (int, 32): its last dim is 32, the layer takes 64",
        "LayerNorm[64] called on a tensor of shape (int, 32): its last dim is 32, the layer takes 64",
        "RMSNorm[64] called on a tensor of shape (int, 32): its last dim is 32, the layer takes 64",
        "Linear[64, 10] called on a tensor of shape (int, 32): its last dim is 32, the layer takes 64",
        "Linear[64, 10] called on a tensor of shape (8, 128): its last dim is 128, the layer takes 64",
        "Conv2d[16, 32] called on a tensor of shape (2, 8, 8, 8): its channel dim 1 is 8, the layer takes 16",
        "MultiHeadAttention[32] called on a tensor of shape (int, int, 16): its last dim is 16, the layer takes 32",
        "MultiHeadAttention[32] called on a tensor of shape (int, int, 16): its last dim is 16, the layer takes 32",
        "Conv2d[3, 16] called on a tensor of shape (int, 1, 28, 28): its channel dim 1 is 1, the layer takes 3",
        "Linear[16, 4] called on a tensor of shape (5, 2, 32): its last dim is 32, the layer takes 16",
        "LSTM[8, 16, 32] called on a tensor of shape (int, 32): its last dim is 32, the layer takes 8",
        "LayerNorm[64] called on a tensor of shape (B, 32): its last dim is 32, the layer takes 64",
        "Linear[64, 10] called on a tensor of shape (B, 32): its last dim is 32, the layer takes 64",
    ],
    "sequential.py": [
        "Sequential: layer 2 (Linear[16, 10]) takes 16 features, but layer 0 (Linear[64, 32]) gives 32",
        "Sequential: layer 1 (LayerNorm[16]) takes 16 features, but layer 0 (Linear[64, 32]) gives 32",
        "Sequential: layer 2 (Conv2d[16, 4]) takes 16 channels, but layer 0 (Conv2d[1, 8]) gives 8",
        "Sequential: layer 1 (Linear[64, 4]) takes 64 features, but layer 0 (Embedding[100, 32]) gives 32",
        "Sequential: layer 0: Linear[8, 16] cannot take a tensor of shape (3, 10): Argument 1 has incompatible type"
        ' "Tensor[tuple[Literal[3], Literal[10]], NoneTape]";'
        ' expected "Tensor[tuple[Literal[3], Literal[8]], NoneTape]"',
        "Sequential: layer 0: Linear[8, 16] called on a tensor of shape (3, 10): its last dim is 10, the layer takes 8",
        "Sequential: layer 3: Linear[128, 10] called on a tensor of shape (2, 72):"
        " its last dim is 72, the layer takes 128",
    ],
    "squeeze.py": [
        "squeeze: axis 0 of shape (4, 1) has size 4, not 1",
        "squeeze: axis 0 of shape (4, 1) has size 4, not 1",
        "squeeze: axis 2 is out of range for a tensor of shape (4, 1)",
        "squeeze: axis 2 of shape (int, 1, 5) has size 5, not 1",
    ],
    "conv_pool.py": [
        "conv2d: output size (0, 0) is not positive: input (1, 1, 2, 2), weight (8, 1, 3, 3), kernel (3, 3), "
        "stride (1, 1), padding (0, 0), dilation (1, 1)",
        "conv2d: output size (-1, -1) is not positive: input (1, 1, 5, 5), weight (8, 1, 3, 3), kernel (3, 3), "
        "stride (1, 1), padding (0, 0), dilation (3, 3)",
        "max_pool2d: output size (0, 0) is not positive: input (1, 1, 2, 2), kernel (3, 3), stride (3, 3), "
        "padding (0, 0)",
        "max_pool2d: padding (2, 2) is more than half the kernel (3, 3)",
        "upscale2d: output size (0, 0) is not positive: input (4, 8, 13, 13), scale_factor (0.05, 0.05)",
    ],
}


@pytest.mark.parametrize("name", sorted(SHAPE_ERRORS))
def test_shape_errors_name_the_shapes(name: str) -> None:
    """Each ``gradtape-shape`` error names the op and the shapes (and a convolution's parameters)."""
    got = sorted(msg for _, kind, code, msg in _run(PLUGIN_DIR / name, True) if code == "gradtape-shape")
    assert got == sorted(SHAPE_ERRORS[name])


def test_pass_programs_no_false_alarm_with_plugin() -> None:
    """The programs mypy alone accepts (tests/typing/pass) are accepted with the plugin too: the
    literal dims it keeps and the sizes it computes add no error to valid typed code."""
    errors = [msg for _, kind, _, msg in _run(PLUGIN_DIR.parent / "pass", True) if kind == "error"]
    assert not errors, "\n".join(errors)


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


def test_results_do_not_depend_on_gradtape_coming_from_the_cache(tmp_path: Path) -> None:
    """mypy run twice on a new cache, gradtape analysed in the first run (fresh) and read from
    the cache in the second (the program changed, so that it alone is checked again), types the
    concat/stack program alike, and as the session's run does (whose cache is kept between
    sessions): the plugin no longer loses ``cat``'s default ``dim=0`` (read from gradtape's
    syntax tree, which mypy's cache does not keep, a cached run gave ``(int, 3)`` where a fresh
    one gave ``(6, 3)``)."""
    source = PLUGIN_DIR / "concat_stack.py"
    session = _run(source, True)
    config = ["--config-file", str(_checkers.readme_mypy_config()), "--no-error-summary", "--hide-error-context"]
    cache = ["--cache-dir", str(tmp_path / "cache")]
    program = tmp_path / "concat_stack.py"
    results: list[list[tuple[int, str, str, str]]] = []
    for text in (source.read_text(), source.read_text() + "# checked again, gradtape from the cache\n"):
        program.write_text(text)
        # a process of its own, as a user's run: the fresh analysis's objects end with it
        proc = subprocess.run(
            [sys.executable, "-m", "mypy", *config, *cache, "-v", str(program)],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        out, err = proc.stdout, proc.stderr
        fresh = [m.group(1) for m in re.finditer(r"^LOG:  Metadata fresh for (gradtape\.ops\.shape):", err, re.M)]
        want = ["gradtape.ops.shape"] if results else []  # the second run reads gradtape from the cache
        assert fresh == want, f"run {len(results) + 1}: gradtape's ops.shape from the cache: {bool(fresh)}"
        assert not [line for line in err.splitlines() if line.strip() and not line.startswith("LOG:")], err
        found = []
        for raw in out.splitlines():
            m = _LINE.match(raw)
            assert m, f"unparsed mypy output: {raw}"
            found.append((int(m["line"]), m["kind"], m["code"] or "", m["msg"]))
        results.append(found)
    fresh_run, cached_run = results
    assert cached_run == fresh_run
    assert session == fresh_run
