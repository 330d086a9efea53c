"""Import a mail archive into one mapped folder of an account, idempotently.

Imported messages go through the same parsing and storage path as synchronized ones. They
have no IMAP identity, so each takes UIDVALIDITY 0 and a UID derived from its bytes:
importing the same archive again stores nothing new.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from accounts.models import MailAccount, normalize_alias
from mailbox.archive import ArchivedMessage, ArchiveReport, archive_bytes, read_archive
from mailbox.models import IMPORTED_UIDVALIDITY, Availability, Email
from mailbox.parsing import header_block
from mailbox.services.store import IncomingMessage, fill_content, store_messages
from mailbox.sync.folder_state import ensure_folders
from mailfathom.core.errors import Code, MailFathomError
from mailfathom.core.progress import Progress, ProgressCallback

BATCH_SIZE = 200
IMPORT_TARGET_UNKNOWN = Code.IMPORT_TARGET_UNKNOWN


@dataclass
class ImportResult:
    read: int = 0
    stored: int = 0
    skipped: int = 0
    withheld: int = 0
    awaiting_headroom: int = 0
    filled: int = 0
    defective: int = 0
    suppressed: int = 0  # erased on request before: never stored again
    # Files read and files passed over, by kind (mailbox.archive_kinds): counts, never names.
    report: ArchiveReport = field(default_factory=ArchiveReport)


def content_uid(raw: bytes) -> int:
    """A positive 63-bit UID from the message's bytes (stable across imports)."""
    return int.from_bytes(hashlib.sha256(raw).digest()[:8], "big") & ((1 << 63) - 1) or 1


def import_archive(
    account_id: str,
    folder_alias: str,
    path: Path,
    *,
    progress: ProgressCallback | None = None,
) -> ImportResult:
    """Read the archive at `path` into the folder mapped as `folder_alias` of `account_id`.

    `path` may be a tree of many Maildirs, mbox files and message files (mailbox.archive);
    each file is judged by its content, and what is passed over is counted in
    `result.report` by kind. `progress`
    hears the bytes of the archive read and committed, after each batch; an exception it
    raises (or a KeyboardInterrupt) stops the import with every committed batch kept, and
    importing again skips what is held and goes on.
    """
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
    total = archive_bytes(path) if progress else 0
    label = path.name or str(path)
    read_bytes = 0

    def flush() -> None:
        stored = store_messages(folder, batch)
        result.stored += stored.stored
        result.skipped += stored.skipped
        result.suppressed += stored.suppressed
        result.defective += stored.defective
        result.awaiting_headroom += stored.awaiting_headroom
        new = set(stored.email_ids)
        result.withheld += Email.objects.filter(
            id__in=new, availability=Availability.EXCEEDED_SIZE_LIMIT
        ).count()
        # Held rows still waiting for headroom have no server copy to fetch it from: fill them now.
        waiting = {
            email.uid: email
            for email in Email.objects.filter(
                folder=folder,
                uidvalidity=IMPORTED_UIDVALIDITY,
                uid__in=[m.uid for m in batch if m.raw is not None],
                availability=Availability.AWAITING_STORAGE_HEADROOM,
            ).exclude(id__in=new)
        }
        for message in batch:
            email = waiting.pop(message.uid, None)
            if email is not None and message.raw is not None and fill_content(email, message.raw):
                result.filled += 1
                result.skipped -= 1
        batch.clear()
        if progress:
            progress(Progress(label, min(read_bytes, total), total, unit="B", items=result.read))

    if progress:
        progress(Progress(label, 0, total, unit="B", items=0))
    for archived in read_archive(path, result.report):
        result.read += 1
        read_bytes += archived.consumed
        batch.append(_incoming(archived, account.max_message_bytes))
        if len(batch) >= BATCH_SIZE:
            flush()
    if batch:
        flush()
    if progress:
        progress(Progress(label, total, total, unit="B", items=result.read))
    return result


def _incoming(archived: ArchivedMessage, limit: int) -> IncomingMessage:
    too_big = len(archived.raw) > limit
    return IncomingMessage(
        uidvalidity=IMPORTED_UIDVALIDITY,
        uid=content_uid(archived.raw),
        size=len(archived.raw),
        received_at=None,  # the Date header, read by store_messages from content or envelope
        flags=archived.flags,
        raw=None if too_big else archived.raw,
        withheld=Availability.EXCEEDED_SIZE_LIMIT if too_big else "",
        # Only the header block of content kept out is parsed, for its envelope.
        headers=header_block(archived.raw) if too_big else None,
    )
