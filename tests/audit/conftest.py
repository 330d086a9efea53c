"""Audit tests: the API's rate counts reset. They also use answering's fixtures (the scripted
server as chat and embedding endpoint) and the MCP servers' (a real uvicorn reached with the
real `mcp` client), which tests/conftest.py registers for the whole suite."""

from __future__ import annotations

import pytest

from audit.api.throttling import forget_counts


@pytest.fixture
def fresh_rate_counts():
    """The API's rate counts in Redis start and end empty (they outlive a test's database)."""
    forget_counts()
    yield
    forget_counts()
