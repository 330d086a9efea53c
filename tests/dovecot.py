"""A real Dovecot IMAP server for the test session, started from a private config.

Its fixture, `dovecot` (one server per session, so per xdist worker), is registered for the
whole suite by tests/conftest.py; a test asks for it as the `dovecot` argument.
Nothing system-wide is touched: config, certificates, sockets (base_dir), state, logs and
mail all live in one temporary directory that is removed when the session ends.

Listeners, all on loopback:
  * `host:imap_port`   plain IMAP, STARTTLS offered, password login allowed in clear;
  * `host:imaps_port`  implicit TLS (IMAPS);
  * `plain_only_host:plain_only_port`  plain IMAP with TLS switched off: no STARTTLS, and
    LOGINDISABLED (127.0.0.2 is not "secured" for a client at 127.0.0.1).
The certificate is signed by a throwaway CA generated here; `ca_path` is that CA and
`ssl_context()` returns a client context trusting it (and nothing else).
"""

from __future__ import annotations

import ctypes
import datetime
import grp
import ipaddress
import os
import pwd
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from imapclient.imap_utf7 import encode

from tests.support import free_port

DOVECOT_BINARY = "/usr/sbin/dovecot"
HOST = "127.0.0.1"
PLAIN_ONLY_HOST = "127.0.0.2"  # all of 127/8 is loopback on Linux; a `local` block turns TLS off here
USERS = {"alice": "alice-secret", "bob": "bob-secret"}
# Users handed out one per test (tests/mailbox/imap_support.add_user), so tests sharing this
# server never share a mailbox. Made up front: Dovecot does not reliably notice users
# appended to its passwd-file while it runs.
POOL = {f"pool{n:03d}": f"pool{n:03d}-secret" for n in range(1, 121)}
# Folders that exist in alice's mailbox before the first login, besides the SPECIAL-USE ones
# Dovecot creates itself. Stored on disk in modified UTF-7, as Dovecot's Maildir++ does.
ALICE_EXTRA_FOLDERS = ["Projects/Café"]
STARTUP_TIMEOUT = 15.0


@dataclass
class DovecotServer:
    """Where the session's Dovecot listens, who may log in, and where their mail is."""

    host: str
    imap_port: int
    imaps_port: int
    plain_only_host: str
    plain_only_port: int
    users: dict[str, str]
    root: Path
    ca_path: Path
    cert_path: Path
    log_path: Path
    version: str
    startup_seconds: float = field(default=0.0)

    def maildir(self, user: str) -> Path:
        """Return the Maildir of `user` (it exists once the user has logged in)."""
        return self.root / "mail" / user / "Maildir"

    def ssl_context(self) -> ssl.SSLContext:
        """Return a verifying client context that trusts only this server's test CA."""
        return ssl.create_default_context(cafile=str(self.ca_path))

    def log_tail(self, lines: int = 40) -> str:
        """Return the last lines of Dovecot's log, for failure messages."""
        if not self.log_path.exists():
            return "(no log written)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


def _write_certificates(directory: Path) -> tuple[Path, Path, Path]:
    """Write a throwaway CA and a server certificate for the loopback names; return paths."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "MailFathom test CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.DNSName("localhost")] + [
        x509.IPAddress(ipaddress.ip_address(ip)) for ip in (HOST, PLAIN_ONLY_HOST)
    ]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    ca_path, cert_path, key_path = directory / "ca.pem", directory / "server.pem", directory / "server.key"
    ca_path.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    key_path.chmod(0o600)
    return ca_path, cert_path, key_path


def _mutf7_on_disk(folder: str) -> str:
    """Return the Maildir++ directory name Dovecot uses for `folder` ('/' separated)."""
    return "." + ".".join(encode(part).decode("ascii") for part in folder.split("/"))


def _config(root: Path, ports: tuple[int, int, int], cert: Path, key: Path, uid: int) -> str:
    """Return dovecot.conf (2.3 syntax) for a server living entirely under `root`."""
    imap_port, imaps_port, plain_only_port = ports
    if os.geteuid() == 0:
        # The package's own unprivileged users; mail is accessed as `nobody` (uid 0 is refused).
        users = "default_internal_user = dovecot\ndefault_internal_group = dovecot\n"
        users += "default_login_user = dovenull\n"
        anvil_chroot = login_chroot = ""
    else:
        me, group = pwd.getpwuid(uid).pw_name, grp.getgrgid(os.getgid()).gr_name
        users = f"default_internal_user = {me}\ndefault_internal_group = {group}\n"
        users += f"default_login_user = {me}\n"
        anvil_chroot = login_chroot = "  chroot =\n"  # chroot() needs root
    mailbox = "\n".join(
        f"  mailbox {name} {{\n    special_use = \\{name}\n    auto = create\n  }}"
        for name in ("Sent", "Drafts", "Junk", "Trash", "Archive")
    )
    return f"""# Generated by tests/dovecot.py for one test session.
