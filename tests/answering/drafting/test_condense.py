"""condense: a short one-line query, bounded; a longer answer is cut and the draft says so."""

from __future__ import annotations

import pytest

from answering.drafting.condense import bounded_query
from answering.drafting.pipeline import ComposedDraft, compose_draft
from tests.answering.drafting.support import CONDENSE
from tests.configure import configure
from tests.providers.openai_server import text


def test_a_query_within_the_bound_is_kept_on_one_line():
    assert bounded_query('  "oak table\n delivery"  ', 50) == bounded_query("oak table delivery", 50)
    assert bounded_query("oak table delivery", 50).query == "oak table delivery"
    assert not bounded_query("oak table delivery", 50).cut


def test_a_longer_query_is_cut_at_a_word_and_marked():
    condensed = bounded_query("oak table delivery date warehouse dispatch", 24)
    assert condensed.cut and condensed.query == "oak table delivery date"
    assert len(condensed.query) <= 24


@pytest.mark.django_db
def test_the_cut_is_noted_on_the_draft(settings, model, shop):
    configure(settings, drafting_max_condensed_query_characters=20)
    model.script(CONDENSE, text("oak table order delivery date warehouse"))

    result = compose_draft(shop.answered)

    assert isinstance(result, ComposedDraft)
    assert "cut to 20 characters" in result.note
