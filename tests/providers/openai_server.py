"""A scripted OpenAI-compatible HTTP server for tests: real sockets, the real SDK on the other end.

    with ScriptedOpenAIServer(dimensions=384) as server:
        server.embeddings.script(status(429, retry_after="1"), ok())
        server.chat.script(text("The invoice is due Friday."), tool_calls(("search", {"q": "x"})))
        client = openai.OpenAI(base_url=server.base_url, api_key="test-key")

Each endpoint (POST /v1/embeddings, POST /v1/chat/completions) answers from its own queue of
behaviours, one per request, and falls back to its default behaviour (`ok()` / a short text)
when the queue is empty. Embedding vectors are derived from a hash of each input text, so
one text always gets one vector and different texts get different ones. Every request is
recorded (path, model, inputs, messages, authorization header) for assertions.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Behaviour:
    """What the server does with one request."""

    action: str  # "ok", "status", "hang", "text", "tool_calls"
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    seconds: float = 0.0
    dimensions: int | None = None  # ok(): override the vector length (a wrong dimension)
    content: str = ""
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    body: dict[str, Any] | None = None


def ok(dimensions: int | None = None) -> Behaviour:
    return Behaviour("ok", dimensions=dimensions)


def wrong_dimension(dimensions: int = 7) -> Behaviour:
    return Behaviour("ok", dimensions=dimensions)


def status(code: int, message: str = "scripted failure", retry_after: str | None = None) -> Behaviour:
    headers = (("Retry-After", retry_after),) if retry_after is not None else ()
    body = {"error": {"message": message, "type": "scripted", "code": str(code)}}
    return Behaviour("status", status=code, headers=headers, body=body)


def model_not_found() -> Behaviour:
    return status(404, "The model does not exist.")


def hang(seconds: float) -> Behaviour:
    """Answer ok, but only after `seconds` (the client's deadline should fire first)."""
    return Behaviour("hang", seconds=seconds)


def text(content: str) -> Behaviour:
    return Behaviour("text", content=content)


def tool_calls(*calls: tuple[str, dict[str, Any]]) -> Behaviour:
    return Behaviour("tool_calls", calls=calls)


def vector_for(text_: str, dimensions: int) -> list[float]:
    """The unit vector the server returns for `text_` (deterministic, hash-derived)."""
    values: list[float] = []
    counter = 0
    while len(values) < dimensions:
        digest = hashlib.sha256(f"{counter}:{text_}".encode()).digest()
        values.extend(byte / 127.5 - 1.0 for byte in digest)
        counter += 1
    values = values[:dimensions]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


@dataclass
class Recorded:
    path: str
    model: str | None
    inputs: list[str] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    authorization: str | None = None
    body: dict[str, Any] = field(default_factory=dict)


class Script:
    """The behaviour queue of one endpoint."""

    def __init__(self, default: Behaviour) -> None:
        self.default = default
        self._queue: deque[Behaviour] = deque()
        self._lock = threading.Lock()

    def script(self, *behaviours: Behaviour) -> None:
        with self._lock:
            self._queue.extend(behaviours)

    def next(self) -> Behaviour:
        with self._lock:
            return self._queue.popleft() if self._queue else self.default


class ScriptedOpenAIServer:
    def __init__(self, dimensions: int = 384) -> None:
        self.dimensions = dimensions
        self.embeddings = Script(ok())
        self.chat = Script(text("Scripted answer."))
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def count(self, endpoint: str = "embeddings") -> int:
        with self._lock:
            return sum(1 for r in self.requests if r.path.endswith(endpoint))

    def start(self) -> ScriptedOpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # ends every hang at once
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _record(self, recorded: Recorded) -> None:
        with self._lock:
            self.requests.append(recorded)

    def _embeddings_body(self, request: dict[str, Any], behaviour: Behaviour) -> dict[str, Any]:
        inputs = request["input"] if isinstance(request["input"], list) else [request["input"]]
        size = behaviour.dimensions or self.dimensions
        data = []
        for index, item in enumerate(inputs):
            vector = vector_for(item, size)
            if request.get("encoding_format") == "base64":
                encoded: Any = base64.b64encode(struct.pack(f"<{size}f", *vector)).decode()
            else:
                encoded = vector
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        usage = {"prompt_tokens": len(inputs), "total_tokens": len(inputs)}
        return {"object": "list", "data": data, "model": request.get("model"), "usage": usage}

    def _chat_body(self, request: dict[str, Any], behaviour: Behaviour) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": behaviour.content or None}
        finish = "stop"
        if behaviour.action == "tool_calls":
            message["tool_calls"] = [
                {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                for i, (n, a) in enumerate(behaviour.calls)
            ]
            finish = "tool_calls"
        return {
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }


def _handler_for(server: ScriptedOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _send(self, code: int, body: dict[str, Any], headers: tuple[tuple[str, str], ...] = ()) -> None:
            payload = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            try:
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            length = int(self.headers.get("Content-Length") or 0)
            request = json.loads(self.rfile.read(length) or b"{}")
            embeddings = self.path.endswith("/embeddings")
            if not embeddings and not self.path.endswith("/chat/completions"):
                self._send(404, {"error": {"message": "unknown route"}})
                return
            inputs = request.get("input", [])
            server._record(
                Recorded(
                    path=self.path,
                    model=request.get("model"),
                    inputs=inputs if isinstance(inputs, list) else [inputs],
                    messages=request.get("messages", []),
                    authorization=self.headers.get("Authorization"),
                    body=request,
                )
            )
            script = server.embeddings if embeddings else server.chat
            behaviour = script.next()
            if behaviour.action == "status":
                self._send(behaviour.status, behaviour.body or {}, behaviour.headers)
                return
            if behaviour.action == "hang":
                if server._stopping.wait(behaviour.seconds):
                    return
                behaviour = script.default
            if embeddings:
                self._send(200, server._embeddings_body(request, behaviour))
            else:
                self._send(200, server._chat_body(request, behaviour))

    return Handler
