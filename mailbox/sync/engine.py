"""Synchronize an account's mapped folders from IMAP into the local copy.

Reading never changes the server: folders are opened with EXAMINE (read-only) and bodies
fetched with BODY.PEEK[], so no \\Seen flag is ever set. New mail arrives in batches; each
batch is stored and the folder's progress advanced in one transaction, so a run killed at
any point resumes where the last committed batch ended, losing and duplicating nothing.
"""

from __future__ import annotations

import bisect
import logging
import uuid
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from imapclient import IMAPClient

from accounts.models import MailAccount, awaiting_someone
from accounts.services.imap import close_client, open_client
from mailbox.models import IMPORTED_UIDVALIDITY, Availability, Email, Folder, RepairRequest
from mailbox.parsing import HEADER_BLOCK_BYTES
from mailbox.services.store import (
    IncomingMessage,
    PreparedMessage,
    fill_content,
    prepare_messages,
    store_prepared,
)
from mailbox.services.suppression import suppressed_uids
from mailbox.signals import folder_mail_deleted, synchronization_finished
from mailbox.sync import folder_state, pace
from mailbox.sync.failures import (
    CONNECTION_LOST,
    INTERNAL_FAILURE,
    LeaseLost,
    classify,
    connection_is_dead,
    describe_internal,
    resume_at,
)
from mailbox.sync.spare_core import SpareCore
from mailfathom.core.progress import Progress, ProgressCallback

logger = logging.getLogger(__name__)

BATCH_SIZE = 100
MAX_BATCH_BYTES = 16 * 1024 * 1024
FLAG_BATCH_SIZE = 1000
ClientFactory = Callable[[MailAccount], IMAPClient]


@dataclass
class FolderRun:
    alias: str
    stored: int = 0
    withheld: int = 0
    suppressed: int = 0  # erased on request: skipped, never stored
    expunged: int = 0
    flags_updated: int = 0
    refetched: int = 0
    uidvalidity_changed: bool = False
    skipped_locked: bool = False
    failure_code: int | None = None


@dataclass
class AccountRun:
    account_id: str
    folders: list[FolderRun] = field(default_factory=list)
    failure_code: int | None = None
    skipped: str = ""


def _default_client(account: MailAccount) -> IMAPClient:
    return open_client(account, timeout=60.0)


def synchronize_account(
    account_pk: int,
    *,
    client_factory: ClientFactory = _default_client,
    force: bool = False,
    progress: ProgressCallback | None = None,
) -> AccountRun:
    """Run one synchronization pass over every mapped folder of the account.

    Folders in backoff are skipped unless `force`. A folder another run holds the lease of
    is skipped, never interleaved. A failure is recorded on the folder and ends only what
    it must: a dead connection ends the run, a missing folder only that folder.

    `progress` hears, per folder (labelled by its alias), how many of the new messages
    found are committed, after each batch. An exception it raises (or a KeyboardInterrupt)
    ends the run there with every committed batch kept and the lease released.
    """
    account = MailAccount.objects.get(pk=account_pk)
    run = AccountRun(account_id=account.account_id)
    if not settings.MAILFATHOM.sync_enabled:
        run.skipped = "synchronization is disabled for this deployment"
        return run
    if not MailAccount.objects.synchronized().filter(pk=account.pk).exists():
        waiting = MailAccount.objects.filter(pk=account.pk).filter(awaiting_someone()).exists()
        run.skipped = (
            "the account waits for someone to sign in again (or to fix its OAuth registration)"
            if waiting
            else "synchronization is disabled for this account"
        )
        return run
    due = [f for f in folder_state.ensure_folders(account) if force or not folder_state.in_backoff(f)]
    if not due:
        run.skipped = "no folder is due"
        return run
    client = _open(account, client_factory, due, run)
    if client is None:
        return run
    reopened = False
    try:
        for folder in due:
            folder_run = run_folder(client, folder, progress)
            if folder_run.failure_code == CONNECTION_LOST and not reopened:
                # A server may end a session mid-run on purpose (Microsoft does when the
                # access token expires): once per run, log in again (with a fresh token)
                # and carry on where the last committed batch ended.
                reopened = True
                close_client(client)
                replacement = _open(account, client_factory, [folder], run)
                if replacement is None:
                    run.folders.append(folder_run)
                    break
                client = replacement
                logger.info("sync %s: session lost, logged in again", account.account_id)
                folder_run = run_folder(client, folder, progress, resumed=folder_run)
            run.folders.append(folder_run)
            if folder_run.failure_code and connection_is_dead(folder_run.failure_code):
                run.failure_code = folder_run.failure_code
                break
    finally:
        close_client(client)
    logger.info(
        "sync %s: %d folders, %d stored, %d suppressed, %d expunged, %d flag changes",
        account.account_id,
        len(run.folders),
        sum(f.stored for f in run.folders),
        sum(f.suppressed for f in run.folders),
        sum(f.expunged for f in run.folders),
        sum(f.flags_updated for f in run.folders),
    )
    announce_synchronization(account.pk, sum(f.stored for f in run.folders))
    return run


