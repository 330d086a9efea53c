"""ask_mail: a question answered from the mail a chat model looks up, cited, under hard ceilings.

The order is the contract (refusals in docs/errors.md): the question (1 to
MAX_QUESTION_CHARACTERS, refused rather than cut: a cut question is a different question),
the scope, the capability (56001), the period allowance (57001, taken only once the rest
admits the question), the run, the response cut to its bounds with each cut reported, then
the answering audit trail, whose failed append never fails the answer. Citations come from
what the run retrieved, never parsed from the model's text; logs carry counts only.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterable, Iterator
from datetime import datetime

from django.conf import settings
from django.utils import timezone
from opentelemetry import trace

from accounts.services.caller import current_caller
from accounts.services.scope import ResolvedScope, resolve_scope
from answering.capability import admit_question
from answering.citing import Reliance, relied_on
from answering.instructions import INSTRUCTION_VERSION
from answering.ledger import PeriodLedger, period_ledger
from answering.question_run import BoundScope, Run, RunBounds, RunCeilingReached, RunRecord
from answering.relevance import RelevanceSettings
from audit.services.answering_trail import RetrievedEmail, RunAudit, RunOutcome, record_run
from mailbox.services import sensitive
from mailbox.services.bounds import bounded_text
from mailbox.services.passages import Passage
from mailfathom.core.capability import CapabilityState, capability_refused
from mailfathom.core.config import MailFathomSettings
from mailfathom.core.wire import WireModel
from mailfathom.providers import get_chat_model
from mailfathom.providers.chat import ChatModel
from mailfathom.providers.errors import ProviderError

logger = logging.getLogger(__name__)
_tracer = trace.get_tracer("mailfathom.answering")

MAX_QUESTION_CHARACTERS = 1000


class Citation(WireModel):
    stored_email_id: str
    account_id: str
    account_display_name: str
    folder_alias: str
    subject: str
    received_at: datetime


class ReliedOnCitation(Citation):
    source_number: int


class AnswerResult(WireModel):
    answer: str
    citations: list[Citation]
    relied_on: list[ReliedOnCitation]
    answer_truncated: bool
    citations_truncated: bool
    retrieval_truncated: bool


def checked_question(question: object) -> str:
    """`question` if it may be asked, else 51002 naming the argument and its bound."""
    return bounded_text(question, maximum=MAX_QUESTION_CHARACTERS, argument="question")


def bind_scope(scope: ResolvedScope, folders: Iterable[str] | None) -> BoundScope:
    """The run's copy of the caller's authorization: names to re-resolve, and what they allow."""
    names = tuple(folders) if folders is not None else None
    return BoundScope(
        account_ids=scope.account_ids,
        folder_names=names,
        allowed=frozenset(
            (account.account_id, folder.alias) for account in scope.accounts for folder in account.folders
        ),
    )


def _bounds() -> RunBounds:
    values: MailFathomSettings = settings.MAILFATHOM
    return RunBounds(
        max_passages_per_retrieval=values.answering_max_passages_per_retrieval,
        max_characters_per_passage=values.answering_max_characters_per_passage,
        max_retrieved_characters=values.answering_max_retrieved_characters_per_run,
        max_provider_calls=values.answering_max_provider_calls_per_run,
        max_tokens=values.answering_max_tokens_per_run,
    )


def _relevance() -> RelevanceSettings | None:
    values: MailFathomSettings = settings.MAILFATHOM
    if not values.chat_relevance_filter_enabled:
        return None
    return RelevanceSettings(
        threshold=values.chat_relevance_filter_threshold,
        max_candidates=min(
            values.chat_relevance_filter_max_candidates,
            values.answering_max_passages_per_retrieval,
        ),
    )


def ask_mail(
    question: str,
    accounts: Iterable[str] | None = None,
    folders: Iterable[str] | None = None,
) -> AnswerResult:
    """Answer `question` from the caller's scope; see the module docstring for the order."""
    question = checked_question(question)
    folder_names: list[str] | None = None if folders is None else []
    scope = resolve_scope(accounts, _recorded(folders, folder_names))
    with admit_question() as capability:
        chat = get_chat_model() if capability.state == CapabilityState.AVAILABLE else None
        if chat is None:
            raise capability_refused(
                capability.state,
                does="answers questions about mail",
                lacking="This deployment does not answer questions about mail: it declares no chat "
                "endpoint or embeds no mail.",
            )
        ledger = period_ledger()
        ledger.admit()
        return _answer(question, chat, scope, folder_names, ledger)


