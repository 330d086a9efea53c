"""IMAP synchronization against a real Dovecot: backfill, increments, expunge, flags, UIDVALIDITY."""

from __future__ import annotations

import pytest

from mailbox.models import Availability, Direction, Email, Folder, RawMessage, RepairRequest
from mailbox.sync.engine import synchronize_account
from tests.mailbox.imap_support import (
    account_for,
    add_user,
    before_second_batch,
    corpus_messages,
    local_state,
    stored_twice,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.dovecot]


def _message(n: int, body: str = "hello", **headers: str) -> bytes:
    lines = [f"From: Sender {n} <sender{n}@example.org>", "To: alice@example.org", f"Subject: message {n}"]
    lines += [f"Message-ID: <m{n}@example.org>", "Date: Mon, 2 Nov 2026 10:00:00 +0000"]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n" + body + "\r\n").encode()


@pytest.fixture
def user(dovecot):
    return add_user(dovecot)


def test_backfill_of_real_mail_equals_the_server_and_never_sets_seen(user):
    ham = corpus_messages("spamassassin/easy-ham-1/", 250)
    spam = corpus_messages("spamassassin/spam-1/", 60)
    user.append("INBOX", ham[:200])
    user.append("INBOX", ham[200:], flags=("\\Flagged",))
    user.append("Junk", spam)
    before = {"INBOX": user.state("INBOX"), "Junk": user.state("Junk")}
    account = account_for(user)

    run = synchronize_account(account.pk)

    assert run.failure_code is None
    assert local_state(account, "inbox") == before["INBOX"]
    assert local_state(account, "junk") == before["Junk"]
    assert len(before["INBOX"]) == 250 and len(before["Junk"]) == 60
    assert stored_twice(account) == 0
    assert {"INBOX": user.state("INBOX"), "Junk": user.state("Junk")} == before  # nothing changed
    assert not any("\\Seen" in flags for flags in before["INBOX"].values())
    assert RawMessage.objects.filter(email__account=account).count() == 310
    inbox = Folder.objects.get(account=account, remote_name="INBOX")
    assert inbox.last_committed_at is not None and inbox.highest_uid == max(before["INBOX"])


def test_second_run_picks_up_appended_mail_only(user):
    user.append("INBOX", [_message(n) for n in range(5)])
    account = account_for(user)
    synchronize_account(account.pk)
    first_ids = set(Email.objects.filter(account=account).values_list("id", flat=True))
    user.append("INBOX", [_message(n) for n in range(5, 8)])

    run = synchronize_account(account.pk, force=True)

    assert sum(f.stored for f in run.folders) == 3
    assert local_state(account, "inbox") == user.state("INBOX")
    assert first_ids <= set(Email.objects.filter(account=account).values_list("id", flat=True))


def test_expunged_mail_leaves_the_local_copy(user):
    user.append("INBOX", [_message(n) for n in range(6)])
    account = account_for(user)
    synchronize_account(account.pk)
    with user.client() as client:
        client.select_folder("INBOX")
        client.delete_messages(client.search(["SUBJECT", "message 2"]))
        client.expunge()

    synchronize_account(account.pk, force=True)

    assert local_state(account, "inbox") == user.state("INBOX")
    assert Email.objects.filter(account=account).count() == 5


def test_flag_changes_are_observed(user):
    user.append("INBOX", [_message(n) for n in range(3)])
    account = account_for(user)
    synchronize_account(account.pk)
    with user.client() as client:
        client.select_folder("INBOX")
        uids = client.search(["ALL"])
        client.add_flags(uids[:1], ["\\Seen", "\\Answered"])

    run = synchronize_account(account.pk, force=True)

    assert sum(f.flags_updated for f in run.folders) == 1
    assert local_state(account, "inbox") == user.state("INBOX")
    assert Email.objects.filter(account=account, flags_observed=False).count() == 0


def test_uidvalidity_change_drops_rows_of_the_old_value(user):
    user.append("INBOX", [_message(n) for n in range(4)])
    account = account_for(user)
    synchronize_account(account.pk)
    old = user.uidvalidity("INBOX")
    user.doveadm("mailbox", "update", "-u", user.name, "--uid-validity", str(old + 1000), "INBOX")

    run = synchronize_account(account.pk, force=True)

    inbox_run = next(f for f in run.folders if f.alias == "inbox")
    assert inbox_run.uidvalidity_changed
    assert not Email.objects.filter(account=account, uidvalidity=old).exists()
    assert set(Email.objects.filter(folder__remote_name="INBOX").values_list("uidvalidity", flat=True)) == {
        old + 1000
    }
    assert local_state(account, "inbox") == user.state("INBOX")


