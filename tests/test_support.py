"""The shared test helpers (tests/support.py) do what the modules that use them rely on."""

from __future__ import annotations

import socket
import time

import psycopg
import pytest
from django.db import connection

from mailfathom.providers import ProviderError
from tests.factories import MailAccountFactory
from tests.support import database_url, failure, free_port, refusals, wait_for


def test_wait_for_returns_as_soon_as_the_condition_holds():
    answers = iter([False, False, True])
    started = time.monotonic()
    wait_for(lambda: next(answers), 10)
    assert next(answers, "used up") == "used up"  # asked three times: not once more, not once less
    assert time.monotonic() - started < 5  # well before the deadline


def test_wait_for_fails_the_test_with_the_message_when_the_condition_never_holds():
    with pytest.raises(pytest.fail.Exception, match="still nothing"):
        wait_for(lambda: False, 0.05, message=lambda: "still nothing")


def test_a_free_port_refuses_connections():
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", free_port()), 1):
        pass


def test_failure_returns_the_provider_error_and_fails_when_none_is_raised():
    error = ProviderError("timeout", True)

    def raising():
        raise error

    assert failure(raising) is error
    with pytest.raises(pytest.fail.Exception):
        failure(lambda: None)


@pytest.mark.django_db
def test_refusals_gives_full_cleans_messages_by_field_and_nothing_for_an_accepted_instance():
    refused = MailAccountFactory.build(display_name="Shared\x85Billing")
    assert refusals(refused)["display_name"] == ["A display name may not contain control characters."]
    assert refusals(MailAccountFactory.build(display_name="Shared Billing")) == {}


@pytest.mark.django_db
def test_database_url_reaches_this_sessions_test_database():
    with psycopg.connect(database_url()) as other:
        (name,) = other.execute("SELECT current_database()").fetchone()
    assert name == connection.settings_dict["NAME"]
