"""search_mail: the one tool a run offers its model, and how its arguments become a lookup.

It publishes search_emails' query and filters, less the junk switch, and no accounts, folders
or result count: the caller's authorization is bound into the run before the model sees
anything. Filters come from MailFilter's declaration, so a model's filter is checked by the
same code and bounds as an MCP caller's. An unpublished argument is refused by name, not
ignored, so a model talked into asking for another account learns it cannot. A refusal is a
LookupRefused with the code and sentence any caller gets.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime

from mailbox.services import search
from mailbox.services.mail_filter import MailFilter, offered_to_model
from mailbox.services.selection import parse_filter
from mailfathom.core.errors import FILTER_REFUSED, MailFathomError
from mailfathom.providers.chat import ToolDefinition

TOOL_NAME = "search_mail"
QUERY_TEXT = "queryText"


def search_mail_tool(declaration: type[MailFilter] = MailFilter) -> ToolDefinition:
    """The tool the model is offered, its filters generated from `declaration`."""
    return ToolDefinition(
        name=TOOL_NAME,
        description=(
            "Search the mailbox this question may be answered from and return the best-matching "
            "messages as a <retrieved-mail> element. The mailbox is fixed; you cannot choose "
            "accounts or folders, or how many messages come back."
        ),
        parameters={
            "type": "object",
            "properties": {
                QUERY_TEXT: {
                    "type": "string",
                    "maxLength": search.MAX_QUERY_CHARACTERS,
                    "description": "Words the wanted mail would contain; ranked by relevance.",
                },
                **{
                    filter_field.wire: filter_field.property_schema(filter_field.model_description)
                    for filter_field in offered_to_model(declaration)
                },
            },
            "required": [QUERY_TEXT],
            "additionalProperties": False,
        },
    )


SEARCH_MAIL = search_mail_tool()


@dataclass(frozen=True)
class Lookup:
    """One validated search_mail call: the query and the checked filter."""

    query_text: str
    mail_filter: MailFilter = field(default_factory=MailFilter)

    def published_filters(self) -> dict[str, str]:
        """The filters the model set, by wire name (for a relevance judgement's <query>)."""
        out = {}
        for filter_field in offered_to_model(type(self.mail_filter)):
            value = getattr(self.mail_filter, filter_field.name)
            if value is None:
                continue
            if isinstance(value, datetime):
                text = value.isoformat()
            elif isinstance(value, bool):
                text = "true" if value else "false"
            else:
                text = str(value)
            out[filter_field.wire] = text
        return out


class LookupRefused(Exception):
    """A lookup refused before or by the use case: which argument, the code, the sentence."""

    def __init__(self, argument: str, code: int, message: str) -> None:
        super().__init__(message)
        self.argument = argument
        self.code = code
        self.message = message


def parse_lookup(raw_arguments: str, declaration: type[MailFilter] = MailFilter) -> Lookup:
    """Turn the model's JSON arguments into a Lookup, or raise LookupRefused naming the argument.

    The filter is parsed and checked by selection.parse_filter, as an MCP caller's is (the
    same 51002 sentences); the query text's bound is checked by the search itself.
    """
    try:
        arguments = json.loads(raw_arguments) if raw_arguments.strip() else {}
    except ValueError:
        raise LookupRefused("arguments", FILTER_REFUSED, "The arguments must be one JSON object.") from None
    if not isinstance(arguments, dict):
        raise LookupRefused("arguments", FILTER_REFUSED, "The arguments must be one JSON object.")
    filters = offered_to_model(declaration)
    published = {QUERY_TEXT, *(filter_field.wire for filter_field in filters)}
    for name in arguments:
        if name not in published:
            raise LookupRefused(
                _safe_name(name),
                FILTER_REFUSED,
                "search_mail takes no such argument; the mailbox searched is fixed for this question.",
            )
    query_text = arguments.get(QUERY_TEXT)
    if not isinstance(query_text, str):
        raise LookupRefused(QUERY_TEXT, FILTER_REFUSED, "The queryText argument is required text.")
    try:
        mail_filter = parse_filter(arguments, filters, declaration)
    except MailFathomError as error:
        if not error.is_published:
            raise
        raise LookupRefused(error.argument or "arguments", error.code, error.message) from None
    return Lookup(query_text=query_text, mail_filter=mail_filter)


def _safe_name(name: str) -> str:
    """An unknown argument's name as the refusal may echo it: it is the model's text, so bounded."""
    cleaned = "".join(ch for ch in name if ch.isalnum() or ch in "_-")[:64]
    return cleaned or "arguments"
