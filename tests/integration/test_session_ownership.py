"""A session belongs to its user: every door that names a session refuses another user.

Alice writes a conversation (messages, a summary, working memory holding a card number, a
consolidation watermark); then Bob names her session through each door, on the real stores
(SQLite or a real redis-server for sessions, Qdrant Edge for memories). Each door raises
``SessionOwnershipError`` whose message does not name Alice, Alice's session is unchanged,
and Bob's long-term memory holds nothing.
"""

from __future__ import annotations

import functools
import json
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage

from agentmem import (
    ConversationBufferMemory,
    MemoryManager,
    MemoryService,
    SessionOwnershipError,
    SummaryBufferMemory,
    WorkingMemory,
)
from agentmem.cli import main
from agentmem.controller.ownership import (
    SessionOwners,
    legacy_watermark_key,
    owner_key,
    watermark_key,
)
from agentmem.errors import InvalidSessionIdError, InvalidValueError
from agentmem.short_term.summary import SUMMARY_STATE_KEY
from agentmem.stores.base import SessionStore
from langchain_agentmem import AgentMemoryChatHistory, create_memory_tools
from llamaindex_agentmem import AgentMemory, WorkingMemoryBlock
from tests.fakes import HashingEmbedder
from tests.langchain.test_multi_user_agent import Ctx, ToolScriptModel, build_agent

pytestmark = pytest.mark.integration

DIM = 256
CARD = "4111-1111-1111-1111"


@dataclass
class Deployment:
    """A service on one home, its session backend, and how to reopen it."""

    service: MemoryService
    home: Path
    backend: str
    session: str  # alice's session (unique per test: the redis-server is shared)


def open_service(home: Path, backend: str, redis_url: str | None) -> MemoryService:
    return MemoryService.open(
        home,
        embedder=HashingEmbedder(DIM),
        background=False,
        consolidate_every_tokens=None,
        redis_url=redis_url if backend == "redis" else None,
    )


@pytest.fixture(params=["sqlite", "redis"])
def deployment(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Deployment]:
    backend = str(request.param)
    redis_url = request.getfixturevalue("redis_url") if backend == "redis" else None
    if redis_url is not None:  # for the doors that open the home themselves
        monkeypatch.setenv("AGENTMEM_REDIS_URL", redis_url)
    with open_service(tmp_path, backend, redis_url) as service:
        session = f"chat-{uuid.uuid4().hex[:8]}"
        write_alices_session(service, session)
        yield Deployment(service, tmp_path, backend, session)


def write_alices_session(service: MemoryService, session: str) -> None:
    alice = service.manager("alice", session)
    alice.process_interaction(f"My card number is {CARD}, keep it for the booking.", "Noted.")
    alice.update_working_memory("card", CARD)
    service.sessions.set_state(session, SUMMARY_STATE_KEY, {"text": f"Alice paid with {CARD}"})
    assert alice.consolidate().written == 1


def snapshot(store: SessionStore, session: str) -> dict[str, Any]:
    """Everything a session holds: messages, every state document, the owner record."""
    return {
        "messages": [(m.seq, m.message.to_json()) for m in store.read(session)],
        "state": {k: store.get_state(session, k) for k in store.state_keys(session)},
        "owner": store.get_owner(session),
    }


def assert_refused(deployment: Deployment, door: Callable[[], object]) -> None:
    service, session = deployment.service, deployment.session
    before = snapshot(service.sessions, session)
    assert CARD in json.dumps(before)  # the secret is there to leak
    assert {SUMMARY_STATE_KEY, watermark_key(("alice", None))} <= set(before["state"])
    with pytest.raises(SessionOwnershipError) as caught:
        door()
    assert session in str(caught.value)
    assert "alice" not in str(caught.value)  # the message never names the owner
    assert snapshot(service.sessions, session) == before
    assert service.long_term("bob").all_records() == []


def test_ownership_error_is_an_invalid_session_id_error() -> None:
    assert issubclass(SessionOwnershipError, InvalidSessionIdError)


def test_service_manager(deployment: Deployment) -> None:
    assert_refused(deployment, lambda: deployment.service.manager("bob", deployment.session))


def test_another_agent_of_the_same_user(deployment: Deployment) -> None:
    service, session = deployment.service, deployment.session
    assert_refused(deployment, lambda: service.manager("alice", session, agent_id="planner"))


