"""Tamper evidence for the audit trails: a keyed hash chain kept beside them, and its check.

Every write, change and removal the application makes to a registered trail's entry appends
a link (TrailLink) whose HMAC covers the link before it, so `verify_trail` can report an entry
changed, deleted or inserted outside the application (by SQL). The design and its limits:
docs/decisions/0012-tamper-evident-trails.md; operating it: docs/operations/compliance.md.
"""

from __future__ import annotations

import contextvars
import hashlib
import hmac
import json
import logging
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from django.db import connection, models, transaction
from django.db.models import Exists, Min, OuterRef, QuerySet, TextField
from django.db.models.functions import Cast
from django.db.models.signals import post_delete, post_save
from django.utils import timezone

from audit.chain_models import LinkKind, TrailHead, TrailLink
from mailfathom.core import signing

logger = logging.getLogger(__name__)

PURPOSE = "trail-chain"
Canonical = Callable[[Any], bytes]
REASONS = ("content_changed", "entry_missing", "unlinked_entry", "link_changed", "link_missing")
_KEY_ID_LABEL = b"mailfathom trail-chain key id"
_CHUNK = 2000


@dataclass(frozen=True)
class Trail:
    """A registered trail: its name in the chain, its model, and how an entry reads as bytes."""

    name: str
    model: type[models.Model]
    canonical: Canonical
    prefetch: tuple[str, ...] = ()


_TRAILS: dict[str, Trail] = {}
# (trail, entry pk) pairs whose removal `removing` has already linked, in this context.
_BATCHED: contextvars.ContextVar[frozenset[tuple[str, str]]] = contextvars.ContextVar(
    "trail_chain_batched", default=frozenset()
)


def register_trail(
    name: str,
    model: type[models.Model],
    canonical: Canonical,
    *,
    prefetch: Iterable[str] = (),
    children: Iterable[tuple[type[models.Model], str]] = (),
) -> Trail:
    """Chain `model` as trail `name`: saves and deletes through the ORM append links.

    `canonical(entry)` returns the entry's content as deterministic bytes (fields_canonical
    builds one); `prefetch` names relations it reads; `children` lists (model, parent field
    attname) pairs of rows that are part of an entry's content, so saving or deleting one
    re-links its entry. bulk_create and QuerySet.update send no signals: a writer using them
    calls `link_states` itself, in the same transaction.
    """
    trail = Trail(name=name, model=model, canonical=canonical, prefetch=tuple(prefetch))
    _TRAILS[name] = trail

    def saved(sender: Any, instance: models.Model, **kwargs: Any) -> None:
        link_states(name, [instance.pk])

    def deleted(sender: Any, instance: models.Model, **kwargs: Any) -> None:
        if (name, str(instance.pk)) not in _BATCHED.get():
            link_removals(name, [instance.pk], "deleted")

    post_save.connect(saved, sender=model, weak=False, dispatch_uid=f"trail-chain:{name}:save")
    post_delete.connect(deleted, sender=model, weak=False, dispatch_uid=f"trail-chain:{name}:delete")
    for child, parent_attname in children:
        _connect_child(name, model, child, parent_attname)
    return trail


def _connect_child(name: str, parent: type[models.Model], child: type[models.Model], attname: str) -> None:
    def changed(sender: Any, instance: models.Model, **kwargs: Any) -> None:
        origin = kwargs.get("origin")
        origin_model = origin.model if isinstance(origin, QuerySet) else type(origin)
        if origin is not None and issubclass(origin_model, parent):
            return  # the entry itself is being deleted: its removal link says so
        link_states(name, [getattr(instance, attname)], note="part_changed")

    uid = f"trail-chain:{name}:{child._meta.label}"
    post_save.connect(changed, sender=child, weak=False, dispatch_uid=f"{uid}:save")
    post_delete.connect(changed, sender=child, weak=False, dispatch_uid=f"{uid}:delete")


def trails() -> tuple[str, ...]:
    """The names of the registered trails, in registration order."""
    return tuple(_TRAILS)


@contextmanager
def removing(model: type[models.Model], pks: Iterable[Any], reason: str) -> Iterator[None]:
    """Link the removal of `pks` of a chained `model` for `reason`, in one batch, then let them be deleted.

    Used around a deletion the caller is about to make (retention: "retention"), in its
    transaction: the links are written first, and the per-row delete signals inside the
    block are then skipped for these rows. A model that is not chained passes through.
    """
    name = next((trail.name for trail in _TRAILS.values() if trail.model is model), None)
    if name is None:
        yield
        return
    wanted = {str(pk) for pk in pks}
    link_removals(name, wanted, reason)
    token = _BATCHED.set(_BATCHED.get() | {(name, pk) for pk in wanted})
    try:
        yield
    finally:
        _BATCHED.reset(token)


