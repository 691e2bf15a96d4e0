"""A model API's key kept out of the sandbox: the agent talks plain HTTP to a gateway on loopback,
which forwards each request to the upstream's real URL (over TLS for https), adds the secret
header, and streams the answer back with the secret masked; with a ledger, it reads each model
answer's usage as it passes (tireless.usage) and refuses a request once a budget is spent."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import itertools
import json
import logging
import os
import re
import socket
import socketserver
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, Self
from urllib.parse import urlsplit

import httpx

from tireless.masking import SHORTEST, Masker, OutputMasker
from tireless.runner.egress import HostUse, family_of, split_host_port
from tireless.runner.ledger import TRANSCRIPT_KEPT, Exchange, Ledger
from tireless.usage import Api, Usage, UsageReader, api_of, ask_for_usage, requested_model

log = logging.getLogger(__name__)

BODY_LIMIT = 64 * 1024 * 1024
"""The largest request body forwarded; a larger one is answered 413."""
TIMEOUT = httpx.Timeout(120.0, connect=10.0)
"""Model APIs think before they answer: two minutes for each read."""
MAX_CONNECTIONS = 256
"""Agent connections served at once; one more is answered 503 (each holds a thread)."""
IDLE_TIMEOUT = 300.0
"""Seconds an agent's connection may stay silent (between requests, or mid-body) before it is closed."""
STOP_POLL = 0.05
"""Seconds between the listener's checks for `stop`."""
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
"""The Host names the agent may use for the gateway; any other is a request for another host."""
HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade"}
)
NOT_FORWARDED = HOP_BY_HOP | {"host", "authorization", "accept-encoding", "expect"}
"""Request headers the gateway sets itself (or httpx does), besides the secret's and Proxy-*
(and Content-Length when the body came chunked)."""
NOT_RETURNED = HOP_BY_HOP | {"content-length", "content-encoding"}
"""Response headers that no longer hold once the body is decoded, masked and re-framed."""
UNSETTABLE = (NOT_FORWARDED | {"content-length"}) - {"authorization"}
"""Headers that cannot carry the secret: HTTP's own, or ones the gateway sets."""
TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")


@dataclass(frozen=True, slots=True)
class Upstream:
    """A service the agent reaches through a gateway; its secret never leaves the runner."""

    name: str
    url: str
    header: str
    secret: str = field(repr=False)

    @property
    def variable(self) -> str:
        """The agent's environment variable naming the gateway's URL."""
        return variable(self.name)

    @property
    def header_value(self) -> str:
        """`Bearer <secret>` for Authorization unless the secret names its own scheme."""
        if self.header.lower() == "authorization" and " " not in self.secret:
            return f"Bearer {self.secret}"
        return self.secret


def variable(name: str) -> str:
    """`TIRELESS_UPSTREAM_<NAME>_URL`, NAME upper-cased and every other character than A-Z0-9 an _."""
    return f"TIRELESS_UPSTREAM_{re.sub('[^A-Z0-9]', '_', name.upper())}_URL"


def parse_upstreams(
    names_urls: Sequence[str], headers: Sequence[str], secret_files: Sequence[str]
) -> list[Upstream]:
    """`NAME=URL`, `NAME=HEADER` (default Authorization) and `NAME=/path/to/secret` options, in
    the order of the URLs; ValueError naming the bad option (never a secret's content)."""
    urls = pairs("--upstream", names_urls)
    for name, url in urls.items():
        check_url(name, url)
    variables = [variable(name) for name in urls]
    if len(set(variables)) < len(variables):
        raise ValueError(f"--upstream names {sorted(urls)} give the same variable twice")
    named_headers = pairs("--upstream-header", headers, urls)
    for name, header in named_headers.items():
        if not TOKEN.fullmatch(header) or header.lower() in UNSETTABLE:
            raise ValueError(f"--upstream-header {name}={header}: not a header the gateway can set")
    files = pairs("--upstream-secret", secret_files, urls)
    return [
        Upstream(name, url, named_headers.get(name, "Authorization"), read_secret(name, files))
        for name, url in urls.items()
    ]


