"""The gate: each condition excludes exactly its case; oldest first; one query; real PostgreSQL."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from accounts.models import FolderRole
from answering.drafting.gate import CONDITIONS, RETRY_AFTER, awaiting_a_draft, messages_awaiting_a_draft
from answering.models import AttemptOutcome, Draft, DraftAttempt, Intent, Verdict
from mailbox.models import Availability, Direction, Email
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, FolderFactory, mapped_folder

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


@pytest.fixture
def account():
    return MailAccountFactory(drafting_enabled=True, drafting_window_days=7)


@pytest.fixture
def folders(account):
    return {
        "inbox": mapped_folder(account, "inbox", role=FolderRole.INBOX),
        "sent": mapped_folder(account, "sent", role=FolderRole.SENT),
        "junk": mapped_folder(account, "junk", role=FolderRole.JUNK),
        "drafts": mapped_folder(account, "drafts", role=FolderRole.DRAFTS),
        "trash": mapped_folder(account, "trash", role=FolderRole.TRASH),
        "archive": mapped_folder(account, "archive", role=FolderRole.ARCHIVE),
        "hidden": mapped_folder(account, "private", visible_to_tools=False),
        "unmapped": FolderFactory(account=account, mapping=None, remote_name="Old"),
    }


def _mail(folder, subject: str, *, ago: timedelta = timedelta(days=1), **fields) -> Email:
    fields.setdefault("thread_id", uuid.uuid4())
    return EmailFactory(folder=folder, subject=subject, received_at=NOW - ago, **fields)


def _draft(email: Email) -> Draft:
    return Draft.objects.create(
        account_id=email.account_id,
        email=email,
        body="x",
        intent=Intent.INQUIRY,
        language="en",
        verdict=Verdict.READY,
        model_alias="drafting",
    )


def _attempt(email: Email, outcome: str, ago: timedelta) -> None:
    attempt = DraftAttempt.objects.create(
        account_id=email.account_id, email=email, stage="classify", outcome=outcome
    )
    DraftAttempt.objects.filter(pk=attempt.pk).update(attempted_at=NOW - ago)


def _subjects(rows) -> set[str]:
    return {email.subject for email in rows}


# --- every condition alone, over one mailbox holding a case of each -------------------


@pytest.fixture
def mailbox(account, folders):
    """One account's mail: an email that passes, and each way of failing exactly one condition.

    Returns {condition name: subjects it alone must exclude}; every other subject passes it.
    """
    inbox, sent = folders["inbox"], folders["sent"]
    _mail(inbox, "passes")
    # incoming
    _mail(inbox, "own message filed in the inbox", direction=Direction.OUTGOING)
    # unanswered: a later outgoing message of the thread, and mail not yet threaded
    answered = uuid.uuid4()
    _mail(inbox, "replied to by us", thread_id=answered, ago=timedelta(days=2))
    _mail(sent, "our reply", thread_id=answered, direction=Direction.OUTGOING, ago=timedelta(days=1))
    _mail(inbox, "not yet threaded", thread_id=None)
    # ...but our message before theirs leaves theirs unanswered
    follow_up = uuid.uuid4()
    _mail(sent, "our offer", thread_id=follow_up, direction=Direction.OUTGOING, ago=timedelta(days=3))
    _mail(inbox, "their question about our offer", thread_id=follow_up, ago=timedelta(days=2))
    # undrafted
    _draft(_mail(inbox, "drafted already"))
    # within_window: the edge of a 7-day window and past it
    _mail(inbox, "six days 23 hours old", ago=timedelta(days=7) - timedelta(hours=1))
    _mail(inbox, "eight days old", ago=timedelta(days=8))
    # not_bulk
    _mail(inbox, "newsletter", is_bulk=True)
    # in_drafting_folder
    _mail(folders["junk"], "in junk")
    _mail(folders["hidden"], "in a hidden folder")
    _mail(folders["unmapped"], "in an unmapped folder")
    _mail(folders["drafts"], "in drafts")
    _mail(folders["trash"], "in the trash")
    _mail(folders["archive"], "in the archive")  # an ordinary folder: passes
    # not_recently_refused: only a refusal that would repeat, and only for RETRY_AFTER
    _attempt(_mail(inbox, "refused an hour ago"), AttemptOutcome.CLASSIFY_REFUSED, timedelta(hours=1))
    _attempt(_mail(inbox, "cut on length an hour ago"), AttemptOutcome.STOPPED_ON_LENGTH, timedelta(hours=1))
    _attempt(
        _mail(inbox, "refused long ago"), AttemptOutcome.CLASSIFY_REFUSED, RETRY_AFTER + timedelta(hours=1)
    )
    _attempt(_mail(inbox, "provider failed an hour ago"), AttemptOutcome.PROVIDER_FAILED, timedelta(hours=1))
    _attempt(_mail(inbox, "ceiling reached an hour ago"), AttemptOutcome.CEILING_REACHED, timedelta(hours=1))
    # content_held
    _mail(inbox, "over the size limit", availability=Availability.EXCEEDED_SIZE_LIMIT)
    _mail(inbox, "encrypted", availability=Availability.ENCRYPTED, encrypted=True)
    # another account's mail never shows, whatever it is
    _mail(mapped_folder(MailAccountFactory(), "inbox"), "another account's")
    return {
        "incoming": {"own message filed in the inbox", "our reply", "our offer"},
        "unanswered": {"replied to by us", "not yet threaded"},
        "undrafted": {"drafted already"},
        "within_window": {"eight days old"},
        "not_bulk": {"newsletter"},
        "in_drafting_folder": {
            "in junk",
            "in a hidden folder",
            "in an unmapped folder",
            "in drafts",
            "in the trash",
        },
        "not_recently_refused": {"refused an hour ago", "cut on length an hour ago"},
        "content_held": {"over the size limit", "encrypted"},
    }


@pytest.mark.parametrize("name", list(CONDITIONS))
def test_each_condition_alone_excludes_exactly_its_cases(account, mailbox, name):
    everything = _subjects(Email.objects.filter(account=account))

    kept = _subjects(Email.objects.filter(account=account).filter(CONDITIONS[name](account, NOW)))

    assert everything - kept == mailbox[name]


def test_the_gate_admits_what_every_condition_admits_oldest_first(account, mailbox):
    rows = messages_awaiting_a_draft(account, 100, now=NOW)

    excluded = set().union(*mailbox.values())
    assert _subjects(rows) == _subjects(Email.objects.filter(account=account)) - excluded
    assert [e.subject for e in rows] == [
        "six days 23 hours old",
        "their question about our offer",
        "passes",
        "in the archive",
        "refused long ago",
        "provider failed an hour ago",
        "ceiling reached an hour ago",
    ]


def test_the_gate_is_one_query(account, mailbox, django_assert_num_queries):
    with django_assert_num_queries(1):
        messages_awaiting_a_draft(account, 20, now=NOW)


# --- each condition through the whole gate: a violator and its twin -------------------


def _twin_pair(account, folders, name):
    """(twin, violator): two emails alike but for the one thing condition `name` reads."""
    inbox = folders["inbox"]
    twin = _mail(inbox, "twin")
    if name == "incoming":
        violator = _mail(inbox, "violator", direction=Direction.OUTGOING)
    elif name == "unanswered":
        violator = _mail(inbox, "violator", ago=timedelta(days=2))
        _mail(folders["sent"], "reply", thread_id=violator.thread_id, direction=Direction.OUTGOING)
    elif name == "undrafted":
        violator = _mail(inbox, "violator")
        _draft(violator)
    elif name == "within_window":
        violator = _mail(inbox, "violator", ago=timedelta(days=account.drafting_window_days, seconds=1))
    elif name == "not_bulk":
        violator = _mail(inbox, "violator", is_bulk=True)
    elif name == "in_drafting_folder":
        violator = _mail(folders["junk"], "violator")
    elif name == "not_recently_refused":
        violator = _mail(inbox, "violator")
        _attempt(violator, AttemptOutcome.CONTENT_FILTERED, timedelta(minutes=5))
    elif name == "content_held":
        violator = _mail(inbox, "violator", availability=Availability.AWAITING_STORAGE_HEADROOM)
    return twin, violator


@pytest.mark.parametrize("name", list(CONDITIONS))
def test_the_gate_leaves_out_the_violator_of_each_condition_and_keeps_its_twin(account, folders, name):
    twin, violator = _twin_pair(account, folders, name)

    rows = messages_awaiting_a_draft(account, 10, now=NOW)

    assert violator not in rows
    assert twin in rows


def test_the_window_is_the_accounts_own(account, folders):
    _mail(folders["inbox"], "a month old", ago=timedelta(days=30))
    assert messages_awaiting_a_draft(account, 10, now=NOW) == []

    account.drafting_window_days = 31
    account.save()

    assert _subjects(messages_awaiting_a_draft(account, 10, now=NOW)) == {"a month old"}


def test_oldest_first_and_the_limit_takes_the_most_overdue(account, folders):
    for subject, days in (("middle", 3), ("newest", 1), ("oldest", 5), ("second", 4)):
        _mail(folders["inbox"], subject, ago=timedelta(days=days))

    rows = messages_awaiting_a_draft(account, 2, now=NOW)

    assert [e.subject for e in rows] == ["oldest", "second"]


def test_equal_times_are_ordered_by_id(account, folders):
    same = [_mail(folders["inbox"], f"same {n}", ago=timedelta(days=2)) for n in range(3)]

    assert messages_awaiting_a_draft(account, 3, now=NOW) == sorted(same, key=lambda e: e.id)


@pytest.mark.parametrize("limit", [0, -1, 501])
def test_a_limit_outside_1_to_500_is_refused(account, limit):
    with pytest.raises(ValueError, match="between 1 and 500"):
        messages_awaiting_a_draft(account, limit)


def test_the_gate_defaults_to_the_current_time(account, folders):
    from django.utils import timezone

    EmailFactory(
        folder=folders["inbox"], subject="just now", received_at=timezone.now(), thread_id=uuid.uuid4()
    )

    assert _subjects(awaiting_a_draft(account)) == {"just now"}
