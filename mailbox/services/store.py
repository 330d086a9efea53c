"""Store messages in the local copy: parse once, then write rows in one transaction.

Synchronization and import both come through here, so a message is parsed, classified and
stored the same way whichever door it came in by. Storing is idempotent: a message whose
(account, folder, UIDVALIDITY, UID) is already held is skipped, and the uniqueness
constraint makes a duplicate impossible even if two writers raced.
"""

from __future__ import annotations

import hashlib
import uuid
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Sum
from django.utils import timezone

from accounts.models import FolderRole
from mailbox.ids import uuid7
from mailbox.models import (
    AttachmentExtraction,
    Availability,
    Direction,
    Email,
    Folder,
    Participant,
    RawMessage,
)
from mailbox.parsing import ParsedMessage, is_bulk, is_list_mail, parse_envelope, parse_message
from mailbox.services import suppression, threads
from mailbox.services.copy_rows import copy_rows, copy_values
from mailbox.sync.failures import LeaseLost

COMPRESSION_LEVEL = 6
# The columns of the rows written as plain values (copy_values), in the order they are built.
_RAW_FIELDS = ("email_id", "compressed", "sha256", "original_size", "stored_size")
_PARTICIPANT_FIELDS = ("email_id", "role", "position", "address", "display_name")


@dataclass(frozen=True)
class IncomingMessage:
    """One message as a source reports it; `raw` is None when its content was not fetched."""

    uidvalidity: int
    uid: int
    size: int
    received_at: datetime | None  # None (an import): the Date header, else the time of storing
    flags: tuple[str, ...] = ()
    raw: bytes | None = None
    withheld: str = ""  # an Availability value when raw is deliberately absent
    # The header block of a message whose content is withheld (bounded by the source to
    # HEADER_BLOCK_BYTES): its envelope is stored from it.
    headers: bytes | None = None


@dataclass
class StoreResult:
    stored: int = 0
    skipped: int = 0
    awaiting_headroom: int = 0
    defective: int = 0
    suppressed: int = 0  # erased on request before (mailbox.services.suppression): never stored
    stored_bytes: int = 0
    email_ids: list[uuid.UUID] = field(default_factory=list)


def bulk_local_parts() -> frozenset[str]:
    raw = settings.MAILFATHOM.bulk_sender_local_parts
    return frozenset(part.strip().casefold() for part in raw.split(",") if part.strip())


def stored_bytes(account_pk: int) -> int:
    """Bytes of raw content the account holds locally (compressed, as stored)."""
    total = RawMessage.objects.filter(email__account_id=account_pk).aggregate(total=Sum("stored_size"))
    return int(total["total"] or 0)


