"""The inspector's pages: a route and its parameters in, a page of HTML out (private).

Pages (every one but the first is one user's, and reads only that user's data):

* ``/``: the users;
* ``/u/USER``: counts by type and the user's sessions;
* ``/u/USER/s/SESSION``: a session's messages (paginated), summary and working memory;
* ``/u/USER/memories``: memories filtered by type, subtype, date, concept, newest first,
  paginated;
* ``/u/USER/m/ID``: one memory: its fields, history chain, concept links and forgetting
  curve (and, with edits allowed, forms to forget, pin or correct it);
* ``/u/USER/search``: a search with each score explained;
* ``/u/USER/forgetting``: retention of every memory, forgetting curves, candidates;
* ``/u/USER/contexts``: the last contexts built for the user, with their ledgers.

Edits are POSTs to ``/u/USER/m/ID/{forget,pin,unpin,correct}``; each is logged (logger
``agentmem.inspector``, level INFO) as forgetting logs its deletions.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING
from urllib.parse import quote, urlencode

from agentmem.controller.forgetting import ForgettingPolicy
from agentmem.errors import InvalidValueError, MemoryNotFoundError
from agentmem.inspector._markup import Markup, join, tag
from agentmem.inspector.plots import histogram, line_plot
from agentmem.inspector.reprs import (
    context_html,
    counts_table,
    forgetting_candidates,
    hits_html,
    messages_html,
    records_table,
    when,
    working_state_html,
)
from agentmem.inspector.views import history_chain, list_users, memory_page, sessions_of_user
from agentmem.long_term.records import MEMORY_TYPES, MemoryRecord, RecordFilter
from agentmem.stores.base import validate_session_id
from agentmem.types import utcnow

if TYPE_CHECKING:
    from agentmem.long_term.memory import LongTermMemory
    from agentmem.service import MemoryService

__all__ = ["Page", "PageError", "Pages", "Redirect", "layout"]

logger = logging.getLogger("agentmem.inspector")

PAGE_SIZE = 50
EDITS = ("forget", "pin", "unpin", "correct")


@dataclass
class Page:
    """A page to send: its title, body and the user whose page it is (for the menu)."""

    title: str
    body: Markup
    user: str | None = None


class PageError(Exception):
    """A request the inspector answers with an error page (``status``: 400, 404, 405)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Redirect(Exception):
    """Answer with ``303 See Other`` to ``location`` (after an edit)."""

    def __init__(self, location: str) -> None:
        super().__init__(location)
        self.location = location


def _u(user: str) -> str:
    return f"/u/{quote(user, safe='')}"


def layout(page: Page, *, edits: bool) -> bytes:
    """The whole HTML document of ``page`` (stylesheet linked, no script)."""
    menu: list[Markup] = [tag("a", "users", href="/")]
    if page.user is not None:
        base = _u(page.user)
        menu += [
            tag("b", page.user),
            tag("a", "overview", href=base),
            tag("a", "memories", href=f"{base}/memories"),
            tag("a", "search", href=f"{base}/search"),
            tag("a", "forgetting", href=f"{base}/forgetting"),
            tag("a", "contexts", href=f"{base}/contexts"),
        ]
    mode = "edits allowed" if edits else "read-only"
    doc = join(
        [
            Markup("<!doctype html>"),
            tag(
                "html",
                tag(
                    "head",
                    tag("meta", charset="utf-8"),
                    tag("title", f"{page.title} - agentmem inspector"),
                    tag("link", rel="stylesheet", href="/static/inspector.css"),
                ),
                tag(
                    "body",
                    tag(
                        "nav", *menu, tag("span", f"agentmem inspector, {mode}", class_="am-muted")
                    ),
                    tag("h1", page.title),
                    page.body,
                    class_="am-root",
                ),
                lang="en",
            ),
        ]
    )
    return doc.encode("utf-8")


def _date(value: str, name: str) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=timezone.utc)
    except ValueError:
        msg = f"{name} must be a date as YYYY-MM-DD, got {value!r}"
        raise PageError(400, msg) from None


