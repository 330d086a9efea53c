"""API tokens: shown once, stored hashed, bounded by their creator, never read from a URL."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.utils import timezone

from audit import api_tokens as tokens
from audit.api_tokens import ApiToken
from tests.audit.support import compliance_officer, person
from tests.privacy import remember

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_rate_counts")]


def bearer(secret: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {secret}"}


def test_created_token_is_returned_once_and_only_its_hash_is_stored(client):
    user = person("ines", "view_audit", "export_audit")
    client.force_login(user)
    response = client.post(
        "/api/tokens/",
        {"name": "nightly export", "permissions": ["export_audit"]},
        content_type="application/json",
    )
    assert response.status_code == 201
    secret = response.json()["token"]
    assert secret.startswith("mfa_") and len(secret) == tokens.TOKEN_LENGTH
    assert response["Cache-Control"] == "no-store"
    stored = ApiToken.objects.get()
    assert stored.token_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert stored.prefix == secret[:12] and stored.created_by == user
    assert secret not in str(list(ApiToken.objects.values()))
    listed = client.get("/api/tokens/")
    assert listed.status_code == 200
    assert secret not in listed.content.decode()
    assert listed.json()["results"][0] == {
        "id": stored.pk,
        "name": "nightly export",
        "prefix": secret[:12],
        "permissions": ["export_audit"],
        "createdAt": listed.json()["results"][0]["createdAt"],
        "lastUsedAt": None,
        "revokedAt": None,
        "revoked": False,
    }


def test_token_asking_a_permission_its_creator_lacks_is_refused_with_403(client):
    client.force_login(person("ines", "view_audit"))
    response = client.post(
        "/api/tokens/",
        {"name": "too much", "permissions": ["execute_erasure"]},
        content_type="application/json",
    )
    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"
    assert not ApiToken.objects.exists()


def test_token_with_an_unknown_permission_is_refused_with_400(client):
    client.force_login(person("ines", "view_audit"))
    response = client.post(
        "/api/tokens/", {"name": "x", "permissions": ["change_user"]}, content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["code"] == "invalid"
    assert not ApiToken.objects.exists()


def test_token_acts_within_its_own_permissions_not_its_creators(client):
    user = person("ines", "view_audit", "export_audit")
    issued = tokens.create_token(user, "reader", ["view_audit"])
    # The export route needs export_audit: the creator holds it, the token does not.
    assert client.get("/api/tokens/export/", **bearer(issued.secret)).status_code == 403
    client.force_login(user)
    assert client.get("/api/tokens/export/").status_code == 200


def test_demoting_the_creator_demotes_the_token_at_once(client):
    user = person("ines", "export_audit")
    issued = tokens.create_token(user, "export", ["export_audit"])
    assert client.get("/api/tokens/export/", **bearer(issued.secret)).status_code == 200
    user.user_permissions.clear()
    assert client.get("/api/tokens/export/", **bearer(issued.secret)).status_code == 403


def test_token_of_a_deactivated_creator_is_refused_with_401(client):
    user = person("ines", "export_audit")
    issued = tokens.create_token(user, "export", ["export_audit"])
    get_user_model().objects.filter(pk=user.pk).update(is_active=False)
    assert client.get("/api/tokens/export/", **bearer(issued.secret)).status_code == 401


def test_group_permission_counts_for_person_and_token(client):
    user = compliance_officer("ines")
    issued = tokens.create_token(user, "export", ["export_audit"])
    assert client.get("/api/tokens/export/", **bearer(issued.secret)).status_code == 200


def test_compliance_group_holds_view_export_request_erasure_and_case_export_but_not_execute():
    granted = set(Group.objects.get(name="Compliance").permissions.values_list("codename", flat=True))
    assert {"view_audit", "export_audit", "request_erasure"} <= granted
    assert not granted & {"execute_erasure", "execute_erasurerequestrecord"}
    assert not {codename for codename in granted if codename.startswith(("add_", "change_", "delete_"))}
    assert "view_accessentry" in granted  # the access trail's admin list (audit 0008_access_trail)
    assert "export_case" in granted  # case exports (audit 0011_case_exports)
    declared = set(
        Permission.objects.filter(content_type__app_label="audit").values_list("codename", flat=True)
    )
    assert {"view_audit", "export_audit", "request_erasure", "execute_erasure"} <= declared


def test_revoked_token_is_refused_with_401_and_a_bearer_challenge(client):
    user = person("ines", "export_audit")
    issued = tokens.create_token(user, "export", ["export_audit"])
    client.force_login(user)
    assert client.post(f"/api/tokens/{issued.record.pk}/revoke/").status_code == 200
    client.logout()
    response = client.get("/api/tokens/export/", **bearer(issued.secret))
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert response.json()["code"] == "authentication_failed"


def test_revoking_another_persons_token_answers_404_and_leaves_it_active(client):
    owner = person("ines", "view_audit")
    issued = tokens.create_token(owner, "mine", ["view_audit"])
    client.force_login(person("omar", "view_audit"))
    assert client.post(f"/api/tokens/{issued.record.pk}/revoke/").status_code == 404
    assert not ApiToken.objects.get(pk=issued.record.pk).is_revoked


@pytest.mark.parametrize("name", ["token", "access_token", "API_KEY", "anything"])
def test_token_in_the_query_string_is_refused_with_400_even_beside_a_valid_header(client, name):
    user = person("ines", "export_audit")
    issued = tokens.create_token(user, "export", ["export_audit"])
    client.force_login(user)
    remember(issued.secret)  # tests.privacy fails the session if a log line carries it
    value = issued.secret if name != "anything" else f"x{issued.secret}"
    response = client.get(f"/api/tokens/export/?{name}={value}", **bearer(issued.secret))
    assert response.status_code == 400
    assert response.json()["code"] == "token_in_url"
    assert "Authorization: Bearer" in response.json()["detail"]
    assert issued.secret not in response.content.decode()


def test_last_used_is_recorded_at_most_once_a_minute(client):
    user = person("ines", "export_audit")
    issued = tokens.create_token(user, "export", ["export_audit"])
    client.get("/api/tokens/export/", **bearer(issued.secret))
    first = ApiToken.objects.get().last_used_at
    assert first is not None
    client.get("/api/tokens/export/", **bearer(issued.secret))
    assert ApiToken.objects.get().last_used_at == first
    ApiToken.objects.update(last_used_at=timezone.now() - timedelta(seconds=61))
    client.get("/api/tokens/export/", **bearer(issued.secret))
    assert ApiToken.objects.get().last_used_at > first


def test_a_token_cannot_manage_tokens(client):
    user = person("ines", "view_audit")
    issued = tokens.create_token(user, "reader", ["view_audit"])
    response = client.post(
        "/api/tokens/",
        {"name": "child", "permissions": ["view_audit"]},
        content_type="application/json",
        **bearer(issued.secret),
    )
    assert response.status_code == 403
    assert ApiToken.objects.count() == 1


def test_session_post_without_csrf_token_is_refused(client):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(person("ines", "view_audit"))
    response = strict.post(
        "/api/tokens/", {"name": "x", "permissions": ["view_audit"]}, content_type="application/json"
    )
    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]
    assert not ApiToken.objects.exists()


def test_unknown_format_override_on_a_json_route_is_refused_with_404_in_the_error_shape(client):
    # DRF raises Django's Http404 for a ?format naming no renderer; the body must still carry
    # the code the schema documents for every refusal, not DRF's bare {"detail"}.
    client.force_login(person("ines", "view_audit"))
    response = client.get("/api/tokens/?format=xml")
    assert response.status_code == 404
    assert response.json() == {"code": "not_found", "detail": "Not found."}
