"""The ``agentmem`` command line.

Commands (each honours ``--home`` / ``AGENTMEM_HOME``)::

    agentmem demo                         two scripted sessions, offline, embedded defaults
    agentmem ingest FILE --user U         JSONL chat messages or a LoCoMo-style file
    agentmem search QUERY --user U        long-term search (--explain for score parts)
    agentmem context QUERY --user U       the packed prompt and its token ledger
    agentmem forget --user U [--dry-run]  a forgetting pass
    agentmem stats --user U               memories by type, disk use (allocated blocks)
    agentmem export FILE --user U         memories as JSONL (lossless; --vectors adds vectors)
    agentmem import FILE --user U         memories from such a file
    agentmem backup DEST                  a verified copy of the home (a new directory)
    agentmem restore SRC [--force]        a backup into the home, verified first
    agentmem repair [--accept-loss]       check the home; keep what can be read

Output: results go to stdout. stderr carries only

* one status line from the commands that can use an LLM (``demo``, ``ingest``, ``context``):
  ``No LLM configured (set OPENAI_API_KEY or OPENAI_BASE_URL to use one): no summaries;
  conversation rounds are stored as episodes.`` or ``LLM: <model> via OpenAI-compatible API.``
  (an LLM is used when ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` is set; model from
  ``AGENTMEM_MODEL``, default ``gpt-4o-mini``);
* on a terminal only: a progress bar with rate and ETA for long work (``ingest``, ``import``,
  ``export --vectors``) and a transient line while the embedding model loads;
* errors: one line, ``agentmem: <what is wrong and how to fix it>``; warnings the library
  logs (under the ``agentmem`` logger) likewise, as ``agentmem: warning: ...``.

Exit status: 0 on success; 1 for a mistake in a file, a value or the data (a missing or
unreadable file, a malformed line, an unknown user, ``--max-tokens 0``, a locked store...),
reported before any model loads and before anything is written; 2 for a command line
argparse cannot parse; 130 when interrupted.

Only ``demo``, ``ingest``, ``search``, ``context``, ``export --vectors`` and an ``import`` of
records without vectors load the embedding model (torch); the others never import it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from agentmem._lazy import load_module
from agentmem.errors import AgentMemError

__all__ = ["main"]

Command = Callable[[argparse.Namespace, TextIO, TextIO], int]


def _deferred(module: str, name: str) -> Command:
    """A command whose module is imported only when it runs, so ``--help`` and usage
    errors import nothing but argparse and the error hierarchy."""

    def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
        command: Command = getattr(load_module(module), name)
        return command(args, out, err)

    return run


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentmem",
        description="Tiered memory for LLM agents.",
        epilog="Results go to stdout; status lines, progress and errors to stderr.",
    )
    parser.add_argument("--home", help="data directory (default: $AGENTMEM_HOME or per-user dir)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, module: str, func: str, help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help)
        p.set_defaults(func=_deferred(f"agentmem.{module}", func))
        required = name != "demo"
        p.add_argument(
            "--user",
            required=required,
            default=None if required else "demo-user",
            help="whose memories (ids: A-Z a-z 0-9 _ . : @ -)",
        )
        return p

    cmds = "_cli_commands"
    demo = command("demo", "_cli_demo", "demo_command", "two scripted sessions, offline")
    demo.add_argument("--max-tokens", type=int, default=600, help="budget of the context")
    ingest = command(
        "ingest", cmds, "ingest_command", "ingest JSONL chat messages or a LoCoMo-style file"
    )
    ingest.add_argument("file", help="JSONL (one message per line) or LoCoMo-style JSON")
    ingest.add_argument("--session", help="session id for JSONL messages without one")
    search = command("search", cmds, "search_command", "search long-term memories")
    search.add_argument("query")
    search.add_argument("--top-k", type=int, default=5)
    search.add_argument("--mode", choices=["hybrid", "dense", "bm25"], default=None)
    search.add_argument("--history", action="store_true", help="include superseded memories")
    search.add_argument("--explain", action="store_true", help="show each part of the score")
    context = command("context", cmds, "context_command", "show the packed prompt for a query")
    context.add_argument("query")
    context.add_argument("--session", help="resume this session's conversation")
    context.add_argument("--max-tokens", type=int, default=2000)
    forget = command("forget", cmds, "forget_command", "run a forgetting pass")
    forget.add_argument("--dry-run", action="store_true", help="report, delete nothing")
    forget.add_argument("--min-retention", type=float, default=0.05)
    forget.add_argument("--max-age-days", type=float, default=None)
    forget.add_argument("--max-memories", type=int, default=None)
    command("stats", "_cli_stats", "stats_command", "memories by type and disk use")
    export = command("export", cmds, "export_command", "export memories as JSONL")
    export.add_argument("file", help="the JSONL file to write (replaced only when complete)")
    export.add_argument(
        "--vectors",
        action="store_true",
        help="add each memory's vector (loads the model) so importing needs no model",
    )
    imp = command("import", cmds, "import_command", "import memories from an export file")
    imp.add_argument(
        "file", help="a file written by `agentmem export` (with --vectors: no model needed)"
    )
    _backup_commands(sub)
    return parser


def _backup_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``backup``, ``restore`` and ``repair`` (agentmem._cli_backup): no --user; --home
    also after the command."""
    module = "agentmem._cli_backup"
    here = {"default": argparse.SUPPRESS, "help": "data directory (as before the command)"}
    backup = sub.add_parser("backup", help="copy the home into DEST, verified")
    backup.set_defaults(func=_deferred(module, "backup_command"))
    backup.add_argument("dest", help="a new (or empty) directory")
    restore = sub.add_parser("restore", help="restore a backup into --home, verified first")
    restore.set_defaults(func=_deferred(module, "restore_command"))
    restore.add_argument("src", help="a directory written by `agentmem backup`")
    restore.add_argument("--force", action="store_true", help="replace the stores in the home")
    repair = sub.add_parser("repair", help="check the home; --accept-loss keeps what is readable")
    repair.set_defaults(func=_deferred(module, "repair_command"))
    repair.add_argument(
        "--accept-loss", action="store_true", help="rebuild damaged stores, listing what is lost"
    )
    for parser in (backup, restore, repair):
        parser.add_argument("--home", **here)  # type: ignore[arg-type]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``agentmem`` command; returns the exit status.

    Example:
        >>> import tempfile
        >>> main(["--home", tempfile.mkdtemp(), "stats", "--user", "nobody"])  # nothing there
        1
    """
    args = _parser().parse_args(argv)
    from agentmem._cli_log import library_warnings_as_lines, one_line

    out, err = sys.stdout, sys.stderr
    try:
        with library_warnings_as_lines(err):
            return int(args.func(args, out, err))
    except AgentMemError as exc:
        err.write(f"agentmem: {one_line(str(exc))}\n")
    except OSError as exc:  # e.g. the disk filled up while writing an export
        where = f" {exc.filename}" if exc.filename else ""
        err.write(f"agentmem: cannot access{where}: {exc.strerror or exc}\n")
    except KeyboardInterrupt:
        err.write("\nagentmem: interrupted\n")
        return 130
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
