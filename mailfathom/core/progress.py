"""Progress of long work: what use cases report, and the terminal's rendering of it.

A use case that works through many items in committed batches (synchronization, import,
the embedding sweep) takes an optional `progress` callback and calls it with a Progress
after each committed batch, so what it reports is always what is kept. Management commands
render it with TerminalProgress: one tqdm bar per label, with rate and remaining time.

A callback may raise (Ctrl-C arrives as KeyboardInterrupt wherever Python is): it is called
between batches, so raising there loses nothing committed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from tqdm import tqdm


@dataclass(frozen=True)
class Progress:
    label: str  # what is being worked through: a folder alias, an archive, "embedding"
    done: int  # units done so far, committed
    total: int | None  # units in all, when known
    unit: str = "msg"  # "msg", or "B" for bytes of an archive
    items: int | None = None  # messages done, when the unit is not messages


ProgressCallback = Callable[[Progress], None]


class TerminalProgress:
    """Render Progress events as tqdm bars on `stream`, one line per label in turn."""

    def __init__(self, stream: IO[str], *, disable: bool = False) -> None:
        self._stream = stream
        self._disable = disable
        self._label: str | None = None
        self._bar: tqdm | None = None

    def __call__(self, event: Progress) -> None:
        if event.label != self._label or self._bar is None:
            self.close()
            self._label = event.label
            self._bar = tqdm(
                total=event.total,
                desc=event.label,
                unit=event.unit,
                unit_scale=event.unit == "B",
                file=self._stream,
                disable=self._disable,
                dynamic_ncols=True,
            )
        bar = self._bar
        if event.total != bar.total:
            bar.total = event.total
        if event.items is not None:
            bar.set_postfix_str(f"{event.items} msg", refresh=False)
        bar.update(event.done - bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        self._bar, self._label = None, None

    def __enter__(self) -> TerminalProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


INTERRUPTED = (
    "Stopped. Every batch committed before Ctrl-C is kept; run the same command again to "
    "continue where it stopped."
)
