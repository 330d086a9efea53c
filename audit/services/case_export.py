"""Case exports: the mail of an account, a person or a case, as EML files and an mbox in one zip.

Mail leaving the product is an act to record and to bound: the selection's size is checked
before and while writing (58003), the zip is streamed to disk message by message, the record
keeps addresses only as keyed hashes, and nothing of the mail or the addresses is logged.
What the zip holds: docs/operations/compliance.md, Case exports.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
import time
import uuid
import zipfile
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import F, Q, QuerySet, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from accounts.models import MailAccount
from audit.case_export_models import CaseExport, CaseExportStatus
from audit.models import MutationKind, MutationOutcome, RequesterKind
from audit.services import arguments, chain
from audit.services.address_hashes import hashes_match, recorded_hashes
from audit.services.arguments import refused
from audit.services.mutations import Mutation, message_id_hash, record_mutation
from mailbox.models import Availability, Email, RawMessage
from mailbox.services.content import StoredRaw, stored_raws
from mailfathom.core.errors import UNDESCRIBED, Code, MailFathomError
from mailfathom.core.progress import Progress, ProgressCallback

logger = logging.getLogger(__name__)

FORMAT = "mailfathom-case-export"
FORMAT_VERSION = 1
KEY_PURPOSE = "case-export"
MAX_ACCOUNT_ID_LENGTH = 256
MAX_CASE_REFERENCE_LENGTH = 200
PAGE = 200  # emails read from the database per round trip
RAW_GROUP_BYTES = 16 * 1024 * 1024  # stored (compressed) raw bytes held in memory at once
PROGRESS_SECONDS = 1.0  # how often the record's progress is written while exporting
PROGRESS_LABEL = "case export"
STALE_SECONDS = 300  # a running export with no progress for this long is taken over
ABANDONED_SECONDS = 6 * 3600  # ... and with none for this long, beat marks it failed
MBOX_NAME = "messages.mbox"
MANIFEST_NAME = "manifest.json"
SUMS_NAME = "manifest.sha256"
CASE_EXPORT_TOO_LARGE = Code.CASE_EXPORT_TOO_LARGE
_RAW_STORED = {Availability.AVAILABLE, Availability.ENCRYPTED}
_FROM_LINE = re.compile(rb"^(>*From )", re.MULTILINE)
_COPY_CHUNK = 1024 * 1024


def chain_heads() -> dict[str, dict[str, Any]]:
    """The head of every audit trail's hash chain when the export is written, by trail.

    Each names its last link's sequence and chain hash and the entries the trail held; a
    later `verify_trails` (or GET /api/trails/verify/?trail=…&at=<sequence>) shows whether
    the live chain still holds that hash at that place (docs/operations/compliance.md).
    """
    heads: dict[str, dict[str, Any]] = {}
    for name in chain.trail_names():
        sequence, chain_hash = chain.head(name)
        heads[name] = {"sequence": sequence, "hash": chain_hash, "entries": chain.entry_count(name)}
    return heads


# --- The selection ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CaseSelection:
    """A validated selection; every part given narrows it (accounts, a person, a received range)."""

    account_ids: tuple[str, ...] = ()  # empty: every account
    addresses: tuple[str, ...] = ()  # case-folded; empty: anyone's mail
    received_on_or_after: datetime | None = None
    received_before: datetime | None = None

    def described(self) -> dict[str, Any]:
        """The query as given, for the manifest inside the zip (addresses in clear, beside their mail)."""
        return {
            "account_ids": list(self.account_ids),
            "addresses": list(self.addresses),
            "received_on_or_after": _instant(self.received_on_or_after),
            "received_before": _instant(self.received_before),
        }

    def recorded(self) -> dict[str, Any]:
        """The query as the record keeps it: addresses as keyed hashes only."""
        described = self.described()
        described["address_hashes"] = recorded_hashes(self.addresses, KEY_PURPOSE) if self.addresses else []
        del described["addresses"]
        return described


def case_selection(
    *,
    account_ids: Iterable[str] | None = None,
    addresses: Iterable[str] | None = None,
    received_on_or_after: datetime | None = None,
    received_before: datetime | None = None,
) -> CaseSelection:
    """Validate a selection; refuse with 51002 naming the argument and its limit, never a value."""
    accounts = arguments.account_ids(account_ids or (), longest=MAX_ACCOUNT_ID_LENGTH)
    folded = arguments.addresses(addresses or ())
    arguments.received_range(received_on_or_after, received_before)
    if not (accounts or folded or received_on_or_after or received_before):
        raise refused(
            "selection", "A case export must name accounts, a person's addresses or a received range."
        )
    arguments.refuse_unknown_accounts(accounts)
    return CaseSelection(tuple(accounts), tuple(folded), received_on_or_after, received_before)


def selected_emails(selection: CaseSelection) -> QuerySet[Email]:
    """Every stored email the selection names, in every folder (hidden and unmapped ones too)."""
    rows = Email.objects.received_between(selection.received_on_or_after, selection.received_before)
    if selection.addresses:
        rows = rows.involving(selection.addresses)
    if selection.account_ids:
        rows = rows.filter(account__account_id__in=selection.account_ids)
    return rows


@dataclass(frozen=True)
class Plan:
    messages: int
    stored_bytes: int  # raw MIME bytes held for them (what the EML files will hold)


def plan(selection: CaseSelection) -> Plan:
    """Count the selection and its stored raw bytes; change nothing."""
    ids = selected_emails(selection).values("pk")
    messages = Email.objects.filter(pk__in=ids).count()
    stored = RawMessage.objects.filter(email_id__in=ids).aggregate(n=Coalesce(Sum("original_size"), 0))["n"]
    return Plan(messages=messages, stored_bytes=int(stored))


def max_bytes() -> int:
    return int(settings.MAILFATHOM.case_export_max_bytes)


def retention_days() -> int:
    return int(settings.MAILFATHOM.case_export_retention_days)


def _too_large() -> MailFathomError:
    return MailFathomError(CASE_EXPORT_TOO_LARGE, CASE_EXPORT_TOO_LARGE.message(maximum=max_bytes()))


# --- Starting, running, expiring -------------------------------------------------------------


def start_case_export(
    selection: CaseSelection, *, requested_by: str, case_reference: str = "", now: datetime | None = None
) -> CaseExport:
    """Record a queued export of `selection`, or a refused one and raise 58003 when it is too large.

    The caller queues `run_case_export(record.id, selection.addresses)` once this commits.
    """
    reference = case_reference.strip()
    if len(reference) > MAX_CASE_REFERENCE_LENGTH or any(ord(ch) < 32 for ch in reference):
        raise refused(
            "caseReference",
            f"The caseReference argument must be at most {MAX_CASE_REFERENCE_LENGTH} characters "
            "without control characters.",
        )
    planned = plan(selection)
    record = CaseExport.objects.create(
        requested_by=requested_by[:200],
        requested_at=now or timezone.now(),
        case_reference=reference,
        selection=selection.recorded(),
        total_messages=planned.messages,
        selected_bytes=planned.stored_bytes,
    )
    if planned.stored_bytes > max_bytes():
        _finish(record, CaseExportStatus.REFUSED, failure_code=CASE_EXPORT_TOO_LARGE)
        raise _too_large()
    return record


def run_case_export(
    export_id: uuid.UUID | str, addresses: Iterable[str] = (), *, progress: ProgressCallback | None = None
) -> CaseExport:
    """Write the export's zip (the module docstring says what it holds) and record it as done.

    `addresses` are the person's addresses the export was started with (the record keeps
    only their keyed hashes); they must hash to exactly the recorded ones. An export that is
    already done, failed, refused or expired is left as it is; one left running by a worker
    that died is written again from the start. Failures are recorded on the export (58003
    when the selection grew past the bound while writing; 54001 otherwise) and never leave
    a file behind.
    """
    record = CaseExport.objects.get(pk=export_id)
    if not _claimed(record):
        return record
    directory = export_directory()
    final = directory / f"{record.id}.zip"
    try:
        selection = _selection_of(record, addresses)
        planned = plan(selection)
        if planned.stored_bytes > max_bytes():
            raise _too_large()
        CaseExport.objects.filter(pk=record.pk).update(
            total_messages=planned.messages, selected_bytes=planned.stored_bytes, done_messages=0
        )
        record.refresh_from_db()
        written = write_case_export(record, selection, final, progress=progress)
    except MailFathomError as error:
        final.unlink(missing_ok=True)
        status = CaseExportStatus.REFUSED if error.code == CASE_EXPORT_TOO_LARGE else CaseExportStatus.FAILED
        _finish(record, status, failure_code=error.code)
        return record
    except Exception as error:
        final.unlink(missing_ok=True)
        logger.warning("case export %s failed: %s", record.id, type(error).__name__)
        _finish(record, CaseExportStatus.FAILED, failure_code=UNDESCRIBED)
        raise
    finished = timezone.now()
    for account_pk, counts in sorted(written.per_account.items()):
        # A compliance act rather than a change to the mail, kept in the trail of every
        # account whose mail left (only where that account's trail is on, as for every entry).
        record_mutation(
            Mutation(
                kind=MutationKind.CASE_EXPORTED,
                requester=record.requested_by,
                requester_kind=RequesterKind.USER,
                account_pk=account_pk,
                requested_at=record.requested_at,
                completed_at=finished,
                outcome=MutationOutcome.PERFORMED,
                counts=dict(counts),
            )
        )
    record.status = CaseExportStatus.DONE
    record.finished_at = finished
    record.done_messages = written.exported + written.missing
    record.exported_messages = written.exported
    record.missing_messages = written.missing
    record.file_name = final.name
    record.file_bytes = written.file_bytes
    record.file_sha256 = written.file_sha256
    record.manifest_sha256 = written.manifest_sha256
    record.expires_at = finished + timedelta(days=retention_days())
    record.save()
    logger.info("case export %s done: %d messages, %d missing", record.id, written.exported, written.missing)
    return record


def _claimed(record: CaseExport) -> bool:
    """Take the export for this worker: a queued one, or a running one whose worker went silent.

    A task is handed out again when its worker dies (acks late), and also when it runs past
    the broker's visibility timeout while its first worker is still writing: only a running
    export without progress for STALE_SECONDS is taken over, so two workers never write one zip.
    """
    now = timezone.now()
    stale = Q(status=CaseExportStatus.RUNNING) & (
        Q(progress_at__isnull=True) | Q(progress_at__lt=now - timedelta(seconds=STALE_SECONDS))
    )
    taken = CaseExport.objects.filter(Q(pk=record.pk) & (Q(status=CaseExportStatus.QUEUED) | stale)).update(
        status=CaseExportStatus.RUNNING, started_at=now, progress_at=now
    )
    record.refresh_from_db()
    return taken == 1


def fail_abandoned_exports(now: datetime | None = None) -> int:
    """Mark failed (54001) the exports no worker is writing any more; returns how many.

    A running export silent for ABANDONED_SECONDS lost its worker and was not taken over (its
    task was handed out again too soon after the last progress, or never); a queued one that
    no worker picked up for as long lost its task message. Either is started again by hand.
    """
    now = now or timezone.now()
    before = now - timedelta(seconds=ABANDONED_SECONDS)
    abandoned = 0
    silent = Q(status=CaseExportStatus.RUNNING) & (Q(progress_at__lt=before) | Q(progress_at__isnull=True))
    never_started = Q(status=CaseExportStatus.QUEUED, requested_at__lt=before)
    for record in CaseExport.objects.filter(silent | never_started):
        partial = export_directory() / f"{record.id}.zip.partial"
        partial.unlink(missing_ok=True)
        abandoned += CaseExport.objects.filter(pk=record.pk, status=record.status).update(
            status=CaseExportStatus.FAILED, failure_code=UNDESCRIBED, finished_at=now
        )
    return abandoned


def expire_case_exports(now: datetime | None = None) -> int:
    """Delete the zip of every export past its expiry; the records stay. Returns how many went."""
    now = now or timezone.now()
    expired = 0
    for record in CaseExport.objects.filter(status=CaseExportStatus.DONE, expires_at__lte=now):
        if record.file_name:
            _path_of(record).unlink(missing_ok=True)
        CaseExport.objects.filter(pk=record.pk).update(
            status=CaseExportStatus.EXPIRED, file_deleted_at=now, file_name=""
        )
        expired += 1
    return expired


@dataclass(frozen=True)
class Download:
    path: Path
    file_name: str


def open_download(export_id: uuid.UUID, *, downloaded_by: str) -> Download | None:
    """The finished export's zip, its download counted on the record; None when there is none.

    The record counts downloads and keeps the last one's who and when; the admin view that
    serves the file records the download in the access trail of each account exported.
    """
    record = CaseExport.objects.filter(pk=export_id, status=CaseExportStatus.DONE).first()
    if record is None or not record.file_name:
        return None
    path = _path_of(record)
    if not path.is_file():
        return None
    CaseExport.objects.filter(pk=record.pk).update(
        downloads=F("downloads") + 1,
        last_downloaded_at=timezone.now(),
        last_downloaded_by=downloaded_by[:200],
    )
    return Download(path=path, file_name=f"case-export-{record.id}.zip")


def accounts_of(export_id: uuid.UUID) -> list[int]:
    """The accounts an export's selection reached: those it named, else every account."""
    record = CaseExport.objects.filter(pk=export_id).first()
    if record is None:
        return []
    named = list((record.selection or {}).get("account_ids") or [])
    accounts = MailAccount.objects.filter(account_id__in=named) if named else MailAccount.objects.all()
    return list(accounts.values_list("pk", flat=True))


