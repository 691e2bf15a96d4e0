"""`make run`: tireless at work in about twenty seconds; `make stop` (`--stop`) stops its database.

With no DATABASE_URL it starts (or attaches to) the embedded PostgreSQL in PGDATA (a directory
of the system's temporary folder named after the project, so that its unix socket path stays
short and, when we are root, the postgres user can reach it wherever the project lives) and
recreates the database tireless_demo in it; with DATABASE_URL it runs there. It migrates, sets a
short backoff, tracks gitea/example/widgets, enqueues examples/issues.json, and runs two
`tireless work` processes on examples/agent.sh and a `tireless sweep --every 1`, showing
`tireless status` until every job it created is settled; then it prints each job's outcome.
Midway it crashes a runner: once a worker holds issue 6's job and runs its agent, it SIGKILLs
both and starts worker-c in its place; the sweeper returns the job when its lease runs out.

TIRELESS_DEMO_SIZE=small enqueues only the first 10 issues; TIRELESS_DEMO_TIMEOUT (seconds,
default 240) bounds the wait. Exit 0 when every job settled, 1 when the time ran out, 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from tireless import queries
from tireless.calls import JOB_ROW
from tireless.cli import enqueue_and_list, fetch, job_table, render_status, status_rows
from tireless.embedded import EmbeddedPostgres
from tireless.migrate import migrate
from tireless.models import Job
from tireless.store import JobStore

HOME = Path(".tireless")
PROJECT_DIGEST = hashlib.sha1(str(Path.cwd().resolve()).encode()).hexdigest()[:10]
PGDATA = Path(tempfile.gettempdir()) / f"tireless-demo-{PROJECT_DIGEST}"
LOGS = HOME / "logs"
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DEMO_DATABASE = "tireless_demo"
FORGE, OWNER, REPO = "gitea", "example", "widgets"
WORKERS = ("worker-a", "worker-b")
SWEEPER = "sweeper"
SMALL = 10
# examples/agent.sh works 5 s on issue 6's first attempt: time enough to kill its worker mid-job.
CRASH_ISSUE = 6
REPLACEMENT = "worker-c"
HOLDER = "SELECT claimed_by FROM tireless.active_claims WHERE id = %(job_id)s"


def say(text: str) -> None:
    print(text, flush=True)


def database() -> tuple[str, str | None]:
    """The demo's database URL, and the psql command for it when the demo started the server."""
    if url := os.environ.get("DATABASE_URL"):
        return url, None
    server = EmbeddedPostgres(PGDATA.resolve())
    server.start()
    with psycopg.connect(server.conninfo(), autocommit=True) as admin:
        name = sql.Identifier(DEMO_DATABASE)
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(name))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(name))
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


def command(name: str) -> list[str]:
    """The sweeper's command, or a worker's: `tireless work` on examples/agent.sh."""
    tireless = [sys.executable, "-m", "tireless"]
    if name == SWEEPER:
        return [*tireless, "sweep", "--every", "1"]
    lanes = ["--lane", "cc", "--lane", "oc"]
    timing = ["--lease", "2s", "--poll", "1", "--grace", "2"]
    agent = ["sh", str(EXAMPLES / "agent.sh")]
    return [*tireless, "work", "--worker", name, *lanes, *timing, "--", *agent]


class Crew:
    """The workers and the sweeper, each logging to .tireless/logs/NAME.log; leaving the `with`
    block stops (SIGTERM) those still running."""

    def __init__(self, url: str) -> None:
        self.env = os.environ | {"DATABASE_URL": url}
        self.running: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str) -> None:
        LOGS.mkdir(parents=True, exist_ok=True)
        with (LOGS / f"{name}.log").open("wb") as log:
            self.running[name] = subprocess.Popen(
                command(name), env=self.env, stdout=log, stderr=subprocess.STDOUT
            )

    def agent_of(self, name: str) -> int | None:
        """The pid of the agent the worker runs now, if any (Linux: /proc lists its children).
        `tireless work` starts each agent in a process group of its own, with that pid as id."""
        pid = self.running[name].pid
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return int(children[0]) if children else None

    def kill(self, name: str, agent: int) -> None:
        """SIGKILL the worker and its agent's process group, as a crash would: nothing finishes
        or releases the job the worker held."""
        worker = self.running.pop(name)
        worker.kill()
        worker.wait()
        with contextlib.suppress(ProcessLookupError):  # the agent ended meanwhile
            os.killpg(agent, signal.SIGKILL)

    def ended(self) -> bool:
        return any(process.poll() is not None for process in self.running.values())

    def __enter__(self) -> Crew:
        for name in (*WORKERS, SWEEPER):
            self.start(name)
        say(f"started {', '.join(self.running)} (logs in {LOGS}/)")
        return self

    def __exit__(self, kind: object, error: BaseException | None, tb: TracebackType | None) -> None:
        for process in self.running.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.running.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        say("stopped the workers and the sweeper")


