"""Query-string filters of the trail routes, shared by their lists and their exports.

Each filter reads one parameter; a value the route cannot take is refused with 51002
naming the parameter, never repeating the value (docs/operations/compliance-api.md,
Answering trail and Mutation trail). An account identifier no account answers to is not
refused: the trails outlive the accounts they name, so it selects nothing.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.db.models import Exists, OuterRef, QuerySet
from rest_framework.request import Request

from audit.models import AnsweringRunEmail, AnsweringRunEntry, MutationEntry, MutationKind, RunOutcome
from mailfathom.core.errors import FILTER_REFUSED, MailFathomError
from mailfathom.core.identifiers import MAX_ID_LENGTH, uuid_from_text
from mailfathom.core.instants import parse_instant

MAX_TEXT = 200  # the longest account identifier or requester name a trail stores


def _refused(argument: str, sentence: str) -> MailFathomError:
    return MailFathomError(FILTER_REFUSED, f"The {argument} argument {sentence}.", argument=argument)


def text(request: Request, argument: str) -> str | None:
    value = request.query_params.get(argument)
    if value is not None and not 1 <= len(value) <= MAX_TEXT:
        raise _refused(argument, f"must be 1 to {MAX_TEXT} characters")
    return value


def instant(request: Request, argument: str) -> datetime | None:
    """An ISO 8601 time with its offset (naive times are ambiguous and refused)."""
    value = request.query_params.get(argument)
    if value is None:
        return None
    parsed = parse_instant(value)
    if parsed is None:
        raise _refused(argument, "must be an ISO 8601 time with a UTC offset, such as 2025-06-01T00:00:00Z")
    return parsed


def identifier(request: Request, argument: str) -> uuid.UUID | None:
    value = request.query_params.get(argument)
    if value is None:
        return None
    # Read as issued_uuid reads, but the all-zero UUID is taken: like any id no entry has, it
    # selects nothing rather than being refused.
    parsed = uuid_from_text(value) if len(value) <= MAX_ID_LENGTH else None
    if parsed is None:
        raise _refused(argument, "must be a UUID")
    return parsed


def choice(request: Request, argument: str, choices: Any) -> str | None:
    value = request.query_params.get(argument)
    if value is not None and value not in choices.values:
        raise _refused(argument, "must be one of " + ", ".join(choices.values))
    return value


def _range(request: Request) -> tuple[datetime | None, datetime | None]:
    start, end = instant(request, "from"), instant(request, "before")
    if start is not None and end is not None and end <= start:
        raise _refused("before", "must be later than the from argument")
    return start, end


def answering_entries(request: Request) -> QuerySet[AnsweringRunEntry]:
    """Entries of the answering trail the query string selects (from/before bound the end time)."""
    queryset = AnsweringRunEntry.objects.all()
    account = text(request, "account")
    if account is not None:
        queryset = queryset.filter(account__account_id=account)
    start, end = _range(request)
    if start is not None:
        queryset = queryset.filter(ended_at__gte=start)
    if end is not None:
        queryset = queryset.filter(ended_at__lt=end)
    run = identifier(request, "run")
    if run is not None:
        queryset = queryset.filter(run_id=run)
    email = identifier(request, "email")
    if email is not None:
        # EXISTS, not a join: the entry keeps all its emails in the answer, not just this one.
        queryset = queryset.filter(
            Exists(AnsweringRunEmail.objects.filter(entry=OuterRef("pk"), email_id=email))
        )
    outcome = choice(request, "outcome", RunOutcome)
    if outcome is not None:
        queryset = queryset.filter(outcome=outcome)
    return queryset


def mutation_entries(request: Request) -> QuerySet[MutationEntry]:
    """Entries of the mutation trail the query string selects (from/before bound the requested time).

    `account` matches the identifier the entry recorded, so entries of a deleted account
    are still found by it.
    """
    queryset = MutationEntry.objects.all()
    account = text(request, "account")
    if account is not None:
        queryset = queryset.filter(account_identifier=account)
    kind = choice(request, "kind", MutationKind)
    if kind is not None:
        queryset = queryset.filter(kind=kind)
    start, end = _range(request)
    if start is not None:
        queryset = queryset.filter(requested_at__gte=start)
    if end is not None:
        queryset = queryset.filter(requested_at__lt=end)
    requester = text(request, "requester")
    if requester is not None:
        queryset = queryset.filter(requester=requester)
    return queryset