def export_directory() -> Path:
    """Where zips are written: MAILFATHOM_CASE_EXPORT_DIR, or case-exports/ under the var folder."""
    configured = str(settings.MAILFATHOM.case_export_dir)
    base = Path(settings.BASE_DIR)
    directory = base / configured if configured else base / str(settings.MAILFATHOM.var_dir) / "case-exports"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def _path_of(record: CaseExport) -> Path:
    # Named by the product (the record's UUID), never by a caller; refuse anything else.
    if record.file_name != f"{record.id}.zip":
        raise ValueError("unexpected case export file name")
    return export_directory() / record.file_name


def _finish(record: CaseExport, status: str, *, failure_code: int | None = None) -> None:
    record.status = status
    record.failure_code = failure_code
    record.finished_at = timezone.now()
    CaseExport.objects.filter(pk=record.pk).update(
        status=status, failure_code=failure_code, finished_at=record.finished_at
    )


def _selection_of(record: CaseExport, addresses: Iterable[str]) -> CaseSelection:
    recorded = record.selection
    given = case_selection(
        account_ids=recorded.get("account_ids") or (),
        addresses=list(addresses),
        received_on_or_after=_parsed_instant(recorded.get("received_on_or_after")),
        received_before=_parsed_instant(recorded.get("received_before")),
    )
    if hashes_match(given.addresses, recorded.get("address_hashes") or [], KEY_PURPOSE):
        return given
    raise refused("addresses", "The addresses argument must be the addresses the export was started with.")


