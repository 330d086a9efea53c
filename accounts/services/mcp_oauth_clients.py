"""The clients of /mcp's authorization server: metadata documents, registrations, redirect URIs.

A client is known by its client ID metadata document (an https client_id, fetched under the
guards of fetch_document) or by registering itself (RFC 7591) while dynamic registration is
on; docs/operations/connecting-assistants.md has the settings for each.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import socket
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import requests
from django.conf import settings
from django.utils import timezone

from accounts.models import ClientKind, McpOAuthClient
from mailfathom.core import config, credentials
from mailfathom.core.hosts import is_loopback_host
from mailfathom.core.text import has_control_character

HTTP_TIMEOUT_SECONDS = 5
MAX_DOCUMENT_BYTES = 64 * 1024
DOCUMENT_CACHE_SECONDS = 300
MAX_REDIRECT_URIS = 10
MAX_URI_LENGTH = 2048
MAX_NAME_LENGTH = 200
SECRET_METHODS = ("client_secret_post", "client_secret_basic")
AUTH_METHODS = ("none", *SECRET_METHODS)
# Schemes a redirect URI may never use: they run code or read files instead of reaching an app.
FORBIDDEN_SCHEMES = frozenset({"javascript", "data", "file", "vbscript", "about", "blob"})

CLIENT_SECRETS = credentials.Kind("mfs_")


class ClientRefused(Exception):
    """A client or its metadata this server will not accept; the message says why, quoting nothing."""


def is_metadata_url(client_id: str) -> bool:
    """Whether `client_id` names a client ID metadata document rather than a registration."""
    return client_id.startswith("https://") or (
        client_id.startswith("http://") and settings.MAILFATHOM.mcp_oauth_loopback_client_metadata
    )


def find_client(client_id: str) -> McpOAuthClient | None:
    """The enabled client `client_id` names, fetching its metadata document when it is a URL.

    None for an unknown or disabled client, and for a document that cannot be fetched or is
    not acceptable (the reason is logged by the caller's error, never sent to the client).
    """
    if not client_id or len(client_id) > MAX_URI_LENGTH or has_control_character(client_id):
        return None
    if is_metadata_url(client_id):
        try:
            return client_from_document(client_id)
        except ClientRefused:
            return None
    return McpOAuthClient.objects.enabled().filter(client_id=client_id, kind=ClientKind.REGISTERED).first()


def client_from_document(url: str) -> McpOAuthClient | None:
    """The client whose metadata document is at `url`, read again when the copy is stale.

    ClientRefused when the URL or the document is not acceptable; None when an operator
    disabled the client.
    """
    known = McpOAuthClient.objects.filter(client_id=url, kind=ClientKind.METADATA_DOCUMENT).first()
    if known is not None and known.is_disabled:
        return None
    fresh = timezone.now() - timedelta(seconds=DOCUMENT_CACHE_SECONDS)
    if known is not None and known.fetched_at is not None and known.fetched_at > fresh:
        return known
    document = fetch_document(url)
    values = _document_values(url, document)
    record, _ = McpOAuthClient.objects.update_or_create(
        client_id=url,
        defaults={**values, "kind": ClientKind.METADATA_DOCUMENT, "fetched_at": timezone.now()},
    )
    return None if record.is_disabled else record


def _document_values(url: str, document: Any) -> dict[str, Any]:
    if not isinstance(document, dict):
        raise ClientRefused("The client metadata document is not a JSON object.")
    if document.get("client_id") != url:
        raise ClientRefused("The client metadata document names another client_id than its own URL.")
    method = document.get("token_endpoint_auth_method", "none")
    if method != "none" or "client_secret" in document:
        raise ClientRefused("A client identified by a metadata document must be public (no secret).")
    return {
        "client_name": _name(document.get("client_name"), default=urlsplit(url).hostname or "client"),
        "client_uri": _optional_uri(document.get("client_uri")),
        "redirect_uris": checked_redirect_uris(document.get("redirect_uris")),
        "token_endpoint_auth_method": "none",
    }


def _allowed_metadata_host(host: str) -> bool:
    listed = [item.lower() for item in config.listed(settings.MAILFATHOM.mcp_oauth_client_metadata_hosts)]
    return "*" in listed or host.lower() in listed


def fetch_document(url: str) -> Any:
    """GET the JSON document at `url`: https, an allowed public host, bounded, no redirects.

    Loopback (and http on it) only with MAILFATHOM_MCP_OAUTH_LOOPBACK_CLIENT_METADATA, for
    development and tests; the copy is read again after DOCUMENT_CACHE_SECONDS.
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    loopback_allowed = settings.MAILFATHOM.mcp_oauth_loopback_client_metadata
    loopback = is_loopback_host(host)
    if parts.scheme != "https" and not (parts.scheme == "http" and loopback and loopback_allowed):
        raise ClientRefused("A client metadata document must be served over https.")
    if parts.username or parts.password or parts.fragment or parts.path in ("", "/"):
        raise ClientRefused("A client metadata URL has a path, and no credentials or fragment.")
    if not (loopback and loopback_allowed) and not _allowed_metadata_host(host):
        raise ClientRefused("Client metadata documents from this host are not accepted here.")
    _check_addresses(host, parts.port or (443 if parts.scheme == "https" else 80), loopback_allowed)
    try:
        with requests.get(
            url,
            timeout=HTTP_TIMEOUT_SECONDS,
            allow_redirects=False,
            stream=True,
            headers={"Accept": "application/json"},
        ) as response:
            if response.status_code != 200:
                raise ClientRefused("The client metadata document could not be fetched.")
            body = b""
            for chunk in response.iter_content(8192):
                body += chunk
                if len(body) > MAX_DOCUMENT_BYTES:
                    raise ClientRefused("The client metadata document is larger than this server reads.")
    except requests.RequestException as error:
        raise ClientRefused("The client metadata document could not be fetched.") from error
    try:
        return json.loads(body)
    except ValueError as error:
        raise ClientRefused("The client metadata document is not JSON.") from error


def _check_addresses(host: str, port: int, loopback_allowed: bool) -> None:
    """Refuse a host that resolves to any address that is not public (loopback when allowed).

    The name is resolved again when the request connects, so a name that changes its answer
    in between could still reach a private address: the host allow-list is the stronger guard.
    """
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as error:
        raise ClientRefused("The client metadata host does not resolve.") from error
    for info in found:
        address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if address.is_loopback and loopback_allowed:
            continue
        if not address.is_global:
            raise ClientRefused("The client metadata host resolves to an address that is not public.")


def _name(value: object, default: str) -> str:
    if not isinstance(value, str) or not value.strip():
        return default[:MAX_NAME_LENGTH]
    if has_control_character(value):
        raise ClientRefused("A client name may not contain control characters.")
    return value.strip()[:MAX_NAME_LENGTH]


def _optional_uri(value: object) -> str:
    if not isinstance(value, str) or not value:
        return ""
    if len(value) > MAX_URI_LENGTH or urlsplit(value).scheme != "https":
        return ""
    return value


def checked_redirect_uris(uris: object) -> list[str]:
    """The redirect URIs a client declares, or ClientRefused.

    Accepted: https; http only on a loopback host; a private-use scheme of a native app
    (RFC 8252 §7.1). Never a scheme that runs code or reads files, never a fragment.
    """
    if not isinstance(uris, list) or not uris or len(uris) > MAX_REDIRECT_URIS:
        raise ClientRefused(f"A client declares 1 to {MAX_REDIRECT_URIS} redirect URIs.")
    checked = []
    for uri in uris:
        if not isinstance(uri, str) or not uri or len(uri) > MAX_URI_LENGTH or has_control_character(uri):
            raise ClientRefused("Each redirect URI is a URL of at most 2048 characters.")
        parts = urlsplit(uri)
        scheme = parts.scheme.lower()
        if not scheme or parts.fragment or scheme in FORBIDDEN_SCHEMES:
            raise ClientRefused("A redirect URI has a scheme, no fragment, and no script or file scheme.")
        if scheme == "http" and not is_loopback_host(parts.hostname or ""):
            raise ClientRefused("A plain-http redirect URI must be on a loopback address.")
        if scheme in ("http", "https") and not parts.hostname:
            raise ClientRefused("A redirect URI names a host.")
        checked.append(uri)
    return checked


def redirect_uri_matches(registered: list[str], requested: str) -> bool:
    """Whether `requested` is one of `registered`: exactly, or a loopback one on another port.

    Any port on loopback, as RFC 8252 §7.3 asks for native apps that listen on whatever port
    is free.
    """
    if requested in registered:
        return True
    wanted = urlsplit(requested)
    if wanted.scheme != "http" or not is_loopback_host(wanted.hostname or ""):
        return False
    for uri in registered:
        known = urlsplit(uri)
        if (
            known.scheme == "http"
            and known.hostname == wanted.hostname
            and known.path == wanted.path
            and known.query == wanted.query
            and known.username is None
            and wanted.username is None
        ):
            return True
    return False


def register_client(metadata: dict[str, Any], client_id: str) -> tuple[McpOAuthClient, str | None]:
    """Store a client that registered itself; return it and its secret (None for a public client).

    `metadata` has passed RFC 7591's checks (authlib's claims); ClientRefused for what this
    server adds: redirect URIs, the authentication method, the name.
    """
    method = metadata.get("token_endpoint_auth_method") or "client_secret_basic"
    if method not in AUTH_METHODS:
        raise ClientRefused(
            "The token endpoint authentication method is none, client_secret_post or client_secret_basic."
        )
    grant_types = metadata.get("grant_types") or ["authorization_code"]
    if not set(grant_types) <= {"authorization_code", "refresh_token"}:
        raise ClientRefused("Only the authorization_code and refresh_token grants are offered.")
    secret = CLIENT_SECRETS.issue() if method in SECRET_METHODS else None
    record = McpOAuthClient.objects.create(
        client_id=client_id,
        kind=ClientKind.REGISTERED,
        client_name=_name(metadata.get("client_name"), default="Unnamed client"),
        client_uri=_optional_uri(metadata.get("client_uri")),
        redirect_uris=checked_redirect_uris(metadata.get("redirect_uris")),
        token_endpoint_auth_method=method,
        client_secret_hash=secret.digest if secret else "",
    )
    return record, secret.secret if secret else None


def secret_matches(client: McpOAuthClient, secret: object) -> bool:
    """Whether `secret` is the client's secret (compared by digest, so in constant time)."""
    if not client.client_secret_hash or not CLIENT_SECRETS.well_formed(secret):
        return False
    return hmac.compare_digest(credentials.digest(str(secret)), client.client_secret_hash)


def disable_client(client_pk: int) -> bool:
    """Disable a client: every sign-in, token request and /mcp call of it is refused from now on."""
    return bool(McpOAuthClient.objects.enabled().filter(pk=client_pk).update(disabled_at=timezone.now()))
