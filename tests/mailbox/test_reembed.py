"""Re-embedding: a change of model switches the profile and embeds every email again.

Real PostgreSQL with pgvector and the real bundled models: USE multilingual v3 (512
dimensions) and multilingual-e5-small (384), so a switch changes the vector size as it
does for an operator. The tests commit (transaction=True): PostgreSQL builds no index on a
table with deferred checks pending in the same transaction, and reembed's processes read
only what is committed.
"""

from __future__ import annotations

import io
import logging

import pytest
from django.core.management import call_command
from django.db import connection

from accounts.models import FolderRole
from mailbox import tasks
from mailbox.models import Email, EmbeddingProfile, Passage
from mailbox.services.embedding import embed_pending, pending_count, semantic_state
from mailbox.services.lexical_search import refresh_term_stats
from mailbox.services.reembedding import reembed, sweep_slot
from mailbox.services.search import search_emails
from mailfathom.core.capability import CapabilityState
from mailfathom.providers.local import E5_MODEL, USE_MODEL
from tests.configure import configure
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder

pytestmark = pytest.mark.usefixtures("own_provider_health")

MAIL = [
    ("Car insurance", "Your vehicle policy renewal is due next month."),
    ("Rechnung März", "Die Rechnung für März ist innerhalb von 30 Tagen zu bezahlen."),
    ("Lunch", "Shall we meet for lunch on Friday at the Italian place?"),
    ("Zugfahrt", "Der Zug nach Hamburg fährt um 8 Uhr am Gleis 3 ab."),
]


@pytest.fixture
def mailbox_with_mail():
    account = MailAccountFactory(account_id="team", display_name="Team")
    inbox = mapped_folder(account, "inbox", FolderRole.INBOX)
    return [EmailFactory(folder=inbox, subject=subject, body=body) for subject, body in MAIL]


def use_model(settings):
    configure(settings, embedding_provider="local", embedding_model=USE_MODEL, embedding_dimensions=512)


def e5_model(settings):
    configure(settings, embedding_provider="local", embedding_model=E5_MODEL, embedding_dimensions=384)


def vector_sizes(profile: EmbeddingProfile) -> set[int]:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT DISTINCT vector_dims(embedding) FROM {Passage._meta.db_table} WHERE profile_id = %s",
            [profile.pk],
        )
        return {row[0] for row in cursor.fetchall()}


def hnsw_index_exists(profile: EmbeddingProfile) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_class WHERE relname = %s", [f"passage_hnsw_{profile.pk}"])
        return cursor.fetchone() is not None


@pytest.mark.django_db(transaction=True)
def test_a_change_of_model_is_a_switch_that_embeds_every_email_again(settings, mailbox_with_mail):
    use_model(settings)
    assert embed_pending().embedded == len(MAIL)
    first = EmbeddingProfile.objects.get(active=True)

    e5_model(settings)
    # The sweep does not put vectors into a space no search reads, and says why.
    assert embed_pending().stopped_by == "profile"
    assert semantic_state() == CapabilityState.DEGRADED
    assert Passage.objects.exclude(profile=first).count() == 0

    events = []
    result = reembed(processes=1, progress=events.append)

    second = EmbeddingProfile.objects.get(active=True)
    assert (second.model, second.dimensions) == (E5_MODEL, 384)
    assert (result.switched_from, result.profile) == (str(first), str(second))
    assert events[0].done == 0 and {e.total for e in events} == {len(MAIL)}
    assert events[-1].done == len(MAIL) and [e.done for e in events] == sorted(e.done for e in events)
    assert result.sweep.embedded == len(MAIL) and result.pending_after == 0
    assert vector_sizes(second) == {384} and vector_sizes(first) == {512}
    assert hnsw_index_exists(second)
    assert Email.objects.filter(embedded=False).count() == 0
    assert semantic_state() == CapabilityState.AVAILABLE
    refresh_term_stats()
    found = search_emails("auto insurance premium")
    assert found.retrieval_mode == "hybrid"
    assert found.matches[0].summary.subject == "Car insurance"


