"""Tool arguments: how each is advertised, and how its protocol value becomes a use-case input.

Each argument is declared once, and both its input-schema property and its conversion come
from that declaration. The bridge checks only what the protocol decides: the JSON type, an
ISO 8601 timestamp, the direction's wire spelling. Every bound (lengths, counts, ranges)
belongs to the use case, which receives counts and numbers exactly as the caller sent
them and refuses them with its own codes. A refusal here names the argument, never the
value, and is 51002.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from mailfathom.errors import FILTER_REFUSED, MailFathomError

MAX_TIMESTAMP_LENGTH = 64

Converter = Callable[[str, Any], Any]


def refused(wire: str, requirement: str) -> MailFathomError:
    return MailFathomError(FILTER_REFUSED, f"The {wire} argument must be {requirement}.")


def as_given(wire: str, value: Any) -> Any:
    """Hand the value to the use case untouched: it owns the type and the bound."""
    return value


def names(wire: str, value: Any) -> Any:
    if value is None or isinstance(value, list):
        return value
    raise refused(wire, "a list of names")


def text(wire: str, value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    raise refused(wire, "text")


def flag(wire: str, value: Any) -> Any:
    if value is None or isinstance(value, bool):
        return value
    raise refused(wire, "true or false")


def moment(wire: str, value: Any) -> datetime | None:
    """Read an ISO 8601 date and time that carries a time zone (the length before the parse)."""
    if value is None:
        return None
    requirement = "an ISO 8601 date and time with a time zone, such as 2024-05-01T09:30:00Z"
    if not isinstance(value, str) or len(value) > MAX_TIMESTAMP_LENGTH:
        raise refused(wire, requirement)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise refused(wire, requirement) from None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise refused(wire, requirement)
    return parsed


def choice(spellings: Mapping[str, str]) -> Converter:
    """A converter from the bridge's own wire spellings to the use case's values."""

    def convert(wire: str, value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, str) and value in spellings:
            return spellings[value]
        raise refused(wire, " or ".join(spellings))

    return convert


@dataclass(frozen=True)
class Argument:
    """One top-level input property of a tool and the use-case keyword it feeds."""

    wire: str
    keyword: str
    schema: Mapping[str, Any]
    description: str
    convert: Converter = as_given
    required: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)

    def property_schema(self) -> dict[str, Any]:
        return {**self.schema, **self.extra, "description": self.description}


UNKNOWN_ARGUMENT = MailFathomError(
    FILTER_REFUSED, "The call carries an argument this tool does not take; see the tool's input schema."
)


def input_schema(arguments: tuple[Argument, ...]) -> dict[str, Any]:
    """The tool's inputSchema: every argument a top-level property with its own description."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {argument.wire: argument.property_schema() for argument in arguments},
        "additionalProperties": False,
    }
    required = [argument.wire for argument in arguments if argument.required]
    if required:
        schema["required"] = required
    return schema


def convert_arguments(arguments: tuple[Argument, ...], raw: Mapping[str, Any] | None) -> dict[str, Any]:
    """Return the use case's keyword arguments for a call's protocol arguments.

    An argument the tool does not take is refused (51002) without naming it: its name is
    caller text. An absent optional argument is left out so the use case's default applies;
    an absent required one is passed as None so the use case refuses it with its own code.
    """
    raw = raw or {}
    known = {argument.wire for argument in arguments}
    if any(name not in known for name in raw):
        raise UNKNOWN_ARGUMENT
    converted: dict[str, Any] = {}
    for argument in arguments:
        value = argument.convert(argument.wire, raw.get(argument.wire))
        if value is not None or argument.required:
            converted[argument.keyword] = value
    return converted