# --- Writing the zip -------------------------------------------------------------------------


@dataclass
class Written:
    exported: int = 0
    missing: int = 0
    eml_bytes: int = 0
    file_bytes: int = 0
    file_sha256: str = ""
    manifest_sha256: str = ""
    mbox_sha256: str = ""
    message_list_sha256: str = ""
    per_account: dict[int, Counter[str]] = field(default_factory=dict)


def write_case_export(
    record: CaseExport,
    selection: CaseSelection,
    destination: Path,
    *,
    progress: ProgressCallback | None = None,
) -> Written:
    """Write the zip to `destination` (through a partial file beside it), message by message.

    Memory stays bounded whatever the selection: each message is read, checked, written to
    the zip and appended to a scratch mbox on disk before the next is read; the manifest's
    entries go to a scratch file too. The record's progress is written about once a second.
    """
    written = Written()
    partial = destination.with_name(destination.name + ".partial")
    limit = max_bytes()
    done = 0
    last_report = 0.0
    total = record.total_messages
    with tempfile.TemporaryDirectory(dir=destination.parent, prefix=".scratch-") as scratch_name:
        scratch = Path(scratch_name)
        mbox_hash, list_hash = hashlib.sha256(), hashlib.sha256()
        try:
            with (
                zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED, allowZip64=True) as archive,
                open(scratch / "mbox", "wb") as mbox,
                open(scratch / "entries", "w", encoding="utf-8") as entries,
                open(scratch / "sums", "w", encoding="utf-8") as sums,
            ):
                for email, stored in _emails_with_raw(selection):
                    done += 1
                    entry, raw = _entry(done, email, stored)
                    counts = written.per_account.setdefault(email.account_id, Counter())
                    if raw is None:
                        written.missing += 1
                        counts["missing"] += 1
                    else:
                        written.eml_bytes += len(raw)
                        if written.eml_bytes > limit:
                            raise _too_large()
                        written.exported += 1
                        counts["emails"] += 1
                        counts["bytes"] += len(raw)
                        archive.writestr(entry["file"], raw)
                        line = f"{entry['sha256']}  {entry['file']}\n"
                        sums.write(line)
                        list_hash.update(line.encode("ascii"))
                        chunk = _mbox_chunk(raw, email.received_at)
                        mbox.write(chunk)
                        mbox_hash.update(chunk)
                    entries.write(("" if done == 1 else ",\n") + json.dumps(entry, sort_keys=True))
                    now = time.monotonic()
                    if now - last_report >= PROGRESS_SECONDS:
                        last_report = now
                        _report(record, done, total, progress)
                written.mbox_sha256 = mbox_hash.hexdigest()
                written.message_list_sha256 = list_hash.hexdigest()
                mbox.close()
                entries.close()
                mbox_size = (scratch / "mbox").stat().st_size
                _copy_into(archive, scratch / "mbox", MBOX_NAME)
                manifest_path = scratch / "manifest"
                _write_manifest(manifest_path, record, selection, scratch / "entries", written, mbox_size)
                written.manifest_sha256 = _copy_into(archive, manifest_path, MANIFEST_NAME)
                sums.write(f"{written.mbox_sha256}  {MBOX_NAME}\n")
                sums.write(f"{written.manifest_sha256}  {MANIFEST_NAME}\n")
                sums.close()
                _copy_into(archive, scratch / "sums", SUMS_NAME)
            written.file_sha256 = _file_sha256(partial)
            written.file_bytes = partial.stat().st_size
            os.replace(partial, destination)
        finally:
            partial.unlink(missing_ok=True)
    _report(record, done, max(total, done), progress)
    return written


