"""A TCP relay in front of a test's PostgreSQL that loses one answer on purpose: the statement
reaches the server and commits, and the connection is cut before the client reads the reply. That
is what a failover or a network cut does to a call in flight; the relay makes it happen at a
chosen statement, without timing."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

READY_FOR_QUERY = b"Z\x00\x00\x00\x05"
"""The start of the server's ReadyForQuery message: the statement before it has ended (and, in
autocommit, committed); the status byte follows."""


@dataclass
class AnswerCutter:
    """Relays 127.0.0.1:`port` to the server's unix socket; `cut_answer_to(text)` arms it."""

    server_socket: str
    port: int = 0
    cuts: int = 0
    """Answers lost so far."""
    requests: list[bytes] = field(default_factory=list)
    """What the clients sent, chunk by chunk."""
    _armed: bytes | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _listener: socket.socket | None = None
    _open: list[socket.socket] = field(default_factory=list)

    def conninfo(self, dbname: str, user: str) -> str:
        """A DSN through the relay (open it with prepare_threshold=None, so that every call carries
        its statement's text)."""
        return f"host=127.0.0.1 port={self.port} dbname={dbname} user={user} sslmode=disable"

    def cut_answer_to(self, text: str) -> None:
        """The next statement (on any connection) whose text contains `text` runs, and its
        answer is lost: the connection is closed once the server has answered."""
        with self._lock:
            self._armed = text.encode()

    def sent(self, text: str) -> int:
        """How many chunks the clients sent contain `text`."""
        with self._lock:
            return sum(text.encode() in chunk for chunk in self.requests)

    def start(self) -> None:
        listener = socket.create_server(("127.0.0.1", 0))
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, daemon=True, name="answer-cutter").start()

    def stop(self) -> None:
        if self._listener is not None:
            self._listener.close()
        with self._lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.close()

    def _accept(self) -> None:
        assert self._listener is not None
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.connect(self.server_socket)
            with self._lock:
                self._open += [client, server]
            cutting = threading.Event()
            threading.Thread(
                target=self._requests, args=(client, server, cutting), daemon=True
            ).start()
            threading.Thread(
                target=self._answers, args=(server, client, cutting), daemon=True
            ).start()

    def _requests(
        self, client: socket.socket, server: socket.socket, cutting: threading.Event
    ) -> None:
        """Client to server, unchanged; a chunk with the armed text marks its answer for cutting."""
        with contextlib.suppress(OSError):
            while chunk := client.recv(65536):
                with self._lock:
                    self.requests.append(chunk)
                    if self._armed is not None and self._armed in chunk:
                        self._armed = None
                        cutting.set()
                server.sendall(chunk)
        _close(client, server)

    def _answers(
        self, server: socket.socket, client: socket.socket, cutting: threading.Event
    ) -> None:
        """Server to client, unchanged, except the answer marked for cutting: read to its end
        (the statement ended on the server), then both sides closed instead of passing it on."""
        held = b""
        with contextlib.suppress(OSError):
            while chunk := server.recv(65536):
                if not cutting.is_set():
                    client.sendall(chunk)
                    continue
                held += chunk
                at = held.find(READY_FOR_QUERY)
                if at >= 0 and len(held) > at + len(READY_FOR_QUERY):
                    with self._lock:
                        self.cuts += 1
                    break
        _close(client, server)


def _close(*sockets: socket.socket) -> None:
    for sock in sockets:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            sock.close()


@contextlib.contextmanager
def answer_cutter(socket_dir: str, port: int) -> Iterator[AnswerCutter]:
    """A relay to the server listening on `socket_dir` and `port`, for the block."""
    cutter = AnswerCutter(f"{socket_dir}/.s.PGSQL.{port}")
    cutter.start()
    try:
        yield cutter
    finally:
        cutter.stop()