def _open(
    account: MailAccount, client_factory: ClientFactory, folders: list[Folder], run: AccountRun
) -> IMAPClient | None:
    """Open a session, or record on `folders` why none could be opened and return None."""
    try:
        client = client_factory(account)
    except Exception as error:
        run.failure_code = classify(error)
        until = resume_at(error, timezone.now())
        for folder in folders:
            folder_state.record_failure(folder, run.failure_code, resume_at=until)
        logger.warning("sync %s: cannot open a session (failure %s)", account.account_id, run.failure_code)
        return None
    client.normalise_times = False
    _number_changes(client)
    return client


def _number_changes(client: IMAPClient) -> None:
    """Ask a server that can to number its flag changes (CONDSTORE, RFC 7162): its SELECT
    then reports HIGHESTMODSEQ and a flag pass asks only for what changed since a run.

    Before any SELECT, as ENABLE requires. A server that refuses, or a session that died
    here, costs only that: the flag pass then reads every message's flags, as without it,
    and a dead session fails on the SELECT that follows, where it is classified.
    """
    try:
        if b"CONDSTORE" in client.capabilities():
            client.enable("CONDSTORE")
    except Exception as error:
        logger.info("sync: CONDSTORE not enabled (%s)", type(error).__name__)


def announce_synchronization(account_pk: int, stored: int) -> None:
    """Tell receivers (drafting) that a run ended; one that fails is logged, never raised."""
    for _receiver, outcome in synchronization_finished.send_robust(
        sender=Folder, account_pk=account_pk, stored=stored
    ):
        if isinstance(outcome, Exception):
            logger.warning("sync: a receiver of synchronization_finished failed: %s", type(outcome).__name__)


def run_folder(
    client: IMAPClient,
    folder: Folder,
    progress: ProgressCallback | None = None,
    *,
    resumed: FolderRun | None = None,
) -> FolderRun:
    """Synchronize one folder over an open session, under its lease; record any failure.

    Only failures (Exception) are recorded; a KeyboardInterrupt passes through, after the
    lease is released. `resumed` is this run's earlier, interrupted result for the folder:
    its counts are carried on.
    """
    alias = folder.mapping.alias if folder.mapping else ""
    result = FolderRun(alias=alias)
    if resumed is not None:
        result.stored, result.withheld, result.suppressed = (
            resumed.stored,
            resumed.withheld,
            resumed.suppressed,
        )
    token = folder_state.acquire_lease(folder)
    if token is None:
        result.skipped_locked = True
        return result
    try:
        synchronize_folder(client, folder, token, result, progress)
    except Exception as error:
        result.failure_code = classify(error)
        folder_state.record_failure(folder, result.failure_code, resume_at=resume_at(error, timezone.now()))
        if result.failure_code == INTERNAL_FAILURE:
            logger.error("sync folder %s: internal failure: %s", alias, describe_internal(error))
        else:
            logger.warning("sync folder %s: failure %s", alias, result.failure_code)
    finally:
        folder_state.release_lease(folder, token)
    return result


def synchronize_folder(
    client: IMAPClient,
    folder: Folder,
    token: uuid.UUID,
    result: FolderRun,
    progress: ProgressCallback | None = None,
) -> None:
    """Bring one folder's local rows to the server's state (see the module docstring)."""
    folder.refresh_from_db()
    selected = client.select_folder(folder.remote_name, readonly=True)
    uidvalidity = int(selected[b"UIDVALIDITY"])
    modseq = highest_modseq(selected)
    # The status page's "stored of the server's" and a backfill's progress start here.
    Folder.objects.filter(pk=folder.pk, lease_token=token).update(
        server_message_count=int(selected.get(b"EXISTS", 0)), run_started_at=timezone.now(), run_stored=0
    )
    if folder.uidvalidity != uidvalidity:
        result.uidvalidity_changed = folder.uidvalidity is not None
        _reset_uidvalidity(folder, uidvalidity)
    held_through = folder.highest_uid  # mail stored by earlier runs
    flag_queries = _flag_queries(held_through, folder.highest_modseq, modseq)

    server_uids = set(client.search(["ALL"]))
    result.expunged = _remove_expunged(folder, uidvalidity, server_uids)

    new_uids = sorted(uid for uid in server_uids if uid > folder.highest_uid)
    if progress:
        progress(Progress(label=result.alias, done=0, total=len(new_uids)))
    done = _store_new_mail(client, folder, token, result, new_uids, progress)
    if progress and done < len(new_uids):  # the tail was erased on request: nothing to fetch
        progress(Progress(label=result.alias, done=len(new_uids), total=len(new_uids)))

    result.flags_updated = _reconcile_flags(client, folder, uidvalidity, server_uids, flag_queries)
    result.refetched = _refetch_missing_content(client, folder, uidvalidity)
    Folder.objects.filter(pk=folder.pk, lease_token=token).record_progress(
        timezone.now(), highest_modseq=modseq
    )


