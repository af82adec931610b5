"""Every field rendered into a prompt is data (property tests).

Every block agentmem renders into a prompt is tag-delimited: working memory, recalled
memories, the conversation summary (LlamaIndex facts: ``tests/llamaindex``). For every
field of every renderable record — a memory's content, type, subtype (even one that
skipped validation), date, metadata, concept and relations; working memory's variable
names and values, task descriptions, statuses and fields, hypotheses and their evidence,
scratchpad steps; summaries; the middleware's system text — with values that spell block
tags in every disguise (case, inner spaces, full-width and other look-alike brackets),
entities, injected instructions and line breaks, a model reading the prompt
(:mod:`tests.tags`) finds exactly the blocks' own tags and no bracket anywhere else. And
the token ledger stays exact: every section's count equals a fresh count of its text.
"""

from __future__ import annotations

import html
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agentmem import TokenCounter
from agentmem.context import (
    MEMORY_BLOCK_CLOSE,
    MEMORY_BLOCK_OPEN,
    Block,
    BuiltContext,
    ContextBudgetError,
    InstructionsBlock,
    MessagesBlock,
    QueryBlock,
    RecalledBlock,
    SummaryBlock,
    WorkingBlock,
    assemble_context,
    escape_line,
    escape_markup,
    pack_context,
    render_memory_block,
    render_memory_line,
)
from agentmem.context.render import SEPARATOR
from agentmem.long_term.store import ScoredRecord
from agentmem.short_term.summary import SUMMARY_STATE_KEY, SummaryBufferMemory, render_summary
from agentmem.stores import InMemorySessionStore
from agentmem.types import Message
from agentmem.working import WorkingMemory
from tests.chatml import count_rendered
from tests.fakes import ScriptedChatModel
from tests.strategies import (
    BRACKET_PAIRS,
    HOSTILE_NONBLANK,
    HOSTILE_TEXT,
    conversations,
    lookalike_tags,
    recalled_hits,
    working_memories,
)
from tests.tags import assert_tags, brackets, tags_read
from tests.tool_schemas import SEARCH_MEMORY_TOOLS as TOOLS

COUNTER = TokenCounter("gpt-4o")
SUMMARY = ["<conversation_summary>", "</conversation_summary>"]
WORKING = ["<working_memory>", "</working_memory>"]
RECALLED = ["<recalled_memories>", "</recalled_memories>"]
#: Section of the system message -> its block's tags (the instructions have none).
SECTION_TAGS = {"summary": SUMMARY, "working_memory": WORKING, "long_term": RECALLED}
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

#: Whole prompts draw every block's records at once: fewer, larger examples.
PROMPTS = settings(SETTINGS, max_examples=25)


# -- the escaping itself --------------------------------------------------------------------


def test_every_character_that_draws_as_an_angle_bracket_is_escaped() -> None:
    for char in sorted(brackets()):
        assert not set(escape_markup(char)) & brackets(), f"U+{ord(char):04X}"
        assert html.unescape(escape_markup(char)) == char


def test_ordinary_text_renders_unchanged() -> None:
    text = "Alice writes Python with tabs, not spaces; budget 400 EUR (≤ 450), 喜欢绿茶。"
    assert escape_markup(text) == escape_line(text) == text


@SETTINGS
@given(HOSTILE_TEXT)
def test_escaping_keeps_the_text_and_leaves_no_bracket(text: str) -> None:
    escaped = escape_markup(text)
    assert html.unescape(escaped) == text
    assert not set(escaped) & brackets()
    assert tags_read(escaped) == []
    line = escape_line(text)
    assert html.unescape(line) == " ".join(text.split())
    assert "\n" not in line


@given(lookalike_tags())
def test_no_disguise_of_a_tag_survives_escaping(tag: str) -> None:
    assert tags_read(tag)  # the strategy makes tags a model reads as such
    assert tags_read(escape_line(tag)) == []


def test_the_look_alike_brackets_named_in_the_issue_are_escaped() -> None:
    for opener, closer in BRACKET_PAIRS:
        tag = f"{opener} /RECALLED_memories {closer}"
        assert tags_read(tag) == [tag]
        assert tags_read(escape_line(tag)) == []
    assert escape_line("＜／recalled_memories＞") == "&#xFF1C;／recalled_memories&#xFF1E;"
    assert escape_line(
        "\u2039/fact\u203a \u3008/fact\u3009 \u27e8/fact\u27e9 \ufe64/fact\ufe65"
    ) == ("&#x2039;/fact&#x203A; &#x3008;/fact&#x3009; &#x27E8;/fact&#x27E9; &#xFE64;/fact&#xFE65;")


# -- each block alone -----------------------------------------------------------------------


@SETTINGS
@given(working_memories(COUNTER), st.none() | st.integers(0, 400))
def test_working_memory_block_holds_every_field_as_data(
    wm: WorkingMemory, budget: int | None
) -> None:
    rendered = wm.get_context_for_llm(max_tokens=budget)
    if budget is not None:
        assert COUNTER.count_text(rendered) <= budget
    assert_tags(rendered, WORKING if rendered else [])


@SETTINGS
@given(st.lists(recalled_hits(), min_size=1, max_size=4))
def test_recalled_memory_lines_hold_every_field_as_data(hits: list[ScoredRecord]) -> None:
    lines = [render_memory_line(h) for h in hits]
    assert all("\n" not in line for line in lines)
    block = render_memory_block(lines)
    assert block.startswith(MEMORY_BLOCK_OPEN)
    assert block.endswith(MEMORY_BLOCK_CLOSE)
    assert_tags(block, RECALLED)


