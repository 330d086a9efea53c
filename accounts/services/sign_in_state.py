"""How each mail account signs in, as the status page and /health show it.

Read in one query with the encrypted columns (tokens, the client secret) deferred: what
this returns is who signed in and until when, never a token or anything taken from one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from django.db.models import BooleanField, Case, Q, Value, When

from accounts.models import AuthMethod, GrantState, MailAccount, OAuthGrant, awaiting_someone
from accounts.services import oauth_providers
from mailfathom.core.errors import code_of


class SignInState(StrEnum):
    PASSWORD = "password"  # noqa: S105 (a state, not a secret: the account logs in with its stored password)
    SIGNED_IN = "signed_in"
    NEEDS_SIGN_IN = "needs_sign_in"
    REGISTRATION_REFUSED = "registration_refused"
    NOT_SIGNED_IN = "not_signed_in"


@dataclass(frozen=True)
class SignIn:
    account_pk: int
    account_id: str
    authentication: str  # an AuthMethod value
    registration_pk: int | None
    registration_name: str
    state: SignInState
    code: int | None  # why the grant waits for a person (61010, 61011, 61020), else None
    # Left out of synchronization until someone acts (accounts.models.awaiting_someone).
    waits_for_person: bool
    signs_in_people: bool  # False for app-only registrations: no person ever signs in
    synchronized: bool  # served with synchronization on: what /health counts
    subject: str
    access_expires_at: datetime | None

    @property
    def is_oauth(self) -> bool:
        return self.authentication == AuthMethod.OAUTH2

    @property
    def label(self) -> str:
        """ "Password", or "OAuth 2.0 (<registration name>)"."""
        if not self.is_oauth:
            return "Password"
        return f"OAuth 2.0 ({self.registration_name or 'no registration'})"

    @property
    def sentence(self) -> str:
        """The code's operator sentence while the grant waits for a person, else ""."""
        member = code_of(self.code)
        return member.sentence if member is not None else ""


@dataclass(frozen=True)
class Waiting:
    """An account whose OAuth sign-in waits for a person: which state, why (a code), since when."""

    account_pk: int
    state: str  # a GrantState value: needs_sign_in or registration_refused
    code: int | None
    since: datetime | None


def waiting_for_sign_in(account_pks: Iterable[int] | None = None) -> dict[int, Waiting]:
    """Served accounts whose grant must be signed in again, or whose registration was refused.

    One query. An account nobody has signed in to yet is not "again": left out.
    """
    grants = OAuthGrant.objects.filter(
        account__in=MailAccount.objects.served().filter(awaiting_someone())
    ).filter(Q(state=GrantState.REGISTRATION_REFUSED) | Q(signed_in_at__isnull=False))
    if account_pks is not None:
        grants = grants.filter(account_id__in=list(account_pks))
    rows = grants.values_list("account_id", "state", "state_code", "state_since")
    return {pk: Waiting(pk, state, code, since) for pk, state, code, since in rows}


def _state(account: MailAccount, grant: OAuthGrant | None) -> SignInState:
    if account.auth_method != AuthMethod.OAUTH2:
        return SignInState.PASSWORD
    if grant is None:
        return SignInState.NOT_SIGNED_IN
    if grant.state == GrantState.REGISTRATION_REFUSED:
        return SignInState.REGISTRATION_REFUSED
    if grant.state == GrantState.NEEDS_SIGN_IN:
        # A run marks an account nobody ever signed in to as needing sign-in; it was never
        # signed in, so it is not "again".
        return SignInState.NEEDS_SIGN_IN if grant.signed_in_at is not None else SignInState.NOT_SIGNED_IN
    return SignInState.SIGNED_IN


def sign_in_states(account_pks: Iterable[int] | None = None) -> dict[int, SignIn]:
    """Each account's authentication and sign-in state by primary key, in one query."""
    accounts = (
        MailAccount.objects.select_related("oauth_registration", "oauth_grant")
        .defer(
            "credential_encrypted",
            "oauth_registration__client_secret_encrypted",
            "oauth_grant__access_token_encrypted",
            "oauth_grant__refresh_token_encrypted",
        )
        .annotate(
            waits=Case(
                When(awaiting_someone(), then=Value(True)), default=Value(False), output_field=BooleanField()
            )
        )
        .order_by("account_id")
    )
    if account_pks is not None:
        accounts = accounts.filter(pk__in=list(account_pks))
    found = {}
    for account in accounts:
        grant = getattr(account, "oauth_grant", None)  # a reverse one-to-one: absent raises
        registration = account.oauth_registration
        state = _state(account, grant)
        found[account.pk] = SignIn(
            account_pk=account.pk,
            account_id=account.account_id,
            authentication=account.auth_method,
            registration_pk=registration.pk if registration is not None else None,
            registration_name=registration.name if registration is not None else "",
            state=state,
            code=grant.state_code if grant is not None and state != SignInState.SIGNED_IN else None,
            waits_for_person=bool(account.waits),  # type: ignore[attr-defined]  # annotated above
            signs_in_people=(
                registration is None or oauth_providers.provider_of(registration).signs_in_people
            ),
            synchronized=account.served and account.sync_enabled,
            subject=grant.subject if grant is not None else "",
            access_expires_at=grant.access_expires_at if grant is not None else None,
        )
    return found