base_dir = {root}/run
state_dir = {root}/state
instance_name = mailfathom-test-{os.getpid()}
log_path = {root}/dovecot.log
protocols = imap
listen = {HOST}
{users}first_valid_uid = 1
ssl = yes
ssl_cert = <{cert}
ssl_key = <{key}
ssl_min_protocol = TLSv1.2
disable_plaintext_auth = no
auth_mechanisms = plain login
auth_failure_delay = 0
auth_verbose = yes
log_timestamp = "%H:%M:%S.%{{usecs}} "
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%n {root}/users
}}
userdb {{
  driver = passwd-file
  args = username_format=%n {root}/users
}}
mail_location = maildir:~/Maildir
namespace inbox {{
  inbox = yes
  separator = /
{mailbox}
}}
service imap-login {{
{login_chroot}  inet_listener imap {{
    address = {HOST}
    port = {imap_port}
  }}
  inet_listener imaps {{
    address = {HOST}
    port = {imaps_port}
    ssl = yes
  }}
  inet_listener imap_plain_only {{
    address = {PLAIN_ONLY_HOST}
    port = {plain_only_port}
  }}
}}
# No auth penalty: auth cannot reach anvil's penalty socket, so a refused login does not
# slow the next login from 127.0.0.1 by 4 seconds (2.3 sends no "no-penalty" for trusted IPs).
service anvil {{
{anvil_chroot}  unix_listener anvil-auth-penalty {{
    mode = 0
  }}
}}
local {PLAIN_ONLY_HOST} {{
  ssl = no
  disable_plaintext_auth = yes
}}
"""


def die_with_parent() -> None:
    """In the child: ask Linux to SIGTERM Dovecot if the test process dies without teardown."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def run_dovecot(config: Path) -> subprocess.Popen[bytes]:
    """Start Dovecot in the foreground on `config`; what it prints goes to stdout.log beside it."""
    with (config.parent / "stdout.log").open("wb") as output:
        return subprocess.Popen(
            [DOVECOT_BINARY, "-F", "-c", str(config)],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,  # the session is single-threaded here
        )


def wait_for_greeting(
    host: str,
    port: int,
    process: subprocess.Popen[bytes],
    deadline: float,
    context: ssl.SSLContext | None = None,
) -> None:
    """Return once an IMAP greeting is read from host:port (through TLS when `context`)."""
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"dovecot exited with status {process.returncode}")
        try:
            with socket.create_connection((host, port), timeout=1.0) as raw:
                sock = context.wrap_socket(raw, server_hostname=host) if context else raw
                if sock.recv(64).startswith(b"* OK"):
                    return
        except OSError:  # includes ssl.SSLError and timeouts: not up yet
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"dovecot did not greet on {host}:{port} within {STARTUP_TIMEOUT:.0f}s")
        time.sleep(0.05)


def _prepare(root: Path) -> tuple[Path, Path, Path, int]:
    """Write certificates, the passwd-file and the users' homes; return paths and mail uid."""
    for directory in ("run", "state", "mail"):
        (root / directory).mkdir()
    ca_path, cert_path, key_path = _write_certificates(root)
    if os.geteuid() == 0:
        uid, gid = pwd.getpwnam("nobody").pw_uid, grp.getgrnam("nogroup").gr_gid
    else:
        uid, gid = os.getuid(), os.getgid()
    everyone = {**USERS, **POOL}
    lines = [
        f"{user}:{{PLAIN}}{secret}:{uid}:{gid}::{root}/mail/{user}::" for user, secret in everyone.items()
    ]
    (root / "users").write_text("\n".join(lines) + "\n")
    for user in everyone:
        home = root / "mail" / user
        for folder in ALICE_EXTRA_FOLDERS if user == "alice" else []:
            for sub in ("cur", "new", "tmp"):
                (home / "Maildir" / _mutf7_on_disk(folder) / sub).mkdir(parents=True, exist_ok=True)
        home.mkdir(exist_ok=True)
        for path in [home, *home.rglob("*")]:
            os.chown(path, uid, gid)
    return ca_path, cert_path, key_path, uid


