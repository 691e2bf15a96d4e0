"""A TCP relay in front of PostgreSQL that counts round trips: the ReadyForQuery messages the server
sends (one per simple query, or per Sync of the extended protocol: one per call of an autocommit
client), each connection's stream read message by message. For bench/delivery.py's count of what a
worker's cycle costs; connect to it with sslmode=disable gssencmode=disable (the startup's one-byte
answers to those requests are not messages)."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Iterator


class RoundTrips:
    """Relays 127.0.0.1:`port` to 127.0.0.1:`server_port`; `count` is the ReadyForQuery messages so
    far, over every connection."""

    def __init__(self, server_port: int) -> None:
        self.server_port = server_port
        self.count = 0
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True, name="round-trips").start()

    def conninfo(self, dbname: str, user: str) -> str:
        return (
            f"host=127.0.0.1 port={self.port} dbname={dbname} user={user}"
            " sslmode=disable gssencmode=disable"
        )

    def close(self) -> None:
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.server_port))
            threading.Thread(target=_pipe, args=(client, server), daemon=True).start()
            threading.Thread(target=self._answers, args=(server, client), daemon=True).start()

    def _answers(self, server: socket.socket, client: socket.socket) -> None:
        """Server to client, unchanged, counting each ReadyForQuery ('Z') as it passes."""
        buffered = b""
        with contextlib.suppress(OSError):
            while chunk := server.recv(65536):
                client.sendall(chunk)
                buffered += chunk
                while len(buffered) >= 5:  # a type byte, then the length, itself included
                    (length,) = struct.unpack("!I", buffered[1:5])
                    if len(buffered) < 1 + length:
                        break
                    if buffered[:1] == b"Z":
                        with self._lock:
                            self.count += 1
                    buffered = buffered[1 + length :]
        _close(client, server)


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    _close(source, sink)


def _close(*sockets: socket.socket) -> None:
    for sock in sockets:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


@contextlib.contextmanager
def round_trips(server_port: int) -> Iterator[RoundTrips]:
    relay = RoundTrips(server_port)
    try:
        yield relay
    finally:
        relay.close()
