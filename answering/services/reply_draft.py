"""draft_reply: stages 2 to 8 for one email in the caller's scope; the draft is returned, not stored.

The order is the contract (docs/operations/drafting.md, draft_reply over MCP): the id (a UUID
of at most 64 characters, 51004, before anything is read), the scope (a key's account limit
travels into every read), the capability (56001), the email in scope (53002), then
compose_draft under drafting's own period allowance (57001). Any other refusal is an
ordinary result saying so. Nothing is stored; where scanning is on the draft is redacted.
"""

from __future__ import annotations

import uuid

from pydantic.alias_generators import to_camel

from accounts.services.scope import resolve_scope
from answering.drafting.capability import drafting_capability
from answering.drafting.pipeline import DraftRefused, compose_draft
from answering.ledger import SPEND_REFUSED, drafting_ledger
from answering.models import AttemptOutcome
from mailbox.models import Email
from mailbox.services import sensitive
from mailfathom.core.capability import CapabilityState, capability_refused
from mailfathom.core.errors import UNKNOWN_EMAIL, MailFathomError
from mailfathom.core.identifiers import issued_uuid
from mailfathom.core.wire import WireModel

VERDICTS = ("ready", "needsReview")
REFUSALS = tuple(
    to_camel(outcome.value) for outcome in AttemptOutcome if outcome != AttemptOutcome.CEILING_REACHED
)


class StageTokens(WireModel):
    prompt: int
    completion: int


class DraftReplyResult(WireModel):
    stored_email_id: str
    drafted: bool
    body: str | None
    intent: str | None
    language: str | None
    verdict: str | None
    reasons: list[str]
    note: str
    source_email_ids: list[str]
    refused_at: str | None
    refusal: str | None
    model_alias: str
    tokens: dict[str, StageTokens]


def checked_email_id(value: object) -> uuid.UUID:
    """`value` as a UUID this system could have issued, else 51004 (mailfathom.core.identifiers)."""
    return issued_uuid(value, "The storedEmailId argument", argument="storedEmailId")


def draft_reply(stored_email_id: str) -> DraftReplyResult:
    """Draft a reply to one email in scope; see the module docstring for the order."""
    email_id = checked_email_id(stored_email_id)
    scope = resolve_scope()
    capability = drafting_capability()
    if capability.state != CapabilityState.AVAILABLE:
        raise capability_refused(
            capability.state,
            does="drafts replies",
            lacking="This deployment does not draft replies: it declares no drafting endpoint.",
        )
    email = Email.objects.readable(scope).filter(pk=email_id).select_related("account").first()
    if email is None:
        raise MailFathomError(
            UNKNOWN_EMAIL, "No email with this storedEmailId is held in the caller's scope."
        )
    result = compose_draft(email)
    if isinstance(result, DraftRefused):
        if result.outcome == AttemptOutcome.CEILING_REACHED:
            raise MailFathomError(
                SPEND_REFUSED,
                "This deployment has spent what it may spend on drafting replies in the current "
                "period (questions are counted apart); the allowance renews at "
                f"{drafting_ledger().renews_at().isoformat()}.",
            )
        return DraftReplyResult(
            stored_email_id=str(email_id),
            drafted=False,
            body=None,
            intent=None,
            language=None,
            verdict=None,
            reasons=[],
            note="",
            source_email_ids=[],
            refused_at=result.stage,
            refusal=to_camel(result.outcome),
            model_alias=result.model_alias,
            tokens=_tokens(result.tokens),
        )
    body = sensitive.redact(result.body) if sensitive.enabled() else result.body
    return DraftReplyResult(
        stored_email_id=str(email_id),
        drafted=True,
        body=body,
        intent=result.intent,
        language=result.language,
        verdict=to_camel(result.verdict),
        reasons=list(result.reasons),
        note=result.note,
        source_email_ids=[str(source) for source in result.source_ids],
        refused_at=None,
        refusal=None,
        model_alias=result.model_alias,
        tokens=_tokens(result.tokens),
    )


def _tokens(tokens: dict[str, dict[str, int]]) -> dict[str, StageTokens]:
    return {stage: StageTokens(**counts) for stage, counts in tokens.items()}
