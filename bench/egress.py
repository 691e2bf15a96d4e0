"""make bench, the agent's network (issue 38): what the runner's EgressProxy (a CONNECT tunnel and
plain HTTP) and UpstreamGateway cost against a direct connection to the same loopback upstream.
The goals: at least 0.8 times the direct throughput for 1 MiB transfers, at most 1 ms added per
small request at the median.

    python bench/egress.py           5 repeats of 20 transfers and 1,000 small requests a route
    python bench/egress.py --quick   3 repeats of 5 transfers and 200 small requests

Three kinds of process, as in a job: the upstream (a threaded HTTP/1.1 server on 127.0.0.1 serving
a 1 MiB body and a tiny one); the runner's side (an EgressProxy allowing the upstream's address
and an UpstreamGateway to it, each listening on a TCP address and on a unix socket, as threads of
one process); and the client, a process per route and repeat timing its own requests: 1 MiB
transfers on one connection, then small requests each on a new connection, then small requests on
one connection (a new one only when the server closes it). The unix socket routes run the client
as tireless.runner.relay's COMMAND, as the agent runs (on the host's loopback here, no namespace).
The routes take turns in each repeat, the first rotating. Figures are medians over the repeats of
each repeat's figure (a transfer rate; a request's median latency), ratios and added milliseconds
against the direct route of the same repeat; no figure is a pass or a fail. Prints a Markdown
report.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tireless.runner.egress import EgressProxy, parse_allowlist
from tireless.runner.gateway import UpstreamGateway, parse_upstreams

BIG = random.Random(38).randbytes(1 << 20)  # random bytes: nothing for the secret's mask to find
SMALL = b'{"ok": true}\n'
RESOURCES = {"/big": BIG, "/small": SMALL}
SECRET = "bench-egress-secret-5d0e"
UPSTREAM = "bench"
WAIT = 30.0  # seconds one request may take before the bench gives up
THROUGHPUT_GOAL = 0.8  # times the direct rate
LATENCY_GOAL = 1.0  # milliseconds added at the median
WAYS = ("direct", "plain", "connect", "gateway")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# The upstream
class Resource(BaseHTTPRequestHandler):
    """/big and /small, kept alive unless the request says otherwise (HTTP/1.1, Content-Length);
    Nagle off, so the body written after the headers never waits for the client's delayed ACK."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_GET(self) -> None:
        body = RESOURCES.get(self.path)
        if body is None:
            self.send_error(404, f"no resource {self.path!r}")
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        if self.close_connection:  # the request said `Connection: close` (the proxy's does)
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # a line per request would time the terminal


