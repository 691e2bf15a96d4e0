"""How soon the pull request follows the push (issue 50's Measure): with `tireless poll --every 30s`
running, each of --jobs implement jobs is run by `tireless work --once --deliver` against the
stand-in Gitea on 127.0.0.1, and the time from the delivery's commit (the job's `updated_at`) to
the pull request seen on the forge is taken. Before a delivery woke the pollers, that was up to
the poll interval (30 s); it is now one poll round.

    python bench/pull_follows_push.py [--jobs 10] [--every 30s]

Prints the median (min, max) in seconds; no figure is a pass or a fail."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg

from dev.embedded import embedded_postgres
from dev.standin import StandinForge
from tireless.forge import token_variable
from tireless.migrate import migrate
from tireless.store import JobStore

FORGE, OWNER, REPO = "gitea", "acme", "widgets"
TOKEN = "tok-bench-pull-7a2d"
IMPLEMENT = ["tireless", "tireless/implement"]


def wait_for(condition: object, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    assert callable(condition)
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.02)


def made(conn: psycopg.Connection[tuple[object, ...]], number: int) -> bool:
    """Whether the issue's job exists."""
    found = conn.execute("SELECT count(*) FROM tireless.job WHERE number = %s", (number,))
    return found.fetchone() == (1,)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=10)
    parser.add_argument("--every", default="30s", help="the poller's interval")
    options = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env[token_variable(FORGE)] = TOKEN
    with (
        tempfile.TemporaryDirectory() as scratch,
        embedded_postgres(fsync=True) as server,
        StandinForge("gitea", token=TOKEN) as forge,
    ):
        with psycopg.connect(server.conninfo(), autocommit=True) as admin:
            admin.execute("CREATE DATABASE bench")
        url = server.conninfo("bench")
        migrate(url)
        forge.seed_git(OWNER, REPO, {"README.md": "widgets\n", "f.txt": "x\n"})
        with JobStore(url) as store, psycopg.connect(url, autocommit=True) as conn:
            store.add_forge(FORGE, "gitea", forge.url)
            store.track_repo(FORGE, OWNER, REPO)
            tireless = [sys.executable, "-m", "tireless", "--database", url]
            poller = subprocess.Popen(
                [*tireless, "poll", "--every", options.every], env=env, stderr=subprocess.DEVNULL
            )
            lags: list[float] = []
            try:
                for n in range(options.jobs):
                    number = forge.create_issue(OWNER, REPO, f"Change {n}", IMPLEMENT)
                    store.poll_soon(FORGE, OWNER, REPO)  # as a webhook would: the job at once
                    wait_for(lambda n=number: made(conn, n), "the job")
                    subprocess.run(
                        [*tireless, "work", "--worker", "bench-1", "--lane", "cc", "--once",
                         "--deliver", "--state-dir", str(Path(scratch) / "state"), "--",
                         "sh", "-c", f"echo {n} >> f.txt"],
                        env=env, check=True, stderr=subprocess.DEVNULL,
                    )  # fmt: skip
                    wait_for(
                        lambda k=n + 1: len(forge.pulls_of(OWNER, REPO)) == k, "the pull request"
                    )
                    seen = time.time()
                    row = conn.execute(
                        "SELECT extract(epoch FROM updated_at)::float8 FROM tireless.job"
                        " WHERE number = %s AND state = 'delivered'",
                        (number,),
                    ).fetchone()
                    assert row is not None
                    lags.append(seen - row[0])
            finally:
                poller.terminate()
                poller.wait(timeout=30)
    print(
        f"push -> pull request opened, `poll --every {options.every}` running, {options.jobs} jobs:"
        f" median {statistics.median(lags):.2f} s (min {min(lags):.2f}, max {max(lags):.2f})"
    )


if __name__ == "__main__":
    main()
