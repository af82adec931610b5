"""The command line's private parts, offline: progress bar, deferred embedder, input
parsing, disk usage."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from agentmem.cli.common import DEFAULT_DIMENSION, disk_usage, format_bytes
from agentmem.cli.embedder import DeferredEmbedder
from agentmem.cli.input import parse_chat_jsonl, parse_memory_jsonl, read_text
from agentmem.cli.progress import ProgressBar, TransientStatus
from agentmem.errors import InvalidValueError


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def frames(stream: io.StringIO) -> list[str]:
    return [f for f in stream.getvalue().split("\r") if f]


def test_progress_bar_shows_count_rate_and_eta_on_a_terminal() -> None:
    out, clock = Tty(), Clock()
    with ProgressBar(1000, label="ingest", unit="turns", stream=out, clock=clock, width=80) as bar:
        clock.now += 4
        bar.advance(200)
        clock.now += 0.05
        bar.advance(10)  # within 0.1 s of the last draw: not redrawn
        clock.now += 1
        bar.advance(290)
        clock.now += 0.01
        bar.advance(5)  # not drawn now, but by close()
    drawn = frames(out)
    assert drawn[0].startswith("ingest |")
    assert "   0/1,000 turns   0%  0.0/s  ETA ?" in drawn[0]
    assert " 200/1,000 turns  20%  50.0/s  ETA 0:16" in drawn[1]
    assert " 500/1,000 turns  50%  99.0/s  ETA 0:05" in drawn[2]
    assert " 505/1,000 turns  50%" in drawn[3]
    assert len(drawn) == 4  # close() draws the last state, then a newline
    assert drawn[-1].endswith("\n")
    assert all(len(f.rstrip("\n")) <= 80 for f in drawn)


def test_progress_bar_at_the_end_reports_the_elapsed_time() -> None:
    out, clock = Tty(), Clock()
    with ProgressBar(3, label="import", unit="memories", stream=out, clock=clock) as bar:
        clock.now += 65
        bar.advance(3)
    assert frames(out)[-1].rstrip("\n").endswith("3/3 memories 100%  0.0/s  in 1:05")


def test_nothing_is_drawn_off_a_terminal() -> None:
    out = io.StringIO()
    with ProgressBar(10, label="ingest", unit="turns", stream=out) as bar:
        bar.advance(10)
    with TransientStatus("loading", stream=out):
        pass
    assert out.getvalue() == ""


def test_transient_status_is_erased_on_a_terminal() -> None:
    out = Tty()
    with TransientStatus("loading the embedding model", stream=out):
        assert out.getvalue() == "\rloading the embedding model…"
    assert out.getvalue().endswith("\r\033[K")


def test_deferred_embedder_never_loads_for_given_vectors(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse() -> None:
        raise AssertionError("the model must not load")

    monkeypatch.setattr("agentmem.embeddings.local.default_embedder", refuse)
    embedder = DeferredEmbedder(given={"a": [1.0] * 384, "b": [2.0] * 384})
    assert embedder.dimension == DEFAULT_DIMENSION == 384
    assert [v[0] for v in embedder.embed_documents(["b", "a", "b"])] == [2.0, 1.0, 2.0]
    assert not embedder.loaded
    with pytest.raises(AssertionError, match="must not load"):
        embedder.embed_documents(["c"])


def test_read_text_strips_a_byte_order_mark_and_refuses_empty_files(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"role": "user", "content": "hi"}\n')
    assert read_text(path, "chat file").startswith("{")
    path.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(InvalidValueError, match=r"x.jsonl is empty; the chat file needs"):
        read_text(path, "chat file")


def test_chat_lines_group_by_session_and_skip_blank_lines(tmp_path: Path) -> None:
    text = "\n".join(
        [
            json.dumps({"session_id": "a", "role": "user", "content": "1"}),
            "",
            json.dumps({"role": "user", "content": "2"}),
            json.dumps({"session_id": "a", "role": "assistant", "content": "3"}),
        ]
    )
    sessions = parse_chat_jsonl(tmp_path / "c.jsonl", text, default_session="main")
    assert {k: [m.content for m in v] for k, v in sessions.items()} == {
        "a": ["1", "3"],
        "main": ["2"],
    }
    with pytest.raises(InvalidValueError, match=r"c.jsonl:1: not a chat message: session_id"):
        parse_chat_jsonl(
            tmp_path / "c.jsonl",
            '{"session_id": "a b", "role": "user", "content": "x"}',
            default_session="m",
        )
    with pytest.raises(InvalidValueError, match=r"c.jsonl:1: a JSON list, not an object"):
        parse_chat_jsonl(tmp_path / "c.jsonl", "[1, 2]", default_session="m")


def test_import_lines_are_checked_like_new_memories(tmp_path: Path) -> None:
    path = tmp_path / "dump.jsonl"

    def parse(row: dict[str, object]) -> None:
        parse_memory_jsonl(path, json.dumps(row), user_id="bob", model_name="m", dimension=3)

    base = {"content": "tabs", "memory_type": "semantic", "scope": {"user_id": "a"}}
    with pytest.raises(InvalidValueError, match=r"dump\.jsonl:1: memory content is"):
        parse({**base, "content": "x" * 100_000})
    with pytest.raises(InvalidValueError, match="field 'memory_type': Input should be"):
        parse({**base, "memory_type": "dream"})
    with pytest.raises(InvalidValueError, match="'vector' must be a list of 3 finite numbers"):
        parse({**base, "vector": [1.0, float("nan"), 0.0], "vector_model": "m"})
    with pytest.raises(InvalidValueError, match="'vector_model' without a 'vector'"):
        parse({**base, "vector_model": "m"})
    with pytest.raises(InvalidValueError, match="space"):
        parse({**base, "scope": {"user_id": "a", "space": "langgraph"}})
    (item,) = parse_memory_jsonl(
        path,
        json.dumps({**base, "vector": [1, 0, 0], "vector_model": "m"}),
        user_id="bob",
        model_name="m",
        dimension=3,
    )
    assert (item.record.scope.user_id, item.vector) == ("bob", (1.0, 0.0, 0.0))


def test_disk_usage_counts_allocated_blocks_and_hard_links_once(tmp_path: Path) -> None:
    with open(tmp_path / "sparse", "wb") as f:
        f.seek(100_000_000)
        f.write(b"x")
    (tmp_path / "data").write_bytes(b"y" * 100_000)
    os.link(tmp_path / "data", tmp_path / "link")
    allocated, apparent = disk_usage(tmp_path)
    assert apparent > 100_100_000
    assert 100_000 <= allocated < 1_000_000
    assert format_bytes(allocated).endswith("KB")


def test_library_warnings_become_one_line_on_stderr_during_a_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import logging

    from agentmem.cli import main
    from agentmem.cli import stats as _cli_stats

    def stats(args: object, out: io.StringIO, err: io.StringIO) -> int:
        try:
            raise ValueError("boom")
        except ValueError:
            logging.getLogger("agentmem.long_term").exception("index build failed;\nretrying")
        out.write("ok\n")
        return 0

    monkeypatch.setattr(_cli_stats, "stats_command", stats)
    assert main(["stats", "--user", "alice"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "ok\n"
    assert captured.err == "agentmem: warning: index build failed; retrying\n"
    assert logging.getLogger("agentmem").handlers == []  # removed after the command


def test_stats_counts_types_subtypes_and_others_from_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentmem.cli import main
    from agentmem.long_term import LongTermMemory
    from tests.fake_embedder import HashingEmbedder

    home = tmp_path / "home"
    memory = LongTermMemory.open(user_id="alice", home=home, embedder=HashingEmbedder(384))
    try:
        memory.store_memory("Alice indents Python with tabs", "semantic", subtype="preference")
        memory.store_memory("Alice prefers dark themes", "semantic", subtype="preference")
        memory.store_memory("Alice plays the cello", "semantic", subtype="hobby")
        memory.store_memory("Alice moved to Lyon in May", "episodic")
    finally:
        memory.close()
    assert main(["--home", str(home), "stats", "--user", "alice"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:4] == [
        "user alice: 4 memories (4 current)",
        "  episodic/(other)         1",
        "  semantic/preference      2",
        "  semantic/(other)         1",
    ]
    assert lines[4].startswith(f"home {home.resolve()}: ")


def test_stats_neither_reads_ahead_nor_starts_an_index_rebuild(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A store due for a rebuild (its last close saw 50,000 unindexed points): opened to
    # search, it starts one at once; `stats` only counts, so it starts none and reads nothing
    # ahead (the next session that searches does both).
    from agentmem.cli import main
    from agentmem.long_term import LongTermMemory
    from agentmem.stores.qdrant import edge
    from agentmem.stores.qdrant._edge_index import current_generation
    from tests.fake_embedder import HashingEmbedder

    home = tmp_path / "home"
    memory = LongTermMemory.open(user_id="alice", home=home, embedder=HashingEmbedder(384))
    memory.store_memory("Alice indents Python with tabs", "semantic", subtype="preference")
    memory.close()
    root = home / "long_term"
    hint = {"generation": current_generation(root).name, "unindexed": 50_000}
    (root / edge.INDEX_STATE_FILE).write_text(json.dumps(hint))
    rebuilds: list[Path] = []
    reads: list[Path] = []
    real_build = edge.build_generation

    def build(target: Path, *args: Any, **kwargs: Any) -> None:
        rebuilds.append(target)
        real_build(target, *args, **kwargs)

    monkeypatch.setattr(edge, "build_generation", build)
    monkeypatch.setattr(edge, "read_ahead", lambda path: reads.append(path) or 0)

    assert main(["--home", str(home), "stats", "--user", "alice"]) == 0
    assert "semantic/preference      1" in capsys.readouterr().out
    assert (rebuilds, reads) == ([], [])

    with edge.QdrantEdgeStore(root, dimension=384) as searching:  # the control
        searching.wait_for_index(120)
    assert reads == [root, *rebuilds]  # the live shard, then the rebuilt generation
    assert len(rebuilds) == 1
