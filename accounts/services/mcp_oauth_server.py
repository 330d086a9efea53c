"""MailFathom as the OAuth 2.1 authorization server of /mcp, on authlib's server (decision 0010).

authlib does the protocol (grants, PKCE, client authentication, registration, revocation);
this module supplies what is ours: the clients, codes and tokens stored as digests, the
accounts a person consented to, and resource indicators (RFC 8707), which bind every token
to this server's /mcp URL.
"""

from __future__ import annotations

import time
from typing import Any

from authlib.common.security import generate_token
from authlib.common.urls import add_params_to_uri
from authlib.consts import default_json_headers
from authlib.integrations.django_oauth2 import AuthorizationServer as DjangoAuthorizationServer
from authlib.oauth2.rfc6749 import (
    AccessDeniedError,
    AuthorizationCodeMixin,
    ClientMixin,
    InvalidRequestError,
    OAuth2Error,
    TokenMixin,
    grants,
)
from authlib.oauth2.rfc6750 import BearerTokenGenerator
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7591 import (
    ClientMetadataClaims,
    ClientRegistrationEndpoint,
    InvalidClientMetadataError,
)
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oauth2.rfc9207 import IssuerParameter
from django.conf import settings
from django.http import HttpRequest, HttpResponse

from accounts.models import MailAccount, McpAuthorizationCode, McpOAuthClient, McpToken
from accounts.services import mcp_oauth_clients as clients
from accounts.services import mcp_oauth_tokens as tokens
from accounts.services.people import connectable_accounts

AUTHORIZE_PATH = "/oauth/authorize"
TOKEN_PATH = "/oauth/token"  # noqa: S105  (a path, not a secret)
REGISTER_PATH = "/oauth/register"
REVOKE_PATH = "/oauth/revoke"
RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource"
SERVER_METADATA_PATH = "/.well-known/oauth-authorization-server"
# Parameters of the authorization request the consent form must not carry (so it cannot change them).
REQUEST_PARAMETERS = frozenset(
    {
        "response_type",
        "client_id",
        "redirect_uri",
        "scope",
        "state",
        "code_challenge",
        "code_challenge_method",
        "resource",
    }
)


class InvalidTargetError(OAuth2Error):
    """RFC 8707 §2: the resource named is not one this server issues tokens for."""

    error = "invalid_target"


# --- authlib's view of our records ---------------------------------------------------------------


class Client(ClientMixin):
    def __init__(self, record: McpOAuthClient) -> None:
        self.record = record

    def get_client_id(self) -> str:
        return self.record.client_id

    def get_default_redirect_uri(self) -> str | None:
        uris = self.record.redirect_uris
        return uris[0] if len(uris) == 1 else None

    def get_allowed_scope(self, scope: str) -> str:
        return tokens.SCOPE

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return clients.redirect_uri_matches(self.record.redirect_uris, redirect_uri)

    def check_client_secret(self, client_secret: str) -> bool:
        return clients.secret_matches(self.record, client_secret)

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method == self.record.token_endpoint_auth_method

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in ("authorization_code", "refresh_token")


class Code(AuthorizationCodeMixin):
    def __init__(self, row: McpAuthorizationCode) -> None:
        self.row = row
        self.code_challenge = row.code_challenge
        self.code_challenge_method = row.code_challenge_method

    def get_redirect_uri(self) -> str:
        return self.row.redirect_uri

    def get_scope(self) -> str:
        return self.row.scope


class Token(TokenMixin):
    def __init__(self, row: McpToken, *, refresh: bool) -> None:
        self.row, self.refresh = row, refresh

    def check_client(self, client: Client) -> bool:
        return bool(self.row.connection.client_id == client.record.pk)

    def get_scope(self) -> str:
        return self.row.connection.scope

    def get_expires_in(self) -> int:
        return tokens.access_token_seconds()

    def is_expired(self) -> bool:
        return False  # claim_refresh_token refuses an expired one before this is asked

    def is_revoked(self) -> bool:
        return self.row.revoked_at is not None


# --- grants and endpoints -------------------------------------------------------------------


class S256Challenge(CodeChallenge):
    """PKCE required on every authorization request, and with S256: `plain` is refused."""

    DEFAULT_CODE_CHALLENGE_METHOD = "S256"
    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]

    def validate_code_challenge(self, grant: grants.AuthorizationCodeGrant, redirect_uri: str) -> None:
        data = grant.request.payload.data
        if not data.get("code_challenge"):
            raise InvalidRequestError(
                "PKCE is required: send code_challenge with code_challenge_method=S256."
            )
        if data.get("code_challenge_method") != "S256":
            raise InvalidRequestError("Only the S256 code challenge method is supported.")
        super().validate_code_challenge(grant, redirect_uri)


