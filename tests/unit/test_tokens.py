"""Token counts equal tiktoken's count of the rendered chat, for both encodings.

The encodings come from the BPE files agentmem ships (``agentmem/_tiktoken``); these tests
check them against tiktoken's own loader, hashes and parameters, offline.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import textwrap
import warnings
from pathlib import Path

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from agentmem import Message, TokenCounter, TokenizerUnavailableError
from agentmem._util import encodings as _encodings
from agentmem._util.encodings import load_encoding
from agentmem.tokens import render_tools
from tests.chatml import reference_count
from tests.processes import run_python
from tests.strategies import TEXT, conversations
from tests.tokenizing import count_text_calls

MODELS = ["gpt-4o", "gpt-4", "gpt-3.5-turbo"]
ROOT = Path(__file__).resolve().parents[2]


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


ENCODINGS = ("o200k_base", "cl100k_base")
# English, code, numbers, whitespace runs, CJK, RTL, emoji (ZWJ), combining marks and
# special-token text (which encode_ordinary must treat as plain text).
SAMPLES = [
    "hello world",
    "I only write Python, tabs not spaces.",
    "def f(x):\n\treturn x ** 2  # square\n\n\n",
    "Prices: $1,234.56 on 2024-05-17T12:00:00Z, 3.14159e-10",
    "   leading and trailing   \r\n",
    "東京は日本の首都です。안녕하세요",
    "مرحبا بالعالم",
    "👩\u200d👩\u200d👧 family, café, naïve, e\u0301",
    "<|endoftext|> and <|endofprompt|> are plain text here",
    "",
]


@settings(max_examples=100, deadline=None)
@given(text=TEXT)
def test_offline_encodings_equal_tiktokens_own(text: str) -> None:
    # Our loader builds the encodings from agentmem's bundled files; tiktoken's own loader,
    # given the same files as its cache, must tokenize identically.
    for name in ENCODINGS:
        ours = load_encoding(name)
        theirs = _tiktoken_own(name)
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text)
        assert ours._special_tokens == theirs._special_tokens
        assert ours._pat_str == theirs._pat_str


@pytest.mark.parametrize("model", MODELS)
def test_counts_equal_tiktokens_own_encoding_for_sample_strings(model: str) -> None:
    counter = TokenCounter(model=model)
    theirs = _tiktoken_own(counter.encoding_name)
    for text in SAMPLES:
        assert counter.encode(text) == theirs.encode_ordinary(text), text
        assert counter.count_text(text) == len(theirs.encode_ordinary(text)), text
    assert counter.encoding.n_vocab == theirs.n_vocab
    assert counter.encoding.max_token_value == theirs.max_token_value


@pytest.mark.parametrize("name", ENCODINGS)
def test_bundled_files_are_the_ones_tiktoken_pins(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Run tiktoken's own constructor, capturing the URL and sha256 it asks for, and feed it
    # our bundled file: hash, regex and special tokens must all be tiktoken's.
    from tiktoken_ext import openai_public

    asked: list[tuple[str, str | None]] = []

    def fake_load(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        asked.append((url, expected_hash))
        return load_encoding(name)._mergeable_ranks

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", fake_load)
    params = getattr(openai_public, name)()
    [(url, expected_hash)] = asked
    filename, sha256, pat_str, special = _encodings._SPECS[name]
    assert url.endswith("/" + filename)
    assert hashlib.sha256(_encodings.bundled_file(name)).hexdigest() == expected_hash == sha256
    assert params["pat_str"] == pat_str
    assert params["special_tokens"] == special
    assert name in _encodings.BUNDLED_ENCODINGS


def test_a_cache_dir_file_is_used_and_a_damaged_one_is_skipped(tmp_path: Path) -> None:
    name = "cl100k_base"
    cached = _encodings._cache_file(tmp_path, _encodings._SPECS[name][0])
    cached.write_bytes(_encodings.bundled_file(name))
    good = _encodings.load_encoding.__wrapped__(name, str(tmp_path))
    assert good.encode_ordinary("hello world") == load_encoding(name).encode_ordinary("hello world")
    cached.write_bytes(b"aGVsbG8= 0\n")  # parses, but is not the file tiktoken pins
    fallback = _encodings.load_encoding.__wrapped__(name, str(tmp_path))
    assert fallback.n_vocab == load_encoding(name).n_vocab


def test_encodings_load_offline_without_a_cache_or_a_framework(tmp_path: Path) -> None:
    # A fresh interpreter: tiktoken's cache is an empty directory, llama_index / langchain
    # cannot be imported and every socket fails. The counts must still be tiktoken's exactly,
    # and nothing may be written to tiktoken's cache.
    empty = tmp_path / "tiktoken-cache"
    empty.mkdir()
    code = textwrap.dedent(
        """
        import importlib.abc, json, socket, sys

        class Blocker(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("llama_index", "langchain", "langchain_core"):
                    raise ImportError(f"{name} is blocked in this test")
                return None

        sys.meta_path.insert(0, Blocker())

        def no_network(*args, **kwargs):
            raise OSError("no network in this test")

        socket.socket.connect = no_network
        socket.socket.connect_ex = no_network
        socket.create_connection = no_network
        socket.getaddrinfo = no_network

        from agentmem import TokenCounter

        samples = json.loads(sys.argv[1])
        out = {}
        for model in ("gpt-4o", "gpt-4"):
            counter = TokenCounter(model=model)
            out[counter.encoding_name] = [counter.encode(text) for text in samples]
        frameworks = sorted(
            m for m in sys.modules if m.split(".")[0] in ("llama_index", "langchain_core")
        )
        print(json.dumps({"ids": out, "frameworks": frameworks}))
        """
    )
    env = {k: v for k, v in os.environ.items() if k not in ("DATA_GYM_CACHE_DIR",)}
    env["TIKTOKEN_CACHE_DIR"] = str(empty)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "shared"), str(ROOT)])
    result = run_python("-c", code, json.dumps(SAMPLES), env=env, cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["frameworks"] == []
    for name in ENCODINGS:
        theirs = _tiktoken_own(name)
        assert report["ids"][name] == [theirs.encode_ordinary(text) for text in SAMPLES]
    assert list(empty.iterdir()) == []


_OWN: dict[str, tiktoken.Encoding] = {}


def _tiktoken_own(name: str) -> tiktoken.Encoding:
    """tiktoken's own constructor for ``name``, reading agentmem's bundled file as its cache.

    tiktoken checks the file against the sha256 it pins itself (a mismatch would make it
    download, which the unit tests' socket guard turns into a failure).
    """
    if name not in _OWN:
        with tempfile.TemporaryDirectory() as cache, pytest.MonkeyPatch.context() as mp:
            filename = _encodings._SPECS[name][0]
            _encodings._cache_file(Path(cache), filename).write_bytes(_encodings.bundled_file(name))
            mp.setenv("TIKTOKEN_CACHE_DIR", cache)
            constructor = tiktoken.registry.ENCODING_CONSTRUCTORS
            if constructor is None:
                tiktoken.registry._find_constructors()
                constructor = tiktoken.registry.ENCODING_CONSTRUCTORS
            assert constructor is not None
            _OWN[name] = tiktoken.Encoding(**constructor[name]())
    return _OWN[name]


def test_each_message_is_tokenized_once() -> None:
    counter = TokenCounter()
    calls = count_text_calls(counter)
    chat = [Message(role="user", content=f"message {i}") for i in range(50)]
    counter.count_messages(chat)
    first = calls()
    counter.count_messages(chat)
    assert first > 0
    assert calls() == first


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
