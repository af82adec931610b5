"""Every fenced ``python`` block of README.md runs as written, offline, on a fresh home.

Each block runs alone in a new interpreter (nothing defined by an earlier block), from an
empty working directory, with ``AGENTMEM_HOME`` pointing at a new directory and no OpenAI
variables, exactly as a newcomer would paste it into a file. Where the reader's own model
goes, a block defines a clearly labelled stand-in itself. A block must exit 0 and write
nothing to stderr: the library prints nothing (no model-loading bars, no warnings).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

README = Path(__file__).resolve().parents[2] / "README.md"
_FENCE = re.compile(r"^```python\n(.*?)^```\s*$", re.S | re.M)


def readme_blocks() -> list[tuple[str, str]]:
    """``(id, code)`` of every python block; the id is the heading it is under (numbered
    when a section has several)."""
    text = README.read_text(encoding="utf-8")
    blocks: list[tuple[str, str]] = []
    for match in _FENCE.finditer(text):
        headings = re.findall(r"^#+ (.+)$", text[: match.start()], re.M)
        name = re.sub(r"[^A-Za-z0-9]+", "-", headings[-1] if headings else "top").strip("-")
        taken = sum(1 for n, _ in blocks if n == name or n.startswith(name + "-"))
        blocks.append((f"{name}-{taken + 1}" if taken else name, match.group(1)))
    return blocks


BLOCKS = readme_blocks()


def test_the_readme_has_its_python_examples() -> None:
    assert len(BLOCKS) >= 14, [name for name, _ in BLOCKS]


@pytest.mark.parametrize("code", [code for _, code in BLOCKS], ids=[n for n, _ in BLOCKS])
def test_readme_block_runs_as_written(code: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENTMEM_"))}
    env["AGENTMEM_HOME"] = str(tmp_path / "home")
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert done.stderr == ""
