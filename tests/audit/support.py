"""Helpers of the audit tests: switching trails on, reading what a trail holds, the people who
act (users with audit permissions, the erasure's two requesters) and the erasure API's calls."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.test import Client

from accounts.models import MailAccount
from audit.erasure_models import ErasureRequesterKind
from audit.models import AnsweringRunEntry
from audit.services.erasure import Requester

SECOND_ADDRESS = "d.smith@example.net"  # a second person, in the erasure tests' support account
# Erasure takes two people: the officer requests, the reviewer executes.
OFFICER = Requester(name="compliance-officer", kind=ErasureRequesterKind.USER, person="compliance-officer")
REVIEWER = Requester(name="second-reviewer", kind=ErasureRequesterKind.USER, person="second-reviewer")


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


def compliance_officer(username: str = "officer"):
    """A staff user in the Compliance group (audit's migrations give it its permissions)."""
    user = person(username)
    user.groups.add(Group.objects.get(name="Compliance"))
    return user


def signed_in(username: str, *codenames: str) -> Client:
    """A client signed in as a new person holding the named audit permissions."""
    client = Client()
    client.force_login(person(username, *codenames))
    return client


def api_create(client: Client, **body):
    """POST /api/erasure-requests/ with `body` as JSON."""
    return client.post("/api/erasure-requests/", body, content_type="application/json")


def api_execute(client: Client, request_id: str, addresses: list[str]):
    """POST the execution of request `request_id`, giving `addresses` again."""
    return client.post(
        f"/api/erasure-requests/{request_id}/execute/",
        {"addresses": addresses},
        content_type="application/json",
    )
