"""The checkable facts of a text, each in a normal form that compares whole, and what a text supports.

A draft's facts are compared with the facts of the mail it was built from, and each kind
(url, email, iban, bic, phone, amount, date, reference, figure) is normalised so that a near
miss is a miss: http is not https, an amount in another currency is another amount, an IBAN
failing mod 97 never matches a valid one. Extraction consumes each match once, most specific
kind first, and keeps offsets so the review page can mark a fact where it stands.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import urlsplit

import phonenumbers
from stdnum import iban as stdnum_iban
from stdnum.exceptions import ValidationError

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
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?:[ \u00a0]?[A-Z0-9]){11,30}\b")
_BIC = re.compile(
    r"\b(?:BIC|SWIFT|BIC/SWIFT|SWIFT/BIC)(?:[- ]?code)?\s*[:.]?\s*([A-Z]{6}[A-Z0-9]{2}(?:[A-Z0-9]{3})?)\b",
    re.I,
)
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_NUMERIC_DATE = re.compile(r"\b(\d{1,2})[./](\d{1,2})[./](\d{2,4})\b|\b(\d{1,2})\.(\d{1,2})\.(?!\d)")
_DAY_MONTH = re.compile(r"\b(\d{1,2})(?:\.|st|nd|rd|th)?\s+" + _MONTH + r"(?:\s+\d{4})?", re.IGNORECASE)
_MONTH_DAY = re.compile(r"\b" + _MONTH + r"\s+(\d{1,2})(?:st|nd|rd|th)?\b(?:,?\s+\d{4})?", re.IGNORECASE)
_PHONE = re.compile(r"(?<![\w+])(?:\+|\b00|\b0)\d[\d ()/.-]{5,}\d\b")
_NUMBER = r"\d+(?:[.,'\u202f]\d{3})*(?:[.,]\d+)?"
_CURRENCIES = {
    "€": "EUR", "eur": "EUR", "euro": "EUR", "euros": "EUR",
    "$": "USD", "usd": "USD", "dollar": "USD", "dollars": "USD", "us$": "USD",
    "£": "GBP", "gbp": "GBP", "pound": "GBP", "pounds": "GBP",
    "chf": "CHF", "fr.": "CHF", "franken": "CHF", "francs": "CHF",
}  # fmt: skip
_SYMBOL = r"(€|US\$|\$|£|EUR|USD|GBP|CHF|Fr\.)"
_WORD = r"(€|\$|£|EUR|USD|GBP|CHF|euros?|Euro|dollars?|pounds?|Franken|francs)"
_AMOUNT_BEFORE = re.compile(r"(?<![\w$€£])" + _SYMBOL + r"\s?(" + _NUMBER + r")(?:,-|\.-)?", re.IGNORECASE)
_AMOUNT_AFTER = re.compile(r"\b(" + _NUMBER + r")(?:,-|\.-)?\s?" + _WORD + r"(?![\w])", re.IGNORECASE)
_REFERENCE = re.compile(r"#?\b(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:[-/][A-Za-z0-9]+)*\b")
_UNIT = re.compile(r"^\d+(?:st|nd|rd|th|am|pm|h|x|kg|km|cm|mm|m|g|l|ml|k|min|s|€|eur|chf|usd)$", re.I)
_FIGURE = re.compile(_NUMBER)
_DIGITS = re.compile(r"\d+")
_AROUND_A_WORD = ("(?<![a-z0-9])", "(?![a-z0-9])")

# Kinds whose values identify a person, an account or a deal: where they came from matters.
IDENTIFYING = frozenset({"iban", "bic", "phone", "email", "url", "reference", "amount", "figure"})
PAYMENT = frozenset({"iban", "bic"})
_PAYMENT_URL = re.compile(r"pay|checkout|billing|invoice|rechnung|bank|stripe|sepa|zahlung", re.I)

KIND_NAMES = {
    "figure": "figure",
    "amount": "amount",
    "date": "date",
    "reference": "reference",
    "email": "address",
    "url": "link",
    "phone": "phone number",
    "iban": "IBAN",
    "bic": "BIC",
}


@dataclass(frozen=True)
class Fact:
    kind: str  # a key of KIND_NAMES
    text: str  # as written
    key: str  # its normal form
    start: int = 0  # offsets into the text it was read from
    end: int = 0
    valid: bool = True  # an IBAN's mod-97 check

    @property
    def is_payment(self) -> bool:
        return self.kind in PAYMENT or (self.kind == "url" and bool(_PAYMENT_URL.search(self.key)))

    @property
    def is_identifying(self) -> bool:
        """Whether the fact says something about someone (a small figure or a year does not).

        A reference needs three digits: "POP3", "3MB" or "1e6" name a protocol, a size or a
        number, where an order or customer number has a number space of its own.
        """
        if self.kind == "reference":
            return sum(character.isdigit() for character in self.key) >= 3
        if self.kind != "figure":
            return self.kind in IDENTIFYING
        whole = self.key.split(".")[0]
        return len(whole) >= 3 and not (len(whole) == 4 and 1900 <= int(whole) <= 2100)


# --- normal forms ---------------------------------------------------------------------------


def figure_key(text: str) -> str:
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


def url_key(text: str) -> str:
    """scheme://host/path?query, the host lower-cased; "//host/path" when written without a scheme."""
    written = text.rstrip(".,;:!?")
    has_scheme = re.match(r"https?://", written, re.I) is not None
    parts = urlsplit(written if has_scheme else "//" + written)
    host = (parts.hostname or "").lower()
    port = f":{parts.port}" if parts.port else ""
    path = parts.path.rstrip("/")
    query = f"?{parts.query}" if parts.query else ""
    scheme = parts.scheme.lower() + ":" if has_scheme else ""
    return f"{scheme}//{host}{port}{path}{query}"


