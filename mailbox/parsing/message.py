"""Parse one raw message into a bounded ParsedMessage; never raise."""

from __future__ import annotations

import re
from datetime import datetime
from typing import TypedDict

from mailbox.parsing.classify import (
    cid_references,
    classify_parts,
    display_leaves,
    excluded_entities,
    is_body_text,
)
from mailbox.parsing.decoding import decode_text
from mailbox.parsing.fields import (
    parse_addresses,
    parse_bulk_headers,
    parse_message_id,
    parse_references,
    parse_subject,
)
from mailbox.parsing.headers import Headers, charset_of, parse_date, scan_headers
from mailbox.parsing.htmltext import html_to_text
from mailbox.parsing.limits import Budget, ParseLimits
from mailbox.parsing.results import Address, BulkHeaders, ParsedMessage
from mailbox.parsing.structure import Entity, decoded_body, walk

_NEWLINES = re.compile(r"\r\n?")
# C0 controls except tab and newline, DEL, C1 controls and unpaired surrogates.
_UNSAFE_IN_TEXT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_PGP_MESSAGE = "-----BEGIN PGP MESSAGE-----"
_PGP_SIGNED = "-----BEGIN PGP SIGNED MESSAGE-----"
_PART_SEPARATOR = "\n\n"
_DEFAULT_LIMITS = ParseLimits()


def as_bytes(raw: object) -> bytes:
    """Return raw as bytes: bytes-like objects as they are, str as UTF-8, anything else empty."""
    if isinstance(raw, bytes):
        return raw
    if isinstance(raw, bytearray | memoryview):
        return bytes(raw)
    if isinstance(raw, str):
        return raw.encode("utf-8", "replace")
    return b""


def clean_text(text: str) -> str:
    """Return text with newlines normalized to LF and control characters (NUL included) removed."""
    return _UNSAFE_IN_TEXT.sub("", _NEWLINES.sub("\n", text))


def part_text(raw: bytes, entity: Entity, budget: Budget, max_chars: int) -> str:
    """Return a text leaf's body decoded from its transfer encoding and charset.

    Edge cases: only the first 4 * max_chars decoded bytes are read (no charset needs more
    bytes per character), so a huge part costs no more than a bounded one.
    """
    data = decoded_body(raw, entity, budget, max_bytes=max_chars * 4)
    cut = len(data) > max_chars * 4
    if cut:
        data = data[: max_chars * 4]
    text, bad_charset = decode_text(data, charset_of(entity.params), final=not cut)
    if bad_charset:
        budget.defect("bad-charset")
    return text


def _body_text(
    raw: bytes, entities: list[Entity], leaves: list[int], budget: Budget
) -> tuple[str, dict[int, str]]:
    """Return the plain-text body from the display leaves, and the decoded HTML of those read."""
    max_chars = budget.limits.max_text_chars
    pieces: list[str] = []
    html_seen: dict[int, str] = {}
    used = 0
    for index in leaves:
        if used >= max_chars:
            budget.defect("text-truncated")
            break
        if pieces and budget.expired():  # past the deadline, still read the first part
            break
        entity = entities[index]
        is_html = entity.media_type == "text/html"
        text = part_text(raw, entity, budget, (max_chars - used) * (4 if is_html else 1))
        if is_html:
            html_seen[index] = text
            text = html_to_text(text, max_chars - used, budget)
        text = clean_text(text).strip("\n")
        if not text:
            continue
        if len(text) > max_chars - used:
            budget.defect("text-truncated")
            text = text[: max_chars - used]
        pieces.append(text)
        used += len(text) + len(_PART_SEPARATOR)
    return _PART_SEPARATOR.join(pieces)[:max_chars], html_seen


def _html_texts(
    raw: bytes, entities: list[Entity], excluded: set[int], seen: dict[int, str], budget: Budget
) -> list[str]:
    """Return the decoded HTML of every reachable HTML body part, bounded in total size."""
    texts: list[str] = []
    room = budget.limits.max_text_chars * 4
    for entity in entities:
        if room <= 0 or budget.expired():
            break
        if entity.index in excluded or entity.media_type != "text/html" or not is_body_text(entity):
            continue
        text = seen.get(entity.index)
        if text is None:
            text = part_text(raw, entity, budget, room)
        texts.append(text[:room])
        room -= len(text)
    return texts


class _HeaderFields(TypedDict):
    """The ParsedMessage fields read from the top-level header block."""

    message_id: str
    in_reply_to: str
    references: tuple[str, ...]
    subject: str
    sent_at: datetime | None
    sender: Address | None
    to: tuple[Address, ...]
    cc: tuple[Address, ...]
    bcc: tuple[Address, ...]
    reply_to: tuple[Address, ...]
    bulk_headers: BulkHeaders


