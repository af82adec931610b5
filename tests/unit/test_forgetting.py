"""ForgettingPolicy: the retention formula, each rule, pinning, capacity and the report as
pure functions of records and a time; then passes over a LongTermMemory on an in-process
store (dry run, deletion, logging, scope)."""

from __future__ import annotations

import asyncio
import logging
import math
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from agentmem.controller.forgetting import ForgettingPolicy, ForgettingReport
from agentmem.errors import ConfigurationError
from agentmem.long_term import LongTermMemory
from agentmem.long_term.records import MemoryRecord, Scope
from agentmem.long_term.store import MemoryStore
from tests.fake_embedder import HashingEmbedder

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
SCOPE = Scope(user_id="u")


def record(
    content: str = "x",
    *,
    age_days: float = 0.0,
    used_days_ago: float | None = None,
    importance: float = 0.0,
    access_count: int = 0,
    pinned: bool = False,
) -> MemoryRecord:
    fields: dict[str, Any] = {
        "importance": importance,
        "access_count": access_count,
        "pinned": pinned,
        "created_at": NOW - timedelta(days=age_days),
    }
    if used_days_ago is not None:
        fields["last_accessed_at"] = NOW - timedelta(days=used_days_ago)
    return MemoryRecord.new(content, "semantic", scope=SCOPE, **fields)


def ids(report: ForgettingReport) -> list[str]:
    return [d.record.content for d in report.decisions]


# -- the retention formula --------------------------------------------------------------


@pytest.mark.parametrize(
    ("importance", "access_count", "half_life"),
    [
        (0.0, 0, 30.0),
        (1.0, 0, 150.0),
        (0.5, 0, 90.0),
        (0.0, 10, 30.0 * (1 + math.log(11))),
        (1.0, 10, 150.0 * (1 + math.log(11))),
    ],
)
def test_half_life_grows_with_importance_and_use(
    importance: float, access_count: int, half_life: float
) -> None:
    policy = ForgettingPolicy()
    r = record(importance=importance, access_count=access_count)
    assert policy.half_life(r) == pytest.approx(half_life)
    # one half-life after its last use, half is retained; two half-lives, a quarter
    aged = r.replace(created_at=NOW - timedelta(days=half_life))
    assert policy.retention(aged, NOW) == pytest.approx(0.5)
    older = r.replace(created_at=NOW - timedelta(days=2 * half_life))
    assert policy.retention(older, NOW) == pytest.approx(0.25)


def test_half_life_days_and_boost_are_settings() -> None:
    policy = ForgettingPolicy(half_life_days=10, importance_boost=0)
    assert policy.half_life(record(importance=1.0)) == pytest.approx(10.0)
    assert policy.retention(record(age_days=10, importance=1.0), NOW) == pytest.approx(0.5)


def test_age_runs_from_the_last_access_not_creation() -> None:
    policy = ForgettingPolicy()
    used_today = record(age_days=300, used_days_ago=0)
    used_long_ago = record(age_days=300, used_days_ago=30)
    assert policy.retention(used_today, NOW) == pytest.approx(1.0)
    assert policy.retention(used_long_ago, NOW) == pytest.approx(0.5)


def test_a_timestamp_in_the_future_counts_as_just_used() -> None:
    assert ForgettingPolicy().retention(record(age_days=-5), NOW) == 1.0


def test_retention_uses_the_clock_when_no_time_is_given() -> None:
    policy = ForgettingPolicy(clock=lambda: NOW + timedelta(days=30))
    assert policy.retention(record(), None) == pytest.approx(0.5)
    report = policy.plan([record(age_days=200)])  # 230 days at the clock's time
    assert ids(report) == ["x"]
    assert report.decisions[0].retention == pytest.approx(0.5 ** (230 / 30))


# -- the rules ---------------------------------------------------------------------------


def test_min_retention_forgets_what_faded_below_it() -> None:
    policy = ForgettingPolicy(min_retention=0.25)
    faded = record("faded", age_days=61)  # retention 0.2437
    fresh = record("fresh", age_days=59)  # retention 0.2557
    report = policy.plan([faded, fresh], NOW)
    assert ids(report) == ["faded"]
    assert report.decisions[0].reason == "retention below 0.25"
    assert report.decisions[0].retention == pytest.approx(0.5 ** (61 / 30))
    assert [r.content for _, r in report.kept] == ["fresh"]


def test_default_policy_forgets_below_five_percent() -> None:
    # 0.5 ** (t / 30) < 0.05  <=>  t > 30 * log2(20) = 129.66 days
    report = ForgettingPolicy().plan([record("a", age_days=129), record("b", age_days=131)], NOW)
    assert ids(report) == ["b"]


def test_without_rules_nothing_is_forgotten() -> None:
    policy = ForgettingPolicy(min_retention=None)
    report = policy.plan([record(age_days=10_000), record(age_days=0)], NOW)
    assert report.decisions == []
    assert len(report.kept) == 2


