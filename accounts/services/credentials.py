"""Re-encrypt every stored credential under the first key of MAILFATHOM_KEYRING."""

from __future__ import annotations

from django.db import transaction

from accounts import crypto
from accounts.models import MailAccount


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
    return rewritten
