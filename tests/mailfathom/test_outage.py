"""Which exceptions count as a dependency outage, and what handler500 makes of each."""

from __future__ import annotations

import pytest
import redis
from django.db import IntegrityError, InterfaceError, OperationalError, ProgrammingError
from django.test import RequestFactory

from mailfathom.core.errors import MailFathomError
from mailfathom.outage import outage_of, server_error


@pytest.mark.parametrize(
    "error", [OperationalError(), InterfaceError(), redis.ConnectionError(), redis.TimeoutError()]
)
def test_a_driver_that_cannot_reach_its_server_is_an_outage(error):
    assert outage_of(error) is error


def test_an_outage_is_found_on_the_raise_from_chain():
    cause = OperationalError()
    try:
        try:
            raise cause
        except OperationalError as error:
            raise MailFathomError(81001, "internal") from error
    except MailFathomError as wrapped:
        assert outage_of(wrapped) is cause


@pytest.mark.parametrize(
    "error", [ProgrammingError(), IntegrityError(), KeyError("x"), redis.ResponseError()]
)
def test_a_bug_is_not_an_outage(error):
    assert outage_of(error) is None


def test_a_bug_raised_while_handling_an_outage_stays_a_bug():
    try:
        try:
            raise OperationalError()
        except OperationalError:
            raise KeyError("bug") from None
    except KeyError as bug:
        assert outage_of(bug) is None
    try:
        try:
            raise OperationalError()
        except OperationalError:
            raise KeyError("bug")  # noqa: B904 - the implicit context is the point
    except KeyError as bug:
        assert outage_of(bug) is None


@pytest.mark.parametrize(
    ("path", "content_type"), [("/admin/", "text/html"), ("/api/tokens/", "application/json")]
)
def test_handler500_answers_an_outage_with_503_and_retry_after(path, content_type):
    request = RequestFactory().get(path)
    try:
        raise OperationalError("could not connect to server at /some/socket")
    except OperationalError:
        response = server_error(request)
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response["Content-Type"].startswith(content_type)
    assert b"54003" in response.content and b"/some/socket" not in response.content


@pytest.mark.django_db
def test_handler500_leaves_a_bug_a_500():
    request = RequestFactory().get("/admin/")
    try:
        raise ProgrammingError("relation does not exist")
    except ProgrammingError:
        response = server_error(request)
    assert response.status_code == 500
