"""A real `tireless web` (the command, under uvicorn) against raw sockets: a 300 MiB POST is
refused without being read (the process's memory barely moves), a client that trickles its
request header is cut off, a crowd of half-sent requests does not keep the dashboard from
answering, and an address beyond loopback is served only with a login."""

from __future__ import annotations

import base64
import http.client
import os
import select
import signal
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.conftest import Database
from tests.helpers import tireless_cli
from tireless.web.connections import MOST_WAITING
from tireless.web.launch import RunningDashboard, start_dashboard

MIB = 1024 * 1024
OVERSIZED = 300 * MIB
CHUNK = b"x" * (256 * 1024)
TOKEN = "a-token-long-enough-for-tests"


def serving(
    db: Database, tmp_path: Path, *options: str, bind: str = "127.0.0.1:0"
) -> Iterator[RunningDashboard]:
    running = start_dashboard(db.url, tmp_path / "web.log", bind=bind, options=options)
    try:
        yield running
    finally:
        os.kill(running.pid, signal.SIGTERM)
        os.waitpid(running.pid, 0)


@pytest.fixture
def dashboard(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[RunningDashboard]:
    monkeypatch.setenv("TIRELESS_WEBHOOK_SECRET_GITEA", "s3cret")
    monkeypatch.delenv("TIRELESS_WEB_TOKEN", raising=False)
    yield from serving(db, tmp_path)


def address(running: RunningDashboard) -> tuple[str, int]:
    parts = urlsplit(running.url)
    assert parts.port is not None
    return "127.0.0.1", parts.port


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def get(running: RunningDashboard, path: str = "/") -> int:
    host, port = address(running)
    with urllib.request.urlopen(f"http://{host}:{port}{path}", timeout=60) as answer:
        status: int = answer.status
        return status


def post_oversized(running: RunningDashboard, path: str, headers: str, chunked: bool) -> int:
    """POST 300 MiB, stopping as soon as the server answers or closes; the bytes sent."""
    host, port = address(running)
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {OVERSIZED}"
    head = f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\n{headers}{framing}\r\n\r\n"
    piece = (b"%x\r\n" % len(CHUNK) + CHUNK + b"\r\n") if chunked else CHUNK
    sent = 0
    with socket.create_connection((host, port), timeout=60) as sock:
        sock.sendall(head.encode())
        while sent < OVERSIZED:
            readable, writable, _ = select.select([sock], [sock], [], 60)
            if readable:
                break  # the answer (or the close) came before the body was all sent
            assert writable, "the server neither reads the body nor answers"
            try:
                sent += sock.send(piece)
            except (BrokenPipeError, ConnectionResetError):
                break
    return sent


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        ("/lanes/cc/pause", "Origin: http://{host}\r\n"),
        ("/hooks/gitea", "X-Gitea-Signature: " + "0" * 64 + "\r\nX-Gitea-Delivery: d1\r\n"),
    ],
)
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_an_oversized_post_is_refused_without_being_read(
    dashboard: RunningDashboard, path: str, headers: str, chunked: bool
) -> None:
    host, port = address(dashboard)
    headers = headers.format(host=f"{host}:{port}")
    assert get(dashboard) == 200  # the pool, the templates: what a first request loads
    post_oversized(dashboard, path, headers, chunked=False)
    before = rss_bytes(dashboard.pid)
    sent = post_oversized(dashboard, path, headers, chunked)
    grown = rss_bytes(dashboard.pid) - before
    assert sent < OVERSIZED // 2, f"the server read {sent} bytes before it answered"
    assert grown < 8 * MIB, f"the server grew by {grown / MIB:.1f} MiB"
    assert get(dashboard) == 200


def test_a_client_that_trickles_its_header_is_cut_off(db: Database, tmp_path: Path) -> None:
    """One header byte every quarter second, as the first request of a connection and as the
    second of a kept-alive one: the keep-alive timer restarts at each byte, the header deadline
    (1 s here) does not. A minute of trickling without a close fails."""
    for dashboard in serving(db, tmp_path, "--header-timeout", "1"):
        with socket.create_connection(address(dashboard), timeout=60) as sock:
            trickle(sock)
        kept = http.client.HTTPConnection(*address(dashboard), timeout=60)
        kept.request("GET", "/static/dashboard.js")
        with kept.getresponse() as first:
            assert first.status == 200
            first.read()
        assert kept.sock is not None
        trickle(kept.sock)
        kept.close()
        assert get(dashboard) == 200


def trickle(sock: socket.socket) -> None:
    sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    for _ in range(240):
        readable, _, _ = select.select([sock], [], [], 0.25)
        if readable:
            assert closed(sock), "the server answered a header it never got whole"
            break
        try:
            sock.sendall(b"a")
        except (BrokenPipeError, ConnectionResetError):
            break
    else:
        pytest.fail("a trickled header held its connection for a minute")


def test_half_sent_requests_do_not_keep_the_dashboard_from_answering(
    dashboard: RunningDashboard,
) -> None:
    crowd = [socket.create_connection(address(dashboard), timeout=60) for _ in range(300)]
    try:
        for sock in crowd:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        assert get(dashboard) == 200
        # The longest waiting were closed to make room; the newest may wait out their deadline.
        for sock in crowd[: len(crowd) - MOST_WAITING]:
            assert closed(sock)
    finally:
        for sock in crowd:
            sock.close()


def closed(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def test_beyond_loopback_the_dashboard_needs_a_token(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TIRELESS_WEB_TOKEN", raising=False)
    monkeypatch.delenv("TIRELESS_WEB_TOKEN_FILE", raising=False)
    refused = tireless_cli(db.url, "web", "--bind", "0.0.0.0:0")
    assert refused.returncode == 2
    assert "TIRELESS_WEB_TOKEN" in refused.stderr
    assert "beyond this machine" in refused.stderr
    monkeypatch.setenv("TIRELESS_WEB_TOKEN", TOKEN)
    for running in serving(db, tmp_path, bind="0.0.0.0:0"):
        with pytest.raises(urllib.error.HTTPError) as asked:
            get(running)
        assert asked.value.code == 401
        host, port = address(running)
        login = base64.b64encode(f"me:{TOKEN}".encode()).decode()
        request = urllib.request.Request(
            f"http://{host}:{port}/", headers={"Authorization": f"Basic {login}"}
        )
        with urllib.request.urlopen(request, timeout=60) as page:
            assert page.status == 200
