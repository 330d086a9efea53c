"""Interpret the message-level header fields: addresses, message ids, bulk signals."""

from __future__ import annotations

import re
from email.utils import getaddresses
from functools import lru_cache

from mailbox.parsing.filenames import strip_unsafe_characters
from mailbox.parsing.headers import MAX_LINE_CHARS, Headers, clean_line, decode_words
from mailbox.parsing.limits import Budget
from mailbox.parsing.results import Address, BulkHeaders

MAX_REFERENCES = 100
MAX_ADDRESS_CHARS = 320
MAX_BULK_VALUE_CHARS = 256
_BRACKETED_ID = re.compile(r"<([^<>]*)>")
_WHITESPACE = re.compile(r"\s+")
# The same address headers recur across a mailbox (a list's To, a correspondent's From),
# and the standard library's parser is the costliest part of reading one (bench/sync.py's
# profile), so parses of values up to this length are kept, at most CACHED_ADDRESS_HEADERS
# of them (the parse is a pure function of the text).
MAX_CACHED_ADDRESS_HEADER_CHARS = 1000
CACHED_ADDRESS_HEADERS = 4096


def _normalize_address(address: str) -> str:
    """Return address with its domain lower-cased, or "" when it is not a usable mailbox."""
    address = strip_unsafe_characters(address).strip()
    if not address or len(address) > MAX_ADDRESS_CHARS or _WHITESPACE.search(address):
        return ""
    local, at, domain = address.rpartition("@")
    if not at or not local or not domain or "@" in domain or domain.startswith(".") or "." == domain[-1]:
        return ""
    return f"{local}@{domain.lower()}"


@lru_cache(maxsize=CACHED_ADDRESS_HEADERS)
def _address_pairs(value: str) -> tuple[tuple[str, str], ...]:
    return tuple(getaddresses([value]))  # a tuple: one cached parse serves every caller


def parse_addresses(value: str | None, budget: Budget, truncated: bool = False) -> tuple[Address, ...]:
    """Return the mailboxes of an address-list header, at most max_addresses of them.

    Edge cases: groups contribute their members ("undisclosed-recipients:;" gives none);
    an entry with a display name but no usable address keeps the name with address "";
    entries with neither are dropped; past max_addresses the rest are dropped
    ("address-limit"); a header cut by the length limit loses its last, partial entry.
    """
    if not value:
        return ()
    try:
        if len(value) <= MAX_CACHED_ADDRESS_HEADER_CHARS:
            pairs = _address_pairs(value)
        else:
            pairs = tuple(getaddresses([value]))
    except Exception:  # the stdlib address parser is best effort on hostile input
        budget.defect("bad-address")
        return ()
    if truncated and pairs:
        pairs = pairs[:-1]
    result: list[Address] = []
    for name, address in pairs:
        display = clean_line(decode_words(name, budget)) if name else ""
        normalized = _normalize_address(address)
        if not normalized and not display:
            continue
        if len(result) >= budget.limits.max_addresses:
            budget.defect("address-limit")
            break
        result.append(Address(address=normalized, display_name=display))
    return tuple(result)


def _clean_id(text: str) -> str:
    """Return one message id without brackets, whitespace or unsafe characters, bounded."""
    return strip_unsafe_characters(_WHITESPACE.sub("", text))[:MAX_LINE_CHARS]


def parse_message_id(value: str | None) -> str:
    """Return the first message id in value without angle brackets, or "".

    Edge cases: an id without brackets is taken as the first whitespace-separated token;
    text around the brackets (comments, "message from ...") is ignored.
    """
    if not value:
        return ""
    match = _BRACKETED_ID.search(value)
    if match:
        return _clean_id(match.group(1))
    tokens = value.split(None, 1)
    return _clean_id(tokens[0]) if tokens else ""


def parse_references(value: str | None) -> tuple[str, ...]:
    """Return the ids in a References header, keeping the first and the latest when over 100.

    Edge cases: ids without brackets are split on whitespace; empty and duplicate ids are dropped.
    """
    if not value:
        return ()
    found = _BRACKETED_ID.findall(value) if "<" in value else value.split()
    ids: list[str] = []
    seen: set[str] = set()
    for raw_id in found:
        cleaned = _clean_id(raw_id)
        if cleaned and cleaned not in seen:
            seen.add(cleaned)
            ids.append(cleaned)
    if len(ids) > MAX_REFERENCES:
        # The root and the most recent ancestors are what threading needs (RFC 5322 3.6.4).
        ids = ids[:1] + ids[-(MAX_REFERENCES - 1) :]
    return tuple(ids)


def parse_bulk_headers(headers: Headers) -> BulkHeaders:
    """Return the bulk-mail signals of a header block, cleaned and bounded."""
    return BulkHeaders(
        auto_submitted=clean_line(headers.get("auto-submitted") or "", MAX_BULK_VALUE_CHARS),
        has_list_id="list-id" in headers,
        has_list_unsubscribe="list-unsubscribe" in headers,
        precedence=clean_line(headers.get("precedence") or "", MAX_BULK_VALUE_CHARS),
    )


def parse_subject(value: str | None, budget: Budget) -> str:
    """Return the decoded subject on one line, unsafe characters removed, at most 998 characters."""
    return clean_line(decode_words(value, budget)) if value else ""
