"""Helpers of the audit tests: switching trails on, and reading what a trail holds."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from accounts.models import MailAccount
from audit.models import AnsweringRunEntry

SECOND_ADDRESS = "d.smith@example.net"  # a second person, in the erasure tests' support account


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


def person(username: str, *codenames: str, staff: bool = True, every_audit_permission: bool = False):
    """A user holding the named audit permissions, or all of them; none when none is named."""
    user = get_user_model().objects.create_user(username=username, password="x", is_staff=staff)
    held = Permission.objects.filter(content_type__app_label="audit")
    user.user_permissions.add(*(held if every_audit_permission else held.filter(codename__in=codenames)))
    return user
