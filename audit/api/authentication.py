"""Credentials of the compliance API: a Bearer API token for scripts, the session for people.

A token is accepted in the Authorization header only. One that appears in the query string
is refused with 400 before anything else is looked at (docs/operations/compliance-api.md,
Credentials): URLs end up in proxy logs, browser history and Referer headers.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions, status
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.request import Request

from audit import api_tokens as tokens
from audit.api_tokens import ApiToken

# Query parameter names a client might put a credential under, compared without case.
CREDENTIAL_PARAMETERS = frozenset(
    {"token", "access_token", "api_token", "api_key", "apikey", "key", "bearer", "auth", "authorization"}
)


class TokenInUrl(exceptions.APIException):
    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "token_in_url"
    default_detail = (
        "A credential was sent in the URL's query string, which this API never reads. Send the "
        "token as `Authorization: Bearer <token>`, and revoke it: URLs are kept in logs."
    )


def refuse_token_in_url(request: Request) -> None:
    """Raise TokenInUrl if the query string carries something that is, or is named like, a credential."""
    for name, values in request.query_params.lists():
        if name.lower() in CREDENTIAL_PARAMETERS:
            raise TokenInUrl()
        if any(tokens.TOKEN_MARKER in value for value in values):
            raise TokenInUrl()


class BearerTokenAuthentication(BaseAuthentication):
    """`Authorization: Bearer <token>`: act as the token's creator, within the token's permissions.

    No header, or another scheme, leaves the request to the next authenticator (the session).
    A Bearer header with an unknown, revoked or malformed token is refused with 401.
    """

    keyword = b"bearer"

    def authenticate(self, request: Request) -> tuple[Any, ApiToken] | None:
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != self.keyword:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed("The Authorization header must be `Bearer <token>`.")
        try:
            secret = parts[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("The API token is unknown or revoked.") from None
        token = tokens.authenticate(secret)
        if token is None:
            raise exceptions.AuthenticationFailed("The API token is unknown or revoked.")
        return (token.created_by, token)

    def authenticate_header(self, request: Request) -> str:
        # Makes DRF answer a request without credentials 401 rather than 403.
        return 'Bearer realm="api"'


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """How the OpenAPI schema describes the token credential."""

    target_class = "audit.api.authentication.BearerTokenAuthentication"
    name = "apiToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API token (mfa_…) created by a person.",
        }