def raw_bytes_at_most() -> int:
    """An upper bound on the raw content every account holds: the size on disk of the raw
    messages' table with its TOAST and indexes. It costs a few file-size reads, where the
    exact SUM reads every row of the account, a cost growing with the mailbox, once per
    stored batch. zlib output never shrinks under PostgreSQL's own
    compression, so each stored value takes at least its stored_size on disk."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_total_relation_size(%s::regclass)", [RawMessage._meta.db_table])
        return int(cursor.fetchone()[0])


class StorageRoom:
    """How many more bytes of raw content an account may store, read cheaply until it matters.

    It starts from the bound (the ceiling less raw_bytes_at_most()): room that is surely
    there. Only when something does not fit in that is the account's exact total read,
    once, so an account far below its ceiling never pays for the SUM and one near it is
    held to the same exact figure as before.
    """

    def __init__(self, account_pk: int, ceiling: int) -> None:
        self._account_pk, self._ceiling = account_pk, ceiling
        self._room = ceiling - raw_bytes_at_most()
        self._taken = 0  # bytes granted by this object and not yet in the table
        self._exact = False

    def take(self, size: int) -> bool:
        """Whether `size` more bytes fit; if so they are counted as taken."""
        if size > self._room and not self._exact:
            self._room = self._ceiling - stored_bytes(self._account_pk) - self._taken
            self._exact = True
        if size > self._room:
            return False
        self._room -= size
        self._taken += size
        return True


@dataclass(frozen=True)
class PreparedMessage:
    """A message with what storing it needs and no database gives: parsed, compressed, hashed."""

    message: IncomingMessage
    parsed: ParsedMessage | None  # None: neither content nor header block to read
    compressed: bytes | None = None  # the raw content at COMPRESSION_LEVEL, when there is content
    sha256: str = ""
    # Its row's key, drawn with the rest of the preparation.
    email_id: uuid.UUID = field(default_factory=uuid7)


def prepare_messages(messages: Sequence[IncomingMessage]) -> list[PreparedMessage]:
    """Parse, compress and hash `messages`: the part of storing that touches no database.

    It reads nothing shared and writes nothing: the work before the transaction, which
    synchronization runs on a second thread while the machine has a core to spare
    (mailbox.sync.engine, PARSE_AHEAD).
    """
    prepared = []
    for message in messages:
        if message.raw is not None:
            prepared.append(
                PreparedMessage(
                    message,
                    parse_message(message.raw),
                    zlib.compress(message.raw, COMPRESSION_LEVEL),
                    hashlib.sha256(message.raw).hexdigest(),
                )
            )
        else:
            prepared.append(
                PreparedMessage(message, parse_envelope(message.headers) if message.headers else None)
            )
    return prepared


def store_messages(
    folder: Folder,
    messages: Sequence[IncomingMessage],
    *,
    advance_to_uid: int | None = None,
    lease_token: uuid.UUID | None = None,
) -> StoreResult:
    """Parse and store `messages` into `folder` in one transaction (see store_prepared)."""
    return store_prepared(
        folder, prepare_messages(messages), advance_to_uid=advance_to_uid, lease_token=lease_token
    )


def store_prepared(
    folder: Folder,
    prepared: Sequence[PreparedMessage],
    *,
    advance_to_uid: int | None = None,
    lease_token: uuid.UUID | None = None,
) -> StoreResult:
    """Store messages `prepare_messages` has read into `folder` in one transaction.

    With `advance_to_uid`, the folder's committed progress moves to that UID in the same
    transaction, so progress never runs ahead of the rows it describes. With `lease_token`,
    the write happens only if the run still holds the folder's lease (else LeaseLost), so a
    run that stalled past its lease can never interleave with the one that took it over.
    Content that would
    take the account past its storage ceiling is stored as awaitingStorageHeadroom.

    A message erased on request (by remote identity, or by Message-ID within the account) is
    skipped and counted as suppressed. The folder row is locked first, so an erasure
    running at the same time (which locks the account's folders) either sees these rows
    or is seen by this check, never neither.
    """
    account = folder.account
    own_address = account.username.casefold() if "@" in account.username else ""
    # Mail in Drafts is ours being written (drafting appends replies there): outgoing, like Sent.
    outgoing_roles = (FolderRole.SENT, FolderRole.DRAFTS)
    is_sent_folder = folder.mapping is not None and folder.mapping.role in outgoing_roles
    local_parts = bulk_local_parts()
    result = StoreResult()

    with transaction.atomic():
        locked = Folder.objects.select_for_update().filter(pk=folder.pk)
        if lease_token is not None:
            locked = locked.filter(lease_token=lease_token)
        if not locked.exists() and lease_token is not None:
            raise LeaseLost
        kept = _unsuppressed(folder, prepared, result)
        held = set(
            Email.objects.filter(
                folder=folder,
                uidvalidity__in={p.message.uidvalidity for p in prepared},
                uid__in=[p.message.uid for p in prepared],
            ).values_list("uidvalidity", "uid")
        )
        room = StorageRoom(account.pk, account.storage_ceiling_bytes)
        emails: list[Email] = []
        raws: list[tuple[uuid.UUID, bytes, str, int, int]] = []
        participants: list[tuple[uuid.UUID, str, int, str, str]] = []
        now = timezone.now()
        for ready in kept:
            message, parsed = ready.message, ready.parsed
            if (message.uidvalidity, message.uid) in held:
                result.skipped += 1
                continue
            held.add((message.uidvalidity, message.uid))
            raw_row = None
            availability = message.withheld or Availability.AVAILABLE
            if message.raw is not None and ready.compressed is not None:
                if not room.take(len(ready.compressed)):
                    availability = Availability.AWAITING_STORAGE_HEADROOM
                    parsed_for_row = None
                    result.awaiting_headroom += 1
                else:
                    raw_row = (ready.compressed, ready.sha256, len(message.raw))
                    parsed_for_row = parsed
            else:
                parsed_for_row = None
            # Content kept out (over the size limit, or no headroom) still has its envelope.
            envelope = parsed_for_row or parsed
            email = _email_row(folder, message, parsed_for_row, availability, now, envelope, ready.email_id)
            if envelope is not None:
                if parsed_for_row is None:
                    _apply_envelope(email, envelope)
                email.is_bulk = is_bulk(envelope, local_parts)
                email.is_list_mail = is_list_mail(envelope)
                email.direction = _direction(envelope, own_address, is_sent_folder)
                if parsed_for_row is not None and parsed_for_row.defects:
                    result.defective += 1
                participants.extend(_participant_values(email.id, envelope))
            elif is_sent_folder:
                email.direction = Direction.OUTGOING
            if raw_row is not None:
                compressed, sha256, original_size = raw_row
                raws.append((email.id, compressed, sha256, original_size, len(compressed)))
                result.stored_bytes += len(compressed)
            emails.append(email)
        threads.assign_threads(account.pk, emails)
        copy_rows(Email, emails)
        copy_values(RawMessage, _RAW_FIELDS, raws)
        copy_values(Participant, _PARTICIPANT_FIELDS, participants)
        result.stored = len(emails)
        result.email_ids = [email.id for email in emails]
        if advance_to_uid is not None:
            Folder.objects.filter(pk=folder.pk).record_progress(
                now, highest_uid=advance_to_uid, run_stored=F("run_stored") + result.stored
            )
    return result


def _unsuppressed(
    folder: Folder, prepared: Sequence[PreparedMessage], result: StoreResult
) -> list[PreparedMessage]:
    """Drop the messages erased on request, counting them in `result.suppressed`."""
    by_uidvalidity: dict[int, list[int]] = {}
    for ready in prepared:
        by_uidvalidity.setdefault(ready.message.uidvalidity, []).append(ready.message.uid)
    erased = {
        (uidvalidity, uid)
        for uidvalidity, uids in by_uidvalidity.items()
        for uid in suppression.suppressed_uids(folder, uidvalidity, uids)
    }
    erased_ids = suppression.suppressed_message_ids(
        folder.account_id,
        (r.parsed.message_id[:998] for r in prepared if r.parsed is not None and r.parsed.message_id),
    )
    kept = []
    for ready in prepared:
        message, parsed = ready.message, ready.parsed
        if (message.uidvalidity, message.uid) in erased or (
            parsed is not None and parsed.message_id and parsed.message_id[:998] in erased_ids
        ):
            result.suppressed += 1
        else:
            kept.append(ready)
    return kept


def fill_content(email: Email, raw: bytes) -> bool:
    """Store content fetched later for an email held without it; return whether it fit."""
    parsed = parse_message(raw)
    compressed = zlib.compress(raw, COMPRESSION_LEVEL)
    with transaction.atomic():
        locked = Email.objects.select_for_update(of=("self",)).select_related("account").get(pk=email.pk)
        if not StorageRoom(locked.account_id, locked.account.storage_ceiling_bytes).take(len(compressed)):
            return False
        RawMessage.objects.update_or_create(
            email=locked,
            defaults={
                "compressed": compressed,
                "sha256": hashlib.sha256(raw).hexdigest(),
                "original_size": len(raw),
                "stored_size": len(compressed),
            },
        )
        _apply_parsed(locked, parsed)
        locked.availability = Availability.ENCRYPTED if parsed.encrypted else Availability.AVAILABLE
        locked.is_bulk = is_bulk(parsed, bulk_local_parts())
        locked.is_list_mail = is_list_mail(parsed)
        # Its ids were unknown while it was held without content: it may belong to a thread.
        threads.assign_threads(locked.account_id, [locked])
        locked.save()
        locked.participants.all().delete()
        Participant.objects.bulk_create(
            Participant(**dict(zip(_PARTICIPANT_FIELDS, values, strict=True)))
            for values in _participant_values(locked.pk, parsed)
        )
        # New content (a repair, or content held back for headroom): its attachments are read
        # again, since a pass that met the damaged copy recorded the email done with nothing.
        AttachmentExtraction.objects.filter(email=locked).delete()
    return True


def _email_row(
    folder: Folder,
    message: IncomingMessage,
    parsed: ParsedMessage | None,
    availability: str,
    now: datetime,
    envelope: ParsedMessage | None = None,
    email_id: uuid.UUID | None = None,
) -> Email:
    """The row for `message`: its content from `parsed`, else its envelope alone."""
    envelope = parsed or envelope
    email = Email(
        id=email_id or uuid7(),
        account_id=folder.account_id,
        folder=folder,
        uidvalidity=message.uidvalidity,
        uid=message.uid,
        received_at=message.received_at or (envelope.sent_at if envelope else None) or now,
        size_bytes=message.size,
        flags=list(message.flags),
        flags_observed=True,
        flags_observed_at=now,
        availability=availability,
    )
    if parsed is not None:
        _apply_parsed(email, parsed)
        if parsed.encrypted:
            email.availability = Availability.ENCRYPTED
    return email


def _apply_envelope(email: Email, parsed: ParsedMessage) -> None:
    """Set what the header block says: ids, subject, date, sender, the people on it."""
    email.message_id = parsed.message_id[:998]
    email.in_reply_to = parsed.in_reply_to[:998]
    email.references = [reference[:998] for reference in parsed.references]
    email.subject = parsed.subject.replace("\x00", "")
    email.sent_at = parsed.sent_at
    email.sender_address = parsed.sender.address[:320] if parsed.sender else ""
    email.sender_name = parsed.sender.display_name[:998] if parsed.sender else ""
    email.participants_text = _participants_text(parsed)


def _apply_parsed(email: Email, parsed: ParsedMessage) -> None:
    _apply_envelope(email, parsed)
    email.attachment_count = len(parsed.attachments)
    email.inline_count = parsed.inline_count
    email.attachment_total_bytes = parsed.attachment_total_size
    email.encrypted = parsed.encrypted
    email.unverified_signature = parsed.unverified_signature
    email.unexpanded_tnef = parsed.unexpanded_tnef
    email.parse_defects = list(parsed.defects)
    email.text_body = parsed.text_body.replace("\x00", "")


def _participants_text(parsed: ParsedMessage) -> str:
    """Names and addresses of everyone on the message, for the lexical index."""
    people = [parsed.sender] if parsed.sender else []
    people += [*parsed.to, *parsed.cc, *parsed.reply_to]
    words = []
    for person in people[:200]:
        words += [person.display_name, person.address]
    return " ".join(word for word in words if word).replace("\x00", "")[:20000]


def _direction(parsed: ParsedMessage, own_address: str, is_sent_folder: bool) -> str:
    if is_sent_folder:
        return Direction.OUTGOING
    if own_address and parsed.sender and parsed.sender.address.casefold() == own_address:
        return Direction.OUTGOING
    return Direction.INCOMING


def _participant_values(
    email_id: uuid.UUID, parsed: ParsedMessage
) -> list[tuple[uuid.UUID, str, int, str, str]]:
    """The participant rows of an email, as values in the order of _PARTICIPANT_FIELDS."""
    rows = []
    for role, addresses in (
        ("to", parsed.to),
        ("cc", parsed.cc),
        ("bcc", parsed.bcc),
        ("reply_to", parsed.reply_to),
    ):
        for position, address in enumerate(addresses):
            rows.append((email_id, role, position, address.address[:320], address.display_name[:998]))
    return rows
