"""Split raw bytes into MIME entities, iteratively and within the parse limits.

The standard library's parser recurses once per nesting level and builds every part before
anything can count them; this walker splits one entity at a time from an explicit stack,
working on offsets into the raw bytes, so depth, part count and time are checked before
each entity and nothing is copied until a leaf is decoded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mailbox.parsing.decoding import decode_transfer
from mailbox.parsing.headers import Headers, parse_parameterized, scan_headers
from mailbox.parsing.limits import Budget

_MEDIA_TYPE = re.compile(r"[a-z0-9!#$&^_.+-]+/[a-z0-9!#$&^_.+-]+")
_IDENTITY_CTE = frozenset({"", "7bit", "8bit", "binary"})
_MAX_BOUNDARY_CHARS = 200
_DELIMITER_TAIL = re.compile(rb"[ \t]*\r?")
_DEADLINE_EVERY_CANDIDATES = 1024


@dataclass
class Entity:
    """One MIME entity: its headers and where its body lies in the raw bytes (walk order index)."""

    index: int
    depth: int
    parent: int | None
    headers: Headers
    media_type: str  # effective type: the declared one, else the context default
    declared_type: str | None  # None when missing or invalid
    params: dict[str, str]
    disposition: str
    disposition_params: dict[str, str]
    transfer_encoding: str
    body_start: int
    end: int
    container: bool = False  # multipart or message/rfc822 whose children were walked
    children: list[int] = field(default_factory=list)

    @property
    def raw_name(self) -> str | None:
        """Return the undecoded file name: Content-Disposition filename, else Content-Type name."""
        return self.disposition_params.get("filename") or self.params.get("name") or None

    @property
    def content_id(self) -> str:
        """Return the Content-ID without brackets or whitespace, lower-cased ("" when absent)."""
        value = self.headers.get("content-id") or ""
        return "".join(value.split()).strip("<>").lower()


def _make_entity(
    raw: bytes, start: int, end: int, depth: int, parent: int | None, default: str, index: int, budget: Budget
) -> Entity:
    """Read one entity's header block and interpret its content headers."""
    headers, body_start = scan_headers(raw, start, end, budget)
    main, params = parse_parameterized(headers.get("content-type"), budget)
    declared: str | None = main if _MEDIA_TYPE.fullmatch(main) else None
    if main and declared is None:
        budget.defect("bad-content-type")
    disposition, disposition_params = parse_parameterized(headers.get("content-disposition"), budget)
    return Entity(
        index=index,
        depth=depth,
        parent=parent,
        headers=headers,
        media_type=declared or ("text/plain" if main else default),
        declared_type=declared,
        params=params,
        disposition=disposition,
        disposition_params=disposition_params,
        transfer_encoding=(headers.get("content-transfer-encoding") or "").strip().lower(),
        body_start=body_start,
        end=end,
    )


def _split_multipart(
    raw: bytes, start: int, end: int, boundary: str, max_spans: int, budget: Budget
) -> list[tuple[int, int]] | None:
    """Return the (start, end) spans of a multipart body's parts; None when no delimiter is found.

    A delimiter is a line that is "--" + boundary, optionally "--" (close), then only spaces
    or tabs. Edge cases: the line break before a delimiter belongs to the delimiter; a
    missing close delimiter ends the last part at the end of the body
    ("missing-close-boundary"); the preamble and epilogue are ignored; at most max_spans
    spans are returned; lines that merely start like a delimiter are checked under the
    deadline.
    """
    marker = b"--" + boundary.encode("utf-8", "replace")
    spans: list[tuple[int, int]] = []
    part_start: int | None = None
    found = False
    candidate = start if raw.startswith(marker, start) else _next_candidate(raw, marker, start, end)
    checked = 0
    while candidate >= 0:
        checked += 1
        if checked % _DEADLINE_EVERY_CANDIDATES == 0 and budget.expired():
            break
        after = candidate + len(marker)
        closing = raw.startswith(b"--", after, end)
        newline = raw.find(b"\n", after, end)
        line_end = end if newline < 0 else newline
        if not _DELIMITER_TAIL.fullmatch(raw, after + (2 if closing else 0), line_end):
            candidate = _next_candidate(raw, marker, after, end)
            continue
        found = True
        if part_start is not None:
            part_end = candidate
            if part_end > part_start and raw[part_end - 1] == 0x0A:
                part_end -= 1
                if part_end > part_start and raw[part_end - 1] == 0x0D:
                    part_end -= 1
            spans.append((part_start, part_end))
            if len(spans) >= max_spans:
                return spans
        if closing:
            return spans
        part_start = min(line_end + 1, end)
        candidate = _next_candidate(raw, marker, line_end, end)
    if not found:
        return None
    if part_start is not None:
        budget.defect("missing-close-boundary")
        spans.append((part_start, end))
    return spans


