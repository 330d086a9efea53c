"""Stage 4, gather: one hybrid search with two strings, fused before anything else sees them.

The condensed query goes to the vector arm; the raw mail goes to the lexical arm, because the
numbers and names the customer typed are what condensing throws away. Scope: the answered
mail's own account, readable folders, never junk, through the common scope resolution (a
key's limit applies); the answered mail and its thread tail are left out. With
MAILFATHOM_DRAFTING_SOURCE_SCOPE=correspondent, sources narrow to mail with the answered
mail's own party (docs/decisions/0006-drafting-source-scope.md).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from answering.drafting.correspondents import correspondence_of, own_parties, party_of
from answering.drafting.facts import Evidence, evidence_from, extract_facts
from mailbox.models import Direction, Email
from mailbox.services.passages import Passage, retrieve_passages
from mailbox.services.search import MAX_RESULT_LIMIT

STAGE = "gather"
# How much deeper the ranking is read when only the correspondent's own mail may be kept.
CORRESPONDENT_DEPTH = 4


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
    correspondent_of: Email | None = None,
) -> Gathered:
    """Up to `sources` passages of the account's mail for the two strings (see the docstring).

    `correspondent_of`, when given, keeps only mail exchanged with that email's sender's party
    and the firm's internal mail.
    """
    depth = sources * (CORRESPONDENT_DEPTH if correspondent_of is not None else 1)
    limit = min(MAX_RESULT_LIMIT, depth + len(leave_out))
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
    if correspondent_of is not None and candidates:
        candidates = kept_for_the_correspondent(candidates, correspondent_of)
    return Gathered(passages=tuple(candidates[:sources]), retrieval_mode=retrieval.retrieval_mode)


def kept_for_the_correspondent(candidates: list[Passage], email: Email) -> list[Passage]:
    """The candidates drafting may show a model writing to `email`'s sender (module docstring)."""
    own = own_parties(email.account)
    wanted = party_of(email.sender_address)
    rows = {
        str(pk): row for pk, row in Email.objects.in_bulk([p.stored_email_id for p in candidates]).items()
    }
    held = correspondence_of(rows.values(), own)
    firms_own: Evidence | None = None
    kept = []
    for passage in candidates:
        found = held.get(passage.stored_email_id)
        if found is None:
            continue
        if found.parties <= {wanted}:  # the correspondent's own mail, or the firm's internal mail
            kept.append(passage)
            continue
        row = rows[passage.stored_email_id]
        if row.direction != Direction.OUTGOING or party_of(row.sender_address) not in own:
            continue
        # The firm's own letter to someone else: kept only when it names nothing of theirs (no
        # identifying fact beyond what the firm's signatures state), so the model may learn how
        # the firm writes and what it offers without seeing another customer's data.
        if firms_own is None:
            firms_own = evidence_from(email.account.drafting_signatures.values_list("text", flat=True))
        facts = extract_facts(f"{passage.subject}\n{passage.extract}")
        if not any(fact.is_identifying and not firms_own.supports(fact) for fact in facts):
            kept.append(passage)
    return kept
