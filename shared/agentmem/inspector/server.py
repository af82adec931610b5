"""The local web inspector: a small HTTP server over one :class:`~agentmem.MemoryService`.

Standard library only (:class:`http.server.ThreadingHTTPServer`, one thread per request,
in a background thread of its own). Security, as Jupyter does it:

* it binds ``127.0.0.1`` unless told otherwise, and answers only requests whose ``Host``
  is the address it serves (no DNS rebinding);
* every request needs the token: in the URL (``?token=...``, then kept in an
  ``HttpOnly``, ``SameSite=Strict`` cookie) or an ``Authorization: token ...`` header;
  without one the answer is 401, with a wrong one 403;
* every page is built by :mod:`agentmem.inspector._markup` (all content escaped) and sent
  under a Content-Security-Policy that allows no script at all, styles from the server
  only, and forms posting to it only; nothing is loaded from elsewhere;
* read-only unless ``allow_edits``: then forgetting, pinning and correcting a memory are
  POSTs that must carry the page's CSRF token (and come from the inspector's origin), and
  each is logged (logger ``agentmem.inspector``).

Example:
    >>> server = service.serve_inspector()  # doctest: +SKIP
    >>> server.url  # doctest: +SKIP
    'http://127.0.0.1:43817/?token=6Yb0...'
    >>> server.stop()  # doctest: +SKIP
"""

from __future__ import annotations

import hmac
import logging
import secrets
import socket
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from agentmem._util.checks import check_int
from agentmem.errors import AgentMemError, ConfigurationError, StoreClosedError
from agentmem.inspector._markup import tag
from agentmem.inspector.pages import Page, PageError, Pages, Redirect, layout
from agentmem.inspector.reprs import STYLE

if TYPE_CHECKING:
    from agentmem.service import MemoryService

__all__ = ["InspectorServer"]

logger = logging.getLogger("agentmem.inspector")

#: Sent with every answer: no script, styles from the server, forms to the server only.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
MAX_FORM_BYTES = 256 * 1024


