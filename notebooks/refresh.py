"""Run the notebooks top to bottom and save them with their outputs (tables and plots).

Usage:
    .venv/bin/python notebooks/refresh.py                 # every notebooks/*.ipynb
    .venv/bin/python notebooks/refresh.py notebooks/01_quickstart.ipynb ...

Each notebook runs offline, as the tests run it: the OpenAI variables are removed (so the
scripted stand-ins play the LLMs and the saved outputs are the same on every machine),
``AGENTMEM_HOME`` and ``TMPDIR`` point at a temporary directory (each notebook makes its own
temporary home there and removes it), from ``notebooks/``, with the ``python3`` kernel
(``ipykernel`` of this interpreter). A failing cell stops the refresh and leaves that
notebook as it was. ``tests/notebooks/test_notebooks.py`` executes the notebooks with
:func:`execute` too, then checks what they show.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

NOTEBOOK_DIR = Path(__file__).resolve().parent
CELL_TIMEOUT_S = 300

__all__ = ["CELL_TIMEOUT_S", "NOTEBOOK_DIR", "execute", "main"]


def execute(
    path: Path,
    *,
    cwd: Path,
    tmp: Path,
    extra_cells: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> Any:
    """Run the notebook at ``path`` from ``cwd`` and return it with its outputs.

    Args:
        path: The ``.ipynb`` file (not modified).
        cwd: The kernel's working directory.
        tmp: The run's temporary directory (``TMPDIR``; ``AGENTMEM_HOME`` is ``tmp/home``,
            which a notebook must not use: each makes its own home).
        extra_cells: Code run after the notebook's own cells, in the same kernel.
        env: Variables set for the kernel on top of the cleaned environment.

    Raises:
        nbclient.exceptions.CellExecutionError: A cell failed (its traceback included).
    """
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    for source in extra_cells:
        notebook.cells.append(nbformat.v4.new_code_cell(source))
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    environ["AGENTMEM_HOME"] = str(tmp / "home")
    environ["TMPDIR"] = str(tmp)
    environ.update(env or {})
    client = NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        record_timing=False,  # no timestamps in the saved cells: diffs show what changed
        resources={"metadata": {"path": str(cwd)}},
    )
    client.execute(env=environ)
    return notebook


def main(argv: Sequence[str] | None = None) -> int:
    """Refresh the named notebooks (default: all); returns the exit status."""
    import nbformat

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/*.ipynb")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted(NOTEBOOK_DIR.glob("*.ipynb"))
    for path in paths:
        with tempfile.TemporaryDirectory(prefix="agentmem-refresh-") as tmp:
            notebook = execute(path, cwd=NOTEBOOK_DIR, tmp=Path(tmp))
        nbformat.write(notebook, path)
        print(f"{path.name}: saved with its outputs", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
