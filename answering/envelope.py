"""The envelope: how retrieved mail is quoted to a model, as data that cannot close its element.

One `<retrieved-mail>` element per lookup, one numbered `<message>` per passage
(answering.citing; docs/operations/answering.md, Mail written to manipulate the model).
Every value, attributes included, is escaped, so markup in mail arrives as inert characters
attributed to its message. Characters XML 1.0 cannot carry become U+FFFD and carriage
returns character references; everything else round-trips exactly.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime

from mailbox.services.passages import Passage

ROOT = "retrieved-mail"
REFUSED = "search-refused"
QUERY = "query"

# Characters outside XML 1.0's Char production.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_TEXT_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "\r": "&#13;"}
_ATTRIBUTE_ESCAPES = {**_TEXT_ESCAPES, '"': "&quot;", "'": "&apos;", "\n": "&#10;", "\t": "&#9;"}
_TEXT_SPECIAL = re.compile("[&<>\r]")
_ATTRIBUTE_SPECIAL = re.compile("[&<>\r\"'\n\t]")


def xml_safe(value: str) -> str:
    """`value` with each character XML cannot carry replaced by U+FFFD."""
    return _NOT_XML.sub("\ufffd", value)


def _text(value: str) -> str:
    return _TEXT_SPECIAL.sub(lambda match: _TEXT_ESCAPES[match.group()], xml_safe(value))


def _attribute(value: str) -> str:
    return _ATTRIBUTE_SPECIAL.sub(lambda match: _ATTRIBUTE_ESCAPES[match.group()], xml_safe(value))


def escape_text(value: str) -> str:
    """`value` as element text that cannot close or open an element (reply drafting's prompt)."""
    return _text(value)


def attributes(pairs: Mapping[str, str]) -> str:
    """` name="value"` pairs, each value escaped as an attribute."""
    return _attributes(pairs)


def _attributes(pairs: Mapping[str, str]) -> str:
    return "".join(f' {name}="{_attribute(value)}"' for name, value in pairs.items())


def _received(moment: datetime | None) -> str:
    return moment.isoformat() if moment is not None else ""


def attachment_element(passage: Passage, indent: str = "") -> str:
    """The `<attachment>` element of a passage whose words matched in a file; "" when none did.

    The file name is an attribute, escaped like every other: the sender chose it.
    """
    if passage.attachment_name is None:
        return ""
    return (
        f"{indent}<attachment{_attributes({'name': passage.attachment_name})}>"
        f"{_text(passage.attachment_extract)}</attachment>\n"
    )


def message_element(passage: Passage, indent: str = "  ", number: int | None = None) -> str:
    """One `<message>` element: identity as attributes, subject and extracts as text.

    `number` is the source number a run shows the model to cite the email by; a relevance
    judgement shows none.
    """
    attributes = {"number": str(number)} if number is not None else {}
    attributes |= {
        "id": passage.stored_email_id,
        "account": passage.account_id,
        "folder": passage.folder_alias,
        "received": _received(passage.received_at),
    }
    return (
        f"{indent}<message{_attributes(attributes)}>\n"
        f"{indent}  <subject>{_text(passage.subject)}</subject>\n"
        f"{indent}  <extract>{_text(passage.extract)}</extract>\n"
        f"{attachment_element(passage, indent + '  ')}"
        f"{indent}</message>"
    )


def write_envelope(
    retrieval_mode: str,
    passages: Iterable[Passage],
    *,
    limit_reached: bool = False,
    numbers: Mapping[str, int] | None = None,
) -> str:
    """The `<retrieved-mail>` element of one lookup; empty (self-closing) when nothing was found.

    `numbers` (email id -> source number) puts each message's number on it.
    """
    attributes = {"retrieval-mode": retrieval_mode}
    if limit_reached:
        attributes["retrieval-limit-reached"] = "true"
    numbered = numbers or {}
    messages = [
        message_element(passage, number=numbered.get(passage.stored_email_id)) for passage in passages
    ]
    if not messages:
        return f"<{ROOT}{_attributes(attributes)} />"
    body = "\n".join(messages)
    return f"<{ROOT}{_attributes(attributes)}>\n{body}\n</{ROOT}>"


def write_refusal(argument: str, code: int, message: str) -> str:
    """What a refused lookup answers: which argument to correct, and the use case's own sentence."""
    attributes = {"argument": argument, "code": str(code)}
    return f"<{REFUSED}{_attributes(attributes)}>{_text(message)}</{REFUSED}>"


def write_query(query_text: str, filters: Mapping[str, str]) -> str:
    """The `<query>` element of a relevance judgement: the whole lookup, filters included."""
    lines = [f"  <text>{_text(query_text)}</text>"]
    lines += [
        f"  <filter{_attributes({'name': name})}>{_text(value)}</filter>" for name, value in filters.items()
    ]
    return f"<{QUERY}>\n" + "\n".join(lines) + f"\n</{QUERY}>"
