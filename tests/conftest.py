"""Test session setup: real PostgreSQL with pgvector and real Redis, never SQLite or fakes.

Settings start (or find) the embedded servers under var/ unless TEST_DATABASE_URL /
REDIS_URL point elsewhere; pytest-django creates and drops the test database on it.
"""

import pytest

pytest_plugins = ["tests.privacy"]


@pytest.fixture(autouse=True)
def _keyring_for_tests(settings):
    """Use one known key so tests can assert on encryption without touching var/."""
    settings.MAILFATHOM_KEYRING = "Y2hhbmdlLW1lLXRoaXMtaXMtYS10ZXN0LWtleS0wMDA="
