"""Instants callers write are read once, as UTC, so no offset PostgreSQL refuses reaches it."""

from datetime import UTC, datetime

import pytest

from mailbox.services.selection import parse_filter
from mailbox.services.timeline import list_emails
from mailfathom.core.instants import parse_instant
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2000-01-01T00:00:00+16:00", datetime(1999, 12, 31, 8, 0, tzinfo=UTC)),
        ("2000-01-01T00:00:00-23:59", datetime(2000, 1, 1, 23, 59, tzinfo=UTC)),
        ("2024-05-01T09:30:00Z", datetime(2024, 5, 1, 9, 30, tzinfo=UTC)),
    ],
)
def test_an_offset_is_read_as_the_same_instant_in_utc(text, expected):
    parsed = parse_instant(text)
    assert parsed == expected and parsed.utcoffset().total_seconds() == 0


@pytest.mark.parametrize(
    "text",
    ["2024-05-01T09:30:00", "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "x" * 65, 7, None],
)
def test_naive_unreadable_overflowing_or_overlong_instants_are_none(text):
    assert parse_instant(text) is None


@pytest.mark.django_db
def test_a_filter_with_an_offset_postgresql_refuses_still_lists(db):
    folder = mapped_folder(MailAccountFactory(), "inbox")
    EmailFactory(folder=folder, subject="late", received_at=datetime(1999, 12, 31, 9, 0, tzinfo=UTC))
    page = list_emails(mail_filter=parse_filter({"receivedBefore": "2000-01-01T00:00:00+16:00"}))
    assert [summary.subject for summary in page.emails] == []
    page = list_emails(mail_filter=parse_filter({"receivedOnOrAfter": "2000-01-01T00:00:00+16:00"}))
    assert [summary.subject for summary in page.emails] == ["late"]
