"""The period ledger: fixed windows anchored at the epoch, taken at admission, refused not queued.

The counts are in the session's real Redis; each test counts in a namespace of its own.
"""

from __future__ import annotations

import threading
import uuid

import pytest

from answering.ledger import SPEND_REFUSED, PeriodLedger
from mailfathom.core.errors import MailFathomError


@pytest.fixture
def namespace() -> str:
    """A namespace of this test's own in the shared Redis."""
    return f"test-ledger-{uuid.uuid4().hex}"


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_runs_are_counted_at_admission_and_the_next_is_refused_with_the_renewal_instant(namespace):
    clock = Clock(7200.0 + 1800)  # half past two, 1970-01-01
    ledger = PeriodLedger(
        namespace=namespace, max_runs=3, max_tokens=10_000, period_seconds=3600, clock=clock
    )
    for _ in range(3):
        ledger.admit()
    with pytest.raises(MailFathomError) as refused:
        ledger.admit()
    assert refused.value.code == SPEND_REFUSED
    assert "renews at 1970-01-01T03:00:00+00:00" in refused.value.message
    assert ledger.spend().runs == 3


def test_tokens_spent_close_the_period_for_new_questions(namespace):
    ledger = PeriodLedger(
        namespace=namespace, max_runs=30, max_tokens=1000, period_seconds=3600, clock=Clock(100.0)
    )
    ledger.admit()
    ledger.charge(999)
    ledger.admit()  # under the ceiling: admitted
    ledger.charge(1)
    with pytest.raises(MailFathomError) as refused:
        ledger.admit()
    assert refused.value.code == SPEND_REFUSED


def test_the_window_rolls_over_on_the_epoch_anchored_boundary(namespace):
    clock = Clock(3599.0)
    ledger = PeriodLedger(namespace=namespace, max_runs=1, max_tokens=1000, period_seconds=3600, clock=clock)
    ledger.admit()
    with pytest.raises(MailFathomError):
        ledger.admit()
    clock.now = 3600.0  # the next hour begins exactly on the hour
    ledger.admit()
    assert ledger.spend().period_start == 3600.0
    assert ledger.spend().runs == 1


def test_a_skipped_window_is_not_owed(namespace):
    clock = Clock(0.0)
    ledger = PeriodLedger(namespace=namespace, max_runs=2, max_tokens=1000, period_seconds=60, clock=clock)
    clock.now = 600.0  # ten idle windows
    ledger.admit()
    ledger.admit()
    with pytest.raises(MailFathomError):
        ledger.admit()


def test_concurrent_admissions_never_exceed_the_ceiling(namespace):
    ledger = PeriodLedger(
        namespace=namespace, max_runs=30, max_tokens=10**9, period_seconds=3600, clock=Clock(10.0)
    )
    admitted, refused = [], []
    barrier = threading.Barrier(64)

    def ask() -> None:
        barrier.wait()
        try:
            ledger.admit()
            admitted.append(1)
        except MailFathomError:
            refused.append(1)

    threads = [threading.Thread(target=ask) for _ in range(64)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(admitted) == 30 and len(refused) == 34
