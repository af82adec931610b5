"""Child Python processes for the tests: one way to start them and read what they said.

Tests that must see a fresh interpreter (imports, console output, locks held by another
process, the CLI as a user runs it) start ``python`` here, with the output captured as text
and a timeout, and read the exit code themselves.

Example:
    >>> done = run_python("-c", "print(6 * 7)")
    >>> done.returncode, done.stdout
    (0, '42\\n')
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from typing_extensions import Self

__all__ = ["StopOnExit", "child_env", "run_python"]


def child_env(*, drop: tuple[str, ...] = ("OPENAI_",), **values: str) -> dict[str, str]:
    """This process's environment without the variables whose names start with ``drop``,
    plus ``values``.

    Example:
        >>> env = child_env(drop=("OPENAI_", "AGENTMEM_"), AGENTMEM_HOME="/tmp/h")
        >>> env["AGENTMEM_HOME"]
        '/tmp/h'
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(values)
    return env


def run_python(
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
    timeout: float = 600,
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run ``python ARGS`` (this interpreter) and return what it printed, as text.

    ``check=True`` raises :class:`subprocess.CalledProcessError` on a non-zero exit;
    otherwise the caller asserts on ``returncode`` with the child's stderr in the message.
    """
    return subprocess.run(
        [sys.executable, *args],
        env=None if env is None else dict(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=check,
    )


class StopOnExit:
    """Mixin for the servers the tests start: ``with server:`` calls ``server.stop()`` on
    the way out (a test's failure included). ``__enter__`` returns the server itself.

    Example:
        >>> class Server(StopOnExit):
        ...     def stop(self) -> None:
        ...         print("stopped")
        >>> with Server():
        ...     pass
        stopped
    """

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
