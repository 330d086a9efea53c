"""A fact read from an attachment belongs to the email that carried it, and to who sent it.

Whoever can send mail to the mailbox writes the files attached to it too. An IBAN that only
another customer's PDF holds must be flagged in a reply to someone else, and one that only
incoming mail's attachments hold is unverified, exactly as if it stood in the body.
"""

from __future__ import annotations

import pytest

from accounts.models import FolderRole
from answering.drafting.facts import extract_facts
from answering.drafting.provenance import judge, origins_for
from mailbox.models import Direction, Email
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder

pytestmark = pytest.mark.django_db

IBAN = "DE89 3704 0044 0532 0130 00"


def _codes(letter: str, source: Email, answered: Email) -> list[str]:
    origins = origins_for(
        answered,
        own=frozenset({"oak.example"}),
        thread_ids=[],
        source_ids=[str(source.pk)],
        reference_ids=[],
        max_answered=4000,
        max_thread=4000,
    )
    (fact,) = [fact for fact in extract_facts(letter) if fact.kind == "iban"]
    judgement = judge(fact, origins, frozenset({"fresh-buyer.example"}))
    assert judgement is not None, "the attachment's text is evidence of its email"
    assert judgement.origins == (str(source.pk),)
    return [code for code, _sentence in judgement.flags]


def test_another_customers_iban_found_only_in_their_attachment_is_flagged_both_ways():
    inbox = mapped_folder(MailAccountFactory(account_id="shop"), "inbox", FolderRole.INBOX)
    theirs = EmailFactory(
        folder=inbox,
        subject="Our invoice",
        body="Please find our invoice attached.",
        sender_address="accounts@kunde-meyer.example",
    )
    Email.objects.filter(pk=theirs.pk).update(attachment_text=f"Invoice 2024-17\nIBAN: {IBAN}\n")
    answered = EmailFactory(
        folder=inbox,
        subject="Payment details?",
        body="Where should I pay?",
        sender_address="jo@fresh-buyer.example",
    )

    codes = _codes(f"Please pay to {IBAN}.", theirs, answered)

    assert codes == ["unverified_payment_detail", "other_correspondent"]


def test_the_firms_own_attachment_verifies_its_iban():
    account = MailAccountFactory(account_id="shop")
    inbox = mapped_folder(account, "inbox", FolderRole.INBOX)
    sent = mapped_folder(account, "sent", FolderRole.SENT)
    ours = EmailFactory(
        folder=sent,
        direction=Direction.OUTGOING,
        subject="Your invoice",
        body="Attached.",
        sender_address="anna@oak.example",
        to=["jo@fresh-buyer.example"],
    )
    Email.objects.filter(pk=ours.pk).update(attachment_text=f"Bank: Musterbank, IBAN {IBAN}")
    answered = EmailFactory(
        folder=inbox, subject="Account?", body="Which account?", sender_address="jo@fresh-buyer.example"
    )

    assert _codes(f"Our IBAN is {IBAN}.", ours, answered) == []
