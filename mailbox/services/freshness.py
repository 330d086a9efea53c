"""How current the local copy of each folder is: when synchronization last committed progress.

A tool never contacts a mail server, so every listing carries this per folder. A folder no
run has ever reached (no synchronization state yet, or state without a committed batch) is
reported with no time and wasSynchronized false rather than left out: that folder is the
one whose staleness a caller most needs to see.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from mailbox.models import Folder
from mailbox.services.selection import Selection
from mailfathom.core.wire import WireModel


class FolderFreshness(WireModel):
    """One folder a read covered, and when synchronization last committed progress for it."""

    account_id: str
    alias: str
    last_committed_at: datetime | None
    was_synchronized: bool


def last_commits(mapping_ids: Iterable[int]) -> dict[int, datetime | None]:
    """Return, per folder mapping, when synchronization last committed for it (one query).

    A mapping with no synchronization state is absent from the result; callers read that as
    "never", exactly like a state row whose commit time is empty.
    """
    ids = list(mapping_ids)
    if not ids:
        return {}
    rows = Folder.objects.filter(mapping_id__in=ids).values_list("mapping_id", "last_committed_at")
    return {mapping_id: committed for mapping_id, committed in rows if mapping_id is not None}


def folder_freshness(selection: Selection) -> list[FolderFreshness]:
    """Return one entry per folder the selection reads, in scope order (account, then alias).

    The junk folder takes part only when the selection asked for it, so a caller that left
    junk out is not told about it here either. Folders never synchronized are included.
    """
    readable = set(selection.folder_mapping_ids)
    commits = last_commits(readable)
    entries = []
    for account in selection.scope.accounts:
        for folder in account.folders:
            if folder.mapping_id not in readable:
                continue
            committed = commits.get(folder.mapping_id)
            entries.append(
                FolderFreshness(
                    account_id=account.account_id,
                    alias=folder.alias,
                    last_committed_at=committed,
                    was_synchronized=committed is not None,
                )
            )
    return entries
