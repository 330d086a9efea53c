"""The real mail the tests read: vendored under tests/data/, never found outside the repository.

- MAIL_SAMPLE: 725 messages of the team corpus's Maildir (the SpamAssassin public
  corpus only), a Maildir in a tarball, built by tests/data/build_mail_sample.py;
- TORTURE: the 110 broken and hostile messages of mime-torture/, with their licences.

tests/data/README.md gives provenance, licences and which test needs how much. Benchmarks
take the full corpus by their own `--corpus` option; tests never do.
"""

from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
MAIL_SAMPLE = DATA / "mail-sample.tar.gz"
TORTURE = DATA / "mime-torture"
