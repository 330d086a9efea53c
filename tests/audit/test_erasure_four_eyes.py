"""Erasure takes two people: whoever requested a request cannot execute it (58002), through
the service, the API (the same user, or a token of the same owner), admin or the command line,
unless MAILFATHOM_ERASURE_SINGLE_OPERATOR says the deployment has one operator, which the
statement then records."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from audit import api_tokens as tokens
from audit.erasure_models import ErasureRequesterKind, ErasureRequestRecord, ErasureStatus
from audit.models import MutationEntry
from audit.services.erasure import Requester, execute_erasure_request, request_erasure
from mailbox.models import Email
from mailfathom.core.errors import Code, MailFathomError
from tests.audit.support import api_create, api_execute, person, signed_in
from tests.mailbox.erasure_data import PERSON, row_counts

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_rate_counts")]


def command(*args: str) -> str:
    out = StringIO()
    call_command("erase_person", *args, stdout=out)
    return out.getvalue()


def assert_still_open(request_id, before: dict[str, int], code: int = 58002) -> None:
    record = ErasureRequestRecord.objects.get(pk=request_id)
    assert record.status == ErasureStatus.PREVIEWED and record.failure_code == code
    assert row_counts() == before and not MutationEntry.objects.exists()


# --- The service ------------------------------------------------------------------------------


def test_the_service_refuses_the_requester_as_executor_whatever_the_letter_case(two_accounts):
    requested = request_erasure(
        [PERSON], requester=Requester(name="Alice", kind=ErasureRequesterKind.USER, person="Alice")
    )
    before = row_counts()

    with pytest.raises(MailFathomError) as refused:
        execute_erasure_request(
            requested.request_id,
            [PERSON],
            requester=Requester(name="script", kind=ErasureRequesterKind.API_TOKEN, person="alice"),
        )

    assert refused.value.code == Code.SAME_PERSON == 58002
    assert refused.value.is_published
    assert_still_open(requested.request_id, before)


# --- The API ----------------------------------------------------------------------------------


def test_the_api_refuses_the_same_user_with_58002_and_another_person_succeeds(two_accounts):
    officer = signed_in("officer", "request_erasure", "execute_erasure")
    reviewer = signed_in("reviewer", "execute_erasure", "view_audit")
    request_id = api_create(officer, addresses=[PERSON]).json()["requestId"]
    before = row_counts()

    refused = api_execute(officer, request_id, [PERSON])

    assert refused.status_code == 403, refused.content
    assert refused.json()["code"] == 58002
    assert PERSON.casefold() not in refused.content.decode().casefold()
    assert_still_open(request_id, before)

    done = api_execute(reviewer, request_id, [PERSON])

    assert done.status_code == 200, done.content
    statement = done.json()
    assert (statement["requestedByPerson"], statement["executedByPerson"]) == ("officer", "reviewer")
    assert statement["singleOperator"] is False
    assert Email.objects.count() == before["Email"] - 3  # billing's From, To and Cc


def test_a_second_token_of_the_requesters_own_user_is_the_same_person(two_accounts):
    lead = person("lead", *tokens.API_PERMISSIONS)
    asking = tokens.create_token(lead, "asking-script", ["request_erasure"]).secret
    running = tokens.create_token(lead, "running-script", ["execute_erasure"]).secret
    request_id = api_create(Client(HTTP_AUTHORIZATION=f"Bearer {asking}"), addresses=[PERSON]).json()[
        "requestId"
    ]
    before = row_counts()

    refused = api_execute(Client(HTTP_AUTHORIZATION=f"Bearer {running}"), request_id, [PERSON])

    assert refused.status_code == 403 and refused.json()["code"] == 58002
    assert_still_open(request_id, before)
    # The signed-in owner is the same person as their tokens.
    signed = Client()
    signed.force_login(lead)
    assert api_execute(signed, request_id, [PERSON]).json()["code"] == 58002


def test_admin_refuses_the_requester_and_shows_58002(two_accounts):
    requester = person(
        "officer", "request_erasure", "execute_erasurerequestrecord", "view_erasurerequestrecord"
    )
    request_id = api_create(signed_in_as(requester), addresses=[PERSON]).json()["requestId"]
    before = row_counts()
    admin = Client()
    admin.force_login(requester)

    page = admin.post(
        reverse("admin:audit_erasurerequestrecord_execute", args=[request_id]),
        {"addresses": PERSON, "confirm": "on"},
    )

    assert page.status_code == 200 and "58002" in page.content.decode()
    assert_still_open(request_id, before)


def signed_in_as(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


# --- The command line -------------------------------------------------------------------------


def test_the_command_refuses_the_requester_as_executor_and_runs_for_another_user(two_accounts):
    person("alice", "request_erasure", "execute_erasure")
    person("bob", "execute_erasurerequestrecord")
    output = command("--as", "alice", "--address", PERSON)
    request_id = ErasureRequestRecord.objects.get().pk
    assert str(request_id) in output
    before = row_counts()

    with pytest.raises(CommandError) as refused:
        command("--as", "alice", "--execute", str(request_id), "--address", PERSON, "--yes")

    assert "58002" in str(refused.value)
    assert_still_open(request_id, before)

    command("--as", "bob", "--execute", str(request_id), "--address", PERSON, "--yes")

    record = ErasureRequestRecord.objects.get()
    assert record.status == ErasureStatus.EXECUTED
    assert (record.requested_by_person, record.executed_by_person) == ("alice", "bob")


def test_the_command_has_no_one_run_request_and_execute(two_accounts):
    person("alice", "request_erasure", "execute_erasure")

    with pytest.raises(CommandError):  # --execute names a recorded request: it cannot be empty
        command("--as", "alice", "--address", PERSON, "--execute")
    with pytest.raises(CommandError, match="--yes goes with --execute"):
        command("--as", "alice", "--address", PERSON, "--yes")

    assert Email.objects.count() == 5


@pytest.mark.parametrize(
    ("username", "codenames", "step"),
    [
        ("nobody", (), "request"),  # no such user
        ("carol", ("view_audit",), "request"),  # no request permission
        ("carol", ("request_erasure",), "execute"),  # no execute permission
    ],
)
def test_the_command_wants_a_user_holding_the_steps_permission(two_accounts, username, codenames, step):
    person("alice", "request_erasure")
    if username != "nobody":
        person(username, *codenames)
    args = ["--as", username, "--address", PERSON]
    if step == "execute":
        command("--as", "alice", "--address", PERSON)
        args += ["--execute", str(ErasureRequestRecord.objects.get().pk), "--yes"]
    before = row_counts()

    with pytest.raises(CommandError, match="--as"):
        command(*args)

    assert row_counts() == before
    assert ErasureRequestRecord.objects.count() == (1 if step == "execute" else 0)


def test_the_command_needs_as(two_accounts):
    with pytest.raises(CommandError):
        command("--address", PERSON)


# --- A single-operator deployment --------------------------------------------------------------


def test_single_operator_setting_lets_one_person_do_both_and_the_statement_says_so(
    mailfathom_settings, two_accounts
):
    mailfathom_settings(erasure_single_operator=True)
    person("solo", "request_erasure", "execute_erasure", "view_audit")
    command("--as", "solo", "--address", PERSON)
    request_id = str(ErasureRequestRecord.objects.get().pk)

    output = command("--as", "solo", "--execute", request_id, "--address", PERSON, "--yes")

    assert "MAILFATHOM_ERASURE_SINGLE_OPERATOR" in output
    record = ErasureRequestRecord.objects.get()
    assert record.status == ErasureStatus.EXECUTED and record.single_operator is True
    assert record.statement_document["single_operator"] is True
    reader = signed_in_as(person("auditor", "view_audit"))
    statement = reader.get(f"/api/erasure-requests/{request_id}/statement/").json()
    assert statement["singleOperator"] is True and statement["signedDocument"]["single_operator"] is True


def test_without_the_setting_the_statement_records_two_people(two_accounts):
    requested = request_erasure(
        [PERSON], requester=Requester(name="alice", kind=ErasureRequesterKind.USER, person="alice")
    )

    statement = execute_erasure_request(
        requested.request_id,
        [PERSON],
        requester=Requester(name="bob", kind=ErasureRequesterKind.USER, person="bob"),
    )

    assert statement.single_operator is False
    assert statement.document is not None and statement.document["single_operator"] is False
    assert (statement.document["requested_by_person"], statement.document["executed_by_person"]) == (
        "alice",
        "bob",
    )