def _next_candidate(raw: bytes, marker: bytes, pos: int, end: int) -> int:
    """Return the offset of the next line that starts with marker at or after pos, or -1."""
    found = raw.find(b"\n" + marker, pos, end)
    return found + 1 if found >= 0 else -1


def walk(raw: bytes, budget: Budget) -> list[Entity]:
    """Return the message's entities in depth-first walk order (index 0 is the message itself).

    Edge cases: multiparts deeper than max_depth are not split ("nesting-limit"); walking
    stops after max_parts entities ("part-limit") or at the deadline ("time-limit"); a
    multipart without a usable boundary, or whose boundary never occurs, is read as
    text/plain ("no-boundary"); message/rfc822 is descended only when not transfer-encoded.
    """
    limits = budget.limits
    entities: list[Entity] = []
    stack: list[tuple[int, int, int, int | None, str]] = [(0, len(raw), 0, None, "text/plain")]
    while stack:
        if entities and len(entities) >= limits.max_parts:
            budget.defect("part-limit")
            break
        if entities and budget.expired():
            break
        start, end, depth, parent, default = stack.pop()
        entity = _make_entity(raw, start, end, depth, parent, default, len(entities), budget)
        entities.append(entity)
        if parent is not None:
            entities[parent].children.append(entity.index)
        children: list[tuple[int, int, int, int | None, str]] = []
        if entity.media_type.startswith("multipart/"):
            boundary = entity.params.get("boundary", "")
            spans = None
            if boundary and len(boundary) <= _MAX_BOUNDARY_CHARS:
                if depth >= limits.max_depth:
                    budget.defect("nesting-limit")
                    entity.container = True
                    continue
                room = limits.max_parts - len(entities) + 1
                spans = _split_multipart(raw, entity.body_start, end, boundary, room, budget)
            if spans is None:
                budget.defect("no-boundary")
                entity.media_type = "text/plain"
                continue
            child_default = "message/rfc822" if entity.media_type == "multipart/digest" else "text/plain"
            children = [(s, e, depth + 1, entity.index, child_default) for s, e in spans]
        elif entity.media_type == "message/rfc822" and entity.transfer_encoding in _IDENTITY_CTE:
            if depth >= limits.max_depth:
                budget.defect("nesting-limit")
                entity.container = True
                continue
            children = [(entity.body_start, end, depth + 1, entity.index, "text/plain")]
        if children:
            entity.container = True
            stack.extend(reversed(children))
        elif entity.media_type.startswith("multipart/"):
            entity.container = True  # an empty multipart: nothing to read
    return entities


def decoded_size(raw: bytes, entity: Entity, budget: Budget | None = None) -> int:
    """Return the decoded size of a leaf's body; base64 is counted, not decoded.

    Edge cases: for base64 with stray characters the count is an estimate (within a few
    bytes per stray character).
    """
    if entity.transfer_encoding != "base64":
        return len(decoded_body(raw, entity, budget))
    body = raw[entity.body_start : entity.end]
    spaces = sum(body.count(ch) for ch in (b"\n", b"\r", b" ", b"\t"))
    padding = len(body.rstrip(b" \t\r\n")) - len(body.rstrip(b" \t\r\n").rstrip(b"="))
    return max(0, (len(body) - spaces) * 3 // 4 - padding)


def decoded_body(
    raw: bytes, entity: Entity, budget: Budget | None = None, max_bytes: int | None = None
) -> bytes:
    """Return a leaf entity's body with its transfer encoding removed ("bad-transfer-encoding" if unclean).

    Edge cases: with max_bytes, only about the first 4 * max_bytes encoded bytes are read,
    cut at a line end, so the result still holds more than max_bytes bytes when the body
    has them (quoted-printable expands at most about 3.1 times).
    """
    end = entity.end
    window = 4 * max_bytes + 4 if max_bytes is not None else 0
    if max_bytes is not None and end - entity.body_start > window:
        cut = raw.rfind(b"\n", entity.body_start, entity.body_start + window)
        end = cut + 1 if cut > entity.body_start else entity.body_start + window
    data, clean = decode_transfer(raw[entity.body_start : end], entity.transfer_encoding)
    if not clean and budget is not None:
        budget.defect("bad-transfer-encoding")
    return data
