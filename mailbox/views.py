"""The attachment download endpoint: a signed link is the whole credential.

No session or API key is asked for: the token in the path is a bearer capability minted by
get_email_content. Every refusal (malformed, altered, expired, out of scope, damaged, not
an attachment) is one 404 with one body, so a caller cannot tell which it met. The token
is never logged: Django's request logger would write the path of a 4xx response, so every
response here is marked as already logged, and a failure is logged without the request.
The view is exempt from CSRF (a link is no form; the CSRF middleware would log the path of
a refused POST) and answers methods other than GET and HEAD with 405 itself (Django's
require_http_methods would log the path). Paths under /attachments/ that are not a link
get the same 404 from `not_a_link` (mailbox.urls).
"""

from __future__ import annotations

import logging

from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseNotFound
from django.views.decorators.csrf import csrf_exempt

from mailbox.services.attachment_links import content_disposition, served_media_type
from mailbox.services.content import open_attachment_link

logger = logging.getLogger(__name__)

REFUSED_BODY = "This download link is not valid."


SERVED_METHODS = ("GET", "HEAD")


@csrf_exempt
def download_attachment(request: HttpRequest, token: str) -> HttpResponse:
    """Serve exactly the attachment `token` names, as a download that no browser renders.

    HEAD is answered like GET; the server leaves the body out.
    """
    if request.method not in SERVED_METHODS:
        return _hardened(HttpResponseNotAllowed(SERVED_METHODS))
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


@csrf_exempt
def not_a_link(request: HttpRequest) -> HttpResponse:
    """Refuse a path under /attachments/ that is no link, exactly as a refused link is refused."""
    return _hardened(HttpResponseNotFound(REFUSED_BODY, content_type="text/plain"))


def _hardened(response: HttpResponse) -> HttpResponse:
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "no-store"
    response["Referrer-Policy"] = "no-referrer"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    # django.utils.log.log_response skips a response carrying this mark; without it a
    # refused link would be written to the log with its token in the path.
    response._has_been_logged = True  # type: ignore[attr-defined]  # Django's private flag: log_response skips a response already logged
    return response
