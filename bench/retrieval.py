"""Retrieval quality on the labelled reply pairs: recall@1, recall@10 and MRR per mode.

    .venv/bin/python bench/retrieval.py [--pairs N] [--keep]

Loads the whole corpus Maildir (../shared/corpus/mail-dev.tar.gz, 7,685 messages) as one
account into a scratch database (mailfathom_retrieval, re-created each run unless --keep
finds it loaded), then for each pair searches the reply's words, with the reply itself
left out of the candidates, and records where the message it answers ranks.
"""

from __future__ import annotations

import argparse
import json
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))

from sync import _server_connection, drop_database, recreate_database, setup_django  # noqa: E402

DATABASE = "mailfathom_retrieval"
CORPUS = REPO.parent / "shared" / "corpus"  # --corpus names another folder
DEPTH = 10


def database_exists(name: str) -> bool:
    with _server_connection("postgres") as conn:
        return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is not None


def load(account_id: str) -> int:
    from accounts.models import FolderRole, MailAccount
    from mailbox.services.importer import import_archive
    from tests.factories import FolderMappingFactory, MailAccountFactory

    if MailAccount.objects.filter(account_id=account_id).exists():
        return MailAccount.objects.get(account_id=account_id).emails.count()
    account = MailAccountFactory(account_id=account_id, display_name="Retrieval corpus")
    FolderMappingFactory(account=account, alias="all", remote_name="INBOX", role=FolderRole.INBOX)
    with tempfile.TemporaryDirectory() as scratch:
        with tarfile.open(CORPUS / "mail-dev.tar.gz") as archive:
            archive.extractall(scratch, filter="data")
        maildirs = sorted({path.parent for path in Path(scratch).rglob("cur")})
        for maildir in maildirs:
            import_archive(account_id, "all", maildir)
    return account.emails.count()


def evaluate(account_id: str, pairs: list[dict], modes: dict) -> dict[str, dict[str, float]]:
    from mailbox.models import Email

    base = Email.objects.filter(account__account_id=account_id)
    by_message_id = dict(base.values_list("message_id", "id"))
    results = {}
    for mode, rank in modes.items():
        hits1 = hits10 = 0
        reciprocal = 0.0
        started = time.perf_counter()
        for pair in pairs:
            target = by_message_id.get(pair["target_message_id"].strip("<>"))
            candidates = base.exclude(message_id=pair["reply_message_id"].strip("<>"))
            ranked = [str(email_id) for email_id in rank(candidates, pair["query"], DEPTH)]
            if target is not None and str(target) in ranked:
                position = ranked.index(str(target)) + 1
                hits1 += position == 1
                hits10 += 1
                reciprocal += 1 / position
        count = len(pairs)
        results[mode] = {
            "recall@1": hits1 / count,
            "recall@10": hits10 / count,
            "MRR": reciprocal / count,
            "seconds": time.perf_counter() - started,
        }
    return results


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
    args = parser.parse_args()
    CORPUS = args.corpus

    setup_django(DATABASE)
    if not args.keep or not database_exists(DATABASE):
        recreate_database(DATABASE)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    held = load("retrieval")
    print(f"corpus: {held} emails held ({time.perf_counter() - started:.1f} s to load or find)")
    from mailbox.services.lexical_search import refresh_term_stats

    started = time.perf_counter()
    words = refresh_term_stats()
    print(f"term statistics: {words} words ({time.perf_counter() - started:.1f} s)")

    pairs = [json.loads(line) for line in (CORPUS / "reply-pairs-dev.jsonl").read_text().splitlines()]
    if args.pairs:
        pairs = pairs[: args.pairs]
    from mailbox.services import embedding, search
    from mailbox.services.lexical_search import rank_lexical
    from mailfathom.providers import get_embedder

    modes = {"lexical": lambda rows, query, depth: [hit.email_id for hit in rank_lexical(rows, query, depth)]}
    if not args.lexical_only:
        started = time.perf_counter()
        swept = embedding.embed_pending()
        rate = swept.embedded / max(time.perf_counter() - started, 1e-9)
        stopped = f", stopped by {swept.stopped_by}" if swept.stopped_by else ""
        print(f"embedding sweep: {swept.embedded} embedded now ({rate:.1f} emails/s){stopped}")
        profile, embedder = embedding.active_profile(), get_embedder()

        def vector(rows, query, depth):
            hits = embedding.rank_vector(rows, embedder.embed_query(query), profile, depth)
            return [hit.email_id for hit in hits]

        def hybrid(rows, query, depth):
            ranked, mode, _ = search.rank(rows, query, depth)
            assert mode == "hybrid", "the provider failed during the evaluation"
            return [email_id for email_id, _, _ in ranked]

        modes |= {"vector": vector, "hybrid": hybrid}
    results = evaluate("retrieval", pairs, modes)
    print(f"\n{len(pairs)} pairs; the reply itself is left out of its own candidates\n")
    print(f"{'mode':<10}{'recall@1':>10}{'recall@10':>11}{'MRR':>8}{'s/query':>10}")
    for mode, numbers in results.items():
        print(
            f"{mode:<10}{numbers['recall@1']:>10.3f}{numbers['recall@10']:>11.3f}"
            f"{numbers['MRR']:>8.3f}{numbers['seconds'] / len(pairs):>10.3f}"
        )
    print("\nanchor (bm25s, English stemmer and stop words, from the corpus README): 0.153 / 0.488 / 0.270")
    if not args.keep:
        drop_database(DATABASE)


if __name__ == "__main__":
    main()