def _store_new_mail(
    client: IMAPClient,
    folder: Folder,
    token: uuid.UUID,
    result: FolderRun,
    new_uids: list[int],
    progress: ProgressCallback | None,
) -> int:
    """Fetch and store `new_uids` batch by batch; return how many of them are done with.

    While a core is spare (PARSE_AHEAD), a batch is parsed on a second thread while the
    batch before it is written and the batch after it fetched: at most two batches are
    held. Otherwise each is parsed where it is written. A batch already fetched when a
    later step fails (the pace spent, the connection lost) is still stored, as it would
    have been without a successor.
    """
    done = 0
    pending: tuple[list[int], list[IncomingMessage], Future[list[PreparedMessage]]] | None = None

    def write(uids: list[int], messages: list[IncomingMessage], prepared: list[PreparedMessage]) -> None:
        nonlocal done
        stored = store_prepared(folder, prepared, advance_to_uid=uids[-1], lease_token=token)
        result.stored += stored.stored
        result.suppressed += stored.suppressed
        result.withheld += sum(1 for m in messages if m.raw is None)
        folder.highest_uid = uids[-1]
        if progress:  # committed through uids[-1]: every new UID up to it is done with
            done = bisect.bisect_right(new_uids, uids[-1])
            progress(Progress(label=result.alias, done=done, total=len(new_uids)))

    def write_pending() -> None:
        nonlocal pending
        if pending is not None:
            uids, messages, ready = pending
            pending = None
            write(uids, messages, ready.result())

    spare = _parse_ahead_watch()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="sync-parse") as parser:
        batches = _fetchable_batches(client, folder, new_uids, result)
        try:
            while True:
                try:
                    following = next(batches, None)
                    if following is None:
                        break
                    uids, meta = following
                    messages = _fetch_batch(client, folder, token, uids, meta)
                except Exception:
                    write_pending()
                    raise
                if spare():
                    ready = parser.submit(prepare_messages, messages)
                    write_pending()
                    pending = (uids, messages, ready)
                else:
                    write_pending()
                    write(uids, messages, prepare_messages(messages))
            write_pending()
        finally:
            if pending is not None:
                pending[2].cancel()
    return done


# Whether a batch is parsed on a second thread while the one before it is written:
# "auto" while the machine has a core to spare (mailbox.sync.spare_core), "always" or "never".
PARSE_AHEAD = "auto"


def _parse_ahead_watch() -> Callable[[], bool]:
    """Asked before each batch: whether to parse it ahead (PARSE_AHEAD)."""
    if PARSE_AHEAD in ("always", "never"):
        return lambda: PARSE_AHEAD == "always"
    return SpareCore.beside_this_connection().free


def _fetchable_batches(
    client: IMAPClient, folder: Folder, new_uids: list[int], result: FolderRun
) -> Iterator[tuple[list[int], dict[int, Any]]]:
    """Each batch of `new_uids` to fetch, with its FETCH metadata; erased copies left out."""
    limit = folder.account.max_message_bytes
    for chunk in _chunks(new_uids, BATCH_SIZE):
        meta = client.fetch(chunk, ["RFC822.SIZE", "INTERNALDATE", "FLAGS"])
        # Erased copies are not even fetched; store_prepared checks again under the folder lock.
        erased = suppressed_uids(folder, folder.uidvalidity or 0, chunk)
        result.suppressed += len(erased & set(meta))
        meta = {uid: info for uid, info in meta.items() if uid not in erased}
        for batch in _byte_bounded(chunk, meta, limit):
            yield batch, meta


