"""OCR of scanned PDF pages and image attachments: the text, the bounds, and OCR's absence.

Needs Debian's tesseract-ocr with its German and English models (.ci/install-services
brings them). A stand-in `tesseract` (a shell script the tests write) shows what the OCR
process is given and how its hangs end, without depending on Tesseract's speed.
"""

from __future__ import annotations

import re
import time
from email.message import EmailMessage
from email.policy import SMTP
from pathlib import Path

import pytest

from mailbox.extraction import ALL_KINDS, ExtractionLimits, Outcome, extract_text
from mailbox.extraction.ocr import _merged
from mailbox.extraction.tesseract import TESSERACT

FILES = Path(__file__).resolve().parents[1] / "data" / "attachments"
LIST_LANGS = 'if [ "$1" = --list-langs ]; then printf "List of languages\\ndeu\\neng\\n"; exit 0; fi\n'


def extract(
    name: str, media_type: str = "application/octet-stream", tesseract: str = TESSERACT, **limits: object
):
    return extract_text(
        (FILES / name).read_bytes(),
        media_type,
        name,
        kinds=ALL_KINDS,
        max_bytes=10**8,
        limits=ExtractionLimits(**limits),
        tesseract=tesseract,
    )


def stand_in(tmp_path: Path, body: str) -> str:
    """A `tesseract` that lists two languages and otherwise runs body (sh)."""
    script = tmp_path / "tesseract"
    script.write_text("#!/bin/sh\n" + LIST_LANGS + body + "\n")
    script.chmod(0o755)
    return str(script)


def words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text))


def test_a_scanned_pdf_gives_its_pages_text_in_order():
    result = extract("scanned.pdf", "application/pdf")
    assert (result.outcome, result.detail, result.truncated) == (Outcome.OK, "ocr", False)
    found = words(result.text)
    assert {"Repair", "printer", "Rechnung", "Reparatur", "Steuernummer", "vierzehn", "Tagen"} <= found
    assert "08150" in result.text and "815" in found  # the tax number, whatever OCR makes of its slashes
    assert result.text.index("Repair") < result.text.index("Steuernummer")  # page one, then page two
    assert result.seconds < ExtractionLimits().wall_seconds


def test_an_image_attachment_gives_its_text_umlauts_included():
    result = extract("scanned-note.png", "image/png")
    assert (result.outcome, result.detail) == (Outcome.OK, "ocr")
    assert {"Lieferschein", "4711", "Tonerkartusche", "geliefert", "geprüft"} <= words(result.text)


def test_an_image_inside_an_attached_message_is_read_too():
    message = EmailMessage()
    message["Subject"] = "Scan"
    message.set_content("See the scan.")
    message.add_attachment(
        (FILES / "scanned-note.png").read_bytes(), maintype="image", subtype="png", filename="note.png"
    )
    result = extract_text(
        message.as_bytes(policy=SMTP), "message/rfc822", "", kinds=ALL_KINDS, max_bytes=10**8
    )
    assert result.outcome is Outcome.OK
    assert result.text.index("[note.png]") < result.text.index("Lieferschein")


def test_without_tesseract_an_image_is_unsupported_and_a_scanned_pdf_says_so(tmp_path):
    missing = str(tmp_path / "no-tesseract")
    image = extract("scanned-note.png", "image/png", tesseract=missing)
    assert (image.outcome, image.detail, image.seconds) == (Outcome.UNSUPPORTED, "ocr-absent", 0.0)
    scanned = extract("scanned.pdf", tesseract=missing)
    assert (scanned.outcome, scanned.detail, scanned.text) == (Outcome.OK, "ocr-absent", "")


def test_a_tesseract_without_our_languages_counts_as_absent(tmp_path):
    script = tmp_path / "tesseract"
    script.write_text("#!/bin/sh\nprintf 'List of languages\\nosd\\n'\n")
    script.chmod(0o755)
    result = extract("scanned-note.png", tesseract=str(script))
    assert (result.outcome, result.detail) == (Outcome.UNSUPPORTED, "ocr-absent")


