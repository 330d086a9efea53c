"""Text read from an attachment, through /mcp with the real client and a real uvicorn.

A tax number appears only inside a PDF attached to one email (tests/data/attachments/
invoice.pdf, read by the real extraction child). search_emails must find it and say the
match was in that attachment, get_email_content must return the attachment's text inside
its bounds, ask_mail's lookup must show it to the model, and a draft may use it as a source.
Models are the scripted OpenAI-compatible server.
"""

from __future__ import annotations

import json
from datetime import timedelta
from email.message import EmailMessage
from pathlib import Path

import pytest
from django.utils import timezone

from accounts.models import FolderRole
from mailbox.models import Direction, Email
from mailbox.services import attachment_text
from mailbox.services.content import get_email_content
from mailbox.services.embedding import embed_pending
from mailbox.services.lexical_search import refresh_term_stats
from mailfathom.providers import health
from tests.answering.drafting.support import GENERATE, DraftingModel
from tests.answering.support import ObedientModel, turns_of
from tests.configure import configure, scripted_embeddings
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder, stored_email
from tests.mcp.answering_support import answering_env
from tests.mcp.conftest import call_tool, payload
from tests.providers.openai_server import text

pytestmark = pytest.mark.django_db(transaction=True)

FILES = Path(__file__).resolve().parents[1] / "data" / "attachments"
TAX_NUMBER = "143/815/08152"  # the Steuernummer printed in invoice.pdf, and nowhere else


@pytest.fixture(scope="module")
def server(module_server_factory, scripted):
    return module_server_factory(**answering_env(scripted, alias="scripted-endpoint"))


def _invoice_mail() -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = "Anna Berg <anna@oak.example>"
    msg["To"] = "Jo Quist <jo@quist.example>"
    msg["Subject"] = "Your invoice for the printer repair"
    msg["Date"] = (timezone.now() - timedelta(days=3)).strftime("%a, %d %b %Y %H:%M:%S +0000")
    msg.set_content("Dear Jo,\n\nplease find our invoice attached.\n\nKind regards\nAnna")
    msg.add_attachment(
        (FILES / "invoice.pdf").read_bytes(), maintype="application", subtype="pdf", filename="invoice.pdf"
    )
    msg.add_attachment(b"Delivery on Tuesday.\n", maintype="text", subtype="plain", filename="note.txt")
    return msg


@pytest.fixture
def mailbox(settings, scripted):
    configure(settings, **scripted_embeddings(scripted))
    for role in ("chat", "utility", "drafting", "embedding"):
        health.clear_health(role)
    account = MailAccountFactory(account_id="shop", display_name="Oak & Iron")
    inbox = mapped_folder(account, "inbox", FolderRole.INBOX)
    sent = mapped_folder(account, "sent", FolderRole.SENT)
    invoice = stored_email(sent, _invoice_mail())
    Email.objects.filter(pk=invoice.pk).update(direction=Direction.OUTGOING)
    other = EmailFactory(folder=inbox, subject="Lunch", body="Shall we meet on Friday?")
    assert attachment_text.extract_pending().attachments == 2
    embed_pending()
    refresh_term_stats()
    assert TAX_NUMBER not in Email.objects.get(pk=invoice.pk).text_body
    yield account, inbox, invoice, other
    for role in ("chat", "utility", "drafting"):
        health.clear_health(role)


def test_search_emails_finds_a_number_only_a_pdf_holds_and_names_the_attachment(server, api_key, mailbox):
    _account, _inbox, invoice, _other = mailbox

    result = payload(call_tool(server, api_key, "search_emails", {"queryText": TAX_NUMBER}))

    match, *others = result["matches"]  # hybrid: the vector ranking may pad with the other email
    assert match["summary"]["storedEmailId"] == str(invoice.pk) and match["matchKind"] == "exact"
    assert all(other["attachmentMatches"] == [] for other in others)
    (found,) = match["attachmentMatches"]
    assert (found["attachmentIndex"], found["fileName"]) == (0, "invoice.pdf")
    assert any(f"**{TAX_NUMBER}**" in snippet for snippet in found["snippets"]), found["snippets"]
    # The body does not hold the number, so no body extract claims it.
    assert not any(TAX_NUMBER in snippet for snippet in match["snippets"])
    assert TAX_NUMBER not in server.log()


