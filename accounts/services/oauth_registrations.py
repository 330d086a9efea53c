"""What is wrong with the deployment's OAuth registrations, said before any sign-in needs them.

Checked at startup (`make run` prints each problem under its banner; `manage.py check
--database default` reports them as warnings) and nothing here reaches the network: a
provider that cannot be reached at startup may well be reachable when a run needs it.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError

from accounts.crypto import decrypt
from accounts.models import AuthMethod, MailAccount, OAuthRegistration
from accounts.services import oauth_providers
from mailfathom.core.errors import MailFathomError


def problems() -> list[str]:
    """One sentence per problem, naming the registration (never its secret)."""
    found: list[str] = []
    for registration in OAuthRegistration.objects.all():
        label = f"OAuth registration '{registration.name}'"
        try:
            registration.clean()
        except ValidationError as invalid:
            for messages in invalid.message_dict.values():
                found.extend(f"{label}: {message}" for message in messages)
        if registration.provider not in oauth_providers.PROVIDERS:
            found.append(f"{label}: its provider is not one this version knows.")
            continue
        if registration.has_client_secret:
            try:
                decrypt(registration.client_secret_encrypted)
            except MailFathomError:
                found.append(
                    f"{label}: its client secret does not decrypt with MAILFATHOM_KEYRING; enter it again."
                )
        elif registration.provider != "generic":
            # Microsoft's and Google's web-application registrations, and every client
            # credentials grant, authenticate with a secret; only a generic server may take
            # a public client.
            found.append(f"{label}: no client secret is stored; the provider will refuse its token requests.")
    for account in MailAccount.objects.filter(auth_method=AuthMethod.OAUTH2, oauth_registration__isnull=True):
        found.append(f"Mail account '{account.account_id}' uses OAuth 2.0 but names no registration.")
    return found