def test_manager_from_parts(deployment: Deployment) -> None:
    service = deployment.service
    assert_refused(
        deployment,
        lambda: MemoryManager.from_parts(
            user_id="bob",
            sessions=service.sessions,
            long_term=service.long_term("bob"),
            session_id=deployment.session,
        ),
    )


@pytest.mark.parametrize(
    ("opener", "embedder_arg"),
    [
        pytest.param(MemoryManager.open, "embedder", id="MemoryManager.open"),
        pytest.param(AgentMemory.from_defaults, "embed_model", id="AgentMemory.from_defaults"),
    ],
)
def test_opening_the_home(
    deployment: Deployment, opener: Callable[..., object], embedder_arg: str
) -> None:
    """The doors that open the home themselves (their embedder argument is named apart)."""
    assert_refused(
        deployment,
        lambda: opener(
            user_id="bob",
            session_id=deployment.session,
            home=deployment.home,
            **{embedder_arg: HashingEmbedder(DIM)},
        ),
    )


@pytest.mark.parametrize("user", ["bob", None])
def test_langchain_chat_history(deployment: Deployment, user: str | None) -> None:
    store = deployment.service.sessions
    assert_refused(
        deployment,
        lambda: AgentMemoryChatHistory(deployment.session, store=store, user_id=user).messages,
    )


def test_llamaindex_agent_memory_from_service(deployment: Deployment) -> None:
    service, session = deployment.service, deployment.session
    assert_refused(
        deployment, lambda: AgentMemory.from_service(service, user_id="bob", session_id=session)
    )


def test_llamaindex_working_memory_block(deployment: Deployment) -> None:
    service, session = deployment.service, deployment.session
    assert_refused(
        deployment,
        lambda: WorkingMemoryBlock(working=service, user_id="bob", session_id=session),
    )


TIERS: dict[str, Callable[[SessionStore, str, str | None], object]] = {
    "working memory": lambda store, session, user: WorkingMemory(
        session_id=session, store=store, user_id=user
    ).get_context_for_llm(),
    "summary buffer": lambda store, session, user: SummaryBufferMemory(
        session_id=session, store=store, user_id=user
    ).get_all_messages(),
    "conversation buffer": lambda store, session, user: ConversationBufferMemory(
        session_id=session, store=store, user_id=user
    ).get_all_messages(),
    "chat history on a given memory": lambda store, session, user: (
        AgentMemoryChatHistory(
            session, memory=SummaryBufferMemory(session_id=session, store=store, user_id=user)
        ).messages
    ),
    "llamaindex working block on a given tier": lambda store, session, user: WorkingMemoryBlock(
        working=WorkingMemory(session_id=session, store=store, user_id=user)
    ),
}


@pytest.mark.parametrize("user", ["bob", None])
@pytest.mark.parametrize("tier", sorted(TIERS))
def test_every_tier_on_a_shared_store(deployment: Deployment, tier: str, user: str | None) -> None:
    """The tiers themselves name a session on a store: built with another user (or with no
    user) on Alice's session, they read and write nothing of it."""
    service, session = deployment.service, deployment.session
    assert_refused(deployment, lambda: TIERS[tier](service.sessions, session, user))
    TIERS[tier](service.sessions, session, "alice")  # the owner's own door


async def test_async_working_memory_on_a_shared_store(deployment: Deployment) -> None:
    service, session = deployment.service, deployment.session
    before = snapshot(service.sessions, session)
    with pytest.raises(SessionOwnershipError):
        await WorkingMemory.aopen(session_id=session, store=service.sessions, user_id="bob")
    with pytest.raises(SessionOwnershipError):
        await WorkingMemory.aopen(session_id=session, store=service.sessions)
    assert snapshot(service.sessions, session) == before
    mine = await WorkingMemory.aopen(session_id=session, store=service.sessions, user_id="alice")
    assert mine.get_variable("card") == CARD


async def test_async_door(deployment: Deployment) -> None:
    owners = SessionOwners(deployment.service.sessions)
    before = snapshot(deployment.service.sessions, deployment.session)
    with pytest.raises(SessionOwnershipError):
        await owners.acheck(deployment.session, ("bob", None))
    await owners.acheck(deployment.session, ("alice", None))
    assert snapshot(deployment.service.sessions, deployment.session) == before