def phone_key(text: str) -> str | None:
    digits = re.sub(r"\D", "", text)
    if len(digits) < 7:
        return None
    written = text.strip()
    if written.startswith(("+", "00")):
        international = "+" + written.lstrip("+").removeprefix("00") if written.startswith("00") else written
        try:
            number = phonenumbers.parse(international, None)
        except phonenumbers.NumberParseException:
            return "+" + digits.removeprefix("00")
        return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)
    return "n:" + digits.lstrip("0")


def _iban(match: re.Match[str]) -> tuple[str, bool] | None:
    """(the compact IBAN, whether it passes mod-97) for the longest prefix of `match` shaped as one.

    The shape (country, length, BBAN structure) is checked with the check digits put right,
    so an IBAN with one digit changed is still read whole, as an invalid one.
    """
    compact = re.sub(r"[ \u00a0]", "", match.group(0))
    for end in range(len(compact), 14, -1):
        candidate = compact[:end]
        repaired = candidate[:2] + stdnum_iban.calc_check_digits(candidate) + candidate[4:]
        try:
            stdnum_iban.validate(repaired, check_country=False)
        except ValidationError:
            continue
        return candidate, candidate == repaired
    return None


def _span_of_compact(text: str, start: int, compact_length: int) -> int:
    """The end offset in `text` after `compact_length` non-space characters from `start`."""
    seen, position = 0, start
    while position < len(text) and seen < compact_length:
        if text[position] not in " \u00a0":
            seen += 1
        position += 1
    return position


def extract_facts(text: str) -> list[Fact]:
    """The checkable facts of `text`, each consumed once, most specific kind first."""
    facts: list[Fact] = []
    remaining = text

    def take(
        pattern: re.Pattern[str], kind: str, key: Callable[[re.Match[str]], str | None], group: int = 0
    ) -> None:
        nonlocal remaining

        def replace(match: re.Match[str]) -> str:
            found = key(match)
            if found is None:
                return match.group(0)
            start, end = match.span(group)
            written = text[start:end].strip()
            trimmed = written.rstrip(".,;:!?")
            facts.append(Fact(kind, trimmed, found, start, start + len(trimmed)))
            return (
                match.group(0)[: start - match.start()]
                + " " * (end - start)
                + match.group(0)[end - match.start() :]
            )

        remaining = pattern.sub(replace, remaining)

    take(_URL, "url", lambda m: url_key(m.group(0)))
    take(_EMAIL, "email", lambda m: m.group(0).lower())
    for match in list(_IBAN.finditer(remaining)):
        found = _iban(match)
        if found is None:
            continue
        compact, valid = found
        end = _span_of_compact(text, match.start(), len(compact))
        facts.append(Fact("iban", text[match.start() : end], compact, match.start(), end, valid))
        remaining = remaining[: match.start()] + " " * (end - match.start()) + remaining[end:]
    take(_BIC, "bic", lambda m: (m.group(1).upper() + "XXX")[:11], group=1)
    take(_ISO_DATE, "date", lambda m: _date_key(m.group(3), m.group(2)))
    take(_NUMERIC_DATE, "date", lambda m: _date_key(m.group(1) or m.group(4), m.group(2) or m.group(5)))
    take(_DAY_MONTH, "date", lambda m: _date_key(m.group(1), m.group(2)))
    take(_MONTH_DAY, "date", lambda m: _date_key(m.group(2), m.group(1)))
    take(_PHONE, "phone", lambda m: phone_key(m.group(0)))
    take(_AMOUNT_BEFORE, "amount", lambda m: f"{_CURRENCIES[m.group(1).lower()]}:{figure_key(m.group(2))}")
    take(_AMOUNT_AFTER, "amount", lambda m: f"{_CURRENCIES[m.group(2).lower()]}:{figure_key(m.group(1))}")
    take(
        _REFERENCE,
        "reference",
        lambda m: None if _UNIT.match(m.group(0).lstrip("#")) else m.group(0).lstrip("#").upper(),
    )
    take(_FIGURE, "figure", lambda m: figure_key(m.group(0)))
    facts.sort(key=lambda fact: fact.start)
    return facts


