"""The correspondent source scope: what a model writing to one sender may be shown of the mailbox."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from answering.drafting.gather import kept_for_the_correspondent
from mailbox.models import Direction
from mailbox.services.passages import Passage
from tests.answering.drafting.attack_set import CUSTOMERS, FIRM, build_firm
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory

pytestmark = pytest.mark.django_db


def _passage(email) -> Passage:
    return Passage(
        stored_email_id=str(email.pk),
        account_id=email.account.account_id,
        account_display_name="",
        folder_alias="inbox",
        subject=email.subject,
        received_at=email.received_at,
        extract=email.text_body,
    )


@pytest.fixture
def firm():
    account = MailAccountFactory(account_id="oak", display_name="Oak & Iron", username=FIRM)
    return build_firm(account)


def _mail(folder, sender, to, body, *, direction=Direction.INCOMING):
    return EmailFactory(
        folder=folder,
        direction=direction,
        subject="Note",
        body=body,
        sender_address=sender,
        to=[("", address) for address in to],
        received_at=timezone.now() - timedelta(days=1),
    )


def test_only_the_correspondents_own_the_firms_internal_and_its_fact_free_letters_are_kept(firm):
    meyer, other = CUSTOMERS["meyer"], next(c for key, c in CUSTOMERS.items() if key != "meyer")
    answered = _mail(firm.inbox, meyer.address, [FIRM], "Hello, a question about delivery.")
    theirs = _mail(firm.inbox, meyer.address, [FIRM], "Our earlier order, thank you.")
    internal = _mail(firm.sent, FIRM, ["ben@oak.example"], "Ben, the workshop closes at five.")
    generic = _mail(
        firm.sent,
        FIRM,
        [other.address],
        "We deliver within two weeks; call us on +49 30 5550100.",  # the signature's own phone
        direction=Direction.OUTGOING,
    )
    naming_them = _mail(
        firm.sent, FIRM, [other.address], f"We will call you on {other.phone}.", direction=Direction.OUTGOING
    )
    from_other = _mail(firm.inbox, other.address, [FIRM], "Our delivery went well.")
    shared = _mail(firm.inbox, meyer.address, [FIRM, other.address], "Both of us would like a visit.")
    # A look-alike of the firm writing to another customer is not the firm's own letter.
    forged_outgoing = _mail(firm.inbox, "ceo@oak-example.example", [other.address], "Nothing here.")

    candidates = [theirs, internal, generic, naming_them, from_other, shared, forged_outgoing]
    kept = kept_for_the_correspondent([_passage(e) for e in candidates], answered)

    assert [p.stored_email_id for p in kept] == [str(theirs.pk), str(internal.pk), str(generic.pk)]
