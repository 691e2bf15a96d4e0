"""The upstream gateway with real sockets on loopback, in front of a stand-in upstream (an HTTP
server on 127.0.0.1): it adds the secret header and drops the agent's own credentials, forwards
bodies, streams an SSE answer event by event, masks the secret in answers even split between
chunks, refuses requests for another host, and never puts the secret in an error."""

from __future__ import annotations

import http.server
import json
import logging
import os
import socket
import stat
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tireless.runner import gateway
from tireless.runner.gateway import Upstream, UpstreamGateway, parse_upstreams

SECRET = f"sk-test-{uuid.uuid4().hex}"
WAIT = 10.0
"""Seconds a stand-in waits for the test's go-ahead before failing: a guard, not a pace."""
PADDING = b"p" * 100_000


@dataclass
class Stage:
    """What the stand-in upstream saw, and the go-ahead it waits for mid-answer."""

    seen: list[tuple[str, str, dict[str, str], bytes]] = field(default_factory=list)
    go_on: threading.Event = field(default_factory=threading.Event)
    waited: list[bool] = field(default_factory=list)


class StandIn(http.server.BaseHTTPRequestHandler):
    """A model API's stand-in: /echo answers the request as JSON, /sse streams two events,
    /leak answers with the secret in a header and split between two writes of its body."""

    stage: Stage

    def do_GET(self) -> None:
        body = self.read_body()
        self.stage.seen.append((self.command, self.path, dict(self.headers.items()), body))
        if self.path.endswith("/sse"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()  # HTTP/1.0: the answer ends when the connection closes
            self.wfile.write(b"data: one\n\n")
            self.wfile.flush()
            self.stage.waited.append(self.stage.go_on.wait(WAIT))
            self.wfile.write(b"data: two\n\n")
        elif self.path.endswith("/leak"):
            self.send_response(200)
            self.send_header("X-Echo", f"key={SECRET}")
            self.end_headers()
            half = len(SECRET) // 2
            self.wfile.write(PADDING + SECRET[:half].encode())
            self.wfile.flush()
            self.stage.waited.append(self.stage.go_on.wait(WAIT))
            self.wfile.write(SECRET[half:].encode() + b" end")
        elif self.path.endswith("/empty"):
            self.send_response(204)
            self.end_headers()
        else:
            answer = json.dumps(
                {"path": self.path, "headers": dict(self.headers.items()), "body": body.decode()}
            )
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer.encode())

    do_POST = do_HEAD = do_GET

    def read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding") == "chunked":
            body = b""
            while size := int(self.rfile.readline().strip(), 16):
                body += self.rfile.read(size)
                self.rfile.readline()
            self.rfile.readline()
            return body
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def stand_in() -> Iterator[tuple[str, Stage]]:
    """A stand-in upstream on 127.0.0.1: its base URL and what it saw."""
    stage = Stage()
    handler = type("Staged", (StandIn,), {"stage": stage})
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True).start()
        yield f"http://127.0.0.1:{server.server_address[1]}/api", stage
        server.shutdown()


@contextmanager
def gateway_to(url: str, header: str = "Authorization") -> Iterator[tuple[UpstreamGateway, str]]:
    """A gateway to url on 127.0.0.1: it and the base URL the agent gets."""
    with UpstreamGateway(Upstream("model", url, header, SECRET), ("127.0.0.1", 0)) as running:
        address = running.address
        assert isinstance(address, tuple)
        yield running, f"http://{address[0]}:{address[1]}"


def raw(running: UpstreamGateway, request: bytes) -> bytes:
    """Sends a request as the agent's bytes and reads the answer until the gateway closes."""
    address = running.address
    assert isinstance(address, tuple)
    with socket.create_connection(address, timeout=WAIT) as conn:
        conn.sendall(request)
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
        return data


def test_the_gateway_adds_the_secret_and_drops_the_agents_own_credentials() -> None:
    with stand_in() as (url, stage), gateway_to(url) as (_, base):
        answer = httpx.get(
            f"{base}/v1/models?limit=2",
            headers={
                "Authorization": "Bearer agent-key",
                "Proxy-Authorization": "Basic eDp5",
                "X-Other": "kept",
            },
        )
        [(method, path, headers, _)] = stage.seen
        assert (method, path) == ("GET", "/api/v1/models?limit=2")
        assert headers["Authorization"] == f"Bearer {SECRET}"
        assert headers["X-Other"] == "kept"
        assert headers["Host"] == url.split("/")[2]
        assert "Proxy-Authorization" not in headers
        assert "agent-key" not in json.dumps(headers)
        assert answer.status_code == 200
        assert SECRET not in answer.text  # the stand-in echoed it: masked
        assert answer.json()["headers"]["Authorization"] == "Bearer ***"


