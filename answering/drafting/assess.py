"""Stage 8, assess: a verdict on the draft computed from its text, without any model.

Four checks (docs/operations/drafting.md, assess), each reason a stable code, a colon and
a sentence a reviewer can read:

- facts: every figure or amount, date, reference number, email address, URL and phone
  number in the draft appears in the answered mail, its thread tail, a gathered source or
  the account's own signature. Each one that does not is listed (unsupported_figure,
  unsupported_date, unsupported_reference, unsupported_email, unsupported_url,
  unsupported_phone). Matching is by normalized form: figures by their digits (2,300 and
  2.300 and 2300 are one figure; a figure also counts as found when it occurs as a digit run
  in the evidence), dates by day and month (a year is not compared), phone numbers by
  their last eight digits, addresses, URLs and references without regard to case;
- language: the draft's language, identified offline by py3langid with the signature
  removed, is the classified one (language_mismatch). A draft under MIN_LANGUAGE_LETTERS
  letters, or identified with a probability under MIN_LANGUAGE_CONFIDENCE, is not judged;
- signature: when the account keeps signatures, the one for the classified language ends
  the draft (signature_missing when the account has none for it, signature_mismatch when
  it does not end the draft or another language's is in it);
- shape: no subject line, no markdown heading, no second letter (a second salutation or
  closing, or a numbered alternative): the failure shapes of a model under context pressure.

Plus no_finish_reason when the endpoint did not say why it stopped. No reason: ready.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from answering.models import Verdict

STAGE = "assess"
MIN_LANGUAGE_LETTERS = 40
MIN_LANGUAGE_CONFIDENCE = 0.6

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            "january jan januar jänner janvier enero gennaio",
            "february feb februar février febrero febbraio",
            "march mar märz mars marzo",
            "april apr avril abril aprile",
            "may mai mayo maggio",
            "june jun juni juin junio giugno",
            "july jul juli juillet julio luglio",
            "august aug août agosto",
            "september sep sept septembre septiembre settembre",
            "october oct oktober okt octobre octubre ottobre",
            "november nov novembre noviembre",
            "december dec dezember dez décembre diciembre dicembre",
        ),
        start=1,
    )
    for name in names.split()
}
_MONTH = "(" + "|".join(sorted((re.escape(name) for name in _MONTHS), key=len, reverse=True)) + r")\.?"

_URL = re.compile(r"\b(?:https?://|www\.)[^\s<>\"')\]]+", re.IGNORECASE)
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_NUMERIC_DATE = re.compile(r"\b(\d{1,2})[./](\d{1,2})[./](\d{2,4})\b|\b(\d{1,2})\.(\d{1,2})\.(?!\d)")
_DAY_MONTH = re.compile(r"\b(\d{1,2})(?:\.|st|nd|rd|th)?\s+" + _MONTH + r"(?:\s+\d{4})?", re.IGNORECASE)
_MONTH_DAY = re.compile(r"\b" + _MONTH + r"\s+(\d{1,2})(?:st|nd|rd|th)?\b(?:,?\s+\d{4})?", re.IGNORECASE)
_PHONE = re.compile(r"(?<![\w+])(?:\+|\b0)\d[\d ()/.-]{5,}\d\b")
_REFERENCE = re.compile(r"#?\b(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:[-/][A-Za-z0-9]+)*\b")
_UNIT = re.compile(r"^\d+(?:st|nd|rd|th|am|pm|h|x|kg|km|cm|mm|m|g|l|ml|k|min|s|€|eur|chf|usd)$", re.I)
_FIGURE = re.compile(r"\d+(?:[.,'\u202f]\d{3})*(?:[.,]\d+)?")
_DIGITS = re.compile(r"\d+")

_SUBJECT_LINE = re.compile(
    r"^\s*\**\s*(subject|betreff|objet|asunto|oggetto|onderwerp|re|aw|wg|fwd?)\s*\**\s*:", re.I | re.M
)
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+\S|^\s*(\*\*|__)[^*_\n]+(\*\*|__)\s*$|^\s*(=){3,}\s*$", re.M)
_SALUTATION = re.compile(
    r"^\s*(dear|hello|hi|good (morning|afternoon|evening)|sehr geehrte[rs]?|liebe[rs]?|hallo|"
    r"guten tag|moin|bonjour|madame|monsieur|estimad[oa]s?|hola|gentile|buongiorno|beste)\b",
    re.I | re.M,
)
_CLOSING = re.compile(
    r"^\s*(kind regards|best regards|warm regards|regards|best wishes|sincerely|yours sincerely|"
    r"yours faithfully|mit freundlichen grü(ß|ss)en|freundliche grü(ß|ss)e|viele grü(ß|ss)e|"
    r"beste grü(ß|ss)e|liebe grü(ß|ss)e|cordialement|bien à vous|saludos|atentamente|"
    r"cordiali saluti|distinti saluti|met vriendelijke groet)\b",
    re.I | re.M,
)
_ALTERNATIVE = re.compile(
    r"^\s*[(*_#]*\s*(option|version|variant|alternative|variante|entwurf|draft)\s*(\d+|[a-c]|[ivx]+)\b",
    re.I | re.M,
)


@dataclass(frozen=True)
class Fact:
    kind: str  # figure, date, reference, email, url, phone
    text: str  # as written in the draft
    key: str  # its normalized form


@dataclass(frozen=True)
class Assessment:
    verdict: str  # a Verdict value
    reasons: tuple[str, ...]


# --- facts ----------------------------------------------------------------------------------


def _figure_key(text: str) -> str:
    cleaned = text.replace("'", "").replace("\u202f", "")
    match = re.fullmatch(r"(.*?)(?:[.,](\d{1,2}))?", cleaned)
    whole, decimals = (match.group(1), match.group(2)) if match else (cleaned, None)
    if decimals is not None and not re.search(r"[.,]", whole) and len(decimals) == 3:
        decimals = None
    digits = re.sub(r"\D", "", whole).lstrip("0") or "0"
    decimals = (decimals or "").rstrip("0")
    return digits + (f".{decimals}" if decimals else "")


def _date_key(day: str, month: str | int) -> str | None:
    month_number = month if isinstance(month, int) else _MONTHS.get(month.lower().rstrip("."))
    if month_number is None and isinstance(month, str) and month.isdigit():
        month_number = int(month)
    if month_number is None or not 1 <= int(day) <= 31 or not 1 <= int(month_number) <= 12:
        return None
    return f"{int(day)}-{int(month_number)}"


def extract_facts(text: str) -> list[Fact]:
    """The checkable facts of `text`, each consumed once, most specific kind first."""
    facts: list[Fact] = []
    remaining = text

    def take(pattern: re.Pattern[str], kind: str, key) -> None:
        nonlocal remaining

        def replace(match: re.Match[str]) -> str:
            found = key(match)
            if found is not None:
                facts.append(Fact(kind, match.group(0).strip().rstrip(".,;:!?"), found))
                return " " * len(match.group(0))
            return match.group(0)

        remaining = pattern.sub(replace, remaining)

    take(
        _URL,
        "url",
        lambda m: m.group(0).rstrip(".,;:!?").lower().removeprefix("https://").removeprefix("http://"),
    )
    take(_EMAIL, "email", lambda m: m.group(0).lower())
    take(_ISO_DATE, "date", lambda m: _date_key(m.group(3), m.group(2)))
    take(_NUMERIC_DATE, "date", lambda m: _date_key(m.group(1) or m.group(4), m.group(2) or m.group(5)))
    take(_DAY_MONTH, "date", lambda m: _date_key(m.group(1), m.group(2)))
    take(_MONTH_DAY, "date", lambda m: _date_key(m.group(2), m.group(1)))
    take(
        _PHONE,
        "phone",
        lambda m: digits[-8:] if len(digits := re.sub(r"\D", "", m.group(0))) >= 7 else None,
    )
    take(
        _REFERENCE,
        "reference",
        lambda m: None if _UNIT.match(m.group(0).lstrip("#")) else m.group(0).lstrip("#").upper(),
    )
    take(_FIGURE, "figure", lambda m: _figure_key(m.group(0)))
    return facts


@dataclass(frozen=True)
class Evidence:
    keys: frozenset[tuple[str, str]]  # (kind, key)
    digit_runs: frozenset[str]
    text: str  # lower-cased, for references written another way

    def supports(self, fact: Fact) -> bool:
        if (fact.kind, fact.key) in self.keys:
            return True
        if fact.kind == "figure":
            return fact.key.split(".")[0] in self.digit_runs
        if fact.kind in ("reference", "email", "url"):
            return fact.key.lower() in self.text
        return False


def evidence_from(texts: Iterable[str], received: Iterable[datetime | None] = ()) -> Evidence:
    """What the draft may draw facts from: the texts, and the dates their messages arrived."""
    keys: set[tuple[str, str]] = set()
    runs: set[str] = set()
    joined = []
    for text in texts:
        joined.append(text.lower())
        runs.update(run.lstrip("0") or "0" for run in _DIGITS.findall(text))
        for fact in extract_facts(text):
            keys.add((fact.kind, fact.key))
            if fact.kind == "phone":
                keys.add(("figure", fact.key))
    for moment in received:
        if moment is not None:
            keys.add(("date", f"{moment.day}-{moment.month}"))
            runs.add(str(moment.year))
    return Evidence(frozenset(keys), frozenset(runs), "\n".join(joined))


_FACT_SENTENCES = {
    "figure": "The figure {text} appears in no message the draft was built from.",
    "date": "The date {text} appears in no message the draft was built from.",
    "reference": "The reference {text} appears in no message the draft was built from.",
    "email": "The address {text} appears in no message the draft was built from.",
    "url": "The link {text} appears in no message the draft was built from.",
    "phone": "The phone number {text} appears in no message the draft was built from.",
}


# --- language -------------------------------------------------------------------------------

_identifier = None
_identifier_lock = threading.Lock()


def identify_language(text: str) -> tuple[str, float]:
    """(ISO 639-1 code, probability) by py3langid's bundled model; offline, loaded once."""
    global _identifier
    with _identifier_lock:
        if _identifier is None:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            _identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        identifier = _identifier
    language, probability = identifier.classify(text)
    return language, float(probability)


