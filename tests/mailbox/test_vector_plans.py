"""The vector ranking's two plans: exact over a small selection, the HNSW index over a larger one.

Both must rank the same emails of the selection and nothing outside it; which one runs is
decided by the selection's size (embedding.EXACT_WITHIN), set here to force each.
"""

from __future__ import annotations

import math

import pytest
from django.db import connection

from mailbox.models import Email, EmbeddingProfile, Passage
from mailbox.services import embedding, selection_size
from mailbox.services.selection import select
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder
from tests.mailbox.session_settings import current_settings, settings_seen_by

pytestmark = pytest.mark.django_db(transaction=True)

DIMENSIONS = 8


def _vector(angle: float) -> list[float]:
    return [math.cos(angle), math.sin(angle), *([0.0] * (DIMENSIONS - 2))]


@pytest.fixture
def mailbox():
    profile = EmbeddingProfile.objects.create(
        provider="test", model="plans", dimensions=DIMENSIONS, active=True
    )
    embedding._ensure_vector_index(profile)
    chosen = MailAccountFactory(account_id="chosen")
    other = MailAccountFactory(account_id="other")
    inbox, archive = mapped_folder(chosen, "inbox", "inbox"), mapped_folder(chosen, "archive", "archive")
    elsewhere = mapped_folder(other, "inbox", "inbox")
    emails: dict[str, Email] = {}
    for step in range(30):
        folder = (inbox, archive, elsewhere)[step % 3]
        email = EmailFactory(folder=folder, embedded=True)
        Passage.objects.create(
            email=email, profile=profile, position=0, characters=10, embedding=_vector(step / 10)
        )
        emails[str(email.pk)] = email
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    selection_size.forget()
    return profile, emails, inbox


@pytest.mark.parametrize("exact_within", [0, 1000], ids=["hnsw", "exact"])
def test_both_plans_rank_the_selection_alone_nearest_first(mailbox, monkeypatch, exact_within):
    profile, emails, inbox = mailbox
    monkeypatch.setattr(embedding, "EXACT_WITHIN", exact_within)
    selection_size.forget()
    candidates = Email.objects.in_selection(select(["chosen"], ["inbox"]))

    hits = embedding.rank_vector(candidates, _vector(1.0), profile, 5)

    assert len(hits) == 5
    assert all(emails[hit.email_id].folder_id == inbox.pk for hit in hits)
    assert [hit.distance for hit in hits] == sorted(hit.distance for hit in hits)
    exact = sorted(
        (
            1.0 - float(p.embedding[0] * math.cos(1.0) + p.embedding[1] * math.sin(1.0)),
            str(p.email_id),
        )
        for p in Passage.objects.filter(email__folder=inbox)
    )[:5]
    assert [hit.email_id for hit in hits] == [email_id for _, email_id in exact]


def test_the_size_is_counted_once_per_selection(mailbox, django_assert_num_queries):
    _, _, _ = mailbox
    candidates = Email.objects.in_selection(select(["chosen"]))
    assert selection_size.selection_size(candidates, 5) == 6  # 20 emails, counted up to the cap + 1
    with django_assert_num_queries(0):
        assert selection_size.selection_size(candidates, 5) == 6
    assert selection_size.selection_size(candidates, 100) == 20  # another cap counts afresh


def test_the_index_scan_runs_under_its_settings_and_they_end_with_it(mailbox, monkeypatch):
    profile, _, _ = mailbox
    monkeypatch.setattr(embedding, "EXACT_WITHIN", 0)
    selection_size.forget()
    candidates = Email.objects.in_selection(select(["chosen"], ["inbox"]))
    names = ("hnsw.iterative_scan", "hnsw.ef_search", "hnsw.max_scan_tuples")

    before = current_settings(*names)
    with settings_seen_by("<=>", *names) as seen:
        embedding.rank_vector(candidates, _vector(1.0), profile, 5)

    assert seen == [("relaxed_order", str(embedding.HNSW_EF_SEARCH), str(embedding.HNSW_MAX_SCAN_TUPLES))]
    assert current_settings(*names) == before  # local to the ranking's transaction
