"""Search at a million emails: build the mailbox, time both search modes, check recall.

    MAILFATHOM_VAR_DIR=/work/million-var .venv/bin/python bench/million.py
        [--emails 1000000] [--anchor 100000] [--queries 25] [--clients 2] [--pairs 0] [--keep]

One command builds the mailbox in a scratch database (mailfathom_million_bench, dropped at
the end unless --keep; set MAILFATHOM_VAR_DIR to put the embedded server's data outside
the checkout) and measures it, in stages:

1. The corpus as its own account ("corpus"), through the product's own paths:
   import_archive (the store path), embed_pending (the sweep; its vectors are cached under
   the temp directory by model, so a second run copies them instead of embedding again),
   refresh_term_stats. Recall@1/@10/MRR on the dev reply pairs with bench/retrieval.py's
   machinery: the corpus alone.
2. Varied copies of the corpus messages in other accounts, loaded with COPY until the
   mailbox holds --anchor emails: each copy takes a source message's subject, body and
   participants with a few deterministic word substitutions (words of the source swapped
   for words of the corpus vocabulary), a reference number from a space of 400,000, its
   addresses varied per copy, a received time spread over 2014-2025 and a folder; its
   passages are the source's vectors (read from the database, as the sweep made them)
   plus a small deterministic Gaussian perturbation, not embedded again. The GIN and
   HNSW indexes are dropped for the load and built once afterwards, timed, then VACUUM
   ANALYZE and refresh_term_stats. Latency at the anchor size: the anchor of the ratio.
3. The same up to --emails; the same index builds; latency at the full size, printed with
   its ratio to the anchor's; filtered vector search (one account, some folders) with
   EXPLAIN ANALYZE and the recall of its top 100 against the exact top 100, under
   pgvector's iterative index scan settings and an exact plan; recall on the reply pairs
   with the corpus inside the million.

Latency: search_emails(query, result_limit=20) over the whole served scope, short typed
queries (2-3 words of a corpus subject) and pasted ones (a paragraph of ~40 body words),
lexical (provider none) and hybrid (the bundled local embedder), with --clients processes
running the query list at once (each from its own offset), after one untimed warm-up pass
per client. The 1-minute load average is sampled throughout and printed per phase.
Nothing is asserted: the figures and their reading go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import multiprocessing
import os
import random
import re
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))

import retrieval  # noqa: E402
from search import LOAD, commit, cpu_model, percentile, set_provider  # noqa: E402
from sync import _server_connection, drop_database, recreate_database, setup_django  # noqa: E402

DATABASE = "mailfathom_million_bench"
CORPUS = REPO.parent / "shared" / "corpus"
CACHE_DIR = Path(tempfile.gettempdir()) / "mailfathom_million_bench"
CORPUS_ACCOUNT = "corpus"
HYBRID_PROVIDER = "local"
RESULT_LIMIT = 20
TARGETS = {"lexical": 0.150, "hybrid": 0.250}  # p95 seconds at 1,000,000 emails
# Synthetic accounts and their shares of the copies; each has the same folders.
ACCOUNTS = (
    ("north", 0.40),
    ("east", 0.20),
    ("south", 0.10),
    *((f"team-{n}", 0.03) for n in range(10)),
)
FOLDERS = (
    ("inbox", "inbox", 0.60),
    ("archive", "archive", 0.20),
    ("sent", "sent", 0.10),
    ("projects", "", 0.05),
    ("lists", "", 0.05),
)
# The filtered vector searches: (label, accounts, folder aliases or None for all).
FILTERED = (
    ("every served account (the latency runs' scope)", None, None),
    ("one small account, 2 of its folders", ["team-3"], ["archive", "projects"]),
    ("the corpus account", [CORPUS_ACCOUNT], None),
    ("the largest account, its inbox", ["north"], ["inbox"]),
)
FIRST_RECEIVED = datetime(2014, 1, 1, tzinfo=UTC)
SPAN = (datetime(2025, 1, 1, tzinfo=UTC) - FIRST_RECEIVED).total_seconds()
GOLDEN = (math.sqrt(5) - 1) / 2
SUBSTITUTIONS = 6  # words of the source swapped per copy
REFERENCES = 400_000  # distinct reference numbers the copies draw from
VECTOR_NOISE = 0.005  # per component (cosine to the source about 0.995 at 512 dimensions)
COPY_CHUNK = 25_000  # emails per COPY transaction
LOADERS = 2  # processes COPYing at once (--loaders)
LONG_QUERY_WORDS = 40
_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")
_VOCABULARY_WORD = re.compile(r"\b[a-z]{4,12}\b")
_ADDRESS = re.compile(r"([\w.+-]+)@([\w-]+(?:\.[\w-]+)+)")
_SUBJECT_PREFIX = re.compile(r"^\s*((re|fw|fwd|aw|wg)\s*(\[\d+\])?\s*:\s*)+", re.IGNORECASE)


# --- stage 1: the corpus through the product's own paths ---------------------------------


def load_corpus() -> dict[str, float]:
    """Import the corpus as its own account and embed it; return each step's seconds."""
    from mailbox.models import Email
    from mailbox.services import embedding
    from mailbox.services.lexical_search import refresh_term_stats

    timings: dict[str, float] = {}
    started = time.perf_counter()
    held = retrieval.load(CORPUS_ACCOUNT)
    timings["corpus: import_archive"] = time.perf_counter() - started
    print(f"  corpus: {held} emails imported ({timings['corpus: import_archive']:.0f} s)", flush=True)
    started = time.perf_counter()
    source = copy_cached_passages()
    if not source:
        swept = embedding.embed_pending()
        save_passages()
        source = f"embedded by embed_pending ({swept.embedded} emails)"
    timings["corpus: passages"] = time.perf_counter() - started
    print(f"  corpus passages: {source} ({timings['corpus: passages']:.0f} s)", flush=True)
    started = time.perf_counter()
    refresh_term_stats()
    timings["corpus: refresh_term_stats"] = time.perf_counter() - started
    assert Email.objects.count() == held
    return timings


