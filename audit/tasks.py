"""Celery tasks for the audit trails: thin callers of audit.services."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from audit.services.retention import erase_expired_entries


@shared_task(name="audit.erase_expired_entries", ignore_result=True)
def erase_expired_audit_entries() -> dict[str, Any]:
    """One retention pass over both trails (audit.services.retention); on beat's own schedule.

    It shares nothing with synchronization: a pass that fails leaves every account's sync
    state and backoff as they were, and the next pass erases what this one did not.
    """
    result = erase_expired_entries()
    return {
        "answering_erased": result.answering_erased,
        "mutations_erased": result.mutations_erased,
        "failed_accounts": len(result.failed_accounts),
        "held": result.answering_held + result.mutations_held,
    }