def test_max_age_forgets_unused_memories_unless_important() -> None:
    policy = ForgettingPolicy(min_retention=None, max_age_days=90, keep_importance=0.8)
    old = record("old", age_days=91, importance=0.79)
    old_but_important = record("important", age_days=500, importance=0.8)
    old_but_used = record("used", age_days=500, used_days_ago=10)
    young = record("young", age_days=89)
    report = policy.plan([old, old_but_important, old_but_used, young], NOW)
    assert ids(report) == ["old"]
    assert report.decisions[0].reason == "unused for 91 days (over 90)"
    assert {r.content for _, r in report.kept} == {"important", "used", "young"}


def test_the_first_rule_that_fires_gives_the_reason() -> None:
    policy = ForgettingPolicy(min_retention=0.5, max_age_days=1)
    report = policy.plan([record(age_days=100)], NOW)
    assert report.decisions[0].reason == "retention below 0.5"


# -- pinning and capacity ----------------------------------------------------------------


def test_pinned_memories_are_never_forgotten() -> None:
    policy = ForgettingPolicy(min_retention=1.0, max_age_days=0, max_memories=0)
    pinned = record("pinned", age_days=10_000, pinned=True)
    other = record("other", age_days=10_000)
    report = policy.plan([pinned, other], NOW)
    assert ids(report) == ["other"]
    assert report.examined == 2
    assert report.pinned == 1
    assert report.kept == []  # pinned ones are not scored at all


def test_capacity_keeps_the_highest_retention() -> None:
    policy = ForgettingPolicy(min_retention=None, max_memories=2)
    records = [record(f"m{age}", age_days=age) for age in (5, 50, 1, 20)]
    report = policy.plan(records, NOW)
    assert ids(report) == ["m50", "m20"]  # lowest retention first
    assert all(
        d.reason == "over capacity (2 per scope), lowest retention" for d in report.decisions
    )
    assert [r.content for _, r in report.kept] == ["m1", "m5"]  # highest first


def test_pinned_memories_count_towards_capacity() -> None:
    policy = ForgettingPolicy(min_retention=None, max_memories=2)
    records = [
        record("p", age_days=999, pinned=True),
        *(record(f"m{a}", age_days=a) for a in (1, 2, 3)),
    ]
    report = policy.plan(records, NOW)
    assert ids(report) == ["m3", "m2"]
    assert [r.content for _, r in report.kept] == ["m1"]


def test_capacity_counts_what_the_rules_already_forget() -> None:
    policy = ForgettingPolicy(min_retention=0.05, max_memories=2)
    records = [record("ancient", age_days=1000), *(record(f"m{a}", age_days=a) for a in (1, 2, 3))]
    report = policy.plan(records, NOW)
    # "ancient" goes by retention; of the three left one more goes for capacity
    assert ids(report) == ["ancient", "m3"]
    assert report.decisions[0].reason == "retention below 0.05"
    assert report.decisions[1].reason.startswith("over capacity")


def test_capacity_of_zero_forgets_every_unpinned_memory() -> None:
    report = ForgettingPolicy(max_memories=0).plan([record("a"), record("b")], NOW)
    assert sorted(ids(report)) == ["a", "b"]


def test_under_capacity_nothing_goes() -> None:
    report = ForgettingPolicy(max_memories=5).plan([record("a"), record("b")], NOW)
    assert report.decisions == []


# -- the report --------------------------------------------------------------------------


def test_plan_is_a_dry_run_report() -> None:
    report = ForgettingPolicy().plan([record("gone", age_days=400), record("kept")], NOW)
    assert report.dry_run is True
    assert report.deleted == 0
    assert report.examined == 2
    text = report.to_text()
    assert text.startswith("Examined 2 memories (0 pinned); would forget 1.")
    assert '+ kept, retention 1.000: "kept"' in text
    assert '- to forget, retention 0.000 (retention below 0.05): "gone"' in text


def test_report_text_says_forgot_and_truncates_long_lists() -> None:
    decided = ForgettingPolicy(max_memories=0).plan([record(f"m{i}") for i in range(5)], NOW)
    decided.dry_run = False
    assert decided.deleted == 5
    text = decided.to_text(limit=2)
    assert "forgot 5." in text
    assert text.endswith("... and 3 more")
    assert text.count("  - forgotten, retention ") == 2


def test_report_text_cuts_long_contents_between_words() -> None:
    long = "Alice indents Python with tabs and never spaces, " * 3
    text = ForgettingPolicy().plan([record(long)], NOW).to_text()
    [line] = text.splitlines()[1:]
    shown = line.split(': "')[1].removesuffix('"')
    assert shown.endswith("…")
    assert long.startswith(shown.removesuffix("…"))
    assert long[len(shown) - 1] == " "  # the cut falls between two words