def test_another_header_gets_the_secret_as_is_and_the_agents_copies_are_dropped() -> None:
    with stand_in() as (url, stage), gateway_to(url, header="x-api-key") as (_, base):
        httpx.get(
            f"{base}/v1/messages", headers={"X-Api-Key": "mine", "Authorization": "Bearer mine"}
        )
        [(_, _, headers, _)] = stage.seen
        assert headers["x-api-key"] == SECRET
        assert "Authorization" not in headers
        assert "mine" not in json.dumps(headers)


def test_a_secret_that_names_its_scheme_is_sent_as_is() -> None:
    assert (
        Upstream("m", "https://x", "Authorization", "Basic dXNlcjpwdw==").header_value
        == "Basic dXNlcjpwdw=="
    )
    assert Upstream("m", "https://x", "Authorization", "sk-1234").header_value == "Bearer sk-1234"
    assert Upstream("m", "https://x", "x-api-key", "sk-1234").header_value == "sk-1234"


def test_request_bodies_are_forwarded_sized_and_chunked() -> None:
    with stand_in() as (url, stage), gateway_to(url) as (running, base):
        assert httpx.post(f"{base}/v1/messages", content=b'{"model": "m"}').status_code == 200
        chunks = iter([b"first,", b"second"])
        assert httpx.post(f"{base}/v1/messages", content=chunks).status_code == 200
        assert [body for *_, body in stage.seen] == [b'{"model": "m"}', b"first,second"]
        use = running.report()
        assert (use.host, use.requests, use.bytes_out) == (
            "127.0.0.1",
            2,
            len(b'{"model": "m"}first,second'),
        )
        assert use.bytes_in > 0


def test_a_body_over_the_limit_is_answered_413(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gateway, "BODY_LIMIT", 10)
    with stand_in() as (url, stage), gateway_to(url) as (_, base):
        assert httpx.post(f"{base}/x", content=b"0123456789a").status_code == 413
        assert httpx.post(f"{base}/x", content=iter([b"012345", b"6789a"])).status_code == 413
        assert httpx.post(f"{base}/x", content=b"0123456789").status_code == 200
        assert len(stage.seen) == 1


def test_an_sse_answer_streams_event_by_event() -> None:
    """The first event reaches the agent while the upstream still waits to send the second."""
    with stand_in() as (url, stage), gateway_to(url) as (_, base):
        with httpx.stream("POST", f"{base}/v1/sse", content=b"{}") as answer:
            assert answer.headers["content-type"] == "text/event-stream"
            lines = answer.iter_lines()
            assert next(lines) == "data: one"
            stage.go_on.set()
            assert list(lines) == ["", "data: two", ""]
        assert stage.waited == [True]


def test_the_secret_is_masked_in_headers_and_in_a_body_that_splits_it_between_chunks() -> None:
    with stand_in() as (url, stage), gateway_to(url) as (_, base):
        with httpx.stream("GET", f"{base}/leak") as answer:
            assert answer.headers["x-echo"] == "key=***"
            received = b""
            chunks = answer.iter_raw()
            while len(received) < len(PADDING) - len(SECRET):
                received += next(chunks)  # the first write has gone through the gateway
            stage.go_on.set()
            received += b"".join(chunks)
        assert stage.waited == [True]
        assert received == PADDING + b"*** end"


def test_answers_without_a_body_keep_the_connection_usable() -> None:
    with stand_in() as (url, stage), gateway_to(url) as (_, base), httpx.Client() as client:
        assert client.head(f"{base}/echo").content == b""
        assert client.get(f"{base}/empty").status_code == 204
        assert client.get(f"{base}/echo").json()["path"] == "/api/echo"
        assert [method for method, *_ in stage.seen] == ["HEAD", "GET", "GET"]


