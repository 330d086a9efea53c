"""The verdict on a draft of one email, from the database: what the pipeline and a reviewer's edit both call.

assess_draft reads the draft's origins by id (answering.drafting.provenance), the parties
the reply goes to and the answered mail's correspondent checks
(answering.drafting.correspondents), and hands them with the body to assess. A stored
draft is judged again from its own ids with reassess_draft, so an edit is measured
against exactly what the first verdict was.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from django.conf import settings

from answering.drafting.assess import Assessment, assess, reason_codes
from answering.drafting.correspondents import (
    own_parties,
    recipient_parties,
    reply_to_reasons,
    thread_hijack_reasons,
)
from answering.drafting.provenance import locate_in_mailbox, origins_for
from answering.models import Draft
from mailbox.models import Email
from mailfathom.core.config import MailFathomSettings


def assess_draft(
    email: Email,
    body: str,
    *,
    language: str,
    thread_ids: Sequence[UUID | str],
    source_ids: Sequence[UUID | str],
    reference_ids: Sequence[int],
    finish_reported: bool = True,
) -> Assessment:
    """The verdict on `body` as a reply to `email`, built from the given origins."""
    values: MailFathomSettings = settings.MAILFATHOM
    account = email.account
    own = own_parties(account)
    origins = origins_for(
        email,
        own=own,
        thread_ids=[str(value) for value in thread_ids],
        source_ids=[str(value) for value in source_ids],
        reference_ids=list(reference_ids),
        max_answered=values.drafting_max_answered_characters,
        max_thread=values.drafting_characters_per_thread_message,
    )
    signatures = dict(account.drafting_signatures.values_list("language", "text"))
    return assess(
        body,
        language=language,
        origins=origins,
        signatures=signatures,
        recipients=recipient_parties(email, own),
        correspondent_reasons=[*reply_to_reasons(email, own), *thread_hijack_reasons(email, own)],
        finish_reported=finish_reported,
        locate=locate_in_mailbox(email, own),
    )


def reassess_draft(draft: Draft, body: str) -> Assessment:
    """The verdict on `body` as a new version of `draft`, from the draft's own origins."""
    return assess_draft(
        draft.email,
        body,
        language=draft.language,
        thread_ids=draft.thread_ids,
        source_ids=draft.source_ids,
        reference_ids=draft.reference_ids,
        finish_reported="no_finish_reason" not in reason_codes(draft.reasons or []),
    )
