"""A local stub of the OpenAI chat-completions endpoint, for integration tests.

The stub listens on ``127.0.0.1`` (a free port) in a background thread and answers
``POST /v1/chat/completions`` from a scripted queue of behaviours:

- :class:`Reply` — a normal completion whose first choice carries ``text``;
- :class:`ErrorStatus` — an HTTP error with an OpenAI-style ``{"error": {...}}`` body;
- :class:`Delay` — wait (longer than the client's timeout, typically), then behave like ``then``;
- :class:`Malformed` — a 200 response whose body is not a chat completion.

``POST /v1/embeddings`` takes behaviours from the same queue; there :class:`EmbeddingReply`
answers each input with :func:`stub_embedding` (a deterministic vector of the text), and
the error behaviours work as above.

:class:`AdapterFactory` builds agentmem adapters (``OpenAIChatModel``, ``OpenAIEmbedder``)
pointed at a running stub and closes them afterwards, for the tests' fixtures.

Every request is recorded (path, headers, parsed JSON body) so tests can assert the wire
format. When the script runs out, the stub answers 500 so a missing script entry fails loudly.

Example:
    >>> with StubOpenAI([Reply("hello")]) as stub:  # doctest: +SKIP
    ...     client = openai.OpenAI(base_url=stub.base_url, api_key="test")
    ...     client.chat.completions.create(model="m", messages=[...])
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Generic, Protocol, TypeVar

import pytest

from tests.processes import StopOnExit

__all__ = [
    "API_KEY",
    "AdapterFactory",
    "Behaviour",
    "Delay",
    "EmbeddingReply",
    "ErrorStatus",
    "Malformed",
    "RecordedRequest",
    "Reply",
    "StubOpenAI",
    "factory_fixtures",
    "stub_embedding",
]

#: A key shaped like OpenAI's, for the adapters' tests (which check that errors never show it).
API_KEY = "sk-test-0123456789abcdef"


@dataclass(frozen=True)
class Reply:
    """A successful completion whose first choice's message content is ``text``."""

    text: str | None
    finish_reason: str = "stop"


@dataclass(frozen=True)
class ErrorStatus:
    """An HTTP error status with an OpenAI-style error body."""

    status: int
    message: str = "stub error"
    type: str = "server_error"
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Malformed:
    """A 200 response whose body is ``body`` verbatim (not a chat completion)."""

    body: bytes = b"this is not json"
    content_type: str = "application/json"


@dataclass(frozen=True)
class EmbeddingReply:
    """An embeddings response: :func:`stub_embedding` of each input.

    ``dimension`` defaults to the request's ``dimensions`` (else 8); ``count`` overrides
    how many vectors are returned (to test clients against a misbehaving server).
    """

    dimension: int | None = None
    count: int | None = None


def stub_embedding(text: str, dimension: int) -> list[float]:
    """The vector the stub returns for ``text``: sha256-derived, in [-1, 1]."""
    digest = hashlib.sha256(text.encode()).digest()
    return [(digest[i % len(digest)] - 127.5) / 127.5 for i in range(dimension)]


@dataclass(frozen=True)
class Delay:
    """Wait ``seconds`` (cut short when the stub stops), then behave like ``then``."""

    seconds: float
    then: Reply | ErrorStatus | Malformed | EmbeddingReply = field(
        default_factory=lambda: Reply("late")
    )


Behaviour = Reply | ErrorStatus | Malformed | Delay | EmbeddingReply


