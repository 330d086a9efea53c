"""Conversations: which emails of an account belong together, across all its folders.

A thread is a connected set of messages sharing any id (Message-ID, In-Reply-To,
References), even one no stored email carries, as in JWZ's algorithm. Threads are joined as
mail is stored (`assign_threads`) and never split: a later link merges two threads, and an
expunged or erased email leaves its thread as it was. Joining holds a transaction-scoped
advisory lock per account, so two folders stored at once cannot each miss the other's half
of a conversation.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence

from django.db import connection, transaction
from django.db.models import Count, Q, QuerySet

from mailbox.models import Email
from mailbox.services.raw_sql import Params, column, table

# First key of the two-integer advisory lock: the account's primary key is the second.
_THREADING_LOCK = 0x7E4D
# Ids bound in one overlap query; a batch of 100 messages names at most a few thousand.
_KEYS_PER_QUERY = 5000


def message_keys(email: Email) -> set[str]:
    """The ids `email` names (what its generated thread_keys column holds), empties left out."""
    return {key for key in (email.message_id, email.in_reply_to, *email.references) if key}


def _lock_account(account_pk: int) -> None:
    if not connection.in_atomic_block:
        raise RuntimeError("threads are joined inside the transaction that stores the emails")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_THREADING_LOCK, account_pk])


class _Components:
    """Union-find over strings: ids, thread ids and batch positions."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, node: str) -> str:
        parent = self.parent.setdefault(node, node)
        while parent != node:
            grand = self.parent.setdefault(parent, parent)
            self.parent[node] = grand
            node, parent = parent, grand
        return node

    def union(self, a: str, b: str) -> None:
        root_a, root_b = self.find(a), self.find(b)
        if root_a != root_b:
            self.parent[root_b] = root_a


def _stored_threads(
    account_pk: int, keys: set[str], batch: Iterable[uuid.UUID]
) -> list[tuple[uuid.UUID, list[str]]]:
    """(thread_id, thread_keys) of the account's threaded emails, outside `batch`, sharing a key.

    One GIN probe per key (`@>` a one-element array), not one `&&` with all of them: the
    planner's estimate for an overlap with hundreds of elements is most of the table, and
    it scans the table (the two timed: docs/benchmarks.md).
    Each probe is a subquery of its own that holds only the `@>` (OFFSET 0 keeps the
    account and the other conditions out of it), so the GIN index is its only way in: as
    a plain join, a table not yet analyzed (a first backfill) had the planner read every
    email of the account once per key instead, a cost growing with the mailbox.
    """
    rows: list[tuple[uuid.UUID, list[str]]] = []
    ordered = sorted(keys)
    excluded = list(batch)
    e = table(Email)
    keys_column, thread = column(Email, "thread_keys"), column(Email, "thread_id")
    for start in range(0, len(ordered), _KEYS_PER_QUERY):
        p = Params()
        account, key = column(Email, "account"), column(Email, "id")
        sql = (
            f"SELECT t.{thread}, t.{keys_column} "
            f"FROM unnest({p(ordered[start : start + _KEYS_PER_QUERY])}::varchar[]) AS wanted(key), "
            f"LATERAL (SELECT e.{key}, e.{account}, e.{thread}, e.{keys_column} FROM {e} AS e "
            f"WHERE e.{keys_column} @> ARRAY[wanted.key]::varchar[] OFFSET 0) AS t "
            f"WHERE t.{account} = {p(account_pk)} AND t.{thread} IS NOT NULL "
            f"AND NOT (t.{key} = ANY({p(excluded)}::uuid[]))"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, p.values)
            rows += cursor.fetchall()
    return rows


def assign_threads(account_pk: int, emails: Sequence[Email]) -> int:
    """Set thread_id on `emails` of one account, merging threads they link; return merges.

    `emails` may be rows about to be inserted (their thread_id is set on the instances) or
    rows already stored whose ids just became known (set too; the caller saves them). Rows
    already held in other threads that must merge are re-pointed here, in the caller's
    transaction: the smaller thread takes the larger one's id (ties: the smaller id, so two
    runs decide alike).
    """
    if not emails:
        return 0
    _lock_account(account_pk)
    keys_of = [message_keys(email) for email in emails]
    all_keys = set().union(*keys_of)
    components = _Components()
    stored = _stored_threads(account_pk, all_keys, (email.pk for email in emails)) if all_keys else []
    for thread_id, held_keys in stored:
        for key in held_keys:
            components.union(f"t:{thread_id}", f"k:{key}")
    for position, (email, keys) in enumerate(zip(emails, keys_of, strict=True)):
        node = f"e:{position}"
        components.find(node)
        for key in keys:
            components.union(node, f"k:{key}")
        if email.thread_id is not None:
            components.union(node, f"t:{email.thread_id}")

    threads_in: dict[str, set[uuid.UUID]] = {}
    for node in list(components.parent):
        if node.startswith("t:"):
            threads_in.setdefault(components.find(node), set()).add(uuid.UUID(node[2:]))
    linked = set().union(*threads_in.values()) if threads_in else set()
    sizes = dict(
        Email.objects.filter(account_id=account_pk, thread_id__in=linked)
        .values_list("thread_id")
        .annotate(n=Count("pk"))
        .values_list("thread_id", "n")
    )
    chosen: dict[str, uuid.UUID] = {}
    merges = 0
    for root, thread_ids in threads_in.items():
        target = min(thread_ids, key=lambda t: (-sizes.get(t, 0), t))
        chosen[root] = target
        others = thread_ids - {target}
        if others:
            merges += len(others)
            Email.objects.filter(account_id=account_pk, thread_id__in=others).update(thread_id=target)
    for position, email in enumerate(emails):
        root = components.find(f"e:{position}")
        if root not in chosen:
            chosen[root] = email.pk  # a new thread, named after its first email
        email.thread_id = chosen[root]
    return merges


def thread_of(email: Email, *, visible_only: bool = True) -> QuerySet[Email]:
    """The emails of `email`'s thread, oldest first (received_at, then id), `email` included.

    With `visible_only` (the default), only emails in folders mapped visible to tools, plus
    `email` itself: what a model may be shown. An email not yet threaded (stored before
    threading, not yet backfilled) is a thread of one.
    """
    if email.thread_id is None:
        return Email.objects.filter(pk=email.pk)
    rows = Email.objects.filter(account_id=email.account_id, thread_id=email.thread_id)
    if visible_only:
        rows = rows.filter(Q(folder__mapping__visible_to_tools=True) | Q(pk=email.pk))
    return rows.order_by("received_at", "id")


def thread_unthreaded(account_pk: int, *, batch_size: int = 500) -> int:
    """Thread one batch of the account's emails stored before threading; return how many.

    Oldest first; each batch commits on its own, so an interrupted backfill keeps what it
    finished and the next call goes on from there. Zero: nothing is left.
    """
    with transaction.atomic():
        _lock_account(account_pk)
        batch = list(
            Email.objects.filter(account_id=account_pk, thread_id__isnull=True)
            .order_by("received_at", "id")
            .only("id", "account_id", "message_id", "in_reply_to", "references", "thread_id")[:batch_size]
        )
        assign_threads(account_pk, batch)
        Email.objects.bulk_update(batch, ["thread_id"], batch_size=batch_size)
    return len(batch)


def unthreaded_count(account_pk: int | None = None) -> int:
    """How many emails (of one account, or of all) still wait for the backfill."""
    rows = Email.objects.filter(thread_id__isnull=True)
    return (rows.filter(account_id=account_pk) if account_pk is not None else rows).count()
