"""MCP API keys: created once and shown once, stored as a hash, authenticated, revoked."""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone

from accounts.models import McpApiKey
from accounts.services.mcp_keys import authenticate, create_key, revoke

pytestmark = pytest.mark.django_db

KEY_SHAPE = re.compile(r"mfk_[A-Za-z0-9_-]{43}")


def test_a_created_key_is_stored_only_as_its_hash():
    issued = create_key("  Claude Desktop  ")

    assert KEY_SHAPE.fullmatch(issued.key)
    stored = McpApiKey.objects.get()
    assert stored.name == "Claude Desktop"
    assert stored.key_hash == hashlib.sha256(issued.key.encode()).hexdigest()
    assert stored.prefix == issued.key[:12]
    assert issued.key not in {str(value) for value in McpApiKey.objects.values().get().values()}


@pytest.mark.parametrize("name", ["", "   ", "x" * 101])
def test_a_key_needs_a_name(name):
    with pytest.raises(ValueError, match="1 to 100 characters"):
        create_key(name)


def test_authenticate_returns_the_key_and_records_its_use():
    issued = create_key("script")
    assert McpApiKey.objects.get().last_used_at is None

    assert authenticate(issued.key) == issued.record
    assert McpApiKey.objects.get().last_used_at is not None


def test_last_use_is_recorded_at_most_once_a_minute():
    issued = create_key("busy")
    authenticate(issued.key)
    first = McpApiKey.objects.get().last_used_at

    authenticate(issued.key)
    assert McpApiKey.objects.get().last_used_at == first

    McpApiKey.objects.update(last_used_at=first - timedelta(minutes=2))
    authenticate(issued.key)
    assert McpApiKey.objects.get().last_used_at > first - timedelta(seconds=1)


@pytest.mark.parametrize("token", [None, "", "mfk_wrong", "x" * 201, 42])
def test_anything_but_an_issued_key_is_refused(token):
    create_key("someone")
    assert authenticate(token) is None


def test_a_revoked_key_is_refused_and_revoking_twice_says_so():
    issued = create_key("leaked")

    assert revoke(issued.record.pk) is True
    assert revoke(issued.record.pk) is False
    assert authenticate(issued.key) is None
    assert McpApiKey.objects.get().revoked_at <= timezone.now()


def test_create_mcp_key_prints_the_key_alone_on_stdout():
    out, err = StringIO(), StringIO()
    call_command("create_mcp_key", "ci-runner", stdout=out, stderr=err)

    key = out.getvalue().strip()
    assert KEY_SHAPE.fullmatch(key)
    assert authenticate(key).name == "ci-runner"
    assert key not in err.getvalue()
    assert "shown only now" in err.getvalue()


def test_create_mcp_key_refuses_a_blank_name():
    with pytest.raises(CommandError):
        call_command("create_mcp_key", " ", stdout=StringIO(), stderr=StringIO())


# --- admin ----------------------------------------------------------------------------------


def test_admin_shows_a_new_key_once_and_stores_only_its_hash(admin_client):
    response = admin_client.post(reverse("admin:accounts_mcpapikey_add"), {"name": "IDE agent"})

    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    [key] = set(KEY_SHAPE.findall(response.content.decode()))  # the field and the client snippets
    stored = McpApiKey.objects.get()
    assert stored.name == "IDE agent"
    assert authenticate(key) == stored

    change_page = admin_client.get(reverse("admin:accounts_mcpapikey_change", args=[stored.pk]))
    assert key not in change_page.content.decode()
    assert stored.prefix in change_page.content.decode()


def test_admin_revokes_selected_keys(admin_client):
    kept, revoked = create_key("kept"), create_key("revoked")

    admin_client.post(
        reverse("admin:accounts_mcpapikey_changelist"),
        {"action": "revoke_keys", "_selected_action": [revoked.record.pk]},
    )

    assert authenticate(revoked.key) is None
    assert authenticate(kept.key) is not None


def test_admin_list_shows_status_and_last_use(admin_client):
    issued = create_key("desktop")
    authenticate(issued.key)

    page = admin_client.get(reverse("admin:accounts_mcpapikey_changelist")).content.decode()

    assert "desktop" in page and "active" in page and issued.record.prefix in page
    assert issued.key not in page
