"""What is due to each person, sent and recorded: one pass, run by beat every few minutes.

Each person is told, per channel and kind, what they have not been told yet about the
accounts they may review (docs/operations/notifications.md has the rules for each kind).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Max, Q, QuerySet
from django.utils import timezone

from accounts.models import MailAccount
from accounts.notification_models import (
    NotificationChannel,
    NotificationKind,
    NotificationPreference,
    NotificationSent,
)
from accounts.services.people import REVIEW_ROLES, held_accounts, reviewable_accounts
from accounts.services.sign_in_state import Waiting, waiting_for_sign_in
from answering.models import Draft
from mailbox.services.sync_status import Failing, failing_accounts
from mailfathom.notifications import delivery
from mailfathom.notifications.messages import (
    Entry,
    Message,
    compose,
    drafts_entry,
    failing_entry,
    sign_in_entry,
)

logger = logging.getLogger(__name__)

SENDERS: dict[str, Callable[[NotificationPreference, Message], bool]] = {
    NotificationChannel.MAIL: delivery.by_mail,
    NotificationChannel.WEBHOOK: delivery.by_webhook,
}


@dataclass
class Outcome:
    """Counts of one pass: people looked at, messages sent and messages that failed."""

    people: int = 0
    sent: int = 0
    failed: int = 0

    def as_counts(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class World:
    """Everything due is computed from, read once per pass (a handful of queries)."""

    now: datetime
    account_ids: dict[int, str]  # served accounts: primary key -> identifier
    waiting: dict[int, int]
    failing: dict[int, Failing]
    sign_in: dict[int, Waiting]
    digest_every: timedelta = field(default=timedelta(hours=1))

    @classmethod
    def read(cls, now: datetime) -> World:
        values = settings.MAILFATHOM
        served = MailAccount.objects.served()
        return cls(
            now=now,
            account_ids=dict(served.values_list("pk", "account_id")),
            waiting=Draft.objects.filter(account__in=served).waiting_per_account(),
            failing=failing_accounts(timedelta(minutes=values.notifications_sync_failing_minutes), now=now),
            sign_in=waiting_for_sign_in(),
            digest_every=timedelta(minutes=values.notifications_digest_minutes),
        )

    def entries(self, kind: str, accounts: set[int]) -> dict[int, Entry]:
        """What each of `accounts` has to say for `kind` now; an account with nothing is absent."""
        found: dict[int, Entry] = {}
        for pk in sorted(accounts & set(self.account_ids), key=self.account_ids.__getitem__):
            name = self.account_ids[pk]
            if kind == NotificationKind.DRAFTS_WAITING and self.waiting.get(pk):
                found[pk] = drafts_entry(pk, name, self.waiting[pk])
            elif kind == NotificationKind.SYNC_FAILING and pk in self.failing:
                failing = self.failing[pk]
                found[pk] = failing_entry(pk, name, failing.since, failing.codes, failing.folders)
            elif kind == NotificationKind.SIGN_IN_NEEDED and pk in self.sign_in:
                waiting = self.sign_in[pk]
                found[pk] = sign_in_entry(pk, name, waiting.state, waiting.code, waiting.since)
        return found


def send_due_notifications(*, now: datetime | None = None) -> Outcome:
    """Send every person what is due to them now; return the pass's counts."""
    world = World.read(now or timezone.now())
    outcome = Outcome()
    subscribed = NotificationPreference.objects.filter(user__is_active=True).filter(
        Q(by_mail=True) | ~Q(webhook_url="")
    )
    for pk in subscribed.values_list("pk", flat=True):
        # What was sent is recorded under the person's row lock, so two passes never send one
        # person the same thing; a delivery that fails records nothing and is tried again.
        with transaction.atomic():
            preference = (
                NotificationPreference.objects.select_for_update(skip_locked=True, of=("self",))
                .select_related("user")
                .filter(pk=pk)
                .first()
            )
            if preference is None:  # another pass holds this person
                continue
            outcome.people += 1
            _notify(preference, world, outcome)
    if outcome.sent or outcome.failed:
        logger.info(
            "notifications: people=%d sent=%d failed=%d", outcome.people, outcome.sent, outcome.failed
        )
    return outcome


def accounts_told_about(preference: NotificationPreference) -> set[int] | None:
    """The accounts a person is told about: those they may review; None for every account.

    An operator sees every account, but is told about every one only when they asked to;
    otherwise about those their own roles (or their groups') name.
    """
    user = preference.user
    limit = reviewable_accounts(user)
    if limit is not None:
        return set(limit)
    if preference.every_account:
        return None
    return set(held_accounts(user, REVIEW_ROLES))


def channels(preference: NotificationPreference) -> list[str]:
    """The channels this person can be reached on now."""
    found: list[str] = []
    if preference.by_mail and settings.MAILFATHOM.email_host and preference.user.email:
        found.append(NotificationChannel.MAIL)
    if preference.webhook_url and preference.has_webhook_secret:
        found.append(NotificationChannel.WEBHOOK)
    return found


def _notify(preference: NotificationPreference, world: World, outcome: Outcome) -> None:
    limit = accounts_told_about(preference)
    accounts = set(world.account_ids) if limit is None else limit
    kinds = [kind for kind in NotificationKind if preference.wants(kind)]
    for channel in channels(preference):
        told = NotificationSent.objects.filter(user=preference.user, channel=channel)
        for kind in kinds:
            current = world.entries(kind, accounts)
            due = _due(kind, current, told.filter(kind=kind), world)
            if due:
                message = compose(kind, list(due.values()), world.now)
                if SENDERS[channel](preference, message):
                    outcome.sent += 1
                    _record(preference, channel, kind, due, world.now)
                else:
                    outcome.failed += 1
            if kind != NotificationKind.DRAFTS_WAITING:
                # Resolved: forget it, so the next failure or sign-in is told again.
                told.filter(kind=kind).exclude(account_id__in=list(current)).delete()


def _due(
    kind: str, current: dict[int, Entry], told: QuerySet[NotificationSent], world: World
) -> dict[int, Entry]:
    """Of `current`, what this person has not been told yet on this channel."""
    if kind == NotificationKind.DRAFTS_WAITING:
        last = told.aggregate(last=Max("sent_at"))["last"]
        if last is not None and world.now - last < world.digest_every:
            return {}
        return current
    states = dict(told.values_list("account_id", "state"))
    return {pk: entry for pk, entry in current.items() if states.get(pk) != entry.state}


def _record(
    preference: NotificationPreference, channel: str, kind: str, sent: dict[int, Entry], now: datetime
) -> None:
    for pk, entry in sent.items():
        NotificationSent.objects.update_or_create(
            user=preference.user,
            account_id=pk,
            kind=kind,
            channel=channel,
            defaults={"state": entry.state, "sent_at": now},
        )