# --- what a text supports -------------------------------------------------------------------


@dataclass(frozen=True)
class Evidence:
    """The facts of some texts in normal form: what a draft may draw from them."""

    keys: frozenset[tuple[str, str]] = frozenset()  # (kind, key)
    digit_runs: frozenset[str] = frozenset()
    text: str = ""  # lower-cased, for references written inside longer tokens' neighbours
    national_phones: frozenset[str] = frozenset()  # national numbers of the E.164 phones
    currencies: dict[str, frozenset[str]] = field(default_factory=dict)  # figure -> currencies

    def supports(self, fact: Fact) -> bool:
        if (fact.kind, fact.key) in self.keys:
            return True
        if fact.kind == "figure":
            return fact.key.split(".")[0] in self.digit_runs
        if fact.kind == "reference":
            before, after = _AROUND_A_WORD
            return re.search(before + re.escape(fact.key.lower()) + after, self.text) is not None
        if fact.kind == "url" and fact.key.startswith("http"):
            return ("url-without-scheme", fact.key.split(":", 1)[-1]) in self.keys
        if fact.kind == "phone":
            if fact.key.startswith("n:"):
                return fact.key[2:] in self.national_phones
            # A national number written without a country supports an international one only
            # when the evidence never writes that number with a (necessarily other) country code.
            national = _national(fact.key)
            return (
                national is not None
                and ("phone", f"n:{national}") in self.keys
                and national not in self.national_phones
            )
        if fact.kind == "amount":
            currency, value = fact.key.split(":", 1)
            written_in = self.currencies.get(value)
            if written_in:  # the value is known with a currency: it must be this one
                return currency in written_in
            return ("figure", value) in self.keys
        return False


def _national(e164: str) -> str | None:
    try:
        return str(phonenumbers.parse(e164, None).national_number)
    except phonenumbers.NumberParseException:
        return None


def evidence_from(texts: Iterable[str], received: Iterable[datetime | None] = ()) -> Evidence:
    """What a draft may draw facts from: the texts, and the dates their messages arrived."""
    keys: set[tuple[str, str]] = set()
    runs: set[str] = set()
    nationals: set[str] = set()
    currencies: dict[str, set[str]] = {}
    joined = []
    for text in texts:
        joined.append(text.lower())
        runs.update(run.lstrip("0") or "0" for run in _DIGITS.findall(text))
        for fact in extract_facts(text):
            keys.add((fact.kind, fact.key))
            if fact.kind == "phone":
                keys.add(("figure", fact.key.removeprefix("n:").lstrip("+")))
                if fact.key.startswith("+") and (national := _national(fact.key)):
                    nationals.add(national)
            elif fact.kind == "amount":
                currency, value = fact.key.split(":", 1)
                keys.add(("figure", value))
                currencies.setdefault(value, set()).add(currency)
            elif fact.kind == "url":
                if fact.key.startswith("http"):  # supports the same link written without a scheme
                    keys.add(("url", fact.key.split(":", 1)[-1]))
                else:  # written without one: a draft may give it either scheme
                    keys.add(("url-without-scheme", fact.key))
    for moment in received:
        if moment is not None:
            keys.add(("date", f"{moment.day}-{moment.month}"))
            runs.add(str(moment.year))
    return Evidence(
        frozenset(keys),
        frozenset(runs),
        "\n".join(joined),
        frozenset(nationals),
        {value: frozenset(found) for value, found in currencies.items()},
    )
