"""`tireless work` with real commands (small sh scripts): the outcome of COMMAND decides the job's,
the lease is renewed while it runs, a lost lease stops it, and SIGTERM releases the job cleanly."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import Database
from tests.helpers import enqueue_jobs, history, issue, rows, tireless_cli, wait_until
from tests.support.work import (
    agent,
    exits_0_with_its_command,
    processes_marked,
    read_log_until,
    start_sleeping_agent,
    start_worker,
    state_of,
    work_args,
)
from tireless import JobStore

# Credentials the worker may hold in its environment (each harmless to its own connection here:
# its URL names host, port, user and database), none of which may reach COMMAND.
pytestmark = pytest.mark.usefixtures("in_the_tests_directory")

LIBPQ_CREDENTIALS = {
    "PGPASSWORD": "secret",
    "PGPASSFILE": "/nonexistent/pgpass",
    "PGSERVICEFILE": "/nonexistent/pg_service.conf",
    "PGUSER": "postgres",
    "PGHOST": "/nonexistent",
    "PGPORT": "1",
    "PGDATABASE": "nowhere",
    "PGOPTIONS": "-c application_name=worker",
    "PGSSLMODE": "disable",
    "PGSSLROOTCERT": "/nonexistent/root.crt",
    "PGAPPNAME": "worker",
    "TIRELESS_TOKEN_GITEA": "forge-secret",
}


BRIEF_OF_AN_UNREGISTERED_FORGE = {
    "TIRELESS_ISSUE_URL": "",
    "TIRELESS_API_URL": "",
    "TIRELESS_CLONE_URL": "",
    "TIRELESS_ISSUE_BODY_CUT": "false",
    "TIRELESS_REVIEW_FILE": "",
    "TIRELESS_PLAN_FILE": "",  # an implement job hands back no tasks
    "TIRELESS_PROPOSALS_FILE": "",
}
"""The brief's variables for an issue enqueued without url or body, of a forge not registered (the
two files' paths aside), asked for by its labels (no review to answer)."""


def over_tcp(db: Database) -> str:
    """The test database's URL over TCP: the sandbox's /tmp, where its socket is, is private."""
    dbname = db.scalar("SELECT current_database()")
    return f"postgresql://postgres@127.0.0.1:{db.server.port}/{dbname}"


"""A variable of the worker's environment that COMMAND, and every process it starts, inherits:
how a test finds the job's processes (in a PID namespace, the pid a process knows is not ours)."""


def test_a_command_that_exits_0_delivers_the_job_it_got_in_env_and_stdin(
    store: JobStore, db: Database, tmp_path: Path
) -> None:
    enqueue_jobs(store, 1)
    command = agent(
        tmp_path,
        'env | grep -E "^(TIRELESS_|PG|DATABASE_URL)" | sort > "$OUT/env"\n'
        'cat > "$OUT/stdin"\necho agent done',
    )
    result = tireless_cli(db.url, *work_args("--once", "--"), *command, **LIBPQ_CREDENTIALS)
    assert result.returncode == 0, result.stderr
    job_id = db.scalar("SELECT id FROM tireless.job")
    assert state_of(db, job_id) == "delivered"
    assert "agent done" in result.stdout
    assert f"delivered job {job_id}" in result.stderr
    env = dict(line.split("=", 1) for line in (tmp_path / "env").read_text().splitlines())
    assert env == BRIEF_OF_AN_UNREGISTERED_FORGE | {
        "TIRELESS_ISSUE_BODY_FILE": env["TIRELESS_ISSUE_BODY_FILE"],
        "TIRELESS_REPORT_FILE": env["TIRELESS_REPORT_FILE"],
        "TIRELESS_ATTEMPT": "1",
        "TIRELESS_ATTEMPT_ID": env["TIRELESS_ATTEMPT_ID"],
        "TIRELESS_FORGE": "gitea",
        "TIRELESS_JOB_ID": str(job_id),
        "TIRELESS_KIND": "implement",
        "TIRELESS_LANE": "cc",
        "TIRELESS_NUMBER": "1",
        "TIRELESS_OWNER": "acme",
        "TIRELESS_REPO": "widgets",
    }, "the agent never gets the runner's credentials (no PG*, DATABASE_URL, TIRELESS_TOKEN_*)"
    assert uuid.UUID(env["TIRELESS_ATTEMPT_ID"]).version == 5  # of the claim token, not it
    stdin = json.loads((tmp_path / "stdin").read_text())
    assert (stdin["id"], stdin["state"], stdin["claimed_by"], stdin["labels"]) == (
        job_id, "claimed", "runner-1", ["tireless", "tireless/implement"]
    )  # fmt: skip
    assert "claim_token" not in stdin
    assert stdin["review"] is None


