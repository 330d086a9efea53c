"""What the audit app follows in the apps below it, without their importing it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.utils import timezone

from accounts.services.caller import person
from audit.models import MutationKind, MutationOutcome, RequesterKind
from audit.services.access_trail import AccessChannel, record_access
from audit.services.mutations import Mutation, record_mutation


def record_admin_read(sender: Any, user: Any, page: str, email_ids: Sequence[object], **_: Any) -> None:
    """mailbox.signals.mail_content_shown: an admin page showed these emails' content to `user`."""
    record_access(AccessChannel.ADMIN, page, person(user), email_ids)


def record_folder_reset(sender: Any, account_pk: int, folder_alias: str, emails: int, **_: Any) -> None:
    """mailbox.signals.folder_mail_deleted: synchronization dropped a folder's mail (new UIDVALIDITY)."""
    now = timezone.now()
    record_mutation(
        Mutation(
            kind=MutationKind.FOLDER_MAIL_DELETED,
            requester="synchronization (new UIDVALIDITY)",
            requester_kind=RequesterKind.TASK,
            account_pk=account_pk,
            requested_at=now,
            completed_at=now,
            outcome=MutationOutcome.PERFORMED,
            folder_alias=folder_alias[:200],
            counts={"emails": emails},
        )
    )
