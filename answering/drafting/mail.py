"""The answered mail and its thread tail, read once and cut to their bounds.

`MailText.raw` (subject, blank line, body, cut to MAILFATHOM_DRAFTING_MAX_ANSWERED_CHARACTERS)
is the one string condense and the lexical arm get; it is redacted first where scanning is
on. The thread tail is the stored thread (Email.thread_id) in readable, non-junk folders,
received before it, one copy per Message-ID; mail not threaded yet falls back to its
Message-ID, In-Reply-To and References links.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q

from accounts.models import FolderRole
from accounts.services.scope import resolve_scope
from mailbox.models import Email
from mailbox.services import sensitive
from mailbox.services.threads import thread_of


@dataclass(frozen=True)
class MailText:
    """One message as a draft's prompt carries it."""

    email_id: str
    sender: str  # "Name <address>", or the address
    received_at: datetime
    subject: str
    body: str
    direction: str  # "incoming" or "outgoing"

    @property
    def raw(self) -> str:
        return f"{self.subject}\n\n{self.body}"


def _sender(email: Email) -> str:
    if email.sender_name and email.sender_address:
        return f"{email.sender_name} <{email.sender_address}>"
    return email.sender_address or email.sender_name


def mail_text(email: Email, max_characters: int) -> MailText:
    """`email`'s subject and body, together at most `max_characters` (the body is cut)."""
    subject, body = email.subject, email.text_body
    if sensitive.enabled():
        subject, body = sensitive.redact(subject), sensitive.redact(body)
    subject = subject[: max_characters // 4]
    body = body[: max(0, max_characters - len(subject) - 2)]
    return MailText(
        email_id=str(email.pk),
        sender=_sender(email),
        received_at=email.received_at,
        subject=subject,
        body=body,
        direction=email.direction,
    )


def readable_folder_ids(account_id: str) -> list[int]:
    """The account's folder mappings tools may read, junk left out (the scope every read uses)."""
    scope = resolve_scope([account_id])
    return [
        folder.mapping_id
        for account in scope.accounts
        for folder in account.folders
        if folder.role != FolderRole.JUNK
    ]


def thread_tail(email: Email, limit: int, max_characters: int) -> list[MailText]:
    """Up to `limit` earlier messages of `email`'s thread, oldest first (see the module docstring)."""
    if email.thread_id is not None:
        # Threaded at storing time (mailbox.services.threads): the whole JWZ thread.
        candidates = thread_of(email)
    else:
        # Not threaded yet (stored before threading, backfill not run): direct links only.
        ids = {value for value in (email.message_id, email.in_reply_to, *email.references) if value}
        if not ids:
            return []
        linked = Q(message_id__in=ids) | Q(in_reply_to__in=ids) | Q(references__overlap=list(ids))
        candidates = Email.objects.filter(linked, account_id=email.account_id)
    rows = (
        candidates.filter(received_at__lt=email.received_at)
        .filter(folder__mapping_id__in=readable_folder_ids(email.account.account_id))
        .exclude(pk=email.pk)
        .order_by("-received_at", "id")
    )
    kept: list[Email] = []
    seen: set[str] = set()
    for row in rows[: limit * 4]:
        key = row.message_id or str(row.pk)
        if key in seen or (email.message_id and row.message_id == email.message_id):
            continue
        seen.add(key)
        kept.append(row)
        if len(kept) == limit:
            break
    return [mail_text(row, max_characters) for row in reversed(kept)]
