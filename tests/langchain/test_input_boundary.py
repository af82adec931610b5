"""The LangChain history refuses unencodable or over-deep messages and writes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from agentmem.errors import InvalidMessageError
from agentmem.stores.sqlite import SQLiteSessionStore
from langchain_agentmem import AgentMemoryChatHistory


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


BAD: list[tuple[str, list[BaseMessage], str]] = [
    ("surrogate content", [HumanMessage("ok"), HumanMessage("\ud800")], "lone surrogate"),
    (
        "surrogate tool args",
        [AIMessage("", tool_calls=[{"id": "c1", "name": "f", "args": {"q": "\udcff"}}])],
        "lone surrogate",
    ),
    ("deep kwargs", [HumanMessage("ok", additional_kwargs={"x": nested(900)})], "64 levels"),
]


@pytest.mark.parametrize(("case", "messages", "named"), BAD, ids=[b[0] for b in BAD])
async def test_history_refuses_unstorable_messages(
    tmp_path: Path, case: str, messages: list[BaseMessage], named: str
) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db")
    try:
        history = AgentMemoryChatHistory("s1", store=store)
        with pytest.raises(InvalidMessageError, match=named):
            history.add_messages(messages)
        with pytest.raises(InvalidMessageError, match=named):
            await history.aadd_messages(messages)
        assert history.get_full_messages() == []
        assert store.count("s1") == 0
    finally:
        store.close()