def test_the_owner_keeps_working_and_a_reset_keeps_the_owner(deployment: Deployment) -> None:
    service, session = deployment.service, deployment.session
    alice = service.manager("alice", session)
    assert alice.working.get_variable("card") == CARD
    memory = AgentMemory.from_service(service, user_id="alice", session_id=session)
    memory.reset()
    assert service.sessions.count(session) == 0
    # A cleared session is still Alice's: Bob cannot take it over.
    with pytest.raises(SessionOwnershipError):
        service.manager("bob", session)


# -- sharing ---------------------------------------------------------------------------------


def test_a_shared_session_consolidates_into_each_members_own_memory(
    deployment: Deployment,
) -> None:
    service = deployment.service
    session = f"team-{uuid.uuid4().hex[:8]}"
    alice = service.manager("alice", session)
    alice.process_interaction("Our team offsite is in Lisbon in May.", "Noted.")
    with pytest.raises(SessionOwnershipError):
        service.share_session(session, owner="bob", members=["alice"])  # not his to share
    record = service.share_session(session, owner="alice", members=["bob"])
    assert record.members == (("bob", None),)
    bob = service.manager("bob", session)
    bob.process_interaction("I will book the flights to Lisbon.", "Great.")
    assert [m.content for m in alice.short_term.get_log()] == [
        m.content for m in bob.short_term.get_log()
    ]
    assert bob.consolidate().written == 2
    assert alice.consolidate().written == 2
    for user in ("alice", "bob"):
        mine = service.long_term(user).all_records()
        assert {r.scope.user_id for r in mine} == {user}
        records = [r for r in mine if r.source_session_id == session]
        assert len(records) == 2
        assert any("Lisbon" in r.content for r in records)
        assert service.sessions.get_state(session, watermark_key((user, None))) is not None
    # Sharing ends when the owner says so; the former member's handle is dropped.
    service.share_session(session, owner="alice", members=[])
    with pytest.raises(SessionOwnershipError):
        service.manager("bob", session)


HELD_DOORS: dict[str, Callable[[MemoryService, str], Callable[[], object]]] = {
    "manager log": lambda service, session: service.manager("bob", session).get_log,
    "manager turn": lambda service, session: functools.partial(
        service.manager("bob", session).process_interaction, "still here?", "yes"
    ),
    "manager reset": lambda service, session: service.manager("bob", session).clear_session,
    "manager consolidation": lambda service, session: service.manager("bob", session).consolidate,
    "working memory": lambda service, session: functools.partial(
        service.manager("bob", session).working.get_variable, "card"
    ),
    "llamaindex memory": lambda service, session: (
        AgentMemory.from_service(service, user_id="bob", session_id=session).get_all
    ),
    "tier built by the member": lambda service, session: (
        WorkingMemory(session_id=session, store=service.sessions, user_id="bob").get_context_for_llm
    ),
}


@pytest.mark.parametrize("door", sorted(HELD_DOORS))
def test_a_dropped_member_is_refused_through_the_handles_it_holds(
    deployment: Deployment, door: str
) -> None:
    """A member takes a handle while the session is shared; the owner then drops it: the
    handle it still holds reads, writes, consolidates and resets nothing from then on."""
    service, session = deployment.service, deployment.session
    service.share_session(session, owner="alice", members=["bob"])
    held = HELD_DOORS[door](service, session)
    service.share_session(session, owner="alice", members=[])
    assert_refused(deployment, held)


async def test_a_dropped_member_is_refused_through_a_held_handle_in_async_code(
    deployment: Deployment,
) -> None:
    service, session = deployment.service, deployment.session
    service.share_session(session, owner="alice", members=["bob"])
    bob = service.manager("bob", session)
    assert [m.content for m in await bob.aget_log()][1] == "Noted."
    service.share_session(session, owner="alice", members=[])
    before = snapshot(service.sessions, session)
    with pytest.raises(SessionOwnershipError):
        await bob.aget_log()
    with pytest.raises(SessionOwnershipError):
        await bob.aprocess_interaction("still here?", "yes")
    assert snapshot(service.sessions, session) == before


def read_history(store: SessionStore, session: str) -> Callable[[], object]:
    history = AgentMemoryChatHistory(session, store=store, view="full")
    return lambda: history.messages


USERLESS_DOORS: dict[str, Callable[[SessionStore, str], Callable[[], object]]] = {
    "chat history": read_history,
    "chat history write": lambda store, session: functools.partial(
        AgentMemoryChatHistory(session, store=store).add_messages, [HumanMessage("hi")]
    ),
    "working memory": lambda store, session: functools.partial(
        WorkingMemory(session_id=session, store=store).get_variable, "card"
    ),
    "conversation buffer": lambda store, session: (
        ConversationBufferMemory(session_id=session, store=store).get_all_messages
    ),
}


