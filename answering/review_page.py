"""What the draft review page shows besides the draft: where the reply goes, what it was built
from, and the draft's text with each flagged fact marked.

Read-only helpers for answering.admin. Everything here that came from mail (names,
addresses, subjects, the draft's text) is escaped where it is turned into HTML; the
offsets of a finding apply to the stored body, and one that does not fit it is left
unmarked rather than guessed at.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.urls import reverse
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from answering.drafting.compose import reply_recipients
from answering.models import Draft, ReferenceChunk
from mailbox.models import Email, Participant

THREAD, SOURCE, REFERENCE = "thread", "source", "reference"
REFERENCE_PREFIX = "reference:"
ANSWERED_ANCHOR = "#answered-mail"


@dataclass(frozen=True)
class Person:
    name: str
    address: str


@dataclass(frozen=True)
class Recipients:
    """Where the reply goes, and what a reviewer should notice about it."""

    to: tuple[Person, ...]  # the reply's To (the answered mail's Reply-To, else its sender)
    reply_to: tuple[Person, ...]  # the answered mail's Reply-To when it names someone else
    not_copied: tuple[Person, ...]  # the answered mail's Cc: the reply copies no one
    sender: Person
    elsewhere: bool  # the reply goes to an address other than the sender's


def recipients_of(email: Email, participants: Mapping[str, Sequence[Participant]]) -> Recipients:
    """The reply's recipients for `email`; `participants` maps a role to the answered mail's people."""
    sender = Person(email.sender_name, email.sender_address)
    to = tuple(Person(address.display_name, address.addr_spec) for address in reply_recipients(email))
    own = email.sender_address.strip().lower()
    reply_to = tuple(
        Person(p.display_name, p.address)
        for p in participants.get("reply_to", ())
        if p.address and p.address.strip().lower() != own
    )
    elsewhere = not to or any(person.address.strip().lower() != own for person in to)
    not_copied = tuple(Person(p.display_name, p.address) for p in participants.get("cc", ()) if p.address)
    return Recipients(to, reply_to, not_copied, sender, elsewhere)


@dataclass(frozen=True)
class Source:
    """One thing the draft was built from, numbered as the page lists it."""

    number: int
    ref: str  # an email id, or "reference:<chunk id>"
    role: str  # THREAD, SOURCE or REFERENCE
    url: str  # its admin page; "" when the row is gone
    sender: str = ""
    subject: str = ""
    received_at: datetime | None = None
    title: str = ""  # a reference chunk's document title


def sources_of(draft: Draft) -> list[Source]:
    """The draft's thread messages and sources (one query), then its reference chunks (one query).

    An id whose row is gone (expunged, erased) is still listed, without a link.
    """
    ordered: dict[str, str] = {}
    for role, ids in ((THREAD, draft.thread_ids or []), (SOURCE, draft.source_ids or [])):
        for value in ids:
            ordered.setdefault(str(value), role)
    rows = {
        str(row.pk): row
        for row in Email.objects.filter(pk__in=list(ordered)).only(
            "id", "subject", "sender_name", "sender_address", "received_at"
        )
    }
    found: list[Source] = []
    for ref, role in ordered.items():
        row = rows.get(ref)
        if row is None:
            found.append(Source(len(found) + 1, ref, role, ""))
            continue
        sender = (
            f"{row.sender_name} <{row.sender_address}>"
            if row.sender_name and row.sender_address
            else row.sender_name or row.sender_address
        )
        url = reverse("admin:mailbox_email_change", args=[row.pk])
        found.append(Source(len(found) + 1, ref, role, url, sender, row.subject, row.received_at))
    chunk_ids = [int(value) for value in draft.reference_ids or []]
    chunks = {
        chunk.pk: chunk
        for chunk in ReferenceChunk.objects.filter(pk__in=chunk_ids)
        .select_related("document")
        .only("id", "position", "document__id", "document__title")
    }
    for chunk_id in dict.fromkeys(chunk_ids):
        ref = f"{REFERENCE_PREFIX}{chunk_id}"
        chunk = chunks.get(chunk_id)
        if chunk is None:
            found.append(Source(len(found) + 1, ref, REFERENCE, ""))
            continue
        url = reverse("admin:answering_referencedocument_change", args=[chunk.document.pk])
        found.append(
            Source(
                len(found) + 1,
                ref,
                REFERENCE,
                url,
                title=f"{chunk.document.title} (part {chunk.position + 1})",
            )
        )
    return found


# --- the draft's text with its findings marked ----------------------------------------------


def _valid(finding: Mapping[str, object], length: int) -> tuple[int, int] | None:
    start, end = finding.get("start"), finding.get("end")
    if (
        not isinstance(start, int)
        or not isinstance(end, int)
        or isinstance(start, bool)
        or isinstance(end, bool)
    ):
        return None
    return (start, end) if 0 <= start < end <= length else None


def _links(origins: Iterable[object], sources: Mapping[str, Source], answered: str) -> SafeString:
    links = []
    for origin in dict.fromkeys(str(value) for value in origins):
        if origin == answered:
            links.append(format_html('<a class="finding-source" href="{}">the mail</a>', ANSWERED_ANCHOR))
            continue
        source = sources.get(origin)
        if source is None:
            continue
        label = f"[{source.number}]"
        if source.url:
            links.append(format_html('<a class="finding-source" href="{}">{}</a>', source.url, label))
        else:
            links.append(format_html('<span class="finding-source">{}</span>', label))
    if not links:
        return format_html('<sup class="finding-origins finding-unsourced">{}</sup>', "no source")
    return format_html('<sup class="finding-origins">{}</sup>', mark_safe(" ".join(links)))  # noqa: S308


def marked_body(draft: Draft, sources: Sequence[Source]) -> SafeString:
    """The stored body as HTML, escaped, each flagged fact in a <mark> followed by links to its origins.

    Findings on the same span (an IBAN both unverified and another correspondent's) are
    one mark naming both codes. A finding overlapping an earlier span, or whose offsets do
    not fit the body, is left unmarked.
    """
    body = draft.body or ""
    by_ref = {source.ref: source for source in sources}
    answered = str(draft.email_id)
    spans: dict[tuple[int, int], tuple[list[str], list[object]]] = {}
    for finding in draft.findings or []:
        if not isinstance(finding, dict):
            continue
        span = _valid(finding, len(body))
        if span is None:
            continue
        codes, origins = spans.setdefault(span, ([], []))
        code = str(finding.get("code", ""))
        if code not in codes:
            codes.append(code)
        origins.extend(finding.get("origins") or [])
    parts: list[str] = []
    position = 0
    for (start, end), (codes, origins) in sorted(spans.items(), key=lambda item: (item[0][0], -item[0][1])):
        if start < position:
            continue
        parts.append(escape(body[position:start]))
        parts.append(
            format_html(
                '<mark class="finding" data-code="{}" title="{}">{}</mark>{}',
                " ".join(codes),
                ", ".join(codes),
                body[start:end],
                _links(origins, by_ref, answered),
            )
        )
        position = end
    parts.append(escape(body[position:]))
    return mark_safe("".join(parts))  # noqa: S308  (every part above is escaped)


def code_summary(reasons: Iterable[str]) -> str:
    """Reason codes in order, each once, with a count where it repeats: "unsupported_amount x2, ..."."""
    counts = Counter(str(reason).split(":", 1)[0] for reason in reasons)
    return ", ".join(code if n == 1 else f"{code} \u00d7{n}" for code, n in counts.items())
