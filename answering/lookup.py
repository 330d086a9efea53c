"""search_mail: the one tool a run offers its model, and how its arguments become a lookup.

The tool publishes the query and the narrowing search_emails publishes to its callers, and
nothing else (mail-answering.txt, What one lookup may ask for): no accounts, no folders
(the caller's authorization, bound into the run before the model sees anything) and no
result count (the deployment's bound on how much mail one lookup draws out). An argument
the tool does not publish is refused by name rather than ignored, so a model that was
talked into asking for another account learns that it cannot, and the attempt is visible.

A refusal comes back as a LookupRefused naming the argument, with the same code and
sentence the use case gives any caller, so the model can correct it and call again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from mailbox.services import search, selection
from mailfathom.errors import FILTER_REFUSED
from mailfathom.providers.chat import ToolDefinition

TOOL_NAME = "search_mail"

# Published argument -> use-case keyword, and the JSON type the model must send.
_FILTERS: dict[str, tuple[str, str]] = {
    "senderAddress": ("sender_address", "string"),
    "recipientAddress": ("recipient_address", "string"),
    "subjectFragment": ("subject_fragment", "string"),
    "receivedOnOrAfter": ("received_on_or_after", "date-time"),
    "receivedBefore": ("received_before", "date-time"),
    "isRemotelySeen": ("is_remotely_seen", "boolean"),
    "hasAttachments": ("has_attachments", "boolean"),
}

SEARCH_MAIL = ToolDefinition(
    name=TOOL_NAME,
    description=(
        "Search the mailbox this question may be answered from and return the best-matching "
        "messages as a <retrieved-mail> element. The mailbox is fixed; you cannot choose "
        "accounts or folders, or how many messages come back."
    ),
    parameters={
        "type": "object",
        "properties": {
            "queryText": {
                "type": "string",
                "maxLength": search.MAX_QUERY_CHARACTERS,
                "description": "Words the wanted mail would contain; ranked by relevance.",
            },
            "senderAddress": {
                "type": "string",
                "description": "Only mail from this whole email address (any case).",
            },
            "recipientAddress": {
                "type": "string",
                "description": "Only mail whose To or Cc names this whole email address.",
            },
            "subjectFragment": {
                "type": "string",
                "maxLength": selection.MAX_SUBJECT_FRAGMENT,
                "description": "Only mail whose subject contains this text (any case).",
            },
            "receivedOnOrAfter": {
                "type": "string",
                "format": "date-time",
                "description": "Only mail received at or after this ISO 8601 instant (with offset).",
            },
            "receivedBefore": {
                "type": "string",
                "format": "date-time",
                "description": "Only mail received before this ISO 8601 instant (with offset).",
            },
            "isRemotelySeen": {"type": "boolean", "description": "Only read (true) or unread (false) mail."},
            "hasAttachments": {
                "type": "boolean",
                "description": "Only mail with (true) or without (false) attachments.",
            },
        },
        "required": ["queryText"],
        "additionalProperties": False,
    },
)


@dataclass(frozen=True)
class Lookup:
    """One validated search_mail call: the query and the use-case filter keywords."""

    query_text: str
    filters: dict[str, Any] = field(default_factory=dict)

    def published_filters(self) -> dict[str, str]:
        """The filters as the model wrote them (for a relevance judgement's <query>)."""
        names = {keyword: name for name, (keyword, _kind) in _FILTERS.items()}
        out = {}
        for keyword, value in self.filters.items():
            if isinstance(value, datetime):
                text = value.isoformat()
            elif isinstance(value, bool):
                text = "true" if value else "false"
            else:
                text = str(value)
            out[names[keyword]] = text
        return out


class LookupRefused(Exception):
    """A lookup refused before or by the use case: which argument, the code, the sentence."""

    def __init__(self, argument: str, code: int, message: str) -> None:
        super().__init__(message)
        self.argument = argument
        self.code = code
        self.message = message


def parse_lookup(raw_arguments: str) -> Lookup:
    """Turn the model's JSON arguments into a Lookup, or raise LookupRefused naming the argument.

    Values are checked for type here; what they may contain is checked by the use case
    (the same 51002 sentences a caller of search_emails reads).
    """
    try:
        arguments = json.loads(raw_arguments) if raw_arguments.strip() else {}
    except ValueError:
        raise LookupRefused("arguments", FILTER_REFUSED, "The arguments must be one JSON object.") from None
    if not isinstance(arguments, dict):
        raise LookupRefused("arguments", FILTER_REFUSED, "The arguments must be one JSON object.")
    for name in arguments:
        if name != "queryText" and name not in _FILTERS:
            raise LookupRefused(
                _safe_name(name),
                FILTER_REFUSED,
                "search_mail takes no such argument; the mailbox searched is fixed for this question.",
            )
    query_text = arguments.get("queryText")
    if not isinstance(query_text, str):
        raise LookupRefused("queryText", FILTER_REFUSED, "The queryText argument is required text.")
    filters: dict[str, Any] = {}
    for name, (keyword, kind) in _FILTERS.items():
        value = arguments.get(name)
        if value is None:
            continue
        filters[keyword] = _typed(name, kind, value)
    return Lookup(query_text=query_text, filters=filters)


def _typed(name: str, kind: str, value: object) -> object:
    if kind == "boolean":
        if not isinstance(value, bool):
            raise LookupRefused(name, FILTER_REFUSED, f"The {name} filter must be true or false.")
        return value
    if not isinstance(value, str):
        raise LookupRefused(name, FILTER_REFUSED, f"The {name} filter must be text.")
    if kind == "date-time":
        try:
            return datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise LookupRefused(
                name, FILTER_REFUSED, f"The {name} filter must be an ISO 8601 date and time with an offset."
            ) from None
    return value


def _safe_name(name: str) -> str:
    """An unknown argument's name as the refusal may echo it: it is the model's text, so bounded."""
    cleaned = "".join(ch for ch in name if ch.isalnum() or ch in "_-")[:64]
    return cleaned or "arguments"
