"""Rate limits per credential and per kind of route: 429 with a sentence and Retry-After."""

from __future__ import annotations

import pytest

from audit import api_tokens as tokens
from tests.audit.support import person

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_rate_counts")]


def test_read_request_past_the_rate_gets_429_with_retry_after_and_the_setting_named(
    client, mailfathom_settings
):
    mailfathom_settings(api_read_requests_per_minute=3)
    client.force_login(person("ines", every_audit_permission=True))
    statuses = [client.get("/api/tokens/").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    refused = client.get("/api/tokens/")
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60
    body = refused.json()
    assert body["code"] == "throttled"
    assert "MAILFATHOM_API_READ_REQUESTS_PER_MINUTE" in body["detail"]
    assert "3 read requests in one minute" in body["detail"]


def test_export_scope_counts_apart_from_reads(client, mailfathom_settings):
    mailfathom_settings(api_export_requests_per_hour=1, api_read_requests_per_minute=100)
    client.force_login(person("ines", every_audit_permission=True))
    assert client.get("/api/tokens/export/").status_code == 200
    refused = client.get("/api/tokens/export/")
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 3600
    assert "MAILFATHOM_API_EXPORT_REQUESTS_PER_HOUR" in refused.json()["detail"]
    assert client.get("/api/tokens/").status_code == 200


def test_a_token_and_its_creator_have_allowances_of_their_own(client, mailfathom_settings):
    mailfathom_settings(api_export_requests_per_hour=1)
    user = person("ines", every_audit_permission=True)
    first = tokens.create_token(user, "one", ["export_audit"]).secret
    second = tokens.create_token(user, "two", ["export_audit"]).secret
    assert client.get("/api/tokens/export/", HTTP_AUTHORIZATION=f"Bearer {first}").status_code == 200
    assert client.get("/api/tokens/export/", HTTP_AUTHORIZATION=f"Bearer {first}").status_code == 429
    assert client.get("/api/tokens/export/", HTTP_AUTHORIZATION=f"Bearer {second}").status_code == 200
    client.force_login(user)
    assert client.get("/api/tokens/export/").status_code == 200


def test_refused_caller_is_not_counted_against_the_rate(client, mailfathom_settings):
    # Permissions are checked first, so an anonymous flood cannot spend a person's allowance.
    mailfathom_settings(api_read_requests_per_minute=1)
    for _ in range(3):
        assert client.get("/api/tokens/").status_code == 401
    client.force_login(person("ines", every_audit_permission=True))
    assert client.get("/api/tokens/").status_code == 200


def test_requests_pass_unthrottled_with_a_warning_when_redis_does_not_answer(
    client, mailfathom_settings, caplog
):
    from django.test import override_settings

    from tests.support import free_port

    client.force_login(person("ines", every_audit_permission=True))
    mailfathom_settings(api_read_requests_per_minute=1)
    # A real refused connection: nothing listens on a free port. Restored before the
    # fixtures' teardown, which clears the counters in the real Redis.
    with override_settings(REDIS_URL=f"redis://127.0.0.1:{free_port()}/0"):
        assert [client.get("/api/tokens/").status_code for _ in range(3)] == [200, 200, 200]
    assert "throttle unavailable" in caplog.text
