"""Entity links (write time) and the second search stage (link hops, feedback, session lift):
deterministic extraction, the config's checks, and the components on an in-memory store."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from agentmem.errors import ConfigurationError
from agentmem.long_term import LongTermMemory
from agentmem.long_term.expansion import COMPONENTS, ExpansionConfig, feedback_vector
from agentmem.long_term.links import (
    ENTITY_PREFIX,
    MAX_ENTITIES,
    entities_of,
    entity_keys,
    link_record,
)
from agentmem.long_term.records import MemoryRecord, Relation, Scope
from agentmem.long_term.session_keys import session_keys, session_lift
from agentmem.long_term.store import ScoredRecord
from agentmem.sparse import SparseVector
from agentmem.stores.in_memory import InMemoryMemoryStore
from tests.fakes import HashingEmbedder

NOV_2023 = datetime(2023, 11, 2, tzinfo=timezone.utc)
ADDITIVE = ("base", "temporal_boost", "importance_boost", "recency_boost", *COMPONENTS)


def _record(text: str, **fields: object) -> MemoryRecord:
    return MemoryRecord.new(text, "episodic", scope=Scope(user_id="u"), **fields)


# -- extraction -------------------------------------------------------------------------------


def test_names_things_and_runs_of_capitalized_words() -> None:
    keys = entity_keys("Caroline moved to New York with her two paintings in 2022.")
    assert keys == ["caroline", "moved", "new", "york", "new york", "painting", "2022"]


def test_function_words_contractions_and_short_words_are_not_entities() -> None:
    assert entity_keys("Hey! I'm sure it was so good, and you are too.") == []


def test_plural_and_possessive_fold_to_one_key() -> None:
    assert entity_keys("Melanie's puppies") == entity_keys("melanie puppy")


def test_dates_named_without_a_year_read_from_the_memory_date() -> None:
    assert entity_keys("We met on 13 October", when=NOV_2023) == ["2023-10"]
    assert entity_keys("We met on 13 October") == []  # no date to read it from
    assert entity_keys("Back in March 2021", when=NOV_2023) == ["back", "2021", "2021-03"]


def test_extraction_is_deterministic_and_bounded() -> None:
    text = " ".join(f"Name{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(100))
    keys = entity_keys(text)
    assert keys == entity_keys(text)
    assert len(keys) == MAX_ENTITIES


def test_link_record_adds_mentions_and_is_idempotent() -> None:
    record = link_record(_record("Melanie painted a sunrise in Sweden", created_at=NOV_2023))
    assert entities_of(record) == ("melanie", "painted", "sunrise", "sweden")
    assert all(r.target.startswith(ENTITY_PREFIX) for r in record.relations)
    assert link_record(record) is record


def test_a_concept_memory_keeps_its_graph() -> None:
    concept = MemoryRecord.new(
        "Python: uses indentation",
        "semantic",
        scope=Scope(user_id="u"),
        concept="Python",
        relations=(Relation(predicate="is_a", target="language"),),
    )
    assert link_record(concept) is concept


# -- configuration and pure parts --------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        {"hops": 4},
        {"hops": -1},
        {"hops": True},
        {"hop_weight": -0.1},
        {"feedback_weight": float("nan")},
        {"session_weight": float("inf")},
        {"hop_decay": 0},
        {"max_df": 1.5},
        {"seeds": 0},
        {"pool": 2.5},
    ],
)
def test_bad_expansion_options_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        ExpansionConfig(**bad)  # type: ignore[arg-type]


def test_off_by_default_and_the_first_stage_widens_only_when_on() -> None:
    assert not ExpansionConfig().active
    assert ExpansionConfig().first_stage(5) == 5
    assert ExpansionConfig(feedback_weight=0.2, pool=30).first_stage(5) == 30
    assert not ExpansionConfig(hops=1, hop_weight=0).active


def test_feedback_vector_sums_weighted_terms() -> None:
    out = feedback_vector(
        [SparseVector([5, 1], [1.0, 2.0]), SparseVector([1, 9], [1.0, 1.0])], [1.0, 0.5]
    )
    assert out == SparseVector([1, 5, 9], [2.5, 1.0, 0.5])


def test_the_session_with_most_relevance_gets_full_lift() -> None:
    hits = [
        ScoredRecord(_record("a", source_session_id="s1"), 2.0),
        ScoredRecord(_record("b", source_session_id="s2"), 1.5),
        ScoredRecord(_record("c", source_session_id="s2"), 1.5),
        ScoredRecord(_record("d"), 1.0),
    ]
    assert session_keys(hits) == {"s1": 1.0, "s2": 1.5}
    lift = session_lift(hits)
    assert [lift.get(h.record.id) for h in hits] == [pytest.approx(2 / 3), 1.0, 1.0, None]
    assert session_lift([]) == {}


# -- the second stage on a store ---------------------------------------------------------------


def _memory(store: InMemoryMemoryStore, expansion: ExpansionConfig) -> LongTermMemory:
    return LongTermMemory(
        store=store,
        embedder=HashingEmbedder(64),
        user_id="u",
        expansion=expansion,
        clock=lambda: NOV_2023,
        on_close=lambda: None,
    )


FACTS = [
    "Caroline bought a handmade bowl from Oskar at the market.",
    "Oskar carves wood in his workshop near Tromso.",
    "Caroline went swimming on Sunday.",
    "Caroline paints landscapes.",
    "Caroline reads mystery novels.",
]


def test_a_hop_finds_the_memory_linked_through_a_rare_entity() -> None:
    store = InMemoryMemoryStore(dimension=64)
    writer = _memory(store, ExpansionConfig(link=True))
    for fact in FACTS:
        writer.store_memory(fact, "episodic")
    question = "Who made Caroline's bowl?"
    plain = writer.retrieve_memories(question, top_k=5, touch=False)
    assert FACTS[1] not in [h.record.content for h in plain]
    hopping = _memory(store, ExpansionConfig(link=True, hops=1, hop_weight=0.3))
    hits = hopping.retrieve_memories(question, top_k=5, touch=False, explain=True)
    by_content = {h.record.content: h for h in hits}
    assert hits[0].record.content == FACTS[0]
    reached = by_content[FACTS[1]]
    assert reached.components["expansion"] > 0
    for hit in hits:
        total = sum(hit.components.get(name, 0.0) for name in ADDITIVE)
        assert total == pytest.approx(hit.score)
        assert hit.components["final"] == pytest.approx(hit.score)


def test_without_links_written_there_is_nothing_to_hop_to() -> None:
    store = InMemoryMemoryStore(dimension=64)
    writer = _memory(store, ExpansionConfig())
    for fact in FACTS:
        writer.store_memory(fact, "episodic")
    assert all(not r.relations for r in writer.all_records())
    hopping = _memory(store, ExpansionConfig(hops=2, hop_weight=0.3))
    contents = [h.record.content for h in hopping.retrieve_memories("Caroline's bowl?", 5)]
    assert FACTS[1] not in contents


def test_store_memory_returns_the_linked_record_as_stored() -> None:
    memory = _memory(InMemoryMemoryStore(dimension=64), ExpansionConfig(link=True))
    record = memory.store_memory("Oskar lives near Tromso", "episodic")
    assert entities_of(record) == ("oskar", "live", "near", "tromso")
    assert memory.get_memory(record.id) == record


def test_nothing_relevant_means_no_seed_and_nothing_returned() -> None:
    store = InMemoryMemoryStore(dimension=64)
    everything = ExpansionConfig(link=True, hops=2, feedback_weight=0.3, session_weight=0.2)
    memory = _memory(store, everything)
    for fact in FACTS:
        memory.store_memory(fact, "episodic")
    hits = memory.retrieve_memories("zzz qqq", top_k=5, mode="bm25", touch=False)
    assert hits == []
