"""The author's own words of a mail body: what its embedding should be made of.

Quoted replies and list footers pull every message of a thread or list toward the same
vector, so the embedded text stops at the first "-----Original Message-----", signature
delimiter ("-- ") or line of underscores, and leaves out `>` quotes and attribution lines
(the gain is measured in docs/benchmarks.md). Only the embedded passage is affected: the
stored body, lexical index and extracts keep every line, and a body that is nothing but
quotation keeps its text.
"""

from __future__ import annotations

import re

_END = re.compile(
    r"^(?:-{2,}[ \t]*Original Message[ \t]*-{2,}|_{5,}|-- ?)[ \t]*$", re.MULTILINE | re.IGNORECASE
)
_QUOTED = re.compile(r"^[ \t]*[>|].*$", re.MULTILINE)
# "On Mon, 2 Sep 2002, Anna <anna@example.org> wrote:", "Am Montag schrieb Anna:" and the
# like, alone on a line of bounded length ending in a colon.
_ATTRIBUTION = re.compile(
    r"^.{0,160}\b(?:wrote|writes|schrieb|schreibt)\b.{0,80}:[ \t]*$", re.MULTILINE | re.IGNORECASE
)
_BLANK_RUNS = re.compile(r"\n[ \t]*(?:\n[ \t]*)+")


def own_words(body: str) -> str:
    """`body` up to its first quoted original, signature or footer line, without quoted lines
    and attribution lines (or `body` itself if nothing is left)."""
    end = _END.search(body)
    kept = body[: end.start()] if end else body
    kept = _ATTRIBUTION.sub("", _QUOTED.sub("", kept))
    kept = _BLANK_RUNS.sub("\n\n", kept).strip()
    return kept or body


def quoted_part(body: str) -> str:
    """What own_words leaves out as quotation: `>` lines before the first original, signature
    or footer line, and everything from that line on (regular expressions only, so cheap)."""
    # Each pattern needs characters most bodies lack: looking for those first is what makes
    # this cheap enough to run on every ranking's window.
    end = _END.search(body) if "--" in body or "_____" in body else None
    head, tail = (body[: end.start()], body[end.start() :]) if end else (body, "")
    quoted = _QUOTED.findall(head) if ">" in head or "|" in head else []
    return "\n".join(quoted) + "\n" + tail
