"""The ``agentmem`` command line.

Commands (each honours ``--home`` / ``AGENTMEM_HOME``)::

    agentmem demo                         two scripted sessions, offline, embedded defaults
    agentmem ingest FILE --user U         JSONL chat messages or a LoCoMo-style file
    agentmem search QUERY --user U        long-term search (--explain for score parts)
    agentmem context QUERY --user U       the packed prompt and its token ledger
    agentmem forget --user U [--dry-run]  a forgetting pass
    agentmem stats --user U               memories by type, sessions, disk use
    agentmem export FILE --user U         memories as JSONL (lossless)
    agentmem import FILE --user U         memories from such a file

An LLM is used when ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` is set (model from
``AGENTMEM_MODEL``, default ``gpt-4o-mini``); otherwise the commands run without one and
say so.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, TextIO

from agentmem.errors import AgentMemError
from agentmem.home import default_home
from agentmem.llm import ChatModel
from agentmem.types import utcnow

__all__ = ["main"]


def _llm(out: TextIO) -> ChatModel | None:
    if not (os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL")):
        out.write("No LLM configured (set OPENAI_API_KEY or OPENAI_BASE_URL to use one): ")
        out.write("no summaries; conversation rounds are stored as episodes.\n")
        return None
    from agentmem.llm_openai import OpenAIChatModel

    model = os.environ.get("AGENTMEM_MODEL", "gpt-4o-mini")
    out.write(f"LLM: {model} via OpenAI-compatible API.\n")
    return OpenAIChatModel(model=model)


def _home(args: argparse.Namespace) -> Path:
    return Path(args.home) if args.home else default_home()


def _manager(args: argparse.Namespace, out: TextIO, **kwargs: Any) -> Any:
    from agentmem.manager import MemoryManager

    return MemoryManager.open(
        user_id=args.user,
        session_id=getattr(args, "session", None),
        home=_home(args),
        llm=_llm(out),
        **kwargs,
    )


# -- demo ----------------------------------------------------------------------------------

SESSION_ONE = [
    ("Hi! I only write Python, and I indent with tabs, not spaces.", "Noted: Python, tabs."),
    ("My daughter's birthday is on 14 March; remind me a week before.", "I'll remember 14 March."),
    ("I'm planning a trip to Oslo in spring.", "Oslo in spring is lovely; pack a rain jacket."),
    ("我也会说一点中文，请用简短的句子回答中文问题。", "好的，我会用简短的句子回答。"),
]
SESSION_TWO_QUERY = "Write me a snippet that reads a CSV file — which language and indentation?"


def _demo(args: argparse.Namespace, out: TextIO) -> int:
    home = _home(args)
    out.write(f"agentmem demo — home: {home}\n")
    one = _manager(args, out, consolidate_every_tokens=None)
    out.write(f"\n== Session one ({one.session_id})\n")
    for user, assistant in SESSION_ONE:
        one.process_interaction(user, assistant)
        out.write(f"  user: {user}\n  assistant: {assistant}\n")
    one.update_working_memory("trip_city", "Oslo", ttl=3600)
    report = one.consolidate()
    out.write(
        f"Consolidated {report.messages} messages into long-term memory: "
        f"{report.written} written, {len(report.decisions) - report.written} reinforced.\n"
    )
    one.close()

    from agentmem.manager import MemoryManager

    two = MemoryManager.open(user_id=args.user, home=home, llm=None)
    out.write(f"\n== Session two ({two.session_id}), a new conversation\n")
    out.write(f"  user: {SESSION_TWO_QUERY}\n")
    ctx = two.build_context(
        SESSION_TWO_QUERY, max_tokens=args.max_tokens, system_prompt="You are a coding assistant."
    )
    out.write("\nRecalled from session one:\n")
    for hit in ctx.recalled:
        text = " ".join(hit.record.content.split())
        out.write(f"  {hit.score:.4f}  {text[:90]}\n")
    out.write(f"\nPrompt: {len(ctx.messages)} messages, {ctx.token_count} tokens")
    out.write(f" (budget {ctx.max_tokens}, {two.token_counter.encoding_name}). Ledger:\n")
    for section, tokens in ctx.ledger.items():
        out.write(f"  {section:<14} {tokens:>5}\n")
    out.write(f"  {'total':<14} {sum(ctx.ledger.values()):>5}\n")
    from agentmem.forgetting import ForgettingPolicy

    later = utcnow() + timedelta(days=180)
    out.write("\nForgetting, dry run as of 180 days from now if nothing is used meanwhile:\n")
    report = two.forget(dry_run=True, policy=ForgettingPolicy(clock=lambda: later))
    out.write(_indent(report.to_text()) + "\n")
    two.close()
    return 0


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


# -- long-term commands ------------------------------------------------------------------


def _long_term(args: argparse.Namespace) -> Any:
    from agentmem.long_term import LongTermMemory

    return LongTermMemory.open(user_id=args.user, home=_home(args))


def _search(args: argparse.Namespace, out: TextIO) -> int:
    memory = _long_term(args)
    try:
        hits = memory.retrieve_memories(
            args.query,
            args.top_k,
            mode=args.mode,
            include_history=args.history,
            explain=args.explain,
        )
        for hit in hits:
            r = hit.record
            current = "" if r.is_current else "  [superseded]"
            out.write(f"{hit.score:.4f}  {r.id}  {r.memory_type}/{r.subtype or '-'}{current}\n")
            out.write(f"        {' '.join(r.content.split())[:200]}\n")
            if args.explain:
                parts = ", ".join(f"{k}={v:.4g}" for k, v in hit.components.items())
                out.write(f"        {parts}\n")
        if not hits:
            out.write("no memories found\n")
    finally:
        memory.close()
    return 0


def _context(args: argparse.Namespace, out: TextIO) -> int:
    manager = _manager(args, out)
    try:
        ctx = manager.build_context(args.query, max_tokens=args.max_tokens)
        for message in ctx.messages:
            out.write(f"--- {message['role']}\n{message['content']}\n")
        out.write("--- ledger\n")
        out.write(json.dumps(ctx.ledger) + f"\ntotal {ctx.token_count} / {args.max_tokens}\n")
    finally:
        manager.close()
    return 0


def _forget(args: argparse.Namespace, out: TextIO) -> int:
    from agentmem.forgetting import ForgettingPolicy

    policy = ForgettingPolicy(
        min_retention=args.min_retention,
        max_age_days=args.max_age_days,
        max_memories=args.max_memories,
    )
    memory = _long_term(args)
    try:
        out.write(policy.apply(memory, dry_run=args.dry_run).to_text() + "\n")
    finally:
        memory.close()
    return 0


def _stats(args: argparse.Namespace, out: TextIO) -> int:
    from agentmem.long_term import RecordFilter

    memory = _long_term(args)
    try:
        records = memory.all_records(RecordFilter(include_history=True))
        by_type: dict[str, int] = {}
        for r in records:
            key = f"{r.memory_type}/{r.subtype or '-'}"
            by_type[key] = by_type.get(key, 0) + 1
        current = sum(1 for r in records if r.is_current)
        out.write(f"user {args.user}: {len(records)} memories ({current} current)\n")
        for key, n in sorted(by_type.items()):
            out.write(f"  {key:<24} {n}\n")
    finally:
        memory.close()
    home = _home(args)
    size = sum(p.stat().st_size for p in home.rglob("*") if p.is_file())
    out.write(f"home {home}: {size / 1e6:.1f} MB on disk\n")
    return 0


def _export(args: argparse.Namespace, out: TextIO) -> int:
    from agentmem.long_term import RecordFilter

    memory = _long_term(args)
    try:
        records = memory.all_records(RecordFilter(include_history=True))
        with open(args.file, "w", encoding="utf-8") as f:
            for record in records:
                f.write(record.model_dump_json() + "\n")
        out.write(f"exported {len(records)} memories of {args.user} to {args.file}\n")
    finally:
        memory.close()
    return 0


def _import(args: argparse.Namespace, out: TextIO) -> int:
    from pydantic import ValidationError

    from agentmem.long_term import MemoryRecord

    records = []
    with open(args.file, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = MemoryRecord.model_validate_json(line)
            except ValidationError as exc:
                out.write(f"{args.file}:{number}: not a memory record: {exc.errors()[0]['msg']}\n")
                return 2
            scope = record.scope.model_copy(update={"user_id": args.user})
            records.append(record.model_copy(update={"scope": scope}))
    memory = _long_term(args)
    try:
        for start in _progress(range(0, len(records), 256), len(records), 256, out):
            memory.store_records(records[start : start + 256])
    finally:
        memory.close()
    out.write(f"imported {len(records)} memories into {args.user}\n")
    return 0


def _progress(items: range, total: int, step: int, out: TextIO) -> Iterator[int]:
    for i in items:
        yield i
        done = min(total, i + step)
        sys.stderr.write(f"\r{done}/{total} ({100 * done // max(total, 1)}%)")
    sys.stderr.write("\n")
    del out


def _ingest(args: argparse.Namespace, out: TextIO) -> int:
    from agentmem.ingest import ingest_file

    manager = _manager(args, out, consolidate_every_tokens=None)
    try:
        stats = ingest_file(manager, Path(args.file), progress=sys.stderr)
        out.write(stats + "\n")
    finally:
        manager.close()
    return 0


# -- entry point ---------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentmem", description="Tiered memory for LLM agents.")
    parser.add_argument("--home", help="data directory (default: $AGENTMEM_HOME or per-user dir)")
    sub = parser.add_subparsers(dest="command", required=True)

    def command(name: str, func: Any, help: str, user: bool = True) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help)
        p.set_defaults(func=func)
        if user:
            p.add_argument("--user", required=name != "demo", default="demo-user")
        return p

    demo = command("demo", _demo, "two scripted sessions offline on the embedded defaults")
    demo.add_argument("--max-tokens", type=int, default=600, help="budget of the context")
    ingest = command("ingest", _ingest, "ingest JSONL chat messages or a LoCoMo-style file")
    ingest.add_argument("file")
    ingest.add_argument("--session", help="session id for JSONL messages without one")
    search = command("search", _search, "search long-term memories")
    search.add_argument("query")
    search.add_argument("--top-k", type=int, default=5)
    search.add_argument("--mode", choices=["hybrid", "dense", "bm25"], default=None)
    search.add_argument("--history", action="store_true", help="include superseded memories")
    search.add_argument("--explain", action="store_true", help="show each part of the score")
    context = command("context", _context, "show the packed prompt for a query")
    context.add_argument("query")
    context.add_argument("--session")
    context.add_argument("--max-tokens", type=int, default=2000)
    forget = command("forget", _forget, "run a forgetting pass")
    forget.add_argument("--dry-run", action="store_true")
    forget.add_argument("--min-retention", type=float, default=0.05)
    forget.add_argument("--max-age-days", type=float, default=None)
    forget.add_argument("--max-memories", type=int, default=None)
    command("stats", _stats, "memories by type and disk use")
    export = command("export", _export, "export memories as JSONL")
    export.add_argument("file")
    imp = command("import", _import, "import memories from JSONL")
    imp.add_argument("file")
    return parser


def _quiet_model_loading() -> None:
    # The CLI is an application: it may silence transformers' per-load progress bars.
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        return
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``agentmem`` command."""
    args = _parser().parse_args(argv)
    _quiet_model_loading()
    try:
        return int(args.func(args, sys.stdout))
    except AgentMemError as exc:
        sys.stderr.write(f"agentmem: {exc}\n")
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
