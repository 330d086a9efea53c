"""What the OAuth tests of /mcp share: a person with two accounts, a client's loopback callback,
an https client ID metadata document, Chromium signing in and consenting, tokens issued by
the product's own use cases, and the real `mcp` client with the SDK's OAuth provider.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import ssl
import threading
import urllib.parse
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx2
from django.contrib.auth.models import User
from mcp import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from playwright.async_api import Page, async_playwright

from accounts.models import AccountMembership, MailAccount, McpOAuthClient, MembershipRole
from accounts.services import mcp_oauth_tokens as tokens
from tests.answering.support import World, build_world
from tests.browser.chromium import CHROMIUM, CHROMIUM_ARGS
from tests.dovecot import _write_certificates
from tests.mcp.conftest import sole_error
from tests.support import free_port, screenshots_dir

T = TypeVar("T")
PASSWORD = "a-person-who-owns-mail"
STEP_TIMEOUT_MS = 30_000


@dataclass
class Person:
    user: User
    username: str
    password: str
    world: World


def person_owning(*account_ids: str, username: str = "alice") -> User:
    """A person (not staff) who owns the accounts named, with a known password (PBKDF2-hashed)."""
    user = User(username=username, email=f"{username}@example.invalid")
    user.set_password(PASSWORD)
    user.save()
    for account in MailAccount.objects.filter(account_id__in=account_ids):
        AccountMembership.objects.create(account=account, user=user, role=MembershipRole.OWNER)
    return user


# --- a client's side: its loopback callback and its metadata document --------------------------


class _Server(http.server.HTTPServer):
    """A loopback server that records its callbacks' queries and may serve one JSON document."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", free_port()), _Recorder)
        self.queries: list[dict[str, str]] = []
        self.document: dict[str, Any] | None = None
        self.document_path = ""
        self.documents_served = 0


class _Recorder(http.server.BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        parts = urllib.parse.urlsplit(self.path)
        body = b"Signed in; you may close this window."
        if parts.path == self.server.document_path and self.server.document is not None:
            body = json.dumps(self.server.document).encode()
            self.server.documents_served += 1
        elif parts.path == "/callback":
            self.server.queries.append(dict(urllib.parse.parse_qsl(parts.query)))
        self.send_response(200)
        self.send_header("Content-Type", "application/json" if body.startswith(b"{") else "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@dataclass
class ClientSide:
    """A client's loopback callback (http) and, on https, its client ID metadata document."""

    callback_url: str
    document_url: str
    ca_path: Path
    callback: _Server
    documents: _Server

    def last_callback(self) -> dict[str, str]:
        return self.callback.queries[-1]


def _serve(server: http.server.HTTPServer) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return thread


@contextmanager
def client_side(
    directory: Path, client_name: str = "Test assistant (metadata document)"
) -> Iterator[ClientSide]:
    """Start the callback and the https document server (its CA in `ca_path`); stop both after."""
    ca_path, cert_path, key_path = _write_certificates(directory)
    callback, documents = _Server(), _Server()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    documents.socket = context.wrap_socket(documents.socket, server_side=True)
    callback_url = f"http://127.0.0.1:{callback.server_port}/callback"
    document_url = f"https://127.0.0.1:{documents.server_port}/client.json"
    documents.document_path = "/client.json"
    documents.document = {
        "client_id": document_url,
        "client_name": client_name,
        "redirect_uris": [callback_url],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }
    threads = [_serve(callback), _serve(documents)]
    try:
        yield ClientSide(callback_url, document_url, ca_path, callback, documents)
    finally:
        for server in (callback, documents):
            server.shutdown()
            server.server_close()
        for thread in threads:
            thread.join(timeout=5)


# --- the person's side: Chromium --------------------------------------------------------------


async def sign_in_and_consent(
    url: str,
    username: str,
    password: str,
    choose: list[str],
    *,
    screenshots: Path | None = None,
    decision: str = "Allow",
) -> str:
    """Open `url` in Chromium, sign in, tick the accounts shown as `choose`, answer; return the final URL."""
    parts = urllib.parse.urlsplit(url)
    server_origin = f"{parts.scheme}://{parts.netloc}/"
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page()
            page.set_default_timeout(STEP_TIMEOUT_MS)
            await page.goto(url)
            await page.fill("#id_username", username)
            await page.fill("#id_password", password)
            await _shot(page, screenshots, "01-sign-in")
            try:
                await page.click("button[type=submit]")
                await page.wait_for_selector("#client-name")
                for label in choose:
                    await page.get_by_label(label).check()
                await _shot(page, screenshots, "02-consent")
                await page.click(f"button[value={decision.lower()}]")
                await page.wait_for_url(lambda address: not address.startswith(server_origin))
            except Exception:
                await _shot(page, screenshots_dir() / "oauth-failed", "where-it-stopped")
                raise
            return page.url
        finally:
            await browser.close()


async def _shot(page: Page, directory: Path | None, name: str) -> None:
    if directory is not None:
        directory.mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=str(directory / f"{name}.png"), full_page=True)


# --- the SDK's OAuth client ----------------------------------------------------------------------


class MemoryStorage(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


def with_oauth_client(
    url: str,
    side: ClientSide,
    person: tuple[str, str],
    choose: list[str],
    action: Callable[[Client], Awaitable[T]],
    *,
    metadata_document: bool = False,
    storage: MemoryStorage | None = None,
    screenshots: Path | None = None,
) -> T:
    """Connect the real `mcp` client to `url` through its OAuth provider, consenting in Chromium."""
    authorization_urls: list[str] = []

    async def redirect_handler(authorization_url: str) -> None:
        authorization_urls.append(authorization_url)
        await sign_in_and_consent(authorization_url, *person, choose, screenshots=screenshots)

    async def callback_handler() -> AuthorizationCodeResult:
        query = side.last_callback()
        assert "code" in query, query
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="Test assistant (registered)",
            redirect_uris=[side.callback_url],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage or MemoryStorage(),
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
        client_metadata_url=side.document_url if metadata_document else None,
    )

    async def run() -> T:
        async with httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(30, read=120)) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                return await action(client)

    try:
        return anyio.run(run)
    except BaseExceptionGroup as group:
        raise sole_error(group) from None