def _recorded(names: Iterable[str] | None, into: list[str] | None) -> Iterable[str] | None:
    """`names` read lazily (scope resolution counts them as it reads), each kept in `into`."""
    if names is None or into is None or isinstance(names, str):
        return names  # absent, or refused by the resolution as it stands

    def reading() -> Iterator[str]:
        for name in names:
            into.append(name)
            yield name

    return reading()


def _answer(
    question: str, chat: ChatModel, scope: ResolvedScope, folder_names: list[str] | None, ledger: PeriodLedger
) -> AnswerResult:
    run = Run(chat, bind_scope(scope, folder_names), _bounds(), ledger, _relevance())
    started = time.monotonic()
    started_at = timezone.now()
    with _tracer.start_as_current_span("answer_mail_question") as span:
        span.set_attribute("mailfathom.answering.endpoint", chat.alias)
        span.set_attribute("mailfathom.answering.instruction_version", INSTRUCTION_VERSION)
        span.set_attribute("mailfathom.answering.accounts_in_scope", len(scope.accounts))
        outcome_tag = "error"
        # Anything that is not an Exception (a cancelled request) leaves the run cancelled.
        audited = RunOutcome.CANCELLED
        result: AnswerResult | None = None
        reliance: Reliance | None = None
        try:
            outcome = run.answer(question)
            result, reliance = _response(outcome.answer, run.record)
            outcome_tag = "answered"
            audited = RunOutcome.ANSWERED if result.answer.strip() else RunOutcome.ANSWER_EMPTY
            return result
        except RunCeilingReached as ceiling:
            outcome_tag = "run_ceiling"
            audited = RunOutcome.RUN_CEILING_REACHED
            span.set_attribute("mailfathom.answering.ceiling", ceiling.which)
            raise
        except ProviderError as error:
            outcome_tag = f"provider_{error.kind}"
            audited = RunOutcome.PROVIDER_FAILED
            raise
        except Exception:
            audited = RunOutcome.FAILED
            raise
        finally:
            _publish(span, run.record, result, reliance, outcome_tag, chat.alias, time.monotonic() - started)
            record_run(_audit(scope, chat.alias, run.record, result, audited, started_at))


def _audit(
    scope: ResolvedScope,
    alias: str,
    record: RunRecord,
    result: AnswerResult | None,
    outcome: RunOutcome,
    started_at: datetime,
) -> RunAudit:
    """What the trail keeps of this run: the emails it handed over, by account, and how it ended."""
    account_pks = {account.account_id: account.account_pk for account in scope.accounts}
    cited = {citation.stored_email_id for citation in result.citations} if result is not None else set()
    ranks = (
        {source.stored_email_id: rank for rank, source in enumerate(result.relied_on, start=1)}
        if result is not None
        else {}
    )
    emails: dict[str, RetrievedEmail] = {}
    for passage in record.passages:
        if passage.stored_email_id not in emails and passage.account_id in account_pks:
            emails[passage.stored_email_id] = RetrievedEmail(
                account_pk=account_pks[passage.account_id],
                email_id=passage.stored_email_id,
                cited=passage.stored_email_id in cited,
                relied_on_rank=ranks.get(passage.stored_email_id),
            )
    return RunAudit(
        run_id=uuid.uuid4(),
        account_pks=tuple(account_pks.values()),
        emails=tuple(emails.values()),
        chat_alias=alias,
        instruction_version=INSTRUCTION_VERSION,
        started_at=started_at,
        ended_at=timezone.now(),
        outcome=outcome,
        retrieval_ceiling_reached=record.retrieval_truncated,
        relevance_fell_back=record.relevance_fell_back,
        requester=current_caller(),
    )


