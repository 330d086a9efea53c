"""Retrieval quality on the labelled reply pairs: recall@1, recall@10 and MRR per mode.

    .venv/bin/python bench/retrieval.py [--pairs N] [--keep] [--lexical-only]
        [--folds 5] [--lexical-grid]

Loads the whole corpus Maildir (shared/corpus/mail-dev.tar.gz, 7,685 messages) as one
account into a scratch database (mailfathom_retrieval, re-created each run unless --keep finds it
loaded), then for each
pair searches the reply's words, with the reply itself left out of the candidates, and
records where the message it answers ranks.

Modes: lexical (rank_lexical), vector (rank_vector on the query's embedding) and hybrid
(the product's fusion, mailbox.services.search.fuse, over the same two rankings at the
product's depth; the first pairs are checked against search.rank itself). For hybrid it
also counts, per query, the results in the top 10 that no query word matched ("results
without a lexical match"), with the product's padding rule and without it.

Knobs are chosen by k-fold cross-validation over the pairs (--folds, default 5): for each
fold, the grid point with the best recall@10 (then MRR) on the other folds is chosen and
scored on the held-out fold; the held-out figures per fold, their spread and the points
chosen are printed. The fusion grid (k, vector weight, similarity floor) is evaluated
over cached rankings; --lexical-grid reads each pair's BM25 occurrence rows once
(lexical_search.occurrence_rows: stage 1 does not depend on these knobs) and scores them
in Python per point of a grid of field weights, length normalization and the weight of
another word of a query word's family (it prints on how many pairs that scoring at the
product's knobs differs from rank_lexical itself).

Vectors come from the configured embedding provider (the bundled default unless the
environment names another).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import pickle
import random
import statistics
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))

from sync import _server_connection, drop_database, recreate_database, setup_django  # noqa: E402

DATABASE = "mailfathom_retrieval"
CORPUS = REPO.parent / "shared" / "corpus"  # --corpus names another folder
DEPTH = 10
SEED = 15
NEVER = 10**9  # enough_lexical that never holds padding back


def database_exists(name: str) -> bool:
    with _server_connection("postgres") as conn:
        return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is not None


def load(account_id: str) -> int:
    from accounts.models import FolderRole, MailAccount
    from mailbox.services.importer import import_archive
    from tests.factories import FolderMappingFactory, MailAccountFactory

    existing = MailAccount.objects.filter(account_id=account_id).first()
    if existing is not None and existing.emails.exists():
        return existing.emails.count()
    if existing is not None:  # an earlier load stopped before importing anything
        existing.delete()
    account = MailAccountFactory(account_id=account_id, display_name="Retrieval corpus")
    FolderMappingFactory(account=account, alias="all", remote_name="INBOX", role=FolderRole.INBOX)
    with tempfile.TemporaryDirectory() as scratch:
        with tarfile.open(CORPUS / "mail-dev.tar.gz") as archive:
            archive.extractall(scratch, filter="data")
        maildirs = sorted({path.parent for path in Path(scratch).rglob("cur")})
        for maildir in maildirs:
            import_archive(account_id, "all", maildir)
    return account.emails.count()


# --- measuring --------------------------------------------------------------------------


@dataclass
class Record:
    """One pair's rankings at the product's fusion depth, enough to fuse them afresh."""

    target: str | None
    lexical: list  # LexicalHit, best first, at the fusion's depth (or DEPTH without vectors)
    semantic: list  # VectorHit, closest first
    received: dict
    top: list  # LexicalHit: the lexical search of DEPTH itself (its stage 1 reads fewer candidates)
    # The same with the query's author told (the reply's own sender, as the product is told
    # it: search_emails' authorAddress), and what reranking reads of every candidate.
    author: str = ""
    lexical_told: list = field(default_factory=list)  # at the fusion's depth, author words told
    top_told: list = field(default_factory=list)  # a lexical-only search's depth, author words told
    facts: dict = field(default_factory=dict)  # email id -> reranking.Facts
    # The same two with the author's words left out of the query (AUTHOR_WORDS_LEFT_OUT).
    lexical_out: list = field(default_factory=list)
    top_out: list = field(default_factory=list)
    # Candidates whose quoted part holds runs of the query (reranking.quoting), over every
    # candidate: the product asks only about a ranking's first few, and with_quoting marks
    # only those, so the answer is the same.
    quoting: set = field(default_factory=set)

    def told(self, depth: str = "fusion", left_out: bool | None = None) -> list:
        """The author-told lexical ranking at the fusion's or a lexical-only search's depth."""
        from mailbox.services import lexical_search

        out = lexical_search.AUTHOR_WORDS_LEFT_OUT if left_out is None else left_out
        if depth == "fusion":
            return self.lexical_out if out else self.lexical_told
        return self.top_out if out else self.top_told


def position(ranked: list[str], target: str | None) -> int | None:
    if target is None or target not in ranked:
        return None
    return ranked.index(target) + 1


def metrics(positions: list[int | None]) -> dict[str, float]:
    count = max(len(positions), 1)
    return {
        "recall@1": sum(p == 1 for p in positions) / count,
        "recall@10": sum(p is not None and p <= DEPTH for p in positions) / count,
        "MRR": sum(1 / p for p in positions if p is not None and p <= DEPTH) / count,
    }


def collect(account_id: str, pairs: list[dict], vector_ranking) -> tuple[list[Record], dict[str, float]]:
    from mailbox.models import Email
    from mailbox.services import lexical_search, search
    from mailbox.services.lexical_search import rank_lexical
    from mailbox.services.reranking import author_words, candidate_facts, quoting

    product_left_out = lexical_search.AUTHOR_WORDS_LEFT_OUT

    base = Email.objects.filter(account__account_id=account_id)
    by_message_id = {key: str(value) for key, value in base.values_list("message_id", "id")}
    senders = dict(base.values_list("message_id", "sender_address"))
    records, seconds = [], {"lexical": 0.0, "vector": 0.0}
    for done, pair in enumerate(pairs, start=1):
        if done % 100 == 0:
            print(f"  {done}/{len(pairs)} pairs ranked", flush=True)
        reply = pair["reply_message_id"].strip("<>")
        candidates = base.exclude(message_id=reply)
        # The query's author as the product knows it: the sender of the mail whose words
        # are searched (never the label, which is the target).
        author = senders.get(reply, "")
        started = time.perf_counter()
        top = rank_lexical(candidates, pair["query"], DEPTH)
        seconds["lexical"] += time.perf_counter() - started
        told = author_words(candidates, author)
        told_rankings = {}
        for out in (False, True):
            lexical_search.AUTHOR_WORDS_LEFT_OUT = out
            depths = (search.lexical_depth(DEPTH), search.FUSION_DEPTH if vector_ranking else None)
            told_rankings[out] = [
                rank_lexical(candidates, pair["query"], depth, author_words=told) if depth else []
                for depth in depths
            ]
        lexical_search.AUTHOR_WORDS_LEFT_OUT = product_left_out
        (top_told, lexical_told), (top_out, lexical_out) = told_rankings[False], told_rankings[True]
        lexical, semantic = top, []
        if vector_ranking is not None:
            lexical = rank_lexical(candidates, pair["query"], search.FUSION_DEPTH)
            started = time.perf_counter()
            semantic = vector_ranking(candidates, pair["query"], search.FUSION_DEPTH)
            seconds["vector"] += time.perf_counter() - started
        rankings = (lexical, semantic, lexical_told, top_told, lexical_out, top_out)
        ids = {hit.email_id for ranking in rankings for hit in ranking}
        received = {
            str(key): value for key, value in base.filter(id__in=ids).values_list("id", "received_at")
        }
        target = by_message_id.get(pair["target_message_id"].strip("<>"))
        facts = candidate_facts(candidates, ids)
        records.append(
            Record(
                target,
                lexical,
                semantic,
                received,
                top,
                author,
                lexical_told,
                top_told,
                facts,
                lexical_out,
                top_out,
                quoting(ids, pair["query"]),
            )
        )
    return records, seconds


def today(method: str = "rrf", k: float = 10, vector_weight: float = 0.6, min_similarity: float = 0.297):
    """The fusion as it was before authors, kept lexical hits and reranking (the comparison's baseline)."""
    from mailbox.services.reranking import Reranking
    from mailbox.services.search import Fusion

    return Fusion(
        method=method,
        k=k,
        vector_weight=vector_weight,
        min_similarity=min_similarity,
        kept_lexical=0,
        reranking=Reranking(author_factor=1.0, thread_support=0.0, bulk_factor=1.0, quoting_factor=1.0),
    )


def hybrid_ranked(record: Record, fusion, told: bool = False) -> tuple[list[str], int]:
    """The fused top DEPTH ids and how many of them no query word matched.

    `told`: the author-told lexical ranking, reranked by the candidates' facts (the new
    path); otherwise the lexical ranking without the author and no reranking.
    """
    from mailbox.services.search import fuse

    if told:
        fused = fuse(
            record.told(), record.semantic, record.received, DEPTH, fusion,
            facts=record.facts, author=record.author, quoting_ids=record.quoting,
        )  # fmt: skip
    else:
        fused = fuse(record.lexical, record.semantic, record.received, DEPTH, fusion)
    return [email_id for email_id, _, _ in fused.ranked], sum(
        kind == "semantic" for _, _, kind in fused.ranked
    )


def lexical_ranked(record: Record, reranking) -> list[str]:
    """The lexical-only window of the new path: the author-told ranking, reranked."""
    from mailbox.services.reranking import rerank, with_quoting

    ranked = [(h.email_id, h.score) for h in record.told("window")]
    facts = with_quoting(record.facts, ranked, record.quoting, DEPTH)
    order = rerank(ranked, facts, record.author, reranking)
    return [email_id for email_id, _ in order[:DEPTH]]


def hybrid_knobs(record: Record, fusion, author_words: str) -> list[str]:
    """The fused top DEPTH under `fusion`, reranked; the author's words not told ("no"), out of
    the participants' weight ("participants"), or left out of the query ("left out")."""
    from mailbox.services.search import fuse

    lexical = record.lexical if author_words == "no" else record.told(left_out=author_words == "left out")
    fused = fuse(
        lexical, record.semantic, record.received, DEPTH, fusion, facts=record.facts, author=record.author
    )
    return [email_id for email_id, _, _ in fused.ranked]


def fused_order(record: Record, fusion, author_words: str) -> list[tuple[str, float]]:
    """The whole fused order (kept lexical hits placed), before reranking."""
    from mailbox.services.search import fuse

    lexical = record.lexical if author_words == "no" else record.told(left_out=author_words == "left out")
    fused = fuse(lexical, record.semantic, record.received, len(record.received), fusion)
    return [(email_id, score) for email_id, score, _ in fused.ranked]


def reranked_top(order: list[tuple[str, float]], record: Record, reranking) -> list[str]:
    """The top DEPTH of rerank(order), as fuse reranks its whole order (thread support can
    raise an email from anywhere in it)."""
    from mailbox.services.reranking import rerank, with_quoting

    facts = with_quoting(record.facts, order, record.quoting, DEPTH)
    return [email_id for email_id, _ in rerank(order, facts, record.author, reranking)[:DEPTH]]


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact sign test of wins against losses (ties left out)."""
    count = wins + losses
    if count == 0:
        return 1.0
    tail = sum(math.comb(count, i) for i in range(min(wins, losses) + 1)) / 2**count
    return min(1.0, 2 * tail)


def win_loss(new: list[int | None], old: list[int | None]) -> tuple[int, int, int]:
    """Pairs where the new ranking places the target higher, lower, the same (absent: below all)."""

    def rr(p):
        return 1 / p if p is not None and p <= DEPTH else 0.0

    wins = sum(rr(a) > rr(b) for a, b in zip(new, old, strict=True))
    losses = sum(rr(a) < rr(b) for a, b in zip(new, old, strict=True))
    return wins, losses, len(new) - wins - losses


def folds_of(count: int, folds: int) -> list[list[int]]:
    order = list(range(count))
    random.Random(SEED).shuffle(order)  # noqa: S311 (a fixed split, not a secret)
    return [order[i::folds] for i in range(folds)]


def cross_validate(
    per_point: dict, folds: list[list[int]], noise: dict | None = None, first: str = "recall@10"
) -> dict:
    """per_point: grid point -> per-pair positions. Returns held-out figures per fold and the choices.

    A point is chosen by its training recall@10, then its MRR (to 3 decimals), or with
    `first` "MRR" by its MRR, then its recall@10; with `noise`
    (point -> per-pair count of results no query word matched), ties then go to the point
    returning fewer of those, so padding is held back only where recall does not pay for it.
    """
    held_out, chosen = [], []
    for index, test in enumerate(folds):
        train = [i for j, fold in enumerate(folds) if j != index for i in fold]

        def score(point, rows=train):
            figures = metrics([per_point[point][i] for i in rows])
            quiet = -statistics.mean(noise[point][i] for i in rows) if noise else 0.0
            if first == "MRR":
                return (round(figures["MRR"], 3), figures["recall@10"], quiet)
            return (figures["recall@10"], round(figures["MRR"], 3), quiet)

        best = max(per_point, key=score)
        chosen.append(best)
        figures = metrics([per_point[best][i] for i in test])
        if noise:
            figures["noise"] = statistics.mean(noise[best][i] for i in test)
        held_out.append(figures)
    summary = {}
    for name in ("recall@1", "recall@10", "MRR", *(("noise",) if noise else ())):
        values = [figures[name] for figures in held_out]
        summary[name] = (statistics.mean(values), min(values), max(values), statistics.pstdev(values))
    # The product's point: the one chosen by most folds (ties: the better figure over all pairs).
    counts = {point: chosen.count(point) for point in set(chosen)}
    product = max(counts, key=lambda point: (counts[point], metrics(per_point[point])["recall@10"]))
    # Over all pairs, each chosen point (in-sample: for comparing them, not as an estimate).
    whole = {point: metrics(per_point[point]) for point in set(chosen)}
    return {"held_out": held_out, "chosen": chosen, "summary": summary, "product": product, "whole": whole}


def print_cv(title: str, result: dict, names: tuple[str, ...]) -> None:
    print(f"\n{title}: {len(result['held_out'])}-fold cross-validation (held-out folds)")
    for index, (figures, point) in enumerate(zip(result["held_out"], result["chosen"], strict=True), start=1):
        chosen = ", ".join(f"{name}={value}" for name, value in zip(names, point, strict=True))
        print(
            f"  fold {index}: recall@1 {figures['recall@1']:.3f}  recall@10 {figures['recall@10']:.3f}"
            f"  MRR {figures['MRR']:.3f}"
            + (f"  no lexical match {figures['noise']:.2f}/query" if "noise" in figures else "")
            + f"   chosen on the other folds: {chosen}"
        )
    for name, (mean, low, high, spread) in result["summary"].items():
        print(f"  {name:<9} mean {mean:.3f}  range {low:.3f}-{high:.3f}  sd {spread:.3f}")
    product = ", ".join(f"{name}={value}" for name, value in zip(names, result["product"], strict=True))
    print(f"  chosen by most folds: {product}")
    print("  each chosen point over all pairs (in-sample; folds that chose it):")
    for point, figures in sorted(result["whole"].items(), key=lambda item: -result["chosen"].count(item[0])):
        named = ", ".join(f"{name}={value}" for name, value in zip(names, point, strict=True))
        print(
            f"    {result['chosen'].count(point)}: recall@1 {figures['recall@1']:.3f}  recall@10 "
            f"{figures['recall@10']:.3f}  MRR {figures['MRR']:.3f}   {named}"
        )


LEXICAL_KNOBS = ("SUBJECT_WEIGHT", "PARTICIPANTS_WEIGHT", "BM25_B", "VARIANT_WEIGHT")
LEXICAL_GRID = list(itertools.product((1.0, 2.0, 3.0, 5.0), (1.0, 2.0, 3.0), (0.5, 0.75, 0.9), (0.5, 1.0)))


def scored(rows: list[tuple], average: float, point: tuple) -> list[str]:
    """rank_lexical's stage 2 in Python over its occurrence rows, under the knobs of `point`."""
    from mailbox.services import lexical_search as ls

    subject, participants, b, variant = point
    scores: dict = {}
    received: dict = {}
    for email_id, moment, size, _head, idf, a, p, c, va, vp, vc, d, vd in rows:
        tf = min(
            (a + variant * va) * subject
            + (p + variant * vp) * participants
            + (c + variant * vc)
            + (d + variant * vd) * ls.ATTACHMENT_WEIGHT,
            ls.MAX_OCCURRENCES,
        )
        term = idf * tf * (ls.BM25_K1 + 1) / (tf + ls.BM25_K1 * (1 - b + b * size / average))
        scores[email_id] = scores.get(email_id, 0.0) + term
        received[email_id] = moment
    order = sorted(scores, key=lambda key: (-scores[key], -received[key].timestamp(), _descending(str(key))))
    return [str(key) for key in order[:DEPTH]]


def _descending(text: str) -> str:
    return "".join(chr(0x10FFFF - ord(character)) for character in text)


def lexical_grid(account_id: str, pairs: list[dict], records: list[Record]) -> dict:
    """Every grid point's per-pair positions, from one pass of occurrence rows per pair."""
    from mailbox.models import Email
    from mailbox.services import lexical_search as ls

    base = Email.objects.filter(account__account_id=account_id)
    product = tuple(getattr(ls, name) for name in LEXICAL_KNOBS)
    per_point: dict = {point: [] for point in {*LEXICAL_GRID, product}}
    mismatches = 0
    for done, (pair, record) in enumerate(zip(pairs, records, strict=True), start=1):
        if done % 100 == 0:
            print(f"  {done}/{len(pairs)} pairs' occurrences read", flush=True)
        candidates = base.exclude(message_id=pair["reply_message_id"].strip("<>"))
        rows, average = ls.occurrence_rows(candidates, pair["query"], DEPTH)
        for point in per_point:
            ranked = scored(rows, average, point)
            per_point[point].append(position(ranked, record.target))
            if point == product and ranked != [hit.email_id for hit in record.top]:
                mismatches += 1
    print(f"  the Python scoring at the product's knobs differs from rank_lexical on {mismatches} pairs")
    return per_point


def short_query_noise(account_id: str, count: int, fusion, limit: int = 20) -> dict[str, float]:
    """Results without a lexical match per query for typed queries (two words of a subject).

    The reply pairs' queries are long and nearly always match ten emails by their words, so
    they say little about padding; typed queries matching a few emails are where the vector
    ranking used to pad the window. No labels: this counts, it does not score.
    """
    from mailbox.models import Email
    from mailbox.services import embedding, search
    from mailbox.services.lexical_search import rank_lexical
    from mailfathom.providers import get_embedder

    base = Email.objects.filter(account__account_id=account_id)
    subjects = [s for s in base.order_by("id").values_list("subject", flat=True) if len(s.split()) >= 2]
    rng = random.Random(SEED)  # noqa: S311 (a fixed sample)
    queries = [" ".join(rng.choice(subjects).split()[:2]) for _ in range(count)]
    embedder, profile = get_embedder(), embedding.active_profile()
    unpadded = search.Fusion(
        method=fusion.method,
        k=fusion.k,
        lexical_weight=fusion.lexical_weight,
        vector_weight=fusion.vector_weight,
        min_similarity=search.NO_FLOOR,
        enough_lexical=NEVER,
    )
    kept, held, few, few_kept, few_held = [], [], 0, [], []
    for query in queries:
        lexical = rank_lexical(base, query, search.FUSION_DEPTH)
        semantic = embedding.rank_vector(base, embedder.embed_query(query), profile, search.FUSION_DEPTH)
        ids = {hit.email_id for hit in lexical} | {hit.email_id for hit in semantic}
        received = {
            str(key): value for key, value in base.filter(id__in=ids).values_list("id", "received_at")
        }
        narrow = len(lexical) < limit
        few += narrow
        for rule, into, narrow_into in ((fusion, held, few_held), (unpadded, kept, few_kept)):
            ranked = search.fuse(lexical, semantic, received, limit, rule).ranked
            into.append(sum(kind == "semantic" for _, _, kind in ranked))
            if narrow:
                narrow_into.append(into[-1])
    return {
        "queries": count,
        "matching fewer than the window by words": few,
        "product": statistics.mean(held),
        "kept": statistics.mean(kept),
        "product, those queries": statistics.mean(few_held) if few_held else 0.0,
        "kept, those queries": statistics.mean(few_kept) if few_kept else 0.0,
    }


def main() -> None:
    global CORPUS  # --corpus replaces the default before anything reads it
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pairs", type=int, default=0, help="evaluate only the first N pairs")
    parser.add_argument("--keep", action="store_true", help="reuse the scratch database if it is loaded")
    parser.add_argument("--lexical-only", action="store_true", help="skip embedding (vector and hybrid)")
    parser.add_argument(
        "--corpus",
        type=Path,
        default=CORPUS,
        help="the full corpus folder (mail-dev.tar.gz and more; default ../shared/corpus)",
    )
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--lexical-grid", action="store_true", help="cross-validate the lexical knobs too")
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument("--requote", action="store_true", help="read quoting afresh for cached rankings")
    parser.add_argument(
        "--no-grid", action="store_true", help="figures of the defaults only, no cross-validation"
    )
    parser.add_argument(
        "--cache", type=Path, help="keep every pair's rankings in this file, and read them from it if present"
    )
    parser.add_argument(
        "--short-queries", type=int, default=0, help="count padding for N typed two-word queries (window 20)"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a constant of mailbox.services.lexical_search for this run (e.g. POSTING_BUDGET=385)",
    )
    args = parser.parse_args()
    CORPUS = args.corpus

    database = DATABASE
    setup_django(database)
    if not args.keep or not database_exists(database):
        recreate_database(database)
    from django.core.management import call_command

    started = time.perf_counter()
    call_command("migrate", verbosity=0)
    print(f"migrations: {time.perf_counter() - started:.1f} s")
    started = time.perf_counter()
    held = load("retrieval")
    print(f"corpus: {held} emails held ({time.perf_counter() - started:.1f} s to load or find)")
    from mailbox.services.lexical_search import refresh_term_stats

    started = time.perf_counter()
    words = refresh_term_stats()
    print(f"term statistics: {words} words ({time.perf_counter() - started:.1f} s)")

    from mailbox.services import lexical_search

    for assignment in args.set:
        name, _, value = assignment.partition("=")
        current = getattr(lexical_search, name)
        setattr(lexical_search, name, type(current)(value))
        print(f"lexical_search.{name} = {value} (product: {current})")

    pairs = [json.loads(line) for line in (CORPUS / "reply-pairs-dev.jsonl").read_text().splitlines()]
    if args.pairs:
        pairs = pairs[: args.pairs]
    from mailbox.services import embedding, search

    vector_ranking, profile = None, None
    if not args.lexical_only:
        from mailfathom.providers import get_embedder

        embedder = get_embedder()
        started = time.perf_counter()
        swept = embedding.embed_pending()
        rate = swept.embedded / max(time.perf_counter() - started, 1e-9)
        stopped = f", stopped by {swept.stopped_by}" if swept.stopped_by else ""
        print(f"embedding sweep: {swept.embedded} embedded now ({rate:.1f} emails/s){stopped}")
        profile = embedding.active_profile()
        print(f"embedder: {profile.provider} {profile.model} ({profile.dimensions} dimensions)")

        def vector_ranking(rows, query, depth):
            return embedding.rank_vector(rows, embedder.embed_query(query), profile, depth)

    if args.cache and args.cache.exists():
        records, seconds = pickle.loads(args.cache.read_bytes())  # noqa: S301 (our own file)
        print(f"rankings read from {args.cache}")
    else:
        records, seconds = collect("retrieval", pairs, vector_ranking)
    if args.requote or any(not hasattr(record, "quoting") for record in records):
        from mailbox.services.reranking import quoting

        started = time.perf_counter()
        for pair, record in zip(pairs, records, strict=True):
            record.quoting = quoting(list(record.received), pair["query"])
        print(f"quoting read for every candidate in {time.perf_counter() - started:.0f} s")
    if args.cache:
        args.cache.write_bytes(pickle.dumps((records, seconds)))
    from mailbox.services.reranking import Facts

    for record in records:  # a cache written before facts carried the received time
        record.facts = {
            email_id: fact
            if hasattr(fact, "received_at")
            else Facts(received_at=record.received[email_id], **vars(fact))
            for email_id, fact in record.facts.items()
        }
    from mailbox.services import lexical_search
    from mailbox.services.reranking import Reranking

    folds = folds_of(len(records), args.folds)
    positions = {
        "lexical, today": [position([h.email_id for h in r.top[:DEPTH]], r.target) for r in records],
        "lexical": [position(lexical_ranked(r, Reranking()), r.target) for r in records],
    }
    figures = {mode: metrics(found) for mode, found in positions.items()}
    figures["lexical, today"]["s/query"] = seconds["lexical"] / len(pairs)
    report = {"pairs": len(pairs), "modes": figures}
    if profile is not None:
        positions["vector"] = [position([h.email_id for h in r.semantic[:DEPTH]], r.target) for r in records]
        figures["vector"] = metrics(positions["vector"])
        figures["vector"]["s/query"] = seconds["vector"] / len(pairs)
        product = search.Fusion.for_model(profile.model)
        # The product's own path on the first pairs: the cached rankings fuse to the same ids.
        for pair, record in zip(pairs, records[:20], strict=False):
            from mailbox.models import Email

            rows = Email.objects.filter(account__account_id="retrieval").exclude(
                message_id=pair["reply_message_id"].strip("<>")
            )
            ranked, mode, _ = search.rank(rows, pair["query"], DEPTH, author_address=record.author)
            assert mode == "hybrid", "the provider failed during the evaluation"
            assert [email_id for email_id, _, _ in ranked] == hybrid_ranked(record, product, told=True)[0], (
                "fusion drifted"
            )
        old = today(min_similarity=product.min_similarity)
        fused_old = [hybrid_ranked(record, old) for record in records]
        fused = [hybrid_ranked(record, product, told=True) for record in records]
        positions["hybrid, today"] = [
            position(ids, r.target) for (ids, _), r in zip(fused_old, records, strict=True)
        ]
        positions["hybrid"] = [position(ids, r.target) for (ids, _), r in zip(fused, records, strict=True)]
        figures["hybrid, today"] = metrics(positions["hybrid, today"])
        figures["hybrid"] = metrics(positions["hybrid"])
        noise_now = statistics.mean(count for _, count in fused)
        noise_before = statistics.mean(count for _, count in fused_old)
        report["results without a lexical match per query"] = {"product": noise_now, "today": noise_before}

    grid_run = profile is not None and not args.no_grid
    if grid_run:
        # Kept lexical hits (never chosen in the grid before thread support), bulk 0.2 and
        # author words not told are no longer in the grid; docs/benchmarks.md has their runs.
        names = ("k", "vector_weight", "author_words", "author", "support", "support_from", "quoting")
        fusions = list(itertools.product((3, 5, 10), (0.4, 0.6, 0.8), ("participants", "left out")))
        rerankings = list(itertools.product((1.0, 0.6, 0.3), (0.0, 0.3, 0.5, 0.7), (10, 20), (1.0, 0.5)))
        per_point: dict = {(*head, *tail): [] for head in fusions for tail in rerankings}
        started = time.perf_counter()
        for record in records:
            for head in fusions:
                k, weight, told_words = head
                fusion = search.Fusion(k=k, vector_weight=weight, min_similarity=product.min_similarity)
                order = fused_order(record, fusion, told_words)
                for author, support, support_from, quoting in rerankings:
                    reranking = Reranking(
                        author_factor=author,
                        thread_support=support,
                        support_from=support_from,
                        quoting_factor=quoting,
                    )
                    per_point[(*head, author, support, support_from, quoting)].append(
                        position(reranked_top(order, record, reranking), record.target)
                    )
        print(f"hybrid grid: {len(per_point)} points in {time.perf_counter() - started:.0f} s")
        # The grid at the product's point is the product's own path.
        point = (
            product.k, product.vector_weight,
            "left out" if lexical_search.AUTHOR_WORDS_LEFT_OUT else "participants",
            product.reranking.author_factor, product.reranking.thread_support, product.reranking.support_from,
            product.reranking.quoting_factor,
        )  # fmt: skip
        if point in per_point:
            assert per_point[point] == positions["hybrid"], "the grid drifted from fuse"
        fusion_cv = cross_validate(per_point, folds)
        # The same grid chosen by MRR first: recall@10 barely separates the grid's best
        # points (a few pairs of 680), while MRR also counts recall@1.
        mrr_cv = cross_validate(per_point, folds, first="MRR")
        report["hybrid cross-validation, MRR first"] = {
            "held_out": mrr_cv["held_out"],
            "chosen": mrr_cv["chosen"],
            "product": mrr_cv["product"],
            "whole": {str(point): figures for point, figures in mrr_cv["whole"].items()},
        }
        report["hybrid cross-validation"] = {
            "held_out": fusion_cv["held_out"],
            "chosen": fusion_cv["chosen"],
            "product": fusion_cv["product"],
            "whole": {str(point): figures for point, figures in fusion_cv["whole"].items()},
        }
    per_fold = {
        mode: [metrics([found[i] for i in fold]) for fold in folds] for mode, found in positions.items()
    }
    report["per fold"] = per_fold
    versus = {}
    # Each new default against today's, and what the vector arm adds: hybrid against lexical alone.
    comparisons = (
        ("lexical", "lexical, today", "lexical, new defaults against today's"),
        ("hybrid", "hybrid, today", "hybrid, new defaults against today's"),
        ("hybrid", "lexical", "hybrid against lexical alone, both with the new defaults"),
        ("hybrid, today", "lexical, today", "hybrid against lexical alone, both with today's defaults"),
    )
    for mode, other, title in comparisons:
        if mode in positions and other in positions:
            versus[title] = {
                "all": win_loss(positions[mode], positions[other]),
                "folds": [
                    win_loss([positions[mode][i] for i in fold], [positions[other][i] for i in fold])
                    for fold in folds
                ],
            }
    report["against today"] = versus
    if args.short_queries and profile is not None:
        noise = short_query_noise("retrieval", args.short_queries, search.Fusion.for_model(profile.model))
        report["typed queries: results without a lexical match"] = noise
        print(
            f"\n{noise['queries']} typed two-word queries (window 20; "
            f"{noise['matching fewer than the window by words']} match fewer than 20 emails by their words): "
            f"results without a lexical match per query {noise['product']:.2f} with the product's padding "
            f"rule, {noise['kept']:.2f} with every vector result kept; over the queries matching fewer "
            f"than 20: {noise['product, those queries']:.2f} and {noise['kept, those queries']:.2f}"
        )
    if args.lexical_grid:
        print(f"\nlexical grid: {len(LEXICAL_GRID)} points of {', '.join(LEXICAL_KNOBS)}")
        lexical_cv = cross_validate(lexical_grid("retrieval", pairs, records), folds)
        report["lexical cross-validation"] = {
            "held_out": lexical_cv["held_out"],
            "chosen": lexical_cv["chosen"],
            "product": lexical_cv["product"],
        }

    print(f"\n{len(pairs)} pairs; the reply itself is left out of its own candidates\n")
    print(f"{'mode':<34}{'recall@1':>10}{'recall@10':>11}{'MRR':>8}{'s/query':>10}")
    for mode, numbers in figures.items():
        timing = f"{numbers['s/query']:>10.3f}" if "s/query" in numbers else ""
        print(
            f"{mode:<34}{numbers['recall@1']:>10.3f}{numbers['recall@10']:>11.3f}{numbers['MRR']:>8.3f}{timing}"
        )
    print(f"\nper fold ({args.folds} folds, fixed shuffle, seed {SEED}): recall@1 / recall@10 / MRR")
    for mode, rows in per_fold.items():
        cells = "  ".join(f"{f['recall@1']:.3f}/{f['recall@10']:.3f}/{f['MRR']:.3f}" for f in rows)
        spread = [f["recall@10"] for f in rows]
        print(f"  {mode:<16} {cells}   recall@10 range {min(spread):.3f}-{max(spread):.3f}")
    for title, counts in versus.items():
        wins, losses, ties = counts["all"]
        folds_text = ", ".join(f"{w}/{lost}" for w, lost, _ in counts["folds"])
        print(
            f"\n{title}: target placed higher in {wins} pairs, lower in {losses}, the same in {ties} "
            f"(per fold, wins/losses: {folds_text}); sign test p = {sign_test(wins, losses):.3f}"
        )
    if profile is not None:
        noise = report["results without a lexical match per query"]
        print(
            f"\nresults without a lexical match per query (top {DEPTH}): {noise['product']:.2f} "
            f"with the new defaults, {noise['today']:.2f} with today's"
        )
    if grid_run:
        print_cv("hybrid knobs (" + ", ".join(names) + "), recall@10 first", fusion_cv, names)
        print_cv("hybrid knobs (" + ", ".join(names) + "), MRR first", mrr_cv, names)
    if args.lexical_grid:
        print_cv("lexical knobs", lexical_cv, LEXICAL_KNOBS)
    print("\nanchor (bm25s, English stemmer and stop words, from the corpus README): 0.153 / 0.488 / 0.270")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str))
    if not args.keep:
        drop_database(database)


if __name__ == "__main__":
    main()
