"""Erasure routes: create previews, execute removes what the preview counted, the statement says so.

Addresses travel in request bodies only: no answer and no log line carries one.
"""

from __future__ import annotations

import logging

import pytest
from django.test import Client

from audit import api_tokens as tokens
from audit.erasure_models import ErasureRequestRecord, ErasureStatus
from tests.audit.support import SECOND_ADDRESS, api_create, api_execute, person, signed_in
from tests.mailbox.erasure_data import PERSON, row_counts

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_rate_counts")]

# What each wire kind of the statement counts, as rows of the model row_counts() names.
MODEL_OF_KIND = {
    "emails": "Email",
    "rawMessages": "RawMessage",
    "participants": "Participant",
    "passages": "Passage",
    "repairRequests": "RepairRequest",
    "attachmentTexts": "AttachmentText",
}


@pytest.fixture
def officer():
    """A person who may request, execute and read (but not execute their own requests)."""
    return signed_in("officer", "request_erasure", "execute_erasure", "view_audit")


@pytest.fixture
def reviewer():
    """The second person, who executes what the officer requested."""
    return signed_in("reviewer", "execute_erasure", "view_audit")


def assert_no_address(text: str) -> None:
    for address in (PERSON, SECOND_ADDRESS):
        assert address.casefold() not in text.casefold()
        assert address.split("@")[0].casefold() not in text.casefold()


def test_create_execute_and_statement_count_exactly_what_disappeared(officer, reviewer, two_accounts, caplog):
    caplog.set_level(logging.DEBUG)
    untouched = row_counts()

    created = api_create(officer, addresses=[PERSON, SECOND_ADDRESS])

    assert created.status_code == 201, created.content
    preview = created.json()
    assert preview["status"] == "previewed"
    assert [row["accountId"] for row in preview["accounts"]] == ["billing", "support"]
    assert preview["totals"]["emails"] == 4
    assert row_counts() == untouched  # a preview removes nothing

    executed = api_execute(reviewer, preview["requestId"], [SECOND_ADDRESS.upper(), PERSON])

    assert executed.status_code == 200, executed.content
    after = row_counts()
    statement = executed.json()
    for kind, model in MODEL_OF_KIND.items():
        assert statement["totals"][kind] == untouched[model] - after[model], kind
    assert statement["totals"] == preview["totals"]
    assert (statement["status"], statement["executedBy"], statement["executedByKind"]) == (
        "executed",
        "reviewer",
        "user",
    )
    assert statement["addressCount"] == 2 and statement["cannotErase"]
    read = officer.get(f"/api/erasure-requests/{preview['requestId']}/statement/")
    assert read.status_code == 200 and read.json() == statement
    trail = officer.get("/api/mutations/?kind=erasure_executed").json()["results"]
    assert sorted(row["accountId"] for row in trail) == ["billing", "support"]
    assert sum(row["counts"]["emails"] for row in trail) == statement["totals"]["emails"]
    for text in (created.content.decode(), executed.content.decode(), read.content.decode(), caplog.text):
        assert_no_address(text)


def test_account_and_received_range_narrow_the_request(officer, two_accounts):
    narrowed = api_create(officer, addresses=[PERSON, SECOND_ADDRESS], accountIds=["support"])
    dated = api_create(
        officer,
        addresses=[PERSON],
        receivedOnOrAfter="2025-06-02T00:00:00Z",
        receivedBefore="2025-06-03T00:00:00Z",
    )

    assert narrowed.status_code == 201 and dated.status_code == 201
    assert [row["accountId"] for row in narrowed.json()["accounts"]] == ["support"]
    assert narrowed.json()["totals"]["emails"] == 1
    assert dated.json()["totals"]["emails"] == 1  # the To message, dated 2 June
    record = ErasureRequestRecord.objects.get(pk=narrowed.json()["requestId"])
    assert record.account_ids == ["support"]