def test_a_failing_command_releases_the_job_with_the_tail_of_its_output(
    store: JobStore, db: Database, tmp_path: Path
) -> None:
    enqueue_jobs(store, 1)
    command = agent(tmp_path, "yes 0123456789 | head -n 1000\necho 'last words'\nexit 7")
    result = tireless_cli(db.url, *work_args("--once", "--"), *command)
    assert result.returncode == 0, result.stderr
    job_id = db.scalar("SELECT id FROM tireless.job")
    note = db.scalar("SELECT note FROM tireless.job WHERE id = %(id)s", {"id": job_id})
    assert state_of(db, job_id) == "pending"
    assert note.endswith("0123456789\nlast words")
    assert len(note) == 4000 - len("\n")  # the tail, trailing newline trimmed
    assert history(db, job_id)[-1][:4] == ("claimed", "pending", "runner-1", 1)
    assert "command exited with 7" in result.stderr
    exits = "SELECT attempt, exit_status FROM tireless.job_attempts(%(id)s)"
    assert db.scalar(f"SELECT array_agg(row(a.*)::text) FROM ({exits}) a", {"id": job_id}) == [
        "(1,7)"
    ]  # the job page's attempts: COMMAND's exit status, recorded by the runner


def test_a_command_that_outlives_its_lease_keeps_it_renewed_and_delivers(
    store: JobStore, db: Database, tmp_path: Path
) -> None:
    enqueue_jobs(store, 1)
    # The command itself sweeps expired claims every 0.2 s for 4 s: with a 2 s lease, only the
    # worker's renewals keep the sweeper from taking the job back.
    command = agent(
        tmp_path,
        f'timeout 4 "{sys.executable}" -m tireless --database "$SWEEP_URL" sweep --every 0.2s\nexit 0',
    )
    result = tireless_cli(
        db.url, *work_args("--once", "--lease", "2s", "--"), *command, SWEEP_URL=over_tcp(db)
    )
    assert result.returncode == 0, result.stderr
    job_id = db.scalar("SELECT id FROM tireless.job")
    assert state_of(db, job_id) == "delivered"
    assert [(e[0], e[1], e[3]) for e in history(db, job_id)] == [
        (None, "pending", 0),
        ("pending", "claimed", 1),
        ("claimed", "delivered", 1),
    ]


def test_five_graceful_stops_in_a_row_give_the_job_back_without_a_failure(
    store: JobStore,
    db: Database,
    tmp_path: Path,
    worker_process: list[subprocess.Popen[str]],
) -> None:
    """A deploy restarting five workers of a lane: each SIGTERM stops COMMAND and gives the job
    back. The lane is not tripped, the job is claimable at once, no attempt of its budget (3) is
    spent, and its history says given back five times."""
    enqueue_jobs(store, 1)
    job_id = db.scalar("SELECT id FROM tireless.job")
    for stop in range(5):
        (tmp_path / "started").unlink(missing_ok=True)
        signum = signal.SIGTERM if stop % 2 == 0 else signal.SIGINT
        worker, started = start_sleeping_agent(db, worker_process, tmp_path, "--poll", "1s")
        worker.send_signal(signum)
        err = exits_0_with_its_command(worker, started)
        assert f"gave job {job_id} back" in err
        assert f"stopped ({signum.name})" in err
    assert db.scalar("SELECT row(state, attempts, given_back)::text FROM tireless.job") == (
        "(pending,5,5)"
    )
    assert db.scalar("SELECT coalesce(max(consecutive_failures), 0) FROM tireless.lane") == 0
    assert db.scalar("SELECT breaker FROM tireless.lane_status WHERE lane = 'cc'") == "closed"
    gave_back = [event for event in history(db, job_id) if event[1] == "pending"]
    assert [(e[0], e[2], e[4]) for e in gave_back[1:]] == [
        ("claimed", "runner-1", f"given back: worker stopped by {name}")
        for name in ("SIGTERM", "SIGINT", "SIGTERM", "SIGINT", "SIGTERM")
    ]
    again = store.claim_next("successor", ["cc"])  # at once: no backoff
    assert again is not None
    released = store.transition(job_id, "pending", "successor", "crashed", again.claim_token)
    assert released.state == "pending", "one attempt spent of three: not failed"


