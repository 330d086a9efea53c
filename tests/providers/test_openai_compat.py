"""The OpenAI-compatible embedder through the real `openai` SDK against the scripted server."""

from __future__ import annotations

import logging
import time

import pytest

from mailfathom.core.errors import published
from mailfathom.providers import provider_code
from mailfathom.providers.openai_compat import OpenAIEmbedder, parse_retry_after
from tests.providers.openai_server import hang, model_not_found, ok, status, vector_for, wrong_dimension
from tests.support import failure

MAIL = "Dear Anna, the invoice 4711 for Müller GmbH is attached."


def test_ok_path_sends_e5_prefixes_and_returns_the_servers_vectors(resilient_openai, openai_server):
    embedder = resilient_openai()
    vectors = embedder.embed_passages([MAIL, "second"])
    query = embedder.embed_query("invoice 4711")
    assert vectors[0] == pytest.approx(vector_for("passage: " + MAIL, openai_server.dimensions))
    assert query == pytest.approx(vector_for("query: invoice 4711", openai_server.dimensions))
    first, second = openai_server.requests
    assert first.inputs == ["passage: " + MAIL, "passage: second"]
    assert second.inputs == ["query: invoice 4711"]
    assert first.model == "multilingual-e5-small"
    assert first.body["encoding_format"] == "float"
    assert first.authorization == "Bearer test-key"


def test_a_model_not_named_e5_gets_no_prefix(resilient_openai, openai_server):
    resilient_openai(model="text-embedding-3-small").embed_query("invoice")
    assert openai_server.requests[0].inputs == ["invoice"]


def test_429_is_retried_after_the_retry_after_it_asked_for(resilient_openai, openai_server):
    openai_server.embeddings.script(status(429, retry_after="1"), ok())
    started = time.monotonic()
    assert len(resilient_openai().embed_query("x")) == openai_server.dimensions
    assert time.monotonic() - started >= 0.95
    assert openai_server.count() == 2


def test_a_long_retry_after_is_capped(resilient_openai, openai_server):
    openai_server.embeddings.script(status(429, retry_after="3600"), ok())
    started = time.monotonic()
    resilient_openai(retry_after_cap=0.3).embed_query("x")
    assert 0.3 <= time.monotonic() - started < 2.0
    assert openai_server.count() == 2


def test_a_retry_after_past_the_deadline_gives_up_at_once(resilient_openai, openai_server):
    openai_server.embeddings.script(status(429, retry_after="30"))
    started = time.monotonic()
    error = failure(lambda: resilient_openai(deadline=5.0).embed_query("x"))
    assert time.monotonic() - started < 1.0
    assert (error.kind, error.transient, provider_code(error)) == ("rate_limited", True, 72001)
    assert openai_server.count() == 1


def test_500_three_times_gives_up_after_the_retries(resilient_openai, openai_server):
    openai_server.embeddings.script(status(500), status(502), status(503), ok())
    error = failure(lambda: resilient_openai(max_retries=2).embed_query("x"))
    assert (error.kind, error.transient, error.status) == ("unavailable", True, 503)
    assert provider_code(error) == 72001
    assert openai_server.count() == 3


@pytest.mark.parametrize("code", [401, 403])
def test_refused_credential_is_not_retried(resilient_openai, openai_server, code):
    openai_server.embeddings.script(status(code), ok())
    error = failure(lambda: resilient_openai(max_retries=2).embed_query("x"))
    assert (error.kind, error.transient) == ("credential_refused", False)
    assert provider_code(error) == 71001
    assert openai_server.count() == 1


@pytest.mark.parametrize(
    ("behaviour", "kind"),
    [
        (model_not_found(), "model_mismatch"),
        (wrong_dimension(7), "model_mismatch"),
        (status(400), "bad_response"),
    ],
)
def test_permanent_failures_are_not_retried(resilient_openai, openai_server, behaviour, kind):
    openai_server.embeddings.script(behaviour, ok())
    error = failure(lambda: resilient_openai(max_retries=2).embed_passages(["a", "b"]))
    assert (error.kind, error.transient, provider_code(error)) == (kind, False, 73001)
    assert openai_server.count() == 1


def test_a_hung_endpoint_times_out_at_the_deadline(resilient_openai, openai_server):
    openai_server.embeddings.script(hang(5))
    started = time.monotonic()
    error = failure(lambda: resilient_openai(deadline=1.0, max_retries=2).embed_query("x"))
    elapsed = time.monotonic() - started
    assert (error.kind, error.transient, provider_code(error)) == ("timeout", True, 72001)
    assert 0.9 <= elapsed < 2.0
    assert openai_server.count() == 1  # no time was left for a retry


def test_retries_stop_at_the_deadline(resilient_openai, openai_server):
    openai_server.embeddings.script(*[status(500)] * 20)
    started = time.monotonic()
    failure(lambda: resilient_openai(deadline=1.0, max_retries=10, backoff_base=0.2).embed_query("x"))
    assert time.monotonic() - started < 1.5
    assert 2 <= openai_server.count() < 11


def test_an_unreachable_endpoint_is_unavailable_and_transient(resilient_openai, openai_server):
    embedder = resilient_openai(max_retries=1)
    openai_server.stop()
    error = failure(lambda: embedder.embed_query("x"))
    assert (error.kind, error.transient, provider_code(error)) == ("unavailable", True, 72001)


def test_no_mail_text_in_errors_or_logs(resilient_openai, openai_server, caplog):
    """A provider that quotes the input back in its error must not get it into ours."""
    caplog.set_level(logging.DEBUG)
    openai_server.embeddings.script(status(400, message=f"cannot embed {MAIL!r}"))
    error = failure(lambda: resilient_openai().embed_passages([MAIL]))
    assert "Müller" not in str(error) and "Müller" not in repr(error)
    assert error.__cause__ is None and error.__context__ is None
    assert "Müller" not in caplog.text
    assert "bad_response" in caplog.text
    assert published(error).code == 54001


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "2"}, 2.0),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "-1"}, None),
        ({}, None),
    ],
)
def test_parse_retry_after(headers, expected):
    assert parse_retry_after(headers) == expected


def test_parse_retry_after_as_a_date():
    from email.utils import formatdate

    assert 8 <= parse_retry_after({"retry-after": formatdate(time.time() + 10, usegmt=True)}) <= 10


def test_the_backend_itself_refuses_a_wrong_dimension(openai_server):
    """Without the wrapper too: a backend never hands out a vector of another size."""
    backend = OpenAIEmbedder(model="m", dimensions=openai_server.dimensions, base_url=openai_server.base_url)
    openai_server.embeddings.script(wrong_dimension(383))
    error = failure(lambda: backend.embed_passages(["a"]))
    assert (error.kind, error.transient) == ("model_mismatch", False)
    assert openai_server.requests[0].authorization == "Bearer no-key-configured"
