"""The ``agentmem`` command line.

Commands (each honours ``--home`` / ``AGENTMEM_HOME``, and ``--memory-url`` /
``--session-url``, the store URLs of :mod:`agentmem.backends`)::

    agentmem demo                         two scripted sessions, offline, embedded defaults
    agentmem ingest FILE --user U         JSONL chat messages or a LoCoMo-style file
    agentmem search QUERY --user U        long-term search (--explain for score parts)
    agentmem context QUERY --user U       the packed prompt and its token ledger
    agentmem forget --user U [--dry-run]  a forgetting pass
    agentmem stats --user U               memories by type, disk use (allocated blocks)
    agentmem export FILE --user U         memories as JSONL (lossless; --vectors adds vectors;
                                          an existing FILE is replaced only with --force)
    agentmem import FILE --user U         memories from such a file
    agentmem inspect [--port P]           browse the memories in a local web page
    agentmem backup DEST                  a verified copy of the home (a new directory)
    agentmem restore SRC [--force]        a backup into the home, verified first
    agentmem repair [--accept-loss]       check the home; keep what can be read
    agentmem reembed [--model DIR]        re-embed every memory with a new model (resumable)

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

Exit status: 0 on success, and when the reader of stdout goes away (``agentmem stats | head
-1``: the command stops quietly, as Unix tools do); 1 for a mistake in a file, a value or the
data (a missing or unreadable file, a malformed line, an unknown user, ``--max-tokens 0``, an
export file that exists, a home another process holds...), reported before any model loads
and before anything is written; 2 for a command line argparse cannot parse; 130 when
interrupted.

A home another process holds (the embedded stores allow one process at a time) is reported
with what to stop, or the server settings (``AGENTMEM_MEMORY_URL``, ``AGENTMEM_SESSION_URL``)
that let several processes share memories.

Only ``demo``, ``ingest``, ``search``, ``context``, ``reembed``, ``export --vectors`` and an
``import`` of records without vectors load the embedding model (torch); ``inspect`` loads it
when one of its pages searches; the others never import it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from agentmem._util.lazy import load_module
from agentmem.errors import AgentMemError, StoreLockedError

__all__ = ["main"]

Command = Callable[[argparse.Namespace, TextIO, TextIO], int]


def _deferred(module: str, name: str) -> Command:
    """A command whose module is imported only when it runs, so ``--help`` and usage
    errors import nothing but argparse and the error hierarchy."""

    def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
        command: Command = getattr(load_module(module), name)
        return command(args, out, err)

    return run


INGEST_FORMATS = """\
file formats:
  JSONL, one chat message per line (blank lines are skipped):
    {"role": "user", "content": "I indent Python with tabs", "session_id": "chat-1"}
    {"role": "assistant", "content": "Noted.", "session_id": "chat-1"}
  role (user, assistant, system or tool) and content are required; optional: session_id
  (default: --session, else one new session), name, timestamp (ISO 8601), tool_calls,
  tool_call_id (on tool messages), metadata (an object). Each session's messages are
  appended to its conversation and consolidated into long-term memory.

  LoCoMo-style JSON, one list of samples:
    [{"sample_id": "s1", "conversation": {"session_1": [
        {"dia_id": "D1:1", "speaker": "Ann", "text": "I moved to Oslo"}]}}]
  each turn becomes one episodic memory.
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentmem",
        description="Tiered memory for LLM agents.",
        epilog="Results go to stdout; status lines, progress and errors to stderr.",
    )
    parser.add_argument(
        "--home",
        help="data directory of the memories (default: $AGENTMEM_HOME, else the per-user "
        "data directory, ~/.local/share/agentmem on Linux); --memory-url and --session-url "
        "name other stores",
    )
    parser.add_argument(
        "--memory-url",
        metavar="URL",
        help="long-term memory store, e.g. qdrant+http://localhost:6333 (default: "
        "$AGENTMEM_MEMORY_URL, else Qdrant Edge in the home: edge://HOME/long_term)",
    )
    parser.add_argument(
        "--session-url",
        metavar="URL",
        help="session store, e.g. redis://localhost:6379/0 (default: $AGENTMEM_SESSION_URL, "
        "else SQLite in the home: sqlite://HOME/sessions.db)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(
        name: str, module: str, func: str, help: str, epilog: str | None = None
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(
            name,
            help=help,
            description=help,
            epilog=epilog,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        p.set_defaults(func=_deferred(f"agentmem.cli.{module}", func))
        required = name not in ("demo", "inspect")
        p.add_argument(
            "--user",
            required=required,
            default="demo-user" if name == "demo" else None,
            help="whose memories (ids: A-Z a-z 0-9 _ . : @ -; "
            + (
                "required)"
                if required
                else "default: demo-user)"
                if name == "demo"
                else "default: every user)"
            ),
        )
        return p

    cmds = "commands"
    demo = command("demo", "demo", "demo_command", "two scripted sessions, offline")
    demo.add_argument(
        "--max-tokens",
        type=int,
        default=600,
        help="token budget of the prompt built in session two (default: %(default)s)",
    )
    ingest = command(
        "ingest",
        cmds,
        "ingest_command",
        "ingest JSONL chat messages or a LoCoMo-style file",
        epilog=INGEST_FORMATS,
    )
    ingest.add_argument(
        "file", help="JSONL (one message per line) or LoCoMo-style JSON (formats below)"
    )
    ingest.add_argument(
        "--session",
        help="session id of the JSONL messages that name none (default: a new session id)",
    )
    search = command("search", cmds, "search_command", "search long-term memories")
    search.add_argument("query", help="what to search for, e.g. 'tabs or spaces?'")
    search.add_argument(
        "--top-k", type=int, default=5, help="most memories to show (default: %(default)s)"
    )
    search.add_argument(
        "--mode",
        choices=["hybrid", "dense", "bm25"],
        default=None,
        help="hybrid (dense and keyword search fused), dense (embeddings only) or bm25 "
        "(keywords only) (default: hybrid)",
    )
    search.add_argument(
        "--history",
        action="store_true",
        help="include superseded memories (default: current ones only)",
    )
    search.add_argument(
        "--explain",
        action="store_true",
        help="show each part of each score (default: the score only)",
    )
    context = command("context", cmds, "context_command", "show the packed prompt for a query")
    context.add_argument("query", help="the user's next message the prompt is built for")
    context.add_argument(
        "--session",
        help="resume this session's conversation (default: a new, empty session)",
    )
    context.add_argument(
        "--max-tokens",
        type=int,
        default=2000,
        help="token budget of the whole prompt (default: %(default)s)",
    )
    forget = command("forget", cmds, "forget_command", "run a forgetting pass")
    forget.add_argument(
        "--dry-run",
        action="store_true",
        help="report what would be forgotten, delete nothing (default: delete)",
    )
    forget.add_argument(
        "--min-retention",
        type=float,
        default=0.05,
        help="forget memories whose retention (0-1: it halves every 30 days unused, slower "
        "for important or often used ones) is below this (default: %(default)s)",
    )
    forget.add_argument(
        "--max-age-days",
        type=float,
        default=None,
        help="also forget memories unused for more days than this, except important ones "
        "(default: no age limit)",
    )
    forget.add_argument(
        "--max-memories",
        type=int,
        default=None,
        help="keep at most this many memories, forgetting the lowest retention first "
        "(default: no limit)",
    )
    command("stats", "stats", "stats_command", "memories by type and disk use")
    export = command("export", cmds, "export_command", "export memories as JSONL")
    export.add_argument(
        "file",
        help="the JSONL file to write (written to a temporary file, renamed when complete)",
    )
    export.add_argument(
        "--vectors",
        action="store_true",
        help="add each memory's vector (loads the model) so importing needs no model "
        "(default: no vectors)",
    )
    export.add_argument(
        "--force",
        action="store_true",
        help="replace FILE if it exists (default: refuse to overwrite it)",
    )
    imp = command("import", cmds, "import_command", "import memories from an export file")
    imp.add_argument(
        "file", help="a file written by `agentmem export` (with --vectors: no model needed)"
    )
    inspect = command(
        "inspect", "inspect", "inspect_command", "browse the memories in a local web page"
    )
    # Also after the command (`agentmem inspect --home H`); SUPPRESS keeps the global one.
    inspect.add_argument(
        "--home",
        default=argparse.SUPPRESS,
        help="data directory (default: the global --home, else $AGENTMEM_HOME)",
    )
    inspect.add_argument(
        "--host", default="127.0.0.1", help="interface to bind (default: %(default)s)"
    )
    inspect.add_argument("--port", type=int, default=0, help="port (default: any free one)")
    inspect.add_argument(
        "--no-browser", action="store_true", help="only print the URL (default: open a browser)"
    )
    inspect.add_argument(
        "--allow-edits", action="store_true", help="allow forgetting, pinning, correcting"
    )
    assign = command(
        "assign-session",
        cmds,
        "assign_session_command",
        "give a session nobody owns to --user (an operator's decision)",
        epilog=ASSIGN_EPILOG,
    )
    assign.add_argument("session_id", metavar="SESSION", help="the session id")
    assign.add_argument("--agent", help="the owner's agent id, if it used one (default: none)")
    _backup_commands(sub)
    _reembed_command(sub)
    return parser


def _backup_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``backup``, ``restore`` and ``repair`` (agentmem.cli.backup): no --user; --home
    also after the command."""
    module = "agentmem.cli.backup"
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


ASSIGN_EPILOG = """\
A session belongs to the user who first used it. A session written by an earlier agentmem
has no owner record; one whose consolidation watermark cannot say whose it is (an owner id
with ':', an agent id '-') is refused to every user, its owner included. This command, run
by whoever runs the stores, makes --user (and --agent) its owner and keeps that user's
earlier watermark. It takes only a session nobody owns that holds that watermark.
"""


REEMBED_HELP = "re-embed every memory with a new embedding model (resumable)"
REEMBED_EPILOG = """\
Run it after changing the embedding model: a home records which model made its vectors
and refuses another one of the same size. Without --model it re-embeds with the default
model (all-MiniLM-L6-v2). The run can be interrupted (Ctrl-C, a crash, kill -9) at any
point: run the same command again and it finishes where it stopped. Until it has finished,
the home refuses to open with either model.
"""


def _reembed_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``reembed`` (agentmem.cli.reembed): no --user; --home also after the command."""
    parser = sub.add_parser(
        "reembed",
        help=REEMBED_HELP,
        description=REEMBED_HELP,
        epilog=REEMBED_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(func=_deferred("agentmem.cli.reembed", "reembed_command"))
    parser.add_argument(
        "--home", default=argparse.SUPPRESS, help="data directory (as before the command)"
    )
    parser.add_argument(
        "--model",
        help="a local sentence-transformers model directory (default: the packaged "
        "all-MiniLM-L6-v2); its weights' sha256 is recorded with the vectors",
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=64,
        help="memories embedded and saved per step (default: %(default)s)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``agentmem`` command; returns the exit status.

    Example:
        >>> import tempfile
        >>> main(["--home", tempfile.mkdtemp(), "stats", "--user", "nobody"])  # nothing there
        1
    """
    out, err = sys.stdout, sys.stderr
    try:
        try:
            code = _run(argv, out, err)
        finally:
            out.flush()  # a closed pipe shows here, not at exit (also after --help)
    except BrokenPipeError:
        # The reader went away (`agentmem stats | head -1`): stop quietly with status 0, as
        # Unix tools do. Python flushes stdout again at exit; point it at devnull first.
        _discard_output(out)
        return 0
    return code


def _run(argv: Sequence[str] | None, out: TextIO, err: TextIO) -> int:
    """Parse the command line and run the command; user mistakes become one stderr line."""
    args = _parser().parse_args(argv)
    from agentmem.cli.log import library_warnings_as_lines, one_line

    try:
        with library_warnings_as_lines(err):
            return int(args.func(args, out, err))
    except StoreLockedError:
        err.write(f"agentmem: {_home_in_use(args)}\n")
    except AgentMemError as exc:
        err.write(f"agentmem: {one_line(str(exc))}\n")
    except BrokenPipeError:
        raise  # not a mistake of the user's: see main
    except OSError as exc:  # e.g. the disk filled up while writing an export
        where = f" {exc.filename}" if exc.filename else ""
        err.write(f"agentmem: cannot access{where}: {exc.strerror or exc}\n")
    except KeyboardInterrupt:
        err.write("\nagentmem: interrupted\n")
        return 130
    return 1


def _discard_output(out: TextIO) -> None:
    """Send what is left of ``out`` (a closed pipe) to devnull."""
    try:
        fd = out.fileno()
    except (OSError, ValueError):  # not a real file (a test's capture)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def _home_in_use(args: argparse.Namespace) -> str:
    """The message for a home another process holds, worded for the command line."""
    from agentmem.cli.common import resolve_config

    home = resolve_config(args).home
    return (
        f"the memories in {home} are in use by another process: one process at a time may "
        "open a home. Stop that process (an agent, a notebook kernel or another agentmem "
        "command using this home) and run the command again, or pass another --home. To "
        "share memories between processes, run them on servers: set AGENTMEM_MEMORY_URL "
        "(qdrant+http://...) and AGENTMEM_SESSION_URL (redis://...), or pass --memory-url "
        "and --session-url"
    )
