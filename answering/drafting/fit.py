"""Stage 6, fit: the prompt's token budget, derived from the retrieval settings, and the drop order.

budget = min(CEILING_TOKENS, reserve + sources × source_tokens + tail × message_tokens), and
a startup check refuses settings that could retrieve more than the ceiling holds. Parts that
do not fit are dropped in one order: every few-shot example, then the oldest thread-tail
messages (never below one), then the lowest-ranked sources; never the answered mail.
CEILING_TOKENS is measured (docs/operations/drafting.md); the other constants are knobs, and token
counts here are estimates from characters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mailfathom.core.config import MailFathomSettings

STAGE = "fit"

CEILING_TOKENS = 12_000  # measured
CHARACTERS_PER_TOKEN = 3  # knob
ELEMENT_OVERHEAD_TOKENS = 40  # knob: tags and attributes of one message element
HEADER_CHARACTERS = 300  # knob: sender, date and id attributes of a message
SUBJECT_CHARACTERS = 200  # a source's subject is cut to this in the prompt
SIGNATURE_CHARACTERS = 1000  # a signature longer than this is not carried
EXAMPLES_ALLOWANCE_TOKENS = 1000  # knob: room the budget keeps for the few-shot examples

EXAMPLES, TAIL, SOURCE = "examples", "tail", "source"


def estimate_tokens(text: str) -> int:
    """Tokens `text` is counted as: one per CHARACTERS_PER_TOKEN characters, rounded up."""
    return math.ceil(len(text) / CHARACTERS_PER_TOKEN)


def _characters(count: int) -> int:
    return math.ceil(count / CHARACTERS_PER_TOKEN)


def source_tokens(values: MailFathomSettings) -> int:
    """What one source at its bounds is counted as."""
    characters = values.drafting_characters_per_source + SUBJECT_CHARACTERS + HEADER_CHARACTERS
    return _characters(characters) + ELEMENT_OVERHEAD_TOKENS


def message_tokens(values: MailFathomSettings) -> int:
    """What one thread-tail message at its bounds is counted as."""
    characters = values.drafting_characters_per_thread_message + HEADER_CHARACTERS
    return _characters(characters) + ELEMENT_OVERHEAD_TOKENS


def fixed_tokens(values: MailFathomSettings, instruction_tokens: int) -> int:
    """The parts never dropped, at their bounds: instruction, answered mail, signature, markup."""
    answered = _characters(values.drafting_max_answered_characters + HEADER_CHARACTERS)
    signature = _characters(SIGNATURE_CHARACTERS)
    return instruction_tokens + answered + signature + 3 * ELEMENT_OVERHEAD_TOKENS


def budget_tokens(values: MailFathomSettings, instruction_tokens: int) -> int:
    """The prompt budget the settings derive (see the module docstring), at most the ceiling."""
    derived = (
        fixed_tokens(values, instruction_tokens)
        + EXAMPLES_ALLOWANCE_TOKENS
        + values.drafting_sources_per_draft * source_tokens(values)
        + values.drafting_thread_tail_messages * message_tokens(values)
    )
    return min(CEILING_TOKENS, derived)


def budget_problems(values: MailFathomSettings, instruction_tokens: int) -> list[str]:
    """Sentences naming settings that would retrieve more than the prompt can hold."""
    least = fixed_tokens(values, instruction_tokens) + message_tokens(values)
    retrieved = values.drafting_sources_per_draft * source_tokens(values)
    if least + retrieved <= CEILING_TOKENS:
        return []
    return [
        f"MAILFATHOM_DRAFTING_SOURCES_PER_DRAFT ({values.drafting_sources_per_draft}) sources of "
        f"MAILFATHOM_DRAFTING_CHARACTERS_PER_SOURCE ({values.drafting_characters_per_source}) "
        f"characters are counted as {retrieved} tokens; with the answered mail "
        f"(MAILFATHOM_DRAFTING_MAX_ANSWERED_CHARACTERS), one thread message "
        f"(MAILFATHOM_DRAFTING_CHARACTERS_PER_THREAD_MESSAGE) and the instruction ({least} "
        f"tokens) that is more than a draft's prompt holds ({CEILING_TOKENS} tokens). Lower "
        "one of them."
    ]


@dataclass(frozen=True)
class Parts:
    """Token counts of one draft's prompt parts."""

    fixed: int  # instruction, answered mail, signature, markup: never dropped
    examples: tuple[int, ...]  # the few-shot examples, dropped together
    tail: tuple[int, ...]  # earlier thread messages, oldest first
    sources: tuple[int, ...]  # gathered sources, best first


@dataclass(frozen=True)
class Plan:
    """What is kept: all examples or none, the newest tail messages, the best sources."""

    keep_examples: bool
    tail_from: int  # index of the oldest tail message kept
    sources_kept: int
    tokens: int
    budget: int
    dropped: tuple[str, ...]  # EXAMPLES, TAIL, SOURCE in the order they went

    @property
    def fits(self) -> bool:
        return self.tokens <= self.budget


def fit(parts: Parts, budget: int) -> Plan:
    """Drop in the fixed order until the parts fit `budget`, or nothing droppable is left.

    `fits` is False only when the answered mail and the newest thread message alone exceed
    the budget, which the startup check and the cut bounds keep from happening.
    """
    keep_examples, tail_from, sources_kept = True, 0, len(parts.sources)
    dropped: list[str] = []

    def total() -> int:
        return (
            parts.fixed
            + (sum(parts.examples) if keep_examples else 0)
            + sum(parts.tail[tail_from:])
            + sum(parts.sources[:sources_kept])
        )

    while total() > budget:
        if keep_examples and parts.examples:
            keep_examples = False
            dropped.append(EXAMPLES)
        elif len(parts.tail) - tail_from > 1:
            tail_from += 1
            dropped.append(TAIL)
        elif sources_kept > 0:
            sources_kept -= 1
            dropped.append(SOURCE)
        else:
            break
    return Plan(
        keep_examples=keep_examples and bool(parts.examples),
        tail_from=tail_from,
        sources_kept=sources_kept,
        tokens=total(),
        budget=budget,
        dropped=tuple(dropped),
    )
