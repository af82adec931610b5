"""Behaviour every session store backend must have (see ``stores/base.py``).

Each test runs in both modes (the ``mode`` fixture): written with the sync names, its calls
reach the async twins in ``"async"`` mode (see ``_backends.AsyncFace``).
"""

from __future__ import annotations

import itertools
import math
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmem.errors import (
    InvalidMessageError,
    InvalidSessionIdError,
    InvalidValueError,
    StoreClosedError,
)
from agentmem.stores.base import MAX_SESSION_ID_LENGTH, ExclusiveAppends, SessionStore
from agentmem.types import Message, ToolCall
from tests.conformance._backends import AsyncFace, unwrap


def msgs(*contents: str) -> list[Message]:
    return [Message(role="user", content=c) for c in contents]


def contents(store: SessionStore, session_id: str, **kw: Any) -> list[str]:
    return [m.message.content for m in store.read(session_id, **kw)]


def test_satisfies_the_protocol(session_store: SessionStore) -> None:
    assert isinstance(unwrap(session_store), SessionStore)
    assert isinstance(unwrap(session_store), ExclusiveAppends)
    assert unwrap(session_store).exclusive_appends is True


# -- the log ---------------------------------------------------------------------------------


def test_append_returns_increasing_seqs_and_read_keeps_order(session_store: SessionStore) -> None:
    first = session_store.append("s1", msgs("a", "b", "c"))
    second = session_store.append("s1", msgs("d"))
    seqs = first + second
    assert len(seqs) == 4
    assert seqs[0] >= 1
    assert all(a < b for a, b in itertools.pairwise(seqs))
    stored = session_store.read("s1")
    assert [m.seq for m in stored] == seqs
    assert [m.message.content for m in stored] == ["a", "b", "c", "d"]


def test_append_nothing_returns_no_seqs(session_store: SessionStore) -> None:
    assert session_store.append("s1", []) == []
    assert session_store.count("s1") == 0
    assert session_store.read("s1") == []


def test_empty_append_does_not_create_a_session(session_store: SessionStore) -> None:
    session_store.append("s1", [])
    assert session_store.sessions() == []


def test_an_exclusive_append_of_new_messages_stores_them_and_its_retry_nothing(
    session_store: SessionStore,
) -> None:
    turn = msgs("a", "b")
    seqs = session_store.append("s1", turn, exclusive=True)
    assert len(seqs) == 2
    assert seqs[0] < seqs[1]
    assert session_store.append("s1", turn, exclusive=True) == seqs  # a retry
    assert contents(session_store, "s1") == ["a", "b"]


@pytest.mark.parametrize(("landed_n", "ours_n"), [(2, 3), (3, 2), (1, 4)])
def test_an_exclusive_append_stores_nothing_when_the_session_holds_one_of_its_ids(
    session_store: SessionStore, landed_n: int, ours_n: int
) -> None:
    """Two attempts of one turn (the same ids by position, other messages): whichever
    length landed first, the other's exclusive append leaves the log as it was, and tells
    the seqs of the ids the session holds (0 for the others)."""
    ids = [str(uuid.uuid4()) for _ in range(max(landed_n, ours_n))]

    def attempt(answer: str, n: int) -> list[Message]:
        return [Message(role="user", content=f"{answer} {i}", id=ids[i]) for i in range(n)]

    landed = session_store.append("s1", attempt("first", landed_n), exclusive=True)
    refused = session_store.append("s1", attempt("second", ours_n), exclusive=True)
    held = min(landed_n, ours_n)
    assert refused == landed[:held] + [0] * (ours_n - held)
    assert contents(session_store, "s1") == [f"first {i}" for i in range(landed_n)]
    assert session_store.count("s1") == landed_n


def test_read_after_and_limit(session_store: SessionStore) -> None:
    seqs = session_store.append("s1", msgs(*"abcdefghij"))
    assert contents(session_store, "s1", after=seqs[3]) == list("efghij")
    assert contents(session_store, "s1", after=seqs[3], limit=2) == ["e", "f"]
    assert contents(session_store, "s1", limit=3) == ["a", "b", "c"]
    assert contents(session_store, "s1", limit=100) == list("abcdefghij")
    assert contents(session_store, "s1", after=0, limit=0) == []
    assert contents(session_store, "s1", after=seqs[-1]) == []
    assert contents(session_store, "s1", after=seqs[-1] + 1000) == []


def test_read_last(session_store: SessionStore) -> None:
    seqs = session_store.append("s1", msgs(*"abcde"))
    last = session_store.read_last("s1", 3)
    assert [m.message.content for m in last] == ["c", "d", "e"]
    assert [m.seq for m in last] == seqs[2:]
    assert [m.message.content for m in session_store.read_last("s1", 50)] == list("abcde")
    assert session_store.read_last("s1", 0) == []
    assert session_store.read_last("s1", -1) == []