def _check_resource(request: Any, expected: str, redirect_uri: str | None = None) -> None:
    named = request.payload.datalist.get("resource", [])
    if len(named) > 1 or (named and named[0] != expected):
        raise InvalidTargetError(
            description="The resource must be this server's /mcp URL.",
            redirect_uri=redirect_uri,
            state=request.payload.state,
        )


class CodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = list(clients.AUTH_METHODS)
    consented: tuple[int, ...] = ()

    def validate_authorization_request(self) -> str:
        redirect_uri: str = super().validate_authorization_request()
        _check_resource(self.request, self.server.resource, redirect_uri)
        return redirect_uri

    def validate_token_request(self) -> None:
        super().validate_token_request()
        _check_resource(self.request, self.request.authorization_code.row.resource)

    def generate_authorization_code(self) -> str:
        return tokens.CODES.issue().secret

    def save_authorization_code(self, code: str, request: Any) -> None:
        tokens.store_code(
            code=code,
            client=request.client.record,
            user=request.user,
            account_pks=list(self.consented),
            redirect_uri=request.payload.redirect_uri or "",
            resource=self.server.resource,
            code_challenge=request.payload.data["code_challenge"],
            code_challenge_method=request.payload.data["code_challenge_method"],
        )

    def query_authorization_code(self, code: str, client: Client) -> Code | None:
        row = tokens.claim_code(code, client.record)
        return Code(row) if row is not None else None

    def delete_authorization_code(self, authorization_code: Code) -> None:
        pass  # claimed once already; kept so a second presentation is recognized

    def authenticate_user(self, authorization_code: Code) -> Any:
        user = authorization_code.row.user
        return user if user.is_active else None


