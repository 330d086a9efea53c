"""The parser against real mail: the hostile MIME corpus and the vendored sample of real mail.

Both live under tests/data/ (tests/corpus.py); the full 7,685-message corpus is for
bench/fuzz.py and the other benchmarks. The sample is real people's mail: tests read it,
never print or copy it.
"""

from __future__ import annotations

import email
import email.policy
import json
import tarfile
import time
from collections import defaultdict
from pathlib import Path

import pytest

from mailbox.parsing import ParsedMessage, ParseLimits, attachment_bytes, parse_message, sanitized_html
from mailbox.parsing.limits import Budget
from mailbox.parsing.structure import walk
from tests.corpus import MAIL_SAMPLE, TORTURE
from tests.mailbox.test_parsing_filenames import assert_safe_file_name

NOT_MESSAGES = {".txt", ".jsonl"}
HANG_SECONDS = 5.0  # generous: catches a hang, not a slow machine
SAMPLE_MESSAGES = 725  # tests/data/README.md
GROUPS = ("spamassassin/easy-ham-1/", "spamassassin/hard-ham-1/", "spamassassin/spam-1/")


def torture_files() -> list[Path]:
    return sorted(p for p in TORTURE.rglob("*") if p.is_file() and p.suffix not in NOT_MESSAGES)


def synthetic(name: str) -> bytes:
    return (TORTURE / "synthetic" / name).read_bytes()


@pytest.fixture(scope="session")
def corpus_groups() -> dict[str, list[tuple[str, bytes]]]:
    """Read every message of the vendored sample straight from the tarball, by group, in name order."""
    groups: dict[str, list[tuple[str, bytes]]] = defaultdict(list)
    with tarfile.open(MAIL_SAMPLE) as archive:
        for member in archive:
            if not member.isfile():
                continue
            name = member.name.removeprefix("./")
            group = next((g for g in GROUPS if name.startswith(g)), None)
            extracted = archive.extractfile(member)
            if group is not None and extracted is not None:
                groups[group].append((name, extracted.read()))
    for messages in groups.values():
        messages.sort()
    return groups


DEFAULT_LIMITS = ParseLimits()


def check_invariants(parsed: ParsedMessage, limits: ParseLimits = DEFAULT_LIMITS) -> None:
    """Fail unless a parse result respects the bounds every stored message relies on."""
    for attachment in parsed.attachments:
        assert_safe_file_name(attachment.file_name)
        assert attachment.media_type == attachment.media_type.lower() and "/" in attachment.media_type
    assert len(parsed.subject) <= 998 and len(parsed.message_id) <= 998
    assert len(parsed.references) <= 100
    for field in (parsed.to, parsed.cc, parsed.bcc, parsed.reply_to):
        assert len(field) <= limits.max_addresses
    assert len(parsed.text_body) <= limits.max_text_chars
    assert "\x00" not in parsed.text_body and "\x00" not in parsed.subject
    assert parsed.attachment_total_size == sum(a.size for a in parsed.attachments)


# --- mime-torture ------------------------------------------------------------------


def test_the_torture_corpus_has_its_110_messages() -> None:
    assert len(torture_files()) == 110


