"""HTML views of agentmem objects: the ``_repr_html_`` of a built context, recall results,
a manager, a long-term memory and a working memory, and the fragments the web inspector
pages are made of.

Every function returns a :class:`~agentmem.inspector._markup.Markup` fragment; the
``*_repr`` functions wrap one with its stylesheet for a notebook. Content (memories,
messages, queries, ids) is always escaped; plots are inline SVG. Nothing here imports a
third-party package.

Example:
    >>> from agentmem.context import InstructionsBlock, QueryBlock, assemble_context
    >>> from agentmem.tokens import TokenCounter
    >>> built = assemble_context([InstructionsBlock("Be brief."), QueryBlock("<b>tabs?</b>")],
    ...                          counter=TokenCounter("gpt-4o"), max_tokens=100)
    >>> page = context_repr(built)
    >>> "&lt;b&gt;tabs?&lt;/b&gt;" in page and "<b>tabs" not in page
    True
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, get_args

from agentmem.inspector._markup import Markup, join, tag
from agentmem.inspector.plots import COLORS, budget_bar, color_of, stacked_bar
from agentmem.long_term.records import MemoryType

if TYPE_CHECKING:
    from agentmem.context import BuiltContext
    from agentmem.controller.forgetting import ForgettingPolicy
    from agentmem.controller.manager import MemoryManager
    from agentmem.long_term.memory import LongTermMemory
    from agentmem.long_term.records import MemoryRecord
    from agentmem.long_term.store import ScoredRecord
    from agentmem.working import WorkingMemory
    from agentmem.working.models import Variable, WorkingState

__all__ = [
    "STYLE",
    "context_html",
    "context_repr",
    "counts_table",
    "forgetting_candidates",
    "hits_html",
    "hits_repr",
    "long_term_html",
    "long_term_repr",
    "manager_repr",
    "messages_html",
    "record_cells",
    "records_table",
    "when",
    "working_html",
    "working_repr",
    "working_state_html",
]

#: The stylesheet of every fragment (the web inspector serves it as a file).
STYLE = """
.am-root { font-family: system-ui, sans-serif; font-size: 13px; color: #222; }
.am-root h1 { font-size: 20px; margin: 4px 0 10px; }
.am-root h2 { font-size: 16px; margin: 16px 0 6px; }
.am-root h3 { font-size: 14px; margin: 12px 0 4px; }
.am-root table { border-collapse: collapse; margin: 4px 0 8px; }
.am-root th, .am-root td { border-bottom: 1px solid #e4e4e4; padding: 3px 8px;
  text-align: left; vertical-align: top; }
.am-root th { background: #f5f5f5; font-weight: 600; }
.am-root td.num, .am-root th.num { text-align: right; font-variant-numeric: tabular-nums; }
.am-root .am-content { max-width: 560px; white-space: pre-wrap; overflow-wrap: anywhere; }
.am-root pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f7f7f7;
  padding: 6px; margin: 2px 0; max-width: 900px; }
.am-root .am-muted { color: #777; }
.am-root .am-tag { display: inline-block; padding: 0 6px; border-radius: 8px;
  background: #eef2f7; margin-right: 4px; }
.am-root .am-old { color: #999; text-decoration: line-through; }
.am-root .am-legend span { margin-right: 12px; white-space: nowrap; }
.am-root .am-swatch { display: inline-block; width: 10px; height: 10px; margin-right: 3px; }
.am-root details { margin: 2px 0; }
.am-root summary { cursor: pointer; }
.am-root nav > *, .am-root .am-pages a { margin-right: 12px; }
.am-root form.am-inline { display: inline; }
.am-root .am-grid { display: flex; flex-wrap: wrap; gap: 24px; }
.am-root .am-error { color: #b00020; }
.am-root .am-note { background: #fff8e1; padding: 4px 8px; }
"""

#: The parts of an explained score, in the order the stacked bar draws them.
SCORE_PARTS = ("fused", "temporal_boost", "importance_boost", "recency_boost")
Link = Callable[["MemoryRecord"], str]


def when(moment: datetime | None) -> str:
    """A timestamp as ``2026-03-04 09:30`` (UTC), or ``-``."""
    return "-" if moment is None else moment.strftime("%Y-%m-%d %H:%M")


def _wrap(fragment: Markup) -> str:
    return str(tag("div", tag("style", Markup(STYLE)), fragment, class_="am-root"))


def _table(
    head: Sequence[str],
    rows: Iterable[Sequence[Markup]],
    *,
    numeric: int = 0,
    class_: str | None = None,
) -> Markup:
    """A ``<table>`` with a header row of ``head`` (its last ``numeric`` columns right-aligned
    numbers) and one ``<tr>`` per row of cells."""
    cells = [
        tag("th", h, class_="num" if i >= len(head) - numeric else None) for i, h in enumerate(head)
    ]
    return tag("table", tag("tr", *cells), *(tag("tr", *r) for r in rows), class_=class_)


def _swatch(name: str, index: int = 0) -> Markup:
    return tag(
        "svg",
        tag("rect", width=10, height=10, fill=color_of(name, index)),
        width=10,
        height=10,
        class_="am-swatch",
    )


# -- recall results ----------------------------------------------------------------------


def _score_segments(hit: ScoredRecord) -> list[tuple[str, float, str]]:
    """The parts of a hit's final score: fused (dense + BM25, or the one side searched),
    temporal, importance and recency boosts; just the score when it was not explained."""
    parts = hit.components
    if not parts:
        return [("score", hit.score, COLORS["fused"])]
    boosts = [(key, float(parts.get(key, 0.0))) for key in SCORE_PARTS[1:]]
    base = parts.get("fused", parts.get("base"))
    if base is None:  # dense-only or BM25-only: the score less its boosts
        base = hit.score - sum(value for _, value in boosts)
    segments = [("fused", float(base), COLORS["fused"])]
    segments += [(key.removesuffix("_boost"), value, COLORS[key]) for key, value in boosts]
    return segments


def record_cells(record: MemoryRecord) -> list[Markup]:
    """Type, dates and history of a memory, as table cells."""
    kind = f"{record.memory_type}/{record.subtype or '-'}"
    history = (
        tag("span", "current")
        if record.is_current
        else tag("span", f"superseded {when(record.valid_to)}", class_="am-old")
    )
    return [
        tag(
            "td",
            tag("span", kind, class_="am-tag"),
            *([tag("span", "pinned", class_="am-tag")] if record.pinned else []),
        ),
        tag(
            "td",
            when(record.created_at),
            tag("br"),
            tag(
                "span",
                f"used {record.access_count}x, last {when(record.last_accessed_at)}",
                class_="am-muted",
            ),
        ),
        tag("td", history),
    ]


def _sum_text(hit: ScoredRecord) -> str:
    """``1.704 = fused 1.7 + temporal 0 + importance 0.002 + recency 0.0019``."""
    segments = _score_segments(hit)
    if len(segments) == 1:
        return f"{hit.score:.4f}"
    return f"{hit.score:.4f} = " + " + ".join(f"{name} {v:.3g}" for name, v, _ in segments)


def hits_html(hits: Sequence[ScoredRecord], *, link: Link | None = None) -> Markup:
    """Recall results: each hit's score as a stacked bar of its parts (with
    ``explain=True``: fused, temporal, importance, recency; the raw dense cosine and BM25
    score beside), its content, type, dates and history."""
    if not hits:
        return tag("p", "No memories found.", class_="am-muted")
    top = max((sum(max(0.0, v) for _, v, _ in _score_segments(h)) for h in hits), default=1.0)
    explained = any(h.components for h in hits)
    legend = (
        tag(
            "div",
            *(
                tag("span", _swatch(k), label)
                for k, label in (
                    ("fused", "fused (dense + BM25)"),
                    ("temporal_boost", "temporal"),
                    ("importance_boost", "importance"),
                    ("recency_boost", "recency"),
                )
            ),
            class_="am-legend",
        )
        if explained
        else Markup("")
    )
    rows = []
    for rank, hit in enumerate(hits, 1):
        record = hit.record
        content: Markup = tag("div", record.content, class_="am-content")
        if link is not None:
            content = tag("a", content, href=link(record))
        raw = ""
        if explained:
            parts = hit.components
            raw = ", ".join(
                f"{name} {parts[name]:.4g}"
                for name in ("dense", "sparse", "dense_rank", "sparse_rank")
                if name in parts
            )
        rows.append(
            tag(
                "tr",
                tag("td", rank, class_="num"),
                tag(
                    "td",
                    stacked_bar(_score_segments(hit), total=top or 1.0),
                    tag("br"),
                    tag("span", _sum_text(hit), class_="am-muted"),
                    tag("br") if raw else None,
                    tag("span", raw, class_="am-muted") if raw else None,
                ),
                tag("td", content),
                *record_cells(record),
            )
        )
    head = tag(
        "tr", *(tag("th", h) for h in ("#", "score", "memory", "type", "formed / used", "history"))
    )
    return join([legend, tag("table", head, *rows, class_="am-hits")])


def hits_repr(hits: Sequence[ScoredRecord]) -> str:
    """``_repr_html_`` of recall results."""
    title = tag("h3", f"{len(hits)} recalled memor{'y' if len(hits) == 1 else 'ies'}")
    return _wrap(join([title, hits_html(hits)]))


# -- built contexts ----------------------------------------------------------------------


def messages_html(messages: Sequence[Mapping[str, Any]], *, open_last: bool = False) -> Markup:
    """Chat messages, each collapsed under its role and first words."""
    items = []
    for index, message in enumerate(messages):
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        extra = {k: v for k, v in message.items() if k not in ("role", "content")}
        first = " ".join(text.split())[:80]
        items.append(
            tag(
                "details",
                tag(
                    "summary",
                    tag("b", str(message.get("role", "?"))),
                    " ",
                    tag("span", first, class_="am-muted"),
                ),
                tag("pre", text),
                tag("pre", json.dumps(extra, ensure_ascii=False, default=str)) if extra else None,
                open=open_last and index == len(messages) - 1,
            )
        )
    return join(items)


def context_html(ctx: BuiltContext) -> Markup:
    """A built context: the budget as one bar (a segment per section), the exact ledger
    with each section's share, what was left out, the recalled memories and the messages
    (collapsed)."""
    budget = ctx.max_tokens or 1
    legend = tag(
        "div",
        *(
            tag("span", _swatch(name, i), f"{name} {n}")
            for i, (name, n) in enumerate(ctx.ledger.items())
        ),
        class_="am-legend",
    )
    ledger = _table(
        ("section", "tokens", "share of budget"),
        [
            *(
                (
                    tag("td", _swatch(name, i), name),
                    tag("td", n, class_="num"),
                    tag("td", f"{100 * n / budget:.1f}%", class_="num"),
                )
                for i, (name, n) in enumerate(ctx.ledger.items())
            ),
            (
                tag("th", "total"),
                tag("th", ctx.token_count, class_="num"),
                tag(
                    "th",
                    f"{100 * ctx.token_count / budget:.1f}% of {ctx.max_tokens}",
                    class_="num",
                ),
            ),
        ],
        numeric=2,
        class_="am-ledger",
    )
    omitted = (
        tag(
            "p",
            "Left out for lack of room: ",
            ", ".join(f"{k} {v}" for k, v in ctx.omitted.items()),
            class_="am-muted",
        )
        if ctx.omitted
        else Markup("")
    )
    return join(
        [
            tag("div", budget_bar(ctx.ledger, ctx.max_tokens)),
            legend,
            ledger,
            omitted,
            tag(
                "details",
                tag("summary", f"{len(ctx.recalled)} recalled memories"),
                hits_html(ctx.recalled),
            ),
            tag(
                "details",
                tag("summary", f"{len(ctx.messages)} messages"),
                messages_html(ctx.messages),
            ),
        ]
    )


def context_repr(ctx: BuiltContext) -> str:
    """``_repr_html_`` of a built context."""
    title = tag("h3", f"Context: {ctx.token_count} of {ctx.max_tokens} tokens")
    return _wrap(join([title, context_html(ctx)]))


# -- working memory ----------------------------------------------------------------------


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _expiry(variable: Variable) -> str:
    if variable.expires_at:
        return when(variable.expires_at)
    if variable.expires_after_turns:
        return f"after {variable.expires_after_turns} turns"
    return "never"


def working_state_html(state: WorkingState) -> Markup:
    """A working-memory state: variables with their expiry, tasks, hypotheses (confidence
    as a bar) and the scratchpad."""
    parts: list[Markup] = [tag("p", f"turn {state.turn}", class_="am-muted")]
    if state.variables:
        parts.append(
            _table(
                ("variable", "value", "expires"),
                (
                    (
                        tag("td", key),
                        tag("td", tag("div", _json(v.value), class_="am-content")),
                        tag("td", _expiry(v)),
                    )
                    for key, v in state.variables.items()
                ),
            )
        )
    if state.tasks:
        parts.append(
            _table(
                ("task", "status"),
                (
                    (
                        tag("td", t.description, class_="am-content"),
                        tag("td", tag("span", t.status, class_="am-tag")),
                    )
                    for t in state.tasks
                ),
            )
        )
    if state.hypotheses:
        bar = COLORS["fused"]
        parts.append(
            _table(
                ("hypothesis", "confidence"),
                (
                    (
                        tag("td", h.text, class_="am-content"),
                        tag(
                            "td",
                            stacked_bar([("confidence", h.confidence, bar)], total=1.0, width=100),
                            f" {h.confidence:.2f}",
                        ),
                    )
                    for h in state.hypotheses
                ),
            )
        )
    if state.scratchpad:
        dropped = state.dropped_scratchpad_entries
        parts.append(
            tag(
                "details",
                tag(
                    "summary",
                    f"scratchpad: {len(state.scratchpad)} steps"
                    + (f" ({dropped} earlier dropped)" if dropped else ""),
                ),
                tag("ol", *(tag("li", e.text, class_="am-content") for e in state.scratchpad)),
            )
        )
    if len(parts) == 1:
        parts.append(tag("p", "Working memory is empty.", class_="am-muted"))
    return join(parts)


def working_html(memory: WorkingMemory) -> Markup:
    """A working memory, read as :meth:`~agentmem.WorkingMemory.to_dict` reads it."""
    from agentmem.working.models import state_from_doc

    return working_state_html(state_from_doc(memory.to_dict(), memory.session_id))


def working_repr(memory: WorkingMemory) -> str:
    """``_repr_html_`` of a working memory."""
    return _wrap(
        join([tag("h3", f"Working memory of session {memory.session_id}"), working_html(memory)])
    )


# -- long-term memory and the manager ----------------------------------------------------

#: Above this many memories, the notebook view does not plan a forgetting pass.
PLAN_LIMIT = 20_000


def counts_table(memory: LongTermMemory) -> Markup:
    from agentmem.long_term.records import RecordFilter

    rows = []
    for memory_type in get_args(MemoryType):
        current = memory.count_memories(RecordFilter(memory_types=(memory_type,)))
        every = memory.count_memories(
            RecordFilter(memory_types=(memory_type,), include_history=True)
        )
        rows.append(
            (
                tag("td", memory_type),
                tag("td", current, class_="num"),
                tag("td", every - current, class_="num"),
            )
        )
    return _table(("type", "current", "superseded"), rows, numeric=2)


def records_table(
    records: Sequence[MemoryRecord],
    *,
    link: Link | None = None,
    extra: Callable[[MemoryRecord], Markup] | None = None,
    extra_head: str = "",
) -> Markup:
    """Memories as table rows: content, type, dates, history (and an ``extra`` cell)."""
    if not records:
        return tag("p", "No memories.", class_="am-muted")
    head = ["memory", "type", "formed / used", "history"] + ([extra_head] if extra else [])
    rows: list[list[Markup]] = []
    for record in records:
        content: Markup = tag("div", record.content, class_="am-content")
        if link is not None:
            content = tag("a", content, href=link(record))
        rows.append([tag("td", content), *record_cells(record)])
        if extra:
            rows[-1].append(tag("td", extra(record)))
    return _table(head, rows)


def forgetting_candidates(
    memory: LongTermMemory,
    policy: ForgettingPolicy,
    *,
    limit: int = 5,
    records: Sequence[MemoryRecord] | None = None,
) -> Markup:
    """The memories a forgetting pass of ``policy`` would delete, lowest retention first
    (a dry run: nothing is deleted); ``records``: all of ``memory``'s, if already read."""
    from agentmem.long_term.records import RecordFilter

    if records is None:
        total = memory.count_memories(RecordFilter(include_history=True))
        if total > PLAN_LIMIT:
            msg = f"{total} memories: too many to plan a pass here."
            return tag("p", msg, class_="am-muted")
        records = memory.all_records()
    report = policy.plan(records)
    decisions = report.decisions[:limit]
    if not decisions:
        return tag(
            "p",
            f"None: all {report.examined} memories are above the policy's thresholds.",
            class_="am-muted",
        )
    return join(
        [
            tag(
                "p",
                f"{len(report.decisions)} of {report.examined} would be forgotten "
                f"({report.pinned} pinned):",
                class_="am-muted",
            ),
            tag(
                "table",
                tag(
                    "tr",
                    tag("th", "memory"),
                    tag("th", "retention", class_="num"),
                    tag("th", "why"),
                ),
                *(
                    tag(
                        "tr",
                        tag("td", d.record.content, class_="am-content"),
                        tag("td", f"{d.retention:.3f}", class_="num"),
                        tag("td", d.reason),
                    )
                    for d in decisions
                ),
            ),
        ]
    )


def long_term_html(memory: LongTermMemory, policy: ForgettingPolicy | None = None) -> Markup:
    """A user's long-term memory: counts by type, the newest memories and the forgetting
    candidates of ``policy`` (default: :class:`~agentmem.controller.ForgettingPolicy`)."""
    from agentmem.controller.forgetting import ForgettingPolicy

    newest, _ = memory.scroll_records(limit=5, order_by="created_ts")
    return join(
        [
            tag("h3", "Memories by type"),
            counts_table(memory),
            tag("h3", "Newest"),
            records_table(newest),
            tag("h3", "Forgetting candidates"),
            forgetting_candidates(memory, policy if policy is not None else ForgettingPolicy()),
        ]
    )


def long_term_repr(memory: LongTermMemory) -> str:
    """``_repr_html_`` of a long-term memory."""
    return _wrap(
        join(
            [tag("h3", f"Long-term memory of user {memory.scope.user_id}"), long_term_html(memory)]
        )
    )


def _consolidation(every: int | None) -> str:
    return "consolidation on demand" if every is None else f"consolidation every {every} tokens"


def manager_repr(manager: MemoryManager) -> str:
    """``_repr_html_`` of a manager: its session, working memory and long-term memory."""
    short_term = manager.short_term
    summary = short_term.summary
    return _wrap(
        join(
            [
                tag("h3", f"MemoryManager: user {manager.user_id}, session {manager.session_id}"),
                tag(
                    "p",
                    f"{len(short_term.get_messages())} messages in the conversation window; "
                    + _consolidation(manager.consolidate_every_tokens),
                    class_="am-muted",
                ),
                tag("details", tag("summary", "summary"), tag("pre", summary)) if summary else None,
                tag("h3", "Working memory"),
                working_html(manager.working),
                long_term_html(manager.long_term, manager.forgetting),
            ]
        )
    )
