"""assess: a verdict computed from the draft's text, no model. Each check flags exactly its case."""

from __future__ import annotations

import pytest

from answering.drafting.assess import assess, reason_codes
from answering.drafting.facts import extract_facts
from answering.drafting.pipeline import ComposedDraft, compose_draft
from answering.drafting.provenance import plain_origin
from answering.models import Verdict
from tests.answering.drafting.support import GENERATE, LETTER, SIGNATURE_DE, SIGNATURE_EN
from tests.mailbox.factories import BASE_TIME
from tests.providers.openai_server import text

SIGNATURES = {"en": SIGNATURE_EN, "de": SIGNATURE_DE}
EVIDENCE = plain_origin(
    [
        "Where is my order ZX-88120? I paid 1,250 euros. Petra Quist, petra@quist.example",
        "Order ZX-88120 left the warehouse on 10 March, delivery by 14 March. Track it at "
        "https://track.oak.example/ZX-88120 or call +49 30 1234567.",
        SIGNATURE_EN,
    ],
    received=[BASE_TIME],
)


def codes(body: str, language: str = "en") -> list[str]:
    return reason_codes(assess(body, language=language, origins=[EVIDENCE], signatures=SIGNATURES).reasons)


def test_a_grounded_letter_is_ready():
    outcome = assess(LETTER, language="en", origins=[EVIDENCE], signatures=SIGNATURES)
    assert outcome.verdict == Verdict.READY and outcome.reasons == ()


def test_facts_written_otherwise_still_match():
    body = (
        "Dear Ms Quist,\n\nyour payment of 1.250,00 EUR for order zx-88120 arrived; it leaves on "
        "March 10th and arrives on 14.03. Call us on 030 1234567, track at "
        "https://track.oak.example/ZX-88120, or write to petra@quist.example.\n\n" + SIGNATURE_EN
    )
    assert codes(body) == []


@pytest.mark.parametrize(
    "sentence,code,listed",
    [
        ("The table costs 1,450 euros.", "unsupported_amount", "1,450 euros"),
        ("The table costs 1,450.", "unsupported_figure", "1,450"),
        ("It will arrive on 21 March.", "unsupported_date", "21 March"),
        ("Your new order number is QX-55012.", "unsupported_reference", "QX-55012"),
        ("Write to sales@oak.example.", "unsupported_email", "sales@oak.example"),
        ("See https://oak.example/offers.", "unsupported_url", "https://oak.example/offers"),
        ("Call +49 89 7654321.", "unsupported_phone", "+49 89 7654321"),
    ],
)
def test_an_invented_fact_is_listed_by_kind(sentence, code, listed):
    body = f"Dear Ms Quist,\n\nyour order ZX-88120 left on 10 March. {sentence}\n\n" + SIGNATURE_EN
    outcome = assess(body, language="en", origins=[EVIDENCE], signatures=SIGNATURES)
    assert outcome.verdict == Verdict.NEEDS_REVIEW
    assert reason_codes(outcome.reasons) == [code]
    assert f" {listed} appears in no message" in outcome.reasons[0]


def test_each_unsupported_fact_is_listed_once():
    body = "Dear Ms Quist,\n\nit costs 1,450 euros; yes, 1,450 euros, and 99 for delivery.\n\n" + SIGNATURE_EN
    assert codes(body) == ["unsupported_amount", "unsupported_figure"]


def test_a_draft_in_another_language_than_classified_is_flagged():
    german = (
        "Sehr geehrte Frau Quist,\n\nvielen Dank für Ihre Nachricht. Ihre Bestellung ZX-88120 hat unser "
        "Lager am 10 März verlassen und wird bis zum 14 März geliefert.\n\n" + SIGNATURE_EN
    )
    assert "language_mismatch" in codes(german, "en")


def test_the_signature_must_be_the_classified_languages_and_end_the_draft():
    letter = LETTER.removesuffix(SIGNATURE_EN)
    assert codes(letter + SIGNATURE_DE) == ["signature_mismatch"]
    assert codes(letter.rstrip()) == ["signature_mismatch"]
    assert codes(letter + SIGNATURE_DE + "\n\n" + SIGNATURE_EN) == ["signature_mismatch"]
    no_french = assess(LETTER, language="fr", origins=[EVIDENCE], signatures=SIGNATURES).reasons
    assert "signature_missing" in reason_codes(no_french)
    assert assess(letter, language="en", origins=[EVIDENCE], signatures={}).reasons == ()


@pytest.mark.parametrize(
    "shape,code",
    [
        ("Subject: Your order ZX-88120\n\n", "subject_line"),
        ("Betreff: Ihre Bestellung\n\n", "subject_line"),
        ("## Delivery\n\n", "markdown_heading"),
        ("**Delivery update**\n\n", "markdown_heading"),
    ],
)
def test_a_subject_line_or_a_heading_is_flagged(shape, code):
    assert codes(shape + LETTER) == [code]


def test_a_second_letter_is_flagged():
    second = (
        LETTER.removesuffix(SIGNATURE_EN)
        + "Kind regards,\nAnna\n\nDear Ms Quist,\n\nhere is a shorter version: it ships soon.\n\n"
        + SIGNATURE_EN
    )
    assert codes(second) == ["second_letter"]
    assert codes("Version B:\n" + LETTER) == ["second_letter"]


def test_facts_are_read_most_specific_first():
    kinds = [fact.kind for fact in extract_facts("Mail a@b.example on 2025-03-14 about INV-7781, 3 items.")]
    assert kinds == ["email", "date", "reference", "figure"]


@pytest.mark.django_db
def test_assess_flags_an_invented_figure_in_a_composed_draft(model, shop):
    invented = LETTER.replace("by 14 March.", "by 14 March; delivery costs 89 euros.")
    model.script(GENERATE, text(invented))

    result = compose_draft(shop.answered)

    assert isinstance(result, ComposedDraft)
    assert result.verdict == Verdict.NEEDS_REVIEW
    assert result.reasons == (
        "unsupported_amount: The amount 89 euros appears in no message the draft was built from.",
    )