def serve_upstream() -> None:
    """Prints the upstream's port, then serves until stdin closes."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Resource)
    server.daemon_threads = True
    with server:
        threading.Thread(target=server.serve_forever, name="upstream", daemon=True).start()
        print(server.server_address[1], flush=True)
        sys.stdin.read()
        server.shutdown()


# The runner's side
def serve_runner(upstream_port: int, directory: Path) -> None:
    """An EgressProxy and an UpstreamGateway to the upstream, each on TCP and on a unix socket in
    `directory`; prints their addresses as JSON, serves until stdin closes, then prints what the
    proxies and gateways counted."""
    allow = parse_allowlist([f"127.0.0.1:{upstream_port}"])  # loopback: listed as an IP literal
    secret_file = directory / "secret"
    secret_file.write_text(SECRET)
    (upstream,) = parse_upstreams(
        [f"{UPSTREAM}=http://127.0.0.1:{upstream_port}"], [], [f"{UPSTREAM}={secret_file}"]
    )
    proxy_sock, gateway_sock = directory / "proxy.sock", directory / f"upstream-{UPSTREAM}.sock"
    proxies = [
        EgressProxy(allow, ("127.0.0.1", 0)).start(),
        EgressProxy(allow, str(proxy_sock)).start(),
    ]
    gateways = [
        UpstreamGateway(upstream, ("127.0.0.1", 0)).start(),
        UpstreamGateway(upstream, str(gateway_sock)).start(),
    ]
    addresses = {
        "proxy": proxies[0].address,
        "gateway": gateways[0].address,
        "proxy_sock": str(proxy_sock),
        "gateway_sock": str(gateway_sock),
    }
    print(json.dumps(addresses), flush=True)
    sys.stdin.read()
    counted = {"proxy": [0, 0], "gateway": [0, 0]}
    for proxy in proxies:
        proxy.stop()
        for use in proxy.report().hosts:
            counted["proxy"][0] += use.requests
            counted["proxy"][1] += use.bytes_in
    for gateway in gateways:
        gateway.stop()
        use = gateway.report()
        counted["gateway"][0] += use.requests
        counted["gateway"][1] += use.bytes_in
    print(json.dumps(counted), flush=True)


# The client
@dataclass(frozen=True)
class Target:
    """Where the client connects (host, port) and how it asks for a resource of the upstream."""

    way: str
    host: str
    port: int
    upstream_port: int

    def connect(self) -> http.client.HTTPConnection:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=WAIT)
        if self.way == "connect":
            connection.set_tunnel("127.0.0.1", self.upstream_port)
        return connection

    def url(self, resource: str) -> str:
        if self.way == "plain":  # a proxy's absolute-URI request
            return f"http://127.0.0.1:{self.upstream_port}{resource}"
        return resource


def get(connection: http.client.HTTPConnection, target: Target, resource: str) -> bool:
    """One GET, its body read and checked; whether the server closes the connection after it."""
    connection.request("GET", target.url(resource))
    response = connection.getresponse()
    body = response.read()
    if response.status != 200 or body != RESOURCES[resource]:
        raise RuntimeError(
            f"{target.way} {resource}: status {response.status}, {len(body)} bytes: {body[:200]!r}"
        )
    return response.will_close


def kept(target: Target, resource: str, count: int) -> tuple[list[float], int]:
    """Seconds of each of `count` requests on one connection, a new one only when the server
    closes it (the time of opening it included); and how many connections that took."""
    seconds: list[float] = []
    connection, opened = None, 0
    for _ in range(count):
        began = time.perf_counter()
        if connection is None:
            connection, opened = target.connect(), opened + 1
        if get(connection, target, resource):
            connection.close()
            connection = None
        seconds.append(time.perf_counter() - began)
    if connection is not None:
        connection.close()
    return seconds, opened


def fresh(target: Target, count: int) -> list[float]:
    """Seconds of each of `count` small requests, each on a new connection."""
    seconds: list[float] = []
    for _ in range(count):
        began = time.perf_counter()
        connection = target.connect()
        get(connection, target, "/small")
        connection.close()
        seconds.append(time.perf_counter() - began)
    return seconds


def run_client(target: Target, transfers: int, requests: int, out: Path) -> None:
    """The timed requests of one route, after a few untimed ones; writes its figures to `out`."""
    kept(target, "/big", 2)
    fresh(target, 20)
    transfer, _ = kept(target, "/big", transfers)
    new = fresh(target, requests)
    small, small_connections = kept(target, "/small", requests)
    out.write_text(
        json.dumps(
            {
                "transfer": sum(transfer),
                "fresh": statistics.median(new),
                "kept": statistics.median(small),
                "kept_connections": small_connections,
            }
        )
    )


# The bench
@dataclass(frozen=True)
class Route:
    """One way to the upstream, named as the table names it: the client connects to (host, port),
    or, with a `socket_path`, runs under tireless.runner.relay and connects to the relay's
    loopback port for that socket."""

    name: str
    way: str
    host: str = "127.0.0.1"
    port: int = 0
    socket_path: str = ""


def free_port() -> int:
    """A port nobody listens on now (for the relay's loopback side)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def client_command(
    route: Route, upstream_port: int, transfers: int, requests: int, out: Path
) -> list[str]:
    port = free_port() if route.socket_path else route.port
    command = [
        sys.executable, __file__, "client", "--way", route.way, "--host", route.host,
        "--port", str(port), "--upstream-port", str(upstream_port),
        "--transfers", str(transfers), "--requests", str(requests), "--out", str(out),
    ]  # fmt: skip
    if not route.socket_path:
        return command
    mapping = f"{route.host}:{port}={route.socket_path}"
    return [sys.executable, "-m", "tireless.runner.relay", "--map", mapping, "--", *command]