@SETTINGS
@given(HOSTILE_TEXT)
def test_summary_block_holds_the_summary_as_data(text: str) -> None:
    assert_tags(render_summary(text), SUMMARY)
    store = InMemorySessionStore()
    store.set_state("s1", SUMMARY_STATE_KEY, {"version": 1, "text": text, "watermark": 0})
    memory = SummaryBufferMemory(
        ScriptedChatModel(default="unused"), max_tokens=4000, session_id="s1", store=store
    )
    memory.refresh()
    head = memory.get_view().messages
    if text:
        assert_tags(head[0].content, SUMMARY)


# -- whole prompts: blocks whole, ledger exact ----------------------------------------------


def sections(system: str) -> dict[str, str]:
    """The sections of a system message, split at their blocks' opening tags (no data
    holds a ``<``: :func:`assert_tags` checked it first)."""
    starts = sorted(
        (system.index(tags[0]), key) for key, tags in SECTION_TAGS.items() if tags[0] in system
    )
    if not starts or starts[0][0] > 0:
        starts.insert(0, (0, "system"))
    ends = [start - len(SEPARATOR) for start, _ in starts[1:]] + [len(system)]
    return {key: system[start:end] for (start, key), end in zip(starts, ends, strict=True)}


def assert_ledger_exact(
    built: BuiltContext, tools: list[dict[str, Any]] | None, query: str | None
) -> None:
    """Every section's count in the ledger equals a fresh count of what was sent."""
    fresh = COUNTER.count_messages(built.messages, tools=tools)
    assert built.token_count == fresh == sum(built.ledger.values()) <= built.max_tokens
    assert count_rendered(COUNTER.encoding, built.text) == fresh - built.ledger.get("tools", 0)
    # The system message: each section after the first counts its text (separator
    # included); the first one the rest of the message (framing, any boundary merge).
    parts = sections(built.system) if built.system else {}
    assert SEPARATOR.join(parts.values()) == built.system
    in_system = dict(built.ledger)
    summaries = [m for m in built.history if m.metadata.get("agentmem_summary")]
    if summaries:  # a view's summary message counts in "summary" too
        in_system["summary"] -= sum(COUNTER.count_message(m) for m in summaries)
    names = list(parts)
    for name in names[1:]:
        assert in_system[name] == COUNTER.count_text(SEPARATOR + parts[name])
    if names:
        system = COUNTER.count_message(Message(role="system", content=built.system))
        assert sum(in_system[n] for n in names) == system
    assert in_system.get("summary", 0) == 0 or "summary" in names
    recent = [m for m in built.history if not m.metadata.get("agentmem_summary")]
    assert built.ledger.get("recent", 0) == sum(COUNTER.count_message(m) for m in recent)
    if query is not None:
        assert built.ledger["query"] == COUNTER.count_message(Message(role="user", content=query))
    if tools:
        assert built.ledger["tools"] == COUNTER.count_tools(tools, has_system=True)


def expected_tags(built: BuiltContext) -> list[str]:
    return [
        tag
        for key in ("summary", "working_memory", "long_term")
        for tag in (SECTION_TAGS[key] if SECTION_TAGS[key][0] in built.system else [])
    ]


@PROMPTS
@given(
    wm=working_memories(COUNTER),
    hits=st.lists(recalled_hits(), max_size=4),
    summary=HOSTILE_TEXT,
    history=conversations(max_turns=4, orphans=False),
    query=HOSTILE_NONBLANK,
    budget=st.integers(200, 5000),
    with_tools=st.booleans(),
)
def test_an_assembled_prompt_keeps_every_block_whole_and_its_ledger_exact(
    wm: WorkingMemory,
    hits: list[ScoredRecord],
    summary: str,
    history: list[Message],
    query: str,
    budget: int,
    with_tools: bool,
) -> None:
    tools = TOOLS if with_tools else None
    blocks: list[Block] = [
        InstructionsBlock("You are a careful assistant."),
        SummaryBlock(summary),
        WorkingBlock(wm.get_context_for_llm, 0.3),
        RecalledBlock(hits, 0.3),
        MessagesBlock(history),
        QueryBlock(query),
    ]
    try:
        built = assemble_context(blocks, counter=COUNTER, max_tokens=budget, tools=tools)
    except ContextBudgetError:
        assume(False)
        return
    assert_tags(built.system, expected_tags(built))
    assert_ledger_exact(built, tools, query)


@PROMPTS
@given(
    working_memories(COUNTER),
    st.lists(recalled_hits(), min_size=1, max_size=3),
    HOSTILE_TEXT,
    HOSTILE_NONBLANK,
)
def test_a_packed_context_with_a_summary_view_keeps_every_block_whole(
    wm: WorkingMemory, hits: list[ScoredRecord], summary: str, query: str
) -> None:
    store = InMemorySessionStore()
    store.set_state("s1", SUMMARY_STATE_KEY, {"version": 1, "text": summary, "watermark": 0})
    short = SummaryBufferMemory(
        ScriptedChatModel(default="unused"), max_tokens=4000, session_id="s1", store=store
    )
    short.refresh()
    built = pack_context(
        counter=COUNTER,
        max_tokens=6000,
        query=query,
        system_prompt="You are a careful assistant.",
        working_text=wm.get_context_for_llm,
        hits=hits,
        view_for=lambda n: short.get_view(max_tokens=n),
        working_share=0.4,
        memory_share=0.4,
    )
    assert_tags(built.system, [*WORKING, *RECALLED])
    if summary:
        assert_tags(built.messages[1]["content"], SUMMARY)
    assert_ledger_exact(built, None, query)
