"""The web inspector over HTTP: the token, the Host check, the security headers, escaping,
user isolation, read-only mode, and edits (CSRF token, logging, history)."""

from __future__ import annotations

import logging
import re

import pytest

from agentmem import MemoryService
from agentmem.inspector import InspectorServer
from tests.inspector.seed import Seeded, fetch

pytestmark = pytest.mark.integration


def test_the_url_carries_a_random_token_and_binds_the_loopback(
    server: InspectorServer, editor: InspectorServer
) -> None:
    assert server.url.startswith("http://127.0.0.1:")
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/\?token=[\w-]{20,}", server.url)
    assert server.token != editor.token
    assert fetch(server, "/").status == 200


@pytest.mark.parametrize("path", ["/", "/u/alice", "/u/alice/memories", "/static/inspector.css"])
def test_no_token_is_401_and_a_wrong_one_403(server: InspectorServer, path: str) -> None:
    missing = fetch(server, path, token=None)
    assert missing.status == 401
    assert "alice" not in missing.body.lower().replace("/u/alice", "")
    last = "y" if server.token.endswith("x") else "x"  # a token that surely differs
    wrong = fetch(server, path, token=server.token[:-1] + last)
    assert wrong.status == 403
    assert "Alice indents" not in wrong.body


def test_the_token_is_kept_in_a_strict_cookie_or_taken_from_a_header(
    server: InspectorServer,
) -> None:
    first = fetch(server, "/")
    cookie = first.headers["set-cookie"]
    assert "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie
    by_cookie = fetch(server, "/u/alice", token=None, headers={"Cookie": cookie.split(";")[0]})
    assert by_cookie.status == 200
    by_header = fetch(
        server, "/u/alice", token=None, headers={"Authorization": f"token {server.token}"}
    )
    assert by_header.status == 200
    stale = fetch(server, "/", token=None, headers={"Cookie": f"{server.cookie_name}=old"})
    assert stale.status == 403


def test_a_foreign_host_header_is_refused(server: InspectorServer) -> None:
    """DNS rebinding: a page of evil.example resolved to 127.0.0.1 sends its own Host."""
    answer = fetch(server, "/", headers={"Host": f"evil.example:{server.port}"})
    assert answer.status == 403


def test_every_answer_has_a_strict_content_security_policy(server: InspectorServer) -> None:
    for answer in (fetch(server, "/u/alice"), fetch(server, "/", token=None)):
        csp = answer.headers["content-security-policy"]
        assert "default-src 'none'" in csp
        assert "script-src" not in csp  # so no script at all (default-src 'none')
        assert "unsafe-inline" not in csp
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["referrer-policy"] == "same-origin"


def test_nothing_is_loaded_from_elsewhere(server: InspectorServer, seeded: Seeded) -> None:
    for path in (
        "/",
        "/u/alice",
        "/u/alice/memories",
        f"/u/alice/m/{seeded.trondheim}",
        "/u/alice/forgetting",
        "/u/alice/contexts",
        "/u/alice/search?q=tabs",
    ):
        body = fetch(server, path).body
        assert "<script" not in body
        assert not re.search(r"(src|href)=\"(https?:)?//", body), path


def test_stored_markup_is_shown_as_text(server: InspectorServer, seeded: Seeded) -> None:
    for path in (
        f"/u/alice/m/{seeded.xss}",
        "/u/alice/memories",
        "/u/alice/s/alice-s1",
        "/u/alice/search?q=Alice+says+hi",
    ):
        body = fetch(server, path).body
        assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in body, path
        assert "<img src=x" not in body
    session = fetch(server, "/u/alice/s/alice-s1").body
    assert "Trondheim &lt;b&gt;bold&lt;/b&gt;" in session  # a working-memory value


def test_a_users_pages_show_nothing_of_other_users(server: InspectorServer, seeded: Seeded) -> None:
    for path in (
        "/u/alice",
        "/u/alice/memories?history=1",
        "/u/alice/search?q=vault+code",
        "/u/alice/contexts",
        "/u/alice/forgetting",
        "/u/alice/s/alice-s1",
    ):
        body = fetch(server, path).body
        assert "4321" not in body, path
        assert "bob-s1" not in body, path
    assert "4321" in fetch(server, "/u/bob/memories").body
    # Another user's session or memory, asked for under alice's pages, is not found.
    assert fetch(server, "/u/alice/s/bob-s1").status == 404
    bob_memory = re.search(r"/u/bob/m/([0-9a-f-]{36})", fetch(server, "/u/bob/memories").body)
    assert bob_memory is not None
    assert fetch(server, f"/u/alice/m/{bob_memory.group(1)}").status == 404


