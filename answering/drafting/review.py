"""Review a draft: approve it, edit and approve it, or discard it; then deliver per the append mode.

Status moves only forward: pending -> approved | edited | discarded, and an approved or
edited draft may be edited again (its copy in the Drafts folder is then replaced). Each
move is one conditional UPDATE, so two reviewers acting at once cannot both win, and it
sets reviewed_by and reviewed_at. The review is committed before the Drafts folder is
touched: a delivery that fails keeps the approval and is reported beside it, and
deliver_again() retries it.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from answering.drafting.deliver import Delivery, Requester, deliver_draft
from answering.models import Draft, DraftStatus
from mailfathom.errors import MailFathomError

logger = logging.getLogger(__name__)

REVIEW_REFUSED = 63006
BODY_REFUSED = 63007
MAX_BODY_CHARS = 20_000

_APPROVABLE = {DraftStatus.PENDING}
_EDITABLE = {DraftStatus.PENDING, DraftStatus.APPROVED, DraftStatus.EDITED}
_DISCARDABLE = {DraftStatus.PENDING}


@dataclass(frozen=True)
class ReviewResult:
    """The draft after the review, and what happened in the Drafts folder (or why nothing did)."""

    draft: Draft
    delivery: Delivery | None = None
    delivery_error: MailFathomError | None = None


def approve_draft(draft_id: uuid.UUID, user: AbstractBaseUser) -> ReviewResult:
    """Approve a pending draft as it stands. Raises 63006 when it is not pending."""
    _move(draft_id, user, _APPROVABLE, DraftStatus.APPROVED)
    return _deliver(draft_id, user)


def edit_and_approve_draft(draft_id: uuid.UUID, user: AbstractBaseUser, body: str) -> ReviewResult:
    """Replace the draft's body and approve it (status edited).

    The body is refused (63007) when blank or over MAX_BODY_CHARS characters; line ends
    are stored as LF (a browser sends CRLF). An unchanged body approves like
    approve_draft, but a draft already edited stays edited. Raises 63006 for a discarded
    draft.
    """
    body = _checked_body(body)
    with transaction.atomic():
        draft = Draft.objects.select_for_update().get(pk=draft_id)
        if draft.status not in _EDITABLE:
            raise _refused(draft)
        changed = draft.body != body
        status = DraftStatus.EDITED if changed or draft.status == DraftStatus.EDITED else DraftStatus.APPROVED
        fields = {"status": status, "reviewed_by": user, "reviewed_at": timezone.now(), "body": body}
        if changed:
            # The copy in the Drafts folder (if any) is now superseded: the next delivery
            # mints a new Message-ID, appends that version and removes the old one.
            fields |= {"remote_message_id": "", "appended_at": None}
        Draft.objects.filter(pk=draft.pk).update(**fields)
    return _deliver(draft_id, user)


def discard_draft(draft_id: uuid.UUID, user: AbstractBaseUser) -> ReviewResult:
    """Discard a pending draft; a copy of it in the Drafts folder is removed. Raises 63006 otherwise."""
    _move(draft_id, user, _DISCARDABLE, DraftStatus.DISCARDED)
    return _deliver(draft_id, user)


def deliver_again(draft_id: uuid.UUID, user: AbstractBaseUser) -> ReviewResult:
    """Retry the Drafts-folder delivery of a reviewed draft, checking the folder afresh."""
    return _deliver(draft_id, user, recheck=True)


def _checked_body(body: str) -> str:
    if isinstance(body, str):
        body = body.replace("\r\n", "\n").replace("\r", "\n")
    if not isinstance(body, str) or not body.strip():
        raise MailFathomError(BODY_REFUSED, "The draft's body may not be blank.")
    if len(body) > MAX_BODY_CHARS:
        raise MailFathomError(BODY_REFUSED, f"The draft's body is limited to {MAX_BODY_CHARS} characters.")
    return body


def _refused(draft: Draft) -> MailFathomError:
    return MailFathomError(
        REVIEW_REFUSED, f"A draft that is {draft.get_status_display().lower()} cannot be reviewed that way."
    )


def _move(
    draft_id: uuid.UUID, user: AbstractBaseUser, allowed: set[DraftStatus], status: DraftStatus
) -> None:
    moved = Draft.objects.filter(pk=draft_id, status__in=allowed).update(
        status=status, reviewed_by=user, reviewed_at=timezone.now()
    )
    if not moved:
        raise _refused(Draft.objects.get(pk=draft_id))


def _deliver(draft_id: uuid.UUID, user: AbstractBaseUser, *, recheck: bool = False) -> ReviewResult:
    draft = Draft.objects.select_related("account", "email").get(pk=draft_id)
    try:
        delivery = deliver_draft(draft, requester=Requester.user(user), recheck=recheck)
    except MailFathomError as error:
        logger.warning("draft review: delivery to the Drafts folder failed with %s", error.code)
        return ReviewResult(Draft.objects.get(pk=draft_id), delivery_error=error)
    return ReviewResult(Draft.objects.get(pk=draft_id), delivery=delivery)
