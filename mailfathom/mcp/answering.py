"""The rules ask_mail and draft_reply are advertised by (docs/operations/answering.md, drafting.md).

ask_mail is listed only while this deployment can answer a question, decided on every
tools/list rather than at startup, so a repaired or a broken endpoint is visible without a
restart. The reading belongs to the answering app (answering.capability), which the use
case reads too, so the advertisement and the call cannot disagree. It costs no provider
call. Listing is not authorization: a call that arrives anyway meets 56001 in the use case.
draft_reply follows the same rule with the drafting capability (answering.drafting.capability).
"""

from __future__ import annotations

from answering.capability import answering_available
from answering.drafting.capability import drafting_available

__all__ = ["answering_available", "drafting_available"]
