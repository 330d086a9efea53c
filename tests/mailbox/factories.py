"""factory-boy factories for the local copy: folders, emails, participants, raw messages.

Typical use::

    inbox = mapped_folder(account, "inbox", role=FolderRole.INBOX)
    EmailFactory(folder=inbox, subject="Invoice", body="text", to=["a@example.com"],
                 cc=[("Bea", "b@example.com")], raw=b"Subject: Invoice\\r\\n\\r\\ntext")

An email's account follows its folder; give `account=` alone and a mapped folder of that
account is made for it. `body` fills text_body. `to`, `cc`, `bcc` and `reply_to` take
addresses or (display name, address) pairs and create Participant rows in that order.
`raw` stores a RawMessage for the email. synced_folder(account, alias) makes the Folder
through synchronization's own ensure_folders instead. stored_email(folder, message) stores a whole message
through the real parse-and-store path instead, as synchronization does.
"""

from __future__ import annotations

import hashlib
import itertools
import uuid
import zlib
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage

import factory

from mailbox.models import Email, Folder, Participant, ParticipantRole, RawMessage
from mailbox.services.store import IncomingMessage, store_messages
from mailbox.sync.folder_state import ensure_folders
from tests.factories import FolderMappingFactory, MailAccountFactory

BASE_TIME = datetime(2024, 1, 1, tzinfo=UTC)


class FolderFactory(factory.django.DjangoModelFactory):
    """Synchronization state of a folder, mapped (by default) to a new alias of its account."""

    class Meta:
        model = Folder

    account = factory.SubFactory(MailAccountFactory)
    mapping = factory.SubFactory(FolderMappingFactory, account=factory.SelfAttribute("..account"))
    remote_name = factory.LazyAttributeSequence(
        lambda o, n: o.mapping.remote_name if o.mapping is not None else f"UNMAPPED-{n}"
    )
    uidvalidity = 1
    last_committed_at = None


def mapped_folder(
    account,
    alias: str,
    role: str = "",
    *,
    visible_to_tools: bool = True,
    **folder_fields,
) -> Folder:
    """Create a FolderMapping of `account` and its Folder; extra keywords go to the Folder."""
    mapping = FolderMappingFactory(account=account, alias=alias, role=role, visible_to_tools=visible_to_tools)
    return FolderFactory(account=account, mapping=mapping, **folder_fields)


def synced_folder(account=None, alias: str = "inbox") -> Folder:
    """Map `alias` of `account` (a new one if None) and return the Folder that synchronization
    makes for the mapping (ensure_folders), where mapped_folder builds both rows itself."""
    account = account or MailAccountFactory()
    mapping = FolderMappingFactory(account=account, alias=alias)
    return next(f for f in ensure_folders(account) if f.mapping_id == mapping.pk)


def _participants(role: str):
    def create(email: Email, create: bool, extracted, **kwargs) -> None:
        if not create or not extracted:
            return
        for position, entry in enumerate(extracted):
            name, address = entry if isinstance(entry, tuple) else ("", entry)
            Participant.objects.create(
                email=email, role=role, position=position, address=address, display_name=name
            )

    return factory.PostGeneration(create)


class EmailFactory(factory.django.DjangoModelFactory):
    """An email with its parts read (no attachments) unless told otherwise."""

    class Meta:
        model = Email
        skip_postgeneration_save = True

    class Params:
        body = ""

    account = None  # taken from the folder when not given
    folder = factory.LazyAttribute(
        lambda o: FolderFactory(account=o.account) if o.account is not None else FolderFactory()
    )
    uidvalidity = 1
    uid = factory.Sequence(lambda n: n + 1)
    message_id = factory.Sequence(lambda n: f"<message-{n}@example.test>")
    subject = factory.Sequence(lambda n: f"Subject {n}")
    sender_address = "sender@example.com"
    sender_name = "Sender"
    received_at = factory.Sequence(lambda n: BASE_TIME + timedelta(minutes=n))
    sent_at = factory.LazyAttribute(lambda o: o.received_at - timedelta(seconds=30))
    size_bytes = 1000
    attachment_count = 0
    inline_count = 0
    attachment_total_bytes = 0
    text_body = factory.LazyAttribute(lambda o: o.body)

    to = _participants(ParticipantRole.TO)
    cc = _participants(ParticipantRole.CC)
    bcc = _participants(ParticipantRole.BCC)
    reply_to = _participants(ParticipantRole.REPLY_TO)

    @factory.post_generation
    def raw(email: Email, create: bool, extracted: bytes | None, **kwargs) -> None:
        if create and extracted is not None:
            RawMessageFactory(email=email, raw=extracted)

    @classmethod
    def _adjust_kwargs(cls, **kwargs):
        if kwargs.get("account") is None:
            kwargs["account"] = kwargs["folder"].account
        return kwargs


class ParticipantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Participant

    email = factory.SubFactory(EmailFactory)
    role = ParticipantRole.TO
    position = factory.Sequence(lambda n: n)
    address = factory.Sequence(lambda n: f"person{n}@example.com")
    display_name = ""


class RawMessageFactory(factory.django.DjangoModelFactory):
    """Stored MIME for an email; pass `raw` bytes and the derived columns follow."""

    class Meta:
        model = RawMessage

    class Params:
        raw = b"Subject: test\r\n\r\nbody\r\n"

    email = factory.SubFactory(EmailFactory)
    compressed = factory.LazyAttribute(lambda o: zlib.compress(o.raw))
    sha256 = factory.LazyAttribute(lambda o: hashlib.sha256(o.raw).hexdigest())
    original_size = factory.LazyAttribute(lambda o: len(o.raw))
    stored_size = factory.LazyAttribute(lambda o: len(o.compressed))


def plain_message(subject: str, body: str) -> bytes:
    """A text/plain message from Alice to Bea with `subject` and `body`, under a Message-ID of its own."""
    return (
        f"From: Alice <alice@example.org>\r\nTo: bea@example.com\r\nSubject: {subject}\r\n"
        f"Message-ID: <{uuid.uuid4().hex}@example.org>\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"\r\n{body}\r\n"
    ).encode()


_uids = itertools.count(1)


def stored_email(folder: Folder, message: EmailMessage | bytes) -> Email:
    """Store `message` in `folder` through the real parse-and-store path, as synchronization
    does, under a UID not used before; return its Email."""
    raw = message.as_bytes() if isinstance(message, EmailMessage) else message
    incoming = IncomingMessage(uidvalidity=1, uid=next(_uids), size=len(raw), received_at=None, raw=raw)
    return Email.objects.get(pk=store_messages(folder, [incoming]).email_ids[0])