def test_the_image_kind_can_be_switched_off():
    data = (FILES / "scanned-note.png").read_bytes()
    result = extract_text(data, "image/png", "note.png", kinds={"pdf"}, max_bytes=10**8)
    assert (result.outcome, result.detail) == (Outcome.UNSUPPORTED, "image-off")


def test_the_pixel_bomb_is_refused_from_its_header():
    started = time.monotonic()
    result = extract("hostile-pixel-bomb.png")
    assert (result.outcome, result.detail) == (Outcome.TOO_LARGE, "pixels")
    assert time.monotonic() - started < 5


def test_the_pixel_bomb_held_by_memory_alone_is_too_large():
    # The pixel bound off: decoding 10^10 pixels meets the address-space limit.
    result = extract("hostile-pixel-bomb.png", image_pixels=10**11, memory_bytes=400 * 1024 * 1024)
    assert (result.outcome, result.detail) == (Outcome.TOO_LARGE, "memory")


def test_a_broken_image_is_unreadable():
    data = b"\x89PNG\r\n\x1a\n" + bytes(200)
    result = extract_text(data, "image/png", "broken.png", kinds=ALL_KINDS, max_bytes=10**8)
    assert (result.outcome, result.detail) == (Outcome.UNREADABLE, "image")


def test_the_page_bound_leaves_later_scanned_pages_out_and_says_so():
    result = extract("scanned.pdf", ocr_pages=1)
    assert (result.outcome, result.detail, result.truncated) == (Outcome.OK, "ocr-pages", True)
    assert "Repair" in result.text and "Steuernummer" not in result.text


def test_the_ocr_process_gets_the_limits_and_no_secret(tmp_path, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgres://secret@db/mail")
    report = 'echo "as=$(ulimit -v) cpu=$(ulimit -t) fsize=$(ulimit -f)"; env | cut -d= -f1'
    result = extract("scanned-note.png", tesseract=stand_in(tmp_path, report), cpu_seconds=7)
    assert result.outcome is Outcome.OK
    assert f"as={1024 * 1024} cpu=7 fsize=0" in result.text  # ulimit -v counts KiB
    names = set(result.text.split()[3:])
    assert "DATABASE_URL" not in names
    assert names <= {"PATH", "LANG", "LC_ALL", "OMP_THREAD_LIMIT", "PWD", "SHLVL", "_"}


def test_a_hanging_ocr_process_ends_at_the_deadline(tmp_path):
    started = time.monotonic()
    result = extract("scanned-note.png", tesseract=stand_in(tmp_path, "exec sleep 60"), wall_seconds=3)
    assert (result.outcome, result.detail) == (Outcome.TIMED_OUT, "ocr-wall-clock")
    assert time.monotonic() - started < 6


def test_a_busy_ocr_process_ends_at_its_cpu_limit(tmp_path):
    result = extract("scanned-note.png", tesseract=stand_in(tmp_path, "while :; do :; done"), cpu_seconds=1)
    assert (result.outcome, result.detail) == (Outcome.TIMED_OUT, "ocr-cpu-time")
    assert result.seconds < 5


def test_a_failing_ocr_process_is_unreadable(tmp_path):
    result = extract("scanned-note.png", tesseract=stand_in(tmp_path, "exit 3"))
    assert (result.outcome, result.detail) == (Outcome.UNREADABLE, "ocr-exit-3")


@pytest.mark.parametrize(
    ("placed", "expected"),
    [
        ([(0, "scan one")], "scan one\npage two\n"),
        ([(9, "scan two")], "page two\nscan two\n"),
        ([(0, "a"), (0, "b"), (9, "")], "a\nb\npage two\n"),
    ],
)
def test_ocr_text_goes_where_its_page_was(placed, expected):
    assert _merged("page two\n", placed, 100) == (expected, False)
    assert _merged("page two\n", placed, 5) == (expected[:5], True)
