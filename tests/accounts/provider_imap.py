"""A scripted IMAP server that greets and refuses like Microsoft's or Google's, for tests.

Real TCP on a loopback port, one thread per connection, so MailFathom's own IMAP code
(accounts.services.imap, the synchronization engine, the connection test) talks to it
exactly as to a provider. Each test scripts what the server answers to LOGIN,
AUTHENTICATE and, after an accepted sign-in, to any command or to FETCH, in the
providers' exact wordings (PROVIDERS below; docs/operations/mailbox-providers.md). It
logs nothing and keeps nothing beyond one test: what it was sent is kept on the server
object (`commands`, `tokens`) for that test to inspect.
"""

from __future__ import annotations

import base64
import contextlib
import socketserver
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Provider:
    greeting: str
    capability: str


MICROSOFT = Provider(
    greeting="* OK The Microsoft Exchange IMAP4 service is ready.",
    capability=(
        "* CAPABILITY IMAP4 IMAP4rev1 AUTH=PLAIN AUTH=XOAUTH2 SASL-IR UIDPLUS MOVE ID UNSELECT "
        "CHILDREN IDLE NAMESPACE LITERAL+"
    ),
)
GOOGLE = Provider(
    greeting="* OK Gimap ready for requests",
    capability=(
        "* CAPABILITY IMAP4rev1 UNSELECT IDLE NAMESPACE QUOTA ID XLIST CHILDREN X-GM-EXT-1 XYZZY "
        "SASL-IR AUTH=XOAUTH2 AUTH=PLAIN AUTH=PLAIN-CLIENTTOKEN AUTH=OAUTHBEARER AUTH=XOAUTH"
    ),
)

# Lines are sent as written, "{tag}" replaced by the command's tag; an answer with a
# "* BYE" line ends the connection once sent, as the providers do.
ACCEPTED = ["{tag} OK AUTHENTICATE completed."]


@dataclass
class Script:
    """What the server answers; None: the default (accept, or answer as a small mailbox)."""

    provider: Provider
    login: list[str] | None = None  # LOGIN; default: accepted
    authenticate: list[str] | None = None  # AUTHENTICATE, every attempt; default: accepted
    after_sign_in: list[str] | None = None  # any command but CAPABILITY, NOOP, LOGOUT
    fetch: list[str] | None = None  # UID FETCH; default: BAD (this server holds no message bodies)
    uids: tuple[int, ...] = (1, 2, 3)  # what EXAMINE/SELECT and UID SEARCH report


@dataclass
class ProviderIMAP:
    """A running scripted server; `commands` and `tokens` are what it was sent, in order."""

    script: Script
    host: str = "127.0.0.1"
    port: int = 0
    commands: list[str] = field(default_factory=list)  # verbs only: no user name or secret
    tokens: list[str] = field(default_factory=list)  # bearer tokens AUTHENTICATE presented
    _server: socketserver.ThreadingTCPServer | None = None


def _bearer(payload: bytes) -> str:
    """The token of an XOAUTH2 or OAUTHBEARER initial response ("" when there is none)."""
    try:
        decoded = base64.b64decode(payload.strip()).decode("utf-8", "replace")
    except ValueError:
        return ""
    for part in decoded.split("\x01"):
        if part.startswith("auth=Bearer "):
            return part.removeprefix("auth=Bearer ")
    return ""


class _Session(socketserver.StreamRequestHandler):
    server: _Server

    def send(self, lines: list[str], tag: str) -> bool:
        """Send `lines`; False when one was a BYE (the connection is to end)."""
        for line in lines:
            self.wfile.write(line.format(tag=tag).encode() + b"\r\n")
        self.wfile.flush()
        return not any(line.startswith("* BYE") for line in lines)

    def handle(self) -> None:
        state = self.server.state
        script = state.script
        signed_in = False
        if not self.send([script.provider.greeting], ""):
            return
        while True:
            line = self.rfile.readline()
            if not line:
                return
            parts = line.decode("utf-8", "replace").rstrip("\r\n").split(" ")
            if len(parts) < 2:
                continue
            tag, verb = parts[0], parts[1].upper()
            if verb == "UID" and len(parts) > 2:
                verb = f"UID {parts[2].upper()}"
            state.commands.append(verb)
            if verb == "CAPABILITY":
                lines = [script.provider.capability, "{tag} OK CAPABILITY completed."]
            elif verb == "NOOP":
                lines = ["{tag} OK NOOP completed."]
            elif verb == "LOGOUT":
                self.send(["* BYE Logging out", "{tag} OK LOGOUT completed."], tag)
                return
            elif verb == "LOGIN":
                lines = script.login or ["{tag} OK LOGIN completed."]
                signed_in = script.login is None
            elif verb == "AUTHENTICATE":
                self.send(["+ "], tag)
                state.tokens.append(_bearer(self.rfile.readline()))
                lines = script.authenticate or ACCEPTED
                signed_in = script.authenticate is None
            elif not signed_in:
                lines = ["{tag} BAD Command received in Invalid state."]
            elif script.after_sign_in is not None:
                lines = script.after_sign_in
            else:
                lines = self.mailbox_answer(verb)
            if not self.send(lines, tag):
                return

    def mailbox_answer(self, verb: str) -> list[str]:
        script = self.server.state.script
        if verb in {"EXAMINE", "SELECT"}:
            return [
                "* FLAGS (\\Seen \\Answered \\Flagged \\Deleted \\Draft)",
                f"* {len(script.uids)} EXISTS",
                "* 0 RECENT",
                "* OK [UIDVALIDITY 14] UIDVALIDITY value",
                f"* OK [UIDNEXT {max(script.uids, default=0) + 1}] The next unique identifier value",
                "{tag} OK [READ-ONLY] EXAMINE completed.",
            ]
        if verb == "UID SEARCH":
            return ["* SEARCH " + " ".join(str(uid) for uid in script.uids), "{tag} OK SEARCH completed."]
        if verb == "UID FETCH" and script.fetch is not None:
            return script.fetch
        if verb == "LIST":
            return ['* LIST (\\HasNoChildren) "/" INBOX', "{tag} OK LIST completed."]
        return ["{tag} BAD Command Error. 12"]


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    state: ProviderIMAP

    def handle_error(self, request: object, client_address: object) -> None:
        """Stay silent: a client that hangs up mid-line is what several tests do on purpose."""


@contextlib.contextmanager
def provider_imap(script: Script) -> Iterator[ProviderIMAP]:
    """Serve `script` on a free loopback port until the block ends, then stop every thread."""
    state = ProviderIMAP(script)
    server = _Server(("127.0.0.1", 0), _Session)
    server.state = state
    state.port = server.server_address[1]
    state._server = server
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
