"""The /mcp ASGI app: the SDK's Streamable HTTP transport behind MailFathom's own gates.

From the outside in: the request deadline (504); the posture gate (`api-key`: a valid key or
401, and only the accounts the key may read; `oauth`: a valid access token for this /mcp or
401 naming the resource metadata, and only the accounts its person consented to and still
owns; `oauth+api-key`: either; `none`: loopback without proxy headers or 403);
the body screen (mailfathom.mcp.jsonrpc); then the SDK app, with Host and Origin allow-lists
(DNS-rebinding protection) and its JSON-RPC errors rewritten so none quotes caller input.
The transport is stateless with JSON responses, so any worker serves any request and a
timeout can still become a 504; GET (the server-to-client stream) is 405.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
from django.conf import settings
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers

from accounts.services import caller, mcp_oauth_tokens
from accounts.services.mcp_keys import KeyGrant, recently_refused, recently_verified, verify, well_formed
from accounts.services.scope import limited_to_accounts
from mailfathom.core import config
from mailfathom.core.config import MailFathomSettings
from mailfathom.core.errors import DEPENDENCY_UNAVAILABLE, DEPENDENCY_UNAVAILABLE_MESSAGE, MailFathomError
from mailfathom.core.hosts import is_loopback_host
from mailfathom.mcp.execution import UseCaseRunner, quick_slot_count
from mailfathom.mcp.jsonrpc import BodyScreen, PlainErrors, answer_error
from mailfathom.mcp.server import OWN_ERROR_MESSAGES, build_server
from mailfathom.outage import RETRY_AFTER_SECONDS, note, outage_of

logger = logging.getLogger("mailfathom.mcp")

MCP_PATH = "/mcp"
API_KEY, NO_AUTH, OAUTH, OAUTH_AND_KEYS = "api-key", "none", "oauth", "oauth+api-key"
RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource" + MCP_PATH

Scope = dict[str, Any]
ASGIApp = Any


async def _answer(send: Any, status: int, error: str, headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    body = json.dumps({"error": error}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


class Deadline:
    """Abandon a request that runs past `seconds` with 504 (if nothing was sent yet)."""

    def __init__(self, app: ASGIApp, seconds: float) -> None:
        self.app, self.seconds = app, seconds

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: dict[str, Any]) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        with anyio.move_on_after(self.seconds) as deadline:
            await self.app(scope, receive, tracking_send)
        if deadline.cancelled_caught:
            logger.warning("mcp: request abandoned after the %s s request timeout", self.seconds)
            if not started:
                await _answer(send, 504, "timeout")


class NoEventStream:
    """Answer GET with 405: this server offers no server-to-client event stream."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            await _answer(send, 405, "method not allowed", ((b"allow", b"POST"),))
            return
        await self.app(scope, receive, send)


async def answer_unavailable(send: Any) -> None:
    """503 with Retry-After and a JSON-RPC error carrying 54003: a dependency is unreachable."""
    unavailable = MailFathomError(DEPENDENCY_UNAVAILABLE, DEPENDENCY_UNAVAILABLE_MESSAGE)
    retry = ((b"retry-after", str(RETRY_AFTER_SECONDS).encode()),)
    await answer_error(
        send, DEPENDENCY_UNAVAILABLE.http_status, DEPENDENCY_UNAVAILABLE, str(unavailable), retry
    )


KEY_CHECK_WORKERS = 2


def key_caller(grant: KeyGrant) -> caller.Caller:
    """The requester an MCP API key is: its name. A key belongs to no person here (its name says
    who uses it), so no owner is named."""
    return caller.Caller(caller.MCP_KEY, caller.bounded_name(grant.name))


def bearer_token(scope: Scope) -> str:
    """The token of the request's `Authorization: Bearer` header; "" without one."""
    scheme, _, token = Headers(scope=scope).get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


