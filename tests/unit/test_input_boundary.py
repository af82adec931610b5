"""Unencodable text and over-deep values are refused at the boundary with agentmem errors.

A lone surrogate (``"\\ud800"``) cannot be encoded as UTF-8, and a value nested hundreds of
levels deep overflows pydantic's serializer or Python's recursion limit. Both must be
refused where they enter (messages, working memory, session state, embedder input) with
``InvalidMessageError`` / ``InvalidValueError``, and nothing may be written.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentmem.embeddings.base import validate_text, validate_texts
from agentmem.errors import InvalidMessageError, InvalidValueError
from agentmem.storable import MAX_JSON_DEPTH, json_problem, json_text
from agentmem.stores.memory import InMemorySessionStore
from agentmem.types import Message, ToolCall
from agentmem.working import STATE_KEY, WorkingMemory

SURROGATE = "\ud800"


def nested(depth: int, kind: str = "list") -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value] if kind == "list" else {"a": value}
    return value


# -- messages ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"content": SURROGATE}, "content"),
        ({"content": "ok", "name": "x" + SURROGATE}, "name"),
        ({"content": "ok", "metadata": {"k": SURROGATE}}, "surrogate"),
        ({"content": "ok", "metadata": {SURROGATE: 1}}, "surrogate"),
        ({"content": "ok", "metadata": {"k": nested(900)}}, "64 levels"),
        ({"content": "ok", "metadata": {"k": nested(5000, "dict")}}, "64 levels"),
    ],
)
def test_message_refuses_unstorable_input(fields: dict[str, Any], named: str) -> None:
    with pytest.raises(InvalidMessageError, match=named) as info:
        Message.create("user", **fields)
    assert "errors='replace'" in str(info.value) or "flatten" in str(info.value)


def test_tool_call_and_tool_message_refuse_surrogates() -> None:
    with pytest.raises(ValueError, match="lone surrogate"):
        ToolCall(id="c1", name="f", arguments='{"q": "' + SURROGATE + '"}')
    with pytest.raises(InvalidMessageError, match="tool_call_id"):
        Message.create("tool", "result", tool_call_id="c" + SURROGATE)


def test_message_at_the_depth_limit_round_trips() -> None:
    message = Message.create("user", "ok", metadata={"k": nested(MAX_JSON_DEPTH - 1)})
    assert Message.from_json(message.to_json()) == message


def test_store_append_of_refused_message_writes_nothing() -> None:
    store = InMemorySessionStore()
    with pytest.raises(InvalidMessageError):
        store.append("s1", [Message.create("user", "a"), Message.create("user", SURROGATE)])
    assert store.count("s1") == 0


# -- working memory ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda w: w.set_variable("k", SURROGATE), "lone surrogate"),
        (lambda w: w.set_variable("k", {"a": ["x" + SURROGATE]}), r"\['a'\]\[0\]"),
        (lambda w: w.set_variable(SURROGATE, 1), "variable key"),
        (lambda w: w.set_variable("k", nested(900)), "64 levels"),
        (lambda w: w.set_variable("k", nested(5000, "dict")), "64 levels"),
        (lambda w: w.add_scratchpad_entry(SURROGATE), "scratchpad entry"),
        (lambda w: w.push_task("book " + SURROGATE), "task description"),
        (lambda w: w.add_hypothesis(SURROGATE, 0.5), "hypothesis"),
        (lambda w: w.add_hypothesis("h", 0.5, evidence=[SURROGATE]), "evidence item"),
    ],
)
def test_working_memory_refuses_unstorable_input_and_writes_nothing(call: Any, named: str) -> None:
    store = InMemorySessionStore()
    wm = WorkingMemory(session_id="s1", store=store)
    with pytest.raises(InvalidValueError, match=named):
        call(wm)
    assert store.get_state("s1", STATE_KEY) is None
    assert wm.to_dict() == WorkingMemory().to_dict()


def test_variable_at_the_depth_limit_is_stored_and_reloaded() -> None:
    store = InMemorySessionStore()
    value = nested(MAX_JSON_DEPTH, "dict")
    WorkingMemory(session_id="s1", store=store).set_variable("k", value)
    assert WorkingMemory(session_id="s1", store=store).get_variable("k") == value
    with pytest.raises(InvalidValueError, match="64 levels"):
        WorkingMemory(session_id="s1", store=store).set_variable("k", [value])


# -- session state and embedder input ------------------------------------------------------


def test_session_state_refuses_surrogates_and_depth() -> None:
    store = InMemorySessionStore()
    with pytest.raises(InvalidValueError, match="lone surrogate"):
        store.set_state("s1", "k", {"v": SURROGATE})
    with pytest.raises(InvalidValueError, match="128 levels"):
        store.set_state("s1", "k", {"v": nested(5000)})
    with pytest.raises(InvalidValueError, match="state key"):
        store.set_state("s1", SURROGATE, {"v": 1})
    assert store.get_state("s1", "k") is None


def test_embedder_input_refuses_surrogates() -> None:
    with pytest.raises(InvalidValueError, match="lone surrogate"):
        validate_text("query " + SURROGATE)
    with pytest.raises(InvalidValueError, match=r"texts\[1\]"):
        validate_texts(["fine", SURROGATE])


# -- the checker itself --------------------------------------------------------------------

# Text that may hold lone surrogates (category Cs), floats that may be NaN or infinite.
ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=6)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | ANY_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ANY_TEXT, inner, max_size=4),
    max_leaves=30,
)


@given(JSON)
def test_json_problem_accepts_what_json_and_utf8_accept(value: Any) -> None:
    try:
        expected = json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except (ValueError, UnicodeEncodeError):
        assert json_problem(value, what="value") is not None
    else:
        assert json_text(value, what="value").encode("utf-8") == expected


def test_json_problem_is_iterative_and_names_the_fix() -> None:
    problem = json_problem(nested(100_000), what="value")
    assert problem is not None
    assert "more than 64 levels" in problem
    assert "flatten" in problem
    assert json_problem(nested(MAX_JSON_DEPTH), what="value") is None


def test_json_problem_shared_subvalues_are_not_cycles() -> None:
    shared = [1, 2]
    assert json_problem({"a": shared, "b": [shared, shared]}, what="value") is None
    loop: list[Any] = []
    loop.append(loop)
    assert "circular" in str(json_problem(loop, what="value"))