def test_count_and_last_seq(session_store: SessionStore) -> None:
    seqs = session_store.append("s1", msgs("a", "b"))
    seqs += session_store.append("s1", msgs("c"))
    assert session_store.count("s1") == 3
    assert session_store.last_seq("s1") == seqs[-1]


def test_unknown_session_is_empty(session_store: SessionStore) -> None:
    assert session_store.read("nobody") == []
    assert session_store.read_last("nobody", 5) == []
    assert session_store.count("nobody") == 0
    assert session_store.last_seq("nobody") == 0
    assert session_store.get_state("nobody", "summary") is None
    session_store.delete_state("nobody", "summary")
    session_store.clear("nobody")
    assert session_store.sessions() == []


def test_sessions_do_not_share_messages(session_store: SessionStore) -> None:
    session_store.append("s1", msgs("one"))
    session_store.append("s2", msgs("two", "three"))
    assert contents(session_store, "s1") == ["one"]
    assert contents(session_store, "s2") == ["two", "three"]
    assert session_store.count("s1") == 1


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    batches=st.lists(st.integers(min_value=0, max_value=4), max_size=6),
    cut=st.integers(min_value=0, max_value=20),
    limit=st.none() | st.integers(min_value=0, max_value=20),
    last=st.integers(min_value=0, max_value=20),
)
def test_reads_match_a_list_model(
    session_store: SessionStore, batches: list[int], cut: int, limit: int | None, last: int
) -> None:
    sid = f"p-{uuid.uuid4().hex}"
    model: list[tuple[int, str]] = []
    for size in batches:
        texts = [f"m{len(model) + i}" for i in range(size)]
        model += zip(session_store.append(sid, msgs(*texts)), texts, strict=True)
    after = model[cut - 1][0] if 0 < cut <= len(model) else 0
    expected = [t for s, t in model if s > after]
    expected = expected if limit is None else expected[:limit]
    assert contents(session_store, sid, after=after, limit=limit) == expected
    tail = [t for _, t in model][-last:] if last else []
    assert [m.message.content for m in session_store.read_last(sid, last)] == tail
    assert session_store.count(sid) == len(model)
    assert session_store.last_seq(sid) == (model[-1][0] if model else 0)


# -- messages survive storage ----------------------------------------------------------------


def test_messages_round_trip_losslessly(session_store: SessionStore) -> None:
    ist = timezone(timedelta(hours=5, minutes=30))
    original = [
        Message(role="system", content='You are terse.\nNever "shout".', name="policy"),
        Message(
            role="user",
            content="北京明天天气怎么样？🌧️ 東京も",
            name="alice",
            timestamp=datetime(2024, 2, 29, 23, 59, 58, 123456, tzinfo=ist),
            metadata={"lang": "zh", "scores": [1, 2.5, None, True], "nested": {"k": "värde"}},
        ),
        Message(
            role="assistant",
            content="",
            tool_calls=(
                ToolCall(id="call_1", name="get_weather", arguments='{"city": "北京"}'),
                ToolCall(id="call_2", name="get_time", arguments="{}"),
            ),
        ),
        Message(role="tool", content='{"temp": -3.5}', tool_call_id="call_1", name="get_weather"),
        Message(role="assistant", content="Cold: -3.5 °C.\u0000\t end", id="fixed-id"),
    ]
    seqs = session_store.append("s1", original)
    stored = session_store.read("s1")
    assert [m.seq for m in stored] == seqs
    for before, after in zip(original, [m.message for m in stored], strict=True):
        assert after.model_dump() == before.model_dump()
        assert after.timestamp.utcoffset() == before.timestamp.utcoffset()
    assert [m.message for m in session_store.read_last("s1", 2)] == original[-2:]


# -- state -----------------------------------------------------------------------------------


def test_state_set_get_replace_delete(session_store: SessionStore) -> None:
    value = {"text": "用户喜欢 Python", "upto": 12, "ratio": 0.25, "tags": ["a"], "x": None}
    session_store.set_state("s1", "summary", value)
    assert session_store.get_state("s1", "summary") == value
    session_store.set_state("s1", "summary", {"text": "new"})
    assert session_store.get_state("s1", "summary") == {"text": "new"}  # replaced, not merged
    session_store.delete_state("s1", "summary")
    assert session_store.get_state("s1", "summary") is None
    session_store.delete_state("s1", "summary")  # absent: no error


def test_state_is_copied_in_and_out(session_store: SessionStore) -> None:
    value: dict[str, Any] = {"items": [1]}
    session_store.set_state("s1", "working", value)
    value["items"].append(2)
    got = session_store.get_state("s1", "working")
    assert got == {"items": [1]}
    assert got is not None
    got["items"].append(3)
    assert session_store.get_state("s1", "working") == {"items": [1]}