@pytest.mark.parametrize("door", sorted(USERLESS_DOORS))
def test_a_door_without_a_user_is_refused_once_a_user_claims_its_session(
    deployment: Deployment, door: str
) -> None:
    """A door without a user, opened while nobody owned the session, waits there: once a
    user claims the session, the door it holds reads and writes nothing of it."""
    service = deployment.service
    session = f"lobby-{uuid.uuid4().hex[:8]}"
    held = USERLESS_DOORS[door](service.sessions, session)
    alice = service.manager("alice", session)
    alice.process_interaction(f"Book it on the card {CARD}, in the lobby.", "Booked.")
    alice.update_working_memory("card", CARD)
    service.sessions.set_state(session, SUMMARY_STATE_KEY, {"text": f"Alice paid with {CARD}"})
    alice.consolidate()
    assert_refused(Deployment(service, deployment.home, deployment.backend, session), held)


def test_a_member_dropped_while_its_handle_is_built_gets_no_handle(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bob takes a handle; between the check of his membership and the caching of his
    handle, Alice stops sharing the session: neither that call nor a later one hands Bob
    a handle."""
    service = deployment.service
    session = f"team-{uuid.uuid4().hex[:8]}"
    service.manager("alice", session)
    service.share_session(session, owner="alice", members=["bob"])
    real = service._builder.build
    checked, go = threading.Event(), threading.Event()

    def build(*args: Any, **kwargs: Any) -> MemoryManager:
        handle = real(*args, **kwargs)  # Bob's membership is checked here
        if not checked.is_set():
            checked.set()
            assert go.wait(timeout=30)
        return handle

    monkeypatch.setattr(service._builder, "build", build)
    outcome: list[object] = []

    def take() -> None:
        try:
            outcome.append(service.manager("bob", session))
        except SessionOwnershipError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=take)
    thread.start()
    assert checked.wait(timeout=30)
    service.share_session(session, owner="alice", members=[])  # meanwhile: Bob is dropped
    go.set()
    thread.join(timeout=30)
    assert len(outcome) == 1
    assert isinstance(outcome[0], SessionOwnershipError)  # checked again, and refused
    with pytest.raises(SessionOwnershipError):
        service.manager("bob", session)
    assert service.manager("alice", session).session_id == session


def test_a_session_shared_anew_during_every_build_still_gives_a_handle(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The owner re-shares the session while each of Bob's builds runs (the members stay):
    ``manager`` gives up checking after a few builds and hands out the last one, uncached,
    instead of building forever; that handle still refuses Bob once he is dropped."""
    service = deployment.service
    session = f"team-{uuid.uuid4().hex[:8]}"
    service.manager("alice", session)
    service.share_session(session, owner="alice", members=["bob"])
    real = service._builder.build
    builds: list[int] = []

    def build(*args: Any, **kwargs: Any) -> MemoryManager:
        handle = real(*args, **kwargs)
        builds.append(1)
        if len(builds) < 100:  # re-shared during every build (a bound on the test only)
            service.share_session(session, owner="alice", members=["bob"])
        return handle

    monkeypatch.setattr(service._builder, "build", build)
    bob = service.manager("bob", session)
    assert 1 < len(builds) < 10
    assert ("bob", session, None) not in service._handles  # not cached: checked anew later
    bob.process_interaction("hello from bob", "hi bob")
    service.share_session(session, owner="alice", members=[])
    with pytest.raises(SessionOwnershipError):
        bob.get_log()


def test_a_dropped_member_gets_no_handle_from_a_copy_of_the_service(
    deployment: Deployment,
) -> None:
    service = deployment.service
    session = f"team-{uuid.uuid4().hex[:8]}"
    service.manager("alice", session)
    service.share_session(session, owner="alice", members=["bob"])
    quiet = service.with_settings(consolidate_every_tokens=None)
    quiet.manager("bob", session)  # cached in the copy
    service.share_session(session, owner="alice", members=[])
    with pytest.raises(SessionOwnershipError):
        quiet.manager("bob", session)
    service.share_session(session, owner="alice", members=["bob"])  # shared again: usable
    assert quiet.manager("bob", session).session_id == session


def test_a_forgotten_sharing_count_never_revives_a_dropped_members_handle(
    deployment: Deployment,
) -> None:
    """The table of sharing counts is bounded: once it forgets a session, the count that
    starts anew must not match the one a handle cached in a copy was checked at."""
    service = deployment.service
    sharings = service._shared.sharings
    sharings._max_sessions = 2
    session = f"team-{uuid.uuid4().hex[:8]}"
    service.manager("alice", session)
    service.share_session(session, owner="alice", members=["bob"])  # count 1
    quiet = service.with_settings(consolidate_every_tokens=None)
    quiet.manager("bob", session)  # cached in the copy at count 1
    service.share_session(session, owner="alice", members=[])  # count 2: Bob dropped
    for i in range(3):  # the table overflows and forgets the session's count
        other = f"other-{i}-{uuid.uuid4().hex[:8]}"
        service.manager("alice", other)
        service.share_session(other, owner="alice", members=["carol"])
    assert len(sharings._changes) <= 2
    service.share_session(session, owner="alice", members=["carol"])  # count 1 again
    with pytest.raises(SessionOwnershipError):
        quiet.manager("bob", session)
    assert quiet.manager("carol", session).session_id == session


def test_owner_keys_of_colliding_joined_ids_are_distinct(deployment: Deployment) -> None:
    """User "a:b" and user "a" with agent "b:-" had one joined key, so one watermark: the
    second user's consolidation wrote nothing."""
    service = deployment.service
    session = f"pair-{uuid.uuid4().hex[:8]}"
    first = service.manager("a:b", session)
    first.process_interaction("The launch code word is marmalade.", "Noted.")
    service.share_session(session, owner="a:b", members=[("a", "b:-")])
    second = service.manager("a", session, agent_id="b:-")
    assert owner_key(("a:b", None)) != owner_key(("a", "b:-"))
    assert first.consolidate().written == 1
    assert second.consolidate().written == 1
    assert len(service.long_term("a", agent_id="b:-").all_records()) == 1
    assert len(service.long_term("a:b").all_records()) == 1


# -- sessions written by earlier versions ----------------------------------------------------


def joined_watermark_key(user: str, agent: str | None) -> str:
    """The key the earlier version wrote a watermark under, whoever it was for."""
    return f"consolidation:{user}:{agent or '-'}"


def downgrade_to_version_1(db: Path) -> None:
    """Make ``db`` exactly what the earlier version wrote: schema version 1 (no owner table)
    and each watermark under its joined-string key."""
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("DROP TABLE agentmem_owners")
        rows = conn.execute(
            "SELECT session_id, key FROM agentmem_state WHERE key LIKE 'consolidation:%'"
        ).fetchall()
        for session, key in rows:
            user, agent = json.loads(key.removeprefix("consolidation:"))
            conn.execute(
                "UPDATE agentmem_state SET key = ? WHERE session_id = ? AND key = ?",
                (joined_watermark_key(user, agent), session, key),
            )
        conn.execute("PRAGMA user_version = 1")
    conn.close()


def test_sessions_of_earlier_versions_get_their_owner_on_first_use(tmp_path: Path) -> None:
    with open_service(tmp_path, "sqlite", None) as service:
        write_alices_session(service, "consolidated")
        service.manager("carol", "never-consolidated").process_interaction("hello", "hi")
    downgrade_to_version_1(tmp_path / "sessions.db")
    with open_service(tmp_path, "sqlite", None) as service:
        store = service.sessions
        assert store.get_owner("consolidated") is None
        assert legacy_watermark_key(("alice", None)) in store.state_keys("consolidated")
        before = snapshot(store, "consolidated")
        # The watermark says whose it was: Bob is refused, although nobody claimed it yet.
        with pytest.raises(SessionOwnershipError):
            service.manager("bob", "consolidated")
        assert snapshot(store, "consolidated") == before
        alice = service.manager("alice", "consolidated")
        assert store.get_owner("consolidated") == {
            "version": 1,
            "owner": ["alice", None],
            "members": [],
        }
        # Her old watermark still counts: nothing is consolidated twice.
        assert alice.consolidate().written == 0
        assert len(service.long_term("alice").all_records()) == 1
        # A session no one consolidated goes to the first user who names it.
        service.manager("dave", "never-consolidated")
        with pytest.raises(SessionOwnershipError):
            service.manager("carol", "never-consolidated")


@pytest.mark.parametrize(
    ("writer", "claimant"),
    [
        (("a:b", None), ("a", "b:-")),  # another user: both joined to "a:b:-"
        (("a", "b:-"), ("a:b", None)),
        (("alice", None), ("alice", "-")),  # another agent: both joined to "alice:-"
        (("alice", "x:-"), ("alice:x", None)),
    ],
)
def test_a_joined_watermark_of_an_earlier_version_is_claimed_by_nobody_it_may_not_name(
    tmp_path: Path, writer: tuple[str, str | None], claimant: tuple[str, str | None]
) -> None:
    """An earlier version's watermark key joined the ids, so one key could be two
    principals': a session it marks is never handed to the principal it does not name."""
    with open_service(tmp_path, "sqlite", None) as service:
        user, agent = writer
        chat = service.manager(user, "legacy", agent_id=agent)
        chat.process_interaction(f"My card number is {CARD}.", "Noted.")
        assert chat.consolidate().written == 1
    downgrade_to_version_1(tmp_path / "sessions.db")
    with open_service(tmp_path, "sqlite", None) as service:
        store = service.sessions
        assert joined_watermark_key(*writer) == joined_watermark_key(*claimant)
        assert joined_watermark_key(*writer) in store.state_keys("legacy")
        before = snapshot(store, "legacy")
        with pytest.raises(SessionOwnershipError):
            service.manager(claimant[0], "legacy", agent_id=claimant[1])
        assert snapshot(store, "legacy") == before
        assert service.long_term(claimant[0], agent_id=claimant[1]).all_records() == []


def legacy_session_of(tmp_path: Path, user: str, agent: str | None = None) -> None:
    """A home whose session "legacy" an earlier version wrote for ``(user, agent)``, with one
    consolidated memory and its watermark under the joined key."""
    with open_service(tmp_path, "sqlite", None) as service:
        chat = service.manager(user, "legacy", agent_id=agent)
        chat.process_interaction(f"My card number is {CARD}.", "Noted.")
        assert chat.consolidate().written == 1
    downgrade_to_version_1(tmp_path / "sessions.db")


@pytest.mark.parametrize("door", ["service", "cli", "async"])
def test_an_operator_assigns_a_session_nobody_may_claim_to_its_owner(
    tmp_path: Path, door: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A session of an earlier version whose joined watermark key cannot say whose it is
    (owner "a:b", or agent "-") is refused to everyone, its owner included; an operator
    assigns it, and consolidation goes on from the earlier watermark (nothing twice)."""
    owner = ("a:b", None)
    legacy_session_of(tmp_path, "a:b")
    with open_service(tmp_path, "sqlite", None) as service:
        store = service.sessions
        with pytest.raises(SessionOwnershipError):
            service.manager("a:b", "legacy")  # its owner too: the key names nobody
        if door == "service":
            assert service.assign_session("legacy", owner="a:b").owner == owner
        elif door == "async":
            import asyncio

            record = asyncio.run(SessionOwners(store).aassign("legacy", owner="a:b"))
            assert record.owner == owner
        else:
            assert main(["--home", str(tmp_path), "assign-session", "legacy", "--user", "a:b"]) == 0
            assert "session legacy belongs to a:b" in capsys.readouterr().out
        assert store.get_owner("legacy") == {"version": 1, "owner": ["a:b", None], "members": []}
        assert watermark_key(owner) in store.state_keys("legacy")
        again = service.manager("a:b", "legacy")
        assert again.consolidate().written == 0  # its earlier watermark still counts
        assert len(service.long_term("a:b").all_records()) == 1
        with pytest.raises(SessionOwnershipError):
            service.manager("a", "legacy", agent_id="b:-")  # the look-alike stays out
        # Assigning it to its owner again returns its record; to another is refused.
        assert service.assign_session("legacy", owner="a:b").owner == owner
        before = snapshot(store, "legacy")
        with pytest.raises(SessionOwnershipError, match="already has an owner"):
            service.assign_session("legacy", owner=("a", "b:-"))
        assert snapshot(store, "legacy") == before


@pytest.mark.parametrize(
    ("owner", "error"),
    [
        ("alcie", SessionOwnershipError),  # a typo: holds no watermark of that principal
        (("alice", "planner"), SessionOwnershipError),  # another agent of the right user
        ("bad user\n", InvalidValueError),  # an id no manager accepts
        (("alice", ""), InvalidValueError),
    ],
)
def test_assign_takes_only_a_session_holding_the_owners_earlier_watermark(
    tmp_path: Path, owner: Any, error: type[Exception]
) -> None:
    """Alice could claim her earlier session herself; an operator's slip of the keyboard
    must not hand it (and her card number) to anyone else."""
    legacy_session_of(tmp_path, "alice")
    with open_service(tmp_path, "sqlite", None) as service:
        store = service.sessions
        before = snapshot(store, "legacy")
        with pytest.raises(error):
            service.assign_session("legacy", owner=owner)
        with pytest.raises(SessionOwnershipError):
            service.assign_session("no-such-session", owner="alice")
        assert snapshot(store, "legacy") == before
        assert store.get_owner("no-such-session") is None
        assert service.manager("alice", "legacy").consolidate().written == 0  # still hers


def test_assign_writes_the_watermark_before_the_owner_record(tmp_path: Path) -> None:
    """The owner's first request may come the moment the owner record exists: its
    consolidation must find the earlier watermark then, not start from the first message."""
    legacy_session_of(tmp_path, "a:b")
    with open_service(tmp_path, "sqlite", None) as service:
        store = service.sessions
        seen: list[bool] = []
        real = store.claim_owner

        def claim_owner(session_id: str, record: dict[str, Any]) -> dict[str, Any]:
            seen.append(watermark_key(("a:b", None)) in store.state_keys(session_id))
            return real(session_id, record)

        store.claim_owner = claim_owner  # type: ignore[method-assign]
        try:
            service.assign_session("legacy", owner="a:b")
        finally:
            del store.claim_owner
        assert seen == [True]


def test_share_session_checks_member_ids(deployment: Deployment) -> None:
    service, session = deployment.service, deployment.session
    before = snapshot(service.sessions, session)
    with pytest.raises(InvalidValueError):
        service.share_session(session, owner="alice", members=["bob\n"])
    assert snapshot(service.sessions, session) == before


def test_assign_session_refuses_an_owned_session_from_the_cli(
    deployment: Deployment, capsys: pytest.CaptureFixture[str]
) -> None:
    service, session = deployment.service, deployment.session
    before = snapshot(service.sessions, session)
    code = main(["--home", str(deployment.home), "assign-session", session, "--user", "bob"])
    assert code == 1
    assert "already has an owner" in capsys.readouterr().err
    assert snapshot(service.sessions, session) == before
    assert service.sessions.get_owner(session)["owner"] == ["alice", None]


def test_a_new_session_id_names_nobody_and_fits_every_user_id(deployment: Deployment) -> None:
    """A session made with ``session_id=None`` used to be ``USER-xxxxxxxxxxxx``: another
    user's refusal then named its owner, and a user id of 244+ characters had no new
    session (the id outgrew the 256-character limit)."""
    service = deployment.service
    alice = service.manager("alice")
    assert "alice" not in alice.session_id
    with pytest.raises(SessionOwnershipError) as caught:
        service.manager("bob", alice.session_id)
    assert alice.session_id in str(caught.value)
    assert "alice" not in str(caught.value)
    long_user = "u" * 256
    chat = service.manager(long_user)
    chat.process_interaction("hello", "hi")
    assert service.manager(long_user, chat.session_id).get_log()[0].content == "hello"


# -- the CLI ---------------------------------------------------------------------------------


def test_cli_ingest_and_context_refuse_another_users_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = str(tmp_path / "home")
    files = {
        "alice": [
            {"session_id": "chat-1", "role": "user", "content": f"My card is {CARD}."},
            {"session_id": "chat-1", "role": "assistant", "content": "Noted."},
        ],
        "bob": [
            {"session_id": "bob-own", "role": "user", "content": "I like green tea."},
            {"session_id": "bob-own", "role": "assistant", "content": "Noted."},
        ],
        "mixed": [
            {"session_id": "bob-own", "role": "user", "content": "And black coffee."},
            {"session_id": "chat-1", "role": "user", "content": "Ignore that, I am Alice now."},
        ],
    }
    for name, lines in files.items():
        text = "\n".join(json.dumps(line) for line in lines) + "\n"
        (tmp_path / f"{name}.jsonl").write_text(text, encoding="utf-8")
    for name, user in (("alice", "alice"), ("bob", "bob")):
        assert (
            main(["--home", home, "ingest", str(tmp_path / f"{name}.jsonl"), "--user", user]) == 0
        )
    capsys.readouterr()

    def state() -> dict[str, Any]:
        with MemoryService.open(home) as service:
            bobs = [r.content for r in service.long_term("bob").all_records()]
            return {
                "alice": snapshot(service.sessions, "chat-1"),
                "bob": snapshot(service.sessions, "bob-own"),
                "bob's memories": bobs,
            }

    before = state()
    assert CARD in json.dumps(before["alice"])
    assert CARD not in json.dumps(before["bob's memories"])
    mixed = str(tmp_path / "mixed.jsonl")
    assert main(["--home", home, "ingest", mixed, "--user", "bob"]) == 1
    err = capsys.readouterr().err
    assert "session 'chat-1' belongs to another user" in err
    assert "alice" not in err
    assert main(["--home", home, "context", "card", "--user", "bob", "--session", "chat-1"]) == 1
    assert "session 'chat-1' belongs to another user" in capsys.readouterr().err
    assert state() == before  # bob's file was refused whole: nothing of it was written


# -- LangChain create_agent: the middleware and the memory tools -----------------------------


def test_middleware_refuses_another_users_thread_before_the_model(
    deployment: Deployment,
) -> None:
    service, thread = deployment.service, f"thread-{uuid.uuid4().hex[:8]}"
    model = ToolScriptModel()
    agent = build_agent(service, model)
    config = {"configurable": {"thread_id": thread}}
    agent.invoke(
        {"messages": [HumanMessage(f"remember: my card is {CARD}")]},
        context=Ctx("alice"),
        config=config,
    )
    assert any(CARD in m.text for m in model.requests[0])
    seen = len(model.requests)
    before = snapshot(service.sessions, thread)
    with pytest.raises(SessionOwnershipError):
        agent.invoke(
            {"messages": [HumanMessage("what is my card number?")]},
            context=Ctx("bob"),
            config=config,
        )
    assert len(model.requests) == seen  # the model was never called for bob
    assert snapshot(service.sessions, thread) == before
    assert service.long_term("bob").all_records() == []


async def test_async_middleware_refuses_another_users_thread(deployment: Deployment) -> None:
    service, thread = deployment.service, f"thread-{uuid.uuid4().hex[:8]}"
    model = ToolScriptModel()
    agent = build_agent(service, model)
    config = {"configurable": {"thread_id": thread}}
    await agent.ainvoke(
        {"messages": [HumanMessage(f"remember: my card is {CARD}")]},
        context=Ctx("alice"),
        config=config,
    )
    seen = len(model.requests)
    with pytest.raises(SessionOwnershipError):
        await agent.ainvoke(
            {"messages": [HumanMessage("what is my card?")]}, context=Ctx("bob"), config=config
        )
    assert len(model.requests) == seen


def test_memory_tools_refuse_another_users_thread(deployment: Deployment) -> None:
    """Without the middleware, the tools are the door: a tool call for bob on alice's
    thread fails the run instead of reaching alice's session."""
    service = deployment.service
    model = ToolScriptModel()
    agent = create_agent(
        model, tools=create_memory_tools(service), context_schema=Ctx, checkpointer=None
    )
    config = {"configurable": {"thread_id": deployment.session}}
    before = snapshot(service.sessions, deployment.session)
    with pytest.raises(SessionOwnershipError):
        agent.invoke(
            {"messages": [HumanMessage(f"remember: {CARD} is mine now")]},
            context=Ctx("bob"),
            config=config,
        )
    assert snapshot(service.sessions, deployment.session) == before
    assert service.long_term("bob").all_records() == []


async def test_a_tier_on_an_async_only_store_checks_the_owner_at_its_first_operation(
    redis_url: str,
) -> None:
    """Building a short-term memory reads nothing (a store with only an async client
    cannot read synchronously); its first operation checks the owner, and claims a new
    session for its user."""
    import redis.asyncio

    from agentmem import ConversationBufferMemory
    from agentmem.stores.redis import RedisSessionStore

    client = redis.asyncio.Redis.from_url(redis_url)
    store = RedisSessionStore(async_client=client, prefix=f"async-{uuid.uuid4().hex[:8]}")
    session = f"chat-{uuid.uuid4().hex[:8]}"
    try:
        alice = ConversationBufferMemory(session_id=session, store=store, user_id="alice")
        await alice.aadd_message("user", "my card ends in 4242")
        bob = ConversationBufferMemory(session_id=session, store=store, user_id="bob")
        with pytest.raises(SessionOwnershipError):
            await bob.aget_all_messages()
        with pytest.raises(SessionOwnershipError):
            await bob.aadd_message("user", "let me in")
        assert [m["content"] for m in await alice.aget_all_messages()] == ["my card ends in 4242"]
    finally:
        await client.aclose()
