"""list_accounts: the accounts this deployment serves, the names they answer to, their folders.

The one read that publishes the account set, resolved through the same scope as every other
read, so unserved accounts and folders hidden from tools are absent (junk is listed).
Each account lists every folder tools may read, synchronized or not: an empty list means no
tool will return any of its mail. Nothing about how an account is reached is published (no
host, port, security, user name or credential).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from django.conf import settings

from accounts.models import FolderRole, MailAccount, SyncMode
from accounts.services.scope import resolve_scope
from mailbox.services.freshness import last_commits
from mailfathom.core.wire import WireModel

SynchronizationMode = Literal["polling", "push"]
WireFolderRole = Literal["inbox", "sent", "drafts", "junk", "archive", "trash"]

_MODES: dict[str, SynchronizationMode] = {SyncMode.POLLING: "polling", SyncMode.PUSH: "push"}
_ROLES: dict[str, WireFolderRole] = {
    FolderRole.INBOX: "inbox",
    FolderRole.SENT: "sent",
    FolderRole.DRAFTS: "drafts",
    FolderRole.JUNK: "junk",
    FolderRole.ARCHIVE: "archive",
    FolderRole.TRASH: "trash",
}


class DirectoryFolder(WireModel):
    alias: str
    role: WireFolderRole | None
    last_committed_at: datetime | None
    was_synchronized: bool


class DirectoryAccount(WireModel):
    account_id: str
    display_name: str
    synchronization_mode: SynchronizationMode
    synchronization_enabled: bool
    folders: list[DirectoryFolder]


class AccountDirectory(WireModel):
    """Served accounts by identifier; synchronization_enabled is the deployment-wide switch."""

    accounts: list[DirectoryAccount]
    synchronization_enabled: bool


def list_accounts() -> AccountDirectory:
    """Return every served account, ordered by identifier, with the folders tools may read.

    An account's synchronization_enabled is true only while both the account and the
    deployment synchronize; false means its folders' times are as current as they will get.
    """
    deployment_syncs = bool(settings.MAILFATHOM.sync_enabled)
    scope = resolve_scope()
    settings_by_pk = {
        row["pk"]: row
        for row in MailAccount.objects.filter(pk__in=[a.account_pk for a in scope.accounts]).values(
            "pk", "sync_mode", "sync_enabled"
        )
    }
    commits = last_commits(scope.folder_mapping_ids)
    accounts = []
    for account in scope.accounts:
        row = settings_by_pk.get(account.account_pk)
        if row is None:  # deleted since the scope was resolved
            continue
        accounts.append(
            DirectoryAccount(
                account_id=account.account_id,
                display_name=account.display_name,
                synchronization_mode=_MODES[row["sync_mode"]],
                synchronization_enabled=deployment_syncs and row["sync_enabled"],
                folders=[
                    DirectoryFolder(
                        alias=folder.alias,
                        role=_ROLES[folder.role] if folder.role else None,
                        last_committed_at=commits.get(folder.mapping_id),
                        was_synchronized=commits.get(folder.mapping_id) is not None,
                    )
                    for folder in account.folders
                ],
            )
        )
    return AccountDirectory(accounts=accounts, synchronization_enabled=deployment_syncs)