def started(argv: list[str]) -> tuple[subprocess.Popen[str], str]:
    """A helper process of this file and the first line it prints (once it listens)."""
    process = subprocess.Popen(
        [sys.executable, __file__, *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        process.wait()
        raise RuntimeError(f"{argv[0]} did not start (exit {process.returncode})")
    return process, line


def ended(process: subprocess.Popen[str]) -> str:
    """Closes a helper's stdin (its signal to stop); what it printed after its first line."""
    rest, _ = process.communicate(timeout=WAIT)
    if process.returncode != 0:
        raise RuntimeError(f"a helper exited {process.returncode}")
    return rest


@dataclass
class Figures:
    """A route's figures, one per repeat."""

    rate: list[float]  # bytes a second over the 1 MiB transfers
    fresh: list[float]  # seconds: the median small request on a new connection
    kept: list[float]  # seconds: the median small request on one connection
    connections: list[int]  # connections those took


def spread(values: list[float], scale: float, digits: int) -> str:
    """The median (min-max), scaled."""
    low, median, high = (
        f"{v * scale:.{digits}f}" for v in (min(values), statistics.median(values), max(values))
    )
    return f"{median} ({low}-{high})"


def row(name: str, route: Figures, direct: Figures) -> str:
    """A table's row: the route's figures, its ratio and added ms against the same repeats'
    direct figures, and whether the goals are met."""
    ratio = statistics.median(a / b for a, b in zip(route.rate, direct.rate, strict=True))
    added_fresh = statistics.median(a - b for a, b in zip(route.fresh, direct.fresh, strict=True))
    added_kept = statistics.median(a - b for a, b in zip(route.kept, direct.kept, strict=True))
    goals = "(baseline)"
    if route is not direct:
        throughput = "met" if ratio >= THROUGHPUT_GOAL else "**missed**"
        latency = "met" if max(added_fresh, added_kept) * 1e3 <= LATENCY_GOAL else "**missed**"
        goals = f"{throughput}, {latency}"
    return (
        f"| {name} | {spread(route.rate, 1e-6, 0)} | {ratio:.2f}x"
        f" | {spread(route.fresh, 1e3, 3)} | {added_fresh * 1e3:+.3f}"
        f" | {spread(route.kept, 1e3, 3)} | {added_kept * 1e3:+.3f} | {max(route.connections)}"
        f" | {goals} |"
    )


def report(
    figures: dict[str, Figures],
    options: argparse.Namespace,
    counted: dict[str, list[int]],
    took: float,
) -> list[str]:
    direct = figures["direct"]
    return [
        "# The agent's network: proxy and gateway against a direct connection (issue 38)\n",
        f"{datetime.now().astimezone():%Y-%m-%d %H:%M %Z}; {os.cpu_count()} cores, load average"
        f" {os.getloadavg()[0]:.1f} at the end; all on 127.0.0.1. Per route and repeat:"
        f" {options.transfers} transfers of 1 MiB on one connection, {options.requests} small"
        f" requests each on a new connection, {options.requests} on one connection. Medians of"
        f" {options.repeats} repeats (min-max); ratios and added ms: the median over the repeats"
        " of each against the direct route of the same repeat. Goals: throughput at least"
        f" {THROUGHPUT_GOAL}x, at most {LATENCY_GOAL:g} ms added a small request (both ways).\n",
        "| route | 1 MiB transfers, MB/s | ratio | small request, new connection, ms | added"
        " | small request, one connection, ms | added | connections | goals |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
        *(row(name, route, direct) for name, route in figures.items()),
        "",
        f"Counted by the runner's side: the proxies {counted['proxy'][0]:,} requests and"
        f" {counted['proxy'][1] / 2**20:,.0f} MiB in, the gateways {counted['gateway'][0]:,}"
        f" requests and {counted['gateway'][1] / 2**20:,.0f} MiB in. The run took {took:.0f} s.",
    ]


def routes(upstream_port: int, addresses: dict[str, Any]) -> list[Route]:
    """Direct, the proxy both ways and the gateway over TCP; then the same through the relay to
    their unix sockets."""
    proxy, gateway = addresses["proxy"], addresses["gateway"]
    proxy_sock, gateway_sock = addresses["proxy_sock"], addresses["gateway_sock"]
    return [
        Route("direct", "direct", port=upstream_port),
        Route("proxy, plain HTTP", "plain", proxy[0], proxy[1]),
        Route("proxy, CONNECT", "connect", proxy[0], proxy[1]),
        Route("gateway", "gateway", gateway[0], gateway[1]),
        Route("relay, proxy.sock, plain HTTP", "plain", socket_path=proxy_sock),
        Route("relay, proxy.sock, CONNECT", "connect", socket_path=proxy_sock),
        Route("relay, the gateway's socket", "gateway", socket_path=gateway_sock),
    ]


def measure(
    taken: list[Route], upstream_port: int, options: argparse.Namespace, scratch: Path
) -> dict[str, Figures]:
    """Each route's client once a repeat, in turns, the first rotating."""
    figures = {route.name: Figures([], [], [], []) for route in taken}
    out = scratch / "client.json"
    for repeat in range(options.repeats):
        turn = repeat % len(taken)
        for route in taken[turn:] + taken[:turn]:
            command = client_command(route, upstream_port, options.transfers, options.requests, out)
            subprocess.run(command, check=True, timeout=WAIT * 20)
            timed = json.loads(out.read_text())
            into = figures[route.name]
            into.rate.append(options.transfers * len(BIG) / timed["transfer"])
            into.fresh.append(timed["fresh"])
            into.kept.append(timed["kept"])
            into.connections.append(timed["kept_connections"])
        log(f"repeat {repeat + 1} of {options.repeats} done")
    return figures


def bench(options: argparse.Namespace) -> list[str]:
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="egress-") as scratch:
        upstream, line = started(["upstream"])
        upstream_port = int(line)
        try:
            runner, line = started(
                ["runner", "--upstream-port", str(upstream_port), "--dir", scratch]
            )
            try:
                figures = measure(
                    routes(upstream_port, json.loads(line)), upstream_port, options, Path(scratch)
                )
            finally:
                counted = json.loads(ended(runner))
        finally:
            ended(upstream)
    return report(figures, options, counted, time.perf_counter() - began)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "role", nargs="?", default="bench", choices=["bench", "upstream", "runner", "client"]
    )
    parser.add_argument("--quick", action="store_true", help="3 repeats, 5 transfers, 200 requests")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--transfers", type=int, default=20, help="1 MiB transfers a route")
    parser.add_argument(
        "--requests", type=int, default=1000, help="small requests a route, each way"
    )
    parser.add_argument("--upstream-port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--way", choices=WAYS, help=argparse.SUPPRESS)
    parser.add_argument("--host", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.role == "upstream":
        serve_upstream()
    elif options.role == "runner":
        serve_runner(options.upstream_port, options.dir)
    elif options.role == "client":
        target = Target(options.way, options.host, options.port, options.upstream_port)
        run_client(target, options.transfers, options.requests, options.out)
    else:
        if options.quick:
            options.repeats, options.transfers, options.requests = 3, 5, 200
        print("\n".join(bench(options)))


if __name__ == "__main__":
    main()
