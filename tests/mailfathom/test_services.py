"""The real services the product runs on: PostgreSQL with pgvector, Redis as Celery's broker."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection

from mailfathom.celery import app as celery_app
from mailfathom.embedded import _socket_dir


@pytest.mark.django_db
def test_database_is_postgresql_with_pgvector():
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
        assert row is not None, "the vector extension is missing from the test database"
        major, minor = (int(part) for part in row[0].split(".")[:2])
        assert (major, minor) >= (0, 8)
        cursor.execute("SELECT '[1,2,3]'::vector <-> '[1,2,4]'::vector")
        assert cursor.fetchone()[0] == pytest.approx(1.0)
    assert connection.vendor == "postgresql"


def test_celery_round_trip_through_redis():
    import celery.contrib.testing.tasks  # noqa: F401  (registers celery.ping)
    from celery.contrib.testing.worker import start_worker

    with start_worker(celery_app, pool="solo", perform_ping_check=True, shutdown_timeout=10):
        result = celery_app.send_task("celery.ping")
        assert result.get(timeout=20) == "pong"


def test_long_checkout_paths_put_sockets_in_a_short_directory(tmp_path):
    deep = tmp_path / ("d" * 120)
    directory = _socket_dir(deep, "redis")
    assert len(str(directory / "redis.sock")) < 108
    assert _socket_dir(Path("/srv/mf/var"), "redis") == Path("/srv/mf/var/redis")


def test_servers_found_running_are_not_counted_as_started_here(monkeypatch, settings):
    from mailfathom import embedded

    if not (settings.EMBEDDED_DATABASE and settings.EMBEDDED_REDIS):
        pytest.skip("DATABASE_URL/REDIS_URL point at servers MailFathom does not run")
    monkeypatch.setattr(embedded, "started_here", set())
    embedded.ensure_postgres()
    embedded.ensure_redis()
    assert embedded.started_here == set()  # so `make run` would leave them running
