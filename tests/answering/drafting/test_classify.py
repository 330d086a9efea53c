"""classify refuses rather than guesses: every refusal shape, and the one accommodation (a fence)."""

from __future__ import annotations

import pytest

from answering.drafting.classify import (
    INTENT_UNKNOWN,
    LANGUAGE_MISSING,
    LANGUAGE_NOT_ISO,
    NOT_JSON,
    Classification,
    parse_classification,
)
from answering.drafting.pipeline import DraftRefused, compose_draft
from answering.drafting.spend import StageRefused
from answering.models import AttemptOutcome, Intent
from tests.answering.drafting.support import CLASSIFY, CONDENSE, GENERATE
from tests.providers.openai_server import text

REFUSALS = {
    "prose": ("The intent is inquiry and the language is English.", NOT_JSON),
    "prose around a fence": ('Here it is:\n```json\n{"intent": "inquiry", "language": "en"}\n```', NOT_JSON),
    "broken json": ('{"intent": "inquiry", "language": "en"', NOT_JSON),
    "a list": ('["inquiry", "en"]', NOT_JSON),
    "a string": ('"inquiry"', NOT_JSON),
    "two objects": (
        '{"intent": "inquiry", "language": "en"}\n{"intent": "order", "language": "en"}',
        NOT_JSON,
    ),
    "intent outside the seven": ('{"intent": "enquiry", "language": "en"}', INTENT_UNKNOWN),
    "intent spelled with an underscore": ('{"intent": "follow_up", "language": "en"}', INTENT_UNKNOWN),
    "no intent": ('{"language": "en"}', INTENT_UNKNOWN),
    "intent not text": ('{"intent": 3, "language": "en"}', INTENT_UNKNOWN),
    "no language": ('{"intent": "inquiry"}', LANGUAGE_MISSING),
    "blank language": ('{"intent": "inquiry", "language": "  "}', LANGUAGE_MISSING),
    "null language": ('{"intent": "inquiry", "language": null}', LANGUAGE_MISSING),
    "three letters": ('{"intent": "inquiry", "language": "eng"}', LANGUAGE_NOT_ISO),
    "a language name": ('{"intent": "inquiry", "language": "English"}', LANGUAGE_NOT_ISO),
    "two letters no code": ('{"intent": "inquiry", "language": "xx"}', LANGUAGE_NOT_ISO),
    "a region tag": ('{"intent": "inquiry", "language": "en-GB"}', LANGUAGE_NOT_ISO),
    "language not text": ('{"intent": "inquiry", "language": 7}', LANGUAGE_NOT_ISO),
}


@pytest.mark.parametrize("reply,reason", REFUSALS.values(), ids=REFUSALS.keys())
def test_each_unusable_shape_is_refused_with_its_reason(reply, reason):
    with pytest.raises(StageRefused) as refused:
        parse_classification(reply)
    assert (refused.value.stage, refused.value.outcome, refused.value.reason) == (
        "classify",
        AttemptOutcome.CLASSIFY_REFUSED,
        reason,
    )


@pytest.mark.parametrize(
    "reply",
    [
        '{"intent": "complaint", "language": "de"}',
        '```json\n{"intent": "complaint", "language": "de"}\n```',
        '  ```\n{"intent": "complaint", "language": "de"}\n```  ',
        '{"intent": " Complaint ", "language": "DE", "confidence": 0.9}',
    ],
    ids=["plain", "fenced json", "fenced bare", "case and blanks"],
)
def test_json_and_one_fenced_json_block_are_read(reply):
    assert parse_classification(reply) == Classification("complaint", "de")


def test_all_seven_intents_are_accepted():
    for intent in Intent:
        assert (
            parse_classification(f'{{"intent": "{intent.value}", "language": "en"}}').intent == intent.value
        )


@pytest.mark.django_db
@pytest.mark.parametrize("reply,reason", list(REFUSALS.values())[:3] + list(REFUSALS.values())[6::4], ids=str)
def test_a_refused_classification_writes_no_draft_and_calls_nothing_else(model, shop, reply, reason):
    model.script(CLASSIFY, text(reply, usage=(300, 9)))

    result = compose_draft(shop.answered)

    assert result == DraftRefused(
        "classify",
        AttemptOutcome.CLASSIFY_REFUSED,
        "scripted",
        {"classify": {"prompt": 300, "completion": 9}},
    )
    assert not model.requests[CONDENSE] and not model.requests[GENERATE]


@pytest.mark.django_db
def test_classify_sends_the_mail_as_data_at_temperature_zero(model, shop, drafting):
    compose_draft(shop.answered)

    request = model.requests[CLASSIFY][0]
    assert request["temperature"] == 0.0
    user = model.user_turn(CLASSIFY)
    assert user.startswith('<incoming-mail from="Petra Quist &lt;petra@quist.example&gt;">')
    assert "Where is my order ZX-88120?" in user
    assert "ZX-88120" not in model.instruction(CLASSIFY)
