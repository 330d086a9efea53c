"""Embeddings of the local copy: the active profile, the sweep, and the semantic-search state.

An email's passage is its subject and own words; text read from its attachments makes a
second passage (ATTACHMENT_POSITION), and vector ranking takes the nearer of the two.
Changing the model is an operation of its own (mailbox.services.reembedding). How it is
stored and indexed: docs/search.md.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import cast

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, F, Q
from django.db.models.expressions import RawSQL
from django.db.models.functions import Left
from django.utils import timezone

from mailbox.models import Availability, Email, EmailQuerySet, EmbeddingProfile, EmbeddingSpend, Passage
from mailbox.services.own_words import own_words
from mailbox.services.raw_sql import Params, column, cursor_under, selects_nothing, table
from mailbox.services.selection_size import selection_size
from mailfathom.core.capability import CapabilityState
from mailfathom.core.progress import Progress, ProgressCallback
from mailfathom.providers import EMBEDDING_ROLE, get_embedder
from mailfathom.providers.base import Embedder
from mailfathom.providers.errors import ProviderError
from mailfathom.providers.health import read_health

logger = logging.getLogger(__name__)

# Aliases of the one definition, kept for mailbox.services.search, which reads them by these names.
INACTIVE, AVAILABLE, DEGRADED = CapabilityState.INACTIVE, CapabilityState.AVAILABLE, CapabilityState.DEGRADED
SWEEP_BATCH = 32
SWEEP_LABEL = "embedding"
BODY_READ_FACTOR = 4  # characters of body read per character of window
BODY_POSITION, ATTACHMENT_POSITION = 0, 1  # Passage.position of the two passages an email may have


def active_profile() -> EmbeddingProfile | None:
    return EmbeddingProfile.objects.filter(active=True).first()


def activate_profile(embedder: Embedder) -> EmbeddingProfile:
    """Return the profile of `embedder`, activating it (and its vector index) if none is active."""
    spec = embedder.profile
    with transaction.atomic():
        profile, _ = EmbeddingProfile.objects.get_or_create(
            provider=spec.provider, model=spec.model, dimensions=spec.dimensions
        )
        if not EmbeddingProfile.objects.filter(active=True).exists():
            profile.active = True
            profile.save(update_fields=["active"])
            Email.objects.update(embedded=False)
    _ensure_vector_index(profile)
    return profile


def pending_emails() -> EmailQuerySet:
    """The sweep's queue: available emails without a passage under the active profile."""
    return Email.objects.filter(embedded=False, availability=Availability.AVAILABLE)


def pending_count() -> int:
    """Emails the sweep has still to embed under the active profile."""
    return pending_emails().count()


def _ensure_vector_index(profile: EmbeddingProfile) -> None:
    # One partial HNSW index per profile, on the column cast to the profile's dimension:
    # pgvector indexes only fixed-dimension expressions.
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_class WHERE relname = %s", [f"passage_hnsw_{int(profile.pk)}"])
        if cursor.fetchone():
            return
        # DDL takes no bound values: only integers and quoted names are formatted in.
        cursor.execute(
            f"CREATE INDEX IF NOT EXISTS passage_hnsw_{int(profile.pk)} ON {table(Passage)} "
            f"USING hnsw (({column(Passage, 'embedding')}::vector({int(profile.dimensions)})) "
            f"vector_cosine_ops) WHERE {column(Passage, 'profile')} = {int(profile.pk)}"
        )


def passage_text(subject: str, body: str) -> str:
    """What is embedded for an email: its subject and its own words (quotations, signature
    and list footer left out, mailbox.services.own_words), cut to the window."""
    window = settings.MAILFATHOM.embedding_window_characters
    return f"{subject}\n\n{own_words(body)}"[:window].strip()


def attachment_passage_text(attachment_text: str) -> str:
    """What is embedded of the text read from an email's attachments: its start, cut to the window."""
    return attachment_text[: settings.MAILFATHOM.embedding_window_characters].strip()


