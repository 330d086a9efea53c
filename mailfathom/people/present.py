"""How a search's and an answer's results are shown: marked extracts, links, refusals.

Mail text is escaped before anything is marked: an extract's `**` pairs (the matched words,
docs/search.md) become <mark>, and nothing else the sender wrote becomes markup.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.urls import reverse
from django.utils.html import escape, linebreaks
from django.utils.safestring import SafeString, mark_safe

from answering.services.question import AnswerResult, Citation
from mailbox.services.search import SearchResult
from mailfathom.core.errors import UNKNOWN_ACCOUNT, MailFathomError, published
from mailfathom.people.forms import LABELS

# The admin email page (mailbox.admin_emails) a result links to, for a person allowed in.
EMAIL_PAGE = "admin:mailbox_email_change"
VIEW_EMAIL = "mailbox.view_email"
_MARKED = re.compile(r"\*\*(.+?)\*\*", re.DOTALL)
_SOURCE_MARKERS = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")
# Refusals whose sentence names no argument, by the argument they are about.
_ARGUMENT_OF_CODE = {int(UNKNOWN_ACCOUNT): "accounts"}
_ARGUMENT = re.compile(r"\b(" + "|".join(LABELS) + r")\b")


def marked(extract: str) -> SafeString:
    """`extract` escaped, its matched words between <mark> tags."""
    return mark_safe(_MARKED.sub(r"<mark>\1</mark>", escape(extract)))  # noqa: S308 (escaped above)


Link = Callable[[str], str | None]


def email_link(user: Any) -> Link:
    """A function from a storedEmailId to its admin page, or to None for a person who may not
    open admin's email pages (not staff, or without view permission on emails)."""
    allowed = bool(user.is_active and user.is_staff and user.has_perm(VIEW_EMAIL))

    def link(stored_email_id: str) -> str | None:
        return reverse(EMAIL_PAGE, args=[stored_email_id]) if allowed else None

    return link


@dataclass(frozen=True)
class Match:
    """One search match as a row: what search_emails returned, and the link for this person."""

    stored_email_id: str
    subject: str
    sender: str
    received_at: datetime
    account: str
    extracts: list[SafeString]
    href: str | None


def matches(result: SearchResult, link: Link) -> list[Match]:
    rows = []
    for match in result.matches:
        summary = match.summary
        sender = summary.sender_address
        if summary.sender_display_name:
            sender = f"{summary.sender_display_name} <{summary.sender_address}>"
        rows.append(
            Match(
                stored_email_id=summary.stored_email_id,
                subject=summary.subject,
                sender=sender,
                received_at=summary.received_at,
                account=summary.account_display_name,
                extracts=[marked(snippet) for snippet in match.snippets],
                href=link(summary.stored_email_id),
            )
        )
    return rows


@dataclass(frozen=True)
class Source:
    """A cited email as the answer lists it; `number` is its sourceNumber where it is relied on."""

    stored_email_id: str
    subject: str
    received_at: datetime
    account: str
    folder: str
    href: str | None
    number: int | None = None


def sources(citations: list[Citation], link: Link) -> list[Source]:
    return [
        Source(
            stored_email_id=citation.stored_email_id,
            subject=citation.subject,
            received_at=citation.received_at,
            account=citation.account_display_name,
            folder=citation.folder_alias,
            href=link(citation.stored_email_id),
            number=getattr(citation, "source_number", None),
        )
        for citation in citations
    ]


def answer_sources(answer: AnswerResult, link: Link) -> dict[str, Any]:
    """The answer's text, what it relies on (reliedOn) and every email its searches read
    (citations)."""
    relied_on = sources(list(answer.relied_on), link)
    return {
        "answer_html": answer_html(answer.answer, {source.number for source in relied_on}),
        "relied_on": relied_on,
        "read": sources(answer.citations, link),
    }


def answer_html(answer: str, numbers: set[int | None]) -> SafeString:
    """The answer escaped, in paragraphs; each [n] it relies on links to that source below."""

    def linked(found: re.Match[str]) -> str:
        parts = []
        for part in found.group(1).split(","):
            number = int(part)
            shown = part.strip()
            parts.append(f'<a href="#source-{number}">{shown}</a>' if number in numbers else shown)
        return "[" + ", ".join(parts) + "]"

    return mark_safe(_SOURCE_MARKERS.sub(linked, linebreaks(answer, autoescape=True)))  # noqa: S308 (escaped by linebreaks)


@dataclass(frozen=True)
class Refusal:
    """A use case's refusal as the page shows it: the code, the sentence, the field it names."""

    code: int
    sentence: str
    field: str | None

    @classmethod
    def of(cls, error: MailFathomError) -> Refusal:
        shown = published(error)
        named = shown.argument or _ARGUMENT_OF_CODE.get(shown.code) or _first_argument(shown.message)
        return cls(code=shown.code, sentence=shown.message, field=LABELS.get(named or ""))


def _first_argument(sentence: str) -> str | None:
    found = _ARGUMENT.search(sentence)
    return found.group(1) if found else None
