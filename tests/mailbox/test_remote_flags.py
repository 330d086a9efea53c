"""One RemoteFlags wire model (mailbox.services.summaries) for listings, searches and content
reads: the same email publishes the same remoteFlags object in both."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mailbox.services import content, summaries
from mailbox.services.content import get_email_content
from mailbox.services.summaries import RemoteFlags, summarize
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder

pytestmark = pytest.mark.django_db

OBSERVED = datetime(2025, 6, 3, 10, 31, tzinfo=UTC)


def test_content_reads_publish_the_summaries_model():
    assert content.RemoteFlags is summaries.RemoteFlags
    assert content.EmailContent.model_fields["remote_flags"].annotation is RemoteFlags


@pytest.mark.parametrize(
    ("stored", "published"),
    [
        (
            {"flags": ["\\Seen", "\\Flagged"], "flags_observed": True, "flags_observed_at": OBSERVED},
            {"flags": ["\\Seen", "\\Flagged"], "wasObserved": True, "observedAt": "2025-06-03T10:31:00Z"},
        ),
        (
            {"flags": [], "flags_observed": False, "flags_observed_at": None},
            {"flags": [], "wasObserved": False, "observedAt": None},
        ),
    ],
    ids=["observed", "never-observed"],
)
def test_a_summary_and_a_content_read_publish_the_same_remote_flags(stored, published):
    folder = mapped_folder(MailAccountFactory(), "inbox")
    email = EmailFactory(folder=folder, raw=b"Subject: flags\r\n\r\nbody\r\n", **stored)

    [summary] = summarize([email])
    [entry] = get_email_content([str(email.pk)]).emails

    assert summary.wire()["remoteFlags"] == published
    assert entry.content.wire()["remoteFlags"] == published
