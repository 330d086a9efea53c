"""gather: one hybrid search, two strings. Where the raw mail goes is pinned, not left to reading.

The embedding provider is the openai one against the scripted server, so every string that
reaches the embedding endpoint is in its request log; the lexical arm runs in PostgreSQL,
so the raw mail must appear among the statements PostgreSQL was sent.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from answering.drafting.mail import mail_text, thread_tail
from answering.drafting.pipeline import ComposedDraft, compose_draft
from tests.answering.drafting.support import CONDENSED, GENERATE, MARKERS, build_shop
from tests.providers.openai_server import text

pytestmark = pytest.mark.django_db

RAW_ONLY = ("Petra", "Quist", "ZX-88120", "1,250", "mornings")  # in the mail, not in the query


def test_the_raw_mail_reaches_postgresql_and_never_the_embedding_endpoint(model, shop, drafting):
    embedded_before = len(drafting.recorded("embeddings"))

    with CaptureQueriesContext(connection) as queries:
        result = compose_draft(shop.answered)

    assert isinstance(result, ComposedDraft)
    embedded = [
        text for request in drafting.recorded("embeddings")[embedded_before:] for text in request.inputs
    ]
    assert len(embedded) == 1, "one call embeds one string: the condensed query"
    assert CONDENSED in embedded[0]
    for word in RAW_ONLY:
        assert all(word not in text for text in embedded), word
    raw = mail_text(shop.answered, 6000).raw
    lexical = [
        q["sql"] for q in queries.captured_queries if "to_tsvector" in q["sql"] and "Quist" in q["sql"]
    ]
    assert lexical, "the raw mail was ranked by PostgreSQL's lexical search"
    assert any(raw.split("\n")[0] in sql for sql in lexical)


def test_the_lexical_arm_finds_what_the_condensed_query_threw_away(model, shop):
    """The condensed query names no order number; the dispatch note ranks first on the raw mail's."""
    model.defaults["condense"] = text("furniture", usage=(10, 1))

    result = compose_draft(shop.answered)

    assert result.source_ids[0] == shop.source.pk


def test_sources_come_from_the_own_account_visible_folders_and_never_junk(model, shop):
    result = compose_draft(shop.answered)

    assert shop.junk.pk not in result.source_ids and shop.hidden.pk not in result.source_ids
    request = model.user_turn(GENERATE)
    for marker in MARKERS:
        assert marker not in request


def test_the_thread_tail_is_found_from_the_threading_headers_in_readable_folders(drafting):
    shop = build_shop()

    tail = thread_tail(shop.answered, limit=4, max_characters=1000)

    assert [mail.email_id for mail in tail] == [str(shop.earlier.pk)]
    assert tail[0].direction == "outgoing"


def test_a_first_message_has_no_thread_tail(drafting):
    shop = build_shop(thread=False)
    assert thread_tail(shop.answered, limit=4, max_characters=1000) == []


def test_the_answered_mail_bound_is_at_most_what_the_lexical_arm_reads():
    """Condense and the lexical arm are handed the same string: no setting may cut it apart."""
    from dataclasses import fields

    from mailbox.services.search import MAX_LEXICAL_QUERY_CHARACTERS
    from mailfathom.core.config import MailFathomSettings

    bound = next(f for f in fields(MailFathomSettings) if f.name == "drafting_max_answered_characters")
    assert bound.metadata["maximum"] == MAX_LEXICAL_QUERY_CHARACTERS
