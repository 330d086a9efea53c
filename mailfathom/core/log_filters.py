"""Logging filters that keep bearer tokens out of Django's own log lines.

Attachment download links carry their credential in the path (docs/operations/deployment.md,
"What the logs never carry"). The download view answers every path under /attachments/
itself and marks its responses as logged, so Django's request and CSRF loggers never see
them; this filter is the second line, for a path that reaches those loggers anyway.
"""

from __future__ import annotations

import logging
import re

ATTACHMENTS_PREFIX = "/attachments/"
_TOKEN_PATH = re.compile(r"/attachments/[^\s'\"<>]*")
REDACTED_PATH = "/attachments/[redacted]"


def redact(text: str) -> str:
    """`text` with anything after /attachments/ in a path replaced by a fixed mark."""
    return _TOKEN_PATH.sub(REDACTED_PATH, text)


class RedactAttachmentPaths(logging.Filter):
    """Rewrite a record about an /attachments/ path so it names no token; never drop it."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        about_attachment = str(getattr(request, "path", "")).startswith(ATTACHMENTS_PREFIX)
        if isinstance(record.msg, str) and ATTACHMENTS_PREFIX in record.msg:
            record.msg = redact(record.msg)
            about_attachment = True
        if isinstance(record.args, tuple):
            args = tuple(redact(arg) if isinstance(arg, str) else arg for arg in record.args)
            about_attachment = about_attachment or args != record.args
            record.args = args
        if about_attachment and request is not None:
            # Handlers such as AdminEmailHandler render the request, path included.
            record.request = None
        return True