def _from_headers(headers: Headers, budget: Budget) -> _HeaderFields:
    """Return the ParsedMessage fields that come from the top-level header block."""
    truncated = headers.truncated

    def addresses(name: str) -> tuple[Address, ...]:
        """Parse one address-list field, dropping a last entry cut by the length limit."""
        return parse_addresses(headers.get(name), budget, truncated=name in truncated)

    senders = addresses("from")
    return {
        "message_id": parse_message_id(headers.get("message-id")),
        "in_reply_to": parse_message_id(headers.get("in-reply-to")),
        "references": parse_references(headers.get("references")),
        "subject": parse_subject(headers.get("subject"), budget),
        "sent_at": parse_date(headers.get("date")),
        "sender": senders[0] if senders else None,
        "to": addresses("to"),
        "cc": addresses("cc"),
        "bcc": addresses("bcc"),
        "reply_to": addresses("reply-to"),
        "bulk_headers": parse_bulk_headers(headers),
    }


def _parse(raw: bytes, budget: Budget) -> ParsedMessage:
    """Parse raw within budget; may raise on a bug, which parse_message turns into "unparseable"."""
    entities = walk(raw, budget)
    fields = _from_headers(entities[0].headers, budget)
    excluded = excluded_entities(entities)
    leaves = display_leaves(entities, raw, excluded, prefer="text/plain")
    text_body, html_seen = _body_text(raw, entities, leaves, budget)
    html_texts = _html_texts(raw, entities, excluded, html_seen, budget)
    parts = classify_parts(raw, entities, excluded, cid_references(html_texts), budget)
    return ParsedMessage(
        **fields,
        text_body=text_body,
        has_html=bool(html_texts),
        attachments=tuple(parts.attachments),
        inline_count=parts.inline_count,
        attachment_total_size=sum(a.size for a in parts.attachments),
        encrypted=parts.encrypted or _PGP_MESSAGE in text_body,
        unverified_signature=parts.unverified_signature or _PGP_SIGNED in text_body,
        unexpanded_tnef=parts.unexpanded_tnef,
        defects=budget.defects,
    )


def _headers_only(raw: bytes, limits: ParseLimits) -> ParsedMessage:
    """Return what the top-level header block alone gives, marked "unparseable"."""
    budget = Budget(limits)
    budget.defect("unparseable")
    try:
        headers, _body_start = scan_headers(raw, 0, len(raw), budget)
        return ParsedMessage(**_from_headers(headers, budget), defects=budget.defects)
    except Exception:  # last resort: nothing at all could be read
        return ParsedMessage(defects=budget.defects)


def parse_message(raw: bytes, limits: ParseLimits = _DEFAULT_LIMITS) -> ParsedMessage:
    """Parse one raw RFC 5322 message; never raise, whatever the input.

    Edge cases: every limit in ``limits`` cuts work short and records a defect code
    (``ParsedMessage.defects``); a message that cannot be walked at all falls back to its
    header block with "unparseable" first among the defects; non-bytes input is read as
    UTF-8 text (str) or as empty.
    """
    try:
        return _parse(as_bytes(raw), Budget(limits))
    except Exception:  # the contract is "never raises"; the defect records it
        return _headers_only(as_bytes(raw), limits)


def find_entity(raw: bytes, part_index: int, limits: ParseLimits) -> tuple[bytes, Entity] | None:
    """Walk raw again and return it with the entity at part_index, or None when out of range."""
    data = as_bytes(raw)
    entities = walk(data, Budget(limits))
    if not isinstance(part_index, int) or not 0 <= part_index < len(entities):
        return None
    return data, entities[part_index]


def attachment_bytes(raw: bytes, part_index: int, limits: ParseLimits = _DEFAULT_LIMITS) -> bytes | None:
    """Return the decoded payload of the part at part_index (as in AttachmentInfo), or None.

    Edge cases: a multipart gives None; an attached message/rfc822 gives the message's raw
    bytes; use the same limits as the parse that produced part_index, or indices past a
    cut-off may not be found; never raises.
    """
    try:
        found = find_entity(raw, part_index, limits)
        if found is None:
            return None
        data, entity = found
        if entity.container:
            if entity.media_type == "message/rfc822":
                return data[entity.body_start : entity.end]
            return None
        return decoded_body(data, entity)
    except Exception:  # a download must fail soft, never crash its caller
        return None
