"""A stand-in forge for the tests and `make run`: a real HTTP server on 127.0.0.1 that speaks the
parts of the Gitea/Forgejo API v1 or of the GitHub REST API the poller uses (StandinForge), its
request handler, and `python -m dev.standin` (main, seed)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, TypedDict, Unpack
from urllib.parse import parse_qs, urlsplit

from dev.standin.records import Flavour, StoredIssue
from dev.standin.rest import ForgeApi


class ForgeOptions(TypedDict, total=False):
    """StandinForge's keywords besides `port`, as ForgeState takes them (dev.standin.state)."""

    token: str | None
    max_page_size: int | None
    rate_limit: int
    gitea_label_refs: Literal["ids", "both"]
    gitea_label_totals: bool
    root_url: str | None
    write_limit: tuple[int, float] | None
    scopes: Iterable[str] | None
    installation: bool


class StandinForge(ForgeApi):
    """A Gitea (also Forgejo) or a GitHub on 127.0.0.1, with its issues in memory: the state
    (dev.standin.state) served over HTTP, its API's routes in the layers below ForgeApi; the
    conversation on pull requests (reviews, permissions, checks, reactions) comes from
    dev.standin.conversation, the dependency graph from dev.standin.dependencies."""

    def __init__(self, flavour: Flavour, *, port: int = 0, **options: Unpack[ForgeOptions]) -> None:
        super().__init__(flavour, **options)
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._server.daemon_threads = True
        # serve_forever looks for shutdown() every poll interval (0.5 s by default): every stop
        # waited up to half a second for it.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._init_conversation()
        self._init_dependencies()

    # Life

    def start(self) -> StandinForge:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.open_gate()
        self._server.shutdown()
        self._server.server_close()
        self.git.close()

    def __enter__(self) -> StandinForge:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _handler(forge: StandinForge) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in separate writes: with Nagle's algorithm the body waits for the
        # client's delayed ACK (about 40 ms a request on Linux). Real forges answer at once.
        disable_nagle_algorithm = True

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            if self._git(parts.path, parts.query):
                return
            query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
            answer = forge.answer(parts.path, query, self.headers.get("Authorization"))
            body = answer.encoded()
            etag = forge.api.etag(body) if answer.status == 200 else None
            if etag is not None and self.headers.get("If-None-Match") == etag:
                # A conditional request that matches: 304, no body, and (GitHub) no rate
                # limit spent.
                with forge._lock:
                    forge.rate_remaining += 1
                self._send(304, answer.headers | {"ETag": etag}, b"", None)
                return
            headers = answer.headers | ({"ETag": etag} if etag else {})
            self._send(answer.status, headers, body, answer.content_type, answer.drip)

        def _write(self) -> None:
            parts = urlsplit(self.path)
            if self._git(parts.path, parts.query):
                return
            query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
            raw = self._body()
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                self._send(400, {}, b'{"message": "invalid JSON"}', "application/json")
                return
            answer = forge.answer(
                parts.path, query, self.headers.get("Authorization"), self.command, body
            )
            if answer.drop:
                self.close_connection = True
                return
            content_type = None if answer.status == 204 else answer.content_type
            self._send(answer.status, answer.headers, answer.encoded(), content_type)

        do_POST = do_PUT = do_PATCH = do_DELETE = _write

        def _git(self, path: str, query: str) -> bool:
            """Serves a smart-HTTP git request (True), or leaves the path to the API (False)."""
            route = forge.git_route(path)
            if route is None:
                return False
            headers = {name.lower(): value for name, value in self.headers.items()}
            answer = forge.git_answer(*route, self.command, query, headers, self._body())
            self._send(answer.status, answer.headers, answer.body, None)
            return True

        def _body(self) -> bytes:
            """The request's body, by Content-Length or chunked (git streams a large push in
            chunks: Transfer-Encoding: chunked past its http.postBuffer)."""
            if "chunked" not in self.headers.get("Transfer-Encoding", "").lower():
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else b""
            chunks = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return bytes(chunks)
                chunks += self.rfile.read(size)
                self.rfile.readline()

        def _send(
            self,
            status: int,
            headers: dict[str, str],
            body: bytes,
            content_type: str | None,
            drip: float = 0.0,
        ) -> None:
            try:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                if content_type is not None:
                    self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if drip:
                    for byte in range(len(body)):
                        self.wfile.write(body[byte : byte + 1])
                        self.wfile.flush()
                        time.sleep(drip)
                else:
                    self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet: the tests read forge.requests

    return Handler


def issues_of(forge: StandinForge, owner: str, repo: str) -> Iterator[StoredIssue]:
    """The stored issues of a repository (for tests and the demo to inspect)."""
    with forge._lock:
        yield from list(forge._repos.get((owner, repo), {}).values())


def seed(forge: StandinForge, plan: dict[str, Any]) -> int:
    """Create the repositories, labels and issues of a seed (the module's docstring shows its
    form); returns how many issues it created."""
    created = 0
    for entry in plan.get("repos", []):
        owner, repo = entry["owner"], entry["repo"]
        forge.create_repo(owner, repo)
        if entry.get("files"):
            forge.seed_git(owner, repo, dict(entry["files"]))
        with forge._lock:
            for name in entry.get("labels", []):
                forge._repo_label(owner, repo, name)
        for item in entry.get("issues", []):
            number = forge.create_issue(owner, repo, item["title"], item.get("labels", []))
            if item.get("state") == "closed":
                forge.close_issue(owner, repo, number)
            created += 1
    return created


def main(argv: list[str] | None = None) -> int:
    """`python -m dev.standin --port N [--flavour gitea|github] [--token T]
    [--seed FILE]`: serve until SIGINT/SIGTERM."""
    import argparse
    import signal
    import sys

    parser = argparse.ArgumentParser(
        prog="python -m dev.standin", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--port", type=int, default=0, help="where to listen (0: any free port)")
    parser.add_argument("--flavour", choices=["gitea", "github"], default="gitea", help="its API")
    parser.add_argument("--token", help="the only token it accepts (default: any, or none)")
    parser.add_argument("--seed", help="a JSON file of repositories, labels and issues to create")
    args = parser.parse_args(argv)
    forge = StandinForge(args.flavour, token=args.token, port=args.port)
    if args.seed:
        with open(args.seed) as file:
            issues = seed(forge, json.load(file))
    else:
        issues = 0
    stopped = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stopped.set())
    with forge:
        print(f"stand-in {args.flavour} at {forge.url} with {issues} issue(s)", flush=True)
        stopped.wait()
    print("stopped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
