"""``AgentMemory`` refuses bad arguments with agentmem errors, and nothing is written.

* options (``token_limit=-5``, ``nan``, ...) of ``from_service`` / ``from_defaults``: a
  ``ConfigurationError`` (not pydantic's ``ValidationError``) before the session is named
  to the service or any store is opened;
* ``put`` with ``additional_kwargs`` that are not JSON data: ``InvalidMessageError``, the
  log unchanged (they used to come back as ``{}``); JSON data comes back exactly;
* ``get()`` when the session's newest unit alone exceeds the budget (an assistant message
  with 2,000 tool calls): ``ContextBudgetError``, as the LangChain middleware raises, before
  anything is recalled; never ``[]`` with the user's message silently left out.

All on the real stores (SQLite sessions, Qdrant Edge memories) of a temp home.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock, ToolCallBlock

from agentmem import MemoryService
from agentmem.errors import (
    AgentMemError,
    ConfigurationError,
    ContextBudgetError,
    InvalidMessageError,
)
from agentmem.working import STATE_KEY
from llamaindex_agentmem import AgentMemory
from tests.fakes import HashingEmbedder
from tests.llamaindex._helpers import DIM, chat_tokens, open_memory

pytestmark = pytest.mark.integration

# -- options ---------------------------------------------------------------------------------

BAD_OPTIONS: list[tuple[str, dict[str, Any], str]] = [
    ("token_limit -5", {"token_limit": -5}, "token_limit must be an integer >= 1, got -5"),
    ("token_limit nan", {"token_limit": math.nan}, "token_limit must be an integer >= 1, got nan"),
    ("token_limit str", {"token_limit": "100"}, "token_limit must be an integer >= 1, got '100'"),
    ("token_limit 0", {"token_limit": 0}, "token_limit must be an integer >= 1, got 0"),
    ("top_k -1", {"top_k": -1}, "top_k must be an integer >= 0, got -1"),
    ("memory_share 2", {"memory_share": 2.0}, "memory_share: Input should be less than or equal"),
    ("unknown option", {"token_limt": 100}, r"unknown AgentMemory option\(s\) \['token_limt'\]"),
]
OPTION_IDS = [case[0] for case in BAD_OPTIONS]


@pytest.fixture
def service(home: Path) -> Iterator[MemoryService]:
    with MemoryService.open(home, embedder=HashingEmbedder(DIM), background=False) as svc:
        yield svc


def session_untouched(service: MemoryService, session_id: str) -> bool:
    sessions = service.sessions
    return sessions.count(session_id) == 0 and sessions.get_state(session_id, STATE_KEY) is None


@pytest.mark.parametrize(("case", "options", "named"), BAD_OPTIONS, ids=OPTION_IDS)
def test_from_service_refuses_bad_options_before_naming_the_session(
    service: MemoryService, case: str, options: dict[str, Any], named: str
) -> None:
    with pytest.raises(ConfigurationError, match=named) as info:
        AgentMemory.from_service(service, user_id="alice", session_id="chat-1", **options)
    assert isinstance(info.value, AgentMemError)
    assert session_untouched(service, "chat-1")
    memory = AgentMemory.from_service(service, user_id="alice", session_id="chat-1")
    memory.put(ChatMessage(role="user", content="hello"))
    assert [m.content for m in memory.get_all()] == ["hello"]  # a good call still works


@pytest.mark.parametrize("token_limit", [-5, math.nan], ids=["negative", "nan"])
def test_from_defaults_refuses_a_bad_token_limit_before_opening_the_stores(
    tmp_path: Path, token_limit: Any
) -> None:
    home = tmp_path / "never-opened"
    with pytest.raises(ConfigurationError, match="token_limit must be an integer >= 1"):
        open_memory(home, token_limit=token_limit)
    assert not home.exists()


def test_the_error_names_the_fix() -> None:
    with pytest.raises(ConfigurationError) as info:
        AgentMemory(token_limit=-5)
    assert "e.g. token_limit=3000" in str(info.value)


# -- additional_kwargs -----------------------------------------------------------------------


class Client:
    """Something a framework might hang on a message: not data."""


NOT_JSON: list[tuple[str, dict[str, Any], str]] = [
    ("object", {"client": Client()}, r"additional_kwargs\['client'\] is not JSON-serializable"),
    ("nested object", {"trace": {"span": Client()}}, r"additional_kwargs\['trace'\]"),
    ("nan", {"score": math.nan}, r"additional_kwargs\['score'\] holds nan"),
    ("set", {"tags": {"a", "b"}}, r"additional_kwargs\['tags'\] is not JSON-serializable: set"),
]
NOT_JSON_IDS = [case[0] for case in NOT_JSON]


@pytest.fixture
def memory(home: Path) -> Iterator[AgentMemory]:
    with open_memory(home) as mem:
        yield mem


@pytest.mark.parametrize(("case", "extra", "named"), NOT_JSON, ids=NOT_JSON_IDS)
def test_put_refuses_additional_kwargs_that_are_not_json(
    memory: AgentMemory, case: str, extra: dict[str, Any], named: str
) -> None:
    memory.put(ChatMessage(role="user", content="first"))
    message = ChatMessage(role="assistant", content="ok", additional_kwargs=extra)
    with pytest.raises(InvalidMessageError, match=named):
        memory.put(message)
    with pytest.raises(InvalidMessageError, match=named):  # a batch: none of it is written
        memory.put_messages([ChatMessage(role="user", content="second"), message])
    assert [m.content for m in memory.get_all()] == ["first"]


@pytest.mark.parametrize(("case", "extra", "named"), NOT_JSON, ids=NOT_JSON_IDS)
async def test_aput_refuses_additional_kwargs_that_are_not_json(
    memory: AgentMemory, case: str, extra: dict[str, Any], named: str
) -> None:
    message = ChatMessage(role="assistant", content="ok", additional_kwargs=extra)
    with pytest.raises(InvalidMessageError, match=named):
        await memory.aput(message)
    assert await memory.aget_all() == []


JSON_KWARGS: dict[str, Any] = {
    "session_id": "web-42",
    "score": 0.25,
    "count": 3,
    "flags": [True, False, None],
    "big": 2**70,
    "nested": {"trace": {"spans": [{"id": "a1", "ms": 12.5}], "note": "naïve ✓ 🎉"}},
    "empty": {},
}


def test_json_additional_kwargs_round_trip_exactly(home: Path) -> None:
    with open_memory(home) as memory:
        memory.put(ChatMessage(role="user", content="hi", additional_kwargs=JSON_KWARGS))
        assert memory.get_all()[0].additional_kwargs == JSON_KWARGS
    with open_memory(home) as reopened:  # from the SQLite log, in a new process's view
        assert reopened.get_all()[0].additional_kwargs == JSON_KWARGS
        shown = [m for m in reopened.get() if m.role == MessageRole.USER]
        assert shown[0].additional_kwargs == JSON_KWARGS


# -- get() when the newest unit alone is over the budget ------------------------------------


def many_calls(n: int) -> ChatMessage:
    blocks: list[Any] = [TextBlock(text="Looking up every order.")]
    blocks += [
        ToolCallBlock(tool_call_id=f"call_{i}", tool_name="lookup_order", tool_kwargs={"id": i})
        for i in range(n)
    ]
    return ChatMessage(role="assistant", blocks=blocks)


QUESTION = ChatMessage(role="user", content="Where are my orders? I ordered 2,000 things.")


def test_get_raises_context_budget_error_for_an_oversized_newest_message(home: Path) -> None:
    with open_memory(home, token_limit=2000) as memory:
        fact = memory.manager.remember("Orders ship on Mondays")
        memory.put_messages([QUESTION, many_calls(2000)])
        assert chat_tokens([many_calls(2000)]) > 2000
        with pytest.raises(ContextBudgetError, match="latest message alone take") as info:
            memory.get()
        assert "token_limit=2000" in str(info.value)
        assert [m.content for m in memory.get_all()][:1] == [QUESTION.content]  # nothing lost
        records = memory.manager.long_term.all_records()
        assert [r.access_count for r in records if r.id == fact.record.id] == [0]  # no recall
    with open_memory(home, token_limit=60_000) as roomy:  # with room, both come back whole
        shown = roomy.get()
        assert [m.role for m in shown][-2:] == [MessageRole.USER, MessageRole.ASSISTANT]
        calls = [b for b in shown[-1].blocks if isinstance(b, ToolCallBlock)]
        assert len(calls) == 2000


async def test_aget_raises_context_budget_error_for_an_oversized_newest_message(
    home: Path,
) -> None:
    memory = open_memory(home, token_limit=2000)
    try:
        await memory.aput_messages([QUESTION, many_calls(2000)])
        with pytest.raises(ContextBudgetError, match="latest message alone take"):
            await memory.aget()
        assert len(await memory.aget_all()) == 2
    finally:
        await memory.aclose()


def test_the_newest_unit_is_kept_whole_before_memories(home: Path) -> None:
    # The unit takes most of the budget: recalled memories get what is left, instead of
    # their share crowding the unit (and the user's question with it) out of the history.
    fact = "Order {} was lookup_order material, shipped Monday to the warehouse in Oslo. "
    with open_memory(home, token_limit=900, top_k=5) as memory:
        for i in range(5):
            memory.manager.remember(fact.format(i) * 3)
        memory.put_messages([QUESTION, many_calls(62)])
        assert 0.7 * 900 < chat_tokens([many_calls(62)]) < 0.8 * 900
        shown = memory.get()
        assert [m.role for m in shown] == [
            MessageRole.SYSTEM,
            MessageRole.USER,
            MessageRole.ASSISTANT,
        ]
        assert "<recalled_memories>" in shown[0].content
        assert len([b for b in shown[-1].blocks if isinstance(b, ToolCallBlock)]) == 62
        assert chat_tokens(shown) <= 900
