"""Unit (offline): public surface, and the exact budget fit the middleware relies on: the
one context pipeline (``MemoryManager.gather_context``) over an agent's messages and tools."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

import langchain_agentmem
from agentmem import LongTermMemory, MemoryManager, TokenCounter
from agentmem.integration import InMemorySessionStore
from agentmem.short_term.summary import SUMMARY_STATE_KEY
from agentmem.stores.in_memory import InMemoryMemoryStore
from agentmem.types import Message
from langchain_agentmem._convert import from_langchain
from tests.fake_embedder import HashingEmbedder
from tests.tool_schemas import SEARCH_MEMORY_TOOLS as TOOLS

COUNTER = TokenCounter("gpt-4o")


def test_public_surface() -> None:
    assert set(langchain_agentmem.__all__) >= {
        "AgentMemoryChatHistory",
        "AgentMemoryRetriever",
        "AgentMemoryStore",
        "AgentMemoryMiddleware",
        "create_memory_tools",
    }
    for name in langchain_agentmem.__all__:
        assert getattr(langchain_agentmem, name) is not None


def manager(summary: str) -> MemoryManager:
    """A manager whose session has ``summary`` as its rolling summary."""
    sessions = InMemorySessionStore()
    sessions.set_state("s1", SUMMARY_STATE_KEY, {"version": 1, "text": summary, "watermark": 0})
    long_term = LongTermMemory(
        store=InMemoryMemoryStore(dimension=32), embedder=HashingEmbedder(32), user_id="alice"
    )
    return MemoryManager.from_parts(
        user_id="alice", session_id="s1", sessions=sessions, long_term=long_term, model="gpt-4o"
    )


def turn(i: int, words: int, with_tool: bool) -> list[BaseMessage]:
    text = " ".join(["word"] * words)
    out: list[BaseMessage] = [HumanMessage(f"q{i} {text}")]
    if with_tool:
        out += [
            AIMessage(
                "", tool_calls=[{"id": f"c{i}", "name": "search_memory", "args": {"query": text}}]
            ),
            ToolMessage(f"result {text}", tool_call_id=f"c{i}"),
        ]
    out.append(AIMessage(f"a{i} {text}"))
    return out


@settings(max_examples=40, deadline=None)
@given(
    turns=st.lists(st.tuples(st.integers(1, 60), st.booleans()), min_size=1, max_size=8),
    budget=st.integers(150, 900),
)
def test_fit_never_exceeds_budget_nor_splits_tool_calls(
    turns: list[tuple[int, bool]], budget: int
) -> None:
    messages = [m for i, (w, t) in enumerate(turns) for m in turn(i, w, t)]
    messages.append(HumanMessage("final question"))
    built = manager("They talked.").gather_context(
        "final question",
        budget,
        history=[from_langchain(m) for m in messages],
        tools=TOOLS,
        system_prompt="Be brief.",
        top_k=0,
        include_query=False,
    )
    kept = [messages[i] for i in built.kept]
    assert kept[-1] == messages[-1]
    assert not isinstance(kept[0], ToolMessage)
    recount = COUNTER.count_messages(
        [Message(role="system", content=built.system), *(from_langchain(m) for m in kept)],
        tools=TOOLS,
    )
    assert recount == built.token_count <= budget
    ids = {m.tool_calls[0]["id"] for m in kept if isinstance(m, AIMessage) and m.tool_calls}
    assert {m.tool_call_id for m in kept if isinstance(m, ToolMessage)} == ids


def test_working_memory_is_a_block_of_the_system_message() -> None:
    mem = manager("They planned a release.")
    mem.working.push_task("plan the Falcon release")
    mem.update_working_memory("deadline", "Friday")
    messages = [m for i in range(6) for m in turn(i, 20, i % 2 == 0)]
    messages.append(HumanMessage("what is left?"))
    built = mem.gather_context(
        None,
        700,
        history=[from_langchain(m) for m in messages],
        tools=TOOLS,
        system_prompt="Be brief.",
        include_query=False,
    )
    system = built.system
    assert system.index("Be brief.") < system.index("<conversation_summary>")
    assert system.index("<conversation_summary>") < system.index("<working_memory>")
    assert "plan the Falcon release" in system
    kept = [messages[i] for i in built.kept]
    recount = COUNTER.count_messages(
        [Message(role="system", content=system), *(from_langchain(m) for m in kept)], tools=TOOLS
    )
    assert recount == built.token_count <= 700
    assert built.ledger["tools"] > 0
    assert sum(built.ledger.values()) == built.token_count
    assert built.omitted.get("recent", 0) == len(messages) - len(kept)
