"""The notebook displays (``_repr_html_``) and the HTML they are built from: content is
escaped, the plain reprs are unchanged, the numbers shown are the objects' own."""

from __future__ import annotations

import re

from agentmem import MemoryManager
from agentmem.context import BuiltContext, InstructionsBlock, QueryBlock, assemble_context
from agentmem.inspector._markup import Markup, escape, tag
from agentmem.inspector.plots import budget_bar, histogram, line_plot, stacked_bar
from agentmem.long_term import LongTermMemory
from agentmem.long_term.results import RecallResults
from agentmem.stores import InMemorySessionStore
from agentmem.tokens import TokenCounter
from agentmem.working import WorkingMemory

PAYLOAD = '<script>alert("x")</script><img src=x onerror=alert(1)> & "quotes"'


def _no_raw_payload(page: str) -> None:
    assert "<script>" not in page.replace("<style>", "")
    assert "<img" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page


def test_tag_escapes_text_and_attributes_but_not_markup() -> None:
    html = tag("a", PAYLOAD, Markup("<b>kept</b>"), href='/x?a=1&b="2"', class_="c")
    assert str(html).startswith('<a href="/x?a=1&amp;b=&quot;2&quot;" class="c">')
    assert "<b>kept</b>" in html
    assert "&lt;img src=x onerror=alert(1)&gt; &amp; &quot;quotes&quot;" in html
    assert escape(html) is html
    assert str(tag("rect", width=3)) == '<rect width="3"/>'  # SVG leaves close themselves


def test_plots_are_inline_svg_with_exact_values_in_tooltips() -> None:
    bar = stacked_bar([("dense", 0.25, "#111"), ("recency", -1.0, "#222")], total=1.0)
    assert bar.startswith("<svg")
    assert "style=" not in bar
    assert "<title>dense: 0.25</title>" in bar
    assert 'width="55.00"' in bar  # a quarter of 220 px
    assert "<title>recency: -1</title>" in bar
    assert 'width="0.00"' in bar
    budget = budget_bar({"system": 30, "query": 10}, 100)
    assert "<title>free: 60</title>" in budget
    assert "polyline" in line_plot(
        [("a", "#000", [(0.0, 1.0), (10.0, 0.5)])],
        x_label="days",
        y_label="retention",
        hline=(0.05, "t"),
    )
    assert "<title>0.00-0.50: 2</title>" in histogram([0.1, 0.2, 0.9], bins=2, x_label="r")


def _context() -> BuiltContext:
    return assemble_context(
        [InstructionsBlock("Be brief. " + PAYLOAD), QueryBlock("tabs? " + PAYLOAD)],
        counter=TokenCounter("gpt-4o"),
        max_tokens=300,
    )


def test_a_built_context_shows_its_exact_ledger_escaped() -> None:
    ctx = _context()
    page = ctx._repr_html_()
    _no_raw_payload(page)
    for section, tokens in ctx.ledger.items():
        share = f"{100 * tokens / 300:.1f}%"
        assert re.search(
            rf"{section}</td><td class=\"num\">{tokens}</td>.*?{re.escape(share)}", page
        ), section
    assert f"Context: {ctx.token_count} of 300 tokens" in page
    assert "<details><summary>2 messages</summary>" in page  # collapsed
    assert "_repr_html_" not in repr(ctx)
    assert repr(ctx).startswith("BuiltContext(messages=")


def test_recall_results_are_a_plain_list_that_shows_score_parts(
    long_term: LongTermMemory,
) -> None:
    long_term.store_memory(
        PAYLOAD + " Alice indents Python with tabs", "semantic", subtype="preference"
    )
    hits = long_term.retrieve_memories("Python tabs", explain=True)
    assert isinstance(hits, RecallResults)
    assert hits == list(hits)
    assert repr(hits) == repr(list(hits))
    page = hits._repr_html_()
    _no_raw_payload(page)
    parts = hits[0].components
    for name in ("fused", "temporal", "importance", "recency"):
        assert f"<title>{name}: " in page
    assert f"<title>importance: {parts['importance_boost']:.4g}</title>" in page
    assert "semantic/preference" in page
    assert "1 recalled memory" in page
    unexplained = long_term.retrieve_memories("Python tabs")._repr_html_()
    assert "<title>score: " in unexplained


def test_working_memory_shows_variables_tasks_hypotheses_and_steps() -> None:
    wm = WorkingMemory(session_id="s1")
    wm.set_variable("note", PAYLOAD)
    wm.push_task("book " + PAYLOAD)
    wm.add_hypothesis("cache is stale", 0.6)
    wm.add_scratchpad_entry("looked at " + PAYLOAD)
    page = wm._repr_html_()
    _no_raw_payload(page)
    assert "cache is stale" in page
    assert "<title>confidence: 0.6</title>" in page
    assert "scratchpad: 1 steps" in page
    assert repr(wm) == "WorkingMemory(session_id='s1')"


def test_long_term_and_manager_show_counts_newest_and_forgetting_candidates(
    long_term: LongTermMemory, clock: object
) -> None:
    from datetime import timedelta

    old = long_term.new_record(
        "an old unimportant note",
        "episodic",
        importance=0.0,
        created_at=clock() - timedelta(days=400),
    )  # type: ignore[operator]
    long_term.store_records([old])
    for i in range(3):
        long_term.store_memory(f"fact number {i} {PAYLOAD}", "semantic")
    page = long_term._repr_html_()
    _no_raw_payload(page)
    assert re.search(r"semantic</td><td class=\"num\">3</td>", page)
    assert re.search(r"episodic</td><td class=\"num\">1</td>", page)
    assert "an old unimportant note" in page.split("Forgetting candidates")[1]
    assert "1 of 4 would be forgotten" in page
    manager = MemoryManager.from_parts(
        user_id="alice",
        sessions=InMemorySessionStore(),
        long_term=long_term,
        session_id="alice-s1",
        consolidate_every_tokens=None,
    )
    manager.process_interaction("hi " + PAYLOAD, "hello")
    manager.update_working_memory("city", "Oslo")
    page = manager._repr_html_()
    _no_raw_payload(page)
    assert "MemoryManager: user alice, session alice-s1" in page
    assert "Oslo" in page
    assert "an old unimportant note" in page
    assert re.fullmatch(
        r"<agentmem\.controller\.manager\.MemoryManager object at 0x[0-9a-f]+>", repr(manager)
    )
