"""The command line's contract for user mistakes, output streams and startup weight.

* Every user mistake: exactly one line on stderr (``agentmem: ...`` naming the file and line,
  or the option or field, and the fix), exit status 1, nothing written, and no model loaded
  (torch is never imported on the way to the error).
* Commands that need no embeddings never import torch.
* Progress bars only on a terminal; otherwise stderr holds only the documented status lines.

Each case runs ``agentmem`` in a subprocess (through a tiny wrapper that also reports which
heavy modules were imported), exactly as a user would run it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentmem.cli.common import NO_LLM_STATUS
from agentmem.embeddings import ALL_MINILM_L6_V2
from agentmem.long_term import LongTermMemory
from tests.fake_embedder import HashingEmbedder
from tests.processes import run_python

pytestmark = pytest.mark.integration

# Runs the CLI, then writes the heavy modules that got imported to $MODULES_REPORT.
WRAPPER = """
import json, os, sys
from agentmem.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:  # argparse (--help, usage errors)
    code = exc.code
heavy = sorted(m for m in ("torch", "transformers", "sentence_transformers") if m in sys.modules)
with open(os.environ["MODULES_REPORT"], "w") as f:
    json.dump(heavy, f)
sys.exit(code)
"""


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    heavy: list[str]


def agentmem(tmp_path: Path, *args: str, home: Path | None = None) -> Run:
    """``agentmem --home HOME ARGS...`` in a subprocess, offline, run from ``tmp_path``."""
    report = tmp_path / "modules.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENTMEM_"))}
    env["MODULES_REPORT"] = str(report)
    home_args = ["--home", str(home)] if home is not None else []
    done = run_python("-c", WRAPPER, *home_args, *args, cwd=tmp_path, env=env)
    heavy = json.loads(report.read_text()) if report.exists() else ["<no report>"]
    return Run(done.returncode, done.stdout, done.stderr, heavy)


def tree(root: Path) -> set[str]:
    """Every file and directory under ``root`` (relative paths)."""
    return {str(p.relative_to(root)) for p in root.rglob("*")} if root.exists() else set()


def stand_in() -> HashingEmbedder:
    """Stands in for the command line's default model without loading it: the same identity
    (its name, no fingerprint), so the homes it writes open with the default model."""
    return HashingEmbedder(384, model_name=ALL_MINILM_L6_V2)


def vector(text: str) -> list[float]:
    return stand_in().vector(text)


@pytest.fixture(scope="module")
def alice_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home where alice has two memories (384-d vectors, no model needed)."""
    home = tmp_path_factory.mktemp("alice") / "home"
    memory = LongTermMemory.open(user_id="alice", home=home, embedder=stand_in())
    memory.store_memory("Alice indents Python with tabs", "semantic", subtype="preference")
    memory.store_memory("Alice's cat is called Miso", "semantic", subtype="fact")
    memory.close()
    return home


def count_memories(home: Path, user: str) -> int:
    memory = LongTermMemory.open(user_id=user, home=home, embedder=stand_in())
    try:
        return len(memory.all_records())
    finally:
        memory.close()


# -- the error table ---------------------------------------------------------------------


def _write(path: Path, data: bytes | str) -> Path:
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)
    return path


def bobs_file(command: str, name: str, data: bytes | str) -> Callable[[Path], list[str]]:
    """A case's ``make``: ``agentmem COMMAND FILE --user bob`` on the file ``name`` holding
    ``data``, written into the case's directory."""
    return lambda d: [command, str(_write(d / name, data)), "--user", "bob"]


CHAT_LINE = '{"role": "user", "content": "I indent with tabs"}\n'


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable[[Path], list[str]]  # builds the inputs in a directory, returns the args
    expect: tuple[str, ...]  # fragments of the one stderr line
    existing_home: bool = False  # run on alice's home instead of a fresh one


