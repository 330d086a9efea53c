"""What PostgreSQL settings a statement ran under: for tests of settings local to one statement."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection


def current_settings(*names: str) -> tuple[str, ...]:
    """The session's current value of each setting named."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join("current_setting(%s)" for _ in names), list(names))
        return tuple(cursor.fetchone())


@contextmanager
def settings_seen_by(marker: str, *names: str) -> Iterator[list[tuple[str, ...]]]:
    """The settings in force as each statement holding `marker` was sent, one tuple each."""
    seen: list[tuple[str, ...]] = []

    def wrapper(execute, sql, params, many, context):
        if marker in sql:
            seen.append(current_settings(*names))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        yield seen
