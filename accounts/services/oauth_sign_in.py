"""A person signs a mailbox in at its provider: authorization code with PKCE, in the browser.

begin() builds the provider's authorization URL and what the callback must check (state,
the PKCE verifier, the OpenID nonce, the redirect URI); the caller keeps that in the
operator's session, never in the URL. complete() checks the provider's answer against it,
exchanges the code at the token endpoint and keeps the tokens (oauth_tokens.store_sign_in).
Who signed in is read from the ID token the token endpoint returned over TLS to this
client, which OpenID Connect Core 3.1.3.7 accepts without checking the signature; its
audience and nonce are still checked, so a token meant for another client is refused.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import secrets
import time
from dataclasses import dataclass
from typing import Any

import requests
from authlib.integrations.base_client import OAuthError

from accounts.models import MailAccount
from accounts.services import oauth_providers, oauth_tokens

logger = logging.getLogger(__name__)

# How long a sign-in started in the browser may take to come back.
PENDING_SECONDS = 15 * 60

# What the operator reads when the sign-in did not complete; never the provider's own text.
FAILURES = {
    "state": "This sign-in was not started here, or it took too long; start it again from the account page.",
    "denied": "The sign-in was cancelled or refused at the provider; nothing was changed.",
    "provider": (
        "The provider refused the sign-in ({error}); check the registration's client ID, secret "
        "and redirect URI (docs/operations/mailbox-providers.md)."
    ),
    "unreachable": "The provider's token endpoint could not be reached; try again in a moment.",
    "identity": "The provider's answer was not meant for this registration; nothing was kept.",
    "not_delegated": "This account's registration signs in on its own (app-only): nobody needs to sign in.",
    "no_registration": "Choose an OAuth registration for the account and save it first.",
}


class SignInFailed(Exception):
    def __init__(self, reason: str, **values: str) -> None:
        super().__init__(FAILURES[reason].format(**values))
        self.reason = reason


@dataclass(frozen=True)
class Completed:
    account: MailAccount
    subject: str
    # The provider signed in someone other than the account's IMAP user name: the server
    # will most likely refuse (code 61018), so the page says so at once.
    other_than_username: bool


def _verifier() -> str:
    return secrets.token_urlsafe(64)[:96]  # RFC 7636: 43 to 128 characters


def begin(account: MailAccount, redirect_uri: str) -> tuple[str, dict[str, Any]]:
    """The authorization URL to send the browser to, and what the callback must check."""
    registration = account.oauth_registration
    if registration is None:
        raise SignInFailed("no_registration")
    provider = oauth_providers.provider_of(registration)
    if not provider.signs_in_people:
        raise SignInFailed("not_delegated")
    endpoints = oauth_providers.endpoints_of(registration)
    verifier, nonce = _verifier(), secrets.token_urlsafe(24)
    extra = dict(provider.authorize_params)
    if account.username:
        extra["login_hint"] = account.username
    with oauth_tokens.session_for(
        registration,
        scope=" ".join(oauth_providers.scopes_of(registration)),
        redirect_uri=redirect_uri,
        code_challenge_method="S256",
    ) as session:
        url, state = session.create_authorization_url(
            endpoints.authorize_url, code_verifier=verifier, nonce=nonce, **extra
        )
    pending = {
        "state": state,
        "account": account.pk,
        "verifier": verifier,
        "nonce": nonce,
        "redirect_uri": redirect_uri,
        "started": time.time(),
    }
    return url, pending


def complete(pending: dict[str, Any] | None, answer: dict[str, str]) -> Completed:
    """Check the provider's answer (the callback's query) and keep the tokens it leads to."""
    if (
        pending is None
        or not secrets.compare_digest(str(pending.get("state", "")), answer.get("state", ""))
        or time.time() - float(pending.get("started", 0)) > PENDING_SECONDS
    ):
        raise SignInFailed("state")
    if "error" in answer:
        if answer["error"] in {"access_denied", "consent_required", "interaction_required"}:
            raise SignInFailed("denied")
        raise SignInFailed("provider", error=_error_name(answer["error"]))
    account = MailAccount.objects.select_related("oauth_registration").get(pk=pending["account"])
    registration = account.oauth_registration
    if registration is None:
        raise SignInFailed("no_registration")
    endpoints = oauth_providers.endpoints_of(registration)
    try:
        with oauth_tokens.session_for(registration, redirect_uri=pending["redirect_uri"]) as session:
            token = session.fetch_token(
                endpoints.token_url,
                grant_type="authorization_code",
                code=answer.get("code", ""),
                code_verifier=pending["verifier"],
                redirect_uri=pending["redirect_uri"],
                timeout=oauth_providers.HTTP_TIMEOUT_SECONDS,
            )
    except OAuthError as error:
        raise SignInFailed("provider", error=_error_name(str(error.error or ""))) from None
    except (requests.RequestException, ValueError):
        raise SignInFailed("unreachable") from None
    claims = _id_claims(token.get("id_token"), client_id=registration.client_id, nonce=pending["nonce"])
    subject = str(claims.get("email") or claims.get("preferred_username") or claims.get("upn") or "")
    oauth_tokens.store_sign_in(account, token, subject)
    other = bool(subject) and subject.casefold() != account.username.casefold()
    return Completed(account=account, subject=subject, other_than_username=other)


def _error_name(name: str) -> str:
    """An RFC 6749 error name as sent, if it looks like one; anything else is not repeated."""
    return name if name.replace("_", "").isalpha() and len(name) <= 40 else "an error"


def _id_claims(id_token: object, *, client_id: str, nonce: str) -> dict[str, Any]:
    """The ID token's claims after checking its audience and nonce; {} when none was sent."""
    if not isinstance(id_token, str) or not id_token:
        return {}
    try:
        payload = id_token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError, binascii.Error):
        raise SignInFailed("identity") from None
    if not isinstance(claims, dict):
        raise SignInFailed("identity")
    audience = claims.get("aud")
    audiences = audience if isinstance(audience, list) else [audience]
    if client_id not in audiences or ("nonce" in claims and claims["nonce"] != nonce):
        raise SignInFailed("identity")
    return claims
