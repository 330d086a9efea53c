"""The vector index reads attachment text: a second passage per email, made when the text arrives.

Embeddings come from the scripted OpenAI-compatible server, whose vectors are derived from a
hash of the text: a query equal to a passage's text is at distance 0 from it, and unrelated
texts are far apart, so which passage a ranking found is unambiguous.
"""

from __future__ import annotations

from email.message import EmailMessage
from pathlib import Path

import pytest

from mailbox.models import Email, Passage
from mailbox.services import attachment_text
from mailbox.services.embedding import (
    ATTACHMENT_POSITION,
    BODY_POSITION,
    active_profile,
    attachment_passage_text,
    embed_pending,
    rank_vector,
)
from tests.configure import configure, scripted_embeddings
from tests.factories import MailAccountFactory
from tests.mailbox.factories import mapped_folder, stored_email
from tests.providers.openai_server import vector_for
from tests.support import SCRIPTED_DIMENSIONS, isolated_provider_health

pytestmark = pytest.mark.django_db(transaction=True)

FILES = Path(__file__).resolve().parents[1] / "data" / "attachments"


def _store(folder, *, with_file: bool) -> Email:
    msg = EmailMessage()
    msg["From"] = "billing@example.org"
    msg["To"] = "office@example.net"
    msg["Subject"] = "Invoice" if with_file else "Lunch"
    msg.set_content("See attached." if with_file else "Friday at noon?")
    if with_file:
        msg.add_attachment(
            (FILES / "invoice.pdf").read_bytes(),
            maintype="application",
            subtype="pdf",
            filename="invoice.pdf",
        )
    return stored_email(folder, msg)


def test_an_email_gets_an_attachment_passage_once_its_files_are_read_and_ranks_once(settings, scripted):
    folder = mapped_folder(MailAccountFactory(account_id="billing"), "inbox")
    with isolated_provider_health(settings, "attachment-passages"):
        configure(settings, **scripted_embeddings(scripted, embedding_max_retries=0))
        invoice, lunch = _store(folder, with_file=True), _store(folder, with_file=False)
        embed_pending()
        assert set(Passage.objects.values_list("email_id", "position")) == {
            (invoice.pk, BODY_POSITION),
            (lunch.pk, BODY_POSITION),
        }
        calls = scripted.count("embeddings")

        attachment_text.extract_pending()  # the files are read after the body was embedded
        assert Email.objects.get(pk=invoice.pk).embedded is False  # taken up again by the sweep
        embed_pending()

        assert scripted.count("embeddings") == calls + 1
        # Only the new passage was made: the body's was kept, not embedded a second time.
        sent = scripted.recorded("embeddings")[-1].inputs
        joined = Email.objects.get(pk=invoice.pk).attachment_text
        assert sent == [attachment_passage_text(joined)] and "08152" in sent[0]
        assert set(Passage.objects.values_list("email_id", "position")) == {
            (invoice.pk, BODY_POSITION),
            (invoice.pk, ATTACHMENT_POSITION),
            (lunch.pk, BODY_POSITION),
        }
        assert Email.objects.get(pk=invoice.pk).embedded is True

        query = vector_for(attachment_passage_text(joined), SCRIPTED_DIMENSIONS)
        hits = rank_vector(Email.objects.all(), query, active_profile(), 10)
        assert [hit.email_id for hit in hits] == [str(invoice.pk), str(lunch.pk)]  # one hit per email
        assert hits[0].distance == pytest.approx(0.0, abs=1e-5)


def test_reading_the_files_again_replaces_their_passage(settings, scripted):
    folder = mapped_folder(MailAccountFactory(account_id="billing"), "inbox")
    with isolated_provider_health(settings, "attachment-passages-again"):
        configure(settings, **scripted_embeddings(scripted, embedding_max_retries=0))
        invoice = _store(folder, with_file=True)
        attachment_text.extract_pending()
        embed_pending()
        first = Passage.objects.get(email=invoice, position=ATTACHMENT_POSITION)

        attachment_text.extract_email(invoice, attachment_text.enabled_kinds())

        assert not Passage.objects.filter(pk=first.pk).exists()
        embed_pending()
        assert Passage.objects.filter(email=invoice, position=ATTACHMENT_POSITION).count() == 1