class InspectorServer:
    """The web inspector of ``service``, serving from a background thread until
    :meth:`stop` (see the module docstring).

    Args:
        service: Whose users, sessions and memories are shown.
        host: Interface to bind (``127.0.0.1``: this machine only).
        port: Port to bind (0: a free one, see :attr:`port`).
        allow_edits: Serve the forms and routes that forget, pin and correct memories.
        token: The access token (default: a new random one).

    Raises:
        ConfigurationError: The port is out of range or cannot be bound.

    Example:
        >>> with InspectorServer(service) as server:  # doctest: +SKIP
        ...     print(server.url)
    """

    def __init__(
        self,
        service: MemoryService,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        allow_edits: bool = False,
        token: str | None = None,
    ) -> None:
        expected = "must be a whole number from 0 to 65535 (0: any free port)"
        check_int(port, "port", minimum=0, maximum=65535, expected=expected)
        self.token = token or secrets.token_urlsafe(24)
        self.allow_edits = allow_edits
        self._csrf = secrets.token_urlsafe(24)
        self.pages = Pages(service, allow_edits=allow_edits, csrf=self._csrf)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        server_class = type("_Server", (_HTTPServer,), {"address_family": family})
        try:
            self._httpd: _HTTPServer = server_class((host, port), _Handler)
        except OSError as exc:
            msg = f"cannot serve the inspector on {host}:{port}: {exc.strerror or exc}"
            raise ConfigurationError(msg) from None
        self._httpd.inspector = self
        self.host = host
        self.port = int(self._httpd.server_address[1])
        self._stopped = threading.Event()
        self._thread = threading.Thread(
            target=self._serve, name=f"agentmem-inspector-{self.port}", daemon=True
        )
        self._thread.start()

    def _serve(self) -> None:
        try:
            self._httpd.serve_forever(poll_interval=0.2)
        finally:
            self._stopped.set()

    @property
    def origin(self) -> str:
        """``http://host:port``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def url(self) -> str:
        """The address to open, with the token."""
        return f"{self.origin}/?token={quote(self.token)}"

    @property
    def cookie_name(self) -> str:
        """The cookie that keeps the token (per port: cookies do not tell ports apart)."""
        return f"agentmem-inspector-{self.port}"

    @property
    def running(self) -> bool:
        """Whether it still serves."""
        return not self._stopped.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until :meth:`stop` (from another thread); returns whether it stopped."""
        return self._stopped.wait(timeout)

    def stop(self) -> None:
        """Stop serving and close the socket (idempotent)."""
        if self._thread.is_alive():
            self._httpd.shutdown()
            self._thread.join()
        self._httpd.server_close()
        self._stopped.set()

    def __enter__(self) -> InspectorServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        edits = "edits allowed" if self.allow_edits else "read-only"
        return f"InspectorServer({self.origin}, {edits}, {state})"

    # -- checks ------------------------------------------------------------------------

    def allowed_hosts(self) -> set[str]:
        """``Host`` headers it answers: its address, and ``localhost`` for the loopback."""
        hosts = {f"{self.host}:{self.port}", f"[{self.host}]:{self.port}"}
        if self.host in ("127.0.0.1", "::1", "localhost"):
            hosts |= {f"localhost:{self.port}", f"127.0.0.1:{self.port}", f"[::1]:{self.port}"}
        return hosts

    def host_allowed(self, host: str) -> bool:
        """Whether a request's ``Host`` header names this server. Bound to every interface
        (``0.0.0.0``, ``::``), any name is accepted: the machine's names and addresses are
        not known here, and the token still guards every request."""
        if self.host in ("0.0.0.0", "::", ""):
            return host.rsplit(":", 1)[-1] == str(self.port)
        return host in self.allowed_hosts()

    def token_matches(self, given: str) -> bool:
        """Whether ``given`` is the token (compared in constant time)."""
        return hmac.compare_digest(given.encode(), self.token.encode())

    def csrf_matches(self, given: str) -> bool:
        """Whether ``given`` is the CSRF token of the edit forms."""
        return hmac.compare_digest(given.encode(), self._csrf.encode())


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    inspector: InspectorServer


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    server_version = "agentmem-inspector"
    sys_version = ""

    def log_message(self, format: str, *args: object) -> None:
        # Never the request line: its query string may hold the token.
        logger.debug("inspector request answered: %s", args[1] if len(args) > 1 else "")

    # -- answering -----------------------------------------------------------------------

    def _send(
        self,
        status: int,
        body: bytes,
        content_type: str = "text/html; charset=utf-8",
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("X-Frame-Options", "DENY")
        # same-origin, not no-referrer: under no-referrer browsers send "Origin: null" with
        # forms, which the edit check refuses. No page links elsewhere anyway.
        self.send_header("Referrer-Policy", "same-origin")
        self.send_header("Cache-Control", "no-store")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _error(self, status: int, message: str) -> None:
        phrase = HTTPStatus(status).phrase
        page = Page(f"{status} {phrase}", tag("p", message, class_="am-error"))
        self._send(status, layout(page, edits=self.server.inspector.allow_edits))

    def _token(self) -> tuple[str | None, bool]:
        """The token the request carries, and whether it came in the URL."""
        query = dict(parse_qsl(urlsplit(self.path).query))
        if "token" in query:
            return query["token"], True
        auth = self.headers.get("Authorization", "")
        if auth.lower().startswith("token "):
            return auth[6:].strip(), False
        name = self.server.inspector.cookie_name + "="
        for part in self.headers.get("Cookie", "").split(";"):
            part = part.strip()
            if part.startswith(name):
                return part[len(name) :], False
        return None, False

    def _admit(self) -> dict[str, str] | None:
        """Check the Host and the token; on success, headers to add (the cookie)."""
        inspector = self.server.inspector
        if not inspector.host_allowed(self.headers.get("Host", "")):
            self._error(403, "unexpected Host header: open the inspector at its own address")
            return None
        given, in_url = self._token()
        if given is None:
            self._error(401, "this page needs the token: open the URL the inspector printed")
            return None
        if not inspector.token_matches(given):
            self._error(403, "wrong token: open the URL the inspector printed")
            return None
        if not in_url:
            return {}
        cookie = f"{inspector.cookie_name}={given}; HttpOnly; SameSite=Strict; Path=/"
        return {"Set-Cookie": cookie}

    def _run(self, action: str) -> None:
        headers = self._admit()
        if headers is None:
            return
        try:
            if action == "GET":
                self._get(headers)
            else:
                self._post(headers)
        except Redirect as go:
            self._send(303, b"", headers={**headers, "Location": go.location})
        except PageError as exc:
            self._error(exc.status, str(exc))
        except StoreClosedError as exc:
            self._error(503, str(exc))
        except AgentMemError as exc:
            self._error(400, str(exc))
        except Exception:
            logger.exception("the inspector failed to answer %s", urlsplit(self.path).path)
            self._error(500, "the inspector failed on this page; see the log")

    def _parts(self) -> list[str]:
        path = urlsplit(self.path).path
        return [unquote(p) for p in path.split("/") if p]

    def _get(self, headers: dict[str, str]) -> None:
        inspector = self.server.inspector
        parts = self._parts()
        query = {k: v for k, v in parse_qsl(urlsplit(self.path).query) if k != "token"}
        if parts == ["static", "inspector.css"]:
            self._send(200, STYLE.encode(), "text/css; charset=utf-8", headers)
            return
        if parts == ["open"]:
            raise Redirect(f"/u/{quote(query.get('user', '').strip(), safe='')}")
        page = inspector.pages.get(parts, query)
        self._send(200, layout(page, edits=inspector.allow_edits), headers=headers)

    def _post(self, headers: dict[str, str]) -> None:
        inspector = self.server.inspector
        if not inspector.allow_edits:
            raise PageError(405, "this inspector is read-only; start it with --allow-edits")
        origin = self.headers.get("Origin")
        if origin is not None and not (
            origin.startswith("http://") and inspector.host_allowed(origin[len("http://") :])
        ):
            raise PageError(403, "the edit did not come from an inspector page")
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_FORM_BYTES:
            raise PageError(400, "form too large")
        body = self.rfile.read(length).decode("utf-8", "replace")
        form = dict(parse_qsl(body, keep_blank_values=True))
        if not inspector.csrf_matches(form.get("csrf", "")):
            raise PageError(403, "missing or wrong CSRF token: edit from an inspector page")
        raise Redirect(inspector.pages.post(self._parts(), form))

    def do_GET(self) -> None:
        self._run("GET")

    def do_HEAD(self) -> None:
        self._run("GET")

    def do_POST(self) -> None:
        self._run("POST")
