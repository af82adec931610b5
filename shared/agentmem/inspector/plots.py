"""Inline SVG plots: stacked bars (score parts, a context's budget), line plots (forgetting
curves) and histograms (retention). No script, no style attribute, nothing fetched: each
plot is one ``<svg>`` element drawn with presentation attributes, so it shows under a
Content-Security-Policy that allows no inline style or script, and in a notebook.

Example:
    >>> svg = stacked_bar([("dense", 0.6, "#4c78a8"), ("recency", 0.1, "#f58518")], total=1.0)
    >>> svg.startswith("<svg") and "<title>dense: 0.6</title>" in svg
    True
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from agentmem.inspector._markup import Markup, join, tag

__all__ = ["COLORS", "budget_bar", "color_of", "histogram", "line_plot", "stacked_bar"]

#: A color per score part and context section (the same everywhere).
COLORS: Mapping[str, str] = {
    "fused": "#4c78a8",
    "base": "#4c78a8",
    "dense": "#72b7b2",
    "sparse": "#54a24b",
    "temporal": "#b279a2",
    "temporal_boost": "#b279a2",
    "importance": "#f58518",
    "importance_boost": "#f58518",
    "recency": "#e45756",
    "recency_boost": "#e45756",
    "system": "#4c78a8",
    "summary": "#9d755d",
    "working_memory": "#b279a2",
    "long_term": "#54a24b",
    "recent": "#72b7b2",
    "query": "#f58518",
    "tools": "#eeca3b",
    "reply_priming": "#bab0ac",
    "free": "#e8e8e8",
}
_FALLBACK = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#9d755d")


def color_of(name: str, index: int = 0) -> str:
    """The color of a score part or section (a fallback from a palette for others)."""
    return COLORS.get(name, _FALLBACK[index % len(_FALLBACK)])


def _num(value: float) -> str:
    return f"{value:.4g}"


def stacked_bar(
    segments: Sequence[tuple[str, float, str]],
    *,
    total: float | None = None,
    width: int = 220,
    height: int = 12,
) -> Markup:
    """One bar of ``segments`` (label, value, color) side by side, scaled so that ``total``
    (default: their sum) fills ``width``. Negative values draw nothing; every segment has
    a tooltip with its exact value."""
    full = total if total is not None else sum(max(0.0, v) for _, v, _ in segments)
    scale = width / full if full and full > 0 and math.isfinite(full) else 0.0
    x = 0.0
    rects = [tag("rect", x=0, y=0, width=width, height=height, fill="#f2f2f2")]
    for label, value, color in segments:
        w = max(0.0, value) * scale if math.isfinite(value) else 0.0
        w = min(w, width - x)
        rects.append(
            tag(
                "rect",
                tag("title", f"{label}: {_num(value)}"),
                x=f"{x:.2f}",
                y=0,
                width=f"{w:.2f}",
                height=height,
                fill=color,
            )
        )
        x += w
    label = ", ".join(f"{name} {_num(v)}" for name, v, _ in segments)
    return tag(
        "svg",
        *rects,
        xmlns="http://www.w3.org/2000/svg",
        width=width,
        height=height,
        viewBox=f"0 0 {width} {height}",
        role="img",
        aria_label=label,
        class_="am-bar",
    )


def budget_bar(ledger: Mapping[str, int], max_tokens: int, *, width: int = 480) -> Markup:
    """A context's budget: one segment per ledger section, then the tokens left free."""
    used = sum(ledger.values())
    segments = [(name, float(n), color_of(name, i)) for i, (name, n) in enumerate(ledger.items())]
    if max_tokens > used:
        segments.append(("free", float(max_tokens - used), COLORS["free"]))
    return stacked_bar(segments, total=float(max(max_tokens, used)), width=width, height=18)


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    if high <= low:
        return [low]
    raw = (high - low) / count
    step = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if step * factor >= raw:
            step *= factor
            break
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step + 1e-9) + 1)]


