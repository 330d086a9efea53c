"""What the audit app follows in the apps below it, without their importing it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from accounts.services.caller import person
from audit.services import mutations
from audit.services.access_trail import AccessChannel, record_access


def record_admin_read(sender: Any, user: Any, page: str, email_ids: Sequence[object], **_: Any) -> None:
    """mailbox.signals.mail_content_shown: an admin page showed these emails' content to `user`."""
    record_access(AccessChannel.ADMIN, page, person(user), email_ids)


def record_folder_reset(sender: Any, account_pk: int, folder_alias: str, emails: int, **_: Any) -> None:
    """mailbox.signals.folder_mail_deleted: synchronization dropped a folder's mail (new UIDVALIDITY)."""
    mutations.record_folder_reset(account_pk, folder_alias, emails)
