"""Lexical retrieval by query language: recall@1, recall@10 and MRR on German and English queries.

    .venv/bin/python bench/retrieval_languages.py [--keep] [--folds 5] [--json PATH]

Uses bench/retrieval.py's scratch database (the corpus Maildir as one account; --keep
reuses it) and ranks four query sets with rank_lexical at depth 10:

- reply pairs: the corpus's 680 labelled pairs as they are (a reply's first 40 words,
  English nearly always), the reply left out of its own candidates;
- English-framed and German-framed: for each pair, the first CONTENT_WORDS words of its
  query that are not English stop words, set into a question with English or with German
  function words (TEMPLATES, taken in turn). Both sets hold the same content words and
  targets, so the difference between them is the framing alone: what a German question
  about English mail (names, products, technical terms) does to the ranking;
- native German: the corpus's German mail (bodies whose stop words read as German, at
  least GERMAN_MAIL_MIN_WORDS of them), up to SENTENCES_PER_MESSAGE sentences of each,
  their first content words set into the German templates; target: that message.

Each query's language is read the way the product reads it (query_language). Every knob
point of KNOB_GRID is scored on every query; the point with the best recall@10, then
MRR, over all query sets of the training folds is chosen per fold and scored on the held-out
fold (folds by pair, so a pair's three versions share a fold). "before" is the point that
never reads a language (the product before function words were dropped).
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))

from retrieval import (  # noqa: E402
    CORPUS,
    DATABASE,
    DEPTH,
    database_exists,
    folds_of,
    load,
    metrics,
    position,
)
from sync import recreate_database, setup_django  # noqa: E402

CONTENT_WORDS = 6
SENTENCES_PER_MESSAGE = 3
GERMAN_MAIL_MIN_WORDS = 10
NEVER = 10**9  # MIN_FUNCTION_WORDS that never reads a language: the product before
# (MIN_FUNCTION_WORDS, STEM_BY_LANGUAGE). Ties on the training folds go to the earlier
# point: two function words before one (one is thin evidence) or three, and one stemmer
# for a told language before both.
KNOB_GRID = [*itertools.product((2, 3, 1), (True, False)), (NEVER, False)]
TEMPLATES = {
    "english": (
        "What was in the mail about {0} and {1}, the one with {2} {3} from {4} {5}?",
        "Where is the message on {0} {1} that says something about {2}, {3}, {4} and {5}?",
        "Has anyone written to us about the {0} {1} {2} or {3} of {4} {5}?",
        "I am looking for the email with {0} {1} and the {2} {3} {4} {5} that is still open.",
    ),
    "german": (
        "Was stand in der Mail über {0} und {1}, die mit {2} {3} von {4} {5}?",
        "Wo ist die Nachricht zu {0} {1}, in der etwas über {2}, {3}, {4} und {5} steht?",
        "Hat uns jemand wegen der {0} {1} {2} oder des {3} von {4} {5} geschrieben?",
        "Ich suche die E-Mail mit {0} {1} und dem {2} {3} {4} {5}, die noch nicht erledigt ist.",
    ),
}
WORD = re.compile(r"[^\W\d_][\w'-]*[^\W_]|[^\W\d_]", re.UNICODE)


def stop_languages(words: set[str]) -> dict[str, frozenset[str]]:
    """Each word's languages as a stop word (query_language's own test), one statement."""
    from django.db import connection

    from mailbox.services import query_language

    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT w, {query_language.stop_languages_sql('w')} FROM unnest(%s::text[]) AS w",
            [sorted(words)],
        )
        return {word: frozenset(languages) for word, languages in cursor.fetchall()}


def framed(query: str, language: str, index: int, stops: dict[str, frozenset[str]]) -> str | None:
    """The query's first content words (not English stop words) in a question of `language`."""
    content = [w for w in WORD.findall(query) if "english" not in stops.get(w.lower(), frozenset())]
    if len(content) < CONTENT_WORDS:
        return None
    template = TEMPLATES[language][index % len(TEMPLATES[language])]
    return template.format(*content[:CONTENT_WORDS])