def test_a_signal_during_a_claim_gives_the_job_back_at_once(
    store: JobStore,
    db: Database,
    tmp_path: Path,
    worker_process: list[subprocess.Popen[str]],
) -> None:
    """The claim is held up on the lane's row lock (a capped lane is counted under it) while the
    SIGTERM arrives; once the claim completes, the job is given back before COMMAND starts."""
    enqueue_jobs(store, 1)
    store.set_lane_capacity("cc", 5)
    command = agent(tmp_path, 'touch "$OUT/ran"')
    with db.connect(autocommit=False) as lane_lock:
        lane_lock.execute("SELECT 1 FROM tireless.lane WHERE name = 'cc' FOR UPDATE")
        worker = start_worker(db, worker_process, *work_args("--poll", "1s", "--"), *command)
        holder = {"pid": lane_lock.info.backend_pid}
        wait_until(
            lambda: (
                db.scalar(
                    "SELECT count(*) FROM pg_stat_activity WHERE %(pid)s = ANY (pg_blocking_pids(pid))",
                    holder,
                )
                == 1
            ),
            "the claim to wait on the lane's row",
        )
        worker.send_signal(signal.SIGTERM)
        lane_lock.rollback()
    _, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err
    assert not (tmp_path / "ran").exists(), "COMMAND never started"
    assert db.scalar("SELECT row(state, attempts, given_back, note)::text FROM tireless.job") == (
        '(pending,1,1,"given back: worker stopped by SIGTERM")'
    )


def test_drain_finishes_the_running_job_and_exits_0_without_claiming_another(
    store: JobStore,
    db: Database,
    tmp_path: Path,
    worker_process: list[subprocess.Popen[str]],
) -> None:
    enqueue_jobs(store, 2)
    command = agent(
        tmp_path,
        'touch "$OUT/started"\nwhile [ ! -e "$OUT/go" ]; do sleep 0.05; done\necho finished',
    )
    worker = start_worker(
        db, worker_process, *work_args("--poll", "1s", "--drain-on", "SIGUSR1", "--"), *command
    )
    wait_until((tmp_path / "started").exists, "the command to start")
    worker.send_signal(signal.SIGUSR1)
    (tmp_path / "go").touch()
    out, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err
    assert "finished" in out
    assert "drained (SIGUSR1)" in err
    states = rows(db, "SELECT number, state::text, attempts FROM tireless.job ORDER BY number")
    assert states == [(1, "delivered", 1), (2, "pending", 0)]


def test_an_idle_worker_drains_at_once(
    db: Database, tmp_path: Path, worker_process: list[subprocess.Popen[str]]
) -> None:
    worker = start_worker(
        db, worker_process, *work_args("--drain-on", "USR2", "--"), *agent(tmp_path, "true")
    )
    logged = read_log_until(worker, "waiting for work in cc")
    worker.send_signal(signal.SIGUSR2)
    _, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, logged + err
    assert "drained (SIGUSR2)" in err


def test_a_lost_lease_stops_the_command_and_leaves_the_job_to_its_new_holder(
    store: JobStore,
    db: Database,
    tmp_path: Path,
    worker_process: list[subprocess.Popen[str]],
) -> None:
    enqueue_jobs(store, 1)
    worker, started = start_sleeping_agent(
        db, worker_process, tmp_path, "--once", "--lease", "1500ms"
    )
    # Take the claim away, as an expiry, a sweep and another runner's claim would.
    token = db.scalar(
        "UPDATE tireless.job SET claimed_by = 'thief', claim_token = gen_random_uuid()"
        " RETURNING claim_token"
    )
    err = exits_0_with_its_command(worker, started)
    assert "lease on job" in err
    assert "lease lost on job" in err
    job_id = db.scalar("SELECT id FROM tireless.job")
    held = db.scalar(
        "SELECT (state::text, claimed_by, claim_token, note IS NULL)::text FROM tireless.job"
    )
    assert held == f"(claimed,thief,{token},t)"
    assert state_of(db, job_id) == "claimed"


def test_an_idle_worker_waits_for_work_and_runs_it_when_it_arrives(
    store: JobStore,
    db: Database,
    tmp_path: Path,
    worker_process: list[subprocess.Popen[str]],
) -> None:
    # A poll of 300 s: only the wake-up can bring the work within the 30 s the test waits.
    worker = start_worker(
        db, worker_process, *work_args("--poll", "300s", "--"), *agent(tmp_path, "true")
    )
    logged = read_log_until(worker, "waiting for work in cc")  # idle, its claim found nothing
    enqueue_jobs(store, 2)
    wait_until(
        lambda: db.scalar("SELECT count(*) FROM tireless.job WHERE state = 'delivered'") == 2,
        "both jobs to be delivered",
    )
    worker.send_signal(signal.SIGINT)
    _, err = worker.communicate(timeout=30)
    err = logged + err
    assert worker.returncode == 0, err
    assert "waiting for work in cc" in err
    assert "stopped (SIGINT)" in err


