"""The one context pipeline, ``MemoryManager.gather_context``, on real stores (SQLite
sessions, Qdrant Edge memories): one program for sync and async, what it reads, what it
refuses before any I/O; and the manager methods the adapters use instead of the tiers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentmem import MemoryManager, Message
from agentmem.errors import ConfigurationError, ContextBudgetError, InvalidValueError
from tests.managers import edge_manager

pytestmark = pytest.mark.integration

TABS = "Alice indents Python with tabs"


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[MemoryManager]:
    with edge_manager(tmp_path, dimension=256, consolidate_every_tokens=None) as mem:
        yield mem


async def gather(mem: MemoryManager, asynchronous: bool, *args: Any, **kw: Any) -> Any:
    if asynchronous:
        return await mem.agather_context(*args, **kw)
    return mem.gather_context(*args, **kw)


def access_counts(mem: MemoryManager) -> list[int]:
    return [r.access_count for r in mem.long_term.all_records()]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
async def test_build_context_is_gather_context_with_the_session_view(
    manager: MemoryManager, asynchronous: bool
) -> None:
    manager.remember(TABS)
    manager.process_interaction("How should I indent?", "With tabs, as you like.")
    manager.update_working_memory("task", "review the parser")
    built = await gather(manager, asynchronous, "indentation?", 600, keep_latest=False)
    again = manager.build_context("indentation?", max_tokens=600)
    assert built.messages == again.messages
    assert built.ledger == again.ledger
    assert sum(built.ledger.values()) == built.token_count <= 600
    assert [h.record.content for h in built.recalled] == [TABS]
    assert "review the parser" in built.system


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
async def test_without_a_query_it_recalls_for_the_latest_user_message(
    manager: MemoryManager, asynchronous: bool
) -> None:
    manager.remember(TABS)
    manager.remember("Alice lives in Oslo")
    manager.record_messages(
        [{"role": "user", "content": "how do I indent Python?"}]
        + [{"role": "assistant", "content": f"note {i} " * 60} for i in range(3)]
    )
    # The budget shows none of the user's messages: the log is searched for the latest.
    built = await gather(manager, asynchronous, None, 400, include_query=False)
    assert built.history
    assert all(m.role == "assistant" for m in built.history)
    assert [h.record.content for h in built.recalled] == [TABS]
    assert built.messages[-1]["role"] == "assistant"  # nothing was added as a query


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
async def test_a_given_history_is_fitted_and_its_kept_indices_returned(
    manager: MemoryManager, asynchronous: bool
) -> None:
    manager.remember(TABS)
    history = [
        Message(role="user", content=" ".join(f"q{i}" for i in range(200))),
        Message(role="assistant", content=" ".join(f"a{i}" for i in range(200))),
        Message(role="user", content="how do I indent Python?"),
    ]
    built = await gather(
        manager, asynchronous, None, 300, history=history, system_prompt="Be brief."
    )
    assert built.kept == [2]  # the latest unit, whole; the older turns did not fit
    assert built.history == [history[2]]
    assert built.system.startswith("Be brief.")
    assert [h.record.content for h in built.recalled] == [TABS]
    assert built.omitted["recent"] == 2


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize(
    ("kw", "error", "match"),
    [
        ({"strategy": "everything"}, ConfigurationError, "unknown strategy 'everything'"),
        ({"memory_share": 1.5}, ConfigurationError, r"memory_share must be in \[0, 1\]"),
        ({"working_share": True}, ConfigurationError, "working_share must be a number"),
        ({"max_tokens": 0}, ConfigurationError, "max_tokens must be an integer >= 1"),
        ({"max_tokens": 20, "system_prompt": "Be brief. " * 30}, ContextBudgetError, "alone"),
    ],
)
async def test_bad_requests_are_refused_before_anything_is_read_or_written(
    manager: MemoryManager,
    asynchronous: bool,
    kw: dict[str, Any],
    error: type[Exception],
    match: str,
) -> None:
    manager.remember(TABS)
    args = {"max_tokens": 500, **kw}
    with pytest.raises(error, match=match):
        await gather(manager, asynchronous, "indentation?", **args)
    assert access_counts(manager) == [0]  # nothing was recalled
    await gather(manager, asynchronous, "indentation?", 500)
    assert access_counts(manager) == [1]


def test_a_newest_message_too_large_for_the_budget_is_refused_before_recall(
    manager: MemoryManager,
) -> None:
    manager.remember(TABS)
    manager.record_messages([{"role": "user", "content": "indent " * 400}])
    with pytest.raises(ContextBudgetError, match="latest message alone take"):
        manager.gather_context(None, 100, include_query=False)
    assert access_counts(manager) == [0]
    built = manager.gather_context(None, 100, include_query=False, keep_latest=False)
    # Without keep_latest the view shows it cut to fit, as views do.
    assert [m.metadata.get("agentmem_truncated") for m in built.history] == [True]
    assert built.token_count <= 100


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
async def test_memories_by_id_log_and_clearing_through_the_manager(
    manager: MemoryManager, asynchronous: bool
) -> None:
    old = manager.remember(TABS).record
    manager.process_interaction("tabs?", "tabs.")
    manager.update_working_memory("task", "x")
    if asynchronous:
        new = await manager.aupdate_memory(old.id, content="Alice indents with spaces")
        same = await manager.aupdate_memory(new.id, importance=0.9)
        log = await manager.aget_log()
    else:
        new = manager.update_memory(old.id, content="Alice indents with spaces")
        same = manager.update_memory(new.id, importance=0.9)
        log = manager.get_log()
    assert (same.id, same.importance) == (new.id, 0.9)
    assert [h.record.id for h in manager.recall("Alice indents")] == [new.id]
    assert manager.long_term.get_memory(old.id).superseded_by == new.id  # kept, ended
    assert [m.content for m in log] == ["tabs?", "tabs."]
    if asynchronous:
        deleted = await manager.adelete_memory(new.id)
        await manager.aclear_session()
    else:
        deleted = manager.delete_memory(new.id)
        manager.clear_session()
    assert deleted
    assert not manager.delete_memory(new.id)
    assert manager.get_log() == []
    assert manager.working.get_all_variables() == {}
    with pytest.raises(InvalidValueError, match="nothing to update"):
        manager.update_memory(old.id)