class Pages:
    """Renders the pages of one service (see the module docstring).

    Args:
        service: Whose stores are shown.
        allow_edits: Whether the edit forms and POST routes exist.
        csrf: The token every edit form carries and every edit must send back.
        policy: The forgetting policy retention is computed with.
    """

    def __init__(
        self,
        service: MemoryService,
        *,
        allow_edits: bool,
        csrf: str,
        policy: ForgettingPolicy | None = None,
    ) -> None:
        self.service = service
        self.allow_edits = allow_edits
        self.csrf = csrf
        self.policy = policy or ForgettingPolicy(clock=service.config.clock or utcnow)

    # -- routing -------------------------------------------------------------------------

    def get(self, parts: list[str], query: Mapping[str, str]) -> Page:
        """The page at ``/parts...`` with ``query`` parameters."""
        if not parts:
            return self.users(query)
        if parts[0] != "u" or len(parts) < 2:
            raise PageError(404, "no such page")
        user = self._user(parts[1])
        rest = parts[2:]
        if not rest:
            return self.user(user)
        if rest[0] == "s" and len(rest) == 2:
            return self.session(user, rest[1], query)
        if rest[0] == "m" and len(rest) == 2:
            return self.memory(user, rest[1])
        simple = {
            "memories": self.memories,
            "search": self.search,
            "forgetting": self.forgetting,
            "contexts": self.contexts,
        }
        view = simple.get(rest[0]) if len(rest) == 1 else None
        if view is None:
            raise PageError(404, "no such page")
        return view(user, query)

    def post(self, parts: list[str], form: Mapping[str, str]) -> str:
        """Run an edit; returns where to go next. The caller checked the CSRF token."""
        if not self.allow_edits:
            raise PageError(405, "this inspector is read-only; start it with --allow-edits")
        if len(parts) != 5 or parts[0] != "u" or parts[2] != "m" or parts[4] not in EDITS:
            raise PageError(404, "no such edit")
        user = self._user(parts[1])
        memory = self.service.long_term(user)
        record = self._record(memory, parts[3])
        return self._edit(memory, record, parts[4], form)

    def _user(self, raw: str) -> str:
        try:
            return validate_session_id(raw, what="user id")
        except ValueError as exc:
            raise PageError(400, str(exc)) from None

    def _record(self, memory: LongTermMemory, memory_id: str) -> MemoryRecord:
        try:
            return memory.get_memory(memory_id)
        except MemoryNotFoundError:
            raise PageError(404, f"no memory {memory_id!r} for this user") from None
        except InvalidValueError as exc:
            raise PageError(400, str(exc)) from None

    # -- users and sessions --------------------------------------------------------------

    def users(self, query: Mapping[str, str]) -> Page:
        users = list_users(self.service)
        pick = tag(
            "form",
            tag("label", "open user ", tag("input", name="user", required=True)),
            tag("button", "open", type="submit"),
            action="/open",
            method="get",
        )
        items = [tag("li", tag("a", u, href=_u(u))) for u in users]
        body = join(
            [
                tag("p", f"{len(users)} users with memories or recent contexts."),
                tag("ul", *items) if items else tag("p", "None yet.", class_="am-muted"),
                pick,
            ]
        )
        return Page("Users", body)

    def user(self, user: str) -> Page:
        memory = self.service.long_term(user)
        sessions = sessions_of_user(self.service, user)
        store = self.service.sessions
        rows = [
            tag(
                "tr",
                tag("td", tag("a", sid, href=f"{_u(user)}/s/{quote(sid, safe='')}")),
                tag("td", store.count(sid), class_="num"),
            )
            for sid in sessions
        ]
        body = join(
            [
                tag("h2", "Memories by type"),
                counts_table(memory),
                tag("p", tag("a", "browse the memories", href=f"{_u(user)}/memories")),
                tag("h2", f"Sessions ({len(sessions)})"),
                tag("table", tag("tr", tag("th", "session"), tag("th", "messages")), *rows)
                if rows
                else tag("p", "No sessions found for this user.", class_="am-muted"),
                tag(
                    "p",
                    "Sessions are listed when the user's consolidation ran in them or a "
                    "context was built for the user in them since the service started.",
                    class_="am-muted",
                ),
            ]
        )
        return Page(f"User {user}", body, user)

    def session(self, user: str, session_id: str, query: Mapping[str, str]) -> Page:
        from agentmem.short_term.summary import SUMMARY_STATE_KEY
        from agentmem.working.models import STATE_KEY, state_from_doc

        if session_id not in sessions_of_user(self.service, user):
            raise PageError(404, f"user {user!r} has no session {session_id!r}")
        store = self.service.sessions
        after = _int(query.get("after", "0"), "after")
        stored = store.read(session_id, after=after, limit=PAGE_SIZE + 1)
        page, more = stored[:PAGE_SIZE], len(stored) > PAGE_SIZE
        messages = [{"seq": s.seq, **s.message.to_dict()} for s in page]
        summary = (store.get_state(session_id, SUMMARY_STATE_KEY) or {}).get("text")
        working = state_from_doc(store.get_state(session_id, STATE_KEY), session_id)
        base = f"{_u(user)}/s/{quote(session_id, safe='')}"
        pager = [tag("a", "first messages", href=base)] if after else []
        if more:
            pager.append(tag("a", "next messages", href=f"{base}?after={page[-1].seq}"))
        body = join(
            [
                tag("p", f"{store.count(session_id)} messages in all.", class_="am-muted"),
                tag("h2", "Summary"),
                tag("pre", summary) if summary else tag("p", "No summary.", class_="am-muted"),
                tag("h2", "Working memory"),
                working_state_html(working),
                tag("h2", f"Messages after #{after}" if after else "Messages"),
                messages_html(messages) if messages else tag("p", "None.", class_="am-muted"),
                tag("div", *pager, class_="am-pages"),
            ]
        )
        return Page(f"Session {session_id}", body, user)

    # -- memories ------------------------------------------------------------------------

    def _filter(self, query: Mapping[str, str]) -> RecordFilter:
        kind = query.get("type", "")
        if kind and kind not in MEMORY_TYPES:
            raise PageError(400, f"type must be one of {', '.join(MEMORY_TYPES)}, got {kind!r}")
        try:
            return RecordFilter(
                memory_types=(kind,) if kind else (),  # type: ignore[arg-type]
                subtypes=(query["subtype"],) if query.get("subtype") else (),
                created_after=_date(query.get("after", ""), "after"),
                created_before=_date(query.get("before", ""), "before"),
                include_history=query.get("history") == "1",
                concepts=(query["concept"],) if query.get("concept") else (),
                related_to=(query["related"],) if query.get("related") else (),
            )
        except ValueError as exc:
            raise PageError(400, str(exc)) from None

    def _filter_form(self, user: str, query: Mapping[str, str]) -> Markup:
        kind = query.get("type", "")
        return tag(
            "form",
            tag(
                "label",
                "type ",
                tag(
                    "select",
                    tag("option", "any", value=""),
                    *(tag("option", t, value=t, selected=t == kind) for t in MEMORY_TYPES),
                    name="type",
                ),
            ),
            " ",
            tag("label", "subtype ", tag("input", name="subtype", value=query.get("subtype"))),
            " ",
            tag(
                "label", "from ", tag("input", type="date", name="after", value=query.get("after"))
            ),
            " ",
            tag(
                "label", "to ", tag("input", type="date", name="before", value=query.get("before"))
            ),
            " ",
            tag("label", "concept ", tag("input", name="concept", value=query.get("concept"))),
            " ",
            tag(
                "label",
                tag(
                    "input",
                    type="checkbox",
                    name="history",
                    value="1",
                    checked=query.get("history") == "1",
                ),
                " with superseded",
            ),
            " ",
            tag("button", "filter", type="submit"),
            action=f"{_u(user)}/memories",
            method="get",
        )

    def memories(self, user: str, query: Mapping[str, str]) -> Page:
        flt = self._filter(query)
        memory = self.service.long_term(user)
        cursor = query.get("cursor") or None
        number = _int(query.get("page", "1"), "page")
        try:
            records, after, total = memory_page(memory, flt, cursor, PAGE_SIZE)
        except InvalidValueError as exc:
            raise PageError(400, str(exc)) from None
        now = self.policy.clock()
        kept = {k: v for k, v in query.items() if k not in ("cursor", "page") and v}
        base = f"{_u(user)}/memories"
        pager = []
        if cursor:
            pager.append(tag("a", "first page", href=f"{base}?{urlencode(kept)}"))
        if after:
            nxt = urlencode({**kept, "cursor": after, "page": str(number + 1)})
            pager.append(tag("a", "next page", href=f"{base}?{nxt}"))
        first = (number - 1) * PAGE_SIZE + 1 if records else 0
        body = join(
            [
                self._filter_form(user, query),
                tag(
                    "p",
                    f"{total} memories match; page {number}, showing {first}-"
                    f"{first + len(records) - 1 if records else 0}, newest first.",
                    class_="am-muted",
                ),
                records_table(
                    records,
                    link=lambda r: f"{base.rsplit('/', 1)[0]}/m/{r.id}",
                    extra=lambda r: Markup(f"{self.policy.retention(r, now):.3f}"),
                    extra_head="retention",
                ),
                tag("div", *pager, class_="am-pages"),
            ]
        )
        return Page(f"Memories of {user}", body, user)

    def memory(self, user: str, memory_id: str) -> Page:
        memory = self.service.long_term(user)
        record = self._record(memory, memory_id)
        chain = history_chain(memory, record)
        now = self.policy.clock()
        base = _u(user)
        fields: list[tuple[str, object]] = [
            ("id", record.id),
            ("content", tag("div", record.content, class_="am-content")),
            ("type", f"{record.memory_type}/{record.subtype or '-'}"),
            ("importance", f"{record.importance:.2f}"),
            ("formed", when(record.created_at)),
            (
                "valid",
                f"{when(record.valid_from)} to {_until(record)}",
            ),
            (
                "superseded by",
                tag("a", record.superseded_by, href=f"{base}/m/{record.superseded_by}")
                if record.superseded_by
                else "-",
            ),
            ("used", f"{record.access_count} times, last {when(record.last_accessed_at)}"),
            ("source session", record.source_session_id or "-"),
            ("source messages", len(record.source_message_ids)),
            ("pinned", "yes" if record.pinned else "no"),
            (
                "retention now",
                f"{self.policy.retention(record, now):.3f} (half-life "
                f"{self.policy.half_life(record):.0f} days)",
            ),
            (
                "metadata",
                tag("pre", json.dumps(record.metadata, ensure_ascii=False, indent=1))
                if record.metadata
                else "-",
            ),
        ]
        table = tag("table", *(tag("tr", tag("th", k), tag("td", v)) for k, v in fields))
        versions = tag(
            "table",
            tag("tr", tag("th", "version"), tag("th", "memory"), tag("th", "valid")),
            *(
                tag(
                    "tr",
                    tag("td", i + 1, class_="num"),
                    tag("td", _version(r, record, base)),
                    tag(
                        "td", f"{when(r.valid_from)} to {when(r.valid_to) if r.valid_to else 'now'}"
                    ),
                    class_="am-version",
                )
                for i, r in enumerate(chain)
            ),
            class_="am-history",
        )
        days = [float(d) for d in range(0, 366, 5)]
        curve = line_plot(
            [("this memory", "#4c78a8", [(d, self._retention_in(record, now, d)) for d in days])],
            x_label="days from now",
            y_label="retention",
            hline=_threshold(self.policy),
        )
        body = join(
            [
                table,
                tag("h2", f"History ({len(chain)} versions)"),
                versions,
                tag("h2", "Concept links"),
                self._concepts(memory, record),
                tag("h2", "Forgetting curve"),
                curve,
                self._edit_forms(user, record),
            ]
        )
        return Page("Memory", body, user)

    def _retention_in(self, record: MemoryRecord, now: datetime, days: float) -> float:
        return self.policy.retention(record, now + timedelta(days=days))

    def _concepts(self, memory: LongTermMemory, record: MemoryRecord) -> Markup:
        base = f"{_u(memory.scope.user_id)}/memories"
        if not record.concept and not record.relations:
            return tag("p", "No concept or relations.", class_="am-muted")
        items = []
        if record.concept:
            about = memory.count_memories(RecordFilter(concepts=(record.concept,)))
            items.append(
                tag(
                    "li",
                    "about ",
                    tag(
                        "a", record.concept, href=f"{base}?{urlencode({'concept': record.concept})}"
                    ),
                    f" ({about} memories)",
                )
            )
            linked = memory.count_memories(RecordFilter(related_to=(record.concept,)))
            if linked:
                items.append(
                    tag(
                        "li",
                        tag(
                            "a",
                            f"{linked} memories relate to it",
                            href=f"{base}?{urlencode({'related': record.concept})}",
                        ),
                    )
                )
        for relation in record.relations:
            items.append(
                tag(
                    "li",
                    record.concept or "it",
                    f" {relation.predicate} ",
                    tag(
                        "a",
                        relation.target,
                        href=f"{base}?{urlencode({'concept': relation.target})}",
                    ),
                )
            )
        return tag("ul", *items)

    def _edit_forms(self, user: str, record: MemoryRecord) -> Markup:
        if not self.allow_edits:
            return Markup("")
        action = f"{_u(user)}/m/{record.id}"
        csrf = tag("input", type="hidden", name="csrf", value=self.csrf)
        pin = "unpin" if record.pinned else "pin"
        forms = [
            tag(
                "form",
                csrf,
                tag("button", "forget this memory", type="submit"),
                action=f"{action}/forget",
                method="post",
                class_="am-inline",
            ),
            tag(
                "form",
                csrf,
                tag("button", pin, type="submit"),
                action=f"{action}/{pin}",
                method="post",
                class_="am-inline",
            ),
        ]
        if record.is_current:
            forms.append(
                tag(
                    "form",
                    csrf,
                    tag(
                        "label",
                        "corrected text ",
                        tag("input", name="content", value=record.content, size=60, required=True),
                    ),
                    tag("button", "correct", type="submit"),
                    action=f"{action}/correct",
                    method="post",
                )
            )
        return join([tag("h2", "Edit"), *forms])

    def _edit(
        self, memory: LongTermMemory, record: MemoryRecord, edit: str, form: Mapping[str, str]
    ) -> str:
        user = memory.scope.user_id
        if edit == "forget":
            logger.info(
                "forgot memory %s of user %r (inspector edit): %.80r",
                record.id,
                user,
                record.content,
            )
            memory.delete_memory(record.id)
            return f"{_u(user)}/memories"
        if edit in ("pin", "unpin"):
            memory.update_fields([record.id], {"pinned": edit == "pin"})
            logger.info("%sned memory %s of user %r (inspector edit)", edit, record.id, user)
            return f"{_u(user)}/m/{record.id}"
        content = form.get("content", "")
        if not record.is_current:
            raise PageError(400, "this memory was superseded; correct its current version")
        try:
            new = memory.new_record(
                content,
                record.memory_type,
                subtype=record.subtype,
                importance=record.importance,
                concept=record.concept,
                relations=[r.model_dump() for r in record.relations],
                metadata=record.metadata,
                source_session_id=record.source_session_id,
                source_message_ids=record.source_message_ids,
            )
        except InvalidValueError as exc:
            raise PageError(400, str(exc)) from None
        memory.store_records([new])
        memory.supersede_memory(record.id, by=new)
        logger.info(
            "corrected memory %s of user %r by %s (inspector edit): %.80r -> %.80r",
            record.id,
            user,
            new.id,
            record.content,
            new.content,
        )
        return f"{_u(user)}/m/{new.id}"

    # -- search, forgetting, contexts ----------------------------------------------------

    def search(self, user: str, query: Mapping[str, str]) -> Page:
        text = query.get("q", "")
        mode = query.get("mode") or None
        if mode not in (None, "hybrid", "dense", "bm25"):
            raise PageError(400, f"mode must be hybrid, dense or bm25, got {mode!r}")
        history = query.get("history") == "1"
        top_k = _int(query.get("k", "10"), "k")
        form = tag(
            "form",
            tag(
                "input", name="q", value=text, size=50, placeholder="what to recall", required=True
            ),
            " ",
            tag(
                "select",
                *(
                    tag("option", m, value=m, selected=m == (mode or "hybrid"))
                    for m in ("hybrid", "dense", "bm25")
                ),
                name="mode",
            ),
            " ",
            tag(
                "label",
                tag("input", type="checkbox", name="history", value="1", checked=history),
                " with superseded",
            ),
            " ",
            tag("button", "search", type="submit"),
            action=f"{_u(user)}/search",
            method="get",
        )
        results = Markup("")
        if text.strip():
            memory = self.service.long_term(user)
            hits = memory.retrieve_memories(
                text,
                min(max(top_k, 1), 50),
                mode=mode,  # type: ignore[arg-type]  # checked above
                include_history=history,
                explain=True,
                touch=False,
            )
            results = join(
                [
                    tag(
                        "p",
                        f"{len(hits)} memories; the score is the sum of the parts drawn "
                        "(hover a segment for its value). Searching here records no access.",
                        class_="am-muted",
                    ),
                    hits_html(hits, link=lambda r: f"{_u(user)}/m/{r.id}"),
                ]
            )
        return Page(f"Search {user}'s memories", join([form, results]), user)

    def forgetting(self, user: str, query: Mapping[str, str]) -> Page:
        memory = self.service.long_term(user)
        now = self.policy.clock()
        records = memory.all_records()
        retention = [self.policy.retention(r, now) for r in records if not r.pinned]
        days = [float(d) for d in range(0, 366, 5)]
        policy = self.policy

        def curve(importance: float, accesses: int) -> list[tuple[float, float]]:
            probe = MemoryRecord.new(
                "probe",
                "semantic",
                scope=memory.scope,
                importance=importance,
                access_count=accesses,
                created_at=now,
            )
            return [(d, policy.retention(probe, now + timedelta(days=d))) for d in days]

        curves = line_plot(
            [
                ("importance 0", "#e45756", curve(0.0, 0)),
                ("importance 0.5", "#f58518", curve(0.5, 0)),
                ("importance 1", "#54a24b", curve(1.0, 0)),
                ("importance 0.5, used 10x", "#4c78a8", curve(0.5, 10)),
            ],
            x_label="days since last use",
            y_label="retention",
            hline=_threshold(policy),
        )
        marker = None if policy.min_retention is None else (policy.min_retention, "forget below")
        body = join(
            [
                tag(
                    "p",
                    f"Policy: half-life {policy.half_life_days:g} days, importance boost "
                    f"{policy.importance_boost:g}, min retention {policy.min_retention}, "
                    f"max age {policy.max_age_days}, max memories {policy.max_memories}.",
                    class_="am-muted",
                ),
                tag(
                    "div",
                    tag(
                        "div",
                        tag("h2", f"Retention of {len(retention)} unpinned memories"),
                        histogram(retention, x_label="retention now", marker=marker),
                    ),
                    tag("div", tag("h2", "Forgetting curves"), curves),
                    class_="am-grid",
                ),
                tag("h2", "Forgetting candidates (dry run)"),
                forgetting_candidates(memory, policy, limit=20, records=records),
            ]
        )
        return Page(f"Forgetting: {user}", body, user)

    def contexts(self, user: str, query: Mapping[str, str]) -> Page:
        entries = self.service.recent_contexts.of_user(user)
        blocks = []
        for index, entry in enumerate(entries):
            ctx = entry.context
            if ctx is None:
                continue
            blocks.append(
                tag(
                    "details",
                    tag(
                        "summary",
                        f"{when(entry.built_at)}  ",
                        tag("b", entry.query),
                        "  ",
                        tag(
                            "span",
                            f"session {entry.session_id}, {ctx.token_count} of "
                            f"{ctx.max_tokens} tokens",
                            class_="am-muted",
                        ),
                    ),
                    context_html(ctx),
                    open=index == 0,
                    class_="am-context",
                )
            )
        body = (
            join(
                [
                    tag(
                        "p",
                        f"The last {len(blocks)} contexts built for {user} by this process "
                        "(newest first).",
                        class_="am-muted",
                    ),
                    *blocks,
                ]
            )
            if blocks
            else tag(
                "p", "No context built for this user since the service started.", class_="am-muted"
            )
        )
        return Page(f"Contexts of {user}", body, user)


def _until(record: MemoryRecord) -> str:
    return when(record.valid_to) if record.valid_to else "now"


def _version(r: MemoryRecord, shown: MemoryRecord, base: str) -> Markup:
    """One version of a history chain: the one shown in bold, others linked (superseded
    ones struck through)."""
    content = tag("div", r.content, class_="am-content" if r.is_current else "am-content am-old")
    if r.id == shown.id:
        return tag("b", content)
    return tag("a", content, href=f"{base}/m/{r.id}")


def _threshold(policy: ForgettingPolicy) -> tuple[float, str] | None:
    if policy.min_retention is None:
        return None
    return policy.min_retention, f"forget below {policy.min_retention:g}"


def _int(value: str, name: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise PageError(400, f"{name} must be a whole number, got {value!r}") from None
    if number < 0:
        raise PageError(400, f"{name} must be >= 0, got {number}")
    return number
