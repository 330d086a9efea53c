"""A query's language, told by its function words: those words are neither scored nor marked."""

from __future__ import annotations

import pytest
from django.db import connection

from mailbox.models import Email
from mailbox.services import lexical_search, query_language
from mailbox.services.lexical_search import highlight, query_words, rank_lexical, refresh_term_stats
from mailbox.services.search import search_emails
from tests.configure import configure
from tests.mailbox.factories import EmailFactory

pytestmark = pytest.mark.django_db

GERMAN_QUESTION = "Wie teuer ist die Reparatur des Druckers?"


@pytest.fixture(autouse=True)
def _lexical_only(settings):
    configure(settings, embedding_provider="none")


@pytest.fixture
def mostly_english(inbox):
    """Sixty English notes and a few German newsletters: German function words are rare here."""
    for n in range(60):
        EmailFactory(
            folder=inbox,
            subject=f"Note {n}",
            body=f"The weekly message number {n} about lunch, plans and the office kitchen.",
        )
    for n in range(3):
        EmailFactory(
            folder=inbox,
            subject=f"Newsletter {n}",
            body=(
                f"Die Ausgabe {n} des Monats ist da. Die Termine des Vereins, die Berichte "
                "und was sonst noch ist: alles in dieser Ausgabe."
            ),
        )
    german = EmailFactory(
        folder=inbox,
        subject="Kostenvoranschlag",
        body="Die Reparatur des Druckers kostet 120 Euro, der Techniker kommt am Montag.",
    )
    english = EmailFactory(
        folder=inbox,
        subject="Printer repair",
        body="The repair of the printer on the second floor will cost 120 euros.",
    )
    batteries = EmailFactory(
        folder=inbox,
        subject="Field kit",
        body="In the cold the batteries die within an hour, so we bring spares.",
    )
    EmailFactory(folder=inbox, subject="Print shop", body="The print shop prints our flyers.")
    refresh_term_stats()
    return {"german": german, "english": english, "batteries": batteries}


def _marked(snippets: list[str]) -> set[str]:
    return {piece.lower() for snippet in snippets for piece in snippet.split("**")[1::2]}


def test_the_german_question_scores_no_function_words(mostly_english):
    words = query_words(GERMAN_QUESTION)
    assert words.language == "german"
    assert words.function_words == {"wie", "ist", "die", "des"}
    assert set(words.weights) == {"teuer", "reparatur", "druckers"}


def test_the_german_question_finds_the_repair_mail_and_no_newsletter(mostly_english):
    result = search_emails(GERMAN_QUESTION)
    subjects = [m.summary.subject for m in result.matches]
    assert subjects[0] == "Kostenvoranschlag"
    assert not any(subject.startswith("Newsletter") for subject in subjects)
    marked = _marked([s for m in result.matches for s in m.snippets])
    assert {"reparatur", "druckers"} <= marked
    assert not marked & {"die", "des", "ist", "wie"}


def test_extracts_of_a_german_question_do_not_mark_its_function_words(mostly_english):
    german = str(mostly_english["german"].pk)
    (extract,) = highlight([german], GERMAN_QUESTION, 1, 300)[german]
    assert _marked([extract]) == {"reparatur", "druckers"}


def test_an_english_query_keeps_die_as_a_word(mostly_english):
    query = "Do the batteries die in the cold?"
    words = query_words(query)
    assert words.language == "english"
    assert "die" in words.weights and "the" not in words.weights
    batteries = str(mostly_english["batteries"].pk)
    assert rank_lexical(Email.objects.all(), query, 10)[0].email_id == batteries
    (extract,) = highlight([batteries], query, 1, 300)[batteries]
    assert {"die", "batteries", "cold"} <= _marked([extract])


def test_both_stemmers_relate_words_unless_told_to_follow_the_query_language(mostly_english, monkeypatch):
    # The German stemmer takes "printer" to "print", which is another word in English.
    assert "print" in query_words("Is the printer broken again?").forms["printer"]
    monkeypatch.setattr(lexical_search, "STEM_BY_LANGUAGE", True)
    monkeypatch.setattr(lexical_search, "_words_cache", {})
    english = query_words("Is the printer broken again?")
    assert english.language == "english"
    assert "print" not in english.forms["printer"]
    undetermined = query_words("printer")
    assert undetermined.language is None
    assert "print" in undetermined.forms["printer"]


def test_a_french_question_drops_french_function_words(mostly_english):
    words = query_words("Quel est le prix de la réparation de l'imprimante ?")
    assert words.language == "french"
    assert {"est", "le", "de", "la"} <= words.function_words
    assert {"prix", "réparation", "imprimante"} <= set(words.weights)


def test_a_query_of_function_words_only_is_searched_as_written(mostly_english):
    words = query_words("Was ist das?")
    assert words.language == "german"
    assert not words.function_words
    assert words.weights


@pytest.mark.parametrize(
    ("counts", "stops", "language"),
    [
        # German and Dutch both list "die": a tie tells nothing.
        ({"die": 1, "rechnung": 1}, {"die": {"german", "dutch"}}, None),
        # One function word is too little to drop anything by.
        ({"ist": 1, "offen": 1}, {"ist": {"german"}}, None),
        ({"ist": 1, "die": 1, "rechnung": 1}, {"ist": {"german"}, "die": {"german", "dutch"}}, "german"),
        # A word listed by two languages counts for both; a repeated word counts each time.
        (
            {"the": 2, "was": 1, "die": 1},
            {"the": {"english"}, "was": {"english", "german"}, "die": {"german"}},
            "english",
        ),
    ],
)
def test_the_language_is_the_one_whose_function_words_occur_most(counts, stops, language):
    reading = query_language.read(
        counts, {word: frozenset(langs) for word, langs in stops.items()}, minimum=2
    )
    assert reading.language == language
    if language is None:
        assert not reading.function_words
    else:
        assert reading.function_words == {w for w in counts if language in stops.get(w, set())}


def test_every_language_is_a_snowball_dictionary_with_stop_words():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT dictname FROM pg_ts_dict WHERE dictinitoption LIKE %s",
            ["%stopwords%"],
        )
        with_stop_words = {name for (name,) in cursor.fetchall()}
    assert {f"{language}_stem" for language in query_language.LANGUAGES} <= with_stop_words
    assert set(query_language.STEMMER_OF) <= set(query_language.LANGUAGES)