@dataclass(frozen=True)
class RecordedRequest:
    """One request the stub received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


class StubOpenAI(StopOnExit):
    """A scripted OpenAI-compatible server on a loopback port. Use as a context manager."""

    def __init__(self, script: Iterable[Behaviour] = (), *, model: str = "stub-model") -> None:
        self._script: list[Behaviour] = list(script)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.model = model
        self.requests: list[RecordedRequest] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting -------------------------------------------------------------------------

    def enqueue(self, *behaviours: Behaviour) -> None:
        """Append behaviours to the script."""
        with self._lock:
            self._script.extend(behaviours)

    def _next_behaviour(self) -> Behaviour:
        with self._lock:
            if self._script:
                return self._script.pop(0)
        return ErrorStatus(500, "stub script exhausted: enqueue more behaviours")

    @property
    def base_url(self) -> str:
        """The ``base_url`` to give an OpenAI client (ends in ``/v1``)."""
        if self._server is None:
            msg = "StubOpenAI is not running; use it as a context manager"
            raise RuntimeError(msg)
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> StubOpenAI:
        """Start serving in a daemon thread."""
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet test output
                return

            def do_POST(self) -> None:
                stub._handle(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; delayed responses are cut short."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> StubOpenAI:
        return self.start()

    # -- request handling ------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode("utf-8", "replace")
        with self._lock:
            self.requests.append(
                RecordedRequest("POST", handler.path, dict(handler.headers.items()), body)
            )
        route = handler.path.rstrip("/")
        if route not in ("/v1/chat/completions", "/v1/embeddings"):
            self._send_json(handler, 404, _error_body(f"no route {handler.path}", "not_found"))
            return
        behaviour = self._next_behaviour()
        if isinstance(behaviour, Delay):
            self._stopping.wait(behaviour.seconds)
            behaviour = behaviour.then
        wrong = (
            isinstance(behaviour, EmbeddingReply)
            if route == "/v1/chat/completions"
            else isinstance(behaviour, Reply)
        )
        if wrong:
            behaviour = ErrorStatus(500, f"stub: {type(behaviour).__name__} enqueued for {route}")
        # The client may have given up (timeout); then there is nobody to answer.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._respond(handler, behaviour, body)

    def _respond(
        self,
        handler: BaseHTTPRequestHandler,
        behaviour: Reply | ErrorStatus | Malformed | EmbeddingReply,
        body: Any = None,
    ) -> None:
        if isinstance(behaviour, EmbeddingReply):
            self._send_json(handler, 200, self._embeddings(behaviour, body))
        elif isinstance(behaviour, Reply):
            self._send_json(handler, 200, self._completion(behaviour))
        elif isinstance(behaviour, ErrorStatus):
            body = _error_body(behaviour.message, behaviour.type)
            self._send_json(handler, behaviour.status, body, behaviour.headers)
        else:
            self._send(handler, 200, behaviour.body, behaviour.content_type, {})

    def _completion(self, reply: Reply) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-stub-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.text},
                    "finish_reason": reply.finish_reason,
                    "logprobs": None,
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }

    def _embeddings(self, reply: EmbeddingReply, body: Any) -> dict[str, Any]:
        request = body if isinstance(body, dict) else {}
        inputs = request.get("input", [])
        inputs = [inputs] if isinstance(inputs, str) else list(inputs)
        dimension = reply.dimension or request.get("dimensions") or 8
        data = [
            {"object": "embedding", "index": i, "embedding": stub_embedding(str(text), dimension)}
            for i, text in enumerate(inputs)
        ]
        if reply.count is not None:  # too few: truncate; too many: repeat the last one
            data = data[: reply.count]
            while data and len(data) < reply.count:
                data.append({**data[-1], "index": len(data)})
        return {
            "object": "list",
            "data": data,
            "model": request.get("model", self.model),
            "usage": {"prompt_tokens": len(inputs), "total_tokens": len(inputs)},
        }

    @staticmethod
    def _send_json(
        handler: BaseHTTPRequestHandler,
        status: int,
        payload: Any,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        data = json.dumps(payload).encode()
        StubOpenAI._send(handler, status, data, "application/json", headers or {})

    @staticmethod
    def _send(
        handler: BaseHTTPRequestHandler,
        status: int,
        data: bytes,
        content_type: str,
        headers: Mapping[str, str],
    ) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)


def _error_body(message: str, type_: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": None}}


class _Closable(Protocol):
    def close(self) -> None: ...

    async def aclose(self) -> None: ...


AdapterT = TypeVar("AdapterT", bound=_Closable)


class AdapterFactory(Generic[AdapterT]):
    """Builds adapters pointed at ``stub``, SDK retries off and a 10 s timeout by default.

    Call it with keyword options (``model=...`` included) to override the defaults; close
    every adapter it built with :meth:`close` (sync tests) or :meth:`aclose` (async tests,
    so async clients are closed on the test's event loop).

    Example (inside a test with a running ``stub``)::

        make = AdapterFactory(OpenAIChatModel, stub, model="stub-model", api_key="sk-test")
        llm = make(temperature=0.3)
        make.close()
    """

    def __init__(
        self, adapter: Callable[..., AdapterT], stub: StubOpenAI, *, model: str, api_key: str
    ) -> None:
        self._adapter = adapter
        self._stub = stub
        self._model = model
        self._api_key = api_key
        self.made: list[AdapterT] = []

    def __call__(self, **kwargs: Any) -> AdapterT:
        options: dict[str, Any] = {"base_url": self._stub.base_url, "api_key": self._api_key}
        options |= {"max_retries": 0, "timeout": 10.0, **kwargs}
        made = self._adapter(options.pop("model", self._model), **options)
        self.made.append(made)
        return made

    def close(self) -> None:
        """Close the sync clients of every adapter built."""
        for made in self.made:
            made.close()

    async def aclose(self) -> None:
        """Close every client (sync and async) of every adapter built."""
        for made in self.made:
            await made.aclose()


def factory_fixtures(
    adapter: Callable[..., AdapterT], *, model: str, api_key: str, name: str
) -> tuple[Any, Any, Any]:
    """Three pytest fixtures for a test module of ``adapter``: ``stub`` (a running
    :class:`StubOpenAI`), ``name`` (an :class:`AdapterFactory` whose sync clients are
    closed after the test) and ``"a" + name`` (the same for async tests, closed on the
    test's event loop). Assign them to module names so that pytest finds them.

    Example::

        stub, make, amake = factory_fixtures(
            OpenAIEmbedder, model="stub-embed", api_key="sk-test", name="make"
        )
    """

    @pytest.fixture(name="stub")
    def stub_fixture() -> Iterator[StubOpenAI]:
        with StubOpenAI() as server:
            yield server

    @pytest.fixture(name=name)
    def make(stub: StubOpenAI) -> Iterator[AdapterFactory[AdapterT]]:
        factory = AdapterFactory(adapter, stub, model=model, api_key=api_key)
        yield factory
        factory.close()

    @pytest.fixture(name="a" + name)
    async def amake(stub: StubOpenAI) -> AsyncIterator[AdapterFactory[AdapterT]]:
        factory = AdapterFactory(adapter, stub, model=model, api_key=api_key)
        yield factory
        await factory.aclose()

    return stub_fixture, make, amake
