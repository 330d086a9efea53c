"""`ensure_admin` (and `make run`): the admin password from the environment meets the password rules."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from mailfathom.bootstrap import ADMIN_USERNAME

pytestmark = pytest.mark.django_db

WEAK = ["Qx7", "12345678", "qwertyuiop", "admin123"]


@pytest.mark.parametrize("password", WEAK)
def test_weak_admin_password_stops_ensure_admin_naming_the_setting_not_the_value(
    password, mailfathom_settings
):
    mailfathom_settings(admin_password=password)
    with pytest.raises(CommandError) as refused:
        call_command("ensure_admin")
    message = str(refused.value)
    assert "MAILFATHOM_ADMIN_PASSWORD" in message
    assert password not in message
    assert not get_user_model().objects.filter(username=ADMIN_USERNAME).exists()


def test_strong_admin_password_creates_the_admin(mailfathom_settings, capsys):
    mailfathom_settings(admin_password="plum-harbour-lantern-42")
    call_command("ensure_admin")
    user = get_user_model().objects.get(username=ADMIN_USERNAME)
    assert user.check_password("plum-harbour-lantern-42")
    assert "plum-harbour-lantern-42" not in capsys.readouterr().out


def test_generated_admin_password_passes_the_rules(mailfathom_settings):
    from django.contrib.auth.password_validation import validate_password

    from mailfathom.bootstrap import ensure_admin_user

    mailfathom_settings(admin_password="")
    created = ensure_admin_user()
    assert created.password
    validate_password(created.password, get_user_model().objects.get(username=ADMIN_USERNAME))


def test_existing_admin_is_left_alone_whatever_the_setting_says(mailfathom_settings):
    get_user_model().objects.create_superuser(username=ADMIN_USERNAME, email="", password="kept-Pass-123")
    mailfathom_settings(admin_password="Qx7")
    call_command("ensure_admin")
    assert get_user_model().objects.get(username=ADMIN_USERNAME).check_password("kept-Pass-123")
