"""MemoryManager on real stores refuses unencodable or over-deep input and writes nothing."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentmem import MemoryManager
from agentmem.errors import InvalidMessageError, InvalidValueError
from agentmem.long_term import RecordFilter
from agentmem.working import STATE_KEY
from tests.managers import edge_manager

pytestmark = pytest.mark.integration


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[MemoryManager]:
    with edge_manager(tmp_path, consolidate_every_tokens=None) as mem:
        yield mem


CASES: list[tuple[str, Callable[[MemoryManager], object], type[Exception], str]] = [
    ("user text", lambda m: m.process_interaction("\ud800", "ok"), InvalidMessageError, "content"),
    (
        "reply text",
        lambda m: m.process_interaction("hi", "a\udc00"),
        InvalidMessageError,
        "content",
    ),
    (
        "deep metadata",
        lambda m: m.process_interaction("hi", "ok", metadata={"k": nested(900)}),
        InvalidMessageError,
        "64 levels",
    ),
    ("recall", lambda m: m.recall("where \ud800"), InvalidValueError, "query"),
    ("remember", lambda m: m.remember("likes \ud800"), InvalidValueError, "memory content"),
    (
        "remember metadata",
        lambda m: m.remember("likes tea", metadata={"k": nested(5000)}),
        InvalidValueError,
        "64 levels",
    ),
    ("variable", lambda m: m.working.set_variable("k", "\ud800"), InvalidValueError, "surrogate"),
    ("deep variable", lambda m: m.update_working_memory("k", nested(900)), InvalidValueError, "64"),
    ("reasoning", lambda m: m.record_reasoning_step("\udfff"), InvalidValueError, "scratchpad"),
]


@pytest.mark.parametrize(("case", "call", "error", "named"), CASES, ids=[c[0] for c in CASES])
def test_manager_refuses_unstorable_input_and_writes_nothing(
    manager: MemoryManager,
    case: str,
    call: Callable[[MemoryManager], object],
    error: type[Exception],
    named: str,
) -> None:
    with pytest.raises(error, match=named):
        call(manager)
    assert manager.short_term.get_log() == []
    assert manager.working.to_dict()["variables"] == {}
    assert manager.short_term.store.get_state("s1", STATE_KEY) is None
    scope = manager.long_term.scope
    assert manager.long_term.store.count(scope, filter=RecordFilter(include_history=True)) == 0
