"""An account's OAuth 2.0 access token: kept fresh, refreshed under a lock, never shown.

Every IMAP login of an OAuth account asks access_token(). The grant row is locked
(SELECT ... FOR UPDATE) while a token is refreshed, so two workers refreshing the same
account at once take turns: the second finds the first one's token and uses it. That
matters because providers rotate refresh tokens, and one used twice may revoke the whole
grant. A refusal that only a person can fix (the grant withdrawn or expired, consent
missing, the registration refused) is written to the grant in its own transaction, and
synchronization leaves the account alone until someone signs in again. Tokens appear in
no log line, error or page: only their expiry and scopes do.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import requests
from authlib.integrations.base_client import OAuthError
from authlib.integrations.requests_client import OAuth2Session
from django.db import transaction
from django.utils import timezone
from imapclient.exceptions import LoginError

from accounts import crypto
from accounts.models import GrantState, MailAccount, OAuthGrant, OAuthRegistration
from accounts.services import oauth_providers
from mailfathom.core.errors import Code, code_of

logger = logging.getLogger(__name__)

# Refreshed this long before it expires, so a token never runs out during a login.
REFRESH_MARGIN = timedelta(minutes=5)
# A token is assumed to last this long when the provider does not say (RFC 6749 leaves
# expires_in optional).
ASSUMED_LIFETIME = timedelta(minutes=30)

# What only a person can fix: each stops synchronization until someone acts.
NEEDS_A_PERSON = {
    Code.SIGN_IN_NEEDED: GrantState.NEEDS_SIGN_IN,
    Code.CONSENT_MISSING: GrantState.NEEDS_SIGN_IN,
    Code.REGISTRATION_REFUSED: GrantState.REGISTRATION_REFUSED,
}


_TOKEN_REQUEST_FAILURES = (
    OAuthError,
    requests.RequestException,
    ValueError,
    KeyError,
    oauth_providers.DiscoveryFailed,
)


class SignInRefused(LoginError):
    """No access token can be had for the account; `code` says why (a 610xx Code).

    A LoginError: to whoever opens a session, an account that cannot sign in is a login
    that failed.
    """

    def __init__(self, code: Code) -> None:
        super().__init__(code.sentence)
        self.code = code


def session_for(registration: OAuthRegistration, **kwargs: Any) -> OAuth2Session:
    """An authlib client for the registration; the caller closes it."""
    return OAuth2Session(
        client_id=registration.client_id,
        client_secret=registration.get_client_secret() or None,
        token_endpoint_auth_method="client_secret_post" if registration.has_client_secret else "none",
        **kwargs,
    )


def classify_token_error(error: BaseException) -> Code:
    """What a failed token request means, as a code; the provider's words are not kept.

    RFC 6749 5.2's error names are shared by every provider; Microsoft adds AADSTS numbers
    to the description, of which consent (65001) is the one an operator must act on.
    """
    if isinstance(error, OAuthError):
        name = str(error.error or "")
        description = str(error.description or "")
        if "AADSTS65001" in description or name in {"consent_required", "interaction_required"}:
            return Code.CONSENT_MISSING
        if name == "invalid_grant":
            return Code.SIGN_IN_NEEDED
        if name in {"invalid_client", "unauthorized_client"}:
            return Code.REGISTRATION_REFUSED
        if name in {"invalid_scope", "access_denied"}:
            return Code.CONSENT_MISSING
        return Code.TOKEN_ENDPOINT_UNAVAILABLE
    return Code.TOKEN_ENDPOINT_UNAVAILABLE


@dataclass(frozen=True)
class Issued:
    access_token: str
    expires_at: datetime
    refresh_token: str  # "" when the provider did not send one (then the old one stays)
    scopes: str


def issued_from(token: Mapping[str, Any], now: datetime) -> Issued:
    expires_in = token.get("expires_in")
    lifetime = timedelta(seconds=int(expires_in)) if expires_in else ASSUMED_LIFETIME
    scope = token.get("scope") or ""
    return Issued(
        access_token=str(token["access_token"]),
        expires_at=now + lifetime,
        refresh_token=str(token.get("refresh_token") or ""),
        scopes=" ".join(scope) if isinstance(scope, list | tuple) else str(scope),
    )


def access_token(
    account: MailAccount, *, refused: str | None = None, ahead: timedelta = REFRESH_MARGIN
) -> str:
    """A current access token for `account`; raises SignInRefused.

    `refused` is a token the IMAP server just turned down: unless another worker has
    replaced it meanwhile, a new one is fetched even though it has not expired (a provider
    may revoke a token early). A token expiring within `ahead` is renewed. Raises
    SignInRefused with TOKEN_ENDPOINT_UNAVAILABLE when
    the provider cannot be reached (the account is not marked: it is retried later).
    """
    registration = account.oauth_registration
    if registration is None:
        raise SignInRefused(Code.SIGN_IN_NEEDED)
    provider = oauth_providers.provider_of(registration)
    outcome: Code | None = None
    with transaction.atomic():
        grant = OAuthGrant.objects.select_for_update().filter(account=account).first()
        if grant is not None and grant.state != GrantState.ACTIVE:
            raise SignInRefused(code_of(grant.state_code) or Code.SIGN_IN_NEEDED)
        now = timezone.now()
        if grant is None and provider.signs_in_people:
            outcome = Code.SIGN_IN_NEEDED  # nobody has signed in yet
        elif grant is not None and grant.access_token_encrypted:
            current = grant.access_token()
            fresh = grant.access_expires_at is not None and grant.access_expires_at - now > ahead
            if (fresh and refused is None) or (refused is not None and current != refused):
                return current
        try:
            if outcome is not None:
                raise OAuthError(error="invalid_grant")
            issued = _fetch(registration, grant, now)
        except (
            OAuthError,
            requests.RequestException,
            ValueError,
            KeyError,
            oauth_providers.DiscoveryFailed,
        ) as error:
            outcome = classify_token_error(error)
            logger.warning("oauth %s: token request failed (%s)", account.account_id, int(outcome))
        else:
            if grant is None:  # client credentials: the grant row is made by the first token
                grant = OAuthGrant(
                    account=account, subject=f"{registration.name} (app-only)", signed_in_at=now
                )
            grant.access_token_encrypted = crypto.encrypt(issued.access_token)
            grant.access_expires_at = issued.expires_at
            if issued.refresh_token:  # rotated: saved in the same transaction as the access token
                grant.refresh_token_encrypted = crypto.encrypt(issued.refresh_token)
            if issued.scopes:
                grant.scopes = issued.scopes
            grant.refreshed_at = now
            grant.save()
            logger.info("oauth %s: access token renewed", account.account_id)
            return issued.access_token
    # Outside the locked transaction that failed: recorded even though nothing else was.
    if outcome in NEEDS_A_PERSON:
        mark(account, outcome)
    raise SignInRefused(outcome)


def _fetch(registration: OAuthRegistration, grant: OAuthGrant | None, now: datetime) -> Issued:
    endpoints = oauth_providers.endpoints_of(registration)
    provider = oauth_providers.provider_of(registration)
    with session_for(registration) as session:
        if not provider.signs_in_people:
            token = session.fetch_token(
                endpoints.token_url,
                grant_type="client_credentials",
                scope=" ".join(oauth_providers.scopes_of(registration)),
                timeout=oauth_providers.HTTP_TIMEOUT_SECONDS,
            )
            return issued_from(token, now)
        assert grant is not None  # a person's grant exists before it is refreshed
        refresh = grant.refresh_token()
        if not refresh:
            raise OAuthError(error="invalid_grant")  # nothing to refresh with: sign in again
        token = session.refresh_token(
            endpoints.token_url, refresh_token=refresh, timeout=oauth_providers.HTTP_TIMEOUT_SECONDS
        )
        return issued_from(token, now)


def mark(account: MailAccount, code: Code) -> None:
    """Record that the account's grant waits for a person, for `code`'s reason."""
    state = NEEDS_A_PERSON.get(code, GrantState.NEEDS_SIGN_IN)
    OAuthGrant.objects.update_or_create(
        account=account,
        defaults={"state": state, "state_code": int(code), "state_since": timezone.now()},
    )
    logger.warning("oauth %s: waits for a person (%s)", account.account_id, int(code))


def store_sign_in(account: MailAccount, token: Mapping[str, Any], subject: str) -> OAuthGrant:
    """Keep what a completed sign-in returned; the account is active again."""
    now = timezone.now()
    issued = issued_from(token, now)
    with transaction.atomic():
        grant, _ = OAuthGrant.objects.select_for_update().get_or_create(account=account)
        grant.state = GrantState.ACTIVE
        grant.state_code = None
        grant.state_since = now
        grant.subject = subject
        grant.scopes = issued.scopes
        grant.signed_in_at = now
        grant.refreshed_at = now
        grant.access_token_encrypted = crypto.encrypt(issued.access_token)
        grant.access_expires_at = issued.expires_at
        grant.refresh_token_encrypted = crypto.encrypt(issued.refresh_token) if issued.refresh_token else ""
        grant.save()
    logger.info("oauth %s: signed in", account.account_id)
    return grant


# The worker renews tokens this long before they expire, so a run or a push watcher starting
# near the expiry finds a fresh one, and a withdrawn grant is noticed between runs.
RENEW_AHEAD = timedelta(minutes=15)


def renew_expiring(now: datetime | None = None) -> int:
    """Renew every active grant of a synchronized OAuth account expiring within RENEW_AHEAD.

    Returns how many were renewed. A grant the provider refuses is marked (as access_token
    does) and the others go on; nothing is raised.
    """
    now = now or timezone.now()
    renewed = 0
    due = OAuthGrant.objects.filter(
        state=GrantState.ACTIVE,
        access_expires_at__lt=now + RENEW_AHEAD,
        account__in=MailAccount.objects.synchronized().filter(auth_method="oauth2"),
    ).select_related("account", "account__oauth_registration")
    for grant in due:
        try:
            fresh = access_token(grant.account, ahead=RENEW_AHEAD)
        except SignInRefused:
            continue
        renewed += fresh != grant.access_token()  # another worker may have renewed it already
    return renewed
