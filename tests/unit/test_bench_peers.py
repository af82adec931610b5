"""``bench/peers.py``'s parts that need no optional package: every library embeds through a
lookup that fails loudly on a text it was not given, agentmem ranks a tiny conversation
through it, and the network guard refuses to leave the machine."""

from __future__ import annotations

import socket
from datetime import datetime, timezone

import pytest

from agentmem.ingest import Turn, turn_text
from bench._peers import AgentmemSystem, BM25System, LookupEmbedder, LookupMiss, VectorTable
from bench.peers import NetworkGuard
from tests.fake_embedder import HashingEmbedder

DAY = datetime(2023, 5, 8, tzinfo=timezone.utc)
TURNS = [
    Turn("D1:1", "Ann", "I adopted a golden retriever puppy named Biscuit", 1, DAY),
    Turn("D1:2", "Bob", "I started pottery classes on Tuesdays", 1, DAY),
    Turn("D1:3", "Ann", "My favourite book is Charlotte's Web", 1, DAY),
]
QUESTION = "What is the name of Ann's puppy Biscuit?"


def _table() -> VectorTable:
    return VectorTable.build(HashingEmbedder(), [turn_text(t) for t in TURNS], [QUESTION])


def test_lookup_returns_the_stored_vector_and_refuses_any_other_text() -> None:
    table = _table()
    embedder = LookupEmbedder(table, "hashing-fake")
    assert embedder.embed_query(QUESTION) == HashingEmbedder().embed_query(QUESTION)
    with pytest.raises(LookupMiss, match="no stored vector"):
        embedder.embed_documents(["a text nobody embedded"])


def test_agentmem_ranks_a_tiny_conversation_through_the_lookup() -> None:
    system = AgentmemSystem(_table(), "hashing-fake", context_turns=0, name="agentmem")
    try:
        system.ingest("conv-a", TURNS, DAY)
        assert system.search("conv-a", QUESTION, 3)[0] == {"D1:1"}
    finally:
        system.close()


def test_bm25_peer_ranks_the_matching_turn_first() -> None:
    pytest.importorskip("rank_bm25", reason="the bench extra is not installed")
    system = BM25System()
    system.ingest("conv-a", TURNS, DAY)
    assert system.search("conv-a", "pottery classes", 2)[0] == {"D1:2"}


def test_network_guard_refuses_and_counts_remote_connections() -> None:
    guard = NetworkGuard()
    with guard.active(), pytest.raises(OSError, match="offline"):
        socket.getaddrinfo("example.org", 443)
    assert guard.attempts == ["example.org"]
