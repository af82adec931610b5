"""Every Python example of the README's LlamaIndex section runs as written (offline)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import llamaindex_agentmem

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]

DOC = Path(__file__).resolve().parents[2] / "README.md"
SECTION = DOC.read_text(encoding="utf-8").split("\n## LlamaIndex\n", 1)[1].split("\n## ", 1)[0]
BLOCKS = re.findall(r"```python\n(.*?)```", SECTION, re.DOTALL)


def test_public_surface_is_pinned() -> None:
    assert llamaindex_agentmem.__all__ == [
        "AgentMemory",
        "AgentMemoryRetriever",
        "FactMemoryBlock",
        "LlamaIndexChatModel",
        "LlamaIndexEmbedder",
        "LongTermMemoryBlock",
        "WorkingMemoryBlock",
    ]


def test_there_is_an_example_per_class() -> None:
    text = "\n".join(BLOCKS)
    for name in llamaindex_agentmem.__all__:
        assert name in text


@pytest.mark.parametrize("code", BLOCKS, ids=[f"example{i}" for i in range(len(BLOCKS))])
def test_example_runs(
    code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENTMEM_HOME", str(tmp_path))
    exec(compile(code, str(DOC), "exec"), {"__name__": "__example__"})
    assert capsys.readouterr().out.strip()  # each example shows something
