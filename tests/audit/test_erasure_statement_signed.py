"""The statement of an executed erasure: what it lists, what it says stays, and its signature.

It lists the erased messages' Message-ID hashes, the suppressions written and the trail rows
removed with the mail; it says what stays and how to find it; it is signed (Ed25519 under the
deployment's key) with an RFC 3339 time, the signature verifies, and altering any field of the
signed document, or signing it with another key, makes it fail.
"""

from __future__ import annotations

import copy
import json
import uuid
from datetime import datetime
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from audit.erasure_models import ErasureRequesterKind, ErasureRequestRecord
from audit.models import AnsweringRunEmail, AnsweringRunEntry
from audit.services.erasure import (
    Requester,
    canonical_json,
    erasure_statement,
    execute_erasure_request,
    request_erasure,
    verify_statement,
)
from mailbox.models import Email, Suppression
from mailbox.services import suppression
from mailfathom.core import signing
from tests.audit.support import SECOND_ADDRESS, person
from tests.mailbox.erasure_data import PERSON

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_rate_counts")]

ALICE = Requester(name="alice", kind=ErasureRequesterKind.USER, person="alice")
BOB = Requester(name="bob", kind=ErasureRequesterKind.USER, person="bob")
OTHER_RING_KEY = "bmV3ZXIta2V5LWZvci1yb3RhdGlvbi10ZXN0cy0wMDA="


@pytest.fixture
def erased(two_accounts):
    """The person's mail in billing, one of it read by an ask_mail run; erased by two people.

    Returns (statement, the erased emails' Message-IDs, the trail rows that named them)."""
    billing, _ = two_accounts
    mine = list(Email.objects.filter(account=billing.account).exclude(subject__contains="plain"))
    assert len(mine) == 3
    now = timezone.now()
    entry = AnsweringRunEntry.objects.create(
        run_id=uuid.uuid4(),
        account=billing.account,
        chat_alias="chat",
        instruction_version="1",
        started_at=now,
        ended_at=now,
        outcome="answered",
    )
    rows = [
        AnsweringRunEmail.objects.create(entry=entry, email=email, position=n) for n, email in enumerate(mine)
    ]
    requested = request_erasure([PERSON, SECOND_ADDRESS], requester=ALICE)
    message_ids = [email.message_id for email in Email.objects.filter(pk__in=[e.pk for e in mine])]
    message_ids.append(Email.objects.get(account__account_id="support").message_id)
    statement = execute_erasure_request(requested.request_id, [PERSON, SECOND_ADDRESS], requester=BOB)
    return statement, message_ids, rows


def test_statement_lists_message_id_hashes_suppressions_and_trail_rows_removed(erased):
    statement, message_ids, rows = erased

    assert sorted(statement.message_id_hashes) == sorted(suppression.message_id_hash(m) for m in message_ids)
    assert all(m not in json.dumps(statement.document) for m in message_ids)
    written = Suppression.objects.order_by("pk")
    assert statement.suppressions["written"] == written.count() == 4
    assert statement.suppressions["ids"] == [row.pk for row in written]
    assert statement.suppressions["scope"] == "deployment"
    assert statement.suppressions["per_account"] == {"billing": 3, "support": 1}
    trail = statement.removed_rows["audit.AnsweringRunEmail"]
    assert trail["count"] == 3 and sorted(trail["ids"]) == sorted(str(row.pk) for row in rows)
    assert not AnsweringRunEmail.objects.exists()


def test_statement_says_what_stays_and_how_to_find_it(erased):
    statement, _, _ = erased

    stays = " ".join(statement.what_stays)
    assert "quote" in stays and "Mentions of the person's name" in stays
    finding = " ".join(statement.how_to_find)
    assert "search_emails" in finding and "/people/search/" in finding
    assert statement.document["what_stays"] == list(statement.what_stays)
    assert statement.document["how_to_find"] == list(statement.how_to_find)


def test_statement_is_signed_with_an_rfc3339_time_and_the_signature_verifies(erased):
    statement, _, _ = erased

    document = statement.document
    assert document is not None and statement.signature and statement.public_key
    assert document["signed_at"].endswith("Z")
    assert datetime.fromisoformat(document["signed_at"]) == statement.signed_at
    assert statement.public_key in signing.public_keys("erasure-statement")
    assert verify_statement(document, statement.signature, statement.public_key)
    # What is read back later is what was signed.
    again = erasure_statement(statement.request_id)
    assert again.document == document and verify_statement(again.document, again.signature, again.public_key)
    assert signing.verify_document(canonical_json(document), statement.signature, statement.public_key)


