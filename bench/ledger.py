"""make bench, the ledger (issue 48): what reading each answer's usage as it streams, counting it
and keeping the transcript add to a streamed model answer through the UpstreamGateway, against the
same gateway without a ledger in the same run. The goals: at most 1 ms added per streamed request
at the median, and at least 0.9 times the gateway's throughput without the ledger.

    python bench/ledger.py           5 repeats of 300 small streamed answers and 5 large ones a route
    python bench/ledger.py --quick   3 repeats of 60 small streamed answers and 2 large ones

An upstream on loopback streams Anthropic Messages and Chat Completions answers as the scripted
model stand-in makes them (dev/model_standin's events, built once), an event a write with Nagle
off; two gateways to it listen on loopback, one without a ledger and one with a Ledger whose
records go to memory (the store's calls run in the ledger's own thread, a second apart, not in the
answer's path: what they cost the database is the store's benches'), keeping the transcript
masked and compressed. A client process per API and repeat times its requests, each sent to both
routes in turn (the first alternating, so that the shared machine's load weighs on both alike), on
one kept-alive connection a route: small answers (a short reply; the time to the answer's last
byte) and large ones (a 1 MiB reply of 24-character deltas, as the API streams: bytes per
second). Figures are medians over the repeats of each repeat's figure;
the ledger's against the plain gateway's of the same repeat. Prints a Markdown report.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

from dev.model_standin import Usage, anthropic, openai
from tireless.masking import Masker
from tireless.runner.gateway import Upstream as Model
from tireless.runner.gateway import UpstreamGateway
from tireless.runner.ledger import Ledger

SECRET = "bench-ledger-secret-5d0e"
LARGE = "x" * (1 << 20)
LARGE_MARK = 999_999  # max_tokens of a request for the large answer
LATENCY_GOAL = 1.0  # milliseconds added at the median
THROUGHPUT_GOAL = 0.9  # times the gateway's rate without the ledger
APIS = {
    "anthropic": (
        "/v1/messages",
        {"model": "claude-sonnet-4-5", "max_tokens": 100, "stream": True},
    ),
    "chat": ("/v1/chat/completions", {"model": "gpt-5", "stream": True}),
}

CLIENT = r"""
import http.client, json, sys, time
ports, path, body, count = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3].encode(), int(sys.argv[4])
conns = [http.client.HTTPConnection("127.0.0.1", port, timeout=60) for port in ports]
times, sizes = [[] for _ in ports], [[] for _ in ports]
for n in range(count):
    for which in (range(len(ports)) if n % 2 == 0 else reversed(range(len(ports)))):
        start = time.perf_counter()
        conns[which].request("POST", path, body, {"Content-Type": "application/json"})
        answer = conns[which].getresponse()
        data = answer.read()
        times[which].append(time.perf_counter() - start)
        sizes[which].append(len(data))
        assert answer.status == 200, (answer.status, data[:200])
print(json.dumps({"times": times, "sizes": sizes}))
"""


class Upstream(BaseHTTPRequestHandler):
    """POST /v1/messages and /v1/chat/completions: a streamed answer, short or of LARGE (the
    request's max_tokens says which), its events built once."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    answers: ClassVar[dict[tuple[str, bool, bool], list[bytes]]] = {}

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        api = "anthropic" if self.path.endswith("/messages") else "chat"
        large = request.get("max_tokens") == LARGE_MARK or request.get("user") == "large"
        include = bool((request.get("stream_options") or {}).get("include_usage"))
        events = self.answers[(api, large, include and api == "chat")]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in events:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, format: str, *args: Any) -> None:
        pass


