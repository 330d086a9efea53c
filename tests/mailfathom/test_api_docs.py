"""The OpenAPI schema and its Swagger UI page: staff only, and nothing loaded from elsewhere."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client(client):
    user = get_user_model().objects.create_user(username="operator", password="x", is_staff=True)
    client.force_login(user)
    return client


def test_anonymous_schema_request_is_refused(client):
    response = client.get("/api/schema/")
    assert response.status_code == 403
    assert b"openapi" not in response.content


def test_anonymous_docs_page_redirects_to_the_admin_login(client):
    response = client.get("/api/docs/")
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


def test_logged_in_non_staff_user_is_refused_the_schema(client):
    user = get_user_model().objects.create_user(username="reader", password="x")
    client.force_login(user)
    assert client.get("/api/schema/").status_code == 403


def test_staff_reads_the_schema(staff_client):
    response = staff_client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    assert response.json()["info"]["title"] == "MailFathom admin API"


def _body(response) -> bytes:
    """A response's bytes, whether plain, streamed, or streamed asynchronously (ServeStatic's files)."""
    if not response.streaming:
        return response.content
    if response.is_async:

        async def gather() -> bytes:
            return b"".join([chunk async for chunk in response.streaming_content])

        return async_to_sync(gather)()
    return b"".join(response.streaming_content)


def test_docs_page_loads_swagger_ui_from_our_own_static_files_only(staff_client):
    response = staff_client.get("/api/docs/")
    assert response.status_code == 200
    page = response.content.decode()
    sources = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert any("swagger-ui-bundle.js" in source for source in sources)
    assert all(source.startswith("/") for source in sources), sources
    assert "cdn" not in page
    bundle = next(source for source in sources if source.endswith("swagger-ui-bundle.js"))
    served = staff_client.get(bundle)
    assert served.status_code == 200
    assert len(_body(served)) > 100_000