def test_connections_past_the_limit_are_answered_503(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gateway, "MAX_CONNECTIONS", 1)
    with stand_in() as (url, _), gateway_to(url) as (running, base), httpx.Client() as client:
        assert client.get(f"{base}/echo").status_code == 200  # its connection stays open
        busy = raw(running, b"GET /echo HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert busy.startswith(b"HTTP/1.1 503 ")
        assert busy.endswith(b"the gateway serves at most 1 connections at once\n")
        assert client.get(f"{base}/echo").status_code == 200


def test_stop_ends_an_answer_under_way() -> None:
    with stand_in() as (url, stage), gateway_to(url) as (running, base):
        with httpx.stream("GET", f"{base}/sse") as answer:
            lines = answer.iter_lines()
            assert next(lines) == "data: one"
            running.stop()
            with pytest.raises(httpx.RemoteProtocolError):
                list(lines)  # the chunked answer ends unfinished
        stage.go_on.set()


def test_a_request_for_another_host_is_refused() -> None:
    with stand_in() as (url, stage), gateway_to(url) as (running, _):
        absolute = raw(running, b"GET http://evil.example/x HTTP/1.1\r\nHost: evil.example\r\n\r\n")
        assert absolute.startswith(b"HTTP/1.1 403 ")
        assert b"origin-form" in absolute
        other = raw(running, b"GET /x HTTP/1.1\r\nHost: evil.example\r\n\r\n")
        assert other.startswith(b"HTTP/1.1 403 ")
        assert b"not to Host 'evil.example'" in other
        assert stage.seen == []
        ours = raw(running, b"GET /x HTTP/1.1\r\nHost: localhost:4000\r\nConnection: close\r\n\r\n")
        assert ours.startswith(b"HTTP/1.1 200 ")
        assert len(stage.seen) == 1
        assert running.report().requests == 1


def test_an_http_10_agent_gets_an_answer_ended_by_close() -> None:
    with stand_in() as (url, _), gateway_to(url) as (running, _):
        answer = raw(running, b"GET /echo HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        head, _, body = answer.partition(b"\r\n\r\n")
        assert b"Connection: close" in head
        assert b"chunked" not in head
        assert json.loads(body)["path"] == "/api/echo"


def test_the_secret_is_in_no_error_message(caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        url = f"http://127.0.0.1:{closed.getsockname()[1]}"
        with caplog.at_level(logging.DEBUG), gateway_to(url) as (_, base):
            answer = httpx.get(f"{base}/v1/{SECRET}")
        assert answer.status_code == 502
        assert answer.text.startswith("upstream model: ConnectError")
        assert SECRET not in answer.text
        ours = [
            record.getMessage() for record in caplog.records if record.name.startswith("tireless")
        ]
        assert ours == ["upstream model: ConnectError: [Errno 111] Connection refused"]


def test_the_gateway_listens_on_a_unix_socket_anyone_may_connect_to(tmp_path: Path) -> None:
    path = str(tmp_path / "upstream-model.sock")
    with (
        stand_in() as (url, stage),
        UpstreamGateway(Upstream("model", url, "Authorization", SECRET), path) as running,
    ):
        assert running.address == path
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o666
        with httpx.Client(transport=httpx.HTTPTransport(uds=path)) as client:
            assert client.get("http://127.0.0.1:4000/echo").json()["path"] == "/api/echo"
        assert stage.seen[0][2]["Authorization"] == f"Bearer {SECRET}"
    assert not os.path.exists(path)


def test_parse_upstreams_reads_urls_headers_and_secret_files(tmp_path: Path) -> None:
    (tmp_path / "a").write_text(f"{SECRET}\n")
    (tmp_path / "b").write_text("other-secret")
    upstreams = parse_upstreams(
        ["anthropic=https://api.anthropic.com", "my-llm.v2=http://10.0.0.5:8080/v1"],
        ["my-llm.v2=X-Api-Key"],
        [f"my-llm.v2={tmp_path / 'b'}", f"anthropic={tmp_path / 'a'}"],
    )
    assert upstreams == [
        Upstream("anthropic", "https://api.anthropic.com", "Authorization", SECRET),
        Upstream("my-llm.v2", "http://10.0.0.5:8080/v1", "X-Api-Key", "other-secret"),
    ]
    assert [upstream.variable for upstream in upstreams] == [
        "TIRELESS_UPSTREAM_ANTHROPIC_URL",
        "TIRELESS_UPSTREAM_MY_LLM_V2_URL",
    ]
    assert SECRET not in repr(upstreams)


@pytest.mark.parametrize(
    ("urls", "headers", "secret", "message"),
    [
        (["a"], [], "a=S", "--upstream 'a' is not NAME=VALUE"),
        (["a=ftp://x"], [], "a=S", "--upstream a=ftp://x: not an http(s)://HOST"),
        (["a=https://u:hunter2x@x"], [], "a=S", "--upstream a: the URL carries credentials"),
        (["a=https://x", "a=https://y"], [], "a=S", "--upstream names 'a' twice"),
        (["a-b=https://x", "a_b=https://y"], [], "a-b=S", "give the same variable twice"),
        (
            ["a=https://x"],
            ["b=X-Key"],
            "a=S",
            "--upstream-header names 'b', which no --upstream defines",
        ),
        (["a=https://x"], ["a=Bad Header"], "a=S", "--upstream-header a=Bad Header: not a header"),
        (["a=https://x"], ["a=Host"], "a=S", "--upstream-header a=Host: not a header"),
        (["a=https://x"], [], None, "--upstream a has no --upstream-secret a=FILE"),
        (["a=https://x"], [], "a=MISSING", "cannot read it (FileNotFoundError)"),
        (["a=https://x"], [], "a=SHORT", "the secret must be one line of at least 4 characters"),
    ],
)
def test_parse_upstreams_names_the_bad_option_and_never_the_secret(
    tmp_path: Path, urls: list[str], headers: list[str], secret: str | None, message: str
) -> None:
    (tmp_path / "S").write_text(SECRET)
    (tmp_path / "SHORT").write_text("zq1")
    files = [] if secret is None else [secret.replace("=", f"={tmp_path}/")]
    with pytest.raises(ValueError, match="--upstream") as error:
        parse_upstreams(urls, headers, files)
    assert message in str(error.value)
    assert SECRET not in str(error.value)
    assert "zq1" not in str(error.value)
    assert "hunter2x" not in str(error.value)
