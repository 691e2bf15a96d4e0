"""`make run`: tireless at work in about a minute; `make stop` (`--stop`) stops its database.

With no DATABASE_URL it starts (or attaches to) the embedded PostgreSQL in .tireless/pgdata and
recreates the database tireless_demo in it; with DATABASE_URL it runs there. It migrates, sets a
short backoff, tracks gitea/example/widgets, enqueues examples/issues.json, and runs two
`tireless work` processes on examples/agent.sh and a `tireless sweep --every 1`, showing
`tireless status` until every job it created is settled; then it prints each job's outcome.

TIRELESS_DEMO_SIZE=small enqueues only the first 10 issues; TIRELESS_DEMO_TIMEOUT (seconds,
default 240) bounds the wait. Exit 0 when every job settled, 1 when the time ran out, 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from types import FrameType
from typing import Any

import psycopg
from psycopg.rows import kwargs_row

from tireless import queries
from tireless.cli import enqueue_and_list, fetch, job_table, render_status, status_rows
from tireless.embedded import EmbeddedPostgres
from tireless.migrate import migrate
from tireless.models import Job
from tireless.store import JobStore

HOME = Path(".tireless")
PGDATA = HOME / "pgdata"
LOGS = HOME / "logs"
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DEMO_DATABASE = "tireless_demo"
FORGE, OWNER, REPO = "gitea", "example", "widgets"
WORKERS = ("worker-a", "worker-b")
SMALL = 10


def say(text: str) -> None:
    print(text, flush=True)


def database() -> tuple[str, str | None]:
    """The demo's database URL, and the psql command for it when the demo started the server."""
    if url := os.environ.get("DATABASE_URL"):
        return url, None
    server = EmbeddedPostgres(PGDATA.resolve())
    server.start()
    with psycopg.connect(server.conninfo(), autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {DEMO_DATABASE} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {DEMO_DATABASE}")
    url = server.url(DEMO_DATABASE)
    say(f"embedded PostgreSQL in {PGDATA} on port {server.port}, database {DEMO_DATABASE}")
    return url, f'psql "{url}"'


def enqueue_examples(conn: psycopg.Connection[Any], small: bool) -> tuple[int, list[Job]]:
    """Track the example repository and enqueue its issues; the jobs this created."""
    issues = json.loads((EXAMPLES / "issues.json").read_text())[: SMALL if small else None]
    JobStore(conn).track_repo(FORGE, OWNER, REPO)
    _, jobs = enqueue_and_list(conn, issues)
    assert jobs is not None, "the demo reads the jobs it created"
    return len(issues), jobs


@contextmanager
def processes(url: str) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Two workers and a sweeper, logging to .tireless/logs; stopped (SIGTERM) on exit."""
    LOGS.mkdir(parents=True, exist_ok=True)
    env = os.environ | {"DATABASE_URL": url}
    tireless = [sys.executable, "-m", "tireless"]
    agent = ["sh", str(EXAMPLES / "agent.sh")]
    commands = {
        name: [
            *tireless,
            "work",
            "--worker",
            name,
            "--lane",
            "cc",
            "--lane",
            "oc",
            "--lease",
            "2s",
            "--poll",
            "1",
            "--grace",
            "2",
            "--",
            *agent,
        ]
        for name in WORKERS
    } | {"sweeper": [*tireless, "sweep", "--every", "1"]}
    started: list[subprocess.Popen[bytes]] = []
    try:
        for name, command in commands.items():
            with (LOGS / f"{name}.log").open("wb") as log:
                started.append(
                    subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
                )
        say(f"started {', '.join(commands)} (logs in {LOGS}/)")
        yield started
    finally:
        for process in started:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in started:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        say("stopped the workers and the sweeper")


def watch(
    conn: psycopg.Connection[Any],
    jobs: Sequence[Job],
    deadline: float,
    started: Sequence[subprocess.Popen[bytes]],
) -> list[Job]:
    """Show the status until every job is settled, the deadline passes or a process the demo
    started ends; the jobs as they are then."""
    interactive = sys.stdout.isatty()
    wanted = {job.id for job in jobs}
    params: dict[str, Any] = {"state": None, "lane": None, "owner": OWNER, "repo": REPO}
    params |= (
        {"after": min(wanted) - 1, "limit": len(wanted)} if wanted else {"after": 0, "limit": 0}
    )
    shown_at = 0.0
    while True:
        now = [
            j for j in fetch(conn, queries.JOBS, params, kwargs_row(Job.from_row)) if j.id in wanted
        ]
        settled = all(job.state.is_terminal for job in now)
        if settled or interactive or time.monotonic() - shown_at >= 5:
            table = render_status(status_rows(conn))
            say(("\033[H\033[J" if interactive else "\n") + time.strftime("%H:%M:%S\n") + table)
            shown_at = time.monotonic()
        if settled or time.monotonic() > deadline:
            return now
        if any(process.poll() is not None for process in started):
            say(f"a worker or the sweeper ended early: see {LOGS}/")
            return now
        time.sleep(1)


def interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def run() -> int:
    small = os.environ.get("TIRELESS_DEMO_SIZE", "") == "small"
    deadline = time.monotonic() + float(os.environ.get("TIRELESS_DEMO_TIMEOUT", "240"))
    url, psql = database()
    migrate(url)
    with psycopg.connect(url, autocommit=True) as conn:
        # Retries after 1 s, then 2 s; a tripped lane (5 failures in a row) closes after 2 s.
        second = timedelta(seconds=1)
        policy: dict[str, Any] = {"label_prefix": None, "breaker_threshold": None}
        policy |= {
            "backoff_base": second,
            "backoff_cap": 2 * second,
            "breaker_cooldown": 2 * second,
        }
        conn.execute(queries.SET_POLICY, policy)
        count, jobs = enqueue_examples(conn, small)
        say(f"tracking {FORGE}/{OWNER}/{REPO}; enqueued {count} issues: {len(jobs)} ask for work")
        with processes(url) as started:
            final = watch(conn, jobs, deadline, started)
    say("\n" + job_table(final))
    outcomes = {
        state: sum(job.state == state for job in final)
        for state in ("delivered", "failed", "pending", "claimed")
    }
    say(", ".join(f"{n} {state}" for state, n in outcomes.items() if n))
    if psql is not None:
        say(f"\nthe database is still running: {psql}\n`make stop` stops it")
    unsettled = outcomes["pending"] + outcomes["claimed"]
    if unsettled:
        say(f"{unsettled} job(s) not settled")
        return 1
    return 0


def stop() -> int:
    server = EmbeddedPostgres(PGDATA.resolve())
    if server.running_port() is None:
        say(f"no demo database is running in {PGDATA}")
        return 0
    server.stop()
    say(f"stopped the demo database in {PGDATA}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tireless.demo", description=__doc__)
    parser.add_argument("--stop", action="store_true", help="stop the embedded demo database")
    args = parser.parse_args(argv)
    if args.stop:
        return stop()
    signal.signal(signal.SIGTERM, interrupt)
    try:
        return run()
    except KeyboardInterrupt:
        say("\ninterrupted: every process the demo started is stopped; jobs they held are pending")
        return 130


if __name__ == "__main__":
    sys.exit(main())
