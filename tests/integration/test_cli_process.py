"""The command line as a Unix process: pipes, a home another process holds, overwriting,
and help that says what each option does.

Behaviour that belongs to the process (exit status, a closed pipe, another process holding
the home) runs ``agentmem`` in a subprocess; help text is read through ``main``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentmem.cli import main
from tests.integration.test_cli_errors import agentmem, alice_home

pytestmark = pytest.mark.integration

__all__ = ["alice_home"]  # the fixture, shared with the error-table tests

COMMANDS = ["demo", "ingest", "search", "context", "forget", "stats", "export", "import"]


def into_closed_pipe(*args: str) -> subprocess.CompletedProcess[str]:
    """``agentmem ARGS`` with stdout a pipe whose reader has gone (as ``| head -1`` leaves
    it once ``head`` exits): every write to it fails with EPIPE."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [sys.executable, "-m", "agentmem.cli", *args],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
            check=False,
        )
    finally:
        os.close(write)


@pytest.mark.parametrize(
    "args", [["stats", "--user", "alice"], ["--help"], ["search", "--help"]], ids=" ".join
)
def test_a_closed_pipe_ends_quietly_with_status_0(alice_home: Path, args: list[str]) -> None:
    done = into_closed_pipe("--home", str(alice_home), *args)
    assert (done.returncode, done.stderr) == (0, "")


def test_stats_piped_into_head_prints_its_first_line(alice_home: Path) -> None:
    done = subprocess.run(
        f"set -o pipefail; {sys.executable} -m agentmem.cli --home {alice_home} "
        "stats --user alice | head -1",
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("user alice: 2 memories")


def test_a_home_held_by_another_process_gets_advice_for_the_command_line(
    tmp_path: Path, alice_home: Path
) -> None:
    holder = textwrap.dedent(
        f"""
        import sys
        from agentmem import LongTermMemory
        from tests.fake_embedder import HashingEmbedder
        from agentmem.embeddings import ALL_MINILM_L6_V2
        memory = LongTermMemory.open(user_id="alice", home={str(alice_home)!r},
                                     embedder=HashingEmbedder(384, model_name=ALL_MINILM_L6_V2))
        print("holding", flush=True)
        sys.stdin.read()
        memory.close()
        """
    )
    process = subprocess.Popen(
        [sys.executable, "-c", holder], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == "holding\n"
        run = agentmem(tmp_path, "stats", "--user", "alice", home=alice_home)
    finally:
        process.communicate("", timeout=60)
    assert (run.code, run.stdout) == (1, "")
    [line] = run.stderr.splitlines()
    assert line.startswith(f"agentmem: the memories in {alice_home} are in use by another")
    for advice in ("Stop that process", "--home", "AGENTMEM_MEMORY_URL", "--session-url"):
        assert advice in line
    for library_advice in ("MemoryService", "qdrant_url=", "store object"):
        assert library_advice not in line
    # Once the other process is gone, the same command works.
    assert agentmem(tmp_path, "stats", "--user", "alice", home=alice_home).code == 0


def test_export_never_overwrites_a_file_without_force(tmp_path: Path, alice_home: Path) -> None:
    dump = tmp_path / "alice.jsonl"
    dump.write_text("my notes\n", encoding="utf-8")
    refused = agentmem(tmp_path, "export", str(dump), "--user", "alice", home=alice_home)
    assert refused.code == 1
    assert (
        refused.stderr
        == f"agentmem: {dump} exists already; pass --force to replace it, or choose another path\n"
    )
    assert dump.read_text(encoding="utf-8") == "my notes\n"  # untouched
    forced = agentmem(tmp_path, "export", str(dump), "--user", "alice", "--force", home=alice_home)
    assert forced.code == 0, forced.stderr
    rows = [json.loads(line) for line in dump.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 2
    assert {r["content"] for r in rows} == {
        "Alice indents Python with tabs",
        "Alice's cat is called Miso",
    }


def help_of(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    with pytest.raises(SystemExit) as stopped:
        main([*args, "--help"])
    assert stopped.value.code == 0
    return capsys.readouterr().out


def option_entries(help_text: str) -> dict[str, str]:
    """Each argument of a help text (``options:`` and ``positional arguments:``) and what
    its help says (the text after its name, wrapped lines joined)."""
    entries: dict[str, str] = {}
    current = None
    for line in help_text.splitlines():
        if not line.startswith("  ") or not line.strip():
            current = None  # a section title, a blank line, or the epilog
            continue
        if re.match(r"^  \S", line):
            name, _, text = line.strip().partition("  ")
            current = name
            entries[current] = text.strip()
        elif current is not None and re.match(r"^ {4,}\S", line):
            entries[current] = f"{entries[current]} {line.strip()}".strip()
    return entries


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_every_option_says_what_it_does_and_its_default(
    capsys: pytest.CaptureFixture[str], command: str | None
) -> None:
    text = help_of(capsys, *([command] if command else []))
    entries = option_entries(text.split("file formats:")[0])
    entries.pop("-h, --help")
    if command is None:
        entries = {k: v for k, v in entries.items() if k != "COMMAND"}
        entries = {k: v for k, v in entries.items() if not k.startswith(tuple(COMMANDS))}
    assert entries, text
    for name, says in entries.items():
        assert len(says.split()) >= 3, f"{command} {name}: {says!r}"
        if name.startswith("-"):
            assert "default" in says or "required" in says, f"{command} {name}: {says!r}"


def test_ingest_help_shows_the_line_format_and_it_works(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = help_of(capsys, "ingest")
    jsonl, locomo = text.split("file formats:")[1].split("LoCoMo-style JSON")
    for field in ("role", "content", "session_id", "timestamp", "tool_calls", "metadata"):
        assert field in jsonl
    examples = [line.strip() for line in jsonl.splitlines() if line.strip().startswith("{")]
    assert [json.loads(e)["role"] for e in examples] == ["user", "assistant"]
    # The examples shown are files that ingest takes as they are.
    home = str(tmp_path / "home")
    chat = tmp_path / "chat.jsonl"
    chat.write_text("\n".join(examples) + "\n", encoding="utf-8")
    assert main(["--home", home, "ingest", str(chat), "--user", "ann"]) == 0
    assert "ingested 2 messages in 1 sessions" in capsys.readouterr().out
    sample = "".join(line.strip() for line in locomo.splitlines() if line.strip()[:1] in "[{")
    conversation = tmp_path / "locomo.json"
    conversation.write_text(sample, encoding="utf-8")
    assert main(["--home", home, "ingest", str(conversation), "--user", "ann"]) == 0
    assert "ingested 1 turns from 1 LoCoMo conversations" in capsys.readouterr().out
