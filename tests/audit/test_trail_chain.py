"""Tamper evidence: every trail is chained; SQL edits are reported by row, retention is not."""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.test import override_settings
from django.utils import timezone

from accounts.models import MailAccount
from audit.chain_models import LinkKind, TrailLink
from audit.erasure_models import ErasureRequestRecord, ErasureStatus
from audit.models import (
    AnsweringRunEmail,
    AnsweringRunEntry,
    MutationEntry,
    MutationKind,
    MutationOutcome,
    RequesterKind,
    RunOutcome,
)
from audit.services import chain
from audit.services.answering_trail import RetrievedEmail, RunAudit, record_run
from audit.services.erasure import execute_erasure_request, request_erasure
from audit.services.mutations import Mutation, record_mutation
from audit.services.retention import erase_expired_entries
from mailbox.models import Email
from tests.audit.support import OFFICER, REVIEWER, SECOND_ADDRESS
from tests.factories import MailAccountFactory
from tests.mailbox.erasure_data import PERSON

KEY_A = "Y2hhbmdlLW1lLXRoaXMtaXMtYS10ZXN0LWtleS0wMDA="  # the suite's ring (tests/conftest.py)
KEY_B = "YW5vdGhlci10ZXN0LWtleS1mb3ItdGhlLWNoYWluLTE="


def run(accounts: list[MailAccount], *, ended_days_ago: float = 0, emails=()) -> uuid.UUID:
    ended = timezone.now() - timedelta(days=ended_days_ago)
    run_id = uuid.uuid4()
    written = record_run(
        RunAudit(
            run_id=run_id,
            account_pks=[account.pk for account in accounts],
            emails=list(emails),
            chat_alias="scripted",
            instruction_version="v1",
            started_at=ended - timedelta(seconds=5),
            ended_at=ended,
            outcome=RunOutcome.ANSWERED,
        )
    )
    assert written == len(accounts)
    return run_id


def act(account: MailAccount, *, days_ago: float = 0, requester: str = "officer") -> MutationEntry:
    entry = record_mutation(
        Mutation(
            kind=MutationKind.DRAFT_APPENDED,
            requester=requester,
            requester_kind=RequesterKind.USER,
            account_pk=account.pk,
            requested_at=timezone.now() - timedelta(days=days_ago),
            completed_at=timezone.now() - timedelta(days=days_ago),
            outcome=MutationOutcome.PERFORMED,
            counts={"drafts": 1},
        )
    )
    assert entry is not None
    return entry


def reports() -> dict[str, chain.TrailReport]:
    return {report.trail: report for report in chain.verify_trails()}


def first_break(trail: str) -> tuple[int | None, str, str] | None:
    found = reports()[trail].first_break
    return None if found is None else (found.seq, found.entry_pk, found.reason)


def latest_seq(trail: str, pk: object) -> int:
    return (
        TrailLink.objects.filter(trail=trail, entry_pk=str(pk))
        .order_by("-seq")
        .values_list("seq", flat=True)[0]
    )


def sql(statement: str, *params: object) -> None:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)


@pytest.fixture
def world(two_accounts):
    """Every trail written through its service: two runs, acts, an erasure previewed and executed."""
    MailAccount.objects.update(answering_audit_enabled=True)
    billing, support = (MailAccount.objects.get(pk=folder.account_id) for folder in two_accounts)
    read = [
        RetrievedEmail(account_pk=email.folder.account_id, email_id=str(email.pk), cited=n == 0)
        for n, email in enumerate(Email.objects.select_related("folder").order_by("pk"))
    ]
    run([billing, support], emails=read)
    run([billing])
    act(billing)
    act(support)
    executed = request_erasure([SECOND_ADDRESS], requester=OFFICER)
    execute_erasure_request(executed.request_id, [SECOND_ADDRESS], requester=REVIEWER)
    request_erasure([PERSON], requester=OFFICER)  # left previewed
    return billing, support


pytestmark = pytest.mark.django_db


def test_entries_written_through_the_services_verify_clean_with_a_link_each(world):
    found = reports()
    assert set(found) >= {"answering", "mutation", "erasure"}
    for trail in ("answering", "mutation", "erasure"):
        assert found[trail].ok, found[trail].first_break
        assert found[trail].entries > 0 and found[trail].head_seq >= found[trail].entries
    # The executed request was linked twice (previewed, then executed); the erased email left
    # the run that read it, which re-linked that run's entry.
    executed = ErasureRequestRecord.objects.get(status=ErasureStatus.EXECUTED)
    assert TrailLink.objects.filter(trail="erasure", entry_pk=str(executed.pk)).count() == 2
    assert TrailLink.objects.filter(trail="answering", note="part_changed").exists()
    assert AnsweringRunEntry.objects.count() == 3 and MutationEntry.objects.count() == 3


