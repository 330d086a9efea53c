"""search_emails after ranking: the query's author, thread support, junk, bulk and the kept lexical hit."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from accounts.models import FolderRole
from mailbox.models import Email
from mailbox.services import search
from mailbox.services.embedding import VectorHit
from mailbox.services.lexical_search import LexicalHit, rank_lexical, refresh_term_stats
from mailbox.services.reranking import (
    QUOTING_WINDOW,
    Facts,
    Reranking,
    candidate_facts,
    facts_and_quoting,
    facts_of_rows,
    quoting,
    rerank,
    row_facts,
    with_quoting,
)
from mailbox.services.search import Fusion, fuse, search_emails
from mailbox.services.selection import MailFilter
from mailfathom.core.errors import MailFathomError
from tests.configure import configure
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _lexical_only(settings):
    configure(settings, embedding_provider="none")


@pytest.fixture
def account():
    return MailAccountFactory(account_id="lists", display_name="Lists")


@pytest.fixture
def inbox(account):
    return mapped_folder(account, "inbox", FolderRole.INBOX)


def _subjects(result) -> list[str]:
    return [match.summary.subject for match in result.matches]


# --- the query's author -------------------------------------------------------------------


@pytest.fixture
def martins_reply(inbox):
    """Martin's own earlier post names him in its From line and signature; the post he answers
    shares two words of his reply."""
    EmailFactory(
        folder=inbox,
        subject="Dinner",
        sender_address="martin@example.org",
        sender_name="Martin Adamson",
        participants_text="Martin Adamson martin@example.org",
        body="Carbonara tonight. Cheers, Martin",
    )
    EmailFactory(
        folder=inbox,
        subject="Pasta question",
        sender_address="anna@example.org",
        sender_name="Anna",
        participants_text="Anna anna@example.org",
        body="How do you make pancetta carbonara?",
    )
    refresh_term_stats()


def test_the_authors_name_outranks_the_answered_post_when_the_author_is_not_told(martins_reply):
    assert _subjects(search_emails("carbonara with pancetta, Martin"))[0] == "Dinner"


def test_a_told_author_is_no_evidence_and_the_answered_post_comes_first(martins_reply):
    result = search_emails("carbonara with pancetta, Martin", author_address="Martin@Example.org")
    assert _subjects(result) == ["Pasta question", "Dinner"]


def test_the_authors_names_are_found_whatever_case_their_address_was_stored_in(inbox):
    # Martin is named only as a recipient, his address stored in the case his mailer wrote it.
    EmailFactory(
        folder=inbox,
        subject="Dinner",
        sender_address="anna@example.org",
        participants_text="Anna anna@example.org Martin Adamson MA@example.org",
        to=[("Martin Adamson", "MA@example.org")],
        body="Carbonara tonight?",
    )
    EmailFactory(
        folder=inbox,
        subject="Pasta question",
        sender_address="bob@example.org",
        participants_text="Bob bob@example.org",
        body="How do you make pancetta carbonara?",
    )
    refresh_term_stats()
    assert _subjects(search_emails("carbonara with pancetta, Adamson"))[0] == "Dinner"
    told = search_emails("carbonara with pancetta, Adamson", author_address="ma@example.org")
    assert _subjects(told)[0] == "Pasta question"


def test_mail_the_author_sent_ranks_below_the_same_words_from_others(inbox):
    # Martin's is the newer, so it would come first on the tie if he were not the author.
    for sender in ("anna@example.org", "martin@example.org"):
        EmailFactory(folder=inbox, subject=f"Budget from {sender[:4]}", sender_address=sender, body="budget")
    refresh_term_stats()
    assert _subjects(search_emails("budget")) == ["Budget from mart", "Budget from anna"]
    told = search_emails("budget", author_address="martin@example.org")
    assert _subjects(told) == ["Budget from anna", "Budget from mart"]


@pytest.mark.parametrize("address", ["martin", "  ", "a b@example.org", "x" * 321 + "@e.org", "a@b\x00"])
def test_an_author_address_that_is_not_one_address_is_51002(inbox, address):
    with pytest.raises(MailFathomError) as caught:
        search_emails("budget", author_address=address)
    assert caught.value.code == 51002


# --- mail quoting the query ---------------------------------------------------------------

RESULT_LIMIT = 20
QUERY = "the backup server failed again last night during the nightly copy of the archive"


@pytest.fixture
def quoted_reply(inbox):
    EmailFactory(
        folder=inbox,
        subject="Nightly backup",
        body="Did the backup server copy the archive last night? The nightly run looked odd.",
    )
    EmailFactory(folder=inbox, subject="Re: Nightly backup", body=f"Thanks, fixed.\n\n> {QUERY}\n")
    refresh_term_stats()


def test_mail_quoting_the_querys_words_ranks_below_the_mail_they_answer(quoted_reply):
    assert _subjects(search_emails(QUERY)) == ["Nightly backup", "Re: Nightly backup"]


def test_the_same_words_unquoted_are_not_taken_for_a_quotation(inbox):
    EmailFactory(
        folder=inbox,
        subject="Nightly backup",
        body="Did the backup server copy the archive last night? The nightly run looked odd.",
    )
    EmailFactory(folder=inbox, subject="Re: Nightly backup", body=f"Thanks, fixed.\n\n{QUERY}\n")
    refresh_term_stats()
    assert _subjects(search_emails(QUERY)) == ["Re: Nightly backup", "Nightly backup"]


def test_a_short_query_quotes_nothing(quoted_reply):
    assert _subjects(search_emails("backup server failed"))[0] == "Re: Nightly backup"
    # and no body is read to find out
    assert row_facts(RESULT_LIMIT, "backup server failed").body_window == 0
    assert row_facts(RESULT_LIMIT, QUERY).body_window == QUOTING_WINDOW < RESULT_LIMIT
    assert row_facts(3, QUERY).body_window == 3


def test_facts_and_quoting_in_one_query_are_what_the_two_read_apart(inbox, quoted_reply):
    ids = [str(email_id) for email_id in Email.objects.values_list("id", flat=True)]
    facts, quoted = facts_and_quoting(Email.objects.all(), ids, QUERY, ids)
    assert facts == candidate_facts(Email.objects.all(), ids)
    assert quoted == quoting(ids, QUERY) and len(quoted) == 1
    # only the readable are read, and a typed query reads none
    assert facts_and_quoting(Email.objects.all(), ids, QUERY, [i for i in ids if i not in quoted])[1] == set()
    assert facts_and_quoting(Email.objects.all(), ids, "backup server failed", ids)[1] == set()


def test_a_quotation_below_the_quoting_window_is_not_looked_for(inbox):
    # Ten better matches, then a quoting reply and the same words unquoted in an older mail:
    # the reply is eleventh, below the window, so it is not read and keeps its place on the
    # tie (the window is the depth its factor was cross-validated at, docs/search.md).
    assert QUOTING_WINDOW == 10
    EmailFactory(folder=inbox, subject="Unquoted", body=f"Thanks a lot.\n\n{QUERY}\n")
    for n in range(10):
        EmailFactory(folder=inbox, subject=f"Backup note {n}", body=QUERY + " " + "archive " * (4 - n % 3))
    EmailFactory(folder=inbox, subject="Quoting", body=f"Thanks.\n\n> {QUERY}\n")
    refresh_term_stats()
    assert _subjects(search_emails(QUERY, result_limit=RESULT_LIMIT))[10:] == ["Quoting", "Unquoted"]
    # One better match fewer, and it is tenth: read, it goes below the copy.
    Email.objects.filter(subject="Backup note 0").delete()
    refresh_term_stats()
    assert _subjects(search_emails(QUERY, result_limit=RESULT_LIMIT))[9:] == ["Unquoted", "Quoting"]


def test_facts_read_with_the_lexical_rows_are_those_read_apart(account, inbox, quoted_reply):
    # A lexical-only search reads reranking's facts in its ranking statement; they must be
    # what the fusion's own query reads, quoting included, for every kind of candidate.
    junk = mapped_folder(account, "junk", FolderRole.JUNK)
    EmailFactory(folder=junk, subject="Backup offer", body="backup server archive", thread_id=None)
    EmailFactory(folder=inbox, subject="Backup news", body="nightly backup", is_bulk=True, is_list_mail=False)
    EmailFactory(folder=inbox, subject="Backup list", body="the server", is_bulk=True, is_list_mail=True)
    refresh_term_stats()
    candidates = Email.objects.all()
    hits = rank_lexical(candidates, QUERY, 40, row_facts=row_facts(3, QUERY))
    assert len(hits) == 5
    ids = [hit.email_id for hit in hits]
    order = [(hit.email_id, hit.score) for hit in hits]
    read_apart = with_quoting(candidate_facts(candidates, ids), order, quoting(ids[:3], QUERY), 3)
    assert facts_of_rows(hits, QUERY) == read_apart
    assert sum(fact.quotes_query for fact in read_apart.values()) == 1
    assert sum(fact.unwanted for fact in read_apart.values()) == 2


# --- junk and bulk ------------------------------------------------------------------------


def test_junk_and_bulk_rank_below_correspondence_but_stay_reachable(account, inbox):
    junk = mapped_folder(account, "junk", FolderRole.JUNK)
    EmailFactory(folder=junk, subject="Invoice invoice", body="invoice invoice invoice")
    EmailFactory(folder=inbox, subject="Invoice newsletter", is_bulk=True, body="invoice invoice invoice")
    EmailFactory(
        folder=inbox, subject="Invoice list thread", is_bulk=True, is_list_mail=True, body="invoice invoice"
    )
    EmailFactory(folder=inbox, subject="Lunch", body="and the invoice")
    refresh_term_stats()
    found = _subjects(search_emails("invoice", mail_filter=MailFilter(include_junk=True)))
    assert found[:2] == ["Invoice list thread", "Lunch"]
    assert set(found[2:]) == {"Invoice invoice", "Invoice newsletter"}
    # Junk left out (the default), no folder role is read, and bulk still comes after.
    assert _subjects(search_emails("invoice")) == ["Invoice list thread", "Lunch", "Invoice newsletter"]


def test_without_junk_in_the_selection_no_folder_role_is_read(account, inbox, quoted_reply):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    EmailFactory(folder=inbox, subject="Backup news", body="nightly backup", is_bulk=True, is_list_mail=False)
    refresh_term_stats()
    candidates = Email.objects.all()
    with CaptureQueriesContext(connection) as captured:
        hits = rank_lexical(candidates, QUERY, 40, row_facts=row_facts(3, QUERY, roles=False))
        ids = [hit.email_id for hit in hits]
        facts, quoted = facts_and_quoting(candidates, ids, QUERY, ids[:3], roles=False)
    assert not any("mailbox_foldermapping" in query["sql"] for query in captured.captured_queries)
    order = [(hit.email_id, hit.score) for hit in hits]
    assert facts_of_rows(hits, QUERY) == with_quoting(facts, order, quoted, 3)
    assert sum(fact.unwanted for fact in facts.values()) == 1  # the bulk newsletter


# --- threads ------------------------------------------------------------------------------


def _outage_threads(inbox):
    """Three replies of one thread that match "outage report" strongly, and one email of
    another thread that matches it more weakly: (the thread, its replies, the other)."""
    thread = uuid.uuid4()
    siblings = [
        EmailFactory(
            folder=inbox, subject=f"Re: outage report {n}", thread_id=thread, body="outage outage outage"
        )
        for n in range(3)
    ]
    other = EmailFactory(
        folder=inbox, subject="Outage report", thread_id=uuid.uuid4(), body="outage and notes on the network"
    )
    refresh_term_stats()
    return thread, siblings, other


def test_each_match_carries_its_thread(inbox):
    thread, siblings, other = _outage_threads(inbox)
    threads = {
        match.summary.stored_email_id: match.thread_id for match in search_emails("outage report").matches
    }
    assert {threads[str(e.id)] for e in siblings} == {str(thread)}
    assert threads[str(other.id)] == str(other.thread_id)


def test_a_strong_matchs_thread_lifts_its_weaker_message_over_another_thread(inbox, monkeypatch):
    strong = EmailFactory(
        folder=inbox, subject="Outage report", thread_id=(thread := uuid.uuid4()), body="outage outage report"
    )
    asked = EmailFactory(folder=inbox, subject="Re: notes", thread_id=thread, body="the outage")
    other = EmailFactory(
        folder=inbox, subject="Weekly", thread_id=uuid.uuid4(), body="a report of the week's outage"
    )
    refresh_term_stats()

    def ids() -> list[str]:
        return [match.summary.stored_email_id for match in search_emails("outage report").matches]

    monkeypatch.setattr(search, "Reranking", lambda: Reranking(thread_support=0.0))
    assert ids() == [str(strong.id), str(other.id), str(asked.id)]
    monkeypatch.undo()
    assert ids() == [str(strong.id), str(asked.id), str(other.id)]


def test_mail_stored_before_threading_has_no_thread_id(inbox):
    EmailFactory(folder=inbox, subject="Old mail", thread_id=None, body="archive")
    refresh_term_stats()
    assert search_emails("archive").matches[0].thread_id is None


def _facts(thread: str | None = None, sender: str = "x@example.org", unwanted: bool = False) -> Facts:
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    return Facts(received_at=moment, sender_address=sender, thread_id=thread, unwanted=unwanted)


def _plain(**knobs) -> Reranking:
    return Reranking(author_factor=1.0, bulk_factor=1.0, quoting_factor=1.0, **knobs)


def test_rerank_adds_a_share_of_the_threads_best_other_score():
    order = [("a1", 1.0), ("b", 0.6), ("a2", 0.3), ("x", 0.25), ("y", 0.2)]
    facts = {"a1": _facts("A"), "b": _facts("B"), "a2": _facts("A"), "x": _facts(None), "y": _facts(None)}
    assert [e for e, _ in rerank(order, facts, None, _plain(thread_support=0.0))] == [
        "a1",
        "b",
        "a2",
        "x",
        "y",
    ]
    supported = dict(rerank(order, facts, None, _plain(thread_support=0.5)))
    # a2 gains half of a1's 1.0, a1 half of a2's 0.3; mail without a thread supports nothing.
    assert supported == pytest.approx({"a1": 1.15, "a2": 0.8, "b": 0.6, "x": 0.25, "y": 0.2})
    assert list(supported) == ["a1", "a2", "b", "x", "y"]


def test_only_a_match_near_the_top_supports_its_thread():
    order = [("b", 1.0), ("a1", 0.9), ("a2", 0.3)]
    facts = {"b": _facts("B"), "a1": _facts("A"), "a2": _facts("A")}
    near = dict(rerank(order, facts, None, _plain(thread_support=0.5, support_from=2)))
    assert near["a2"] == pytest.approx(0.75)
    far = dict(rerank(order, facts, None, _plain(thread_support=0.5, support_from=1)))
    assert far == pytest.approx({"b": 1.0, "a1": 0.9, "a2": 0.3})


# --- fusion keeps a strong lexical hit ----------------------------------------------------


def test_the_lexical_top_hit_keeps_a_place_in_the_window():
    lexical = [LexicalHit(email_id="strong", score=9.0, exact=True)] + [
        LexicalHit(email_id=f"both{n}", score=1.0, exact=True) for n in range(12)
    ]
    semantic = [VectorHit(email_id=f"both{n}", distance=0.1) for n in range(12)]
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    received = {hit.email_id: moment for hit in lexical}

    def ranked(kept: int) -> list[str]:
        fusion = Fusion(k=60, vector_weight=1.0, kept_lexical=kept, kept_place=10)
        return [email_id for email_id, _, _ in fuse(lexical, semantic, received, 10, fusion).ranked]

    assert "strong" not in ranked(0)
    assert ranked(1)[9] == "strong"


# --- the window's rows --------------------------------------------------------------------


def test_the_windows_rows_are_read_without_their_large_columns_and_in_a_fixed_number_of_queries(inbox):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def queries_for(count: int) -> list[str]:
        Email.objects.all().delete()
        for n in range(count):
            EmailFactory(folder=inbox, subject=f"Budget {n}", body=f"budget plan {n} " + "words " * 300)
        refresh_term_stats()
        with CaptureQueriesContext(connection) as captured:
            result = search_emails("budget")
        assert len(result.matches) == count and result.matches[0].snippets
        return [query["sql"] for query in captured.captured_queries]

    one, many = queries_for(1), queries_for(6)
    assert len(one) == len(many)  # no column is read afterwards, row by row
    rows = next(sql for sql in many if sql.startswith('SELECT "mailbox_email"."id"') and "IN (" in sql)
    assert '"mailbox_email"."text_body"' not in rows and '"mailbox_email"."search_vector"' not in rows


def test_the_windows_summaries_are_those_summarize_reads_apart_and_need_no_more_statements(inbox):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from mailbox.services.summaries import summarize, with_summary_columns

    EmailFactory(
        folder=inbox, subject="Budget for spring", to=[("Ann", "ann@example.org"), "", "bo@example.org"]
    )
    EmailFactory(folder=inbox, subject="Budget for autumn", to=["cy@example.org"])
    EmailFactory(folder=inbox, subject="Budget with nobody", to=[])
    refresh_term_stats()
    with CaptureQueriesContext(connection) as captured:
        result = search_emails("budget")
    apart = {s.stored_email_id: s for s in summarize(list(Email.objects.all()))}

    assert len(result.matches) == 3
    for match in result.matches:
        assert match.summary == apart[match.summary.stored_email_id]
    assert {tuple(m.summary.to_addresses) for m in result.matches} == {
        ("ann@example.org", "bo@example.org"),
        ("cy@example.org",),
        (),
    }
    assert not any(q["sql"].startswith('SELECT "mailbox_participant"') for q in captured.captured_queries)
    rows = list(with_summary_columns(Email.objects.all()))
    with CaptureQueriesContext(connection) as again:
        summarize(rows)
    assert again.captured_queries == []
