"""Lexical ranking on real PostgreSQL: one term per query word, real length normalization, hyphens."""

from __future__ import annotations

import pytest

from mailbox.models import Email, LexicalCollectionStat
from mailbox.services.lexical_search import (
    MAX_QUERY_WORDS,
    SCORE_DIGITS,
    query_words,
    rank_lexical,
    refresh_term_stats,
)
from mailbox.services.search import search_emails
from tests.configure import configure
from tests.mailbox.factories import EmailFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _lexical_only(settings):
    configure(settings, embedding_provider="none")


def _background(inbox, count: int = 20) -> None:
    for n in range(count):
        EmailFactory(
            folder=inbox, subject=f"Note {n}", body=f"Ordinary message number {n} about lunch and plans."
        )


def test_an_inflected_query_word_counts_once(inbox):
    # "payments" is stemmed differently from how it is written, "refund" is not: each is one
    # query word in one email of the same length, so both emails score the same.
    _background(inbox)
    inflected = EmailFactory(folder=inbox, subject="Alpha", body="The payments arrived.")
    plain = EmailFactory(folder=inbox, subject="Omega", body="Our refund arrived ok")
    refresh_term_stats()
    lengths = dict(Email.objects.filter(pk__in=[inflected.pk, plain.pk]).values_list("pk", "search_length"))
    assert lengths[inflected.pk] == lengths[plain.pk]

    words = query_words("payments refund")
    assert set(words.weights) == {"payments", "refund"}
    scores = {hit.email_id: hit.score for hit in rank_lexical(Email.objects.all(), "payments refund", 10)}
    assert scores[str(inflected.id)] == pytest.approx(scores[str(plain.id)])


def test_other_forms_of_a_word_are_found_and_say_they_are_not_exact(inbox):
    _background(inbox)
    EmailFactory(folder=inbox, subject="Settlement", body="The insurer paid for the repairs.")
    refresh_term_stats()
    (match,) = search_emails("insurers repaired").matches
    assert match.summary.subject == "Settlement" and match.match_kind == "stemmed"


def test_query_words_sharing_a_stem_are_one_word(inbox):
    EmailFactory(folder=inbox, subject="Invoice", body="payment payments paid")
    refresh_term_stats()
    words = query_words("payment payments")
    assert len(words.weights) == 1
    (forms,) = words.forms.values()
    assert {"payment", "payments"} <= set(forms)


def test_a_long_spam_full_of_the_words_does_not_outrank_a_short_right_message(inbox):
    _background(inbox)
    right = EmailFactory(folder=inbox, subject="Status", body="The database server outage started at noon.")
    filler = " ".join(f"offer{n} discount{n} prize{n}" for n in range(2000))
    EmailFactory(
        folder=inbox,
        subject="WIN BIG",
        body=(filler + " servers outages server outage ") * 3,
    )
    refresh_term_stats()
    assert LexicalCollectionStat.objects.get().average_length > 0

    (first, second) = rank_lexical(Email.objects.all(), "server outage", 10)
    assert first.email_id == str(right.id)


def test_a_hyphenated_query_word_is_one_word_and_its_parts_take_no_slots(inbox):
    EmailFactory(folder=inbox, subject="Agenda", body="A follow-up on the zebra enclosure.")
    refresh_term_stats()
    assert set(query_words("follow-up").weights) == {"follow-up"}
    # Twenty compounds and one plain word fit the cap only if the parts are not counted.
    compounds = " ".join(f"q{n}-r{n}" for n in range(20))
    assert 20 + 1 <= MAX_QUERY_WORDS < 3 * 20
    assert "zebra" in query_words(f"{compounds} zebra").weights
    # The index holds the compound and its parts: either form of the query finds the mail.
    assert [m.summary.subject for m in search_emails("follow-up").matches] == ["Agenda"]
    assert [m.summary.subject for m in search_emails("follow up").matches] == ["Agenda"]


def test_the_lexical_arm_can_rank_by_a_text_of_its_own(inbox):
    EmailFactory(folder=inbox, subject="Quarterly report", body="figures for the quarter")
    EmailFactory(folder=inbox, subject="Holiday rota", body="who is away in August")
    refresh_term_stats()
    result = search_emails("quarterly", lexical_query_text="Who is away\nin August?\tThanks")
    assert [m.summary.subject for m in result.matches] == ["Holiday rota"]
    assert all("**" in snippet for m in result.matches for snippet in m.snippets)
    assert [m.summary.subject for m in search_emails("quarterly").matches] == ["Quarterly report"]


def test_passages_take_the_lexical_text_too(inbox):
    from mailbox.services.passages import retrieve_passages

    EmailFactory(folder=inbox, subject="Quarterly report", body="figures for the quarter")
    EmailFactory(folder=inbox, subject="Holiday rota", body="who is away in August")
    refresh_term_stats()
    found = retrieve_passages(
        "quarterly",
        accounts=None,
        folders=None,
        limit=5,
        max_characters=200,
        lexical_query_text="away August",
    )
    assert [passage.subject for passage in found.passages] == ["Holiday rota"]


def test_messages_scoring_alike_come_newest_first(inbox):
    # Scores are rounded to SCORE_DIGITS places: a float sum taken in another order differs
    # in its last bits, which would otherwise decide between messages that score alike.
    _background(inbox)
    words = [f"{stem}{suffix}" for stem in ("quarter", "invoice", "pallet", "freight") for suffix in "xyzw"]
    for n, word in enumerate(words):  # each word in its own number of other messages
        for _ in range(n % 5):
            EmailFactory(folder=inbox, subject="Memo", body=f"{word} and other things")
    body = " ".join(words) + " " + " ".join(words[::3])
    copies = [EmailFactory(folder=inbox, subject="Freight status", body=body) for _ in range(12)]
    refresh_term_stats()

    hits = rank_lexical(Email.objects.filter(pk__in=[c.pk for c in copies]), " ".join(words), 12)

    newest_first = sorted(copies, key=lambda c: (c.received_at, str(c.id)), reverse=True)
    assert [hit.email_id for hit in hits] == [str(c.id) for c in newest_first]
    (score,) = {hit.score for hit in hits}
    assert score == round(score, SCORE_DIGITS) and score != round(score, SCORE_DIGITS - 3)
