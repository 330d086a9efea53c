"""Review a draft: edit it, approve it, edit and approve it, or discard it; then deliver per the append mode.

Status moves only forward (pending -> approved | edited | discarded; approved or edited may be
edited again), each move one conditional UPDATE so two reviewers cannot both win. The review
commits before the Drafts folder is touched; a failed delivery is reported beside it and
retried by deliver_again(). Every saved edit is reassessed against the draft's own origins,
and a draft that needs review is approved only with each open reason acknowledged (63008).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from answering.drafting.deliver import Delivery, Requester, deliver_draft, withdraw_draft
from answering.drafting.verdict import reassess_draft
from answering.models import Draft, DraftStatus, Verdict
from mailfathom.core.errors import Code, MailFathomError

logger = logging.getLogger(__name__)

REVIEW_REFUSED = Code.REVIEW_REFUSED
BODY_REFUSED = Code.BODY_REFUSED
ACKNOWLEDGEMENT_REQUIRED = Code.ACKNOWLEDGEMENT_REQUIRED
MAX_BODY_CHARS = 20_000

_APPROVABLE = {DraftStatus.PENDING}
_EDITABLE = {DraftStatus.PENDING, DraftStatus.APPROVED, DraftStatus.EDITED}
_DISCARDABLE = {DraftStatus.PENDING}
_RESET_ON_EDIT = {"remote_message_id": "", "appended_at": None}


@dataclass(frozen=True)
class ReviewResult:
    """The draft after the review, and what happened in the Drafts folder (or why nothing did)."""

    draft: Draft
    delivery: Delivery | None = None
    delivery_error: MailFathomError | None = None
    added: tuple[str, ...] = ()  # reasons the saved edit brought
    cleared: tuple[str, ...] = ()  # reasons the saved edit removed


def open_reasons(draft: Draft) -> list[str]:
    """The reasons a reviewer must acknowledge to approve `draft` as it stands."""
    return [] if draft.verdict == Verdict.READY else [str(reason) for reason in draft.reasons or []]


def _check_acknowledged(draft: Draft, acknowledged: Collection[str]) -> list[dict[str, str]]:
    """The acknowledgement entries for `draft`'s open reasons; 63008 when one is not acknowledged."""
    missing = [reason for reason in open_reasons(draft) if reason not in set(acknowledged)]
    if missing:
        raise MailFathomError(
            ACKNOWLEDGEMENT_REQUIRED,
            f"This draft needs review: acknowledge each of its {len(open_reasons(draft))} open reasons "
            f"before approving it ({len(missing)} not acknowledged).",
        )
    return [{"code": reason.split(":", 1)[0], "reason": reason} for reason in open_reasons(draft)]


def approve_draft(
    draft_id: uuid.UUID, user: AbstractBaseUser, acknowledged: Collection[str] = ()
) -> ReviewResult:
    """Approve a pending draft as it stands. Raises 63006 when it is not pending, 63008 when
    it needs review and `acknowledged` lacks one of its reasons."""
    with transaction.atomic():
        draft = Draft.objects.select_for_update().get(pk=draft_id)
        if draft.status not in _APPROVABLE:
            raise _refused(draft)
        entries = _stamped(_check_acknowledged(draft, acknowledged), user)
        Draft.objects.filter(pk=draft.pk).update(
            status=DraftStatus.APPROVED,
            reviewed_by=user,
            reviewed_at=timezone.now(),
            acknowledgements=entries,
        )
    return _deliver(draft_id, user)


