"""Fixtures for every test path, doctests in the packages included.

Docstring examples create scratch directories with :func:`tempfile.mkdtemp` (a store's
home, a JSONL file) as a reader would; while the tests run, those go under pytest's own
temporary directory, which pytest prunes, instead of piling up in the system's.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator

import pytest
from _pytest.doctest import DoctestItem


@pytest.fixture(autouse=True)
def _doctest_scratch(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    if not isinstance(request.node, DoctestItem):
        yield
        return
    saved = tempfile.tempdir
    tempfile.tempdir = str(tmp_path_factory.mktemp("doctest"))
    try:
        yield
    finally:
        tempfile.tempdir = saved
