"""A drafting run: the gate's oldest waiting emails of one account, each composed and stored.

`draft_account` composes at most drafting_max_per_run emails: a draft is stored pending, a
refusal as a DraftAttempt (so the gate can hold it back). It stops when the period ledger
refuses or a provider failure makes drafting unavailable, and is recorded as a DraftRun row
at its start and end. One run per account at a time (a session-level advisory lock taken
without waiting); under it the one-to-one Draft.email still guarantees one draft per email.
Logs carry identifiers, counts and the model alias, never mail or draft text.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import DatabaseError, IntegrityError, connection, transaction
from django.utils import timezone

from accounts.models import DraftAppendMode, MailAccount
from answering.drafting.capability import drafting_capability
from answering.drafting.deliver import deliver_draft, wants_copy
from answering.drafting.gate import messages_awaiting_a_draft
from answering.drafting.pipeline import ComposedDraft, DraftRefused, compose_draft
from answering.ledger import SPEND_REFUSED
from answering.models import AttemptOutcome, Draft, DraftAttempt, DraftRun, DraftStatus, RunTrigger
from mailbox.models import Email
from mailfathom.core.capability import CapabilityState
from mailfathom.core.errors import CAPABILITY_UNAVAILABLE, MailFathomError
from mailfathom.core.progress import Progress, ProgressCallback

logger = logging.getLogger(__name__)

# First key of the two-integer advisory lock; the account's primary key is the second
# (mailbox.services.threads uses another first key, so the two never meet).
_DRAFTING_LOCK = 0x7E4E

Composer = Callable[[Email], ComposedDraft | DraftRefused]


@dataclass
class RunSummary:
    account_id: str
    considered: int = 0
    drafted: int = 0
    refused: dict[str, int] = field(default_factory=dict)  # AttemptOutcome value -> count
    already_drafted: int = 0  # drafted by another writer between the gate and the insert
    vanished: int = 0  # expunged or erased while it was being composed
    failed: int = 0  # an unexpected error: logged by type, nothing stored
    stopped_by: str = ""  # "ledger": the period's allowance ran out; "provider": an endpoint failed
    delivered: int = 0  # append mode "every": new drafts written to the Drafts folder
    delivery_failed: int = 0  # kept in the queue, not on the server (Deliver again retries)
    last_outcome: str = ""  # of the email handled last: "drafted" or an AttemptOutcome value
    skipped: str = ""  # why nothing ran
    run_pk: int | None = None  # the DraftRun row that records this run

    @property
    def refused_total(self) -> int:
        return sum(self.refused.values())


@contextmanager
def account_lock(account_pk: int) -> Iterator[bool]:
    """Hold this session's drafting lock on the account if it is free; yield whether it was."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [_DRAFTING_LOCK, account_pk])
        held = bool(cursor.fetchone()[0])
    try:
        yield held
    finally:
        if held:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [_DRAFTING_LOCK, account_pk])


# A run is recorded a moment before it takes its account's lock; an unfinished run this young
# is never taken for dead. One older than INTERRUPTED_AFTER is, lock or not (a hung worker).
LOCK_GRACE = timedelta(seconds=60)
INTERRUPTED_AFTER = timedelta(hours=24)


def mark_interrupted_runs(runs: Iterable[DraftRun], now: datetime) -> None:
    """Mark each unfinished run of `runs` whose worker is gone as interrupted, in place and in the database.

    A run is gone when no session holds its account's drafting lock (a killed worker's
    connection, and with it the lock, ends with it) once LOCK_GRACE has passed, or when it
    began more than INTERRUPTED_AFTER ago. Read from pg_locks without taking the lock, so a
    run starting meanwhile is never turned away. One query, and one UPDATE if any is gone.
    """
    unfinished = [run for run in runs if run.ended_at is None and run.interrupted_at is None]
    if not unfinished:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT objid::bigint FROM pg_locks WHERE locktype = 'advisory' AND granted"
            " AND classid = %s::oid AND objsubid = 2 AND database ="
            " (SELECT oid FROM pg_database WHERE datname = current_database())",
            [_DRAFTING_LOCK],
        )
        locked = {row[0] for row in cursor.fetchall()}
    gone = [
        run
        for run in unfinished
        if now - run.started_at > INTERRUPTED_AFTER
        or (run.account_id not in locked and now - run.started_at > LOCK_GRACE)
    ]
    if gone:
        DraftRun.objects.filter(pk__in=[run.pk for run in gone], ended_at__isnull=True).update(
            interrupted_at=now
        )
        for run in gone:
            run.interrupted_at = now


