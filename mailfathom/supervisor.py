"""Keep what `make run` started running: restart a process or embedded server that dies.

Each part is restarted with exponential backoff and a line saying which part stopped and
how (exit code or signal). A part that fails `max_failures` times within `window` seconds
is given up on: the product stops, naming the part and where its log is. Only that, or
Ctrl-C, stops the product; one dead worker no longer takes the web server with it.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

BACKOFF_START = 1.0
BACKOFF_MAX = 30.0
MAX_FAILURES = 5
WINDOW_SECONDS = 60.0


class GaveUp(Exception):
    """A part failed too often in too short a time; the message names it and its log."""


@dataclass
class Part:
    """Something supervised: a child process or an embedded server."""

    name: str
    log: str  # where to look when it fails: a path, or "the output above"
    failures: deque[float] = field(default_factory=deque)
    restart_at: float | None = None

    def alive(self) -> bool:
        raise NotImplementedError

    def start(self) -> None:
        raise NotImplementedError

    def how_it_stopped(self) -> str:
        raise NotImplementedError


@dataclass
class ChildProcess(Part):
    command: Sequence[str] = ()
    log_file: Path | None = None  # None: the process writes to this terminal
    process: subprocess.Popen[bytes] | None = None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        output = open(self.log_file, "ab") if self.log_file else None
        try:
            # A process group of its own, so Ctrl-C reaches the children only through us and
            # we stop them in order.
            self.process = subprocess.Popen(
                list(self.command),
                start_new_session=True,
                stdout=output,
                stderr=subprocess.STDOUT if output else None,
            )
        finally:
            if output:
                output.close()

    def how_it_stopped(self) -> str:
        code = self.process.returncode if self.process else None
        if code is None:
            return "exit code unknown"
        if code < 0:
            try:
                return f"signal {signal.Signals(-code).name}"
            except ValueError:
                return f"signal {-code}"
        return f"exit code {code}"

    def terminate(self) -> None:
        if self.alive():
            assert self.process is not None
            self.process.send_signal(signal.SIGTERM)


@dataclass
class EmbeddedServer(Part):
    """An embedded server: it daemonizes, so it is watched by asking it, not by a pid we own."""

    answers: Callable[[], bool] = lambda: True
    ensure: Callable[[], object] = lambda: None

    def alive(self) -> bool:
        return self.answers()

    def start(self) -> None:
        self.ensure()

    def how_it_stopped(self) -> str:
        return "it no longer answers"


class Supervisor:
    def __init__(
        self,
        parts: Sequence[Part],
        say: Callable[[str], None],
        *,
        backoff_start: float = BACKOFF_START,
        backoff_max: float = BACKOFF_MAX,
        max_failures: int = MAX_FAILURES,
        window: float = WINDOW_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.parts = list(parts)
        self.say = say
        self.backoff_start = backoff_start
        self.backoff_max = backoff_max
        self.max_failures = max_failures
        self.window = window
        self.clock = clock

    def start_all(self) -> None:
        for part in self.parts:
            part.start()

    def check(self) -> None:
        """Restart every part that died and whose backoff has passed; raise GaveUp when one
        failed `max_failures` times within the window."""
        now = self.clock()
        for part in self.parts:
            if part.restart_at is not None:
                if now >= part.restart_at:
                    self._restart(part, now)
                continue
            if part.alive():
                continue
            failures = self._record_failure(part, now)
            how = part.how_it_stopped()
            if failures >= self.max_failures:
                raise GaveUp(
                    f"The {part.name} failed {failures} times within {self.window:.0f} s "
                    f"(last: {how}), so MailFathom stopped. Look at its log: {part.log}"
                )
            delay = min(self.backoff_max, self.backoff_start * 2 ** (failures - 1))
            self.say(
                f"The {part.name} stopped ({how}); restarting it in {delay:.0f} s "
                f"(failure {failures} of {self.max_failures} within {self.window:.0f} s). Its log: {part.log}"
            )
            part.restart_at = now + delay

    def _record_failure(self, part: Part, now: float) -> int:
        part.failures.append(now)
        while part.failures and part.failures[0] < now - self.window:
            part.failures.popleft()
        return len(part.failures)

    def _restart(self, part: Part, now: float) -> None:
        part.restart_at = None
        try:
            part.start()
        except Exception as error:
            self.say(f"The {part.name} did not start again ({type(error).__name__}). Its log: {part.log}")
            return  # not alive: the next check counts it and backs off further
        self.say(f"The {part.name} is running again.")

    def children(self) -> list[ChildProcess]:
        return [part for part in self.parts if isinstance(part, ChildProcess)]

    def stop_children(self, grace: float) -> None:
        """SIGTERM every child, then SIGKILL whichever is still running after `grace` seconds."""
        children = self.children()
        for child in children:
            child.terminate()
        deadline = self.clock() + grace
        for child in children:
            if child.process is None:
                continue
            try:
                child.process.wait(timeout=max(0.1, deadline - self.clock()))
            except subprocess.TimeoutExpired:
                child.process.kill()
                child.process.wait()
