"""Signed keyset cursors: every row once, and a cursor works only for the selection it was issued for."""

from __future__ import annotations

import pytest

from audit.api_tokens import ApiToken
from tests.audit.support import person

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_rate_counts")]


def tokens_of(user, count: int, revoked_every: int = 0) -> None:
    from django.utils import timezone

    now = timezone.now()
    ApiToken.objects.bulk_create(
        ApiToken(
            name=f"t{index}",
            prefix="mfa_x",
            token_hash=f"{user.pk:08d}{index:056d}",
            created_by=user,
            # Some share a creation instant, so the id must break ties.
            created_at=now.replace(microsecond=0) if index % 3 else now,
            revoked_at=now if revoked_every and index % revoked_every == 0 else None,
        )
        for index in range(count)
    )


@pytest.fixture
def signed_in(client):
    user = person("ines", "view_audit")
    client.force_login(user)
    return client, user


def pages(client, query: str = "") -> list[list[int]]:
    seen, cursor = [], None
    while True:
        suffix = f"&cursor={cursor}" if cursor else ""
        body = client.get(f"/api/tokens/?page_size=7{query}{suffix}").json()
        seen.append([row["id"] for row in body["results"]])
        cursor = body["nextCursor"]
        if cursor is None:
            return seen


def test_cursor_pages_return_every_row_once_newest_first(signed_in):
    client, user = signed_in
    tokens_of(user, 30)
    read = [token_id for page in pages(client) for token_id in page]
    expected = list(ApiToken.objects.order_by("-created_at", "-id").values_list("id", flat=True))
    assert read == expected
    assert [len(page) for page in pages(client)] == [7, 7, 7, 7, 2]


def test_filter_narrows_every_page(signed_in):
    client, user = signed_in
    tokens_of(user, 30, revoked_every=2)
    read = [token_id for page in pages(client, "&revoked=true") for token_id in page]
    assert read == list(
        ApiToken.objects.filter(revoked_at__isnull=False)
        .order_by("-created_at", "-id")
        .values_list("id", flat=True)
    )


def test_cursor_reused_with_other_filters_is_refused_with_52002(signed_in):
    client, user = signed_in
    tokens_of(user, 10, revoked_every=2)
    cursor = client.get("/api/tokens/?page_size=2&revoked=false").json()["nextCursor"]
    response = client.get(f"/api/tokens/?page_size=2&revoked=true&cursor={cursor}")
    assert response.status_code == 400
    assert response.json() == {
        "code": 52002,
        "detail": response.json()["detail"],
        "argument": "cursor",
    }
    assert client.get(f"/api/tokens/?page_size=5&revoked=false&cursor={cursor}").status_code == 200


def test_cursor_of_another_person_is_refused_with_52002(signed_in, client):
    own_client, user = signed_in
    tokens_of(user, 5)
    cursor = own_client.get("/api/tokens/?page_size=2").json()["nextCursor"]
    from django.test import Client

    other = Client()
    other.force_login(person("omar", "view_audit"))
    response = other.get(f"/api/tokens/?page_size=2&cursor={cursor}")
    assert response.status_code == 400
    assert response.json()["code"] == 52002


@pytest.mark.parametrize(
    "tamper",
    [
        lambda cursor: cursor[:-2] + ("AA" if not cursor.endswith("AA") else "BB"),
        lambda cursor: "x" + cursor,
        lambda cursor: "not-a-cursor",
        lambda cursor: "a" * 2001,
        lambda cursor: cursor.split(".")[0],
    ],
    ids=["signature", "payload", "hand-written", "too-long", "unsigned"],
)
def test_tampered_cursor_is_refused_with_52001(signed_in, tamper):
    client, user = signed_in
    tokens_of(user, 5)
    cursor = client.get("/api/tokens/?page_size=2").json()["nextCursor"]
    response = client.get(f"/api/tokens/?page_size=2&cursor={tamper(cursor)}")
    assert response.status_code == 400
    assert response.json()["code"] == 52001
    assert "cursor argument" in response.json()["detail"]


def test_cursor_signed_for_another_purpose_is_refused_with_52001(signed_in):
    from mailfathom.core import signing

    client, user = signed_in
    tokens_of(user, 5)
    cursor = client.get("/api/tokens/?page_size=2").json()["nextCursor"]
    payload = signing.verify("api-cursor", cursor)
    foreign = signing.sign("timeline-cursor", payload)
    assert client.get(f"/api/tokens/?page_size=2&cursor={foreign}").json()["code"] == 52001


@pytest.mark.parametrize("size", ["0", "101", "-1", "ten", "1000000"])
def test_page_size_out_of_range_is_refused_with_51001(signed_in, size):
    client, _ = signed_in
    response = client.get(f"/api/tokens/?page_size={size}")
    assert response.status_code == 400
    assert response.json()["code"] == 51001
    # The sentence names the argument and its bounds, never the value sent.
    assert response.json()["detail"] == "The page_size argument must be a whole number from 1 to 100."


def test_unknown_revoked_value_is_refused_with_51002(signed_in):
    client, _ = signed_in
    response = client.get("/api/tokens/?revoked=maybe")
    assert response.status_code == 400
    assert response.json()["code"] == 51002
