"""Attachment text: the pass after storing that extracts it, and what it has still to do.

Storing never waits for a file: mail with attachments is queued by having no
AttachmentExtraction row for the current engine version, and this pass works through the
queue newest first, one email at a time, each email's rows written in one transaction.
Every attachment gets a row with its outcome, so the status of each file is on record; the
text itself comes from mailbox.extraction, in a child process per attachment. Bounds per
email: the first MAX_ATTACHMENTS_PER_EMAIL attachments are read, and their text together is
at most MAX_CHARACTERS_PER_EMAIL characters.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Exists, Min, OuterRef
from django.utils import timezone

from mailbox.extraction import ALL_KINDS, ENGINE_VERSION, Extracted, ExtractionLimits, Outcome, extract_text
from mailbox.models import (
    AttachmentExtraction,
    AttachmentText,
    Availability,
    Email,
    EmailQuerySet,
    Passage,
)
from mailbox.parsing import attachment_bytes, parse_message
from mailbox.services.content import parse_limits, stored_raw
from mailbox.services.embedding import ATTACHMENT_POSITION
from mailbox.services.slots import exclusive_slot
from mailfathom.core.progress import Progress, ProgressCallback

logger = logging.getLogger(__name__)

PROGRESS_LABEL = "attachments"
BATCH = 8
MAX_ATTACHMENTS_PER_EMAIL = 20
MAX_CHARACTERS_PER_EMAIL = 2_000_000
SLOT_KEY = "mailfathom:attachment-text:slot"
SLOT_SECONDS = 300
# Between two attachments' texts in Email.attachment_text: a paragraph break, so no word
# runs into the next file's first word.
SEPARATOR = "\n\n"
SLOT_BUSY = "Attachment text extraction is already running (the worker's pass or another command)."


def enabled_kinds() -> frozenset[str]:
    """The kinds MAILFATHOM_ATTACHMENT_TEXT_KINDS switches on (names it does not know left out)."""
    named = {name.strip().lower() for name in settings.MAILFATHOM.attachment_text_kinds.split(",")}
    return frozenset(named & set(ALL_KINDS))


def unknown_kinds() -> list[str]:
    """Entries of MAILFATHOM_ATTACHMENT_TEXT_KINDS that name no kind (the startup check's)."""
    named = (name.strip().lower() for name in settings.MAILFATHOM.attachment_text_kinds.split(","))
    return sorted({name for name in named if name and name not in ALL_KINDS})


def pending_emails() -> EmailQuerySet:
    """Stored mail with attachments whose attachments this engine version has not been through."""
    done = AttachmentExtraction.objects.filter(email=OuterRef("pk"), engine_version=ENGINE_VERSION)
    return Email.objects.filter(attachment_count__gt=0, availability=Availability.AVAILABLE).exclude(
        Exists(done)
    )


def pending_count() -> int:
    return pending_emails().count()


@dataclass(frozen=True)
class Backlog:
    pending: int  # emails whose attachments wait for this engine version
    outcomes: dict[str, int]  # attachments per recorded outcome


def backlog() -> Backlog:
    """What the status readings show of the pass: counts only, never a name or a text."""
    rows = AttachmentText.objects.values_list("outcome").annotate(n=Count("pk")).order_by("outcome")
    return Backlog(pending=pending_count(), outcomes={outcome: int(n) for outcome, n in rows})


def done_since(since: datetime) -> tuple[int, datetime | None]:
    """Emails the pass marked done since `since` (a re-extraction counts), and the first of those moments."""
    recent = AttachmentExtraction.objects.filter(extracted_at__gte=since).aggregate(
        done=Count("pk"), first=Min("extracted_at")
    )
    return int(recent["done"]), recent["first"]


@dataclass
class PassResult:
    emails: int = 0
    attachments: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    inactive: bool = False  # no kind is switched on: nothing was tried


def extraction_slot() -> AbstractContextManager[Callable[[], bool] | None]:
    """Hold the one extraction slot (see mailbox.services.slots), or yield None."""
    return exclusive_slot(SLOT_KEY, SLOT_SECONDS)


def extract_pending(
    *, max_emails: int | None = None, until: float | None = None, progress: ProgressCallback | None = None
) -> PassResult:
    """Extract the attachments of pending emails, newest received first.

    `until` (a time.monotonic() value) ends the pass after the email running then;
    `progress` hears after each committed email, and an exception it raises stops the pass
    with every committed email kept.
    """
    result = PassResult()
    kinds = enabled_kinds()
    if not kinds:
        result.inactive = True
        return result
    backlog = pending_count() if progress else 0
    if progress:
        progress(Progress(label=PROGRESS_LABEL, done=0, total=backlog))
    while max_emails is None or result.emails < max_emails:
        room = BATCH if max_emails is None else min(BATCH, max_emails - result.emails)
        ids = list(pending_emails().order_by("-received_at", "-id").values_list("id", flat=True)[:room])
        if not ids:
            break
        for email in Email.objects.filter(id__in=ids).order_by("-received_at", "-id"):
            if until is not None and time.monotonic() >= until:
                return result
            for row in extract_email(email, kinds):
                result.attachments += 1
                result.outcomes[row.outcome] += 1
            result.emails += 1
            if progress:
                progress(
                    Progress(label=PROGRESS_LABEL, done=result.emails, total=max(backlog, result.emails))
                )
    if result.emails:
        logger.info("attachment text: %d emails, %d attachments", result.emails, result.attachments)
    return result


def extract_email(email: Email, kinds: frozenset[str]) -> list[AttachmentText]:
    """Extract every attachment of one email and record them with the email's marker, at once.

    Edge cases: a damaged stored copy gives no rows (a repair is requested by the read) and
    the email is marked done until the repair stores new content (store.fill_content puts it
    back in the queue); an email erased meanwhile is left alone.
    """
    now = timezone.now()
    raw = stored_raw(email)
    rows: list[AttachmentText] = []
    joined: list[str] = []
    if raw is not None:
        limits = parse_limits()
        parsed = parse_message(raw.data, limits)
        room = MAX_CHARACTERS_PER_EMAIL
        at = 0
        for position, info in enumerate(parsed.attachments):
            if position >= MAX_ATTACHMENTS_PER_EMAIL:
                extracted = Extracted(Outcome.TOO_LARGE, detail="attachments-per-email")
            elif room <= 0:
                extracted = Extracted(Outcome.TOO_LARGE, detail="characters-per-email")
            else:
                data = attachment_bytes(raw.data, info.part_index, limits)
                extracted = (
                    Extracted(Outcome.UNREADABLE, detail="part")
                    if data is None
                    else extract_text(
                        data,
                        info.media_type,
                        info.file_name,
                        kinds=kinds,
                        max_bytes=settings.MAILFATHOM.attachment_text_max_bytes,
                        limits=ExtractionLimits(max_characters=min(room, ExtractionLimits.max_characters)),
                    )
                )
            room -= len(extracted.text)
            if extracted.text and at:
                joined.append(SEPARATOR)
                at += len(SEPARATOR)
            rows.append(
                AttachmentText(
                    email=email,
                    part_index=info.part_index,
                    file_name=info.file_name[:255],
                    media_type=info.media_type[:255],
                    outcome=extracted.outcome.value,
                    detail=extracted.detail,
                    truncated=extracted.truncated,
                    offset=at,
                    characters=len(extracted.text),
                    extracted_at=now,
                    engine_version=ENGINE_VERSION,
                )
            )
            joined.append(extracted.text)
            at += len(extracted.text)
    with transaction.atomic():
        if not Email.objects.select_for_update().filter(pk=email.pk).exists():
            return []
        AttachmentText.objects.filter(email=email).delete()
        AttachmentText.objects.bulk_create(rows)
        text = "".join(joined)
        Email.objects.filter(pk=email.pk).update(attachment_text=text)
        # The attachments' passage of the vector index is made again from the new text by
        # the embedding sweep, which takes the email up again (its body passage is kept).
        Passage.objects.filter(email=email, position=ATTACHMENT_POSITION).delete()
        if text:
            Email.objects.filter(pk=email.pk).update(embedded=False)
        AttachmentExtraction.objects.update_or_create(
            email=email,
            defaults={
                "engine_version": ENGINE_VERSION,
                "extracted_at": now,
                "attachments": len(rows),
                "characters": sum(row.characters for row in rows),
            },
        )
    return rows
