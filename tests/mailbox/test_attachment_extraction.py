"""The extraction engine on real files: each kind's text, hostile files' outcomes, the limits."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from mailbox.extraction import ALL_KINDS, ExtractionLimits, Kind, Outcome, extract_text, kind_of
from mailbox.extraction.sandbox import run_child

FILES = Path(__file__).resolve().parents[1] / "data" / "attachments"
DEFAULT = ExtractionLimits()


def extract(name: str, media_type: str = "application/octet-stream", **limits: object):
    data = (FILES / name).read_bytes()
    return extract_text(
        data, media_type, name, kinds=ALL_KINDS, max_bytes=10**8, limits=ExtractionLimits(**limits)
    )


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("invoice.pdf", ["Rechnung Nr. 2024-0815", "Druckerreparatur", "payment due within fourteen days"]),
        ("contract.docx", ["Wartungsvertrag", "room 4.12", "Tonerwechsel\t49,90 EUR"]),
        ("quote.xlsx", ["# Angebot", "Fixierwalze\t1\t129.5", "Arbeitszeit\t2\t85"]),
        ("review.pptx", ["Quarterly review", "uptime rose to 99 percent", "Speaker notes"]),
        ("delivery.odt", ["Lieferschein", "drei Tonerkartuschen\tam Montag"]),
        ("costs.ods", ["Stromkosten", "312"]),
        ("budget.odp", ["Folie eins: Budgetplanung"]),
        ("reminder.rtf", ["Mahnung: die Rechnung für den Drucker ist offen."]),
        ("newsletter.html", ["Newsletter", "Neue Preise für Toner"]),
        ("payments.csv", ["2024-03-01\t120.00\tToner"]),
        ("minutes.txt", ["Druckerreparatur genehmigt", "Übernahme der Kosten"]),
        (
            "forwarded.eml",
            ["Forwarding the quote", "bitte bis Freitag freigeben", "Angebot Druckerwartung", "Wartung\t240"],
        ),
    ],
)
def test_each_kind_gives_its_text(name, words):
    result = extract(name)
    assert result.outcome is Outcome.OK, result.detail
    assert not result.truncated
    for word in words:
        assert word in result.text
    assert result.seconds < DEFAULT.wall_seconds


def test_html_attachment_loses_its_script_and_title():
    text = extract("newsletter.html").text
    assert "alert" not in text
    assert "<" not in text


def test_a_tax_number_inside_a_pdf_is_in_its_text():
    text = extract("invoice.pdf", "application/pdf").text
    assert "USt-IdNr.: DE 298 765 432" in text
    assert "Steuernummer: 143/815/08152" in text


def test_a_formula_is_never_evaluated():
    # E1 holds =B2*C2 with no cached value: the stored value (none) is read, nothing computes one.
    assert extract("quote.xlsx").text.splitlines()[1] == "Position\tMenge\tEinzelpreis"


@pytest.mark.parametrize(
    ("name", "outcome", "detail"),
    [
        ("hostile-zip-bomb.docx", Outcome.TOO_LARGE, "zip-member-size"),
        ("hostile-billion-laughs.xlsx", Outcome.UNREADABLE, "xml-dtd"),
        ("hostile-xxe.docx", Outcome.UNREADABLE, "xml-dtd"),
        ("hostile-encrypted.pdf", Outcome.ENCRYPTED, "pdf-password"),
        ("hostile-truncated.pdf", Outcome.UNREADABLE, "pdf"),
        ("hostile-2000-pages.pdf", Outcome.TOO_LARGE, "pages"),
    ],
)
def test_hostile_files_end_in_their_outcome_within_the_limits_and_the_caller_goes_on(name, outcome, detail):
    started = time.monotonic()
    result = extract(name)
    assert (result.outcome, result.detail) == (outcome, detail)
    assert result.text == ""
    assert time.monotonic() - started < 5  # far inside the 30 s wall clock
    assert extract("minutes.txt").outcome is Outcome.OK  # the caller, and the next child, go on


def test_the_xxe_file_never_reads_the_local_file():
    hostname = Path("/etc/hostname").read_text().strip()
    result = extract("hostile-xxe.docx")
    assert hostname not in result.text


def test_the_zip_bomb_held_by_memory_alone_is_too_large():
    # The declared-size checks off: the address-space limit is what stops it.
    result = extract(
        "hostile-zip-bomb.docx",
        max_member_bytes=10**9,
        max_unpacked_bytes=10**9,
        max_compression_ratio=10**6,
        memory_bytes=400 * 1024 * 1024,
    )
    assert (result.outcome, result.detail) == (Outcome.TOO_LARGE, "memory")


def test_the_cpu_limit_ends_a_long_read_as_timed_out():
    result = extract(
        "hostile-zip-bomb.docx",
        max_member_bytes=10**9,
        max_unpacked_bytes=10**9,
        max_compression_ratio=10**6,
        memory_bytes=4 * 1024**3,
        cpu_seconds=1,
    )
    assert (result.outcome, result.detail) == (Outcome.TIMED_OUT, "cpu-time")
    assert result.seconds < 5


def test_the_wall_clock_ends_a_child_that_does_not_answer():
    result = extract("invoice.pdf", wall_seconds=0.01)
    assert (result.outcome, result.detail) == (Outcome.TIMED_OUT, "wall-clock")


def test_the_output_bound_cuts_the_text_and_says_so():
    result = extract("invoice.pdf", max_characters=30)
    assert result.outcome is Outcome.OK and result.truncated
    assert len(result.text) == 30


def test_more_pages_are_read_when_the_page_bound_allows():
    result = extract("hostile-2000-pages.pdf", max_pages=5000)
    assert result.outcome is Outcome.OK and "last page" in result.text


def test_a_kind_switched_off_or_too_large_starts_no_child():
    data = (FILES / "invoice.pdf").read_bytes()
    off = extract_text(data, "application/pdf", "a.pdf", kinds={"docx"}, max_bytes=10**8)
    assert (off.outcome, off.detail, off.seconds) == (Outcome.UNSUPPORTED, "pdf-off", 0.0)
    large = extract_text(data, "application/pdf", "a.pdf", kinds=ALL_KINDS, max_bytes=100)
    assert (large.outcome, large.detail) == (Outcome.TOO_LARGE, "size")
    program = extract_text(b"MZ", "application/x-msdownload", "a.exe", kinds=ALL_KINDS, max_bytes=10**8)
    assert (program.outcome, program.detail) == (Outcome.UNSUPPORTED, "kind")


def test_an_encrypted_office_file_is_encrypted():
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600)
    assert run_child(Kind.DOCX, ole, DEFAULT).outcome is Outcome.ENCRYPTED


@pytest.mark.parametrize(
    ("media_type", "file_name", "kind"),
    [
        ("application/pdf", "", Kind.PDF),
        ("application/octet-stream", "Rechnung.PDF", Kind.PDF),
        ("application/x-unknown", "table.xlsx", Kind.XLSX),
        ("message/rfc822", "", Kind.MESSAGE),
        ("image/png", "scan.pdf", Kind.IMAGE),
        ("application/octet-stream", "Scan.JPG", Kind.IMAGE),
        ("image/x-icon", "favicon.ico", None),
        ("application/octet-stream", "program.exe", None),
    ],
)
def test_kind_is_the_media_type_then_the_name(media_type, file_name, kind):
    assert kind_of(media_type, file_name) is kind


def test_the_child_refuses_sockets_processes_and_reading_outside_its_directories():
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from mailbox.extraction.child import _arm_audit_hook; _arm_audit_hook()\n"
        "import socket, subprocess\n"
        "for attempt in (lambda: socket.create_connection(('127.0.0.1', 9)),"
        " lambda: subprocess.run(['true']), lambda: open('/etc/hostname').read(),"
        " lambda: open(sys.argv[1] + '/written', 'w')):\n"
        "    try:\n"
        "        attempt()\n"
        "    except PermissionError:\n"
        "        print('refused')\n"
    )
    root = str(Path(__file__).resolve().parents[2])
    out = subprocess.run(
        [sys.executable, "-I", "-c", probe, root], capture_output=True, text=True, timeout=30
    )
    assert out.stdout.split() == ["refused"] * 4, out.stderr
    assert not (Path(root) / "written").exists()
