"""The typing catalog (tests/typing/catalog) as a test: realistic valid programs get no report
from mypy (with gradtape's plugin, as README recommends), pyright strict and pyrefly (strict
preset, tests/typing/pyrefly.toml), and the shape bugs each checker catches stay caught.
pyrefly's cases are skipped where it is not installed.

scripts/typing_catalog.py runs the checkers and counts; this test pins its results. It runs with
the session's mypy caches and pyright report (tests/_checkers.py), so that gradtape is not
analysed again for the catalog. When a
change makes a checker catch a bug it missed, remove the bug from ``MISSED`` (the test says
so); a newly missed bug or any false alarm fails.
"""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import _checkers
import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECKERS = ("mypy", "mypy+plugin", "pyright", "pyrefly")

FALSE_ALARMS: dict[str, set[str]] = {
    # mypy's default rejects rebinding a name to another type (h = layer(h) with a new
    # width); README recommends allow_redefinition = true, which mypy+plugin uses
    "mypy": {"ok_typed_three_layers.py"},
    "mypy+plugin": set(),
    "pyright": set(),
    "pyrefly": set(),
}

_UNANNOTATED_LAYERS = {
    # a layer built without an annotated target has int (run-time) widths, so that lists of
    # layers of different widths stay one type; annotate the attribute to have it checked
    "bug_attention_width_mha.py",
    "bug_attention_width_transformer.py",
    "bug_conv_channels_layers.py",
    "bug_conv_channels_module.py",
    "bug_embedding_dim_module.py",
    "bug_embedding_dim_posadd.py",
    "bug_linear_width_untyped.py",
}
_SEQUENTIAL = {"bug_sequential_chain.py", "bug_sequential_chain_cnn.py", "bug_sequential_chain_typed_input.py"}
# realize checks Literal dims at run time; the plugin rejects a literal dim that contradicts one
_RUN_TIME_ONLY = {"bug_realize_dim.py"}
_NEEDS_PLUGIN = {
    # dim arithmetic, inline literal shapes and model(x): mypy's plugin computes them
    "bug_broadcast_keepdims_missing.py",
    "bug_concat_dims_typed.py",
    "bug_concat_dims_untyped.py",
    "bug_concat_stack_shapes.py",
    "bug_elementwise_untyped.py",
    "bug_linear_width_module_call.py",
    "bug_loss_target_untyped.py",
    "bug_matmul_inner_untyped.py",
    "bug_reshape_count_flatten.py",
    "bug_reshape_count_heads.py",
    "bug_reshape_count_typed.py",
}
MISSED: dict[str, set[str]] = {
    "mypy": _UNANNOTATED_LAYERS | _SEQUENTIAL | _RUN_TIME_ONLY | _NEEDS_PLUGIN,
    # the plugin checks a layer's call against the widths its constructor got, and a
    # Sequential's call layer by layer (convolution and pooling sizes, Flatten's product); a
    # broken chain of widths is reported at its constructor, not at the call the catalog marks
    # (a layer called on a tensor of literal dims, dev.randn((8, 32)), gives its literal width
    # even without an expected type); an embedding's numpy indices give no literal dims
    "mypy+plugin": (
        _UNANNOTATED_LAYERS
        - {"bug_attention_width_mha.py", "bug_conv_channels_layers.py", "bug_linear_width_untyped.py"}
    )
    | (_SEQUENTIAL - {"bug_sequential_chain_typed_input.py", "bug_sequential_chain_cnn.py"}),
    # pyright has no plugin; it keeps inline literals itself, and misses realize's rank where
    # the tensor's dims are int (it treats tuple[int, ...] as any int tuple)
    "pyright": _UNANNOTATED_LAYERS
    | _SEQUENTIAL
    | _RUN_TIME_ONLY
    | {
        "bug_concat_dims_typed.py",
        "bug_concat_dims_untyped.py",
        "bug_concat_stack_shapes.py",
        "bug_linear_width_module_call.py",
        "bug_realize_rank.py",
        "bug_realize_scalar.py",
        "bug_reshape_count_flatten.py",
        "bug_reshape_count_heads.py",
        "bug_reshape_count_typed.py",
    },
    # pyrefly has no plugin, and widens the literal dims of an inline shape to int as mypy
    # does (but catches realize's rank where pyright does not)
    "pyrefly": _UNANNOTATED_LAYERS | _SEQUENTIAL | _RUN_TIME_ONLY | _NEEDS_PLUGIN | {"bug_realize_scalar.py"},
}


@cache
def _scores() -> dict[str, dict[str, Any]]:
    _checkers.project_cache_ready()  # the project's cache: test_static's whole tree first, if it runs
    _checkers.mypy_plugin_cache_ready()  # the plugin cache's first run is done (not two writers)
    script = str(ROOT / "scripts" / "typing_catalog.py")
    cmd = [sys.executable, script, "--json", "--mypy-cache", str(_checkers.MYPY_CACHE)]
    cmd += ["--mypy-plugin-cache", str(_checkers.PLUGIN_CACHE)]
    shared = _checkers.pyright_report_file()
    if shared is not None:
        cmd += ["--pyright-report", str(shared)]
    out = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    ).stdout
    return {c["checker"]: c for c in json.loads(out)["checkers"]}


def _score(checker: str) -> dict[str, Any]:
    """One checker's counts; skips the test where the script skipped the checker."""
    got = _scores()[checker]
    if got["skipped"]:
        pytest.skip(f"{checker}: {got['skipped']}")
    return got


def test_the_catalog_is_large_enough() -> None:
    valid = list((ROOT / "tests" / "typing" / "catalog" / "valid").glob("ok_*.py"))
    bugs = list((ROOT / "tests" / "typing" / "catalog" / "bugs").glob("bug_*.py"))
    assert len(valid) >= 60 and len(bugs) >= 45
    listed = set().union(*MISSED.values(), *FALSE_ALARMS.values())
    assert listed <= {p.name for p in valid + bugs}, sorted(listed - {p.name for p in valid + bugs})


@pytest.mark.parametrize("checker", CHECKERS)
def test_no_false_alarm_on_valid_programs(checker: str) -> None:
    got = set(_score(checker)["false_alarm_programs"])
    assert got <= FALSE_ALARMS[checker], {k: _score(checker)["false_alarm_programs"][k] for k in got}
    assert got == FALSE_ALARMS[checker], f"{checker} no longer flags {FALSE_ALARMS[checker] - got}: shrink FALSE_ALARMS"


@pytest.mark.parametrize("checker", CHECKERS)
def test_caught_bugs_stay_caught(checker: str) -> None:
    missed = set(_score(checker)["missed_programs"])
    assert missed <= MISSED[checker], f"{checker} now misses {sorted(missed - MISSED[checker])}"
    assert missed == MISSED[checker], f"{checker} now catches {sorted(MISSED[checker] - missed)}: shrink MISSED"
