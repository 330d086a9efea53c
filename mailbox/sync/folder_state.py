"""Folder rows, leases and failure records: the database side of a synchronization run."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import cast

from django.conf import settings
from django.db.models import F, Max, Min, Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from accounts.models import MailAccount
from mailbox.models import Folder
from mailbox.sync.failures import PAUSE_CODES, next_attempt


def lease_seconds() -> int:
    return settings.MAILFATHOM.sync_lease_seconds


def due_accounts(now: datetime) -> list[MailAccount]:
    """Accounts to poll at `now`: those synchronization works on whose poll interval has
    passed since the least recently committed of their folders, or none ever committed.
    """
    accounts = MailAccount.objects.synchronized().annotate(
        last_progress=Min("synced_folders__last_committed_at")
    )
    return [
        account
        for account in accounts
        if (last := account.last_progress) is None  # type: ignore[attr-defined]  # annotated by the query above
        or last <= now - timedelta(seconds=account.poll_interval_seconds)
    ]


def record_interrupted_runs(now: datetime | None = None) -> int:
    """Record every run found holding an expired lease as interrupted (once per run).

    Called by whatever reads folders (the status page, the scheduler's pass, the folder
    admin), so a crashed run says so the next time anyone looks. One indexed UPDATE.
    """
    return Folder.objects.all().record_interrupted(now or timezone.now(), lease_seconds())


def accounts_to_resume(now: datetime) -> list[tuple[int, int, uuid.UUID]]:
    """(account pk, folder pk, dead lease token) of each abandoned folder synchronization works on.

    A run that died leaves its lease held until it expires; nothing else would queue the
    account before its poll interval passes again. One query on the held-lease index.
    """
    rows = (
        Folder.objects.abandoned(now)
        .filter(account__in=MailAccount.objects.synchronized(), mapping__isnull=False)
        .values_list("account_id", "pk", "lease_token")
    )
    # An abandoned folder is one whose lease is still held, so its token is set.
    return cast("list[tuple[int, int, uuid.UUID]]", list(rows))


def seconds_until_free(account_pk: int, now: datetime | None = None) -> float:
    """Seconds until the last lease other runs hold on the account's folders expires (0: none)."""
    now = now or timezone.now()
    latest = Folder.objects.filter(account_id=account_pk, lease_token__isnull=False).aggregate(
        latest=Max("lease_expires_at")
    )["latest"]
    return max(0.0, (latest - now).total_seconds()) if latest is not None else 0.0


def ensure_folders(account: MailAccount) -> list[Folder]:
    """Return a Folder row for every folder mapping of `account`, creating missing ones.

    A Folder whose mapping was removed keeps its rows but is no longer synchronized or read.
    """
    folders = []
    for mapping in account.folders.all():
        folder, _ = Folder.objects.get_or_create(
            account=account, remote_name=mapping.remote_name, defaults={"mapping": mapping}
        )
        if folder.mapping_id != mapping.pk:
            Folder.objects.filter(mapping=mapping).exclude(pk=folder.pk).update(mapping=None)
            folder.mapping = mapping
            folder.save(update_fields=["mapping"])
        folders.append(folder)
    return folders


def acquire_lease(folder: Folder) -> uuid.UUID | None:
    """Take the folder's lease unless another live run holds it; a conditional UPDATE."""
    token = uuid.uuid4()
    now = timezone.now()
    taken = (
        Folder.objects.filter(pk=folder.pk)
        .filter(Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now))
        .update(lease_token=token, lease_expires_at=now + timedelta(seconds=lease_seconds()))
    )
    return token if taken else None


def renew_lease(folder: Folder, token: uuid.UUID) -> bool:
    now = timezone.now()
    return bool(
        Folder.objects.filter(pk=folder.pk, lease_token=token).update(
            lease_expires_at=now + timedelta(seconds=lease_seconds())
        )
    )


def release_lease(folder: Folder, token: uuid.UUID) -> None:
    Folder.objects.filter(pk=folder.pk, lease_token=token).update(lease_token=None, lease_expires_at=None)


def record_failure(folder: Folder, code: int, *, resume_at: datetime | None = None) -> None:
    """Record a failure; the folder waits until `resume_at` when the refusal named it, else backs off.

    The first failure since the folder last committed progress starts its failing time; a
    pause (the provider's limit, the account's pace) is not a failure and starts none.
    """
    now = timezone.now()
    Folder.objects.filter(pk=folder.pk).update(
        last_failure_code=code,
        last_failure_at=now,
        consecutive_failures=F("consecutive_failures") + 1,
        failing_since=F("failing_since") if code in PAUSE_CODES else Coalesce("failing_since", Value(now)),
    )
    folder.refresh_from_db(fields=["consecutive_failures"])
    until = resume_at or next_attempt(now, folder.consecutive_failures)
    Folder.objects.filter(pk=folder.pk).update(backoff_until=until)


def in_backoff(folder: Folder) -> bool:
    return folder.backoff_until is not None and folder.backoff_until > timezone.now()
