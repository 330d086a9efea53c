"""Helpers for tests against the session's Dovecot: fresh users, seeded mail, server state
and the local copy's.

Each test gets a user of its own, so tests share one Dovecot without sharing a mailbox.
Dovecot re-reads its passwd-file when it changes, so a user appended here can log in at once.
"""

from __future__ import annotations

import subprocess
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from imapclient import IMAPClient

from accounts.models import FolderRole, Security
from tests.corpus import MAIL_SAMPLE
from tests.dovecot import POOL, DovecotServer
from tests.factories import FolderMappingFactory, MailAccountFactory

_unused = iter(POOL)


@dataclass
class MailUser:
    server: DovecotServer
    name: str
    password: str

    def client(self, host: str | None = None, port: int | None = None) -> IMAPClient:
        client = IMAPClient(
            host or self.server.host, port=port or self.server.imap_port, ssl=False, timeout=30
        )
        client.login(self.name, self.password)
        return client

    def append(self, folder: str, messages: list[bytes], flags: tuple[str, ...] = ()) -> None:
        with self.client() as client:
            for start in range(0, len(messages), 50):
                client.multiappend(folder, [{"msg": m, "flags": flags} for m in messages[start : start + 50]])

    def state(self, folder: str) -> dict[int, tuple[str, ...]]:
        """Return the server's UIDs in `folder` with their flags (read-only)."""
        with self.client() as client:
            client.select_folder(folder, readonly=True)
            uids = client.search(["ALL"])
            if not uids:
                return {}
            answer = client.fetch(uids, ["FLAGS"])
            return {uid: _flags(info[b"FLAGS"]) for uid, info in answer.items()}

    def uidvalidity(self, folder: str) -> int:
        with self.client() as client:
            return int(client.select_folder(folder, readonly=True)[b"UIDVALIDITY"])

    def doveadm(self, *args: str) -> None:
        subprocess.run(
            ["doveadm", "-c", str(self.server.root / "dovecot.conf"), *args],
            check=True,
            capture_output=True,
            timeout=30,
        )


def _flags(raw) -> tuple[str, ...]:
    decoded = (f.decode() if isinstance(f, bytes) else str(f) for f in raw)
    return tuple(sorted(flag for flag in decoded if flag != "\\Recent"))


def add_user(server: DovecotServer) -> MailUser:
    """Hand out the next unused user of the server's pool (tests/dovecot.POOL)."""
    try:
        name = next(_unused)
    except StopIteration:
        pytest.fail("tests/dovecot.POOL has no unused user left: make the pool larger")
    return MailUser(server, name, POOL[name])


def account_for(user: MailUser, *, port: int | None = None, **fields):
    """A MailAccount reaching `user` over plain IMAP on loopback, mapping INBOX, Sent and Junk."""
    account = MailAccountFactory(
        imap_host=user.server.host,
        imap_port=port or user.server.imap_port,
        security=Security.NONE,
        username=user.name,
        **fields,
    )
    account.set_credential(user.password)
    account.save()
    FolderMappingFactory(account=account, alias="inbox", remote_name="INBOX", role=FolderRole.INBOX)
    FolderMappingFactory(account=account, alias="sent", remote_name="Sent", role=FolderRole.SENT)
    FolderMappingFactory(account=account, alias="junk", remote_name="Junk", role=FolderRole.JUNK)
    return account


def corpus_messages(group_prefix: str, limit: int) -> list[bytes]:
    """Read up to `limit` messages of one group of the vendored sample, in archive order."""
    found: list[bytes] = []
    with tarfile.open(MAIL_SAMPLE) as archive:
        for member in archive:
            if len(found) >= limit:
                break
            if member.isfile() and member.name.lstrip("./").startswith(group_prefix):
                handle = archive.extractfile(member)
                if handle is not None:
                    found.append(handle.read())
    if len(found) < limit:
        pytest.fail(f"tests/data's sample has fewer than {limit} messages under {group_prefix}")
    return found


def local_state(account, alias: str) -> dict[int, tuple[str, ...]]:
    from mailbox.models import Email

    rows = Email.objects.filter(account=account, folder__mapping__alias=alias)
    return {uid: tuple(sorted(flags)) for uid, flags in rows.values_list("uid", "flags")}


def stored_twice(account) -> int:
    """How many (folder, uidvalidity, uid) keys of the account have more than one Email row.

    Every sync, rerun and import must leave 0: a message is stored once however often it is read.
    """
    from django.db.models import Count

    from mailbox.models import Email

    keys = Email.objects.filter(account=account).values("folder", "uidvalidity", "uid")
    return keys.annotate(n=Count("id")).filter(n__gt=1).count()


def before_second_batch(monkeypatch, act: Callable[[], None], batch_size: int = 10) -> None:
    """Run `act` (another client's changes) once, mid-run: as the second batch of
    `batch_size` is about to be stored, after the first batch's flags were read."""
    from mailbox.sync import engine

    monkeypatch.setattr(engine, "BATCH_SIZE", batch_size)
    store = engine.store_prepared
    calls = {"n": 0}

    def meddle(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            act()
        return store(*args, **kwargs)

    monkeypatch.setattr(engine, "store_prepared", meddle)


def iter_cut_points(total: int, count: int) -> Iterator[int]:
    step = max(total // (count + 1), 1)
    for index in range(1, count + 1):
        yield index * step
