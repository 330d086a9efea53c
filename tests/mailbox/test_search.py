"""search_emails: refusals at their bounds, scope, lexical ranking and extracts, and privacy."""

from __future__ import annotations

import io
import logging

import pytest
from django.core.management import call_command

from accounts.models import FolderRole
from mailbox.models import LexicalTermStat
from mailbox.services.lexical_search import refresh_term_stats
from mailbox.services.search import search_emails
from mailbox.services.selection import MailFilter
from mailfathom.core.errors import MailFathomError
from tests.configure import configure
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _lexical_only(settings):
    """These tests are about lexical search; hybrid is covered in test_search_hybrid."""
    configure(settings, embedding_provider="none")


@pytest.fixture
def mailbox_with_mail():
    account = MailAccountFactory(account_id="billing", display_name="Shared Billing")
    inbox = mapped_folder(account, "inbox", FolderRole.INBOX)
    junk = mapped_folder(account, "junk", FolderRole.JUNK)
    hidden = mapped_folder(account, "private", visible_to_tools=False)
    EmailFactory(
        folder=inbox, subject="Insurance claim settled", body="The insurer agreed to pay the repair costs."
    )
    EmailFactory(folder=inbox, subject="Lunch on Friday", body="Shall we meet at noon for lunch?")
    EmailFactory(
        folder=inbox, subject="Rechnung März", body="Die Zahlungen für die Versicherung sind eingegangen."
    )
    EmailFactory(folder=junk, subject="Insurance offer", body="Cheap insurance payments, click now!")
    EmailFactory(folder=hidden, subject="Insurance private", body="The insurer will pay the private claim.")
    refresh_term_stats()
    return account


def _subjects(result) -> list[str]:
    return [match.summary.subject for match in result.matches]


def _code(**kwargs) -> int:
    with pytest.raises(MailFathomError) as caught:
        search_emails(**kwargs)
    return caught.value.code


@pytest.mark.parametrize("query", ["", "   ", "x" * 513, "pay\nment", "a\x00b"])
def test_unusable_query_text_is_51002(mailbox_with_mail, query):
    assert _code(query_text=query) == 51002


def test_query_of_512_characters_is_accepted(mailbox_with_mail):
    assert search_emails("insurer " + "x" * 504).retrieval_mode == "lexical"


@pytest.mark.parametrize("limit", [0, 51, -1, True])
def test_result_limit_outside_1_to_50_is_51003(mailbox_with_mail, limit):
    assert _code(query_text="insurer", result_limit=limit) == 51003


@pytest.mark.parametrize("limit", [1, 50])
def test_result_limit_at_the_bounds_is_served(mailbox_with_mail, limit):
    assert len(search_emails("insurer", result_limit=limit).matches) <= limit


def test_unserved_account_is_53001_even_when_nothing_would_match(mailbox_with_mail):
    assert _code(query_text="zzzz-nothing", accounts=["nobody"]) == 53001


def test_stemmed_words_match_and_say_so(mailbox_with_mail):
    result = search_emails("insurers paying")
    assert _subjects(result) == ["Insurance claim settled"]
    assert result.matches[0].match_kind == "stemmed"
    assert result.retrieval_mode == "lexical" and result.semantic_search == "inactive"


def test_exact_words_say_so(mailbox_with_mail):
    assert search_emails("insurer").matches[0].match_kind == "exact"


def test_german_stems_match(mailbox_with_mail):
    assert _subjects(search_emails("Zahlung Versicherungen")) == ["Rechnung März"]


def test_junk_and_hidden_folders_are_never_searched_unasked(mailbox_with_mail):
    result = search_emails("insurance insurer")
    assert "Insurance offer" not in _subjects(result)
    assert "Insurance private" not in _subjects(result)
    assert not result.included_junk_mail
    with_junk = search_emails("insurance insurer", mail_filter=MailFilter(include_junk=True))
    assert "Insurance offer" in _subjects(with_junk)
    assert "Insurance private" not in _subjects(with_junk)


def test_subject_weighs_more_than_the_body(mailbox_with_mail):
    inbox = mailbox_with_mail.folders.get(alias="inbox").sync_state
    EmailFactory(folder=inbox, subject="Weekly notes", body="lunch lunch was discussed among other things")
    refresh_term_stats()
    assert _subjects(search_emails("lunch"))[0] == "Lunch on Friday"


def test_snippets_mark_matches_with_double_asterisks_only(mailbox_with_mail):
    (match,) = search_emails("repair").matches
    assert match.snippets and all("**repair**" in snippet for snippet in match.snippets)
    assert "<b>" not in "".join(match.snippets)


