"""The run: a conversation between the chat model and one search tool, under hard ceilings.

Nothing is retrieved before the model asks, and each provider call carries only the
versioned instruction (in the instruction position), the question, the model's own turns and
the tool results, so quoted mail has no position to reach but the one it is quoted in. Emails
are numbered by the run, never by mail, for citing (answering.citing). The scope is bound at
composition, never in the conversation, and checked again on every passage admitted. Ceilings
(retrieved characters, provider calls, tokens) are checked before each call; those refusals are
MailFathom's own and never count against the provider (docs/operations/answering.md).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from answering.envelope import write_envelope, write_refusal
from answering.instructions import ANSWER_INSTRUCTION
from answering.ledger import SPEND_REFUSED, PeriodLedger
from answering.lookup import SEARCH_MAIL, TOOL_NAME, Lookup, LookupRefused, parse_lookup
from answering.relevance import RelevanceSettings, filter_passages
from mailbox.services.passages import Passage, PassageRetrieval, retrieve_passages
from mailfathom.core.errors import FILTER_REFUSED, MailFathomError
from mailfathom.providers.chat import CHAT_ROLE, ChatMessage, ChatModel, ToolCall
from mailfathom.providers.errors import BAD_RESPONSE, ProviderError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunBounds:
    max_passages_per_retrieval: int
    max_characters_per_passage: int
    max_retrieved_characters: int
    max_provider_calls: int
    max_tokens: int


@dataclass(frozen=True)
class BoundScope:
    """The caller's resolved authorization: account ids, folder names as asked, and what they allow."""

    account_ids: tuple[str, ...]
    folder_names: tuple[str, ...] | None
    allowed: frozenset[tuple[str, str]]  # (account id, folder alias) a passage may come from

    def admits(self, passage: Passage) -> bool:
        return (passage.account_id, passage.folder_alias) in self.allowed


class RunCeilingReached(MailFathomError):
    """57001 for a run that reached what one question may spend (calls or tokens)."""

    def __init__(self, which: str) -> None:
        super().__init__(
            SPEND_REFUSED,
            f"The question reached the {which} one question may spend and was stopped before an "
            "answer was written; asking it again reaches the same ceiling. A narrower question "
            "may fit.",
        )
        self.which = which


@dataclass
class RunRecord:
    """What a run did, in counts, plus the passages it handed over (for citations)."""

    provider_calls: int = 0
    tokens: int = 0
    lookups: int = 0
    refused_lookups: int = 0
    retrieved_characters: int = 0
    retrieval_truncated: bool = False
    out_of_scope_dropped: int = 0
    relevance_judged: int = 0
    relevance_dropped: int = 0
    relevance_fell_back: bool = False  # a candidate kept unjudged: the pass failed or was not scored
    passages: list[Passage] = field(default_factory=list)
    # The source number each email was shown under, 1 for the first the run handed over; the
    # only numbering an answer's [n] is read against (answering.citing).
    numbers: dict[str, int] = field(default_factory=dict)
    messages: list[ChatMessage] = field(default_factory=list)


@dataclass(frozen=True)
class RunOutcome:
    answer: str
    record: RunRecord


