"""OpenAIChatModel against a local stub that speaks the chat-completions wire format."""

from __future__ import annotations

import socket
from collections.abc import Callable

import openai
import pytest
from pydantic import BaseModel

from agentmem.errors import (
    LLMConnectionError,
    LLMOutputError,
    LLMResponseError,
    LLMTimeoutError,
)
from agentmem.llm import complete_json
from agentmem.llm.openai import OpenAIChatModel
from tests.stub_openai import (
    API_KEY,
    Delay,
    ErrorStatus,
    Malformed,
    Reply,
    StubOpenAI,
    factory_fixtures,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

ASK = [{"role": "user", "content": "Remember: I only write Python."}]


class Memory(BaseModel):
    content: str
    importance: float


GOOD = '{"content": "writes Python", "importance": 0.8}'
EXPECTED = Memory(content="writes Python", importance=0.8)

Factory = Callable[..., OpenAIChatModel]


stub, make_llm, amake_llm = factory_fixtures(
    OpenAIChatModel, model="stub-model", api_key=API_KEY, name="make_llm"
)
"""Models pointed at the stub, SDK retries off unless a test asks for them."""


def unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- success and wire format ----------------------------------------------------------------


def test_complete_returns_the_first_choice(stub: StubOpenAI, make_llm: Factory) -> None:
    stub.enqueue(Reply("Noted: Python only."))
    assert make_llm().complete(ASK) == "Noted: Python only."


def test_request_wire_format(stub: StubOpenAI, make_llm: Factory) -> None:
    stub.enqueue(Reply("ok"))
    llm = make_llm(model="my-model", temperature=0.3, max_tokens=64, extra_body={"top_k": 5})
    llm.complete([{"role": "system", "content": "Be brief."}, *ASK])
    (request,) = stub.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.body["model"] == "my-model"
    assert request.body["messages"] == [{"role": "system", "content": "Be brief."}, *ASK]
    assert request.body["temperature"] == 0.3
    assert request.body["max_tokens"] == 64
    assert request.body["top_k"] == 5
    assert "response_format" not in request.body  # plain completions are not JSON mode
    assert "stream" not in request.body or request.body["stream"] is False


def test_defaults_send_temperature_zero_and_nothing_unasked(
    stub: StubOpenAI, make_llm: Factory
) -> None:
    stub.enqueue(Reply("ok"), Reply("ok"))
    make_llm().complete(ASK)
    make_llm(temperature=None).complete(ASK)
    first, second = (r.body for r in stub.requests)
    assert first["temperature"] == 0.0
    assert "temperature" not in second
    assert "max_tokens" not in first


def test_null_content_is_an_empty_string(stub: StubOpenAI, make_llm: Factory) -> None:
    stub.enqueue(Reply(None))
    assert make_llm().complete(ASK) == ""


def test_config_from_environment(stub: StubOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-0000")
    stub.enqueue(Reply("from env"))
    llm = OpenAIChatModel("stub-model", max_retries=0)
    try:
        assert llm.complete(ASK) == "from env"
    finally:
        llm.close()
    assert stub.requests[0].headers["authorization"] == "Bearer sk-from-env-0000"


def test_injected_client_is_used_and_left_open(stub: StubOpenAI) -> None:
    client = openai.OpenAI(base_url=stub.base_url, api_key=API_KEY, max_retries=0)
    stub.enqueue(Reply("one"), Reply("two"))
    llm = OpenAIChatModel("stub-model", client=client)
    assert llm.complete(ASK) == "one"
    llm.close()
    assert client.chat.completions.create(model="m", messages=ASK).choices[0].message.content == (
        "two"
    )
    client.close()


async def test_only_sync_client_injected_serves_async_calls(stub: StubOpenAI) -> None:
    client = openai.OpenAI(base_url=stub.base_url, api_key=API_KEY, max_retries=0)
    stub.enqueue(Reply("via thread"))
    llm = OpenAIChatModel("stub-model", client=client)
    assert await llm.acomplete(ASK) == "via thread"
    client.close()


# -- JSON completion ----------------------------------------------------------------------


def test_complete_json_uses_json_mode_and_retries(stub: StubOpenAI, make_llm: Factory) -> None:
    stub.enqueue(Reply('{"content": "writes Pyth'), Reply(f"```json\n{GOOD}\n```"))
    assert make_llm().complete_json(ASK, Memory) == EXPECTED
    first, retry = (r.body for r in stub.requests)
    assert first["response_format"] == {"type": "json_object"}
    assert retry["response_format"] == {"type": "json_object"}
    assert "JSON" in first["messages"][0]["content"]  # json_object mode requires the word
    assert retry["messages"][-2] == {"role": "assistant", "content": '{"content": "writes Pyth'}
    assert "incomplete" in retry["messages"][-1]["content"]


def test_generic_complete_json_delegates_to_the_adapter(
    stub: StubOpenAI, make_llm: Factory
) -> None:
    stub.enqueue(Reply(GOOD))
    assert complete_json(make_llm(), ASK, Memory) == EXPECTED
    assert stub.requests[0].body["response_format"] == {"type": "json_object"}


def test_json_mode_can_be_turned_off(stub: StubOpenAI, make_llm: Factory) -> None:
    stub.enqueue(Reply(GOOD))
    assert make_llm(json_mode=False).complete_json(ASK, Memory) == EXPECTED
    assert "response_format" not in stub.requests[0].body


def test_complete_json_gives_up_after_bounded_retries(stub: StubOpenAI, make_llm: Factory) -> None:
    stub.enqueue(*[Reply("no JSON here, sorry") for _ in range(5)])
    with pytest.raises(LLMOutputError) as info:
        make_llm().complete_json(ASK, Memory, max_retries=2)
    assert info.value.attempts == 3
    assert len(stub.requests) == 3
    assert info.value.raw_output == "no JSON here, sorry"


# -- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [400, 401, 404, 429, 500, 503])
def test_error_status_becomes_llm_response_error(
    stub: StubOpenAI, make_llm: Factory, status: int
) -> None:
    stub.enqueue(ErrorStatus(status, f"Incorrect API key provided: {API_KEY}"))
    with pytest.raises(LLMResponseError) as info:
        make_llm().complete(ASK)
    message = str(info.value)
    assert info.value.status_code == status
    assert str(status) in message
    assert stub.base_url in message
    assert "stub-model" in message
    assert API_KEY not in message
    assert API_KEY[6:] not in message


@pytest.mark.parametrize("status", [429, 500])
def test_sdk_retries_transient_errors(stub: StubOpenAI, make_llm: Factory, status: int) -> None:
    stub.enqueue(ErrorStatus(status, headers={"retry-after-ms": "1"}), Reply("second try"))
    assert make_llm(max_retries=1).complete(ASK) == "second try"
    assert len(stub.requests) == 2


def test_timeout_becomes_llm_timeout_error(stub: StubOpenAI, make_llm: Factory) -> None:
    stub.enqueue(Delay(30))
    with pytest.raises(LLMTimeoutError) as info:
        make_llm(timeout=0.5).complete(ASK)
    assert isinstance(info.value, TimeoutError)
    assert stub.base_url in str(info.value)
    assert "0.5" in str(info.value)


def test_connection_refused_becomes_llm_connection_error() -> None:
    url = f"http://127.0.0.1:{unused_port()}/v1"
    llm = OpenAIChatModel("stub-model", base_url=url, api_key=API_KEY, max_retries=0)
    with pytest.raises(LLMConnectionError) as info:
        llm.complete(ASK)
    llm.close()
    assert isinstance(info.value, ConnectionError)
    assert url in str(info.value)
    assert API_KEY not in str(info.value)


@pytest.mark.parametrize("body", [b"this is not json", b'{"unexpected": true}'])
def test_malformed_body_becomes_llm_response_error(
    stub: StubOpenAI, make_llm: Factory, body: bytes
) -> None:
    stub.enqueue(Malformed(body))
    with pytest.raises(LLMResponseError, match="OpenAI-compatible"):
        make_llm().complete(ASK)


def test_model_errors_are_not_retried_as_bad_json(stub: StubOpenAI, make_llm: Factory) -> None:
    stub.enqueue(ErrorStatus(500), Reply(GOOD))
    with pytest.raises(LLMResponseError):
        make_llm().complete_json(ASK, Memory)
    assert len(stub.requests) == 1


# -- async twins ----------------------------------------------------------------------------


async def test_acomplete(stub: StubOpenAI, amake_llm: Factory) -> None:
    stub.enqueue(Reply("async hello"))
    assert await amake_llm().acomplete(ASK) == "async hello"
    assert stub.requests[0].headers["x-stainless-async"] != "false"


async def test_acomplete_json_retries(stub: StubOpenAI, amake_llm: Factory) -> None:
    stub.enqueue(Reply('{"content": "writes Python", "importance": "high"}'), Reply(GOOD))
    assert await amake_llm().acomplete_json(ASK, Memory) == EXPECTED
    assert len(stub.requests) == 2
    assert "importance" in stub.requests[1].body["messages"][-1]["content"]


async def test_acomplete_timeout(stub: StubOpenAI, amake_llm: Factory) -> None:
    stub.enqueue(Delay(30))
    with pytest.raises(LLMTimeoutError):
        await amake_llm(timeout=0.5).acomplete(ASK)


async def test_acomplete_error_status(stub: StubOpenAI, amake_llm: Factory) -> None:
    stub.enqueue(ErrorStatus(429, "Rate limit reached", "rate_limit_error"))
    with pytest.raises(LLMResponseError) as info:
        await amake_llm().acomplete(ASK)
    assert info.value.status_code == 429
    assert "Rate limit reached" in str(info.value)


async def test_acomplete_connection_refused() -> None:
    url = f"http://127.0.0.1:{unused_port()}/v1"
    llm = OpenAIChatModel("stub-model", base_url=url, api_key=API_KEY, max_retries=0)
    try:
        with pytest.raises(LLMConnectionError):
            await llm.acomplete(ASK)
    finally:
        await llm.aclose()