UPDATES = {
    "answering": (
        "UPDATE audit_answeringrunentry SET chat_alias = 'forged' WHERE id = %s",
        AnsweringRunEntry,
    ),
    "mutation": ("UPDATE audit_mutationentry SET requester = 'someone else' WHERE id = %s", MutationEntry),
    "erasure": (
        "UPDATE audit_erasurerequestrecord SET status = 'abandoned' WHERE id = %s",
        ErasureRequestRecord,
    ),
}


@pytest.mark.parametrize("trail", sorted(UPDATES))
def test_a_row_updated_by_sql_is_reported_by_its_link_and_primary_key(world, trail):
    statement, model = UPDATES[trail]
    target = model.objects.order_by("pk")[1]
    assert first_break(trail) is None

    sql(statement, target.pk)

    assert first_break(trail) == (latest_seq(trail, target.pk), str(target.pk), "content_changed")
    assert all(report.ok for name, report in reports().items() if name != trail)


def test_a_retrieved_email_row_updated_by_sql_is_reported_on_its_answering_entry(world):
    row = AnsweringRunEmail.objects.order_by("pk").first()

    sql("UPDATE audit_answeringrunemail SET cited = NOT cited WHERE id = %s", row.pk)

    assert first_break("answering") == (
        latest_seq("answering", row.entry_id),
        str(row.entry_id),
        "content_changed",
    )


def test_a_retrieved_email_row_deleted_by_sql_is_reported_while_one_erased_by_the_product_is_not(world):
    # The world's erasure already took an email out of a run, through the product: clean.
    assert TrailLink.objects.filter(trail="answering", note="part_changed").exists()
    assert first_break("answering") is None
    row = AnsweringRunEmail.objects.order_by("pk").first()

    sql("DELETE FROM audit_answeringrunemail WHERE id = %s", row.pk)

    assert first_break("answering") == (
        latest_seq("answering", row.entry_id),
        str(row.entry_id),
        "content_changed",
    )


@pytest.mark.parametrize("trail", sorted(UPDATES))
def test_a_row_deleted_by_sql_is_reported_as_missing(world, trail):
    _statement, model = UPDATES[trail]
    target = model.objects.order_by("pk")[0]
    seq = latest_seq(trail, target.pk)
    if trail == "answering":
        sql("DELETE FROM audit_answeringrunemail WHERE entry_id = %s", target.pk)
    through = ErasureRequestRecord.mutation_entries.through._meta.db_table
    column = {"mutation": "mutationentry_id", "erasure": "erasurerequestrecord_id"}.get(trail)
    if column:
        sql(f"DELETE FROM {through} WHERE {column} = %s", target.pk)

    sql(f"DELETE FROM {model._meta.db_table} WHERE id = %s", target.pk)

    assert first_break(trail) == (seq, str(target.pk), "entry_missing")


def test_a_row_inserted_by_sql_is_reported_as_unlinked(world):
    billing, _support = world
    sql(
        "INSERT INTO audit_mutationentry (kind, requester, requester_kind, account_id, account_identifier,"
        " message_id_hash, folder_alias, requested_at, outcome, counts, retention_days)"
        " VALUES ('draft_removed', 'ghost', 'user', %s, 'billing', '', '', now(), 'performed', '{}', 90)"
        " RETURNING id",
        billing.pk,
    )
    inserted = MutationEntry.objects.get(requester="ghost")

    assert first_break("mutation") == (None, str(inserted.pk), "unlinked_entry")


def test_a_link_edited_or_removed_by_sql_breaks_the_chain_there(world):
    links = list(TrailLink.objects.filter(trail="mutation").order_by("seq"))
    sql("UPDATE audit_traillink SET content_hash = %s WHERE id = %s", "0" * 64, links[1].pk)
    assert first_break("mutation") == (links[1].seq, links[1].entry_pk, "link_changed")

    sql("DELETE FROM audit_traillink WHERE id = %s", links[1].pk)
    assert first_break("mutation")[0] == links[1].seq  # a gap: link_missing (and the entry unlinked)
    assert first_break("mutation")[2] == "link_missing"


def test_links_cut_off_the_young_end_are_reported_against_the_head(world):
    last = TrailLink.objects.filter(trail="erasure").order_by("-seq").first()

    sql("DELETE FROM audit_traillink WHERE id = %s", last.pk)

    assert first_break("erasure")[0] == last.seq


