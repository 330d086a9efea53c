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
import random
import statistics
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
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
    from mailbox.services import search
    from mailbox.services.lexical_search import rank_lexical

    base = Email.objects.filter(account__account_id=account_id)
    by_message_id = {key: str(value) for key, value in base.values_list("message_id", "id")}
    records, seconds = [], {"lexical": 0.0, "vector": 0.0}
    for done, pair in enumerate(pairs, start=1):
        if done % 100 == 0:
            print(f"  {done}/{len(pairs)} pairs ranked", flush=True)
        candidates = base.exclude(message_id=pair["reply_message_id"].strip("<>"))
        started = time.perf_counter()
        top = rank_lexical(candidates, pair["query"], DEPTH)
        seconds["lexical"] += time.perf_counter() - started
        lexical, semantic = top, []
        if vector_ranking is not None:
            lexical = rank_lexical(candidates, pair["query"], search.FUSION_DEPTH)
            started = time.perf_counter()
            semantic = vector_ranking(candidates, pair["query"], search.FUSION_DEPTH)
            seconds["vector"] += time.perf_counter() - started
        ids = {hit.email_id for hit in lexical} | {hit.email_id for hit in semantic}
        received = {
            str(key): value for key, value in base.filter(id__in=ids).values_list("id", "received_at")
        }
        target = by_message_id.get(pair["target_message_id"].strip("<>"))
        records.append(Record(target, lexical, semantic, received, top))
    return records, seconds


def hybrid_ranked(record: Record, fusion) -> tuple[list[str], int]:
    """The fused top DEPTH ids and how many of them no query word matched."""
    from mailbox.services.search import fuse

    fused = fuse(record.lexical, record.semantic, record.received, DEPTH, fusion)
    return [email_id for email_id, _, _ in fused.ranked], sum(
        kind == "semantic" for _, _, kind in fused.ranked
    )


def folds_of(count: int, folds: int) -> list[list[int]]:
    order = list(range(count))
    random.Random(SEED).shuffle(order)  # noqa: S311 (a fixed split, not a secret)
    return [order[i::folds] for i in range(folds)]


def cross_validate(per_point: dict, folds: list[list[int]], noise: dict | None = None) -> dict:
    """per_point: grid point -> per-pair positions. Returns held-out figures per fold and the choices.

    A point is chosen by its training recall@10, then its MRR (to 3 decimals); with `noise`
    (point -> per-pair count of results no query word matched), ties then go to the point
    returning fewer of those, so padding is held back only where recall does not pay for it.
    """
    held_out, chosen = [], []
    for index, test in enumerate(folds):
        train = [i for j, fold in enumerate(folds) if j != index for i in fold]

        def score(point, rows=train):
            figures = metrics([per_point[point][i] for i in rows])
            quiet = -statistics.mean(noise[point][i] for i in rows) if noise else 0.0
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

    records, seconds = collect("retrieval", pairs, vector_ranking)
    figures = {
        "lexical": metrics([position([h.email_id for h in r.lexical[:DEPTH]], r.target) for r in records])
    }
    figures["lexical"]["s/query"] = seconds["lexical"] / len(pairs)
    report = {"pairs": len(pairs), "modes": figures}
    folds = folds_of(len(records), args.folds)
    if profile is not None:
        figures["vector"] = metrics(
            [position([h.email_id for h in r.semantic[:DEPTH]], r.target) for r in records]
        )
        figures["vector"]["s/query"] = seconds["vector"] / len(pairs)
        product = search.Fusion.for_model(profile.model)
        # The product's own path on the first pairs: the cached rankings fuse to the same ids.
        base = records[:20]
        for pair, record in zip(pairs, base, strict=False):
            from mailbox.models import Email

            rows = Email.objects.filter(account__account_id="retrieval").exclude(
                message_id=pair["reply_message_id"].strip("<>")
            )
            ranked, mode, _ = search.rank(rows, pair["query"], DEPTH)
            assert mode == "hybrid", "the provider failed during the evaluation"
            assert [email_id for email_id, _, _ in ranked] == hybrid_ranked(record, product)[0], (
                "fusion drifted"
            )
        fused = [hybrid_ranked(record, product) for record in records]
        figures["hybrid"] = metrics(
            [position(ids, r.target) for (ids, _), r in zip(fused, records, strict=True)]
        )
        unpadded = search.Fusion(
            method=product.method,
            k=product.k,
            lexical_weight=product.lexical_weight,
            vector_weight=product.vector_weight,
            min_similarity=-1.0,
            enough_lexical=NEVER,
        )
        loose = [hybrid_ranked(record, unpadded) for record in records]
        figures["hybrid, every vector result kept"] = metrics(
            [position(ids, r.target) for (ids, _), r in zip(loose, records, strict=True)]
        )
        noise_now = statistics.mean(count for _, count in fused)
        noise_before = statistics.mean(count for _, count in loose)
        report["results without a lexical match per query"] = {"product": noise_now, "kept": noise_before}

        names = ("method", "k", "vector_weight", "min_similarity", "enough_lexical")
        similarities = [1.0 - hit.distance for record in records for hit in record.semantic]
        quantiles = statistics.quantiles(similarities, n=20)
        floors = sorted({-1.0, *(round(q, 3) for q in quantiles[::3])})
        per_point, noise = {}, {}
        weighting = [("rrf", k, w) for k in (10, 20, 40, 60) for w in (0.2, 0.3, 0.4, 0.6, 0.8)]
        weighting += [("scores", 0, w) for w in (0.1, 0.2, 0.3, 0.5, 0.8, 1.0)]
        grid = [
            (*head, floor, enough)
            for head in weighting
            for floor in floors
            for enough in (10, 30, 100, NEVER)
        ]
        for point in grid:
            fusion = search.Fusion(
                method=point[0],
                k=point[1],
                vector_weight=point[2],
                min_similarity=point[3],
                enough_lexical=point[4],
            )
            fused_here = [hybrid_ranked(r, fusion) for r in records]
            per_point[point] = [
                position(ids, r.target) for (ids, _), r in zip(fused_here, records, strict=True)
            ]
            noise[point] = [count for _, count in fused_here]
        fusion_cv = cross_validate(per_point, folds, noise)
        report["fusion cross-validation"] = {
            "held_out": fusion_cv["held_out"],
            "chosen": fusion_cv["chosen"],
            "product": fusion_cv["product"],
            "whole": {str(point): figures for point, figures in fusion_cv["whole"].items()},
            "floors": floors,
        }
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
    if profile is not None:
        noise = report["results without a lexical match per query"]
        print(
            f"\nresults without a lexical match per query (top {DEPTH}): {noise['product']:.2f} "
            f"with the product's padding rule, {noise['kept']:.2f} with every vector result kept"
        )
        print_cv(
            "fusion (method, k, vector weight, similarity floor, enough lexical matches)", fusion_cv, names
        )
        print(f"  similarity floors tried (quantiles of the vector results' similarities): {floors}")
    if args.lexical_grid:
        print_cv("lexical knobs", lexical_cv, LEXICAL_KNOBS)
    print("\nanchor (bm25s, English stemmer and stop words, from the corpus README): 0.153 / 0.488 / 0.270")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str))
    if not args.keep:
        drop_database(database)


if __name__ == "__main__":
    main()
