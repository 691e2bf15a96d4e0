"""What the test modules share: builders of test issues and jobs, shortcuts into the database as
the superuser, the `tireless` command as a subprocess, and `wait_until`, the one way a test waits
for something to happen (bounded, so a bug fails the test instead of hanging it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from psycopg import sql

from tests.conftest import Database
from tireless import DiscoveredIssue, Job, JobStore
from tireless.store.calls import JOB_COLUMNS, JOB_ROW

FORGE, OWNER, REPO = "gitea", "acme", "widgets"
TEST_REPO = (FORGE, OWNER, REPO)
"""The test repository's key, for the calls that take forge, owner and repo."""
WORK = ("tireless", "tireless/implement")


def issue(
    number: int, *labels: str, state: str = "open", repo: str = REPO, **extra: Any
) -> DiscoveredIssue:
    """An issue of the test repository; with no labels given it asks for an implementation."""
    return DiscoveredIssue(FORGE, OWNER, repo, number, state=state, labels=labels or WORK, **extra)


REGISTER_FORGE = "SELECT tireless.add_forge(name => 'gitea', kind => 'gitea', base_url => 'https://gitea.invalid')"
"""`registered` in SQL, for a test on a connection of its own: the test repository's forge."""


def track(store: JobStore, forge: str, owner: str, repo: str) -> bool:
    """`store.track_repo` for a test that registers no forge of its own: track_repo refuses a forge
    that is not registered, so the forge is registered for the call and removed again, leaving the
    store as the test set it up but for the tracking (no poll reads it, no mirror writes wait for
    it). A forge the test registered (its stand-in) stays as it is."""
    known = any(registered.name == forge for registered in store.forges())
    if not known:
        store.add_forge(forge, "gitea", f"https://{forge}.invalid")
    try:
        return store.track_repo(forge, owner, repo)
    finally:
        if not known:
            store.remove_forge(forge)


def tracked(store: JobStore, repo: str = REPO) -> JobStore:
    """The store with the test repository tracked (`track`: its forge as the test left it)."""
    track(store, FORGE, OWNER, repo)
    return store


def enqueue_jobs(store: JobStore, count: int, *labels: str, first: int = 1) -> int:
    """Track the test repository and enqueue `count` issues asking for work; returns how many were created."""
    tracked(store)
    return store.enqueue([issue(n, *labels) for n in range(first, first + count)])


def insert_job(conn: psycopg.Connection[Any], number: int, state: str = "pending") -> int:
    """Insert a well-formed job row for an issue of the test repository straight into
    tireless.job, past the API (the caller is the superuser); a claimed one holds a claim of
    runner-1 and one attempt. Returns its id."""
    claimed = state == "claimed"
    row = conn.execute(
        """INSERT INTO tireless.job (forge, owner, repo, number, kind, lane, state,
                                     claimed_by, claim_expires_at, claim_token, attempts)
           VALUES (%(forge)s, %(owner)s, %(repo)s, %(number)s, 'implement', 'cc', %(state)s,
                   CASE WHEN %(claimed)s THEN 'runner-1' END,
                   CASE WHEN %(claimed)s THEN now() + interval '10 minutes' END,
                   CASE WHEN %(claimed)s THEN gen_random_uuid() END,
                   CASE WHEN %(claimed)s THEN 1 ELSE 0 END)
           RETURNING id""",
        {
            "forge": FORGE,
            "owner": OWNER,
            "repo": REPO,
            "number": number,
            "state": state,
            "claimed": claimed,
        },
    ).fetchone()
    assert row is not None
    job_id: int = row[0]
    return job_id


def claimed(store: JobStore, worker: str = "w1", lanes: Sequence[str] = ("cc",)) -> Job:
    """The job `worker` claims in `lanes`; there must be one."""
    job = store.claim_next(worker, lanes)
    assert job is not None
    return job


def rows(db: Database, query: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
    """Every row of a query, run as the superuser."""
    with db.connect() as conn:
        return conn.execute(query, params).fetchall()


def job_count(db: Database) -> int:
    """How many jobs the database holds, in every state."""
    count: int = db.scalar("SELECT count(*) FROM tireless.job")
    return count


def jobs(db: Database) -> list[Job]:
    """Every job, oldest first, as the superuser reads them."""
    with db.connect() as conn, conn.cursor(row_factory=JOB_ROW) as cur:
        return cur.execute(
            sql.SQL("SELECT {} FROM tireless.job ORDER BY id").format(JOB_COLUMNS)
        ).fetchall()


def end_lease(db: Database, job_id: int) -> None:
    """Move the job's lease into the past (as the superuser), so the sweeper takes it."""
    with db.connect() as conn:
        conn.execute(
            "UPDATE tireless.job SET claim_expires_at = now() - interval '1 second'"
            " WHERE id = %(id)s",
            {"id": job_id},
        )


def make_available(db: Database, job_id: int) -> None:
    """End the job's backoff now (as the superuser) instead of waiting it out."""
    with db.connect() as conn:
        conn.execute(
            "UPDATE tireless.job SET available_at = now() WHERE id = %(id)s", {"id": job_id}
        )


def history(db: Database, job_id: int) -> list[tuple[Any, ...]]:
    """The job's events in order: (from_state, to_state, worker, attempt, note)."""
    return rows(
        db,
        "SELECT from_state::text, to_state::text, worker, attempt, note"
        " FROM tireless.job_event WHERE job_id = %(id)s ORDER BY id",
        {"id": job_id},
    )


def tireless_cli(
    database_url: str | None, *args: str, stdin: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """`python -m tireless ARGS...` against the database (None: no DATABASE_URL at all)."""
    environment = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"} | env
    if database_url is not None:
        environment["DATABASE_URL"] = database_url
    return subprocess.run(
        [sys.executable, "-m", "tireless", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )


def cli_json(database_url: str, *args: str, stdin: str | None = None, **env: str) -> Any:
    """What `tireless ARGS... --json` prints, parsed; the command must succeed."""
    result = tireless_cli(database_url, *args, "--json", stdin=stdin, **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def wait_until(
    condition: Callable[[], object], what: str, timeout: float = 30.0, every: float = 0.05
) -> None:
    """Wait until `condition()` is true (checking every `every` seconds); fail naming `what` after
    `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(every)


def wait_until_sql(conninfo: str, condition: str, timeout: float = 60.0) -> None:
    """Wait until a boolean SQL expression (say `NOT EXISTS (SELECT ...)`) holds in the database."""
    with psycopg.connect(conninfo, autocommit=True) as conn:

        def holds() -> bool:
            row = conn.execute(f"SELECT {condition}").fetchone()
            return row is not None and row[0] is True

        wait_until(holds, condition, timeout)


def wait_until_blocked(db: Database, waiter_pid: int, holder_pid: int, what: str) -> None:
    """Wait (10 s at most) until the waiter's backend is blocked by a lock the holder's holds."""
    wait_until(
        lambda: holder_pid in db.scalar("SELECT pg_blocking_pids(%(pid)s)", {"pid": waiter_pid}),
        what,
        timeout=10,
        every=0.01,
    )
