"""Stage 6, fit: the prompt's token budget, derived from the retrieval settings, and the drop order.

The budget grows with what the settings retrieve, so raising the number of sources raises
the room to carry them, and sits under a hard ceiling of CEILING_TOKENS:

    budget = min(CEILING_TOKENS, reserve + sources × source_tokens + tail × message_tokens)

where `reserve` is the instruction, the answered mail at its character bound, the signature
and an allowance for the few-shot examples. A startup check (answering.drafting.checks)
refuses settings whose one-thread-message minimum plus every source would not fit under
the ceiling: a setting can never retrieve more than the prompt holds.

When the parts of one draft do not fit, they are dropped in one fixed order
(docs/operations/drafting.md, fit): all few-shot examples at once; then the oldest
thread-tail messages one at a time, never below one; then the lowest-ranked sources from
the bottom. The answered mail is never dropped. Correctness outranks voice.

Measured and knobs: CEILING_TOKENS is the one measured number (the size above which a
32k-context model stopped obeying its instruction, drafting-replies § The budget).
CHARACTERS_PER_TOKEN, ELEMENT_OVERHEAD_TOKENS, HEADER_CHARACTERS, SUBJECT_CHARACTERS,
SIGNATURE_CHARACTERS and EXAMPLES_ALLOWANCE_TOKENS are engineering choices: treat them as
knobs. Token counts here are estimates from characters (3 per token, generous for German
and for markup); what a call really cost is the provider's report, booked by spend.
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
