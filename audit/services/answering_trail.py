"""Record what one ask_mail run read: one entry per account in scope, sharing the run id.

Called once the run has ended (docs/operations/compliance.md, Answering audit trail). Only
accounts whose trail is on get an entry, even one naming no mail. The append is its own
savepoint and never raises: a failure is logged with the run id only and counted, because the
answer already exists. An email erased before the append is left out.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from opentelemetry import metrics

from accounts.models import MailAccount
from accounts.services.caller import CLIENT_NAME_LENGTH, Caller, bounded_name
from audit.models import AnsweringRunEmail, AnsweringRunEntry, RunOutcome
from audit.services import chain
from mailbox.models import Email

__all__ = ["REFUSED_APPENDS", "RetrievedEmail", "RunAudit", "RunOutcome", "record_run"]

logger = logging.getLogger(__name__)

_meter = metrics.get_meter("mailfathom.audit")
REFUSED_APPENDS = _meter.create_counter(
    "mailfathom.answering.audit.refused_appends",
    unit="{append}",
    description="Answering audit entries that could not be written (the answer was still given).",
)


@dataclass(frozen=True)
class RetrievedEmail:
    """One email a run handed to the model, in the order the run first reached it."""

    account_pk: int
    email_id: str
    cited: bool  # among the response's citations
    relied_on_rank: int | None = None  # 1 for the first source the answer cites by number


@dataclass(frozen=True)
class RunAudit:
    """What a run leaves in the trail: identifiers, names and outcomes, never content."""

    run_id: uuid.UUID
    account_pks: Sequence[int]  # every account in the run's scope
    emails: Sequence[RetrievedEmail]  # first-reached order, each email once
    chat_alias: str
    instruction_version: str
    started_at: datetime
    ended_at: datetime
    outcome: RunOutcome
    retrieval_ceiling_reached: bool = False
    relevance_fell_back: bool = False
    requester: Caller | None = None  # who asked (accounts.services.caller); None with no caller


def record_run(run: RunAudit) -> int:
    """Append `run` to the trail of every account in scope that keeps one; return how many entries.

    Never raises (see the module docstring); a refused append returns 0.
    """
    try:
        return _append(run)
    except Exception:
        logger.warning("answering audit: the entries of run %s could not be appended", run.run_id)
        REFUSED_APPENDS.add(1)
        return 0


def _requester(caller: Caller | None) -> dict[str, str]:
    if caller is None:
        return {}
    return {
        "requester_kind": bounded_name(caller.kind, 16),
        "requester": bounded_name(caller.name),
        "requester_owner": bounded_name(caller.owner),
        "client_name": bounded_name(caller.client, CLIENT_NAME_LENGTH),
    }


def _append(run: RunAudit) -> int:
    with transaction.atomic():
        accounts = list(
            MailAccount.objects.filter(pk__in=list(run.account_pks), answering_audit_enabled=True).order_by(
                "pk"
            )
        )
        if not accounts:
            return 0
        entries = AnsweringRunEntry.objects.bulk_create(
            [
                AnsweringRunEntry(
                    run_id=run.run_id,
                    account=account,
                    chat_alias=run.chat_alias,
                    instruction_version=run.instruction_version,
                    started_at=run.started_at,
                    ended_at=run.ended_at,
                    outcome=run.outcome,
                    retrieval_ceiling_reached=run.retrieval_ceiling_reached,
                    relevance_fell_back=run.relevance_fell_back,
                    **_requester(run.requester),
                )
                for account in accounts
            ]
        )
        by_account = {entry.account_id: entry for entry in entries}
        wanted = [email for email in run.emails if email.account_pk in by_account]
        # Lock what is still stored, so an erasure cannot remove it between this read and the insert.
        present = {
            str(pk)
            for pk in Email.objects.select_for_update(no_key=True)
            .filter(pk__in=[email.email_id for email in wanted])
            .order_by("pk")
            .values_list("pk", flat=True)
        }
        positions: dict[int, int] = {}
        rows = []
        for email in wanted:
            if email.email_id not in present:
                continue
            position = positions.get(email.account_pk, 0)
            positions[email.account_pk] = position + 1
            rows.append(
                AnsweringRunEmail(
                    entry=by_account[email.account_pk],
                    email_id=email.email_id,
                    position=position,
                    cited=email.cited,
                    relied_on_rank=email.relied_on_rank,
                )
            )
        AnsweringRunEmail.objects.bulk_create(rows)
        chain.link_states("answering", [entry.pk for entry in entries])  # bulk_create sends no signal
        return len(entries)
