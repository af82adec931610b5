"""No fact twice in ``build_context`` after ``consolidate()``, and per-round provenance.

Without an LLM, consolidation stores each round as an episode carrying the ids of that
round's messages; ``build_context`` leaves out a recalled memory whose messages are all in
the recent turns it shows, and keeps it when they have scrolled out of the window.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentmem import MemoryManager
from agentmem.controller.retrieval import MemoryRetriever
from tests.managers import edge_manager

pytestmark = pytest.mark.integration

FACTS = [
    ("I indent with tabs, marker alpha1", "Noted: tabs."),
    ("My cat is called Miso, marker bravo2", "A lovely name."),
    ("I live in Lisbon, marker charlie3", "Nice city."),
    ("I am allergic to peanuts, marker delta4", "I will remember that."),
]
FILLER = [(f"Tell me fact number {i} about the weather", f"Weather fact {i}.") for i in range(40)]


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[MemoryManager]:
    with edge_manager(
        tmp_path, dimension=256, consolidate_every_tokens=None, max_short_term_tokens=100_000
    ) as manager:
        yield manager


def _markers(text: str) -> dict[str, int]:
    return {m: text.count(m) for m in ("alpha1", "bravo2", "charlie3", "delta4")}


def test_each_episode_carries_the_ids_of_its_own_round(manager: MemoryManager) -> None:
    for user, assistant in FACTS:
        manager.process_interaction(user, assistant)
    manager.consolidate()
    log = manager.short_term.get_log()
    rounds = {tuple(m.id for m in log[i : i + 2]) for i in range(0, len(log), 2)}
    records = manager.long_term.all_records()
    assert len(records) == len(FACTS)
    assert {r.source_message_ids for r in records} == rounds


@pytest.mark.parametrize("budget", [250, 400, 600, 900, 1500, 4000])
def test_build_context_after_consolidate_never_shows_a_fact_twice(
    manager: MemoryManager, budget: int
) -> None:
    for user, assistant in [*FACTS, *FILLER[:6]]:
        manager.process_interaction(user, assistant)
    manager.consolidate()
    for query in ("What do I indent with, tabs?", "What is my cat called?", "peanuts Lisbon"):
        built = manager.build_context(query, max_tokens=budget, top_k=5)
        counts = _markers(built.text)
        assert all(n <= 1 for n in counts.values()), (budget, query, counts)


def test_all_in_the_window_means_no_recalled_duplicates(manager: MemoryManager) -> None:
    for user, assistant in FACTS:
        manager.process_interaction(user, assistant)
    manager.consolidate()
    built = manager.build_context("What do I indent with, tabs?", max_tokens=4000)
    assert built.recalled == []
    assert built.omitted.get("long_term_in_recent", 0) >= 1
    assert _markers(built.text)["alpha1"] == 1


def test_a_fact_out_of_the_window_is_recalled(manager: MemoryManager) -> None:
    for user, assistant in [*FACTS, *FILLER]:
        manager.process_interaction(user, assistant)
    manager.consolidate()
    built = manager.build_context("What do I indent with, tabs?", max_tokens=400)
    recalled = [h.record.content for h in built.recalled]
    assert any("alpha1" in c for c in recalled), recalled
    assert _markers(built.text)["alpha1"] == 1


def test_retriever_leaves_out_memories_of_the_recent_turns(manager: MemoryManager) -> None:
    for user, assistant in FACTS:
        manager.process_interaction(user, assistant)
    manager.consolidate()
    retriever = MemoryRetriever(
        manager.long_term, short_term=manager.short_term, recent_turns=len(FACTS) * 2
    )
    context = retriever.retrieve_relevant_context("tabs alpha1", "hybrid")
    assert context.memories == []
    few = MemoryRetriever(manager.long_term, short_term=manager.short_term, recent_turns=2)
    context = few.retrieve_relevant_context("tabs alpha1", "hybrid")
    assert any("alpha1" in h.record.content for h in context.memories)


async def test_build_context_reads_the_log_only_through_the_view(
    manager: MemoryManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hybrid strategy renders nothing build_context renders again: no copy of the whole
    log, no retrieved-context items, working memory rendered once (sync and async)."""
    for user, assistant in [*FACTS, *FILLER[:10]]:
        manager.process_interaction(user, assistant)
    manager.consolidate()
    manager.update_working_memory("goal", "answer about indentation")
    renders: list[int | None] = []
    original = manager.working.get_context_for_llm

    def render(max_tokens: int | None = None) -> str:
        renders.append(max_tokens)
        return original(max_tokens)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("build_context must not call this")

    monkeypatch.setattr(manager.short_term, "get_log", refuse)
    monkeypatch.setattr(manager.short_term, "aget_log", refuse)
    monkeypatch.setattr(manager.retriever, "retrieve_relevant_context", refuse)
    monkeypatch.setattr(manager.retriever, "aretrieve_relevant_context", refuse)
    monkeypatch.setattr(manager.working, "get_context_for_llm", render)
    built = manager.build_context("What do I indent with, tabs?", max_tokens=1500)
    assert renders == [300]  # the working memory's share of 1500, rendered once
    assert "answer about indentation" in built.text
    assert sum(built.ledger.values()) == built.token_count <= 1500
    again = await manager.abuild_context("What do I indent with, tabs?", max_tokens=1500)
    assert again.messages == built.messages
    assert renders == [300]  # the async path rendered through aget_context_for_llm
