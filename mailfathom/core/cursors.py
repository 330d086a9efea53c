"""Signed continuation cursors: one envelope for the timeline's and the compliance API's.

A cursor is a JSON payload signed with the keyring under its own purpose (mailfathom.core.signing),
so it cannot be forged, edited or replayed as another kind of token. It carries a payload
version, the position after the last row of its page and the fingerprint of the selection it
was issued for; what a position is belongs to the caller. Refusals name the argument, never
the text a caller sent: 52001 when the text is no cursor this server issued (too long,
truncated, edited, hand-written, signed by a key outside the ring, of the wrong shape), 52002
for a genuine cursor issued for another selection. The length is checked before anything is
decoded.
"""

from __future__ import annotations

import json
from typing import Any

from mailfathom.core import signing
from mailfathom.core.errors import CURSOR_FOR_OTHER_SELECTION, CURSOR_NOT_ISSUED, MailFathomError

MAX_CURSOR_LENGTH = 2000
PAYLOAD_VERSION = 1


def seal(purpose: str, fields: dict[str, Any]) -> str:
    """A signed cursor carrying `fields` (short keys; "v" is the payload version's)."""
    payload = {"v": PAYLOAD_VERSION, **fields}
    return signing.sign(purpose, json.dumps(payload, separators=(",", ":"), sort_keys=True).encode())


def opened(purpose: str, text: object, *, argument: str | None = None) -> dict[str, Any]:
    """The fields of a cursor this server issued under `purpose`; 52001 for anything else.

    The caller checks the fields' shape and raises `not_issued` when they are out of it.
    """
    if not isinstance(text, str) or not text or len(text) > MAX_CURSOR_LENGTH:
        raise not_issued(argument)
    payload = signing.verify(purpose, text)
    if payload is None:
        raise not_issued(argument)
    try:
        data = json.loads(payload)
    except ValueError as error:
        raise not_issued(argument) from error
    if not isinstance(data, dict) or data.get("v") != PAYLOAD_VERSION:
        raise not_issued(argument)
    return data


def not_issued(argument: str | None = None) -> MailFathomError:
    return MailFathomError(CURSOR_NOT_ISSUED, CURSOR_NOT_ISSUED.sentence, argument=argument)


def for_other_selection(other: str, argument: str | None = None) -> MailFathomError:
    """52002: a genuine cursor issued for `other` ("different filters or a different direction")."""
    return MailFathomError(
        CURSOR_FOR_OTHER_SELECTION, CURSOR_FOR_OTHER_SELECTION.message(other=other), argument=argument
    )
