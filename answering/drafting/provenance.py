"""Where each fact of a draft came from, and whether it may go to the draft's recipients.

Origins (the answered mail, its thread tail, the sources, reference documents, signatures)
are read again by id, so a re-assessment after an edit judges exactly what the first did. A
fact found in no origin is unsupported; a found one is flagged other_correspondent when it
is identifying and came only from mail with parties the reply does not go to, and
unverified_payment_detail when an IBAN, BIC or payment link came only from incoming mail
(a sender name is easily forged). A mailing-list post is judged like any other mail: its
List-Id is written by whoever sent it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q

from accounts.models import MailAccount
from accounts.services.scope import resolve_scope
from answering.drafting.correspondents import Correspondence, correspondence_of
from answering.drafting.facts import KIND_NAMES, Evidence, Fact, evidence_from
from answering.drafting.mail import mail_text, readable_folder_ids
from answering.models import ReferenceChunk
from mailbox.models import Direction, Email
from mailbox.services.lexical_search import rank_lexical

ANSWERED, THREAD, SOURCE, REFERENCE, SIGNATURE = "answered", "thread", "source", "reference", "signature"
# What of a source email counts as evidence: more than the extract the model was shown,
# so a fact from another part of the same email is not mistaken for an invented one.
SOURCE_EVIDENCE_CHARACTERS = 20_000
LOCATE_DEPTH = 5
MAX_LOCATED_FACTS = 12

_PAYMENT_CHANGE = re.compile(
    r"\b(new|updated|changed|different|neue[nrs]?|geänderte[nrs]?|nouvelles?|nuevas?)\s+"
    r"(bank(ing)?|account|payment|iban|konto|bankverbindung|kontoverbindung|zahlungs\w*|"
    r"coordonnées|datos)\b(\s+(details|information|instructions|number|account))?"
    r"|\b(bank|payment|account)\s+details\s+(have|has)\s+changed\b"
    r"|\bBankverbindung\s+(hat\s+sich\s+)?geändert\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Origin:
    """One thing a draft was built from, with its facts and who it was exchanged with."""

    role: str  # ANSWERED, THREAD, SOURCE, REFERENCE or SIGNATURE
    ref: str  # an email id, "reference:<chunk id>", or "" for a signature
    direction: str  # Direction value; "" for references and signatures
    parties: frozenset[str]  # external parties (correspondents.party_of)
    label: str
    evidence: Evidence

    @property
    def is_firms_own(self) -> bool:
        """Reference documents, signatures and mail that never left the firm."""
        return self.role in (REFERENCE, SIGNATURE) or not self.parties

    @property
    def verifies_payment(self) -> bool:
        return self.role in (REFERENCE, SIGNATURE) or self.direction == Direction.OUTGOING


def plain_origin(texts: Iterable[str], received: Iterable[datetime | None] = ()) -> Origin:
    """The firm's own text as one origin (tests, and evidence with no correspondent)."""
    return Origin(REFERENCE, "", "", frozenset(), "", evidence_from(texts, received))


def _email_origin(role: str, email: Email, text: str, found: Correspondence) -> Origin:
    return Origin(
        role,
        str(email.pk),
        email.direction,
        found.parties,
        found.label,
        evidence_from([text], [email.received_at]),
    )


def origins_for(
    email: Email,
    *,
    own: frozenset[str],
    thread_ids: Sequence[str],
    source_ids: Sequence[str],
    reference_ids: Sequence[int],
    max_answered: int,
    max_thread: int,
) -> list[Origin]:
    """Every origin of a draft of `email`, read from the database by id (see the module docstring).

    An id whose row is gone (expunged, erased) is left out: what is left may support less.
    """
    thread, sources = [_uuid(value) for value in thread_ids], [_uuid(value) for value in source_ids]
    rows = Email.objects.in_bulk([email.pk, *thread, *sources])
    held = correspondence_of(rows.values(), own)
    answered = mail_text(email, max_answered)
    origins = [
        _email_origin(
            ANSWERED, email, _with_files(email, f"{answered.sender}\n{answered.raw}"), held[str(email.pk)]
        )
    ]
    for role, ids, limit in ((THREAD, thread, max_thread), (SOURCE, sources, SOURCE_EVIDENCE_CHARACTERS)):
        for email_id in ids:
            row = rows.get(email_id)
            if row is not None:
                mail = mail_text(row, limit)
                text = _with_files(row, f"{mail.sender}\n{mail.raw}")
                origins.append(_email_origin(role, row, text, held[str(row.pk)]))
    for chunk in ReferenceChunk.objects.filter(pk__in=list(reference_ids)).select_related("document"):
        origins.append(
            Origin(
                REFERENCE,
                f"reference:{chunk.pk}",
                "",
                frozenset(),
                chunk.document.title,
                evidence_from([chunk.document.title, chunk.text], [chunk.document.uploaded_at]),
            )
        )
    account: MailAccount = email.account
    for text in account.drafting_signatures.values_list("text", flat=True):
        origins.append(Origin(SIGNATURE, "", "", frozenset(), "", evidence_from([text])))
    return origins


