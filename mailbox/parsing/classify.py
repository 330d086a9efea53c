"""Decide what each MIME entity is: body text, inline resource, attachment, signature or ciphertext."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import unquote

from mailbox.parsing.filenames import normalize_file_name
from mailbox.parsing.headers import decode_words
from mailbox.parsing.limits import Budget
from mailbox.parsing.results import AttachmentInfo
from mailbox.parsing.structure import Entity, decoded_size

BODY_TYPES = frozenset({"text/plain", "text/html"})
_PKCS7_MIME = frozenset({"application/pkcs7-mime", "application/x-pkcs7-mime"})
_SIGNATURES = frozenset(
    {"application/pgp-signature", "application/pkcs7-signature", "application/x-pkcs7-signature"}
)
_TNEF = frozenset({"application/ms-tnef", "application/vnd.ms-tnef"})
_CID_REFERENCE = re.compile(r"cid:([^\s\"'<>)]+)", re.I)
_MAX_CID_REFERENCES = 1000


def is_body_text(entity: Entity) -> bool:
    """Return whether a leaf is displayable body text rather than an attached text file.

    Edge cases: text/plain or text/html only; Content-Disposition attachment makes it a
    file; a file name without an explicit inline disposition makes it a file too.
    """
    if entity.container or entity.media_type not in BODY_TYPES:
        return False
    if entity.disposition == "attachment":
        return False
    return entity.raw_name is None or entity.disposition == "inline"


def _is_attached_message(entity: Entity) -> bool:
    """Return whether entity is a message/rfc822 sent as an attachment (not shown inline)."""
    return entity.media_type == "message/rfc822" and entity.disposition == "attachment"


def excluded_entities(entities: list[Entity]) -> set[int]:
    """Return indices that belong to no reading of this message.

    Those are the insides of attached messages, everything in multipart/encrypted, and the
    signature parts of multipart/signed (every child after the first).
    """
    excluded: set[int] = set()
    for entity in entities:
        if entity.parent is None:
            continue
        parent = entities[entity.parent]
        if (
            parent.index in excluded
            or _is_attached_message(parent)
            or parent.media_type == "multipart/encrypted"
            or (parent.media_type == "multipart/signed" and parent.children[:1] != [entity.index])
        ):
            excluded.add(entity.index)
    return excluded


def related_root(entity: Entity, entities: list[Entity]) -> int | None:
    """Return the root child of a multipart/related: the one its start parameter names, else the first."""
    start = "".join(entity.params.get("start", "").split()).strip("<>").lower()
    if start:
        for child in entity.children:
            if entities[child].content_id == start:
                return child
    return entity.children[0] if entity.children else None


def _blank(raw: bytes, entity: Entity) -> bool:
    """Return whether an entity's body is empty or whitespace only (before decoding)."""
    return not raw[entity.body_start : entity.end].strip()


def _choose_alternative(entity: Entity, entities: list[Entity], raw: bytes, prefer: str) -> int | None:
    """Return the child of a multipart/alternative to read: prefer is "text/plain" or "text/html"."""
    children = [entities[i] for i in entity.children]
    leaves = [c for c in children if is_body_text(c)]
    wanted = [c for c in leaves if c.media_type == prefer and not _blank(raw, c)]
    if wanted:
        return wanted[0].index if prefer == "text/plain" else wanted[-1].index
    containers = [c for c in children if c.container and c.children]
    if containers:
        return containers[0].index if prefer == "text/plain" else containers[-1].index
    others = [c for c in leaves if not _blank(raw, c)]
    return others[0].index if others else None


def display_leaves(entities: list[Entity], raw: bytes, excluded: set[int], prefer: str) -> list[int]:
    """Return, in order, the leaves a reader sees as the body; alternatives resolved by prefer.

    Edge cases: a blank preferred alternative gives way to its sibling; multipart/related
    reads only its root; multipart/signed only its first child; attached messages and
    encrypted parts contribute nothing.
    """
    out: list[int] = []
    stack = [0] if entities else []
    while stack:
        entity = entities[stack.pop()]
        if entity.index in excluded:
            continue
        if not entity.container:
            if is_body_text(entity):
                out.append(entity.index)
            continue
        media_type = entity.media_type
        if media_type == "multipart/alternative":
            chosen = _choose_alternative(entity, entities, raw, prefer)
            following = [chosen] if chosen is not None else []
        elif media_type == "multipart/related":
            root = related_root(entity, entities)
            following = [root] if root is not None else []
        elif media_type == "multipart/encrypted" or _is_attached_message(entity):
            following = []
        else:
            following = list(entity.children)
        stack.extend(reversed(following))
    return out


