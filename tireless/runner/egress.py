"""The agent's only way out when its lane has an egress allowlist: a forward proxy (HTTP CONNECT,
and absolute-URI plain HTTP) that resolves names itself, lets through only the listed hosts,
connects to the very address it checked, and counts what passes and what it refused."""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import ipaddress
import os
import re
import select
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Self
from urllib.parse import urlsplit

CONNECT_TIMEOUT = 10.0
"""Seconds to reach an allowed host before answering 502."""
HEAD_TIMEOUT = 30.0
"""Seconds a client has to send its whole request head: an idle one does not hold a slot."""
HEAD_LIMIT = 16 * 1024
"""The longest request head (request line and headers) read; a longer one is answered 431."""
MAX_CONNECTIONS = 128
"""Connections served at once; one more is answered 503. Each holds six descriptors (two sockets,
two pipes): 128 stay within the common limit of 1,024."""
REFUSALS_KEPT = 10_000
"""Refusals kept for the report: an agent that retries a refused host forever grows nothing."""
LINGER = 2.0
"""Seconds an answered connection waits for its client to stop sending before it is closed."""
CHUNK = 256 * 1024

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
NAME = re.compile(
    r"(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?\.)*[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?"
)
"""A DNS name, lower-cased, without its trailing dot."""
DROPPED_HEADERS = frozenset(
    {b"connection", b"keep-alive", b"proxy-connection", b"proxy-authorization", b"host"}
)
"""Headers of the agent's plain-HTTP request meant for the proxy, not the host; Host is set from
the checked URI (another name would reach another site behind the same address)."""


@dataclass(frozen=True, slots=True)
class AllowEntry:
    """One allowlist entry: a DNS name, a `*.suffix` wildcard (one or more labels before the
    suffix) or an IP literal; port None allows 80 and 443. Only an IP literal entry opens a
    loopback, link-local (the metadata address 169.254.169.254 included), private, multicast or
    reserved address: a name that resolves to one is refused."""

    host: str
    port: int | None

    def allows_port(self, port: int) -> bool:
        return port in (80, 443) if self.port is None else port == self.port

    def allows_name(self, name: str) -> bool:
        if self.host.startswith("*."):
            return name.endswith(self.host[1:])
        return name == self.host


def parse_allowlist(entries: Sequence[str]) -> list[AllowEntry]:
    """The lane's entries as tireless.lane_network gives them, split into host and port. The
    store checked and normalised each (tireless.egress_entry: `host`, `*.suffix`, an IPv4
    literal or `[v6]`, each with `:PORT` or not), so this splits them and judges nothing."""
    return [AllowEntry(*split_host_port(entry, None)) for entry in entries]


def split_host_port(text: str, default: int | None) -> tuple[str, int | None]:
    """`host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6 literal: the host (lower-cased, a
    name's trailing dot dropped, an IP literal in its canonical form) and the port."""
    host, port = text, default
    if text.startswith("["):
        host, bracket, after = text[1:].partition("]")
        if not bracket or literal(host) is None or (after and not after.startswith(":")):
            raise ValueError(text)
        if after:
            port = parse_port(after[1:])
    elif text.count(":") == 1:
        host, _, after = text.partition(":")
        port = parse_port(after)
    address = literal(host)
    if address is not None:
        return str(address), port
    if not host or ":" in host:
        raise ValueError(text)
    return host.lower().removesuffix("."), port


