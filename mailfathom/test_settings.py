"""Settings for the test suite: the product settings, pointed at TEST_DATABASE_URL if set."""

import os

if os.environ.get("TEST_DATABASE_URL"):
    os.environ["DATABASE_URL"] = os.environ["TEST_DATABASE_URL"]

from mailfathom.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast; tests only

# Two test runs against one server (two checkouts, or helpers in parallel) need two test
# databases: MAILFATHOM_TEST_DB_SUFFIX names this run's.
if os.environ.get("MAILFATHOM_TEST_DB_SUFFIX"):
    DATABASES["default"]["TEST"] = {"NAME": f"test_mailfathom_{os.environ['MAILFATHOM_TEST_DB_SUFFIX']}"}  # noqa: F405

# Use cases run on pool threads in some tests (the MCP bridge in process); a connection kept
# open on such a thread would stop the test database from being dropped at the end. The
# uvicorn servers the MCP tests start use the product's own setting.
DATABASES["default"]["CONN_MAX_AGE"] = 0  # noqa: F405
