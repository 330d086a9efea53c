"""OAuth tokens for /mcp: issue, rotate, verify on every call, revoke; and each person's connections.

Access tokens (`mfo_`) and refresh tokens (`mfr_`) are credentials of mailfathom.core.credentials:
256 random bits, only the SHA-256 stored. An access token works for
MAILFATHOM_MCP_OAUTH_ACCESS_TOKEN_MINUTES; a refresh token is replaced at each use, and one
presented again after it was replaced revokes its whole connection (it was copied).

The /mcp gate asks `verify_access_token` on every request, with no cache: a revoked token,
a revoked connection, a disabled client and a person who no longer owns an account all take
effect on the next call. What a call may read is the accounts the person consented to,
intersected with the accounts they may connect now (accounts.services.people).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from accounts.models import McpAuthorizationCode, McpConnection, McpOAuthClient, McpToken
from accounts.services.people import connectable_accounts
from mailfathom.core import credentials

ACCESS_TOKENS = credentials.Kind("mfo_")
REFRESH_TOKENS = credentials.Kind("mfr_")
CODES = credentials.Kind("mfc_")
CODE_SECONDS = 120
SCOPE = "mail:read"
SCOPES_SUPPORTED = (SCOPE,)


def base_url(request_origin: str) -> str:
    """The issuer: MAILFATHOM_PUBLIC_BASE_URL when set, else the origin the request reached."""
    return (str(settings.MAILFATHOM.public_base_url).strip() or request_origin).rstrip("/")


def resource_url(base: str) -> str:
    """The one protected resource tokens are issued for: the /mcp endpoint."""
    return base + "/mcp"


def access_token_seconds() -> int:
    return int(settings.MAILFATHOM.mcp_oauth_access_token_minutes) * 60


@dataclass(frozen=True)
class TokenGrant:
    """What a verified access token may read now."""

    connection_pk: int
    account_pks: frozenset[int]
    user_name: str = ""  # the person who consented, as records of who read name them
    client_name: str = ""  # the client's registered name


def well_formed(token: object) -> bool:
    """Whether `token` has the shape of an access token; anything else is refused with no query."""
    return ACCESS_TOKENS.well_formed(token)


def verify_access_token(token: object, resource: str) -> TokenGrant | None:
    """What `token` may read at `resource` now, or None (unknown, expired, revoked, another audience).

    Records when its connection was last used (at most once a minute).
    """
    if not well_formed(token):
        return None
    now = timezone.now()
    row = (
        McpToken.objects.select_related("connection__user", "connection__client")
        .filter(
            access_hash=credentials.digest(str(token)),
            access_expires_at__gt=now,
            revoked_at__isnull=True,
            connection__revoked_at__isnull=True,
            connection__client__disabled_at__isnull=True,
        )
        .first()
    )
    if row is None:
        return None
    connection = row.connection
    if connection.resource != resource or not connection.user.is_active:
        return None
    links = McpConnection.accounts.through.objects.filter(mcpconnection_id=connection.pk)
    consented = frozenset(links.values_list("mailaccount_id", flat=True))
    connectable = connectable_accounts(connection.user)
    credentials.note_use(connection)
    return TokenGrant(
        connection_pk=connection.pk,
        account_pks=consented if connectable is None else consented & connectable,
        user_name=connection.user.get_username(),
        client_name=connection.client.client_name,
    )


# --- issuing (called by accounts.services.mcp_oauth_server) --------------------------------


def store_code(
    *,
    code: str,
    client: McpOAuthClient,
    user: Any,
    account_pks: list[int],
    redirect_uri: str,
    resource: str,
    code_challenge: str,
    code_challenge_method: str,
) -> None:
    """Store the authorization code `code` (CODES.issue()) with what the person consented to."""
    McpAuthorizationCode.objects.create(
        code_hash=credentials.digest(code),
        client=client,
        user=user,
        account_pks=sorted(account_pks),
        redirect_uri=redirect_uri,
        scope=SCOPE,
        resource=resource,
        code_challenge=code_challenge,
        code_challenge_method=code_challenge_method,
        expires_at=timezone.now() + timedelta(seconds=CODE_SECONDS),
    )


def claim_code(code: object, client: McpOAuthClient) -> McpAuthorizationCode | None:
    """Take `code` for `client`, once: a second presentation revokes the connection the first opened."""
    if not CODES.well_formed(code):
        return None
    digest = credentials.digest(str(code))
    now = timezone.now()
    with transaction.atomic():
        claimed = McpAuthorizationCode.objects.filter(
            code_hash=digest, client=client, used_at__isnull=True, expires_at__gt=now
        ).update(used_at=now)
        if claimed:
            return McpAuthorizationCode.objects.select_related("user").get(code_hash=digest)
        reused = McpAuthorizationCode.objects.filter(code_hash=digest, used_at__isnull=False).first()
        if reused is not None and reused.connection_id is not None:
            revoke_connection(reused.connection_id)
    return None


def new_tokens(*, refresh: bool) -> tuple[str, str | None]:
    """A fresh access token and, when `refresh`, a refresh token (the secrets, known this once)."""
    return ACCESS_TOKENS.issue().secret, REFRESH_TOKENS.issue().secret if refresh else None


def _token_row(connection: McpConnection, access: str, refresh: str | None) -> McpToken:
    now = timezone.now()
    refresh_days = int(settings.MAILFATHOM.mcp_oauth_refresh_token_days)
    return McpToken.objects.create(
        connection=connection,
        access_hash=credentials.digest(access),
        access_expires_at=now + timedelta(seconds=access_token_seconds()),
        refresh_hash=credentials.digest(refresh) if refresh else None,
        refresh_expires_at=now + timedelta(days=refresh_days) if refresh else None,
    )


def open_connection(code: McpAuthorizationCode, access: str, refresh: str | None) -> McpConnection:
    """Open the connection a claimed code was for, with its first tokens."""
    with transaction.atomic():
        connection = McpConnection.objects.create(
            client_id=code.client_id, user_id=code.user_id, scope=code.scope, resource=code.resource
        )
        connection.accounts.set(code.account_pks)
        code.connection = connection
        code.save(update_fields=["connection"])
        _token_row(connection, access, refresh)
    return connection


def claim_refresh_token(refresh: object, client: McpOAuthClient) -> McpToken | None:
    """Take a refresh token for `client`, once; presenting a replaced one revokes its connection."""
    if not REFRESH_TOKENS.well_formed(refresh):
        return None
    digest = credentials.digest(str(refresh))
    now = timezone.now()
    with transaction.atomic():
        claimed = McpToken.objects.filter(
            refresh_hash=digest,
            connection__client=client,
            replaced_at__isnull=True,
            revoked_at__isnull=True,
            refresh_expires_at__gt=now,
            connection__revoked_at__isnull=True,
        ).update(replaced_at=now)
        if claimed:
            return McpToken.objects.select_related("connection__user").get(refresh_hash=digest)
        replaced = McpToken.objects.filter(refresh_hash=digest, replaced_at__isnull=False).first()
        if replaced is not None:
            revoke_connection(replaced.connection_id)
    return None


def rotate(old: McpToken, access: str, refresh: str | None) -> McpToken:
    """Store the tokens that replace `old` (already claimed) in the same connection."""
    return _token_row(old.connection, access, refresh)


def find_token(token: object) -> McpToken | None:
    """The stored token `token` is, as an access or a refresh token (for revocation)."""
    if ACCESS_TOKENS.well_formed(token):
        return McpToken.objects.filter(access_hash=credentials.digest(str(token))).first()
    if REFRESH_TOKENS.well_formed(token):
        return McpToken.objects.filter(refresh_hash=credentials.digest(str(token))).first()
    return None


def revoke_token(token: McpToken, *, whole_connection: bool) -> None:
    """Revoke one token pair, or (for a refresh token) the whole connection (RFC 7009 §2.1)."""
    if whole_connection:
        revoke_connection(token.connection_id)
    else:
        McpToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())


# --- connections, as a person and an operator see them -----------------------------------------


def revoke_connection(connection_pk: int) -> bool:
    """Revoke a connection and every token it holds; refused on the next call."""
    now = timezone.now()
    with transaction.atomic():
        done = McpConnection.objects.filter(pk=connection_pk, revoked_at__isnull=True).update(revoked_at=now)
        McpToken.objects.filter(connection_id=connection_pk, revoked_at__isnull=True).update(revoked_at=now)
    return bool(done)


def connections_of(user: Any) -> QuerySet[McpConnection]:
    """The connections `user` opened and has not revoked, newest first, with client and accounts."""
    return (
        McpConnection.objects.active()
        .filter(user=user)
        .select_related("client")
        .prefetch_related("accounts")
        .order_by("-created_at")
    )


def revoke_connection_of(user: Any, connection_pk: int) -> bool:
    """Revoke one of `user`'s own connections; False when it is not theirs or already revoked."""
    if not McpConnection.objects.filter(pk=connection_pk, user=user).exists():
        return False
    return revoke_connection(connection_pk)
