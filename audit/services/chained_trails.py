"""Which trails are chained, and what each entry's canonical content is (audit/services/chain.py).

Registered from AuditConfig.ready(). A canonical form names fields, never the Python
object: changing one re-hashes every entry, so it changes only with a new decision record
and a re-baseline (docs/decisions/0012-tamper-evident-trails.md).
"""

from __future__ import annotations

from typing import Any

from audit.access_models import ACCESS_TRAIL_FIELDS, AccessEntry, AccessEntryEmail
from audit.erasure_models import ErasureRequestRecord
from audit.models import MUTATION_TRAIL_FIELDS, AnsweringRunEmail, AnsweringRunEntry, MutationEntry
from audit.services.chain import canonical_json, fields_canonical, register_trail

ANSWERING_FIELDS = (
    "id",
    "run_id",
    "account_id",
    "chat_alias",
    "instruction_version",
    "started_at",
    "ended_at",
    "outcome",
    "retrieval_ceiling_reached",
    "relevance_fell_back",
)
ANSWERING_EMAIL_FIELDS = ("email_id", "position", "cited", "relied_on_rank")
# The account is read as its recorded identifier: the foreign key is set to NULL when the
# account row goes, which is not a change to what the entry says.
MUTATION_FIELDS = (*MUTATION_TRAIL_FIELDS, "retention_days")
# The linked mutation entries are left out: retention removes them, and with them the links.
ERASURE_FIELDS = (
    "id",
    "requested_by",
    "requested_by_kind",
    "requested_at",
    "address_hashes",
    "account_ids",
    "received_on_or_after",
    "received_before",
    "status",
    "preview_counts",
    "executed_at",
    "executed_by",
    "executed_by_kind",
    "statement_counts",
    "failure_code",
    # Four eyes, the statement's lists and its signature (decision 0012 and erasure.md).
    "accounts_only",
    "requested_by_person",
    "executed_by_person",
    "single_operator",
    "message_id_hashes",
    "suppressions",
    "removed_rows",
    "statement_signature",
    "statement_signed_at",
    "cleanup_completed_at",
)


def answering_canonical(entry: Any) -> bytes:
    """An answering entry with the emails it read, in position order."""
    emails = sorted(entry.emails.all(), key=lambda row: (row.position, str(row.email_id)))
    return canonical_json(
        {
            **{name: getattr(entry, name) for name in ANSWERING_FIELDS},
            "emails": [[getattr(row, name) for name in ANSWERING_EMAIL_FIELDS] for row in emails],
        }
    )


ACCESS_FIELDS = ("id", *ACCESS_TRAIL_FIELDS, "retention_days")


def access_canonical(entry: Any) -> bytes:
    """An access entry with the emails the read returned, in position order."""
    emails = sorted(entry.emails.all(), key=lambda row: (row.position, str(row.email_id)))
    return canonical_json(
        {
            **{name: getattr(entry, name) for name in ACCESS_FIELDS},
            "emails": [[str(row.email_id), row.position] for row in emails],
        }
    )


def register_existing_trails() -> None:
    register_trail(
        "answering",
        AnsweringRunEntry,
        answering_canonical,
        prefetch=("emails",),
        children=((AnsweringRunEmail, "entry_id"),),
    )
    register_trail("mutation", MutationEntry, fields_canonical(*MUTATION_FIELDS))
    register_trail("erasure", ErasureRequestRecord, fields_canonical(*ERASURE_FIELDS))
    register_trail(
        "access",
        AccessEntry,
        access_canonical,
        prefetch=("emails",),
        children=((AccessEntryEmail, "entry_id"),),
    )