def pairs(
    option: str, values: Sequence[str], known: dict[str, str] | None = None
) -> dict[str, str]:
    named: dict[str, str] = {}
    for value in values:
        name, equals, rest = value.partition("=")
        if not equals or not NAME.fullmatch(name) or not rest:
            raise ValueError(
                f"{option} {value!r} is not NAME=VALUE (NAME a letter, then letters, digits, _ . -)"
            )
        if name in named:
            raise ValueError(f"{option} names {name!r} twice")
        if known is not None and name not in known:
            raise ValueError(f"{option} names {name!r}, which no --upstream defines")
        named[name] = rest
    return named


def check_url(name: str, url: str) -> None:
    """An http(s) URL without credentials (the error would show them), query or fragment."""
    if "@" in url:
        raise ValueError(f"--upstream {name}: the URL carries credentials; give a secret file")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        parts = None
    if (
        parts is None
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.query
        or parts.fragment
    ):
        raise ValueError(f"--upstream {name}={url}: not an http(s)://HOST[:PORT][/PATH] URL")


def read_secret(name: str, files: dict[str, str]) -> str:
    if name not in files:
        raise ValueError(f"--upstream {name} has no --upstream-secret {name}=FILE")
    try:
        secret = Path(files[name]).read_text().strip()
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(
            f"--upstream-secret {name}={files[name]}: cannot read it ({type(error).__name__})"
        ) from None
    if len(secret) < SHORTEST or "\n" in secret or "\r" in secret:
        raise ValueError(
            f"--upstream-secret {name}={files[name]}: the secret must be one line of at least {SHORTEST} characters"
        )
    return secret


class Answer(Exception):
    """A request the gateway answers itself, with a status and a one-line reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


class UpstreamGateway:
    """Serves plain HTTP on a unix socket path or a TCP (host, port) and forwards every request
    (the methods APIs use) to the upstream: url + path?query, the secret header added."""

    def __init__(
        self, upstream: Upstream, listen: str | tuple[str, int], ledger: Ledger | None = None
    ) -> None:
        self.upstream = upstream
        self.ledger = ledger
        self._listen = listen
        self.masker = Masker([upstream.secret])
        url = httpx.URL(upstream.url)
        self._use = HostUse(url.host, url.port or (443 if url.scheme == "https" else 80))
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self.limit = MAX_CONNECTIONS
        self._client: httpx.Client | None = None
        self._server: socketserver.BaseServer | None = None
        self._serving: threading.Thread | None = None

    @property
    def address(self) -> str | tuple[str, int]:
        """Where it listens: the unix socket's path, or the bound (host, port)."""
        if isinstance(self._server, TCPServer):
            host, port = self._server.server_address[:2]
            return str(host), int(port)
        return self._listen

    def start(self) -> Self:
        self._client = httpx.Client(timeout=TIMEOUT, follow_redirects=False)
        if isinstance(self._listen, str):
            self._server = UnixServer(self._listen, self)
            # The agent connects as another user; the directory around the socket guards it.
            os.chmod(self._listen, 0o666)
        else:
            self._server = TCPServer(self._listen, self)
        self._serving = threading.Thread(
            target=self._server.serve_forever,
            args=(STOP_POLL,),
            name=f"gateway-{self.upstream.name}",
            daemon=True,
        )
        self._serving.start()
        return self

    def stop(self) -> None:
        """Closes the listener and every open connection."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if isinstance(self._listen, str):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._listen)
        with self._lock:
            for conn in self._open:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
        if self._client is not None:
            self._client.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def report(self) -> HostUse:
        """Requests and bytes to and from the upstream's host so far; safe while it runs."""
        with self._lock:
            return dataclasses.replace(self._use)

    def counted(self, *, requests: int = 0, bytes_in: int = 0, bytes_out: int = 0) -> None:
        with self._lock:
            self._use.requests += requests
            self._use.bytes_in += bytes_in
            self._use.bytes_out += bytes_out

    @contextlib.contextmanager
    def tracked(self, conn: socket.socket) -> Iterator[bool]:
        """Keeps conn among the open ones `stop` shuts, while the block runs; False (and not
        kept) when MAX_CONNECTIONS are open already."""
        with self._lock:
            taken = len(self._open) < self.limit
            if taken:
                self._open.add(conn)
        try:
            yield taken
        finally:
            with self._lock:
                self._open.discard(conn)

    @property
    def client(self) -> httpx.Client:
        assert self._client is not None, "the gateway is not started"
        return self._client


