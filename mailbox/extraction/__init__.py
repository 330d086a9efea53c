"""Text of attachments, read in a child process under memory, CPU, time and output limits.

Import from here; the submodules are internal. `extract_text` is the one entry point: it
judges the attachment's kind, refuses what is switched off or too large without starting
anything, and otherwise reads it in a child (mailbox.extraction.sandbox) whose every way of
ending, a crash or a hang included, becomes an Outcome.
"""

from mailbox.extraction.kinds import ALL_KINDS, Kind, kind_of
from mailbox.extraction.outcome import ENGINE_VERSION, Extracted, ExtractionLimits, Outcome
from mailbox.extraction.sandbox import extract_text

__all__ = [
    "ALL_KINDS",
    "ENGINE_VERSION",
    "Extracted",
    "ExtractionLimits",
    "Kind",
    "Outcome",
    "extract_text",
    "kind_of",
]
