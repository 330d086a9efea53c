"""The admin REST API answers as its OpenAPI schema says: schemathesis calls every operation.

The schema is read from /api/schema/ with a staff session (it is staff-only, like the API);
every operation it lists is then called, in process through Django's WSGI application, with
cases schemathesis generates from the schema: a bounded number per operation, from a fixed
seed (derandomized), so the run takes seconds. No response may be a 5xx, and each response's
status, content type, headers and body must be what the schema declares. The calls carry
the staff session and a CSRF token, as the Swagger page (/api/docs/) sends them.

The second test breaks each operation's view in turn (raising, or answering off-schema) and
expects the run to fail, so the first one is known to be able to.
"""

from __future__ import annotations

import json
import re
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
import schemathesis
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.core.wsgi import get_wsgi_application
from django.urls import resolve
from django.utils import timezone
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from rest_framework.response import Response
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import Failure, FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from audit import api_tokens as tokens
from audit.api.throttling import forget_counts
from audit.models import AnsweringRunEntry
from tests.configure import configure
from tests.factories import MailAccountFactory
from tests.mailbox.factories import mapped_folder

# Committed rows: Django's WSGI handler closes the database connection after each request,
# as it does in a server, which would end a test wrapped in one transaction.
pytestmark = pytest.mark.django_db(transaction=True)

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
EXAMPLES_PER_OPERATION = 20
# A CSRF secret of Django's form (32 letters and digits), sent as the cookie and the header.
CSRF_SECRET = "schemathesisCsrfSecret0123456789"


@pytest.fixture(autouse=True)
def unthrottled(settings):
    """Rates no run reaches, counted from zero: the routes answer, not the throttle.

    The counters live in Redis and outlast a test database, so an earlier run's user of the
    same id would otherwise find its export allowance (30 an hour) spent and every call
    answered with 429, which the schema documents: the run would pass without reaching the view.
    """
    configure(
        settings,
        api_read_requests_per_minute=100000,
        api_export_requests_per_hour=10000,
        api_erasure_requests_per_hour=10000,
        # One caller calls every route here, an erasure's execute included: four eyes (58002)
        # is held by tests/audit/test_erasure_four_eyes.py, not by a schema run.
        erasure_single_operator=True,
    )
    forget_counts()
    yield
    forget_counts()


@pytest.fixture
def staff_client(client):
    """A client signed in as a staff member holding every permission (a superuser), as a
    browser signed in to admin would be: each route answers what it documents for success."""
    user = get_user_model().objects.create_superuser(username="operator", password="x")
    client.force_login(user)
    return client


@pytest.fixture
def staff_credentials(staff_client) -> dict[str, dict[str, str]]:
    """The session cookie, the CSRF cookie and the CSRF header of that staff member."""
    session = django_settings.SESSION_COOKIE_NAME
    cookies = {session: staff_client.cookies[session].value, django_settings.CSRF_COOKIE_NAME: CSRF_SECRET}
    return {
        "cookies": cookies,
        "headers": {"X-CSRFToken": CSRF_SECRET},
    }


@pytest.fixture
def api_schema(staff_client):
    """The schema as a staff member reads it from the application, loaded by schemathesis.

    Read with Django's client: werkzeug's, which schemathesis would load it with, drops a
    Cookie header its own jar did not set. The operations are then called through the WSGI app.
    """
    response = staff_client.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    schema = schemathesis.openapi.from_dict(json.loads(response.content))
    schema.app = get_wsgi_application()
    # The calls carry the staff session; left alone, schemathesis would also invent a value
    # for every declared security scheme (a made-up Bearer token, refused with 401).
    schema.config.generation.update(with_security_parameters=False)
    return schema


def operations_listed(schema) -> list[tuple[str, str]]:
    """(method, path) of each operation in the schema document itself, read without schemathesis."""
    return [
        (method, path)
        for path, item in schema.raw_schema.get("paths", {}).items()
        for method in item
        if method.lower() in HTTP_METHODS
    ]


def call_every_operation(
    schema, credentials: dict[str, dict[str, str]], only: tuple[str, str] | None = None
) -> Counter[tuple[str, str, int]]:
    """Call every operation of `schema` (or `only` that one) with generated cases, checking each.

    Returns how many responses each (method, path template, status) got.
    """
    answered: Counter[tuple[str, str, int]] = Counter()
    for result in schema.get_all_operations():
        operation = result.ok()  # an operation schemathesis cannot read fails the run here
        if only is not None and (operation.method.upper(), operation.path) != only:
            continue

        @given(case=operation.as_strategy())
        @hypothesis_settings(
            max_examples=EXAMPLES_PER_OPERATION,
            derandomize=True,
            database=None,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        )
        def check(case) -> None:
            response = case.call_and_validate(checks=CHECKS, **credentials)
            answered[(case.operation.method.upper(), case.operation.path, response.status_code)] += 1

        check()
    return answered


