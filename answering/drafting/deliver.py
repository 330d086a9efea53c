"""Stage 9, deliver: put a draft in the account's Drafts folder, never twice, and record it.

The account's append mode decides (`off` writes nothing ever; `approved`; `every`, which
still holds back a draft that needs review). Each version gets a Message-ID minted from the
draft's id; a delivery first searches the folder for it, so a retry never appends twice, and
superseded copies are removed only after the new one is in. Every server change goes to the
mutation trail. One delivery per draft at a time (an advisory lock on its id).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import connection, transaction
from django.utils import timezone

from accounts.models import DraftAppendMode
from answering.drafting.compose import compose_reply, is_version_of, mint_message_id, reply_sender
from answering.models import Draft, DraftStatus, Verdict
from audit.models import MutationKind, MutationOutcome, RequesterKind
from audit.services.mutations import Mutation, message_id_hash, record_mutation
from mailbox.models import Folder
from mailbox.services.drafts_folder import DraftsSession, drafts_folder_of, drafts_session
from mailfathom.core.errors import Code, MailFathomError

logger = logging.getLogger(__name__)

DELIVERY_BUSY = Code.DELIVERY_BUSY
TASK_REQUESTER = "answering.drafting"
_DELIVERED_STATUSES: dict[str, set[str]] = {
    DraftAppendMode.APPROVED: {DraftStatus.APPROVED, DraftStatus.EDITED},
    DraftAppendMode.EVERY: {DraftStatus.PENDING, DraftStatus.APPROVED, DraftStatus.EDITED},
}


@dataclass(frozen=True)
class Requester:
    """Who asked for a server change, as the mutation trail names them."""

    name: str
    kind: RequesterKind

    @classmethod
    def task(cls) -> Requester:
        return cls(TASK_REQUESTER, RequesterKind.TASK)

    @classmethod
    def user(cls, user: AbstractBaseUser) -> Requester:
        return cls(user.get_username() or "user", RequesterKind.USER)


@dataclass(frozen=True)
class Delivery:
    """What one delivery did on the server; all zero when the policy or the state asked for nothing."""

    appended: bool = False
    found_existing: bool = False
    removed: int = 0
    expunged: bool = False
    uid: int | None = None
    skipped: str = ""


def wants_copy(draft: Draft) -> bool:
    """Whether the account's append mode wants this draft, in its status, in the Drafts folder.

    A pending draft that needs review never goes there, whatever the mode: a mail client
    shows the Drafts folder as letters ready to send, and nobody has looked at this one.
    """
    if draft.status == DraftStatus.PENDING and draft.verdict != Verdict.READY:
        return False
    return draft.status in _DELIVERED_STATUSES.get(draft.account.drafting_append_mode, set())


def is_delivered(draft: Draft) -> bool:
    """Whether the current version's copy is confirmed in the Drafts folder."""
    return bool(draft.remote_message_id) and draft.appended_at is not None


def deliver_draft(draft: Draft, *, requester: Requester | None = None, recheck: bool = False) -> Delivery:
    """Bring the Drafts folder in line with `draft` as the account's append mode wants it.

    A draft the mode wants is appended (or found) and its superseded copies removed; a
    discarded draft's copies are removed. Nothing connects when the mode is off, when the
    draft is already delivered (unless `recheck`: then the folder is searched again and a
    copy someone deleted there is appended anew), or when nothing of it was ever written.
    Call it outside any transaction. Raises MailFathomError 63001 to 63005
    (docs/errors.md); the draft row and its status are kept either way.
    """
    requester = requester or Requester.task()
    draft = Draft.objects.select_related("account", "email").get(pk=draft.pk)
    if draft.account.drafting_append_mode == DraftAppendMode.OFF:
        return Delivery(skipped="the account's append mode is off")
    if draft.status == DraftStatus.DISCARDED:
        return withdraw_draft(draft, requester=requester)
    if not wants_copy(draft):
        return Delivery(skipped="the append mode does not write drafts in this status")
    if is_delivered(draft) and not recheck:
        return Delivery(uid=draft.remote_uid, skipped="already in the Drafts folder")
    trail = _Trail(draft, requester, drafts_folder_of(draft.account))  # 63001 before anything else
    _outside_a_transaction()
    with _one_delivery_at_a_time(draft):
        draft.refresh_from_db()
        if (is_delivered(draft) and not recheck) or not wants_copy(draft):
            return Delivery(uid=draft.remote_uid, skipped="delivered meanwhile")
        if not draft.remote_message_id:
            # Committed before the APPEND: a retry must look for the very copy this run may leave.
            draft.remote_message_id = mint_message_id(draft, reply_sender(draft))
            minted = draft.remote_message_id
            Draft.objects.filter(pk=draft.pk).update(remote_message_id=minted, appended_at=None)
        message = compose_reply(draft, draft.remote_message_id, now=timezone.now())
        with trail.abandoned_on_failure(MutationKind.DRAFT_APPENDED, draft.remote_message_id) as act:
            with drafts_session(draft.account) as session:
                return _put_in_place(draft, session, message, trail, act)


