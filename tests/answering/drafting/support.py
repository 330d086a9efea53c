"""What drafting tests stand on: a small shop mailbox and a scripted model for every stage.

The model is served by tests/providers/openai_server.py and reached by the real `openai`
client; it tells the stages apart by the instruction each request carries in the
instruction position, and answers each from its own queue (or its default).
"""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from accounts.models import DraftingExample, DraftingSignature, FolderRole
from mailbox.models import Direction, Email
from tests.answering.support import turns_of
from tests.factories import MailAccountFactory
from tests.mailbox.factories import BASE_TIME, EmailFactory, mapped_folder
from tests.providers.openai_server import Behaviour, text

CLASSIFY, CONDENSE, RERANK, GENERATE = "classify", "condense", "rerank", "generate"

SIGNATURE_EN = "Kind regards\nAnna Berg\nOak & Iron Furniture"
SIGNATURE_DE = "Mit freundlichen Grüßen\nAnna Berg\nOak & Iron Möbel"

ANSWERED_SUBJECT = "Where is my order ZX-88120?"
ANSWERED_BODY = (
    "Hello,\n\nI ordered the oak table last week and paid 1,250 euros. When will it arrive? "
    "I am at home most mornings.\n\nKind regards,\nPetra Quist"
)
CONDENSED = "oak table order delivery date"
LETTER = (
    "Dear Ms Quist,\n\nthank you for your message. Your order ZX-88120 for the oak table left our "
    "warehouse on 10 March and will be delivered by 14 March. The driver will call you on the "
    "morning of delivery.\n\n" + SIGNATURE_EN
)


def stage_of(request: dict[str, Any]) -> str:
    instruction, _turns, _tools = turns_of(request)
    if instruction.startswith("You classify"):
        return CLASSIFY
    if instruction.startswith("You turn one incoming"):
        return CONDENSE
    if instruction.startswith("You judge"):
        return RERANK
    if instruction.startswith("You write one reply"):
        return GENERATE
    return "unknown"


@dataclass
class DraftingModel:
    """Answers each stage from its queue, else its default; records every request by stage."""

    defaults: dict[str, Behaviour] = field(
        default_factory=lambda: {
            CLASSIFY: text('{"intent": "inquiry", "language": "en"}', usage=(300, 12)),
            CONDENSE: text(CONDENSED, usage=(280, 8)),
            RERANK: text("80", usage=(200, 2)),
            GENERATE: text(LETTER, usage=(2000, 90)),
        }
    )
    queues: dict[str, deque[Behaviour]] = field(default_factory=lambda: defaultdict(deque))
    requests: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))

    def script(self, stage: str, *behaviours: Behaviour) -> None:
        self.queues[stage].extend(behaviours)

    def __call__(self, request: dict[str, Any]) -> Behaviour:
        stage = stage_of(request)
        self.requests[stage].append(request)
        queue = self.queues[stage]
        return queue.popleft() if queue else self.defaults.get(stage, text("?"))

    def user_turn(self, stage: str, index: int = -1) -> str:
        _instruction, turns, _tools = turns_of(self.requests[stage][index])
        (user,) = [turn for turn in turns if turn.role == "user"]
        return user.content

    def instruction(self, stage: str, index: int = -1) -> str:
        return turns_of(self.requests[stage][index])[0]


@dataclass
class Shop:
    account: Any
    answered: Email
    source: Email
    junk: Email
    hidden: Email
    unrelated: Email
    earlier: Email | None = None


def build_shop(*, thread: bool = True, signatures: bool = True, examples: int = 0) -> Shop:
    """One account with an answered mail, a source that answers it, and mail that must not be read."""
    account = MailAccountFactory(account_id="shop", display_name="Oak & Iron")
    inbox = mapped_folder(account, "inbox", FolderRole.INBOX)
    archive = mapped_folder(account, "archive", FolderRole.ARCHIVE)
    sent = mapped_folder(account, "sent", FolderRole.SENT)
    junk = mapped_folder(account, "junk", FolderRole.JUNK)
    hidden = mapped_folder(account, "private", visible_to_tools=False)
    other = MailAccountFactory(account_id="other", display_name="Other")
    other_inbox = mapped_folder(other, "inbox", FolderRole.INBOX)
    start = BASE_TIME + timedelta(days=60)

    earlier = None
    if thread:
        earlier = EmailFactory(
            folder=sent,
            direction=Direction.OUTGOING,
            message_id="<confirm-1@oak.example>",
            subject="Your order ZX-88120",
            body="Thank you for your order ZX-88120 of the oak table.",
            sender_address="anna@oak.example",
            sender_name="Anna Berg",
            received_at=start,
        )
    source = EmailFactory(
        folder=archive,
        subject="Dispatch note ZX-88120",
        body="Order ZX-88120, oak table, 1,250 euros: left the warehouse on 10 March, delivery by "
        "14 March; the driver calls on the morning of delivery.",
        sender_address="warehouse@oak.example",
        received_at=start + timedelta(days=1),
    )
    unrelated = EmailFactory(
        folder=inbox, subject="Team lunch", body="Shall we have lunch on Friday?", received_at=start
    )
    junk_mail = EmailFactory(
        folder=junk,
        subject="ZX-88120 oak table JUNK-4410",
        body="ZX-88120 oak table delivery JUNK-4410",
        received_at=start + timedelta(days=1),
    )
    hidden_mail = EmailFactory(
        folder=hidden,
        subject="ZX-88120 oak table HIDDEN-7720",
        body="ZX-88120 oak table delivery HIDDEN-7720",
        received_at=start + timedelta(days=1),
    )
    EmailFactory(
        folder=other_inbox,
        subject="ZX-88120 oak table OTHER-3390",
        body="ZX-88120 oak table delivery OTHER-3390",
        received_at=start + timedelta(days=1),
    )
    answered = EmailFactory(
        folder=inbox,
        message_id="<ask-2@quist.example>",
        in_reply_to="<confirm-1@oak.example>" if thread else "",
        references=["<confirm-1@oak.example>"] if thread else [],
        subject=ANSWERED_SUBJECT,
        body=ANSWERED_BODY,
        sender_address="petra@quist.example",
        sender_name="Petra Quist",
        received_at=start + timedelta(days=2),
    )
    if signatures:
        DraftingSignature.objects.create(account=account, language="en", text=SIGNATURE_EN)
        DraftingSignature.objects.create(account=account, language="de", text=SIGNATURE_DE)
    for position in range(examples):
        DraftingExample.objects.create(
            account=account,
            position=position,
            incoming=f"Example incoming {position}: " + "Is the chair in stock? " * 20,
            reply=f"Example reply {position}: " + "Yes, it is. " * 20,
        )
    return Shop(account, answered, source, junk_mail, hidden_mail, unrelated, earlier)


MARKERS = ("JUNK-4410", "HIDDEN-7720", "OTHER-3390")
