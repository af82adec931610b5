"""LangGraph store operations with bad input are refused, and nothing is written.

``check_op`` (langchain_agentmem/_store_checks.py) is the check; ``AgentMemoryStore.batch``
calls it for every op before running any. Unencodable text and over-deep values get
``InvalidValueError``; paging arguments that are not usable integers (``limit=-1``,
``max_depth=-1``) get ``ConfigurationError``. A search or a listing deletes the expired
items it meets (a write), so the paging tests make their refused call with an expired item
in the store and check it is still there.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    SearchOp,
)

from agentmem.errors import AgentMemError, ConfigurationError, InvalidValueError
from langchain_agentmem import AgentMemoryStore
from langchain_agentmem._store_checks import check_op
from tests.langchain.conftest import DIM, Home


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


BAD_OPS: list[tuple[str, Op, str]] = [
    ("surrogate value", PutOp(("a",), "k", {"text": "\ud800"}), "store value"),
    ("surrogate key", PutOp(("a",), "k\ud800", {"x": 1}), "store key"),
    ("surrogate label", PutOp(("\ud800",), "k", {"x": 1}), "namespace label 0"),
    ("deep value", PutOp(("a",), "k", {"x": nested(900)}), "64 levels"),
    ("very deep value", PutOp(("a",), "k", {"x": nested(5000)}), "64 levels"),
    ("surrogate get", GetOp(("a", "\udfff"), "k"), "namespace label 1"),
    ("surrogate query", SearchOp(("a",), query="\ud800"), "search query"),
    ("deep filter", SearchOp(("a",), filter={"x": nested(5000)}), "64 levels"),
    (
        "surrogate match",
        ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("\ud800",)),)),
        "match condition",
    ),
]
IDS = [case[0] for case in BAD_OPS]


@pytest.mark.parametrize(("case", "op", "named"), BAD_OPS, ids=IDS)
def test_check_op_refuses_unstorable_input(case: str, op: Op, named: str) -> None:
    with pytest.raises(InvalidValueError, match=named):
        check_op(op)


def test_check_op_accepts_ordinary_ops() -> None:
    for op in (
        PutOp(("alice", "prefs"), "indent", {"text": "tabs", "deep": nested(60)}),
        PutOp(("alice", "prefs"), "indent", None),
        GetOp(("alice", "prefs"), "indent"),
        SearchOp(("alice",), query="tabs?", filter={"n": {"$gt": 1}}),
        ListNamespacesOp(match_conditions=(MatchCondition("suffix", ("*", "prefs")),)),
    ):
        check_op(op)


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Home]:
    h = Home(tmp_path)
    yield h
    h.close()


@pytest.mark.integration
@pytest.mark.parametrize(
    ("namespace", "key", "value"),
    [
        (("a",), "k", {"text": "\ud800"}),
        (("a",), "k\ud800", {"text": "x"}),
        (("\ud800",), "k", {"text": "x"}),
        (("a",), "k", {"text": "x", "deep": nested(5000)}),
    ],
    ids=["surrogate value", "surrogate key", "surrogate label", "deep value"],
)
def test_store_put_refuses_and_writes_nothing(
    home: Home, namespace: tuple[str, ...], key: str, value: dict[str, Any]
) -> None:
    index = {"dims": DIM, "embed": home.embedder.embed_documents, "fields": ["text"]}
    store = AgentMemoryStore(home.edge, index=index)  # type: ignore[arg-type]
    with pytest.raises(InvalidValueError):
        store.put(namespace, key, value)
    assert store.list_namespaces() == []
    assert store.search(()) == []


# -- paging arguments ------------------------------------------------------------------------

BAD_PAGING: list[tuple[str, Op, str]] = [
    ("search limit -1", SearchOp(("a",), limit=-1), "search limit must be an integer >= 0"),
    ("search limit str", SearchOp(("a",), limit="10"), "search limit"),  # type: ignore[arg-type]
    ("search limit nan", SearchOp(("a",), limit=math.nan), "search limit"),  # type: ignore[arg-type]
    ("search offset -1", SearchOp(("a",), offset=-1), "search offset must be an integer >= 0"),
    (
        "list max_depth -1",
        ListNamespacesOp(max_depth=-1),
        "list_namespaces max_depth must be an integer >= 1",
    ),
    ("list max_depth 0", ListNamespacesOp(max_depth=0), "list_namespaces max_depth"),
    ("list limit -1", ListNamespacesOp(limit=-1), "list_namespaces limit"),
    ("list offset -1", ListNamespacesOp(offset=-1), "list_namespaces offset"),
]


@pytest.mark.parametrize(("case", "op", "named"), BAD_PAGING, ids=[c[0] for c in BAD_PAGING])
def test_check_op_refuses_bad_paging(case: str, op: Op, named: str) -> None:
    with pytest.raises(ConfigurationError, match=named) as info:
        check_op(op)
    assert "e.g." in str(info.value) or "None for whole namespaces" in str(info.value)


def test_check_op_accepts_ordinary_paging() -> None:
    for op in (
        SearchOp(("a",), limit=0, offset=0),
        SearchOp(("a",), limit=10, offset=5),
        ListNamespacesOp(max_depth=None, limit=100, offset=0),
        ListNamespacesOp(max_depth=1),
    ):
        check_op(op)


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now


NS = ("alice", "notes")
EXPIRED_FOR = timedelta(minutes=5)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def expiring(home: Home, clock: Clock) -> AgentMemoryStore:
    """A store holding one item that expired: the next search or listing deletes it."""
    index = {"dims": DIM, "embed": home.embedder.embed_documents, "fields": ["text"]}
    store = AgentMemoryStore(home.edge, index=index, ttl={"default_ttl": 1}, clock=clock)  # type: ignore[arg-type]
    store.put(NS, "k", {"text": "expires after a minute"})
    clock.now += EXPIRED_FOR
    return store


def still_stored(store: AgentMemoryStore, clock: Clock) -> bool:
    """Whether the expired item is still in the store (read as of before it expired)."""
    clock.now -= EXPIRED_FOR
    try:
        return store.get(NS, "k", refresh_ttl=False) is not None
    finally:
        clock.now += EXPIRED_FOR


class StoreCall(NamedTuple):
    """Paging the store refuses: ``method(**kwargs)`` raises an error naming ``named``."""

    method: str
    kwargs: dict[str, Any]
    named: str

    def args(self) -> tuple[Any, ...]:
        return (("alice",),) if self.method == "search" else ()


STORE_CALLS = [
    pytest.param(StoreCall("search", {"limit": -1}, "search limit"), id="search limit -1"),
    pytest.param(StoreCall("search", {"limit": math.nan}, "search limit"), id="search limit nan"),
    pytest.param(StoreCall("search", {"offset": -1}, "search offset"), id="search offset -1"),
    pytest.param(
        StoreCall("list_namespaces", {"max_depth": -1}, "max_depth"), id="list max_depth -1"
    ),
    pytest.param(
        StoreCall("list_namespaces", {"limit": -1}, "list_namespaces limit"), id="list limit -1"
    ),
]


@pytest.mark.integration
@pytest.mark.parametrize("call", STORE_CALLS)
def test_store_refuses_bad_paging_and_deletes_nothing(
    expiring: AgentMemoryStore, clock: Clock, call: StoreCall
) -> None:
    with pytest.raises(ConfigurationError, match=call.named) as info:
        getattr(expiring, call.method)(*call.args(), **call.kwargs)
    assert isinstance(info.value, AgentMemError)
    assert still_stored(expiring, clock)
    getattr(expiring, call.method)(*call.args())  # a valid call deletes the expired item
    assert not still_stored(expiring, clock)


@pytest.mark.integration
@pytest.mark.parametrize("call", STORE_CALLS)
async def test_async_store_refuses_bad_paging_and_deletes_nothing(
    expiring: AgentMemoryStore, clock: Clock, call: StoreCall
) -> None:
    with pytest.raises(ConfigurationError, match=call.named):
        await getattr(expiring, "a" + call.method)(*call.args(), **call.kwargs)
    assert still_stored(expiring, clock)
    await getattr(expiring, "a" + call.method)(*call.args())
    assert not still_stored(expiring, clock)


@pytest.mark.integration
def test_a_batch_with_one_bad_op_runs_none_of_them(
    expiring: AgentMemoryStore, clock: Clock
) -> None:
    ops: list[Op] = [PutOp(NS, "new", {"text": "written first?"}), SearchOp(("alice",), limit=-1)]
    with pytest.raises(ConfigurationError, match="search limit"):
        expiring.batch(ops)
    assert still_stored(expiring, clock)
    assert expiring.get(NS, "new") is None


@pytest.mark.integration
def test_langgraph_refuses_an_empty_label_first(expiring: AgentMemoryStore, clock: Clock) -> None:
    # Documented in AgentMemoryStore: BaseStore validates labels before our batch() runs,
    # so an empty label gets LangGraph's InvalidNamespaceError (a ValueError).
    with pytest.raises(InvalidNamespaceError):
        expiring.search(("alice", ""), limit=-1)
    assert still_stored(expiring, clock)
