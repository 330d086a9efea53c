"""Rebuild tests/data/mail-sample.tar.gz from the full corpus (run by hand, never by a test).

    .venv/bin/python tests/data/build_mail_sample.py --corpus /path/to/the/team/corpus/mail-dev.tar.gz

Takes every n-th message of each group in name order (the steps below), keeps every byte and
every Maildir name, and writes the members in name order with fixed metadata, so the same
corpus always gives the same archive. tests/data/README.md says what the sample holds and
which test needs how much of it.
"""

from __future__ import annotations

import argparse
import gzip
import io
import tarfile
from pathlib import Path

OUT = Path(__file__).resolve().parent / "mail-sample.tar.gz"
# group prefix -> take every n-th message. SpamAssassin only (Apache License 2.0): the
# corpus's Enron mail is real people's mail and must not leave the test run, so the sample
# carries none; tests derive the line-end variants they need from these (test_import.py).
STEPS = {
    "spamassassin/easy-ham-1/": 5,
    "spamassassin/hard-ham-1/": 2,
    "spamassassin/spam-1/": 5,
}


def group_of(name: str) -> str | None:
    return next((prefix for prefix in STEPS if name.startswith(prefix)), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True, help="the full mail-dev.tar.gz")
    args = parser.parse_args()
    groups: dict[str, list[tuple[str, bytes]]] = {prefix: [] for prefix in STEPS}
    with tarfile.open(args.corpus) as archive:
        for member in archive:
            name = member.name.removeprefix("./")
            group = group_of(name)
            handle = archive.extractfile(member) if member.isfile() else None
            if group is not None and handle is not None:
                groups[group].append((name, handle.read()))
    chosen = sorted(item for prefix, items in groups.items() for item in sorted(items)[:: STEPS[prefix]])
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as out:
        for name, raw in chosen:
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(raw), 0, 0o644
            out.addfile(info, io.BytesIO(raw))
    with OUT.open("wb") as target, gzip.GzipFile(fileobj=target, mode="wb", mtime=0, filename="") as gz:
        gz.write(buffer.getvalue())
    counts = {prefix: sum(1 for name, _ in chosen if group_of(name) == prefix) for prefix in STEPS}
    print(f"{OUT.name}: {len(chosen)} messages, {OUT.stat().st_size:,} bytes; {counts}")


if __name__ == "__main__":
    main()