# --- a client's requests by hand ---------------------------------------------------------------

VERIFIER = "v" * 64


def s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")


def register_over_http(base: str, callback_url: str, **metadata: Any) -> str:
    """Register a public client at `base` (RFC 7591) and return its client_id."""
    document = {
        "client_name": "By hand",
        "redirect_uris": [callback_url],
        "token_endpoint_auth_method": "none",
    }
    response = httpx2.post(base + "/oauth/register", json={**document, **metadata}, timeout=30)
    assert response.status_code == 201, response.text
    client_id: str = response.json()["client_id"]
    return client_id


def authorization_query(client_id: str, redirect_uri: str, resource: str, **overrides: str) -> str:
    """An authorization request's query, S256 over VERIFIER, state s1; `overrides` replace or add."""
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "state": "s1",
        "code_challenge": s256(VERIFIER),
        "code_challenge_method": "S256",
        "resource": resource,
        **overrides,
    }
    return urllib.parse.urlencode({key: value for key, value in query.items() if value is not None})


# --- tokens issued by the product's own use cases, for the refusal tests -----------------------


def issue_token(
    user: User, account_ids: list[str], resource: str, client: McpOAuthClient | None = None
) -> tuple[str, str, McpOAuthClient]:
    """An access and a refresh token for `user`'s consent to `account_ids`, bound to `resource`."""
    client = client or McpOAuthClient.objects.create(
        client_id=f"mfcl_test_{user.pk}_{McpOAuthClient.objects.count()}",
        kind="registered",
        client_name="Issued in a test",
        redirect_uris=["http://127.0.0.1:9/callback"],
    )
    code = tokens.CODES.issue().secret
    tokens.store_code(
        code=code,
        client=client,
        user=user,
        account_pks=list(MailAccount.objects.filter(account_id__in=account_ids).values_list("pk", flat=True)),
        redirect_uri="http://127.0.0.1:9/callback",
        resource=resource,
        code_challenge="x" * 43,
        code_challenge_method="S256",
    )
    claimed = tokens.claim_code(code, client)
    assert claimed is not None
    access, refresh = tokens.new_tokens(refresh=True)
    tokens.open_connection(claimed, access, refresh)
    assert refresh is not None
    return access, refresh, client


def world_with_people() -> tuple[World, User, User]:
    """Accounts work and private; alice owns both, bob owns private only."""
    world = build_world()
    return world, person_owning("work", "private", username="alice"), person_owning("private", username="bob")