def draft_account(
    account: MailAccount,
    *,
    compose: Composer | None = None,
    trigger: str = RunTrigger.SCHEDULE,
    progress: ProgressCallback | None = None,
) -> RunSummary:
    """Draft replies for the account's oldest waiting emails (see the module docstring).

    Nothing runs for an account that is not served or has drafting off, nor while drafting
    is not available (no endpoint declared, or one failed within the last minute): the
    emails wait, and no attempt is recorded for them. A caller passing its own `compose`
    vouches for it; the capability is read for the pipeline's compose_draft only. The run
    is recorded with `trigger` (a RunTrigger value) whether it drafted or was skipped.
    """
    summary = RunSummary(account_id=account.account_id)
    record = DraftRun.objects.create(account=account, trigger=trigger, started_at=timezone.now())
    summary.run_pk = record.pk
    try:
        _run(account, compose, summary, progress)
    except BaseException:
        # A run that fails (a database error) or is interrupted (Ctrl-C) keeps what it did
        # until then; the original error is the one that propagates.
        with suppress(DatabaseError):
            _record(record, summary)
        raise
    _record(record, summary)
    return summary


def _run(
    account: MailAccount, compose: Composer | None, summary: RunSummary, progress: ProgressCallback | None
) -> None:
    if not MailAccount.objects.served().filter(pk=account.pk, drafting_enabled=True).exists():
        summary.skipped = "drafting is off for this account"
        return
    if compose is None:
        capability = drafting_capability()
        if capability.state != CapabilityState.AVAILABLE:
            summary.skipped = f"drafting is {capability.state.value}: {capability.reason}"
            logger.info("drafting %s: skipped, %s", summary.account_id, summary.skipped)
            return
        compose, watch_provider = compose_draft, True
    else:
        watch_provider = False
    with account_lock(account.pk) as held:
        if not held:
            summary.skipped = "another run holds the account"
            return
        account.refresh_from_db()
        aliases: set[str] = set()
        waiting = messages_awaiting_a_draft(account, account.drafting_max_per_run)
        label = f"drafting {account.account_id}"
        if progress is not None:
            progress(Progress(label, 0, len(waiting)))
        for email in waiting:
            summary.considered += 1
            goes_on = _draft_one(account, email, compose, summary, aliases)
            if progress is not None:
                progress(Progress(label, summary.considered, len(waiting)))
            if not goes_on:
                break
            if watch_provider and summary.last_outcome == AttemptOutcome.PROVIDER_FAILED:
                # An endpoint that failed now withholds drafting for a minute: stop rather
                # than spend every remaining email's deadline and retries on it.
                if drafting_capability().state != CapabilityState.AVAILABLE:
                    summary.stopped_by = "provider"
                    break
    logger.info(
        "drafting %s: %d considered, %d drafted, %d refused, %d already drafted, %d vanished, "
        "%d failed%s; alias %s",
        summary.account_id,
        summary.considered,
        summary.drafted,
        summary.refused_total,
        summary.already_drafted,
        summary.vanished,
        summary.failed,
        f"; stopped by the {summary.stopped_by}" if summary.stopped_by else "",
        ",".join(sorted(aliases)) or "-",
    )


def _record(record: DraftRun, summary: RunSummary) -> None:
    """Write the run's counts to its DraftRun row (a failing database is left to the caller)."""
    DraftRun.objects.filter(pk=record.pk).update(
        ended_at=timezone.now(),
        considered=summary.considered,
        drafted=summary.drafted,
        refused=dict(summary.refused),
        already_drafted=summary.already_drafted,
        vanished=summary.vanished,
        failed=summary.failed,
        delivered=summary.delivered,
        delivery_failed=summary.delivery_failed,
        stopped_by=summary.stopped_by,
        skipped=summary.skipped[:200],
    )


