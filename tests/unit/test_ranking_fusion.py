"""Score fusion, the relevance floor and dates in queries (pure functions)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from agentmem.errors import ConfigurationError
from agentmem.long_term.ranking import RankingConfig, above_floor, base_scores, boost_parts
from agentmem.long_term.records import MemoryRecord, Scope
from agentmem.long_term.temporal import date_terms, in_windows, query_windows

NOW = datetime(2023, 11, 1, tzinfo=timezone.utc)


def test_each_side_is_normalized_by_its_best_score() -> None:
    scores = base_scores({"a": 0.5, "b": 0.25}, {"b": 10.0, "c": 5.0}, dense_weight=1.0)
    assert scores == {"a": 1.0, "b": 1.5, "c": 0.5}
    assert base_scores({"a": 0.5}, {}, dense_weight=0.5) == {"a": 0.5}
    assert base_scores({}, {}, dense_weight=1.0) == {}


def test_the_floor_is_relative_and_needs_lexical_or_similar_evidence() -> None:
    config = RankingConfig(relative_floor=0.3, min_similarity=0.3)
    assert above_floor(config, base=1.0, best=2.0, cosine=0.1, lexical=2.0)
    assert not above_floor(config, base=0.5, best=2.0, cosine=0.9, lexical=2.0)
    assert not above_floor(config, base=1.0, best=1.0, cosine=0.2, lexical=0.0)
    assert above_floor(config, base=1.0, best=1.0, cosine=0.35, lexical=0.0)
    off = RankingConfig(relative_floor=None, min_similarity=None)
    assert above_floor(off, base=0.0, best=2.0, cosine=-1.0, lexical=0.0)


def test_recency_halves_each_half_life_and_a_date_ahead_counts_as_new() -> None:
    config = RankingConfig(importance_weight=0.1, recency_weight=0.2, half_life_days=10)
    scope = Scope(user_id="u")

    def parts(created: datetime) -> tuple[float, float]:
        record = MemoryRecord.new("x", "semantic", scope=scope, importance=0.5, created_at=created)
        return boost_parts(config, record, NOW)

    assert parts(NOW - timedelta(days=20)) == pytest.approx((0.05, 0.05))
    # 0.5 ** (-85 years / 10 days) would overflow a float (OverflowError before).
    assert parts(NOW + timedelta(days=85 * 365)) == (0.05, 0.2)
    assert parts(NOW + timedelta(seconds=1)) == (0.05, 0.2)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"fusion": "max"},
        {"dense_weight": -1.0},
        {"temporal_weight": float("nan")},
        {"relative_floor": 1.5},
        {"min_similarity": -0.1},
    ],
)
def test_bad_ranking_settings_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        RankingConfig(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("query", "inside", "outside"),
    [
        ("What did she paint on October 13, 2023?", "2023-10-13", "2023-10-20"),
        ("What did Gina find on 1 February, 2023?", "2023-02-01", "2023-03-01"),
        ("What setback did Melanie face in October 2023?", "2023-11-10", "2023-09-30"),
        ("When did Melanie go camping in June?", "2023-06-20", "2023-08-01"),
        ("How many times to the beach in 2023?", "2023-07-01", "2022-12-31"),
    ],
)
def test_query_windows(query: str, inside: str, outside: str) -> None:
    windows = query_windows(query, NOW)
    assert windows
    assert in_windows(datetime.fromisoformat(inside).replace(tzinfo=timezone.utc), windows)
    assert not in_windows(datetime.fromisoformat(outside).replace(tzinfo=timezone.utc), windows)


@pytest.mark.parametrize(
    "query",
    ["What did Caroline research?", "You may go now", "march on", "2023 was long"],
)
def test_queries_without_dates_name_no_window(query: str) -> None:
    assert query_windows(query, NOW) == []


def test_date_terms() -> None:
    assert date_terms(datetime(2023, 5, 8, tzinfo=timezone.utc)) == "May 2023"