def build_answers(usage: Usage) -> None:
    for large in (False, True):
        text = LARGE if large else "Done: the change is made."
        Upstream.answers[("anthropic", large, False)] = list(
            anthropic.stream("claude-sonnet-4-5", "msg_bench", text, None, usage)
        )
        for include in (False, True):
            Upstream.answers[("chat", large, include)] = list(
                openai.chunks("gpt-5", "chatcmpl-bench", text, None, usage, include)
            )


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def client(ports: list[int], api: str, count: int, large: bool) -> dict[str, Any]:
    """Each request sent to every route in turn (the first alternating), so that the machine's
    load weighs on the routes alike."""
    path, body = APIS[api]
    request = {**body, "messages": [{"role": "user", "content": "hi"}]}
    if large:
        request |= {"max_tokens": LARGE_MARK} if api == "anthropic" else {"user": "large"}
    done = subprocess.run(
        [sys.executable, "-c", CLIENT, json.dumps(ports), path, json.dumps(request), str(count)],
        capture_output=True, text=True, check=True, timeout=600,
    )  # fmt: skip
    measured: dict[str, Any] = json.loads(done.stdout)
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    repeats, small, large = (3, 60, 2) if args.quick else (5, 300, 5)
    usage = Usage(1200, 300, 5000, 100)
    recorded: list[Any] = []
    kept: list[Any] = []
    not_budgeted = {"budgeted": False, "spent": None, "note": None}

    def record(rows: Any) -> dict[str, Any]:
        recorded.append(rows)
        return not_budgeted

    ledger = Ledger(record, lambda: not_budgeted, keep=kept.append, masker=Masker([SECRET])).start()
    results: dict[tuple[str, str], dict[str, list[float]]] = {}
    build_answers(usage)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    upstream = Model("model", f"http://127.0.0.1:{server.server_address[1]}", "x-api-key", SECRET)
    with (
        UpstreamGateway(upstream, ("127.0.0.1", 0)) as plain,
        UpstreamGateway(upstream, ("127.0.0.1", 0), ledger) as counting,
    ):
        routes = {"gateway": plain, "gateway + ledger": counting}
        ports = []
        for gateway in routes.values():
            address = gateway.address
            assert isinstance(address, tuple)
            ports.append(address[1])
        for repeat in range(repeats):
            for api in APIS:
                short = client(ports, api, small, False)
                long = client(ports, api, large, True)
                for index, name in enumerate(routes):
                    figures = results.setdefault((api, name), {"latency": [], "rate": []})
                    figures["latency"].append(statistics.median(short["times"][index]) * 1000)
                    figures["rate"].append(sum(long["sizes"][index]) / sum(long["times"][index]))
            log(f"repeat {repeat + 1} of {repeats} done")
    server.shutdown()
    ledger.close()
    counted = sum(row["requests"] for rows in recorded for row in rows)
    print(f"# The ledger's cost to a streamed answer ({datetime.now():%Y-%m-%d %H:%M})\n")
    print(f"{repeats} repeats; a repeat: {small} small streamed answers and {large} of 1 MiB a route"
          f" and API. The ledger counted {counted} requests and kept {len(kept)} exchanges.\n")  # fmt: skip
    print("| API | route | median latency (ms) | added (ms) | throughput (MiB/s) | ratio |")
    print("|---|---|---:|---:|---:|---:|")
    for api in APIS:
        base = results[(api, "gateway")]
        for name in ("gateway", "gateway + ledger"):
            figures = results[(api, name)]
            added = [f - b for f, b in zip(figures["latency"], base["latency"], strict=True)]
            ratio = [f / b for f, b in zip(figures["rate"], base["rate"], strict=True)]
            print(
                f"| {api} | {name} | {statistics.median(figures['latency']):.2f} |"
                f" {statistics.median(added):+.2f} | {statistics.median(figures['rate']) / (1 << 20):.1f} |"
                f" {statistics.median(ratio):.2f} |"
            )  # fmt: skip
    print(f"\nGoals: at most {LATENCY_GOAL} ms added at the median, at least {THROUGHPUT_GOAL}x"
          " the throughput of the gateway without the ledger.")  # fmt: skip


if __name__ == "__main__":
    main()