def _passage_cache() -> Path:
    from mailfathom.providers import get_embedder

    spec = get_embedder().profile
    digest = hashlib.sha256(f"{spec.provider}:{spec.model}:{spec.dimensions}".encode()).hexdigest()[:12]
    return CACHE_DIR / f"corpus-passages-{digest}.json"


def save_passages() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT e.message_id, e.folder_id, e.uid, p.position, p.characters, p.embedding::text "
            "FROM mailbox_passage p JOIN mailbox_email e ON e.id = p.email_id"
        )
        rows = cursor.fetchall()
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    _passage_cache().write_text(json.dumps([[m, u, p, c, v] for m, _, u, p, c, v in rows]))


def copy_cached_passages() -> str:
    """The corpus's passages from an earlier run's sweep, when cached: matched by (message id, uid)."""
    from django.db import connection

    from mailbox.models import Email
    from mailbox.services import embedding
    from mailfathom.providers import get_embedder

    cache = _passage_cache()
    if not cache.exists():
        return ""
    profile = embedding.activate_profile(get_embedder())
    by_key = {
        (message_id, uid): email_id
        for email_id, message_id, uid in Email.objects.values_list("id", "message_id", "uid")
    }
    rows = json.loads(cache.read_text())
    written = 0
    with (
        connection.cursor() as cursor,
        cursor.copy(
            "COPY mailbox_passage (email_id, profile_id, position, characters, embedding) FROM STDIN"
        ) as copy,
    ):
        for message_id, uid, position, characters, vector in rows:
            email_id = by_key.get((message_id, uid))
            if email_id is not None:
                copy.write_row((email_id, profile.pk, position, characters, vector))
                written += 1
    Email.objects.update(embedded=True)
    return f"{written} copied from the cache of an earlier run's sweep ({cache.name})"


# --- the source messages and their varied copies ---------------------------------------------


@dataclass
class Source:
    subject: str
    body: str
    sender_address: str
    sender_name: str
    participants_text: str
    to: list[tuple[str, str]]
    direction: str
    is_bulk: bool
    is_list_mail: bool
    attachment_text: str
    passages: list[tuple[int, int, object]]  # position, characters, numpy vector
    words: list[str]  # its vocabulary words, the candidates for substitution


def read_sources() -> tuple[list[Source], list[str]]:
    """The corpus account's emails, passages and To participants; the shared vocabulary."""
    import numpy
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT e.id, e.subject, e.text_body, e.sender_address, e.sender_name, e.participants_text, "
            "e.direction, e.is_bulk, e.is_list_mail, e.attachment_text FROM mailbox_email e "
            "JOIN accounts_mailaccount a ON a.id = e.account_id WHERE a.account_id = %s ORDER BY e.id",
            [CORPUS_ACCOUNT],
        )
        emails = cursor.fetchall()
        corpus = [row[0] for row in emails]
        cursor.execute(
            "SELECT p.email_id, p.position, p.characters, p.embedding::text FROM mailbox_passage p "
            "WHERE p.email_id = ANY(%s)",
            [corpus],
        )
        passages: dict = {}
        for email_id, position, characters, vector in cursor.fetchall():
            passages.setdefault(email_id, []).append(
                (position, characters, numpy.array(json.loads(vector), dtype=numpy.float32))
            )
        cursor.execute(
            "SELECT email_id, display_name, address FROM mailbox_participant WHERE role = 'to' "
            "AND email_id = ANY(%s) ORDER BY email_id, position",
            [corpus],
        )
        to: dict = {}
        for email_id, name, address in cursor.fetchall():
            to.setdefault(email_id, []).append((name, address))
    documents: Counter[str] = Counter()
    own: list[set[str]] = []
    for row in emails:
        words = set(_VOCABULARY_WORD.findall(f"{row[1]}\n{row[2][:20_000]}"))
        own.append(words)
        documents.update(words)
    vocabulary = sorted(w for w, n in documents.items() if 3 <= n <= 400)
    usable = set(vocabulary)
    sources = [
        Source(
            subject=row[1],
            body=row[2],
            sender_address=row[3],
            sender_name=row[4],
            participants_text=row[5],
            to=to.get(row[0], [])[:3],
            direction=row[6],
            is_bulk=row[7],
            is_list_mail=row[8],
            attachment_text=row[9],
            passages=sorted(passages.get(row[0], []), key=lambda p: p[0]),
            words=sorted(words & usable)[:200],
        )
        for row, words in zip(emails, own, strict=True)
    ]
    return sources, vocabulary


