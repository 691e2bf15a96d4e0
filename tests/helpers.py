"""What the test modules share: builders of test issues and jobs, shortcuts into the database as
the superuser, the `tireless` command (run in this process, or as a process where the process is
what a test is about), and `wait_until`, the one way a test waits for something to happen
(bounded, so a bug fails the test instead of hanging it)."""

from __future__ import annotations

import copy
import io
import json
import logging
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from importlib.resources import files
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from tests.conftest import Database
from tireless import DiscoveredIssue, Job, JobStore, connect
from tireless.cli import main as tireless_main
from tireless.forge import http
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


def cli_environment(database_url: str | None, env: dict[str, str]) -> dict[str, str]:
    """The test process's environment with `env` added, DATABASE_URL the database's (None: none)."""
    environment = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"} | env
    if database_url is not None:
        environment["DATABASE_URL"] = database_url
    return environment


PROCESS_COMMANDS = frozenset({"work", "web"})
"""The commands `tireless_cli` runs as a process: `work` executes itself again to move its secrets
out of its environment block and handles signals, `web` serves until a signal."""


def tireless_cli(
    database_url: str | None, *args: str, stdin: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """`tireless ARGS...` against the database (None: no DATABASE_URL at all), run in this process
    as `python -m tireless` runs it (tireless.cli.main; an exception it lets out is exit 1 with its
    traceback on stderr) and as if in a new one (`fresh_process`): a command's behaviour, at a
    fraction of a process's start. `work`, `web` and `--every` loops run as a process
    (`tireless_process`): their signals, environment block and loops are the process's; so does
    what a test asks of the process itself."""
    if any(arg in PROCESS_COMMANDS or arg.startswith("--every") for arg in args):
        return tireless_process(database_url, *args, stdin=stdin, **env)
    out, err = io.StringIO(), io.StringIO()
    with (
        fresh_process(cli_environment(database_url, env), stdin),
        redirect_stdout(out),
        redirect_stderr(err),
    ):
        try:
            code = tireless_main(list(args))
        except SystemExit as exit:  # argparse's usage errors, --help and --version
            code = exit_status(exit.code)
        except Exception:
            traceback.print_exc()
            code = 1
    return subprocess.CompletedProcess(
        ["tireless", *args], code, stdout=out.getvalue(), stderr=err.getvalue()
    )


def exit_status(code: object) -> int:
    """The status a process exits with for SystemExit(code): None is 0, a message 1 (printed)."""
    if code is None or isinstance(code, int):
        return code or 0
    print(code, file=sys.stderr)
    return 1


def process_memory() -> tuple[Any, ...]:
    """What tireless keeps per process, which a new process starts without: a forge's rate-limit
    strikes, refused lookups, learned logins and warnings given (tireless.forge.http), and the
    hosts of a multi-host DSN that answered or hung (tireless.connect)."""
    hosts = connect._hosts
    return (http._strikes, http._refused, http._logins, http._warned, hosts._answered, hosts._hung)


@contextmanager
def fresh_process(environment: dict[str, str], stdin: str | None) -> Iterator[None]:
    """This process as a new `tireless` process would find it, for the length of a command: the
    environment given, `stdin` (empty if None) on standard input, no logging handler (a warning
    goes to stderr as Python's last resort handler writes it) and no `process_memory`; each is put
    back as it was afterwards, and so are SIGTERM's and SIGINT's handlers."""
    saved_environment = dict(os.environ)
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    saved_signals = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    memories = process_memory()
    saved_memory = [copy.deepcopy(memory) for memory in memories]
    saved_stdin = sys.stdin
    os.environ.clear()
    os.environ.update(environment)
    root.handlers, root.level = [], logging.WARNING
    for memory in memories:
        memory.clear()
    sys.stdin = io.StringIO(stdin or "")
    try:
        yield
    finally:
        sys.stdin = saved_stdin
        for memory, saved in zip(memories, saved_memory, strict=True):
            memory.clear()
            memory.update(saved)
        for sig, handler in saved_signals.items():
            signal.signal(sig, handler)
        root.handlers, root.level = saved_handlers, saved_level
        os.environ.clear()
        os.environ.update(saved_environment)


def tireless_process(
    database_url: str | None, *args: str, stdin: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """`python -m tireless ARGS...` as a process against the database (None: no DATABASE_URL at
    all), for what is about the process: the entry point itself, its environment, signals."""
    return subprocess.run(
        [sys.executable, "-m", "tireless", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=cli_environment(database_url, env),
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


DB = Path(str(files("tireless") / "db"))


MIGRATIONS = DB / "migrations"


def same_transaction(db: Database, finished: int, claimed_next: int) -> bool:
    """Whether the event that ended `finished` and the one that claimed `claimed_next` were
    written by one transaction (the same xmin)."""
    xmins = rows(
        db,
        "SELECT DISTINCT xmin::text FROM tireless.job_event"
        " WHERE (job_id = %(a)s AND to_state <> 'claimed' AND from_state = 'claimed')"
        "    OR (job_id = %(b)s AND to_state = 'claimed')",
        {"a": finished, "b": claimed_next},
    )
    return len(xmins) == 1


def snapshot(db: Database) -> list[tuple[Any, ...]]:
    """Every job's state, holder, token and note: what a refused call must leave as it was."""
    return rows(db, "SELECT id, state::text, claimed_by, claim_token, note FROM tireless.job")
