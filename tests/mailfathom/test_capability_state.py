"""One definition of the capability states (mailfathom.core.capability.CapabilityState), used by
provider health, semantic search, answering and the published schema; the wire spellings
stay inactive, available and degraded. Search alone adds partial (available while little of
the scope is embedded), between available and degraded in its published enumeration."""

from __future__ import annotations

import json

import pytest

from answering.capability import answering_capability
from mailbox.services import embedding
from mailbox.services.search import search_emails
from mailfathom.core.capability import CapabilityState
from mailfathom.mcp.schemas import ENUMERATIONS
from mailfathom.providers import health
from tests.configure import configure
from tests.factories import MailAccountFactory
from tests.mailbox.factories import EmailFactory, mapped_folder
from tests.support import isolated_provider_health


def test_the_states_are_spelled_as_published_in_this_order():
    assert [state.value for state in CapabilityState] == ["inactive", "available", "degraded"]


def test_the_published_semantic_search_enumeration_is_the_states_and_partial():
    assert ENUMERATIONS[("SearchResult", "semanticSearch")] == (
        "inactive",
        "available",
        "partial",
        "degraded",
    )


def test_provider_health_reports_a_state_member(settings):
    with isolated_provider_health(settings, "capability-state"):
        assert health.read_health("embedding", configured=False).state is CapabilityState.INACTIVE
        assert health.read_health("embedding", configured=True).state is CapabilityState.AVAILABLE
        health.record_failure("embedding", "unavailable")
        assert health.read_health("embedding", configured=True).state is CapabilityState.DEGRADED


@pytest.fixture
def nothing_embedded(settings):
    configure(settings, embedding_provider="none")


@pytest.mark.django_db
def test_search_and_answering_report_the_same_member_and_search_publishes_its_string(nothing_embedded):
    EmailFactory(folder=mapped_folder(MailAccountFactory(), "inbox"), subject="Invoice", body="Due Friday.")
    assert embedding.semantic_state() is CapabilityState.INACTIVE
    assert answering_capability().state is CapabilityState.INACTIVE
    published = json.loads(json.dumps(search_emails("invoice").wire()))
    assert published["semanticSearch"] == "inactive"
    assert type(published["semanticSearch"]) is str
