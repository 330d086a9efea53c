"""The status page says why semantic search is degraded: the last embedding failure's kind,
when it happened, how many calls have failed since the last success, and what to do.

Failures are recorded as a failed call records them (mailfathom.providers.health), in the
real Redis under a namespace of the test's own; the page is read as an operator reads it.
"""

from __future__ import annotations

import html
import re

import pytest
from django.urls import reverse

from mailbox.models import EmbeddingProfile
from mailbox.services.store import IncomingMessage, store_messages
from mailfathom.providers import EMBEDDING_ROLE
from mailfathom.providers.errors import (
    BAD_RESPONSE,
    CREDENTIAL_REFUSED,
    KINDS,
    LOCAL_REFUSALS,
    MODEL_MISMATCH,
    RATE_LIMITED,
    TIMEOUT,
    UNAVAILABLE,
)
from mailfathom.providers.health import failure_advice, record_failure, record_success
from mailfathom.providers.local import USE_MODEL
from tests.configure import configure, scripted_embeddings
from tests.mailbox.factories import synced_folder

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("own_provider_health")]


@pytest.fixture
def local_profile(settings):
    """The bundled model configured, and its profile the active one (as after a first sweep)."""
    configure(settings, embedding_provider="local", embedding_model=USE_MODEL, embedding_dimensions=512)
    return EmbeddingProfile.objects.create(provider="local", model=USE_MODEL, dimensions=512, active=True)


class _Server:
    base_url = "http://127.0.0.1:9/v1"
    dimensions = 8


@pytest.fixture
def endpoint_profile(settings):
    """An OpenAI-compatible endpoint configured (never called here), its profile active."""
    configure(settings, **scripted_embeddings(_Server()))
    return EmbeddingProfile.objects.create(provider="openai", model="text-embed", dimensions=8, active=True)


def semantic_line(client) -> tuple[dict[str, str], str]:
    """The Semantic search entry of the status page: its data-* attributes and its text."""
    page = client.get(reverse("system-status")).content.decode()
    found = re.search(r'<dd id="status-semantic-search"([^>]*)>(.*?)</dd>', page, re.S)
    assert found, "no Semantic search entry"
    attributes = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', found.group(1)))
    text = html.unescape(re.sub(r"<[^>]+>", "", found.group(2)))
    return attributes, " ".join(text.split())


def test_an_available_embedder_is_shown_without_a_reason(admin_client, local_profile):
    attributes, text = semantic_line(admin_client)
    assert attributes == {"state": "available"}
    assert text == "available"


def test_a_timeout_of_the_local_model_names_its_kind_its_time_and_what_to_do(admin_client, local_profile):
    record_failure(EMBEDDING_ROLE, TIMEOUT)
    record_failure(EMBEDDING_ROLE, TIMEOUT)

    attributes, text = semantic_line(admin_client)

    assert attributes == {"state": "degraded", "failure-kind": "timeout", "failures": "2"}
    when = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(.+ago\)"
    assert re.match(rf"degraded — timeout at {when}, 2 failed embedding calls since the last success; ", text)
    assert "MAILFATHOM_EMBEDDING_TIMEOUT_SECONDS" in text and "busy" in text


def test_a_refused_key_says_to_check_the_key(admin_client, endpoint_profile):
    record_failure(EMBEDDING_ROLE, CREDENTIAL_REFUSED)

    attributes, text = semantic_line(admin_client)

    assert attributes["failure-kind"] == "credential_refused"
    assert text.startswith("degraded — credential refused at ")
    assert "1 failed embedding call since the last success" in text
    assert "check MAILFATHOM_EMBEDDING_API_KEY" in text


def test_an_unreachable_endpoint_says_to_check_its_url(admin_client, endpoint_profile):
    record_failure(EMBEDDING_ROLE, UNAVAILABLE)

    _, text = semantic_line(admin_client)

    assert "check MAILFATHOM_EMBEDDING_BASE_URL" in text


def test_a_local_model_that_is_unavailable_could_not_be_loaded(admin_client, local_profile):
    record_failure(EMBEDDING_ROLE, UNAVAILABLE)

    _, text = semantic_line(admin_client)

    assert "the bundled model could not be loaded" in text
    assert "BASE_URL" not in text


def test_a_success_since_the_failure_clears_the_reason(admin_client, local_profile):
    record_failure(EMBEDDING_ROLE, TIMEOUT)
    record_success(EMBEDDING_ROLE)

    attributes, text = semantic_line(admin_client)

    assert attributes == {"state": "available"} and text == "available"


def test_a_profile_switch_is_not_blamed_on_a_failure(admin_client, local_profile, settings):
    """Degraded because the configured model is not the active profile's: that line says why."""
    configure(settings, embedding_model="multilingual-e5-small", embedding_dimensions=384)

    attributes, text = semantic_line(admin_client)

    assert attributes == {"state": "degraded"} and text == "degraded"
    page = admin_client.get(reverse("system-status")).content.decode()
    assert 'id="status-embedding-switch"' in page


@pytest.mark.parametrize("provider", ["local", "openai"])
def test_every_recorded_kind_has_advice_naming_no_placeholder(provider):
    recorded = [kind for kind in KINDS if kind not in LOCAL_REFUSALS]
    expected = {TIMEOUT, CREDENTIAL_REFUSED, RATE_LIMITED, UNAVAILABLE, BAD_RESPONSE, MODEL_MISMATCH}
    assert set(recorded) == expected
    for kind in recorded:
        advice = failure_advice(EMBEDDING_ROLE, kind, provider)
        assert advice and "{" not in advice and advice.endswith(".")
    assert failure_advice(EMBEDDING_ROLE, None, provider).endswith(".")


def test_without_a_provider_the_page_says_so_and_promises_no_embedding(admin_client, settings):
    """No embedder: "inactive" names the missing provider, and the backlog is not given a
    rate or a completion time it will never have."""
    configure(settings, embedding_provider="none")
    folder = synced_folder()
    raw = b"From: a@example.org\r\nSubject: waiting\r\nMessage-ID: <w@example.org>\r\n\r\nwaiting\r\n"
    store_messages(
        folder,
        [IncomingMessage(uidvalidity=1, uid=1, size=len(raw), received_at=None, raw=raw)],
        advance_to_uid=1,
    )
    attributes, text = semantic_line(admin_client)
    assert attributes == {"state": "inactive", "reason": "no-embedder"}
    assert "no embedding provider is configured" in text
    page = admin_client.get(reverse("system-status")).content.decode()
    assert 'id="status-embedding-rate"' not in page
    eta = re.search(r'<dd id="status-embedding-eta">(.*?)</dd>', page, re.S)
    assert eta and eta.group(1) == "not until an embedding provider is configured"
    assert "1 to embed once a provider is configured" in page
