"""The session's authorization server: django-oauth-toolkit in a process of its own.

Its fixture, `oauth_server` (one per session, so per xdist worker, started only when a test
asks for it), is registered for the whole suite by tests/conftest.py. The database is
migrated and seeded once into a template under var/oauth-server/ (keyed by the toolkit's
and Django's versions and this server's code) and copied for each session; the server runs
on Django's runserver, on a free loopback port, and dies with the test process.
"""

from __future__ import annotations

import datetime
import hashlib
import importlib.metadata
import itertools
import os
import secrets
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.conf import settings as django_settings

from tests.dovecot import die_with_parent, stop_process
from tests.oauth_server import flows, prepare
from tests.support import free_port

HOST = "127.0.0.1"
HERE = Path(__file__).resolve().parent
REPOSITORY = HERE.parents[1]
SETTINGS_MODULE = "tests.oauth_server.settings"
DEFAULT_SCOPE = "openid email imap offline_access"
STARTUP_TIMEOUT = 30.0
# Django's development server, one process (no autoreloader), threaded: Dovecot's
# introspection requests must be answered while a test's own request is in flight.
RUNSERVER = [sys.executable, "-m", "django", "runserver", "--noreload", "--skip-checks"]


@dataclass
class OAuthServer:
    """Where the session's authorization server answers, and who may sign in to it.

    Discovery, as django-oauth-toolkit 3.4.1 serves it with its URLs mounted under /o/:
    `issuer` is http://127.0.0.1:PORT/o, and both `issuer + "/.well-known/openid-configuration"`
    (OpenID) and `issuer + "/.well-known/oauth-authorization-server"` (RFC 8414, also at the
    root as /.well-known/oauth-authorization-server/o) answer with that issuer. Only the
    RFC 8414 document lists the revocation and introspection endpoints; the OpenID one has
    the authorization, token, userinfo and JWKS endpoints but neither of those two.
    """

    issuer: str
    root: Path
    database: Path
    log_path: Path
    users: dict[str, str]
    client_id: str
    client_secret: str
    app_client_id: str
    app_client_secret: str
    dovecot_client_id: str
    dovecot_client_secret: str
    startup_seconds: float = field(default=0.0)
    _new_users: Iterator[int] = field(default_factory=lambda: itertools.count(1), repr=False)

    @property
    def authorize_url(self) -> str:
        return f"{self.issuer}/authorize/"

    @property
    def token_url(self) -> str:
        return f"{self.issuer}/token/"

    @property
    def introspection_url(self) -> str:
        return f"{self.issuer}/introspect/"

    @property
    def revocation_url(self) -> str:
        return f"{self.issuer}/revoke_token/"

    @property
    def userinfo_url(self) -> str:
        return f"{self.issuer}/userinfo/"

    @property
    def openid_configuration_url(self) -> str:
        return f"{self.issuer}/.well-known/openid-configuration"

    @property
    def metadata_url(self) -> str:
        """RFC 8414 metadata, issuer-relative (the form clients of a prefixed issuer try)."""
        return f"{self.issuer}/.well-known/oauth-authorization-server"

    def sign_in_scripted(self, user: str, redirect_uri: str, scope: str = DEFAULT_SCOPE) -> dict[str, Any]:
        """Sign `user` in to the `mailfathom` client with `requests`; return the token answer.

        Authorization code with PKCE through the real login and consent pages. `redirect_uri`
        is registered first (allow_redirect_uri); nothing listens there, nothing needs to.
        """
        self.allow_redirect_uri(redirect_uri)
        return flows.authorization_code(
            self.issuer,
            (self.client_id, self.client_secret),
            (user, self.users[user]),
            redirect_uri,
            scope,
        )

    def client_credentials_token(self, scope: str = "imap") -> dict[str, Any]:
        """Return an app-only token of `mailfathom-app@example.test` (every example.test mailbox)."""
        return flows.client_credentials(self.issuer, (self.app_client_id, self.app_client_secret), scope)

    def allow_redirect_uri(self, uri: str) -> None:
        """Register `uri` as a redirect URI of the `mailfathom` application (once)."""
        with self._database() as db:
            (current,) = db.execute(
                "SELECT redirect_uris FROM oauth2_provider_application WHERE client_id = ?",
                (self.client_id,),
            ).fetchone()
            if uri not in current.split():
                db.execute(
                    "UPDATE oauth2_provider_application SET redirect_uris = ? WHERE client_id = ?",
                    (" ".join([*current.split(), uri]), self.client_id),
                )

    def add_user(self, prefix: str = "user", domain: str = "example.test") -> str:
        """Create a user of the session's own and return its name (its password is in `users`).

        For tests that change a user's grants or mail and must not meet another test's.
        """
        name = f"{prefix}{next(self._new_users):03d}@{domain}"
        password = secrets.token_urlsafe(12)
        salt = secrets.token_hex(8)
        hashed = f"md5${salt}${hashlib.md5((salt + password).encode()).hexdigest()}"  # noqa: S324 (the server's hasher)
        with self._database() as db:
            db.execute(
                "INSERT INTO auth_user (password, is_superuser, username, first_name, last_name,"
                " email, is_staff, is_active, date_joined) VALUES (?, 0, ?, '', '', ?, 0, 1, ?)",
                (hashed, name, name, _now()),
            )
        self.users[name] = password
        return name

    def expire_access_tokens(self, user: str | None = None) -> int:
        """Make every access token (or `user`'s) expired, server side; return how many."""
        with self._database() as db:
            if user is None:
                changed = db.execute("UPDATE oauth2_provider_accesstoken SET expires = ?", (_PAST,))
            else:
                changed = db.execute(
                    "UPDATE oauth2_provider_accesstoken SET expires = ? WHERE user_id = ?",
                    (_PAST, self._user_id(db, user)),
                )
            return changed.rowcount

    def revoke_grant(self, user: str) -> None:
        """Withdraw `user`'s consent: revoke their refresh tokens, delete access and ID tokens.

        What the toolkit's own revocation does, for every grant of the user at once.
        """
        with self._database() as db:
            user_id = self._user_id(db, user)
            db.execute(
                "UPDATE oauth2_provider_refreshtoken SET revoked = ?, updated = ?"
                " WHERE user_id = ? AND revoked IS NULL",
                (_now(), _now(), user_id),
            )
            db.execute(
                "UPDATE oauth2_provider_refreshtoken SET access_token_id = NULL WHERE access_token_id IN"
                " (SELECT id FROM oauth2_provider_accesstoken WHERE user_id = ?)",
                (user_id,),
            )
            db.execute("DELETE FROM oauth2_provider_accesstoken WHERE user_id = ?", (user_id,))
            db.execute("DELETE FROM oauth2_provider_idtoken WHERE user_id = ?", (user_id,))
            db.execute("DELETE FROM oauth2_provider_grant WHERE user_id = ?", (user_id,))

    def count_refreshes(self, user: str) -> int:
        """Return how many times `user`'s refresh tokens were redeemed (all their grants).

        Every grant starts a token family with one refresh token; each refresh (rotation is
        on) adds one to the family, and a used one is kept, revoked.
        """
        with self._database() as db:
            (count,) = db.execute(
                "SELECT COUNT(*) - COUNT(DISTINCT token_family) FROM oauth2_provider_refreshtoken"
                " WHERE user_id = ?",
                (self._user_id(db, user),),
            ).fetchone()
            return int(count)

    def log_text(self) -> str:
        """Return the server's log: its request lines and the toolkit's messages."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    @contextmanager
    def _database(self) -> Iterator[sqlite3.Connection]:
        """One write transaction on the server's database (the server waits for it, and it for
        the server: SQLite in WAL mode, with a busy timeout on both sides)."""
        db = sqlite3.connect(self.database, timeout=20, isolation_level=None)
        try:
            db.execute("PRAGMA foreign_keys = ON")
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        finally:
            db.close()

    @staticmethod
    def _user_id(db: sqlite3.Connection, user: str) -> int:
        row = db.execute("SELECT id FROM auth_user WHERE username = ?", (user,)).fetchone()
        assert row is not None, f"no user {user} on the authorization server"
        return int(row[0])


# Django keeps datetimes in SQLite as UTC text of this form.
_PAST = "2000-01-01 00:00:00.000000"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def _template_database() -> Path:
    """Return the migrated and seeded database for this code, building it once per version.

    Keyed by the toolkit's and Django's versions and this server's settings and seed, so a
    change to any of them builds a new one; concurrent workers may both build, the file is
    put in place atomically.
    """
    key = hashlib.sha256()
    for package in ("django-oauth-toolkit", "django"):
        key.update(f"{package}={importlib.metadata.version(package)};".encode())
    for name in ("settings.py", "prepare.py"):
        key.update((HERE / name).read_bytes())
    directory = Path(django_settings.TEST_SHARED_VAR_DIR) / "oauth-server"
    template = directory / f"template-{key.hexdigest()[:16]}.sqlite3"
    if template.exists():
        return template
    directory.mkdir(parents=True, exist_ok=True)
    building = directory / f"building-{os.getpid()}.sqlite3"
    result = subprocess.run(
        [sys.executable, "-m", "tests.oauth_server.prepare"],
        cwd=REPOSITORY,
        env=_environment(building),
        capture_output=True,
        text=True,
        timeout=120,
    )
    if result.returncode != 0:
        building.unlink(missing_ok=True)
        pytest.fail(f"the authorization server's database was not prepared:\n{result.stderr[-3000:]}")
    os.replace(building, template)
    for stale in directory.glob("template-*.sqlite3"):
        if stale != template:
            stale.unlink(missing_ok=True)
    return template


def _environment(database: Path, key_file: Path | None = None) -> dict[str, str]:
    environment = dict(os.environ)
    environment.update(
        DJANGO_SETTINGS_MODULE=SETTINGS_MODULE,
        MF_OAUTH_SERVER_DB=str(database),
        PYTHONPATH=str(REPOSITORY),
    )
    environment.pop("MF_OAUTH_SERVER_KEY_FILE", None)
    if key_file is not None:
        environment["MF_OAUTH_SERVER_KEY_FILE"] = str(key_file)
    return environment


def _write_signing_key(path: Path) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:  # noqa: S310 (a loopback URL)
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _start(root: Path) -> tuple[OAuthServer, subprocess.Popen[bytes]]:
    """Copy the template database, write a signing key and run the server; retry on a taken port."""
    started = time.monotonic()
    database, key_file, log_path = root / "server.sqlite3", root / "oidc.key", root / "server.log"
    shutil.copyfile(_template_database(), database)
    _write_signing_key(key_file)
    for attempt in range(3):
        port = free_port(HOST)
        with log_path.open("ab") as log:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "django",
                    "runserver",
                    "--noreload",
                    "--skip-checks",
                    f"{HOST}:{port}",
                ],
                cwd=REPOSITORY,
                env=_environment(database, key_file),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent,  # the session is single-threaded here
            )
        server = OAuthServer(
            issuer=f"http://{HOST}:{port}/o",
            root=root,
            database=database,
            log_path=log_path,
            users=dict(prepare.USERS),
            client_id=prepare.DELEGATED_CLIENT[0],
            client_secret=prepare.DELEGATED_CLIENT[1],
            app_client_id=prepare.APP_ONLY_CLIENT[0],
            app_client_secret=prepare.APP_ONLY_CLIENT[1],
            dovecot_client_id=prepare.RESOURCE_SERVER_CLIENT[0],
            dovecot_client_secret=prepare.RESOURCE_SERVER_CLIENT[1],
        )
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while process.poll() is None and time.monotonic() < deadline:
            if _answers(server.openid_configuration_url):
                server.startup_seconds = time.monotonic() - started
                return server, process
            time.sleep(0.05)
        stop_process(process)
        if "port is already in use" in server.log_text() and attempt < 2:
            continue
        pytest.fail(
            f"the authorization server did not answer at {server.issuer}:\n{server.log_text()[-3000:]}",
            pytrace=False,
        )
    raise AssertionError("unreachable")


@pytest.fixture(scope="session")
def oauth_server() -> Iterator[OAuthServer]:
    """Start the session's authorization server (django-oauth-toolkit, its own process)."""
    root = Path(tempfile.mkdtemp(prefix="mf-oauth-"))
    try:
        server, process = _start(root)
        try:
            yield server
        finally:
            stop_process(process)
    finally:
        shutil.rmtree(root, ignore_errors=True)
