"""The JSON-RPC edge of /mcp: the body read, the envelope check, and errors that quote nothing.

BodyScreen reads the body within its own deadline (MAILFATHOM_MCP_BODY_TIMEOUT, 408) and the
body limit (413), then refuses with -32600 a message the SDK would accept and never answer
(a request without an id, or an id MCP does not allow). PlainErrors rewrites the SDK's
JSON-RPC errors to a fixed sentence per code with no `data`, because the SDK's texts repeat
caller input; a validation error keeps at most a path made of the protocol's own fields, and
an unsupported protocol version (-32022) keeps `data.supported`, the server's own versions
(each checked against the SDK's list of versions), and `data.requested` only when it has the
shape of a version (the schema requires it).
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import anyio
import mcp_types
import pydantic
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from mcp_types.version import SUPPORTED_PROTOCOL_VERSIONS
from starlette.datastructures import Headers

from mailfathom.core.errors import CALLER_CATEGORY

logger = logging.getLogger("mailfathom.mcp")

ASGIApp = Any
Scope = dict[str, Any]

NOTIFICATION_PREFIX = "notifications/"

PARSE_ERROR_MESSAGE = "Parse error: the request body is not JSON."
NOT_ONE_MESSAGE = (
    "Invalid Request: the body must be one JSON-RPC 2.0 request, notification or response object "
    "(batches are not served)."
)
BAD_ID_MESSAGE = "Invalid Request: an id must be a string or an integer."
NO_ID_MESSAGE = (
    "Invalid Request: a request needs an id (a string or an integer); "
    "only notifications/... methods are sent without one, and they get no answer."
)
BAD_METHOD_MESSAGE = "Invalid Request: method must be a string."
BODY_TIMEOUT_MESSAGE = "Request Timeout: the request body did not arrive within the body timeout."
TOO_LARGE_MESSAGE = "Request body too large."

FIXED_MESSAGES = {
    PARSE_ERROR: PARSE_ERROR_MESSAGE,
    INVALID_REQUEST: "Invalid Request: the message is not a JSON-RPC request this server serves.",
    METHOD_NOT_FOUND: "Method not found: this server does not serve that method (see the MCP specification).",
    INVALID_PARAMS: "Invalid params: the parameters do not match what the method takes.",
    INTERNAL_ERROR: "Internal error: the request failed; nothing about it is described here.",
    UNSUPPORTED_PROTOCOL_VERSION: "Unsupported protocol version.",
}
OTHER_MESSAGE = "The request was refused."


def error_body(code: int, message: str) -> bytes:
    """A JSON-RPC error with a null id (the request's id is unknown or unusable)."""
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    return json.dumps(body, separators=(",", ":")).encode()


async def answer_error(
    send: Any, status: int, code: int, message: str, headers: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    body = error_body(code, message)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def refusal_of(body: bytes) -> tuple[int, str] | None:
    """The JSON-RPC error (code, message) `body` gets before the SDK sees it, or None to pass it on."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return PARSE_ERROR, PARSE_ERROR_MESSAGE
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return INVALID_REQUEST, NOT_ONE_MESSAGE
    if "method" not in message:
        if "result" in message or "error" in message:
            return None  # a response to a request of the server's: the SDK answers it
        return INVALID_REQUEST, NOT_ONE_MESSAGE
    method = message["method"]
    if not isinstance(method, str):
        return INVALID_REQUEST, BAD_METHOD_MESSAGE
    if "id" in message:
        request_id = message["id"]
        if isinstance(request_id, bool) or not isinstance(request_id, str | int):
            return INVALID_REQUEST, BAD_ID_MESSAGE
        return None
    if not method.startswith(NOTIFICATION_PREFIX):
        return INVALID_REQUEST, NO_ID_MESSAGE
    return None


class BodyScreen:
    """Read a POST body within `seconds` and `max_bytes`, refuse an unanswerable message, replay it."""

    def __init__(self, app: ASGIApp, seconds: float, max_bytes: int) -> None:
        self.app, self.seconds, self.max_bytes = app, seconds, max_bytes

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await answer_error(send, 413, INVALID_REQUEST, TOO_LARGE_MESSAGE, ((b"connection", b"close"),))
            return
        chunks: list[bytes] = []
        size, complete, too_large = 0, False, False
        trailing: dict[str, Any] | None = None
        with anyio.move_on_after(self.seconds) as waited:
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    trailing = message  # the client went away
                    break
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self.max_bytes:
                    too_large = True
                    break
                chunks.append(chunk)
                if not message.get("more_body", False):
                    complete = True
                    break
        close = ((b"connection", b"close"),)
        if waited.cancelled_caught:
            logger.warning("mcp: request body not received within the %s s body timeout", self.seconds)
            await answer_error(send, 408, INVALID_REQUEST, BODY_TIMEOUT_MESSAGE, close)
            return
        if too_large:
            await answer_error(send, 413, INVALID_REQUEST, TOO_LARGE_MESSAGE, close)
            return
        if not complete:
            return  # disconnected: nobody to answer
        body = b"".join(chunks)
        refusal = refusal_of(body)
        if refusal is not None:
            await answer_error(send, 400, *refusal)
            return
        await self.app(scope, _replaying(body, receive, trailing), send)


def _replaying(body: bytes, receive: Any, trailing: dict[str, Any] | None) -> Any:
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        if trailing is not None:
            return trailing
        message: dict[str, Any] = await receive()
        return message

    return replay


def _protocol_field_names() -> frozenset[str]:
    names: set[str] = set()
    for value in vars(mcp_types).values():
        if isinstance(value, type) and issubclass(value, pydantic.BaseModel):
            for name, info in value.model_fields.items():
                names.add(name)
                if info.alias:
                    names.add(info.alias)
    return frozenset(names)


PROTOCOL_FIELDS = _protocol_field_names()
_LOCATION = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*")


def field_path(text: str) -> str | None:
    """The first field path a pydantic error text names, when every part is a protocol field.

    A location line names the model first (`JSONRPCRequest.params`); that part is dropped.
    """
    for line in text.splitlines()[1:]:
        if line.startswith(" ") or not _LOCATION.fullmatch(line):
            continue
        parts = line.split(".")
        if parts and parts[0][:1].isupper():
            parts = parts[1:]
        if parts and all(part.isdigit() or part in PROTOCOL_FIELDS for part in parts):
            return ".".join(parts)
    return None


# What a protocol version looks like ("2026-07-28", "v1.2.0"): short, no spaces, no markup.
_VERSION_SHAPE = re.compile(r"[A-Za-z0-9._-]{1,32}")


def supported_versions(data: Any) -> list[str]:
    """The versions an unsupported-version error's data lists that this SDK knows as its own.

    The spec's UnsupportedProtocolVersionError (2026-07-28, basic/versioning) carries
    `supported`, the server's versions, and `requested`, the caller's; only known versions
    pass as `supported`, so nothing a caller wrote can (see requested_version for the other).
    """
    listed = data.get("supported") if isinstance(data, dict) else None
    if not isinstance(listed, list):
        return []
    return [item for item in listed if isinstance(item, str) and item in SUPPORTED_PROTOCOL_VERSIONS]


def requested_version(data: Any) -> str | None:
    """The version the caller asked for, as the schema requires it repeated, if version-shaped.

    The one piece of caller text an error repeats, because schema/2026-07-28 makes
    `requested` required: only 1 to 32 letters, digits, dots, dashes and underscores, so it
    can carry no markup, whitespace or prose. Anything else is left out.
    """
    requested = data.get("requested") if isinstance(data, dict) else None
    if isinstance(requested, str) and _VERSION_SHAPE.fullmatch(requested):
        return requested
    return None


def plain(error: dict[str, Any], own: frozenset[str]) -> dict[str, Any]:
    """`error` (a JSON-RPC error object) with a fixed message and no data, unless it is our own.

    The one `data` kept is an unsupported-version error's `supported` (supported_versions).
    """
    code, message = error.get("code"), error.get("message")
    if isinstance(code, int) and (code in CALLER_CATEGORY or message in own):
        return error
    if not isinstance(code, int):
        return {"code": INTERNAL_ERROR, "message": FIXED_MESSAGES[INTERNAL_ERROR]}
    fixed = FIXED_MESSAGES.get(code, OTHER_MESSAGE)
    if code == INVALID_PARAMS and isinstance(message, str):
        path = field_path(message)
        if path:
            fixed = f"{fixed.removesuffix('.')} (field {path})."
    if code == UNSUPPORTED_PROTOCOL_VERSION:
        supported = supported_versions(error.get("data"))
        if supported:
            data: dict[str, Any] = {"supported": supported}
            requested = requested_version(error.get("data"))
            if requested is not None:
                data["requested"] = requested
            return {"code": code, "message": fixed, "data": data}
    return {"code": code, "message": fixed}


class PlainErrors:
    """Rewrite the JSON-RPC errors the wrapped app answers (see the module docstring).

    Only a JSON response is read, and it is one document (the transport runs with JSON
    responses); anything else passes as it is.
    """

    def __init__(self, app: ASGIApp, own_messages: frozenset[str]) -> None:
        self.app, self.own = app, own_messages

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start: dict[str, Any] | None = None
        parts: list[bytes] = []

        async def rewriting_send(message: dict[str, Any]) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                content_type = dict(message.get("headers", [])).get(b"content-type", b"")
                if content_type.startswith(b"application/json"):
                    start = message
                    return
            elif message["type"] == "http.response.body" and start is not None:
                parts.append(message.get("body", b""))
                if message.get("more_body", False):
                    return
                body = self._rewritten(b"".join(parts))
                headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
                headers.append((b"content-length", str(len(body)).encode()))
                await send({**start, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                start = None
                return
            await send(message)

        await self.app(scope, receive, rewriting_send)

    def _rewritten(self, body: bytes) -> bytes:
        if b'"error"' not in body:
            return body  # no error member, so nothing to rewrite: spare parsing a large result
        try:
            document = json.loads(body)
        except ValueError:
            return body
        if not (isinstance(document, dict) and isinstance(document.get("error"), dict)):
            return body
        document["error"] = plain(document["error"], self.own)
        return json.dumps(document, separators=(",", ":")).encode()
