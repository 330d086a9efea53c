"""Drafts for review and delivery tests: real rows, an account on the session's Dovecot.

user = add_user(dovecot)
account = drafting_account(user, append_mode="approved")
draft = DraftFactory(email=answered_email(account))
copies = drafts_on_server(user)   # {uid: (flags, parsed message)}
"""

from __future__ import annotations

import email
from email import policy
from email.message import EmailMessage

import factory

from accounts.models import FolderRole
from answering.models import Draft, Intent, Verdict
from mailbox.models import Folder
from tests.factories import FolderMappingFactory
from tests.mailbox.factories import EmailFactory, FolderFactory
from tests.mailbox.imap_support import MailUser, account_for

DRAFTS_REMOTE = "Drafts"


class DraftFactory(factory.django.DjangoModelFactory):
    """A pending draft answering `email` (an EmailFactory one unless given)."""

    class Meta:
        model = Draft

    email = factory.SubFactory(EmailFactory)
    account = factory.LazyAttribute(lambda o: o.email.account)
    body = "Dear Ms Example,\n\nthank you for your order 4711. It leaves us on Friday.\n\nKind regards\n"
    intent = Intent.ORDER
    language = "en"
    verdict = Verdict.READY
    reasons = factory.LazyFunction(list)
    model_alias = "scripted-drafting"
    tokens = factory.LazyFunction(lambda: {"generate": {"prompt": 900, "completion": 120}})


def drafting_account(user: MailUser, *, append_mode: str = "approved", drafts: bool = True, **fields):
    """An account on `user`'s mailbox (address user@example.org) with the trail on and Drafts mapped."""
    fields.setdefault("mutation_audit_enabled", True)
    account = account_for(user, drafting_enabled=True, drafting_append_mode=append_mode, **fields)
    account.username = f"{user.name}@example.org"  # Dovecot logs in by the local part (%n)
    account.save()
    if drafts:
        FolderMappingFactory(
            account=account, alias="drafts", remote_name=DRAFTS_REMOTE, role=FolderRole.DRAFTS
        )
    return account


def answered_email(account, **fields):
    """An incoming email of `account`'s inbox, threaded under two earlier messages."""
    mapping = account.folders.get(alias="inbox")
    inbox = Folder.objects.filter(mapping=mapping).first() or FolderFactory(account=account, mapping=mapping)
    values = {
        "message_id": "order-4711@customer.example",
        "in_reply_to": "offer-2@shop.example",
        "references": ["enquiry-1@customer.example", "offer-2@shop.example"],
        "subject": "Order 4711",
        "sender_address": "buyer@customer.example",
        "sender_name": "Bea Buyer",
        "body": "Please confirm my order 4711.",
        "to": [("Shop", account.username)],
    }
    values.update(fields)
    return EmailFactory(folder=inbox, **values)


def drafts_on_server(
    user: MailUser, folder: str = DRAFTS_REMOTE
) -> dict[int, tuple[tuple[str, ...], EmailMessage]]:
    """Every message in the Drafts folder: UID -> (flags, parsed message), read-only."""
    with user.client() as client:
        client.select_folder(folder, readonly=True)
        uids = client.search(["ALL"])
        if not uids:
            return {}
        answer = client.fetch(uids, ["FLAGS", "BODY.PEEK[]"])
    found = {}
    for uid, data in answer.items():
        flags = tuple(sorted(f.decode() for f in data[b"FLAGS"] if f != b"\\Recent"))
        found[uid] = (flags, email.message_from_bytes(data[b"BODY[]"], policy=policy.default))
    return found
