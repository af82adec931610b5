"""Dates in queries and memories: what "in May 2023" or "on 13 October" points at.

Search uses :func:`query_windows` to find the periods a query names (English month names,
with or without a day and a year, or a bare year) and boosts memories formed inside one of
them (``RankingConfig.temporal_weight``). A memory formed shortly *after* a named month still
counts, since people talk about last month's events; a named day allows a day either side.
Without a year, a month means the last occurrence of it up to ``now`` and the one before.

The write path adds :func:`date_terms` (``"May 2023"``) to the lexical index of every memory,
so a query naming a month and year also matches its memories lexically.

Example:
    >>> from datetime import datetime, timezone
    >>> now = datetime(2023, 11, 1, tzinfo=timezone.utc)
    >>> [(a.date().isoformat(), b.date().isoformat())
    ...  for a, b in query_windows("What did she paint on October 13, 2023?", now)]
    [('2023-10-12', '2023-10-15')]
    >>> len(query_windows("What did Caroline research?", now))
    0
"""

from __future__ import annotations

import calendar
import re
from datetime import datetime, timedelta, timezone

__all__ = ["date_terms", "in_windows", "query_windows"]

_MONTHS = {name.lower(): n for n, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name[:3]: n for name, n in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_MONTH = (
    r"(January|February|March|April|May|June|July|August|September|October|November|"
    r"December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\.?"
)
_DATE = re.compile(
    rf"\b(?:(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?)?{_MONTH}"
    rf"(?:\s+(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?\b)?(?:,?\s+(?P<year>(?:19|20)\d\d)\b)?"
    r"|\b(?:in|of|during|since)\s+(?P<bare>(?:19|20)\d\d)\b",
    re.IGNORECASE,
)
#: How long after a named month its events are still talked about.
MONTH_SLACK = timedelta(days=15)
DAY_SLACK = timedelta(days=1)

Window = tuple[datetime, datetime]


def _month_window(year: int, month: int) -> Window:
    start = datetime(year, month, 1, tzinfo=timezone.utc)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=timezone.utc)
    return start, end + MONTH_SLACK


def query_windows(query: str, now: datetime) -> list[Window]:
    """The ``[start, end)`` periods a query names (UTC), or ``[]`` when it names none.

    A month word alone must be a month name (``"May"`` as a verb is ambiguous, so a month
    named without a day or a year is only taken when it is capitalized).
    """
    out: list[Window] = []
    for match in _DATE.finditer(query):
        if match["bare"]:
            year = int(match["bare"])
            start = datetime(year, 1, 1, tzinfo=timezone.utc)
            out.append((start, datetime(year + 1, 1, 1, tzinfo=timezone.utc) + MONTH_SLACK))
            continue
        word = match[2]
        month = _MONTHS.get(word.lower().rstrip("."))
        day_text = match["d1"] or match["d2"]
        if month is None or (not day_text and not match["year"] and not word[0].isupper()):
            continue
        if word.lower() == "may" and not day_text and not match["year"]:
            continue  # "may" is far more often the verb
        years = [int(match["year"])] if match["year"] else _recent_years(month, now)
        for year in years:
            if day_text:
                try:
                    day = datetime(year, month, int(day_text), tzinfo=timezone.utc)
                except ValueError:
                    continue
                out.append((day - DAY_SLACK, day + 2 * DAY_SLACK))
            else:
                out.append(_month_window(year, month))
    return out


def _recent_years(month: int, now: datetime) -> list[int]:
    year = now.year if month <= now.month else now.year - 1
    return [year, year - 1]


def in_windows(moment: datetime, windows: list[Window]) -> bool:
    """Whether ``moment`` falls in one of ``windows``."""
    return any(start <= moment < end for start, end in windows)


def date_terms(moment: datetime) -> str:
    """Words for a memory's date in its lexical index: ``"May 2023"``.

    Example:
        >>> from datetime import datetime, timezone
        >>> date_terms(datetime(2023, 5, 8, tzinfo=timezone.utc))
        'May 2023'
    """
    return f"{calendar.month_name[moment.month]} {moment.year}"