def _publish(
    span: trace.Span,
    record: RunRecord,
    result: AnswerResult | None,
    reliance: Reliance | None,
    outcome: str,
    alias: str,
    seconds: float,
) -> None:
    emails = len({passage.stored_email_id for passage in record.passages})
    relied = len(result.relied_on) if result is not None else 0
    unmatched = reliance.unmatched if reliance is not None else 0
    for key, value in (
        ("outcome", outcome),
        ("provider_calls", record.provider_calls),
        ("tokens", record.tokens),
        ("lookups", record.lookups),
        ("refused_lookups", record.refused_lookups),
        ("passages", len(record.passages)),
        ("emails", emails),
        ("retrieved_characters", record.retrieved_characters),
        ("retrieval_truncated", record.retrieval_truncated),
        ("relevance_judged", record.relevance_judged),
        ("relevance_dropped", record.relevance_dropped),
        ("out_of_scope_dropped", record.out_of_scope_dropped),
        ("relied_on", relied),
        ("unmatched_citations", unmatched),
    ):
        span.set_attribute(f"mailfathom.answering.{key}", value)
    logger.info(
        "ask_mail run: endpoint=%s outcome=%s calls=%d tokens=%d lookups=%d passages=%d emails=%d "
        "relied_on=%d unmatched_citations=%d retrieval_truncated=%s seconds=%.2f",
        alias,
        outcome,
        record.provider_calls,
        record.tokens,
        record.lookups,
        len(record.passages),
        emails,
        relied,
        unmatched,
        record.retrieval_truncated,
        seconds,
    )
    if record.out_of_scope_dropped:
        logger.warning(
            "ask_mail run dropped %d passages outside its bound scope", record.out_of_scope_dropped
        )


def citations_of(passages: Iterable[Passage]) -> list[Citation]:
    """One citation per email, in the order the run first reached each."""
    seen: dict[str, Citation] = {}
    for passage in passages:
        if passage.stored_email_id in seen:
            continue
        seen[passage.stored_email_id] = Citation(
            stored_email_id=passage.stored_email_id,
            account_id=passage.account_id,
            account_display_name=passage.account_display_name,
            folder_alias=passage.folder_alias,
            subject=passage.subject,
            received_at=passage.received_at,
        )
    return list(seen.values())


def _response(answer: str, record: RunRecord) -> tuple[AnswerResult, Reliance]:
    values: MailFathomSettings = settings.MAILFATHOM
    max_answer = values.answering_max_answer_characters
    max_citations = values.answering_max_citations
    citations = citations_of(record.passages)
    if sensitive.enabled():
        # Guarded before the cut, so what one response carries is bounded with every
        # placeholder already in it; a detector that fails refuses the question (82001).
        answer = sensitive.redact(answer)
    published = citations[:max_citations]
    # Read from the answer as published: a marker cut off with the answer's end, or naming an
    # email cut from citations, claims nothing the response can show.
    reliance = relied_on(answer[:max_answer], record.numbers)
    by_id = {citation.stored_email_id: citation for citation in published}
    reliance_shown = [
        ReliedOnCitation(**by_id[email_id].model_dump(), source_number=number)
        for number, email_id in zip(reliance.numbers, reliance.email_ids, strict=True)
        if email_id in by_id
    ]
    result = AnswerResult(
        answer=answer[:max_answer],
        citations=published,
        relied_on=reliance_shown,
        answer_truncated=len(answer) > max_answer,
        citations_truncated=len(citations) > max_citations,
        retrieval_truncated=record.retrieval_truncated,
    )
    return result, reliance
