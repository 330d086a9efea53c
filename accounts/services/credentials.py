"""Re-encrypt every stored credential under the first key of MAILFATHOM_KEYRING.

Credentials are IMAP passwords, OAuth registrations' client secrets, the tokens of
OAuth sign-ins and the secrets notification webhooks are signed with.
"""

from __future__ import annotations

from django.db import transaction

from accounts import crypto
from accounts.models import MailAccount, OAuthGrant, OAuthRegistration
from accounts.notification_models import NotificationPreference


def rotate_credentials() -> int:
    """Re-encrypt each stored credential with the newest key; return how many were rewritten.

    Runs in one transaction, so a key missing from the ring leaves every row as it was.
    """
    rewritten = 0
    with transaction.atomic():
        for account in MailAccount.objects.select_for_update().exclude(credential_encrypted=""):
            account.credential_encrypted = crypto.rotate(account.credential_encrypted)
            account.save(update_fields=["credential_encrypted", "updated_at"])
            rewritten += 1
        for registration in OAuthRegistration.objects.select_for_update().exclude(client_secret_encrypted=""):
            registration.client_secret_encrypted = crypto.rotate(registration.client_secret_encrypted)
            registration.save(update_fields=["client_secret_encrypted"])
            rewritten += 1
        for grant in OAuthGrant.objects.select_for_update():
            fields = ["access_token_encrypted", "refresh_token_encrypted"]
            for name in fields:
                if getattr(grant, name):
                    setattr(grant, name, crypto.rotate(getattr(grant, name)))
            grant.save(update_fields=fields)
            rewritten += 1
        for preference in NotificationPreference.objects.select_for_update().exclude(
            webhook_secret_encrypted=""
        ):
            preference.webhook_secret_encrypted = crypto.rotate(preference.webhook_secret_encrypted)
            preference.save(update_fields=["webhook_secret_encrypted"])
            rewritten += 1
    return rewritten
