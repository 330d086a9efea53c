"""Migrations with a line of progress at least every few seconds, for `make run`.

A first start applies every migration, and a few of them rewrite whole tables: without
output an operator cannot tell a slow start from a hung one. Django's migrate reports each
migration as it starts and ends; this turns those reports into numbered lines, and a
ticker says which migration is still running whenever nothing was said for TICK_SECONDS.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable

from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

TICK_SECONDS = 3.0
_APPLYING = re.compile(r"Applying (\S+)\.\.\.")


def pending_migrations() -> list[str]:
    """The migrations `migrate` would apply now, as app.name, in order."""
    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{migration.app_label}.{migration.name}" for migration, _backwards in plan]


class _Reporter:
    """A file-like target for migrate's output that says one numbered line per migration."""

    def __init__(self, say: Callable[[str], None], total: int) -> None:
        self.say = say
        self.total = total
        self.done = 0
        self.current = ""
        self.started = time.monotonic()
        self.last_said = time.monotonic()
        self.lock = threading.Lock()

    def write(self, text: str) -> None:
        for found in _APPLYING.finditer(text):
            with self.lock:
                self.done += 1
                self.current = found.group(1)
                self.line(f"  [{self.done}/{self.total}] {self.current}")

    def flush(self) -> None:
        return None

    def line(self, text: str) -> None:
        self.say(text)
        self.last_said = time.monotonic()

    def tick(self) -> None:
        with self.lock:
            quiet = time.monotonic() - self.last_said
            if quiet >= TICK_SECONDS:
                elapsed = time.monotonic() - self.started
                running = self.current or "the first migration"
                self.line(f"  ... still applying {running} ({elapsed:.0f} s so far)")


def migrate_with_progress(say: Callable[[str], None]) -> int:
    """Apply every pending migration, saying how far it has got; return how many were applied."""
    pending = pending_migrations()
    if not pending:
        say("The database is up to date.")
        return 0
    say(f"Preparing the database: {len(pending)} migrations to apply (a first start takes a minute or so).")
    reporter = _Reporter(say, len(pending))
    stop = threading.Event()

    def ticker() -> None:
        while not stop.wait(0.5):
            reporter.tick()

    thread = threading.Thread(target=ticker, name="migration-progress", daemon=True)
    thread.start()
    try:
        call_command("migrate", interactive=False, verbosity=1, stdout=reporter)
    finally:
        stop.set()
        thread.join()
    say(f"The database is ready ({time.monotonic() - reporter.started:.0f} s).")
    return len(pending)
