"""The LlamaIndex guide (docs/guides/llamaindex.md) has an example per public class.

Its blocks run as written with every other docs block (tests/integration/test_docs.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import llamaindex_agentmem

DOC = Path(__file__).resolve().parents[2] / "docs" / "guides" / "llamaindex.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)


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
