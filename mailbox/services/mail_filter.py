"""The mail filter, declared once: every narrowing a read of the local copy can take.

Each MailFilter field carries in its metadata the wire name, schema fragment, bound,
descriptions and whether search_mail offers it; the MCP tools' inputs, search_mail's
parameters and the validation's refusal sentences are generated from it, so a new filter is
declared here and narrowed in EmailQuerySet.in_selection, nowhere else. Reading a value
checks only what JSON decides (type; a timestamp's length, ISO 8601, time zone); its content
is checked by selection.validate_filter. A refusal is 51002 and names the argument, never
its value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mailfathom.core.errors import FILTER_REFUSED, MailFathomError
from mailfathom.core.instants import MAX_INSTANT_LENGTH, parse_instant
from mailfathom.core.text import MAX_ADDRESS_LENGTH

MAX_SUBJECT_FRAGMENT = 256
# Counted before the text is parsed (mailfathom.core.instants owns the bound).
MAX_TIMESTAMP_LENGTH = MAX_INSTANT_LENGTH
TIMESTAMP_REQUIREMENT = "an ISO 8601 date and time with a time zone, such as 2024-05-01T09:30:00Z"

_DECLARED = "mail_filter"


def refused(wire: str, requirement: str) -> MailFathomError:
    return MailFathomError(FILTER_REFUSED, f"The {wire} argument must be {requirement}.", argument=wire)


def read_text(wire: str, value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise refused(wire, "text")


def read_flag(wire: str, value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise refused(wire, "true or false")


def read_moment(wire: str, value: Any, bound: int = MAX_TIMESTAMP_LENGTH) -> datetime | None:
    """An ISO 8601 date and time that carries a time zone; the length is counted first."""
    if value is None:
        return None
    parsed = parse_instant(value, bound)
    if parsed is None:
        raise refused(wire, TIMESTAMP_REQUIREMENT)
    return parsed


def declare(
    *,
    wire: str,
    schema: Mapping[str, Any],
    mcp_description: str,
    model_description: str = "",
    offered_to_model: bool = True,
    bound: int | None = None,
    default: Any = None,
) -> Any:
    """A MailFilter field and its declaration (see FilterField for what each part means)."""
    if offered_to_model and not model_description:
        raise ValueError(f"{wire}: a filter offered to the model needs a model description")
    return dataclasses.field(
        default=default,
        metadata={
            _DECLARED: {
                "wire": wire,
                "schema": dict(schema),
                "mcp_description": mcp_description,
                "model_description": model_description,
                "offered_to_model": offered_to_model,
                "bound": bound,
            }
        },
    )


@dataclass(frozen=True)
class MailFilter:
    """What a read narrows to. Build it through selection.parse_filter from protocol values;
    every use case checks it again (selection.validate_filter) whoever built it."""

    sender_address: str | None = declare(
        wire="senderAddress",
        schema={"type": "string", "maxLength": MAX_ADDRESS_LENGTH},
        bound=MAX_ADDRESS_LENGTH,
        mcp_description=(
            "The whole email address the sender must have, in any case; not a fragment. Absent: any sender."
        ),
        model_description="Only mail from this whole email address (any case).",
    )
    recipient_address: str | None = declare(
        wire="recipientAddress",
        schema={"type": "string", "maxLength": MAX_ADDRESS_LENGTH},
        bound=MAX_ADDRESS_LENGTH,
        mcp_description=(
            "The whole email address a To or Cc recipient must have, in any case; not a fragment. "
            "Absent: any recipient."
        ),
        model_description="Only mail whose To or Cc names this whole email address.",
    )
    subject_fragment: str | None = declare(
        wire="subjectFragment",
        schema={"type": "string", "maxLength": MAX_SUBJECT_FRAGMENT},
        bound=MAX_SUBJECT_FRAGMENT,
        mcp_description=(
            f"Text the subject must contain, compared without regard to case, at most "
            f"{MAX_SUBJECT_FRAGMENT} characters; wildcard characters match themselves. "
            "{subject_note}Absent: any subject."
        ),
        model_description="Only mail whose subject contains this text (any case).",
    )
    received_on_or_after: datetime | None = declare(
        wire="receivedOnOrAfter",
        # The length bound is enforced but not published: the MCP descriptors are pinned.
        schema={"type": "string", "format": "date-time"},
        bound=MAX_TIMESTAMP_LENGTH,
        mcp_description=(
            "Inclusive start of the received range: an ISO 8601 date and time with a time zone, "
            "such as 2024-05-01T00:00:00Z. Absent: no lower bound."
        ),
        model_description="Only mail received at or after this ISO 8601 instant (with offset).",
    )
    received_before: datetime | None = declare(
        wire="receivedBefore",
        schema={"type": "string", "format": "date-time"},
        bound=MAX_TIMESTAMP_LENGTH,
        mcp_description=(
            "Exclusive end of the received range, ISO 8601 with a time zone, so consecutive "
            "ranges neither overlap nor leave a gap. Absent: no upper bound."
        ),
        model_description="Only mail received before this ISO 8601 instant (with offset).",
    )
    is_remotely_seen: bool | None = declare(
        wire="isRemotelySeen",
        schema={"type": "boolean"},
        mcp_description=(
            "Only emails the mail server last showed as seen (true) or as unseen (false). "
            "{verbing} never changes that flag. Absent: either."
        ),
        model_description="Only read (true) or unread (false) mail.",
    )
    has_attachments: bool | None = declare(
        wire="hasAttachments",
        schema={"type": "boolean"},
        mcp_description="Only emails with attachments (true) or only emails without (false). Absent: either.",
        model_description="Only mail with (true) or without (false) attachments.",
    )
    # ask_mail never reads junk mail, so its model is not offered the switch.
    include_junk: bool = declare(
        wire="includeJunkMail",
        schema={"type": "boolean", "default": False},
        mcp_description=(
            "Whether each account's junk folder takes part. Absent: false, junk mail is left out; "
            "the result's includedJunkMail says which."
        ),
        offered_to_model=False,
        default=False,
    )


@dataclass(frozen=True)
class FilterField:
    """One declared filter.

    `name` is the MailFilter attribute; `wire` the protocol name both tools publish;
    `schema` the JSON-schema fragment both publish; `bound` the most characters a value
    may have, counted before it is parsed or checked; `mcp_description` the MCP tools'
    text, which may name {verbing} ("Listing") and {subject_note}; `model_description`
    search_mail's; `offered_to_model` whether search_mail takes it at all.
    """

    name: str
    wire: str
    schema: Mapping[str, Any]
    mcp_description: str
    model_description: str
    offered_to_model: bool
    bound: int | None

    @property
    def reader(self) -> Callable[[str, Any], Any]:
        """The protocol check for this field's JSON type, chosen from its schema."""
        kind = self.schema.get("type")
        if kind == "boolean":
            return read_flag
        if kind == "string" and self.schema.get("format") == "date-time":
            bound = self.bound or MAX_TIMESTAMP_LENGTH
            return lambda wire, value: read_moment(wire, value, bound)
        if kind == "string":
            return read_text
        raise TypeError(f"{self.wire}: no reader for a {kind} filter")

    def read(self, value: Any) -> Any:
        """This field's protocol value as the use case takes it, or 51002 naming the field."""
        return self.reader(self.wire, value)

    def property_schema(self, description: str) -> dict[str, Any]:
        return {**self.schema, "description": description}


def declared(declaration: type[MailFilter] = MailFilter) -> tuple[FilterField, ...]:
    """Every filter `declaration` declares, in declaration order."""
    return tuple(
        FilterField(name=field.name, **field.metadata[_DECLARED])
        for field in dataclasses.fields(declaration)
        if _DECLARED in field.metadata
    )


def offered_to_model(declaration: type[MailFilter] = MailFilter) -> tuple[FilterField, ...]:
    """The filters ask_mail's search_mail tool takes."""
    return tuple(field for field in declared(declaration) if field.offered_to_model)


FIELDS = declared()
WIRE_NAMES = {field.name: field.wire for field in FIELDS}


def read_filter(
    values: Mapping[str, Any],
    fields: Iterable[FilterField] = FIELDS,
    declaration: type[MailFilter] = MailFilter,
) -> MailFilter:
    """The MailFilter `values` (wire name -> JSON value) spell, read field by field.

    Only `fields` are read; other names are the caller's to refuse or use. An absent or
    null value leaves the field's default.
    """
    read = {}
    for field in fields:
        value = field.read(values.get(field.wire))
        if value is not None:
            read[field.name] = value
    return declaration(**read)
