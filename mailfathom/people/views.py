"""Search and ask pages: parse the form, call the tools' use case under the person's scope, render.

Each request runs inside `limited_to_accounts(readable_accounts(user))`: the same limit an
MCP key sets, read by the same scope resolution, so a person reads the accounts they own or
are a delegate of, and an operator every served account. Reads are recorded where the
tools' are: ask_mail appends to the answering audit trail itself; a search is logged here,
as the MCP call filter logs a tool call (name, outcome, code; never the query). A search or a
question that returned is also recorded in the access trail of the accounts it reached, naming
the person (docs/operations/compliance.md, Access trail).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from accounts.services.caller import Caller, acting_as, person
from accounts.services.people import readable_accounts
from accounts.services.scope import limited_to_accounts, observing_scope
from answering.capability import answering_capability
from answering.services.question import ask_mail
from audit.services.access_trail import AccessChannel, record_access
from mailbox.services.directory import AccountDirectory, list_accounts
from mailbox.services.search import search_emails
from mailfathom.core.capability import CapabilityState
from mailfathom.core.errors import MailFathomError
from mailfathom.people.forms import AskForm, SearchForm
from mailfathom.people.present import Refusal, answer_sources, email_link, matches

logger = logging.getLogger(__name__)

LOGIN_URL = reverse_lazy("people:login")
TEMPLATE = "people/search.html"

# What the page says when ask_mail is not offered, by the capability's state.
NOT_ANSWERING = {
    CapabilityState.INACTIVE: (
        "Asking is not available: this deployment does not answer questions about mail "
        "(it declares no chat endpoint, or no mail is embedded yet)."
    ),
    CapabilityState.DEGRADED: (
        "Asking is not available right now: the chat or embedding endpoint is failing. "
        "Try again in a minute; searching still works."
    ),
}


@contextmanager
def _as_the_person(request: HttpRequest) -> Iterator[tuple[Caller, AccountDirectory]]:
    """The person as the caller, limited to the accounts they may read; and those accounts."""
    who = person(request.user)
    with limited_to_accounts(readable_accounts(request.user)), acting_as(who):
        yield who, list_accounts()


def _called(request: HttpRequest, use_case: str, refusal: Refusal | None) -> None:
    outcome, code = ("ok", "-") if refusal is None else ("refused", str(refusal.code))
    logger.info(
        "people call use_case=%s user=%s outcome=%s code=%s", use_case, request.user.pk, outcome, code
    )


def _refusal(request: HttpRequest, use_case: str, error: MailFathomError) -> Refusal:
    refusal = Refusal.of(error)
    if refusal.code != error.code:  # an internal code, shown as 54001: its detail stays here
        logger.error("people call use_case=%s failed", use_case, exc_info=error)
    return refusal


def _page(request: HttpRequest, directory: AccountDirectory, **context: Any) -> HttpResponse:
    capability = answering_capability()
    context.setdefault("search_form", SearchForm(accounts=directory.accounts))
    context.setdefault("ask_form", AskForm(accounts=directory.accounts))
    return render(
        request,
        TEMPLATE,
        {
            "title": "Search and ask",
            "site_header": "MailFathom",
            "site_title": "MailFathom",
            "accounts": directory.accounts,
            "answering": capability.state == CapabilityState.AVAILABLE,
            "not_answering": NOT_ANSWERING.get(capability.state, ""),
            "time_zone": settings.TIME_ZONE,
            **context,
        },
    )


@never_cache
@login_required(login_url=LOGIN_URL)
@require_GET
def search_page(request: HttpRequest) -> HttpResponse:
    """The page; with a query (`q` present), one search_emails call and its matches."""
    with _as_the_person(request) as (who, directory):
        if "q" not in request.GET:
            return _page(request, directory)
        form = SearchForm(request.GET, accounts=directory.accounts)
        result, refusal = None, None
        if form.is_valid():
            try:
                with observing_scope() as reached:
                    result = search_emails(**form.search_arguments())
                found = [match.summary.stored_email_id for match in result.matches]
                record_access(AccessChannel.PEOPLE_PAGE, "search_emails", who, found, reached)
            except MailFathomError as error:
                refusal = _refusal(request, "search_emails", error)
            _called(request, "search_emails", refusal)
        rows = matches(result, email_link(request.user)) if result is not None else None
        return _page(request, directory, search_form=form, search=result, rows=rows, search_refusal=refusal)


@never_cache
@login_required(login_url=LOGIN_URL)
@require_POST
def ask_page(request: HttpRequest) -> HttpResponse:
    """One ask_mail call (it records its own run in the answering audit trail)."""
    with _as_the_person(request) as (who, directory):
        form = AskForm(request.POST, accounts=directory.accounts)
        answer, refusal = None, None
        if form.is_valid():
            try:
                with observing_scope() as reached:
                    answer = ask_mail(**form.ask_arguments())
                cited = [citation.stored_email_id for citation in answer.citations]
                record_access(AccessChannel.PEOPLE_PAGE, "ask_mail", who, cited, reached)
            except MailFathomError as error:
                refusal = _refusal(request, "ask_mail", error)
            _called(request, "ask_mail", refusal)
        shown = answer_sources(answer, email_link(request.user)) if answer is not None else {}
        return _page(request, directory, ask_form=form, answer=answer, ask_refusal=refusal, **shown)
