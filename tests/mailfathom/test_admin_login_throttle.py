"""Admin login failures are counted per user name and per client address, in the real Redis."""

from __future__ import annotations

import logging
import time
import uuid

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

pytestmark = pytest.mark.django_db

PASSWORD = "plum-harbour-lantern-42"


@pytest.fixture
def operator():
    """A staff user with a name no other test (or earlier run) counted failures for."""
    name = f"op-{uuid.uuid4().hex[:12]}"
    get_user_model().objects.create_user(username=name, password=PASSWORD, is_staff=True)
    return name


def fresh_address() -> str:
    """A client address no other test used, so counts never leak between tests."""
    tail = uuid.uuid4().int
    return f"10.{tail % 250}.{(tail >> 8) % 250}.{(tail >> 16) % 250 + 1}"


def log_in(username: str, password: str, address: str):
    return Client(REMOTE_ADDR=address).post(
        "/admin/login/?next=/admin/", {"username": username, "password": password}
    )


def logged_in(response) -> bool:
    return response.status_code == 302 and response["Location"] == "/admin/"


def test_right_password_is_refused_after_twenty_wrong_ones_in_a_row(operator):
    address = fresh_address()
    for attempt in range(20):
        assert not logged_in(log_in(operator, f"wrong-{attempt}", address))
    refused = log_in(operator, PASSWORD, address)
    assert not logged_in(refused)
    assert b"Too many failed logins" in refused.content


def test_right_password_works_again_once_the_lockout_window_passes(operator, mailfathom_settings):
    mailfathom_settings(admin_login_failures_per_user=3, admin_login_lockout_seconds=1)
    address = fresh_address()
    for attempt in range(3):
        log_in(operator, f"wrong-{attempt}", address)
    assert not logged_in(log_in(operator, PASSWORD, address))
    time.sleep(1.5)
    assert logged_in(log_in(operator, PASSWORD, address))


def test_user_name_is_locked_whichever_address_the_failures_come_from(operator, mailfathom_settings):
    mailfathom_settings(admin_login_failures_per_user=3)
    for attempt in range(3):
        log_in(operator, f"wrong-{attempt}", fresh_address())
    assert not logged_in(log_in(operator, PASSWORD, fresh_address()))


def test_address_is_locked_whichever_user_names_it_tries(operator, mailfathom_settings):
    mailfathom_settings(admin_login_failures_per_user=100, admin_login_failures_per_address=4)
    address = fresh_address()
    for attempt in range(4):
        log_in(f"guess-{uuid.uuid4().hex[:8]}-{attempt}", "wrong", address)
    assert not logged_in(log_in(operator, PASSWORD, address))
    assert logged_in(log_in(operator, PASSWORD, fresh_address()))


def test_failures_below_the_limit_do_not_lock_and_a_success_clears_the_user_count(
    operator, mailfathom_settings
):
    mailfathom_settings(admin_login_failures_per_user=3, admin_login_failures_per_address=100)
    address = fresh_address()
    for _round in range(3):
        for attempt in range(2):
            log_in(operator, f"wrong-{attempt}", address)
        assert logged_in(log_in(operator, PASSWORD, address))


def test_lockout_logs_neither_user_name_nor_address(operator, mailfathom_settings, caplog):
    mailfathom_settings(admin_login_failures_per_user=2)
    address = fresh_address()
    caplog.set_level(logging.DEBUG)
    for attempt in range(4):
        log_in(operator, f"wrong-{attempt}", address)
    assert any("locked" in record.getMessage().lower() for record in caplog.records)
    assert operator not in caplog.text
    assert address not in caplog.text
