"""Fact types compared whole: each kind's near misses are misses, its other spellings matches."""

from __future__ import annotations

import pytest

from answering.drafting.facts import evidence_from, extract_facts

KNOWN = evidence_from(
    [
        "Pay to DE89 3704 0044 0532 0130 00, BIC COBADEFFXXX. Invoice INV-2026-0042 over 1,250.00 EUR. "
        "Call Jana on +49 30 1234567 or write to j.meyer@kunde-meyer.example. The contract is at "
        "https://contracts.kunde-meyer.example/c/88412 and the shop at www.oak.example/chairs."
    ]
)


def supported(text: str) -> list[tuple[str, bool]]:
    return [(fact.kind, KNOWN.supports(fact)) for fact in extract_facts(text)]


@pytest.mark.parametrize(
    "written",
    [
        "DE89 3704 0044 0532 0130 00",
        "DE89370400440532013000",
        "BIC COBADEFF",
        "invoice inv-2026-0042",
        "1.250,00 EUR",
        "€1,250",
        "030 1234567",
        "+49 (30) 1234567",
        "J.Meyer@Kunde-Meyer.example",
        "https://contracts.kunde-meyer.example/c/88412/",
        "https://www.oak.example/chairs",
    ],
)
def test_the_same_fact_written_another_way_is_supported(written):
    assert supported(written) and all(found for _, found in supported(written)), supported(written)


@pytest.mark.parametrize(
    "near_miss,kind",
    [
        ("DE89 3704 0044 0532 0130 01", "iban"),  # one digit changed: fails mod-97, never matches
        ("DE89 3704 0044 0532 0131 00", "iban"),
        ("BIC COBADEFF001", "bic"),
        ("+44 30 1234567", "phone"),  # another country code, the same national number
        ("+49 30 1234568", "phone"),
        ("eyer@kunde-meyer.example", "email"),  # a substring of a known address
        ("j.meyer@kunde-meyer.example.net", "email"),
        ("http://contracts.kunde-meyer.example/c/88412", "url"),  # http for https
        ("https://contracts.kunde-meyer.example/c/8841", "url"),
        ("https://contracts.kunde-meyer.example.evil.example/c/88412", "url"),
        ("1,250 USD", "amount"),  # the value, in another currency
        ("INV-2026-004", "reference"),  # a prefix of a known reference
    ],
)
def test_a_near_miss_is_not_supported(near_miss, kind):
    assert supported(near_miss) == [(kind, False)]


def test_an_iban_with_a_wrong_check_digit_is_read_whole_and_marked_invalid():
    (fact,) = extract_facts("to DE89 3704 0044 0532 0130 01 please")
    assert (fact.kind, fact.key, fact.valid) == ("iban", "DE89370400440532013001", False)
    assert fact.text == "DE89 3704 0044 0532 0130 01"


def test_facts_keep_their_offsets_in_the_text():
    text = "Call +49 30 1234567 about INV-2026-0042 (1,250.00 EUR)."
    for fact in extract_facts(text):
        assert text[fact.start : fact.end] == fact.text


def test_a_small_figure_or_a_year_does_not_identify_anyone():
    facts = {fact.text: fact for fact in extract_facts("3 chairs, 2026 catalogue, 4,860 in total")}
    assert not facts["3"].is_identifying and not facts["2026"].is_identifying
    assert facts["4,860"].is_identifying
