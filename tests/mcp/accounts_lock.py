"""Holding an MCP call slot in tests: a call that reads the locked accounts table keeps its slot
until the lock is released, without any test depending on how long anything takes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection, transaction

from tests.support import wait_for


@contextmanager
def accounts_table_locked() -> Iterator[Any]:
    """Lock the accounts table for the block; yields the cursor that holds the lock."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("LOCK TABLE accounts_mailaccount IN ACCESS EXCLUSIVE MODE")
        yield cursor


def wait_until_a_call_waits_on_accounts(cursor) -> None:
    """Return once a connection waits for the lock `cursor` holds; fail the test after 20 s."""

    def someone_waits() -> bool:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'accounts_mailaccount'::regclass"
        )
        return cursor.fetchone()[0] > 0

    wait_for(someone_waits, 20, interval=0.05, message=lambda: "the first call never reached the database")
