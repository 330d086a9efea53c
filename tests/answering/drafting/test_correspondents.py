"""thread_hijack judged on stored threads: a conversation the firm was part of, or one it only overheard."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import FolderRole
from answering.drafting.correspondents import own_parties, thread_hijack_reasons
from mailbox.models import Direction
from mailbox.services.threads import thread_unthreaded
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder

FIRM = "anna@oak.example"


@pytest.fixture
def firm():
    account = MailAccountFactory(account_id="oak", username=FIRM)
    return (
        account,
        mapped_folder(account, "inbox", FolderRole.INBOX),
        mapped_folder(account, "sent", FolderRole.SENT),
    )


def _earlier(folder, *, to, sender="jo@client.example", direction=Direction.INCOMING):
    return EmailFactory(
        folder=folder,
        direction=direction,
        message_id="<start@client.example>",
        subject="Invoice 4711",
        sender_address=sender,
        to=[("", address) for address in to],
        received_at=timezone.now() - timedelta(days=2),
    )


def _joining(folder, sender):
    return EmailFactory(
        folder=folder,
        message_id="<joins@elsewhere.example>",
        in_reply_to="<start@client.example>",
        references=["<start@client.example>"],
        subject="Re: Invoice 4711",
        sender_address=sender,
        to=[("", FIRM)],
        received_at=timezone.now(),
    )


def _reasons(account, email):
    return thread_hijack_reasons(email, own_parties(account))


def _threaded(account, email):
    """`email` as storing leaves it: joined to its thread."""
    while thread_unthreaded(account.pk):
        pass
    email.refresh_from_db()
    return email


@pytest.mark.django_db
def test_a_stranger_in_a_conversation_the_firm_was_addressed_in_is_a_hijack(firm):
    account, inbox, _ = firm
    _earlier(inbox, to=[FIRM])
    reasons = _reasons(account, _joining(inbox, "billing@client-payments.example"))
    assert len(reasons) == 1 and reasons[0].startswith("thread_hijack:")
    assert "client-payments.example" in reasons[0]


@pytest.mark.django_db
def test_a_stranger_in_a_conversation_the_firm_wrote_is_a_hijack(firm):
    account, inbox, sent = firm
    _earlier(sent, to=["jo@client.example"], sender=FIRM, direction=Direction.OUTGOING)
    assert _reasons(account, _joining(inbox, "someone@gmail.com"))


@pytest.mark.django_db
def test_a_new_voice_in_a_thread_the_firm_only_overheard_is_not(firm):
    # A list thread: the firm received it through the list's address, never by its own.
    account, inbox, _ = firm
    _earlier(inbox, to=["users@lists.example"])
    assert _reasons(account, _joining(inbox, "newcomer@elsewhere.example")) == []


@pytest.mark.django_db
def test_the_same_organisation_and_the_firm_itself_may_join(firm):
    account, inbox, _ = firm
    _earlier(inbox, to=[FIRM])
    assert _reasons(account, _joining(inbox, "colleague@mail.client.example")) == []
    assert _reasons(account, _joining(inbox, "ben@oak.example")) == []


@pytest.mark.django_db
def test_a_thread_the_mailbox_never_held_cannot_be_judged(firm):
    account, inbox, _ = firm
    assert _reasons(account, _joining(inbox, "stranger@elsewhere.example")) == []


@pytest.mark.django_db
def test_a_stranger_in_a_list_thread_the_firm_wrote_in_is_not_a_hijack(firm):
    # The firm posted to a mailing list: the list's posts are open to every member.
    account, inbox, _ = firm
    post = _earlier(inbox, to=[FIRM])
    post.is_list_mail = True
    post.save(update_fields=["is_list_mail"])
    assert _reasons(account, _joining(inbox, "member@elsewhere.example")) == []


@pytest.mark.django_db
def test_someone_elses_message_to_unknown_recipients_admits_the_sender(firm):
    # Sent to undisclosed recipients (or stored without To and Cc): the sender may have had a copy.
    account, inbox, sent = firm
    _earlier(inbox, to=[FIRM])
    EmailFactory(
        folder=sent,
        direction=Direction.OUTGOING,
        message_id="<blind@oak.example>",
        in_reply_to="<start@client.example>",
        references=["<start@client.example>"],
        sender_address=FIRM,
        to=[],
        received_at=timezone.now() - timedelta(days=1),
    )
    joining = _threaded(account, _joining(inbox, "someone@gmail.com"))
    assert _reasons(account, joining) == []


@pytest.mark.django_db
def test_someone_the_conversation_wrote_to_may_answer_it(firm):
    # The customer copied a colleague at another company into the conversation.
    account, inbox, _ = firm
    _earlier(inbox, to=[FIRM, "advisor@tax-office.example"])
    assert _reasons(account, _joining(inbox, "advisor@tax-office.example")) == []


def _intruding_twice(account, inbox, *, first_to, first_is_list_mail=False):
    """A stranger's message into the customer's conversation, then a second that names only the first."""
    intruder = "billing@client-payments.example"
    planted = EmailFactory(
        folder=inbox,
        message_id="<first@client-payments.example>",
        in_reply_to="<start@client.example>",
        references=["<start@client.example>"],
        sender_address=intruder,
        to=[("", address) for address in first_to],
        received_at=timezone.now() - timedelta(days=1),
        is_list_mail=first_is_list_mail,
    )
    second = EmailFactory(
        folder=inbox,
        message_id="<second@client-payments.example>",
        in_reply_to=planted.message_id,
        references=[planted.message_id],
        sender_address=intruder,
        to=[("", FIRM)],
        received_at=timezone.now(),
    )
    return _threaded(account, second)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("first_to", "first_is_list_mail"),
    [
        ([FIRM, "billing@client-payments.example"], False),  # he wrote to himself as well
        ([], False),  # to undisclosed recipients
        ([FIRM, "billing@client-payments.example"], True),  # dressed as a list post (a forged List-Id)
    ],
    ids=["addressed-to-himself", "undisclosed-recipients", "forged-list-post"],
)
def test_a_stranger_who_wrote_into_the_thread_before_is_still_a_stranger(firm, first_to, first_is_list_mail):
    account, inbox, _ = firm
    _earlier(inbox, to=[FIRM])
    reasons = _reasons(
        account, _intruding_twice(account, inbox, first_to=first_to, first_is_list_mail=first_is_list_mail)
    )
    assert len(reasons) == 1 and "client-payments.example" in reasons[0]
