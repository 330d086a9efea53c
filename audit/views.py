"""The printable erasure statement: a staff-only page (docs/operations/compliance.md).

Staff only, and the `audit.view_erasurerequestrecord` permission on top: an anonymous
visitor is sent to the admin login, a staff member without the permission gets 403. The
page shows counts, times, requesters, hashes, suppressions, the rows removed with the mail,
the clean-up and the signature: never an address.
"""

from __future__ import annotations

import uuid

from django.contrib.admin.views.decorators import staff_member_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from audit.services.erasure import erasure_statement
from mailbox.services.erasure import KINDS
from mailfathom.core.errors import MailFathomError

PERMISSION = "audit.view_erasurerequestrecord"


@staff_member_required
def erasure_statement_page(request: HttpRequest, request_id: uuid.UUID) -> HttpResponse:
    """Render the statement of one erasure request for printing."""
    if not request.user.has_perm(PERMISSION):
        raise PermissionDenied
    try:
        statement = erasure_statement(request_id)
    except MailFathomError as error:
        raise Http404("No such erasure request.") from error
    rows = [(counts.account_id, [getattr(counts, kind) for kind in KINDS]) for counts in statement.accounts]
    totals = [statement.total(kind) for kind in KINDS]
    return render(
        request,
        "audit/erasure_statement.html",
        {
            "statement": statement,
            "kinds": [kind.replace("_", " ") for kind in KINDS],
            "rows": rows,
            "totals": totals,
            "suppressions_per_account": sorted(dict(statement.suppressions.get("per_account", {})).items()),
            "removed_rows": [
                (label, found.get("count", 0), found.get("ids", []))
                for label, found in sorted(statement.removed_rows.items())
            ],
            "signed_at_rfc3339": (statement.document or {}).get("signed_at", ""),
        },
    )
