"""How many emails a selection holds, counted up to a cap and remembered for a minute.

Searches use it to choose a plan (the vector ranking: exact or by index) and to size what
stage 1 of the lexical ranking may read; both only need to know whether a selection is
small, so the count stops at the cap and a slightly stale figure is as good as a fresh one.
"""

from __future__ import annotations

import threading
import time

from django.db import connection

from mailbox.models import EmailQuerySet

# A selection's size is counted once and reused for this long: it only decides between
# plans that are all correct.
SIZE_SECONDS = 60.0
_sizes: dict[tuple[str, tuple[object, ...]], tuple[float, int]] = {}
_sizes_lock = threading.Lock()


def selection_size(candidates: EmailQuerySet, cap: int) -> int:
    """How many emails `candidates` holds, counted up to `cap` + 1 (more is reported as cap + 1)."""
    sql, params = candidates.order_by().values("id").query.sql_with_params()
    key = (f"{sql} LIMIT {int(cap) + 1}", tuple(str(value) for value in params))
    now = time.monotonic()
    with _sizes_lock:
        cached = _sizes.get(key)
    if cached is not None and now - cached[0] < SIZE_SECONDS:
        return cached[1]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM ({sql} LIMIT {int(cap) + 1}) AS s", params)
        size = int(cursor.fetchone()[0])
    with _sizes_lock:
        if len(_sizes) > 1000:
            _sizes.clear()
        _sizes[key] = (now, size)
    return size


def forget() -> None:
    """Count every selection afresh (tests that change a selection's mail within a minute)."""
    with _sizes_lock:
        _sizes.clear()