def test_state_is_isolated_by_session_and_key(session_store: SessionStore) -> None:
    session_store.set_state("s1", "k", {"who": "s1"})
    session_store.set_state("s2", "k", {"who": "s2"})
    session_store.set_state("s1", "other", {"who": "s1-other"})
    assert session_store.get_state("s1", "k") == {"who": "s1"}
    assert session_store.get_state("s2", "k") == {"who": "s2"}
    session_store.delete_state("s1", "k")
    assert session_store.get_state("s2", "k") == {"who": "s2"}
    assert session_store.get_state("s1", "other") == {"who": "s1-other"}


@pytest.mark.parametrize(
    "bad",
    [
        {"x": math.nan},
        {"x": math.inf},
        {"x": object()},
        {"x": {1, 2}},
        {"x": b"bytes"},
        ["not", "a", "dict"],
    ],
    ids=["nan", "inf", "object", "set", "bytes", "list"],
)
def test_unstorable_state_is_refused_and_leaves_state_unchanged(
    session_store: SessionStore, bad: Any
) -> None:
    session_store.set_state("s1", "k", {"ok": 1})
    with pytest.raises(InvalidValueError):
        session_store.set_state("s1", "k", bad)
    with pytest.raises(InvalidValueError):
        session_store.set_state("s1", "fresh", bad)
    assert session_store.get_state("s1", "k") == {"ok": 1}
    assert session_store.get_state("s1", "fresh") is None


# -- clear and sessions ----------------------------------------------------------------------


@pytest.mark.parametrize("key", ["", None, 3])
def test_bad_state_keys_are_refused(session_store: SessionStore, key: Any) -> None:
    for call in (
        lambda: session_store.set_state("s1", key, {"a": 1}),
        lambda: session_store.get_state("s1", key),
        lambda: session_store.delete_state("s1", key),
    ):
        with pytest.raises(InvalidValueError, match="state key"):
            call()
    assert session_store.sessions() == []


def test_non_messages_are_refused_and_nothing_is_appended(session_store: SessionStore) -> None:
    bad: list[Any] = [Message(role="user", content="ok"), {"role": "user", "content": "dict"}]
    with pytest.raises(InvalidMessageError, match=r"messages\[1\]"):
        session_store.append("s1", bad)
    assert session_store.read("s1") == []


def test_clear_removes_messages_and_state_and_never_reuses_seqs(
    session_store: SessionStore,
) -> None:
    old = session_store.append("s1", msgs("a", "b", "c"))
    session_store.set_state("s1", "summary", {"upto": old[-1]})
    session_store.append("s2", msgs("keep"))
    session_store.clear("s1")
    assert session_store.read("s1") == []
    assert session_store.count("s1") == 0
    assert session_store.last_seq("s1") == 0
    assert session_store.get_state("s1", "summary") is None
    assert contents(session_store, "s2") == ["keep"]

    new = session_store.append("s1", msgs("fresh"))
    assert new[0] > old[-1]
    # A reader that cached seq old[-1] sees only the new message.
    assert contents(session_store, "s1", after=old[-1]) == ["fresh"]
    assert contents(session_store, "s1") == ["fresh"]


def test_sessions_lists_sessions_with_messages_or_state(session_store: SessionStore) -> None:
    assert session_store.sessions() == []
    session_store.append("b-msgs", msgs("x"))
    session_store.set_state("a-state", "k", {})
    session_store.append("c-both", msgs("y"))
    session_store.set_state("c-both", "k", {"v": 1})
    assert session_store.sessions() == ["a-state", "b-msgs", "c-both"]
    session_store.clear("c-both")
    session_store.delete_state("a-state", "k")
    assert session_store.sessions() == ["b-msgs"]


# -- refused input ---------------------------------------------------------------------------

BAD_IDS = ["", "x" * (MAX_SESSION_ID_LENGTH + 1), "a{b}", "{tag}", "a b", "a*", "a/b", "é"]

CALLS: dict[str, Callable[[SessionStore, Any], Any]] = {
    "append": lambda s, sid: s.append(sid, msgs("x")),
    "read": lambda s, sid: s.read(sid),
    "read_last": lambda s, sid: s.read_last(sid, 1),
    "count": lambda s, sid: s.count(sid),
    "last_seq": lambda s, sid: s.last_seq(sid),
    "get_state": lambda s, sid: s.get_state(sid, "k"),
    "set_state": lambda s, sid: s.set_state(sid, "k", {}),
    "delete_state": lambda s, sid: s.delete_state(sid, "k"),
    "clear": lambda s, sid: s.clear(sid),
    "state_keys": lambda s, sid: s.state_keys(sid),
    "get_owner": lambda s, sid: s.get_owner(sid),
    "claim_owner": lambda s, sid: s.claim_owner(sid, {"owner": ["u", None]}),
    "set_owner": lambda s, sid: s.set_owner(sid, {"owner": ["u", None]}),
}


