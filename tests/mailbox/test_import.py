"""Importing mail archives (mbox, Google Takeout mbox, Maildir, .eml files) into a mapped folder.

Archives are written byte by byte here: the standard library's `mailbox` module is shadowed
by our app of the same name, and writing the bytes ourselves keeps every edge case visible.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tarfile
import zlib
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from mailbox.archive import read_archive
from mailbox.management.commands.import_mail import Command as ImportMailCommand
from mailbox.models import IMPORTED_UIDVALIDITY, Availability, Email, RawMessage
from mailbox.services.importer import import_archive
from tests.corpus import MAIL_SAMPLE, TORTURE
from tests.factories import FolderMappingFactory, MailAccountFactory
from tests.mailbox.imap_support import stored_twice

pytestmark = pytest.mark.django_db

# One pattern per number, so a phrase added to the summary line breaks no test.
SUMMARY = {
    "read": r"Read (\d+) messages?",
    "stored": r"(\d+) stored",
    "skipped": r"(\d+) already held",
    "withheld": r"(\d+) over the size limit",
    "defective": r"(\d+) with parse defects",
}


# --- building archives ----------------------------------------------------------------


def _message(
    n: int, body: str = "Hello.", *, eol: str = "\n", date: str | None = None, **headers: str
) -> bytes:
    lines = [f"From: Sender {n} <sender{n}@example.org>", "To: alice@example.org", f"Subject: message {n}"]
    lines.append(f"Message-ID: <import-{n}@example.org>")
    if date is not None:
        lines.append(f"Date: {date}")
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    text = "\n".join(lines) + "\n\n" + body.rstrip("\n") + "\n"
    return text.replace("\n", eol).encode()


def _mbox_stored_form(raw: bytes) -> bytes:
    """Return `raw` as an mbox can hold it: ending in a line end (mbox cannot express otherwise)."""
    if raw.endswith(b"\n"):
        return raw
    return raw + (b"\r\n" if b"\r\n" in raw else b"\n")


def _mboxrd(
    messages: list[bytes],
    *,
    eol: bytes = b"\n",
    separator: bytes = b"From MAILER-DAEMON Mon Jan  1 00:00:00 2024",
    escape: bool = True,
) -> bytes:
    """Write an mboxrd: a separator line, the message with "From " lines quoted, a blank line."""
    out = []
    for raw in messages:
        body = re.sub(rb"(?m)^(>*From )", rb">\1", raw) if escape else raw
        out.append(separator + eol + _mbox_stored_form(body) + eol)
    return b"".join(out)


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


@pytest.fixture
def account():
    account = MailAccountFactory(account_id="importer")
    FolderMappingFactory(account=account, alias="archive", remote_name="Archive")
    FolderMappingFactory(account=account, alias="takeout", remote_name="Takeout")
    return account


def _import(account, path: Path, alias: str = "archive") -> dict[str, int]:
    """Run the command as an operator would and return the numbers it printed."""
    out, err = StringIO(), StringIO()
    call_command(
        "import_mail",
        "--account",
        account.account_id,
        "--folder",
        alias,
        str(path),
        "--no-progress",
        stdout=out,
        stderr=err,
    )
    assert err.getvalue() == ""
    numbers = {}
    for key, pattern in SUMMARY.items():
        match = re.search(pattern, out.getvalue())
        assert match, (key, out.getvalue())
        numbers[key] = int(match.group(1))
    return numbers


def _emails(account, alias: str = "archive"):
    return Email.objects.filter(account=account, folder__mapping__alias=alias)


def _raw_of(email: Email) -> bytes:
    raw = RawMessage.objects.get(email=email)
    data = zlib.decompress(bytes(raw.compressed))
    assert hashlib.sha256(data).hexdigest() == raw.sha256
    return data


def _stored_raws(account, alias: str = "archive") -> list[bytes]:
    return sorted(_raw_of(email) for email in _emails(account, alias))


def _imported_twice(account, path: Path, count: int, alias: str = "archive") -> None:
    """Import `path` twice: `count` stored the first time, nothing the second."""
    first = _import(account, path, alias)
    assert first == {"read": count, "stored": count, "skipped": 0, "withheld": 0, "defective": 0}
    assert _emails(account, alias).count() == count
    second = _import(account, path, alias)
    assert second == {"read": count, "stored": 0, "skipped": count, "withheld": 0, "defective": 0}
    assert _emails(account, alias).count() == count
    assert set(_emails(account, alias).values_list("uidvalidity", flat=True)) == {IMPORTED_UIDVALIDITY}


# --- mbox -----------------------------------------------------------------------------


@pytest.mark.parametrize("eol", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_mboxrd_is_split_unescaped_and_imported_once(account, tmp_path, eol):
    quoted_from = _message(1, "Hi,\n\nFrom the start it was clear.\n\nBye.", eol=eol)
    already_quoted = _message(2, "A quote of mbox:\n\n>From here, one quote stays.", eol=eol)
    mid_paragraph = _message(3, "I wrote this line\nFrom my phone, without a blank line above.", eol=eol)
    plain = _message(4, "Nothing special.", eol=eol)
    messages = [quoted_from, already_quoted, mid_paragraph, plain]
    mbox = _mboxrd([quoted_from, already_quoted], eol=eol.encode())
    mbox += _mboxrd([mid_paragraph], eol=eol.encode(), escape=False)  # as mboxo writers leave it
    mbox += _mboxrd([plain], eol=eol.encode())
    path = _write(tmp_path / "archive.mbox", mbox)
    assert b"\n>From the start" in mbox and b"\n>>From here" in mbox

    _imported_twice(account, path, 4)

    assert _stored_raws(account) == sorted(messages)
    bodies = {e.subject: e.text_body for e in _emails(account)}
    assert "\nFrom the start it was clear." in bodies["message 1"]
    assert ">From here, one quote stays." in bodies["message 2"]
    assert ">>From" not in bodies["message 2"]
    assert "From my phone, without a blank line above." in bodies["message 3"]


def test_google_takeout_mbox_is_imported_once(account, tmp_path):
    labels = ["Inbox,Important,Opened", "Archived,Category Updates", "Sent,Opened"]
    messages = [
        _message(
            n,
            f"Takeout message {n}.\n\nFrom the desk of sender {n}.",
            eol="\r\n",
            date=f"Mon, 0{n} Jan 2024 08:00:00 +0000",
            X_GM_THRID=f"17{n:017d}",
            X_Gmail_Labels=labels[n - 1],
        )
        for n in (1, 2, 3)
    ]
    mbox = b"".join(
        _mboxrd(
            [raw],
            eol=b"\r\n",
            separator=f"From 17{n:017d}@xxx Mon Jan 0{n} 00:00:00 +0000 2024".encode(),
        )
        for n, raw in enumerate(messages, start=1)
    )
    path = _write(tmp_path / "All mail Including Spam and Trash.mbox", mbox)

    _imported_twice(account, path, 3, alias="takeout")

    assert _stored_raws(account, "takeout") == sorted(messages)
    stored = _emails(account, "takeout").order_by("received_at")
    assert [e.subject for e in stored] == ["message 1", "message 2", "message 3"]
    assert [e.received_at.day for e in stored] == [1, 2, 3]
    assert all("From the desk" in e.text_body for e in stored)


# --- Maildir and .eml -----------------------------------------------------------------


def test_maildir_cur_and_new_are_imported_once_with_their_flags(account, tmp_path):
    maildir = tmp_path / "Maildir"
    seen = _write(maildir / "cur" / "1700000000.M1P1.host:2,S", _message(1))
    flagged = _write(maildir / "cur" / "1700000001.M2P1.host:2,FS", _message(2))
    answered = _write(maildir / "cur" / "1700000002.M3P1.host:2,RS", _message(3))
    fresh = _write(maildir / "new" / "1700000003.M4P1.host", _message(4))
    _write(maildir / "tmp" / "1700000004.M5P1.host", _message(5))  # still being delivered
    _write(maildir / "cur" / ".hidden", _message(6))
    (maildir / "cur" / "subdir").mkdir()

    _imported_twice(account, maildir, 4)

    flags = {e.subject: sorted(e.flags) for e in _emails(account)}
    assert flags == {
        "message 1": ["\\Seen"],
        "message 2": ["\\Flagged", "\\Seen"],
        "message 3": ["\\Answered", "\\Seen"],
        "message 4": [],
    }
    assert _stored_raws(account) == sorted(f.read_bytes() for f in (seen, flagged, answered, fresh))


def test_folder_of_eml_files_is_read_recursively_and_imported_once(account, tmp_path):
    root = tmp_path / "export"
    files = [
        _write(root / "top.eml", _message(1)),
        _write(root / "2023" / "march" / "deep.eml", _message(2, eol="\r\n")),
        _write(root / "2023" / "LOUD.EML", _message(3)),
    ]
    _write(root / "2023" / "notes.txt", b"Not a message.\n")

    _imported_twice(account, root, 3)

    assert _stored_raws(account) == sorted(f.read_bytes() for f in files)


def test_single_eml_file_is_imported_once(account, tmp_path):
    path = _write(tmp_path / "one.eml", _message(1, date="Tue, 14 May 2024 09:30:00 +0200"))

    _imported_twice(account, path, 1)

    email = _emails(account).get()
    assert _raw_of(email) == path.read_bytes()
    assert email.received_at == datetime(2024, 5, 14, 7, 30, tzinfo=UTC)
    assert email.flags == []


# --- real mail --------------------------------------------------------------------------


def _without_final_line_end(raw: bytes) -> bytes:
    return raw.removesuffix(b"\r\n") if raw.endswith(b"\r\n") else raw.removesuffix(b"\n")


# The sample's mail is all LF-terminated SpamAssassin mail (tests/data/README.md), so the line
# ends other archives carry are made here, from real messages: CRLF, no final line end, both.
VARIANTS = {
    "crlf": lambda raw: re.sub(rb"\r?\n", b"\r\n", raw),
    "no-final-eol": _without_final_line_end,
    "crlf-no-final-eol": lambda raw: _without_final_line_end(re.sub(rb"\r?\n", b"\r\n", raw)),
}


@pytest.fixture(scope="module")
def real_mail() -> list[tuple[str, bytes]]:
    """300 real messages with Maildir names: 200 as the sample holds them (LF, "From " lines),
    and 100 spam messages rewritten to CRLF, to no final line end, or both."""
    wanted = {"spamassassin/easy-ham-1/": 100, "spamassassin/hard-ham-1/": 100, "spamassassin/spam-1/": 100}
    found: dict[str, list[tuple[str, bytes]]] = {group: [] for group in wanted}
    with tarfile.open(MAIL_SAMPLE) as archive:
        for member in archive:
            name = member.name.lstrip("./")
            group = next((g for g in wanted if name.startswith(g)), None)
            if group is None or not member.isfile() or len(found[group]) >= wanted[group]:
                continue
            handle = archive.extractfile(member)
            assert handle is not None
            found[group].append((Path(name).name, handle.read()))
    derived = []
    for n, (name, raw) in enumerate(found.pop("spamassassin/spam-1/")):
        kind = list(VARIANTS)[n % len(VARIANTS)]
        unique, _, info = name.partition(":")  # the Maildir flags ("2,S") stay after the colon
        derived.append((f"{unique}.{kind}:{info}", VARIANTS[kind](raw)))
    messages = [item for group in found.values() for item in group] + derived
    assert len(messages) == 300
    return messages


def test_real_mail_as_maildir_and_mbox_is_stored_byte_exact_and_once(account, tmp_path, real_mail):
    raws = [raw for _, raw in real_mail]
    assert len({hashlib.sha256(raw).digest() for raw in raws}) == 300
    assert any(re.search(rb"(?m)^>*From ", raw) for raw in raws)  # the mbox must quote these
    assert any(b"\r\n" in raw for raw in raws) and any(not raw.endswith(b"\n") for raw in raws)
    maildir = tmp_path / "Maildir"
    for name, raw in real_mail:
        _write(maildir / "cur" / name, raw)
    mbox = _write(tmp_path / "real.mbox", _mboxrd(raws))

    assert _import(account, maildir, "archive")["stored"] == 300
    assert _import(account, mbox, "takeout")["stored"] == 300
    assert _import(account, maildir, "archive") == {
        "read": 300,
        "stored": 0,
        "skipped": 300,
        "withheld": 0,
        "defective": 0,
    }
    assert _import(account, mbox, "takeout")["stored"] == 0

    assert _emails(account, "archive").count() == 300
    assert _emails(account, "takeout").count() == 300
    assert stored_twice(account) == 0
    assert RawMessage.objects.filter(email__account=account).count() == 600
    source = sorted(hashlib.sha256(raw).hexdigest() for raw in raws)
    from_maildir = sorted(hashlib.sha256(raw).hexdigest() for raw in _stored_raws(account, "archive"))
    assert from_maildir == source
    # An mbox cannot hold a message without a final line end: it gains one, nothing else.
    mbox_source = sorted(hashlib.sha256(_mbox_stored_form(raw)).hexdigest() for raw in raws)
    from_mbox = sorted(hashlib.sha256(raw).hexdigest() for raw in _stored_raws(account, "takeout"))
    assert from_mbox == mbox_source
    # Every corpus file is named "...:2,S"; an mbox without Status headers marks nothing.
    assert all(flags == ["\\Seen"] for flags in _emails(account, "archive").values_list("flags", flat=True))
    assert all(flags == [] for flags in _emails(account, "takeout").values_list("flags", flat=True))


# --- flags and dates --------------------------------------------------------------------


@pytest.mark.parametrize("eol", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_mbox_status_r_marks_a_message_seen(account, tmp_path, eol):
    read = _message(1, eol=eol, Status="RO")
    unread = _message(2, eol=eol, Status="O")
    without = _message(3, eol=eol)
    path = _write(tmp_path / "status.mbox", _mboxrd([read, unread, without], eol=eol.encode()))

    _import(account, path)

    flags = {e.subject: e.flags for e in _emails(account)}
    assert flags == {"message 1": ["\\Seen"], "message 2": [], "message 3": []}


@pytest.mark.parametrize("eol", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_status_line_in_an_mbox_body_is_not_a_flag(account, tmp_path, eol):
    body = "Weekly report.\n\nStatus: Ready for review, nothing blocked."
    path = _write(tmp_path / "body.mbox", _mboxrd([_message(1, body, eol=eol)], eol=eol.encode()))

    _import(account, path)

    assert _emails(account).get().flags == []


def test_received_at_comes_from_the_date_header_else_the_import_time(account, tmp_path):
    root = tmp_path / "eml"
    _write(root / "dated.eml", _message(1, date="Fri, 21 Nov 1997 09:55:06 -0600"))
    _write(root / "undated.eml", _message(2))
    before = timezone.now()

    _import(account, root)

    received = {e.subject: e.received_at for e in _emails(account)}
    assert received["message 1"] == datetime(1997, 11, 21, 15, 55, 6, tzinfo=UTC)
    assert before <= received["message 2"] <= timezone.now()


# --- errors ---------------------------------------------------------------------------------


def test_unknown_account_is_a_command_error(account, tmp_path):
    path = _write(tmp_path / "one.eml", _message(1))

    with pytest.raises(CommandError, match="No account has that identifier"):
        call_command("import_mail", "--account", "nobody", "--folder", "archive", str(path), "--no-progress")
    assert not Email.objects.filter(account=account).exists()


def test_unknown_folder_alias_is_a_command_error(account, tmp_path):
    path = _write(tmp_path / "one.eml", _message(1))

    with pytest.raises(CommandError, match="maps no folder with that alias"):
        call_command(
            "import_mail", "--account", "importer", "--folder", "nowhere", str(path), "--no-progress"
        )
    assert not Email.objects.filter(account=account).exists()


def test_nonexistent_path_is_a_command_error(account, tmp_path):
    with pytest.raises(CommandError, match="neither a file nor a folder"):
        call_command(
            "import_mail",
            "--account",
            "importer",
            "--folder",
            "archive",
            str(tmp_path / "missing"),
            "--no-progress",
        )


def test_operator_sees_one_line_and_no_traceback(account, tmp_path, capsys):
    """From the command line a CommandError is printed as one sentence, exit status 1.

    run_from_argv closes the database connections when done, so it runs last here.
    """
    path = _write(tmp_path / "one.eml", _message(1))
    command = ImportMailCommand()

    with pytest.raises(SystemExit) as exit_info:
        command.run_from_argv(
            [
                "manage.py",
                "import_mail",
                "--account",
                "nobody",
                "--folder",
                "archive",
                str(path),
                "--no-progress",
            ]
        )

    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip() == "CommandError: MailFathom error 62001: No account has that identifier."


def test_message_over_the_size_limit_is_stored_envelope_only(tmp_path):
    account = MailAccountFactory(max_message_bytes=4096)
    FolderMappingFactory(account=account, alias="archive")
    small = _message(1, "Short.")
    large = _message(2, "x" * 76 + "\n" + ("y" * 76 + "\n") * 100)
    assert len(small) < 4096 < len(large)
    root = tmp_path / "eml"
    _write(root / "small.eml", small)
    _write(root / "large.eml", large)

    result = _import(account, root)

    assert result == {"read": 2, "stored": 2, "skipped": 0, "withheld": 1, "defective": 0}
    email = _emails(account).get(size_bytes=len(large))
    assert email.availability == Availability.EXCEEDED_SIZE_LIMIT
    assert not RawMessage.objects.filter(email=email).exists()
    assert email.text_body == "" and email.attachment_count is None
    assert _emails(account).get(size_bytes=len(small)).availability == Availability.AVAILABLE
    # The envelope, read from the header block alone, says which message it was.
    assert (email.subject, email.sender_address, email.sender_name) == (
        "message 2",
        "sender2@example.org",
        "Sender 2",
    )
    assert email.message_id == "import-2@example.org"
    assert list(email.participants.values_list("role", "address")) == [("to", "alice@example.org")]


def test_oversize_message_envelope_is_read_from_a_bounded_header_block(tmp_path):
    """A header block longer than its cap is cut there: the fields before the cut are kept."""
    from mailbox.parsing import HEADER_BLOCK_BYTES

    account = MailAccountFactory(max_message_bytes=4096)
    FolderMappingFactory(account=account, alias="archive")
    padding = "".join(f"X-Padding-{n}: {'p' * 70}\n" for n in range(HEADER_BLOCK_BYTES // 80 + 10))
    head = _message(3, "unused").split(b"\n\n")[0] + b"\n" + padding.encode()
    path = _write(tmp_path / "huge-header.eml", head + b"Subject: after the cap\n\nbody\n")

    _import(account, path)

    email = _emails(account).get()
    assert email.availability == Availability.EXCEEDED_SIZE_LIMIT
    assert (email.subject, email.message_id) == ("message 3", "import-3@example.org")


def test_second_import_of_an_oversize_message_reports_nothing_new(tmp_path):
    account = MailAccountFactory(max_message_bytes=4096)
    FolderMappingFactory(account=account, alias="archive")
    path = _write(tmp_path / "large.eml", _message(2, ("y" * 76 + "\n") * 100))
    _import(account, path)

    again = _import(account, path)

    assert _emails(account).count() == 1
    assert again == {"read": 1, "stored": 0, "skipped": 1, "withheld": 0, "defective": 0}


def test_oversize_message_takes_received_at_from_its_date_header(tmp_path):
    account = MailAccountFactory(max_message_bytes=4096)
    FolderMappingFactory(account=account, alias="archive")
    path = _write(
        tmp_path / "large.eml", _message(2, ("y" * 76 + "\n") * 100, date="Fri, 21 Nov 1997 09:55:06 -0600")
    )

    _import(account, path)

    email = _emails(account).get()
    assert email.availability == Availability.EXCEEDED_SIZE_LIMIT
    # Sorting an old archive message as if it arrived today puts it at the top of every timeline.
    assert email.received_at == datetime(1997, 11, 21, 15, 55, 6, tzinfo=UTC)


def _incompressible(n: int, size: int = 3000) -> bytes:
    """A message whose body barely compresses, so its stored size is predictable."""
    chunks = [hashlib.sha256(f"{n}-{i}".encode()).hexdigest() for i in range(size // 64 + 1)]
    body = "\n".join(chunk + chunk[::-1] for chunk in chunks)  # 128 hex digits a line
    return _message(n, body)


def _ceiling_account(tmp_path, kept: int, total: int):
    """An account whose storage ceiling holds the content of `kept` of `total` messages."""
    raws = [_incompressible(n) for n in range(total)]
    fits = sum(len(zlib.compress(raw, 6)) for raw in raws[:kept])
    account = MailAccountFactory(storage_ceiling_bytes=fits + 100)
    FolderMappingFactory(account=account, alias="archive")
    root = tmp_path / "eml"
    for n, raw in enumerate(raws):
        _write(root / f"{n:02d}.eml", raw)
    return account, root


def test_messages_past_the_storage_ceiling_are_counted_in_the_output(tmp_path):
    account, root = _ceiling_account(tmp_path, kept=2, total=5)

    out = StringIO()
    call_command(
        "import_mail",
        "--account",
        account.account_id,
        "--folder",
        "archive",
        str(root),
        "--no-progress",
        stdout=out,
    )

    awaiting = _emails(account).filter(availability=Availability.AWAITING_STORAGE_HEADROOM).count()
    assert awaiting == 3
    # The operator must learn that 3 of the "5 stored" hold no content.
    assert re.search(r"\b3 awaiting storage headroom\b", out.getvalue()), out.getvalue()


def test_import_again_after_raising_the_ceiling_fills_the_content_it_kept_out(tmp_path):
    account, root = _ceiling_account(tmp_path, kept=2, total=5)
    _import(account, root)
    assert RawMessage.objects.filter(email__account=account).count() == 2
    account.storage_ceiling_bytes = 10 * 1024 * 1024
    account.save()

    _import(account, root)

    # Imported rows have no server copy: a synchronization run can never fetch their content,
    # so importing the archive again is the only way it can arrive.
    assert _emails(account).count() == 5
    assert RawMessage.objects.filter(email__account=account).count() == 5
    assert not _emails(account).exclude(availability=Availability.AVAILABLE).exists()


def test_folder_alias_is_matched_case_insensitively(account, tmp_path):
    path = _write(tmp_path / "one.eml", _message(1))

    assert _import(account, path, alias="  ARCHIVE ")["stored"] == 1
    assert _emails(account, "archive").count() == 1


# --- hostile input ----------------------------------------------------------------------------


def test_every_mime_torture_file_is_stored_and_defects_are_counted(account, tmp_path):
    root = tmp_path / "torture"
    sources = sorted(f for f in TORTURE.rglob("*") if f.is_file())
    for source in sources:
        target = root / source.relative_to(TORTURE).parent / (source.name + ".eml")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    distinct = {hashlib.sha256(f.read_bytes()).hexdigest() for f in sources}
    assert len(sources) >= 110

    result = _import(account, root)

    # Byte-identical files are one message (its UID comes from its bytes): the rest are skipped.
    assert result["read"] == len(sources)
    assert result["stored"] == len(distinct)
    assert result["skipped"] == len(sources) - len(distinct)
    stored = _emails(account)
    assert stored.count() == len(distinct)
    assert {hashlib.sha256(raw).hexdigest() for raw in _stored_raws(account)} == distinct
    defective = stored.exclude(parse_defects=[]).count()
    assert defective > 0
    assert result["defective"] == defective
    assert _import(account, root)["stored"] == 0


def test_import_archive_reports_progress_per_batch(account, tmp_path):
    root = tmp_path / "eml"
    for n in range(5):
        _write(root / f"{n}.eml", _message(n))
    seen: list = []

    result = import_archive("importer", "archive", root, progress=seen.append)

    total = sum(file.stat().st_size for file in root.iterdir())
    assert seen[-1].done == seen[-1].total == total and seen[-1].unit == "B"
    assert seen[-1].items == 5
    assert [event.done for event in seen] == sorted(event.done for event in seen)
    assert (result.read, result.stored) == (5, 5)
    assert len(list(read_archive(root))) == 5
