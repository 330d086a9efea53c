"""The clean-up after an erasure: rewrite the affected tables' files, then flush and switch the WAL.

A DELETE only marks rows dead; their bytes stay in the table, its TOAST table and indexes,
and in the WAL, until rewritten. Each step reports its outcome and table name only, never a
row or a value. What each step needs and why: docs/operations/erasure.md.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import DatabaseError, connection

from mailbox.services.erasure import affected_tables

logger = logging.getLogger(__name__)

DONE = "done"
NOT_REWRITTEN = "not rewritten"
REFUSED = "refused"


@dataclass(frozen=True)
class CleanupStep:
    """One statement the clean-up ran, and how it went (no data: names and a SQLSTATE)."""

    step: str
    outcome: str  # DONE, NOT_REWRITTEN (VACUUM skipped the table: not its owner) or REFUSED
    detail: str = ""

    def as_json(self) -> dict[str, str]:
        return {"step": self.step, "outcome": self.outcome, "detail": self.detail}


def rewrite_after_erasure(tables: Iterable[str] | None = None) -> tuple[CleanupStep, ...]:
    """Rewrite `tables` (default: every table an erasure touches), then checkpoint and switch WAL.

    Raises RuntimeError inside a transaction (VACUUM cannot run in one).
    """
    if connection.in_atomic_block:
        raise RuntimeError("the clean-up after an erasure cannot run inside a transaction")
    steps: list[CleanupStep] = []
    # VACUUM FULL writes each table, its TOAST table and indexes to new files (plain VACUUM frees
    # the space without overwriting it); ANALYZE replaces statistics that may sample erased rows.
    for table in sorted(set(tables if tables is not None else affected_tables())):
        steps.append(_rewrite(table, f"VACUUM (FULL, ANALYZE) {connection.ops.quote_name(table)}"))
    # The column statistics ANALYZE just replaced: their old versions are dead rows here.
    steps.append(_rewrite("pg_catalog.pg_statistic", "VACUUM FULL pg_catalog.pg_statistic"))
    # Write everything out, close the WAL segment holding the deletions, and let a second
    # checkpoint retire the older segments.
    steps.append(_run("CHECKPOINT", "CHECKPOINT"))
    steps.append(_run("SELECT pg_switch_wal()", "SELECT pg_switch_wal()"))
    steps.append(_run("CHECKPOINT", "CHECKPOINT"))
    failed = sum(1 for step in steps if step.outcome != DONE)
    logger.info("erasure clean-up: %d steps, %d not done", len(steps), failed)
    return tuple(steps)


def _filenode(table: str) -> int | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_relation_filenode(%s::regclass)", [table])
        row = cursor.fetchone()
    return row[0] if row else None


def _rewrite(table: str, statement: str) -> CleanupStep:
    """VACUUM FULL skips a table its user may not maintain with a warning, not an error: the
    table's file number tells whether it was written anew."""
    try:
        before = _filenode(table)
        with connection.cursor() as cursor:
            cursor.execute(statement)
        after = _filenode(table)
    except DatabaseError as error:
        return CleanupStep(statement, REFUSED, _sqlstate(error))
    if before is not None and before == after:
        return CleanupStep(statement, NOT_REWRITTEN, "the database user may not rewrite this table")
    return CleanupStep(statement, DONE)


def _run(name: str, statement: str) -> CleanupStep:
    try:
        with connection.cursor() as cursor:
            cursor.execute(statement)
    except DatabaseError as error:
        return CleanupStep(name, REFUSED, _sqlstate(error))
    return CleanupStep(name, DONE)


def _sqlstate(error: DatabaseError) -> str:
    code = getattr(error.__cause__, "sqlstate", None) or getattr(error.__cause__, "pgcode", None)
    return f"SQLSTATE {code}" if code else type(error.__cause__ or error).__name__