def _report(record: CaseExport, done: int, total: int, progress: ProgressCallback | None) -> None:
    CaseExport.objects.filter(pk=record.pk).update(
        done_messages=done, total_messages=max(total, done), progress_at=timezone.now()
    )
    if progress is not None:
        progress(Progress(label=PROGRESS_LABEL, done=done, total=max(total, done)))


def _emails_with_raw(selection: CaseSelection) -> Iterator[tuple[Email, StoredRaw | None]]:
    """The selected emails, oldest received first, each with its verified raw MIME (or None).

    Read a page at a time (keyset), and the raw rows of a page in groups of at most
    RAW_GROUP_BYTES stored bytes, so memory is bounded by those, not by the selection.
    """
    rows = selected_emails(selection).select_related("account", "folder__mapping")
    rows = rows.order_by("received_at", "id")
    after: tuple[datetime, uuid.UUID] | None = None
    while True:
        page = rows
        if after is not None:
            page = rows.filter(Q(received_at__gt=after[0]) | Q(received_at=after[0], id__gt=after[1]))
        batch = list(page[:PAGE])
        for group in _raw_groups(batch):
            stored = stored_raws([email for email in group if email.availability in _RAW_STORED])
            for email in group:
                yield email, stored.get(email.pk)
        if len(batch) < PAGE:
            return
        after = (batch[-1].received_at, batch[-1].pk)


