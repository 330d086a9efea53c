"""Tool arguments: how each is advertised, and how its protocol value becomes a use-case input.

Each argument is declared once, and both its input-schema property and its conversion come
from that declaration; the mail filter's arguments are generated from MailFilter's own
declaration (mailbox.services.mail_filter), which also reads them, and are gathered into
the one MailFilter the use case takes. The bridge checks only what the protocol decides:
the JSON type, an ISO 8601 timestamp, the direction's wire spelling. Every bound (lengths,
counts, ranges) belongs to the use case, which receives counts and numbers exactly as the
caller sent them and refuses them with its own codes. A refusal here names the argument,
never the value, and is 51002.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from mailbox.services.mail_filter import read_flag, refused
from mailfathom.core.errors import FILTER_REFUSED, MailFathomError

Converter = Callable[[str, Any], Any]

# Any boolean argument is checked as the filter's booleans are: one sentence for all of them.
flag = read_flag


def as_given(wire: str, value: Any) -> Any:
    """Hand the value to the use case untouched: it owns the type and the bound."""
    return value


def names(wire: str, value: Any) -> Any:
    if value is None or isinstance(value, list):
        return value
    raise refused(wire, "a list of names")


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
class Gathered:
    """One use-case keyword fed by several top-level properties (the mail filter).

    `build` receives the converted values present, by their arguments' keywords, and
    returns what the use case takes under `keyword`.
    """

    keyword: str
    build: Callable[..., Any]


@dataclass(frozen=True)
class Argument:
    """One top-level input property of a tool and the use-case keyword it feeds.

    With `into`, the converted value is not passed on by itself but gathered, under
    `keyword`, into the value `into` builds.
    """

    wire: str
    keyword: str
    schema: Mapping[str, Any]
    description: str
    convert: Converter = as_given
    required: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)
    into: Gathered | None = None

    def property_schema(self) -> dict[str, Any]:
        return {**self.schema, **self.extra, "description": self.description}


UNKNOWN_ARGUMENT = MailFathomError(
    FILTER_REFUSED, "The call carries an argument this tool does not take; see the tool's input schema."
)
# An unknown argument's name is shown only when it looks like an argument name: it is caller
# text, and a sentence that echoed anything could carry a prompt or a secret back out.
_SHOWABLE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,39}")


def unknown_argument(name: str, known: Collection[str]) -> MailFathomError:
    """51002 for an argument the tool does not take, naming it (and its likely intended one) when safe."""
    if not _SHOWABLE_NAME.fullmatch(name):
        return UNKNOWN_ARGUMENT
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    hint = f" Did you mean {close[0]}?" if close else f" It takes: {', '.join(sorted(known))}."
    return MailFathomError(FILTER_REFUSED, f"This tool takes no argument named {name}.{hint}", argument=name)


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

    An argument the tool does not take is refused (51002), named only when its name has the
    shape of an argument name (it is caller text). An absent optional argument is left out so
    the use case's default applies; an absent required one is passed as None so the use case
    refuses it with its own code.
    """
    raw = raw or {}
    known = {argument.wire for argument in arguments}
    unknown = next((name for name in raw if name not in known), None)
    if unknown is not None:
        raise unknown_argument(str(unknown), known)
    converted: dict[str, Any] = {}
    gathered: dict[Gathered, dict[str, Any]] = {}
    # Converted in declaration order, gathered or not, so which refusal a call with several
    # faults meets does not depend on how the use case takes its arguments.
    for argument in arguments:
        value = argument.convert(argument.wire, raw.get(argument.wire))
        if argument.into is not None:
            values = gathered.setdefault(argument.into, {})
            if value is not None:
                values[argument.keyword] = value
        elif value is not None or argument.required:
            converted[argument.keyword] = value
    for group, values in gathered.items():
        converted[group.keyword] = group.build(**values)
    return converted