async def key_grant(checks: UseCaseRunner, token: str) -> KeyGrant | None:
    """The grant of an API key (from the last few seconds' checks, else verified off the loop)."""
    if recently_refused(token):
        return None
    return recently_verified(token) or await checks.run(verify, token)


class BearerKeyGate:
    """Admit a request only with a valid, unrevoked MCP API key; limit it to the key's accounts.

    Keys are checked on a small pool of their own, never on the tool calls' pool, so a wrong
    key is refused at once even while every call slot is busy, and a flood of wrong keys
    queues behind `workers` key checks rather than in front of tool calls (a token not shaped
    like a key is refused on the spot, with no check at all). A key verified, or a token
    refused, in the last few seconds is answered with no query at all
    (accounts.services.mcp_keys). The
    key's accounts are set for the rest of the request, which carries them into every use
    case the request runs (accounts.services.scope).
    """

    def __init__(self, app: ASGIApp, workers: int = KEY_CHECK_WORKERS) -> None:
        self.app = app
        self.checks = UseCaseRunner(workers)

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        token = bearer_token(scope)
        grant = None
        if well_formed(token):
            try:
                grant = await key_grant(self.checks, token)
            except Exception as error:
                outage = outage_of(error)
                if outage is None:
                    raise
                note("mcp key check", outage)
                await answer_unavailable(send)
                return
        if grant is None:
            logger.info("mcp: request refused: no valid API key")
            await _answer(send, 401, "unauthorized", ((b"www-authenticate", b"Bearer"),))
            return
        with limited_to_accounts(grant.account_pks), caller.acting_as(key_caller(grant)):
            await self.app(scope, receive, send)


def request_base(scope: Scope) -> str:
    """The issuer for this request: MAILFATHOM_PUBLIC_BASE_URL, else the scheme and Host it came with.

    A forged Host can only change the audience a token must carry, so it can only refuse.
    """
    host = Headers(scope=scope).get("host", "")
    return mcp_oauth_tokens.base_url(f"{scope.get('scheme', 'http')}://{host}")


def bearer_challenge(base: str, *, invalid: bool) -> tuple[tuple[bytes, bytes], ...]:
    """WWW-Authenticate for a 401 from /mcp: where the resource metadata is, the scope to ask for."""
    value = f'Bearer resource_metadata="{base}{RESOURCE_METADATA_PATH}", scope="{mcp_oauth_tokens.SCOPE}"'
    if invalid:
        value += ', error="invalid_token"'
    return ((b"www-authenticate", value.encode("latin-1")),)


class OAuthGate:
    """Admit a request with a valid OAuth access token for this /mcp; limit it to what it may read.

    The accounts are those the person consented to, intersected with those they may connect
    now, checked on every request with no cache (accounts.services.mcp_oauth_tokens): a
    revoked token, connection or client, and an ownership removed, apply at the next call.
    With `keys` (posture oauth+api-key) a token shaped like an API key is checked as one
    (BearerKeyGate's rules); any other token is checked as an OAuth token. A refusal is 401
    with the resource metadata's URL, so a client can discover where to sign in.
    """

    def __init__(self, app: ASGIApp, *, keys: bool, workers: int = KEY_CHECK_WORKERS) -> None:
        self.app, self.keys = app, keys
        self.checks = UseCaseRunner(workers)

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        token = bearer_token(scope)
        base = request_base(scope)
        account_pks: frozenset[int] | None = None
        admitted = False
        who: caller.Caller | None = None
        try:
            if self.keys and well_formed(token):
                grant = await key_grant(self.checks, token)
                admitted, account_pks = grant is not None, grant.account_pks if grant else None
                who = key_caller(grant) if grant else None
            elif mcp_oauth_tokens.well_formed(token):
                found = await self.checks.run(
                    mcp_oauth_tokens.verify_access_token, token, mcp_oauth_tokens.resource_url(base)
                )
                admitted, account_pks = found is not None, found.account_pks if found else None
                if found is not None:
                    who = caller.Caller(
                        caller.OAUTH_TOKEN,
                        caller.bounded_name(found.client_name),
                        owner=caller.bounded_name(found.user_name),
                        client=caller.bounded_name(found.client_name, caller.CLIENT_NAME_LENGTH),
                    )
        except Exception as error:
            outage = outage_of(error)
            if outage is None:
                raise
            note("mcp token check", outage)
            await answer_unavailable(send)
            return
        if not admitted:
            logger.info("mcp: request refused: no valid access token")
            await _answer(send, 401, "unauthorized", bearer_challenge(base, invalid=bool(token)))
            return
        with limited_to_accounts(account_pks), caller.acting_as(who):
            await self.app(scope, receive, send)


