"""Read a message's envelope from its header block alone, in bounded work.

A message over the size limit keeps no content, but its envelope (subject, sender, date,
Message-ID, recipients, thread ids) is read from the header block: at most
HEADER_BLOCK_BYTES, cut at the first blank line, whatever the message's size. IMAP
fetches no more than that (a partial BODY.PEEK[HEADER]); import cuts the bytes it holds.
"""

from __future__ import annotations

import re

from mailbox.parsing.message import parse_message
from mailbox.parsing.results import ParsedMessage

HEADER_BLOCK_BYTES = 256 * 1024  # far above any real header block; the parse limits bound the rest
_HEADER_END = re.compile(rb"\r?\n\r?\n")


def header_block(raw: bytes, cap: int = HEADER_BLOCK_BYTES) -> bytes:
    """Return the header block of `raw` through its blank line, at most `cap` bytes."""
    head = raw[:cap]
    end = _HEADER_END.search(head)
    return head[: end.end()] if end else head


def parse_envelope(head: bytes) -> ParsedMessage:
    """Parse only the header block at the start of `head`; the body fields stay empty.

    A block cut by the cap mid-field keeps the fields before the cut.
    """
    return parse_message(header_block(head))
