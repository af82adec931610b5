"""Retrieval metrics and LoCoMo loading used by ``bench/locomo.py``: exact values on hand cases."""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench._ir_metrics import aggregate, dcg, ndcg, score_ranking
from bench._locomo_data import (
    Turn,
    clean_evidence,
    load_locomo,
    parse_session_date,
    scope_id,
    turn_text,
)
from tests.locomo_files import locomo_sample, locomo_turn

INV_LOG3 = 1 / math.log2(3)


# -- metrics --------------------------------------------------------------------------------


def test_dcg_weighs_ranks_one_and_two_the_same() -> None:
    assert dcg([1, 0], 2) == dcg([0, 1], 2) == 1.0
    assert dcg([1, 1, 1, 1], 4) == pytest.approx(2 + INV_LOG3 + 0.5)
    assert dcg([1, 1, 1], 2) == 2.0  # cut at k


def test_ndcg_relevant_at_rank_two_is_perfect_for_one_evidence_id() -> None:
    assert ndcg([{"x"}, {"a"}], {"a"}, 10) == 1.0
    assert ndcg([{"x"}, {"y"}, {"a"}], {"a"}, 10) == pytest.approx(INV_LOG3)
    assert ndcg([{"x"}, {"y"}, {"a"}], {"a"}, 2) == 0.0


def test_ndcg_ideal_is_capped_at_k_and_counts_all_evidence() -> None:
    # Two evidence ids, one found at rank 3: DCG = 1/log2(3), IDCG = 1 + 1.
    assert ndcg([{"x"}, {"y"}, {"a"}], {"a", "b"}, 10) == pytest.approx(INV_LOG3 / 2)
    # Three evidence ids but k = 1: the ideal is one relevant item.
    assert ndcg([{"b"}], {"a", "b", "c"}, 1) == 1.0


def test_duplicates_in_the_retrieved_list_count_once() -> None:
    m = score_ranking([{"a"}, {"a"}, {"b"}], ["a", "b"], ks=(2, 3))
    assert m["R_frac@2"] == 0.5
    assert m["R_all@2"] == 0.0
    assert m["NDCG@2"] == pytest.approx(1 / 2)  # the second "a" earns nothing
    assert m["R_frac@3"] == 1.0
    assert m["R_all@3"] == 1.0
    assert m["NDCG@3"] == pytest.approx((1 + INV_LOG3) / 2)


def test_evidence_not_retrievable_caps_recall() -> None:
    # "gone" is never retrieved (e.g. a turn missing from the store).
    m = score_ranking([{"a"}, {"x"}, {"y"}], ["a", "gone"], ks=(1, 3, 50))
    assert m["R_frac@1"] == m["R_frac@50"] == 0.5
    assert m["R_any@1"] == 1.0
    assert m["R_all@50"] == 0.0
    assert m["NDCG@50"] == pytest.approx(1 / 2)


def test_items_covering_several_ids_give_partial_credit() -> None:
    m = score_ranking([{"x"}, {"a", "b", "z"}], ["a", "b", "c"], ks=(1, 2))
    assert m == {
        "R_frac@1": 0.0,
        "R_any@1": 0.0,
        "R_all@1": 0.0,
        "NDCG@1": 0.0,
        "R_frac@2": pytest.approx(2 / 3),
        "R_any@2": 1.0,
        "R_all@2": 0.0,
        "NDCG@2": pytest.approx(1 / 2),
    }


def test_empty_retrieval_scores_zero_and_empty_evidence_is_refused() -> None:
    assert set(score_ranking([], ["a"], ks=(5,)).values()) == {0.0}
    with pytest.raises(ValueError, match="without evidence"):
        score_ranking([{"a"}], [], ks=(1,))


def test_aggregate_groups_categories() -> None:
    rows = [
        (1, {"R_any@1": 1.0}),
        (4, {"R_any@1": 0.0}),
        (4, {"R_any@1": 0.0}),
        (5, {"R_any@1": 1.0}),
    ]
    out = aggregate(rows)
    assert list(out) == ["1-4", "1-5", "1", "4", "5"]
    assert out["1-4"] == {"R_any@1": pytest.approx(1 / 3), "n": 3}
    assert out["1-5"] == {"R_any@1": 0.5, "n": 4}
    assert out["4"] == {"R_any@1": 0.0, "n": 2}
    assert "2" not in out


