"""Save notebooks with their outputs: ``python -m tests.notebooks.save_outputs NAME...``.

The notebooks in ``notebooks/`` are stored without outputs (the tests run them); those whose
point is what they display (``06_inspector``: the HTML views) also keep a copy run as the
tests run it (offline, temporary home), with its outputs, in ``notebooks/executed/``.
``tests/notebooks/test_saved_outputs.py`` checks that each copy has the same code as its
source, and outputs in every code cell.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from tests.notebooks.test_notebooks import NOTEBOOK_DIR, _execute

EXECUTED_DIR = NOTEBOOK_DIR / "executed"


def save(name: str) -> Path:
    """Run ``notebooks/NAME.ipynb`` and write it, outputs included, to ``executed/``."""
    import nbformat

    source = NOTEBOOK_DIR / f"{name}.ipynb"
    with tempfile.TemporaryDirectory(prefix="notebook-run-") as scratch:
        root = Path(scratch)
        (root / "tmp").mkdir()
        notebook = _execute(source, NOTEBOOK_DIR, root / "home", root / "tmp")
    EXECUTED_DIR.mkdir(exist_ok=True)
    target = EXECUTED_DIR / source.name
    nbformat.write(notebook, target)
    return target


if __name__ == "__main__":
    for name in sys.argv[1:] or ["06_inspector"]:
        print(save(name))
