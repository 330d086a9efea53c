"""A proxy in front of the real Dovecot that cuts a session around its APPEND, or hides UIDPLUS.

`cut_append_at`:
  * "continuation": reset the connection instead of passing on the server's "+" that
    invites the message literal, so the server never receives the message;
  * "answer": reset it instead of passing on the tagged answer to the APPEND, so the
    server stored the message but the client never learns it did.
`cut_before_command` (such as b"STORE"): reset the connection instead of passing on the
first client command naming it, so the server never receives that command.
Only the first such point through the proxy is cut; later sessions pass untouched.
`hide_capabilities` removes those words from every server line (CAPABILITY responses and
response codes), so MailFathom sees a server without, say, UIDPLUS.
"""

from __future__ import annotations

import contextlib
import re
import select
import socket

from tests.mailbox.fault_proxy import CuttingProxy

_RESET = b"\x01\x00\x00\x00\x00\x00\x00\x00"  # SO_LINGER on, 0 s: close sends RST
_TAGGED = re.compile(rb"(?:^|\r\n)[A-Za-z0-9.]+ (?:OK|NO|BAD)\b")


class AppendCuttingProxy(CuttingProxy):
    def __init__(
        self,
        target_host: str,
        target_port: int,
        *,
        cut_append_at: str | None = None,
        cut_before_command: bytes | None = None,
        hide_capabilities: tuple[bytes, ...] = (),
    ) -> None:
        if cut_append_at not in (None, "continuation", "answer"):
            raise ValueError("cut_append_at is None, 'continuation' or 'answer'")
        self.cut_append_at = cut_append_at
        self.cut_before_command = cut_before_command
        self.hide_capabilities = hide_capabilities
        self.sessions = 0
        self.appends_seen = 0
        super().__init__(target_host, target_port)

    def _hidden(self, data: bytes) -> bytes:
        for word in self.hide_capabilities:
            data = data.replace(b" " + word, b"")
        return data

    def _pipe(self, client: socket.socket, cut_after: int | None) -> None:
        server = socket.create_connection(self.target, timeout=30)
        self._live.add(client)
        self.sessions += 1
        armed = False
        try:
            while True:
                readable, _, _ = select.select([client, server], [], [], 30)
                if not readable:
                    return
                if client in readable:
                    data = client.recv(65536)
                    if not data:
                        return
                    if self._cut_first(data):
                        self.cuts += 1
                        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
                        return
                    if b" APPEND " in data.upper():
                        self.appends_seen += 1
                        armed = self.cut_append_at is not None and self.cuts == 0
                    server.sendall(data)
                if server in readable:
                    data = server.recv(65536)
                    if not data:
                        return
                    if armed and self._cut_here(data):
                        self.cuts += 1
                        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
                        return
                    client.sendall(self._hidden(data))
        except OSError:
            return
        finally:
            self._live.discard(client)
            for sock in (client, server):
                with contextlib.suppress(OSError):
                    sock.close()

    def _cut_first(self, data: bytes) -> bool:
        command = self.cut_before_command
        return command is not None and self.cuts == 0 and b" " + command.upper() + b" " in data.upper()

    def _cut_here(self, data: bytes) -> bool:
        if self.cut_append_at == "continuation":
            return data.startswith(b"+")
        return not data.startswith(b"+") and bool(_TAGGED.search(data))
