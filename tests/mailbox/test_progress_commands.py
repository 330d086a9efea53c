"""Long work in the terminal: import_mail, synchronize and embed draw progress with rate and
remaining time, and Ctrl-C stops them keeping every committed batch.

Against the real PostgreSQL, the session's Dovecot and the scripted OpenAI-compatible server.
Ctrl-C is a KeyboardInterrupt raised from the progress renderer, our own seam, the moment a
batch has been reported committed: what a real Ctrl-C between two batches does. A re-run
then completes with nothing stored twice.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from mailbox.models import Email, Folder, Passage
from mailbox.services import importer
from mailbox.sync import engine
from mailfathom.core.progress import INTERRUPTED, Progress, TerminalProgress
from tests.configure import configure, scripted_embeddings
from tests.factories import FolderMappingFactory, MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder
from tests.mailbox.imap_support import account_for, add_user, local_state, stored_twice
from tests.mcp.servers import ROOT, server_env
from tests.support import isolated_provider_health, wait_for

# A tqdm line with a known total: percentage, rate and the time left ("<00:03").
BAR = re.compile(r"100%\|.*\| .*\[\d\d:\d\d<\d\d:\d\d, +[\d.]+ ?\w*(?:msg|B)/s")


def _message(n: int) -> bytes:
    return (
        f"From: Sender {n} <sender{n}@example.org>\r\nTo: alice@example.org\r\nSubject: progress {n}\r\n"
        f"Message-ID: <progress-{n}@example.org>\r\nDate: Mon, 2 Nov 2026 10:00:00 +0000\r\n\r\n"
        f"Body of message {n}.\r\n"
    ).encode()


def _run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def _interrupt_after_committed(monkeypatch, at_least: int) -> list[Progress]:
    """Make the renderer raise KeyboardInterrupt once `at_least` units are reported done."""
    seen: list[Progress] = []
    render = TerminalProgress.__call__

    def interrupting(self, event: Progress) -> None:
        seen.append(event)
        render(self, event)
        if event.done >= at_least:
            raise KeyboardInterrupt

    monkeypatch.setattr(TerminalProgress, "__call__", interrupting)
    return seen


def _interrupted(*args: str) -> None:
    with pytest.raises(CommandError) as stopped:
        _run(*args)
    assert stopped.value.returncode == 130
    assert str(stopped.value) == INTERRUPTED


# --- import_mail -------------------------------------------------------------------------


@pytest.fixture
def archive_account(db):
    account = MailAccountFactory(account_id="importer")
    FolderMappingFactory(account=account, alias="archive", remote_name="Archive")
    return account


def _mbox(messages: list[bytes]) -> bytes:
    return b"".join(b"From MAILER-DAEMON Mon Jan  1 00:00:00 2024\n" + m + b"\n" for m in messages)


def _tree(root: Path) -> int:
    """A tree of two Maildirs, two mbox files and loose .eml files; returns the messages in it."""
    numbers = iter(range(1000))
    for maildir in ("Work/cur", "Private/Trips/new"):
        (root / maildir).mkdir(parents=True)
        for _ in range(3):
            n = next(numbers)
            (root / maildir / f"{n}.host:2,S").write_bytes(_message(n))
    (root / "Takeout").mkdir()
    (root / "Takeout" / "All mail.mbox").write_bytes(_mbox([_message(next(numbers)) for _ in range(4)]))
    (root / "old.mbox").write_bytes(_mbox([_message(next(numbers)) for _ in range(2)]))
    (root / "loose").mkdir()
    for _ in range(2):
        n = next(numbers)
        (root / "loose" / f"{n}.eml").write_bytes(_message(n))
    (root / "Takeout" / "index.msf").write_bytes(b"// not mail\n")  # passed over
    (root / ".DS_Store").write_bytes(b"\x00\x01")
    return next(numbers)


def test_import_mail_reads_a_whole_tree_in_one_invocation_with_a_progress_bar(archive_account, tmp_path):
    total = _tree(tmp_path / "export")

    out, err = _run("import_mail", "--account", "importer", "--folder", "archive", str(tmp_path / "export"))

    assert f"Read {total} messages: {total} stored" in out
    assert Email.objects.filter(account=archive_account).count() == total
    assert BAR.search(err), err
    assert f"{total} msg" in err
    assert (
        f"Read {total} messages: 0 stored, {total} already held"
        in _run(
            "import_mail",
            "--account",
            "importer",
            "--folder",
            "archive",
            str(tmp_path / "export"),
            "--no-progress",
        )[0]
    )


def test_import_mail_stopped_by_ctrl_c_keeps_its_batches_and_a_rerun_completes(
    archive_account, tmp_path, monkeypatch
):
    monkeypatch.setattr(importer, "BATCH_SIZE", 4)
    total = _tree(tmp_path / "export")
    seen = _interrupt_after_committed(monkeypatch, at_least=1)

    _interrupted("import_mail", "--account", "importer", "--folder", "archive", str(tmp_path / "export"))

    assert seen[-1].items == 4  # interrupted after the first committed batch
    assert Email.objects.filter(account=archive_account).count() == 4
    monkeypatch.undo()
    out, _ = _run("import_mail", "--account", "importer", "--folder", "archive", str(tmp_path / "export"))
    assert f"Read {total} messages: {total - 4} stored, 4 already held" in out
    assert Email.objects.filter(account=archive_account).count() == total
    assert stored_twice(archive_account) == 0


# --- synchronize -------------------------------------------------------------------------

sync = pytest.mark.django_db(transaction=True)


@pytest.fixture
def user(dovecot):
    return add_user(dovecot)


@sync
@pytest.mark.dovecot
def test_synchronize_draws_a_bar_per_folder_and_reports_what_it_stored(user, monkeypatch):
    monkeypatch.setattr(engine, "BATCH_SIZE", 10)
    user.append("INBOX", [_message(n) for n in range(25)])
    user.append("Sent", [_message(n) for n in range(100, 103)])
    account = account_for(user)

    out, err = _run("synchronize", account.account_id)

    assert "inbox: 25 stored" in out and "sent: 3 stored" in out and "junk: 0 stored" in out
    assert local_state(account, "inbox") == user.state("INBOX")
    assert re.search(r"inbox: +100%\|.*\| 25/25 \[", err), err
    assert BAR.search(err), err


@sync
@pytest.mark.dovecot
def test_synchronize_stopped_by_ctrl_c_keeps_its_batches_and_a_rerun_completes(user, monkeypatch):
    monkeypatch.setattr(engine, "BATCH_SIZE", 10)
    user.append("INBOX", [_message(n) for n in range(35)])
    account = account_for(user)
    seen = _interrupt_after_committed(monkeypatch, at_least=1)

    _interrupted("synchronize", account.account_id)

    assert (seen[-1].label, seen[-1].done) == ("inbox", 10)
    inbox = Folder.objects.get(account=account, remote_name="INBOX")
    assert Email.objects.filter(folder=inbox).count() == 10
    assert inbox.lease_token is None  # released on the way out: the next run is not locked out
    monkeypatch.undo()
    out, _ = _run("synchronize", account.account_id, "--no-progress")
    assert "inbox: 25 stored" in out
    assert local_state(account, "inbox") == user.state("INBOX")
    assert stored_twice(account) == 0


@sync
@pytest.mark.dovecot
def test_synchronize_exits_non_zero_naming_the_code_when_a_folder_fails(user):
    user.append("INBOX", [_message(1)])
    account = account_for(user)
    FolderMappingFactory(account=account, alias="ghost", remote_name="Nowhere")
    out, err = StringIO(), StringIO()

    with pytest.raises(CommandError, match=r"Some folders failed \(610\d\d"):
        call_command("synchronize", account.account_id, "--no-progress", stdout=out, stderr=err)

    assert "inbox: 1 stored" in out.getvalue() and "ghost: 0 stored" in out.getvalue()
    assert re.search(r"ghost: .*; failed with 610\d\d\.", out.getvalue())


def test_synchronize_names_an_unknown_account(db):
    with pytest.raises(CommandError, match="No account has that identifier"):
        _run("synchronize", "nobody")


# --- embed -------------------------------------------------------------------------------


@pytest.fixture
def backlog(db, settings, scripted):
    with isolated_provider_health(settings, "embed-command"):
        configure(settings, **scripted_embeddings(scripted, embedding_max_retries=0))
        folder = mapped_folder(MailAccountFactory(account_id="embedder"), "inbox")
        yield [EmailFactory(folder=folder, subject=f"subject {n}", body=f"body {n}") for n in range(7)]


def test_embed_works_through_the_backlog_with_a_progress_bar(backlog):
    out, err = _run("embed", "--batch-size", "2")

    assert "Embedded 7 emails in 4 batches" in out
    assert Passage.objects.filter(email__in=backlog).count() == 7
    assert re.search(r"embedding: +100%\|.*\| 7/7 \[", err), err
    assert BAR.search(err), err
    assert "Nothing to embed" in _run("embed")[0]


def test_embed_stopped_by_ctrl_c_keeps_its_batches_and_a_rerun_completes(backlog, monkeypatch):
    seen = _interrupt_after_committed(monkeypatch, at_least=4)

    _interrupted("embed", "--batch-size", "2")

    assert seen[-1].done == 4
    assert Email.objects.filter(pk__in=[e.pk for e in backlog], embedded=True).count() == 4
    monkeypatch.undo()
    out, _ = _run("embed", "--batch-size", "2", "--no-progress")
    assert "Embedded 3 emails in 2 batches" in out
    assert Passage.objects.filter(email__in=backlog).count() == 7
    assert Passage.objects.filter(email__in=backlog).values("email").distinct().count() == 7


def test_embed_says_when_no_provider_is_configured(db, settings):
    configure(settings, embedding_provider="none")

    with pytest.raises(CommandError, match="No embedding provider is configured"):
        _run("embed")


def test_embed_refuses_while_a_worker_holds_the_sweep(backlog):
    from mailbox.services.reembedding import SWEEP_KEY
    from mailfathom.core.redis_store import redis_client

    client = redis_client()
    client.set(SWEEP_KEY, "worker", ex=60)
    try:
        with pytest.raises(CommandError, match="Another embedding sweep is running"):
            _run("embed")
    finally:
        client.delete(SWEEP_KEY)
    assert not Email.objects.filter(pk__in=[e.pk for e in backlog], embedded=True).exists()


# --- a real Ctrl-C -----------------------------------------------------------------------


MESSAGES = 3000


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_real_sigint_mid_import_exits_130_keeping_whole_batches_only(tmp_path):
    account = MailAccountFactory(account_id="interrupted")
    FolderMappingFactory(account=account, alias="archive", remote_name="Archive")
    root = tmp_path / "export"
    for n in range(MESSAGES):
        directory = root / f"part-{n // 500}"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"{n}.eml").write_bytes(_message(n))
    held = Email.objects.filter(account=account)
    command = [sys.executable, "manage.py", "import_mail", "--account", "interrupted", "--folder", "archive"]
    process = subprocess.Popen(
        [*command, str(root)],
        cwd=ROOT,
        env=server_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # A shell's background job ignores SIGINT, and an ignored SIGINT is inherited: Python then
        # installs no KeyboardInterrupt handler. The command must hear Ctrl-C as a terminal gives it.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        # Ctrl-C once the first batch is committed, while later ones are being read and stored.
        wait_for(lambda: held.count() > 0 or process.poll() is not None, seconds=120)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()

    assert process.returncode == 130, err.decode()[-2000:]
    assert INTERRUPTED in err.decode()
    kept = held.count()
    assert 0 < kept < MESSAGES and kept % importer.BATCH_SIZE == 0  # the batch in flight was rolled back
    out, _ = _run(
        "import_mail", "--account", "interrupted", "--folder", "archive", str(root), "--no-progress"
    )
    assert f"Read {MESSAGES} messages: {MESSAGES - kept} stored, {kept} already held" in out
    assert held.count() == MESSAGES and stored_twice(account) == 0
