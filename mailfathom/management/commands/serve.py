"""`make run`: migrate, ensure the admin user, then run web, worker and beat together.

Every process, and the embedded PostgreSQL and Redis, is supervised (mailfathom.supervisor):
one that dies is restarted with backoff and a line saying which and how it stopped. Only
Ctrl-C (or SIGTERM), or a part failing repeatedly within a minute, stops the product, and
then it says which part and where its log is. Stopping takes every process this command
started, and the embedded servers when this command started them (not when it found them
already serving a shell or a test run). Their data stays in var/ for next time.
"""

from __future__ import annotations

import signal
import sys
import time
import urllib.error
import urllib.request
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from mailfathom import embedded, startup_ticker
from mailfathom.bootstrap import ensure_admin_user
from mailfathom.management import banner
from mailfathom.management.migration_progress import migrate_with_progress
from mailfathom.supervisor import ChildProcess, EmbeddedServer, GaveUp, Part, Supervisor

READY_TIMEOUT = 120.0
STOP_GRACE = 10.0


def child_commands(python: str, host: str, port: int, beat_schedule: str) -> dict[str, list[str]]:
    """The command line of each process `make run` starts and supervises, by name."""
    celery = [python, "-m", "celery", "-A", "mailfathom"]
    worker = [*celery, "worker", "--loglevel", "INFO"]
    web = [python, "-m", "uvicorn", "mailfathom.asgi:application", "--host", host, "--port", str(port)]
    return {
        "web": [*web, "--no-access-log"],
        "worker": [*worker, "--concurrency", "2"],
        # IDLE watchers wait on the network for minutes: threads, on a queue of their own,
        # so they never hold the slots synchronization runs need.
        "push-worker": [
            *worker,
            *("--queues", "push", "--pool", "threads", "--concurrency", "20", "--hostname", "push@%h"),
        ],
        "beat": [*celery, "beat", "--loglevel", "INFO", "--schedule", beat_schedule],
    }


class Command(BaseCommand):
    help = "Run MailFathom: the web app (admin, API, /mcp), one Celery worker and celery beat."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default=settings.MAILFATHOM.http_host)
        parser.add_argument("--port", type=int, default=settings.MAILFATHOM.http_port)

    def handle(self, *args: Any, **options: Any) -> None:
        host, port = options["host"], options["port"]
        startup_ticker.stop()
        self._say("Checking the configuration...")
        call_command("check")
        migrate_with_progress(self._say)
        admin_user = ensure_admin_user(settings.MAILFATHOM.admin_password)

        commands = child_commands(sys.executable, host, port, settings.CELERY_BEAT_SCHEDULE_FILENAME)
        log_dir = embedded.var_dir() / "log"
        log_dir.mkdir(exist_ok=True)
        parts: list[Part] = self._embedded_servers()
        for name, command in commands.items():
            # The web server logs to this terminal; worker and beat to var/log/.
            log_file = None if name == "web" else log_dir / f"{name}.log"
            where = str(log_file) if log_file else "its output above"
            parts.append(ChildProcess(name=f"{name} process", log=where, command=command, log_file=log_file))
        supervisor = Supervisor(parts, self._say)
        stopping = False

        def request_stop(signum: int, frame: object) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, request_stop)
        signal.signal(signal.SIGTERM, request_stop)
        try:
            supervisor.start_all()
            base = f"http://{'localhost' if host in ('127.0.0.1', '0.0.0.0') else host}:{port}"  # noqa: S104
            self._wait_until_ready(f"{base}/health", supervisor, lambda: stopping)
            self._print_banner(base, admin_user)
            while not stopping:
                supervisor.check()
                time.sleep(0.5)
        except GaveUp as gave_up:
            raise CommandError(str(gave_up)) from None
        finally:
            self._stop(supervisor)

    def _embedded_servers(self) -> list[Part]:
        servers: list[Part] = []
        if settings.EMBEDDED_DATABASE:
            servers.append(
                EmbeddedServer(
                    name="embedded PostgreSQL",
                    log=str(embedded.var_dir() / "postgres" / "log"),
                    answers=embedded.postgres_answers,
                    ensure=embedded.ensure_postgres,
                )
            )
        if settings.EMBEDDED_REDIS:
            servers.append(
                EmbeddedServer(
                    name="embedded Redis",
                    log=str(embedded.var_dir() / "redis" / "redis.log"),
                    answers=embedded.redis_answers,
                    ensure=embedded.ensure_redis,
                )
            )
        return servers

    def _say(self, line: str) -> None:
        self.stdout.write(line)
        self.stdout.flush()

    def _wait_until_ready(self, url: str, supervisor: Supervisor, stopping: Any) -> None:
        started = time.monotonic()
        deadline = started + READY_TIMEOUT
        said = started
        self._say("Starting the web server, the workers and beat...")
        while time.monotonic() < deadline and not stopping():
            supervisor.check()
            if time.monotonic() - said >= startup_ticker.TICK_SECONDS:
                self._say(f"  ... waiting for the web server to answer ({time.monotonic() - started:.0f} s)")
                said = time.monotonic()
            try:
                with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 (our own URL)
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.5)
        if not stopping():
            raise CommandError(f"The web server did not answer {url} within {READY_TIMEOUT:.0f} seconds.")

    def _print_banner(self, base: str, admin_user: Any) -> None:
        mcp_state = (
            "enabled" if settings.MAILFATHOM.mcp_enabled else "disabled until MAILFATHOM_MCP_ENABLED=true"
        )
        lines = [
            "",
            "MailFathom is running.",
            f"  Admin:   {base}/admin/   (user: {admin_user.username})",
        ]
        if admin_user.password:
            lines.append(f"           password: {admin_user.password}   <- shown once; change it in admin")
        lines += [
            f"  MCP:     {base}/mcp   ({mcp_state})",
            f"  API:     {base}/api/",
            f"  Health:  {base}/health",
            f"  Data:    {embedded.var_dir()}" if settings.EMBEDDED_DATABASE else "  Data:    DATABASE_URL",
            f"  Logs:    worker and beat in {embedded.var_dir() / 'log'}",
            *banner.features(),
            "",
            banner.next_step(),
            "Press Ctrl-C to stop everything.",
            "",
        ]
        from accounts.services.oauth_registrations import problems

        lines += [f"Warning: {problem}" for problem in problems()]
        self.stdout.write("\n".join(lines))
        self.stdout.flush()

    def _stop(self, supervisor: Supervisor) -> None:
        self.stdout.write("Stopping MailFathom...")
        supervisor.stop_children(STOP_GRACE)
        if settings.EMBEDDED_REDIS and "redis" in embedded.started_here:
            embedded.stop_redis()
        if settings.EMBEDDED_DATABASE and "postgres" in embedded.started_here:
            from django.db import connections

            connections.close_all()
            embedded.stop_postgres()
        self.stdout.write("Stopped.")
