"""Stage 4, gather: one hybrid search with two strings, fused before anything else sees them.

The condensed query goes to the vector arm (it is the only string embedded); the raw mail,
subject and body exactly as condense was handed them, goes to the lexical arm, because the
project number, order reference and surname the customer typed are what condensing throws
away (docs/operations/drafting.md, gather). Both rankings are fused inside the one call
(mailbox.services.passages with `lexical_query_text`).

Scope: the answered mail's own account, every folder tools may read, junk never (the
passage retrieval's own rule), resolved through the same scope resolution every read uses,
so a caller's key limit applies too. The answered mail and its thread tail are left out:
they are in the prompt already, under their own headings.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from mailbox.models import Email
from mailbox.services.passages import Passage, retrieve_passages
from mailbox.services.search import MAX_RESULT_LIMIT

STAGE = "gather"


@dataclass(frozen=True)
class Gathered:
    passages: tuple[Passage, ...]  # ranked, best first
    retrieval_mode: str  # "hybrid" or "lexical"


def gather(
    *,
    account_id: str,
    condensed: str,
    raw: str,
    sources: int,
    max_characters: int,
    leave_out: Collection[str],
    leave_out_message_ids: Collection[str] = (),
) -> Gathered:
    """Up to `sources` passages of the account's mail for the two strings (see the docstring)."""
    limit = min(MAX_RESULT_LIMIT, sources + len(leave_out))
    retrieval = retrieve_passages(
        condensed,
        accounts=[account_id],
        folders=None,
        limit=limit,
        max_characters=max_characters,
        lexical_query_text=raw,
    )
    candidates = [p for p in retrieval.passages if p.stored_email_id not in leave_out]
    if leave_out_message_ids and candidates:
        copies = set(
            Email.objects.filter(
                pk__in=[p.stored_email_id for p in candidates], message_id__in=list(leave_out_message_ids)
            ).values_list("id", flat=True)
        )
        candidates = [p for p in candidates if p.stored_email_id not in {str(pk) for pk in copies}]
    return Gathered(passages=tuple(candidates[:sources]), retrieval_mode=retrieval.retrieval_mode)
