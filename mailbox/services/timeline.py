"""list_emails: a bounded page of email summaries from the local copy, newest received first.

Checks run cheapest first, before any query: page size (51001), direction (51002), the
cursor's authenticity (52001), filters and scope (mailbox.services.selection), then whether
the cursor belongs to this selection (52002). Pages are keyset-paginated on (received_at,
id), so new mail never shifts a walk. Only include_junk lets junk mail in: naming the junk
folder in a filter is not refused, but reads nothing, because a folder filter can only
narrow.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Q

from mailbox.models import Email
from mailbox.services import cursor as cursors
from mailbox.services.bounds import whole_number
from mailbox.services.freshness import FolderFreshness, folder_freshness
from mailbox.services.mail_filter import MailFilter
from mailbox.services.selection import select
from mailbox.services.summaries import EmailSummary, summarize
from mailfathom.core.errors import FILTER_REFUSED, PAGE_SIZE_OUT_OF_RANGE, MailFathomError
from mailfathom.core.wire import WireModel

MIN_PAGE_SIZE = 1
MAX_PAGE_SIZE = 100
DEFAULT_PAGE_SIZE = 25

NEWEST_FIRST = "newestFirst"
OLDEST_FIRST = "oldestFirst"
DIRECTIONS = (NEWEST_FIRST, OLDEST_FIRST)


class EmailPage(WireModel):
    """One page of the timeline; next_cursor is None on the last page."""

    emails: list[EmailSummary]
    next_cursor: str | None
    included_junk_mail: bool
    folder_freshness: list[FolderFreshness]


def list_emails(
    accounts: Iterable[str] | None = None,
    folders: Iterable[str] | None = None,
    mail_filter: MailFilter | None = None,
    direction: str = NEWEST_FIRST,
    page_size: int | None = None,
    cursor: str | None = None,
) -> EmailPage:
    """Return one page of summaries for the caller's selection, with per-folder freshness.

    A page size outside 1..100 is refused (51001), never clamped. No accounts means every
    served account; an unserved or unknown name is 53001 rather than an empty page. A cursor
    only carries a position: the scope is resolved afresh on every call, so a cursor can
    never reach an account, folder or junk mail the current request would not. `mail_filter`
    is checked here whoever built it; absent, nothing is narrowed and junk is left out.
    """
    size = whole_number(
        page_size,
        minimum=MIN_PAGE_SIZE,
        maximum=MAX_PAGE_SIZE,
        default=DEFAULT_PAGE_SIZE,
        code=PAGE_SIZE_OUT_OF_RANGE,
        argument="pageSize",
    )
    if direction not in DIRECTIONS:
        raise MailFathomError(FILTER_REFUSED, "The direction argument must be newestFirst or oldestFirst.")
    decoded = cursors.decode(cursor, DIRECTIONS) if cursor is not None else None

    selection = select(accounts, folders, mail_filter)
    fingerprint = selection.fingerprint()

    rows = Email.objects.in_selection(selection)
    newest_first = direction == NEWEST_FIRST
    if decoded is not None:
        position = decoded.require_match(direction, fingerprint)
        moment, last_id = position.received_at, position.email_id
        if newest_first:
            after = Q(received_at__lt=moment) | Q(received_at=moment, id__lt=last_id)
        else:
            after = Q(received_at__gt=moment) | Q(received_at=moment, id__gt=last_id)
        rows = rows.filter(after)
    ordering = ("-received_at", "-id") if newest_first else ("received_at", "id")
    # Body text is never part of a summary; leave it in the database.
    fetched = list(rows.order_by(*ordering).defer("text_body")[: size + 1])

    page = fetched[:size]
    next_cursor = None
    if len(fetched) > size:
        last = page[-1]
        next_cursor = cursors.issue(cursors.Position(last.received_at, last.pk), direction, fingerprint)

    return EmailPage(
        emails=summarize(page),
        next_cursor=next_cursor,
        included_junk_mail=selection.filter.include_junk,
        folder_freshness=folder_freshness(selection),
    )