def vary_address(address: str, variant: int) -> str:
    return address if variant == 0 else _ADDRESS.sub(rf"\1.{variant}@\2", address)


@dataclass
class Layout:
    account_pks: list[int]
    account_weights: list[float]
    folder_pks: dict[int, list[int]]  # account pk -> folder pks in FOLDERS order
    profile_pk: int


def make_layout() -> Layout:
    from accounts.models import MailAccount
    from mailbox.models import Folder
    from mailbox.services import embedding
    from mailfathom.providers import get_embedder
    from tests.factories import MailAccountFactory
    from tests.mailbox.factories import mapped_folder

    pks, weights, folders = [], [], {}
    for account_id, share in ACCOUNTS:
        account = MailAccount.objects.filter(account_id=account_id).first()
        if account is None:
            account = MailAccountFactory(account_id=account_id, display_name=f"Million {account_id}")
            for alias, role, _ in FOLDERS:
                mapped_folder(account, alias, role, uidvalidity=1, last_committed_at=datetime.now(UTC))
        pks.append(account.pk)
        weights.append(share)
        by_alias = {
            f.mapping.alias: f.pk for f in Folder.objects.filter(account=account).select_related("mapping")
        }
        folders[account.pk] = [by_alias[alias] for alias, _, _ in FOLDERS]
    profile = embedding.active_profile() or embedding.activate_profile(get_embedder())
    return Layout(pks, weights, folders, int(profile.pk))


EMAIL_COLUMNS = (
    'id, uidvalidity, uid, message_id, in_reply_to, "references", subject, sent_at, received_at, '
    "sender_address, sender_name, size_bytes, flags, flags_observed, direction, is_bulk, "
    "attachment_count, inline_count, attachment_total_bytes, encrypted, unverified_signature, "
    "unexpanded_tnef, availability, parse_defects, text_body, synced_at, account_id, folder_id, "
    "participants_text, embedded, is_list_mail, attachment_text"
)