def _raw_groups(batch: list[Email]) -> Iterator[list[Email]]:
    sizes = dict(
        RawMessage.objects.filter(email_id__in=[e.pk for e in batch]).values_list("email_id", "stored_size")
    )
    group: list[Email] = []
    held = 0
    for email in batch:
        size = int(sizes.get(email.pk, 0))
        if group and held + size > RAW_GROUP_BYTES:
            yield group
            group, held = [], 0
        group.append(email)
        held += size
    if group:
        yield group


def _entry(number: int, email: Email, raw: StoredRaw | None) -> tuple[dict[str, Any], bytes | None]:
    """The manifest entry of one email and its verified raw bytes (None: listed as missing)."""
    entry: dict[str, Any] = {
        "n": number,
        "stored_email_id": str(email.pk),
        "account": email.account.account_id,
        "folder_alias": email.folder.mapping.alias if email.folder.mapping else "",
        "received_at": _instant(email.received_at),
        "message_id_sha256": message_id_hash(email.message_id) if email.message_id.strip() else "",
    }
    if email.availability not in _RAW_STORED:
        entry.update(status="missing", reason=f"not stored: {email.availability}")
        return entry, None
    if raw is None:
        entry.update(status="missing", reason="stored copy missing or damaged (55001); repair requested")
        return entry, None
    entry.update(
        status="exported",
        file=f"messages/{number:06d}-{raw.sha256[:12]}.eml",
        size=len(raw.data),
        sha256=raw.sha256,
    )
    return entry, raw.data


