"""The command line's data commands (private): each checks its arguments and files, then
opens the stores, then loads the model only if it must embed something.

Every function takes the parsed arguments and the output streams and returns the exit
status; user mistakes raise :class:`~agentmem.errors.AgentMemError` (``main`` prints them).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from agentmem.cli import common
from agentmem.cli.embedder import DeferredEmbedder
from agentmem.cli.input import (
    check_output_file,
    is_locomo,
    parse_chat_jsonl,
    parse_locomo,
    parse_memory_jsonl,
    read_text,
    vectors_by_content,
)
from agentmem.cli.progress import ProgressBar
from agentmem.errors import AgentMemError, ConfigurationError, InvalidValueError

if TYPE_CHECKING:
    from agentmem.long_term import LongTermMemory

__all__ = [
    "assign_session_command",
    "context_command",
    "export_command",
    "forget_command",
    "import_command",
    "ingest_command",
    "search_command",
]

BATCH = 256


def _reading(args: argparse.Namespace) -> tuple[LongTermMemory, DeferredEmbedder]:
    """The user's long-term memory for a reading command; refuses an unknown user."""
    user = common.check_user(args)
    config = common.resolve_config(args)
    common.require_memories_home(config, user)
    embedder = common.deferred_embedder()
    memory = common.open_long_term(config, user, embedder)
    try:
        common.require_user_memories(memory, config.describe_memories())
    except BaseException:
        memory.close()
        raise
    return memory, embedder


def search_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``agentmem search QUERY --user U``: long-term search (``--explain`` for score parts)."""
    query = common.check_query(args.query)
    common.check_positive(args.top_k, "--top-k")
    memory, _ = _reading(args)
    try:
        hits = memory.retrieve_memories(
            query, args.top_k, mode=args.mode, include_history=args.history, explain=args.explain
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


def context_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``agentmem context QUERY --user U``: the packed prompt and its token ledger."""
    from agentmem.tokens import TokenCounter

    query = common.check_query(args.query)
    common.check_positive(args.max_tokens, "--max-tokens")
    session = common.check_session(args.session)
    needed = TokenCounter().count_messages([{"role": "user", "content": query}])
    if args.max_tokens < needed:
        msg = (
            f"--max-tokens {args.max_tokens} cannot hold the query alone ({needed} tokens); "
            f"pass --max-tokens {max(needed, 2000)}"
        )
        raise ConfigurationError(msg)
    memory, embedder = _reading(args)
    config = common.resolve_config(args)
    try:
        llm = common.llm_from_environment(err)
        manager = common.open_manager(config, memory.scope.user_id, embedder, llm, session=session)
    finally:
        memory.close()  # the manager holds its own share of the store
    try:
        ctx = manager.build_context(query, max_tokens=args.max_tokens)
        for message in ctx.messages:
            out.write(f"--- {message['role']}\n{message['content']}\n")
        out.write("--- ledger\n")
        out.write(json.dumps(ctx.ledger) + f"\ntotal {ctx.token_count} / {args.max_tokens}\n")
    finally:
        manager.close()
    return 0


def forget_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``agentmem forget --user U [--dry-run]``: a forgetting pass (no model needed)."""
    from agentmem.controller.forgetting import ForgettingPolicy

    if args.min_retention is not None and not 0 <= args.min_retention <= 1:
        msg = f"--min-retention must be between 0 and 1, got {args.min_retention!r}"
        raise ConfigurationError(msg)
    common.check_positive(args.max_age_days, "--max-age-days", integer=False)
    if args.max_memories is not None and args.max_memories < 0:
        msg = f"--max-memories must be 0 or more, got {args.max_memories!r}"
        raise ConfigurationError(msg)
    policy = ForgettingPolicy(
        min_retention=args.min_retention,
        max_age_days=args.max_age_days,
        max_memories=args.max_memories,
    )
    memory, _ = _reading(args)
    try:
        out.write(policy.apply(memory, dry_run=args.dry_run).to_text() + "\n")
    finally:
        memory.close()
    return 0


def export_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``agentmem export FILE --user U [--vectors] [--force]``: the memories as JSONL,
    lossless; ``--vectors`` adds each dense vector (loads the model) so an import needs none.
    An existing ``FILE`` is replaced only with ``--force``."""
    path = Path(args.file)
    check_output_file(path, "export file", force=args.force)
    memory, embedder = _reading(args)
    try:
        from agentmem.long_term import RecordFilter

        records = memory.all_records(RecordFilter(include_history=True))
        vectors: list[list[float]] = []
        if args.vectors:
            embedder.load()
            with ProgressBar(len(records), label="embed", unit="memories", stream=err) as bar:
                for start in range(0, len(records), BATCH):
                    batch = records[start : start + BATCH]
                    vectors += embedder.embed_documents([r.content for r in batch])
                    bar.advance(len(batch))
        with common.atomic_writer(path) as handle:
            for i, record in enumerate(records):
                if args.vectors:
                    line = record.model_dump(mode="json")
                    line["vector"] = vectors[i]
                    line["vector_model"] = embedder.model_name
                    handle.write(json.dumps(line, ensure_ascii=False) + "\n")
                else:
                    handle.write(record.model_dump_json() + "\n")
    finally:
        memory.close()
    with_vectors = " with their vectors" if args.vectors else ""
    out.write(f"exported {len(records)} memories of {args.user}{with_vectors} to {path}\n")
    return 0


