"""Sensitive-content scanning: replace card numbers, IBANs, phone numbers and national IDs.

Off unless MAILFATHOM_SENSITIVE_SCAN_ENABLED. What a read returns of what an author wrote
passes through here (nothing stored is rewritten); each detection becomes
`[redacted:<category>]`. A body is scanned up to MAILFATHOM_SENSITIVE_SCAN_CEILING characters
and the rest withheld, never served unscanned; a detector that raises fails the read (82001).
Detections are validated (Luhn, mod 97, python-stdnum, phonenumbers at VALID, region US).
Not found on purpose: national-format phone numbers outside NANP (a German "030 1234567"
without +49) and bare nine-digit SSNs (too many false alarms).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from html import escape
from html.parser import HTMLParser
from typing import Any

import phonenumbers
from django.conf import settings
from stdnum import iban, luhn
from stdnum.de import idnr
from stdnum.es import dni, nie
from stdnum.us import ssn

from mailfathom.core.errors import Code, MailFathomError

CARD = "card"
IBAN = "iban"
PHONE = "phone"
NATIONAL_ID = "nationalId"
SCAN_FAILED = Code.SCAN_FAILED
PHONE_DEFAULT_REGION = "US"
# When a body is cut at the ceiling, this many characters before the cut are withheld too,
# so an identifier straddling the cut is never served as an undetectable fragment. It is
# longer than anything a detector finds (an IBAN with spaces is at most 42 characters).
CEILING_MARGIN = 64

Span = tuple[int, int]
Detector = Callable[[str], Iterable[Span]]

_CARD = re.compile(r"(?<!\d)\d(?:[ -]?\d){12,18}(?!\d)")
_CARD_GROUP = re.compile(r"\d+")
_IBAN_START = re.compile(r"(?<![A-Za-z0-9])(?=[A-Za-z]{2}\d{2})")
_IBAN_BODY = re.compile(r"[A-Za-z]{2}\d{2}(?: ?[A-Za-z0-9]){11,30}")
_SSN = re.compile(r"(?<![\d-])\d{3}([- ])\d{2}\1\d{4}(?![\d-])")
_IDNR = re.compile(r"(?<!\d)(?<!\d )\d{2} ?\d{3} ?\d{3} ?\d{3}(?![\d])")
_DNI_NIE = re.compile(r"(?<![A-Za-z0-9])[XYZxyz]?-?\d{7,8}-?[A-Za-z](?![A-Za-z0-9])")


def _cards(text: str) -> Iterator[Span]:
    """Yield digit runs of 13-19 digits passing Luhn; inside a longer grouped run, the longest."""
    for match in _CARD.finditer(text):
        if luhn.is_valid(re.sub(r"[ -]", "", match.group())):
            yield match.span()
            continue
        # "ref 12 4111 1111 1111 1111": try runs of whole groups.
        groups = [
            (g.start() + match.start(), g.end() + match.start()) for g in _CARD_GROUP.finditer(match.group())
        ]
        first = 0
        while first < len(groups):
            found = None
            for last in range(len(groups) - 1, first - 1, -1):
                digits = "".join(text[s:e] for s, e in groups[first : last + 1])
                if 13 <= len(digits) <= 19 and luhn.is_valid(digits):
                    found = last
                    break
            if found is None:
                first += 1
                continue
            yield groups[first][0], groups[found][1]
            first = found + 1


def _ibans(text: str) -> Iterator[Span]:
    """Yield the longest valid IBAN starting at each plausible start, skipping inside a find."""
    covered = 0
    for start_match in _IBAN_START.finditer(text):
        start = start_match.start()
        if start < covered:
            continue
        body = _IBAN_BODY.match(text, start)
        if body is None:
            continue
        candidate = body.group()
        for end in range(len(candidate), 14, -1):
            piece = candidate[:end]
            if piece.endswith(" "):
                continue
            if iban.is_valid(piece):
                covered = start + end
                yield start, covered
                break


def _phones(text: str) -> Iterator[Span]:
    # max_tries: by default the matcher gives up after 65535 candidates and says nothing;
    # every candidate starts at a distinct character, so this bound can never stop it early.
    matcher = phonenumbers.PhoneNumberMatcher(
        text, PHONE_DEFAULT_REGION, leniency=phonenumbers.Leniency.VALID, max_tries=len(text) + 1
    )
    for match in matcher:
        yield match.start, match.end


def _national_ids(text: str) -> Iterator[Span]:
    for match in _SSN.finditer(text):
        if ssn.is_valid(match.group()):
            yield match.span()
    for match in _IDNR.finditer(text):
        if idnr.is_valid(match.group()):
            yield match.span()
    for match in _DNI_NIE.finditer(text):
        value = match.group()
        if dni.is_valid(value) or nie.is_valid(value):
            yield match.span()


# The seam tests replace. Order breaks ties between equal spans: the first category wins.
DETECTORS: tuple[tuple[str, Detector], ...] = (
    (CARD, _cards),
    (IBAN, _ibans),
    (NATIONAL_ID, _national_ids),
    (PHONE, _phones),
)


def marker(category: str) -> str:
    return f"[redacted:{category}]"


def enabled() -> bool:
    return bool(settings.MAILFATHOM.sensitive_scan_enabled)


def ceiling() -> int:
    return int(settings.MAILFATHOM.sensitive_scan_ceiling)


def detections(text: str) -> list[tuple[int, int, str]]:
    """Return merged, ordered (start, end, category) spans; overlapping finds become one.

    Raises 82001 when any detector raises, so a caller never serves text a detector
    could not look at.
    """
    found: list[tuple[int, int, int, str]] = []
    for rank, (category, detector) in enumerate(DETECTORS):
        try:
            found.extend((start, end, rank, category) for start, end in detector(text) if end > start)
        except Exception as error:
            raise MailFathomError(
                SCAN_FAILED, "Sensitive-content scanning failed, so no content was returned."
            ) from error
    found.sort(key=lambda item: (item[0], item[0] - item[1], item[2]))
    merged: list[tuple[int, int, str]] = []
    for start, end, _rank, category in found:
        if merged and start < merged[-1][1]:
            previous = merged[-1]
            merged[-1] = (previous[0], max(previous[1], end), previous[2])
        else:
            merged.append((start, end, category))
    return merged


def redact(text: str) -> str:
    """Return text with every detection replaced; for short fields (subject, display names)."""
    return _redact_segments([text], cut=None)[0] if text else text


@dataclass(frozen=True)
class Scanned:
    text: str
    withheld: bool  # the ceiling cut something off


def scan_body(text: str) -> Scanned:
    """Redact a plain-text body, scanning at most the ceiling; the rest is withheld."""
    limit = ceiling()
    if len(text) <= limit:
        return Scanned(redact(text), withheld=False)
    (kept,) = _redact_segments([text[:limit]], cut=limit - CEILING_MARGIN) or [""]
    return Scanned(kept, withheld=True)


def scan_html(markup: str) -> Scanned:
    """Redact sanitized HTML: its text as one run across tags, each attribute value alone.

    The ceiling counts characters of markup. Text split across elements
    (`<b>4111</b> 1111 ...`) is found because detection runs over the joined text.
    """
    limit = ceiling()
    withheld = len(markup) > limit
    window = markup[:limit] if withheld else markup
    if withheld and window.rfind("<") > window.rfind(">"):
        window = window[: window.rfind("<")]  # an opening tag the cut left incomplete
    parser = _Markup()
    parser.feed(window)
    parser.close()
    texts = [item[1] for item in parser.items if item[0] == "text"]
    cut = max(0, sum(len(t) for t in texts) - CEILING_MARGIN) if withheld else None
    redacted = iter(_redact_segments(texts, cut=cut))
    out: list[str] = []
    for item in parser.items:
        if item[0] == "text":
            piece = next(redacted, None)
            if piece is None:
                break  # past the withheld cut: nothing after it is served
            out.append(escape(piece, quote=False))
        elif item[0] == "start":
            _kind, tag, attrs, closed = item
            rendered = "".join(
                f" {name}" if value is None else f' {name}="{escape(redact(value), quote=True)}"'
                for name, value in attrs
            )
            out.append(f"<{tag}{rendered}{' /' if closed else ''}>")
        else:
            out.append(f"</{item[1]}>")
    return Scanned("".join(out), withheld=withheld)


def _redact_segments(segments: list[str], cut: int | None) -> list[str]:
    """Redact text that runs on across `segments`; keep only the first `cut` characters.

    A detection covering the cut moves the cut to its end, so a marker is never split.
    The marker goes into the segment where the detection starts; later segments it
    reaches lose those characters.
    """
    joined = "".join(segments)
    spans = detections(joined)
    if cut is not None:
        for start, end, _category in spans:
            if start < cut < end:
                cut = end
        spans = [span for span in spans if span[1] <= cut]
    result: list[str] = []
    offset = 0
    for segment in segments:
        low, high = offset, offset + len(segment)
        offset = high
        if cut is not None and low >= cut:
            break
        if cut is not None:
            high = min(high, cut)
        pieces: list[str] = []
        position = low
        for start, end, category in spans:
            if end <= low or start >= high:
                continue
            if start > position:
                pieces.append(joined[position:start])
            if start >= low:
                pieces.append(marker(category))
            position = max(position, min(end, high))
        pieces.append(joined[position:high])
        result.append("".join(pieces))
    return result


class _Markup(HTMLParser):
    """Tokenize nh3's output into start tags, end tags and decoded text; comments are dropped."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.items: list[tuple[Any, ...]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.items.append(("start", tag, attrs, False))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.items.append(("start", tag, attrs, True))

    def handle_endtag(self, tag: str) -> None:
        self.items.append(("end", tag))

    def handle_data(self, data: str) -> None:
        self.items.append(("text", data))
