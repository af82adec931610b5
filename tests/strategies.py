"""Hypothesis strategies for conversations (shared by property tests)."""

from __future__ import annotations

import json

from hypothesis import strategies as st

from agentmem.types import Message, ToolCall

# Mixed scripts: ASCII, Latin-1, CJK, emoji — BPE merges differ across all of them.
TEXT = st.lists(
    st.one_of(
        st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=12),
        st.text(st.characters(min_codepoint=0xA0, max_codepoint=0x17F), max_size=6),
        st.text(st.characters(min_codepoint=0x4E00, max_codepoint=0x4FFF), max_size=8),
        st.sampled_from(["\n", "\t", " ", "😀", "<|endoftext|>", "。", "，", "  \n\n"]),
    ),
    max_size=8,
).map("".join)
NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True)


@st.composite
def tool_calls(draw: st.DrawFn) -> tuple[ToolCall, ...]:
    n = draw(st.integers(1, 3))
    return tuple(
        ToolCall(
            id=f"call_{draw(st.uuids()).hex[:8]}",
            name=draw(NAMES),
            arguments=json.dumps({"q": draw(TEXT)}, ensure_ascii=False),
        )
        for _ in range(n)
    )


@st.composite
def conversations(draw: st.DrawFn, max_turns: int = 25, orphans: bool = True) -> list[Message]:
    """Random chats: system, user, assistant (with names), tool-call rounds, orphan tools."""
    out: list[Message] = []
    if draw(st.booleans()):
        out.append(Message(role="system", content=draw(TEXT)))
    for _ in range(draw(st.integers(0, max_turns))):
        kind = draw(st.sampled_from(["user", "assistant", "tools", "system", "orphan"]))
        if kind == "tools":
            calls = draw(tool_calls())
            out.append(Message(role="assistant", content=draw(TEXT), tool_calls=calls))
            answered = draw(st.integers(0, len(calls)))
            out.extend(
                Message(role="tool", content=draw(TEXT), tool_call_id=c.id)
                for c in calls[:answered]
            )
        elif kind == "orphan":
            if orphans:
                out.append(Message(role="tool", content=draw(TEXT), tool_call_id="call_lost"))
        elif kind == "system":
            out.append(Message(role="system", content=draw(TEXT)))
        else:
            name = draw(st.none() | NAMES)
            out.append(Message(role=kind, content=draw(TEXT), name=name))
    return out
