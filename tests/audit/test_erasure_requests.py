"""Erasure requests: recorded with address hashes only, executed once, stated per account and kind."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.urls import reverse

from audit.erasure_models import ErasureRequesterKind, ErasureRequestRecord, ErasureStatus
from audit.models import MutationEntry, MutationKind
from audit.services.erasure import (
    ERASURE_REQUEST_NOT_OPEN,
    erasure_statement,
    execute_erasure_request,
    request_erasure,
)
from mailbox.models import Email
from mailbox.services.erasure import KINDS
from mailfathom.core.errors import MailFathomError
from tests.audit.support import OFFICER, REVIEWER, SECOND_ADDRESS, person
from tests.mailbox.erasure_data import PERSON, TOKEN, message, row_counts
from tests.mailbox.factories import stored_email as store

pytestmark = pytest.mark.django_db


def table_text(table: str) -> str:
    """Every row of `table` as PostgreSQL prints it: what a dump of the table would show."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT t::text FROM {table} t")
        return "\n".join(row[0] for row in cursor.fetchall())


def assert_no_address(text: str) -> None:
    for address in (PERSON, SECOND_ADDRESS):
        assert address.casefold() not in text.casefold()
        assert address.split("@")[0].casefold() not in text.casefold()


def test_preview_records_the_request_with_address_hashes_only_and_changes_no_mail(two_accounts):
    before = row_counts()

    requested = request_erasure([PERSON, SECOND_ADDRESS], requester=OFFICER)

    assert row_counts() == before
    record = ErasureRequestRecord.objects.get()
    assert record.id == requested.request_id and record.status == ErasureStatus.PREVIEWED
    assert len(record.address_hashes) == 2 and all(len(h) == 64 for h in record.address_hashes)
    assert record.preview_counts["billing"]["emails"] == 3
    assert record.preview_counts["support"]["emails"] == 1
    assert set(record.preview_counts["support"]) == set(KINDS)
    assert requested.total("emails") == 4
    assert_no_address(table_text(ErasureRequestRecord._meta.db_table))


def test_execute_removes_the_mail_and_writes_one_mutation_entry_per_account_matching_the_statement(
    two_accounts,
):
    requested = request_erasure([PERSON, SECOND_ADDRESS], requester=OFFICER)
    before = row_counts()

    statement = execute_erasure_request(
        requested.request_id, [SECOND_ADDRESS.upper(), PERSON], requester=REVIEWER
    )

    after = row_counts()
    assert Email.objects.count() == 1  # only the unrelated email is left
    assert {c.account_id for c in statement.accounts} == {"billing", "support"}
    for model, kind in (("Email", "emails"), ("RawMessage", "raw_messages"), ("Participant", "participants")):
        assert before[model] - after[model] == statement.total(kind)
    entries = {e.account_identifier: e for e in MutationEntry.objects.all()}
    assert set(entries) == {"billing", "support"}
    for counts in statement.accounts:
        entry = entries[counts.account_id]
        assert entry.kind == MutationKind.ERASURE_EXECUTED and entry.requester == "second-reviewer"
        assert {k: entry.counts[k] for k in KINDS} == {k: getattr(counts, k) for k in KINDS}
        assert entry.counts["addresses"] == 2
    record = ErasureRequestRecord.objects.get()
    assert record.status == ErasureStatus.EXECUTED and record.executed_by == "second-reviewer"
    assert record.requested_by_person == "compliance-officer" and not record.single_operator
    assert set(record.mutation_entries.all()) == set(entries.values())
    assert statement.address_hashes == tuple(record.address_hashes)
    assert any("mail server" in s for s in statement.cannot_erase)
    assert any("Backups" in s for s in statement.cannot_erase)
    assert statement.guide == "docs/operations/erasure.md"
    for table in (MutationEntry._meta.db_table, ErasureRequestRecord._meta.db_table):
        assert_no_address(table_text(table))
        assert TOKEN not in table_text(table)


@pytest.mark.parametrize(
    "addresses",
    [[PERSON], [PERSON, SECOND_ADDRESS, "third@example.org"], [PERSON, "other@example.org"]],
    ids=["one-missing", "one-more", "one-different"],
)
def test_execute_with_other_addresses_than_requested_is_refused_with_51002(two_accounts, addresses):
    requested = request_erasure([PERSON, SECOND_ADDRESS], requester=OFFICER)
    before = row_counts()

    with pytest.raises(MailFathomError) as refused:
        execute_erasure_request(requested.request_id, addresses, requester=REVIEWER)

    assert refused.value.code == 51002 and refused.value.argument == "addresses"
    assert "example" not in refused.value.message
    assert row_counts() == before and not MutationEntry.objects.exists()
    record = ErasureRequestRecord.objects.get()
    assert record.status == ErasureStatus.PREVIEWED and record.failure_code == 51002


