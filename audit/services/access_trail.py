"""Record who read which mail: one access entry per account whose access trail is on.

Called by whatever served a read (the MCP bridge, the admin email pages, the people pages)
after it returned, with the emails returned and the accounts reached. Names, ids and counts
only, never content; it never raises, since the read has been served. What an entry holds:
docs/operations/compliance.md, Access trail.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from datetime import datetime

from django.db import transaction
from django.utils import timezone
from opentelemetry import metrics

from accounts.models import MailAccount
from accounts.services.caller import Caller, bounded_name
from audit.access_models import AccessChannel, AccessEntry, AccessEntryEmail, AccessRequesterKind
from audit.services import chain
from mailbox.models import Email
from mailfathom.core.identifiers import uuid_from_text

__all__ = ["REFUSED_APPENDS", "AccessChannel", "record_access"]

logger = logging.getLogger(__name__)

_meter = metrics.get_meter("mailfathom.audit")
REFUSED_APPENDS = _meter.create_counter(
    "mailfathom.audit.access.refused_appends",
    unit="{append}",
    description="Access trail entries that could not be written (the read was still served).",
)

# Most emails one entry lists: every read this product serves returns far fewer (a listing
# page holds 200); the cap keeps a future caller from turning one append into a bulk copy.
MAX_EMAILS = 1000
_KINDS = {kind.value for kind in AccessRequesterKind}


def record_access(
    channel: AccessChannel | str,
    action: str,
    caller: Caller | None,
    email_ids: Iterable[object] = (),
    account_pks: Iterable[int] = (),
    at: datetime | None = None,
) -> int:
    """Append one entry per account reached whose access trail is on; return how many.

    `email_ids`: the emails the read returned, by id, in the order returned (repeats and
    anything not an id are ignored). `account_pks`: the accounts its scope reached, whether
    or not they returned mail. Never raises.
    """
    try:
        return _append(AccessChannel(channel), action, caller, email_ids, account_pks, at)
    except Exception:
        logger.warning("access trail: the entries of a %s read (%s) could not be appended", channel, action)
        REFUSED_APPENDS.add(1)
        return 0


def _ids(values: Iterable[object]) -> list[uuid.UUID]:
    seen: dict[uuid.UUID, None] = {}
    for value in values:
        parsed = value if isinstance(value, uuid.UUID) else uuid_from_text(str(value))
        if parsed is None:
            continue
        seen.setdefault(parsed)
        if len(seen) >= MAX_EMAILS:
            break
    return list(seen)


def _append(
    channel: AccessChannel,
    action: str,
    caller: Caller | None,
    email_ids: Iterable[object],
    account_pks: Iterable[int],
    at: datetime | None,
) -> int:
    # With every account's trail off (the default), this query is the whole cost.
    enabled = {
        pk: (account_id, days)
        for pk, account_id, days in MailAccount.objects.filter(access_trail_enabled=True).values_list(
            "pk", "account_id", "access_trail_retention_days"
        )
    }
    if not enabled:
        return 0
    reached = [pk for pk in dict.fromkeys(account_pks) if pk in enabled]
    ids = _ids(email_ids)
    with transaction.atomic():
        holders: dict[uuid.UUID, int] = {}
        if ids:
            # Lock what is still stored, so an erasure cannot remove it between this read and the insert.
            holders = dict(
                Email.objects.select_for_update(no_key=True)
                .filter(pk__in=ids, account_id__in=list(enabled))
                .order_by("pk")
                .values_list("pk", "account_id")
            )
        returned = [(email_id, holders[email_id]) for email_id in ids if email_id in holders]
        # An account reached gets an entry even when it returned nothing: its mailbox was read.
        accounts = list(dict.fromkeys([*reached, *(account_pk for _, account_pk in returned)]))
        if not accounts:
            return 0
        counts = {pk: 0 for pk in accounts}
        for _, account_pk in returned:
            counts[account_pk] += 1
        kind = caller.kind if caller is not None and caller.kind in _KINDS else AccessRequesterKind.TASK
        when = at or timezone.now()
        entries = AccessEntry.objects.bulk_create(
            [
                AccessEntry(
                    account_id=pk,
                    account_identifier=enabled[pk][0],
                    accessed_at=when,
                    channel=channel,
                    action=bounded_name(action, 64),
                    requester_kind=kind,
                    requester=bounded_name(caller.name) if caller else "",
                    owner=bounded_name(caller.owner) if caller else "",
                    client_name=bounded_name(caller.client, 100) if caller else "",
                    email_count=counts[pk],
                    retention_days=enabled[pk][1],
                )
                for pk in accounts
            ]
        )
        by_account = {entry.account_id: entry for entry in entries}
        positions: dict[int, int] = {}
        rows = []
        for email_id, account_pk in returned:
            position = positions.get(account_pk, 0)
            positions[account_pk] = position + 1
            rows.append(AccessEntryEmail(entry=by_account[account_pk], email_id=email_id, position=position))
        AccessEntryEmail.objects.bulk_create(rows)
        chain.link_states("access", [entry.pk for entry in entries])  # bulk_create sends no signal
        return len(entries)