def test_message_over_the_size_limit_is_recorded_from_its_envelope_only(user):
    user.append("INBOX", [_message(1, body="x" * 5000), _message(2)])
    account = account_for(user, max_message_bytes=2048)

    synchronize_account(account.pk)

    big, small = Email.objects.filter(account=account).order_by("uid")
    assert big.availability == Availability.EXCEEDED_SIZE_LIMIT
    assert big.size_bytes > 5000
    assert big.attachment_count is None
    assert not RawMessage.objects.filter(email=big).exists()
    # Its envelope comes from the header block, fetched alone (BODY.PEEK[HEADER]<0.n>).
    assert (big.subject, big.sender_address, big.message_id) == (
        "message 1",
        "sender1@example.org",
        "m1@example.org",
    )
    assert big.sent_at is not None and big.sent_at.isoformat() == "2026-11-02T10:00:00+00:00"
    assert big.text_body == ""
    assert small.availability == Availability.AVAILABLE
    assert small.subject == "message 2", (small.parse_defects, small.text_body, small.sender_address)


def test_storage_ceiling_holds_content_back_until_there_is_room(user):
    user.append("INBOX", [_message(n, body=f"{n} " * 3000) for n in range(3)])
    account = account_for(user, storage_ceiling_bytes=1024 * 1024)
    account.storage_ceiling_bytes = 1  # below anything: every body waits for headroom
    type(account).objects.filter(pk=account.pk).update(storage_ceiling_bytes=1)

    synchronize_account(account.pk)
    assert set(Email.objects.filter(account=account).values_list("availability", flat=True)) == {
        Availability.AWAITING_STORAGE_HEADROOM
    }
    type(account).objects.filter(pk=account.pk).update(storage_ceiling_bytes=10 * 1024 * 1024)

    run = synchronize_account(account.pk, force=True)

    assert sum(f.refetched for f in run.folders) == 3
    assert set(Email.objects.filter(account=account).values_list("availability", flat=True)) == {
        Availability.AVAILABLE
    }
    assert RawMessage.objects.filter(email__account=account).count() == 3


def test_repair_request_is_fulfilled_by_the_next_run(user):
    user.append("INBOX", [_message(1)])
    account = account_for(user)
    synchronize_account(account.pk)
    email = Email.objects.get(account=account)
    RawMessage.objects.filter(email=email).delete()
    RepairRequest.objects.create(email=email)

    synchronize_account(account.pk, force=True)

    assert RawMessage.objects.filter(email=email).exists()
    assert not RepairRequest.objects.exists()


def test_sent_folder_mail_is_outgoing_and_bulk_is_decided_at_sync(user):
    user.append("Sent", [_message(1)])
    user.append("INBOX", [_message(2, List_Id="<news.example.org>"), _message(3, Auto_Submitted="no")])
    account = account_for(user)

    synchronize_account(account.pk)

    sent = Email.objects.get(folder__remote_name="Sent")
    assert sent.direction == Direction.OUTGOING
    by_subject = {e.subject: e for e in Email.objects.filter(folder__remote_name="INBOX")}
    assert by_subject["message 2"].is_bulk and by_subject["message 2"].direction == Direction.INCOMING
    assert not by_subject["message 3"].is_bulk


def test_folder_whose_mapping_is_removed_is_no_longer_synchronized(user):
    user.append("Junk", [_message(1)])
    account = account_for(user)
    synchronize_account(account.pk)
    account.folders.get(alias="junk").delete()
    user.append("Junk", [_message(2)])

    synchronize_account(account.pk, force=True)

    junk = Folder.objects.get(account=account, remote_name="Junk")
    assert junk.mapping is None
    assert junk.emails.count() == 1  # kept, but nothing new arrives and no read reaches it


def test_wrong_password_is_recorded_per_folder_as_a_code_and_backs_off(user):
    account = account_for(user)
    account.set_credential("wrong")
    account.save()

    run = synchronize_account(account.pk)

    assert run.failure_code == 61002
    folders = Folder.objects.filter(account=account)
    assert {f.last_failure_code for f in folders} == {61002}
    assert all(f.backoff_until is not None for f in folders)
    assert synchronize_account(account.pk).skipped == "no folder is due"


def test_a_run_that_finds_the_lease_taken_skips_the_folder(user):
    user.append("INBOX", [_message(1)])
    account = account_for(user)
    synchronize_account(account.pk)
    inbox = Folder.objects.get(account=account, remote_name="INBOX")
    from mailbox.sync.folder_state import acquire_lease

    assert acquire_lease(inbox) is not None
    user.append("INBOX", [_message(2)])
    run = synchronize_account(account.pk, force=True)

    inbox_run = next(f for f in run.folders if f.alias == "inbox")
    assert inbox_run.skipped_locked and inbox_run.stored == 0
    assert Email.objects.filter(folder=inbox).count() == 1


def test_changes_made_by_another_client_during_a_run_converge_on_the_next(user, monkeypatch):
    user.append("INBOX", [_message(n) for n in range(30)])
    account = account_for(user)

    def meddle() -> None:
        with user.client() as other:
            other.select_folder("INBOX")
            uids = other.search(["ALL"])
            other.add_flags(uids[:3], ["\\Flagged"])
            other.delete_messages(uids[3:5])
            other.expunge()
            other.append("INBOX", _message(99))

    before_second_batch(monkeypatch, meddle)
    synchronize_account(account.pk)
    synchronize_account(account.pk, force=True)

    assert local_state(account, "inbox") == user.state("INBOX")
    assert stored_twice(account) == 0
