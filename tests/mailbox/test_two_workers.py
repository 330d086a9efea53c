"""Two worker processes synchronizing the same 20 accounts at once, one of them killed mid-run.

This is the multi-host layout of docs/operations/deployment.md ("Several machines") in
miniature: two separate Celery worker processes share one database and one broker (a Redis
of the test's own), and every account is queued twice so both workers contend for the same
folders. Folder leases are what keeps them apart: nothing may be stored twice. Then a second
round of mail arrives, one worker is sent SIGKILL while it holds a lease, and the other must
take the dead worker's folder over once the lease (MAILFATHOM_SYNC_LEASE_SECONDS, set to the
shortest allowed) expires, and finish every account.

No assertion is about speed: every wait has a deadline and what is asserted is state.
"""

from __future__ import annotations

import time
import uuid
from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.db.models import Count
from django.utils import timezone

from mailbox.models import Email, Folder
from mailbox.tasks import sync_account
from mailfathom.celery import app
from tests.celery_worker import Worker
from tests.mailbox.imap_support import MailUser, account_for, add_user
from tests.redis_server import RedisServer
from tests.support import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.dovecot, pytest.mark.slow]

ACCOUNTS = 20
FIRST_ROUND = 6  # messages per account before the first round
SECOND_ROUND = 2  # new messages per account before the second round
LARGE = 3  # accounts that also receive a backfill in the second round, so runs last a while
BACKFILL = 700
LEASE = 10  # the shortest lease the setting allows


def _message(account: int, n: int, padding: int = 0) -> bytes:
    body = "x" * padding
    return (
        f"From: sender{n}@example.org\r\nTo: user{account}@example.org\r\n"
        f"Subject: two workers {account}/{n}\r\nMessage-ID: <tw-{account}-{n}@example.org>\r\n\r\n"
        f"Message {n} of account {account}.\r\n{body}\r\n"
    ).encode()


def _enqueue(broker_url: str, account_pks: list[int], times: int) -> None:
    with app.connection_for_write(broker_url) as connection:
        for _ in range(times):
            for pk in account_pks:
                sync_account.apply_async((pk,), {"force": True}, connection=connection)


def _stored(account_pks: list[int]) -> dict[int, tuple[int, int]]:
    """Per account: (rows stored, distinct Message-IDs among them)."""
    rows = (
        Email.objects.filter(account_id__in=account_pks)
        .values("account_id")
        .annotate(total=Count("id"), distinct=Count("message_id", distinct=True))
    )
    found = {row["account_id"]: (row["total"], row["distinct"]) for row in rows}
    return {pk: found.get(pk, (0, 0)) for pk in account_pks}


def _complete(expected: dict[int, int]) -> bool:
    return all(total == expected[pk] for pk, (total, _) in _stored(list(expected)).items())


def _held() -> dict[int, tuple[uuid.UUID, object]]:
    """Folders whose lease is held now: pk -> (token, expiry)."""
    rows = Folder.objects.filter(lease_token__isnull=False).values_list(
        "pk", "lease_token", "lease_expires_at"
    )
    return {pk: (token, expires) for pk, token, expires in rows}


