"""Retrieval metrics over retrieved *items*, each covering one or more evidence ids.

* ``R_frac@k``: |evidence ids covered by the top-k items| / |evidence| (LoCoMo's partial
  credit); ``R_any@k``: 1 if any is covered; ``R_all@k``: 1 if all are.
* ``NDCG@k``: binary relevance with LongMemEval's DCG, where ranks 1 and 2 both weigh 1:
  ``DCG = sum(rel_i / log2(max(i, 2)))``. An item is relevant when it covers an evidence id
  no earlier item covered (a duplicate earns nothing). The ideal DCG puts
  ``min(|evidence|, k)`` relevant items first.

Example:
    >>> m = score_ranking([{"D1:2"}, {"D1:1"}], ["D1:1"], ks=(1, 2))
    >>> m["R_frac@1"], m["R_frac@2"], m["NDCG@2"]
    (0.0, 1.0, 1.0)
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence

__all__ = ["METRICS", "aggregate", "dcg", "group_names", "ndcg", "parse_ks", "score_ranking"]

METRICS = ("R_frac", "R_any", "R_all", "NDCG")


def parse_ks(text: str) -> list[int]:
    """The cut-offs of a ``--k`` option: ``"10,1,5,5"`` -> ``[1, 5, 10]`` (an argparse type).

    Example:
        >>> parse_ks("10,1,5,5")
        [1, 5, 10]
    """
    values = sorted({int(v) for v in text.split(",") if v.strip()})
    if not values or values[0] < 1:
        msg = f"expected comma-separated positive integers, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return values


def dcg(gains: Sequence[float], k: int) -> float:
    """LongMemEval's DCG@k: ``sum(g_i / log2(max(i, 2)))`` over 1-based ranks ``i <= k``.

    Example:
        >>> dcg([1, 1, 1], 3) == 1 + 1 + 1 / math.log2(3)
        True
    """
    return sum(g / math.log2(max(rank, 2)) for rank, g in enumerate(gains[:k], start=1))


def _gains(retrieved: Sequence[Collection[str]], evidence: Collection[str]) -> list[float]:
    seen: set[str] = set()
    gains: list[float] = []
    for item in retrieved:
        new = (set(item) & set(evidence)) - seen
        seen |= new
        gains.append(1.0 if new else 0.0)
    return gains


def ndcg(retrieved: Sequence[Collection[str]], evidence: Collection[str], k: int) -> float:
    """NDCG@k with binary relevance (see the module docstring); 0 when there is no evidence.

    Example:
        >>> ndcg([set(), {"a"}], {"a"}, 10)  # rank 2 weighs as much as rank 1
        1.0
    """
    wanted = set(evidence)
    if not wanted or k < 1:
        return 0.0
    ideal = dcg([1.0] * min(len(wanted), k), k)
    return dcg(_gains(retrieved, wanted), k) / ideal


def score_ranking(
    retrieved: Sequence[Collection[str]],
    evidence: Iterable[str],
    *,
    ks: Iterable[int],
) -> dict[str, float]:
    """All metrics of one question at each ``k``: keys like ``"R_frac@10"``, ``"NDCG@5"``.

    Args:
        retrieved: The ranked items, best first; each is the set of evidence ids it covers
            (one dia_id for a turn memory).
        evidence: The question's evidence ids (must not be empty).
        ks: Cut-offs.

    Raises:
        ValueError: ``evidence`` is empty (such questions are not scored).
    """
    wanted = set(evidence)
    if not wanted:
        msg = "a question without evidence cannot be scored; skip it"
        raise ValueError(msg)
    out: dict[str, float] = {}
    for k in ks:
        covered: set[str] = set()
        for item in retrieved[:k]:
            covered |= set(item) & wanted
        out[f"R_frac@{k}"] = len(covered) / len(wanted)
        out[f"R_any@{k}"] = 1.0 if covered else 0.0
        out[f"R_all@{k}"] = 1.0 if covered == wanted else 0.0
        out[f"NDCG@{k}"] = ndcg(retrieved, wanted, k)
    return out


def group_names(categories: Iterable[int]) -> list[str]:
    """Report groups: ``"1-4"``, ``"1-5"``, then each category present, as strings.

    Example:
        >>> group_names([4, 1, 5])
        ['1-4', '1-5', '1', '4', '5']
    """
    return ["1-4", "1-5", *(str(c) for c in sorted(set(categories)))]


def aggregate(scored: Iterable[tuple[int, Mapping[str, float]]]) -> dict[str, dict[str, float]]:
    """Mean of each metric per group over questions ``(category, metrics)``.

    Groups: each category, ``"1-4"`` (categories 1 to 4) and ``"1-5"`` (1 to 5); a group
    with no question is left out. ``"n"`` holds the question count of each group.

    Example:
        >>> aggregate([(1, {"R_any@1": 1.0}), (5, {"R_any@1": 0.0})])["1-5"]
        {'R_any@1': 0.5, 'n': 2}
    """
    members: dict[str, list[Mapping[str, float]]] = defaultdict(list)
    for category, metrics in scored:
        members[str(category)].append(metrics)
        if 1 <= category <= 4:
            members["1-4"].append(metrics)
        if 1 <= category <= 5:
            members["1-5"].append(metrics)
    order = group_names(int(g) for g in members if g.isdigit())
    out: dict[str, dict[str, float]] = {}
    for group in order:
        rows = members.get(group)
        if not rows:
            continue
        keys = list(rows[0])
        means: dict[str, float] = {key: sum(r[key] for r in rows) / len(rows) for key in keys}
        means["n"] = len(rows)
        out[group] = means
    return out