# -- ownership records -----------------------------------------------------------------------


def test_the_first_claim_wins_and_later_claims_return_it(session_store: SessionStore) -> None:
    assert session_store.get_owner("s1") is None
    alice, bob = {"owner": ["alice", None]}, {"owner": ["bob", None]}
    assert session_store.claim_owner("s1", alice) == alice
    assert session_store.claim_owner("s1", bob) == alice
    assert session_store.get_owner("s1") == alice
    assert session_store.get_owner("s2") is None  # per session
    shared = {"owner": ["alice", None], "members": [["bob", None]]}
    session_store.set_owner("s1", shared)
    assert session_store.get_owner("s1") == shared


def test_the_owner_survives_clear(session_store: SessionStore) -> None:
    session_store.claim_owner("s1", {"owner": ["alice", "agent"]})
    session_store.append("s1", msgs("secret"))
    session_store.set_state("s1", "working", {"card": "4111"})
    session_store.clear("s1")
    assert session_store.count("s1") == 0
    assert session_store.get_state("s1", "working") is None
    assert session_store.get_owner("s1") == {"owner": ["alice", "agent"]}
    assert session_store.claim_owner("s1", {"owner": ["bob", None]}) == {
        "owner": ["alice", "agent"]
    }


def test_state_keys_lists_the_state_of_one_session(session_store: SessionStore) -> None:
    assert session_store.state_keys("s1") == []
    session_store.set_state("s1", "b", {})
    session_store.set_state("s1", 'consolidation:["a",null]', {"w": 1})
    session_store.set_state("s2", "c", {})
    assert session_store.state_keys("s1") == sorted(["b", 'consolidation:["a",null]'])
    session_store.delete_state("s1", "b")
    assert session_store.state_keys("s1") == ['consolidation:["a",null]']


def test_an_unstorable_owner_record_is_refused(session_store: SessionStore) -> None:
    with pytest.raises(InvalidValueError):
        session_store.claim_owner("s1", {"owner": math.nan})
    assert session_store.get_owner("s1") is None


def raises(exc: type[Exception], call: Callable[[SessionStore, Any], Any], *args: Any) -> bool:
    """True if ``call(*args)`` raises ``exc``; False if it returns; other errors propagate."""
    try:
        call(*args)
    except exc:
        return True
    return False


@pytest.mark.parametrize("method", CALLS)
def test_invalid_session_ids_are_refused(session_store: SessionStore, method: str) -> None:
    call = CALLS[method]
    accepted = [
        bad
        for bad in [*BAD_IDS, None, 42]
        if not raises(InvalidSessionIdError, call, session_store, bad)
    ]
    assert accepted == [], f"{method} accepted invalid session ids"
    assert session_store.sessions() == []


def test_longest_and_punctuated_session_ids_work(session_store: SessionStore) -> None:
    for sid in ["x" * MAX_SESSION_ID_LENGTH, "user-42:chat.7@team_a"]:
        session_store.append(sid, msgs("hi"))
        assert contents(session_store, sid) == ["hi"]
    assert len(session_store.sessions()) == 2


# -- close -----------------------------------------------------------------------------------


def test_use_after_close_raises(session_store: SessionStore) -> None:
    session_store.append("s1", msgs("x"))
    session_store.close()
    session_store.close()  # idempotent
    worked = [n for n, c in CALLS.items() if not raises(StoreClosedError, c, session_store, "s1")]
    assert worked == [], "these methods still worked after close()"
    with pytest.raises(StoreClosedError):
        session_store.sessions()


def test_use_after_close_raises_for_session_calls(session_store: SessionStore) -> None:
    session_store.close()
    worked = [n for n, c in CALLS.items() if not raises(StoreClosedError, c, session_store, "s1")]
    assert worked == [], "these methods still worked after close()"


# -- both faces of one store -----------------------------------------------------------------


def test_sync_and_async_calls_share_one_store(session_store: SessionStore, mode: str) -> None:
    store = unwrap(session_store)
    other = store if mode == "async" else AsyncFace(store)  # the other mode's calls
    seqs = session_store.append("s1", msgs("a", "b"))
    assert other.read("s1") == session_store.read("s1")
    assert other.append("s1", msgs("c"))[0] > seqs[-1]
    assert session_store.read_last("s1", 1) == other.read_last("s1", 1)
    other.set_state("s1", "k", {"v": [1, "二"]})
    assert session_store.get_state("s1", "k") == {"v": [1, "二"]}
    session_store.clear("s1")
    assert other.count("s1") == 0
    assert other.sessions() == []
