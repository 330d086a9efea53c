"""A loopback TCP proxy that cuts a connection after a chosen number of server bytes.

Stands between MailFathom and the real Dovecot so a test can drop the connection at any
point of a session (mid-FETCH included) and watch what the next run does about it.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading

_ABORT = b"\x01\x00\x00\x00\x00\x00\x00\x00"  # SO_LINGER on, 0 s: close sends RST


class CuttingProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.cut_after: int | None = None  # server->client bytes before the cut; None: never
        self.last_session_bytes = 0
        self.cuts = 0
        self._closed = threading.Event()
        self._live: set[socket.socket] = set()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def cut_now(self) -> None:
        """Reset every open connection at once, as a network path dropping would."""
        for client in list(self._live):
            with contextlib.suppress(OSError):
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _ABORT)
                client.shutdown(socket.SHUT_RDWR)
                client.close()
        self.cuts += 1

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            self.listener.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._pipe, args=(client, self.cut_after), daemon=True).start()

    def _pipe(self, client: socket.socket, cut_after: int | None) -> None:
        server = socket.create_connection(self.target, timeout=30)
        self._live.add(client)
        sent = 0
        try:
            while True:
                readable, _, _ = select.select([client, server], [], [], 30)
                if not readable:
                    return
                if client in readable:
                    data = client.recv(65536)
                    if not data:
                        return
                    server.sendall(data)
                if server in readable:
                    data = server.recv(65536)
                    if not data:
                        return
                    if cut_after is not None and sent + len(data) >= cut_after:
                        client.sendall(data[: max(cut_after - sent, 0)])
                        self.cuts += 1
                        # An abortive close (RST), as a dropped network path looks to the client.
                        client.setsockopt(
                            socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
                        )
                        return
                    client.sendall(data)
                    sent += len(data)
        except OSError:
            return
        finally:
            self._live.discard(client)
            self.last_session_bytes = sent
            for sock in (client, server):
                with contextlib.suppress(OSError):
                    sock.close()
