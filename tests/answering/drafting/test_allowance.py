"""Drafting's allowance is its own: drafts spending it refuse no question, and questions
spending theirs hold no draft back. The real pipeline and ask_mail against the scripted
server, both counting in the session's real Redis (a namespace of this test's own)."""

from __future__ import annotations

import pytest

from answering.drafting.pipeline import ComposedDraft, DraftRefused, compose_draft
from answering.ledger import SPEND_REFUSED, drafting_ledger, period_ledger
from answering.models import AttemptOutcome
from answering.services.question import ask_mail
from answering.services.reply_draft import draft_reply
from mailfathom.core.errors import MailFathomError
from tests.configure import configure

pytestmark = [pytest.mark.django_db]

QUESTION = "What did the customer ask about?"


def test_drafts_that_spend_draftings_allowance_refuse_no_question(settings, model, shop):
    configure(settings, drafting_max_runs_per_period=1, answering_max_runs_per_period=1)

    assert isinstance(compose_draft(shop.answered), ComposedDraft)
    spent = compose_draft(shop.answered)
    with pytest.raises(MailFathomError) as refused:
        draft_reply(str(shop.answered.pk))

    assert isinstance(spent, DraftRefused) and spent.outcome == AttemptOutcome.CEILING_REACHED
    assert refused.value.code == SPEND_REFUSED
    assert "drafting replies" in refused.value.message and "renews at" in refused.value.message
    assert ask_mail(QUESTION).answer  # the question's own allowance is untouched
    assert (drafting_ledger().spend().runs, period_ledger().spend().runs) == (1, 1)


def test_questions_that_spend_their_allowance_hold_no_draft_back(settings, model, shop):
    configure(settings, answering_max_runs_per_period=1, drafting_max_runs_per_period=1)
    ask_mail(QUESTION)
    with pytest.raises(MailFathomError) as refused:
        ask_mail(QUESTION)

    drafted = compose_draft(shop.answered)

    assert refused.value.code == SPEND_REFUSED and "answering questions" in refused.value.message
    assert isinstance(drafted, ComposedDraft)
    assert drafting_ledger().spend().tokens == sum(sum(c.values()) for c in drafted.tokens.values())


def test_draftings_tokens_fill_only_draftings_period(settings, model, shop):
    configure(settings, drafting_max_tokens_per_period=1000)
    before = period_ledger().spend()

    compose_draft(shop.answered)  # about 2,700 tokens: over drafting's ceiling from now on
    spent = compose_draft(shop.answered)

    assert isinstance(spent, DraftRefused) and spent.outcome == AttemptOutcome.CEILING_REACHED
    assert period_ledger().spend() == before
    period_ledger().admit()  # a question is still admitted