def test_users_and_their_sessions_are_listed(server: InspectorServer) -> None:
    users = fetch(server, "/").body
    assert 'href="/u/alice"' in users
    assert 'href="/u/bob"' in users
    alice = fetch(server, "/u/alice").body
    assert 'href="/u/alice/s/alice-s1"' in alice


def test_memories_filter_by_type_subtype_date_and_paginate(
    service: MemoryService, server: InspectorServer
) -> None:
    facts = fetch(server, "/u/alice/memories?subtype=fact").body
    assert "Alice lives in Trondheim" in facts
    assert "Alice indents Python with tabs" not in facts
    assert "Alice lives in Oslo" not in facts  # superseded: only with history
    history = fetch(server, "/u/alice/memories?subtype=fact&history=1").body
    assert "Alice lives in Oslo" in history
    assert "No memories" in fetch(server, "/u/alice/memories?type=procedural").body
    assert "No memories" in fetch(server, "/u/alice/memories?before=2000-01-01").body
    assert fetch(server, "/u/alice/memories?after=yesterday").status == 400
    assert fetch(server, "/u/alice/memories?type=nonsense").status == 400
    # 60 more memories: two pages of 50, the second reached by its link.
    carol = service.long_term("carol")
    carol.store_records([carol.new_record(f"note number {i}", "semantic") for i in range(60)])
    first = fetch(server, "/u/carol/memories").body
    assert "60 memories match" in first
    assert first.count("note number") == 50
    nxt = re.search(r'href="(/u/carol/memories\?[^"]*cursor=[^"]*)"', first)
    assert nxt is not None
    second = fetch(server, nxt.group(1).replace("&amp;", "&")).body
    assert second.count("note number") == 10
    assert "page 2" in second


def test_a_memory_shows_its_history_chain_and_concept_links(
    server: InspectorServer, seeded: Seeded
) -> None:
    body = fetch(server, f"/u/alice/m/{seeded.bergen}").body
    history = body.split("History (3 versions)")[1]
    assert history.index("Oslo") < history.index("Bergen") < history.index("Trondheim")
    assert f'href="/u/alice/m/{seeded.oslo}"' in history
    assert f'href="/u/alice/m/{seeded.trondheim}"' in history
    tabs = fetch(server, f"/u/alice/m/{seeded.tabs}").body
    assert 'href="/u/alice/memories?concept=Python"' in tabs
    assert 'href="/u/alice/memories?concept=tabs"' in tabs
    assert "<svg" in tabs  # the forgetting curve


def test_search_explains_each_score(server: InspectorServer) -> None:
    body = fetch(server, "/u/alice/search?q=indents+Python+tabs").body
    assert "Alice indents Python with tabs" in body
    assert "<title>fused: " in body
    assert "<title>recency: " in body
    assert "dense 0." in body


def test_search_records_no_access(service: MemoryService, server: InspectorServer) -> None:
    before = {r.id: r.access_count for r in service.long_term("alice").all_records()}
    fetch(server, "/u/alice/search?q=Alice+lives")
    after = {r.id: r.access_count for r in service.long_term("alice").all_records()}
    assert before == after


def test_contexts_show_their_ledgers(server: InspectorServer) -> None:
    body = fetch(server, "/u/alice/contexts").body
    assert "where does Alice live?" in body
    assert "reply_priming" in body
    assert "vault" not in body


def test_bad_requests_get_error_pages(server: InspectorServer) -> None:
    assert fetch(server, "/u/alice/nothing").status == 404
    assert fetch(server, "/u/bad%20id").status == 400
    assert fetch(server, "/u/alice/m/not-a-uuid").status == 400
    assert fetch(server, "/u/alice/s/alice-s1?after=-3").status == 400


