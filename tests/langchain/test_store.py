"""Integration: AgentMemoryStore on a real Qdrant Edge store (LangGraph BaseStore behaviour).

LangGraph ships no store conformance suite in the installed version, so these tests check
the behaviours its reference ``InMemoryStore`` defines: get/put/delete, batch order,
search by prefix, filters with operators, semantic search with the ``index`` config,
pagination, list_namespaces with match conditions and depth, TTL, and async twins.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchOp

from agentmem.errors import ConfigurationError, InvalidValueError
from langchain_agentmem import AgentMemoryStore
from tests.langchain.conftest import DIM, Home

pytestmark = pytest.mark.integration


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Home]:
    """One Edge store for tests that only look inside their own namespace root."""
    h = Home(tmp_path_factory.mktemp("store"))
    yield h
    h.close()


def make(home: Home, **kw: object) -> AgentMemoryStore:
    index = {"dims": DIM, "embed": home.embedder.embed_documents, "fields": ["text"]}
    return AgentMemoryStore(home.edge, index=index, **kw)  # type: ignore[arg-type]


def test_put_get_update_delete(shared: Home) -> None:
    store = make(shared)
    store.put(("r1", "prefs"), "indent", {"text": "tabs not spaces"})
    first = store.get(("r1", "prefs"), "indent")
    assert first is not None
    assert first.value == {"text": "tabs not spaces"}
    assert first.namespace == ("r1", "prefs")
    assert first.key == "indent"
    store.put(("r1", "prefs"), "indent", {"text": "spaces now"})
    second = store.get(("r1", "prefs"), "indent")
    assert second is not None
    assert second.value == {"text": "spaces now"}
    assert second.created_at == first.created_at
    assert second.updated_at >= first.updated_at
    assert store.get(("r1", "other"), "indent") is None
    store.delete(("r1", "prefs"), "indent")
    assert store.get(("r1", "prefs"), "indent") is None


def test_batch_results_align_with_ops(shared: Home) -> None:
    store = make(shared)
    results = store.batch(
        [
            PutOp(("r2", "a"), "k1", {"text": "one"}),
            GetOp(("r2", "a"), "k1"),
            GetOp(("r2", "a"), "missing"),
            SearchOp(("r2",), limit=5),
        ]
    )
    assert results[0] is None
    assert results[1] is not None
    assert results[1].value == {"text": "one"}
    assert results[2] is None
    assert [i.key for i in results[3]] == ["k1"]  # type: ignore[union-attr]


def test_semantic_search_ranks_by_indexed_field_and_scores(shared: Home) -> None:
    store = make(shared)
    store.put(("r3", "prefs"), "indent", {"text": "tabs for indentation"})
    store.put(("r3", "prefs"), "lang", {"text": "python is the language"})
    store.put(("r3", "prefs"), "raw", {"text": "python python"}, index=False)
    hits = store.search(("r3",), query="which language python", limit=3)
    assert hits[0].key == "lang"
    assert hits[0].score is not None
    assert hits[0].score > 0
    assert [h.key for h in hits][-1] == "raw"
    assert hits[-1].score is None


def test_filters_with_operators_and_nested_values(shared: Home) -> None:
    store = make(shared)
    for i in range(5):
        store.put(("r4", "n"), f"k{i}", {"text": f"item {i}", "n": i, "meta": {"odd": i % 2 == 1}})
    keys = lambda **kw: sorted(i.key for i in store.search(("r4", "n"), **kw))  # noqa: E731
    assert keys(filter={"n": {"$gte": 3}}) == ["k3", "k4"]
    assert keys(filter={"n": {"$ne": 0, "$lt": 2}}) == ["k1"]
    assert keys(filter={"meta": {"odd": True}}) == ["k1", "k3"]
    assert keys(filter={"n": 2}, query="item") == ["k2"]
    with pytest.raises(InvalidValueError, match="operator"):
        store.search(("r4", "n"), filter={"n": {"$regex": "x"}})


def test_pagination_is_consistent(shared: Home) -> None:
    store = make(shared)
    for i in range(7):
        store.put(("r5", "p"), f"k{i}", {"text": f"entry {i}"})
    pages = [store.search(("r5", "p"), limit=3, offset=o) for o in (0, 3, 6)]
    keys = [i.key for page in pages for i in page]
    assert sorted(keys) == [f"k{i}" for i in range(7)]


def test_prefix_matches_whole_segments_and_wildcards_are_literal(home: Home) -> None:
    store = make(home)
    store.put(("alice", "*"), "w", {"text": "star"})
    store.put(("alice", "%"), "p", {"text": "percent"})
    store.put(("alice", "docs"), "d", {"text": "docs"})
    store.put(("alice", "docs2"), "d2", {"text": "docs two"})
    store.put(("bob", "docs"), "b", {"text": "bob docs"})
    assert [i.key for i in store.search(("alice", "*"))] == ["w"]
    assert [i.key for i in store.search(("alice", "%"))] == ["p"]
    assert [i.key for i in store.search(("alice", "docs"))] == ["d"]
    assert store.get(("alice", "*"), "d") is None
    assert {i.key for i in store.search(("alice",))} == {"w", "p", "d", "d2"}
    assert {i.key for i in store.search(())} == {"w", "p", "d", "d2", "b"}


def test_root_labels_that_are_not_ids_are_stored_exactly(home: Home) -> None:
    store = make(home)
    store.put(("user/1 *",), "k", {"text": "odd root"})
    store.put(("user-1",), "k", {"text": "plain root"})
    item = store.get(("user/1 *",), "k")
    assert item is not None
    assert item.value == {"text": "odd root"}
    assert ("user/1 *",) in store.list_namespaces()


def test_list_namespaces_with_conditions_and_depth(home: Home) -> None:
    store = make(home)
    for ns in [("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("z", "b", "c")]:
        store.put(ns, "k", {"text": "v"})
    assert store.list_namespaces() == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "x"),
        ("z", "b", "c"),
    ]
    assert store.list_namespaces(prefix=("a", "b")) == [("a", "b", "c"), ("a", "b", "d")]
    assert store.list_namespaces(suffix=("c",)) == [("a", "b", "c"), ("z", "b", "c")]
    assert store.list_namespaces(prefix=("*", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("z", "b", "c"),
    ]
    assert store.list_namespaces(max_depth=2) == [("a", "b"), ("a", "x"), ("z", "b")]
    assert store.list_namespaces(limit=1, offset=1) == [("a", "b", "d")]


def test_ttl_expiry_refresh_and_sweep(shared: Home) -> None:
    clock = Clock()
    store = make(shared, clock=clock, ttl={"default_ttl": 10, "refresh_on_read": True})
    store.put(("r6", "t"), "short", {"text": "gone soon"})
    store.put(("r6", "t"), "forever", {"text": "stays"}, ttl=None)
    clock.now += timedelta(minutes=8)
    assert store.get(("r6", "t"), "short") is not None  # read refreshes: 10 more minutes
    clock.now += timedelta(minutes=8)
    assert store.get(("r6", "t"), "short", refresh_ttl=False) is not None
    clock.now += timedelta(minutes=3)
    assert store.get(("r6", "t"), "short") is None
    assert [i.key for i in store.search(("r6", "t"))] == ["forever"]
    store.put(("r6", "t"), "other", {"text": "x"}, ttl=1)
    clock.now += timedelta(minutes=2)
    assert store.sweep_ttl() == 1
    assert store.get(("r6", "t"), "forever") is not None


async def test_async_twins(home: Home) -> None:
    store = make(home)
    await store.aput(("alice", "a"), "k", {"text": "async value"})
    item = await store.aget(("alice", "a"), "k")
    assert item is not None
    assert item.value == {"text": "async value"}
    hits = await store.asearch(("alice",), query="async")
    assert [h.key for h in hits] == ["k"]
    assert await store.alist_namespaces() == [("alice", "a")]
    await store.adelete(("alice", "a"), "k")
    assert await store.aget(("alice", "a"), "k") is None


def test_bad_input_is_refused_clearly(shared: Home) -> None:
    store = make(shared)
    with pytest.raises(InvalidNamespaceError):
        store.put(("a.b",), "k", {"text": "x"})
    with pytest.raises(InvalidNamespaceError):
        store.put(("",), "k", {"text": "x"})
    with pytest.raises(InvalidValueError, match="JSON"):
        store.put(("r7",), "k", {"x": float("nan")})
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(("a.b",), "k", {"x": 1})])
    with pytest.raises(ConfigurationError, match="dims"):
        AgentMemoryStore(shared.edge, index={"dims": 3, "embed": shared.embedder.embed_documents})


def test_items_do_not_leak_into_the_users_memories(home: Home) -> None:
    store = make(home)
    store.put(("alice", "prefs"), "indent", {"text": "tabs for indentation"})
    manager = home.manager("s1")
    assert manager.recall("tabs for indentation") == []
