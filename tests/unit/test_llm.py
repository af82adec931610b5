"""Unit tests for the chat-model protocol and validated JSON completion (offline)."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from agentmem._sansio import Program, adrive, drive
from agentmem.errors import ConfigurationError, LLMOutputError, LLMTimeoutError
from agentmem.llm import (
    ChatModel,
    StructuredChatModel,
    acomplete_json,
    complete_json,
    complete_json_program,
)
from agentmem.llm.openai import OpenAIChatModel
from agentmem.types import Message
from tests.fakes import ScriptedChatModel


class Memory(BaseModel):
    content: str
    importance: float = Field(ge=0, le=1)


class Loose(BaseModel):
    """Every field optional: the worst case for accepting a fragment by mistake."""

    note: str | None = None
    inner: Loose | None = None
    tags: list[str] = []


ASK = [{"role": "user", "content": "Remember: I only write Python."}]
GOOD = '{"content": "writes Python", "importance": 0.8}'
EXPECTED = Memory(content="writes Python", importance=0.8)


async def run(mode: str, llm: Any, schema: type[BaseModel], **kw: Any) -> BaseModel:
    """Call the sync or async entry point, so every behaviour is checked on both."""
    messages = kw.pop("messages", ASK)
    if mode == "sync":
        return complete_json(llm, messages, schema, **kw)
    return await acomplete_json(llm, messages, schema, **kw)


both = pytest.mark.parametrize("mode", ["sync", "async"])


@both
@pytest.mark.parametrize(
    "reply",
    [
        GOOD,
        f"```json\n{GOOD}\n```",
        f"```\n{GOOD}\n```",
        f"Sure! Here is the memory you asked for:\n\n{GOOD}",
        f"Here it is:\n```json\n{GOOD}\n```\nLet me know if you need more.",
        f"I read {{the note}} carefully. {GOOD} Done.",
        f"  \n{GOOD}\n\nHope this helps!",
    ],
)
async def test_extracts_the_object_from_fences_and_prose(mode: str, reply: str) -> None:
    llm = ScriptedChatModel([reply])
    assert await run(mode, llm, Memory) == EXPECTED
    assert len(llm.calls) == 1


@both
async def test_prompt_asks_for_json_matching_the_schema(mode: str) -> None:
    llm = ScriptedChatModel([GOOD])
    await run(mode, llm, Memory)
    system, user = llm.calls[0]
    assert system["role"] == "system"
    assert "JSON" in system["content"]
    assert '"importance"' in system["content"]  # the schema is shown to the model
    assert user == ASK[0]


async def test_instruction_is_merged_into_an_existing_system_message() -> None:
    llm = ScriptedChatModel([GOOD])
    messages = [{"role": "system", "content": "You extract memories."}, *ASK]
    complete_json(llm, messages, Memory)
    prompt = llm.calls[0]
    assert [m["role"] for m in prompt] == ["system", "user"]
    assert prompt[0]["content"].startswith("You extract memories.")
    assert "JSON Schema" in prompt[0]["content"]
    assert messages[0] == {"role": "system", "content": "You extract memories."}  # not mutated


async def test_accepts_agentmem_messages() -> None:
    llm = ScriptedChatModel([GOOD])
    complete_json(llm, [Message(role="user", content="hi")], Memory)
    assert llm.calls[0][-1] == {"role": "user", "content": "hi"}


@both
@pytest.mark.parametrize(
    ("bad", "error_mentions"),
    [
        ('{"content": "writes Pyth', "incomplete"),
        ('```json\n{"content": "writes Python", "importance": ', "incomplete"),
        ('{"content": "writes Python", "importance": "very"}', "importance"),
        ('{"content": "writes Python", "importance": 7}', "importance"),
        ('{"importance": 0.5}', "content"),
        ("I cannot help with that.", "no JSON object"),
        ("", "empty"),
        (f"[{GOOD}]", "array"),
        ('{"content": "x" "importance": 1}', "invalid JSON"),
    ],
)
async def test_invalid_output_is_retried_with_the_error(
    mode: str, bad: str, error_mentions: str
) -> None:
    llm = ScriptedChatModel([bad, GOOD])
    assert await run(mode, llm, Memory) == EXPECTED
    assert len(llm.calls) == 2
    first, retry = llm.calls
    assert retry[: len(first)] == first  # same conversation, then the failed turn
    assert retry[-2] == {"role": "assistant", "content": bad}
    assert retry[-1]["role"] == "user"
    assert error_mentions in retry[-1]["content"]


@both
@pytest.mark.parametrize("max_retries", [0, 1, 3])
async def test_always_invalid_raises_after_bounded_attempts(mode: str, max_retries: int) -> None:
    replies = [f"not json #{i}" for i in range(10)]
    llm = ScriptedChatModel(replies)
    with pytest.raises(LLMOutputError) as info:
        await run(mode, llm, Memory, max_retries=max_retries)
    assert info.value.attempts == max_retries + 1
    assert len(llm.calls) == max_retries + 1
    assert info.value.raw_output == f"not json #{max_retries}"
    assert "Memory" in str(info.value)
    assert isinstance(info.value, ValueError)


async def test_retry_prompts_do_not_accumulate_failures() -> None:
    llm = ScriptedChatModel(["bad 1", "bad 2", "bad 3", GOOD])
    complete_json(llm, ASK, Memory, max_retries=3)
    assert [len(c) for c in llm.calls] == [2, 4, 4, 4]
    assert llm.calls[3][-2]["content"] == "bad 3"


async def test_huge_invalid_output_is_clipped_in_the_retry_prompt() -> None:
    llm = ScriptedChatModel(["x" * 100_000, GOOD])
    complete_json(llm, ASK, Memory)
    echoed = llm.calls[1][-2]["content"]
    assert len(echoed) < 10_000
    assert echoed.endswith("[truncated]")


@both
async def test_model_errors_propagate_without_json_retries(mode: str) -> None:
    llm = ScriptedChatModel([LLMTimeoutError("slow"), GOOD])
    with pytest.raises(LLMTimeoutError):
        await run(mode, llm, Memory)
    assert len(llm.calls) == 1


@both
async def test_non_string_reply_is_a_configuration_error(mode: str) -> None:
    class ReturnsDict(ScriptedChatModel):
        def complete(self, messages: Sequence[Mapping[str, Any]], **_: Any) -> Any:
            return {"content": "x"}

        async def acomplete(self, messages: Sequence[Mapping[str, Any]], **_: Any) -> Any:
            return {"content": "x"}

    with pytest.raises(ConfigurationError, match="expected str"):
        await run(mode, ReturnsDict(), Memory)


@both
@pytest.mark.parametrize(
    ("schema", "max_retries"), [(dict, 2), (Memory, -1), (Memory, 1.5), (Memory, True)]
)
async def test_bad_options_are_rejected(mode: str, schema: Any, max_retries: Any) -> None:
    with pytest.raises(ConfigurationError):
        await run(mode, ScriptedChatModel([GOOD]), schema, max_retries=max_retries)


@both
async def test_object_without_complete_is_rejected(mode: str) -> None:
    with pytest.raises(ConfigurationError, match="complete"):
        await run(mode, object(), Memory)


class NativeJSON(ScriptedChatModel):
    """A model with its own structured-output path."""

    def __init__(self, result: Any) -> None:
        super().__init__()
        self.result = result
        self.native_calls: list[tuple[type[BaseModel], int]] = []

    def complete_json(self, messages: Any, schema: type[BaseModel], *, max_retries: int) -> Any:
        self.native_calls.append((schema, max_retries))
        return self.result

    async def acomplete_json(
        self, messages: Any, schema: type[BaseModel], *, max_retries: int
    ) -> Any:
        return self.complete_json(messages, schema, max_retries=max_retries)


@both
@pytest.mark.parametrize("result", [EXPECTED, EXPECTED.model_dump()])
async def test_native_complete_json_is_used(mode: str, result: Any) -> None:
    llm = NativeJSON(result)
    assert isinstance(llm, StructuredChatModel)
    assert await run(mode, llm, Memory, max_retries=4) == EXPECTED
    assert llm.native_calls == [(Memory, 4)]
    assert llm.calls == []  # the plain completion path was not used


@both
async def test_native_complete_json_output_is_still_validated(mode: str) -> None:
    llm = NativeJSON({"content": "x", "importance": 9})
    with pytest.raises(LLMOutputError):
        await run(mode, llm, Memory)


async def test_sync_only_model_works_from_async_code() -> None:
    class SyncOnly:
        def __init__(self) -> None:
            self.calls = 0

        def complete(self, messages: Sequence[Mapping[str, Any]]) -> str:
            self.calls += 1
            return GOOD

    llm = SyncOnly()
    assert await acomplete_json(llm, ASK, Memory) == EXPECTED  # type: ignore[arg-type]
    assert llm.calls == 1


def test_scripted_model_satisfies_the_protocol() -> None:
    assert isinstance(ScriptedChatModel(), ChatModel)
    assert not isinstance(object(), ChatModel)


json_text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=30)
prose = st.text(st.characters(blacklist_characters="{}`", blacklist_categories=["Cs"]), max_size=40)


@settings(max_examples=150, deadline=None)
@given(
    content=json_text,
    importance=st.floats(0, 1),
    before=prose,
    after=prose,
    fenced=st.booleans(),
)
def test_valid_object_round_trips_through_any_wrapping(
    content: str, importance: float, before: str, after: str, fenced: bool
) -> None:
    expected = Memory(content=content, importance=importance)
    body = expected.model_dump_json()
    reply = f"{before}\n```json\n{body}\n```\n{after}" if fenced else f"{before} {body} {after}"
    assert complete_json(ScriptedChatModel([reply]), ASK, Memory) == expected


loose_objects = st.recursive(
    st.builds(Loose, note=st.none() | json_text, tags=st.lists(json_text, max_size=3)),
    lambda inner: st.builds(Loose, note=st.none() | json_text, inner=inner),
    max_leaves=6,
)


@settings(max_examples=200, deadline=None)
@given(obj=loose_objects, data=st.data())
def test_truncated_output_is_never_accepted(obj: Loose, data: st.DataObject) -> None:
    """A cut-off reply must never pass, even as a nested fragment that fits the schema."""
    body = json.dumps(obj.model_dump(exclude_defaults=True) or {"note": None})
    cut = data.draw(st.integers(1, len(body) - 1), label="cut")
    with pytest.raises(LLMOutputError):
        complete_json(ScriptedChatModel([body[:cut]]), ASK, Loose, max_retries=0)


# -- OpenAIChatModel, offline parts (no request is sent) ------------------------------------


def test_openai_adapter_is_a_structured_chat_model() -> None:
    llm = OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1", api_key="sk-secret-123")
    assert isinstance(llm, StructuredChatModel)
    assert "sk-secret-123" not in repr(llm)
    assert "http://127.0.0.1:9/v1" in repr(llm)


def test_openai_missing_package_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)  # makes `import openai` fail
    with pytest.raises(ConfigurationError, match=r"pip install 'tiered-agentmem\[openai\]'"):
        OpenAIChatModel("m", api_key="x")


def test_openai_missing_credentials_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_ADMIN_KEY", raising=False)
    llm = OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY") as info:
        llm.complete(ASK)
    assert "http://127.0.0.1:9/v1" in str(info.value)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"model": ""},
        {"timeout": 0},
        {"timeout": float("inf")},
        {"max_retries": -1},
        {"temperature": -0.1},
        {"max_tokens": 0},
        {"client": object(), "base_url": "http://x/v1"},
        {"async_client": object(), "api_key": "k"},
    ],
)
def test_openai_bad_options_are_rejected(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        OpenAIChatModel(**kwargs)


@both
async def test_complete_json_program_composes_into_a_larger_program(mode: str) -> None:
    llm = ScriptedChatModel(["not json", GOOD, GOOD])

    def two_answers() -> Program[list[BaseModel]]:
        first = yield from complete_json_program(llm, ASK, Memory)
        second = yield from complete_json_program(llm, ASK, Memory, max_retries=0)
        return [first, second]

    program = two_answers()
    answers = drive(program) if mode == "sync" else await adrive(program)
    assert answers == [EXPECTED, EXPECTED]
    assert len(llm.calls) == 3  # one retry in the first, none in the second


class _Verdict(BaseModel):
    ok: bool


async def test_an_async_only_model_serves_acomplete_json() -> None:
    class AsyncOnly:
        async def acomplete(self, messages: object) -> str:
            return '{"ok": true}'

    msgs = [{"role": "user", "content": "?"}]
    assert await acomplete_json(AsyncOnly(), msgs, _Verdict) == _Verdict(ok=True)
    with pytest.raises(ConfigurationError, match=r"has acomplete\(\) but no complete\(\)"):
        complete_json(AsyncOnly(), msgs, _Verdict)


async def test_a_model_s_own_async_json_method_is_used() -> None:
    class AsyncJson:
        def complete(self, messages: object) -> str:
            return "not json"

        async def acomplete_json(
            self, messages: object, schema: type[_Verdict], max_retries: int = 2
        ) -> _Verdict:
            return schema(ok=True)

    msgs = [{"role": "user", "content": "?"}]
    assert await acomplete_json(AsyncJson(), msgs, _Verdict) == _Verdict(ok=True)
