"""The import paths CHANGELOG.md lists as removed or moved are gone, and the path it gives
instead of each holds the same name (so the changelog is a recipe that works)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

CHANGELOG = Path(__file__).resolve().parents[2] / "CHANGELOG.md"
# A table row: | `old` | `new` ... |
_ROW = re.compile(r"^ *\| `([\w.]+)`[^|]*\| `([\w.]+)`", re.M)


def _unreleased_rows() -> list[tuple[str, str]]:
    text = CHANGELOG.read_text(encoding="utf-8")
    unreleased = text.split("## [Unreleased]", 1)[1].split("\n## ", 1)[0]
    return _ROW.findall(unreleased)


ROWS = _unreleased_rows()


def _resolve(path: str) -> object:
    """The module ``path``, or the attribute its last part names in its parent module."""
    try:
        return importlib.import_module(path)
    except ModuleNotFoundError as exc:
        if exc.name != path:
            raise
    parent, _, name = path.rpartition(".")
    return getattr(importlib.import_module(parent), name)


def test_the_changelog_lists_the_removed_stubs_and_the_cli_moves() -> None:
    old = {row[0] for row in ROWS}
    assert {"agentmem.manager", "agentmem.long_term.qdrant_edge", "agentmem._cli_stats"} <= old
    assert len(ROWS) >= 28


@pytest.mark.parametrize(("old", "new"), ROWS, ids=[row[0] for row in ROWS])
def test_a_removed_path_is_gone_and_its_new_path_works(old: str, new: str) -> None:
    if old != new:  # agentmem.cli: a module that became a package of the same name
        with pytest.raises((ImportError, AttributeError)):
            _resolve(old)
    assert _resolve(new) is not None
    if old.rpartition(".")[2][:1].isupper():  # a class: the same name at its new path
        assert _resolve(new).__name__ == old.rpartition(".")[2]  # type: ignore[attr-defined]
