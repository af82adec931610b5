"""The command line's one-line messages on stderr: errors and the library's warnings
(private; imported once the arguments are parsed, so ``agentmem --help`` needs no logging).

Example:
    >>> import io, logging
    >>> stream = io.StringIO()
    >>> handler = WarningLines(stream)
    >>> handler.handle(logging.makeLogRecord({"msg": "index build failed;\\n  retrying"}))
    True
    >>> stream.getvalue()
    'agentmem: warning: index build failed; retrying\\n'
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

__all__ = ["WarningLines", "library_warnings_as_lines", "one_line"]


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) as one space."""
    return " ".join(text.split())


class WarningLines(logging.Handler):
    """The library's warnings as ``agentmem: warning: ...`` lines on stderr (no traceback).

    The library only logs (under ``agentmem``) and configures nothing; without a handler
    Python would print its warnings raw, tracebacks included. The command line is the
    application, so it decides: one line each, like its errors.
    """

    def __init__(self, stream: TextIO) -> None:
        super().__init__(level=logging.WARNING)
        self.stream = stream

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.stream.write(f"agentmem: warning: {one_line(record.getMessage())}\n")
        except Exception:  # a logging handler must never raise
            self.handleError(record)


@contextmanager
def library_warnings_as_lines(stream: TextIO) -> Iterator[None]:
    """While in the block, the ``agentmem`` logger's warnings go to ``stream`` as
    :class:`WarningLines`; the handler is removed afterwards."""
    library = logging.getLogger("agentmem")
    handler = WarningLines(stream)
    library.addHandler(handler)
    try:
        yield
    finally:
        library.removeHandler(handler)