class Crash:
    """The runner crash the demo stages: the worker holding `job` dies mid-job."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.victim: str | None = None

    def strike(self, conn: psycopg.Connection[Any], crew: Crew) -> str | None:
        """Once a worker holds the job and runs its agent (tireless.active_claims and the
        worker's children say so): kill both, start a replacement, and say so."""
        if self.victim is not None:
            return None
        held = conn.execute(HOLDER, {"job_id": self.job.id}).fetchone()
        if held is None or held[0] not in crew.running:
            return None
        agent = crew.agent_of(held[0])
        if agent is None:  # claimed a moment ago: the agent is not running yet
            return None
        crew.kill(held[0], agent)
        crew.start(REPLACEMENT)
        self.victim = held[0]
        return (
            f"killed {self.victim} and its agent with SIGKILL while it held job {self.job.id}"
            f" ({FORGE}/{OWNER}/{REPO}#{self.job.number}); started {REPLACEMENT} in its place"
        )

    def story(self, conn: psycopg.Connection[Any]) -> str:
        """What became of the job, from its history (tireless.job_event)."""
        events = fetch(conn, queries.JOB_EVENTS, {"job_id": self.job.id}, dict_row)
        expired = [e for e in events if (e["note"] or "").startswith(f"lease of {self.victim} ")]
        last = events[-1]
        told = f"job {self.job.id}: its runner {self.victim} was killed"
        if expired and last["to_state"] == "delivered":
            return (
                f"{told}; the sweeper returned it when the lease ran out,"
                f" and attempt {last['attempt']} ({last['worker']}) delivered it"
            )
        return f"{told}; it is {last['to_state']} after {last['attempt']} attempt(s)"


def watch(
    conn: psycopg.Connection[Any],
    jobs: Sequence[Job],
    deadline: float,
    crew: Crew,
    crash: Crash,
) -> list[Job]:
    """Show the status until every job is settled, the deadline passes or a process the demo
    started ends unbidden, striking the crash on the way; the jobs as they are then."""
    interactive = sys.stdout.isatty()
    wanted = {job.id for job in jobs}
    params: dict[str, Any] = {"state": None, "lane": None, "owner": OWNER, "repo": REPO}
    params |= (
        {"after": min(wanted) - 1, "limit": len(wanted)} if wanted else {"after": 0, "limit": 0}
    )
    shown_at = 0.0
    told: list[str] = []  # shown under the status on a terminal, which redraws it every second
    while True:
        if notice := crash.strike(conn, crew):
            told.append(time.strftime("%H:%M:%S ") + notice)
            if not interactive:
                say("\n" + told[-1])
        now = [j for j in fetch(conn, queries.JOBS, params, JOB_ROW) if j.id in wanted]
        settled = all(job.state.is_terminal for job in now)
        if settled or interactive or time.monotonic() - shown_at >= 5:
            table = render_status(status_rows(conn))
            if interactive:
                say("\033[H\033[J" + time.strftime("%H:%M:%S\n") + "\n".join([table, *told]))
            else:
                say("\n" + time.strftime("%H:%M:%S\n") + table)
            shown_at = time.monotonic()
        if settled or time.monotonic() > deadline:
            return now
        if crew.ended():
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
        policy = {
            "label_prefix": None,
            "backoff_base": second,
            "backoff_cap": 2 * second,
            "breaker_threshold": None,
            "breaker_cooldown": 2 * second,
        }
        conn.execute(queries.SET_POLICY, policy)
        count, jobs = enqueue_examples(conn, small)
        say(f"tracking {FORGE}/{OWNER}/{REPO}; enqueued {count} issues: {len(jobs)} ask for work")
        crash = Crash(next(job for job in jobs if job.number == CRASH_ISSUE))
        with Crew(url) as crew:
            final = watch(conn, jobs, deadline, crew, crash)
        say("\n" + job_table(final))
        if crash.victim is not None:
            say(crash.story(conn))
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