def test_two_workers_share_twenty_accounts_and_one_takes_over_from_the_other_killed(
    dovecot, tmp_path, mailfathom_settings
):
    mailfathom_settings(sync_lease_seconds=LEASE)
    users: list[MailUser] = [add_user(dovecot) for _ in range(ACCOUNTS)]
    accounts = []
    for index, user in enumerate(users):
        user.append("INBOX", [_message(index, n) for n in range(FIRST_ROUND)])
        accounts.append(account_for(user, account_id=f"two-workers-{index}"))
    pks = [account.pk for account in accounts]

    broker = RedisServer(tmp_path / "redis")
    broker.start()
    # The helper's short visibility timeout (5 s) stands in for a worker on another host
    # never coming back: its unacknowledged task is handed to the survivor a few seconds on.
    env = {"REDIS_URL": broker.url, "MAILFATHOM_SYNC_LEASE_SECONDS": str(LEASE)}
    first = Worker(tmp_path / "first.log", ("--pool", "solo", "--hostname", "first@%h"), **env)
    second = Worker(tmp_path / "second.log", ("--pool", "solo", "--hostname", "second@%h"), **env)
    logs = lambda: "first:\n" + first.output() + "\nsecond:\n" + second.output()  # noqa: E731
    try:
        # Round one: every account queued twice, both workers consuming.
        _enqueue(broker.url, pks, times=2)
        expected = dict.fromkeys(pks, FIRST_ROUND)
        wait_for(lambda: _complete(expected), 90, interval=0.2, message=logs)
        wait_for(lambda: not _held(), 30, interval=0.2, message=logs)
        for pk, (total, distinct) in _stored(pks).items():
            assert total == distinct == FIRST_ROUND, (pk, total, distinct)
        assert "succeeded" in first.output(10**7) and "succeeded" in second.output(10**7), logs()
        # The database refuses a second copy of a message outright.
        existing = Email.objects.filter(account_id=pks[0]).defer(None).first()  # every field: copied whole
        assert existing is not None
        existing.pk = None
        with pytest.raises(IntegrityError), transaction.atomic():
            existing.save(force_insert=True)

        # Round two: new mail everywhere, a backfill for a few, one pass each.
        for index, user in enumerate(users):
            extra = [_message(index, n) for n in range(FIRST_ROUND, FIRST_ROUND + SECOND_ROUND)]
            if index < LARGE:
                extra += [_message(index, n, padding=2000) for n in range(1000, 1000 + BACKFILL)]
            user.append("INBOX", extra)
        expected = {
            pk: FIRST_ROUND + SECOND_ROUND + (BACKFILL if index < LARGE else 0)
            for index, pk in enumerate(pks)
        }
        large_inboxes = set(
            Folder.objects.filter(account_id__in=pks[:LARGE], remote_name="INBOX").values_list(
                "pk", flat=True
            )
        )
        _enqueue(broker.url, pks, times=1)

        # Each solo worker runs one folder at a time, so two leases held at once means both
        # workers are inside a run; one of them in a backfill, which lasts a while.
        wait_for(
            lambda: len(_held()) == 2 and bool(set(_held()) & large_inboxes),
            60,
            interval=0.02,
            message=logs,
        )
        first.kill()
        killed_at = timezone.now()
        at_kill = _held()
        # A lease is never granted for longer than the setting, so whatever the dead worker held
        # is free for another run at most LEASE seconds after its last renewal.
        for _pk, (_token, expires) in at_kill.items():
            assert expires <= killed_at + timedelta(seconds=LEASE), at_kill

        # The survivor finishes everything; watch what the dead worker left behind meanwhile.
        # (The survivor may still be running a duplicate pass at the end: its lease is live.)
        dead: dict[int, uuid.UUID] = {}

        def abandoned() -> dict[int, uuid.UUID]:
            """Leases still held past their expiry: nobody renews them any more."""
            now = timezone.now()
            return {pk: token for pk, (token, expires) in _held().items() if expires < now}

        deadline = time.monotonic() + LEASE + 60
        while time.monotonic() < deadline:
            left = abandoned()
            dead.update({pk: token for pk, token in left.items() if at_kill.get(pk, (None,))[0] == token})
            if _complete(expected) and not left and dead:
                break
            time.sleep(0.05)
        assert _complete(expected), (_stored(pks), logs())
        assert dead, f"the killed worker held none of {at_kill}: {logs()}"
        assert not abandoned(), (_held(), logs())
        for pk, token in dead.items():
            folder = Folder.objects.get(pk=pk)
            assert folder.lease_token != token, "the dead worker's lease was never taken over"
            assert folder.last_committed_at is not None and folder.last_committed_at > killed_at
        for pk, (total, distinct) in _stored(pks).items():
            assert total == distinct == expected[pk], (pk, total, distinct)
        assert second.process.poll() is None, logs()
    finally:
        first.stop()
        second.stop()
        broker.stop()
