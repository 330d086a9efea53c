"""The closing flag pass asks a CONDSTORE server only for flags changed since a SELECT, and misses none."""

from __future__ import annotations

import pytest
from imapclient import IMAPClient

from mailbox.models import Folder
from mailbox.sync.engine import FlagQuery, _flag_queries, highest_modseq, synchronize_account
from tests.mailbox.imap_support import account_for, add_user, before_second_batch, local_state

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.dovecot]


def _message(n: int) -> bytes:
    head = [f"From: s{n}@example.org", "To: alice@example.org", f"Subject: flagged {n}"]
    head += [f"Message-ID: <flagged-{n}@example.org>", "Date: Mon, 2 Nov 2026 10:00:00 +0000"]
    return ("\r\n".join(head) + "\r\n\r\nhello\r\n").encode()


@pytest.fixture
def user(dovecot):
    return add_user(dovecot)


@pytest.fixture
def flag_fetches(monkeypatch):
    """Every FLAGS FETCH the engine sends on the real session: (its modifiers, how many answered)."""
    seen: list[tuple[list[str] | None, int]] = []
    fetch = IMAPClient.fetch

    def watched(self, messages, data, modifiers=None):
        answer = fetch(self, messages, data, modifiers)
        if list(data) == ["FLAGS"]:
            seen.append((modifiers, len(answer)))
        return answer

    monkeypatch.setattr(IMAPClient, "fetch", watched)
    return seen


def _flag(user, count: int, flag: str = "\\Flagged") -> None:
    with user.client() as other:
        other.select_folder("INBOX")
        other.add_flags(other.search(["ALL"])[:count], [flag])


def test_a_later_run_reads_only_the_flags_changed_since_the_last(user, flag_fetches):
    user.append("INBOX", [_message(n) for n in range(30)])
    account = account_for(user)
    synchronize_account(account.pk)
    # The server numbers its changes, and the run recorded the number its SELECT gave.
    assert Folder.objects.get(account=account, remote_name="INBOX").highest_modseq is not None
    _flag(user, 2)
    flag_fetches.clear()

    run = synchronize_account(account.pk, force=True)
    asked = [(modifiers, answered) for modifiers, answered in flag_fetches if answered]

    assert sum(folder.flags_updated for folder in run.folders) == 2
    assert local_state(account, "inbox") == user.state("INBOX")
    # Asked with CHANGEDSINCE, the server answered for the two changed messages only.
    assert len(asked) == 1 and asked[0][1] == 2
    assert asked[0][0] is not None and asked[0][0][0].startswith("CHANGEDSINCE ")


def test_a_flag_changed_during_the_run_on_mail_it_stored_is_read_before_it_ends(user, monkeypatch):
    user.append("INBOX", [_message(n) for n in range(30)])
    account = account_for(user)
    before_second_batch(monkeypatch, lambda: _flag(user, 3, "\\Seen"))  # the first batch's flags
    synchronize_account(account.pk)

    assert local_state(account, "inbox") == user.state("INBOX")


def test_without_a_usable_number_every_flag_is_read():
    # No HIGHESTMODSEQ from the server: everything, as before CONDSTORE.
    assert _flag_queries(50, 7, None) == [FlagQuery(0, None, None)]
    # The last complete run's number is unknown, or above this SELECT's (the server went
    # backwards): mail held before is read whole, this run's mail since this SELECT.
    for previous in (None, 12):
        assert _flag_queries(50, previous, 9) == [FlagQuery(0, 50, None), FlagQuery(50, None, 9)]
    assert _flag_queries(50, 7, 9) == [FlagQuery(0, 50, 7), FlagQuery(50, None, 9)]


def test_a_malformed_highest_modseq_costs_only_the_quick_flag_pass():
    for reported in (b"soon", None, -1, 2**63):
        assert highest_modseq({b"HIGHESTMODSEQ": reported}) is None
    assert highest_modseq({}) is None
    assert highest_modseq({b"HIGHESTMODSEQ": 42}) == 42