CASES = [
    Case(
        "ingest: missing file",
        lambda d: ["ingest", "chats.jsonl", "--user", "bob"],
        ("chats.jsonl: no such file", "check the path"),
    ),
    Case(
        "ingest: a directory",
        lambda d: ["ingest", str(d), "--user", "bob"],
        ("is a directory", "pass the chat file itself"),
    ),
    Case(
        "ingest: not UTF-8",
        bobs_file(
            "ingest",
            "latin1.jsonl",
            CHAT_LINE.encode() + b'{"role": "user", "content": "caf\xe9"}\n',
        ),
        ("latin1.jsonl:2: not UTF-8", "byte 0xe9 at column 33", "save the chat file as UTF-8"),
    ),
    Case(
        "ingest: malformed line",
        bobs_file("ingest", "chats.jsonl", CHAT_LINE * 2 + '{"role": "user", "content": \n'),
        ("chats.jsonl:3: not JSON", "one JSON object per line"),
    ),
    Case(
        "ingest: a line that is not a message",
        bobs_file("ingest", "chats.jsonl", CHAT_LINE + '{"role": "robot", "content": "x"}\n'),
        ("chats.jsonl:2: not a chat message", "unknown message role 'robot'"),
    ),
    Case(
        "ingest: LoCoMo turn without dia_id",
        bobs_file(
            "ingest",
            "locomo.json",
            json.dumps([{"conversation": {"session_1": [{"speaker": "Ann", "text": "Hi"}]}}]),
        ),
        ("locomo.json: sample 0 (0): conversation.session_1[0] has no 'dia_id'",),
    ),
    Case(
        "ingest: LoCoMo turn too long for one memory",
        bobs_file(
            "ingest",
            "locomo.json",
            json.dumps(
                [
                    {
                        "sample_id": "conv-9",
                        "conversation": {
                            "session_1": [
                                {"speaker": "Ann", "dia_id": "D1:1", "text": "x" * 40_000}
                            ]
                        },
                    }
                ]
            ),
        ),
        ("sample 0 (conv-9): conversation.session_1[0] makes a memory of 40,012 characters",),
    ),
    Case(
        "ingest: a lone surrogate in a message",
        bobs_file("ingest", "chats.jsonl", '{"role": "user", "content": "hi \\ud800"}\n'),
        ("chats.jsonl:1: not a chat message", "lone surrogate"),
    ),
    Case(
        "import: missing file",
        lambda d: ["import", "alice.jsonl", "--user", "bob"],
        ("alice.jsonl: no such file",),
    ),
    Case(
        "import: a directory",
        lambda d: ["import", str(d), "--user", "bob"],
        ("is a directory", "pass the export file itself"),
    ),
    Case(
        "import: not UTF-8",
        bobs_file("import", "dump.jsonl", b"\xff\xfe{}\n"),
        ("dump.jsonl:1: not UTF-8 (byte 0xff at column 1)",),
    ),
    Case(
        "import: wrong format (a chat file)",
        bobs_file("import", "chats.jsonl", CHAT_LINE),
        ("chats.jsonl:1: a chat message, not a memory record", "agentmem ingest"),
    ),
    Case(
        "import: wrong format (a LoCoMo file)",
        bobs_file("import", "locomo.json", "[]\n"),
        ("locomo.json is a JSON list", "agentmem ingest"),
    ),
    Case(
        "import: a record without its type",
        bobs_file("import", "dump.jsonl", '{"content": "tabs", "scope": {"user_id": "a"}}\n'),
        ("dump.jsonl:1: not a memory record: field 'memory_type' is missing",),
    ),
    Case(
        "import: a vector of another model",
        bobs_file(
            "import",
            "dump.jsonl",
            json.dumps(
                {
                    "content": "tabs",
                    "memory_type": "semantic",
                    "scope": {"user_id": "a"},
                    "vector": [0.0] * 384,
                    "vector_model": "text-embedding-3-small",
                }
            )
            + "\n",
        ),
        ("dump.jsonl:1: the vector was made by 'text-embedding-3-small'",),
    ),
    Case(
        "demo --max-tokens 0",
        lambda d: ["demo", "--max-tokens", "0"],
        ("--max-tokens 0 is too small", "pass --max-tokens 600"),
    ),
    Case(
        "context --max-tokens 0",
        lambda d: ["context", "tabs?", "--user", "alice", "--max-tokens", "0"],
        ("--max-tokens must be a whole number greater than 0, got 0",),
        existing_home=True,
    ),
    Case(
        "stats: unknown user",
        lambda d: ["stats", "--user", "nobody"],
        ("user 'nobody' has no memories in", "check --user"),
        existing_home=True,
    ),
    Case(
        "search: unknown user",
        lambda d: ["search", "tabs", "--user", "Alice"],
        ("user 'Alice' has no memories in", "ids are case-sensitive"),
        existing_home=True,
    ),
    Case(
        "stats: a home with no memories at all",
        lambda d: ["stats", "--user", "alice"],
        ("no memories in", "yet", "agentmem ingest FILE --user alice"),
    ),
    Case(
        "export: into a missing directory",
        lambda d: ["export", "nowhere/alice.jsonl", "--user", "alice"],
        ("directory nowhere does not exist",),
        existing_home=True,
    ),
    Case(
        "an invalid user id",
        lambda d: ["ingest", str(_write(d / "c.jsonl", CHAT_LINE)), "--user", "bob smith"],
        ("--user 'bob smith' contains characters outside",),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_user_mistake_is_one_stderr_line_exit_1_nothing_written_no_model(
    case: Case, tmp_path: Path, alice_home: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    args = case.make(work)
    home = alice_home if case.existing_home else tmp_path / "fresh-home"
    before_home, before_work = tree(home), tree(work)
    alice_before = count_memories(alice_home, "alice") if case.existing_home else None

    run = agentmem(work, *args, home=home)

    assert run.code == 1, run
    assert run.stdout == ""
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("agentmem: "), lines[0]
    for fragment in case.expect:
        assert fragment in lines[0], lines[0]
    assert run.heavy == [], f"loaded {run.heavy} before reporting the mistake"
    # Nothing written: no new file anywhere (Qdrant Edge may compact its own bookkeeping
    # files when a store is opened and closed; the memories themselves are unchanged).
    assert tree(work) - before_work == {"modules.json"} - before_work
    assert tree(home) <= before_home | {"long_term/agentmem.lock"}
    if case.existing_home:
        assert count_memories(alice_home, "alice") == alice_before
    else:
        assert not home.exists()


def test_argparse_usage_errors_exit_2(tmp_path: Path) -> None:
    run = agentmem(tmp_path, "stats")
    assert run.code == 2
    assert "the following arguments are required: --user" in run.stderr
    assert run.heavy == []


# -- no torch where no embedding is needed ----------------------------------------------


def test_import_agentmem_loads_no_torch() -> None:
    code = "import sys, agentmem, agentmem.cli; print(sorted(m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules))"
    done = run_python("-c", code, timeout=120, check=True)
    assert done.stdout.strip() == "[]"


def test_commands_that_need_no_embeddings_never_import_torch(
    tmp_path: Path, alice_home: Path
) -> None:
    for args in (
        ["--help"],
        ["stats", "--help"],
        ["stats", "--user", "alice"],
        ["forget", "--user", "alice", "--dry-run"],
        ["export", str(tmp_path / "alice.jsonl"), "--user", "alice"],
    ):
        run = agentmem(tmp_path, *args, home=alice_home)
        assert run.code == 0, run
        assert run.heavy == [], (args, run.heavy)
    stats = agentmem(tmp_path, "stats", "--user", "alice", home=alice_home).stdout
    assert "user alice: 2 memories (2 current)" in stats
    assert "semantic/preference" in stats
    assert "on disk (allocated; apparent size" in stats

    # An import whose records carry their vectors needs no model either.
    dump = tmp_path / "with-vectors.jsonl"
    lines = []
    for line in (tmp_path / "alice.jsonl").read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        data["vector"] = vector(data["content"])
        data["vector_model"] = ALL_MINILM_L6_V2
        lines.append(json.dumps(data))
    dump.write_text("\n".join(lines) + "\n", encoding="utf-8")
    other = tmp_path / "other-home"
    run = agentmem(tmp_path, "import", str(dump), "--user", "alice", home=other)
    assert (run.code, run.heavy, run.stderr) == (0, [], "")
    assert run.stdout == "imported 2 memories into alice\n"
    assert count_memories(other, "alice") == 2


def test_importing_another_users_export_gives_new_ids_and_repeats_idempotently(
    tmp_path: Path, alice_home: Path
) -> None:
    dump = tmp_path / "alice.jsonl"
    assert agentmem(tmp_path, "export", str(dump), "--user", "alice", home=alice_home).code == 0
    rows = [json.loads(line) for line in dump.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        row.update(vector=vector(row["content"]), vector_model=ALL_MINILM_L6_V2)
    dump.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    home = tmp_path / "shared-home"
    for user in ("alice", "bob", "bob"):  # bob twice: the second import replaces the first
        run = agentmem(tmp_path, "import", str(dump), "--user", user, home=home)
        assert run.code == 0, run.stderr
    memory = LongTermMemory.open(user_id="bob", home=home, embedder=stand_in())
    try:
        bob = memory.all_records()
    finally:
        memory.close()
    assert sorted(r.content for r in bob) == sorted(r["content"] for r in rows)
    assert not {r.id for r in bob} & {r["id"] for r in rows}
    assert count_memories(home, "alice") == 2


# -- output streams ----------------------------------------------------------------------


def test_ingest_off_a_terminal_writes_only_the_status_line_to_stderr(tmp_path: Path) -> None:
    chats = tmp_path / "chats.jsonl"
    chats.write_text(
        '{"session_id": "a", "role": "user", "content": "I prefer tabs."}\n'
        '{"session_id": "a", "role": "assistant", "content": "Noted."}\n',
        encoding="utf-8",
    )
    run = agentmem(tmp_path, "ingest", str(chats), "--user", "bob", home=tmp_path / "home")
    assert run.code == 0, run.stderr
    assert run.stderr == NO_LLM_STATUS + "\n"
    assert run.stdout == "ingested 2 messages in 1 sessions; 1 memories written\n"
