"""SpareCore: a core is spare only while others leave one idle; the backfill's own work never counts."""

from __future__ import annotations

import multiprocessing
import os
import time

import pytest

from mailbox.sync import spare_core
from mailbox.sync.spare_core import SpareCore

needs_proc = pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="reads Linux's /proc")


def _spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


@needs_proc
def test_others_burning_every_core_leave_none_to_spare():
    watch = SpareCore(backend_pid=None)
    burners = [multiprocessing.Process(target=_spin, args=(1.0,)) for _ in range(watch.cores)]
    for burner in burners:
        burner.start()
    try:
        time.sleep(0.8)
        assert watch.free() is False
        assert watch.others is not None and watch.others > 1.0
    finally:
        for burner in burners:
            burner.join()


@needs_proc
def test_the_callers_own_work_is_not_counted_as_others():
    watch = SpareCore(backend_pid=None)
    before, own_before = spare_core.machine_busy_seconds(), time.process_time()
    _spin(0.5)  # this process: the backfill's own parsing
    watch.free()
    busy, own = spare_core.machine_busy_seconds(), time.process_time() - own_before
    assert before is not None and busy is not None and busy - before >= 0.4
    # What the machine spent beyond this process, not what it spun itself (most of the half
    # second on a quiet machine; less when other work takes turns on the cores with it).
    assert watch.others is not None and watch.others < (busy - before - 0.8 * own) / 0.5


def _readings(monkeypatch, machine: list[float], own: list[float], clock: list[float]) -> None:
    """Feed the watch these successive readings of /proc/stat, of this process and of the clock."""
    monkeypatch.setattr(spare_core, "machine_busy_seconds", lambda: machine.pop(0))
    monkeypatch.setattr(spare_core.time, "process_time", lambda: own.pop(0))
    monkeypatch.setattr(spare_core.time, "monotonic", lambda: clock.pop(0))


def test_the_judgement_is_smoothed_over_batches(monkeypatch):
    # Readings at 0, 1, 2 and 3 s; this process uses 1 core throughout. Others: 0, then 1.5
    # cores for one batch (smoothed to 0.75: not spare), then 0 again (0.375: not yet), then 0.
    _readings(
        monkeypatch,
        machine=[0.0, 1.0, 3.5, 4.5, 5.5],
        own=[0.0, 1.0, 2.0, 3.0, 4.0],
        clock=[0.0, 1.0, 2.0, 3.0, 4.0],
    )
    watch = SpareCore(backend_pid=None)
    watch.cores = 2
    assert [watch.free() for _ in range(4)] == [True, False, False, True]


def test_one_core_or_no_proc_spares_nothing(monkeypatch):
    watch = SpareCore(backend_pid=None)
    watch.cores = 1
    assert watch.free() is False
    monkeypatch.setattr(spare_core, "machine_busy_seconds", lambda: None)
    watch = SpareCore(backend_pid=None)
    watch.cores = 4
    assert watch.free() is False
