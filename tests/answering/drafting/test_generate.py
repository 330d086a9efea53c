"""generate: how the drafting model stopped decides what is kept, on both wire formats."""

from __future__ import annotations

import pytest

from answering.drafting.generate import NO_FINISH_NOTE
from answering.drafting.pipeline import ComposedDraft, DraftRefused, compose_draft
from answering.models import AttemptOutcome, Verdict
from mailfathom.core.config import CHAT_APIS
from tests.answering.drafting.support import GENERATE, LETTER
from tests.providers.openai_server import NO_FINISH, text

# Both chat endpoints, where the drafting conftest runs drafting on chat completions alone.
pytestmark = [pytest.mark.django_db, pytest.mark.parametrize("chat_api", CHAT_APIS, indirect=True)]


def test_a_reply_that_stopped_on_length_writes_no_draft(model, shop):
    model.script(GENERATE, text(LETTER[:120], finish="length", usage=(2000, 800)))

    result = compose_draft(shop.answered)

    assert isinstance(result, DraftRefused)
    assert (result.stage, result.outcome) == ("generate", AttemptOutcome.STOPPED_ON_LENGTH)
    assert result.tokens["generate"] == {"prompt": 2000, "completion": 800}


@pytest.mark.parametrize("content", [LETTER[:60], ""], ids=["partial", "empty"])
def test_a_content_filtered_reply_writes_no_draft(model, shop, content):
    model.script(GENERATE, text(content, finish="content_filter"))

    result = compose_draft(shop.answered)

    assert isinstance(result, DraftRefused)
    assert (result.stage, result.outcome) == ("generate", AttemptOutcome.CONTENT_FILTERED)


def test_a_reply_with_no_finish_reason_is_kept_with_a_note(model, shop):
    model.script(GENERATE, text(LETTER, finish=NO_FINISH))

    result = compose_draft(shop.answered)

    assert isinstance(result, ComposedDraft)
    assert result.body == LETTER.strip()
    assert result.note == NO_FINISH_NOTE
    assert result.verdict == Verdict.NEEDS_REVIEW
    assert [reason.split(":")[0] for reason in result.reasons] == ["no_finish_reason"]


def test_a_reply_that_stopped_is_kept_without_a_note(model, shop):
    result = compose_draft(shop.answered)
    assert isinstance(result, ComposedDraft) and result.note == "" and result.verdict == Verdict.READY
