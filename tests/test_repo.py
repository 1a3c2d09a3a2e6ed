"""The repository's promises: README's commands are what CI runs, README's code runs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _sh_blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", README, flags=re.S)


def _py_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README, flags=re.S)


def test_readme_has_the_two_commands() -> None:
    """README names the main job and the test command."""
    cmds = [line.strip() for block in _sh_blocks() for line in block.splitlines() if line.strip()]
    assert any("python -m gradtape.examples.digits" in c for c in cmds)
    assert any("python -m pytest" in c for c in cmds)


def test_ci_runs_readmes_exact_test_command() -> None:
    """.ci/run calls README's test command verbatim, so a missing install step fails in CI."""
    test_cmd = next(line.strip() for block in _sh_blocks() for line in block.splitlines() if "python -m pytest" in line)
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test_cmd in [line.strip() for line in ci]


def test_readme_first_look_runs() -> None:
    """The first example trains nothing but must run and give a gradient of w's shape."""
    block = next(b for b in _py_blocks() if "cross_entropy" in b)
    ns: dict[str, object] = {"print": lambda *a: None}
    exec(compile(block, "README.md:first-look", "exec"), ns)
    grads = ns["grads"]
    w = ns["w"]
    assert grads.get(w).shape == (3, 2)  # type: ignore[attr-defined]


def test_readme_fused_op_example_runs_and_gradchecks() -> None:
    """The hand-written fused op in README passes gradcheck (the block asserts it)."""
    block = next(b for b in _py_blocks() if "def square" in b)
    ns: dict[str, object] = {}
    exec(compile(block, "README.md:fused-op", "exec"), ns)
    square = ns["square"]
    from gradtape import Cpu

    dev = Cpu(seed=3)
    x = dev.tensor([[1.0, -2.0], [3.0, 0.5]]).leaky_trace()
    g = square(x).sum().backward()  # type: ignore[operator]
    assert g.get(x).numpy().tolist() == [[2.0, -4.0], [6.0, 1.0]]
