"""Short-term memories: budgets, tool-safe windows, lossless summaries, bad input."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmem import (
    ConversationBufferMemory,
    InvalidMessageError,
    InvalidSessionIdError,
    Message,
    SlidingWindowMemory,
    SummaryBufferMemory,
    TokenCounter,
    ToolCall,
)
from agentmem.errors import ConfigurationError
from agentmem.short_term.summary import SUMMARY_HEADER
from agentmem.stores import InMemorySessionStore
from tests.fakes import ScriptedChatModel
from tests.strategies import conversations
from tests.tokenizing import count_text_calls

COUNTER = TokenCounter("gpt-4o")
PROPERTY = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check_tool_integrity(view: list[Message], log: list[Message]) -> None:
    """No view starts on a tool result or separates a call from its results."""
    if view:
        first_body = next((m for m in view if m.role != "system"), None)
        assert first_body is None or first_body.role != "tool"
    ids = [m.id for m in view]
    for i, m in enumerate(view):
        if m.role == "tool":
            j = i - 1
            while view[j].role == "tool":
                j -= 1
            assert view[j].role == "assistant"
            assert view[j].tool_calls
    # every tool result that follows a shown call in the log is shown too
    positions = {m.id: k for k, m in enumerate(log)}
    for m in view:
        if m.tool_calls and m.id in positions:
            k = positions[m.id] + 1
            while k < len(log) and log[k].role == "tool":
                assert log[k].id in ids
                k += 1


def _fill(memory: Any, chat: list[Message]) -> None:
    memory.add_messages(chat)


@PROPERTY
@given(chat=conversations(), budget=st.integers(10, 400))
def test_buffer_view_fits_budget_and_is_exact(chat: list[Message], budget: int) -> None:
    memory = ConversationBufferMemory(max_tokens=budget, token_counter=COUNTER)
    _fill(memory, chat)
    view = memory.get_view()
    assert view.token_count <= budget
    assert view.token_count == COUNTER.count_messages(view.messages)
    assert memory.get_token_count() == view.token_count
    assert len(memory.get_all_messages()) == len(chat)
    _check_tool_integrity(view.messages, chat)


@PROPERTY
@given(
    chat=conversations(),
    window=st.integers(1, 12),
    budget=st.none() | st.integers(20, 400),
    preserve=st.booleans(),
)
def test_windows_never_orphan_tool_messages(
    chat: list[Message], window: int, budget: int | None, preserve: bool
) -> None:
    memory = SlidingWindowMemory(
        window_size=window, preserve_system=preserve, max_tokens=budget, token_counter=COUNTER
    )
    _fill(memory, chat)
    view = memory.get_view()
    body = [m for m in view.messages if not (preserve and m.role == "system")]
    assert len(body) <= window
    if budget is not None:
        assert view.token_count <= budget
    _check_tool_integrity(view.messages, chat)
    # The window is the newest messages: its last message is the log's newest eligible one.
    eligible = [m for m in chat if not (preserve and m.role == "system")]
    if body and eligible and eligible[-1].role != "tool":
        assert body[-1].id == eligible[-1].id


def test_window_keeps_system_messages_first() -> None:
    memory = SlidingWindowMemory(window_size=2)
    memory.add_message("system", "rules")
    for text in "abcde":
        memory.add_message("user", text)
    assert [m["content"] for m in memory.get_messages()] == ["rules", "d", "e"]
    assert memory.get_view().omitted == 3


def test_window_drops_a_tool_round_whole_rather_than_split_it() -> None:
    memory = SlidingWindowMemory(window_size=2)
    call = ToolCall(id="c1", name="search", arguments="{}")
    memory.add_message("user", "find it")
    memory.add_message("assistant", "", tool_calls=[call])
    memory.add_message("tool", "found", tool_call_id="c1")
    memory.add_message("assistant", "here it is")
    # [assistant call, tool] is one unit of 2 messages: it does not fit beside "here it is".
    assert [m["content"] for m in memory.get_messages()] == ["here it is"]
    memory3 = SlidingWindowMemory(window_size=3, store=memory.store)
    roles = [m["role"] for m in memory3.get_messages()]
    assert roles == ["assistant", "tool", "assistant"]


def test_tool_calls_round_trip_in_wire_format() -> None:
    memory = ConversationBufferMemory()
    memory.add_message(
        "assistant",
        None,
        tool_calls=[
            {"id": "c9", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
        ],
    )
    memory.add_message("tool", "42", tool_call_id="c9")
    assert memory.get_messages() == [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c9", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
            ],
        },
        {"role": "tool", "content": "42", "tool_call_id": "c9"},
    ]


def test_views_are_computed_from_cached_counts() -> None:
    counter = TokenCounter()
    calls = count_text_calls(counter)
    memory = SlidingWindowMemory(window_size=5, token_counter=counter)
    for i in range(500):
        memory.add_message("user", f"message {i}")
    memory.get_messages()
    after_first = calls()
    memory.get_messages()
    memory.get_token_count()
    # A second view tokenizes nothing: every count comes from the per-message cache.
    assert calls() == after_first


# -- summaries -----------------------------------------------------------------------------


def _long_chat(memory: Any, n: int = 40) -> None:
    for i in range(n):
        memory.add_message("user" if i % 2 == 0 else "assistant", f"turn {i}: the sky is blue")


def test_summary_covers_evicted_messages_and_labels_itself() -> None:
    llm = ScriptedChatModel(default="User and assistant discussed the sky.")
    memory = SummaryBufferMemory(llm=llm, max_tokens=200)
    _long_chat(memory)
    view = memory.get_view()
    assert view.summary == "User and assistant discussed the sky."
    assert view.messages[0].role == "system"
    assert view.messages[0].content.startswith(SUMMARY_HEADER)
    assert view.token_count <= 200
    assert len(memory.get_all_messages()) == 40  # summarizing deleted nothing
    # The summary and the recent messages meet exactly at the watermark.
    recent = view.messages[1:]
    all_msgs = memory.get_all_messages()
    assert recent[0].content == all_msgs[memory.watermark]["content"]


def test_summary_is_incremental() -> None:
    llm = ScriptedChatModel(default="S")
    memory = SummaryBufferMemory(llm=llm, max_tokens=150)
    _long_chat(memory, 60)
    assert len(llm.calls) >= 2
    # Every later call carries the previous summary, and only messages not summarized before.
    seen: set[str] = set()
    for prompt in llm.calls[1:]:
        assert "Current summary:\nS" in prompt[1]["content"]
    for prompt in llm.calls:
        lines = [
            ln for ln in prompt[1]["content"].splitlines() if ln.startswith(("user:", "assistant:"))
        ]
        assert not seen & set(lines)
        seen |= set(lines)


@pytest.mark.parametrize(
    "failure",
    [RuntimeError("provider down"), "", "   \n", TimeoutError("slow")],
    ids=["exception", "empty", "whitespace", "timeout"],
)
def test_summarizer_failure_loses_nothing_and_stays_in_budget(failure: Any) -> None:
    llm = ScriptedChatModel(default=None, replies=[failure] * 100)
    memory = SummaryBufferMemory(llm=llm, max_tokens=120)
    _long_chat(memory)
    view = memory.get_view()
    assert view.summary is None
    assert view.token_count <= 120
    assert memory.last_error is not None
    assert len(memory.get_all_messages()) == 40
    assert all("provider down" not in m.content for m in view.messages)  # no error as summary


async def test_async_summarizer_is_awaited() -> None:
    llm = ScriptedChatModel(default="async summary")
    memory = SummaryBufferMemory(llm=llm, max_tokens=150)
    for i in range(40):
        await memory.aadd_message("user", f"async turn {i} with some words")
    view = await memory.aget_view()
    assert view.summary == "async summary"
    assert view.token_count <= 150
    assert len(await memory.aget_all_messages()) == 40


def test_summary_and_watermark_persist_with_the_session() -> None:
    store = InMemorySessionStore()
    memory = SummaryBufferMemory(
        llm=ScriptedChatModel(default="persisted"), max_tokens=150, store=store, session_id="s1"
    )
    _long_chat(memory)
    reopened = SummaryBufferMemory(llm=None, max_tokens=150, store=store, session_id="s1")
    assert reopened.get_view().summary == "persisted"
    assert reopened.watermark == memory.watermark > 0


def test_overlong_summary_is_cut_to_its_cap() -> None:
    memory = SummaryBufferMemory(
        llm=ScriptedChatModel(default="word " * 500), max_tokens=200, summary_max_tokens=30
    )
    _long_chat(memory)
    assert memory.summary is not None
    assert COUNTER.count_text(memory.summary) <= 30
    assert memory.get_token_count() <= 200


def test_without_llm_the_summary_memory_is_a_window() -> None:
    memory = SummaryBufferMemory(llm=None, max_tokens=100)
    _long_chat(memory)
    view = memory.get_view()
    assert view.summary is None
    assert view.token_count <= 100
    assert view.omitted > 0


def test_summary_never_splits_a_tool_round() -> None:
    llm = ScriptedChatModel(default="tools were used")
    memory = SummaryBufferMemory(llm=llm, max_tokens=160, max_input_tokens=60)
    for i in range(15):
        call = ToolCall(id=f"c{i}", name="lookup", arguments=f'{{"i": {i}}}')
        memory.add_message("user", f"look up item {i}")
        memory.add_message("assistant", "", tool_calls=[call])
        memory.add_message("tool", f"item {i} is fine", tool_call_id=f"c{i}")
    log = [Message.from_dict(m) for m in memory.get_all_messages()]
    view = memory.get_view()
    _check_tool_integrity(view.messages, log)
    # The watermark never falls between a call and its result.
    assert log[memory.watermark - 1].role != "assistant" or not log[memory.watermark - 1].tool_calls


# -- bad input -----------------------------------------------------------------------------


def test_unknown_role_is_rejected_and_nothing_is_stored() -> None:
    memory = ConversationBufferMemory()
    with pytest.raises(InvalidMessageError, match="unknown message role 'robot'"):
        memory.add_message("robot", "beep")
    assert memory.get_all_messages() == []


@pytest.mark.parametrize("content", [42, ["a"], {"text": "x"}, b"bytes"])
def test_non_string_content_is_rejected(content: object) -> None:
    memory = ConversationBufferMemory()
    with pytest.raises(InvalidMessageError, match="content must be a string"):
        memory.add_message("user", content)
    assert memory.get_all_messages() == []


def test_batch_with_one_bad_message_stores_none_of_it() -> None:
    memory = ConversationBufferMemory()
    with pytest.raises(InvalidMessageError):
        memory.add_messages([{"role": "user", "content": "ok"}, {"role": "tool", "content": "x"}])
    assert memory.get_all_messages() == []


def test_message_larger_than_the_budget_is_kept_and_shown_truncated() -> None:
    memory = ConversationBufferMemory(max_tokens=60)
    memory.add_message("user", "short question")
    huge = "lorem ipsum " * 2000
    memory.add_message("user", huge)
    view = memory.get_view()
    assert view.token_count <= 60
    assert len(view.truncated) == 1
    assert view.messages[-1].content.endswith("truncated by agentmem to fit the context budget]")
    assert memory.get_all_messages()[-1]["content"] == huge  # the log keeps it whole


def test_older_oversized_message_is_omitted_not_shown() -> None:
    memory = ConversationBufferMemory(max_tokens=60)
    memory.add_message("user", "lorem ipsum " * 2000)
    memory.add_message("user", "a new short question")
    view = memory.get_view()
    assert [m.content for m in view.messages] == ["a new short question"]
    assert view.omitted == 1
    assert view.truncated == []


@pytest.mark.parametrize("session_id", ["", "a b", "x{y}", "*", "a/b", "é", "x" * 300])
def test_invalid_session_ids_are_rejected(session_id: str) -> None:
    with pytest.raises(InvalidSessionIdError):
        ConversationBufferMemory(session_id=session_id)


@pytest.mark.parametrize("kwargs", [{"window_size": 0}, {"window_size": None}, {"window_size": -1}])
def test_bad_window_options(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        SlidingWindowMemory(**kwargs)


def test_sessions_are_isolated_on_one_store() -> None:
    store = InMemorySessionStore()
    a = ConversationBufferMemory(store=store, session_id="a")
    b = ConversationBufferMemory(store=store, session_id="b")
    a.add_message("user", "for a")
    assert b.get_messages() == []
    a.clear()
    assert a.get_all_messages() == []


@pytest.mark.parametrize("budget", [20, 60, 500])
def test_per_call_budget_tightens_the_view(budget: int) -> None:
    memories = [
        ConversationBufferMemory(max_tokens=200),
        SlidingWindowMemory(window_size=50, max_tokens=200),
        SummaryBufferMemory(llm=ScriptedChatModel(default="sum"), max_tokens=200),
    ]
    for memory in memories:
        _long_chat(memory)
        view = memory.get_view(max_tokens=budget)
        assert view.token_count <= min(budget, 200)
        assert memory.get_view().token_count <= 200


def test_the_newest_message_is_never_summarized_out_of_the_view() -> None:
    memory = SummaryBufferMemory(llm=ScriptedChatModel(default="earlier talk"), max_tokens=400)
    for i in range(5):
        memory.add_message("user", f"short message {i}")
    memory.add_message("user", "a long question " * 200)
    view = memory.get_view()
    assert view.token_count <= 400
    assert view.messages[-1].role == "user"
    assert view.messages[-1].content.startswith("a long question")
    assert memory.watermark < 6


# -- one behaviour for sync and async callers ----------------------------------------------------


class _ClearingStore(InMemorySessionStore):
    """A store whose next read is overtaken by a clear() of the memory (set ``memory``)."""

    memory: Any = None

    def read(self, session_id: str, *, after: int = 0, limit: int | None = None) -> Any:
        found = super().read(session_id, after=after, limit=limit)
        memory, self.memory = self.memory, None
        if memory is not None:
            memory.clear()  # lands while the read's result is on its way back
        return found


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_read_overtaken_by_clear_is_not_mirrored(mode: str) -> None:
    store = _ClearingStore()
    memory = ConversationBufferMemory(store=store)
    memory.add_message("user", "one")
    memory.add_message("assistant", "two")
    store.memory = memory
    if mode == "sync":
        memory.refresh()
    else:
        await memory.arefresh()
    assert memory.get_log() == []
    assert memory.get_view().messages == []


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_summarizer_failure_is_reported_alike_in_both_modes(mode: str) -> None:
    llm = ScriptedChatModel(replies=[RuntimeError("provider down")], default="later summary")
    memory = SummaryBufferMemory(llm=llm, max_tokens=120, auto_summarize=False)
    _long_chat(memory)
    advanced = memory.summarize() if mode == "sync" else await memory.asummarize()
    assert advanced is False
    assert isinstance(memory.last_error, RuntimeError)
    advanced = memory.summarize() if mode == "sync" else await memory.asummarize()
    assert advanced is True
    assert memory.last_error is None
    assert memory.summary == "later summary"


async def test_one_summarizing_run_at_a_time_across_modes() -> None:
    memory = SummaryBufferMemory(llm=ScriptedChatModel(default="s"), max_tokens=120)
    memory.auto_summarize = False
    _long_chat(memory)
    assert memory._summarizing.acquire(blocking=False)  # a run in progress elsewhere
    try:
        assert memory.summarize() is False
        assert await memory.asummarize() is False
    finally:
        memory._summarizing.release()
    assert await memory.asummarize() is True
