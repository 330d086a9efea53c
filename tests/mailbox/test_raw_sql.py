"""Raw ranking SQL takes its table and column names from the models and binds every value
through one helper (mailbox.services.raw_sql), composing Django's compiled SQL unchanged."""

from __future__ import annotations

import pytest
from django.db import connection

from mailbox.models import Email, LexicalTermStat, Passage
from mailbox.services import lexical_search
from mailbox.services.lexical_search import highlight, rank_lexical, refresh_term_stats
from mailbox.services.raw_sql import Params, column, table
from mailbox.services.search import search_emails
from mailbox.services.selection import MailFilter
from tests.mailbox.factories import EmailFactory
from tests.mailbox.session_settings import current_settings, settings_seen_by

pytestmark = pytest.mark.django_db


def test_names_come_from_the_models_quoted():
    assert table(Email) == '"mailbox_email"'
    assert table(Passage) == '"mailbox_passage"'
    assert column(Email, "search_vector") == '"search_vector"'
    assert column(Passage, "profile") == '"profile_id"'  # the foreign key's column, not the field


def test_values_are_bound_in_the_order_the_statement_names_them():
    bind = Params()
    sql = f"SELECT {bind('first')}::text, {bind(2)}::int, {bind('first')}::text"
    assert sql == "SELECT %s::text, %s::int, %s::text"
    assert bind.values == ["first", 2, "first"]
    with connection.cursor() as cursor:
        cursor.execute(sql, bind.values)
        assert cursor.fetchone() == ("first", 2, "first")


def test_an_embedded_queryset_keeps_its_sql_and_its_values_between_the_statements_own(inbox):
    wanted = EmailFactory(folder=inbox, subject="50%s off, 100%% sure")
    EmailFactory(folder=inbox, subject="something else")
    narrowed = Email.objects.filter(subject__icontains="%s off, 100%%").values("id")
    compiled, _ = narrowed.query.sql_with_params()
    bind = Params()
    sql = f"SELECT {bind('before')}, id::text, {bind('after')} FROM ({bind.query(narrowed)}) AS hit"
    assert compiled in sql  # embedded as Django wrote it: no placeholder rewritten
    with connection.cursor() as cursor:
        cursor.execute(sql, bind.values)
        assert cursor.fetchall() == [("before", str(wanted.pk), "after")]


def test_a_filter_value_spelling_placeholders_is_searched_as_text(inbox):
    EmailFactory(folder=inbox, subject="Invoice 50%s off %(p0)s", body="invoice for the repair")
    EmailFactory(folder=inbox, subject="Invoice plain", body="invoice for the repair")
    refresh_term_stats()
    result = search_emails("invoice", mail_filter=MailFilter(subject_fragment="%s off %(p0)s"))
    assert [match.summary.subject for match in result.matches] == ["Invoice 50%s off %(p0)s"]


def test_ranking_extracts_and_term_statistics_read_the_models_tables(inbox, monkeypatch):
    EmailFactory(folder=inbox, subject="Insurance claim", body="The insurer agreed to pay the repair.")
    assert refresh_term_stats() == LexicalTermStat.objects.count() > 0
    executed: list[str] = []
    real = connection.ops.quote_name
    monkeypatch.setattr(connection.ops, "quote_name", lambda name: executed.append(name) or real(name))

    hits = rank_lexical(Email.objects.all(), "insurer repair", 5)
    extracts = highlight([hit.email_id for hit in hits], "insurer", 1, 80)

    assert len(hits) == 1 and extracts[hits[0].email_id] == ["**insurer** agreed to pay the repair"]
    assert {"mailbox_email", "search_vector", "received_at", "text_body"} <= set(executed)
    assert not hasattr(lexical_search, "_name_positional")


def test_an_empty_selection_is_told_once_per_queryset_and_afresh_for_a_narrowed_copy(monkeypatch):
    from django.db.models.sql.query import Query

    from mailbox.services.raw_sql import selects_nothing

    compiled = []
    original = Query.sql_with_params
    monkeypatch.setattr(Query, "sql_with_params", lambda self: compiled.append(self) or original(self))
    some = Email.objects.filter(subject="x")

    assert selects_nothing(some) is False
    assert selects_nothing(some) is False
    assert len(compiled) == 1  # the second answer was kept, not compiled again
    assert selects_nothing(some.filter(id__in=[])) is True  # a copy is judged on its own
    assert selects_nothing(Email.objects.filter(id__in=[])) is True


# Committed transactions, as in production: inside a test's own transaction the ranking's
# atomic block is a savepoint, and a local setting outlives a released savepoint.
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("large", [True, False], ids=["large mailbox", "small mailbox"])
def test_a_large_mailbox_ranks_with_more_work_memory_for_that_statement_alone(monkeypatch, large):
    EmailFactory(subject="Quarterly invoice", body="The invoice is attached.")
    refresh_term_stats()
    monkeypatch.setattr(lexical_search, "LARGE_MAILBOX", 0 if large else 10**9)
    lexical_search._words_cache.clear()

    before = current_settings("work_mem")
    with settings_seen_by("WITH occurrences", "work_mem") as seen:
        hits = rank_lexical(Email.objects.all(), "invoice", 5)

    assert len(hits) == 1
    assert seen == [(lexical_search.RANKING_WORK_MEM,) if large else before]
    assert current_settings("work_mem") == before


def test_one_search_reads_the_collections_figures_once(inbox):
    from django.test.utils import CaptureQueriesContext

    EmailFactory(folder=inbox, subject="Quarterly invoice", body="The invoice is attached.")
    refresh_term_stats()
    lexical_search._words_cache.clear()

    with CaptureQueriesContext(connection) as captured:
        result = search_emails("invoice")

    assert len(result.matches) == 1 and result.matches[0].snippets  # ranked, then extracts read
    assert sum("reltuples" in query["sql"] for query in captured.captured_queries) == 1
    # Outside a search each reading is its own.
    with CaptureQueriesContext(connection) as apart:
        lexical_search.query_words("invoice")
        lexical_search.query_words("invoice")
    assert sum("reltuples" in query["sql"] for query in apart.captured_queries) == 2
