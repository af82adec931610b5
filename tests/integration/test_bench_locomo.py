"""``bench/locomo.py`` end to end on a tiny synthetic file of the LoCoMo schema (real embedder)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.locomo import main
from tests.locomo_files import locomo_sample, locomo_turn

pytestmark = pytest.mark.integration


def _sample(
    sample_id: str, sessions: list[list[dict[str, str]]], qa: list[dict[str, Any]]
) -> dict[str, Any]:
    return locomo_sample(
        sample_id, sessions, qa=qa, observation={}, session_summary={}, event_summary={}
    )


def _write_tiny_locomo(path: Path) -> None:
    first = _sample(
        "conv-a",
        [
            [
                locomo_turn("Caroline", "D1:1", "Hey Mel! How was your weekend?"),
                locomo_turn(
                    "Melanie", "D1:2", "Great, I went hiking in the mountains with my kids."
                ),
                locomo_turn(
                    "Caroline", "D1:3", "I adopted a golden retriever puppy named Biscuit!"
                ),
            ],
            [
                locomo_turn("Melanie", "D2:1", "I started pottery classes on Tuesdays."),
                locomo_turn(
                    "Caroline",
                    "D2:2",
                    "Look at my new painting.",
                    blip_caption="a photo of a sunset over a lake",
                ),
                locomo_turn("Melanie", "D2:3", "My favourite book is Charlotte's Web."),
            ],
        ],
        [
            {
                "question": "What is the name of Caroline's puppy?",
                "answer": "Biscuit",
                "evidence": ["D1:3"],
                "category": 4,
            },
            {
                "question": "What did Melanie start, and what is her favourite book?",
                "answer": "pottery; Charlotte's Web",
                "evidence": ["D2:1; D2:03"],  # malformed on purpose: split and de-padded
                "category": 1,
            },
            {"question": "Is there no evidence?", "answer": "x", "evidence": [], "category": 3},
        ],
    )
    second = _sample(
        "conv b/2",  # not a valid scope id as is
        [
            [
                locomo_turn("Caroline", "D1:1", "I'm moving to Sweden next spring."),
                locomo_turn("Melanie", "D1:2", "Wow! I just bought a red bicycle."),
            ]
        ],
        [
            {
                "question": "Which country is Caroline moving to?",
                "adversarial_answer": "Sweden",
                "evidence": ["D1:1"],
                "category": 5,
            }
        ],
    )
    path.write_text(json.dumps([first, second]), encoding="utf-8")


def test_bench_runs_on_a_tiny_file_and_finds_obvious_evidence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "tiny-locomo.json"
    out = tmp_path / "locomo.json"
    _write_tiny_locomo(data)

    cache = tmp_path / "embeddings"
    argv = ["--data", str(data), "--out", str(out), "--modes", "bm25,hybrid", "--k", "1,3,5"]
    status = main([*argv, "--embedding-cache", str(cache), "--loco"])

    assert status == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert set(report["results"]) == {"bm25", "hybrid"}
    for groups in report["results"].values():
        assert list(groups) == ["1-4", "1-5", "1", "4", "5"]
        for metrics in groups.values():
            assert {f"{m}@{k}" for m in ("R_frac", "R_any", "R_all", "NDCG") for k in (1, 3, 5)} | {
                "n"
            } == set(metrics)
            assert all(0.0 <= v <= 1.0 for key, v in metrics.items() if key != "n")
        assert groups["1-5"]["n"] == 3  # the question without evidence is skipped
        assert groups["1-4"]["n"] == 2
    hybrid = report["results"]["hybrid"]
    assert hybrid["4"]["R_frac@1"] == 1.0  # the puppy question
    assert hybrid["5"]["R_frac@1"] == 1.0  # Sweden, in the other conversation's scope
    assert hybrid["1"]["R_frac@5"] == 1.0  # both cleaned evidence ids within the top 5
    assert report["ingest"]["memories"] == 8
    assert report["ingest"]["memories_per_s"] > 0
    assert set(report["latency"]) == {"bm25", "hybrid", "hybrid_no_floor", "legacy_rrf"}
    assert report["latency"]["hybrid"]["calls"] == 3
    assert set(report["latency_ratio_vs_legacy_rrf"]) == {"p50_ratio", "p95_ratio"}
    assert set(report["variants"]) >= {"hybrid_no_floor", "legacy_rrf"}
    assert set(report["per_conversation"]) == {"conv-a", "conv b/2"}
    assert report["per_conversation"]["conv-a"]["hybrid"]["1-5"]["n"] == 2
    floor = report["floor"]["@5"]
    assert floor["tokens_floor"] <= floor["tokens_no_floor"]
    assert floor["items_floor"] <= floor["items_no_floor"] <= 5
    loco = report["loco"]
    assert set(loco["folds"]) == {"conv-a", "conv b/2"}
    assert all(0.0 <= f["held_out"] <= 1.0 for f in loco["folds"].values())
    assert loco["metric"] == "R_frac@5"
    assert list(cache.glob("*.npz"))  # embeddings kept for the next run
    assert report["latency"]["hybrid"]["p95_ms"] >= report["latency"]["hybrid"]["p50_ms"]
    tokens = report["tokens"]["hybrid"]
    assert 0 < tokens["@1"] <= tokens["@3"] <= tokens["@5"]
    assert report["cleanup"]["questions_skipped_without_evidence"] == 1
    assert report["cleanup"]["evidence_split"] == 1
    assert report["cleanup"]["evidence_fixed_zeros"] == 1
    assert report["config"]["modes"] == ["bm25", "hybrid"]
    printed = capsys.readouterr().out
    assert "R_frac@k" in printed
    assert "1 emptied" not in printed
    assert "split=1" in printed


def test_bench_refuses_a_missing_file_and_unknown_modes(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    assert main(["--data", str(missing), "--out", str(tmp_path / "o.json")]) == 2
    assert main(["--data", str(missing), "--modes", "dense,magic"]) == 2
    assert not (tmp_path / "o.json").exists()
