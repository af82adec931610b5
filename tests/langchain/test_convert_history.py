"""Unit: message conversion and AgentMemoryChatHistory (in-memory store, offline)."""

from __future__ import annotations

import warnings

import pytest
from langchain_core.messages import (
    AIMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from agentmem.errors import ConfigurationError, InvalidMessageError
from agentmem.stores.memory import InMemorySessionStore
from langchain_agentmem import AgentMemoryChatHistory
from langchain_agentmem._convert import from_langchain, to_langchain
from tests.fakes import ScriptedChatModel

TOOL_TURN = [
    SystemMessage("You are terse."),
    HumanMessage("Weather in Oslo?", id="h1", name="alice"),
    AIMessage(
        "",
        id="a1",
        tool_calls=[
            {"id": "call_1", "name": "get_weather", "args": {"city": "Oslo", "days": [1, 2]}},
            {"id": "call_2", "name": "get_time", "args": {}},
        ],
    ),
    ToolMessage("rain", tool_call_id="call_1", id="t1"),
    ToolMessage("boom", tool_call_id="call_2", status="error"),
    AIMessage("Rainy.", id="a2"),
]


def test_tool_call_turn_round_trips_losslessly() -> None:
    back = [to_langchain(from_langchain(m)) for m in TOOL_TURN]
    assert back == TOOL_TURN
    assert back[2].tool_calls[0]["args"] == {"city": "Oslo", "days": [1, 2]}  # type: ignore[attr-defined]
    assert back[4].status == "error"  # type: ignore[attr-defined]


def test_image_and_tool_use_blocks_are_kept_losslessly_with_text_for_the_model() -> None:
    blocks = [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image", "url": "https://example.com/cat.png"},
    ]
    human = HumanMessage(blocks)
    stored = from_langchain(human)
    assert stored.content == "What is in this picture?\n[image]"
    assert to_langchain(stored) == human
    anthropic = AIMessage(
        [{"type": "tool_use", "id": "tu1", "name": "f", "input": {"x": 1}}],
        tool_calls=[{"id": "tu1", "name": "f", "args": {"x": 1}}],
    )
    assert to_langchain(from_langchain(anthropic)) == anthropic


def test_content_block_policies() -> None:
    human = HumanMessage([{"type": "text", "text": "look"}, {"type": "image", "url": "u"}])
    assert from_langchain(human, content_blocks="text").content == "look"
    assert to_langchain(from_langchain(human, content_blocks="text")).content == "look"
    with pytest.raises(InvalidMessageError, match="'image' block"):
        from_langchain(human, content_blocks="error")


@pytest.mark.parametrize(
    "message",
    [FunctionMessage("x", name="f"), ChatMessage("x", role="critic")],
)
def test_unknown_message_types_are_refused_clearly(message: object) -> None:
    with pytest.raises(InvalidMessageError, match=r"not supported|unsupported"):
        from_langchain(message)  # type: ignore[arg-type]


def test_chat_message_with_known_role_is_accepted() -> None:
    assert from_langchain(ChatMessage("hi", role="human")).role == "user"


def _history(**kw: object) -> AgentMemoryChatHistory:
    return AgentMemoryChatHistory("s1", store=InMemorySessionStore(), **kw)  # type: ignore[arg-type]


def test_history_persists_per_session_and_round_trips_tool_calls() -> None:
    store = InMemorySessionStore()
    AgentMemoryChatHistory("s1", store=store).add_messages(TOOL_TURN)
    AgentMemoryChatHistory("s2", store=store).add_messages([HumanMessage("other")])
    reopened = AgentMemoryChatHistory("s1", store=store)
    assert reopened.get_full_messages() == TOOL_TURN
    assert reopened.messages == TOOL_TURN  # fits the default budget


def test_budgeted_view_keeps_the_recent_window_and_full_log_keeps_everything() -> None:
    history = _history(max_tokens=120)
    turns = []
    for i in range(30):
        turns += [HumanMessage(f"question number {i} about tabs"), AIMessage(f"answer {i}")]
    history.add_messages(turns)
    view = history.messages
    assert 0 < len(view) < len(turns)
    assert view[-1] == turns[-1]
    assert history.get_full_messages() == turns
    full = AgentMemoryChatHistory("s1", memory=history.memory, view="full")
    assert full.messages == turns


def test_budgeted_view_includes_summary_when_an_llm_is_given() -> None:
    llm = ScriptedChatModel(default="They counted from 0 upward.")
    history = _history(max_tokens=120, llm=llm)
    for i in range(30):
        history.add_messages([HumanMessage(f"count {i}"), AIMessage(f"{i}")])
    texts = [m.text for m in history.messages]
    assert any("They counted from 0 upward." in t for t in texts)
    assert len(history.get_full_messages()) == 60


def test_view_never_starts_with_an_orphan_tool_result() -> None:
    history = _history(max_tokens=60)
    for _ in range(5):
        history.add_messages(TOOL_TURN[1:])
    view = history.messages
    assert view
    assert not isinstance(view[0], ToolMessage)


async def test_async_twins() -> None:
    history = _history()
    await history.aadd_messages(TOOL_TURN[:3])
    assert await history.aget_messages() == TOOL_TURN[:3]
    assert await history.aget_full_messages() == TOOL_TURN[:3]
    await history.aclear()
    assert await history.aget_messages() == []


def test_bad_options_and_bad_session_ids_are_clear_errors() -> None:
    with pytest.raises(ConfigurationError, match="view"):
        _history(view="all")
    with pytest.raises(ConfigurationError, match="store="):
        AgentMemoryChatHistory("s1")
    with pytest.raises(ValueError, match="characters"):
        AgentMemoryChatHistory("a/b*", store=InMemorySessionStore())


def test_history_construction_emits_no_deprecation_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _history()