def import_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``agentmem import FILE --user U``: memories from an export file (no model is loaded
    when every line carries its vector)."""
    user = common.check_user(args)
    path = Path(args.file)
    text = read_text(path, "export file")
    items = parse_memory_jsonl(
        path,
        text,
        user_id=user,
        model_name=DeferredEmbedder.model_name,
        dimension=common.DEFAULT_DIMENSION,
    )
    config = common.resolve_config(args)
    common.check_home(config)
    embedder = common.deferred_embedder(given=vectors_by_content(items))
    memory = common.open_long_term(config, user, embedder)
    try:
        if any(item.vector is None for item in items):
            embedder.load()
        records = [item.record for item in items]
        with ProgressBar(len(records), label="import", unit="memories", stream=err) as bar:
            for start in range(0, len(records), BATCH):
                memory.store_records(records[start : start + BATCH])
                bar.advance(len(records[start : start + BATCH]))
    finally:
        memory.close()
    out.write(f"imported {len(records)} memories into {user}\n")
    return 0


def ingest_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``agentmem ingest FILE --user U``: JSONL chat messages (appended to their sessions'
    logs and consolidated) or a LoCoMo-style file (one episodic memory per turn)."""
    from agentmem.controller.ownership import SessionOwners
    from agentmem.ingest import locomo_records, store_in_batches

    user = common.check_user(args)
    session = common.check_session(args.session)
    path = Path(args.file)
    text = read_text(path, "chat file")
    locomo = parse_locomo(path, text) if is_locomo(text) else None
    chats = None if locomo is not None else parse_chat_jsonl(path, text, default_session="")
    config = common.resolve_config(args)
    common.check_home(config)
    embedder = common.deferred_embedder()
    llm = common.llm_from_environment(err)
    if locomo is not None:
        # Turns go straight to long-term memory: no manager (its session store and token
        # counter cost seconds to open and are not used), so the model sets the pace.
        memory = common.open_long_term(config, user, embedder)
        try:
            # Every record is built (and checked) before the first one is written.
            records = []
            for index, sample in enumerate(locomo):
                try:
                    records += locomo_records(memory, sample.turns)
                except AgentMemError as exc:
                    msg = f"{path}: sample {index} ({sample.sample_id}): {exc}"
                    raise InvalidValueError(msg) from None
            embedder.load()
            with ProgressBar(len(records), label="ingest", unit="turns", stream=err) as bar:
                store_in_batches(memory, records, batch_size=BATCH, progress=bar.advance)
        finally:
            memory.close()
        out.write(f"ingested {len(records)} turns from {len(locomo)} LoCoMo conversations\n")
        return 0
    manager = common.open_manager(
        config, user, embedder, llm, session=session, consolidate_every_tokens=None
    )
    try:
        assert chats is not None
        sessions = {(s or manager.session_id): m for s, m in chats.items()}
        # Every session named in the file is checked (and claimed) before anything is written.
        owners = SessionOwners(manager.short_term.store)
        for session_id in sessions:
            owners.check(session_id, (user, None))
        embedder.load()
        count = sum(len(m) for m in sessions.values())
        written = 0
        with ProgressBar(count, label="ingest", unit="messages", stream=err) as bar:
            for session_id, messages in sessions.items():
                manager.short_term.store.append(session_id, messages)
                report = manager.consolidator.consolidate_session(messages, session_id=session_id)
                written += report.written
                bar.advance(len(messages))
        summary = (
            f"ingested {count} messages in {len(sessions)} sessions; {written} memories written"
        )
    finally:
        manager.close()
    out.write(summary + "\n")
    return 0


def assign_session_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``agentmem assign-session SESSION --user U [--agent A]``: an operator gives a session
    nobody owns (one of an earlier version that no user may claim) to its owner."""
    from agentmem._util.session_ids import validate_session_id
    from agentmem.backends import acquire_session_store
    from agentmem.controller.ownership import SessionOwners

    user = common.check_user(args)
    session = validate_session_id(args.session_id, what="SESSION")
    agent = None if args.agent is None else validate_session_id(args.agent, what="--agent")
    config = common.resolve_config(args)
    common.check_home(config)
    lease = acquire_session_store(config)
    try:
        SessionOwners(lease.value).assign(session, owner=(user, agent))
    finally:
        lease.release()
    who = user if agent is None else f"{user} (agent {agent})"
    out.write(f"session {session} belongs to {who}\n")
    return 0