def test_an_empty_scope_gives_an_empty_report() -> None:
    report = ForgettingPolicy(max_memories=0).plan([], NOW)
    assert (report.examined, report.pinned, report.decisions, report.kept) == (0, 0, [], [])


# -- configuration -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "settings",
    [
        {"half_life_days": 0},
        {"half_life_days": -1},
        {"half_life_days": math.nan},
        {"half_life_days": math.inf},
        {"importance_boost": -0.1},
        {"importance_boost": math.nan},
        {"min_retention": 1.5},
        {"min_retention": -0.1},
        {"keep_importance": 1.1},
        {"max_age_days": -1},
        {"max_age_days": math.nan},
        {"max_memories": -1},
    ],
)
def test_invalid_settings_are_refused(settings: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        ForgettingPolicy(**settings)


def test_edge_settings_are_accepted() -> None:
    policy = ForgettingPolicy(
        min_retention=0, max_age_days=0, keep_importance=1, max_memories=0, importance_boost=0
    )
    assert policy.max_memories == 0


# -- a pass over a memory ----------------------------------------------------------------


def seeded(memory: LongTermMemory) -> dict[str, MemoryRecord]:
    """Four memories of Alice at NOW: two faded, one pinned and faded, one fresh."""
    specs = {
        "faded": {"created_at": NOW - timedelta(days=400)},
        "old tea note": {"created_at": NOW - timedelta(days=300), "importance": 0.0},
        "pinned": {"created_at": NOW - timedelta(days=4000), "pinned": True},
        "fresh": {"created_at": NOW - timedelta(days=1)},
    }
    return {
        content: memory.store_memory(content, "semantic", **{"importance": 0.0, **fields})
        for content, fields in specs.items()
    }


@pytest.fixture
def at_now(memory_store: MemoryStore, embedder: HashingEmbedder) -> LongTermMemory:
    return LongTermMemory(store=memory_store, embedder=embedder, user_id="alice", clock=lambda: NOW)


def test_a_dry_run_reports_and_deletes_nothing(
    at_now: LongTermMemory, caplog: pytest.LogCaptureFixture
) -> None:
    seeded(at_now)
    with caplog.at_level(logging.INFO, logger="agentmem.controller.forgetting"):
        report = ForgettingPolicy(clock=lambda: NOW).apply(at_now, dry_run=True)
    assert report.dry_run is True
    assert (report.examined, report.pinned, report.deleted) == (4, 1, 0)
    assert sorted(ids(report)) == ["faded", "old tea note"]
    assert len(at_now.all_records()) == 4
    assert caplog.records == []


@pytest.mark.parametrize("run_async", [False, True], ids=["sync", "async"])
def test_a_pass_deletes_what_it_reports_and_logs_each(
    at_now: LongTermMemory, caplog: pytest.LogCaptureFixture, run_async: bool
) -> None:
    records = seeded(at_now)
    policy = ForgettingPolicy(clock=lambda: NOW)
    with caplog.at_level(logging.INFO, logger="agentmem.controller.forgetting"):
        report = asyncio.run(policy.aapply(at_now)) if run_async else policy.apply(at_now)
    assert report.dry_run is False
    assert report.deleted == 2
    assert sorted(r.content for r in at_now.all_records()) == ["fresh", "pinned"]
    logged = sorted(r.getMessage() for r in caplog.records)
    assert len(logged) == 2
    assert records["faded"].id in " ".join(logged)
    assert all("of user 'alice'" in m and "retention below 0.05" in m for m in logged)


def test_a_pass_stays_in_its_scope(memory_store: MemoryStore, embedder: HashingEmbedder) -> None:
    alice = LongTermMemory(
        store=memory_store, embedder=embedder, user_id="alice", clock=lambda: NOW
    )
    bob = LongTermMemory(store=memory_store, embedder=embedder, user_id="bob", clock=lambda: NOW)
    seeded(alice)
    seeded(bob)
    ForgettingPolicy(max_memories=0, clock=lambda: NOW).apply(alice)
    assert [r.content for r in alice.all_records()] == ["pinned"]
    assert len(bob.all_records()) == 4


def test_superseded_history_fades_like_the_rest(at_now: LongTermMemory) -> None:
    old = at_now.store_memory(
        "lives in Paris", "semantic", importance=0.0, created_at=NOW - timedelta(days=500)
    )
    new = at_now.store_memory(
        "lives in Berlin", "semantic", importance=0.0, created_at=NOW - timedelta(days=2)
    )
    at_now.supersede_memory(old.id, new)
    report = ForgettingPolicy(clock=lambda: NOW).apply(at_now)
    assert ids(report) == ["lives in Paris"]
    assert [r.content for r in at_now.all_records()] == ["lives in Berlin"]
