"""What a draft spends: every model call metered by stage and charged to the period ledger.

Each stage is handed `Spend.model(stage, chat)`, a ChatModel that books the tokens the
provider reported for every reply under that stage's name (prompt and completion apart) and
charges their sum to drafting's period ledger (answering.ledger.drafting_ledger), which
admitted the draft as one run. The counts are what the provider measured; nothing here
estimates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from answering.ledger import PeriodLedger
from answering.models import AttemptOutcome
from mailfathom.providers.chat import ChatMessage, ChatModel, ChatReply, ToolDefinition
from mailfathom.providers.errors import ProviderError


class StageRefused(Exception):
    """A stage that ends the draft: which stage, and the AttemptOutcome value it ends in."""

    def __init__(self, stage: str, outcome: str, reason: str = "") -> None:
        super().__init__(f"{stage}: {outcome}")
        self.stage = stage
        self.outcome = outcome
        self.reason = reason  # a fixed code for logs (never content)


@dataclass
class Spend:
    ledger: PeriodLedger
    tokens: dict[str, dict[str, int]] = field(default_factory=dict)
    calls: int = 0

    def book(self, stage: str, reply: ChatReply) -> None:
        counts = self.tokens.setdefault(stage, {"prompt": 0, "completion": 0})
        counts["prompt"] += reply.input_tokens
        counts["completion"] += reply.output_tokens
        self.calls += 1
        self.ledger.charge(reply.total_tokens)

    def model(self, stage: str, chat: ChatModel) -> MeteredModel:
        return MeteredModel(chat, stage, self)


class MeteredModel(ChatModel):
    """`chat`, with every reply booked under `stage`; a provider failure is the stage's end."""

    def __init__(self, chat: ChatModel, stage: str, spend: Spend) -> None:
        self.chat = chat
        self.stage = stage
        self.spend = spend
        self.alias = chat.alias
        self.model = chat.model

    def complete(
        self,
        instruction: str,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
    ) -> ChatReply:
        reply = self.chat.complete(instruction, messages, tools)
        self.spend.book(self.stage, reply)
        return reply

    def ask(self, instruction: str, content: str) -> ChatReply:
        """One user turn; a ProviderError becomes StageRefused(stage, provider_failed)."""
        try:
            return self.complete(instruction, (ChatMessage(role="user", content=content),))
        except ProviderError as error:
            raise StageRefused(self.stage, AttemptOutcome.PROVIDER_FAILED.value, error.kind) from None