def _fetch_batch(
    client: IMAPClient, folder: Folder, token: uuid.UUID, uids: list[int], meta: dict[int, Any]
) -> list[IncomingMessage]:
    """Fetch one batch's bodies under the lease and the download pace."""
    if not folder_state.renew_lease(folder, token):
        raise LeaseLost
    pace.check(folder.account, timezone.now())
    messages = _fetch_bodies(client, folder, uids, meta)
    pace.spend(folder.account, sum(len(m.raw) for m in messages if m.raw is not None), timezone.now())
    return messages


def _reset_uidvalidity(folder: Folder, uidvalidity: int) -> None:
    """A new UIDVALIDITY voids every UID we hold: drop those rows and start the folder over."""
    with transaction.atomic():
        void = Email.objects.filter(folder=folder).exclude(uidvalidity=IMPORTED_UIDVALIDITY)
        emails = void.count()
        if emails:  # a folder's first run holds nothing to void
            folder_mail_deleted.send(
                sender=Folder,
                account_pk=folder.account_id,
                folder_alias=folder.mapping.alias if folder.mapping is not None else "",
                emails=emails,
            )
            void.delete()
        Folder.objects.filter(pk=folder.pk).update(
            uidvalidity=uidvalidity, highest_uid=0, highest_modseq=None
        )
    folder.uidvalidity, folder.highest_uid, folder.highest_modseq = uidvalidity, 0, None


def _remove_expunged(folder: Folder, uidvalidity: int, server_uids: set[int]) -> int:
    local = Email.objects.filter(folder=folder, uidvalidity=uidvalidity, uid__lte=folder.highest_uid)
    gone = [pk for pk, uid in local.values_list("pk", "uid") if uid not in server_uids]
    if gone:
        Email.objects.filter(pk__in=gone).delete()
    return len(gone)


def _byte_bounded(uids: list[int], meta: dict[int, Any], limit: int) -> Iterable[list[int]]:
    """Split `uids` so no batch fetches more than MAX_BATCH_BYTES of bodies (one always fits)."""
    batch: list[int] = []
    size = 0
    for uid in uids:
        body = int(meta[uid][b"RFC822.SIZE"]) if uid in meta else 0
        body = body if body <= limit else 0  # over the limit: only the envelope is kept
        if batch and size + body > MAX_BATCH_BYTES:
            yield batch
            batch, size = [], 0
        batch.append(uid)
        size += body
    if batch:
        yield batch


_HEADER_FETCH = f"BODY.PEEK[HEADER]<0.{HEADER_BLOCK_BYTES}>"
_HEADER_ANSWER = b"BODY[HEADER]<0>"


def _fetch_bodies(
    client: IMAPClient, folder: Folder, uids: list[int], meta: dict[int, Any]
) -> list[IncomingMessage]:
    """Fetch the bodies of the batch's messages under the size limit (BODY.PEEK: no \\Seen).

    Of a message over the limit only the header block is fetched, at most
    HEADER_BLOCK_BYTES of it (a partial fetch), so its envelope is stored.
    """
    limit = folder.account.max_message_bytes
    small = [uid for uid in uids if uid in meta and int(meta[uid][b"RFC822.SIZE"]) <= limit]
    large = [uid for uid in uids if uid in meta and int(meta[uid][b"RFC822.SIZE"]) > limit]
    bodies = client.fetch(small, ["BODY.PEEK[]"]) if small else {}
    heads = client.fetch(large, [_HEADER_FETCH]) if large else {}
    messages = []
    for uid in uids:
        if uid not in meta:
            continue  # expunged between SEARCH and FETCH
        info = meta[uid]
        raw = bodies.get(uid, {}).get(b"BODY[]") if uid in small else None
        if uid in small and raw is None:
            continue  # expunged between the two FETCHes; a later run sees it gone
        messages.append(
            IncomingMessage(
                uidvalidity=folder.uidvalidity or 0,
                uid=uid,
                size=int(info[b"RFC822.SIZE"]),
                received_at=info[b"INTERNALDATE"],
                flags=_flags(info[b"FLAGS"]),
                raw=raw,
                withheld="" if raw is not None else Availability.EXCEEDED_SIZE_LIMIT,
                headers=_header_answer(heads.get(uid, {})) if raw is None else None,
            )
        )
    return messages


def _header_answer(answer: dict[bytes, Any]) -> bytes | None:
    """The header bytes of a partial header FETCH, whatever the server named the item."""
    value = answer.get(_HEADER_ANSWER)
    if value is None:  # some servers answer the partial without its origin, or as BODY[HEADER]
        value = next((v for k, v in answer.items() if k.startswith(b"BODY[HEADER]")), None)
    return bytes(value)[:HEADER_BLOCK_BYTES] if isinstance(value, bytes | bytearray) else None