def line_plot(
    series: Sequence[tuple[str, str, Sequence[tuple[float, float]]]],
    *,
    x_label: str,
    y_label: str,
    y_range: tuple[float, float] = (0.0, 1.0),
    hline: tuple[float, str] | None = None,
    width: int = 520,
    height: int = 240,
) -> Markup:
    """Lines (label, color, points) over shared axes, with a legend; ``hline`` draws a
    dashed threshold (value, label)."""
    left, right, top, bottom = 44, 12, 10, 34
    xs = [x for _, _, points in series for x, _ in points] or [0.0, 1.0]
    x0, x1 = min(xs), max(xs)
    if x1 <= x0:
        x1 = x0 + 1.0
    y0, y1 = y_range
    pw, ph = width - left - right, height - top - bottom

    def px(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * pw

    def py(y: float) -> float:
        return top + (1 - (min(max(y, y0), y1) - y0) / (y1 - y0)) * ph

    parts: list[Markup] = [
        tag("rect", x=left, y=top, width=pw, height=ph, fill="#fafafa", stroke="#ccc")
    ]
    for t in _ticks(x0, x1):
        parts.append(tag("line", x1=px(t), x2=px(t), y1=top, y2=top + ph, stroke="#eee"))
        parts.append(tag("text", f"{t:g}", x=px(t), y=top + ph + 14, text_anchor="middle"))
    for t in _ticks(y0, y1, 4):
        parts.append(tag("line", x1=left, x2=left + pw, y1=py(t), y2=py(t), stroke="#eee"))
        parts.append(tag("text", f"{t:g}", x=left - 4, y=py(t) + 4, text_anchor="end"))
    if hline is not None:
        value, label = hline
        parts.append(
            tag(
                "line",
                x1=left,
                x2=left + pw,
                y1=py(value),
                y2=py(value),
                stroke="#e45756",
                stroke_dasharray="4 3",
            )
        )
        parts.append(tag("text", label, x=left + pw - 4, y=py(value) - 4, text_anchor="end"))
    for index, (label, color, points) in enumerate(series):
        if points:
            coords = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in points)
            parts.append(
                tag(
                    "polyline",
                    tag("title", label),
                    points=coords,
                    fill="none",
                    stroke=color,
                    stroke_width=2,
                )
            )
        ly = top + 14 + index * 14
        parts.append(tag("rect", x=left + pw - 180, y=ly - 8, width=10, height=10, fill=color))
        parts.append(tag("text", label, x=left + pw - 166, y=ly + 1))
    parts.append(tag("text", x_label, x=left + pw / 2, y=height - 4, text_anchor="middle"))
    parts.append(
        tag(
            "text",
            y_label,
            x=12,
            y=top + ph / 2,
            text_anchor="middle",
            transform=f"rotate(-90 12 {top + ph / 2})",
        )
    )
    return _svg(parts, width, height, label=f"{y_label} by {x_label}")


def histogram(
    values: Sequence[float],
    *,
    bins: int = 20,
    value_range: tuple[float, float] = (0.0, 1.0),
    x_label: str,
    marker: tuple[float, str] | None = None,
    width: int = 520,
    height: int = 200,
) -> Markup:
    """How many ``values`` fall in each of ``bins`` equal bins of ``value_range``;
    ``marker`` draws a dashed vertical line (value, label)."""
    left, right, top, bottom = 44, 12, 10, 34
    low, high = value_range
    counts = [0] * bins
    for v in values:
        if math.isfinite(v):
            i = int((min(max(v, low), high) - low) / (high - low) * bins)
            counts[min(i, bins - 1)] += 1
    peak = max(counts) or 1
    pw, ph = width - left - right, height - top - bottom
    bw = pw / bins
    parts: list[Markup] = [
        tag("rect", x=left, y=top, width=pw, height=ph, fill="#fafafa", stroke="#ccc")
    ]
    for i, n in enumerate(counts):
        h = n / peak * ph
        lo = low + i * (high - low) / bins
        parts.append(
            tag(
                "rect",
                tag("title", f"{lo:.2f}-{lo + (high - low) / bins:.2f}: {n}"),
                x=f"{left + i * bw + 1:.1f}",
                y=f"{top + ph - h:.1f}",
                width=f"{max(bw - 2, 1):.1f}",
                height=f"{h:.1f}",
                fill="#4c78a8",
            )
        )
    for t in _ticks(low, high):
        x = left + (t - low) / (high - low) * pw
        parts.append(tag("text", f"{t:g}", x=x, y=top + ph + 14, text_anchor="middle"))
    parts.append(tag("text", str(peak), x=left - 4, y=top + 10, text_anchor="end"))
    parts.append(tag("text", "0", x=left - 4, y=top + ph, text_anchor="end"))
    if marker is not None:
        value, label = marker
        x = left + (value - low) / (high - low) * pw
        parts.append(
            tag(
                "line",
                x1=x,
                x2=x,
                y1=top,
                y2=top + ph,
                stroke="#e45756",
                stroke_dasharray="4 3",
            )
        )
        parts.append(tag("text", label, x=x + 4, y=top + 12))
    parts.append(tag("text", x_label, x=left + pw / 2, y=height - 4, text_anchor="middle"))
    return _svg(parts, width, height, label=f"histogram of {x_label}")


def _svg(parts: list[Markup], width: int, height: int, *, label: str) -> Markup:
    """The ``<svg>`` element of a plot: its drawn ``parts``, size and accessible label."""
    return tag(
        "svg",
        join(parts),
        xmlns="http://www.w3.org/2000/svg",
        width=width,
        height=height,
        viewBox=f"0 0 {width} {height}",
        font_size=11,
        font_family="sans-serif",
        role="img",
        aria_label=label,
        class_="am-plot",
    )