@pytest.mark.parametrize("path", torture_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_torture_message_parses_quickly_with_safe_names(path: Path) -> None:
    raw = path.read_bytes()
    started = time.monotonic()
    parsed = parse_message(raw)
    assert time.monotonic() - started < HANG_SECONDS
    assert "unparseable" not in parsed.defects  # the fallback is for bugs, not for hostile input
    check_invariants(parsed)
    sanitized_html(raw)
    for attachment in parsed.attachments:
        assert attachment_bytes(raw, attachment.part_index) is not None


def test_report_the_slowest_torture_messages(capsys: pytest.CaptureFixture[str]) -> None:
    timings = []
    for path in torture_files():
        raw = path.read_bytes()
        started = time.perf_counter()
        parse_message(raw)
        timings.append((time.perf_counter() - started, f"{path.parent.name}/{path.name}"))
    timings.sort(reverse=True)
    assert timings and timings[0][0] < HANG_SECONDS
    slowest = ", ".join(f"{name} {seconds * 1000:.1f} ms" for seconds, name in timings[:5])
    with capsys.disabled():
        print(f"\nslowest mime-torture parses: {slowest}")


def test_the_manifest_names_every_synthetic_message() -> None:
    manifest = TORTURE / "synthetic" / "manifest.jsonl"
    entries = [json.loads(line) for line in manifest.read_text().splitlines() if line.strip()]
    assert len(entries) == 30
    assert all((TORTURE / "synthetic" / entry["file"]).is_file() for entry in entries)


@pytest.mark.parametrize(
    ("file", "expected", "changed"),
    [
        ("fn-traversal-posix.eml", "x", True),
        ("fn-traversal-windows.eml", "win.ini", True),
        ("fn-absolute.eml", "settings.py", True),
        ("fn-rfc2231-traversal.eml", "passwd", True),
        ("fn-rfc2231-continuation.eml", "secret.txt", True),
        ("fn-encoded-word-traversal.eml", "authorized_keys", True),
        ("fn-nul-byte.eml", "invoice.pdf.exe", True),
        ("fn-crlf-header-injection.eml", "a.txt", False),
        ("fn-rtl-override.eml", "invoicefdp.exe", True),
        ("fn-dots-spaces.eml", "", True),
        ("fn-empty.eml", "", False),
        ("fn-dup-params.eml", "safe.txt", False),
        ("fn-windows-reserved.eml", "CON.txt", False),
    ],
)
def test_hostile_attachment_names_are_normalized(file: str, expected: str, changed: bool) -> None:
    parsed = parse_message(synthetic(file))
    assert [(a.file_name, a.name_was_normalized) for a in parsed.attachments] == [(expected, changed)]
    assert parsed.text_body == "see attachment"


def test_a_10000_character_name_is_cut_to_200_keeping_txt() -> None:
    (attachment,) = parse_message(synthetic("fn-very-long.eml")).attachments
    assert len(attachment.file_name) == 200 and attachment.file_name.endswith(".txt")
    assert attachment.name_was_normalized is True


def test_markup_in_a_name_is_kept_as_text_for_the_display_layer_to_escape() -> None:
    (attachment,) = parse_message(synthetic("fn-html-in-name.eml")).attachments
    assert attachment.file_name == "<img src=x onerror=alert(1)>.png"


def test_200_level_nesting_marks_nesting_limit() -> None:
    assert "nesting-limit" in parse_message(synthetic("dos-nesting-200.eml")).defects


def test_2000_parts_mark_part_limit() -> None:
    parsed = parse_message(synthetic("dos-many-parts-2000.eml"))
    assert "part-limit" in parsed.defects
    assert parsed.text_body.count("x") < ParseLimits().max_parts


def test_20000_headers_mark_header_limit() -> None:
    parsed = parse_message(synthetic("dos-many-headers-20000.eml"))
    assert "header-limit" in parsed.defects
    assert parsed.text_body == "body"


def test_5000_addresses_are_bounded() -> None:
    raw = synthetic("dos-many-addresses-5000.eml")
    parsed = parse_message(raw)
    assert 0 < len(parsed.cc) <= 1000
    assert "header-too-long" in parsed.defects
    assert all(a.address.endswith("@example.invalid") for a in parsed.cc)  # no half-cut last entry
    roomy = parse_message(raw, ParseLimits(max_header_length=300_000))
    assert len(roomy.cc) == 1000
    assert "address-limit" in roomy.defects


def test_a_200k_header_is_bounded() -> None:
    parsed = parse_message(synthetic("dos-long-header-200k.eml"))
    assert "header-too-long" in parsed.defects
    assert 0 < len(parsed.subject) <= 998
    assert parsed.text_body == "body"


def test_utf7_in_the_torture_corpus_is_not_decoded_into_markup() -> None:
    parsed = parse_message(synthetic("hdr-bogus-charset.eml"))
    assert "<script" not in parsed.text_body
    assert "bad-charset" in parsed.defects


@pytest.mark.parametrize("file", ["cte-unknown.eml", "cte-bad-base64.eml"])
def test_broken_transfer_encodings_are_recorded(file: str) -> None:
    assert "bad-transfer-encoding" in parse_message(synthetic(file)).defects


def test_raw_8bit_headers_are_read_as_utf8() -> None:
    parsed = parse_message(synthetic("hdr-8bit-raw.eml"))
    assert parsed.subject == "café über 漢字"


def test_a_missing_close_boundary_keeps_the_last_part() -> None:
    parsed = parse_message(synthetic("mp-missing-close-boundary.eml"))
    assert [a.file_name for a in parsed.attachments] == ["a.txt"]
    assert "missing-close-boundary" in parsed.defects
    assert (
        attachment_bytes(synthetic("mp-missing-close-boundary.eml"), parsed.attachments[0].part_index)
        == b"hello"
    )


# --- the real corpus --------------------------------------------------------------


def test_every_real_message_of_each_group_parses(
    corpus_groups: dict[str, list[tuple[str, bytes]]],
) -> None:
    assert set(corpus_groups) == set(GROUPS)
    checked = 0
    for group in GROUPS:
        for name, raw in corpus_groups[group]:
            parsed = parse_message(raw)
            assert "unparseable" not in parsed.defects, name
            assert parsed.message_id, name
            check_invariants(parsed)
            checked += 1
    assert checked == SAMPLE_MESSAGES


def test_walk_order_matches_the_standard_library_on_well_formed_real_mail(
    corpus_groups: dict[str, list[tuple[str, bytes]]],
) -> None:
    compared = 0
    for group in GROUPS:
        for name, raw in corpus_groups[group]:
            reference = email.message_from_bytes(raw, policy=email.policy.compat32)
            parts = list(reference.walk())
            if any(p.defects for p in parts) or any(
                p.get_content_type() == "message/delivery-status" for p in parts
            ):
                continue
            mine = [entity.media_type for entity in walk(raw, Budget(ParseLimits()))]
            assert mine == [p.get_content_type() for p in parts], name
            compared += 1
    assert compared >= 700  # 721 of the 725 are well formed


def test_latin1_and_windows1252_real_mail_decodes_without_replacement_characters(
    corpus_groups: dict[str, list[tuple[str, bytes]]],
) -> None:
    candidates = []
    for group in GROUPS:
        for _name, raw in corpus_groups[group]:
            reference = email.message_from_bytes(raw, policy=email.policy.compat32)
            if reference.is_multipart() or reference.get_content_type() != "text/plain":
                continue
            if reference.get_content_charset() not in ("iso-8859-1", "windows-1252"):
                continue
            payload = reference.get_payload(decode=True) or b""
            letters = {ch for ch in payload.decode("cp1252", "ignore") if ch.isalpha() and not ch.isascii()}
            if letters:
                candidates.append((raw, letters))
    assert len(candidates) >= 3
    for raw, letters in candidates[:20]:
        text = parse_message(raw).text_body
        assert "\ufffd" not in text
        assert letters & set(text)
