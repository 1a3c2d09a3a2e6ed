"""gradtape's modules import only downward (DESIGN.md, "Layout"), read from the source with
``ast`` (nothing is imported).

Every gradtape import counts: at module level or inside a function, relative or absolute,
``import gradtape.x`` or ``from gradtape.x import y`` (``y`` a submodule or a name of ``x``).
Only imports under ``if TYPE_CHECKING:`` are exempt: annotations may name any layer. The
test fails, naming the file, the line and both modules, on

(a) an import from a lower layer of :data:`LAYERS` into a higher one, and
(b) an import cycle, among the imports that run (module level and function level).

A lower layer that needs something of a higher one at run time is handed it: the higher
module registers it in a slot of the lower one when it is imported (``gradtape.tensor`` puts
the ``Tensor`` class in ``gradtape.tape._Tensor``, ``gradtape.engine`` the backward that
``GradientTape.execute`` runs in ``gradtape.tape._execute``, ``gradtape.hooks`` its checked
backward loop in ``gradtape.engine``, ``gradtape.context_tape`` the TensorFlow methods of
``GradientTape`` in ``gradtape.tape``), and the package's ``__init__`` imports every layer.

Importing ``a.b.c`` also runs the packages ``a`` and ``a.b``; those are not counted as imports
(the package ``gradtape`` imports everything, so every module would be in a cycle with it).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

# The layers, bottom up: a module may import its own layer and the layers below it. An entry
# ``pkg.*`` is the package ``pkg`` and every module under it; any other entry is one module.
# Every module of src/gradtape must match exactly one entry (a new module gets a place here).
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # errors raised everywhere; the shape types and run-time shape checks; the OpenBLAS
    # thread settings the package sets before numpy loads; PyTorch's dtype names; which memory
    # an array lives in (numpy or CuPy: devices._arrays)
    (
        "leaves",
        ("gradtape.errors", "gradtape.shapes", "gradtape._openblas_env", "gradtape.dtypes", "gradtape.devices._arrays"),
    ),
    # the Cpu device's numba kernels: arrays in, arrays out (the gradient store runs some)
    ("kernels", ("gradtape.devices.kernels.*",)),
    # the core: tape kinds and their record/append/merge, the entry format, the recording rule
    # (op_tape), grad modes; the type variables bound by the tape kinds
    ("tape", ("gradtape.tape", "gradtape.grad_mode", "gradtape._typing")),
    # the Gradients store backward fills (core too)
    ("gradients", ("gradtape.gradients",)),
    # the backward engine: backprop (first order and differentiable), the stores' side of .grad
    ("engine", ("gradtape.engine",)),
    # plugged into the engine: hooks and anomaly mode (their checking backward loop)
    ("hooks", ("gradtape.hooks",)),
    # one module per op family, the op-writing rules (ops._util) and custom ops (ops._function)
    ("ops", ("gradtape.ops.*",)),
    # Tensor[S, T] and its method table (bound to the ops)
    ("tensor", ("gradtape.tensor",)),
    # the Device protocol and Cpu, which make tensors (Cpu's kernels are the second layer);
    # the default device (PyTorch's manual_seed and default device); the Cuda device
    (
        "devices",
        (
            "gradtape.devices",
            "gradtape.devices.base",
            "gradtape.devices.cpu",
            "gradtape.devices.cuda",
            "gradtape.devices.default",
        ),
    ),
    # the front ends: PyTorch's autograd (grad, Function), TensorFlow's context tape, Burn's
    # autodiff, functional transforms, gradcheck; PyTorch's creation functions and the ops
    # whose torch.* spelling differs from gradtape.ops', and torch's functions composed of
    # gradtape ops (the package's top re-exports them)
    (
        "front ends",
        (
            "gradtape.creation",
            "gradtape._torch_ops",
            "gradtape._torch_more",
            "gradtape._torch_stats",
            "gradtape.cuda",
            "gradtape.serialization",
            "gradtape.autograd",
            "gradtape.context_tape",
            "gradtape.autodiff",
            "gradtape.functional",
            "gradtape.autograd.functional",
            "gradtape.func",
            "gradtape.testing",
        ),
    ),
    # built on the above (gradtape.data: PyTorch's Dataset/DataLoader; gradtape.distributions;
    # gradtape.linalg: PyTorch's torch.linalg, on the ops)
    # (the losses' generated typing signatures sit with them)
    (
        "library",
        (
            "gradtape.nn.*",
            "gradtape.optim.*",
            "gradtape.losses",
            "gradtape.linalg",
            "gradtape.special",
            "gradtape._signatures.*",
            "gradtape.data",
            "gradtape.distributions",
            "gradtape._einops",
        ),
    ),
    # whole-step tools
    ("whole-step tools", ("gradtape.checkpointing", "gradtape.distributed", "gradtape.capturing")),
    # the package itself (imports every layer), PyTorch's torch.utils paths (names of the data
    # layer and the whole-step tools), runnable programs, the mypy plugin (imports only mypy)
    ("top", ("gradtape", "gradtape.utils.*", "gradtape.examples.*", "gradtape.mypy_plugin")),
]

# Known exceptions, to be removed: (file under src/, imported module). Each must still be an
# upward import or close a cycle, or the test fails asking to drop it. None left.
ALLOWED: frozenset[tuple[str, str]] = frozenset()


@dataclass(frozen=True)
class Source:
    """A module's file (relative to src/), text and whether it is a package's ``__init__``."""

    path: str
    text: str
    is_package: bool


@dataclass(frozen=True)
class Import:
    """One import of a gradtape module by another."""

    importer: str
    target: str
    path: str
    line: int
    in_function: bool
    type_checking: bool

    def where(self) -> str:
        return f"{self.path}:{self.line}"


def read_sources(src: Path = SRC) -> dict[str, Source]:
    """Every module under ``src/gradtape``, by dotted name."""
    out: dict[str, Source] = {}
    for p in sorted((src / "gradtape").rglob("*.py")):
        rel = p.relative_to(src)
        parts = list(rel.with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        out[".".join(parts)] = Source(rel.as_posix(), p.read_text(), is_package)
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(
    node: ast.AST, in_function: bool = False, type_checking: bool = False
) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool, bool]]:
    """Each import statement under ``node``, whether it sits inside a function (or lambda)
    and whether under ``if TYPE_CHECKING:`` (not its ``else``)."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node, in_function, type_checking
        return
    if isinstance(node, ast.If) and _is_type_checking(node.test):
        for stmt in node.body:
            yield from _import_nodes(stmt, in_function, True)
        for stmt in node.orelse:
            yield from _import_nodes(stmt, in_function, type_checking)
        return
    inner = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
    for child in ast.iter_child_nodes(node):
        yield from _import_nodes(child, inner, type_checking)