@dataclass
class SweepResult:
    embedded: int = 0
    skipped_empty: int = 0
    batches: int = 0
    stopped_by: str = ""  # "", "ceiling", "provider", "profile" (the configured model is not active)
    inactive: bool = False  # no embedding provider is configured: nothing was tried


def _period_start(now: datetime) -> datetime:
    return now.replace(minute=0, second=0, microsecond=0)


def _spent_this_period(now: datetime) -> int:
    row = EmbeddingSpend.objects.filter(period_start=_period_start(now)).first()
    return row.characters if row else 0


@dataclass(frozen=True)
class Shard:
    """Which part of the mail one of `count` concurrent sweeps takes: emails whose id hashes
    to `index`, so the sweeps never embed the same email twice and need no locks."""

    index: int
    count: int

    def rows(self, emails: EmailQuerySet) -> EmailQuerySet:
        if self.count <= 1:
            return emails
        bucket = RawSQL("mod(abs(hashtext(id::text)), %s)", [self.count])
        return emails.alias(shard_bucket=bucket).filter(shard_bucket=self.index)


def embed_pending(
    *,
    max_batches: int | None = None,
    batch_size: int = SWEEP_BATCH,
    shard: Shard | None = None,
    until: float | None = None,
    progress: ProgressCallback | None = None,
) -> SweepResult:
    """Embed emails that have no passage under the active profile, newest received first.

    `shard` limits the sweep to one part of the mail (reembed's processes); `until` (a
    time.monotonic() value) ends it after the batch running then. `progress` hears how many
    of the backlog counted at the start are done after each committed batch; an exception it
    raises (or a KeyboardInterrupt) stops the sweep with every committed batch kept, and the
    next sweep takes up the rest.
    """
    result = SweepResult()
    embedder = get_embedder()
    if embedder is None:
        result.inactive = True
        return result
    # A process that was not warmed at start (a management command) loads the model while
    # the queries below run; the first batch waits for the load, outside its deadline.
    embedder.warm()
    profile = activate_profile(embedder)
    # A configured model that is not the active profile's would write vectors into a space no
    # search reads: the sweep stops until the model is switched (manage.py reembed).
    if not profile.active:
        result.stopped_by = "profile"
        return result
    batch_size = max(1, min(batch_size, embedder.max_batch))
    ceiling = settings.MAILFATHOM.embedding_max_characters_per_hour
    window = settings.MAILFATHOM.embedding_window_characters
    pending = (shard or Shard(0, 1)).rows(pending_emails())
    backlog = pending.count() if progress else 0
    if progress:
        progress(Progress(label=SWEEP_LABEL, done=0, total=backlog))
    while max_batches is None or result.batches < max_batches:
        if until is not None and time.monotonic() >= until:
            break
        # A bounded start of each body crosses the wire (a body may be megabytes): enough
        # to fill the window once quotations are left out.
        rows = list(
            pending.order_by("-received_at", "-id")
            .annotate(
                body_start=Left("text_body", window * BODY_READ_FACTOR),
                files_start=Left("attachment_text", window),
            )
            .values_list("id", "subject", "body_start", "files_start")[:batch_size]
        )
        if not rows:
            break
        wanted = _missing_passages(rows, profile)
        spend = sum(len(text) for _, _, text in wanted)
        now = timezone.now()
        if _spent_this_period(now) + spend > ceiling:
            result.stopped_by = "ceiling"
            break
        try:
            vectors = embedder.embed_passages([text for _, _, text in wanted]) if wanted else []
        except ProviderError as error:
            result.stopped_by = "provider"
            logger.warning("embedding sweep stopped: provider %s", error.kind)
            break
        with transaction.atomic():
            Passage.objects.bulk_create(
                [
                    Passage(
                        email_id=email_id,
                        profile=profile,
                        position=position,
                        characters=len(text),
                        embedding=vector,
                    )
                    for (email_id, position, text), vector in zip(wanted, vectors, strict=True)
                ],
                ignore_conflicts=True,
            )
            Email.objects.filter(id__in=[row[0] for row in rows]).update(embedded=True)
            ledger, _ = EmbeddingSpend.objects.get_or_create(period_start=_period_start(now))
            EmbeddingSpend.objects.filter(pk=ledger.pk).update(
                characters=F("characters") + spend, calls=F("calls") + (1 if wanted else 0)
            )
        embedded = len({email_id for email_id, _, _ in wanted})
        result.embedded += embedded
        result.skipped_empty += len(rows) - embedded
        result.batches += 1
        if progress:
            done = result.embedded + result.skipped_empty
            progress(Progress(label=SWEEP_LABEL, done=done, total=max(backlog, done)))
    if result.embedded:
        logger.info("embedding sweep: %d embedded in %d batches", result.embedded, result.batches)
    return result