def test_once_with_nothing_to_claim_exits_3(db: Database, tmp_path: Path) -> None:
    result = tireless_cli(db.url, *work_args("--once", "--"), *agent(tmp_path, "true"))
    assert result.returncode == 3, result.stderr


def test_a_worker_whose_lease_lapsed_in_a_restart_logs_lease_lost_and_claims_the_next_job(
    store: JobStore,
    db: Database,
    tmp_path: Path,
    worker_process: list[subprocess.Popen[str]],
) -> None:
    """A real PostgreSQL restart under a running job: the lease lapses and the sweeper returns the
    job (into its backoff); the agent then exits 0. The delivery is refused as not the holder
    (TL004), the worker logs `lease lost` and goes on: it claims the next job and delivers it."""
    enqueue_jobs(store, 2)
    first = db.scalar("SELECT min(id) FROM tireless.job")
    command = agent(
        tmp_path,
        'if [ "$TIRELESS_JOB_ID" = "' + str(first) + '" ]; then\n'
        '  touch "$OUT/started"\n'
        '  while [ ! -e "$OUT/go" ]; do sleep 0.05; done\n'
        "fi\n"
        'echo "ran $TIRELESS_JOB_ID"',
    )
    worker = start_worker(
        db, worker_process, *work_args("--lease", "1h", "--poll", "1s", "--"), *command
    )  # renewed every 20 minutes: no renewal learns of the loss first, the delivery does
    wait_until((tmp_path / "started").exists, "the first job's agent to start")
    db.server.restart()
    with db.connect(
        autocommit=False
    ) as sweeper:  # the lease lapses and the sweeper takes it, at once
        sweeper.execute(
            "UPDATE tireless.job SET claim_expires_at = now() - interval '1 second'"
            " WHERE id = %(id)s",
            {"id": first},
        )
        assert sweeper.execute("SELECT tireless.expire_stale_claims()").fetchone() == (1,)
        sweeper.commit()
    (tmp_path / "go").touch()
    logged = read_log_until(worker, f"lease lost on job {first}")
    logged += read_log_until(worker, f"delivered job {first + 1}")
    worker.send_signal(signal.SIGTERM)
    _, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, logged + err
    assert "stopping the command" not in logged, "the agent exited 0 on its own"
    states = rows(db, "SELECT id, state::text, claimed_by FROM tireless.job ORDER BY id")
    assert states == [(first, "pending", None), (first + 1, "delivered", None)]


def test_a_cancel_stops_a_running_command_at_once_under_the_default_lease(
    store: JobStore,
    db: Database,
    tmp_path: Path,
    worker_process: list[subprocess.Popen[str]],
) -> None:
    """The default lease of 10 minutes renews every 200 s; the worker hears the cancel on
    tireless_stop instead, so COMMAND is gone and the job cancelled, with the admin's note,
    within a couple of seconds."""
    enqueue_jobs(store, 1)
    worker, started = start_sleeping_agent(db, worker_process, tmp_path, "--once")
    job_id = db.scalar("SELECT id FROM tireless.job")
    marker = started.read_text().strip()
    asked = time.monotonic()
    store.request_cancel(job_id, "wrong repo")
    wait_until(
        lambda: state_of(db, job_id) == "cancelled" and processes_marked(marker) == [],
        "COMMAND to stop and the job to end cancelled",
    )
    stopped = time.monotonic() - asked
    assert stopped < 2.0, f"stopped {stopped:.2f}s after the cancel"
    err = exits_0_with_its_command(worker, started)
    assert f"job {job_id} cancelled: wrong repo" in err
    assert db.scalar("SELECT row(state, note, attempts)::text FROM tireless.job") == (
        '(cancelled,"wrong repo",1)'
    )


def test_a_job_whose_issue_is_closed_mid_run_is_stopped_and_ends_cancelled(
    store: JobStore,
    db: Database,
    tmp_path: Path,
    worker_process: list[subprocess.Popen[str]],
) -> None:
    enqueue_jobs(store, 1)
    worker, started = start_sleeping_agent(
        db, worker_process, tmp_path, "--once", "--lease", "1500ms"
    )
    assert store.enqueue([issue(1, state="closed")]) == 0  # the request is withdrawn
    err = exits_0_with_its_command(worker, started)
    job_id = db.scalar("SELECT id FROM tireless.job")
    assert f"job {job_id} cancelled: issue closed" in err
    assert db.scalar("SELECT row(state, note, attempts)::text FROM tireless.job") == (
        '(cancelled,"issue closed",1)'
    )
    assert db.scalar("SELECT coalesce(max(consecutive_failures), 0) FROM tireless.lane") == 0
