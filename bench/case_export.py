"""Case export throughput: messages/s and MB/s, against Python's zipfile writing the same bytes.

    .venv/bin/python bench/case_export.py [--messages 5000] [--rounds 3] [--keep]

Stores `--messages` real messages (an even sample of ../shared/corpus/mail-dev.tar.gz) in
one account of a scratch database (mailfathom_case_export_bench, on the product's server,
never its database), then, each round:

  (a) MailFathom: audit.services.case_export.run_case_export of that account, as the worker
      runs it: every raw message read through stored_raw (decompressed, its SHA-256
      checked), written as an EML file and into the mboxrd, the manifest and sums written,
      progress recorded, the zip hashed;
  (b) anchor "eml": zipfile writing the same raw bytes, one EML entry each, read with one
      SQL cursor and decompressed, no check, no manifest (the floor of "a zip of the mail");
  (c) anchor "eml+mbox": (b) plus the same bytes a second time as one mbox entry, the work
      (a) does minus its checks, manifest, progress and ORM.

All three use ZIP_DEFLATED at zipfile's default level. It prints each rate (messages/s and
MB/s of raw message bytes), MailFathom's ratio to each anchor, and (a)'s peak Python memory
growth under tracemalloc in a run of its own. Results go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import tracemalloc
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # tests.factories
from sync import drop_database, load_corpus, migrated_database, setup_django

DATABASE = "mailfathom_case_export_bench"
MB = 1_000_000
STORE_BATCH = 500


def fill(messages: list[tuple[str, bytes]]) -> int:
    """Store the messages in account "bench"; return how many were stored."""
    from accounts.models import FolderRole
    from mailbox.models import Email
    from mailbox.services.store import IncomingMessage, store_messages
    from tests.factories import MailAccountFactory
    from tests.mailbox.factories import mapped_folder

    folder = mapped_folder(MailAccountFactory(account_id="bench"), "inbox", FolderRole.INBOX)
    for start in range(0, len(messages), STORE_BATCH):
        batch = [
            IncomingMessage(uidvalidity=1, uid=start + n + 1, size=len(raw), received_at=None, raw=raw)
            for n, (_, raw) in enumerate(messages[start : start + STORE_BATCH])
        ]
        store_messages(folder, batch)
    return Email.objects.filter(account__account_id="bench").count()


def mailfathom_export(directory: Path) -> tuple[int, int, int]:
    """One case export of the whole account; (messages, raw bytes, zip bytes)."""
    from django.conf import settings

    from audit.services.case_export import case_selection, run_case_export, start_case_export

    settings.MAILFATHOM = settings.MAILFATHOM.replace(case_export_dir=str(directory))
    selection = case_selection(account_ids=["bench"])
    record = start_case_export(selection, requested_by="bench")
    done = run_case_export(record.id)
    if done.status != "done":
        raise SystemExit(f"export ended {done.status} ({done.failure_code})")
    return done.exported_messages, done.selected_bytes, done.file_bytes


def anchor_export(directory: Path, *, with_mbox: bool) -> tuple[int, int, int]:
    """zipfile writing the stored raw bytes (and, with_mbox, an mbox of them): no checks."""
    from django.db import connection, transaction

    path = directory / "anchor.zip"
    count = size = 0
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "DECLARE anchor CURSOR FOR SELECT r.compressed FROM mailbox_rawmessage r "
            "JOIN mailbox_email e ON e.id = r.email_id ORDER BY e.received_at, e.id"
        )
        with (
            zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, allowZip64=True) as archive,
            tempfile.TemporaryFile(dir=directory) as mbox,
        ):
            while True:
                cursor.execute("FETCH 200 FROM anchor")
                rows = cursor.fetchall()
                if not rows:
                    break
                for (compressed,) in rows:
                    raw = zlib.decompress(bytes(compressed))
                    count += 1
                    size += len(raw)
                    archive.writestr(f"messages/{count:06d}.eml", raw)
                    if with_mbox:
                        mbox.write(b"From MAILER-DAEMON Thu Jan  1 00:00:00 1970\n" + raw + b"\n")
            if with_mbox:
                mbox.seek(0)
                with archive.open("messages.mbox", "w", force_zip64=True) as target:
                    shutil.copyfileobj(mbox, target, 1024 * 1024)
        cursor.execute("CLOSE anchor")
    return count, size, path.stat().st_size


def timed(work: Callable[[], tuple[int, int, int]]) -> tuple[float, int, int, int]:
    started = time.perf_counter()
    count, size, zipped = work()
    return time.perf_counter() - started, count, size, zipped


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="leave the scratch database for another run")
    args = parser.parse_args()

    setup_django(DATABASE)
    version = migrated_database(DATABASE)
    print(f"PostgreSQL {version}; {os.cpu_count()} cores; load average {os.getloadavg()}")
    messages = load_corpus(args.messages)
    started = time.perf_counter()
    stored = fill(messages)
    print(f"stored {stored} of {len(messages)} corpus messages in {time.perf_counter() - started:.1f} s")

    with tempfile.TemporaryDirectory(prefix="case-export-bench-") as scratch:
        root = Path(scratch)
        best: dict[str, float] = {}
        for round_number in range(1, args.rounds + 1):
            target = root / f"round-{round_number}"
            for name, work in (
                ("anchor eml", lambda: anchor_export(root, with_mbox=False)),
                ("anchor eml+mbox", lambda: anchor_export(root, with_mbox=True)),
                ("mailfathom", lambda target=target: mailfathom_export(target)),
            ):
                seconds, count, size, zipped = timed(work)
                best[name] = min(best.get(name, seconds), seconds)
                print(
                    f"round {round_number} {name:16}: {count} messages, {size / MB:.1f} MB raw -> "
                    f"{zipped / MB:.1f} MB zip in {seconds:.2f} s = {count / seconds:,.0f} msg/s, "
                    f"{size / MB / seconds:.1f} MB/s"
                )
            shutil.rmtree(target, ignore_errors=True)
        tracemalloc.start()
        baseline = tracemalloc.get_traced_memory()[0]
        mailfathom_export(root / "memory")
        growth = (tracemalloc.get_traced_memory()[1] - baseline) / MB
        tracemalloc.stop()
    print(f"best of {args.rounds}:")
    for name in ("anchor eml", "anchor eml+mbox", "mailfathom"):
        print(f"  {name:16} {stored / best[name]:,.0f} msg/s")
    for name in ("anchor eml", "anchor eml+mbox"):
        print(f"  mailfathom / {name}: {best[name] / best['mailfathom']:.2f} of the anchor's rate")
    print(f"peak Python memory growth of one export: {growth:.1f} MB (tracemalloc)")
    if not args.keep:
        drop_database(DATABASE)


if __name__ == "__main__":
    main()
