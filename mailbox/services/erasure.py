"""Erasure of a person's mail on request (a data-subject request): preview and execute.

Every stored email the person sent or received goes, with everything derived from it, and a
suppression keeps synchronization and import from storing it again. Results are counts and
identities only, never content or an address; the audit app records the act, and this
module knows nothing of it. See docs/operations/erasure.md.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from itertools import islice
from typing import Any

from django.db import transaction
from django.db.models import CASCADE, Count, F, QuerySet, Sum
from django.db.models.functions import Coalesce

from accounts.models import MailAccount
from mailbox.models import (
    AttachmentText,
    Email,
    EmailQuerySet,
    Folder,
    LexicalCollectionStat,
    LexicalTermStat,
    Participant,
    Passage,
    RawMessage,
    RepairRequest,
    Suppression,
)
from mailbox.services import lexical_search, suppression
from mailfathom.core.errors import FILTER_REFUSED, MailFathomError
from mailfathom.core.text import MAX_ADDRESS_LENGTH, is_whole_address

logger = logging.getLogger(__name__)

MAX_ADDRESSES = 100
MAX_ACCOUNTS = 64
MAX_ACCOUNT_ID_LENGTH = 256
DELETE_CHUNK = 500
CASCADED_IDS = 1000  # ids of another app's cascaded rows kept per model, for the statement


# --- The request ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ErasureRequest:
    """A validated request: case-folded addresses, account identifiers, a received range."""

    addresses: tuple[str, ...]
    account_ids: tuple[str, ...] = ()  # empty: every account
    received_on_or_after: datetime | None = None
    received_before: datetime | None = None
    # False (the default): the erased messages are suppressed in every account of the
    # deployment; True: only in the account each was erased from.
    accounts_only: bool = False


def erasure_request(
    addresses: Iterable[str],
    *,
    account_ids: Iterable[str] | None = None,
    received_on_or_after: datetime | None = None,
    received_before: datetime | None = None,
    accounts_only: bool = False,
) -> ErasureRequest:
    """Validate a request; refuse with 51002 naming the argument and its limit, never a value."""
    folded: list[str] = []
    for value in _bounded(addresses, MAX_ADDRESSES, "addresses", at_least_one=True):
        address = _address(value)
        if address not in folded:
            folded.append(address)
    accounts: list[str] = []
    for value in _bounded(account_ids or (), MAX_ACCOUNTS, "accountIds", at_least_one=False):
        if not isinstance(value, str) or not value.strip() or len(value) > MAX_ACCOUNT_ID_LENGTH:
            raise _refused(
                "accountIds",
                f"Each entry of the accountIds argument must be an account identifier of 1 to "
                f"{MAX_ACCOUNT_ID_LENGTH} characters.",
            )
        if value.strip() not in accounts:
            accounts.append(value.strip())
    for name, moment in (("receivedOnOrAfter", received_on_or_after), ("receivedBefore", received_before)):
        if moment is not None and (not isinstance(moment, datetime) or moment.tzinfo is None):
            raise _refused(name, f"The {name} argument must be a date and time with a time zone.")
    if received_on_or_after and received_before and received_before <= received_on_or_after:
        raise _refused("receivedBefore", "The receivedBefore argument must come after receivedOnOrAfter.")
    if accounts:
        known = set(MailAccount.objects.filter(account_id__in=accounts).values_list("account_id", flat=True))
        if known != set(accounts):
            raise _refused(
                "accountIds", "The accountIds argument names an account this deployment does not hold."
            )
    return ErasureRequest(
        tuple(folded), tuple(accounts), received_on_or_after, received_before, bool(accounts_only)
    )


def _bounded(values: Iterable[str], limit: int, argument: str, *, at_least_one: bool) -> list[str]:
    if isinstance(values, str | bytes) or not hasattr(values, "__iter__"):
        raise _refused(argument, f"The {argument} argument must be a list of at most {limit} entries.")
    # Counted before any element is looked at: at most one past the bound is ever read.
    items = list(islice(iter(values), limit + 1))
    if len(items) > limit or (at_least_one and not items):
        lowest = 1 if at_least_one else 0
        raise _refused(argument, f"The {argument} argument must hold {lowest} to {limit} entries.")
    return items


def _address(value: object) -> str:
    text = value.strip() if isinstance(value, str) else ""
    if not is_whole_address(text):
        raise _not_an_address()
    return text.casefold()


def _not_an_address() -> MailFathomError:
    return _refused(
        "addresses",
        f"Each entry of the addresses argument must be one whole email address of at most "
        f"{MAX_ADDRESS_LENGTH} characters.",
    )


def _refused(argument: str, sentence: str) -> MailFathomError:
    return MailFathomError(FILTER_REFUSED, sentence, argument=argument)


# --- Results --------------------------------------------------------------------------------


@dataclass(frozen=True)
class AccountCounts:
    """What goes (preview) or went (execute) for one account, by kind."""

    account_id: str
    emails: int = 0
    raw_messages: int = 0
    attachments: int = 0  # parts of the raw messages: they go with them, links included
    participants: int = 0
    passages: int = 0  # each with its vector
    repair_requests: int = 0
    attachment_texts: int = 0  # what extraction read from the attachments (mailbox.extraction)


KINDS = tuple(f.name for f in fields(AccountCounts) if f.name != "account_id")


@dataclass(frozen=True)
class ErasurePreview:
    accounts: tuple[AccountCounts, ...]

    def total(self, kind: str) -> int:
        return sum(getattr(counts, kind) for counts in self.accounts)


@dataclass(frozen=True)
class ErasedEmail:
    """One erased email as plain values the audit trail can record: no content, no address."""

    stored_email_id: uuid.UUID
    account_id: str
    folder_alias: str | None  # None: the folder is no longer mapped
    uidvalidity: int
    uid: int
    message_id_hash: str  # HMAC (mailbox.services.suppression); "" when it had no Message-ID


@dataclass(frozen=True)
class CascadedRows:
    """Rows of another app that went with the erased emails (their foreign key cascades)."""

    label: str  # the model's label, "audit.AnsweringRunEmail"
    count: int
    ids: tuple[str, ...]  # at most CASCADED_IDS of them; the count is always whole


@dataclass(frozen=True)
class ErasureResult:
    accounts: tuple[AccountCounts, ...]
    erased: tuple[ErasedEmail, ...]
    suppressions: int
    suppression_ids: tuple[int, ...] = ()
    deployment_wide: bool = True  # how the suppressions were written
    cascaded: tuple[CascadedRows, ...] = ()

    def total(self, kind: str) -> int:
        return sum(getattr(counts, kind) for counts in self.accounts)


# --- Selection ------------------------------------------------------------------------------


def matching_emails(request: ErasureRequest) -> EmailQuerySet:
    """Every stored email the person sent or received, within the request's bounds.

    From, To, Cc, Bcc and Reply-To are all stored as the sender or as Participant rows, so
    every role is reached. Not narrowed to what tools may see: unserved accounts, hidden and
    unmapped folders are all in it. Addresses compare case-insensitively.
    """
    rows = Email.objects.involving(request.addresses)
    if request.account_ids:
        rows = rows.filter(account__account_id__in=request.account_ids)
    return rows.received_between(request.received_on_or_after, request.received_before)


def preview_erasure(request: ErasureRequest) -> ErasurePreview:
    """Count, per account and kind, what executing `request` would remove; change nothing."""
    with transaction.atomic():
        ids = matching_emails(request).values("pk")
        return ErasurePreview(_counts(ids))


def _counts(ids: QuerySet[Any, Any]) -> tuple[AccountCounts, ...]:
    per_account: dict[str, dict[str, int]] = {}

    def add(kind: str, rows: Iterable[Mapping[str, Any]]) -> None:
        for row in rows:
            per_account.setdefault(row["account_name"], {})[kind] = int(row["n"])

    emails = Email.objects.filter(pk__in=ids).values(account_name=F("account__account_id"))
    add("emails", emails.annotate(n=Count("pk")))
    add("attachments", emails.annotate(n=Coalesce(Sum("attachment_count"), 0)))
    for kind, model in (
        ("raw_messages", RawMessage),
        ("participants", Participant),
        ("passages", Passage),
        ("repair_requests", RepairRequest),
        ("attachment_texts", AttachmentText),
    ):
        add(
            kind,
            model.objects.filter(email_id__in=ids)
            .values(account_name=F("email__account__account_id"))
            .annotate(n=Count("pk")),
        )
    return tuple(AccountCounts(account_id=name, **kinds) for name, kinds in sorted(per_account.items()))


# --- Execution ------------------------------------------------------------------------------

# Django's delete() reports rows removed per model label; these are the ones we count.
_LABELS = {
    "mailbox.Email": "emails",
    "mailbox.RawMessage": "raw_messages",
    "mailbox.Participant": "participants",
    "mailbox.Passage": "passages",
    "mailbox.RepairRequest": "repair_requests",
    "mailbox.AttachmentText": "attachment_texts",
}


def execute_erasure(request: ErasureRequest) -> ErasureResult:
    """Remove every matched email with all derived from it; suppress it; return what went.

    One transaction: the folders of the accounts concerned are locked first, so a
    synchronization batch or an import storing into them waits and then sees the
    suppressions (mailbox.services.store), and the counts returned are the rows deleted.
    """
    with transaction.atomic():
        accounts = MailAccount.objects.all()
        if request.account_ids:
            accounts = accounts.filter(account_id__in=request.account_ids)
        list(Folder.objects.select_for_update().filter(account__in=accounts).order_by("pk").values_list("pk"))
        rows = list(
            matching_emails(request)
            .order_by("pk")
            .values(
                "pk",
                "account_id",
                "folder_id",
                "uidvalidity",
                "uid",
                "message_id",
                "attachment_count",
                account_name=F("account__account_id"),
                folder_alias=F("folder__mapping__alias"),
            )
        )
        removed: dict[str, dict[str, int]] = {}
        erased: list[ErasedEmail] = []
        suppressions: list[Suppression] = []
        for row in rows:
            counts = removed.setdefault(row["account_name"], dict.fromkeys(KINDS, 0))
            counts["attachments"] += row["attachment_count"] or 0
            digest = suppression.message_id_hash(row["message_id"])
            erased.append(
                ErasedEmail(
                    stored_email_id=row["pk"],
                    account_id=row["account_name"],
                    folder_alias=row["folder_alias"],
                    uidvalidity=row["uidvalidity"],
                    uid=row["uid"],
                    message_id_hash=digest,
                )
            )
            suppressions.append(
                Suppression(
                    account_id=row["account_id"],
                    folder_id=row["folder_id"],
                    uidvalidity=row["uidvalidity"],
                    uid=row["uid"],
                    message_id_hash=digest,
                    deployment_wide=not request.accounts_only,
                )
            )
        cascaded_counts: dict[str, int] = {}
        cascaded_ids: dict[str, list[str]] = {}
        for start in range(0, len(rows), DELETE_CHUNK):
            chunk = rows[start : start + DELETE_CHUNK]
            by_account: dict[str, list[uuid.UUID]] = {}
            for row in chunk:
                by_account.setdefault(row["account_name"], []).append(row["pk"])
            for name, pks in by_account.items():
                _collect_cascaded_ids(pks, cascaded_ids)
                _, per_label = Email.objects.filter(pk__in=pks).delete()
                for label, kind in _LABELS.items():
                    removed[name][kind] += per_label.get(label, 0)
                for label, n in per_label.items():
                    if not label.startswith("mailbox.") and n:
                        cascaded_counts[label] = cascaded_counts.get(label, 0) + n
        written = Suppression.objects.bulk_create(suppressions)
        if rows:
            # The word statistics are a snapshot of every indexed word: rebuilt, so no word
            # that only the erased mail held stays in the database.
            lexical_search.refresh_term_stats()
    result = ErasureResult(
        accounts=tuple(AccountCounts(account_id=name, **kinds) for name, kinds in sorted(removed.items())),
        erased=tuple(erased),
        suppressions=len(written),
        suppression_ids=tuple(sorted(row.pk for row in written if row.pk is not None)),
        deployment_wide=not request.accounts_only,
        cascaded=tuple(
            CascadedRows(label=label, count=n, ids=tuple(cascaded_ids.get(label, ())))
            for label, n in sorted(cascaded_counts.items())
        ),
    )
    logger.info("erasure: %d emails removed from %d accounts", len(rows), len(result.accounts))
    return result


def _cascaded_relations() -> list[Any]:
    """The relations of other apps whose rows go when an email is deleted (on_delete CASCADE)."""
    return [
        relation
        for relation in Email._meta.related_objects
        if relation.related_model._meta.app_label != Email._meta.app_label
        and getattr(relation, "on_delete", None) is CASCADE
    ]


def _collect_cascaded_ids(pks: list[uuid.UUID], into: dict[str, list[str]]) -> None:
    """Note (up to CASCADED_IDS per model) the ids of other apps' rows these emails take along."""
    for relation in _cascaded_relations():
        model = relation.related_model
        kept = into.setdefault(model._meta.label, [])
        room = CASCADED_IDS - len(kept)
        if room <= 0:
            continue
        found = model._default_manager.filter(**{f"{relation.field.name}__in": pks}).order_by("pk")
        kept.extend(str(pk) for pk in found.values_list("pk", flat=True)[:room])


# --- Tables to rewrite afterwards ---------------------------------------------------------------


def affected_tables() -> list[str]:
    """Every table an erasure deletes rows from, or rewrites (the word statistics), sorted.

    What the clean-up after an erasure (audit.services.erasure.clean_up_after_erasure)
    rewrites so no copy of a deleted row stays in the table's files: the email table, each
    table whose rows cascade from it (in any app: passages, participants, raw messages,
    attachment text, drafts, the answering trail's retrieved emails, ...) and the lexical
    word statistics.
    """
    tables = {Email._meta.db_table, LexicalTermStat._meta.db_table, LexicalCollectionStat._meta.db_table}
    for relation in Email._meta.related_objects:
        tables.add(relation.related_model._meta.db_table)
    return sorted(tables)
