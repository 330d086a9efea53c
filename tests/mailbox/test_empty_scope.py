"""A selection whose folders leave nothing to read is an empty result, never a failure.

An alias that matches nothing reads nothing (docs/search.md); so do a folder hidden from
tools, the junk role without includeJunkMail, and a deployment serving no account.
list_emails answers those with an empty page; search_emails and ask_mail's passages
answer with no matches, in the shape they always have, and query nothing.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import FolderRole
from mailbox.models import Email
from mailbox.services.embedding import active_profile, embed_pending, rank_vector
from mailbox.services.lexical_search import rank_lexical, refresh_term_stats
from mailbox.services.passages import retrieve_passages
from mailbox.services.search import search_emails
from mailbox.services.timeline import list_emails
from tests.configure import configure, scripted_embeddings
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder
from tests.support import isolated_provider_health

pytestmark = pytest.mark.django_db

# (accounts, folders) that resolve to a scope with no folder left to read.
EMPTY_SELECTIONS = {
    "alias-matching-nothing": (["billing"], ["no-such-folder"]),
    "hidden-folder": (["billing"], ["private"]),
    "junk-role-without-include-junk": (["billing"], ["role:junk"]),
}


def shared_billing():
    """An account whose only readable mail is one inbox message; its junk and a hidden folder match too."""
    account = MailAccountFactory(account_id="billing", display_name="Shared Billing")
    inbox = mapped_folder(account, "inbox", FolderRole.INBOX)
    junk = mapped_folder(account, "junk", FolderRole.JUNK)
    hidden = mapped_folder(account, "private", visible_to_tools=False)
    EmailFactory(folder=inbox, subject="Insurance claim settled", body="The insurer agreed to pay.")
    EmailFactory(folder=junk, subject="Insurance offer", body="Cheap insurance payments, click now!")
    EmailFactory(folder=hidden, subject="Insurance private", body="The insurer will pay the private claim.")
    refresh_term_stats()
    return account


@pytest.fixture
def billing():
    return shared_billing()


@pytest.fixture
def lexical(settings):
    configure(settings, embedding_provider="none")


@pytest.mark.parametrize("case", list(EMPTY_SELECTIONS))
def test_search_over_an_empty_selection_is_an_empty_result_like_list_emails(lexical, billing, case):
    accounts, folders = EMPTY_SELECTIONS[case]
    assert list_emails(accounts=accounts, folders=folders).emails == []

    with CaptureQueriesContext(connection) as queries:
        result = search_emails("insurer payment", accounts=accounts, folders=folders)

    assert result.matches == []
    assert (result.retrieval_mode, result.semantic_search) == ("lexical", "inactive")
    assert result.embedding_coverage is None and result.included_junk_mail is False
    # Nothing is ranked: no statement reads the search index.
    assert not any("search_vector" in query["sql"] for query in queries.captured_queries)


def test_search_with_no_served_account_is_an_empty_result(lexical):
    account = MailAccountFactory(account_id="retired", served=False)
    EmailFactory(folder=mapped_folder(account, "inbox", FolderRole.INBOX), subject="insurer payment")
    assert list_emails().emails == []

    result = search_emails("insurer payment")

    assert result.matches == [] and result.folder_freshness == []


@pytest.mark.parametrize("case", list(EMPTY_SELECTIONS))
def test_passages_over_an_empty_selection_are_none(lexical, billing, case):
    accounts, folders = EMPTY_SELECTIONS[case]

    retrieval = retrieve_passages(
        "insurer payment", accounts=accounts, folders=folders, limit=5, max_characters=400
    )

    assert retrieval.passages == () and retrieval.retrieval_mode == "lexical"


def test_hybrid_search_over_an_empty_selection_embeds_no_query(settings, scripted, billing):
    with isolated_provider_health(settings, "empty-scope"):
        configure(settings, **scripted_embeddings(scripted, embedding_max_retries=0))
        embed_pending()
        embedded_before = len(scripted.recorded("embeddings"))

        result = search_emails("insurer payment", accounts=["billing"], folders=["no-such-folder"])
        retrieval = retrieve_passages(
            "insurer payment", accounts=["billing"], folders=["private"], limit=5, max_characters=400
        )

    assert result.matches == [] and retrieval.passages == ()
    assert (result.retrieval_mode, result.semantic_search) == ("hybrid", "available")
    assert retrieval.retrieval_mode == "hybrid"
    assert (result.embedding_coverage.embedded_emails, result.embedding_coverage.emails_in_scope) == (0, 0)
    assert len(scripted.recorded("embeddings")) == embedded_before  # no query was embedded


def test_rankings_of_candidates_that_select_nothing_are_empty(settings, scripted, billing):
    with isolated_provider_health(settings, "empty-scope"):
        configure(settings, **scripted_embeddings(scripted, embedding_max_retries=0))
        embed_pending()
        profile = active_profile()
        nothing = Email.objects.filter(id__in=[])

        assert rank_lexical(nothing, "insurer payment", 10) == []
        assert rank_vector(nothing, [0.1] * int(profile.dimensions), profile, 10) == []