def withdraw_draft(draft: Draft, *, requester: Requester | None = None) -> Delivery:
    """Remove every copy of `draft` from the Drafts folder (a discarded draft); record each.

    Nothing connects when the mode is off or nothing of the draft was ever written.
    """
    requester = requester or Requester.task()
    draft = Draft.objects.select_related("account", "email").get(pk=draft.pk)
    if draft.account.drafting_append_mode == DraftAppendMode.OFF:
        return Delivery(skipped="the account's append mode is off")
    if not draft.remote_message_id and draft.remote_uid is None:
        return Delivery(skipped="nothing of this draft was written to the server")
    trail = _Trail(draft, requester, drafts_folder_of(draft.account))
    _outside_a_transaction()
    with (
        _one_delivery_at_a_time(draft),
        trail.abandoned_on_failure(MutationKind.DRAFT_REMOVED, draft.remote_message_id),
        drafts_session(draft.account) as session,
    ):
        started = timezone.now()
        copies = _copies_of(draft, session)
        expunged = session.remove(sorted(copies))
        with transaction.atomic():
            for uid, message_id in sorted(copies.items()):
                trail.performed(MutationKind.DRAFT_REMOVED, uid, message_id, started, expunged=expunged)
            Draft.objects.filter(pk=draft.pk).update(remote_message_id="", remote_uid=None, appended_at=None)
    logger.info("draft withdrawn: %d copies removed (expunged: %s)", len(copies), expunged)
    return Delivery(removed=len(copies), expunged=expunged)


def _put_in_place(draft: Draft, session: DraftsSession, message: bytes, trail: _Trail, act: _Act) -> Delivery:
    started = timezone.now()
    copies = _copies_of(draft, session)
    current = sorted(uid for uid, found in copies.items() if found == draft.remote_message_id)
    found_existing = bool(current)
    uid = current[0] if current else session.append(message, draft.remote_message_id)
    # An APPEND whose answer was lost is recorded by the retry that finds it; one recorded
    # already (this very UID saved with its entry) is not recorded twice.
    recorded = (
        draft.remote_uid == uid
        and draft.remote_uidvalidity == session.uidvalidity
        and draft.remote_folder_id == session.folder.pk
    )
    with transaction.atomic():
        if not recorded:
            trail.performed(
                MutationKind.DRAFT_APPENDED, uid, draft.remote_message_id, started,
                size=len(message), found_existing=found_existing,
            )  # fmt: skip
        Draft.objects.filter(pk=draft.pk).update(
            remote_uid=uid, remote_uidvalidity=session.uidvalidity, remote_folder=session.folder
        )
    # Superseded versions (and any stray second copy) go only once the current one is there.
    stale = sorted(set(copies) - {uid})
    act.kind, act.message_id = MutationKind.DRAFT_REPLACED, ""  # a failure from here on is a removal's
    expunged = session.remove(stale)
    with transaction.atomic():
        for old in stale:
            trail.performed(MutationKind.DRAFT_REPLACED, old, copies[old], started, expunged=expunged)
        # Only if no edit superseded this version meanwhile (an edit clears the Message-ID).
        current_version = Draft.objects.filter(pk=draft.pk, remote_message_id=draft.remote_message_id)
        current_version.update(appended_at=timezone.now())
    logger.info("draft delivered: appended %s, %d superseded copies removed", not found_existing, len(stale))
    return Delivery(
        appended=not found_existing,
        found_existing=found_existing,
        removed=len(stale),
        expunged=expunged,
        uid=uid,
    )


