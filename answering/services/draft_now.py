"""Draft now: whether a drafting run can be started for an account, and queueing one.

Used by the account admin's "Draft now" action and by `manage.py draft`, so both refuse
for the same reasons with the same sentences: the account is not served, its drafting is
off, or this deployment cannot draft at the moment (no endpoint declared, or one failed
within the last minute). A run is queued after the current transaction commits.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial

from django.db import transaction

from accounts.models import MailAccount
from answering.drafting.capability import drafting_capability
from answering.models import RunTrigger
from answering.tasks import draft_account_task
from mailfathom.core.capability import CapabilityState


def why_not_drafting(account: MailAccount) -> str:
    """A sentence saying why no run would draft for `account`, or "" when one would."""
    if not account.served:
        return f"{account} is not served, so nothing is drafted for it."
    if not account.drafting_enabled:
        return f"Reply drafting is off for {account}: tick “reply drafting enabled” on the account first."
    capability = drafting_capability()
    if capability.state == CapabilityState.INACTIVE:
        return (
            f"This deployment does not draft replies ({capability.reason}); see docs/operations/drafting.md."
        )
    if capability.state == CapabilityState.DEGRADED:
        return f"Drafting cannot run right now: the {capability.reason}; try again in a minute."
    return ""


def queue_drafting(account_pks: Iterable[int], trigger: str = RunTrigger.DRAFT_NOW) -> int:
    """Queue one drafting run per distinct account once the transaction commits; return how many."""
    distinct = sorted(set(account_pks))
    for account_pk in distinct:
        transaction.on_commit(partial(draft_account_task.delay, account_pk, trigger=trigger))
    return len(distinct)