def test_get_email_content_returns_the_attachment_text_on_request_within_the_budget(
    server, api_key, mailbox, settings
):
    _account, _inbox, invoice, _other = mailbox
    plain = payload(call_tool(server, api_key, "get_email_content", {"storedEmailIds": [str(invoice.pk)]}))
    (pdf, note) = plain["emails"][0]["content"]["attachments"]
    assert pdf["textState"] == "notRequested" and pdf["extractedText"] is None

    asked = payload(
        call_tool(
            server,
            api_key,
            "get_email_content",
            {"storedEmailIds": [str(invoice.pk)], "includeAttachmentText": True},
        )
    )

    (pdf, note) = asked["emails"][0]["content"]["attachments"]
    assert (pdf["fileName"], pdf["textState"]) == ("invoice.pdf", "extracted")
    assert TAX_NUMBER in pdf["extractedText"]["text"]
    assert pdf["extractedText"]["truncatedBy"] == "none"
    assert note["extractedText"]["text"].strip() == "Delivery on Tuesday."

    # The call's budget is shared with the body, which is spent first.
    body = len(Email.objects.get(pk=invoice.pk).text_body)
    configure(settings, content_read_character_budget=body + 20)
    (entry,) = get_email_content([str(invoice.pk)], include_attachment_text=True).emails
    (pdf, note) = entry.content.attachments
    assert pdf.extracted_text is not None and len(pdf.extracted_text.text) <= 20
    assert pdf.extracted_text.truncated_by == "readCharacterBudget"
    assert note.extracted_text is None or note.extracted_text.text == ""


def test_ask_mails_lookup_shows_the_model_the_attachment_as_quoted_data(server, api_key, mailbox, scripted):
    _account, _inbox, invoice, _other = mailbox
    model = ObedientModel(first_query=f"Steuernummer {TAX_NUMBER}")
    scripted.chat.always(model)

    result = payload(
        call_tool(server, api_key, "ask_mail", {"question": "What is our tax number (Steuernummer)?"})
    )

    tool_results = [turn.content for turn in turns_of(model.requests[-1])[1] if turn.role == "tool"]
    (envelope,) = tool_results
    # The obedient model cites the first message it was shown: the one whose attachment matched.
    assert [c["storedEmailId"] for c in result["reliedOn"]] == [str(invoice.pk)]
    assert '<attachment name="invoice.pdf">' in envelope
    quoted = envelope[envelope.index("<attachment") : envelope.index("</attachment>")]
    assert TAX_NUMBER in quoted


def test_a_draft_can_take_its_fact_from_an_attachment_and_the_verdict_finds_it_there(
    server, api_key, mailbox, scripted
):
    account, inbox, invoice, _other = mailbox
    asked = EmailFactory(
        folder=inbox,
        subject="Your tax number for our records",
        body="Hello Anna, our accountant needs your Steuernummer for the printer repair invoice. Jo",
        sender_address="jo@quist.example",
        sender_name="Jo Quist",
    )
    refresh_term_stats()
    letter = f"Dear Jo,\n\nour tax number (Steuernummer) is {TAX_NUMBER}.\n\nKind regards\nAnna"
    model = DraftingModel()
    model.defaults[GENERATE] = text(letter, usage=(2000, 40))
    scripted.chat.always(model)

    result = payload(call_tool(server, api_key, "draft_reply", {"storedEmailId": str(asked.pk)}))

    assert result["drafted"] is True and TAX_NUMBER in result["body"]
    assert str(invoice.pk) in result["sourceEmailIds"]
    prompt = model.user_turn(GENERATE)
    assert '<attachment name="invoice.pdf">' in prompt and TAX_NUMBER in prompt
    # Supported: the number is in a source the recipient was party to (the firm's own letter
    # to Jo), read from its attachment; nothing flags it as invented or someone else's.
    assert result["verdict"] == "ready", json.dumps(result["reasons"])