def test_retention_leaves_verify_clean_writes_a_checkpoint_and_prunes_links(two_accounts):
    MailAccount.objects.update(
        answering_audit_enabled=True, answering_audit_retention_days=30, mutation_audit_retention_days=30
    )
    billing, support = (MailAccount.objects.get(pk=folder.account_id) for folder in two_accounts)
    # Per-account windows interleave: old and recent entries of both accounts, written in mixed order.
    for days in (40, 1, 35, 2):
        run([billing, support], ended_days_ago=days)
        act(billing, days_ago=days)
        act(support, days_ago=days)
    support.mutation_audit_retention_days = 365  # support keeps its acts longer
    support.save()
    before = TrailLink.objects.count()

    result = erase_expired_entries()

    assert result.answering_erased == 4 and result.mutations_erased == 2
    found = reports()
    assert all(report.ok for report in found.values()), {k: v.first_break for k, v in found.items()}
    assert TrailLink.objects.filter(kind=LinkKind.REMOVED, note="retention").count() == 6
    checkpoint = TrailLink.objects.get(trail="answering", kind=LinkKind.CHECKPOINT)
    assert found["answering"].checkpoint_seq == checkpoint.covers_seq > 0
    assert TrailLink.objects.count() < before + 6 + 2  # pruned behind the checkpoint
    # Evidence survives the compaction: an edit after retention is still reported.
    kept = MutationEntry.objects.order_by("pk").first()
    sql("UPDATE audit_mutationentry SET uid = 7 WHERE id = %s", kept.pk)
    assert first_break("mutation") == (latest_seq("mutation", kept.pk), str(kept.pk), "content_changed")


def test_retention_does_not_prune_past_a_row_deleted_by_sql(two_accounts):
    MailAccount.objects.update(mutation_audit_retention_days=30)
    billing = MailAccount.objects.get(pk=two_accounts[0].account_id)
    gone = act(billing, days_ago=1)
    act(billing, days_ago=40)
    sql("DELETE FROM audit_mutationentry WHERE id = %s", gone.pk)

    erase_expired_entries()

    assert first_break("mutation") == (latest_seq("mutation", gone.pk), str(gone.pk), "entry_missing")


def test_deleting_an_account_through_the_product_is_not_tampering(world):
    billing, _support = world

    billing.delete()

    assert all(report.ok for report in reports().values())
    assert TrailLink.objects.filter(trail="answering", kind=LinkKind.REMOVED, note="deleted").exists()


def test_a_rotated_ring_keeps_old_links_verifiable_while_the_old_key_is_in_it(world):
    billing, _support = world
    with override_settings(MAILFATHOM_KEYRING=f"{KEY_B},{KEY_A}"):
        assert all(report.ok for report in reports().values())
        act(billing)
        assert TrailLink.objects.filter(trail="mutation").values("key_id").distinct().count() == 2
        assert all(report.ok for report in reports().values())
    with override_settings(MAILFATHOM_KEYRING=KEY_B):  # the old key left the ring
        oldest = TrailLink.objects.filter(trail="mutation").order_by("seq").first()
        assert first_break("mutation") == (oldest.seq, oldest.entry_pk, "link_changed")


def test_the_command_prints_ok_and_exits_non_zero_naming_the_first_broken_row(world):
    out = StringIO()
    call_command("verify_trails", stdout=out)
    assert "mutation: ok" in out.getvalue() and "answering: ok" in out.getvalue()

    target = MutationEntry.objects.order_by("pk").first()
    sql("UPDATE audit_mutationentry SET counts = '{\"drafts\": 9}' WHERE id = %s", target.pk)
    out = StringIO()
    with pytest.raises(CommandError) as refused:
        call_command("verify_trails", stdout=out)

    assert refused.value.returncode == 1
    seq = latest_seq("mutation", target.pk)
    assert f"mutation: BROKEN at link {seq}, entry {target.pk}: content_changed" in out.getvalue()
    assert "erasure: ok" in out.getvalue()


def test_the_command_adopts_entries_written_before_the_chain(two_accounts):
    billing = MailAccount.objects.get(pk=two_accounts[0].account_id)
    act(billing)
    TrailLink.objects.all().delete()
    sql("UPDATE audit_trailhead SET seq = 0, chain_hash = ''")
    assert first_break("mutation")[2] == "unlinked_entry"

    call_command("verify_trails", "--adopt-unlinked", stdout=StringIO())

    assert all(report.ok for report in reports().values())
    assert set(TrailLink.objects.values_list("note", flat=True)) == {"adopted"}


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_do_not_fork_the_chain():
    account = MailAccountFactory(mutation_audit_enabled=True)
    first_written = threading.Event()
    errors: list[BaseException] = []

    def first() -> None:
        try:
            with transaction.atomic():
                act(account, requester="first")
                first_written.set()
                # Hold the transaction open while the second writer tries to append.
                threading.Event().wait(0.5)
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)
        finally:
            first_written.set()
            connection.close()

    def second() -> None:
        try:
            first_written.wait(5)
            with transaction.atomic():
                act(account, requester="second")
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)

    assert errors == []
    links = list(TrailLink.objects.filter(trail="mutation").order_by("seq").values_list("seq", "entry_pk"))
    assert [seq for seq, _pk in links] == [1, 2]
    by_requester = dict(MutationEntry.objects.values_list("requester", "pk"))
    assert [pk for _seq, pk in links] == [str(by_requester["first"]), str(by_requester["second"])]
    assert all(report.ok for report in chain.verify_trails())
