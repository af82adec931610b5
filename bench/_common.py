"""Small helpers shared by the benchmark scripts: timing, peak RSS, a text table, JSON output,
the pieces of a latency report (size lists, result lookups, the per-size latency table), and
the end of a benchmark's ``main`` on a data file (:func:`run_on_data`).

Example:
    >>> stats = measure(lambda: sum(range(100)), repeat=5, warmup=1)
    >>> sorted(stats)
    ['median_ms', 'p95_ms', 'runs']
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import resource
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "LATENCY_COLUMNS",
    "environment",
    "log",
    "measure",
    "parse_sizes",
    "peak_rss_mb",
    "percentile",
    "print_latency_table",
    "print_table",
    "result_value",
    "run_on_data",
    "write_json",
]

LATENCY_COLUMNS = (
    "size",
    "system",
    "median ms",
    "p95 ms",
    "runs",
    "x ours",
    "view msgs",
    "view tokens",
    "note",
)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``values`` by the nearest-rank method."""
    if not values:
        msg = "percentile() needs at least one value"
        raise ValueError(msg)
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def measure(
    fn: Callable[[], object],
    repeat: int,
    warmup: int = 1,
    *,
    max_seconds: float | None = None,
    min_runs: int = 3,
) -> dict[str, float]:
    """Time ``fn()`` ``repeat`` times after ``warmup`` untimed calls.

    Args:
        fn: The call to time (no arguments; wrap with ``functools.partial``).
        repeat: Timed calls to make.
        warmup: Untimed calls made first.
        max_seconds: Stop early once the timed calls took this long (after ``min_runs``).
        min_runs: Timed calls always made, even past ``max_seconds``.

    Returns:
        ``{"median_ms", "p95_ms", "runs"}`` (p95 by nearest rank).
    """
    if repeat < 1:
        msg = f"repeat must be >= 1, got {repeat}"
        raise ValueError(msg)
    for _ in range(warmup):
        fn()
    times: list[float] = []
    spent = 0.0
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - start
        times.append(elapsed)
        spent += elapsed
        if max_seconds is not None and len(times) >= min_runs and spent >= max_seconds:
            break
    return {
        "median_ms": statistics.median(times) * 1000,
        "p95_ms": percentile(times, 95) * 1000,
        "runs": len(times),
    }


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes.
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def environment() -> dict[str, Any]:
    """Where the numbers were measured (Python, OS, CPU count)."""
    import os

    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
    }


def _cell(value: object) -> str:
    if isinstance(value, float):
        if value == 0 or abs(value) >= 100:
            return f"{value:,.0f}"
        if abs(value) >= 1:
            return f"{value:,.2f}"
        return f"{value:.4f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return "" if value is None else str(value)


def print_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """Print ``rows`` as a Markdown table with the given ``columns``; return the text."""
    cells = [[_cell(row.get(col)) for col in columns] for row in rows]
    widths = [max([len(col)] + [len(r[i]) for r in cells]) for i, col in enumerate(columns)]
    numeric = [all(_is_number(row.get(col)) for row in rows) for col in columns]

    def line(values: Sequence[str]) -> str:
        parts = [
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ]
        return "| " + " | ".join(parts) + " |"

    dashes = [
        "-" * (w + 1) + ":" if num else "-" * (w + 2)
        for w, num in zip(widths, numeric, strict=True)
    ]
    rule = "|" + "|".join(dashes) + "|"
    text = "\n".join([line(list(columns)), rule, *(line(r) for r in cells)])
    print(text, flush=True)
    return text


def _is_number(value: object) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def write_json(path: str | Path, data: Any) -> Path:
    """Write ``data`` as indented JSON to ``path`` (parent directories created)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return out


def run_on_data(
    args: argparse.Namespace,
    run: Callable[[argparse.Namespace], dict[str, Any]],
    show: Callable[[dict[str, Any]], None],
    *,
    missing: str,
) -> int:
    """``run(args)``, ``show`` the report and write it to ``args.out``; the exit status.

    Exits 2, saying ``missing`` on stderr, when there is no file at ``args.data``.
    """
    if not args.data.is_file():
        print(f"no data file at {args.data}: {missing}", file=sys.stderr)
        return 2
    report = run(args)
    show(report)
    print(f"wrote {write_json(args.out, report)}")
    return 0


def log(text: str) -> None:
    """Progress output, on stderr so that stdout holds only the report."""
    print(text, file=sys.stderr, flush=True)


def parse_sizes(text: str) -> list[int]:
    """``"1000,10_000"`` -> ``[1000, 10000]`` (blank entries ignored)."""
    return [int(s.replace("_", "")) for s in text.split(",") if s.strip()]


def result_value(results: Sequence[Mapping[str, Any]], *, size: int, system: str, key: str) -> Any:
    """``key`` of the result row of ``system`` at ``size``; None when there is none or it
    lacks ``key`` (a skipped row has no timings)."""
    return next((r.get(key) for r in results if r["system"] == system and r["size"] == size), None)


def print_latency_table(
    results: Sequence[Mapping[str, Any]], *, flag_missing_system: bool = True
) -> str:
    """Print one row per (size, system) result with :data:`LATENCY_COLUMNS`; return the text.

    A result row is the :func:`measure` stats plus ``status`` (``"ok"`` or ``"skipped"`` with
    ``estimated_s``), ``ratio_vs_ours``, ``view_messages``, ``view_tokens``, ``within_budget``
    and, when ``flag_missing_system``, ``keeps_system``.
    """
    rows: list[dict[str, Any]] = []
    for r in results:
        if r["status"] == "skipped":
            note = f"skipped (quadratic; est. {r['estimated_s']:,.0f} s per call)"
            rows.append({"size": r["size"], "system": r["system"], "note": note})
            continue
        note = "within budget" if r["within_budget"] else "OVER budget"
        if flag_missing_system and not r["keeps_system"]:
            note += ", no system msg"
        rows.append(
            {
                "size": r["size"],
                "system": r["system"],
                "median ms": r["median_ms"],
                "p95 ms": r["p95_ms"],
                "runs": r["runs"],
                "x ours": r["ratio_vs_ours"],
                "view msgs": r["view_messages"],
                "view tokens": r["view_tokens"],
                "note": note,
            }
        )
    return print_table(rows, LATENCY_COLUMNS)
