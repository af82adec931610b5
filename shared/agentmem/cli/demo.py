"""``agentmem demo``: two scripted sessions of one user, offline, on the embedded defaults
(private). Its options are checked before anything is written or loaded."""

from __future__ import annotations

import argparse
from datetime import timedelta
from typing import TextIO

from agentmem._util.text import shorten
from agentmem.cli import common
from agentmem.errors import ConfigurationError
from agentmem.types import utcnow

__all__ = ["SESSION_ONE", "SESSION_TWO_QUERY", "SYSTEM_PROMPT", "demo_command"]

SESSION_ONE = [
    ("Hi! I only write Python, and I indent with tabs, not spaces.", "Noted: Python, tabs."),
    ("My daughter's birthday is on 14 March; remind me a week before.", "I'll remember 14 March."),
    ("I'm planning a trip to Oslo in spring.", "Oslo in spring is lovely; pack a rain jacket."),
    ("我也会说一点中文，请用简短的句子回答中文问题。", "好的，我会用简短的句子回答。"),
]
SESSION_TWO_QUERY = "Write me a snippet that reads a CSV file — which language and indentation?"
SYSTEM_PROMPT = "You are a coding assistant."


def minimum_budget() -> int:
    """Tokens the demo's prompt needs at least: its system prompt and question."""
    from agentmem.tokens import TokenCounter

    return TokenCounter().count_messages(
        [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": SESSION_TWO_QUERY},
        ]
    )


def demo_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run the demo (see the module docstring); returns the exit status."""
    from agentmem.controller.forgetting import ForgettingPolicy

    user = common.check_user(args)
    # Below 1 needs no tokenizer to refuse; otherwise count what the prompt needs at least.
    needed = minimum_budget() if args.max_tokens >= 1 else None
    if needed is None or args.max_tokens < needed:
        alone = f" alone take {needed} tokens" if needed is not None else " need some room"
        msg = (
            f"--max-tokens {args.max_tokens} is too small: the demo's system prompt and "
            f"question{alone}; pass --max-tokens 600 (the default) or more"
        )
        raise ConfigurationError(msg)
    config = common.resolve_config(args)
    common.check_home(config)
    embedder = common.deferred_embedder()
    llm = common.llm_from_environment(err)

    out.write(f"agentmem demo — home: {config.home}\n")
    one = common.open_manager(config, user, embedder, llm, consolidate_every_tokens=None)
    try:
        embedder.load()
        out.write(f"\n== Session one ({one.session_id})\n")
        for said, answered in SESSION_ONE:
            one.process_interaction(said, answered)
            out.write(f"  user: {said}\n  assistant: {answered}\n")
        one.update_working_memory("trip_city", "Oslo", ttl=3600)
        report = one.consolidate()
        out.write(
            f"Consolidated {report.messages} messages into long-term memory: "
            f"{report.written} written, {len(report.decisions) - report.written} reinforced.\n"
        )
    finally:
        one.close()

    two = common.open_manager(config, user, embedder, llm=None)
    try:
        out.write(f"\n== Session two ({two.session_id}), a new conversation\n")
        out.write(f"  user: {SESSION_TWO_QUERY}\n")
        ctx = two.build_context(
            SESSION_TWO_QUERY, max_tokens=args.max_tokens, system_prompt=SYSTEM_PROMPT
        )
        out.write("\nRecalled from session one (relevance: higher is closer to the question):\n")
        for hit in ctx.recalled:
            out.write(f'  relevance {hit.score:.2f}: "{shorten(hit.record.content, 90)}"\n')
        out.write(
            f"\nPrompt: {len(ctx.messages)} messages, {ctx.token_count} tokens of a "
            f"{ctx.max_tokens}-token budget (tokenizer {two.token_counter.encoding_name}).\n"
            "Tokens by section:\n"
        )
        for section, tokens in ctx.ledger.items():
            out.write(f"  {section:<14} {tokens:>5} tokens\n")
        out.write(f"  {'total':<14} {sum(ctx.ledger.values()):>5} tokens\n")
        policy = ForgettingPolicy(clock=lambda: utcnow() + timedelta(days=180))
        out.write(
            "\nForgetting, dry run as of 180 days from now if nothing is used meanwhile.\n"
            f"Retention: 1 when fresh, halving every {policy.half_life_days:g} days unused "
            f"(slower for important memories); forgotten below {policy.min_retention:g}.\n"
        )
        forgetting = two.forget(dry_run=True, policy=policy)
        out.write("\n".join("  " + line for line in forgetting.to_text().splitlines()) + "\n")
    finally:
        two.close()
    return 0