def german_mail(account_id: str) -> list[dict]:
    """Queries from the corpus's German mail: a sentence's first content words in a German question."""
    from mailbox.models import Email
    from mailbox.services import query_language

    emails = list(
        Email.objects.filter(account__account_id=account_id).order_by("id").values_list("id", "text_body")
    )
    vocabulary = {w.lower() for _, body in emails for w in WORD.findall(body[:3000])}
    stops = stop_languages(vocabulary)
    queries = []
    for email_id, body in emails:
        words = [w.lower() for w in WORD.findall(body[:3000])]
        counts: dict[str, int] = {}
        for word in words:
            counts[word] = counts.get(word, 0) + 1
        reading = query_language.read(counts, stops, minimum=GERMAN_MAIL_MIN_WORDS)
        if reading.language != "german":
            continue
        taken = 0
        for sentence in re.split(r"(?<=[.!?])\s+", body[:3000]):
            content = [
                w
                for w in WORD.findall(sentence)
                if not stops.get(w.lower()) and len(w) > 2 and "http" not in w
            ]
            if len(content) < CONTENT_WORDS:
                continue
            template = TEMPLATES["german"][len(queries) % len(TEMPLATES["german"])]
            queries.append({"query": template.format(*content[:CONTENT_WORDS]), "target": str(email_id)})
            taken += 1
            if taken == SENTENCES_PER_MESSAGE:
                break
    return queries


def rank_all(queries: list[dict], account_id: str) -> dict:
    """point -> per-query (position, language); rankings shared by points that analyse a query alike."""
    from mailbox.models import Email
    from mailbox.services import lexical_search, query_language

    base = Email.objects.filter(account__account_id=account_id)
    by_message_id = {key: str(value) for key, value in base.values_list("message_id", "id")}
    results: dict = {point: [] for point in KNOB_GRID}
    shared: dict = {}
    for done, item in enumerate(queries, start=1):
        if done % 200 == 0:
            print(f"  {done}/{len(queries)} queries ranked", flush=True)
        candidates = base
        if item.get("reply"):
            candidates = base.exclude(message_id=item["reply"])
        target = item["target"]
        if target.startswith("<") or "@" in target:
            target = by_message_id.get(target.strip("<>"))
        for point in KNOB_GRID:
            query_language.MIN_FUNCTION_WORDS, lexical_search.STEM_BY_LANGUAGE = point
            lexical_search._words_cache.clear()
            words = lexical_search.query_words(item["query"])
            key = (item["query"], tuple(sorted(words.weights.items())), tuple(sorted(words.forms.items())))
            if key not in shared:
                hits = lexical_search.rank_lexical(candidates, item["query"], DEPTH)
                shared[key] = position([hit.email_id for hit in hits], target)
            results[point].append((shared[key], words.language))
    return results