@settings(max_examples=200, deadline=None)
@given(
    ranking=st.lists(st.sets(st.sampled_from("abcdefgh"), max_size=2), max_size=12),
    evidence=st.sets(st.sampled_from("abcdef"), min_size=1),
    k=st.integers(1, 15),
)
def test_metrics_are_bounded_and_monotone_in_k(
    ranking: list[set[str]], evidence: set[str], k: int
) -> None:
    now = score_ranking(ranking, evidence, ks=(k, k + 1))
    for name in ("R_frac", "R_any", "R_all", "NDCG"):
        assert 0.0 <= now[f"{name}@{k}"] <= 1.0 + 1e-12
    for name in ("R_frac", "R_any", "R_all"):
        assert now[f"{name}@{k}"] <= now[f"{name}@{k + 1}"]
    assert now[f"R_all@{k}"] <= now[f"R_frac@{k}"] <= now[f"R_any@{k}"]


# -- LoCoMo loading -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)),
        ("12:06 am on 11 November, 2022", datetime(2022, 11, 11, 0, 6, tzinfo=timezone.utc)),
        ("12:30 pm on 1 Jan 2024", datetime(2024, 1, 1, 12, 30, tzinfo=timezone.utc)),
        ("10:04 AM on 19 December, 2023", datetime(2023, 12, 19, 10, 4, tzinfo=timezone.utc)),
    ],
)
def test_parse_session_date(text: str, expected: datetime) -> None:
    assert parse_session_date(text) == expected


@pytest.mark.parametrize(
    "text", ["", "8 May 2023", "13:10 pm on 8 May, 2023", "1:56 pm on 8 Mai, 2023"]
)
def test_parse_session_date_refuses_other_formats(text: str) -> None:
    with pytest.raises(ValueError, match="LoCoMo date"):
        parse_session_date(text)


def test_clean_evidence_applies_the_readme_rules() -> None:
    known = {"D8:6", "D9:17", "D11:26", "D30:5", "D9:1", "D4:4", "D4:6"}
    raw = ["D8:6; D9:17", "D", "D:11:26", "D9:1 D4:4 D4:6", "D30:05", "D10:19", "D8:6"]
    ids, counts = clean_evidence(raw, known)
    assert ids == ("D8:6", "D9:17", "D11:26", "D9:1", "D4:4", "D4:6", "D30:5")
    assert counts == {
        "split": 2,
        "fixed_prefix": 1,
        "fixed_zeros": 1,
        "dropped_malformed": 1,
        "dropped_missing": 1,
        "duplicates": 1,
    }


def test_turn_text_and_scope_id() -> None:
    turn = Turn("D1:2", "Mel", "Look at this", 1, None, "a photo of a cat")
    assert turn_text(turn) == 'Mel said, "Look at this" and shared a photo of a cat'
    assert turn_text(Turn("D1:3", "Mel", "Hi", 1, None)) == 'Mel said, "Hi"'
    assert scope_id("conv-26") == "conv-26"
    assert scope_id("conv 26/b{x}") == "conv_26_b_x_"


def test_load_locomo_cleans_and_counts(tmp_path: Path) -> None:
    sessions = [
        [locomo_turn("A", "D1:1", "hi"), locomo_turn("B", "D1:2", "yo", blip_caption="a dog")],
        [locomo_turn("A", "D2:1", "bye")],
    ]
    sample = locomo_sample(
        "conv-1",
        sessions,
        speakers=("A", "B"),
        dates=["1:56 pm on 8 May, 2023", "garbled"],
        qa=[
            {"question": "q1", "answer": "a", "evidence": ["D1:1; D2:01"], "category": 1},
            {"question": "q2", "answer": "a", "evidence": ["D"], "category": 2},
            {"question": "q3", "answer": "a", "evidence": [], "category": 3},
            {"question": "q4", "adversarial_answer": "a", "evidence": ["D9:9"], "category": 5},
        ],
        observation={},
        session_summary={},
        event_summary={},
    )
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps([sample]), encoding="utf-8")

    convs, stats = load_locomo(path)

    (conv,) = convs
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D2:1"]
    assert conv.turns[1].date == datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    assert conv.turns[1].blip_caption == "a dog"
    assert conv.turns[2].date is None
    assert [q.evidence for q in conv.questions] == [("D1:1", "D2:1"), (), (), ()]
    info = stats.as_dict()
    assert info["questions"] == 4
    assert info["questions_without_evidence"] == 1
    assert info["questions_emptied_by_cleanup"] == 2
    assert info["evidence_ids_after_cleanup"] == 2
    assert info["evidence_dropped_missing"] == 1
    assert info["evidence_dropped_malformed"] == 1
    assert info["unparsed_session_dates"] == 1


def test_load_locomo_refuses_other_json(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"not": "a list"}), encoding="utf-8")
    with pytest.raises(ValueError, match="list of samples"):
        load_locomo(path)
