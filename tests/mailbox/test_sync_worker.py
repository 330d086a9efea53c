"""The sync task end to end: a real Celery worker process consuming from the real Redis.

The worker runs as a separate process, pointed at this test session's database, so what it
commits is what the test reads. One test kills it mid-run (SIGKILL, as an OOM killer or a
lost machine would) and checks the redelivered task converges to a clean run's rows.
"""

from __future__ import annotations

import pytest

from mailbox.models import Email, RawMessage
from mailbox.sync.engine import synchronize_account
from mailbox.tasks import sync_account
from tests.celery_worker import Worker
from tests.mailbox.imap_support import account_for, add_user, corpus_messages, local_state
from tests.support import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.dovecot, pytest.mark.slow]


@pytest.fixture
def user(dovecot):
    return add_user(dovecot)


def test_worker_consumes_the_sync_task_from_redis(user, tmp_path):
    user.append("INBOX", corpus_messages("spamassassin/easy-ham-1/", 40))
    account = account_for(user)
    worker = Worker(tmp_path / "worker.log")
    try:
        queued = sync_account.delay(account.pk)
        wait_for(
            lambda: local_state(account, "inbox") == user.state("INBOX"),
            60,
            interval=0.1,
            message=lambda: (
                "the worker did not synchronize:\n" + (tmp_path / "worker.log").read_text()[-3000:]
            ),
        )
    finally:
        worker.stop()
    # The rows are the worker's: it logged taking this very task from Redis and finishing it.
    assert f"mailbox.sync_account[{queued.id}] succeeded" in (tmp_path / "worker.log").read_text()


def test_worker_killed_mid_run_converges_to_a_clean_run(user, tmp_path):
    user.append("INBOX", corpus_messages("spamassassin/easy-ham-1/", 400))
    account = account_for(user)
    first = Worker(tmp_path / "first.log")
    try:
        sync_account.delay(account.pk)
        wait_for(
            lambda: Email.objects.filter(account=account).exists(),
            60,
            interval=0.1,
            message=lambda: (
                "the first worker stored nothing:\n" + (tmp_path / "first.log").read_text()[-3000:]
            ),
        )
        first.kill()
    finally:
        first.stop()
    partial = Email.objects.filter(account=account).count()
    second = Worker(tmp_path / "second.log")
    try:
        wait_for(
            lambda: local_state(account, "inbox") == user.state("INBOX"),
            90,
            interval=0.1,
            message=lambda: (
                f"no convergence after the kill ({partial} stored before it):\n"
                + (tmp_path / "second.log").read_text()[-3000:]
            ),
        )
    finally:
        second.stop()

    clean = account_for(user, account_id="clean-run", display_name="Clean run")
    synchronize_account(clean.pk)
    killed_rows = set(RawMessage.objects.filter(email__account=account).values_list("email__uid", "sha256"))
    clean_rows = set(RawMessage.objects.filter(email__account=clean).values_list("email__uid", "sha256"))
    assert killed_rows == clean_rows
    assert len(killed_rows) == 400
