"""normalize_file_name: attacker-chosen attachment names become safe bare display names."""

from __future__ import annotations

import unicodedata

import pytest

from mailbox.parsing import normalize_file_name

BIDI_CONTROLS = set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")


def assert_safe_file_name(name: str) -> None:
    """Fail unless name satisfies every rule a normalized attachment name must follow."""
    assert len(name) <= 200, f"longer than 200 characters: {len(name)}"
    assert "/" not in name and "\\" not in name, f"directory separator in {name!r}"
    assert name not in (".", ".."), f"traversal segment {name!r}"
    for ch in name:
        assert unicodedata.category(ch) not in ("Cc", "Cs", "Zl", "Zp"), f"control {ch!r} in {name!r}"
        assert ch not in BIDI_CONTROLS, f"bidi control {ch!r} in {name!r}"
    assert name == name.strip().strip("."), f"leading/trailing whitespace or dot in {name!r}"
    assert unicodedata.is_normalized("NFC", name), f"not NFC: {name!r}"


@pytest.mark.parametrize(
    ("hostile", "expected"),
    [
        ("../../../etc/passwd", "passwd"),
        ("..\\..\\..\\Windows\\win.ini", "win.ini"),
        ("/var/lib/app/settings.py", "settings.py"),
        ("C:\\Users\\victim\\evil.exe", "evil.exe"),
        ("dir/sub/", ""),
        ("invoice.pdf\x00.exe", "invoice.pdf.exe"),
        ("a.txt\r\nX-Injected: 1", "a.txtX-Injected: 1"),
        ("invoice\u202efdp.exe", "invoicefdp.exe"),
        ("report\x85\u2028.pdf", "report.pdf"),
        (" .. . ", ""),
        (".bashrc", "bashrc"),
        ("e\u0301t\u00e9.txt", "\u00e9t\u00e9.txt"),
    ],
)
def test_hostile_names_become_safe_bare_names(hostile: str, expected: str) -> None:
    name, changed = normalize_file_name(hostile)
    assert name == expected
    assert changed is True
    assert_safe_file_name(name)


@pytest.mark.parametrize("segment", [".", "..", "...", "../..", "..\\.."])
def test_traversal_segments_alone_give_no_name(segment: str) -> None:
    assert normalize_file_name(segment) == ("", True)


def test_a_name_of_only_bidi_controls_gives_no_name() -> None:
    assert normalize_file_name("\u202e\u2066\u200f") == ("", True)


@pytest.mark.parametrize("missing", [None, ""])
def test_a_missing_name_stays_empty_and_unchanged(missing: str | None) -> None:
    assert normalize_file_name(missing) == ("", False)


def test_an_ordinary_name_is_kept_and_reported_unchanged() -> None:
    assert normalize_file_name("Quarterly report (final).pdf") == ("Quarterly report (final).pdf", False)


def test_a_10000_character_name_is_cut_to_200_keeping_its_extension() -> None:
    name, changed = normalize_file_name("A" * 10_000 + ".pdf")
    assert changed is True
    assert len(name) == 200
    assert name.endswith(".pdf")
    assert name.startswith("A" * 196)


def test_a_long_name_without_a_short_extension_is_cut_to_200() -> None:
    name, _ = normalize_file_name("B" * 10_000 + "." + "x" * 40)
    assert len(name) == 200
    assert name == "B" * 200


def test_the_checker_rejects_what_normalization_removes() -> None:
    for unsafe in ("../x", "a\x00b", "a\u202eb", " a", "a.", "e\u0301", "x" * 201):
        with pytest.raises(AssertionError):
            assert_safe_file_name(unsafe)
