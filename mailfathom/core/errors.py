"""The one error type MailFathom raises on purpose: a five-digit code and a caller-safe sentence.

Codes 51000-57999 are written for callers and are published as they stand at a boundary.
Every other code describes MailFathom's internals and collapses to 54001 when it crosses
one (docs/errors.md). Messages name the argument and its limit, never the
refused value; the only value a message may carry is an account identifier a caller wrote.
"""

from __future__ import annotations

CALLER_CATEGORY = range(51000, 58000)
UNDESCRIBED = 54001
UNDESCRIBED_MESSAGE = "The request failed for a reason this server does not describe."
# A dependency (the database, Redis) could not be reached: nothing was done, and the same
# request may succeed in a few seconds (docs/errors.md, docs/operations/mcp-endpoint.md).
DEPENDENCY_UNAVAILABLE = 54003
DEPENDENCY_UNAVAILABLE_MESSAGE = (
    "This server cannot reach a service it depends on right now, so the request was not served; "
    "send it again in a few seconds."
)


class MailFathomError(Exception):
    """A failure with a stable five-digit code and a sentence safe to show its caller."""

    def __init__(self, code: int, message: str, *, argument: str | None = None) -> None:
        if not 10000 <= code <= 99999:
            raise ValueError("a MailFathom error code has five digits")
        super().__init__(message)
        self.code = code
        self.message = message
        # The published name of the argument refused, where one was (ask_mail's lookups tell
        # the model which argument to correct without parsing the sentence).
        self.argument = argument

    @property
    def is_published(self) -> bool:
        """Whether a boundary may show this failure to its caller as it stands."""
        return self.code in CALLER_CATEGORY

    def __str__(self) -> str:
        return f"MailFathom error {self.code}: {self.message}"


def published(error: BaseException) -> MailFathomError:
    """Return what a boundary may tell its caller about `error`.

    A caller-category MailFathomError passes through; anything else (another category, an
    unexpected exception) becomes 54001 with no detail, which stays in the server log.
    """
    if isinstance(error, MailFathomError) and error.is_published:
        return error
    return MailFathomError(UNDESCRIBED, UNDESCRIBED_MESSAGE)


# Codes used across apps, named once so a grep finds every place that raises one.
PAGE_SIZE_OUT_OF_RANGE = 51001
FILTER_REFUSED = 51002
UNKNOWN_ACCOUNT = 53001
UNKNOWN_EMAIL = 53002
UNKNOWN_FOLDER_ROLE = 53003
CONTENT_UNAVAILABLE = 55001