@pytest.mark.parametrize(
    "alter",
    [
        lambda d: d["erased"]["billing"].__setitem__("emails", 2),
        lambda d: d["message_id_hashes"].pop(),
        lambda d: d["suppressions"].__setitem__("scope", "accounts"),
        lambda d: d["removed_rows"]["audit.AnsweringRunEmail"].__setitem__("count", 0),
        lambda d: d.__setitem__("executed_by_person", "alice"),
        lambda d: d.__setitem__("single_operator", True),
        lambda d: d.__setitem__("signed_at", "2020-01-01T00:00:00.000000Z"),
        lambda d: d["what_stays"].pop(),
    ],
    ids=["count", "hash", "scope", "trail", "executor", "single-operator", "time", "what-stays"],
)
def test_altering_any_field_breaks_the_signature(erased, alter):
    statement, _, _ = erased
    altered = copy.deepcopy(dict(statement.document))

    alter(altered)

    assert not verify_statement(altered, statement.signature, statement.public_key)


def test_a_signature_under_a_key_not_of_this_deployment_is_refused(erased, settings):
    statement, _, _ = erased
    altered = copy.deepcopy(dict(statement.document))
    altered["executed_by_person"] = "alice"
    settings.MAILFATHOM_KEYRING = OTHER_RING_KEY
    forged, foreign_key = signing.sign_document("erasure-statement", canonical_json(altered))
    settings.MAILFATHOM_KEYRING = "Y2hhbmdlLW1lLXRoaXMtaXMtYS10ZXN0LWtleS0wMDA="

    assert signing.verify_document(canonical_json(altered), forged, foreign_key)  # a valid signature...
    assert not verify_statement(altered, forged, foreign_key)  # ...by a key this deployment does not hold


def test_a_rotated_ring_still_verifies_an_older_statement(erased, settings):
    statement, _, _ = erased
    settings.MAILFATHOM_KEYRING = OTHER_RING_KEY + "," + settings.MAILFATHOM_KEYRING

    assert verify_statement(statement.document, statement.signature, statement.public_key)


def test_the_api_statement_carries_the_signed_document_and_verify_statement_checks_it(erased, tmp_path):
    statement, _, _ = erased
    reader = Client()
    reader.force_login(person("auditor", "view_audit"))

    answer = reader.get(f"/api/erasure-requests/{statement.request_id}/statement/").json()

    assert answer["messageIdHashes"] == list(statement.message_id_hashes)
    assert (
        answer["suppressions"]["written"] == 4
        and answer["removedRows"]["audit.AnsweringRunEmail"]["count"] == 3
    )
    assert answer["signature"]["algorithm"] == "Ed25519" and answer["signedDocument"] == statement.document
    assert list(answer["signature"]) == ["algorithm", "value", "publicKey", "signedAt"]
    assert list(answer["cleanup"]) == ["completedAt", "steps"]
    path = tmp_path / "statement.json"
    path.write_text(json.dumps(answer))
    out = StringIO()
    call_command("verify_statement", str(path), stdout=out)
    assert out.getvalue().startswith("Valid:")

    answer["signedDocument"]["erased"]["billing"]["emails"] = 1
    path.write_text(json.dumps(answer))
    with pytest.raises(CommandError, match="NOT VALID"):
        call_command("verify_statement", str(path), stdout=StringIO())


def test_a_previewed_request_has_no_signature(two_accounts):
    requested = request_erasure([PERSON], requester=ALICE)

    statement = erasure_statement(requested.request_id)

    assert statement.document is None and statement.signature == ""
    assert ErasureRequestRecord.objects.get().statement_signed_at is None


def test_the_printable_page_shows_hashes_suppressions_trail_rows_what_stays_and_the_signature(client, erased):
    statement, _, _ = erased
    client.force_login(person("auditor", "view_erasurerequestrecord"))

    page = client.get(reverse("audit:erasure-statement", args=[statement.request_id])).content.decode()

    for digest in statement.message_id_hashes:
        assert digest in page
    assert "4 suppressions, effective in every account of this deployment" in page
    assert "<td>audit.AnsweringRunEmail</td><td>3</td>" in page
    assert "Mentions of the person&#x27;s name" in page and "/people/search/" in page
    assert statement.signature in page and statement.public_key in page
    assert statement.document["signed_at"] in page
    assert "Yes: the person who executed it is not the person who requested it." in page
    assert PERSON.casefold() not in page.casefold()
