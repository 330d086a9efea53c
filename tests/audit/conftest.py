"""Audit tests reuse the answering fixtures (the scripted server as chat and embedding
endpoint) and the MCP ones (a real uvicorn reached with the real `mcp` client)."""

from __future__ import annotations

import pytest

from audit.api.throttling import forget_counts
from tests.answering.conftest import answering, chat_api, obedient, world  # noqa: F401
from tests.mcp.conftest import api_key, module_server_factory  # noqa: F401
from tests.support import scripted_server  # noqa: F401


@pytest.fixture
def fresh_rate_counts():
    """The API's rate counts in Redis start and end empty (they outlive a test's database)."""
    forget_counts()
    yield
    forget_counts()
