"""The agent's loopback ports inside its network namespace, relayed to the runner's unix sockets.

`python -I relay.py --map 127.0.0.1:3128=/run/tireless-net/proxy.sock ... -- COMMAND...` binds
each TCP address (the egress proxy's, each upstream gateway's), relays every connection accepted
there to its unix socket, and runs COMMAND as its child with the same environment and standard
streams; it forwards SIGTERM, SIGINT and SIGHUP to COMMAND and exits with COMMAND's exit status
(128 + the signal when a signal ended it), or 125 when an address cannot be bound. It imports the
standard library only: the runner copies it where the agent's user can read it and runs it with
a Python that user can run (docs/runners.md, "The agent's network")."""

from __future__ import annotations

import argparse
import contextlib
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence

BIND_FAILED = 125
"""The exit status when an address cannot be bound (as env(1) and chroot(1) say they failed)."""

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
CHUNK = 256 * 1024


def mapping(text: str) -> tuple[tuple[str, int], str]:
    """`HOST:PORT=SOCKET` as ((HOST, PORT), SOCKET); ValueError naming the text otherwise."""
    address, equals, path = text.partition("=")
    host, colon, port = address.rpartition(":")
    if not (equals and colon and host and path and port.isdigit() and 0 < int(port) < 65536):
        raise ValueError(f"--map takes HOST:PORT=SOCKET, got {text!r}")
    return (host, int(port)), path


def pump(source: socket.socket, target: socket.socket) -> None:
    """Copy one direction until its end, then end that direction on the other side."""
    with contextlib.suppress(OSError):  # a side went away: the other direction finds out too
        while data := source.recv(CHUNK):
            target.sendall(data)
    with contextlib.suppress(OSError):
        target.shutdown(socket.SHUT_WR)


def relay(client: socket.socket, path: str) -> None:
    """One accepted connection, relayed both ways to the unix socket at `path`."""
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # small answers go out at once
    with client, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        try:
            server.connect(path)
        except OSError as error:
            print(f"relay: cannot reach {path}: {error}", file=sys.stderr, flush=True)
            return
        back = threading.Thread(target=pump, args=(server, client), daemon=True)
        back.start()
        pump(client, server)
        back.join()


def serve(listener: socket.socket, path: str) -> None:
    while True:
        client, _ = listener.accept()
        threading.Thread(target=relay, args=(client, path), daemon=True).start()


class Forward:
    """COMMAND, and the signals to pass on to it (one that came before it started, once it has)."""

    def __init__(self) -> None:
        self.child: subprocess.Popen[bytes] | None = None
        self.pending: list[int] = []

    def on_signal(self, signum: int, frame: object) -> None:
        if self.child is None:
            self.pending.append(signum)
        else:
            self.child.send_signal(signum)

    def start(self, command: Sequence[str]) -> None:
        self.child = subprocess.Popen(command)
        for signum in self.pending:
            self.child.send_signal(signum)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="relay", description="relay loopback TCP ports to unix sockets while COMMAND runs"
    )
    parser.add_argument(
        "--map", action="append", type=mapping, default=[], metavar="HOST:PORT=SOCKET"
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("a COMMAND after --")
    listeners = []
    for address, path in args.map:
        try:
            listeners.append((socket.create_server(address, backlog=128), path))
        except OSError as error:
            print(f"relay: cannot listen on {address[0]}:{address[1]}: {error}", file=sys.stderr)
            return BIND_FAILED
    for listener, path in listeners:
        threading.Thread(target=serve, args=(listener, path), daemon=True).start()
    forward = Forward()
    for signum in FORWARDED:
        signal.signal(signum, forward.on_signal)
    try:
        forward.start(command)
    except OSError as error:
        print(f"relay: cannot start {command[0]!r}: {error}", file=sys.stderr)
        return 127 if isinstance(error, FileNotFoundError) else 126
    assert forward.child is not None
    code = forward.child.wait()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main())
