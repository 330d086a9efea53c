"""A private Dovecot whose logins are OAuth 2.0 tokens, checked with the session's authorization server.

Its fixture, `oauth_dovecot` (one per session, so per xdist worker, started only when a test
asks for it), is registered for the whole suite by tests/conftest.py and starts
`oauth_server` too. Every token is introspected (RFC 7662) at every AUTHENTICATE, with no
auth cache, so an expired or revoked token is refused at once; an IMAP session already open
survives its token (Dovecot checks tokens only when logging in): `kick` ends it.

Three passdbs, in order:
  * app-only: a client-credentials token of a client named `<name>@<domain>` opens every
    mailbox of `<domain>` (username_attribute = client_id, username_format = %Ld);
  * delegated: a user's token opens that user's mailbox (username_attribute = username);
  * the seeding master user, password over PLAIN/LOGIN only, for `append` and
    `message_count`: it logs in as `<user>*<master>`.
Dovecot's log (`log_text()`) never holds a token: auth_debug is off.
"""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from imapclient import IMAPClient

from tests.dovecot import DOVECOT_BINARY, STARTUP_TIMEOUT, run_dovecot, stop_process, wait_for_greeting
from tests.oauth_server.fixtures import OAuthServer
from tests.support import free_port

HOST = "127.0.0.1"
MASTER_SEPARATOR = "*"


@dataclass
class OAuthDovecot:
    """Where the OAuth Dovecot listens (plain IMAP, loopback, no TLS) and how to seed it."""

    host: str
    port: int
    root: Path
    log_path: Path
    master_user: str
    master_password: str
    version: str
    startup_seconds: float = field(default=0.0)

    @property
    def config_path(self) -> Path:
        return self.root / "dovecot.conf"

    @contextmanager
    def seeding_client(self, user: str) -> Iterator[IMAPClient]:
        """Yield a client logged in to `user`'s mailbox as the master user (password, PLAIN)."""
        client = IMAPClient(self.host, port=self.port, ssl=False, timeout=30)
        try:
            client.login(f"{user}{MASTER_SEPARATOR}{self.master_user}", self.master_password)
            yield client
        finally:
            try:
                client.logout()
            except Exception:  # noqa: S110 (already gone: kicked, or the test closed it)
                pass

    def append(self, user: str, message: bytes, folder: str = "INBOX", flags: tuple[str, ...] = ()) -> None:
        """Put one raw message into `user`'s `folder` (created if missing)."""
        with self.seeding_client(user) as client:
            if not client.folder_exists(folder):
                client.create_folder(folder)
            client.append(folder, message, flags=flags)

    def message_count(self, user: str, folder: str = "INBOX") -> int:
        """Return how many messages `user`'s `folder` holds."""
        with self.seeding_client(user) as client:
            return int(client.folder_status(folder, [b"MESSAGES"])[b"MESSAGES"])

    def kick(self, user: str) -> None:
        """Drop every open IMAP session of `user`, as a provider does when a token expires."""
        subprocess.run(
            ["doveadm", "-c", str(self.config_path), "kick", user],
            check=True,
            capture_output=True,
            timeout=30,
        )

    def log_text(self) -> str:
        """Return Dovecot's log."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def _oauth2_settings(server: OAuthServer, *, app_only: bool) -> str:
    """Return an oauth2 passdb's settings file: introspect every token, by POST."""
    # `post` sends the token in the body with the resource server's own credentials (in the
    # URL); the default sends it as a bearer header, which the toolkit reads as the caller's.
    url = server.introspection_url.replace(
        "http://", f"http://{server.dovecot_client_id}:{server.dovecot_client_secret}@", 1
    )
    who = (
        "username_attribute = client_id\nusername_format = %Ld"
        if app_only
        else "username_attribute = username"
    )
    return f"""introspection_mode = post
introspection_url = {url}
force_introspection = yes
{who}
active_attribute = active
active_value = true
scope = imap
timeout_msecs = 5000
"""


