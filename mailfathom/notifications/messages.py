"""What a notification says, as mail text and as a webhook's JSON: counts, codes, times and links.

Built from plain values only (an account's identifier, a count, a failure code and its
operator sentence, a time, a path in admin), so no subject, sender, address or body can reach
a message: nothing here is handed a row of mail. The identifier, not the display name, names
an account (an operator may have named an account after a person's address).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.urls import reverse

from accounts.notification_models import NotificationKind
from mailfathom.core.errors import code_of
from mailfathom.core.instants import to_the_second
from mailfathom.core.wire import wire_keys


@dataclass(frozen=True)
class Entry:
    """What one account contributes to one notification, and the state recorded for it."""

    account_pk: int
    account_id: str
    state: dict[str, Any]  # compared with what was last sent: equal means already told
    wire: dict[str, Any]  # the account's object in the webhook's JSON
    lines: tuple[str, ...]  # the account's lines in the mail


@dataclass(frozen=True)
class Message:
    kind: str
    subject: str
    text: str
    payload: dict[str, Any] = field(default_factory=dict)


def link(path: str) -> str:
    """An absolute link under MAILFATHOM_PUBLIC_BASE_URL; only the path while it is unset."""
    base = settings.MAILFATHOM.public_base_url.rstrip("/")
    return f"{base}{path}"


def instant(moment: datetime | None) -> str | None:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z") if moment else None


def queue_link(account_pk: int) -> str:
    query = urlencode({"status__exact": "pending", "account__id__exact": account_pk})
    return link(f"{reverse('admin:answering_draft_changelist')}?{query}")


def account_link(account_pk: int) -> str:
    return link(reverse("admin:accounts_mailaccount_change", args=[account_pk]))


def status_link() -> str:
    return link(reverse("system-status"))


def preferences_link() -> str:
    return link(reverse("admin:accounts_notificationpreference_changelist"))


def sentence(code: int | None) -> str:
    member = code_of(code)
    return member.sentence if member is not None else ""


def drafts_entry(account_pk: int, account_id: str, waiting: int) -> Entry:
    queue = queue_link(account_pk)
    drafts = "draft waits" if waiting == 1 else "drafts wait"
    return Entry(
        account_pk,
        account_id,
        state={"waiting": waiting},
        wire={"account": account_id, "waiting": waiting, "link": queue},
        lines=(f"{account_id}: {waiting} {drafts} for review", f"  {queue}"),
    )


def failing_entry(
    account_pk: int, account_id: str, since: datetime, codes: tuple[int, ...], folders: int
) -> Entry:
    status = status_link()
    page = account_link(account_pk)
    described = [{"code": code, "sentence": sentence(code)} for code in codes]
    folder_word = "folder" if folders == 1 else "folders"
    return Entry(
        account_pk,
        account_id,
        state={"since": instant(since)},
        wire=wire_keys(
            {
                "account": account_id,
                "since": instant(since),
                "failing_folders": folders,
                "codes": described,
                "link": status,
                "account_link": page,
            }
        ),
        lines=(
            f"{account_id}: failing since {to_the_second(since)} on {folders} {folder_word}",
            *(f"  {item['code']}: {item['sentence']}" for item in described),
            f"  status: {status}",
            f"  account: {page}",
        ),
    )


def sign_in_entry(
    account_pk: int, account_id: str, state: str, code: int | None, since: datetime | None
) -> Entry:
    page = account_link(account_pk)
    what = (
        "its OAuth registration was refused by the provider"
        if state == "registration_refused"
        else "needs signing in again"
    )
    when = f" since {to_the_second(since)}" if since else ""
    return Entry(
        account_pk,
        account_id,
        state={"state": state, "since": instant(since)},
        wire={
            "account": account_id,
            "state": state,
            "code": code,
            "sentence": sentence(code),
            "since": instant(since),
            "link": page,
        },
        lines=(
            f"{account_id}: {what}{when}",
            *((f"  {code}: {sentence(code)}",) if code is not None else ()),
            f"  {page}",
        ),
    )


SUBJECTS = {
    NotificationKind.DRAFTS_WAITING: "MailFathom: drafts wait for review",
    NotificationKind.SYNC_FAILING: "MailFathom: synchronization is failing",
    NotificationKind.SIGN_IN_NEEDED: "MailFathom: a mailbox needs signing in again",
}
OPENINGS = {
    NotificationKind.DRAFTS_WAITING: "Drafts wait for review:",
    NotificationKind.SYNC_FAILING: "Synchronization has been failing for longer than {minutes} minutes:",
    NotificationKind.SIGN_IN_NEEDED: (
        "Synchronization of these accounts is stopped until someone acts on the account page:"
    ),
}


def compose(kind: str, entries: list[Entry], now: datetime) -> Message:
    """One message of `kind` listing `entries`, with the link where the person changes what they get."""
    preferences = preferences_link()
    opening = OPENINGS[NotificationKind(kind)].format(
        minutes=settings.MAILFATHOM.notifications_sync_failing_minutes
    )
    body = [opening, ""]
    for entry in entries:
        body.extend(entry.lines)
        body.append("")
    body.append(f"You chose to be told this in MailFathom; change or stop it at {preferences}")
    payload = wire_keys(
        {
            "kind": kind,
            "sent_at": instant(now),
            "accounts": [entry.wire for entry in entries],
            "preferences": preferences,
        }
    )
    return Message(
        kind=kind, subject=SUBJECTS[NotificationKind(kind)], text="\n".join(body) + "\n", payload=payload
    )
