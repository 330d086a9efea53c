"""Hybrid search: the embedding sweep, fused ranking, and degraded answers when the provider fails.

The provider is the real `openai` client against the scripted OpenAI-compatible server in
tests/providers (deterministic vectors), so the whole client path runs; one test uses the
bundled local model for meaning rather than shared words.
"""

from __future__ import annotations

import pytest

from accounts.models import FolderRole
from mailbox.models import Email, EmbeddingSpend, Passage
from mailbox.services.embedding import embed_pending
from mailbox.services.lexical_search import refresh_term_stats
from mailbox.services.search import search_emails
from mailbox.services.selection import MailFilter
from tests.configure import configure, scripted_embeddings
from tests.mailbox.factories import EmailFactory, mapped_folder
from tests.providers.openai_server import hang, model_not_found, status

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("own_provider_health")]


def test_sweep_embeds_newest_first_and_records_spend(settings, scripted, inbox):
    configure(settings, **scripted_embeddings(scripted, embedding_max_retries=0))
    old = EmailFactory(folder=inbox, subject="old", body="first words")
    new = EmailFactory(folder=inbox, subject="new", body="second words")

    result = embed_pending(max_batches=1, batch_size=1)

    assert result.embedded == 1
    assert Email.objects.get(pk=new.pk).embedded and not Email.objects.get(pk=old.pk).embedded
    assert EmbeddingSpend.objects.get().characters == len("new\n\nsecond words")
    embed_pending()
    assert Passage.objects.count() == 2


def test_search_is_hybrid_when_a_profile_is_active_and_the_provider_answers(settings, scripted, inbox):
    configure(settings, **scripted_embeddings(scripted, embedding_max_retries=0))
    EmailFactory(folder=inbox, subject="Quarterly report", body="figures for the quarter")
    embed_pending()
    refresh_term_stats()

    result = search_emails("quarterly figures")

    assert result.retrieval_mode == "hybrid"
    assert result.semantic_search == "available"
    assert result.embedding_coverage.embedded_emails == 1
    assert result.matches[0].summary.subject == "Quarterly report"


@pytest.mark.parametrize(
    "failure",
    [status(500), status(429, retry_after="0"), status(401), hang(3), model_not_found()],
    ids=["500", "429", "401", "timeout", "wrong-model"],
)
def test_provider_failure_answers_lexically_reports_degraded_and_recovers(settings, scripted, inbox, failure):
    configure(settings, **scripted_embeddings(scripted, embedding_max_retries=0, embedding_timeout_seconds=1))
    EmailFactory(folder=inbox, subject="Quarterly report", body="figures for the quarter")
    embed_pending()
    refresh_term_stats()

    scripted.embeddings.script(failure)
    failed = search_emails("quarterly figures")
    assert failed.retrieval_mode == "lexical"
    assert failed.semantic_search == "degraded"
    assert [m.summary.subject for m in failed.matches] == ["Quarterly report"]

    recovered = search_emails("quarterly figures")
    assert recovered.retrieval_mode == "hybrid"
    assert recovered.semantic_search == "available"


def test_a_degraded_answer_is_reranked_as_a_lexical_only_one(settings, scripted, inbox):
    # Ranked for a fusion, then answered lexically: the reranking's facts and quoting are
    # read apart (the rows were not read with the ranking), with the same outcome.
    configure(settings, **scripted_embeddings(scripted, embedding_max_retries=0))
    query = "the backup server failed again last night during the nightly copy of the archive"
    EmailFactory(
        folder=inbox, subject="Nightly backup", body="Did the backup server copy the archive last night?"
    )
    EmailFactory(folder=inbox, subject="Re: Nightly backup", body=f"Thanks, fixed.\n\n> {query}\n")
    junk = mapped_folder(inbox.mapping.account, "junk", FolderRole.JUNK)
    EmailFactory(folder=junk, subject="Backup server failed again last night", body=query)
    embed_pending()
    refresh_term_stats()

    scripted.embeddings.script(status(500))
    failed = search_emails(query, mail_filter=MailFilter(include_junk=True))
    assert failed.semantic_search == "degraded"
    # Each of the other two holds the whole query; only the junk and quoting factors put
    # the answered mail above them.
    subjects = [m.summary.subject for m in failed.matches]
    assert subjects[0] == "Nightly backup"
    assert set(subjects[1:]) == {"Re: Nightly backup", "Backup server failed again last night"}


def test_configured_model_other_than_the_active_profile_is_degraded(settings, scripted, inbox):
    configure(settings, **scripted_embeddings(scripted, embedding_max_retries=0))
    EmailFactory(folder=inbox, subject="a", body="b")
    embed_pending()
    configure(
        settings,
        embedding_provider="openai",
        embedding_base_url=scripted.base_url,
        embedding_model="other-model",
        embedding_api_key="k",
        embedding_max_retries=0,
    )

    result = search_emails("anything at all")

    assert result.semantic_search == "degraded"
    assert result.retrieval_mode == "lexical"


def test_no_provider_is_inactive_and_lexical(settings, inbox):
    configure(settings, embedding_provider="none")
    EmailFactory(folder=inbox, subject="Quarterly report", body="figures")
    refresh_term_stats()
    result = search_emails("quarterly")
    assert (result.retrieval_mode, result.semantic_search, result.embedding_coverage) == (
        "lexical",
        "inactive",
        None,
    )


def test_local_model_finds_mail_by_meaning_under_a_narrow_filter(settings, inbox):
    configure(settings, embedding_provider="local")
    EmailFactory(folder=inbox, subject="Car insurance", body="Your vehicle policy renewal is due next month.")
    for n in range(30):
        EmailFactory(folder=inbox, subject=f"Recipe {n}", body="Mix flour, sugar and eggs, then bake.")
    EmailFactory(
        folder=inbox,
        subject="Automobile coverage",
        body="The premium for insuring your car goes up.",
        to=["owner@example.org"],
    )
    embed_pending()
    refresh_term_stats()

    result = search_emails(
        "auto insurance premium", mail_filter=MailFilter(recipient_address="owner@example.org")
    )

    assert result.retrieval_mode == "hybrid"
    assert [m.summary.subject for m in result.matches] == ["Automobile coverage"]
    wide = search_emails("motor vehicle policy")
    assert wide.matches[0].summary.subject == "Car insurance"


def test_coverage_is_counted_once_per_scope_and_profile_for_a_while(settings, scripted, inbox, monkeypatch):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from mailbox.services import search

    configure(settings, **scripted_embeddings(scripted, embedding_max_retries=0))
    EmailFactory(folder=inbox, subject="Quarterly report", body="figures for the quarter")
    embed_pending()
    search.forget_coverage()

    def counts(query: str) -> int:
        with CaptureQueriesContext(connection) as captured:
            result = search_emails(query)
        assert result.embedding_coverage.emails_in_scope == 1
        return sum('AS "total"' in q["sql"] for q in captured.captured_queries)

    assert counts("quarterly") == 1
    assert counts("figures") == 0  # the same scope within COVERAGE_SECONDS
    clock = search.time.monotonic() + search.COVERAGE_SECONDS + 1
    monkeypatch.setattr(search.time, "monotonic", lambda: clock)
    assert counts("report") == 1
