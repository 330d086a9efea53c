"""Helpers of the audit tests: switching trails on, and reading what a trail holds."""

from __future__ import annotations

from accounts.models import MailAccount
from audit.models import AnsweringRunEntry


def keep_answering_trail(*account_ids: str) -> None:
    MailAccount.objects.filter(account_id__in=account_ids).update(answering_audit_enabled=True)


def trail() -> dict[str, tuple[AnsweringRunEntry, list[tuple[str, bool]]]]:
    """Every answering entry by account identifier: (entry, [(email id, cited)] in position order)."""
    found = {}
    for entry in AnsweringRunEntry.objects.select_related("account"):
        emails = [(str(row.email_id), row.cited) for row in entry.emails.order_by("position")]
        assert entry.account.account_id not in found, "one entry per account per run"
        found[entry.account.account_id] = (entry, emails)
    return found
