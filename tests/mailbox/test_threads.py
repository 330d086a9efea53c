"""Threads: a JWZ-style join over Message-ID, In-Reply-To and References, across folders.

Mail comes in through store_messages (the door synchronization and import share), on real
PostgreSQL; one test runs a real synchronization against Dovecot.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command

from accounts.models import FolderRole
from mailbox.models import Direction, Email
from mailbox.services.store import IncomingMessage, store_messages
from mailbox.services.threads import thread_of, thread_unthreaded, unthreaded_count
from mailbox.sync.engine import synchronize_account
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder
from tests.mailbox.imap_support import account_for, add_user

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
_uids = iter(range(1, 1_000_000))


def _raw(name: str, *, message_id: str | None = None, in_reply_to: str = "", references: str = "") -> bytes:
    lines = [f"From: Person <{name}@example.org>", "To: shop@example.org", f"Subject: {name}"]
    if message_id is None:
        message_id = f"{name}@example.org"
    if message_id:
        lines.append(f"Message-ID: <{message_id}>")
    if in_reply_to:
        lines.append(f"In-Reply-To: <{in_reply_to}>")
    if references:
        lines.append("References: " + " ".join(f"<{ref}>" for ref in references.split()))
    return ("\r\n".join(lines) + "\r\n\r\nhello\r\n").encode()


def _store(folder, raw: bytes, minutes: int) -> Email:
    uid = next(_uids)
    message = IncomingMessage(
        uidvalidity=1, uid=uid, size=len(raw), received_at=T0 + timedelta(minutes=minutes), raw=raw
    )
    store_messages(folder, [message])
    return Email.objects.get(folder=folder, uid=uid)


@pytest.fixture
def account():
    return MailAccountFactory(username="shop@example.org")


@pytest.fixture
def inbox(account):
    return mapped_folder(account, "inbox", role=FolderRole.INBOX)


@pytest.fixture
def sent(account):
    return mapped_folder(account, "sent", role=FolderRole.SENT)


def _thread(email: Email) -> list[str]:
    email.refresh_from_db()
    return [e.subject for e in thread_of(email)]


def test_a_reply_chain_across_inbox_and_sent_is_one_thread_oldest_first(inbox, sent):
    question = _store(inbox, _raw("question"), 0)
    answer = _store(
        sent, _raw("answer", in_reply_to="question@example.org", references="question@example.org"), 5
    )
    again = _store(
        inbox,
        _raw("again", in_reply_to="answer@example.org", references="question@example.org answer@example.org"),
        9,
    )

    assert answer.direction == Direction.OUTGOING
    assert question.thread_id == answer.thread_id == again.thread_id
    assert _thread(answer) == ["question", "answer", "again"]


def test_a_reply_stored_before_its_parent_joins_when_the_parent_arrives(inbox, sent):
    answer = _store(sent, _raw("answer", in_reply_to="question@example.org"), 5)
    question = _store(inbox, _raw("question"), 0)

    assert question.thread_id == answer.thread_id
    assert _thread(answer) == ["question", "answer"]


def test_a_late_message_linking_two_threads_merges_them_into_the_larger(inbox, sent):
    root_a = _store(inbox, _raw("a1"), 0)
    _store(inbox, _raw("a2", references="a1@example.org"), 1)
    _store(inbox, _raw("a3", references="a1@example.org a2@example.org"), 2)
    root_b = _store(inbox, _raw("b1"), 3)
    assert root_a.thread_id != root_b.thread_id

    link = _store(sent, _raw("link", references="b1@example.org a3@example.org"), 4)

    assert Email.objects.filter(thread_id=root_a.thread_id).count() == 5  # the smaller (b) re-pointed
    assert link.thread_id == root_a.thread_id
    assert _thread(root_b) == ["a1", "a2", "a3", "b1", "link"]


def test_messages_without_any_id_are_threads_of_their_own(inbox):
    one = _store(inbox, _raw("one", message_id=""), 0)
    two = _store(inbox, _raw("two", message_id=""), 1)

    assert one.thread_id and two.thread_id and one.thread_id != two.thread_id
    assert one.thread_id == one.id
    assert _thread(one) == ["one"]


def test_a_reply_naming_a_parent_but_no_own_id_joins_the_parent(inbox, sent):
    parent = _store(inbox, _raw("parent"), 0)
    reply = _store(sent, _raw("reply", message_id="", in_reply_to="parent@example.org"), 1)

    assert reply.thread_id == parent.thread_id


def test_unknown_references_are_placeholders_that_join_the_messages_naming_them(inbox):
    # Neither message is stored locally as an ancestor: they meet at the placeholder.
    first = _store(inbox, _raw("first", references="lost-root@example.org"), 0)
    second = _store(inbox, _raw("second", references="lost-root@example.org other-unknown@example.org"), 1)
    unrelated = _store(inbox, _raw("unrelated", references="elsewhere@example.org"), 2)

    assert first.thread_id == second.thread_id
    assert unrelated.thread_id != first.thread_id


def test_one_batch_holding_a_whole_chain_is_one_thread(inbox):
    messages = [
        IncomingMessage(uidvalidity=1, uid=next(_uids), size=1, received_at=T0, raw=_raw("p")),
        IncomingMessage(
            uidvalidity=1, uid=next(_uids), size=1, received_at=T0, raw=_raw("q", references="p@example.org")
        ),
        IncomingMessage(
            uidvalidity=1, uid=next(_uids), size=1, received_at=T0, raw=_raw("r", in_reply_to="q@example.org")
        ),
        IncomingMessage(uidvalidity=1, uid=next(_uids), size=1, received_at=T0, raw=_raw("s")),
    ]
    store_messages(inbox, messages)

    threads = dict(Email.objects.filter(folder=inbox).values_list("subject", "thread_id"))
    assert threads["p"] == threads["q"] == threads["r"] != threads["s"]


def test_threads_stay_within_one_account(inbox):
    other = mapped_folder(MailAccountFactory(), "inbox", role=FolderRole.INBOX)
    mine = _store(inbox, _raw("question"), 0)
    theirs = _store(other, _raw("reply", references="question@example.org"), 1)

    assert mine.thread_id != theirs.thread_id


def test_thread_of_leaves_out_folders_hidden_from_tools_unless_asked(account, inbox):
    hidden = mapped_folder(account, "private", visible_to_tools=False)
    question = _store(inbox, _raw("question"), 0)
    _store(hidden, _raw("aside", references="question@example.org"), 1)

    assert _thread(question) == ["question"]
    assert [e.subject for e in thread_of(question, visible_only=False)] == ["question", "aside"]


# --- the backfill ---------------------------------------------------------------------


def _unthreaded(folder, subject: str, minutes: int, message_id: str, references: list[str] = ()) -> Email:
    email = EmailFactory(
        folder=folder,
        subject=subject,
        message_id=message_id,
        references=list(references),
        received_at=T0 + timedelta(minutes=minutes),
    )
    assert email.thread_id is None  # as mail stored before threading existed
    return email


def test_the_backfill_threads_stored_mail_in_batches_and_is_idempotent(account, inbox, sent):
    a = _unthreaded(inbox, "a", 0, "a@x")
    b = _unthreaded(sent, "b", 1, "b@x", ["a@x"])
    c = _unthreaded(inbox, "c", 2, "c@x", ["a@x", "b@x"])
    d = _unthreaded(inbox, "d", 3, "d@x", ["unknown@x"])
    e = _unthreaded(inbox, "e", 4, "e@x", ["unknown@x"])
    f = _unthreaded(inbox, "f", 5, "f@x")
    # Batches of two split the chain a-b-c and the placeholder pair d-e across transactions.
    while thread_unthreaded(account.pk, batch_size=2):
        pass

    for row in (a, b, c, d, e, f):
        row.refresh_from_db()
    assert a.thread_id == b.thread_id == c.thread_id
    assert d.thread_id == e.thread_id != a.thread_id
    assert f.thread_id not in (a.thread_id, d.thread_id)
    before = dict(Email.objects.values_list("id", "thread_id"))

    out = StringIO()
    call_command("thread_mail", "--no-progress", stdout=out)

    assert "0 emails threaded" in out.getvalue()
    assert dict(Email.objects.values_list("id", "thread_id")) == before


def test_the_backfill_command_threads_every_account_and_an_interrupted_run_resumes(
    account, inbox, monkeypatch
):
    for n in range(5):
        _unthreaded(inbox, f"m{n}", n, f"m{n}@x", [f"m{n - 1}@x"] if n else [])
    other = mapped_folder(MailAccountFactory(), "inbox")
    _unthreaded(other, "the other account's mail", 0, "m0@x")

    from mailbox.services import threads

    real = threads.thread_unthreaded
    calls = {"n": 0}

    def interrupted(account_pk, *, batch_size):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(account_pk, batch_size=batch_size)

    monkeypatch.setattr("mailbox.management.commands.thread_mail.thread_unthreaded", interrupted)
    out = StringIO()
    with pytest.raises(SystemExit):
        call_command("thread_mail", "--no-progress", "--batch-size", "2", stdout=out)
    assert "Stopped: 2 emails threaded" in out.getvalue()
    assert unthreaded_count() == 4  # the finished batch stays committed

    monkeypatch.undo()
    out = StringIO()
    call_command("thread_mail", "--no-progress", "--batch-size", "2", stdout=out)

    assert "4 emails threaded" in out.getvalue()
    assert unthreaded_count() == 0
    assert Email.objects.filter(folder=inbox).values("thread_id").distinct().count() == 1
    assert Email.objects.get(folder=other).thread_id != Email.objects.filter(folder=inbox).first().thread_id


def test_new_mail_joins_a_thread_the_backfill_made(account, inbox, sent):
    old = _unthreaded(inbox, "old", 0, "old@x")
    call_command("thread_mail", "--no-progress", stdout=StringIO())
    old.refresh_from_db()

    reply = _store(sent, _raw("reply", references="old@x"), 1)

    assert reply.thread_id == old.thread_id


@pytest.mark.django_db(transaction=True)
@pytest.mark.dovecot
def test_synchronization_threads_a_conversation_across_inbox_and_sent(dovecot):
    user = add_user(dovecot)
    user.append(
        "INBOX", [_raw("question"), _raw("again", references="question@example.org answer@example.org")]
    )
    user.append("Sent", [_raw("answer", references="question@example.org")])
    account = account_for(user)

    synchronize_account(account.pk)

    threads = dict(Email.objects.filter(account=account).values_list("subject", "thread_id"))
    assert len(threads) == 3 and len(set(threads.values())) == 1


def test_content_filled_in_later_brings_its_email_into_its_thread(inbox, sent):
    from mailbox.models import Availability
    from mailbox.services.store import fill_content

    question = _store(inbox, _raw("question"), 0)
    raw = _raw("answer", references="question@example.org")
    held = IncomingMessage(
        uidvalidity=1,
        uid=next(_uids),
        size=len(raw),
        received_at=T0 + timedelta(minutes=1),
        withheld=Availability.AWAITING_STORAGE_HEADROOM,
    )
    store_messages(sent, [held])
    answer = Email.objects.get(folder=sent, uid=held.uid)
    assert answer.thread_id == answer.id  # nothing known about it yet: a thread of its own

    assert fill_content(answer, raw)

    answer.refresh_from_db()
    assert answer.thread_id == question.thread_id
