"""Sanitize a message's HTML body for display: no scripts, no handlers, no remote loads."""

from __future__ import annotations

import nh3

from mailbox.parsing.classify import display_leaves, excluded_entities
from mailbox.parsing.limits import Budget, ParseLimits
from mailbox.parsing.message import as_bytes, part_text
from mailbox.parsing.structure import walk

LINK_REL = "noopener noreferrer nofollow"
_LINK_SCHEMES = ("http://", "https://", "mailto:")
_EMBEDDED_IMAGE_PREFIXES = ("cid:", "data:image/png", "data:image/gif", "data:image/jpeg", "data:image/webp")
_URL_SCHEMES = frozenset({"http", "https", "mailto", "cid", "data"})
_DEFAULT_LIMITS = ParseLimits()


def _attribute_filter(tag: str, attribute: str, value: str) -> str | None:
    """Keep only links to http(s)/mailto and images embedded in the message (cid:, data:image)."""
    lowered = value.strip().lower()
    if attribute == "src":
        return value if tag == "img" and lowered.startswith(_EMBEDDED_IMAGE_PREFIXES) else None
    if attribute == "href":
        return value if lowered.startswith(_LINK_SCHEMES) else None
    if attribute == "cite":
        return None
    return value


def clean_html(markup: str) -> str:
    """Return markup sanitized by nh3 with the rules above; script and style lose their content."""
    return nh3.clean(
        markup,
        clean_content_tags={"script", "style"},
        attribute_filter=_attribute_filter,
        link_rel=LINK_REL,
        url_schemes=set(_URL_SCHEMES),
        url_relative="deny",
    )


def sanitized_html(raw: bytes, limits: ParseLimits = _DEFAULT_LIMITS) -> str | None:
    """Return the message's preferred HTML body, sanitized; None when it has no HTML body part.

    Edge cases: in multipart/alternative the HTML alternative is taken; several HTML body
    parts (multipart/mixed) are joined in order; each part's HTML is bounded to
    max_text_chars characters before sanitizing; remote images lose their src, links get
    rel="noopener noreferrer nofollow"; never raises (None on failure).
    """
    try:
        data = as_bytes(raw)
        budget = Budget(limits)
        entities = walk(data, budget)
        excluded = excluded_entities(entities)
        leaves = display_leaves(entities, data, excluded, prefer="text/html")
        markup = [
            part_text(data, entities[i], budget, limits.max_text_chars)[: limits.max_text_chars]
            for i in leaves
            if entities[i].media_type == "text/html"
        ]
        if not markup:
            return None
        return "\n".join(clean_html(fragment) for fragment in markup)
    except Exception:  # a view must fail soft, never crash its caller
        return None
