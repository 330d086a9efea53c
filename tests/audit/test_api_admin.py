"""Admin for API tokens: created with the secret shown once, bounded by the operator, revoked not deleted."""

from __future__ import annotations

import hashlib
import re

import pytest
from django.test import Client
from django.urls import reverse

from audit import api_tokens as tokens
from audit.api_tokens import ApiToken
from tests.audit.support import person

pytestmark = pytest.mark.django_db


def _permission_ids(*codenames: str) -> list[str]:
    return [
        str(pk) for pk in tokens.api_permissions().filter(codename__in=codenames).values_list("pk", flat=True)
    ]


def test_operator_creates_a_token_and_sees_the_secret_once(admin_client, admin_user):
    response = admin_client.post(
        reverse("admin:audit_apitoken_add"),
        {"name": "nightly", "permissions": _permission_ids("view_audit", "export_audit")},
    )
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    secret = re.search(r'value="(mfa_[^"]+)"', response.content.decode()).group(1)
    token = ApiToken.objects.get()
    assert token.token_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert token.created_by == admin_user
    assert token.permission_names() == {"view_audit", "export_audit"}
    change = admin_client.get(reverse("admin:audit_apitoken_change", args=[token.pk])).content.decode()
    listing = admin_client.get(reverse("admin:audit_apitoken_changelist")).content.decode()
    assert secret not in change and secret not in listing
    assert token.prefix in listing


def test_operator_cannot_give_a_token_a_permission_they_lack():
    operator = person("op", "add_apitoken", "view_audit")
    client = Client()
    client.force_login(operator)
    response = client.post(
        reverse("admin:audit_apitoken_add"),
        {"name": "too much", "permissions": _permission_ids("execute_erasure")},
    )
    assert response.status_code == 200
    assert "does not hold" in response.content.decode()
    assert not ApiToken.objects.exists()


def test_revoke_action_revokes_and_the_token_is_refused_afterwards(admin_client, admin_user, client):
    issued = tokens.create_token(admin_user, "export", ["export_audit"])
    response = admin_client.post(
        reverse("admin:audit_apitoken_changelist"),
        {"action": "revoke_tokens", "_selected_action": [issued.record.pk]},
    )
    assert response.status_code == 302
    assert ApiToken.objects.get().is_revoked
    assert client.get("/api/tokens/export/", HTTP_AUTHORIZATION=f"Bearer {issued.secret}").status_code == 401


def test_tokens_are_never_deleted_from_admin(admin_client, admin_user):
    issued = tokens.create_token(admin_user, "export", ["export_audit"])
    response = admin_client.get(reverse("admin:audit_apitoken_delete", args=[issued.record.pk]))
    assert response.status_code == 403
