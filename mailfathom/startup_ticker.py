"""A line every few seconds while `manage.py serve` loads, before Django can say anything.

Imported by manage.py before Django: it uses the standard library only. The serve command
stops it once it prints lines of its own.
"""

from __future__ import annotations

import sys
import threading
import time

TICK_SECONDS = 3.0
_stop = threading.Event()


def start(what: str) -> None:
    """Say `what` now, then that it is still going every TICK_SECONDS until stop()."""
    started = time.monotonic()
    print(f"{what}...", flush=True)

    def tick() -> None:
        while not _stop.wait(TICK_SECONDS):
            sys.stdout.write(f"  ... still {what.lower()} ({time.monotonic() - started:.0f} s)\n")
            sys.stdout.flush()

    threading.Thread(target=tick, name="startup-ticker", daemon=True).start()


def stop() -> None:
    _stop.set()
