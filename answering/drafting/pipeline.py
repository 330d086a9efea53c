"""compose_draft: stages 2 to 8 over one incoming email; nothing is stored.

Admission first (both drafting roles resolve to a model, and one run from drafting's own
period ledger), then classify, condense, gather (the thread tail and the answered mail left
out), rerank with reference documents when switched on, fit, generate and assess
(docs/operations/drafting.md). A per-message problem never escapes: it is a DraftRefused
naming the stage and the AttemptOutcome, with the tokens spent. Only what is not about the
message escapes (the ledger unreachable, 56001; the database). Logs carry counts, never mail.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django.conf import settings
from opentelemetry import trace

from answering.drafting import assess as assess_stage
from answering.drafting.classify import classify
from answering.drafting.condense import condense
from answering.drafting.fit import EXAMPLES, SOURCE, TAIL, Parts, Plan, budget_tokens, estimate_tokens, fit
from answering.drafting.gather import gather
from answering.drafting.generate import (
    DRAFT_INSTRUCTION_VERSION,
    PromptParts,
    answered_element,
    examples_element,
    generate,
    instruction_for,
    longest_instruction,
    reply_element,
    source_element,
    thread_element,
)
from answering.drafting.mail import MailText, mail_text, thread_tail
from answering.drafting.references import PREFIX, is_reference, search_references
from answering.drafting.rerank import best_judged, rerank
from answering.drafting.spend import Spend, StageRefused
from answering.drafting.verdict import assess_draft
from answering.ledger import SPEND_REFUSED, drafting_ledger
from answering.models import AttemptOutcome
from answering.relevance import RelevanceSettings
from mailbox.models import Email
from mailbox.services.passages import Passage
from mailfathom.core.config import DRAFTING_ROLE, MailFathomSettings
from mailfathom.core.errors import MailFathomError
from mailfathom.providers import drafting_models, utility_models
from mailfathom.providers.chat import ChatModel

logger = logging.getLogger(__name__)
_tracer = trace.get_tracer("mailfathom.answering.drafting")

ADMISSION = "admission"
# Halving rounds of the answered body when even the never-dropped parts exceed the budget
# (markup escaping can make a hostile mail several times longer than its characters).
MAX_ANSWERED_CUTS = 8


@dataclass(frozen=True)
class ComposedDraft:
    """What stages 2 to 8 produced; nothing is stored."""

    body: str
    intent: str
    language: str
    source_ids: tuple[UUID, ...]
    verdict: str  # a Verdict value
    reasons: tuple[str, ...]
    note: str
    model_alias: str
    tokens: dict[str, dict[str, int]]  # per stage {"prompt": n, "completion": n}
    thread_ids: tuple[UUID, ...] = ()
    reference_ids: tuple[int, ...] = ()
    findings: tuple[dict[str, Any], ...] = ()  # assess.Finding.as_json() of each flagged fact


@dataclass(frozen=True)
class DraftRefused:
    """A draft that was not written: the stage it ended at and the AttemptOutcome value."""

    stage: str
    outcome: str
    model_alias: str
    tokens: dict[str, dict[str, int]]


def compose_draft(email: Email) -> ComposedDraft | DraftRefused:
    """Run stages 2 to 8 for `email` (see the module docstring)."""
    values: MailFathomSettings = settings.MAILFATHOM
    utility, drafter = utility_models.get(), drafting_models.get()
    alias = drafter.alias if drafter is not None else values.chat_endpoint(DRAFTING_ROLE).alias
    if utility is None or drafter is None:
        return _logged(DraftRefused(ADMISSION, AttemptOutcome.PROVIDER_FAILED.value, alias, {}), 0.0)
    ledger = drafting_ledger()
    try:
        ledger.admit()
    except MailFathomError as error:
        if error.code != SPEND_REFUSED:
            raise
        return _logged(DraftRefused(ADMISSION, AttemptOutcome.CEILING_REACHED.value, alias, {}), 0.0)
    spend = Spend(ledger)
    started = time.monotonic()
    with _tracer.start_as_current_span("compose_draft") as span:
        span.set_attribute("mailfathom.drafting.endpoint", alias)
        span.set_attribute("mailfathom.drafting.instruction_version", DRAFT_INSTRUCTION_VERSION)
        try:
            result: ComposedDraft | DraftRefused = _compose(email, values, utility, drafter, spend, span)
        except StageRefused as refusal:
            span.set_attribute("mailfathom.drafting.refusal_reason", refusal.reason)
            result = DraftRefused(refusal.stage, refusal.outcome, alias, _copy(spend.tokens))
        _publish(span, result, spend)
        return _logged(result, time.monotonic() - started)


def _copy(tokens: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    return {stage: dict(counts) for stage, counts in tokens.items()}


def _compose(
    email: Email,
    values: MailFathomSettings,
    utility: ChatModel,
    drafter: ChatModel,
    spend: Spend,
    span: trace.Span,
) -> ComposedDraft:
    account = email.account
    answered = mail_text(email, values.drafting_max_answered_characters)
    classification = classify(spend.model("classify", utility), answered)
    condensed = condense(
        spend.model("condense", utility), answered, values.drafting_max_condensed_query_characters
    )
    tail = thread_tail(
        email, values.drafting_thread_tail_messages, values.drafting_characters_per_thread_message
    )
    tail_ids = {mail.email_id for mail in tail}
    gathered = gather(
        account_id=account.account_id,
        condensed=condensed.query,
        raw=answered.raw,
        sources=values.drafting_sources_per_draft,
        max_characters=values.drafting_characters_per_source,
        leave_out={answered.email_id, *tail_ids},
        leave_out_message_ids=_message_ids(email, tail_ids),
        correspondent_of=email if values.drafting_source_scope == "correspondent" else None,
    )
    passages = list(gathered.passages)
    span.set_attribute("mailfathom.drafting.gathered", len(passages))
    span.set_attribute("mailfathom.drafting.retrieval_mode", gathered.retrieval_mode)
    if values.drafting_rerank_enabled:
        # Reference documents are asked only here: what fit drops from the bottom is then
        # what the judgement scored worst, never the tail of an unjudged list.
        candidates = passages + search_references(
            account_pk=account.pk,
            account_id=account.account_id,
            condensed=condensed.query,
            raw=answered.raw,
            limit=values.drafting_sources_per_draft,
            max_characters=values.drafting_characters_per_source,
        )
        if candidates:
            outcome = rerank(
                spend.model("rerank", utility),
                condensed.query,
                gathered.retrieval_mode,
                candidates,
                RelevanceSettings(
                    threshold=values.chat_relevance_filter_threshold,
                    max_candidates=values.chat_relevance_filter_max_candidates,
                ),
            )
            passages = best_judged(outcome, values.chat_relevance_filter_threshold)
            passages = passages[: values.drafting_sources_per_draft]
            span.set_attribute("mailfathom.drafting.rerank_dropped", outcome.dropped)
            span.set_attribute("mailfathom.drafting.references", sum(map(is_reference, passages)))

    signatures = dict(account.drafting_signatures.values_list("language", "text"))
    examples = list(account.drafting_examples.values_list("incoming", "reply"))
    language = classification.language
    instruction = instruction_for(classification.intent)
    budget = budget_tokens(values, estimate_tokens(longest_instruction()))

    request, plan, answered_cut = _fitted(
        answered,
        tail,
        passages,
        examples,
        language,
        signatures.get(language, ""),
        gathered.retrieval_mode,
        instruction,
        budget,
    )
    kept_sources = passages[: plan.sources_kept]
    span.set_attribute("mailfathom.drafting.prompt_tokens_estimated", plan.tokens)
    span.set_attribute("mailfathom.drafting.budget", plan.budget)
    span.set_attribute("mailfathom.drafting.dropped", len(plan.dropped))

    generated = generate(spend.model("generate", drafter), instruction, request)
    kept_tail = tail[plan.tail_from :]
    thread_ids = tuple(UUID(mail.email_id) for mail in kept_tail)
    source_ids = tuple(UUID(p.stored_email_id) for p in kept_sources if not is_reference(p))
    reference_ids = tuple(
        int(p.stored_email_id.removeprefix(PREFIX)) for p in kept_sources if is_reference(p)
    )
    assessment = assess_draft(
        email,
        generated.body,
        language=language,
        thread_ids=thread_ids,
        source_ids=source_ids,
        reference_ids=reference_ids,
        finish_reported=not generated.note,
    )
    return ComposedDraft(
        body=generated.body,
        intent=classification.intent,
        language=language,
        source_ids=source_ids,
        thread_ids=thread_ids,
        reference_ids=reference_ids,
        verdict=assessment.verdict,
        reasons=assessment.reasons,
        findings=tuple(finding.as_json() for finding in assessment.findings),
        note=_note(generated.note, condensed.cut, values, plan.dropped, answered_cut),
        model_alias=drafter.alias,
        tokens=_copy(spend.tokens),
    )


def _message_ids(email: Email, tail_ids: set[str]) -> set[str]:
    """Message-IDs of the answered mail and its tail: their copies in other folders are left out too."""
    ids = set(
        Email.objects.filter(pk__in=tail_ids).exclude(message_id="").values_list("message_id", flat=True)
    )
    if email.message_id:
        ids.add(email.message_id)
    return ids


def _fitted(
    answered: MailText,
    tail: list[MailText],
    passages: list[Passage],
    examples: list[tuple[str, str]],
    language: str,
    signature: str,
    retrieval_mode: str,
    instruction: str,
    budget: int,
) -> tuple[str, Plan, bool]:
    """(the user turn, the fit plan, whether the answered body had to be cut to fit)."""
    cut = False
    for _ in range(MAX_ANSWERED_CUTS + 1):
        parts = PromptParts(
            examples=examples_element(examples),
            tail=tuple(thread_element(mail) for mail in tail),
            sources=tuple(source_element(passage) for passage in passages),
            answered=answered_element(answered),
            reply=reply_element(language, signature),
            retrieval_mode=retrieval_mode,
        )
        sizes = Parts(
            fixed=estimate_tokens(instruction) + estimate_tokens(parts.frame()),
            examples=(estimate_tokens(parts.examples),) if examples else (),
            tail=tuple(estimate_tokens(element) for element in parts.tail),
            sources=tuple(estimate_tokens(element) for element in parts.sources),
        )
        plan = fit(sizes, budget)
        if plan.fits or not answered.body:
            break
        # Only a mail whose escaping multiplies its length gets here (the startup check
        # keeps the bounds inside the budget): its body is cut, never dropped.
        answered = MailText(
            answered.email_id,
            answered.sender,
            answered.received_at,
            answered.subject,
            answered.body[: len(answered.body) // 2],
            answered.direction,
        )
        cut = True
    request = parts.render(plan.keep_examples, plan.tail_from, plan.sources_kept)
    return request, plan, cut


def _note(
    finish_note: str,
    query_cut: bool,
    values: MailFathomSettings,
    dropped: tuple[str, ...],
    answered_cut: bool,
) -> str:
    """What the reviewer should know about how this draft was built (English, no content)."""
    sentences = [finish_note] if finish_note else []
    if query_cut:
        sentences.append(
            "The search query condensed from the mail was cut to "
            f"{values.drafting_max_condensed_query_characters} characters."
        )
    if dropped:
        parts = []
        if EXAMPLES in dropped:
            parts.append("the few-shot examples")
        if tails := dropped.count(TAIL):
            parts.append(f"{tails} older thread message{'s' if tails > 1 else ''}")
        if sources := dropped.count(SOURCE):
            parts.append(f"{sources} lowest-ranked source{'s' if sources > 1 else ''}")
        sentences.append("To fit the prompt, this draft was written without " + ", ".join(parts) + ".")
    if answered_cut:
        sentences.append("The answered mail was cut to fit the prompt.")
    return " ".join(sentences)


def _publish(span: trace.Span, result: ComposedDraft | DraftRefused, spend: Spend) -> None:
    span.set_attribute("mailfathom.drafting.calls", spend.calls)
    span.set_attribute("mailfathom.drafting.tokens", sum(sum(c.values()) for c in spend.tokens.values()))
    if isinstance(result, DraftRefused):
        span.set_attribute("mailfathom.drafting.outcome", result.outcome)
        span.set_attribute("mailfathom.drafting.stage", result.stage)
    else:
        span.set_attribute("mailfathom.drafting.outcome", "drafted")
        span.set_attribute("mailfathom.drafting.verdict", result.verdict)
        span.set_attribute("mailfathom.drafting.reasons", len(result.reasons))


def _logged(result: ComposedDraft | DraftRefused, seconds: float) -> ComposedDraft | DraftRefused:
    tokens = sum(sum(counts.values()) for counts in result.tokens.values())
    if isinstance(result, DraftRefused):
        logger.info(
            "draft refused: endpoint=%s stage=%s outcome=%s tokens=%d seconds=%.2f",
            result.model_alias,
            result.stage,
            result.outcome,
            tokens,
            seconds,
        )
    else:
        logger.info(
            "draft composed: endpoint=%s intent=%s language=%s verdict=%s reasons=%s sources=%d "
            "tokens=%d seconds=%.2f",
            result.model_alias,
            result.intent,
            result.language,
            result.verdict,
            ",".join(assess_stage.reason_codes(result.reasons)) or "none",
            len(result.source_ids),
            tokens,
            seconds,
        )
    return result