class Run:
    """One question's conversation. Build it with the bound scope; call `answer(question)` once."""

    def __init__(
        self,
        chat: ChatModel,
        scope: BoundScope,
        bounds: RunBounds,
        ledger: PeriodLedger,
        relevance: RelevanceSettings | None = None,
    ) -> None:
        self.chat = chat
        self.scope = scope
        self.bounds = bounds
        self.ledger = ledger
        self.relevance = relevance
        self.record = RunRecord()
        self._last_mode = "lexical"  # what a limit-reached envelope names before any search

    # --- spend --------------------------------------------------------------------------

    def _charge(self, tokens: int) -> None:
        self.record.tokens += tokens
        self.ledger.charge(tokens)

    def _tokens_left(self) -> bool:
        return self.record.tokens < self.bounds.max_tokens

    def _check_ceilings(self) -> None:
        if self.record.provider_calls >= self.bounds.max_provider_calls:
            raise RunCeilingReached("number of model calls")
        if not self._tokens_left():
            raise RunCeilingReached("number of tokens")

    # --- the conversation ---------------------------------------------------------------

    def answer(self, question: str) -> RunOutcome:
        messages = self.record.messages
        messages.append(ChatMessage(role="user", content=question))
        while True:
            self._check_ceilings()
            reply = self.chat.complete(ANSWER_INSTRUCTION, tuple(messages), (SEARCH_MAIL,))
            self.record.provider_calls += 1
            self._charge(reply.total_tokens)
            if not reply.tool_calls:
                if not reply.text.strip():
                    # Only a content-filtered reply arrives empty; an answer with no text is
                    # a failed generation (73001) here, as every other empty one is.
                    raise ProviderError(BAD_RESPONSE, False, role=CHAT_ROLE)
                return RunOutcome(answer=reply.text, record=self.record)
            messages.append(ChatMessage(role="assistant", content=reply.text, tool_calls=reply.tool_calls))
            for call in reply.tool_calls:
                messages.append(
                    ChatMessage(role="tool", content=self._tool_result(call), tool_call_id=call.call_id)
                )

    def _tool_result(self, call: ToolCall) -> str:
        if call.name != TOOL_NAME:
            self.record.refused_lookups += 1
            return write_refusal("name", FILTER_REFUSED, "The only tool offered is search_mail.")
        self.record.lookups += 1
        try:
            lookup = parse_lookup(call.arguments)
            return self._search(lookup)
        except LookupRefused as refusal:
            self.record.refused_lookups += 1
            return write_refusal(refusal.argument, refusal.code, refusal.message)

    def _remaining(self) -> int:
        return self.bounds.max_retrieved_characters - self.record.retrieved_characters

    def _search(self, lookup: Lookup) -> str:
        if self._remaining() <= 0:
            self.record.retrieval_truncated = True
            return write_envelope(self._last_mode, (), limit_reached=True)
        retrieval = self._retrieve(lookup)
        passages = [passage for passage in retrieval.passages if self.scope.admits(passage)]
        self.record.out_of_scope_dropped += len(retrieval.passages) - len(passages)
        if self.relevance is not None and passages:
            outcome = filter_passages(
                self.chat,
                lookup,
                retrieval.retrieval_mode,
                passages,
                self.relevance,
                may_spend=self._tokens_left,
                charge=self._charge,
            )
            self.record.relevance_judged += outcome.judged
            self.record.relevance_dropped += outcome.dropped
            self.record.relevance_fell_back |= outcome.failure is not None
            passages = list(outcome.passages)
        admitted, cut = self._admit(passages)
        self._last_mode = retrieval.retrieval_mode
        return write_envelope(
            retrieval.retrieval_mode,
            admitted,
            limit_reached=cut or self._remaining() <= 0,
            numbers=self.record.numbers,
        )

    def _retrieve(self, lookup: Lookup) -> PassageRetrieval:
        try:
            return retrieve_passages(
                lookup.query_text,
                accounts=self.scope.account_ids,
                folders=self.scope.folder_names,
                limit=self.bounds.max_passages_per_retrieval,
                max_characters=self.bounds.max_characters_per_passage,
                mail_filter=lookup.mail_filter,
            )
        except MailFathomError as error:
            if not error.is_published:
                raise
            raise LookupRefused(error.argument or "queryText", error.code, error.message) from None

    def _admit(self, passages: Sequence[Passage]) -> tuple[list[Passage], bool]:
        """Whole passages in ranking order while they fit what the run may still send."""
        admitted: list[Passage] = []
        for passage in passages:
            if passage.characters > self._remaining():
                self.record.retrieval_truncated = True
                return admitted, True
            admitted.append(passage)
            self.record.retrieved_characters += passage.characters
            self.record.passages.append(passage)
            self.record.numbers.setdefault(passage.stored_email_id, len(self.record.numbers) + 1)
        return admitted, False