def parse_port(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise ValueError(text)
    return int(text)


def literal(host: str) -> Address | None:
    """The IP address `host` spells (an IPv4-mapped IPv6 address as its IPv4 one), else None."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def special(address: Address) -> str | None:
    """What makes an address one the proxy does not reach unless listed, else None."""
    for kind in ("loopback", "unspecified", "link_local", "multicast", "private", "reserved"):
        if getattr(address, f"is_{kind}"):
            return kind.replace("_", "-")
    return None if address.is_global else "non-global"


class Refused(Exception):
    """A destination the allowlist does not allow: answered 403 and recorded."""

    def __init__(self, host: str, port: int, reason: str) -> None:
        super().__init__(reason)
        self.host, self.port, self.reason = host, port, reason


class Allowlist:
    """Decides a destination: the addresses to connect to, or Refused with the reason."""

    def __init__(self, entries: Sequence[AllowEntry]) -> None:
        self._names = [entry for entry in entries if literal(entry.host) is None]
        self._literals = [(literal(entry.host), entry) for entry in entries if literal(entry.host)]

    def addresses(self, host: str, port: int) -> list[tuple[Any, ...]]:
        """The (family, sockaddr) pairs to try for host:port, each checked: an IP literal must be
        listed as one; a listed name is resolved here, once, and an address of it that is
        loopback, link-local, private, ... is dropped unless that address is listed itself."""
        address = literal(host)
        if address is not None:
            if not self._listed(address, port):
                raise Refused(host, port, f"{host} port {port} is not on the allowlist")
            return [(socket.AF_INET if address.version == 4 else socket.AF_INET6, (host, port))]
        if not any(entry.allows_name(host) and entry.allows_port(port) for entry in self._names):
            raise Refused(host, port, f"{host} port {port} is not on the allowlist")
        try:
            infos = socket.getaddrinfo(
                host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
            )
        except OSError as error:
            raise Refused(
                host, port, f"{host} does not resolve: {error.strerror or error}"
            ) from None
        allowed, refused = [], []
        for family, _, _, _, sockaddr in infos:
            resolved = literal(str(sockaddr[0]).partition("%")[0])
            kind = special(resolved) if resolved is not None else "unparsable"
            if kind is None or (resolved is not None and self._listed(resolved, port)):
                allowed.append((family, sockaddr))
            else:
                refused.append(f"{sockaddr[0]} ({kind})")
        if not allowed:
            raise Refused(
                host, port, f"{host} resolves only to addresses not allowed: {', '.join(refused)}"
            )
        return allowed

    def _listed(self, address: Address, port: int) -> bool:
        return any(
            listed == address and entry.allows_port(port) for listed, entry in self._literals
        )


@dataclass(slots=True)
class HostUse:
    """What went to and came from one host:port: bytes_out sent by the agent, bytes_in received."""

    host: str
    port: int
    requests: int = 0
    bytes_in: int = 0
    bytes_out: int = 0


@dataclass(frozen=True, slots=True)
class Refusal:
    """A destination refused: never what the agent would have sent there."""

    host: str
    port: int
    reason: str
    at: datetime


@dataclass(slots=True)
class NetworkReport:
    """What a job's proxy saw: the hosts used and the refusals, in order."""

    hosts: list[HostUse]
    refusals: list[Refusal]

    def as_json(self) -> list[dict[str, Any]]:
        """The rows `tireless.record_job_network` stores: one per host:port used, one per distinct
        refused host:port and reason (requests: how many times)."""
        rows: list[dict[str, Any]] = [
            {**dataclasses.asdict(use), "allowed": True, "reason": None} for use in self.hosts
        ]
        counted: dict[tuple[str, int, str], int] = {}
        for refusal in self.refusals:
            key = (refusal.host, refusal.port, refusal.reason)
            counted[key] = counted.get(key, 0) + 1
        rows += [
            {
                "host": host,
                "port": port,
                "allowed": False,
                "requests": count,
                "bytes_in": 0,
                "bytes_out": 0,
                "reason": reason,
            }
            for (host, port, reason), count in counted.items()
        ]
        return rows


class Answer(Exception):
    """A request the proxy answers itself, with a status and a one-line reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


STATUS = {
    400: "Bad Request",
    403: "Forbidden",
    431: "Request Header Fields Too Large",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


def answer(conn: socket.socket, status: int, reason: str) -> None:
    """Answers with a one-line reason, then reads (and drops) what the client still sends, for a
    while: a socket closed with unread input is reset, and the reset can destroy the answer."""
    body = reason.replace("\r", " ").replace("\n", " ").encode() + b"\n"
    head = f"HTTP/1.1 {status} {STATUS[status]}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    with contextlib.suppress(OSError):
        conn.sendall(head.encode() + body)
        conn.shutdown(socket.SHUT_WR)
        conn.settimeout(LINGER)
        drained = 0
        while drained < HEAD_LIMIT * 4 and (chunk := conn.recv(CHUNK)):
            drained += len(chunk)


class EgressProxy:
    """A forward proxy on a unix socket path or a TCP (host, port). CONNECT host:port opens a
    tunnel; an absolute-URI plain-HTTP request (`GET http://host/path HTTP/1.1`) is sent on in
    origin form with `Connection: close`: one request per connection. Anything else is 400."""

    def __init__(self, allow: Sequence[AllowEntry], listen: str | tuple[str, int]) -> None:
        self._allowlist = Allowlist(allow)
        self._listen = listen
        self._listener: socket.socket | None = None
        self._serving: threading.Thread | None = None
        self._wakeup, self._wake = socket.socketpair()  # written by `stop`
        self._lock = threading.Lock()
        self._uses: dict[tuple[str, int], HostUse] = {}
        self._refusals: list[Refusal] = []
        self._open: set[socket.socket] = set()
        self._limit = MAX_CONNECTIONS
        self._slots = threading.BoundedSemaphore(self._limit)
        self._stopped = False

    @property
    def address(self) -> str | tuple[str, int]:
        """Where it listens: the unix socket's path, or the bound (host, port)."""
        if isinstance(self._listen, str) or self._listener is None:
            return self._listen
        host, port = self._listener.getsockname()[:2]
        return host, port

    def start(self) -> Self:
        if isinstance(self._listen, str):
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(self._listen)
            # The agent connects as another user; the directory around the socket guards it.
            os.chmod(self._listen, 0o666)
        else:
            listener = socket.create_server(self._listen, family=family_of(self._listen[0]))
        listener.listen(128)
        self._listener = listener
        self._serving = threading.Thread(target=self._serve, name="egress-proxy", daemon=True)
        self._serving.start()
        return self

    def stop(self) -> None:
        """Closes the listener and every open connection and tunnel."""
        if self._stopped or self._listener is None:
            return
        self._stopped = True
        self._wake.send(b"x")
        if self._serving is not None:
            self._serving.join()
        self._listener.close()
        if isinstance(self._listen, str):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._listen)
        with self._lock:
            for conn in self._open:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
        self._wakeup.close()
        self._wake.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def report(self) -> NetworkReport:
        """The hosts used so far and the refusals; safe while it runs."""
        with self._lock:
            return NetworkReport(
                [dataclasses.replace(use) for use in self._uses.values()], list(self._refusals)
            )

    def _serve(self) -> None:
        assert self._listener is not None
        while True:
            ready, _, _ = select.select([self._listener, self._wakeup], [], [])
            if self._wakeup in ready:
                return
            try:
                conn, _ = self._listener.accept()
            except OSError:
                continue
            no_delay(conn)
            handle = self._handle if self._slots.acquire(blocking=False) else self._busy
            threading.Thread(target=handle, args=(conn,), name="egress-conn", daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        try:
            with self._tracked(conn):
                self._serve_one(conn)
        except Answer as error:
            answer(conn, error.status, error.reason)
        except OSError:
            pass  # the agent or the host went away: nothing to answer
        finally:
            conn.close()
            self._slots.release()

    def _busy(self, conn: socket.socket) -> None:
        with conn:
            answer(conn, 503, f"the proxy serves at most {self._limit} connections at once")

    def _serve_one(self, conn: socket.socket) -> None:
        try:
            head, rest = read_head(conn)
            method, target, version, headers = parse_head(head)
            host, port, first = destination(method, target, version, headers)
            upstream = self._connect(host, port)
        except Refused as refused:
            self._refused(refused)
            answer(conn, 403, refused.reason)
            return
        with upstream, self._tracked(upstream):
            use = self._use(host, port)
            if first is None:
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                self._send(upstream, first, use, out=True)
            if rest:
                self._send(upstream, rest, use, out=True)
            self._relay(conn, upstream, use)

    def _connect(self, host: str, port: int) -> socket.socket:
        """A connection to the first checked address of host:port that answers (no second lookup)."""
        failures = []
        for family, sockaddr in self._allowlist.addresses(host, port):
            upstream = socket.socket(family, socket.SOCK_STREAM)
            no_delay(upstream)
            upstream.settimeout(CONNECT_TIMEOUT)
            try:
                upstream.connect(sockaddr)
            except OSError as error:
                upstream.close()
                failures.append(f"{sockaddr[0]}: {error.strerror or type(error).__name__}")
                continue
            upstream.settimeout(None)
            return upstream
        raise Answer(502, f"cannot connect to {host} port {port}: {'; '.join(failures)}")

    def _relay(self, conn: socket.socket, upstream: socket.socket, use: HostUse) -> None:
        """Bytes both ways until both sides are done; an end of one side is passed to the other."""
        back = threading.Thread(target=self._pump, args=(upstream, conn, use, False), daemon=True)
        back.start()
        self._pump(conn, upstream, use, True)
        back.join()

    def _pump(self, source: socket.socket, sink: socket.socket, use: HostUse, out: bool) -> None:
        """One direction, counted, until its end, which is passed on (a reset ends both)."""
        try:
            if not self._splice(source, sink, use, out):
                self._copy(source, sink, use, out)
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            for side in (source, sink):
                with contextlib.suppress(OSError):
                    side.shutdown(socket.SHUT_RDWR)

    def _splice(self, source: socket.socket, sink: socket.socket, use: HostUse, out: bool) -> bool:
        """Moves the bytes inside the kernel, through a pipe (Linux): twice the rate of a copy
        through Python. False when there is no splice or no pipe to be had (out of descriptors)."""
        if not hasattr(os, "splice"):
            return False
        try:
            read, write = os.pipe()
        except OSError:
            return False
        with contextlib.suppress(OSError):  # a pipe as large as a read: fewer calls
            fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, CHUNK)
        try:
            while moved := os.splice(source.fileno(), write, CHUNK):
                self._count(use, moved, out)
                while moved:
                    moved -= os.splice(read, sink.fileno(), moved)
        finally:
            os.close(read)
            os.close(write)
        return True

    def _copy(self, source: socket.socket, sink: socket.socket, use: HostUse, out: bool) -> None:
        buffer = memoryview(bytearray(CHUNK))  # one buffer, reused: no allocation a read
        while size := source.recv_into(buffer):
            self._send(sink, buffer[:size], use, out)

    def _send(self, sink: socket.socket, data: bytes | memoryview, use: HostUse, out: bool) -> None:
        self._count(use, len(data), out)
        sink.sendall(data)

    def _count(self, use: HostUse, size: int, out: bool) -> None:
        """Counted before they are sent on: whoever receives them sees them counted."""
        with self._lock:
            if out:
                use.bytes_out += size
            else:
                use.bytes_in += size

    def _use(self, host: str, port: int) -> HostUse:
        with self._lock:
            use = self._uses.setdefault((host, port), HostUse(host, port))
            use.requests += 1
            return use

    def _refused(self, refused: Refused) -> None:
        with self._lock:
            if len(self._refusals) < REFUSALS_KEPT:
                self._refusals.append(
                    Refusal(refused.host, refused.port, refused.reason, datetime.now(UTC))
                )

    @contextlib.contextmanager
    def _tracked(self, sock: socket.socket) -> Iterator[None]:
        """Keeps sock among the open ones `stop` shuts, while the block runs."""
        with self._lock:
            if self._stopped:
                raise Answer(503, "the proxy is stopping")
            self._open.add(sock)
        try:
            yield
        finally:
            with self._lock:
                self._open.discard(sock)


