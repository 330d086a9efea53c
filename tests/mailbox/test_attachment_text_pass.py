"""The attachment text pass after storing: rows per attachment, the queue, the command, erasure."""

from __future__ import annotations

from email.message import EmailMessage
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from mailbox.extraction import ENGINE_VERSION
from mailbox.models import AttachmentExtraction, AttachmentText, Email
from mailbox.services import attachment_text
from mailbox.tasks import extract_attachments
from tests.factories import MailAccountFactory
from tests.mailbox.factories import mapped_folder, stored_email

pytestmark = pytest.mark.django_db

FILES = Path(__file__).resolve().parents[1] / "data" / "attachments"


def message(*attachments: tuple[str, str, str]) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = "billing@example.org"
    msg["To"] = "office@example.net"
    msg["Subject"] = "Ihre Rechnung"
    msg.set_content("Die Rechnung liegt bei.")
    for name, maintype, subtype in attachments:
        msg.add_attachment((FILES / name).read_bytes(), maintype=maintype, subtype=subtype, filename=name)
    return msg


@pytest.fixture
def folder():
    return mapped_folder(MailAccountFactory(account_id="billing"), "inbox")


def test_each_attachment_gets_a_row_with_its_outcome_and_the_email_leaves_the_queue(folder):
    email = stored_email(
        folder,
        message(
            ("invoice.pdf", "application", "pdf"),
            ("hostile-xxe.docx", "application", "octet-stream"),
            ("hostile-encrypted.pdf", "application", "pdf"),
        ),
    )
    stored_email(folder, message())  # no attachment: never queued
    assert list(attachment_text.pending_emails()) == [email]

    result = attachment_text.extract_pending()

    assert (result.emails, result.attachments) == (1, 3)
    rows = {row.file_name: row for row in AttachmentText.objects.filter(email=email)}
    joined = Email.objects.get(pk=email.pk).attachment_text
    invoice = rows["invoice.pdf"]
    assert invoice.outcome == "ok"
    assert "Steuernummer: 143/815/08152" in invoice.text_in(joined)
    assert invoice.characters == len(invoice.text_in(joined)) > 0
    assert invoice.engine_version == ENGINE_VERSION
    # Stored once: the email's attachment text is exactly the readable attachments' texts.
    assert joined == invoice.text_in(joined)
    assert (rows["hostile-xxe.docx"].outcome, rows["hostile-xxe.docx"].characters) == ("unreadable", 0)
    assert rows["hostile-encrypted.pdf"].outcome == "encrypted"
    marker = AttachmentExtraction.objects.get(email=email)
    assert marker.attachments == 3
    assert attachment_text.pending_count() == 0


def test_settings_choose_the_kinds_and_the_largest_size(folder, mailfathom_settings):
    mailfathom_settings(attachment_text_kinds="docx,text", attachment_text_max_bytes=1024)
    email = stored_email(
        folder, message(("invoice.pdf", "application", "pdf"), ("contract.docx", "application", "zip"))
    )
    attachment_text.extract_pending()
    outcomes = dict(AttachmentText.objects.filter(email=email).values_list("file_name", "outcome"))
    assert outcomes == {"invoice.pdf": "unsupported", "contract.docx": "too_large"}


def test_no_kind_switched_on_leaves_the_queue_alone(folder, mailfathom_settings):
    mailfathom_settings(attachment_text_kinds="")
    stored_email(folder, message(("minutes.txt", "text", "plain")))
    assert attachment_text.extract_pending().inactive
    assert attachment_text.pending_count() == 1


def test_an_unknown_kind_is_refused_at_startup(mailfathom_settings):
    from mailfathom.checks import check_attachment_text_kinds

    mailfathom_settings(attachment_text_kinds="pdf,exe")
    assert [error.id for error in check_attachment_text_kinds()] == ["mailfathom.E050"]


def test_the_command_reads_mail_stored_before_with_a_progress_bar(folder):
    for _ in range(3):
        stored_email(folder, message(("minutes.txt", "text", "plain")))
    out, err = StringIO(), StringIO()
    call_command("extract_attachments", stdout=out, stderr=err)
    assert "Read 3 attachments of 3 emails (3 ok)." in out.getvalue()
    assert "attachments" in err.getvalue() and "3/3" in err.getvalue()
    call_command("extract_attachments", stdout=out)
    assert "Nothing to extract" in out.getvalue()


def test_the_command_refuses_while_a_pass_runs(folder):
    with attachment_text.extraction_slot() as renew:
        assert renew is not None
        with pytest.raises(CommandError, match="already running"):
            call_command("extract_attachments", stdout=StringIO(), stderr=StringIO())
        assert extract_attachments() == {"skipped": "a pass is running"}


def test_the_beat_task_works_off_the_queue(folder):
    stored_email(folder, message(("payments.csv", "text", "csv")))
    assert extract_attachments() == {"emails": 1, "attachments": 1}


def test_an_erased_email_takes_its_attachment_text_with_it(folder):
    email = stored_email(folder, message(("invoice.pdf", "application", "pdf")))
    attachment_text.extract_pending()
    email.delete()
    assert not AttachmentText.objects.exists()
    assert not AttachmentExtraction.objects.exists()


def test_listing_and_searching_never_read_the_attachment_text_column(folder):
    """The column may hold megabytes per email: only the reads that need it select it."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from mailbox.services.lexical_search import refresh_term_stats
    from mailbox.services.search import search_emails
    from mailbox.services.timeline import list_emails

    email = stored_email(folder, message(("invoice.pdf", "application", "pdf")))
    attachment_text.extract_pending()
    refresh_term_stats()
    column = '"mailbox_email"."attachment_text"'

    with CaptureQueriesContext(connection) as listed:
        assert [str(e.stored_email_id) for e in list_emails().emails] == [str(email.pk)]
    with CaptureQueriesContext(connection) as searched:
        assert search_emails("Rechnung").matches
    assert not [
        q["sql"] for q in (*listed.captured_queries, *searched.captured_queries) if column in q["sql"]
    ]
    # A row that does need it still reads it, on first access.
    assert "08152" in Email.objects.get(pk=email.pk).attachment_text


def test_a_copy_repaired_after_the_pass_met_it_damaged_has_its_attachments_read_again(folder):
    """Nothing is lost to a damaged copy: the repair puts the email back in the pass's queue."""
    from mailbox.models import RawMessage, RepairRequest
    from mailbox.services.store import fill_content

    msg = message(("invoice.pdf", "application", "pdf"))
    email = stored_email(folder, msg)
    RawMessage.objects.filter(email=email).update(sha256="0" * 64)  # the stored copy fails its check
    attachment_text.extract_pending()
    assert RepairRequest.objects.filter(email=email).exists()
    assert AttachmentExtraction.objects.filter(email=email).exists()  # done, with nothing read
    assert not AttachmentText.objects.filter(email=email).exists()

    assert fill_content(Email.objects.get(pk=email.pk), msg.as_bytes())  # the next sync's repair

    assert list(attachment_text.pending_emails()) == [email]
    attachment_text.extract_pending()
    assert "08152" in Email.objects.get(pk=email.pk).attachment_text