def test_executing_a_request_twice_is_refused_with_53004(two_accounts):
    requested = request_erasure([PERSON], requester=OFFICER)
    execute_erasure_request(requested.request_id, [PERSON], requester=REVIEWER)
    # New mail from the person arrives after the erasure: a second execution must not touch it.
    store(two_accounts[0], message("From", 30))

    with pytest.raises(MailFathomError) as refused:
        execute_erasure_request(requested.request_id, [PERSON], requester=REVIEWER)

    assert refused.value.code == ERASURE_REQUEST_NOT_OPEN == 53004
    assert "already executed" in refused.value.message
    assert Email.objects.count() == 3  # the unrelated one, support's, and the new one
    assert MutationEntry.objects.count() == 1


@pytest.mark.parametrize("request_id", ["00000000-0000-4000-8000-000000000001", "not-a-request", "0" * 100])
def test_statement_of_an_unknown_request_is_refused_with_53004(request_id):
    with pytest.raises(MailFathomError) as refused:
        erasure_statement(request_id)
    assert (refused.value.code, refused.value.argument) == (53004, "requestId")
    assert "names no erasure request" in str(refused.value)


# --- The printable statement page -----------------------------------------------------------


@pytest.fixture
def executed(two_accounts):
    requested = request_erasure([PERSON, SECOND_ADDRESS], requester=OFFICER)
    execute_erasure_request(requested.request_id, [PERSON, SECOND_ADDRESS], requester=REVIEWER)
    return reverse("audit:erasure-statement", args=[requested.request_id])


def test_statement_page_sends_an_anonymous_visitor_to_the_login(client, executed):
    response = client.get(executed)
    assert response.status_code == 302 and reverse("admin:login") in response["Location"]


def test_statement_page_refuses_staff_without_the_permission_with_403(client, executed):
    client.force_login(person("auditor"))
    assert client.get(executed).status_code == 403


def test_statement_page_shows_the_counts_and_no_address_to_staff_with_the_permission(client, executed):
    client.force_login(person("auditor", "view_erasurerequestrecord"))

    response = client.get(executed)

    page = response.content.decode()
    assert response.status_code == 200
    assert "<td>billing</td><td>3</td><td>3</td><td>1</td>" in page
    assert "<td>support</td><td>1</td>" in page
    assert "mail server" in page and "docs/operations/erasure.md" in page
    assert_no_address(page)


# --- Admin: execution behind a confirmation that asks for the addresses again ---------------


def test_admin_executes_a_request_only_with_the_addresses_again_and_never_echoes_them(
    admin_client, two_accounts
):
    requested = request_erasure([PERSON], requester=OFFICER)
    url = reverse("admin:audit_erasurerequestrecord_execute", args=[requested.request_id])

    wrong = admin_client.post(url, {"addresses": "someone@example.org", "confirm": "on"})
    assert wrong.status_code == 200 and Email.objects.count() == 5
    assert "someone@example.org" not in wrong.content.decode() and "51002" in wrong.content.decode()

    unconfirmed = admin_client.post(url, {"addresses": PERSON})
    assert unconfirmed.status_code == 200 and Email.objects.count() == 5

    done = admin_client.post(url, {"addresses": PERSON, "confirm": "on"})
    assert done.status_code == 302 and done["Location"].endswith("/statement/")
    assert Email.objects.count() == 2
    record = ErasureRequestRecord.objects.get()
    assert record.executed_by == "admin" and record.executed_by_kind == ErasureRequesterKind.USER


def test_admin_lists_requests_read_only_with_their_preview(admin_client, two_accounts):
    requested = request_erasure([PERSON], requester=OFFICER)

    page = admin_client.get(
        reverse("admin:audit_erasurerequestrecord_change", args=[requested.request_id])
    ).content.decode()

    assert "billing: 3 emails" in page and "Execute this request" in page
    assert_no_address(page)
    assert admin_client.post(reverse("admin:audit_erasurerequestrecord_add")).status_code == 403


# --- The erase_person command records its runs ----------------------------------------------


def test_the_command_records_a_request_as_one_user_and_another_executes_it(two_accounts):
    person("alice", "request_erasure")
    person("bob", "execute_erasure")
    out = StringIO()
    call_command("erase_person", "--as", "alice", "--address", PERSON, "--account", "billing", stdout=out)
    previewed = ErasureRequestRecord.objects.get()
    assert f"Erasure request {previewed.id} recorded." in out.getvalue()
    assert previewed.requested_by_kind == ErasureRequesterKind.COMMAND and previewed.account_ids == [
        "billing"
    ]
    assert previewed.requested_by_person == "alice" and previewed.status == ErasureStatus.PREVIEWED

    out = StringIO()
    call_command(
        "erase_person",
        "--as",
        "bob",
        "--execute",
        str(previewed.id),
        "--address",
        PERSON,
        "--yes",
        stdout=out,
    )

    executed = ErasureRequestRecord.objects.get()
    assert executed.status == ErasureStatus.EXECUTED and executed.executed_by_person == "bob"
    assert "account billing: 3 emails, 3 raw messages, 1 attachments" in out.getvalue()
    assert str(executed.id) in out.getvalue() and PERSON.casefold() not in out.getvalue().casefold()
    entry = MutationEntry.objects.get()
    assert entry.requester_kind == "task" and entry.counts["emails"] == 3
