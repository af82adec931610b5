"""LangGraph store operations with unencodable text or over-deep values are refused.

``check_op`` (langchain_agentmem/_store_checks.py) is the check; ``AgentMemoryStore.batch``
must call it for every op before running it. Until store.py does, the end-to-end test is
an expected failure (strict, so it reports as soon as the call is wired in).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import (
    GetOp,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    SearchOp,
)

from agentmem.errors import InvalidValueError
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
