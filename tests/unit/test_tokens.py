"""Token counts equal tiktoken's count of the rendered chat, for both encodings."""

from __future__ import annotations

import warnings

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from agentmem import Message, TokenCounter, TokenizerUnavailableError
from agentmem._encodings import load_encoding
from agentmem.tokens import render_tools
from tests.chatml import reference_count
from tests.strategies import TEXT, conversations

MODELS = ["gpt-4o", "gpt-4", "gpt-3.5-turbo"]


@pytest.mark.parametrize("model", MODELS)
@settings(max_examples=60, deadline=None)
@given(chat=conversations())
def test_counts_equal_rendered_chat(model: str, chat: list[Message]) -> None:
    counter = TokenCounter(model=model)
    assert counter.count_messages(chat) == reference_count(counter.encoding, chat)


@pytest.mark.parametrize(
    ("model", "expected"),
    [("gpt-3.5-turbo-0613", 129), ("gpt-4-0613", 129), ("gpt-4", 129), ("gpt-4o", 124)],
)
def test_matches_the_api_counts_published_in_the_openai_cookbook(model: str, expected: int) -> None:
    # "How to count tokens with tiktoken": prompt_tokens reported by the API for this chat.
    chat = [
        {
            "role": "system",
            "content": "You are a helpful, pattern-following assistant that translates corporate jargon into plain English.",
        },
        {
            "role": "system",
            "name": "example_user",
            "content": "New synergies will help drive top-line growth.",
        },
        {
            "role": "system",
            "name": "example_assistant",
            "content": "Things working well together will increase revenue.",
        },
        {
            "role": "system",
            "name": "example_user",
            "content": "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage.",
        },
        {
            "role": "system",
            "name": "example_assistant",
            "content": "Let's talk later when we're less busy about how to do better.",
        },
        {
            "role": "user",
            "content": "This late pivot means we don't have time to boil the ocean for the client deliverable.",
        },
    ]
    assert TokenCounter(model=model).count_messages(chat) == expected


@settings(max_examples=100, deadline=None)
@given(text=TEXT)
def test_offline_encodings_equal_tiktokens_own(text: str) -> None:
    # Our offline loader builds the encodings from llama-index's files; tiktoken's own
    # loader, pointed at the same files, must tokenize identically.
    for name in ("o200k_base", "cl100k_base"):
        ours = load_encoding(name)
        theirs = _tiktoken_own(name)
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text)
        assert ours._special_tokens == theirs._special_tokens
        assert ours._pat_str == theirs._pat_str


_OWN: dict[str, tiktoken.Encoding] = {}


def _tiktoken_own(name: str) -> tiktoken.Encoding:
    if name not in _OWN:
        from agentmem._encodings import _llama_index_cache_dir

        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("TIKTOKEN_CACHE_DIR", str(_llama_index_cache_dir()))
            constructor = tiktoken.registry.ENCODING_CONSTRUCTORS
            if constructor is None:
                tiktoken.registry._find_constructors()
                constructor = tiktoken.registry.ENCODING_CONSTRUCTORS
            assert constructor is not None
            _OWN[name] = tiktoken.Encoding(**constructor[name]())
    return _OWN[name]


def test_each_message_is_tokenized_once() -> None:
    counter = TokenCounter()
    calls = 0
    original = counter.count_text

    def counting(text: str) -> int:
        nonlocal calls
        calls += 1
        return original(text)

    counter.count_text = counting  # type: ignore[method-assign]
    chat = [Message(role="user", content=f"message {i}") for i in range(50)]
    counter.count_messages(chat)
    first = calls
    counter.count_messages(chat)
    assert first > 0
    assert calls == first


def test_tool_schemas_are_counted() -> None:
    counter = TokenCounter()
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather for a city",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "city": {"type": "string", "description": "City name"},
                        "unit": {"type": "string", "enum": ["c", "f"]},
                    },
                    "required": ["city"],
                },
            },
        }
    ]
    chat = [{"role": "user", "content": "weather?"}]
    rendered = render_tools(tools)
    assert "type get_weather = (_: {" in rendered
    assert 'unit?: "c" | "f",' in rendered
    with_tools = counter.count_messages(chat, tools=tools)
    assert with_tools == counter.count_messages(chat) + counter.count_text(rendered) + 9
    with_system = [{"role": "system", "content": "hi"}, *chat]
    assert counter.count_messages(with_system, tools=tools) == (
        counter.count_messages(with_system) + counter.count_text(rendered) + 9 - 4
    )


def test_unknown_model_falls_back_with_a_warning() -> None:
    with pytest.warns(UserWarning, match="o200k_base"):
        counter = TokenCounter(model="my-local-llama")
    assert counter.encoding_name == "o200k_base"


def test_known_model_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert TokenCounter(model="gpt-4o-mini").encoding_name == "o200k_base"


# tiktoken tries to download the file; pytest-socket blocks it and warns, as intended here.
@pytest.mark.filterwarnings("ignore:A test tried to use socket")
def test_missing_encoding_is_a_clear_error() -> None:
    # p50k_base is not shipped offline, and sockets are disabled in unit tests.
    load_encoding.cache_clear()
    with pytest.raises(TokenizerUnavailableError, match="TIKTOKEN_CACHE_DIR"):
        TokenCounter(model="text-davinci-003")


@settings(max_examples=100, deadline=None)
@given(text=TEXT, limit=st.integers(0, 40))
def test_truncate_text_fits(text: str, limit: int) -> None:
    counter = TokenCounter()
    cut = counter.truncate_text(text, limit)
    assert counter.count_text(cut) <= limit
    assert text.startswith(cut)
