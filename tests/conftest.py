"""Test-session settings shared by every test file.

pytest-xdist (README's test command runs ``-n auto --dist loadgroup``): each test file is one
group, so a module's fixtures (a trained model, a numba kernel's first compile) are paid once
and on one worker, as ``--dist loadfile`` would; the files that run mypy, pyright or pyrefly
through tests/_checkers.py form one group more, so that the whole-tree mypy run, the plugin
cache and the shared pyright report are made once (by one worker) and not once per worker.
Without xdist the markers do nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

_CHECKER_FILES = frozenset(
    {
        "test_static.py",
        "test_typing.py",
        "test_typing_catalog.py",
        "test_pyright.py",
        "test_mypy_plugin.py",
        "test_readme_typing.py",
        "test_repo.py",
    }
)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the markers
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if any(m.name == "xdist_group" for m in item.iter_markers("xdist_group")):
            continue  # a test file's own group wins
        name = Path(str(item.path)).name
        group = "type-checkers" if name in _CHECKER_FILES else name.removesuffix(".py")
        item.add_marker(pytest.mark.xdist_group(group))
