"""Two users' memories for the inspector tests, and a client that fetches its pages."""

from __future__ import annotations

import http.client
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlencode, urlsplit

if TYPE_CHECKING:
    from agentmem import MemoryService
    from agentmem.inspector import InspectorServer

XSS = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">Alice says hi'
BOB_SECRET = "Bob's vault code is 4321"


@dataclass
class Seeded:
    """Ids the tests look for."""

    oslo: str  # the oldest version of a three-version history chain
    bergen: str
    trondheim: str  # the current version
    xss: str
    tabs: str


def seed(service: MemoryService) -> Seeded:
    """Alice: a session with an XSS payload in a message and a memory, working memory, a
    history chain (Oslo -> Bergen -> Trondheim), a concept with relations, a context built.
    Bob: one session, a secret memory and a context built."""
    alice = service.manager("alice", "alice-s1")
    alice.process_interaction(XSS, "Noted, I will keep that in mind.")
    alice.process_interaction("I indent Python with tabs", "Tabs it is.")
    alice.consolidate()
    alice.update_working_memory("city", "Trondheim <b>bold</b>")
    alice.working.push_task("plan the trip to Bergen")
    alice.working.add_hypothesis("Alice prefers trains", 0.7)
    alice.record_reasoning_step("checked the timetable")
    lt = alice.long_term
    tabs = lt.new_record(
        "Alice indents Python with tabs",
        "semantic",
        subtype="preference",
        concept="Python",
        relations=[{"predicate": "styled with", "target": "tabs"}],
    )
    xss = lt.new_record(XSS, "semantic", subtype="fact")
    oslo = lt.new_record("Alice lives in Oslo", "semantic", subtype="fact", concept="Alice")
    bergen = lt.new_record("Alice lives in Bergen", "semantic", subtype="fact", concept="Alice")
    trondheim = lt.new_record(
        "Alice lives in Trondheim", "semantic", subtype="fact", concept="Alice"
    )
    lt.store_records([tabs, xss, oslo, bergen, trondheim])
    lt.supersede_memory(oslo.id, by=bergen)
    lt.supersede_memory(bergen.id, by=trondheim)
    alice.build_context("where does Alice live?", max_tokens=600)

    bob = service.manager("bob", "bob-s1")
    bob.process_interaction(BOB_SECRET, "Stored.")
    bob.consolidate()
    bob.remember(BOB_SECRET, subtype="fact")
    bob.build_context("what is the vault code?", max_tokens=600)
    return Seeded(oslo.id, bergen.id, trondheim.id, xss.id, tabs.id)


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: str


def fetch(
    server: InspectorServer,
    path: str,
    *,
    token: str | None = "default",
    method: str = "GET",
    form: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
) -> Answer:
    """One request to ``server`` (the token in the URL unless ``token`` says otherwise)."""
    if token == "default":
        token = server.token
    if token is not None:
        path += ("&" if "?" in path else "?") + urlencode({"token": token})
    parts = urlsplit(server.origin)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
    body = urlencode(form).encode() if form is not None else None
    sent = {"Content-Type": "application/x-www-form-urlencoded"} if body is not None else {}
    conn.request(method, path, body=body, headers={**sent, **(headers or {})})
    response = conn.getresponse()
    answer = Answer(
        response.status,
        {k.lower(): v for k, v in response.getheaders()},
        response.read().decode("utf-8"),
    )
    conn.close()
    return answer
