"""The language a query is written in, told by its function words, and which of its words those are.

A mostly English mailbox holds German articles and auxiliaries ("die", "des", "ist") in few
messages, so their inverse document frequency is high and the common-word rule keeps them:
a German question then ranks German mail by its grammar. PostgreSQL's Snowball dictionaries
know each language's stop words (ts_lexize returns an empty array for them); the language
whose stop words a query uses most is the query's language, and only that language's stop
words are dropped, so "die" stays a word in an English query ("the batteries die").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

# The Snowball dictionaries that ship a stop-word list (pg_ts_dict: `stopwords = ...`).
LANGUAGES = (
    "english",
    "german",
    "french",
    "dutch",
    "spanish",
    "italian",
    "portuguese",
    "danish",
    "norwegian",
    "swedish",
    "finnish",
    "hungarian",
    "russian",
    "turkish",
    "nepali",
)
# A query is read as one language when that language's stop words occur at least this
# often in it and more often than any other language's; otherwise it is undetermined and
# nothing is dropped. Chosen by cross-validation (bench/retrieval_languages.py).
MIN_FUNCTION_WORDS = 2
# The stemmer a query of a language is related to the index through (mailbox.lexical's
# STEMMERS); a query of any other language, or undetermined, uses them all.
STEMMER_OF = {"english": "english_stem", "german": "german_stem"}


def stop_languages_sql(word: str) -> str:
    """SQL for the array of LANGUAGES in which the text expression `word` is a stop word.

    `word` is spliced: pass a column name of the caller's own statement, never a value.
    """
    cases = ", ".join(
        f"CASE WHEN ts_lexize('{language}_stem', {word}) = '{{}}' THEN '{language}' END"
        for language in LANGUAGES
    )
    return f"array_remove(ARRAY[{cases}]::text[], NULL)"


@dataclass(frozen=True)
class Reading:
    language: str | None  # None: undetermined (too few function words, or a tie)
    function_words: frozenset[str]  # the query words that are stop words of `language`


UNDETERMINED = Reading(language=None, function_words=frozenset())


def read(
    counts: Mapping[str, int], stop_languages: Mapping[str, frozenset[str]], minimum: int | None = None
) -> Reading:
    """The query's language from its words' counts and the languages each word is a stop word of.

    A word listed by several languages ("was" is English and German) counts for each of
    them. A tie between the best languages is undetermined: German and Dutch share "die",
    Danish and Norwegian most of their lists, and a guess would drop words a reader meant.
    """
    least = MIN_FUNCTION_WORDS if minimum is None else minimum
    hits: Counter[str] = Counter()
    for word, count in counts.items():
        for language in stop_languages.get(word, frozenset()):
            hits[language] += count
    ranked = hits.most_common(2)
    if not ranked or ranked[0][1] < max(least, 1):
        return UNDETERMINED
    if len(ranked) > 1 and ranked[1][1] == ranked[0][1]:
        return UNDETERMINED
    language = ranked[0][0]
    return Reading(
        language=language,
        function_words=frozenset(w for w in counts if language in stop_languages.get(w, frozenset())),
    )