def _config(root: Path, port: int, uid: int, gid: int) -> str:
    """Return dovecot.conf (2.3 syntax) for a server living entirely under `root`."""
    if os.geteuid() == 0:
        users = "default_internal_user = dovecot\ndefault_internal_group = dovecot\n"
        users += "default_login_user = dovenull\n"
        chroot = ""
    else:
        me, group = pwd.getpwuid(uid).pw_name, grp.getgrgid(gid).gr_name
        users = f"default_internal_user = {me}\ndefault_internal_group = {group}\n"
        users += f"default_login_user = {me}\n"
        chroot = "  chroot =\n"  # chroot() needs root
    return f"""# Generated by tests/oauth_dovecot.py for one test session.
base_dir = {root}/run
state_dir = {root}/state
instance_name = mailfathom-oauth-test-{os.getpid()}
log_path = {root}/dovecot.log
protocols = imap
listen = {HOST}
{users}first_valid_uid = 1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = xoauth2 oauthbearer plain login
auth_failure_delay = 0
auth_verbose = yes
# Never on: auth_debug writes tokens into the log.
auth_debug = no
auth_verbose_passwords = no
# No cache: a cached token would keep working after it is revoked.
auth_cache_size = 0
auth_master_user_separator = {MASTER_SEPARATOR}
log_timestamp = "%H:%M:%S.%{{usecs}} "
passdb {{
  driver = passwd-file
  master = yes
  mechanisms = plain login
  args = scheme=PLAIN {root}/masters
}}
passdb {{
  driver = oauth2
  mechanisms = xoauth2 oauthbearer
  args = {root}/oauth2-app-only.conf.ext
}}
passdb {{
  driver = oauth2
  mechanisms = xoauth2 oauthbearer
  args = {root}/oauth2-delegated.conf.ext
}}
userdb {{
  driver = static
  args = uid={uid} gid={gid} home={root}/mail/%Lu allow_all_users=yes
}}
mail_location = maildir:~/Maildir
namespace inbox {{
  inbox = yes
  separator = /
}}
service imap-login {{
{chroot}  inet_listener imap {{
    address = {HOST}
    port = {port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
# No auth penalty: a refused login does not slow the next one from 127.0.0.1 (tests/dovecot.py).
service anvil {{
{chroot}  unix_listener anvil-auth-penalty {{
    mode = 0
  }}
}}
"""


def _start(root: Path, server: OAuthServer, version: str) -> tuple[OAuthDovecot, subprocess.Popen[bytes]]:
    """Write the config and start Dovecot under `root`; retry with a fresh port if one was taken."""
    started = time.monotonic()
    for directory in ("run", "state", "mail"):
        (root / directory).mkdir()
    if os.geteuid() == 0:
        uid, gid = pwd.getpwnam("nobody").pw_uid, grp.getgrnam("nogroup").gr_gid
    else:
        uid, gid = os.getuid(), os.getgid()
    os.chown(root / "mail", uid, gid)
    master = ("seeder", "seeder-secret")
    (root / "masters").write_text(f"{master[0]}:{{PLAIN}}{master[1]}\n")
    for name, app_only in (("app-only", True), ("delegated", False)):
        (root / f"oauth2-{name}.conf.ext").write_text(_oauth2_settings(server, app_only=app_only))
    config = root / "dovecot.conf"
    for attempt in range(3):
        port = free_port(HOST)
        config.write_text(_config(root, port, uid, gid))
        process = run_dovecot(config)
        dovecot = OAuthDovecot(
            host=HOST,
            port=port,
            root=root,
            log_path=root / "dovecot.log",
            master_user=master[0],
            master_password=master[1],
            version=version,
        )
        try:
            wait_for_greeting(HOST, port, process, time.monotonic() + STARTUP_TIMEOUT)
        except RuntimeError as error:
            stop_process(process)
            output_text = (root / "stdout.log").read_text(errors="replace")
            if "Address already in use" in output_text + dovecot.log_text() and attempt < 2:
                continue
            pytest.fail(
                f"Dovecot {version} did not start: {error}\n{output_text}\n{dovecot.log_text()[-3000:]}",
                pytrace=False,
            )
        dovecot.startup_seconds = time.monotonic() - started
        return dovecot, process
    raise AssertionError("unreachable")


@pytest.fixture(scope="session")
def oauth_dovecot(oauth_server: OAuthServer) -> Iterator[OAuthDovecot]:
    """Start the session's OAuth Dovecot; fail (never skip) when Dovecot 2.3 is not installed."""
    if not os.access(DOVECOT_BINARY, os.X_OK):
        pytest.fail(
            f"Dovecot is not installed ({DOVECOT_BINARY} is missing): run `.ci/install-services` "
            "(as root) once, then run the tests again.",
            pytrace=False,
        )
    version = subprocess.run(
        [DOVECOT_BINARY, "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()
    if not version.startswith("2.3."):
        pytest.fail(f"tests/oauth_dovecot.py writes Dovecot 2.3 configuration, but found {version}")
    root = Path(tempfile.mkdtemp(prefix="mf-oauthdv-"))  # short: unix socket paths are limited
    root.chmod(0o755)  # the mail user (nobody) must reach its home below it
    try:
        dovecot, process = _start(root, oauth_server, version)
        try:
            yield dovecot
        finally:
            stop_process(process)
    finally:
        shutil.rmtree(root, ignore_errors=True)
