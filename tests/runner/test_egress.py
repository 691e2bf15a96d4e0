"""The egress proxy with real sockets on loopback: a listed host:port is reached (CONNECT and
plain HTTP) and its bytes counted both ways; an unlisted one, a raw IP that is not listed, a
listed name that resolves to loopback and the metadata address are refused with a reason that is
recorded (never the payload); bad request forms and oversized heads are answered, not forwarded."""

from __future__ import annotations

import http.server
import json
import os
import socket
import socketserver
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tireless import JobStore
from tireless.runner import egress
from tireless.runner.egress import (
    HEAD_LIMIT,
    AllowEntry,
    Allowlist,
    EgressProxy,
    Refused,
    parse_allowlist,
)

PAYLOAD = "payload-that-must-never-be-recorded"


class Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(65536):
            self.request.sendall(data)


@contextmanager
def echo_server() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that sends back what it receives: its port."""
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), Echo) as server:
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True).start()
        yield server.server_address[1]
        server.shutdown()


class Recorder(http.server.BaseHTTPRequestHandler):
    seen: list[tuple[str, dict[str, str], bytes]]

    def do_GET(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append((self.requestline, dict(self.headers.items()), body))
        answer = f"seen {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    do_POST = do_GET

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def http_server() -> Iterator[tuple[int, list[tuple[str, dict[str, str], bytes]]]]:
    """An HTTP server on 127.0.0.1: its port and the requests it saw (line, headers, body)."""
    seen: list[tuple[str, dict[str, str], bytes]] = []
    handler = type("Recording", (Recorder,), {"seen": seen})
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True).start()
        yield server.server_address[1], seen
        server.shutdown()


@contextmanager
def proxy(*entries: str) -> Iterator[EgressProxy]:
    with EgressProxy(parse_allowlist(entries), ("127.0.0.1", 0)) as running:
        yield running


def connect(running: EgressProxy) -> socket.socket:
    address = running.address
    assert isinstance(address, tuple)
    conn = socket.create_connection(address, timeout=10)
    return conn


def read_until(conn: socket.socket, end: bytes) -> bytes:
    data = b""
    while end not in data:
        chunk = conn.recv(65536)
        assert chunk, f"closed before {end!r}: {data!r}"
        data += chunk
    return data


def read_all(conn: socket.socket) -> bytes:
    data = b""
    while chunk := conn.recv(65536):
        data += chunk
    return data


def ask(running: EgressProxy, request: bytes) -> bytes:
    """Sends request on a new connection and reads the answer to its end."""
    with connect(running) as conn:
        conn.sendall(request)
        return read_all(conn)


def tunnel(running: EgressProxy, authority: str) -> tuple[socket.socket, bytes]:
    """A connection that has asked CONNECT authority: it and the head of the answer."""
    conn = connect(running)
    conn.sendall(
        f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\nX-Note: {PAYLOAD}\r\n\r\n".encode()
    )
    return conn, read_until(conn, b"\r\n\r\n")


def refused(running: EgressProxy, authority: str) -> str:
    """CONNECT authority must be refused: the reason line it answered."""
    conn, head = tunnel(running, authority)
    with conn:
        assert head.startswith(b"HTTP/1.1 403 Forbidden\r\n"), head
        rest = head.partition(b"\r\n\r\n")[2] + read_all(conn)
    return rest.decode().strip()


def test_parse_allowlist_splits_the_entries_the_store_gives(store: JobStore) -> None:
    """The store checks and normalises each entry (tireless.egress_entry; the refusals are
    tests/sql/test_lane_network.py's); the runner splits what tireless.lane_network returns."""
    store.set_lane_network(
        "cc",
        [
            "API.Example.com",
            "*.pypi.org:443",
            "10.0.0.5:8080",
            "[FD00::1]:8443",
            "fd00::2",
            "::ffff:192.0.2.1",
        ],
    )
    hosts = store.lane_network("cc")
    assert hosts is not None
    assert parse_allowlist(hosts) == [
        AllowEntry("api.example.com", None),
        AllowEntry("*.pypi.org", 443),
        AllowEntry("10.0.0.5", 8080),
        AllowEntry("fd00::1", 8443),
        AllowEntry("fd00::2", None),
        AllowEntry("192.0.2.1", None),
    ]


def test_an_entry_without_a_port_allows_80_and_443_only() -> None:
    entry = AllowEntry("example.com", None)
    assert [entry.allows_port(port) for port in (80, 443, 8080)] == [True, True, False]
    assert AllowEntry("example.com", 8080).allows_port(8080)
    assert not AllowEntry("example.com", 8080).allows_port(443)


def test_a_wildcard_matches_one_or_more_labels_before_its_suffix_only() -> None:
    entry = AllowEntry("*.pypi.org", None)
    assert entry.allows_name("files.pypi.org")
    assert entry.allows_name("a.b.pypi.org")
    assert not entry.allows_name("pypi.org")
    assert not entry.allows_name("evilpypi.org")


def test_the_metadata_address_is_reached_only_when_listed_as_a_literal() -> None:
    """Link-local: no name can lead to it, and an unlisted literal is refused; listed as a
    literal (a person's explicit choice) it is allowed."""
    with pytest.raises(Refused, match="not on the allowlist"):
        Allowlist(parse_allowlist(["example.com"])).addresses("169.254.169.254", 80)
    allowed = Allowlist(parse_allowlist(["169.254.169.254:80"])).addresses("169.254.169.254", 80)
    assert allowed == [(socket.AF_INET, ("169.254.169.254", 80))]


def test_connect_relays_both_ways_and_counts_the_bytes() -> None:
    with echo_server() as port, proxy(f"127.0.0.1:{port}") as running:
        conn, head = tunnel(running, f"127.0.0.1:{port}")
        with conn:
            assert head == b"HTTP/1.1 200 Connection established\r\n\r\n"
            conn.sendall(b"ping")
            assert read_until(conn, b"ping") == b"ping"
            [use] = running.report().hosts  # while the tunnel is open
            assert (use.host, use.port, use.requests, use.bytes_in, use.bytes_out) == (
                "127.0.0.1",
                port,
                1,
                4,
                4,
            )
            conn.sendall(b"x" * 100_000)
            assert len(read_until(conn, b"x" * 100_000)) == 100_000
            conn.shutdown(socket.SHUT_WR)
            assert read_all(conn) == b""  # the host's end is passed on
        [use] = running.report().hosts
        assert (use.bytes_in, use.bytes_out) == (100_004, 100_004)
        assert running.report().refusals == []


def test_without_splice_the_bytes_are_copied_and_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """The relay where os.splice is missing (not Linux): a copy through Python."""
    monkeypatch.delattr(os, "splice")
    with echo_server() as port, proxy(f"127.0.0.1:{port}") as running:
        conn, head = tunnel(running, f"127.0.0.1:{port}")
        with conn:
            assert head == b"HTTP/1.1 200 Connection established\r\n\r\n"
            conn.sendall(b"x" * 300_000)
            assert len(read_until(conn, b"x" * 300_000)) == 300_000
        [use] = running.report().hosts
        assert (use.bytes_in, use.bytes_out) == (300_000, 300_000)


def test_plain_http_goes_in_origin_form_to_the_checked_host_with_connection_close() -> None:
    with http_server() as (port, seen), proxy(f"127.0.0.1:{port}") as running:
        reply = ask(
            running,
            f"POST http://127.0.0.1:{port}/path?q=1 HTTP/1.1\r\nHost: other.example\r\n"
            f"Proxy-Authorization: Basic eDp5\r\nConnection: keep-alive\r\nContent-Length: 5\r\n\r\nhello".encode(),
        )
        assert reply.startswith(b"HTTP/1.0 200 OK\r\n")
        assert reply.endswith(b"seen /path?q=1")
        [(line, headers, body)] = seen
        assert line == "POST /path?q=1 HTTP/1.1"
        assert headers["Connection"] == "close"
        assert (
            headers["Host"] == f"127.0.0.1:{port}"
        )  # the checked host, not another site behind it
        assert "Proxy-Authorization" not in headers
        assert body == b"hello"
        [use] = running.report().hosts
        assert use.requests == 1
        assert use.bytes_in == len(reply)
        assert use.bytes_out > len(b"POST /path?q=1 HTTP/1.1\r\n")


def test_an_http_client_reaches_a_listed_host_through_the_proxy() -> None:
    with http_server() as (port, _), proxy(f"127.0.0.1:{port}") as running:
        address = running.address
        assert isinstance(address, tuple)
        host, proxy_port = address
        with httpx.Client(proxy=f"http://{host}:{proxy_port}", trust_env=False) as client:
            assert client.get(f"http://127.0.0.1:{port}/one").text == "seen /one"
            assert client.get(f"http://127.0.0.1:{port}/two").text == "seen /two"
        assert running.report().as_json() == [
            {
                "host": "127.0.0.1",
                "port": port,
                "allowed": True,
                "requests": 2,
                "bytes_in": running.report().hosts[0].bytes_in,
                "bytes_out": running.report().hosts[0].bytes_out,
                "reason": None,
            }
        ]


def test_an_unlisted_host_is_refused_and_recorded_without_the_payload() -> None:
    with echo_server() as port, echo_server() as other, proxy(f"127.0.0.1:{port}") as running:
        reason = refused(running, f"127.0.0.1:{other}")
        assert reason == f"127.0.0.1 port {other} is not on the allowlist"
        reason_again = refused(running, f"127.0.0.1:{other}")
        assert reason_again == reason
        assert (
            refused(running, "unlisted.example:443")
            == "unlisted.example port 443 is not on the allowlist"
        )
        report = running.report()
        assert [(r.host, r.port, r.reason) for r in report.refusals] == [
            ("127.0.0.1", other, reason),
            ("127.0.0.1", other, reason),
            ("unlisted.example", 443, "unlisted.example port 443 is not on the allowlist"),
        ]
        assert report.hosts == []
        rows = report.as_json()
        assert [(row["host"], row["allowed"], row["requests"]) for row in rows] == [
            ("127.0.0.1", False, 2),
            ("unlisted.example", False, 1),
        ]
        assert PAYLOAD not in json.dumps(rows) + repr(report)


def test_a_raw_ip_that_is_not_listed_is_refused_even_for_a_listed_port() -> None:
    with echo_server() as port, proxy(f"127.0.0.1:{port}", f"localhost:{port}") as running:
        assert (
            refused(running, f"127.0.0.2:{port}")
            == f"127.0.0.2 port {port} is not on the allowlist"
        )
        assert refused(running, f"[::1]:{port}") == f"::1 port {port} is not on the allowlist"


def test_a_listed_name_that_resolves_to_loopback_is_refused() -> None:
    """DNS rebinding: listing a name does not list the private addresses it may resolve to."""
    with echo_server() as port, proxy(f"localhost:{port}") as running:
        reason = refused(running, f"localhost:{port}")
        assert reason.startswith("localhost resolves only to addresses not allowed: ")
        assert "127.0.0.1 (loopback)" in reason
        assert [(r.host, r.port) for r in running.report().refusals] == [("localhost", port)]


def test_a_listed_name_reaches_a_loopback_address_that_is_listed_as_a_literal() -> None:
    with echo_server() as port, proxy(f"localhost:{port}", f"127.0.0.1:{port}") as running:
        conn, head = tunnel(running, f"localhost:{port}")
        with conn:
            assert head == b"HTTP/1.1 200 Connection established\r\n\r\n"
            conn.sendall(b"ping")
            assert read_until(conn, b"ping") == b"ping"
        assert [use.host for use in running.report().hosts] == ["localhost"]


def test_the_metadata_address_is_refused_and_recorded() -> None:
    with proxy("169.254.169.253:80", "metadata.example") as running:
        assert (
            refused(running, "169.254.169.254:80")
            == "169.254.169.254 port 80 is not on the allowlist"
        )
        assert [(r.host, r.port) for r in running.report().refusals] == [("169.254.169.254", 80)]


@pytest.mark.parametrize(
    ("request_head", "reason"),
    [
        (
            b"GET /path HTTP/1.1\r\nHost: x\r\n\r\n",
            "the proxy takes CONNECT HOST:PORT or an absolute http:// URI",
        ),
        (
            b"GET https://example.com/ HTTP/1.1\r\n\r\n",
            "the proxy takes CONNECT HOST:PORT or an absolute http:// URI",
        ),
        (b"CONNECT example.com HTTP/1.1\r\n\r\n", "CONNECT needs HOST:PORT"),
        (b"CONNECT example.com:99999 HTTP/1.1\r\n\r\n", "CONNECT needs HOST:PORT"),
        (
            b"CONNECT bad_host!:443 HTTP/1.1\r\n\r\n",
            "the request's host is neither a DNS name nor an IP address",
        ),
        (b"hello\r\n\r\n", "the request line is not METHOD TARGET HTTP/1.x"),
        (
            b"GET http://example.com/ HTTP/2\r\n\r\n",
            "the request line is not METHOD TARGET HTTP/1.x",
        ),
        (
            b"GET http://example.com/ HTTP/1.1\r\nno colon\r\n\r\n",
            "a header line is not NAME: VALUE",
        ),
        (b"GET http://example.com/", "the request head ended before its blank line"),
    ],
)
def test_a_bad_request_form_is_answered_400_and_not_recorded(
    request_head: bytes, reason: str
) -> None:
    with proxy("example.com") as running:
        with connect(running) as conn:
            conn.sendall(request_head)
            conn.shutdown(socket.SHUT_WR)
            reply = read_all(conn)
        assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n")
        assert reply.endswith(f"\r\n\r\n{reason}\n".encode())
        assert running.report().refusals == []


def test_a_head_that_does_not_end_in_time_is_answered_400(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(egress, "HEAD_TIMEOUT", 0.2)
    with proxy("example.com") as running, connect(running) as conn:
        conn.sendall(b"CONNECT example.com:443 HTTP/1.1\r\n")  # and never the blank line
        reply = read_all(conn)
        assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n")
        assert reply.endswith(b"no complete request head in 0.2 seconds\n")


def test_an_oversized_head_is_answered_431() -> None:
    with proxy("example.com") as running:
        head = b"GET http://example.com/ HTTP/1.1\r\nX-Big: " + b"a" * HEAD_LIMIT + b"\r\n\r\n"
        reply = ask(running, head)
        assert reply.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n")


def test_a_host_that_does_not_answer_is_502() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        port = closed.getsockname()[1]
        with proxy(f"127.0.0.1:{port}") as running:
            reply = ask(running, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
            assert reply.startswith(b"HTTP/1.1 502 Bad Gateway\r\n")
            assert f"cannot connect to 127.0.0.1 port {port}".encode() in reply


def test_connections_past_the_limit_are_answered_503(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(egress, "MAX_CONNECTIONS", 2)
    with echo_server() as port, proxy(f"127.0.0.1:{port}") as running:
        first, _ = tunnel(running, f"127.0.0.1:{port}")
        second, _ = tunnel(running, f"127.0.0.1:{port}")
        with first, second:
            reply = ask(running, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
            assert reply.startswith(b"HTTP/1.1 503 Service Unavailable\r\n")
        assert running.report().hosts[0].requests == 2


def test_stop_closes_the_listener_and_every_open_tunnel() -> None:
    with echo_server() as port:
        running = EgressProxy(parse_allowlist([f"127.0.0.1:{port}"]), ("127.0.0.1", 0)).start()
        address = running.address
        conn, head = tunnel(running, f"127.0.0.1:{port}")
        with conn:
            assert head.startswith(b"HTTP/1.1 200")
            running.stop()
            assert read_all(conn) == b""
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(address, timeout=10)  # type: ignore[arg-type]


def test_the_proxy_listens_on_a_unix_socket_anyone_may_connect_to(tmp_path: Path) -> None:
    path = str(tmp_path / "proxy.sock")
    with (
        echo_server() as port,
        EgressProxy(parse_allowlist([f"127.0.0.1:{port}"]), path) as running,
    ):
        assert running.address == path
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o666
        with socket.socket(socket.AF_UNIX) as conn:
            conn.settimeout(10)
            conn.connect(path)
            conn.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\nping".encode())
            assert read_until(conn, b"ping").endswith(b"\r\n\r\nping")
    assert not os.path.exists(path)