def no_delay(sock: socket.socket) -> None:
    """Nagle off on a TCP socket: a relayed write never waits for the peer's delayed ACK."""
    if sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def family_of(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def read_head(conn: socket.socket) -> tuple[bytes, bytes]:
    """The request head (without its blank line) and what came after it."""
    deadline = time.monotonic() + HEAD_TIMEOUT
    data = b""
    try:
        while (end := data.find(b"\r\n\r\n")) < 0:
            if len(data) > HEAD_LIMIT:
                raise Answer(431, f"the request head is longer than {HEAD_LIMIT} bytes")
            conn.settimeout(max(deadline - time.monotonic(), 0.001))
            chunk = conn.recv(HEAD_LIMIT + 4 - len(data) if len(data) <= HEAD_LIMIT else 1)
            if not chunk:
                raise Answer(400, "the request head ended before its blank line")
            data += chunk
    except TimeoutError:
        raise Answer(400, f"no complete request head in {HEAD_TIMEOUT:g} seconds") from None
    finally:
        conn.settimeout(None)
    if end > HEAD_LIMIT:
        raise Answer(431, f"the request head is longer than {HEAD_LIMIT} bytes")
    return data[:end], data[end + 4 :]


def parse_head(head: bytes) -> tuple[str, str, str, list[tuple[bytes, bytes]]]:
    """The method, target and version of the request line, and the header lines as (name, line)."""
    request_line, *lines = head.split(b"\r\n")
    parts = request_line.decode("latin-1").split(" ")
    if len(parts) != 3 or parts[2] not in ("HTTP/1.0", "HTTP/1.1") or not parts[0].isalpha():
        raise Answer(400, "the request line is not METHOD TARGET HTTP/1.x")
    headers = []
    for line in lines:
        name, colon, _ = line.partition(b":")
        if not colon or not name or name != name.strip():
            raise Answer(400, "a header line is not NAME: VALUE")
        headers.append((name.lower(), line))
    return parts[0], parts[1], parts[2], headers


def destination(
    method: str, target: str, version: str, headers: list[tuple[bytes, bytes]]
) -> tuple[str, int, bytes | None]:
    """Where the request goes, and for plain HTTP the head to send there (None for CONNECT)."""
    if method == "CONNECT":
        try:
            host, port = split_host_port(target, None)
        except ValueError:
            raise Answer(400, "CONNECT needs HOST:PORT") from None
        if port is None:
            raise Answer(400, "CONNECT needs HOST:PORT")
        check_name(host)
        return host, port, None
    if not target.lower().startswith("http://"):
        raise Answer(400, "the proxy takes CONNECT HOST:PORT or an absolute http:// URI")
    try:
        url = urlsplit(target)
        host, port = split_host_port(url.netloc.rpartition("@")[2], 80)
    except ValueError:
        raise Answer(400, "the request's URI has no valid host and port") from None
    check_name(host)
    assert port is not None
    origin = (url.path or "/") + (f"?{url.query}" if url.query else "")
    kept = [line for name, line in headers if name not in DROPPED_HEADERS]
    kept.append(b"Host: " + url.netloc.rpartition("@")[2].encode())
    first = f"{method} {origin} {version}".encode()
    return host, port, b"\r\n".join([first, *kept, b"Connection: close", b"", b""])


def check_name(host: str) -> None:
    if literal(host) is None and not NAME.fullmatch(host):
        raise Answer(400, "the request's host is neither a DNS name nor an IP address")
