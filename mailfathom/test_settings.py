"""Settings for the test suite: the product settings, pointed at TEST_DATABASE_URL if set."""

import os
from urllib.parse import urlsplit, urlunsplit

# No test process (nor a server or worker a test starts) loads the embedding model at start:
# most never embed, and those that do load it on first use. A test of warming turns it on.
os.environ.setdefault("MAILFATHOM_EMBEDDING_WARM_START", "false")

if os.environ.get("TEST_DATABASE_URL"):
    os.environ["DATABASE_URL"] = os.environ["TEST_DATABASE_URL"]

# Under pytest-xdist each worker (PYTEST_XDIST_WORKER: gw0, gw1...) runs on an embedded
# PostgreSQL and Redis of its own, under var/test-<worker>/: Celery's queues, the keys of
# rate counts, ledgers, heartbeats and watchers, and every flush of them stay with the worker
# that made them. Set in the environment once (MAILFATHOM_TEST_WORKER says it was), so the
# uvicorn servers, Celery workers and commands a test starts find the same servers.
# MAILFATHOM_TEST_SHARED_VAR_DIR keeps var/ itself (for screenshots).
if "MAILFATHOM_TEST_SHARED_VAR_DIR" not in os.environ:
    from mailfathom.embedded import var_dir

    os.environ["MAILFATHOM_TEST_SHARED_VAR_DIR"] = str(var_dir())
_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if _worker and os.environ.get("MAILFATHOM_TEST_WORKER") != _worker:
    os.environ["MAILFATHOM_TEST_WORKER"] = _worker
    _parts = ["test", os.environ.get("MAILFATHOM_TEST_DB_SUFFIX"), _worker]
    _own = "-".join(part for part in _parts if part)
    os.environ["MAILFATHOM_VAR_DIR"] = os.path.join(os.environ["MAILFATHOM_TEST_SHARED_VAR_DIR"], _own)
    # A Redis of the deployment's (REDIS_URL=redis://host:port/N) is shared: worker gwK takes
    # its database N+1+K instead.
    _redis = os.environ.get("REDIS_URL", "")
    if _redis.startswith(("redis://", "rediss://")):
        _url = urlsplit(_redis)
        _db = int(_url.path.strip("/") or 0) + 1 + int(_worker.removeprefix("gw"))
        os.environ["REDIS_URL"] = urlunsplit(_url._replace(path=f"/{_db}"))

from mailfathom.settings import *  # noqa: E402, F403

TEST_SHARED_VAR_DIR = os.environ["MAILFATHOM_TEST_SHARED_VAR_DIR"]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast; tests only

# Two test runs against one server (two checkouts, or helpers in parallel) need two test
# databases: MAILFATHOM_TEST_DB_SUFFIX names this run's.
if os.environ.get("MAILFATHOM_TEST_DB_SUFFIX"):
    DATABASES["default"]["TEST"] = {"NAME": f"test_mailfathom_{os.environ['MAILFATHOM_TEST_DB_SUFFIX']}"}  # noqa: F405

# Use cases run on pool threads in some tests (the MCP bridge in process); a connection kept
# open on such a thread would stop the test database from being dropped at the end. The
# uvicorn servers the MCP tests start use the product's own setting.
DATABASES["default"]["CONN_MAX_AGE"] = 0  # noqa: F405