def _is_gradtape(name: str) -> bool:
    return name == "gradtape" or name.startswith("gradtape.")


def collect_imports(modules: Mapping[str, Source]) -> list[Import]:
    """Every gradtape import of every module, resolved to the module it runs.

    Raises:
        AssertionError: an import names a gradtape module that does not exist.
    """
    out: list[Import] = []
    for name, src in modules.items():
        tree = ast.parse(src.text, filename=src.path)
        for node, in_function, tc in _import_nodes(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names if _is_gradtape(a.name)]
            else:
                if node.level:
                    pkg = name.split(".") if src.is_package else name.split(".")[:-1]
                    pkg = pkg[: len(pkg) - (node.level - 1)]
                    base = ".".join(pkg + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                if not _is_gradtape(base):
                    continue
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in modules else base)
            for target in dict.fromkeys(targets):  # one per module a statement imports
                assert target in modules, f"{src.path}:{node.lineno}: imports {target}, which is not a gradtape module"
                out.append(Import(name, target, src.path, node.lineno, in_function, tc))
    return out


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of the one entry that matches ``module``.

    Raises:
        AssertionError: no entry or several match.
    """
    found = [
        k
        for k, (_, entries) in enumerate(LAYERS)
        for e in entries
        if module == e or (e.endswith(".*") and (module == e[:-2] or module.startswith(e[:-1])))
    ]
    assert len(found) == 1, f"{module} matches {len(found)} entries of LAYERS (each module needs exactly one)"
    return found[0]


def _describe(imp: Import) -> str:
    kind = "inside a function" if imp.in_function else "at module level"
    lo, hi = LAYERS[layer_of(imp.importer)][0], LAYERS[layer_of(imp.target)][0]
    return f"{imp.where()}: {imp.importer} ({lo}) imports {imp.target} ({hi}) {kind}"


def upward(imports: list[Import]) -> list[Import]:
    """The imports that run and point from a lower layer to a higher one."""
    return [i for i in imports if not i.type_checking and layer_of(i.target) > layer_of(i.importer)]


def cycles(imports: list[Import]) -> list[list[Import]]:
    """The groups of modules that import each other (strongly connected components of the
    imports that run), each as every import inside it."""
    edges: dict[str, set[str]] = {}
    for i in imports:
        if not i.type_checking and i.importer != i.target:
            edges.setdefault(i.importer, set()).add(i.target)
    # Tarjan's strongly connected components
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    runs = [i for i in imports if not i.type_checking and i.importer != i.target]
    return [
        sorted((i for i in runs if i.importer in g and i.target in g), key=lambda i: (i.path, i.line, i.target))
        for g in groups
    ]


def check(modules: Mapping[str, Source], allowed: frozenset[tuple[str, str]] = ALLOWED) -> list[str]:
    """The problems: upward imports, cycles, and entries of ``allowed`` that excuse neither."""
    imports = collect_imports(modules)
    excused = [i for i in imports if (i.path, i.target) in allowed]
    kept = [i for i in imports if (i.path, i.target) not in allowed]
    problems = [_describe(i) for i in upward(kept)]
    for cycle in cycles(kept):
        names = sorted({i.importer for i in cycle})
        problems.append(f"import cycle among {', '.join(names)}:" + "".join(f"\n    {_describe(i)}" for i in cycle))
    needed = {(i.path, i.target) for i in upward(excused)} | {
        (i.path, i.target) for c in cycles(imports) for i in c if (i.path, i.target) in allowed
    }
    for path, target in sorted(allowed - needed):
        problems.append(f"ALLOWED lists ({path!r}, {target!r}), which is no longer an upward import: remove it")
    return problems


def test_gradtape_imports_only_downward() -> None:
    """No module imports a higher layer or closes an import cycle (TYPE_CHECKING exempt)."""
    problems = check(read_sources())
    assert not problems, "\n".join(problems)


def test_every_module_has_one_layer_and_every_entry_a_module() -> None:
    """The table places each module once, and names no module that is gone."""
    modules = read_sources()
    for m in modules:
        layer_of(m)
    for _, entries in LAYERS:
        for e in entries:
            assert any(m == e or (e.endswith(".*") and m == e[:-2]) for m in modules), f"LAYERS names {e}: no module"


def test_the_checker_reports_what_it_must() -> None:
    """The walker on a made-up package: relative, absolute and submodule imports resolve, a
    TYPE_CHECKING import is exempt, an upward import inside a function is reported with its
    file and line, a cycle through function-level imports is reported, and a stale entry of
    the allow-list is reported."""

    def mod(path: str, text: str) -> Source:
        return Source(path, text, path.endswith("__init__.py"))

    fake = {
        "gradtape": mod("gradtape/__init__.py", "from gradtape import tape\nimport gradtape.tensor\n"),
        "gradtape.errors": mod("gradtape/errors.py", ""),
        "gradtape.tape": mod(
            "gradtape/tape.py",
            "from typing import TYPE_CHECKING\n"
            "from . import errors\n"
            "if TYPE_CHECKING:\n"
            "    from gradtape.tensor import Tensor\n"
            "else:\n"
            "    from gradtape.errors import TapeError\n"
            "def f():\n"
            "    from gradtape.tensor import Tensor\n"
            "    return Tensor\n",
        ),
        "gradtape.tensor": mod("gradtape/tensor.py", "from gradtape.ops import binary\n"),
        "gradtape.ops": mod("gradtape/ops/__init__.py", "from .binary import add\n"),
        "gradtape.ops.binary": mod(
            "gradtape/ops/binary.py", "from ..tape import f\ndef pow():\n    from gradtape.ops import unary\n"
        ),
        "gradtape.ops.unary": mod("gradtape/ops/unary.py", "from gradtape.ops.binary import add\n"),
    }
    found = {(i.importer, i.target, i.line, i.in_function, i.type_checking) for i in collect_imports(fake)}
    assert found == {
        ("gradtape", "gradtape.tape", 1, False, False),
        ("gradtape", "gradtape.tensor", 2, False, False),
        ("gradtape.tape", "gradtape.errors", 2, False, False),
        ("gradtape.tape", "gradtape.tensor", 4, False, True),
        ("gradtape.tape", "gradtape.errors", 6, False, False),
        ("gradtape.tape", "gradtape.tensor", 8, True, False),
        ("gradtape.tensor", "gradtape.ops.binary", 1, False, False),
        ("gradtape.ops", "gradtape.ops.binary", 1, False, False),
        ("gradtape.ops.binary", "gradtape.tape", 1, False, False),
        ("gradtape.ops.binary", "gradtape.ops.unary", 3, True, False),
        ("gradtape.ops.unary", "gradtape.ops.binary", 1, False, False),
    }
    problems = check(fake, frozenset({("gradtape/ops/unary.py", "gradtape.tape")}))
    assert "gradtape/tape.py:8: gradtape.tape (tape) imports gradtape.tensor (tensor) inside a function" in problems, (
        problems
    )
    assert not any("tape.py:4" in p for p in problems), problems
    # one group: tape -> tensor -> binary -> tape and binary <-> unary
    (cycle,) = [p for p in problems if p.startswith("import cycle")]
    for where in ("tape.py:8", "tensor.py:1", "binary.py:1", "binary.py:3", "unary.py:1"):
        assert f"gradtape/{where}" in cycle or f"gradtape/ops/{where}" in cycle, cycle
    assert "tape.py:2" not in cycle and "tape.py:4" not in cycle, cycle
    assert any("ALLOWED lists ('gradtape/ops/unary.py', 'gradtape.tape')" in p for p in problems), problems
    # excusing the upward import breaks its cycle too; binary <-> unary is left
    rest = check(fake, frozenset({("gradtape/tape.py", "gradtape.tensor")}))
    assert len(rest) == 1 and rest[0].startswith("import cycle among gradtape.ops.binary, gradtape.ops.unary:"), rest


def test_the_layers_above_fill_the_slots_below() -> None:
    """What a lower layer reads of a higher one at run time is there once gradtape is imported."""
    import importlib

    import gradtape
    from gradtape import context_tape, engine, gradients, hooks, tape
    from gradtape.ops import binary, unary

    # the module, not ``gradtape.tensor`` the attribute (PyTorch's ``tensor`` function)
    tensor = importlib.import_module("gradtape.tensor")

    assert tape._tensor_class() is tensor.Tensor is gradtape.Tensor
    assert type(tape._new_gradients()) is gradients.Gradients
    assert tape._execute is engine._execute
    assert tape._post_hooked is engine._post_hooks
    assert engine._run_entries_checked is hooks.run_entries_checked
    assert engine._working_store is hooks.working_store
    assert tape._anomaly_forward is hooks.anomaly_forward
    assert tape._tf_enter is context_tape.enter and tape._tf_exit is context_tape.leave
    assert tape._tf_persistent is context_tape.persistent and tape._tf_watch is context_tape.watch
    assert tape._tf_watched_variables is context_tape.watched_variables
    assert tape._tf_gradient is context_tape.gradient
    assert binary._scalar_pow is unary.pow


_FIRST_IMPORT = """
import importlib, sys
import numpy as np
importlib.import_module(sys.argv[1])
from gradtape import Cpu, ops
from gradtape.autograd import detect_anomaly
x = Cpu().tensor(np.arange(1.0, 5.0), requires_grad=True)
x.register_hook(lambda g: g * 2)
with detect_anomaly():
    y = ops.binary.pow(x, 2.0).sum()
y.backward()
assert np.allclose(x.grad.numpy(), 4 * np.arange(1.0, 5.0)), x.grad
"""


@pytest.mark.parametrize("module", ["gradtape.tape", "gradtape.ops.binary", "gradtape.devices.kernels.elementwise"])
def test_any_module_imported_first_works(module: str) -> None:
    """A fresh process that imports a low module first gets a working package: a hook, anomaly
    mode, a number exponent and backward use every slot the higher layers fill."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", _FIRST_IMPORT, module], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