def cid_references(html_texts: list[str]) -> set[str]:
    """Return the Content-IDs the HTML bodies reference (percent-decoded, lower-cased)."""
    found: set[str] = set()
    for text in html_texts:
        for match in _CID_REFERENCE.finditer(text):
            found.add(unquote(match.group(1)).lower())
            if len(found) >= _MAX_CID_REFERENCES:
                return found
    return found


@dataclass
class Parts:
    """What the leaves of a message are, counted."""

    attachments: list[AttachmentInfo] = field(default_factory=list)
    inline_count: int = 0
    encrypted: bool = False
    unverified_signature: bool = False
    unexpanded_tnef: bool = False


def _attachment(raw: bytes, entity: Entity, budget: Budget) -> AttachmentInfo:
    """Describe one attachment entity: safe name, media type and decoded size."""
    raw_name = entity.raw_name or ""
    decoded_name = decode_words(raw_name, budget) if "=?" in raw_name else raw_name
    file_name, changed = normalize_file_name(decoded_name)
    if entity.container:
        size = entity.end - entity.body_start
    else:
        size = decoded_size(raw, entity, budget)
    return AttachmentInfo(
        file_name=file_name,
        name_was_normalized=changed,
        media_type=entity.declared_type or "application/octet-stream",
        size=size,
        part_index=entity.index,
    )


def _is_inline_resource(entity: Entity, parent: Entity | None, cids: set[str], root: int | None) -> bool:
    """Return whether a leaf is a resource the HTML shows in place rather than an attachment.

    Edge cases: a Content-ID the HTML references wins over any disposition; an inline
    image counts even unreferenced; in multipart/related every non-root part with a
    Content-ID or an image type counts unless it says attachment.
    """
    if entity.content_id and entity.content_id in cids:
        return True
    if entity.disposition == "inline" and entity.media_type.startswith("image/"):
        return True
    in_related = parent is not None and parent.media_type == "multipart/related" and root != entity.index
    return (
        in_related
        and entity.disposition != "attachment"
        and bool(entity.content_id or entity.media_type.startswith("image/"))
    )


def classify_parts(
    raw: bytes, entities: list[Entity], excluded: set[int], cids: set[str], budget: Budget
) -> Parts:
    """Sort every reachable entity into attachment, inline resource, signature, ciphertext or body.

    Edge cases: S/MIME pkcs7-mime parts set encrypted (enveloped-data, or no smime-type)
    or unverified_signature (signed-data) and are never attachments; a ".p7m" file sets
    encrypted; ms-tnef or winmail.dat sets unexpanded_tnef and is listed; an attached
    message/rfc822 is one attachment; stops early at the deadline ("time-limit").
    """
    parts = Parts()
    roots: dict[int, int | None] = {}
    for entity in entities:
        if entity.index in excluded:
            continue
        media_type = entity.media_type
        if media_type == "multipart/encrypted":
            parts.encrypted = True
        elif media_type == "multipart/signed":
            parts.unverified_signature = True
        if entity.container and not _is_attached_message(entity):
            continue
        if budget.expired():
            break
        smime_type = entity.params.get("smime-type", "").strip().lower()
        name = (entity.raw_name or "").strip().lower()
        if media_type in _PKCS7_MIME:
            if smime_type == "signed-data":
                parts.unverified_signature = True
            elif smime_type != "certs-only":
                parts.encrypted = True
            continue
        if media_type in _SIGNATURES:
            parts.unverified_signature = True
            continue
        if media_type == "application/pgp-encrypted":
            parts.encrypted = True
            continue
        if name.endswith(".p7m") and smime_type != "signed-data":
            parts.encrypted = True
        if is_body_text(entity):
            continue
        parent = entities[entity.parent] if entity.parent is not None else None
        if parent is not None and parent.media_type == "multipart/related" and parent.index not in roots:
            roots[parent.index] = related_root(parent, entities)
        root = roots.get(parent.index) if parent is not None else None
        if _is_inline_resource(entity, parent, cids, root):
            parts.inline_count += 1
            continue
        info = _attachment(raw, entity, budget)
        if media_type in _TNEF or info.file_name.lower() == "winmail.dat":
            parts.unexpanded_tnef = True
        parts.attachments.append(info)
    return parts
