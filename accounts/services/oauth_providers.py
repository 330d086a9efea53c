"""The OAuth 2.0 providers MailFathom signs mailboxes in with, each declared once.

A declaration holds what does not change between deployments: the endpoints (with the
tenant where Microsoft has one), the scopes, the grant, extra parameters of the
authorization request, and the IMAP server the provider's mailboxes live on. A
registration (accounts.models.OAuthRegistration) adds the deployment's own client ID,
secret and tenant. Generic providers have no endpoints of their own: they are read from
the issuer's discovery document. docs/operations/mailbox-providers.md says how to register.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

import requests

from accounts.models import OAuthRegistration, ProviderKind

AUTHORIZATION_CODE = "authorization_code"
CLIENT_CREDENTIALS = "client_credentials"
HTTP_TIMEOUT_SECONDS = 15.0
DISCOVERY_CACHE_SECONDS = 600.0


@dataclass(frozen=True)
class Provider:
    kind: str
    name: str  # as an operator calls it: "Microsoft"
    grant: str  # AUTHORIZATION_CODE or CLIENT_CREDENTIALS
    scopes: tuple[str, ...]
    authorize_url: str = ""  # "{tenant}" is filled in; blank for generic and app-only
    token_url: str = ""
    revocation_url: str = ""
    default_tenant: str = ""
    # Added to the authorization request (Google issues a refresh token only with these).
    authorize_params: dict[str, str] = field(default_factory=dict)
    imap_host: str = ""
    imap_port: int = 993
    discovered: bool = False  # endpoints come from the issuer's discovery document

    @property
    def signs_in_people(self) -> bool:
        """Whether a person signs in in the browser (else the registration alone gets tokens)."""
        return self.grant == AUTHORIZATION_CODE

    @property
    def sign_in_label(self) -> str:
        return f"Sign in with {self.name}" if not self.discovered else "Sign in with your provider"


_MICROSOFT_LOGIN = "https://login.microsoftonline.com/{tenant}/oauth2/v2.0"
_GOOGLE_TOKEN = "https://oauth2.googleapis.com/token"  # noqa: S105 (an endpoint, not a secret)

PROVIDERS: dict[str, Provider] = {
    ProviderKind.MICROSOFT: Provider(
        kind=ProviderKind.MICROSOFT,
        name="Microsoft",
        grant=AUTHORIZATION_CODE,
        # offline_access brings the refresh token; openid and email name who signed in.
        scopes=("https://outlook.office.com/IMAP.AccessAsUser.All", "offline_access", "openid", "email"),
        authorize_url=_MICROSOFT_LOGIN + "/authorize",
        token_url=_MICROSOFT_LOGIN + "/token",
        default_tenant="common",
        authorize_params={"prompt": "select_account"},
        imap_host="outlook.office365.com",
    ),
    ProviderKind.MICROSOFT_APP: Provider(
        kind=ProviderKind.MICROSOFT_APP,
        name="Microsoft",
        grant=CLIENT_CREDENTIALS,
        scopes=("https://outlook.office365.com/.default",),
        token_url=_MICROSOFT_LOGIN + "/token",
        imap_host="outlook.office365.com",
    ),
    ProviderKind.GOOGLE: Provider(
        kind=ProviderKind.GOOGLE,
        name="Google",
        grant=AUTHORIZATION_CODE,
        scopes=("https://mail.google.com/", "openid", "email"),
        authorize_url="https://accounts.google.com/o/oauth2/v2/auth",
        token_url=_GOOGLE_TOKEN,
        revocation_url="https://oauth2.googleapis.com/revoke",
        # Without both, Google gives a refresh token only on the first consent ever.
        authorize_params={"access_type": "offline", "prompt": "consent"},
        imap_host="imap.gmail.com",
    ),
    ProviderKind.GENERIC: Provider(
        kind=ProviderKind.GENERIC,
        name="your provider",
        grant=AUTHORIZATION_CODE,
        scopes=("openid", "email", "offline_access"),
        discovered=True,
    ),
    ProviderKind.GENERIC_APP: Provider(
        kind=ProviderKind.GENERIC_APP,
        name="your provider",
        grant=CLIENT_CREDENTIALS,
        scopes=(),
        discovered=True,
    ),
}


class DiscoveryFailed(Exception):
    """The issuer's discovery document could not be read or does not describe that issuer."""


@dataclass(frozen=True)
class Endpoints:
    authorize_url: str
    token_url: str
    revocation_url: str


def provider_of(registration: OAuthRegistration) -> Provider:
    return PROVIDERS[registration.provider]


def scopes_of(registration: OAuthRegistration) -> list[str]:
    """The registration's own scopes when set, else its provider's."""
    own = registration.scopes.split()
    return own or list(provider_of(registration).scopes)


def endpoints_of(registration: OAuthRegistration) -> Endpoints:
    """Where to send the browser and where to fetch tokens, for this registration."""
    provider = provider_of(registration)
    if provider.discovered:
        document = discover(registration.issuer_url)
        return Endpoints(
            authorize_url=str(document.get("authorization_endpoint", "")),
            token_url=str(document["token_endpoint"]),
            revocation_url=str(document.get("revocation_endpoint", "")),
        )
    tenant = quote(registration.tenant or provider.default_tenant, safe="")
    return Endpoints(
        authorize_url=provider.authorize_url.format(tenant=tenant),
        token_url=provider.token_url.format(tenant=tenant),
        revocation_url=provider.revocation_url,
    )


_discovered: dict[str, tuple[float, dict[str, Any]]] = {}


def _candidates(issuer: str) -> list[str]:
    """OpenID Connect's discovery URL, then RFC 8414's (the path after the well-known part)."""
    base = issuer.rstrip("/")
    parts = urlsplit(base)
    origin = f"{parts.scheme}://{parts.netloc}"
    return [
        base + "/.well-known/openid-configuration",
        origin + "/.well-known/oauth-authorization-server" + parts.path,
        base + "/.well-known/oauth-authorization-server",
    ]


def discover(issuer: str) -> dict[str, Any]:
    """The issuer's metadata, cached for a while; raises DiscoveryFailed.

    The document must name the same issuer it was fetched for (OpenID Connect Discovery 4.3,
    RFC 8414 3.3): otherwise a document could send tokens to someone else's endpoint.
    """
    cached = _discovered.get(issuer)
    if cached is not None and time.monotonic() - cached[0] < DISCOVERY_CACHE_SECONDS:
        return cached[1]
    for url in dict.fromkeys(_candidates(issuer)):
        try:
            response = requests.get(url, timeout=HTTP_TIMEOUT_SECONDS, allow_redirects=False)
        except requests.RequestException:
            continue
        if response.status_code != 200:
            continue
        try:
            document = response.json()
        except ValueError:
            continue
        if not isinstance(document, dict) or "token_endpoint" not in document:
            continue
        if str(document.get("issuer", "")).rstrip("/") != issuer.rstrip("/"):
            raise DiscoveryFailed("the discovery document names another issuer")
        _discovered[issuer] = (time.monotonic(), document)
        return document
    raise DiscoveryFailed("no discovery document was found for the issuer")


def forget_discovered() -> None:
    """Drop cached discovery documents (a registration was edited; tests start clean)."""
    _discovered.clear()
