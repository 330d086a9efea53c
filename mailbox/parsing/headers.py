"""Read a header block into bounded fields; decode encoded words, parameters and dates."""

from __future__ import annotations

import base64
import binascii
import re
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from urllib.parse import unquote_to_bytes

from mailbox.parsing.decoding import decode_header_bytes, decode_text
from mailbox.parsing.filenames import strip_unsafe_characters
from mailbox.parsing.limits import Budget

MAX_LINE_CHARS = 998
_BLANK_LINE = re.compile(rb"\n\r?\n")
_NEXT_FIELD = re.compile(rb"\n(?![ \t])")
_HEADER_NAME = re.compile(rb"[\x21-\x39\x3b-\x7e]+")
_DEADLINE_EVERY_LINES = 1024
_ENCODED_WORD = re.compile(r"=\?([^?\s]+)\?([bBqQ])\?([^?\s]*)\?=")
_Q_HEX = re.compile(rb"=([0-9A-Fa-f]{2})")
_PARAM = re.compile(r';\s*([^\s=;"]+)\s*(?:=\s*("(?:[^"\\]|\\.)*(?:"|$)|[^;]*))?', re.S)
# Only \\ and \" are unescaped (as the standard library does): mailers put bare Windows
# paths in quotes, and "C:\Users\x.txt" must keep its separators to lose its directories.
_QUOTED_PAIR = re.compile(r'\\([\\"])')
_SECTION = re.compile(r"^(?P<base>[^*]+)\*(?P<num>\d{1,3})(?P<ext>\*?)$")
_MAX_SECTIONS = 64
_WS_RUN = re.compile(r"\s+")


class Headers:
    """The fields of one header block, by lower-cased name, in order; values decoded to str."""

    def __init__(self, fields: list[tuple[str, str]], truncated: frozenset[str] = frozenset()) -> None:
        self._fields: dict[str, list[str]] = {}
        self.truncated = truncated
        for name, value in fields:
            self._fields.setdefault(name, []).append(value)

    def get(self, name: str) -> str | None:
        """Return the first value of the field, or None when absent."""
        values = self._fields.get(name.lower())
        return values[0] if values else None

    def __contains__(self, name: str) -> bool:
        """Return whether the field occurs at all (even empty)."""
        return name.lower() in self._fields


def scan_headers(raw: bytes, start: int, end: int, budget: Budget) -> tuple[Headers, int]:
    """Read the header block of raw[start:end]; return it and the offset where the body starts.

    Edge cases: a leading mbox "From " line is skipped; a line with no colon, or whose
    "name" holds whitespace, is text: the block ends and the body starts there
    ("missing-header-separator"); a field whose name is empty or holds other bytes outside
    printable ASCII (NUL, 8-bit) is dropped ("bad-header-name"); fields past max_headers are dropped and
    the rest of the block skipped ("header-limit"); a field longer than max_header_length
    is cut ("header-too-long"); on time-out the rest of the block is skipped.
    """
    limits = budget.limits
    fields: list[tuple[str, str]] = []
    truncated: set[str] = set()
    name: str | None = None
    chunks: list[bytes] = []
    room = 0
    pos = start
    lines = 0

    def flush() -> None:
        """Store the field being read, if any."""
        if name is not None:
            fields.append((name, decode_header_bytes(b"".join(chunks)).strip()))

    def done(body_start: int) -> tuple[Headers, int]:
        """Finish the block: store the last field and report where the body starts."""
        flush()
        return Headers(fields, frozenset(truncated)), body_start

    while pos < end:
        newline = raw.find(b"\n", pos, end)
        line_end = end if newline < 0 else newline + 1
        line = raw[pos:line_end].rstrip(b"\r\n")
        lines += 1
        if lines % _DEADLINE_EVERY_LINES == 0 and budget.expired():
            return done(_skip_block(raw, pos, end))
        if not line:
            return done(line_end)
        if line[:1] in (b" ", b"\t"):
            if name is not None and room == 0:
                # The field is full: skip its remaining continuation lines at C speed.
                budget.defect("header-too-long")
                truncated.add(name)
                following = _NEXT_FIELD.search(raw, pos, end)
                pos = following.start() + 1 if following else end
                continue
            if name is not None:
                if len(line) > room:
                    budget.defect("header-too-long")
                    truncated.add(name)
                chunks.append(line[:room])
                room = max(0, room - len(line))
            pos = line_end
            continue
        if pos == start and line.startswith(b"From "):
            pos = line_end  # an mbox separator line
            continue
        colon = line.find(b":")
        raw_name = line[:colon].rstrip(b" \t") if colon >= 0 else b""
        if colon < 0 or b" " in raw_name or b"\t" in raw_name:
            budget.defect("missing-header-separator")
            return done(pos)
        flush()
        name = None
        pos = line_end
        if not _HEADER_NAME.fullmatch(raw_name):
            budget.defect("bad-header-name")
            continue
        if len(fields) >= limits.max_headers:
            budget.defect("header-limit")
            return done(_skip_block(raw, pos, end))
        name = raw_name.decode("ascii").lower()
        value = line[colon + 1 :]
        room = limits.max_header_length
        if len(value) > room:
            budget.defect("header-too-long")
            truncated.add(name)
        chunks = [value[:room]]
        room = max(0, room - len(value))
    return done(pos)


def _skip_block(raw: bytes, pos: int, end: int) -> int:
    """Return the offset after the next blank line at or after pos (a line start), or end."""
    if raw[pos : pos + 1] == b"\n":
        return pos + 1
    if raw[pos : pos + 2] == b"\r\n":
        return pos + 2
    match = _BLANK_LINE.search(raw, pos, end)
    return match.end() if match else end


