"""The attachment download endpoint: a signed link is the whole credential.

No session or API key is asked for: the token in the path is a bearer capability minted by
get_email_content. Every refusal (malformed, altered, expired, out of scope, damaged, not
an attachment) is one 404 with one body, so a caller cannot tell which it met. The token
is never logged: Django's request logger would write the path of a 4xx response, so every
response here is marked as already logged, and a failure is logged without the request.
"""

from __future__ import annotations

import logging

from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseNotFound

from mailbox.services.attachment_links import content_disposition, served_media_type
from mailbox.services.content import open_attachment_link

logger = logging.getLogger(__name__)

REFUSED_BODY = "This download link is not valid."


def download_attachment(request: HttpRequest, token: str) -> HttpResponse:
    """Serve exactly the attachment `token` names, as a download that no browser renders."""
    if request.method != "GET":
        return _hardened(HttpResponseNotAllowed(["GET"]))
    try:
        download = open_attachment_link(token)
    except Exception:
        # The traceback names no token (locals are not logged); the request is left out.
        logger.exception("An attachment download failed.")
        return _hardened(HttpResponse("The download failed.", status=500, content_type="text/plain"))
    if download is None:
        return _hardened(HttpResponseNotFound(REFUSED_BODY, content_type="text/plain"))
    response = HttpResponse(download.data, content_type=served_media_type(download.media_type))
    response["Content-Disposition"] = content_disposition(download.file_name)
    return _hardened(response)


def _hardened(response: HttpResponse) -> HttpResponse:
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "no-store"
    response["Referrer-Policy"] = "no-referrer"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    # django.utils.log.log_response skips a response carrying this mark; without it a
    # refused link would be written to the log with its token in the path.
    response._has_been_logged = True  # type: ignore[attr-defined]
    return response
