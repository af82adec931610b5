"""``AgentMemoryChatHistory.add_messages`` of messages with ids is stored once.

LangChain messages carry an optional ``id``; when every message of an add has one, adding
them again (a retry after a failure whose outcome is unknown: the append committed but its
reply was lost) stores nothing twice, sync and async, in the in-memory, SQLite and Redis
session stores. Other content under the same ids is refused; messages without ids are
appended on every call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from agentmem.errors import TurnConflictError
from agentmem.stores.base import SessionStore
from agentmem.types import Message
from langchain_agentmem import AgentMemoryChatHistory
from tests.session_stores import open_session_store

pytestmark = pytest.mark.integration


class Lost(ConnectionError):
    """The reply of an append that committed."""


@pytest.fixture(params=["memory", "sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SessionStore]:
    sessions = open_session_store(request, str(request.param), tmp_path)
    try:
        yield sessions
    finally:
        sessions.close()


def lose_next_reply(monkeypatch: pytest.MonkeyPatch, store: SessionStore) -> None:
    """The store's next append (sync or async) commits, then its reply is lost."""
    real, areal = store.append, store.aappend
    lost: list[bool] = []

    def append(session_id: str, messages: Sequence[Message], **kw: Any) -> list[int]:
        seqs = real(session_id, messages, **kw)
        if not lost:
            lost.append(True)
            raise Lost("the reply of the append never came")
        return seqs

    async def aappend(session_id: str, messages: Sequence[Message], **kw: Any) -> list[int]:
        seqs = await areal(session_id, messages, **kw)
        if not lost:
            lost.append(True)
            raise Lost("the reply of the append never came")
        return seqs

    monkeypatch.setattr(store, "append", append)
    monkeypatch.setattr(store, "aappend", aappend)


def exchange() -> list[BaseMessage]:
    return [HumanMessage("I sail a blue canoe", id="h-1"), AIMessage("Nice canoe.", id="a-1")]


def texts(history: AgentMemoryChatHistory) -> list[str]:
    return [m.text for m in history.get_full_messages()]


def test_messages_with_ids_added_again_after_a_lost_reply_are_stored_once(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = AgentMemoryChatHistory("s1", store=store, view="full")
    lose_next_reply(monkeypatch, store)
    with pytest.raises(Lost):
        history.add_messages(exchange())
    history.add_messages(exchange())  # the retry
    history.add_messages(exchange())
    assert texts(history) == ["I sail a blue canoe", "Nice canoe."]
    assert [m.id for m in history.messages] == ["h-1", "a-1"]  # the ids round-trip
    other = [HumanMessage("I sail a red kayak", id="h-1"), AIMessage("Nice canoe.", id="a-1")]
    with pytest.raises(TurnConflictError):  # the same ids with other content
        history.add_messages(other)
    assert len(texts(history)) == 2


def test_async_adds_of_messages_with_ids_are_stored_once(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = AgentMemoryChatHistory("s2", store=store, view="full")

    async def scenario() -> None:
        lose_next_reply(monkeypatch, store)
        with pytest.raises(Lost):
            await history.aadd_messages(exchange())
        await history.aadd_messages(exchange())
        await history.aadd_messages(exchange())
        assert [m.text for m in await history.aget_messages()] == [
            "I sail a blue canoe",
            "Nice canoe.",
        ]

    asyncio.run(scenario())


def test_messages_without_ids_are_appended_each_time(store: SessionStore) -> None:
    history = AgentMemoryChatHistory("s3", store=store, view="full")
    history.add_messages([HumanMessage("hi"), AIMessage("hello", id="a-1")])
    history.add_messages([HumanMessage("hi"), AIMessage("hello", id="a-1")])
    assert texts(history) == ["hi", "hello", "hi", "hello"]