def clean_line(text: str, max_chars: int = MAX_LINE_CHARS) -> str:
    """Return text on one line: unsafe characters removed, whitespace runs collapsed, bounded."""
    text = _WS_RUN.sub(" ", text[: max_chars * 4])
    return strip_unsafe_characters(text).strip()[:max_chars].strip()


def _decode_word_bytes(encoding: str, payload: str) -> bytes:
    """Decode the payload of one encoded word (B or Q) to bytes, leniently."""
    data = payload.encode("ascii", "replace")
    if encoding in "bB":
        data = data + b"=" * (-len(data) % 4)
        try:
            return base64.b64decode(data)
        except (binascii.Error, ValueError):
            return payload.encode("ascii", "replace")
    return _Q_HEX.sub(lambda m: bytes([int(m.group(1), 16)]), data.replace(b"_", b" "))


def decode_words(value: str, budget: Budget | None = None) -> str:
    """Decode RFC 2047 encoded words in value; leave anything that is not one untouched.

    Edge cases: whitespace between adjacent encoded words is dropped; adjacent words in the
    same charset are decoded together (a UTF-8 character may be split across words); an
    unknown or refused charset (e.g. UTF-7) is decoded by detection and flagged "bad-charset".
    """
    if "=?" not in value:
        return value
    out: list[str] = []
    pending: list[bytes] = []
    pending_charset: str | None = None
    pos = 0

    def flush_pending() -> None:
        """Decode the run of adjacent same-charset words collected so far."""
        if pending:
            text, bad = decode_text(b"".join(pending), pending_charset or "utf-8")
            if bad and budget is not None:
                budget.defect("bad-charset")
            out.append(text)
            pending.clear()

    for match in _ENCODED_WORD.finditer(value):
        between = value[pos : match.start()]
        if between.strip() or not pending:
            flush_pending()
            out.append(between)
        charset = match.group(1).split("*", 1)[0]
        if pending and charset.lower() != (pending_charset or "").lower():
            flush_pending()
        pending_charset = charset
        pending.append(_decode_word_bytes(match.group(2), match.group(3)))
        pos = match.end()
    flush_pending()
    out.append(value[pos:])
    return "".join(out)


def _unquote(value: str) -> str:
    """Strip one level of double quotes and the \\\\ and \\" escapes from a parameter value."""
    value = value.strip()
    if value.startswith('"'):
        value = value[1:-1] if value.endswith('"') and len(value) > 1 else value[1:]
        return _QUOTED_PAIR.sub(r"\1", value)
    return value


def _decode_extended(value: str, with_charset: bool) -> tuple[bytes, str | None]:
    """Split an RFC 2231 value into percent-decoded bytes and its charset (first section only)."""
    charset = None
    if with_charset and value.count("'") >= 2:
        charset, _language, value = value.split("'", 2)
    return unquote_to_bytes(value), charset or None


def _join_sections(sections: dict[int, tuple[str, bool]], budget: Budget | None) -> str:
    """Join RFC 2231 continuation sections (name*0, name*1*, ...) into one decoded value."""
    pieces: list[bytes] = []
    charset: str | None = None
    for number in sorted(sections)[:_MAX_SECTIONS]:
        value, extended = sections[number]
        if extended:
            data, found = _decode_extended(value, with_charset=number == 0)
            charset = charset or found
            pieces.append(data)
        else:
            pieces.append(value.encode("utf-8"))
    text, bad = decode_text(b"".join(pieces), charset or "utf-8")
    if bad and budget is not None:
        budget.defect("bad-charset")
    return text


def parse_parameterized(value: str | None, budget: Budget | None = None) -> tuple[str, dict[str, str]]:
    """Split a Content-Type/Disposition value into its lower-cased main value and parameters.

    Edge cases: the first occurrence of a repeated parameter wins; RFC 2231 forms
    (name*=charset''pct, name*0*=, name*1=) are decoded and take precedence over the plain
    form; quoted values lose their quotes and escapes; names are lower-cased.
    """
    if not value:
        return "", {}
    main, sep, rest = value.partition(";")
    plain: dict[str, str] = {}
    extended: dict[str, str] = {}
    sections: dict[str, dict[int, tuple[str, bool]]] = {}
    for match in _PARAM.finditer(sep + rest):
        name = match.group(1).lower()
        raw_value = _unquote(match.group(2) or "")
        section = _SECTION.match(name)
        if section:
            parts = sections.setdefault(section["base"], {})
            parts.setdefault(int(section["num"]), (raw_value, bool(section["ext"])))
        elif name.endswith("*"):
            extended.setdefault(name[:-1], raw_value)
        else:
            plain.setdefault(name, raw_value)
    params = dict(plain)
    for name, parts in sections.items():
        params[name] = _join_sections(parts, budget)
    for name, raw_value in extended.items():
        data, charset = _decode_extended(raw_value, with_charset=True)
        text, bad = decode_text(data, charset or "utf-8")
        if bad and budget is not None:
            budget.defect("bad-charset")
        params[name] = text
    return main.strip().lower(), params


def parse_date(value: str | None) -> datetime | None:
    """Return the Date header as an aware UTC datetime, or None when absent or unparseable.

    Edge cases: a date without zone (or "-0000") is taken as UTC; dates that overflow on
    conversion give None.
    """
    if not value:
        return None
    try:
        parsed = parsedate_to_datetime(clean_line(value, 256))
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        return parsed.astimezone(UTC)
    except (TypeError, ValueError, IndexError, OverflowError, AttributeError):
        return None


def charset_of(params: dict[str, str]) -> str | None:
    """Return the charset parameter, or None when missing or empty."""
    charset = params.get("charset", "").strip()
    return charset or None
