"""Unit (offline): public surface, and the exact budget fit the middleware relies on."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

import langchain_agentmem
from agentmem.tokens import TokenCounter
from agentmem.types import Message
from langchain_agentmem._budget import fit_request
from langchain_agentmem._convert import from_langchain

COUNTER = TokenCounter("gpt-4o")
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search_memory",
            "description": "Search memories.",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
        },
    }
]


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
    fitted = fit_request(
        COUNTER,
        max_tokens=budget,
        system="Be brief.",
        messages=messages,
        tools=TOOLS,
        hits=[],
        summary="They talked.",
        memory_share=0.3,
    )
    kept = [messages[i] for i in fitted.keep]
    assert kept[-1] == messages[-1]
    assert not isinstance(kept[0], ToolMessage)
    recount = COUNTER.count_messages(
        [Message(role="system", content=fitted.system), *(from_langchain(m) for m in kept)],
        tools=TOOLS,
    )
    assert recount == fitted.tokens <= budget
    ids = {m.tool_calls[0]["id"] for m in kept if isinstance(m, AIMessage) and m.tool_calls}
    assert {m.tool_call_id for m in kept if isinstance(m, ToolMessage)} == ids


def test_working_memory_is_a_block_of_the_system_message() -> None:
    from agentmem.working import WorkingMemory

    wm = WorkingMemory(token_counter=COUNTER)
    wm.push_task("plan the Falcon release")
    wm.set_variable("deadline", "Friday")
    messages = [m for i in range(6) for m in turn(i, 20, i % 2 == 0)]
    messages.append(HumanMessage("what is left?"))
    fitted = fit_request(
        COUNTER,
        max_tokens=700,
        system="Be brief.",
        messages=messages,
        tools=TOOLS,
        hits=[],
        summary="They planned a release.",
        memory_share=0.3,
        working=wm.get_context_for_llm,
    )
    system = fitted.system
    assert system.index("Be brief.") < system.index("<conversation_summary>")
    assert system.index("<conversation_summary>") < system.index("<working_memory>")
    assert "plan the Falcon release" in system
    kept = [messages[i] for i in fitted.keep]
    recount = COUNTER.count_messages(
        [Message(role="system", content=system), *(from_langchain(m) for m in kept)], tools=TOOLS
    )
    assert recount == fitted.tokens <= 700
    assert fitted.context.ledger["tools"] > 0
    assert sum(fitted.context.ledger.values()) == fitted.tokens
    assert fitted.context.omitted.get("recent", 0) == len(messages) - len(kept)
