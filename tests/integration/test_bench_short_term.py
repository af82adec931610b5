"""Smoke test of ``bench/short_term.py`` on a tiny history: it runs, and our counts are exact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.short_term import main

pytestmark = pytest.mark.integration

SYSTEMS = {
    "agentmem SlidingWindowMemory",
    "llamaindex ChatMemoryBuffer",
    "llamaindex Memory",
    "langchain trim_messages",
}


def test_bench_runs_on_tiny_sizes_and_reports_exact_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "short_term.json"

    assert main(["--sizes", "50", "--repeat", "2", "--samples", "50", "--out", str(out)]) == 0

    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["config"]["sizes"] == [50]
    assert report["config"]["budget"] == 2000
    rows = report["results"]
    assert {r["system"] for r in rows} == SYSTEMS
    assert all(r["size"] == 50 and r["status"] == "ok" for r in rows)
    for row in rows:
        assert row["median_ms"] > 0
        assert row["p95_ms"] >= row["median_ms"]
        assert row["view_messages"] > 0
    ours = next(r for r in rows if r["system"] == "agentmem SlidingWindowMemory")
    assert ours["within_budget"]
    assert ours["keeps_system"]
    assert ours["ratio_vs_ours"] == 1.0
    # Same counting rule as ours: LangChain's view fits the budget by our exact count too.
    langchain = next(r for r in rows if r["system"] == "langchain trim_messages")
    assert langchain["within_budget"]

    exactness = report["exactness"]
    assert exactness["exact"] is True
    assert exactness["mismatches"] == 0
    assert exactness["checked"] >= 50 + 2
    assert report["peak_rss_mb"] > 0
    assert set(report["claims"]) >= {
        "ours_10k_at_least_1000x_faster_than_chat_memory_buffer_1k",
        "ours_10k_at_least_as_fast_as_llamaindex_memory",
        "ours_10k_at_least_as_fast_as_trim_messages",
    }
    assert "langchain trim_messages" in capsys.readouterr().out


def test_bench_conversation_is_deterministic_and_mixes_scripts_and_tools() -> None:
    from bench._chats import build_conversation

    first, second = build_conversation(400, seed=3), build_conversation(400, seed=3)

    assert len(first) == 400
    assert [(m.role, m.content) for m in first] == [(m.role, m.content) for m in second]
    assert first[0].role == "system"
    assert any(m.tool_calls for m in first)
    assert any(m.role == "tool" for m in first)
    assert any("\u4e00" <= ch <= "\u9fff" for m in first for ch in m.content)