# --- the verdict ----------------------------------------------------------------------------


def _folded(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _without(body: str, signature: str) -> str:
    if signature and _folded(body).endswith(_folded(signature)):
        position = body.rfind(signature.strip().splitlines()[0].strip()) if signature.strip() else -1
        return body[:position] if position >= 0 else body
    return body


def assess(
    body: str,
    *,
    language: str,
    evidence: Evidence,
    signatures: Mapping[str, str],
    finish_reported: bool = True,
) -> Assessment:
    """The verdict on `body` (see the module docstring); `signatures` maps language -> text."""
    reasons: list[str] = []
    expected = signatures.get(language, "")
    letter = _without(body, expected)

    listed: set[tuple[str, str]] = set()
    for fact in extract_facts(letter):
        if (fact.kind, fact.key) in listed or evidence.supports(fact):
            continue
        listed.add((fact.kind, fact.key))
        reasons.append(f"unsupported_{fact.kind}: " + _FACT_SENTENCES[fact.kind].format(text=fact.text))

    letters = sum(character.isalpha() for character in letter)
    if letters >= MIN_LANGUAGE_LETTERS:
        identified, probability = identify_language(letter)
        if identified != language and probability >= MIN_LANGUAGE_CONFIDENCE:
            reasons.append(
                f"language_mismatch: The draft reads as {identified}, but the mail was classified as "
                f"{language}."
            )

    if signatures:
        if not expected:
            reasons.append(f"signature_missing: The account keeps no signature for {language}.")
        elif not _folded(body).endswith(_folded(expected)):
            reasons.append(f"signature_mismatch: The draft does not end with the {language} signature.")
        elif any(
            other != language and text.strip() and _folded(text) in _folded(letter)
            for other, text in signatures.items()
        ):
            reasons.append("signature_mismatch: The draft carries another language's signature.")

    if _SUBJECT_LINE.search(letter):
        reasons.append("subject_line: The draft contains a subject line.")
    if _HEADING.search(letter):
        reasons.append("markdown_heading: The draft contains a markdown heading.")
    if (
        len(_SALUTATION.findall(letter)) > 1
        or len(_CLOSING.findall(letter)) > 1
        or _ALTERNATIVE.search(letter)
    ):
        reasons.append("second_letter: The draft holds more than one letter or an alternative version.")
    if not finish_reported:
        reasons.append("no_finish_reason: The endpoint did not say whether the reply was complete.")

    verdict = Verdict.READY if not reasons else Verdict.NEEDS_REVIEW
    return Assessment(verdict=verdict.value, reasons=tuple(reasons))


def reason_codes(reasons: Iterable[str]) -> list[str]:
    """The stable codes of `reasons` (what logs and counts may carry)."""
    return [reason.split(":", 1)[0] for reason in reasons]