class Forwarder(BaseHTTPRequestHandler):
    """One agent connection: each request forwarded, its answer streamed back masked."""

    protocol_version = "HTTP/1.1"  # keep-alive and chunked answers
    timeout = IDLE_TIMEOUT
    gateway: UpstreamGateway

    busy = False
    """All the gateway's connections are taken: this one's request is answered 503."""

    def handle(self) -> None:
        with self.gateway.tracked(self.connection) as taken:
            if taken:
                super().handle()
            else:
                self.busy = True
                self.handle_one_request()

    def log_message(self, format: str, *args: Any) -> None:
        """Requests are counted, not logged."""

    def forward(self) -> None:
        """Forwards one request to url + path?query and streams the answer back, or refuses it."""
        gateway, upstream = self.gateway, self.gateway.upstream
        try:
            if self.busy:
                raise Answer(503, f"the gateway serves at most {gateway.limit} connections at once")
            check_target(self.path, self.headers.get_all("Host") or [])
            asked = request_body(self.headers, self.rfile)
            body: Iterable[bytes] | bytes | None = asked
            api = None if gateway.ledger is None else api_of(self.command, self.path)
            headers = forwarded(self.headers, upstream)
            reader = None
            if api is not None:
                assert gateway.ledger is not None
                if (note := gateway.ledger.refusal()) is not None:
                    self.spent(api, note)
                    return
                body, headers, reader = self.read_usage(api, asked or iter(()), headers)
                if isinstance(body, bytes):
                    gateway.counted(bytes_out=len(body))
            url = upstream.url.rstrip("/") + self.path
            with gateway.client.stream(
                self.command,
                url,
                headers=headers,
                content=body if body is None or isinstance(body, bytes) else self.counted(body),
            ) as response:
                gateway.counted(requests=1)
                if reader is not None:
                    reader.started(response)
                self.answer(response, reader)
        except Answer as refusal:
            self.refuse(refusal.status, refusal.reason)
        except httpx.HTTPError as error:
            reason = gateway.masker.mask(
                f"upstream {upstream.name}: {type(error).__name__}: {error}"
            )
            log.warning("%s", reason)
            self.refuse(502, reason)
        except (httpx.InvalidURL, UnicodeError) as error:
            self.refuse(400, f"the request cannot be forwarded: {type(error).__name__}")
        except OSError:
            self.close_connection = True  # the agent went away

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = forward

    def counted(self, body: Iterable[bytes]) -> Iterator[bytes]:
        for chunk in body:
            self.gateway.counted(bytes_out=len(chunk))
            yield chunk

    def read_usage(
        self, api: Api, body: Iterator[bytes], headers: list[tuple[str, str]]
    ) -> tuple[Iterable[bytes] | bytes, list[tuple[str, str]], AnswerUsage]:
        """A model request's body and headers as forwarded, and what reads its answer's usage: a
        Chat Completions request is read whole, to ask a stream for its usage (its length then
        set again by httpx)."""
        ledger = self.gateway.ledger
        assert ledger is not None
        if api is not Api.CHAT:
            first = next(body, b"")
            exchange = AnswerUsage(ledger, api, requested_model(first[:65536]), False)
            return exchange.keep_request(itertools.chain((first,), body)), headers, exchange
        whole, added = ask_for_usage(b"".join(body))
        if added:
            headers = [(n, v) for n, v in headers if n.lower() != "content-length"]
        exchange = AnswerUsage(ledger, api, requested_model(whole[:65536]), added)
        exchange.keep(whole)
        return whole, headers, exchange

    def spent(self, api: Api, note: str) -> None:
        """Answers a model request in the vendor's own error JSON: the budget is spent."""
        message = f"tireless: {note}"
        error: dict[str, Any] = (
            {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
            if api is Api.ANTHROPIC
            else {
                "error": {
                    "message": message,
                    "type": "insufficient_quota",
                    "param": None,
                    "code": "insufficient_quota",
                }
            }
        )
        body = json.dumps(error).encode()
        self.send_response_only(400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def answer(self, response: httpx.Response, reader: AnswerUsage | None = None) -> None:
        """The upstream's status and headers (masked), then its body masked chunk by chunk:
        chunked for an HTTP/1.1 agent, close-delimited for an HTTP/1.0 one."""
        masker = self.gateway.masker
        self.send_response_only(response.status_code, response.reason_phrase)
        for name, value in response.headers.multi_items():
            if name.lower() not in NOT_RETURNED:
                self.send_header(name, masker.mask(value))
        # No body by definition (RFC 9112 6.3): nothing to frame.
        bodiless = self.command == "HEAD" or response.status_code in (204, 304)
        chunked = self.request_version == "HTTP/1.1"
        if chunked and not bodiless:
            self.send_header("Transfer-Encoding", "chunked")
        elif not bodiless:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if bodiless:
            return
        masked = OutputMasker(masker)

        def send(data: bytes) -> None:
            if not data:  # held back (a partial line, the start of a secret): nothing to send yet
                return
            if reader is not None:
                reader.keep_answer(data)
            self.wfile.write(framed(data, chunked))

        try:
            for chunk in response.iter_bytes():
                self.gateway.counted(bytes_in=len(chunk))
                send(masked.feed(chunk if reader is None else reader.feed(chunk)))
            if reader is not None:
                send(masked.feed(reader.end()))
            send(masked.end())
        except httpx.HTTPError as error:
            log.warning(
                "%s",
                masker.mask(
                    f"upstream {self.gateway.upstream.name} broke off: {type(error).__name__}: {error}"
                ),
            )
            self.close_connection = True  # the agent sees an unfinished answer
            return
        finally:
            if reader is not None:
                reader.counted(masker, response.status_code)
        if chunked:
            self.wfile.write(b"0\r\n\r\n")

    def refuse(self, status: int, reason: str) -> None:
        """Answers status with a one-line reason and closes: the request's body may be unread."""
        body = reason.encode() + b"\n"
        self.send_response_only(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True


class AnswerUsage:
    """One model request's exchange: its answer read for its usage, and its request and answer
    kept for the transcript (at most TRANSCRIPT_KEPT bytes of each), which the ledger has once
    the answer ended (an error answer: a request of no tokens; one whose usage cannot be read, or
    broken off: unread)."""

    def __init__(self, ledger: Ledger, api: Api, model: str | None, strip: bool) -> None:
        self._ledger, self._api, self._model, self._strip = ledger, api, model, strip
        self._reader: UsageReader | None = None
        self._usage: Usage | None = None
        self._error = False
        self._done = False
        self._request: list[bytes] = []
        self._answer: list[bytes] = []
        self._sizes = [0, 0]

    def keep_request(self, body: Iterable[bytes]) -> Iterator[bytes]:
        """The request's body as it is forwarded, kept as it passes."""
        for chunk in body:
            self.keep(chunk)
            yield chunk

    def keep(self, request: bytes) -> None:
        self._keep(self._request, 0, request)

    def keep_answer(self, data: bytes) -> None:
        self._keep(self._answer, 1, data)

    def _keep(self, kept: list[bytes], which: int, data: bytes) -> None:
        self._sizes[which] += len(data)
        if self._ledger.keeps_transcript and self._sizes[which] <= TRANSCRIPT_KEPT:
            kept.append(data)

    def started(self, response: httpx.Response) -> None:
        stream = response.headers.get("content-type", "").startswith("text/event-stream")
        self._error = response.status_code >= 400
        self._reader = UsageReader(self._api, stream, self._model or "unknown", self._strip)

    def feed(self, chunk: bytes) -> bytes:
        return chunk if self._reader is None else self._reader.feed(chunk)

    def end(self) -> bytes:
        """What the reader still held; the answer's usage is read."""
        if self._reader is None:
            return b""
        rest, self._usage = self._reader.end()
        return rest

    def counted(self, masker: Masker, status: int) -> None:
        """Hands the exchange to the ledger once: its usage (or, broken off, what was read of it
        so far, unread), its request (masked) and answer."""
        if self._done:
            return
        self._done = True
        usage = self._usage
        if usage is None:  # broken off: its tokens so far, said to be unread
            usage = (
                Usage(self._model or "unknown") if self._reader is None else self._reader.end()[1]
            )
            usage.read = False
        if self._error and not usage.read:
            usage.read = True  # an error answer used no tokens
        self._ledger.add(usage)
        whole = max(self._sizes) <= TRANSCRIPT_KEPT and self._ledger.keeps_transcript
        self._ledger.add_exchange(
            Exchange(
                self._api.value, usage.model, status,
                masker.mask_bytes(b"".join(self._request)) if whole else None,
                b"".join(self._answer) if whole else None,
                self._sizes[0], self._sizes[1],
            )
        )  # fmt: skip


def framed(data: bytes, chunked: bool) -> bytes:
    """data as one chunk of a chunked body (nothing for no data: an empty chunk ends the body)."""
    if not chunked or not data:
        return data
    return b"%x\r\n%s\r\n" % (len(data), data)


def check_target(path: str, hosts: list[str]) -> None:
    """Refuses a request meant for another host than the gateway itself."""
    if not path.startswith("/"):
        raise Answer(403, "the gateway forwards origin-form paths (/PATH) to its upstream only")
    if any(segment in (".", "..") for segment in path.partition("?")[0].split("/")):
        raise Answer(400, "the path has . or .. segments")
    if len(hosts) > 1:
        raise Answer(400, "the request has more than one Host header")
    for host in hosts:
        try:
            name, _ = split_host_port(host.strip(), None)
        except ValueError:
            name = host
        if name not in LOCAL_HOSTS:
            raise Answer(403, f"the gateway forwards to its upstream only, not to Host {host!r}")


def forwarded(headers: Any, upstream: Upstream) -> list[tuple[str, str]]:
    """The agent's headers less hop-by-hop ones, Host, Authorization, Proxy-* and any of the
    secret's name; then the secret's header."""
    named_in_connection = {
        token.strip().lower()
        for value in headers.get_all("Connection") or []
        for token in value.split(",")
    }
    dropped = NOT_FORWARDED | named_in_connection | {upstream.header.lower()}
    if "Transfer-Encoding" in headers:
        dropped |= {"content-length"}
    kept = [
        (name, value)
        for name, value in headers.items()
        if name.lower() not in dropped and not name.lower().startswith("proxy-")
    ]
    return [*kept, (upstream.header, upstream.header_value)]


def request_body(headers: Any, rfile: io.BufferedIOBase) -> Iterator[bytes] | None:
    """The request's body as it arrives (Content-Length or chunked), at most BODY_LIMIT bytes;
    None when it has none."""
    encoding = headers.get_all("Transfer-Encoding") or []
    if encoding:
        if [value.strip().lower() for value in encoding] != ["chunked"]:
            raise Answer(400, f"Transfer-Encoding {', '.join(encoding)!r} is not plain chunked")
        return chunked_body(rfile)
    lengths = headers.get_all("Content-Length") or []
    if not lengths:
        return None
    length = lengths[0]
    if len(lengths) > 1 or not length.isdigit():
        raise Answer(400, f"Content-Length {length!r} is not a number")
    if int(length) > BODY_LIMIT:
        raise Answer(413, f"the body is longer than {BODY_LIMIT} bytes")
    return sized_body(rfile, int(length))


def sized_body(rfile: io.BufferedIOBase, length: int) -> Iterator[bytes]:
    while length > 0:
        chunk = rfile.read(min(length, 65536))
        if not chunk:
            raise Answer(400, "the body ended before its Content-Length")
        length -= len(chunk)
        yield chunk


def chunked_body(rfile: io.BufferedIOBase) -> Iterator[bytes]:
    total = 0
    while True:
        size_line = rfile.readline(1024).split(b";")[0].strip()
        try:
            size = int(size_line, 16)
        except ValueError:
            raise Answer(400, "a chunk's size is not hexadecimal") from None
        total += size
        if total > BODY_LIMIT:
            raise Answer(413, f"the body is longer than {BODY_LIMIT} bytes")
        if size == 0:
            while rfile.readline(65536) not in (b"\r\n", b"\n", b""):
                pass  # trailers: dropped
            return
        yield from sized_body(rfile, size)
        rfile.readline(3)  # the chunk's CRLF


class TCPServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], gateway: UpstreamGateway) -> None:
        self.address_family = family_of(address[0])
        # Nagle off: an answer's head and its chunks never wait for the agent's delayed ACK.
        handler = type(
            "Forwarder", (Forwarder,), {"gateway": gateway, "disable_nagle_algorithm": True}
        )
        super().__init__(address, handler)


class UnixServer(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, gateway: UpstreamGateway) -> None:
        super().__init__(path, type("Forwarder", (Forwarder,), {"gateway": gateway}))