def _mbox_chunk(raw: bytes, received_at: datetime) -> bytes:
    """One mboxrd record: a From_ line, the message with From_ lines quoted, a blank line."""
    stamp = received_at.astimezone(UTC).strftime("%a %b %d %H:%M:%S %Y")
    body = _FROM_LINE.sub(rb">\1", raw)
    if not body.endswith(b"\n"):
        body += b"\n"
    return b"From MAILER-DAEMON " + stamp.encode("ascii") + b"\n" + body + b"\n"


def _write_manifest(
    path: Path, record: CaseExport, selection: CaseSelection, entries: Path, written: Written, mbox_size: int
) -> None:
    head = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "export_id": str(record.id),
        "created_at": _instant(timezone.now()),
        "created_by": record.requested_by,
        "case_reference": record.case_reference,
        "selection": selection.described(),
    }
    tail = {
        "mbox": {"file": MBOX_NAME, "sha256": written.mbox_sha256, "bytes": mbox_size, "format": "mboxrd"},
        "message_list_sha256": written.message_list_sha256,
        "message_list_is": f"the SHA-256 of the message lines of {SUMS_NAME}, in order",
        "chain_heads": chain_heads(),
        "counts": {
            "selected": written.exported + written.missing,
            "exported": written.exported,
            "missing": written.missing,
            "eml_bytes": written.eml_bytes,
        },
    }
    with open(path, "w", encoding="utf-8") as out, open(entries, encoding="utf-8") as source:
        out.write(json.dumps(head, indent=1)[:-2] + ',\n "messages": [\n')
        shutil.copyfileobj(source, out, _COPY_CHUNK)
        out.write("\n ],\n" + json.dumps(tail, indent=1)[2:] + "\n")


def _copy_into(archive: zipfile.ZipFile, source: Path, name: str) -> str:
    """Stream a scratch file into the zip under `name`; return its SHA-256."""
    digest = hashlib.sha256()
    with open(source, "rb") as handle, archive.open(name, "w", force_zip64=True) as target:
        for block in iter(lambda: handle.read(_COPY_CHUNK), b""):
            digest.update(block)
            target.write(block)
    return digest.hexdigest()


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_COPY_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


# --- Small rules -----------------------------------------------------------------------------


def _instant(moment: datetime | None) -> str | None:
    return moment.astimezone(UTC).isoformat() if moment is not None else None


def _parsed_instant(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


__all__ = [
    "CaseSelection",
    "Download",
    "Plan",
    "Written",
    "case_selection",
    "chain_heads",
    "expire_case_exports",
    "fail_abandoned_exports",
    "export_directory",
    "open_download",
    "plan",
    "retention_days",
    "run_case_export",
    "selected_emails",
    "start_case_export",
    "write_case_export",
]
