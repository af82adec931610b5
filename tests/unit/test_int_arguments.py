"""Integer arguments across the package go through one check (``agentmem._util.checks``): a
``bool``, a float or a number out of range is refused with the error type and the message
each entry point has always given."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from agentmem import ConversationBufferMemory, WorkingMemory, complete_json
from agentmem.embeddings.openai import OpenAIEmbedder
from agentmem.embeddings.wrapper import WrapperEmbedder
from agentmem.errors import AgentMemError, ConfigurationError, InvalidValueError
from agentmem.ingest import store_in_batches
from agentmem.llm.openai import OpenAIChatModel
from agentmem.stores.qdrant import AutoIndex, QdrantEdgeStore
from agentmem.stores.redis import RedisSessionStore
from tests.fakes import ScriptedChatModel


class _Answer(BaseModel):
    text: str


def _edge(tmp_path: Path) -> None:
    QdrantEdgeStore(tmp_path / "edge", dimension=True)


CASES: list[tuple[str, Callable[[Path], Any], type[AgentMemError], str]] = [
    ("edge dimension", _edge, ConfigurationError, "dimension must be a positive integer, got True"),
    (
        "auto index",
        lambda _: AutoIndex(check_every=0),
        ConfigurationError,
        "AutoIndex.check_every must be a positive integer, got 0",
    ),
    (
        "advance_turn",
        lambda _: WorkingMemory().advance_turn(0),
        InvalidValueError,
        "advance_turn needs a number of turns >= 1, got 0",
    ),
    (
        "working render",
        lambda _: WorkingMemory().render(max_tokens=-1),
        ConfigurationError,
        "max_tokens must be None or an integer >= 0, got -1",
    ),
    (
        "ttl_turns",
        lambda _: WorkingMemory().set_variable("draft", "v1", ttl_turns=False),
        InvalidValueError,
        "ttl_turns must be an integer >= 1 (turns until expiry), got False",
    ),
    (
        "buffer max_tokens",
        lambda _: ConversationBufferMemory(max_tokens=0),
        ConfigurationError,
        "max_tokens must be a positive integer or None, got 0",
    ),
    (
        "chat model max_tokens",
        lambda _: OpenAIChatModel(api_key="sk-test", max_tokens=2.0),  # type: ignore[arg-type]
        ConfigurationError,
        "max_tokens must be a positive int or None, got 2.0",
    ),
    (
        "complete_json max_retries",
        lambda _: complete_json(ScriptedChatModel([]), [], _Answer, max_retries=-1),
        ConfigurationError,
        "max_retries must be an int >= 0, got -1",
    ),
    (
        "embedder batch_size",
        lambda _: OpenAIEmbedder(api_key="sk-test", batch_size=2049),
        ConfigurationError,
        "batch_size must be an int from 1 to 2048, got 2049",
    ),
    (
        "wrapper dimension",
        lambda _: WrapperEmbedder("m", dimension=0),
        ConfigurationError,
        "dimension must be an int >= 1 or None (probe it), got 0",
    ),
    (
        "ingest batch_size",
        lambda _: store_in_batches(None, [], batch_size=True),  # type: ignore[arg-type]
        InvalidValueError,
        "batch_size must be a positive integer, got True",
    ),
    (
        "redis retries",
        lambda _: RedisSessionStore.from_url("redis://localhost:1/0", retries=-1),
        ConfigurationError,
        "retries must be an integer >= 0, got -1",
    ),
]


@pytest.mark.parametrize(
    ("call", "error", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_bad_integer_gets_the_same_error_everywhere(
    call: Callable[[Path], Any], error: type[AgentMemError], message: str, tmp_path: Path
) -> None:
    with pytest.raises(error) as info:
        call(tmp_path)
    assert str(info.value) == message
