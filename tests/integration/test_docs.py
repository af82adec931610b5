"""Every fenced ``python`` block of README.md and of the docs site (``docs/**/*.md``) runs as
written, offline, on a fresh home; a block followed by a ``text`` block prints exactly that.

Each block runs alone in a new interpreter (nothing defined by an earlier block), from an
empty working directory, with ``AGENTMEM_HOME`` pointing at a new directory and no OpenAI
variables, exactly as a newcomer would paste it into a file. Where the reader's own model
goes, a block defines a clearly labelled stand-in itself. A block must exit 0 and write
nothing to stderr: the library prints nothing (no model-loading bars, no warnings). When a
block is followed by a ``text`` block (with at most one paragraph of prose ending in a colon
between them), that is the block's expected output and stdout must equal it.

The README itself is held to what a newcomer reads first: at most 250 lines, a quick start of
at most 25 lines with its output, and one configuration table naming every environment
variable the package, the test command and the notebooks read.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.processes import run_python

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]
_FENCE = re.compile(r"^```python\n(.*?)^```[ \t]*\n", re.S | re.M)
# A python block's expected output: a text block right after it, maybe after a paragraph
# ending in a colon ("It prints:").
_OUTPUT = re.compile(
    r"\n*(?:(?:[^\n`][^\n]*\n)*[^\n`][^\n]*:\n\n)?```text\n(.*?)^```[ \t]*$", re.S | re.M
)
_ANY_FENCE = re.compile(r"^```.*?^```[ \t]*$", re.S | re.M)


class Block(NamedTuple):
    id: str
    code: str
    output: str | None  # the expected stdout, when the page shows it


def _heading(text: str) -> str:
    """The last heading of ``text`` (code blocks left out: their comments are no headings)."""
    headings = re.findall(r"^#+ (.+)$", _ANY_FENCE.sub("", text), re.M)
    return re.sub(r"[^A-Za-z0-9]+", "-", headings[-1] if headings else "top").strip("-")


def page_blocks(page: Path) -> list[Block]:
    """Every python block of ``page``; its id is the page and the heading it is under
    (numbered when a section has several)."""
    text = page.read_text(encoding="utf-8")
    stem = page.relative_to(ROOT).with_suffix("").as_posix().removeprefix("docs/")
    blocks: list[Block] = []
    for match in _FENCE.finditer(text):
        name = f"{stem}/{_heading(text[: match.start()])}"
        taken = sum(1 for b in blocks if b.id == name or b.id.startswith(name + "-"))
        output = _OUTPUT.match(text, match.end())
        blocks.append(
            Block(
                f"{name}-{taken + 1}" if taken else name,
                match.group(1),
                output.group(1) if output else None,
            )
        )
    return blocks


BLOCKS = [block for page in PAGES for block in page_blocks(page)]


def _section(text: str, heading: str) -> str:
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def test_the_docs_have_their_python_examples() -> None:
    assert len(BLOCKS) >= 14, [b.id for b in BLOCKS]
    pages = {b.id.split("/")[0] if "/" in b.id else b.id for b in BLOCKS}
    assert {"README", "guides", "tiers", "index"} <= pages


def test_every_code_block_is_picked_up() -> None:
    """A block fenced as ``py`` or ``python3`` would be skipped silently: there are none."""
    for page in PAGES:
        fences = re.findall(r"^```(\S*)", page.read_text(encoding="utf-8"), re.M)
        assert not [f for f in fences if f.startswith("py") and f != "python"], page


def test_the_readme_fits_on_a_page_with_a_short_quick_start() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    [quick_start] = [b for b in BLOCKS if b.id == "README/Quick-start"]
    assert len(quick_start.code.splitlines()) <= 25
    assert quick_start.output, "the quick start shows its expected output"


def test_the_configuration_table_names_every_environment_variable() -> None:
    table = _section(README.read_text(encoding="utf-8"), "Configuration")
    listed = set(re.findall(r"^\| `([A-Z][A-Z0-9_]+)` \|", table, re.M))
    sources = [ROOT / ".ci" / "test", *sorted((ROOT / "notebooks").glob("*.ipynb"))]
    for package in ("shared/agentmem", "langchain_agentmem", "llamaindex_agentmem"):
        sources += sorted((ROOT / package).rglob("*.py"))
    read = set()
    for source in sources:
        read |= set(re.findall(r"\b(AGENTMEM_[A-Z_]+|OPENAI_[A-Z_]+)\b", source.read_text()))
    assert {"AGENTMEM_HOME", "AGENTMEM_REDIS_URL", "OPENAI_API_KEY"} <= read
    assert read <= listed, f"not in the README's configuration table: {sorted(read - listed)}"


def test_an_expected_output_is_found_after_its_block() -> None:
    page = "# T\n\n```python\nprint(1)\n```\n\nIt prints:\n\n```text\n1\n```\n"
    text = "```python\nprint(2)\n```\n\nNo colon here\n\n```text\n2\n```\n"
    found = [_OUTPUT.match(t, m.end()) for t in (page, text) for m in _FENCE.finditer(t)]
    assert [m.group(1) if m else None for m in found] == ["1\n", None]


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_doc_block_runs_as_written(block: Block, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENTMEM_"))}
    env["AGENTMEM_HOME"] = str(tmp_path / "home")
    work = tmp_path / "work"
    work.mkdir()
    done = run_python("-c", block.code, cwd=work, env=env)
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert done.stderr == ""
    if block.output is not None:
        assert done.stdout == block.output
