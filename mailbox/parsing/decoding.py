"""Decode transfer encodings and charsets without ever raising."""

from __future__ import annotations

import binascii
import codecs
import re

from charset_normalizer import from_bytes

# Codecs Python knows but that must never turn mail bytes into text: UTF-7 smuggles markup
# past filters ("+ADw-script+AD4-"), the escape codecs interpret backslash sequences.
_BLOCKED_CODECS = frozenset({"utf-7", "unicode-escape", "raw-unicode-escape", "idna", "punycode"})
# Labels mail uses for a narrower charset than it means (the WHATWG encoding rules).
_WIDENED = {"iso8859-1": "cp1252", "gb2312": "gb18030", "gbk": "gb18030"}
_ASCII_COMPATIBLE = frozenset({"ascii", "utf-8", "cp1252"} | {f"iso8859-{n}" for n in range(1, 17)})
_DETECTION_SAMPLE = 64 * 1024
_IDENTITY_CTE = frozenset({"", "7bit", "8bit", "binary"})
_UUENCODE_CTE = frozenset({"x-uuencode", "uuencode", "uue", "x-uue"})
_NOT_BASE64 = re.compile(rb"[^A-Za-z0-9+/=]")
_WHITESPACE = re.compile(rb"[ \t\r\n]")


class UnusableCharset(LookupError):
    """The declared charset is unknown or refused."""


def resolve_charset(label: str | None) -> str | None:
    """Return the Python codec name for a declared charset label; None when none was declared.

    Edge cases: quotes and whitespace around the label are ignored; unknown, non-text and
    refused codecs (UTF-7, the escape codecs) raise UnusableCharset.
    """
    if label is None:
        return None
    label = label.strip().strip("\"'").strip().lower()
    if not label:
        return None
    try:
        name = codecs.lookup(label).name
        b"".decode(name)  # raises LookupError for bytes-to-bytes codecs such as "base64"
    except (LookupError, ValueError) as exc:
        raise UnusableCharset(label) from exc
    if name in _BLOCKED_CODECS:
        raise UnusableCharset(label)
    return name


def _decode_strict(data: bytes, codec: str, final: bool = True) -> str:
    """Decode with a text codec, raising UnicodeDecodeError on bad bytes.

    With final False a trailing incomplete sequence (bytes cut mid-character) is dropped.
    """
    if codec == "cp1252":
        try:
            return data.decode("cp1252")
        except UnicodeDecodeError:
            # Five bytes are undefined in windows-1252; latin-1 (what was declared) maps all.
            return data.decode("latin-1")
    if final:
        return data.decode(codec)
    return codecs.getincrementaldecoder(codec)("strict").decode(data, final=False)


def guess_text(data: bytes, final: bool = True) -> str:
    """Decode bytes of unknown charset: ASCII, then UTF-8, then detection, then windows-1252."""
    if data.isascii():
        return data.decode("ascii")
    try:
        return _decode_strict(data, "utf-8", final)
    except UnicodeDecodeError:
        pass
    try:
        best = from_bytes(data[:_DETECTION_SAMPLE], cp_exclusion=["utf_7"]).best()
    except Exception:  # detection is a heuristic; any failure falls through
        best = None
    if best is not None and best.encoding:
        try:
            codec = codecs.lookup(best.encoding).name
            if codec not in _BLOCKED_CODECS:
                return data.decode(codec, errors="replace")
        except (LookupError, ValueError):
            pass
    return _decode_strict(data, "cp1252")


def decode_text(data: bytes, declared: str | None, final: bool = True) -> tuple[str, bool]:
    """Return (text, whether the declared charset was unusable or wrong) for a text part's bytes.

    Edge cases: no declaration means ASCII/UTF-8/detection; iso-8859-1 decodes as
    windows-1252 and gb2312/gbk as gb18030 (what such mail means); 8-bit bytes under a
    us-ascii label, an unknown or refused label (UTF-7), or bytes the declared charset
    cannot decode fall back to detection and report True; final=False means data was cut
    and may end mid-character.
    """
    if not data:
        return "", False
    try:
        codec = resolve_charset(declared)
    except UnusableCharset:
        return guess_text(data, final), True
    if codec is None:
        return guess_text(data, final), False
    if data.isascii() and codec in _ASCII_COMPATIBLE:
        return data.decode("ascii"), False
    if codec == "ascii":
        return guess_text(data, final), True
    try:
        return _decode_strict(data, _WIDENED.get(codec, codec), final), False
    except (UnicodeDecodeError, LookupError):
        return guess_text(data, final), True


def decode_header_bytes(data: bytes) -> str:
    """Decode raw header bytes: ASCII/UTF-8 when valid, else windows-1252 (then latin-1)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return _decode_strict(data, "cp1252")


def _decode_base64(body: bytes) -> tuple[bytes, bool]:
    """Decode base64 leniently: drop stray characters and fix padding; report whether it was clean."""
    compact = _WHITESPACE.sub(b"", body)
    clean = not _NOT_BASE64.search(compact)
    if not clean:
        compact = _NOT_BASE64.sub(b"", compact)
    # Padding inside the data ends a base64 stream; keep what precedes the first pad run.
    pad = compact.find(b"=")
    if pad >= 0:
        tail = compact[pad:].rstrip(b"=")
        if tail:
            clean = False
        compact = compact[:pad]
    remainder = len(compact) % 4
    if remainder == 1:  # one lone sextet cannot encode a byte
        compact = compact[:-1]
        clean = False
    elif remainder:
        compact += b"=" * (4 - remainder)
    try:
        return binascii.a2b_base64(compact), clean
    except (binascii.Error, ValueError):
        return b"", False


def _decode_uu(body: bytes) -> tuple[bytes, bool]:
    """Decode a uuencoded body between its begin and end lines; report whether it was clean."""
    out: list[bytes] = []
    clean = True
    started = False
    for line in body.splitlines():
        if not started:
            started = line.startswith(b"begin ")
            continue
        if line.strip() in (b"end", b"`"):
            if line.strip() == b"end":
                break
            continue
        if not line.strip():
            continue
        try:
            out.append(binascii.a2b_uu(line))
        except binascii.Error:
            # Some encoders add junk at line ends; trust the length byte.
            try:
                nbytes = (((line[0] - 32) & 63) * 4 + 5) // 3
                out.append(binascii.a2b_uu(line[:nbytes]))
            except (binascii.Error, IndexError):
                clean = False
    return b"".join(out), clean and started


def decode_transfer(body: bytes, encoding: str) -> tuple[bytes, bool]:
    """Return (decoded bytes, whether the Content-Transfer-Encoding was known and clean).

    Edge cases: unknown encodings return the bytes unchanged with False; bad base64 keeps
    whatever decodes; quoted-printable never fails.
    """
    cte = encoding.strip().lower()
    if cte in _IDENTITY_CTE:
        return body, True
    if cte == "base64":
        return _decode_base64(body)
    if cte == "quoted-printable":
        return binascii.a2b_qp(body), True
    if cte in _UUENCODE_CTE:
        return _decode_uu(body)
    return body, False
