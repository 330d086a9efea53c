"""Celery tasks for the audit trails: thin callers of audit.services."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from audit.services import case_export
from audit.services.erasure import clean_up_after_erasure
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


@shared_task(name="audit.erasure_cleanup", ignore_result=True)
def erasure_cleanup() -> dict[str, Any]:
    """The clean-up after an erasure (audit.services.erasure.clean_up_after_erasure), queued
    when an erasure request is executed; `manage.py erasure_cleanup` runs the same."""
    steps = clean_up_after_erasure()
    return {"steps": len(steps), "not_done": sum(1 for step in steps if step.outcome != "done")}


@shared_task(name="audit.run_case_export", ignore_result=True)
def run_case_export_task(export_id: str, addresses: list[str]) -> dict[str, Any]:
    """Write one case export's zip (audit.services.case_export); its progress is on the record.

    The person's addresses travel in this message only: the record keeps their keyed hashes.
    """
    record = case_export.run_case_export(export_id, addresses)
    return {"status": record.status, "exported": record.exported_messages, "missing": record.missing_messages}


@shared_task(name="audit.expire_case_exports", ignore_result=True)
def expire_case_exports() -> dict[str, int]:
    """Delete the zips of case exports past their expiry (records stay), and mark failed the
    exports no worker is writing any more; on beat's schedule."""
    return {
        "expired": case_export.expire_case_exports(),
        "abandoned": case_export.fail_abandoned_exports(),
    }
