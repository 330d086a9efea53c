"""Test session setup: real PostgreSQL with pgvector and real Redis, never SQLite or fakes.

Settings start (or find) the embedded servers under var/ unless TEST_DATABASE_URL /
REDIS_URL point elsewhere; pytest-django creates and drops the test database on it.
Under pytest-xdist (`make test`), each worker runs on servers of its own under
var/test-<worker>/ (mailfathom/test_settings.py): its Redis starts empty and both servers
are stopped when the worker ends, so a run leaves only var/'s own servers running.
"""

import importlib
import os

import pytest

from tests.configure import configure

# Fixtures shared across directories, registered once for the whole suite (a conftest
# further down may override one for its own directory, as tests/mcp does `scripted`).
pytest_plugins = [
    "tests.privacy",
    "tests.support",  # scripted (the scripted OpenAI-compatible server), own_provider_health
    "tests.dovecot",  # dovecot: the session's Dovecot
    "tests.oauth_server.fixtures",  # oauth_server: the session's OAuth 2.0 authorization server
    "tests.oauth_dovecot",  # oauth_dovecot: the session's Dovecot that takes OAuth 2.0 tokens
    "tests.answering.fixtures",  # chat_api, answering, world, obedient
    "tests.mcp.servers",  # module_server_factory, mcp_server, api_key
]


def pytest_sessionstart(session: pytest.Session) -> None:
    # A worker's own Redis: queues and keys a killed run left behind are not this run's.
    if os.environ.get("PYTEST_XDIST_WORKER") and not os.environ.get("REDIS_URL"):
        from mailfathom.core.redis_store import redis_client

        redis_client().flushdb()


def pytest_unconfigure(config: pytest.Config) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):  # what runs under var/test-<worker>/ is this worker's
        from mailfathom import embedded

        embedded.stop_running()


# The migrations that give the Compliance group its permissions, and their granting steps.
_GROUP_STEPS = (
    ("audit.migrations.0004_compliance_group", "create_group"),
    ("audit.migrations.0007_legal_holds", "grant_compliance"),
    ("audit.migrations.0008_access_trail", "grant_view"),
    ("audit.migrations.0011_case_exports", "grant"),
    ("audit.migrations.0012_compliance_group_views", "grant"),
)


@pytest.fixture(autouse=True)
def _compliance_group(request):
    """The Compliance group as the migrations leave it, in every database test of this folder.

    A test with transaction=True ends by flushing the database, which takes the rows data
    migrations wrote (the group) with it; the next test on that worker would find no group.
    The migrations' own steps are run again, with today's models in place of historical ones.
    """
    if request.node.get_closest_marker("django_db") is None:
        yield
        return
    request.getfixturevalue("_django_db_helper")  # database access as the marker asks
    from django.apps import apps
    from django.contrib.auth.models import Group

    granted = Group.objects.filter(name="Compliance", permissions__codename="view_erasurerequestrecord")
    if not granted.exists():
        for module, step in _GROUP_STEPS:
            getattr(importlib.import_module(module), step)(apps, None)
    yield


@pytest.fixture(autouse=True)
def _keyring_for_tests(settings):
    """Use one known key so tests can assert on encryption without touching var/."""
    settings.MAILFATHOM_KEYRING = "Y2hhbmdlLW1lLXRoaXMtaXMtYS10ZXN0LWtleS0wMDA="


@pytest.fixture(autouse=True)
def _default_language_after_each_test():
    """Leave the thread speaking the default language again.

    LocaleMiddleware activates the language a request asked for and leaves it active on
    the thread once the response is made, so a test client request in German would make
    the next test on that worker read German messages.
    """
    yield
    from django.utils import translation

    translation.deactivate()


@pytest.fixture(scope="session")
def metric_reader():
    """The one in-memory reader of this session's meter provider (a provider is set only once)."""
    from opentelemetry import metrics
    from opentelemetry.sdk import metrics as sdk_metrics
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    metrics.set_meter_provider(sdk_metrics.MeterProvider(metric_readers=[reader]))
    return reader


def metric_points(reader) -> list[tuple[str, dict, float]]:
    """(instrument name, attributes, value) of every data point the reader holds now."""
    points = []
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    points.append((metric.name, dict(point.attributes), getattr(point, "value", None)))
    return points


@pytest.fixture
def mailfathom_settings(settings):
    """`configure` bound to this test's settings: mailfathom_settings(embedding_provider="none")."""

    def change(**attributes):
        configure(settings, **attributes)

    return change