def _missing_passages(
    rows: list[tuple[uuid.UUID, str, str, str]], profile: EmbeddingProfile
) -> list[tuple[uuid.UUID, int, str]]:
    """(email id, position, text) of each passage of `rows` the profile lacks and that has text.

    An email comes back to the sweep when its attachments have been read: its body passage
    is then held already and only the attachments' one is made.
    """
    held = set(
        Passage.objects.filter(profile=profile, email_id__in=[row[0] for row in rows]).values_list(
            "email_id", "position"
        )
    )
    wanted: list[tuple[uuid.UUID, int, str]] = []
    for email_id, subject, body, files in rows:
        for position, text in (
            (BODY_POSITION, passage_text(subject, body)),
            (ATTACHMENT_POSITION, attachment_passage_text(files)),
        ):
            if text and (email_id, position) not in held:
                wanted.append((email_id, position, text))
    return wanted


_READ = object()  # "read the active profile now" (a caller may pass the one it has read)


def semantic_state(profile: EmbeddingProfile | None | object = _READ) -> CapabilityState:
    """Whether semantic search can place a query now, read without calling the provider.

    Inactive without an embedder or an active profile; degraded when the configured
    embedder's space is not the active profile's, or its last call failed. `profile` is
    the active profile if the caller has just read it (each read is a query).
    """
    profile = active_profile() if profile is _READ else profile
    if not profile_matches(profile):
        if get_embedder() is None or profile is None:
            return CapabilityState.INACTIVE
        return CapabilityState.DEGRADED
    if read_health(EMBEDDING_ROLE).state == CapabilityState.DEGRADED:
        return CapabilityState.DEGRADED
    return CapabilityState.AVAILABLE


def profile_matches(profile: EmbeddingProfile | None | object = _READ) -> bool:
    """Whether the configured embedder makes vectors in the active profile's space."""
    embedder = get_embedder()
    # _READ is the one value that is not a profile or None.
    profile = cast("EmbeddingProfile | None", active_profile() if profile is _READ else profile)
    if embedder is None or profile is None:
        return False
    spec = embedder.profile
    return (spec.provider, spec.model, spec.dimensions) == (
        profile.provider,
        profile.model,
        profile.dimensions,
    )


@dataclass(frozen=True)
class ProfileSwitch:
    """The configured embedder and the active profile, when they differ."""

    configured: str  # provider:model:dimensions, as a profile is written
    active: str


def pending_switch() -> ProfileSwitch | None:
    """What `manage.py reembed` would switch, if anything: while the configured embedder is not
    the active profile's, the sweep embeds nothing and search ranks by words alone."""
    embedder = get_embedder()
    profile = active_profile()
    if embedder is None or profile is None or profile_matches(profile):
        return None
    spec = embedder.profile
    configured = EmbeddingProfile(provider=spec.provider, model=spec.model, dimensions=spec.dimensions)
    return ProfileSwitch(configured=str(configured), active=str(profile))


@dataclass(frozen=True)
class VectorHit:
    email_id: str
    distance: float