def test_the_read_only_inspector_has_no_edits(server: InspectorServer, seeded: Seeded) -> None:
    assert "<form" not in fetch(server, f"/u/alice/m/{seeded.tabs}").body.split("Edit")[-1]
    answer = fetch(server, f"/u/alice/m/{seeded.tabs}/forget", method="POST", form={"csrf": "x"})
    assert answer.status == 405


def test_edits_need_the_csrf_token(
    service: MemoryService, editor: InspectorServer, seeded: Seeded
) -> None:
    page = fetch(editor, f"/u/alice/m/{seeded.tabs}").body
    csrf = re.search(r'name="csrf" value="([^"]+)"', page)
    assert csrf is not None
    assert csrf.group(1) != editor.token
    path = f"/u/alice/m/{seeded.tabs}/pin"
    assert fetch(editor, path, method="POST", form={}).status == 403
    assert fetch(editor, path, method="POST", form={"csrf": "guess"}).status == 403
    foreign = {"Origin": "http://evil.example"}
    assert (
        fetch(editor, path, method="POST", form={"csrf": csrf.group(1)}, headers=foreign).status
        == 403
    )
    assert not service.long_term("alice").get_memory(seeded.tabs).pinned
    done = fetch(editor, path, method="POST", form={"csrf": csrf.group(1)})
    assert done.status == 303
    assert service.long_term("alice").get_memory(seeded.tabs).pinned
    # The token of the URL alone (as a forged form would carry it) is not enough.
    assert fetch(editor, path, method="POST", form={"csrf": editor.token}).status == 403


def test_correcting_supersedes_and_forgetting_deletes_with_a_log_line(
    service: MemoryService,
    editor: InspectorServer,
    seeded: Seeded,
    caplog: pytest.LogCaptureFixture,
) -> None:
    memory = service.long_term("dave")
    old = memory.new_record("Dave drinks tea", "semantic", subtype="preference")
    memory.store_records([old])
    page = fetch(editor, f"/u/dave/m/{old.id}").body
    csrf = re.search(r'name="csrf" value="([^"]+)"', page)
    assert csrf is not None
    fixed = fetch(
        editor,
        f"/u/dave/m/{old.id}/correct",
        method="POST",
        form={"csrf": csrf.group(1), "content": "Dave drinks coffee"},
    )
    assert fixed.status == 303
    new_id = fixed.headers["location"].rsplit("/", 1)[1]
    assert memory.get_memory(new_id).content == "Dave drinks coffee"
    assert memory.get_memory(old.id).superseded_by == new_id
    history = fetch(editor, f"/u/dave/m/{new_id}").body
    assert "History (2 versions)" in history
    with caplog.at_level(logging.INFO, logger="agentmem.inspector"):
        gone = fetch(
            editor, f"/u/dave/m/{new_id}/forget", method="POST", form={"csrf": csrf.group(1)}
        )
    assert gone.status == 303
    assert memory.get_records([new_id]) == []
    assert any(f"forgot memory {new_id} of user 'dave'" in r.getMessage() for r in caplog.records)
    # An edit of another user's memory under dave's pages finds nothing.
    other = fetch(
        editor, f"/u/dave/m/{seeded.tabs}/forget", method="POST", form={"csrf": csrf.group(1)}
    )
    assert other.status == 404
    assert service.long_term("alice").get_memory(seeded.tabs)


def test_stop_closes_the_port(service: MemoryService) -> None:
    srv = service.serve_inspector()
    assert fetch(srv, "/").status == 200
    srv.stop()
    srv.stop()  # idempotent
    with pytest.raises(ConnectionRefusedError):
        fetch(srv, "/")


def test_a_bad_port_is_a_configuration_error(service: MemoryService) -> None:
    from agentmem.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="port"):
        service.serve_inspector(port=70000)


def test_bound_to_every_interface_any_host_name_is_answered_with_the_token(
    service: MemoryService,
) -> None:
    with service.serve_inspector(host="0.0.0.0") as srv:
        assert srv.url.startswith("http://0.0.0.0:")
        named = fetch(srv, "/", headers={"Host": f"inspector.lan:{srv.port}"})
        assert named.status == 200
        assert (
            fetch(srv, "/", token=None, headers={"Host": f"inspector.lan:{srv.port}"}).status == 401
        )
        assert fetch(srv, "/", headers={"Host": "inspector.lan:1"}).status == 403