def copy_emails(first: int, last: int, sources: list[Source], vocabulary: list[str], layout: Layout) -> int:
    """COPY synthetic emails first..last-1 (deterministic by index) with their passages and To rows."""
    import numpy
    from django.db import connection
    from pgvector.psycopg import register_vector

    connection.ensure_connection()
    raw = connection.connection
    register_vector(raw)
    vectors = [{p: v for p, _, v in source.passages} for source in sources]
    folder_weights = [share for _, _, share in FOLDERS]
    now = datetime.now(UTC)
    started, written = time.perf_counter(), 0
    for chunk in range(first, last, COPY_CHUNK):
        end = min(chunk + COPY_CHUNK, last)
        passages: list[tuple[uuid.UUID, int, int, int, int]] = []  # email, source, position, chars, seed
        participants: list[tuple[uuid.UUID, int, str, str]] = []
        with raw.transaction(), raw.cursor() as cursor:
            with cursor.copy(f"COPY mailbox_email ({EMAIL_COLUMNS}) FROM STDIN") as copy:
                for index in range(chunk, end):
                    rng = random.Random(index)  # noqa: S311 (a reproducible mailbox)
                    source_index = rng.randrange(len(sources))
                    source = sources[source_index]
                    account_pk = rng.choices(layout.account_pks, layout.account_weights)[0]
                    folder_at = rng.choices(range(len(FOLDERS)), folder_weights)[0]
                    swaps = {}
                    if source.words:
                        for word in rng.sample(source.words, min(SUBSTITUTIONS, len(source.words))):
                            swaps[word] = vocabulary[rng.randrange(len(vocabulary))]
                    subject, body = source.subject, source.body
                    if swaps:
                        pattern = re.compile(r"\b(" + "|".join(map(re.escape, swaps)) + r")\b")
                        subject = pattern.sub(lambda m, swaps=swaps: swaps[m.group(1)], subject)
                        body = pattern.sub(lambda m, swaps=swaps: swaps[m.group(1)], body)
                    body = f"{body}\n\nref {base36(rng.randrange(REFERENCES))}"
                    variant = index % 97
                    received = FIRST_RECEIVED + timedelta(seconds=SPAN * ((index * GOLDEN) % 1.0))
                    email_id = uuid.UUID(int=(0x10000000 << 96) | index)
                    role = FOLDERS[folder_at][1]
                    copy.write_row(
                        (
                            email_id, 1, index + 1, f"m{index}.{source_index}@million.invalid", "", [],
                            subject, received - timedelta(seconds=rng.randrange(5, 600)), received,
                            vary_address(source.sender_address, variant), source.sender_name,
                            len(body) + 1500, ["\\Seen"] if rng.random() < 0.8 else [], True,
                            "outgoing" if role == "sent" else source.direction, source.is_bulk,
                            0, 0, 0, False, False, False, "available", [], body, now, account_pk,
                            layout.folder_pks[account_pk][folder_at],
                            vary_address(source.participants_text, variant), True, source.is_list_mail,
                            source.attachment_text,
                        )
                    )  # fmt: skip
                    for position, characters, _ in source.passages:
                        passages.append((email_id, source_index, position, characters, index))
                    for position, (name, address) in enumerate(source.to):
                        participants.append((email_id, position, vary_address(address, variant), name))
            with cursor.copy(
                "COPY mailbox_participant (email_id, role, position, address, display_name) FROM STDIN"
            ) as copy:
                for email_id, position, address, name in participants:
                    copy.write_row((email_id, "to", position, address, name))
            with cursor.copy(
                "COPY mailbox_passage (email_id, profile_id, position, characters, embedding) "
                "FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["uuid", "int8", "int2", "int4", "vector"])
                noise = numpy.random.default_rng(chunk)
                for email_id, source_index, position, characters, _ in passages:
                    base = vectors[source_index][position]
                    vector = base + noise.normal(0.0, VECTOR_NOISE, base.shape).astype(numpy.float32)
                    copy.write_row((email_id, layout.profile_pk, position, characters, vector))
        written += end - chunk
        rate = written / (time.perf_counter() - started)
        print(f"  copied {end - first}/{last - first} ({rate:.0f} emails/s)", flush=True)
    return written


_SHARED: tuple = ()


def _copy_share(bounds: tuple[int, int]) -> int:
    return copy_emails(bounds[0], bounds[1], *_SHARED)


def base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        number, rest = divmod(number, 36)
        out = digits[rest] + out
        if not number:
            return "k" + out


def grow(target: int, sources: list[Source], vocabulary: list[str], layout: Layout) -> dict[str, float]:
    """Copies until the mailbox holds `target` emails; the search indexes rebuilt; seconds per step."""
    from django.db import connection, connections

    from mailbox.models import Email
    from mailbox.services import embedding
    from mailbox.services.lexical_search import refresh_term_stats

    global _SHARED
    timings: dict[str, float] = {}
    held = Email.objects.count()
    synthetic = Email.objects.exclude(account__account_id=CORPUS_ACCOUNT).count()
    if held >= target:
        return timings
    profile = embedding.active_profile()
    hnsw = f"passage_hnsw_{int(profile.pk)}"
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX IF EXISTS {hnsw}")
        cursor.execute("DROP INDEX IF EXISTS email_search_vector")
    started = time.perf_counter()
    first, last = synthetic, synthetic + target - held
    if LOADERS > 1:
        # Each loader process COPYs its own share of the indexes over its own session;
        # PostgreSQL's tsvector work and Python's text work then run on both cores.
        connections.close_all()
        bounds = [first + (last - first) * i // LOADERS for i in range(LOADERS + 1)]
        context = multiprocessing.get_context("fork")
        _SHARED = (sources, vocabulary, layout)  # inherited by the forked loaders, not pickled
        with context.Pool(LOADERS) as pool:
            pool.map(_copy_share, [(bounds[i], bounds[i + 1]) for i in range(LOADERS)])
    else:
        copy_emails(first, last, sources, vocabulary, layout)
    timings["COPY emails, To rows, passages"] = time.perf_counter() - started
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '1GB'")
        started = time.perf_counter()
        cursor.execute("CREATE INDEX email_search_vector ON mailbox_email USING gin (search_vector)")
        timings["GIN index"] = time.perf_counter() - started
        # The graph of a million 512-dimension vectors is about 3 GB; built in memory it
        # takes minutes, spilled to disk it takes hours.
        cursor.execute("SET maintenance_work_mem = '5GB'")
        cursor.execute("SET max_parallel_maintenance_workers = 1")
        started = time.perf_counter()
        embedding._ensure_vector_index(profile)
        timings["HNSW index"] = time.perf_counter() - started
        cursor.execute("RESET maintenance_work_mem")
        cursor.execute("RESET max_parallel_maintenance_workers")
        started = time.perf_counter()
        cursor.execute("VACUUM ANALYZE")
        timings["VACUUM ANALYZE"] = time.perf_counter() - started
    started = time.perf_counter()
    words = refresh_term_stats()
    timings["term stats (refresh_term_stats)"] = time.perf_counter() - started
    print(f"  term statistics: {words} words", flush=True)
    return timings


# --- latency with concurrent clients ---------------------------------------------------------


@dataclass(frozen=True)
class Query:
    kind: str  # "short" (2-3 words of a subject) or "pasted" (a paragraph)
    text: str


def make_queries(sources: list[Source], each: int, seed: int) -> list[Query]:
    rng = random.Random(seed)  # noqa: S311
    queries: list[Query] = []
    while len(queries) < each:
        words = [w for w in _WORD.findall(_SUBJECT_PREFIX.sub("", rng.choice(sources).subject)) if len(w) > 1]
        size = rng.randint(2, 3)
        if len(words) < size:
            continue
        start = rng.randrange(len(words) - size + 1)
        queries.append(Query("short", " ".join(words[start : start + size])))
    while len(queries) < 2 * each:
        source = rng.choice(sources)
        paragraphs = [p for p in re.split(r"\n[ \t]*\n", source.body) if len(p.split()) >= 25]
        if not paragraphs:
            continue
        words = rng.choice(paragraphs).split()[:LONG_QUERY_WORDS]
        text = " ".join(words)
        while len(text) > 512:
            words = words[:-1]
            text = " ".join(words)
        if not any(ord(ch) < 32 or 127 <= ord(ch) < 160 for ch in text):
            queries.append(Query("pasted", text))
    return queries


def _client(args: tuple[int, list[Query], str, object]) -> list[tuple[str, float]]:
    """One client: a warm-up pass, then the timed pass, starting at its own offset of the list."""
    offset, queries, provider, barrier = args
    set_provider(provider)
    from mailbox.services.search import search_emails

    order = queries[offset:] + queries[:offset]
    for query in order:
        search_emails(query.text, result_limit=RESULT_LIMIT)
    barrier.wait()  # type: ignore[attr-defined]  # a multiprocessing Barrier, passed as object through the pool
    timed = []
    for query in order:
        started = time.perf_counter()
        result = search_emails(query.text, result_limit=RESULT_LIMIT)
        timed.append((query.kind, time.perf_counter() - started))
        expected = "lexical" if provider == "none" else "hybrid"
        assert result.retrieval_mode == expected, result.retrieval_mode
    return timed


def measure_latency(queries: list[Query], clients: int, label: str) -> dict[str, dict[str, list[float]]]:
    from django.db import connections

    out: dict[str, dict[str, list[float]]] = {}
    for mode, provider in (("lexical", "none"), ("hybrid", HYBRID_PROVIDER)):
        connections.close_all()  # the clients open their own sessions
        context = multiprocessing.get_context("fork")
        with context.Manager() as manager, LOAD.phase(f"{label} {mode}"), context.Pool(clients) as pool:
            barrier = manager.Barrier(clients)
            offsets = [i * len(queries) // clients for i in range(clients)]
            results = pool.map(_client, [(o, queries, provider, barrier) for o in offsets])
        per_kind: dict[str, list[float]] = {}
        for timed in results:
            for kind, seconds in timed:
                per_kind.setdefault(kind, []).append(seconds)
                per_kind.setdefault("all", []).append(seconds)
        out[mode] = per_kind
    set_provider(HYBRID_PROVIDER)
    return out


def print_latency(label: str, figures: dict, anchor: dict | None, clients: int) -> None:
    print(f"\nsearch_emails latency at {label}, {clients} clients at once, result_limit {RESULT_LIMIT}")
    print(f"  {'mode':<8}{'queries':<8}{'n':>4}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}{'target':>8}"
          f"{'verdict':>9}{'p95 / anchor p95':>19}")  # fmt: skip
    for mode, per_kind in figures.items():
        for kind in ("short", "pasted", "all"):
            values = per_kind[kind]
            p95 = percentile(values, 0.95)
            ratio = ""
            if anchor:
                ratio = f"{p95 / percentile(anchor[mode][kind], 0.95):.2f}"
            target = TARGETS[mode]
            print(
                f"  {mode:<8}{kind:<8}{len(values):>4}{percentile(values, 0.5) * 1000:>9.1f}"
                f"{p95 * 1000:>9.1f}{max(values) * 1000:>9.1f}{target * 1000:>8.0f}"
                f"{'met' if p95 < target else 'MISSED':>9}{ratio:>19}"
            )


def explain_lexical(queries: list[Query]) -> None:
    """EXPLAIN (ANALYZE, BUFFERS) of the BM25 statement of the slowest short and pasted query."""
    from django.db import connection

    from mailbox.models import Email
    from mailbox.services.lexical_search import rank_lexical
    from mailbox.services.selection import select

    candidates = Email.objects.in_selection(select())
    for kind in ("short", "pasted"):
        chosen = [q for q in queries if q.kind == kind]
        slowest, worst = chosen[0], 0.0
        for query in chosen:
            started = time.perf_counter()
            rank_lexical(candidates, query.text, RESULT_LIMIT)
            if time.perf_counter() - started > worst:
                slowest, worst = query, time.perf_counter() - started
        plans: list[str] = []

        def explained(execute, sql, params, many, context, into=plans):
            # Explained where the product runs it: in its transaction, under its settings
            # (work_mem raised for a large mailbox).
            if "WITH occurrences" in sql and not sql.startswith("EXPLAIN"):
                with context["connection"].cursor() as cursor:
                    cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
                    into.append("\n".join(row[0] for row in cursor.fetchall()))
            return execute(sql, params, many, context)

        with connection.execute_wrapper(explained):
            rank_lexical(candidates, slowest.text, RESULT_LIMIT)
        plan = plans[0]
        print(
            f"\n--- rank_lexical, slowest {kind} query "
            f"({worst * 1000:.0f} ms, {len(slowest.text.split())} words)"
        )
        print(plan)


# --- filtered vector search ------------------------------------------------------------------


LARGE_SELECTION, LARGE_SELECTION_QUERIES = 100_000, 4
RELAXED = ["SET LOCAL hnsw.iterative_scan = relaxed_order", "SET LOCAL hnsw.ef_search = 100"]
MORE_TUPLES = [*RELAXED, "SET LOCAL hnsw.max_scan_tuples = 100000"]
# label -> (statement form, settings); None: embedding.rank_vector itself.
VECTOR_PLANS: dict[str, tuple[str, list[str]] | None] = {
    "product: embedding.rank_vector": None,
    "IN (selection), planner's choice, relaxed, ef 100 (rank_vector before)": ("in", RELAXED),
    "IN (selection), relaxed, ef 100, max_scan_tuples 100k": ("in", MORE_TUPLES),
    "HNSW forced (EXISTS per visited passage), relaxed, ef 100": ("exists", RELAXED),
    "HNSW forced, relaxed, ef 100, max_scan_tuples 100k": ("exists", MORE_TUPLES),
    "HNSW forced, relaxed, ef 400, max_scan_tuples 100k": (
        "exists",
        [*MORE_TUPLES, "SET LOCAL hnsw.ef_search = 400"],
    ),
    "HNSW forced, no iterative scan, ef 100": ("exists", ["SET LOCAL hnsw.ef_search = 100"]),
    "exact (the selection's own passages, no HNSW)": ("exact", []),
}


def vector_sql(candidates, vector: list[float], profile, depth: int, form: str) -> tuple[str, list]:
    """The vector ranking's statement in one of three forms: "in" (the selection as IN, the
    planner choosing), "exists" (checked per visited passage: only the HNSW index can serve
    the ORDER BY), "exact" (every passage of the selection measured)."""
    from mailbox.services.raw_sql import Params

    dims = int(profile.dimensions)
    bind = Params()
    distance = f"p.embedding::vector({dims}) <=> {bind(str(vector))}::vector({dims})"
    visited = candidates.extra(where=["mailbox_email.id = p.email_id"])

    def condition() -> str:  # called where it stands in the statement, so its values bind in order
        if form == "exists":
            return f"EXISTS ({bind.query(visited.order_by().values('id'))} OFFSET 0)"
        return f"p.email_id IN ({bind.query(candidates.values('id'))})"

    inner = f"""
        SELECT p.email_id::text AS found, {distance} AS distance FROM mailbox_passage p
        WHERE p.profile_id = {bind(profile.pk)} AND {condition()}
    """
    if form == "exact":
        return f"SELECT * FROM ({inner} OFFSET 0) s ORDER BY distance LIMIT {bind(2 * depth)}", bind.values
    return f"{inner} ORDER BY distance LIMIT {bind(2 * depth)}", bind.values


def filtered_vector(queries: list[Query]) -> dict:
    """Each VECTOR_PLANS entry on each FILTERED selection: ms, hits, recall of the top 100, plan."""
    from django.db import connection, transaction

    from mailbox.models import Email
    from mailbox.services import embedding
    from mailbox.services.search import FUSION_DEPTH
    from mailbox.services.selection import select
    from mailfathom.providers import get_embedder

    set_provider(HYBRID_PROVIDER)
    embedder, profile = get_embedder(), embedding.active_profile()
    vectors = [embedder.embed_query(q.text) for q in queries]
    report: dict = {}
    for label, accounts, folders in FILTERED:
        candidates = Email.objects.in_selection(select(accounts, folders))
        size = candidates.count()
        print(f"\nfiltered vector search: {label} ({size} emails, {size / Email.objects.count():.2%} of all)")
        # Measuring every passage of a large selection takes seconds per query: fewer queries there.
        here = vectors if size <= LARGE_SELECTION else vectors[:LARGE_SELECTION_QUERIES]
        exact_tops = []
        for vector in here:
            sql, params = vector_sql(candidates, vector, profile, FUSION_DEPTH, "exact")
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(sql, params)
                exact_tops.append(_nearest(cursor.fetchall(), FUSION_DEPTH))
        for plan_label, plan in VECTOR_PLANS.items():
            if plan is not None and plan[0] == "exact" and size > LARGE_SELECTION:
                continue
            times, recalls, hits = [], [], []
            for vector, exact in zip(here, exact_tops, strict=True):
                started = time.perf_counter()
                if plan is None:
                    ranked = embedding.rank_vector(candidates, vector, profile, FUSION_DEPTH)
                    found = [hit.email_id for hit in ranked]
                else:
                    sql, params = vector_sql(candidates, vector, profile, FUSION_DEPTH, plan[0])
                    with transaction.atomic(), connection.cursor() as cursor:
                        for statement in plan[1]:
                            cursor.execute(statement)
                        cursor.execute(sql, params)
                        found = _nearest(cursor.fetchall(), FUSION_DEPTH)
                times.append(time.perf_counter() - started)
                hits.append(len(found))
                recalls.append(len(set(found) & set(exact)) / max(len(exact), 1))
            report[(label, plan_label)] = (times, hits, recalls)
            print(
                f"  {plan_label:<50} p50 {percentile(times, 0.5) * 1000:7.1f} ms  p95 "
                f"{percentile(times, 0.95) * 1000:7.1f} ms  hits min {min(hits):3d} of {FUSION_DEPTH}  "
                f"recall of the exact top {FUSION_DEPTH}: mean {statistics.mean(recalls):.3f} "
                f"min {min(recalls):.3f}"
            )
        # The plans, for the record: which index serves each form?
        for form, settings in (("in", RELAXED), ("exists", MORE_TUPLES)):
            sql, params = vector_sql(candidates, vectors[-1], profile, FUSION_DEPTH, form)
            with transaction.atomic(), connection.cursor() as cursor:
                for statement in settings:
                    cursor.execute(statement)
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
                print(f"  EXPLAIN (ANALYZE, BUFFERS), form {form!r}, a pasted query:")
                for (line,) in cursor.fetchall():
                    print("    " + line[:200])
    return report


def _nearest(rows: list, depth: int) -> list[str]:
    nearest: dict[str, float] = {}
    for found, distance in rows:
        nearest[found] = min(float(distance), nearest.get(found, float(distance)))
    return [k for k, _ in sorted(nearest.items(), key=lambda item: item[1])[:depth]]


# --- recall on the reply pairs ---------------------------------------------------------------


def recall(pairs: list[dict]) -> dict[str, dict[str, float]]:
    """retrieval.py's measurement on the corpus account: lexical, vector and hybrid."""
    from mailbox.services import embedding, search
    from mailfathom.providers import get_embedder

    set_provider(HYBRID_PROVIDER)
    embedder, profile = get_embedder(), embedding.active_profile()

    def vector_ranking(rows, query, depth):
        return embedding.rank_vector(rows, embedder.embed_query(query), profile, depth)

    if RECALL_PROCESSES > 1:
        # The pairs in interleaved shares, one process each (their own sessions and embedders).
        from django.db import connections

        connections.close_all()
        context = multiprocessing.get_context("fork")
        shares = [pairs[i::RECALL_PROCESSES] for i in range(RECALL_PROCESSES)]
        with context.Pool(RECALL_PROCESSES) as pool:
            parts = pool.map(_collect_share, shares)
        records, seconds = [], {"lexical": 0.0, "vector": 0.0}
        for index in range(len(pairs)):  # back in the pairs' order
            records.append(parts[index % RECALL_PROCESSES][0][index // RECALL_PROCESSES])
        for _, part_seconds in parts:
            for key in seconds:
                seconds[key] += part_seconds[key]
    else:
        records, seconds = retrieval.collect(CORPUS_ACCOUNT, pairs, vector_ranking)
    fusion = search.Fusion.for_model(profile.model)
    figures = {
        "lexical": retrieval.metrics(
            [retrieval.position([h.email_id for h in r.lexical[:10]], r.target) for r in records]
        ),
        "vector": retrieval.metrics(
            [retrieval.position([h.email_id for h in r.semantic[:10]], r.target) for r in records]
        ),
        "hybrid": retrieval.metrics(
            [retrieval.position(retrieval.hybrid_ranked(r, fusion)[0], r.target) for r in records]
        ),
    }
    figures["lexical"]["s/query"] = seconds["lexical"] / len(pairs)
    figures["vector"]["s/query"] = seconds["vector"] / len(pairs)
    return figures


RECALL_PROCESSES = 1  # --recall-processes


def _collect_share(pairs: list[dict]) -> tuple[list, dict[str, float]]:
    from mailbox.services import embedding
    from mailfathom.providers import get_embedder

    set_provider(HYBRID_PROVIDER)
    embedder, profile = get_embedder(), embedding.active_profile()

    def vector_ranking(rows, query, depth):
        return embedding.rank_vector(rows, embedder.embed_query(query), profile, depth)

    return retrieval.collect(CORPUS_ACCOUNT, pairs, vector_ranking)


def print_recall(alone: dict, inside: dict, emails: int) -> None:
    print(f"\nrecall on the reply pairs: the corpus alone, and inside {emails:,} emails")
    print(f"  {'mode':<8}{'alone r@1 / r@10 / MRR':>28}{'inside r@1 / r@10 / MRR':>30}{'r@10 change':>13}")
    for mode in ("lexical", "vector", "hybrid"):
        a, b = alone[mode], inside[mode]
        print(
            f"  {mode:<8}{a['recall@1']:>10.3f}{a['recall@10']:>9.3f}{a['MRR']:>9.3f}"
            f"{b['recall@1']:>12.3f}{b['recall@10']:>9.3f}{b['MRR']:>9.3f}"
            f"{b['recall@10'] - a['recall@10']:>+13.3f}"
        )


# --- the run ---------------------------------------------------------------------------------


def sizes() -> list[tuple[str, int]]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND "
            "(c.relname IN ('mailbox_email', 'mailbox_passage', 'mailbox_participant', "
            "'mailbox_lexicaltermstat', 'email_search_vector') OR c.relname LIKE 'passage_hnsw_%%') "
            "ORDER BY 2 DESC"
        )
        rows = cursor.fetchall()
        cursor.execute("SELECT pg_database_size(current_database())")
        rows.append(("(database)", cursor.fetchone()[0]))
    return rows


def print_build(label: str, timings: dict[str, float]) -> None:
    print(f"\nbuild to {label}")
    for step, seconds in timings.items():
        print(f"  {step:<40}{seconds:>9.1f} s")
    print(f"  {'(total)':<40}{sum(timings.values()):>9.1f} s")
    for name, size in sizes():
        print(f"  size {name:<35}{size / 1e6:>9.0f} MB")


def main() -> None:
    global CORPUS, LOADERS, RECALL_PROCESSES
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--emails", type=int, default=1_000_000)
    parser.add_argument("--anchor", type=int, default=100_000, help="the same queries at this size first")
    parser.add_argument("--queries", type=int, default=25, help="queries of each kind (short, pasted)")
    parser.add_argument("--clients", type=int, default=2, help="clients searching at once")
    parser.add_argument("--pairs", type=int, default=0, help="reply pairs for recall (0: all)")
    parser.add_argument(
        "--vector-queries", type=int, default=20, help="queries of the filtered vector search"
    )
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--recall-processes", type=int, default=1, help="processes ranking the reply pairs at once"
    )
    parser.add_argument("--loaders", type=int, default=LOADERS, help="processes COPYing at once")
    parser.add_argument(
        "--keep", action="store_true", help="reuse the scratch database and leave it in place"
    )
    parser.add_argument(
        "--phases",
        default="latency,explain,vector,recall",
        help="what to measure at the full size (comma-separated; a rerun with --keep may pick some)",
    )
    parser.add_argument("--skip-anchor", action="store_true", help="no latency at the anchor size")
    args = parser.parse_args()
    CORPUS = args.corpus
    retrieval.CORPUS = args.corpus
    LOADERS = args.loaders
    RECALL_PROCESSES = args.recall_processes

    setup_django(DATABASE)
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connections

    from mailbox.models import Email

    settings.MAILFATHOM = settings.MAILFATHOM.replace(embedding_provider=HYBRID_PROVIDER)
    LOAD.start()
    run_started = time.perf_counter()
    print(f"commit {commit()}; {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    print(f"machine: {os.cpu_count()} cores, {cpu_model()}; load average {os.getloadavg()}")
    with _server_connection("postgres") as conn:
        exists = bool(conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE]).fetchone())
        server = conn.execute("SHOW server_version").fetchone()[0]
        shared = conn.execute("SHOW shared_buffers").fetchone()[0]
    print(
        f"PostgreSQL {server} (shared_buffers {shared}); "
        f"data under {os.environ.get('MAILFATHOM_VAR_DIR', 'var/')}"
    )
    if not (args.keep and exists):
        connections.close_all()
        recreate_database(DATABASE)
    call_command("migrate", verbosity=0)
    pairs = [json.loads(line) for line in (CORPUS / "reply-pairs-dev.jsonl").read_text().splitlines()]
    if args.pairs:
        pairs = pairs[: args.pairs]

    build: dict[str, dict[str, float]] = {}
    alone = None
    if not Email.objects.exists():
        with LOAD.phase("corpus load"):
            build["corpus"] = load_corpus()
        with LOAD.phase("recall alone"):
            alone = recall(pairs)
        print(f"recall alone: {alone}", flush=True)
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        (CACHE_DIR / "recall-alone.json").write_text(json.dumps(alone))
    else:
        cached = CACHE_DIR / "recall-alone.json"
        alone = json.loads(cached.read_text()) if cached.exists() else None
    started = time.perf_counter()
    sources, vocabulary = read_sources()
    layout = make_layout()
    print(
        f"sources: {len(sources)} corpus emails, vocabulary of {len(vocabulary)} words "
        f"({time.perf_counter() - started:.0f} s)"
    )
    queries = make_queries(sources, args.queries, args.seed)
    anchor = None
    if args.anchor and args.anchor < args.emails and not args.skip_anchor:
        with LOAD.phase("build anchor"):
            build["anchor"] = grow(args.anchor, sources, vocabulary, layout)
        if build["anchor"]:
            print_build(f"{args.anchor:,}", build["anchor"])
        if Email.objects.count() <= args.anchor:
            anchor = measure_latency(queries, args.clients, "anchor")
            (CACHE_DIR / "anchor-latency.json").write_text(json.dumps(anchor))
            print_latency(f"{Email.objects.count():,} emails (the anchor)", anchor, None, args.clients)
    if anchor is None and (CACHE_DIR / "anchor-latency.json").exists():
        anchor = json.loads((CACHE_DIR / "anchor-latency.json").read_text())  # --keep: an earlier run's
        print("anchor latency: from this database's earlier run (--keep)")
    with LOAD.phase("build full"):
        build["full"] = grow(args.emails, sources, vocabulary, layout)
    if build["full"]:
        print_build(f"{args.emails:,}", build["full"])
    held = Email.objects.count()
    phases = set(args.phases.split(","))
    full: dict = {}
    if "latency" in phases:
        full = measure_latency(queries, args.clients, "full")
        print_latency(f"{held:,} emails", full, anchor, args.clients)
    if "explain" in phases:
        with LOAD.phase("explain"):
            explain_lexical(queries)
    if "vector" in phases:
        with LOAD.phase("filtered vector"):
            filtered_vector(
                queries[: args.vector_queries // 2]
                + queries[args.queries : args.queries + args.vector_queries // 2]
            )
    inside = None
    if "recall" in phases:
        with LOAD.phase("recall inside"):
            inside = recall(pairs)
        print(f"recall inside: {inside}")
    LOAD.stop()

    print(f"\n=== summary: {held:,} emails, commit {commit()} ===")
    for stage, timings in build.items():
        print(
            f"  build {stage:<8} {sum(timings.values()):8.0f} s  "
            f"({', '.join(f'{k} {v:.0f}' for k, v in timings.items())})"
        )
    if anchor:
        print_latency(f"{args.anchor:,} emails (the anchor)", anchor, None, args.clients)
    if full:
        print_latency(f"{held:,} emails", full, anchor, args.clients)
    if alone and inside:
        print_recall(alone, inside, held)
    elif inside:
        print(f"\nrecall inside the million: {inside}")
    LOAD.report()
    print(f"\nwhole run {time.perf_counter() - run_started:.0f} s; load average now {os.getloadavg()}")
    if not args.keep:
        drop_database(DATABASE)


if __name__ == "__main__":
    main()