# --- Canonical content --------------------------------------------------------------------------


def canonical_json(value: Any) -> bytes:
    """Deterministic JSON bytes: sorted keys, no spaces, datetimes in UTC ISO 8601, UUIDs as text."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_plain
    ).encode()


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, uuid.UUID | Decimal):
        return str(value)
    raise TypeError(f"{type(value).__name__} has no canonical form")


def fields_canonical(*names: str) -> Canonical:
    """A canonical function reading `names` (attnames: account_id, not account) of an entry."""

    def canonical(entry: Any) -> bytes:
        return canonical_json({name: getattr(entry, name) for name in names})

    return canonical


def content_hash(trail: Trail, entry: models.Model) -> str:
    return hashlib.sha256(trail.canonical(entry)).hexdigest()


# --- Keys ---------------------------------------------------------------------------------------


def key_id(key: bytes) -> str:
    """A short public name of a derived key (a keyed hash of a fixed label, not the key)."""
    return hmac.new(key, _KEY_ID_LABEL, hashlib.sha256).hexdigest()[:16]


def _keys() -> dict[str, bytes]:
    return {key_id(key): key for key in signing.derived_keys(PURPOSE)}


def _newest_key() -> tuple[str, bytes]:
    keys = signing.derived_keys(PURPOSE)
    if not keys:
        raise RuntimeError("MAILFATHOM_KEYRING is empty")
    return key_id(keys[0]), keys[0]


def _link_message(link: TrailLink) -> bytes:
    return canonical_json(
        [
            link.trail,
            link.seq,
            link.kind,
            link.entry_pk,
            link.content_hash,
            link.note,
            link.covers_seq,
            link.covers_hash,
            link.key_id,
            link.created_at,
        ]
    )


def chain_hash(key: bytes, previous: str, link: TrailLink) -> str:
    """HMAC-SHA256(key, previous chain hash || the link's canonical fields), hex."""
    return hmac.new(key, previous.encode("ascii") + b"\n" + _link_message(link), hashlib.sha256).hexdigest()


# --- Appending ----------------------------------------------------------------------------------


def _lock_head(name: str) -> TrailHead:
    # Held until the writing transaction ends: two writers of one trail take turns, never fork it.
    head = TrailHead.objects.select_for_update().filter(pk=name).first()
    if head is None:
        TrailHead.objects.bulk_create([TrailHead(trail=name)], ignore_conflicts=True)
        head = TrailHead.objects.select_for_update().get(pk=name)
    return head


def _next_link(head: TrailHead, key: tuple[str, bytes], **fields: Any) -> TrailLink:
    head.seq += 1
    link = TrailLink(trail=head.trail, seq=head.seq, key_id=key[0], created_at=timezone.now(), **fields)
    link.chain_hash = chain_hash(key[1], head.chain_hash, link)
    head.chain_hash = link.chain_hash
    return link


def _store(head: TrailHead, links: list[TrailLink]) -> None:
    if links:
        TrailLink.objects.bulk_create(links)
        head.save(update_fields=["seq", "chain_hash"])


def _latest(name: str, pks: list[str]) -> dict[str, tuple[str, str]]:
    rows = (
        TrailLink.objects.filter(trail=name, entry_pk__in=pks)
        .exclude(kind=LinkKind.CHECKPOINT)
        .order_by("entry_pk", "-seq")
        .distinct("entry_pk")
        .values_list("entry_pk", "kind", "content_hash")
    )
    return {pk: (kind, digest) for pk, kind, digest in rows}


def _load(trail: Trail, pks: Iterable[Any]) -> QuerySet[Any]:
    return (
        trail.model._default_manager.filter(pk__in=list(pks)).prefetch_related(*trail.prefetch).order_by("pk")
    )


def link_states(name: str, pks: Iterable[Any], note: str = "") -> int:
    """Append a state link for each entry of `pks` whose content differs from its latest link.

    The entries are read back from the database inside the caller's transaction, so the hash
    is of what was stored. Returns how many links were appended.
    """
    trail = _TRAILS[name]
    wanted = sorted({str(pk) for pk in pks if pk is not None})
    if not wanted:
        return 0
    key = _newest_key()
    with transaction.atomic():
        head = _lock_head(name)
        latest = _latest(name, wanted)
        links = []
        for entry in _load(trail, wanted):
            pk, digest = str(entry.pk), content_hash(trail, entry)
            if latest.get(pk) == (LinkKind.STATE, digest):
                continue
            links.append(
                _next_link(head, key, kind=LinkKind.STATE, entry_pk=pk, content_hash=digest, note=note)
            )
        _store(head, links)
    return len(links)


def link_removals(name: str, pks: Iterable[Any], reason: str) -> int:
    """Append a removed link for each of `pks` (deleted by the application) not already marked removed."""
    wanted = sorted({str(pk) for pk in pks if pk is not None})
    if not wanted:
        return 0
    key = _newest_key()
    with transaction.atomic():
        head = _lock_head(name)
        latest = _latest(name, wanted)
        links = [
            _next_link(head, key, kind=LinkKind.REMOVED, entry_pk=pk, note=reason[:32])
            for pk in wanted
            if latest.get(pk, ("",))[0] != LinkKind.REMOVED
        ]
        _store(head, links)
    return len(links)


def adopt_unlinked(name: str) -> int:
    """Link every entry of trail `name` that has no link yet (once, when chaining starts).

    Entries written before the chain existed have no link and verify reports them as
    unlinked; adopting them records their content as it is now, with the note "adopted".
    """
    trail = _TRAILS[name]
    linked = TrailLink.objects.filter(trail=name, entry_pk=Cast(OuterRef("pk"), TextField()))
    pks = list(
        trail.model._default_manager.exclude(Exists(linked)).order_by("pk").values_list("pk", flat=True)
    )
    adopted = 0
    for start in range(0, len(pks), _CHUNK):
        adopted += link_states(name, pks[start : start + _CHUNK], note="adopted")
    return adopted


# --- Compaction (retention) ---------------------------------------------------------------------


def compact(name: str) -> int | None:
    """Prune the links no stored entry needs any more, from the old end; return the checkpoint's seq.

    A link is needed while it is the latest link of an entry still held (or of an entry gone
    by SQL: that evidence is never pruned). Every link before the first needed one is
    pruned, once the segment has been checked, and a checkpoint link records where the
    pruned segment ended and its chain hash. None when nothing was pruned, or when the
    segment does not verify (logged; verify_trail reports it).
    """
    key = _newest_key()
    with transaction.atomic():
        head = _lock_head(name)
        links = TrailLink.objects.filter(trail=name)
        newer = TrailLink.objects.filter(trail=name, entry_pk=OuterRef("entry_pk"), seq__gt=OuterRef("seq"))
        first_needed = (
            links.filter(kind=LinkKind.STATE).exclude(Exists(newer)).aggregate(first=Min("seq"))["first"]
        )
        cut = head.seq if first_needed is None else first_needed - 1
        if not links.filter(seq__lte=cut).exclude(kind=LinkKind.CHECKPOINT).exists():
            return None
        start_seq, start_hash = _start(name)
        end_hash = start_hash
        keys = _keys()
        for expected, link in enumerate(
            links.filter(seq__gt=start_seq, seq__lte=cut).order_by("seq"), start_seq + 1
        ):
            key_for_link = keys.get(link.key_id)
            if (
                link.seq != expected
                or key_for_link is None
                or not hmac.compare_digest(chain_hash(key_for_link, end_hash, link), link.chain_hash)
            ):
                logger.warning("trail chain: %s does not verify at link %d; nothing pruned", name, expected)
                return None
            end_hash = link.chain_hash
        if expected != cut:
            logger.warning("trail chain: %s is missing links before %d; nothing pruned", name, cut)
            return None
        links.filter(seq__lte=cut).delete()
        checkpoint = _next_link(
            head, key, kind=LinkKind.CHECKPOINT, note="retention", covers_seq=cut, covers_hash=end_hash
        )
        _store(head, [checkpoint])
    return checkpoint.seq


def compact_all() -> None:
    """Compact every registered trail; a failure is logged with the trail's name and the rest go on."""
    for name in _TRAILS:
        try:
            compact(name)
        except Exception:
            logger.warning("trail chain: compaction failed for %s", name)


def _start(name: str) -> tuple[int, str]:
    """Where the held links begin: the latest checkpoint's covered seq and hash, else the origin."""
    checkpoint = (
        TrailLink.objects.filter(trail=name, kind=LinkKind.CHECKPOINT).order_by("-covers_seq", "-seq").first()
    )
    if checkpoint is None or checkpoint.covers_seq is None:
        return 0, ""
    return checkpoint.covers_seq, checkpoint.covers_hash


# --- Verification -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Break:
    """A place where the chain and the trail disagree."""

    seq: int | None  # the link concerned (None: an entry with no link at all)
    entry_pk: str
    reason: str  # one of REASONS

    def as_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "entry": self.entry_pk, "reason": self.reason}


