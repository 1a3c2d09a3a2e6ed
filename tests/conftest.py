"""Test-session settings shared by every test file.

pytest-xdist (README's test command runs ``-n auto --dist loadfile``): each test file runs on
one worker, so a module's fixtures (a trained model, a numba kernel's first compile) and its
shared random generators are as in one process; and the files that run mypy, pyright or
pyrefly through tests/_checkers.py count as one file, so that the whole-tree mypy run, the
plugin cache and the shared pyright report are made once, by one worker, and each checker
cache has one writer. That is xdist's own ``loadfile`` scheduler with the checker files given
one scope (:func:`pytest_xdist_make_scheduler`). xdist's ``loadgroup`` and its
``xdist_group`` markers are not used: xdist 3.8 names a group by setting ``item._nodeid``,
which pytest 9.2 no longer reads (it keeps node ids in ``_id``), so there the groups silently
did nothing and files were split between workers. Without xdist nothing here applies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

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


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``--dist loadfile``: xdist's file scheduler with the checker files as one scope;
    any other mode keeps xdist's own scheduler (``None``)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling  # type: ignore[import-untyped]

    class _FilesAndCheckers(LoadFileScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            file = nodeid.split("::", 1)[0]
            return "type-checkers" if Path(file).name in _CHECKER_FILES else file

    return _FilesAndCheckers(config, log)