class RefreshGrant(grants.RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = list(clients.AUTH_METHODS)
    INCLUDE_NEW_REFRESH_TOKEN = True

    def authenticate_refresh_token(self, refresh_token: str) -> Token | None:
        row = tokens.claim_refresh_token(refresh_token, self.request.client.record)
        return Token(row, refresh=True) if row is not None else None

    def validate_token_request(self) -> None:
        super().validate_token_request()
        _check_resource(self.request, self.request.refresh_token.row.connection.resource)

    def authenticate_user(self, refresh_token: Token) -> Any:
        user = refresh_token.row.connection.user
        return user if user.is_active else None

    def revoke_old_credential(self, refresh_token: Token) -> None:
        pass  # claim_refresh_token marked it replaced when it took it


class Revocation(RevocationEndpoint):
    CLIENT_AUTH_METHODS = list(clients.AUTH_METHODS)

    def query_token(self, token_string: str, token_type_hint: str | None) -> Token | None:
        row = tokens.find_token(token_string)
        if row is None:
            return None
        return Token(row, refresh=tokens.REFRESH_TOKENS.well_formed(token_string))

    def revoke_token(self, token: Token, request: Any) -> None:
        tokens.revoke_token(token.row, whole_connection=token.refresh)


class _LenientScope(ClientMetadataClaims):
    """RFC 7591's checks, but a requested scope this server does not know is narrowed, not refused."""

    @classmethod
    def get_claims_options(cls, metadata: dict[str, Any]) -> dict[str, Any]:
        options: dict[str, Any] = super().get_claims_options(metadata)
        options.pop("scope", None)
        return options


class Registration(ClientRegistrationEndpoint):
    def __init__(self, server: McpAuthorizationServer) -> None:
        super().__init__(server, claims_classes=[_LenientScope])

    def create_registration_response(self, request: Any) -> tuple[int, dict[str, Any], list[tuple[str, str]]]:
        if not settings.MAILFATHOM.mcp_oauth_dynamic_registration:
            raise AccessDeniedError(description="This server does not accept client registration.")
        metadata = self.extract_client_metadata(request)
        try:
            record, secret = clients.register_client(metadata, client_id="mfcl_" + generate_token(32))
        except clients.ClientRefused as error:
            raise InvalidClientMetadataError(str(error)) from error
        body: dict[str, Any] = {
            **metadata,
            "client_id": record.client_id,
            "client_id_issued_at": int(time.time()),
            "client_name": record.client_name,
            "redirect_uris": record.redirect_uris,
            "token_endpoint_auth_method": record.token_endpoint_auth_method,
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "scope": tokens.SCOPE,
        }
        if secret is not None:
            body.update(client_secret=secret, client_secret_expires_at=0)
        return 201, body, default_json_headers

    def get_server_metadata(self) -> dict[str, Any]:
        metadata: dict[str, Any] = self.server.metadata()
        return metadata


class Issuer(IssuerParameter):
    """RFC 9207's `iss` on every redirect of the authorization endpoint, errors included.

    authlib's extension writes `response.location`, which a Django response does not have;
    here it writes the Location header.
    """

    def __init__(self, issuer: str) -> None:
        self.issuer = issuer

    def get_issuer(self) -> str:
        return self.issuer

    def add_issuer_parameter(self, authorization_server: object, response: HttpResponse) -> None:
        location = response.get("Location")
        if location:
            response["Location"] = add_params_to_uri(location, {"iss": self.issuer})


class McpAuthorizationServer(DjangoAuthorizationServer):
    """The authorization server for one issuer, with our clients, grants and endpoints.

    Built per request: the issuer (`base`) is MAILFATHOM_PUBLIC_BASE_URL or the origin the
    request reached (accounts.services.mcp_oauth_tokens.base_url).
    """

    def __init__(self, base: str) -> None:
        super().__init__(McpOAuthClient, McpToken)
        self.base, self.resource = base, tokens.resource_url(base)
        self.scopes_supported = list(tokens.SCOPES_SUPPORTED)
        self.issuer = Issuer(base)
        self.register_extension(self.issuer)
        self.register_token_generator(
            "default",
            BearerTokenGenerator(
                access_token_generator=lambda **_: tokens.ACCESS_TOKENS.issue().secret,
                refresh_token_generator=lambda **_: tokens.REFRESH_TOKENS.issue().secret,
                expires_generator=lambda client, grant_type: tokens.access_token_seconds(),
            ),
        )
        self.register_grant(CodeGrant, [S256Challenge(required=True)])
        self.register_grant(RefreshGrant)
        self.register_endpoint(Revocation)
        self.register_endpoint(Registration(self))

    def query_client(self, client_id: str) -> Client | None:
        record = clients.find_client(client_id)
        return Client(record) if record is not None else None

    def validate_requested_scope(self, scope: str) -> None:
        """Accept any requested scope: every token gets mail:read, which the response states."""

    def save_token(self, token: dict[str, Any], request: Any) -> None:
        token["scope"] = tokens.SCOPE
        code = getattr(request, "authorization_code", None)
        if code is not None:
            tokens.open_connection(code.row, token["access_token"], token.get("refresh_token"))
        else:
            tokens.rotate(request.refresh_token.row, token["access_token"], token.get("refresh_token"))

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        pass  # nothing listens: use cases are called explicitly

    def metadata(self) -> dict[str, Any]:
        """Authorization server metadata (RFC 8414), with RFC 9207's and CIMD's fields."""
        methods = list(clients.AUTH_METHODS)
        document: dict[str, Any] = {
            "issuer": self.base,
            "authorization_endpoint": self.base + AUTHORIZE_PATH,
            "token_endpoint": self.base + TOKEN_PATH,
            "revocation_endpoint": self.base + REVOKE_PATH,
            "scopes_supported": list(tokens.SCOPES_SUPPORTED),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": methods,
            "revocation_endpoint_auth_methods_supported": methods,
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": True,
            "client_id_metadata_document_supported": True,
        }
        if settings.MAILFATHOM.mcp_oauth_dynamic_registration:
            document["registration_endpoint"] = self.base + REGISTER_PATH
        return document

    def resource_metadata(self) -> dict[str, Any]:
        """Protected resource metadata of /mcp (RFC 9728)."""
        return {
            "resource": self.resource,
            "authorization_servers": [self.base],
            "scopes_supported": list(tokens.SCOPES_SUPPORTED),
            "bearer_methods_supported": ["header"],
            "resource_name": "MailFathom",
        }

    def with_issuer(self, response: HttpResponse) -> HttpResponse:
        """Add `iss` to a redirect the authorization endpoint answers outside authlib's own response."""
        self.issuer.add_issuer_parameter(self, response)
        return response


# --- consent ------------------------------------------------------------------------------------


def offered_accounts(user: Any) -> list[MailAccount]:
    """The served accounts `user` may connect an assistant to (every served one for an operator)."""
    served = MailAccount.objects.served().order_by("display_name", "account_id")
    allowed = connectable_accounts(user)
    return list(served if allowed is None else served.filter(pk__in=allowed))


def consent_grant(server: McpAuthorizationServer, request: HttpRequest) -> CodeGrant:
    """Validate the authorization request for the signed-in person (OAuth2Error when it is bad)."""
    if request.method == "POST" and REQUEST_PARAMETERS & set(request.POST):
        raise InvalidRequestError("The consent form may not change the authorization request.")
    grant: CodeGrant = server.get_consent_grant(request, end_user=request.user)
    return grant


def answer_consent(
    server: McpAuthorizationServer, request: HttpRequest, grant: CodeGrant, account_pks: list[int] | None
) -> HttpResponse:
    """Send the person back to the client: with a code for `account_pks`, or access_denied for None."""
    grant.consented = tuple(account_pks or ())
    response: HttpResponse = server.create_authorization_response(
        request, grant_user=request.user if account_pks else None, grant=grant
    )
    return response
