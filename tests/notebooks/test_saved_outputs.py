"""The notebooks kept with their outputs (``notebooks/executed/``, written by
``python -m tests.notebooks.save_outputs``) hold the code of their source notebook and the
outputs of every code cell, so what they show is what that code displays."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.notebooks.test_notebooks import NOTEBOOK_DIR

EXECUTED = sorted((NOTEBOOK_DIR / "executed").glob("*.ipynb"))


def _read(path: Path) -> Any:
    import nbformat

    return nbformat.read(path, as_version=4)


def test_the_inspector_notebook_is_kept_with_its_outputs() -> None:
    assert "06_inspector" in [p.stem for p in EXECUTED]


@pytest.mark.parametrize("path", EXECUTED, ids=[p.stem for p in EXECUTED])
def test_a_saved_notebook_is_its_source_run(path: Path) -> None:
    saved, source = _read(path), _read(NOTEBOOK_DIR / path.name)
    assert [(c.cell_type, c.source) for c in saved.cells] == [
        (c.cell_type, c.source) for c in source.cells
    ], f"{path.name}: run `python -m tests.notebooks.save_outputs {path.stem}` again"
    code = [c for c in saved.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code)
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]


def test_the_inspector_notebook_shows_html_displays() -> None:
    saved = _read(NOTEBOOK_DIR / "executed" / "06_inspector.ipynb")
    html = [
        o["data"]["text/html"]
        for c in saved.cells
        if c.cell_type == "code"
        for o in c.outputs
        if "text/html" in o.get("data", {})
    ]
    assert len(html) == 4  # the context, the recall results, the manager, the working memory
    assert all('<div class="am-root">' in page for page in html)
    assert "Context: " in html[0]
    assert "&lt;script&gt;alert(&#x27;hi&#x27;)&lt;/script&gt;" in "".join(html)
    assert "<script>" not in "".join(html)