def _flags(raw: Iterable[Any]) -> tuple[str, ...]:
    """Decode flags; \\Recent is left out: it belongs to a session, not to the message."""
    decoded = (f.decode("utf-8", "replace") if isinstance(f, bytes) else str(f) for f in raw)
    return tuple(sorted(flag for flag in decoded if flag.casefold() != "\\recent"))


# A modification sequence is a 63-bit unsigned number (RFC 7162), as the folder keeps it.
MAX_MODSEQ = 2**63 - 1


def highest_modseq(selected: dict[bytes, Any]) -> int | None:
    """The HIGHESTMODSEQ a SELECT reported, or None when it reported none or none usable:
    a malformed number costs only the quick flag pass, never the run."""
    try:
        value = int(selected[b"HIGHESTMODSEQ"])
    except (KeyError, TypeError, ValueError):
        return None
    return value if 0 <= value <= MAX_MODSEQ else None


@dataclass(frozen=True)
class FlagQuery:
    """Held messages whose flags a flag pass asks for: UIDs up to `through` (None: every
    one) from `after` on, changed since modification sequence `since` (None: all of them)."""

    after: int
    through: int | None
    since: int | None

    def holds(self, uid: int) -> bool:
        return uid > self.after and (self.through is None or uid <= self.through)


def _flag_queries(held_through: int, previous: int | None, current: int | None) -> list[FlagQuery]:
    """What the closing flag pass asks for, given this run's HIGHESTMODSEQ (`current`) and
    the one recorded by the last complete run (`previous`).

    A flag changed after a SELECT gets a modification sequence above the one that SELECT
    reported. So mail held before this run needs only what changed since the last complete
    run's SELECT, and mail stored by this run (its flags read after this SELECT) only what
    changed since this one. Without a number from the server, or with one that went
    backwards, every message's flags are read.
    """
    if current is None:
        return [FlagQuery(after=0, through=None, since=None)]
    usable = previous if previous is not None and previous <= current else None
    return [FlagQuery(0, held_through, usable), FlagQuery(held_through, None, current)]


def _reconcile_flags(
    client: IMAPClient, folder: Folder, uidvalidity: int, server_uids: set[int], queries: list[FlagQuery]
) -> int:
    """Refresh the flags of held messages (as `queries` ask); only changed rows are written."""
    local = dict(Email.objects.filter(folder=folder, uidvalidity=uidvalidity).values_list("uid", "flags"))
    now = timezone.now()
    changed = 0
    for query in queries:
        uids = sorted(uid for uid in local if uid in server_uids and query.holds(uid))
        modifiers = [f"CHANGEDSINCE {query.since}"] if query.since is not None else None
        for batch in _chunks(uids, FLAG_BATCH_SIZE):
            answer = client.fetch(batch, ["FLAGS"], modifiers=modifiers)
            changed += _changed_flags(answer, local, folder, uidvalidity, now)
    Email.objects.filter(folder=folder, uidvalidity=uidvalidity, flags_observed=False).update(
        flags_observed=True, flags_observed_at=now
    )
    return changed


def _changed_flags(
    answer: dict[int, Any], local: dict[int, list[str]], folder: Folder, uidvalidity: int, now: datetime
) -> int:
    """Write the flags of `answer` (a FLAGS FETCH) that differ from `local`'s; return how many."""
    changed = 0
    for uid, info in answer.items():
        flags = list(_flags(info[b"FLAGS"]))
        if uid in local and sorted(local[uid]) != flags:
            Email.objects.filter(folder=folder, uidvalidity=uidvalidity, uid=uid).update(
                flags=flags, flags_observed=True, flags_observed_at=now
            )
            changed += 1
    return changed


def _refetch_missing_content(client: IMAPClient, folder: Folder, uidvalidity: int) -> int:
    """Fetch content held back for storage headroom, and content a read asked to repair."""
    wanted = Email.objects.filter(folder=folder, uidvalidity=uidvalidity).filter(
        availability=Availability.AWAITING_STORAGE_HEADROOM
    ) | Email.objects.filter(folder=folder, uidvalidity=uidvalidity, repair_request__isnull=False)
    refetched = 0
    for email in wanted.select_related("account"):
        answer = client.fetch([email.uid], ["BODY.PEEK[]"])
        raw = answer.get(email.uid, {}).get(b"BODY[]")
        if raw is None:
            continue
        if not fill_content(email, raw):
            break  # still no headroom; later runs try again
        RepairRequest.objects.filter(email=email).delete()
        refetched += 1
    return refetched


def _chunks(items: list[int], size: int) -> Iterable[list[int]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
