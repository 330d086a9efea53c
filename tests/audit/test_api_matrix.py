"""Every route of audit.api.urls.ROUTES against every kind of caller: exactly the documented status.

The matrix (docs/operations/compliance-api.md, Errors):

- anonymous: 401 with a Bearer challenge;
- a staff person holding no API permission: 403;
- a person holding one permission alone: the route's success status if it is the route's
  permission (or the route takes any), else 403;
- a token holding one permission alone (its creator holds all four): as the person, except
  on routes that take no token (403);
- a revoked token: 401;
- a token in the query string, beside a valid session: 400.

A new route joins by adding a row to ROUTES; a row whose path needs an object names it as a
`{placeholder}` filled by PLACEHOLDERS below.
"""

from __future__ import annotations

import itertools
import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from audit import api_tokens as tokens
from audit.api import urls
from audit.api.permissions import ANY
from audit.api.urls import ROUTES, Route
from audit.erasure_models import ErasureRequesterKind
from audit.models import AnsweringRunEntry, RunOutcome
from audit.services.erasure import Requester, request_erasure
from tests.audit.support import person
from tests.factories import MailAccountFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_rate_counts")]

_names = itertools.count()


@dataclass
class Caller:
    """Who calls: a client (session or not), an optional Authorization header, the acting user."""

    client: Client
    user: Any
    headers: dict[str, str]
    held: frozenset[str]  # the API permissions the credential carries
    is_token: bool = False


def _person(*codenames: str):
    return person(f"p{next(_names)}", *codenames)


def _session(*codenames: str) -> Caller:
    user = _person(*codenames)
    client = Client()
    client.force_login(user)
    return Caller(client, user, {}, frozenset(codenames))


def _token(codename: str) -> Caller:
    user = _person(*tokens.API_PERMISSIONS)
    issued = tokens.create_token(user, "matrix", [codename])
    return Caller(
        Client(), user, {"HTTP_AUTHORIZATION": f"Bearer {issued.secret}"}, frozenset({codename}), True
    )


def _own_token(caller: Caller) -> str:
    """The id of a token the caller created (someone else's for the anonymous caller)."""
    owner = caller.user if caller.user is not None else _person()
    # Made directly: the caller may hold no permission a token could carry.
    record = tokens.ApiToken.objects.create(
        name="target", prefix="mfa_target", token_hash=f"{next(_names):064d}", created_by=owner
    )
    return str(record.pk)


def _a_run(caller: Caller) -> str:
    """The run id of an answering-trail entry (the trails are read by every holder of view_audit)."""
    now = timezone.now()
    entry = AnsweringRunEntry.objects.create(
        run_id=uuid.uuid4(),
        account=MailAccountFactory(),
        chat_alias="default",
        instruction_version="v1",
        started_at=now,
        ended_at=now,
        outcome=RunOutcome.ANSWERED,
    )
    return str(entry.run_id)


ERASURE_ADDRESS = "matrix.subject@example.org"


def _an_erasure_request(caller: Caller) -> str:
    """A previewed erasure request for ERASURE_ADDRESS (no mail matches it: executing it removes nothing)."""
    requester = Requester(name="matrix", kind=ErasureRequesterKind.USER)
    return str(request_erasure([ERASURE_ADDRESS], requester=requester).request_id)


# Values a route's path or body may name, made for the caller at hand.
PLACEHOLDERS: dict[str, Callable[[Caller], str]] = {
    "own_token": _own_token,
    "a_held_permission": lambda caller: sorted(caller.held)[0] if caller.held else "view_audit",
    "a_run": _a_run,
    "an_erasure_request": _an_erasure_request,
    "an_erasure_address": lambda caller: ERASURE_ADDRESS,
}


def _fill(text: str, caller: Caller) -> str:
    for name, make in PLACEHOLDERS.items():
        if "{" + name + "}" in text:
            text = text.replace("{" + name + "}", make(caller))
    return text


def call(route: Route, caller: Caller, query: str = "") -> Any:
    path = _fill(route.path, caller) + query
    body = json.loads(_fill(json.dumps(route.body), caller)) if route.body else None
    method = getattr(caller.client, route.method.lower())
    if body is None:
        return method(path, **caller.headers)
    return method(path, body, content_type="application/json", **caller.headers)


def _expected(route: Route, caller: Caller) -> int:
    if caller.is_token and not route.tokens_accepted:
        return 403
    if route.permission == ANY:
        return route.success if caller.held else 403
    return route.success if route.permission in caller.held else 403


def _label(route: Route) -> str:
    return f"{route.method} {route.path}"


@pytest.mark.parametrize("route", ROUTES, ids=_label)
def test_anonymous_caller_gets_401_with_a_bearer_challenge(route):
    response = call(route, Caller(Client(), None, {}, frozenset()))
    assert response.status_code == 401, response.content
    assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize("route", ROUTES, ids=_label)
def test_staff_person_without_an_api_permission_gets_403(route):
    response = call(route, _session())
    assert response.status_code == 403, response.content
    assert response.json()["code"] == "permission_denied"


@pytest.mark.parametrize("codename", tokens.API_PERMISSIONS)
@pytest.mark.parametrize("route", ROUTES, ids=_label)
def test_person_holding_one_permission_alone_gets_the_documented_status(route, codename):
    caller = _session(codename)
    response = call(route, caller)
    assert response.status_code == _expected(route, caller), response.content


@pytest.mark.parametrize("codename", tokens.API_PERMISSIONS)
@pytest.mark.parametrize("route", ROUTES, ids=_label)
def test_token_holding_one_permission_alone_gets_the_documented_status(route, codename):
    caller = _token(codename)
    response = call(route, caller)
    assert response.status_code == _expected(route, caller), response.content


@pytest.mark.parametrize("route", ROUTES, ids=_label)
def test_revoked_token_gets_401(route):
    caller = _token(route.permission if route.permission != ANY else "view_audit")
    tokens.ApiToken.objects.update(revoked_at=tokens.timezone.now())
    response = call(route, caller)
    assert response.status_code == 401, response.content
    assert response.json()["code"] == "authentication_failed"


@pytest.mark.parametrize("route", ROUTES, ids=_label)
def test_token_in_the_query_string_gets_400_even_beside_a_permitted_session(route):
    caller = _session(*tokens.API_PERMISSIONS)
    secret = tokens.create_token(caller.user, "leaked", ["view_audit"]).secret
    response = call(route, caller, query=f"?access_token={secret}")
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "token_in_url"


def test_every_route_in_the_table_is_served_and_every_served_route_is_in_the_table():
    served = {re.sub(r"<[^>]+>", "*", f"/api/{pattern.pattern}") for pattern in urls.urlpatterns}
    listed = {re.sub(r"\{[^}]+\}", "*", route.path) for route in ROUTES}
    assert served == listed
