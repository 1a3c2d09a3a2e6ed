"""The repository's promises: README's commands are what CI runs, README's code runs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

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
    """The first example is PyTorch's loop: it runs, fills every parameter's .grad, moves the
    parameters, and predicts under no_grad without recording."""
    block = next(b for b in _py_blocks() if "opt.zero_grad()" in b)
    ns: dict[str, object] = {"print": lambda *a: None, "__name__": "readme"}
    exec(compile(block, "README.md:first-look", "exec"), ns)
    model: Any = ns["model"]
    assert [p.grad.shape for p in model.parameters()] == [p.shape for p in model.parameters()]
    assert ns["pred"].shape == (16,)  # type: ignore[attr-defined]


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


def test_readme_recording_spellings_agree() -> None:
    """The three spellings in README record the same model: dfdx's and TensorFlow's give the
    same parameter gradients, and no_grad records nothing."""
    import numpy as np

    block = next(b for b in _py_blocks() if "with GradientTape() as tape" in b)
    ns: dict[str, object] = {}
    exec(compile(block, "README.md:recording", "exec"), ns)
    model, grads, tape_grads = ns["model"], ns["grads"], ns["weight_grads"]
    params = model.parameters()  # type: ignore[attr-defined]
    assert len(params) == len(tape_grads) == 6  # type: ignore[arg-type]
    torch_grads: Any = ns["torch_grads"]
    for p, g, tg in zip(params, tape_grads, torch_grads, strict=True):  # type: ignore[call-overload]
        np.testing.assert_allclose(grads.get(p).numpy(), g.numpy(), rtol=1e-5, atol=1e-6)  # type: ignore[attr-defined]
        np.testing.assert_allclose(tg, g.numpy(), rtol=1e-5, atol=1e-6)
        assert np.abs(g.numpy()).max() > 0


def _mypy(tmp_path: Path, name: str, source: str) -> str:
    """mypy --strict with the configuration README's typing section recommends (the project's
    own, plus gradtape's plugin and allow_redefinition, as the toml block there says)."""
    import _checkers

    toml = re.search(r"```toml\n(\[tool\.mypy\]\n.*?)```", README, flags=re.S)
    assert toml is not None and 'plugins = ["gradtape.mypy_plugin"]' in toml.group(1)
    config = tmp_path / "mypy.toml"
    config.write_text(toml.group(1) + f'mypy_path = "{(ROOT / "stubs").as_posix()}"\npython_version = "3.11"\n')
    path = tmp_path / name
    path.write_text(source)
    # the session's cache for plugin configurations (tests/_checkers.py): gradtape analysed once
    out, err, _ = _checkers.mypy(["--config-file", str(config), "--no-error-summary", str(path)], plugin=True)
    assert not err, err
    return out


def test_readme_typed_model_checks_runs_and_reveals_its_shape(tmp_path: Path) -> None:
    """README's end-to-end typed model passes mypy --strict, reveals the exact output
    type its comment states, and runs."""
    block = next(b for b in _py_blocks() if "class MLP(nn.Module)" in b)
    out = _mypy(tmp_path, "readme_model.py", block + "reveal_type(logits)\n")
    lines = out.strip().splitlines()
    assert len(lines) == 1 and "note: Revealed type is" in lines[0], out
    stated = re.search(r"# reveal_type\(logits\): (.+)", block)
    assert stated is not None
    assert stated.group(1).replace("Batch", "readme_model.Batch") in lines[0].replace("gradtape.tensor.", "").replace(
        "gradtape.tape.", ""
    )
    ns: dict[str, object] = {"__name__": "readme_model"}
    exec(compile(block, "README.md:typed-model", "exec"), ns)
    assert ns["logits"].shape == (32, 10)  # type: ignore[attr-defined]


def test_readme_quotes_what_mypy_says_for_a_wrong_inner_dim(tmp_path: Path) -> None:
    """The error README quotes is the one mypy prints for the model with fc2's inner dim
    changed to 100."""
    block = next(b for b in _py_blocks() if "class MLP(nn.Module)" in b)
    bad = block.replace("nn.Linear[L[128], L[10]] = nn.Linear(128, 10", "nn.Linear[L[100], L[10]] = nn.Linear(100, 10")
    assert bad != block
    out = _mypy(tmp_path, "readme_bad.py", bad)
    quoted = re.search(r"```text\n(error: .*?)```", README, flags=re.S)
    assert quoted is not None
    want = " ".join(quoted.group(1).split())
    errors = [" ".join(line.split(": ", 1)[1].split()) for line in out.splitlines() if ": error:" in line]
    assert errors == [want], (errors, want)


def test_gradtape_imports_and_trains_with_its_required_dependencies_only() -> None:
    """README's main command installs ``.[examples]`` only: ``import gradtape`` and a training
    step must not need a package that only the test extra brings (typing_extensions came with
    mypy, so CI passed while a fresh ``pip install -e '.[examples]'`` failed at import)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "for m in ('typing_extensions', 'mypy', 'pytest', 'hypothesis', 'torch', 'jax', 'mpi4py', 'pyright',\n"
        "          'sklearn', 'tqdm', 'matplotlib'):\n"
        "    sys.modules[m] = None  # importing any of them now raises ImportError\n"
        "import gradtape\n"
        "from gradtape import nn, optim\n"
        "model = nn.Linear(3, 2)\n"
        "opt = optim.SGD(model.parameters(), lr=0.1)\n"
        "model(gradtape.randn(4, 3)).square().sum().backward()\n"
        "opt.step()\n"
        "print('trained')\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0 and "trained" in run.stdout, run.stderr[-2000:]
