"""judge: whether a fact found in another correspondent's mail may go where the reply goes."""

from __future__ import annotations

from answering.drafting.facts import evidence_from, extract_facts
from answering.drafting.provenance import SOURCE, Origin, judge
from mailbox.models import Direction

MEYER_PHONE = "+49 171 5550123"


def _meyers(text: str) -> Origin:
    """Incoming mail of Jana Meyer's holding `text`."""
    return Origin(
        SOURCE,
        "m1",
        Direction.INCOMING,
        frozenset({"kunde-meyer.example"}),
        "Jana Meyer",
        evidence_from([text]),
    )


def _meyers_mail() -> Origin:
    return _meyers(f"Reach me on {MEYER_PHONE}.")


def _codes(recipients: frozenset[str]) -> list[str]:
    (fact,) = [fact for fact in extract_facts(f"Call her on {MEYER_PHONE}.") if fact.kind == "phone"]
    judgement = judge(fact, [_meyers_mail()], recipients)
    assert judgement is not None and judgement.origins == ("m1",)
    return [code for code, _sentence in judgement.flags]


def test_another_customers_fact_in_a_reply_to_an_outsider_is_flagged():
    assert _codes(frozenset({"fresh-buyer.example"})) == ["other_correspondent"]


def test_the_customers_own_fact_going_back_to_them_is_not():
    assert _codes(frozenset({"kunde-meyer.example"})) == []


def test_a_reply_that_stays_inside_the_firm_discloses_nothing():
    # Answering a colleague: the reply goes to no party outside the firm.
    assert _codes(frozenset()) == []


def _figure_codes(written: str) -> list[str]:
    origin = _meyers(f"We counted {written} of them.")
    (fact,) = [fact for fact in extract_facts(f"There are {written}.") if fact.kind == "figure"]
    judgement = judge(fact, [origin], frozenset({"fresh-buyer.example"}))
    assert judgement is not None
    return [code for code, _sentence in judgement.flags]


def test_a_long_number_from_another_customer_is_theirs_but_a_small_quantity_is_not():
    assert _figure_codes("88412907") == ["other_correspondent"]
    assert _figure_codes("1500") == []


def _reference_codes(reference: str) -> list[str]:
    origin = _meyers(f"See {reference} for the details.")
    facts = [fact for fact in extract_facts(f"As in {reference}.") if fact.kind == "reference"]
    assert facts, reference
    judgement = judge(facts[0], [origin], frozenset({"fresh-buyer.example"}))
    assert judgement is not None
    return [code for code, _sentence in judgement.flags]


def test_a_reference_with_three_digits_is_someones_but_a_name_like_pop3_is_not():
    assert _reference_codes("CL-77031") == ["other_correspondent"]
    assert _reference_codes("HW-551") == ["other_correspondent"]
    for name in ("POP3", "3MB", "1e6", "MP3"):
        assert _reference_codes(name) == [], name