def _draft_one(
    account: MailAccount, email: Email, compose: Composer, summary: RunSummary, aliases: set[str]
) -> bool:
    """Compose and store one email's draft or attempt; return whether the run goes on."""
    try:
        result = compose(email)
    except MailFathomError as error:
        if error.code in (SPEND_REFUSED, CAPABILITY_UNAVAILABLE):
            if error.code == SPEND_REFUSED:
                _attempt(account, email, "admission", AttemptOutcome.CEILING_REACHED, "", {}, summary)
            summary.stopped_by = "ledger"
            return False
        _attempt(account, email, "compose", AttemptOutcome.PROVIDER_FAILED, "", {}, summary)
        return True
    except DatabaseError:
        raise  # not about this email: the run fails visibly and the task is retried later
    except Exception as error:  # one email's defect must not starve the emails behind it
        logger.error("drafting %s: composing failed: %s", account.account_id, type(error).__name__)
        summary.failed += 1
        summary.last_outcome = "failed"
        return True
    alias = result.model_alias
    if alias:
        aliases.add(alias)
    if isinstance(result, DraftRefused):
        outcome = result.outcome
        _attempt(account, email, result.stage, outcome, alias, dict(result.tokens), summary)
        if outcome == AttemptOutcome.CEILING_REACHED:
            summary.stopped_by = "ledger"
            return False
        return True
    _store(account, email, result, summary)
    return True


def _store(account: MailAccount, email: Email, composed: ComposedDraft, summary: RunSummary) -> None:
    draft = Draft(
        account=account,
        email=email,
        body=composed.body,
        intent=composed.intent,
        language=composed.language,
        source_ids=list(composed.source_ids),
        thread_ids=list(composed.thread_ids),
        reference_ids=list(composed.reference_ids),
        verdict=composed.verdict,
        reasons=list(composed.reasons),
        findings=list(composed.findings),
        assessed_at=timezone.now(),
        note=composed.note,
        model_alias=composed.model_alias,
        tokens=dict(composed.tokens),
        status=DraftStatus.PENDING,
    )
    try:
        with transaction.atomic():
            draft.save(force_insert=True)
    except IntegrityError:
        # The one-to-one on the email, or its row gone (an expunge or an erasure meanwhile).
        if Draft.objects.filter(email_id=email.pk).exists():
            summary.already_drafted += 1
        else:
            summary.vanished += 1
        return
    summary.drafted += 1
    summary.last_outcome = "drafted"
    draft.account = account
    if account.drafting_append_mode == DraftAppendMode.EVERY and wants_copy(draft):
        # After the commit: delivery writes the minted Message-ID first, then the server.
        # A draft that needs review is not among them (deliver.wants_copy).
        transaction.on_commit(lambda: _deliver_new(draft, summary))


def _deliver_new(draft: Draft, summary: RunSummary) -> None:
    """Append mode "every": a new draft goes to the Drafts folder; a failure keeps the draft."""
    try:
        deliver_draft(draft)
    except MailFathomError as error:
        summary.delivery_failed += 1
        logger.warning(
            "drafting %s: a new draft was kept but not delivered (%s)", summary.account_id, error.code
        )
    else:
        summary.delivered += 1


def _attempt(
    account: MailAccount,
    email: Email,
    stage: str,
    outcome: str,
    alias: str,
    tokens: dict[str, Any],
    summary: RunSummary,
) -> None:
    summary.refused[outcome] = summary.refused.get(outcome, 0) + 1
    summary.last_outcome = outcome
    try:
        with transaction.atomic():
            DraftAttempt.objects.create(
                account=account,
                email=email,
                stage=stage[:16],
                outcome=outcome,
                model_alias=alias,
                tokens=tokens,
            )
    except IntegrityError:
        summary.vanished += 1  # the email went away while it was composed
