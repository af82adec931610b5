"""Run a test's threads together.

Example:
    >>> import threading
    >>> seen = []
    >>> run_threads([threading.Thread(target=seen.append, args=(n,)) for n in range(3)])
    >>> sorted(seen)
    [0, 1, 2]
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

__all__ = ["run_threads"]


def run_threads(threads: Sequence[threading.Thread], *, timeout: float | None = None) -> None:
    """Start every thread, then join each (waiting at most ``timeout`` seconds for each)."""
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
