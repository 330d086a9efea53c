"""The gate: which of an account's emails wait for a draft, in one SQL query, no model call.

Every condition is a named function returning a filter, so each can be read and tested
alone (docs/operations/drafting.md, The gate and runs): incoming, unanswered, undrafted,
within the drafting window, not bulk, in a drafting folder, not refused within RETRY_AFTER,
and its content held and readable. Oldest first (received_at, id), so a run cut short has
drafted the most overdue; the partial index email_awaiting_draft serves the scan.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime, timedelta

from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from accounts.models import FolderRole, MailAccount
from answering.models import AttemptOutcome, Draft, DraftAttempt
from mailbox.models import Availability, Direction, Email

# An email a refusal that would repeat itself (same mail, same model, temperature 0) was
# recorded for waits this long before it is tried again; transient failures (a provider
# down, the period's allowance spent) do not hold it back at all.
RETRY_AFTER = timedelta(hours=24)
REPEATING_OUTCOMES = (
    AttemptOutcome.CLASSIFY_REFUSED,
    AttemptOutcome.STOPPED_ON_LENGTH,
    AttemptOutcome.CONTENT_FILTERED,
)
MAX_LIMIT = 500  # the ceiling of MailAccount.drafting_max_per_run

Condition = Callable[[MailAccount, datetime], Q]


def incoming(account: MailAccount, now: datetime) -> Q:
    """Mail that came in; what the account sent itself is never answered."""
    return Q(direction=Direction.INCOMING)


def unanswered(account: MailAccount, now: datetime) -> Q:
    """No outgoing email of its thread is later than it (a reply, or any later word of ours).

    An email not yet threaded (stored before threading, before `manage.py thread_mail`) is
    left out: whether it was answered cannot be told.
    """
    later_outgoing = Email.objects.filter(
        account_id=OuterRef("account_id"),
        thread_id=OuterRef("thread_id"),
        direction=Direction.OUTGOING,
        received_at__gt=OuterRef("received_at"),
    )
    return Q(thread_id__isnull=False) & ~Q(Exists(later_outgoing))


def undrafted(account: MailAccount, now: datetime) -> Q:
    """No draft exists for it (Draft.email is one-to-one: at most one ever does)."""
    return ~Q(Exists(Draft.objects.filter(email_id=OuterRef("pk"))))


def within_window(account: MailAccount, now: datetime) -> Q:
    """Received within the account's window: older unanswered mail was dealt with elsewhere."""
    return Q(received_at__gte=now - timedelta(days=account.drafting_window_days))


def not_bulk(account: MailAccount, now: datetime) -> Q:
    """Not bulk or automatic (Auto-Submitted other than no, list headers, Precedence, sender)."""
    return Q(is_bulk=False)


# Junk is not correspondence; Drafts holds our own unsent letters (the drafts MailFathom
# appends among them, which synchronization brings back); Trash is mail someone discarded.
EXCLUDED_ROLES = (FolderRole.JUNK, FolderRole.DRAFTS, FolderRole.TRASH)


def in_drafting_folder(account: MailAccount, now: datetime) -> Q:
    """In a folder mapped visible to tools whose role is not junk, drafts or trash."""
    return Q(folder__mapping__visible_to_tools=True) & ~Q(folder__mapping__role__in=EXCLUDED_ROLES)


def not_recently_refused(account: MailAccount, now: datetime) -> Q:
    """No refusal that would repeat itself was recorded for it in the last RETRY_AFTER."""
    refused = DraftAttempt.objects.filter(
        email_id=OuterRef("pk"), outcome__in=REPEATING_OUTCOMES, attempted_at__gte=now - RETRY_AFTER
    )
    return ~Q(Exists(refused))


def content_held(account: MailAccount, now: datetime) -> Q:
    """Its content is stored and readable: not over the size limit, awaiting headroom or encrypted."""
    return Q(availability=Availability.AVAILABLE)


CONDITIONS: dict[str, Condition] = {
    "incoming": incoming,
    "unanswered": unanswered,
    "undrafted": undrafted,
    "within_window": within_window,
    "not_bulk": not_bulk,
    "in_drafting_folder": in_drafting_folder,
    "not_recently_refused": not_recently_refused,
    "content_held": content_held,
}


def awaiting_a_draft(account: MailAccount, now: datetime | None = None) -> QuerySet[Email]:
    """The account's emails every condition admits, oldest first (a lazy queryset)."""
    now = now or timezone.now()
    rows = Email.objects.filter(account_id=account.pk)
    for condition in CONDITIONS.values():
        rows = rows.filter(condition(account, now))
    return rows.order_by("received_at", "id")


def count_awaiting_a_draft(accounts: Iterable[MailAccount], *, now: datetime | None = None) -> dict[int, int]:
    """How many emails wait for a draft, by account primary key, in one query.

    The same conditions as awaiting_a_draft, applied to each account with its own window;
    an account with nothing waiting is counted 0.
    """
    now = now or timezone.now()
    accounts = list(accounts)
    counts = {account.pk: 0 for account in accounts}
    if not accounts:
        return counts
    admitted = Q()
    for account in accounts:
        each = Q(account_id=account.pk)
        for condition in CONDITIONS.values():
            each &= condition(account, now)
        admitted |= each
    rows = Email.objects.filter(admitted).order_by().values("account_id").annotate(waiting=Count("pk"))
    counts.update({row["account_id"]: row["waiting"] for row in rows})
    return counts


def messages_awaiting_a_draft(
    account: MailAccount, limit: int, *, now: datetime | None = None
) -> list[Email]:
    """At most `limit` (1 to MAX_LIMIT) emails of `account` waiting for a draft, oldest first.

    One query; a limit outside the range is refused (ValueError), never clamped.
    """
    if not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be between 1 and {MAX_LIMIT}")
    return list(awaiting_a_draft(account, now)[:limit])