def summary(positions: list) -> dict:
    figures = metrics(positions)
    figures["queries"] = len(positions)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--keep", action="store_true", help="reuse the scratch database if it is loaded")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--pairs", type=int, default=0, help="only the first N reply pairs (a quick look)")
    parser.add_argument("--json", type=Path, help="write every figure here")
    args = parser.parse_args()

    setup_django(DATABASE)
    if not args.keep or not database_exists(DATABASE):
        recreate_database(DATABASE)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    print(f"corpus: {load('retrieval')} emails held")
    from mailbox.services import lexical_search, query_language

    lexical_search.refresh_term_stats()
    product = (query_language.MIN_FUNCTION_WORDS, lexical_search.STEM_BY_LANGUAGE)

    pairs = [json.loads(line) for line in (CORPUS / "reply-pairs-dev.jsonl").read_text().splitlines()]
    if args.pairs:
        pairs = pairs[: args.pairs]
    stops = stop_languages({w.lower() for pair in pairs for w in WORD.findall(pair["query"])})
    sets: dict[str, list[dict]] = {"reply pairs": [], "English-framed": [], "German-framed": []}
    for index, pair in enumerate(pairs):
        reply, target = pair["reply_message_id"].strip("<>"), pair["target_message_id"]
        sets["reply pairs"].append({"query": pair["query"], "target": target, "reply": reply, "pair": index})
        english, german = (
            framed(pair["query"], "english", index, stops),
            framed(pair["query"], "german", index, stops),
        )
        if english and german:
            sets["English-framed"].append({"query": english, "target": target, "reply": reply, "pair": index})
            sets["German-framed"].append({"query": german, "target": target, "reply": reply, "pair": index})
    native = german_mail("retrieval")
    for index, item in enumerate(native):
        item["pair"] = index  # its own fold assignment: a sentence of a message, not a pair
    sets["native German"] = native
    print(", ".join(f"{name}: {len(items)} queries" for name, items in sets.items()))

    ranked = {name: rank_all(items, "retrieval") for name, items in sets.items()}
    report: dict = {"sets": {name: len(items) for name, items in sets.items()}, "product": product}

    # Each set by the language the product reads, before (no reading) and at the product's knobs.
    print(
        f"\n{'query set':<16}{'read as':<12}{'queries':>8}   before: r@1  r@10   MRR   after: r@1  r@10   MRR"
    )
    by_language: dict = {}
    for name, results in ranked.items():
        languages = [language for _, language in results[product]]
        for language in sorted(set(languages), key=lambda lang: -languages.count(lang) if lang else 0):
            rows = [i for i, lang in enumerate(languages) if lang == language]
            before = summary([results[(NEVER, False)][i][0] for i in rows])
            after = summary([results[product][i][0] for i in rows])
            by_language[f"{name} / {language or 'undetermined'}"] = {"before": before, "after": after}
            print(
                f"{name:<16}{language or 'undetermined':<12}{len(rows):>8}   "
                f"      {before['recall@1']:.3f} {before['recall@10']:.3f} {before['MRR']:.3f}"
                f"        {after['recall@1']:.3f} {after['recall@10']:.3f} {after['MRR']:.3f}"
            )
        whole_before = summary([p for p, _ in results[(NEVER, False)]])
        whole_after = summary([p for p, _ in results[product]])
        by_language[f"{name} / all"] = {"before": whole_before, "after": whole_after}
        print(
            f"{name:<16}{'all':<12}{len(results[product]):>8}   "
            f"      {whole_before['recall@1']:.3f} {whole_before['recall@10']:.3f} {whole_before['MRR']:.3f}"
            f"        {whole_after['recall@1']:.3f} {whole_after['recall@10']:.3f} {whole_after['MRR']:.3f}"
        )
    report["by language"] = by_language

    # Cross-validation over the knob grid: folds by pair index, every set's queries of a pair together.
    folds = folds_of(max(item["pair"] for items in sets.values() for item in items) + 1, args.folds)
    fold_of = {index: f for f, members in enumerate(folds) for index in members}
    print(
        f"\nknobs (MIN_FUNCTION_WORDS, STEM_BY_LANGUAGE): {args.folds}-fold cross-validation, held-out folds"
    )
    held_out: list[dict] = []
    for fold in range(args.folds):

        def rows_of(in_fold: bool, fold: int = fold) -> dict[str, list[int]]:
            return {
                name: [i for i, item in enumerate(items) if (fold_of[item["pair"]] == fold) == in_fold]
                for name, items in sets.items()
            }

        train, test = rows_of(False), rows_of(True)

        def score(point: tuple, rows: dict[str, list[int]] = train) -> tuple[float, float]:
            positions = [ranked[name][point][i][0] for name, indices in rows.items() for i in indices]
            figures = metrics(positions)
            return (figures["recall@10"], round(figures["MRR"], 3))

        best = max(KNOB_GRID, key=score)  # the first of equals
        per_set = {name: summary([ranked[name][best][i][0] for i in test[name]]) for name in sets}
        held_out.append({"chosen": best, "sets": per_set})
        shown = "  ".join(f"{name} {f['recall@10']:.3f}/{f['MRR']:.3f}" for name, f in per_set.items())
        print(f"  fold {fold + 1}: chosen {best}; recall@10/MRR held out: {shown}")
    for name in sets:
        for measure in ("recall@10", "MRR"):
            values = [fold["sets"][name][measure] for fold in held_out]
            print(
                f"  {name:<16}{measure:<10} mean {statistics.mean(values):.3f}  "
                f"range {min(values):.3f}-{max(values):.3f}  sd {statistics.pstdev(values):.3f}"
            )
    report["cross-validation"] = held_out
    print("\nevery point over all queries of each set (in-sample), recall@10 / MRR:")
    for point in KNOB_GRID:
        shown = "  ".join(
            f"{name} {metrics([p for p, _ in ranked[name][point]])['recall@10']:.3f}/"
            f"{metrics([p for p, _ in ranked[name][point]])['MRR']:.3f}"
            for name in sets
        )
        print(f"  {point}: {shown}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    main()