def _start(root: Path, version: str) -> tuple[DovecotServer, subprocess.Popen[bytes]]:
    """Start Dovecot under `root`; retry with fresh ports if one was taken meanwhile."""
    started = time.monotonic()
    ca_path, cert_path, key_path, uid = _prepare(root)
    config = root / "dovecot.conf"
    for attempt in range(3):
        ports = (free_port(HOST), free_port(HOST), free_port(PLAIN_ONLY_HOST))
        config.write_text(_config(root, ports, cert_path, key_path, uid))
        process = run_dovecot(config)
        server = DovecotServer(
            host=HOST,
            imap_port=ports[0],
            imaps_port=ports[1],
            plain_only_host=PLAIN_ONLY_HOST,
            plain_only_port=ports[2],
            users=dict(USERS),
            root=root,
            ca_path=ca_path,
            cert_path=cert_path,
            log_path=root / "dovecot.log",
            version=version,
        )
        deadline = time.monotonic() + STARTUP_TIMEOUT
        try:
            wait_for_greeting(HOST, ports[0], process, deadline)
            wait_for_greeting(HOST, ports[1], process, deadline, server.ssl_context())
            wait_for_greeting(PLAIN_ONLY_HOST, ports[2], process, deadline)
        except RuntimeError as error:
            stop_process(process)
            output_text = (root / "stdout.log").read_text(errors="replace")
            if "Address already in use" in output_text + server.log_tail() and attempt < 2:
                continue
            raise RuntimeError(
                f"{error}\n--- output ---\n{output_text}\n--- {server.log_path} ---\n{server.log_tail()}"
            ) from None
        server.startup_seconds = time.monotonic() - started
        return server, process
    raise AssertionError("unreachable")


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """Stop a child server: SIGTERM, then SIGKILL if it has not exited within 10 s."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


@contextmanager
def running_dovecot(root: Path) -> Iterator[DovecotServer]:
    """Run a private Dovecot under `root` outside pytest (for scripts such as bench/sync.py).

    `root` must be an existing, empty directory with a short path (unix socket paths are
    limited); it is made world-traversable so the mail user can reach its home below it.
    Every user of USERS and POOL can log in; a Maildir written under `server.maildir(user)`
    (owned like its home) before that user's first login is what the user finds.
    Dovecot is stopped on exit; removing `root` is the caller's. Raises RuntimeError when
    Dovecot is missing, is not 2.3, or does not start.
    """
    if not os.access(DOVECOT_BINARY, os.X_OK):
        raise RuntimeError(f"Dovecot is not installed ({DOVECOT_BINARY} is missing)")
    version = subprocess.run(
        [DOVECOT_BINARY, "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()
    if not version.startswith("2.3."):
        raise RuntimeError(f"tests/dovecot.py writes Dovecot 2.3 configuration, but found {version}")
    root.chmod(0o755)
    server, process = _start(root, version)
    try:
        yield server
    finally:
        stop_process(process)


@pytest.fixture(scope="session", name="dovecot")
def dovecot_server() -> Iterator[DovecotServer]:
    """Start a private Dovecot for the session; fail (never skip) when it is not installed."""
    if not os.access(DOVECOT_BINARY, os.X_OK):
        pytest.fail(
            f"Dovecot is not installed ({DOVECOT_BINARY} is missing). The IMAP tests run against "
            "a real Dovecot: run `.ci/install-services` (as root) once, then run the tests again.",
            pytrace=False,
        )
    version = subprocess.run(
        [DOVECOT_BINARY, "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()
    if not version.startswith("2.3."):
        pytest.fail(
            f"tests/dovecot.py writes Dovecot 2.3 configuration (Debian 12), but {DOVECOT_BINARY} "
            f"is {version}; 2.4 renamed many settings and needs its own configuration here.",
            pytrace=False,
        )
    root = Path(tempfile.mkdtemp(prefix="mf-dovecot-"))  # short: unix socket paths are limited
    root.chmod(0o755)  # the mail user (nobody) must reach its home below it
    try:
        try:
            server, process = _start(root, version)
        except RuntimeError as error:
            pytest.fail(f"Dovecot {version} did not start: {error}", pytrace=False)
        try:
            yield server
        finally:
            stop_process(process)
    finally:
        shutil.rmtree(root, ignore_errors=True)
