"""ChatMessage <-> agentmem Message: what LlamaIndex puts in comes back out unchanged."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llama_index.core.base.llms.types import (
    ChatMessage,
    ImageBlock,
    MessageRole,
    TextBlock,
    ToolCallBlock,
)
from llama_index.core.llms.llm import ToolSelection

from agentmem import TokenCounter
from agentmem.errors import InvalidMessageError
from llamaindex_agentmem._convert import from_agentmem, to_agentmem


def roundtrip(message: ChatMessage) -> ChatMessage:
    return from_agentmem(to_agentmem(message))


def assert_comes_back(message: ChatMessage) -> None:
    """``message`` comes back with the role, content and additional_kwargs it had."""
    expected = (message.role, message.content, copy.deepcopy(message.additional_kwargs))
    back = roundtrip(message)
    assert (back.role, back.content, back.additional_kwargs) == expected


def test_tool_call_blocks_become_counted_tool_calls_and_come_back() -> None:
    call = ToolCallBlock(tool_call_id="c1", tool_name="weather", tool_kwargs={"city": "Oslo"})
    message = ChatMessage(role="assistant", blocks=[TextBlock(text="Checking."), call])
    ours = to_agentmem(message)
    assert [(c.id, c.name, json.loads(c.arguments)) for c in ours.tool_calls] == [
        ("c1", "weather", {"city": "Oslo"})
    ]
    counter = TokenCounter("gpt-4o")
    without = counter.count_message(ours.replace(tool_calls=()))
    assert counter.count_message(ours) > without  # the call's tokens are counted
    back = roundtrip(message)
    assert back.content == "Checking."
    blocks = [b for b in back.blocks if isinstance(b, ToolCallBlock)]
    assert [(b.tool_call_id, b.tool_name, b.tool_kwargs) for b in blocks] == [
        ("c1", "weather", {"city": "Oslo"})
    ]


def test_string_tool_kwargs_stay_strings() -> None:
    call = ToolCallBlock(tool_call_id="c1", tool_name="run", tool_kwargs='{"a": 1')
    back = roundtrip(ChatMessage(role="assistant", blocks=[call]))
    assert back.blocks[0].tool_kwargs == '{"a": 1'  # type: ignore[union-attr]


def test_openai_style_tool_calls_in_additional_kwargs_round_trip() -> None:
    calls = [
        {
            "id": "call_9",
            "type": "function",
            "function": {"name": "lookup_order", "arguments": '{"order": 48213}'},
        }
    ]
    message = ChatMessage(role="assistant", content="", additional_kwargs={"tool_calls": calls})
    ours = to_agentmem(message)
    assert ours.tool_calls[0].name == "lookup_order"
    assert roundtrip(message).additional_kwargs["tool_calls"] == calls


def test_tool_selection_objects_are_read() -> None:
    sel = ToolSelection(tool_id="t1", tool_name="add", tool_kwargs={"a": 1, "b": 2})
    ours = to_agentmem(ChatMessage(role="assistant", additional_kwargs={"tool_calls": [sel]}))
    assert (ours.tool_calls[0].id, json.loads(ours.tool_calls[0].arguments)) == (
        "t1",
        {"a": 1, "b": 2},
    )


def test_tool_result_keeps_its_call_id() -> None:
    message = ChatMessage(
        role="tool", content="21 degrees", additional_kwargs={"tool_call_id": "c1"}
    )
    ours = to_agentmem(message)
    assert (ours.role, ours.tool_call_id) == ("tool", "c1")
    assert_comes_back(message)


def test_return_direct_answer_with_call_id_is_accepted() -> None:
    # FunctionAgent writes an assistant message carrying the tool_call_id of a
    # return_direct tool; it must be stored and restored as is.
    message = ChatMessage(role="assistant", content="42", additional_kwargs={"tool_call_id": "c7"})
    assert_comes_back(message)


def test_tool_result_without_call_id_is_kept_as_text() -> None:
    back = roundtrip(ChatMessage(role="tool", content="observation"))
    assert (back.role, back.content) == (MessageRole.TOOL, "observation")


@pytest.mark.parametrize("role", ["developer", "chatbot", "model", "function"])
def test_other_roles_come_back(role: str) -> None:
    extra = {"tool_call_id": "c1"} if role == "function" else {}
    back = roundtrip(ChatMessage(role=role, content="x", additional_kwargs=extra))
    assert back.role == MessageRole(role)


def test_image_blocks_survive() -> None:
    image = ImageBlock(url="https://example.com/cat.png")
    message = ChatMessage(role="user", blocks=[TextBlock(text="what is this?"), image])
    back = roundtrip(message)
    assert back.content == "what is this?"
    assert [type(b) for b in back.blocks] == [TextBlock, ImageBlock]
    assert str(back.blocks[1].url) == "https://example.com/cat.png"  # type: ignore[union-attr]


def test_name_and_extra_json_kwargs_survive_and_objects_are_refused() -> None:
    extra = {"name": "bob", "session_id": "s1"}
    back = roundtrip(ChatMessage(role="user", content="hi", additional_kwargs=extra))
    assert back.additional_kwargs == extra
    message = ChatMessage(
        role="user", content="hi", additional_kwargs={**extra, "client": object()}
    )
    with pytest.raises(InvalidMessageError, match=r"additional_kwargs\['client'\] is not JSON"):
        to_agentmem(message)


_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)


@settings(max_examples=60, deadline=None)
@given(
    content=_text,
    calls=st.lists(
        st.tuples(
            st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True),
            st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True), _text, max_size=3),
        ),
        max_size=3,
    ),
)
def test_assistant_messages_round_trip(
    content: str, calls: list[tuple[str, dict[str, str]]]
) -> None:
    blocks: list[TextBlock | ToolCallBlock] = [TextBlock(text=content)] if content else []
    blocks += [
        ToolCallBlock(tool_call_id=f"c{i}", tool_name=name, tool_kwargs=kwargs)
        for i, (name, kwargs) in enumerate(calls)
    ]
    message = ChatMessage(role="assistant", blocks=blocks or [TextBlock(text="")])
    back = roundtrip(message)
    assert (back.content or "") == content
    got = [
        (b.tool_call_id, b.tool_name, b.tool_kwargs)
        for b in back.blocks
        if isinstance(b, ToolCallBlock)
    ]
    assert got == [(f"c{i}", n, k) for i, (n, k) in enumerate(calls)]