@dataclass(frozen=True)
class TrailReport:
    """One trail's verification: ok when no break was found."""

    trail: str
    links: int  # links held (after any checkpoint)
    entries: int  # entries stored
    head_seq: int
    head_hash: str
    checkpoint_seq: int  # links up to this seq were pruned by retention (0: none)
    breaks: int
    first_break: Break | None

    @property
    def ok(self) -> bool:
        return self.first_break is None


def verify_trails(names: Iterable[str] | None = None) -> list[TrailReport]:
    """Verify every registered trail (or those named).

    Outside a transaction, the check reads one snapshot (REPEATABLE READ), so an entry
    committed between reading the links and reading the entries is not reported as unlinked;
    inside a caller's transaction, the caller's isolation stands.
    """
    chosen = list(names) if names is not None else list(_TRAILS)
    if connection.in_atomic_block:
        return [verify_trail(name) for name in chosen]
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        return [verify_trail(name) for name in chosen]


def verify_trail(name: str) -> TrailReport:
    """Walk trail `name`'s links and compare each stored entry with its latest link."""
    trail = _TRAILS[name]
    keys = _keys()
    found: list[Break] = []
    start_seq, previous = _start(name)
    expected = start_seq + 1
    latest: dict[str, tuple[str, str, int]] = {}
    held = 0
    links = TrailLink.objects.filter(trail=name, seq__gt=start_seq).order_by("seq")
    for link in links.iterator(chunk_size=_CHUNK):
        held += 1
        key = keys.get(link.key_id)
        if link.seq != expected:
            found.append(Break(expected, "", "link_missing"))
        elif key is None or not hmac.compare_digest(chain_hash(key, previous, link), link.chain_hash):
            found.append(Break(link.seq, link.entry_pk, "link_changed"))
        previous, expected = link.chain_hash, link.seq + 1
        if link.kind != LinkKind.CHECKPOINT and link.entry_pk:
            latest[link.entry_pk] = (link.kind, link.content_hash, link.seq)
    head = TrailHead.objects.filter(pk=name).first()
    head_seq, head_hash = (head.seq, head.chain_hash) if head is not None else (0, "")
    if head_seq > expected - 1:
        found.append(Break(expected, "", "link_missing"))  # links cut off the young end
    elif (head_seq, head_hash) != (expected - 1, previous):
        found.append(Break(head_seq, "", "link_changed"))  # the head row no longer names the last link
    entries = 0
    stored = trail.model._default_manager.prefetch_related(*trail.prefetch).order_by("pk")
    for entry in stored.iterator(chunk_size=_CHUNK):
        entries += 1
        pk = str(entry.pk)
        known = latest.pop(pk, None)
        if known is None or known[0] != LinkKind.STATE:
            found.append(Break(known[2] if known else None, pk, "unlinked_entry"))
        elif not hmac.compare_digest(known[1], content_hash(trail, entry)):
            found.append(Break(known[2], pk, "content_changed"))
    for pk, (kind, _digest, seq) in latest.items():
        if kind == LinkKind.STATE:
            found.append(Break(seq, pk, "entry_missing"))
    first = min(found, key=lambda item: (item.seq is None, item.seq or 0, item.entry_pk), default=None)
    return TrailReport(
        trail=name,
        links=held,
        entries=entries,
        head_seq=head_seq,
        head_hash=head_hash,
        checkpoint_seq=start_seq,
        breaks=len(found),
        first_break=first,
    )


# --- Reading the head (exports) -----------------------------------------------------------------


def trail_names() -> list[str]:
    """The registered trails, by name."""
    return sorted(_TRAILS)


def head(name: str) -> tuple[int, str]:
    """(seq, chain hash) of trail `name`'s last link; (0, "") before its first."""
    row = TrailHead.objects.filter(pk=name).first()
    return (row.seq, row.chain_hash) if row is not None else (0, "")


def entry_count(name: str) -> int:
    """How many entries trail `name` holds now."""
    return _TRAILS[name].model._default_manager.count()


def link_at(name: str, seq: int) -> dict[str, Any]:
    """What the live chain holds at `seq`: its chain hash, or that retention pruned it."""
    link = TrailLink.objects.filter(trail=name, seq=seq).first()
    if link is not None:
        return {"seq": seq, "held": True, "chain_hash": link.chain_hash}
    start_seq, start_hash = _start(name)
    return {
        "seq": seq,
        "held": False,
        "pruned": seq <= start_seq,
        "chain_hash": start_hash if seq == start_seq else None,
    }