# How the vector ranking reads a selection (docs/benchmarks.md, "Search at a million
# emails"). A selection of at most EXACT_WITHIN emails is ranked exactly: the distance to
# each of its own passages, read through the passage table's email index, which costs
# about what an iterative HNSW scan costs to find enough of its passages among a large
# mailbox's and is never wrong. A larger one is ranked by the profile's HNSW index with
# pgvector's iterative scan, the selection checked on each passage the scan visits; the
# scan may visit up to HNSW_MAX_SCAN_TUPLES passages, so a selection of a few percent of
# the mailbox still fills the ranking. Left to itself the planner chose between the two by
# its estimate of the selection's size, which was wrong both ways (116 rows estimated for
# an account of 7,685; a whole-mailbox scope read through the email index and sorted).
EXACT_WITHIN = 20_000
HNSW_EF_SEARCH = 100
HNSW_MAX_SCAN_TUPLES = 100_000


def rank_vector(
    candidates: EmailQuerySet, query_vector: list[float], profile: EmbeddingProfile, limit: int
) -> list[VectorHit]:
    """Nearest emails of `candidates` to the query, closest first.

    A small selection is ranked exactly over its own passages; a larger one through the
    HNSW index, pgvector 0.8's iterative scan continuing until enough visited passages
    belong to the selection (see EXACT_WITHIN). Candidates empty by construction (a scope
    whose folders leave nothing) are nearest to nothing.
    """
    if selects_nothing(candidates):
        return []
    dims = int(profile.dimensions)
    passage, email_id, embedding = table(Passage), column(Passage, "email"), column(Passage, "embedding")
    profile_id = column(Passage, "profile")
    bind = Params()
    vector = f"{bind(str(query_vector))}::vector({dims})"
    # An email may have two passages (body, attachments), so twice the depth is read and
    # each email keeps its nearer one.
    if selection_size(candidates, EXACT_WITHIN) <= EXACT_WITHIN:
        # OFFSET 0 keeps the ORDER BY off the HNSW index: every passage of the selection is measured.
        sql = f"""
            SELECT found, distance FROM (
                SELECT p.{email_id}::text AS found, p.{embedding}::vector({dims}) <=> {vector} AS distance
                FROM {passage} p
                WHERE p.{profile_id} = {bind(profile.pk)}
                  AND p.{email_id} IN ({bind.query(candidates.values("id"))})
                OFFSET 0
            ) AS measured
            ORDER BY distance
            LIMIT {bind(2 * limit)}
        """
        scan_settings: dict[str, str] = {}
    else:
        # The selection is checked per passage the index scan visits (a correlated EXISTS
        # the planner cannot turn into a join that drives the plan), so ORDER BY distance
        # LIMIT is served by the HNSW index however the selection's size is estimated.
        email = table(Email)
        visited = candidates.extra(where=[f"{email}.{column(Email, 'id')} = p.{email_id}"])  # noqa: S610
        sql = f"""
            SELECT p.{email_id}::text, p.{embedding}::vector({dims}) <=> {vector} AS distance
            FROM {passage} p
            WHERE p.{profile_id} = {bind(profile.pk)}
              AND EXISTS ({bind.query(visited.order_by().values("id"))} OFFSET 0)
            ORDER BY distance
            LIMIT {bind(2 * limit)}
        """
        scan_settings = {
            "hnsw.iterative_scan": "relaxed_order",
            "hnsw.ef_search": str(int(HNSW_EF_SEARCH)),
            "hnsw.max_scan_tuples": str(int(HNSW_MAX_SCAN_TUPLES)),
        }
    with cursor_under(scan_settings) as cursor:  # the exact plan needs no settings
        cursor.execute(sql, bind.values)
        nearest: dict[str, float] = {}
        for found, distance in cursor.fetchall():
            nearest[found] = min(float(distance), nearest.get(found, float(distance)))
    ranked = sorted(nearest.items(), key=lambda item: item[1])[:limit]
    return [VectorHit(email_id=found, distance=distance) for found, distance in ranked]


def coverage(candidates: EmailQuerySet) -> tuple[int, int]:
    """How many of the candidate emails are embedded under the active profile, of how many."""
    counts = candidates.order_by().aggregate(total=Count("id"), embedded=Count("id", filter=Q(embedded=True)))
    return counts["embedded"], counts["total"]
