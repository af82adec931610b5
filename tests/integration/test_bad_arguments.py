"""Bad arguments to the manager get agentmem errors on real stores, and nothing is written.

``build_context`` purges expired working-memory variables when it renders them (a write),
so each refused call is made with an expired variable in the session's stored state: the
state must still hold it afterwards (and a valid call then purges it, so the check can fail).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from agentmem import MemoryManager
from agentmem.errors import (
    AgentMemError,
    ConfigurationError,
    ContextBudgetError,
    InvalidMessageError,
)
from agentmem.long_term import RecordFilter
from agentmem.working import STATE_KEY
from tests.managers import edge_manager

pytestmark = pytest.mark.integration

BAD_BUDGETS = [None, "100", math.nan, -1, 0, True, 2000.0]
BAD_BUDGET_IDS = ["None", "str", "nan", "negative", "zero", "bool", "float"]


@pytest.fixture
def now() -> list[datetime]:
    return [datetime(2026, 1, 1, tzinfo=timezone.utc)]


@pytest.fixture
def manager(tmp_path: Path, now: list[datetime]) -> Iterator[MemoryManager]:
    with edge_manager(tmp_path, consolidate_every_tokens=None, clock=lambda: now[0]) as mem:
        yield mem


def stored_variables(manager: MemoryManager) -> dict[str, Any]:
    state = manager.short_term.store.get_state("s1", STATE_KEY) or {}
    return dict(state.get("variables") or {})


def expired_pin(manager: MemoryManager, now: list[datetime]) -> None:
    """An expired variable in the stored state: rendering working memory deletes it."""
    manager.update_working_memory("pin", "4242", ttl=60)
    now[0] += timedelta(seconds=120)
    assert "pin" in stored_variables(manager)


def assert_nothing_recorded(manager: MemoryManager) -> None:
    assert manager.short_term.store.read("s1") == []
    scope = manager.long_term.scope
    assert manager.long_term.store.count(scope, filter=RecordFilter(include_history=True)) == 0


# -- build_context(max_tokens=...) -----------------------------------------------------------


@pytest.mark.parametrize("max_tokens", BAD_BUDGETS, ids=BAD_BUDGET_IDS)
def test_build_context_refuses_bad_max_tokens_before_any_write(
    manager: MemoryManager, now: list[datetime], max_tokens: Any
) -> None:
    expired_pin(manager, now)
    with pytest.raises(ConfigurationError, match=r"max_tokens must be an integer >= 1") as info:
        manager.build_context("which pin?", max_tokens=max_tokens)
    assert repr(max_tokens) in str(info.value)
    assert "max_tokens=2000" in str(info.value)  # how to fix it
    assert isinstance(info.value, AgentMemError)
    assert "pin" in stored_variables(manager)  # the purge did not run
    manager.build_context("which pin?", max_tokens=500)  # a valid call does purge it
    assert "pin" not in stored_variables(manager)


@pytest.mark.parametrize("max_tokens", BAD_BUDGETS, ids=BAD_BUDGET_IDS)
async def test_abuild_context_refuses_bad_max_tokens_before_any_write(
    manager: MemoryManager, now: list[datetime], max_tokens: Any
) -> None:
    expired_pin(manager, now)
    with pytest.raises(ConfigurationError, match=r"max_tokens must be an integer >= 1"):
        await manager.abuild_context("which pin?", max_tokens=max_tokens)
    assert "pin" in stored_variables(manager)
    await manager.abuild_context("which pin?", max_tokens=500)
    assert "pin" not in stored_variables(manager)


async def build(manager: MemoryManager, asynchronous: bool, query: str, **kw: Any) -> object:
    if asynchronous:
        return await manager.abuild_context(query, **kw)
    return manager.build_context(query, **kw)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
async def test_a_budget_too_small_for_the_query_changes_nothing(
    manager: MemoryManager, now: list[datetime], asynchronous: bool
) -> None:
    decision = manager.remember("The card PIN is kept in working memory")
    expired_pin(manager, now)
    args: dict[str, Any] = {"max_tokens": 12, "system_prompt": "Be brief."}
    with pytest.raises(ContextBudgetError, match="system prompt and query alone take"):
        await build(manager, asynchronous, "which PIN?", **args)
    assert "pin" in stored_variables(manager)  # no purge
    records = manager.long_term.all_records()
    assert [r.access_count for r in records] == [0]  # no access recorded by a recall
    built = manager.build_context("which PIN?", max_tokens=500)
    assert built.recalled[0].record.id == decision.record.id
    assert [r.access_count for r in manager.long_term.all_records()] == [1]


# -- process_interaction(...) ----------------------------------------------------------------

BAD_EXCHANGES: list[tuple[str, tuple[Any, ...], dict[str, Any], str]] = [
    ("both None", (None, None), {}, "user_input must be the message text"),
    ("user None", (None, "Noted."), {}, "user_input must be the message text"),
    ("reply None", ("I indent with tabs", None), {}, "assistant_response must be the message"),
    ("reply number", ("2 + 2?", 4), {}, "assistant_response must be the message text"),
    ("metadata str", ("hi", "hello"), {"metadata": "x"}, "metadata must be a mapping"),
    ("metadata list", ("hi", "hello"), {"metadata": ["ab"]}, "metadata must be a mapping"),
]
EXCHANGE_IDS = [case[0] for case in BAD_EXCHANGES]


@pytest.mark.parametrize(("case", "args", "kwargs", "named"), BAD_EXCHANGES, ids=EXCHANGE_IDS)
def test_process_interaction_refuses_and_records_nothing(
    manager: MemoryManager, case: str, args: tuple[Any, ...], kwargs: dict[str, Any], named: str
) -> None:
    with pytest.raises(InvalidMessageError, match=named) as info:
        manager.process_interaction(*args, **kwargs)
    assert ("record_messages" in str(info.value)) or ("metadata={" in str(info.value))
    assert_nothing_recorded(manager)
    assert manager.working.to_dict()["turn"] == 0  # no turn was counted either


@pytest.mark.parametrize(("case", "args", "kwargs", "named"), BAD_EXCHANGES, ids=EXCHANGE_IDS)
async def test_aprocess_interaction_refuses_and_records_nothing(
    manager: MemoryManager, case: str, args: tuple[Any, ...], kwargs: dict[str, Any], named: str
) -> None:
    with pytest.raises(InvalidMessageError, match=named):
        await manager.aprocess_interaction(*args, **kwargs)
    assert_nothing_recorded(manager)


def test_process_interaction_still_records_text_and_metadata(manager: MemoryManager) -> None:
    manager.process_interaction("I indent with tabs", "Noted.", metadata={"channel": "web"})
    log = [m for _, m in manager.short_term.store.read("s1")]
    assert [(m.role, m.content, m.metadata) for m in log] == [
        ("user", "I indent with tabs", {"channel": "web"}),
        ("assistant", "Noted.", {"channel": "web"}),
    ]
