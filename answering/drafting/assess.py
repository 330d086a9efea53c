"""Stage 8, assess: a verdict on the draft from its text and its origins, without any model.

Five checks (docs/operations/drafting.md, assess), each reason a stable code and a sentence
a reviewer can act on: facts (every figure, date, address, link, IBAN... found in an origin
that may go to the recipients: answering.drafting.facts and .provenance), correspondents
(reply_to_mismatch, thread_hijack), language (too short or too unsure a text is not judged),
signature, and shape (no subject line, heading or second letter). No reason: ready. Flagged
facts are also findings with offsets for the review page; logs carry codes only.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from answering.drafting.facts import KIND_NAMES, Fact, extract_facts
from answering.drafting.provenance import Origin, judge, payment_change
from answering.models import Verdict

STAGE = "assess"
MIN_LANGUAGE_LETTERS = 40
MIN_LANGUAGE_CONFIDENCE = 0.6

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
class Finding:
    """One flagged fact of the draft, where it stands and where it was found."""

    code: str
    kind: str
    start: int
    end: int
    origins: tuple[str, ...] = ()

    def as_json(self) -> dict[str, object]:
        return {
            "code": self.code, "kind": self.kind, "start": self.start, "end": self.end,
            "origins": list(self.origins),
        }  # fmt: skip


@dataclass(frozen=True)
class Assessment:
    verdict: str  # a Verdict value
    reasons: tuple[str, ...]
    findings: tuple[Finding, ...] = ()


_FACT_SENTENCES = {
    kind: f"The {name} {{text}} appears in no message the draft was built from."
    for kind, name in KIND_NAMES.items()
}
_FACT_SENTENCES["iban"] = "The IBAN {text} appears in no message the draft was built from."
_INVALID_IBAN = "The IBAN {text} fails the IBAN check digits: it was mistyped or altered."


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
    origins: Sequence[Origin],
    signatures: Mapping[str, str],
    recipients: frozenset[str] = frozenset(),
    correspondent_reasons: Sequence[str] = (),
    finish_reported: bool = True,
    locate: Callable[[Fact], list[Origin]] | None = None,
) -> Assessment:
    """The verdict on `body` (see the module docstring); `signatures` maps language -> text."""
    reasons: list[str] = list(correspondent_reasons)
    findings: list[Finding] = []
    expected = signatures.get(language, "")
    letter = _without(body, expected)

    listed: set[tuple[str, str]] = set()
    for fact in extract_facts(letter):
        judgement = judge(fact, origins, recipients)
        if judgement is None:
            template = _INVALID_IBAN if fact.kind == "iban" and not fact.valid else _FACT_SENTENCES[fact.kind]
            flags: tuple[tuple[str, str], ...] = (
                (f"unsupported_{fact.kind}", template.format(text=fact.text)),
            )
            refs: tuple[str, ...] = ()
            # Not given to the model, yet perhaps somebody's: where else the mailbox holds it.
            elsewhere = judge(fact, locate(fact), recipients) if locate and fact.is_identifying else None
            if elsewhere is not None:
                flags, refs = flags + elsewhere.flags, elsewhere.origins
        else:
            flags, refs = judgement.flags, judgement.origins
        for code, sentence in flags:
            findings.append(Finding(code, fact.kind, fact.start, fact.end, refs))
            if (code, fact.key) not in listed:
                listed.add((code, fact.key))
                reasons.append(f"{code}: {sentence}")

    change = payment_change(letter)
    if change is not None:
        findings.append(Finding("unverified_payment_detail", "payment_change", change.start(), change.end()))
        reasons.append(
            "unverified_payment_detail: The draft speaks of changed payment details. A change asked for "
            "by mail is how invoice fraud works: confirm it by phone on a number you already hold."
        )

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
    return Assessment(verdict=verdict.value, reasons=tuple(reasons), findings=tuple(findings))


def reason_codes(reasons: Iterable[str]) -> list[str]:
    """The stable codes of `reasons` (what logs and counts may carry)."""
    return [reason.split(":", 1)[0] for reason in reasons]
