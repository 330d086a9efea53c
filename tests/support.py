"""Helpers many test modules share, declared once.

- database_url(): this session's test database as a DATABASE_URL, for child processes
  (uvicorn, a Celery worker) that must read what the test commits;
- free_port(): a TCP port nothing listens on (a closed port, or one to start a server on);
- wait_for(): poll a condition until it holds, failing the test with a message if it never does;
- wait_until_serving(): wait for a child uvicorn to answer /health;
- serve_env(): the environment of a child `manage.py serve`;
- failure(): the ProviderError a call raises;
- refusals(): what full_clean() refuses on a model instance, by field ({} when it accepts it);
- scripted_server / scripted_openai_server(): the scripted OpenAI-compatible server;
- isolated_provider_health(): provider-health records of the test's own, removed afterwards
  (the fixture own_provider_health gives a whole test the same);
- screenshots_dir(): var/screenshots, where browser tests leave their pictures (var/ itself,
  not an xdist worker's var/test-<worker>/).

Its fixtures `scripted` and `own_provider_health` are registered for the whole suite by
tests/conftest.py (tests/mcp overrides `scripted` with one server per module).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import pytest
from django.conf import settings as django_settings
from django.core.exceptions import ValidationError
from django.db import connection
from django.db.models import Model

from mailfathom.core import config
from mailfathom.providers import ProviderError, health
from tests.providers.openai_server import ScriptedOpenAIServer

# The vector size the scripted server answers with: the configured default's, so a test that
# points embeddings at the server needs to change nothing else.
SCRIPTED_DIMENSIONS = config.load({}).values.embedding_dimensions


def database_url() -> str:
    """The test database this session uses, spelled as a DATABASE_URL."""
    params = connection.settings_dict
    password = f":{quote(params['PASSWORD'])}" if params["PASSWORD"] else ""
    port = f":{params['PORT']}" if params.get("PORT") else ""
    if params["HOST"].startswith("/"):  # a unix socket directory travels as a query option
        return f"postgres://{params['USER']}{password}@{port}/{params['NAME']}?host={params['HOST']}"
    return f"postgres://{params['USER']}{password}@{params['HOST']}{port}/{params['NAME']}"


def screenshots_dir() -> Path:
    """var/screenshots of the checkout, whichever servers this process runs on."""
    return Path(django_settings.TEST_SHARED_VAR_DIR) / "screenshots"


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on `host` that nothing listened on a moment ago (the socket is closed again)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def wait_for(
    condition: Callable[[], object],
    seconds: float = 5.0,
    *,
    interval: float = 0.01,
    message: Callable[[], str] = lambda: "condition not reached",
) -> None:
    """Return once `condition()` is true; fail the test with `message()` after `seconds`."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() >= deadline:
            pytest.fail(message())
        time.sleep(interval)


def wait_until_serving(
    base: str, process: subprocess.Popen, output: Callable[[], str], seconds: float
) -> None:
    """Return once the uvicorn at `base` answers /health; fail with its `output()` if it
    exits first or does not answer within `seconds` (it is stopped before `output` is read)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(base + "/health", timeout=1)  # noqa: S310 (a loopback URL)
            return
        except (urllib.error.URLError, OSError):
            if process.poll() is not None:
                pytest.fail("uvicorn exited: " + output()[-3000:])
            time.sleep(0.2)
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
    pytest.fail("uvicorn did not answer /health in time: " + output()[-3000:])


def serve_env(database: str, redis_url: str, var_dir: Path) -> dict[str, str]:
    """The environment of a child `manage.py serve` on `database` and `redis_url`, with a var/ of
    its own and an admin password, so a first start goes through without asking anything."""
    env = {
        **os.environ,
        "DATABASE_URL": database,
        "REDIS_URL": redis_url,
        "DJANGO_SECRET_KEY": "test-serve-" + "x" * 50,
        "MAILFATHOM_KEYRING": django_settings.MAILFATHOM_KEYRING,
        "MAILFATHOM_VAR_DIR": str(var_dir),
        "MAILFATHOM_ADMIN_PASSWORD": "a-long-test-password-9347",
        "PYTHONUNBUFFERED": "1",
    }
    for name in ("TEST_DATABASE_URL", "DJANGO_ALLOW_ASYNC_UNSAFE"):  # this test process's, not serve's
        env.pop(name, None)
    return env


def failure(call: Callable[[], object]) -> ProviderError:
    """The ProviderError `call()` raises (the test fails if it raises none)."""
    with pytest.raises(ProviderError) as caught:
        call()
    return caught.value


def refusals(instance: Model) -> dict[str, list[str]]:
    """The messages full_clean() refuses `instance` with, by field; {} when it accepts it."""
    try:
        instance.full_clean()
    except ValidationError as refused:
        return refused.message_dict
    return {}


def scripted_openai_server() -> ScriptedOpenAIServer:
    """A scripted OpenAI-compatible server, to be entered with `with`."""
    return ScriptedOpenAIServer(dimensions=SCRIPTED_DIMENSIONS)


@pytest.fixture(name="scripted")
def scripted_server() -> Iterator[ScriptedOpenAIServer]:
    """The scripted OpenAI-compatible server, for one test."""
    with scripted_openai_server() as server:
        yield server


@contextmanager
def isolated_provider_health(settings, label: str) -> Iterator[None]:
    """Give the test provider-health records of its own in the real Redis, and remove them."""
    settings.PROVIDER_HEALTH_NAMESPACE = f"test-{label}-{uuid.uuid4().hex}"
    try:
        yield
    finally:
        for role in ("embedding", "chat"):
            health.clear_health(role)


@pytest.fixture
def own_provider_health(request, settings) -> Iterator[None]:
    """Provider-health records of this test's own, named after its module, removed afterwards.

    Not autouse: a module whose tests read or write health takes it with
    `pytest.mark.usefixtures("own_provider_health")`; a test elsewhere touches no Redis for it.
    """
    with isolated_provider_health(settings, request.path.stem.removeprefix("test_")):
        yield