def save_draft_edit(draft_id: uuid.UUID, user: AbstractBaseUser, body: str) -> ReviewResult:
    """Replace a pending draft's body without approving it, and judge it again.

    The result names the reasons the edit added and cleared. A copy in the Drafts folder
    (append mode every) is replaced when the new version is ready, and taken out when it
    needs review. Raises 63007 for a blank or oversized body, 63006 unless pending.
    """
    body = _checked_body(body)
    with transaction.atomic():
        draft = Draft.objects.select_for_update().select_related("email", "account").get(pk=draft_id)
        if draft.status != DraftStatus.PENDING:
            raise _refused(draft)
        before = list(draft.reasons or [])
        changed = draft.body != body
        fields = _reassessed(draft, body)
        if changed:
            fields |= _RESET_ON_EDIT
        Draft.objects.filter(pk=draft.pk).update(**fields)
    after = fields["reasons"]
    result = _deliver(draft_id, user, withdraw=fields["verdict"] != Verdict.READY)
    return ReviewResult(
        result.draft,
        result.delivery,
        result.delivery_error,
        added=tuple(reason for reason in after if reason not in before),
        cleared=tuple(reason for reason in before if reason not in after),
    )


def edit_and_approve_draft(
    draft_id: uuid.UUID, user: AbstractBaseUser, body: str, acknowledged: Collection[str] = ()
) -> ReviewResult:
    """Replace the draft's body, judge it again and approve it (status edited).

    The body is refused (63007) when blank or over MAX_BODY_CHARS characters; line ends
    are stored as LF (a browser sends CRLF). An unchanged body approves like
    approve_draft, but a draft already edited stays edited. When the new version needs
    review, each of its reasons must be in `acknowledged`, else 63008 and nothing is
    saved (assessment_of shows the reasons to acknowledge). Raises 63006 for a discarded
    draft.
    """
    body = _checked_body(body)
    with transaction.atomic():
        draft = Draft.objects.select_for_update().select_related("email", "account").get(pk=draft_id)
        if draft.status not in _EDITABLE:
            raise _refused(draft)
        changed = draft.body != body
        fields = _reassessed(draft, body) if changed else {}
        if changed:
            # The copy in the Drafts folder (if any) is now superseded: the next delivery
            # mints a new Message-ID, appends that version and removes the old one.
            fields |= _RESET_ON_EDIT
            draft.verdict, draft.reasons = fields["verdict"], fields["reasons"]
        entries = _stamped(_check_acknowledged(draft, acknowledged), user)
        status = DraftStatus.EDITED if changed or draft.status == DraftStatus.EDITED else DraftStatus.APPROVED
        fields |= {
            "status": status, "reviewed_by": user, "reviewed_at": timezone.now(), "body": body,
            "acknowledgements": entries,
        }  # fmt: skip
        Draft.objects.filter(pk=draft.pk).update(**fields)
    return _deliver(draft_id, user)


def assessment_of(draft_id: uuid.UUID, body: str) -> list[str]:
    """The reasons `body` would have as the draft's new version; nothing is saved."""
    draft = Draft.objects.select_related("email", "account").get(pk=draft_id)
    if body == draft.body:
        return open_reasons(draft)
    return list(reassess_draft(draft, _checked_body(body)).reasons)


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


def _reassessed(draft: Draft, body: str) -> dict[str, Any]:  # keyword arguments of update()
    assessment = reassess_draft(draft, body)
    return {
        "body": body,
        "verdict": assessment.verdict,
        "reasons": list(assessment.reasons),
        "findings": [finding.as_json() for finding in assessment.findings],
        "assessed_at": timezone.now(),
        "acknowledgements": [],
    }


def _stamped(entries: list[dict[str, str]], user: AbstractBaseUser) -> list[dict[str, str]]:
    at = timezone.now().isoformat()
    return [{**entry, "by": user.get_username(), "at": at} for entry in entries]


def _deliver(
    draft_id: uuid.UUID, user: AbstractBaseUser, *, recheck: bool = False, withdraw: bool = False
) -> ReviewResult:
    draft = Draft.objects.select_related("account", "email").get(pk=draft_id)
    try:
        if withdraw and (draft.remote_uid is not None or draft.remote_message_id):
            delivery = withdraw_draft(draft, requester=Requester.user(user))
        else:
            delivery = deliver_draft(draft, requester=Requester.user(user), recheck=recheck)
    except MailFathomError as error:
        logger.warning("draft review: delivery to the Drafts folder failed with %s", error.code)
        return ReviewResult(Draft.objects.get(pk=draft_id), delivery_error=error)
    return ReviewResult(Draft.objects.get(pk=draft_id), delivery=delivery)
