"""Legal holds: what a hold covers, and that retention, erasure and deletion leave it alone."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.test import Client
from django.utils import timezone

from accounts.models import MailAccount
from audit.erasure_models import ErasureRequesterKind, ErasureRequestRecord, ErasureStatus
from audit.hold_models import HoldRequesterKind, HoldScope, LegalHold
from audit.models import AnsweringRunEmail, AnsweringRunEntry, MutationEntry, RunOutcome
from audit.services import holds
from audit.services.erasure import Requester, execute_erasure_request, request_erasure
from audit.services.mutations import message_id_hash
from audit.services.retention import erase_expired_entries
from mailbox.models import Email
from mailfathom.core.errors import Code, MailFathomError
from tests.audit.support import SECOND_ADDRESS, api_create, api_execute, person, signed_in
from tests.audit.test_mutations import mutation
from tests.factories import MailAccountFactory
from tests.mailbox.erasure_data import PERSON, row_counts
from tests.mailbox.factories import EmailFactory

pytestmark = pytest.mark.django_db

OFFICER = holds.Requester(name="hold-officer", kind=HoldRequesterKind.USER)
ERASER = Requester(name="compliance-officer", kind=ErasureRequesterKind.USER, person="compliance-officer")
# Executes what ERASER requested: four eyes (58002) is not what these tests are about.
EXECUTOR = Requester(name="second-reviewer", kind=ErasureRequesterKind.USER, person="second-reviewer")
LONG_AGO = timedelta(days=400)  # past every default window


def place(scope: HoldScope, name: str = "Matter 17", **covered) -> LegalHold:
    return holds.place_hold(
        name=name, reason="Litigation notice received.", scope=scope, requester=OFFICER, **covered
    )


def answering_entry(account: MailAccount, *emails: Email, age: timedelta = LONG_AGO) -> AnsweringRunEntry:
    ended = timezone.now() - age
    entry = AnsweringRunEntry.objects.create(
        run_id=uuid.uuid4(),
        account=account,
        chat_alias="scripted",
        instruction_version="v1",
        started_at=ended,
        ended_at=ended,
        outcome=RunOutcome.ANSWERED,
    )
    for position, email in enumerate(emails):
        AnsweringRunEmail.objects.create(entry=entry, email=email, position=position)
    return entry


def refusal(call) -> MailFathomError:
    with pytest.raises(MailFathomError) as caught:
        call()
    return caught.value


# --- Account holds --------------------------------------------------------------------------


def test_a_held_account_keeps_its_expired_trail_entries_and_the_pass_counts_them_held():
    held, free = MailAccountFactory(account_id="held"), MailAccountFactory(account_id="free")
    for account in (held, free):
        answering_entry(account, EmailFactory(account=account))
        mutation(account, requested_at=timezone.now() - LONG_AGO).save()
    hold = place(HoldScope.ACCOUNT, account_ids=["held"])

    result = erase_expired_entries()

    assert (result.answering_erased, result.mutations_erased) == (1, 1)
    assert (result.answering_held, result.mutations_held) == (1, 1)
    assert AnsweringRunEntry.objects.get().account == held
    assert MutationEntry.objects.get().account == held

    holds.release_hold(hold.id, reason="Matter settled.", requester=OFFICER)
    after = erase_expired_entries()

    assert (after.answering_erased, after.mutations_erased, after.answering_held) == (1, 1, 0)
    assert not AnsweringRunEntry.objects.exists() and not MutationEntry.objects.exists()


def test_a_held_account_refuses_an_erasure_with_58001_naming_the_hold_and_nothing_is_removed(two_accounts):
    hold = place(HoldScope.ACCOUNT, name="Acme v. Billing", account_ids=["billing"])
    requested = request_erasure([PERSON], requester=ERASER)
    before = row_counts()

    error = refusal(lambda: execute_erasure_request(requested.request_id, [PERSON], requester=EXECUTOR))

    assert error.code == Code.LEGAL_HOLD == 58001
    assert "Acme v. Billing" in error.message and str(hold.id) in error.message
    assert PERSON.casefold() not in str(error).casefold()
    assert row_counts() == before
    record = ErasureRequestRecord.objects.get()
    assert record.status == ErasureStatus.PREVIEWED and record.failure_code == 58001
    assert not MutationEntry.objects.exists()


def test_an_erasure_kept_to_other_accounts_passes_an_account_hold(two_accounts):
    place(HoldScope.ACCOUNT, account_ids=["billing"])
    requested = request_erasure([SECOND_ADDRESS], account_ids=["support"], requester=ERASER)

    statement = execute_erasure_request(requested.request_id, [SECOND_ADDRESS], requester=EXECUTOR)

    assert statement.total("emails") == 1
    assert Email.objects.filter(account__account_id="billing").count() == 4


def test_a_held_account_cannot_be_deleted_through_the_service_check(two_accounts):
    billing = MailAccount.objects.get(account_id="billing")
    hold = place(HoldScope.ACCOUNT, account_ids=["billing"])

    error = refusal(lambda: holds.refuse_held_account_deletion(billing))

    assert error.code == 58001 and str(hold.id) in error.message
    holds.refuse_held_account_deletion(MailAccount.objects.get(account_id="support"))  # not held: no error


# --- Person holds ---------------------------------------------------------------------------


def test_a_person_hold_refuses_an_erasure_of_that_person_in_any_spelling(two_accounts):
    hold = place(HoldScope.PERSON, name="Custodian D", addresses=[PERSON.upper()])
    requested = request_erasure([PERSON.lower()], requester=ERASER)
    before = row_counts()

    error = refusal(lambda: execute_erasure_request(requested.request_id, [PERSON], requester=EXECUTOR))

    assert error.code == 58001 and "Custodian D" in error.message and str(hold.id) in error.message
    assert row_counts() == before


def test_a_person_hold_leaves_another_persons_erasure_alone(two_accounts):
    place(HoldScope.PERSON, addresses=[PERSON])
    requested = request_erasure([SECOND_ADDRESS], requester=ERASER)

    statement = execute_erasure_request(requested.request_id, [SECOND_ADDRESS], requester=EXECUTOR)

    assert statement.total("emails") == 1


def test_a_person_hold_refuses_deleting_an_account_holding_their_mail(two_accounts):
    place(HoldScope.PERSON, addresses=[SECOND_ADDRESS])

    assert holds.covering_account(MailAccount.objects.get(account_id="support"))
    assert not holds.covering_account(MailAccount.objects.get(account_id="billing"))


def test_a_person_hold_keeps_the_answering_entries_that_read_their_mail():
    account = MailAccountFactory(account_id="work")
    theirs = EmailFactory(account=account, sender_address="Someone@Example.org")
    named_in_cc = EmailFactory(account=account, cc=["someone@example.org"])
    other = EmailFactory(account=account, to=["nobody@example.org"])
    kept = [answering_entry(account, theirs), answering_entry(account, other, named_in_cc)]
    answering_entry(account, other)
    place(HoldScope.PERSON, addresses=["someone@example.org"])

    result = erase_expired_entries()

    assert (result.answering_erased, result.answering_held) == (1, 2)
    assert set(AnsweringRunEntry.objects.values_list("pk", flat=True)) == {entry.pk for entry in kept}


def test_a_person_hold_keeps_a_mutation_entry_naming_their_mail():
    account = MailAccountFactory(account_id="work")
    theirs = EmailFactory(account=account, to=["someone@example.org"], message_id="<held-1@example.org>")
    EmailFactory(account=account, message_id="<free-1@example.org>")
    naming_held = mutation(account, requested_at=timezone.now() - LONG_AGO)
    naming_held.message_id_hash = message_id_hash(theirs.message_id)
    naming_held.save()
    naming_free = mutation(account, requested_at=timezone.now() - LONG_AGO)
    naming_free.message_id_hash = message_id_hash("<free-1@example.org>")
    naming_free.save()
    place(HoldScope.PERSON, addresses=["someone@example.org"])

    result = erase_expired_entries()

    assert (result.mutations_erased, result.mutations_held) == (1, 1)
    assert MutationEntry.objects.get().pk == naming_held.pk


# --- Case holds -----------------------------------------------------------------------------


def test_a_case_hold_covers_only_its_received_range():
    account = MailAccountFactory(account_id="sales")
    january = EmailFactory(
        account=account, received_at=datetime(2025, 1, 10, tzinfo=UTC), to=["x@example.org"]
    )
    march = EmailFactory(account=account, received_at=datetime(2025, 3, 10, tzinfo=UTC), to=["x@example.org"])
    hold = place(
        HoldScope.CASE,
        account_ids=["sales"],
        addresses=["x@example.org"],
        received_on_or_after=datetime(2025, 2, 1, tzinfo=UTC),
        received_before=datetime(2025, 4, 1, tzinfo=UTC),
    )

    assert holds.holds_covering_emails(Email.objects.filter(pk=january.pk)) == []
    assert holds.holds_covering_emails(Email.objects.filter(pk=march.pk)) == [hold]
    # An erasure before the range passes; one reaching into it is refused.
    early = request_erasure(
        ["x@example.org"], received_before=datetime(2025, 2, 1, tzinfo=UTC), requester=ERASER
    )
    assert (
        execute_erasure_request(early.request_id, ["x@example.org"], requester=EXECUTOR).total("emails") == 1
    )
    everything = request_erasure(["x@example.org"], requester=ERASER)
    error = refusal(
        lambda: execute_erasure_request(everything.request_id, ["x@example.org"], requester=EXECUTOR)
    )
    assert error.code == 58001
    assert Email.objects.filter(pk=march.pk).exists()


def test_a_case_hold_covers_only_its_participants_and_accounts():
    sales, other = MailAccountFactory(account_id="sales"), MailAccountFactory(account_id="other")
    with_participant = EmailFactory(account=sales, to=["x@example.org"])
    without = EmailFactory(account=sales, to=["y@example.org"])
    elsewhere = EmailFactory(account=other, to=["x@example.org"])
    place(HoldScope.CASE, account_ids=["sales"], addresses=["x@example.org"])

    covered = {
        pk
        for pk in Email.objects.values_list("pk", flat=True)
        if holds.holds_covering_emails(Email.objects.filter(pk=pk))
    }

    assert covered == {with_participant.pk}
    assert without.pk not in covered and elsewhere.pk not in covered


# --- Release and record ---------------------------------------------------------------------


def test_a_released_hold_no_longer_refuses(two_accounts):
    hold = place(HoldScope.ACCOUNT, account_ids=["billing"])
    holds.release_hold(hold.id, reason="Matter closed by court order.", requester=OFFICER)
    requested = request_erasure([PERSON], requester=ERASER)

    statement = execute_erasure_request(requested.request_id, [PERSON], requester=EXECUTOR)

    assert statement.total("emails") == 3
    assert holds.covering_account(MailAccount.objects.get(account_id="billing")) == []


def test_placing_and_releasing_are_recorded_on_the_hold_with_no_address():
    MailAccountFactory(account_id="sales")
    hold = place(HoldScope.CASE, account_ids=["sales"], addresses=[PERSON, SECOND_ADDRESS])

    assert hold.created_by == "hold-officer" and hold.created_by_kind == HoldRequesterKind.USER
    assert hold.created_at is not None and hold.is_active
    assert len(hold.address_hashes) == 2 and all(len(digest) == 64 for digest in hold.address_hashes)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT t::text FROM {LegalHold._meta.db_table} t")
        dumped = "\n".join(row[0] for row in cursor.fetchall()).casefold()
    assert PERSON.casefold() not in dumped and SECOND_ADDRESS.casefold() not in dumped
    assert holds.active_holds() == [hold]

    releaser = holds.Requester(name="second-officer", kind=HoldRequesterKind.USER)
    released = holds.release_hold(str(hold.id), reason="Matter settled.", requester=releaser)

    assert released.released_by == "second-officer" and released.release_reason == "Matter settled."
    assert released.released_at is not None and not released.is_active
    assert holds.active_holds() == []
    again = refusal(lambda: holds.release_hold(hold.id, reason="Twice.", requester=OFFICER))
    assert again.code == 51002 and again.argument == "holdId"
    no_id = refusal(lambda: holds.release_hold("not-a-hold", reason="Settled.", requester=OFFICER))
    assert (no_id.code, no_id.argument, str(no_id)) == (again.code, again.argument, str(again))
    assert LegalHold.objects.get().released_by == "second-officer"  # the first release stands


def test_a_release_needs_a_reason_in_the_service_and_in_the_table():
    MailAccountFactory(account_id="sales")
    hold = place(HoldScope.ACCOUNT, account_ids=["sales"])

    error = refusal(lambda: holds.release_hold(hold.id, reason="   ", requester=OFFICER))

    assert error.code == 51002 and error.argument == "reason"
    assert LegalHold.objects.get().is_active
    with pytest.raises(IntegrityError), transaction.atomic():
        LegalHold.objects.filter(pk=hold.pk).update(released_at=timezone.now(), released_by="someone")


@pytest.mark.parametrize(
    ("scope", "covered", "argument"),
    [
        (HoldScope.ACCOUNT, {}, "accountIds"),
        (HoldScope.ACCOUNT, {"account_ids": ["nowhere"]}, "accountIds"),
        (HoldScope.ACCOUNT, {"account_ids": ["sales"], "addresses": [PERSON]}, "accountIds"),
        (HoldScope.PERSON, {}, "addresses"),
        (HoldScope.PERSON, {"addresses": ["not an address"]}, "addresses"),
        # Refused as erasure and case exports refuse it: a control character is no address.
        (HoldScope.PERSON, {"addresses": ["d\x00ana@example.org"]}, "addresses"),
        (HoldScope.PERSON, {"addresses": 42}, "addresses"),
        (HoldScope.CASE, {}, "accountIds"),
        ("everything", {"account_ids": ["sales"]}, "scope"),
        (
            HoldScope.CASE,
            {
                "account_ids": ["sales"],
                "received_on_or_after": datetime(2025, 3, 1, tzinfo=UTC),
                "received_before": datetime(2025, 2, 1, tzinfo=UTC),
            },
            "receivedBefore",
        ),
    ],
)
def test_a_hold_that_names_nothing_usable_is_refused_with_51002(scope, covered, argument):
    MailAccountFactory(account_id="sales")

    error = refusal(lambda: place(scope, **covered))

    assert error.code == 51002 and error.argument == argument
    assert not LegalHold.objects.exists()


def test_a_hold_placed_before_a_key_rotation_still_matches(settings, two_accounts):
    hold = place(HoldScope.PERSON, addresses=[PERSON])
    settings.MAILFATHOM_KEYRING = (
        "bmV3LWtleS1uZXctbmV3LW5ldy1uZXctbmV3LW5ldy0wMDE=," + settings.MAILFATHOM_KEYRING
    )

    assert holds.covering_addresses([PERSON]) == [hold]
    assert holds.holds_covering_emails(Email.objects.filter(account__account_id="billing")) == [hold]


# --- The compliance API ---------------------------------------------------------------------


def test_the_compliance_api_answers_a_held_erasure_with_409_and_58001_naming_the_hold(
    two_accounts, fresh_rate_counts
):
    client = signed_in("officer", "request_erasure", "execute_erasure", "view_audit")
    hold = place(HoldScope.PERSON, name="Custodian D", addresses=[PERSON])
    created = api_create(client, addresses=[PERSON])
    before = row_counts()

    answer = api_execute(client, created.json()["requestId"], [PERSON])

    assert answer.status_code == 409
    assert answer.json()["code"] == 58001 and str(hold.id) in answer.json()["detail"]
    assert PERSON.casefold() not in answer.content.decode().casefold()
    assert row_counts() == before


def test_the_compliance_api_lists_holds_newest_first_with_no_address_or_hash(fresh_rate_counts):
    MailAccountFactory(account_id="sales")
    older = place(HoldScope.ACCOUNT, name="Older", account_ids=["sales"])
    newer = place(HoldScope.PERSON, name="Newer", addresses=[PERSON])
    holds.release_hold(older.id, reason="Settled.", requester=OFFICER)
    client = Client()
    client.force_login(person("reader", "view_audit"))

    answer = client.get("/api/holds/")

    assert answer.status_code == 200
    rows = answer.json()["results"]
    assert [row["id"] for row in rows] == [str(newer.id), str(older.id)]
    assert rows[0]["active"] is True and rows[0]["addressCount"] == 1 and rows[0]["scope"] == "person"
    assert rows[1]["active"] is False and rows[1]["releaseReason"] == "Settled."
    assert rows[1]["accountIds"] == ["sales"]
    text = answer.content.decode().casefold()
    assert PERSON.casefold() not in text and newer.address_hashes[0] not in text