def test_every_operation_of_the_admin_api_answers_as_its_schema_says(api_schema, staff_credentials):
    answered = call_every_operation(api_schema, staff_credentials)

    listed = {(method.upper(), path) for method, path in operations_listed(api_schema)}
    assert listed, "the schema lists no operation: the run would prove nothing"
    # Each operation was called, and answered its success at least once: the cases reached the
    # view, not only the refusals in front of it (which the schema documents as well).
    # Revoking succeeds only for the id of an active token of the caller's, which generated
    # ids (in the hundreds to billions) do not hit: that success is called once by hand.
    revoke = api_schema["/api/tokens/{token_id}/revoke/"]["POST"]
    staff = get_user_model().objects.get(username="operator")
    own = tokens.create_token(staff, "revoked by the run", [tokens.VIEW_AUDIT]).record
    response = revoke.Case(path_parameters={"token_id": own.pk}).call_and_validate(
        checks=CHECKS, **staff_credentials
    )
    assert response.status_code == 200
    answered[("POST", revoke.path, response.status_code)] += 1

    # The same for the routes whose success needs data a generated case cannot guess: a held
    # run id, and an erasure request created, read and executed with the address it names.
    for method, path, status in _succeed_by_hand(api_schema, staff_credentials, staff):
        answered[(method, path, status)] += 1

    succeeded = {(method, path) for method, path, status in answered if 200 <= status < 300}
    assert succeeded == listed, sorted(answered.items())


def _succeed_by_hand(schema, credentials, staff) -> list[tuple[str, str, int]]:
    """Call the data-bound routes once each with real data, checking each response."""
    account = MailAccountFactory(answering_audit_enabled=True)
    mapped_folder(account, "inbox")
    now = timezone.now()
    entry = AnsweringRunEntry.objects.create(
        run_id=uuid.uuid4(),
        account=account,
        chat_alias="chat",
        instruction_version="v1",
        started_at=now,
        ended_at=now,
        outcome="answered",
    )
    calls = []

    def call(method: str, path: str, **case: Any) -> Any:
        response = schema[path][method].Case(**case).call_and_validate(checks=CHECKS, **credentials)
        calls.append((method, path, response.status_code))
        return response

    call("GET", "/api/answering-runs/{run_id}/", path_parameters={"run_id": str(entry.run_id)})
    created = call(
        "POST",
        "/api/erasure-requests/",
        body={"addresses": ["person@example.org"]},
        media_type="application/json",
    )
    request_id = created.json()["requestId"]
    call("GET", "/api/erasure-requests/{request_id}/statement/", path_parameters={"request_id": request_id})
    call(
        "POST",
        "/api/erasure-requests/{request_id}/execute/",
        path_parameters={"request_id": request_id},
        body={"addresses": ["person@example.org"]},
        media_type="application/json",
    )
    return calls


def _view_class(path_template: str) -> type:
    """The DRF view class serving `path_template` (its {parameters} filled with 1)."""
    return resolve(re.sub(r"\{[^}]+\}", "1", path_template)).func.cls


def _raises(*args: Any, **kwargs: Any):
    raise RuntimeError("deliberately broken")


def _answers_off_schema(*args: Any, **kwargs: Any):
    # Declared nowhere: a 200 whose body is a bare number, where every operation declares more.
    return Response(7, status=299)


@pytest.mark.parametrize(
    ("broken_handler", "failed_check"),
    [(_raises, "Server error"), (_answers_off_schema, "Undocumented status code")],
    ids=["raises", "answers-off-schema"],
)
def test_a_broken_view_fails_the_run(
    api_schema, staff_credentials, monkeypatch, broken_handler: Callable[..., Any], failed_check: str
):
    listed = operations_listed(api_schema)
    assert listed, "the schema lists no operation to break"
    for method, path in listed:
        with monkeypatch.context() as patch:
            patch.setattr(_view_class(path), method.lower(), broken_handler)

            with pytest.raises((Failure, FailureGroup)) as failed:
                call_every_operation(api_schema, staff_credentials, only=(method.upper(), path))

        failures = getattr(failed.value, "exceptions", (failed.value,))
        assert any(failed_check in str(failure) for failure in failures), (method, path, failed.value)


def _shape(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "{}", path)


def test_every_operation_a_token_may_call_answers_as_its_schema_says_with_a_permitted_token(api_schema):
    """The same run as a script sees it: a token holding every audit permission, no session.

    Routes only a person signed in may use (managing tokens) are left out: a token is refused
    there by design, which the permission matrix checks.
    """
    from audit.api.urls import ROUTES

    staff = get_user_model().objects.get(username="operator")
    issued = tokens.create_token(staff, "schemathesis", tokens.API_PERMISSIONS)
    credentials = {"headers": {"Authorization": f"Bearer {issued.secret}"}}
    by_token = {(route.method, _shape(route.path)) for route in ROUTES if route.tokens_accepted}
    wanted = {(method.upper(), path) for method, path in operations_listed(api_schema)}
    wanted = {(method, path) for method, path in wanted if (method, _shape(path)) in by_token}
    assert wanted, "no operation accepts a token: the run would prove nothing"

    answered: Counter[tuple[str, str, int]] = Counter()
    for operation in sorted(wanted):
        answered.update(call_every_operation(api_schema, credentials, only=operation))
    for method, path, status in _succeed_by_hand(api_schema, credentials, staff):
        answered[(method, path, status)] += 1

    succeeded = {(method, path) for method, path, status in answered if 200 <= status < 300}
    assert succeeded == wanted, sorted(answered.items())
