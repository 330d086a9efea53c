"""Whether the machine has a core to spare for parsing the next batch while this one is written.

Parsing ahead on a second thread pays when a core is idle; on a busy machine the two
threads may queue for the GIL instead (docs/benchmarks.md, "Backfill speed"). The load average
cannot tell the two apart, since it counts the backfill itself. So the watch reads, between
two batches, how much CPU the machine spent (/proc/stat) less what this process and its
own PostgreSQL backend spent: what is left is everyone else's work. Where /proc cannot be
read (another system) nothing is spared.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from django.db import connection

# Others may use this share of one core and still leave one to spare (a terminal, a
# scheduler tick, the IMAP server answering our own FETCH).
OTHERS_ALLOWED = 0.35
# How much of the last reading counts against the ones before it: several batches decide.
SMOOTHING = 0.5
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def machine_busy_seconds() -> float | None:
    """CPU seconds the whole machine has spent on work (all cores), or None without /proc."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = stat.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    # user nice system idle iowait irq softirq steal ...: all but idle and iowait are work.
    ticks = [int(value) for value in fields[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / CLOCK_TICKS


def process_seconds(pid: int) -> float:
    """CPU seconds process `pid` has used (user + system); 0 when /proc cannot say (a remote database)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    except (OSError, IndexError, ValueError):
        return 0.0


class SpareCore:
    """Reads, each time it is asked, whether others left a core idle since it was last asked."""

    @classmethod
    def beside_this_connection(cls) -> SpareCore:
        """A watch counting the Django connection's PostgreSQL backend (it writes the batches) as ours."""
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            row = cursor.fetchone()
        return cls(int(row[0]) if row else None)

    def __init__(self, backend_pid: int | None) -> None:
        self.backend_pid = backend_pid
        self.cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        self.others: float | None = None  # cores' worth of everyone else's work, smoothed
        self._last = self._reading()

    def _reading(self) -> tuple[float, float, float] | None:
        busy = machine_busy_seconds()
        if busy is None:
            return None
        ours = time.process_time() + (process_seconds(self.backend_pid) if self.backend_pid else 0.0)
        return time.monotonic(), busy, ours

    def free(self) -> bool:
        """Whether a core was left idle by everyone else since the last call (smoothed)."""
        now = self._reading()
        last, self._last = self._last, now
        if now is None or last is None or self.cores < 2:
            return False
        elapsed = now[0] - last[0]
        if elapsed <= 0:
            return self.others is not None and self._spared(self.others)
        others = max(0.0, (now[1] - last[1]) - (now[2] - last[2])) / elapsed
        self.others = others if self.others is None else SMOOTHING * others + (1 - SMOOTHING) * self.others
        return self._spared(self.others)

    def _spared(self, others: float) -> bool:
        # The backfill wants two cores: one parsing, one fetching and writing (with PostgreSQL).
        return others <= self.cores - 2 + OTHERS_ALLOWED
