"""Progress bars and transient status for the command line (private).

A tiny renderer, so the core package needs no progress library: a bar with the count, the
percentage, the rate and the ETA, redrawn in place at most ten times a second, on a terminal
only. When the stream is not a TTY (a pipe, a file, a test's captured stderr) nothing at all
is written, so logs and scripts see only the documented status lines and results.

Example:
    >>> import io
    >>> class Tty(io.StringIO):
    ...     def isatty(self): return True
    >>> now = [0.0]
    >>> out = Tty()
    >>> bar = ProgressBar(200, label="import", unit="memories", stream=out, clock=lambda: now[0],
    ...                   width=72)
    >>> now[0] = 2.0; bar.advance(50)
    >>> out.getvalue().rsplit("\\r", 1)[-1]
    'import |#####                 |  50/200 memories  25%  25.0/s  ETA 0:06'
    >>> ProgressBar(10, label="x", unit="y", stream=io.StringIO()).enabled  # not a TTY
    False
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from typing import TextIO

from agentmem._util.closing import ClosesOnExit

__all__ = ["ProgressBar", "TransientStatus", "format_duration"]

_REDRAW_EVERY_S = 0.1


def format_duration(seconds: float) -> str:
    """``H:MM:SS`` or ``M:SS``.

    Example:
        >>> format_duration(75), format_duration(3725)
        ('1:15', '1:02:05')
    """
    whole = max(0, int(seconds + 0.5))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _is_tty(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if isatty is not None else False
    except (OSError, ValueError):  # a closed or detached stream
        return False


class ProgressBar(ClosesOnExit):
    """A one-line progress bar with rate and ETA on a terminal; silent elsewhere.

    Args:
        total: How many units the work has.
        label: What is being done (``"ingest"``).
        unit: What is counted (``"memories"``).
        stream: Where to draw (default ``sys.stderr``); nothing is drawn unless it is a TTY.
        clock: Monotonic seconds (for tests).
        width: Line width (default: the terminal's).
    """

    def __init__(
        self,
        total: int,
        *,
        label: str,
        unit: str,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        width: int | None = None,
    ) -> None:
        self.total = max(0, total)
        self.label = label
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = _is_tty(self.stream)
        self.done = 0
        self._clock = clock
        self._start = clock()
        self._last_draw = float("-inf")
        self._width = width
        self._drawn = False
        self._drawn_done = -1

    def __enter__(self) -> ProgressBar:
        self._draw(force=True)
        return self

    def advance(self, n: int = 1) -> None:
        """Count ``n`` more units done and redraw (at most ten times a second)."""
        self.done = min(self.total, self.done + n) if self.total else self.done + n
        self._draw(force=self.done >= self.total)

    def close(self) -> None:
        """Draw the final state and end the line (idempotent)."""
        if self.enabled and self._drawn:
            if self._drawn_done != self.done:
                self._draw(force=True)
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False
        self.enabled = False

    def line(self) -> str:
        """The bar as it would be drawn now."""
        elapsed = max(self._clock() - self._start, 1e-9)
        rate = self.done / elapsed
        pct = 100 * self.done // self.total if self.total else 100
        if self.done >= self.total:
            eta = f"in {format_duration(elapsed)}"
        elif self.done and rate > 0:
            eta = f"ETA {format_duration((self.total - self.done) / rate)}"
        else:
            eta = "ETA ?"
        digits = len(f"{self.total:,}")
        count = f"{self.done:>{digits},}/{self.total:,} {self.unit}"
        tail = f"| {count} {pct:>3d}%  {rate:,.1f}/s  {eta}"
        width = self._width or shutil.get_terminal_size(fallback=(80, 24)).columns
        room = max(10, width - len(self.label) - len(tail) - 3)
        filled = room * self.done // self.total if self.total else room
        return f"{self.label} |{'#' * filled}{' ' * (room - filled)}{tail}"

    def _draw(self, *, force: bool = False) -> None:
        if not self.enabled:
            return
        now = self._clock()
        if not force and now - self._last_draw < _REDRAW_EVERY_S:
            return
        self._last_draw = now
        self.stream.write("\r" + self.line())
        self.stream.flush()
        self._drawn = True
        self._drawn_done = self.done


class TransientStatus(ClosesOnExit):
    """A status line shown on a terminal while something runs, then erased.

    Example:
        >>> import io
        >>> with TransientStatus("loading the model", stream=io.StringIO()) as status:
        ...     status.enabled
        False
    """

    def __init__(self, text: str, *, stream: TextIO | None = None) -> None:
        self.text = text
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = _is_tty(self.stream)

    def __enter__(self) -> TransientStatus:
        if self.enabled:
            self.stream.write(f"\r{self.text}…")
            self.stream.flush()
        return self

    def close(self) -> None:
        """Erase the status line."""
        if self.enabled:
            self.stream.write("\r\033[K")
            self.stream.flush()