# Headers a reverse proxy adds when it forwards a request (docs/operations/mcp-endpoint.md).
PROXY_HEADERS = frozenset({"forwarded", "x-forwarded-for", "x-real-ip", "x-forwarded-host"})


class LoopbackGate:
    """Posture none: serve only requests that arrived on a loopback address, not through a proxy.

    A reverse proxy on the same machine connects over loopback, so the socket alone would
    make every client it forwards look local. A request carrying a header a proxy adds is
    therefore refused too. Such a header can be forged, but only to refuse oneself: its
    absence proves nothing, its presence is enough to say no.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            server = scope.get("server")
            if not server or not is_loopback_host(str(server[0])):
                logger.warning("mcp: unauthenticated request on a non-loopback address refused")
                await _answer(send, 403, "forbidden")
                return
            if any(name.decode("latin-1").lower() in PROXY_HEADERS for name, _ in scope.get("headers", [])):
                logger.warning("mcp: unauthenticated request forwarded by a proxy refused")
                await _answer(send, 403, "forbidden")
                return
        await self.app(scope, receive, send)


def build_mcp_app() -> ASGIApp:
    """Build the /mcp app from settings; the system checks have already refused a bad posture."""
    values: MailFathomSettings = settings.MAILFATHOM

    def slots(count: int, name: str) -> UseCaseRunner:  # each kind waits and queues alike
        return UseCaseRunner(
            count,
            wait_seconds=values.mcp_slot_wait_seconds,
            max_waiting=values.mcp_max_waiting_calls,
            name=name,
        )

    runner = slots(quick_slot_count(values.mcp_max_concurrent_calls), "mcp-call")
    model_runner = slots(values.mcp_max_concurrent_model_calls, "mcp-model-call")
    server = build_server(runner, model_runner=model_runner)
    app: ASGIApp = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        json_response=True,
        stateless_http=True,
        max_request_body_size=values.mcp_max_body_bytes,
        transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=config.listed(values.mcp_allowed_hosts),
            allowed_origins=config.listed(values.mcp_allowed_origins),
        ),
    )
    app = BodyScreen(PlainErrors(app, OWN_ERROR_MESSAGES), values.mcp_body_timeout, values.mcp_max_body_bytes)
    posture = values.mcp_auth
    if posture == API_KEY:
        app = BearerKeyGate(app)
    elif posture in (OAUTH, OAUTH_AND_KEYS):
        app = OAuthGate(app, keys=posture == OAUTH_AND_KEYS)
    elif posture == NO_AUTH and not values.mcp_allow_unauthenticated_nonloopback:
        app = LoopbackGate(app)
    elif posture != NO_AUTH:
        raise RuntimeError("MAILFATHOM_MCP_AUTH is not a posture")  # the checks refuse it first
    _quiet_sdk_loggers()
    return Deadline(NoEventStream(app), values.mcp_request_timeout)


def _quiet_sdk_loggers() -> None:
    """Keep caller-written header values and per-request noise out of the log.

    The SDK logs a refused Host or Origin header's value at WARNING (caller text in the
    log; the 421/403 is in the access log) and "Terminating session" at INFO for every
    stateless request.
    """
    logging.getLogger("mcp.server.transport_security").setLevel(logging.ERROR)
    logging.getLogger("mcp.server.streamable_http").setLevel(logging.WARNING)