def _with_files(email: Email, text: str) -> str:
    """`text` and what was read from the email's attachments: a fact in an attached file comes
    from that email, and from whoever that email was exchanged with, like one in its body."""
    files = email.attachment_text[:SOURCE_EVIDENCE_CHARACTERS]
    return f"{text}\n{files}" if files else text


def _uuid(value: object) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


# --- judging one fact -----------------------------------------------------------------------


@dataclass(frozen=True)
class Judgement:
    """Where a found fact came from, and what (if anything) is wrong with sending it."""

    origins: tuple[str, ...]  # refs of the origins that hold the fact
    flags: tuple[tuple[str, str], ...] = ()  # (reason code, sentence); empty when it may go


def _sent_to_many(holding: Sequence[Origin]) -> bool:
    """Whether the firm's outgoing mail gave this fact to two or more parties: its own data."""
    parties = {
        party for origin in holding if origin.direction == Direction.OUTGOING for party in origin.parties
    }
    return len(parties) >= 2


def _a_quantity(fact: Fact) -> bool:
    """A bare figure of three or four digits (a count, a quantity, a page): seldom anyone's data.

    Longer digit runs (an account or customer number written without its shape) stay
    identifying; amounts carry their currency and are another kind.
    """
    return fact.kind == "figure" and len(fact.key.split(".")[0]) < 5


def judge(fact: Fact, origins: Sequence[Origin], recipients: frozenset[str]) -> Judgement | None:
    """None when no origin holds `fact` (it is unsupported); else where it came from and its flags."""
    holding = [origin for origin in origins if origin.evidence.supports(fact)]
    if not holding:
        return None
    refs = tuple(origin.ref for origin in holding if origin.ref)
    kind = KIND_NAMES[fact.kind]
    flags = []
    if fact.is_payment and not any(origin.verifies_payment for origin in holding):
        flags.append(
            (
                "unverified_payment_detail",
                f"The {kind} {fact.text} is found only in incoming mail, never in the firm's own "
                "outgoing mail or reference documents: confirm it through a channel you already know "
                "before sending.",
            )
        )
    # A reply that goes only to the firm's own side (a colleague) keeps what it holds inside the
    # firm: another customer's facts are not being disclosed to anyone outside it.
    if fact.is_identifying and recipients and not _a_quantity(fact):
        allowed = any(
            origin.role == ANSWERED or origin.is_firms_own or origin.parties & recipients
            for origin in holding
        )
        if not allowed and not _sent_to_many(holding):
            labels = ", ".join(sorted({o.label for o in holding if o.label})) or "another correspondent"
            flags.append(
                (
                    "other_correspondent",
                    f"The {kind} {fact.text} comes only from mail with {labels}, who will not receive "
                    "this reply.",
                )
            )
    return Judgement(refs, tuple(flags))


def locate_in_mailbox(email: Email, own: frozenset[str]) -> Callable[[Fact], list[Origin]]:
    """A lookup of facts the draft's origins lack, in the rest of the mailbox tools may read.

    A fact the model was not given may still be somebody's: copied from an earlier prompt,
    or a source crowded out of this one. Each lookup is one lexical query over the
    account's readable folders (junk left out), its best LOCATE_DEPTH hits verified
    against the fact's normal form; at most MAX_LOCATED_FACTS lookups per draft.
    """
    scope = resolve_scope([email.account.account_id])
    candidates = Email.objects.readable(scope, readable_folder_ids(email.account.account_id)).exclude(
        pk=email.pk
    )
    budget = [MAX_LOCATED_FACTS]

    def locate(fact: Fact) -> list[Origin]:
        if budget[0] <= 0:
            return []
        budget[0] -= 1
        ids: Iterable[uuid.UUID]
        if fact.kind == "email":
            # An address is whose mail it heads: looked up where it is written, not ranked as words.
            ids = (
                candidates.filter(
                    Q(sender_address__iexact=fact.key) | Q(participants__address__iexact=fact.key)
                )
                .order_by("-received_at")
                .values_list("pk", flat=True)
                .distinct()[:LOCATE_DEPTH]
            )
        else:
            ids = [uuid.UUID(hit.email_id) for hit in rank_lexical(candidates, fact.text, LOCATE_DEPTH)]
        rows = Email.objects.in_bulk(list(ids))
        held = correspondence_of(rows.values(), own)
        found = []
        for row in rows.values():
            mail = mail_text(row, SOURCE_EVIDENCE_CHARACTERS)
            origin = _email_origin(SOURCE, row, f"{mail.sender}\n{mail.raw}", held[str(row.pk)])
            if origin.evidence.supports(fact):
                found.append(origin)
        return found

    return locate


def payment_change(letter: str) -> re.Match[str] | None:
    """The first place where `letter` speaks of changed payment details, if it does."""
    return _PAYMENT_CHANGE.search(letter)
