"""Run a throwaway ``redis-server`` on a free loopback port (shared by tests and ``bench/``).

The server keeps an append-only file fsynced on every write (``--appendfsync always``) and no
RDB snapshots, so :meth:`RedisServer.restart` (SIGKILL, then start again on the same port and
directory) loses nothing the server acknowledged. :meth:`RedisServer.pause` and
:meth:`RedisServer.resume` (SIGSTOP, SIGCONT) simulate a stalled server.

Example:
    >>> with RedisServer.start(tmp_dir) as server:  # doctest: +SKIP
    ...     redis.Redis.from_url(server.url).ping()
    True
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import redis

from tests.processes import StopOnExit

__all__ = ["RedisServer", "RedisServerError", "find_redis_server", "free_port"]

_START_TIMEOUT = 15.0


class RedisServerError(RuntimeError):
    """``redis-server`` could not be started or did not answer PING in time."""


def find_redis_server() -> str | None:
    """Path of the ``redis-server`` executable on PATH, or ``None``."""
    return shutil.which("redis-server")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer(StopOnExit):
    """A ``redis-server`` child process bound to 127.0.0.1, with AOF persistence in ``directory``.

    Attributes:
        port: The TCP port (stays the same across :meth:`restart`).
        directory: Where the AOF and the log file live.
        url: ``redis://127.0.0.1:<port>/0``.
    """

    def __init__(
        self,
        directory: Path,
        port: int,
        executable: str,
        *,
        appendfsync: str = "always",
        extra_args: Sequence[str] = (),
    ) -> None:
        self.directory = directory
        self.port = port
        self._executable = executable
        self._appendfsync = appendfsync
        self._extra_args = tuple(extra_args)
        self._process: subprocess.Popen[bytes] | None = None
        self._paused = False

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @classmethod
    def start(
        cls,
        directory: Path,
        *,
        executable: str | None = None,
        appendfsync: str = "always",
        extra_args: Sequence[str] | Callable[[int], Sequence[str]] = (),
    ) -> RedisServer:
        """Start a server in ``directory`` on a free port and wait until it answers PING.

        ``appendfsync`` is Redis' AOF policy: ``always`` (fsync before each reply, the
        default here) or ``everysec`` (what Redis ships with; a crash of the machine may
        lose the last second). ``extra_args`` go to ``redis-server`` after the others (a
        function of the chosen port gives them when they depend on it).
        """
        exe = executable or find_redis_server()
        if exe is None:
            msg = "redis-server is not on PATH; install it (apt-get install redis-server)"
            raise RedisServerError(msg)
        directory.mkdir(parents=True, exist_ok=True)
        last: Exception | None = None
        for _ in range(5):  # another process may grab the free port between probe and bind
            port = free_port()
            extra = extra_args(port) if callable(extra_args) else extra_args
            server = cls(directory, port, exe, appendfsync=appendfsync, extra_args=extra)
            try:
                server._spawn()
            except RedisServerError as exc:
                last = exc
                continue
            return server
        msg = f"could not start redis-server after 5 attempts: {last}"
        raise RedisServerError(msg)

    def _spawn(self) -> None:
        args = [
            self._executable,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--protected-mode", "yes",
            "--dir", str(self.directory),
            "--save", "",
            "--appendonly", "yes",
            "--appendfsync", self._appendfsync,
            "--daemonize", "no",
            "--logfile", "redis.log",
            *self._extra_args,
        ]  # fmt: skip
        self._process = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self._wait_for_ping()

    def _wait_for_ping(self) -> None:
        deadline = time.monotonic() + _START_TIMEOUT
        client = redis.Redis(port=self.port, socket_connect_timeout=0.5, socket_timeout=0.5)
        try:
            while time.monotonic() < deadline:
                if self._process is None or self._process.poll() is not None:
                    self._process = None
                    msg = f"redis-server exited at startup on port {self.port}: {self._log_tail()}"
                    raise RedisServerError(msg)
                try:
                    if client.ping():
                        return
                except redis.RedisError:  # refused, or LOADING the AOF
                    time.sleep(0.02)
        finally:
            client.close()
        self.stop()
        msg = f"redis-server on port {self.port} did not answer PING within {_START_TIMEOUT} s"
        raise RedisServerError(msg)

    def _log_tail(self) -> str:
        log = self.directory / "redis.log"
        return log.read_text(errors="replace")[-2000:] if log.exists() else "(no log)"

    def kill(self) -> None:
        """SIGKILL the server (no shutdown, no final fsync) and reap it."""
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process = None
            self._paused = False

    def restart(self, *, downtime: float = 0.0) -> None:
        """SIGKILL the server, wait ``downtime`` s, then start it again (same port and dir)."""
        self.kill()
        if downtime > 0:
            time.sleep(downtime)
        self._spawn()

    def pause(self) -> None:
        """SIGSTOP the server: connections still open, but nothing is read or answered."""
        if self._process is None:
            msg = "redis-server is not running"
            raise RedisServerError(msg)
        os.kill(self._process.pid, signal.SIGSTOP)
        self._paused = True

    def resume(self) -> None:
        """SIGCONT a paused server (a no-op when it is not paused)."""
        if self._process is not None and self._paused:
            os.kill(self._process.pid, signal.SIGCONT)
        self._paused = False

    def stop(self) -> None:
        """Terminate the server (idempotent; resumes it first if it is paused)."""
        self.resume()
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None
