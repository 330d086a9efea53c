"""Admin's static files under ASGI stream asynchronously, so Django never warns while serving them.

Django warns ("StreamingHttpResponse must consume synchronous iterators") and reads the
whole file into memory when an ASGI response streams a synchronous iterator: WhiteNoise did
that for every asset `make run` served.
"""

from __future__ import annotations

import warnings

import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient


@pytest.mark.django_db
def test_an_admin_stylesheet_is_served_as_an_async_stream_without_a_warning():
    @async_to_sync
    async def fetch():
        response = await AsyncClient().get("/static/admin/css/base.css")
        assert response.status_code == 200
        assert response.is_async
        return b"".join([chunk async for chunk in response.streaming_content])

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning would fail the fetch
        body = fetch()
    assert b"body" in body and len(body) > 1000