@pytest.mark.django_db(transaction=True)
def test_a_switch_back_embeds_only_the_mail_that_arrived_since(settings, mailbox_with_mail):
    use_model(settings)
    embed_pending()
    e5_model(settings)
    reembed(processes=1)
    EmailFactory(folder=mailbox_with_mail[0].folder, subject="New", body="Arrived under e5.")

    use_model(settings)
    result = reembed(processes=1)

    assert (result.pending_before, result.sweep.embedded) == (1, 1)
    assert Passage.objects.filter(profile__model=USE_MODEL).count() == len(MAIL) + 1


@pytest.mark.django_db(transaction=True)
def test_all_starts_over_under_the_same_profile_with_the_new_window(settings, mailbox_with_mail):
    use_model(settings)
    embed_pending()
    configure(settings, embedding_window_characters=200)
    long_one = EmailFactory(folder=mailbox_with_mail[0].folder, subject="Long", body="word " * 200)
    embed_pending()
    configure(settings, embedding_window_characters=1000)

    result = reembed(everything=True, processes=1)

    assert (result.switched_from, result.pending_before, result.sweep.embedded) == (
        "",
        len(MAIL) + 1,
        len(MAIL) + 1,
    )
    assert Passage.objects.get(email=long_one).characters == 1000


@pytest.mark.django_db(transaction=True)
def test_the_periodic_sweep_steps_aside_while_reembed_holds_the_slot(settings, mailbox_with_mail):
    use_model(settings)
    with sweep_slot() as renew:
        assert renew is not None
        assert tasks.embed_pending() == {"skipped": "a sweep is running"}
        with sweep_slot() as second:
            assert second is None
        assert reembed(processes=1).busy
    assert pending_count() == len(MAIL)
    assert tasks.embed_pending() == {"embedded": len(MAIL), "stopped_by": ""}


@pytest.mark.django_db(transaction=True)
def test_the_periodic_sweep_warns_when_the_model_needs_a_switch(settings, mailbox_with_mail, caplog):
    use_model(settings)
    embed_pending()
    e5_model(settings)
    with caplog.at_level(logging.WARNING, logger="mailbox.tasks"):
        assert tasks.embed_pending()["stopped_by"] == "profile"
    assert "run reembed" in caplog.text


@pytest.mark.django_db(transaction=True)
def test_several_processes_share_the_mail_without_embedding_any_twice(settings):
    use_model(settings)
    account = MailAccountFactory(account_id="many", display_name="Many")
    inbox = mapped_folder(account, "inbox", FolderRole.INBOX)
    for n in range(90):
        EmailFactory(folder=inbox, subject=f"Note {n}", body=f"Item {n} of the inventory list.")
    EmailFactory(folder=inbox, subject="", body="")  # nothing to embed: settled all the same

    events = []
    result = reembed(processes=3, progress=events.append)

    assert result.pending_before == 91 and events[-1].done == 91  # every shard's batches added up
    assert (result.sweep.embedded, result.sweep.skipped_empty, result.pending_after) == (90, 1, 0)
    assert Passage.objects.count() == 90
    assert Passage.objects.values("email").distinct().count() == 90


@pytest.mark.django_db(transaction=True)
def test_the_command_reports_the_switch_and_what_it_embedded(settings, mailbox_with_mail):
    use_model(settings)
    embed_pending()
    e5_model(settings)
    out = io.StringIO()

    call_command("reembed", "--processes", "1", "--no-progress", "--discard-old", stdout=out)

    text = out.getvalue()
    assert f"from local:{USE_MODEL}:512 to local:{E5_MODEL}:384" in text
    assert f"Embedded {len(MAIL)} emails under local:{E5_MODEL}:384 (0 had no text); 0 still pending." in text
    assert f"Deleted {len(MAIL)} vectors of inactive profiles." in text
    assert Passage.objects.filter(profile__model=USE_MODEL).count() == 0
