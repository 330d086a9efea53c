"""Import a mail archive into one mapped folder of an account, idempotently.

Imported messages go through the same parsing and storage path as synchronized ones. They
have no IMAP identity, so each takes UIDVALIDITY 0 and a UID derived from its bytes:
importing the same archive again stores nothing new.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from accounts.models import MailAccount, normalize_alias
from mailbox.archive import ArchivedMessage, read_archive
from mailbox.models import IMPORTED_UIDVALIDITY, Availability
from mailbox.services.store import IncomingMessage, store_messages
from mailbox.sync.folder_state import ensure_folders
from mailfathom.errors import MailFathomError

BATCH_SIZE = 200
IMPORT_TARGET_UNKNOWN = 62001


@dataclass
class ImportResult:
    read: int = 0
    stored: int = 0
    skipped: int = 0
    withheld: int = 0
    defective: int = 0


def content_uid(raw: bytes) -> int:
    """A positive 63-bit UID from the message's bytes (stable across imports)."""
    return int.from_bytes(hashlib.sha256(raw).digest()[:8], "big") & ((1 << 63) - 1) or 1


def import_archive(
    account_id: str,
    folder_alias: str,
    path: Path,
    *,
    progress: Callable[[int], None] | None = None,
) -> ImportResult:
    """Read the archive at `path` into the folder mapped as `folder_alias` of `account_id`."""
    account = MailAccount.objects.filter(account_id=account_id).first()
    if account is None:
        raise MailFathomError(IMPORT_TARGET_UNKNOWN, "No account has that identifier.")
    alias = normalize_alias(folder_alias)
    folders = [f for f in ensure_folders(account) if f.mapping and f.mapping.alias == alias]
    if not folders:
        raise MailFathomError(IMPORT_TARGET_UNKNOWN, "The account maps no folder with that alias.")
    folder = folders[0]
    result = ImportResult()
    batch: list[IncomingMessage] = []

    def flush() -> None:
        stored = store_messages(folder, batch)
        result.stored += stored.stored
        result.skipped += stored.skipped
        result.defective += stored.defective
        if progress:
            progress(len(batch))
        batch.clear()

    for archived in read_archive(path):
        result.read += 1
        batch.append(_incoming(archived, account.max_message_bytes))
        result.withheld += batch[-1].raw is None
        if len(batch) >= BATCH_SIZE:
            flush()
    if batch:
        flush()
    return result


def _incoming(archived: ArchivedMessage, limit: int) -> IncomingMessage:
    too_big = len(archived.raw) > limit
    return IncomingMessage(
        uidvalidity=IMPORTED_UIDVALIDITY,
        uid=content_uid(archived.raw),
        size=len(archived.raw),
        received_at=None,
        flags=archived.flags,
        raw=None if too_big else archived.raw,
        withheld=Availability.EXCEEDED_SIZE_LIMIT if too_big else "",
    )