def test_an_empty_result_is_an_ordinary_result_with_freshness(mailbox_with_mail):
    result = search_emails("zzzznothing")
    assert result.matches == []
    assert [entry.alias for entry in result.folder_freshness] == ["inbox"]


def test_filters_narrow_what_is_ranked(mailbox_with_mail):
    assert _subjects(search_emails("insurer lunch", mail_filter=MailFilter(subject_fragment="lunch"))) == [
        "Lunch on Friday"
    ]


def test_ties_go_to_the_newest_received(mailbox_with_mail):
    inbox = mailbox_with_mail.folders.get(alias="inbox").sync_state
    EmailFactory(folder=inbox, subject="Twin", body="identical words here")
    newest = EmailFactory(folder=inbox, subject="Twin", body="identical words here")
    refresh_term_stats()
    assert search_emails("identical").matches[0].summary.stored_email_id == str(newest.id)


def test_no_log_line_carries_the_query_or_mail_content(mailbox_with_mail, caplog):
    caplog.set_level(logging.DEBUG)
    search_emails("insurer repair secretword")
    logged = "\n".join(record.getMessage() for record in caplog.records)
    for private in ("insurer", "secretword", "Insurance claim", "repair costs"):
        assert private not in logged


def test_term_statistics_refresh_command_counts_words(mailbox_with_mail):
    LexicalTermStat.objects.all().delete()
    out = io.StringIO()

    call_command("refresh_term_stats", stdout=out)

    counted = LexicalTermStat.objects.count()
    assert counted > 0 and out.getvalue().strip() == f"{counted} words counted."
    assert LexicalTermStat.objects.filter(word="insurer").exists()  # a word of the mailbox's mail


def test_candidates_come_from_the_rarest_words_whose_postings_fit_the_budget():
    from mailbox.services.lexical_search import QueryWords

    words = QueryWords(
        weights={"zygote": 9.0, "invoice": 4.0, "meeting": 2.0, "the": 0.1},
        exact=frozenset(),
        documents={"zygote": 3, "invoice": 900, "meeting": 5000, "the": 90000},
    )
    assert words.generating(1000) == ["zygote", "invoice"]
    assert words.generating(10) == ["zygote"]
    assert words.generating(1) == ["zygote"]  # at least the rarest word, whatever the budget
    assert words.generating(10**6) == ["zygote", "invoice", "meeting", "the"]


def test_a_selection_holding_part_of_the_mailbox_spends_the_budget_on_its_own_share():
    from mailbox.services.lexical_search import QueryWords

    words = QueryWords(
        weights={"zygote": 9.0, "invoice": 4.0, "meeting": 2.0},
        exact=frozenset(),
        documents={"zygote": 300, "invoice": 900, "meeting": 5000},
    )
    assert words.generating(1000) == ["zygote"]
    # A tenth of the mailbox holds about a tenth of each word's postings: 30 + 90 + 500.
    assert words.generating(1000, share=0.1) == ["zygote", "invoice", "meeting"]
    assert words.generating(100, share=0.1) == ["zygote"]


def test_a_small_account_among_many_finds_mail_holding_only_its_second_rarest_word(monkeypatch):
    from mailbox.services import lexical_search, selection_size

    small = MailAccountFactory(account_id="small")
    large = MailAccountFactory(account_id="large")
    small_inbox = mapped_folder(small, "inbox", FolderRole.INBOX)
    large_inbox = mapped_folder(large, "inbox", FolderRole.INBOX)
    EmailFactory(folder=small_inbox, subject="Zygote samples", body="The zygote samples arrived.")
    EmailFactory(folder=small_inbox, subject="Okapi enclosure", body="The okapi enclosure needs a new gate.")
    EmailFactory.create_batch(7, folder=large_inbox, subject="Zygote", body="zygote notes")
    EmailFactory.create_batch(19, folder=large_inbox, subject="Okapi", body="okapi notes")
    EmailFactory.create_batch(100, folder=large_inbox, subject="Weekly notes", body="nothing of either")
    refresh_term_stats()
    selection_size.forget()
    # 8 and 20 of 128 emails hold the two words: in the whole mailbox a budget of 10 postings
    # lets only the rarer choose candidates; the small account holds 2 of 128, so both fit.
    monkeypatch.setattr(lexical_search, "POSTING_BUDGET", 10)

    everywhere = search_emails("zygote okapi", result_limit=50)
    in_small = search_emails("zygote okapi", accounts=["small"])

    assert all("Okapi" not in subject for subject in _subjects(everywhere))
    assert sorted(_subjects(in_small)) == ["Okapi enclosure", "Zygote samples"]