def _copies_of(draft: Draft, session: DraftsSession) -> dict[int, str]:
    """UID -> Message-ID of every copy of any version of `draft` in the Drafts folder."""
    found = session.copies(str(draft.id))
    return {uid: message_id for uid, message_id in found.items() if is_version_of(draft, message_id)}


def _outside_a_transaction() -> None:
    # The Message-ID must be committed before the APPEND and each trail entry as soon as
    # its change is made; inside a caller's transaction a crash would roll both back.
    if connection.in_atomic_block:
        raise RuntimeError("deliver a draft outside any transaction, once the draft is committed")


@dataclass
class _Act:
    """The server change a delivery is making now: what an abandoned entry names."""

    kind: MutationKind
    message_id: str


class _Trail:
    """The mutation-trail entries of one delivery: plain values only (audit.services.mutations)."""

    def __init__(self, draft: Draft, requester: Requester, folder: Folder) -> None:
        self.draft = draft
        self.requester = requester
        self.folder_alias = folder.mapping.alias if folder.mapping else ""

    def performed(
        self,
        kind: MutationKind,
        uid: int,
        message_id: str,
        started: datetime,
        *,
        size: int | None = None,
        found_existing: bool | None = None,
        expunged: bool | None = None,
    ) -> None:
        counts: dict[str, int] = {"messages": 1}
        if size is not None:
            counts["bytes"] = size
        if found_existing is not None:
            counts["found_existing"] = int(found_existing)
        if expunged is not None:
            counts["expunged"] = int(expunged)
        self._write(kind, MutationOutcome.PERFORMED, started, message_id, uid=uid, counts=counts)

    @contextmanager
    def abandoned_on_failure(self, kind: MutationKind, message_id: str) -> Iterator[_Act]:
        """Record the act under way as abandoned, with its code, when the server part fails."""
        started = timezone.now()
        act = _Act(kind, message_id)
        try:
            yield act
        except MailFathomError as error:
            self._write(act.kind, MutationOutcome.ABANDONED, started, act.message_id, failure_code=error.code)
            raise

    def _write(
        self,
        kind: MutationKind,
        outcome: MutationOutcome,
        started: datetime,
        message_id: str,
        *,
        uid: int | None = None,
        failure_code: int | None = None,
        counts: dict[str, int] | None = None,
    ) -> None:
        record_mutation(
            Mutation(
                kind=kind,
                requester=self.requester.name,
                requester_kind=self.requester.kind,
                account_pk=self.draft.account_id,
                requested_at=started,
                completed_at=timezone.now() if outcome == MutationOutcome.PERFORMED else None,
                outcome=outcome,
                failure_code=failure_code,
                message_id_hash=message_id_hash(message_id) if message_id else "",
                folder_alias=self.folder_alias,
                uid=uid,
                counts=counts or {},
            )
        )


@contextmanager
def _one_delivery_at_a_time(draft: Draft) -> Iterator[None]:
    """Hold a session-level advisory lock on the draft's id, or raise 63005 when another run holds it.

    Session-level (not transaction-level), so the Message-ID stored before the APPEND is
    committed at once; the lock goes with the database connection if the process dies.
    """
    key = f"mailfathom.draft-delivery:{draft.pk}"
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", [key])
        (taken,) = cursor.fetchone()
    if not taken:
        raise MailFathomError(
            DELIVERY_BUSY, "Another delivery of this draft is running; try again once it has finished."
        )
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", [key])