@pytest.mark.parametrize(
    ("body", "argument"),
    [
        ({"addresses": ["not an address"]}, "addresses"),
        ({"addresses": []}, "addresses"),
        ({"addresses": [PERSON], "accountIds": ["nobody"]}, "accountIds"),
        (
            {
                "addresses": [PERSON],
                "receivedOnOrAfter": "2025-06-03T00:00:00Z",
                "receivedBefore": "2025-06-01T00:00:00Z",
            },
            "receivedBefore",
        ),
    ],
)
def test_unusable_request_is_refused_with_51002_naming_the_field_and_recording_nothing(
    officer, body, argument
):
    response = api_create(officer, **body)

    assert response.status_code == 400, response.content
    assert (response.json()["code"], response.json()["argument"]) == (51002, argument)
    assert "not an address" not in response.content.decode()
    assert_no_address(response.content.decode())
    assert not ErasureRequestRecord.objects.exists()


def test_body_that_does_not_validate_is_refused_without_echoing_it(officer):
    response = api_create(officer, addresses=PERSON)  # a string, not a list

    assert response.status_code == 400
    assert response.json()["code"] in ("invalid", 51002)
    assert_no_address(response.content.decode())


def test_execute_with_other_addresses_is_refused_with_51002_and_removes_nothing(
    officer, reviewer, two_accounts
):
    request_id = api_create(officer, addresses=[PERSON, SECOND_ADDRESS]).json()["requestId"]
    before = row_counts()

    response = api_execute(reviewer, request_id, [PERSON])

    assert response.status_code == 400
    assert (response.json()["code"], response.json()["argument"]) == (51002, "addresses")
    assert_no_address(response.content.decode())
    assert row_counts() == before
    assert ErasureRequestRecord.objects.get(pk=request_id).status == ErasureStatus.PREVIEWED


def test_executing_a_request_twice_is_refused_with_53004(officer, reviewer, two_accounts):
    request_id = api_create(officer, addresses=[PERSON]).json()["requestId"]
    assert api_execute(reviewer, request_id, [PERSON]).status_code == 200

    again = api_execute(reviewer, request_id, [PERSON])

    assert again.status_code == 400
    assert (again.json()["code"], again.json()["argument"]) == (53004, "requestId")


def test_statement_before_execution_lists_no_accounts(officer, two_accounts):
    request_id = api_create(officer, addresses=[PERSON]).json()["requestId"]

    statement = officer.get(f"/api/erasure-requests/{request_id}/statement/").json()

    assert (statement["status"], statement["accounts"], statement["executedAt"]) == ("previewed", [], None)
    assert statement["totals"]["emails"] == 0 and statement["addressCount"] == 1


@pytest.mark.parametrize(
    "request_id",
    [
        "6f1c1b0e-0000-4000-8000-000000000000",
        "not-a-request",
        "00000000-0000-0000-0000-000000000000",
        "urn:uuid:6f1c1b0e-0000-4000-8000-000000000000",
        "6" * 65,
    ],
)
def test_unknown_request_id_is_404_for_execute_and_statement(officer, request_id):
    executed = api_execute(officer, request_id, [PERSON])
    stated = officer.get(f"/api/erasure-requests/{request_id}/statement/")

    for response in (executed, stated):
        assert response.status_code == 404
        assert response.json()["code"] == "not_found"


def test_a_token_executing_is_named_by_its_token_name_and_its_owner_in_the_statement(two_accounts):
    lead = person("lead", *tokens.API_PERMISSIONS)
    deputy = person("deputy", *tokens.API_PERMISSIONS)
    secret = tokens.create_token(lead, "erasure-script", ["request_erasure"]).secret
    other = tokens.create_token(deputy, "erasure-runner", ["execute_erasure"]).secret
    script = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    runner = Client(HTTP_AUTHORIZATION=f"Bearer {other}")
    request_id = api_create(script, addresses=[PERSON]).json()["requestId"]

    statement = api_execute(runner, request_id, [PERSON]).json()

    # A token is named with its owner beside its own free-text name: it cannot pass for someone.
    requested = ("erasure-script (token of lead)", "api_token")
    assert (statement["requestedBy"], statement["requestedByKind"]) == requested
    assert (statement["executedBy"], statement["executedByKind"]) == (
        "erasure-runner (token of deputy)",
        "api_token",
    )
    assert (statement["requestedByPerson"], statement["executedByPerson"]) == ("lead", "deputy")
