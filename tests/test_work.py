"""`tireless work` with real commands (small sh scripts): the outcome of COMMAND decides the job's,
the lease is renewed while it runs, a lost lease stops it, and SIGTERM releases the job cleanly."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Database
from tests.issues import enqueue_jobs, eventually, history, tireless_cli
from tireless import JobStore


def agent(tmp_path: Path, body: str) -> list[str]:
    """A COMMAND running `body` in sh, with $OUT a directory for what the test reads back."""
    script = tmp_path / "agent.sh"
    script.write_text(f'OUT="{tmp_path}"\n{body}\n')
    return ["sh", str(script)]


def work_args(*options: str) -> list[str]:
    return ["work", "--worker", "runner-1", "--lane", "cc", *options]


@pytest.fixture
def worker_process(db: Database) -> Iterator[list[subprocess.Popen[str]]]:
    """Workers started by a test; any still running at its end are killed."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        process.kill()
        process.wait()


def start_worker(
    db: Database, started: list[subprocess.Popen[str]], *args: str
) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"} | {"DATABASE_URL": db.url}
    process = subprocess.Popen(
        [sys.executable, "-m", "tireless", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    started.append(process)
    return process


def read_log_until(worker: subprocess.Popen[str], text: str, timeout: float = 30) -> str:
    """What the worker has logged up to and including a line with `text` (raw reads of its
    stderr, so nothing waits in a buffer); fails after `timeout` seconds or at the log's end."""
    assert worker.stderr is not None
    fd, seen = worker.stderr.fileno(), b""
    deadline = time.monotonic() + timeout
    while text.encode() not in seen:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"the worker never logged {text!r}: {seen.decode()}"
        if select.select([fd], [], [], remaining)[0]:
            chunk = os.read(fd, 65536)
            assert chunk, f"the worker's log ended without {text!r}: {seen.decode()}"
            seen += chunk
    return seen.decode()


def state_of(db: Database, job_id: int) -> str:
    state: str = db.scalar("SELECT state::text FROM tireless.job WHERE id = %(id)s", {"id": job_id})
    return state


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def start_sleeping_agent(
    db: Database, started: list[subprocess.Popen[str]], tmp_path: Path, *options: str
) -> tuple[subprocess.Popen[str], Path]:
    """A worker (`work OPTIONS -- COMMAND`) whose COMMAND writes its pid to a file, then sleeps a
    minute; returned with that file once the command runs."""
    command = agent(
        tmp_path, 'echo $$ > "$OUT/pid.tmp"\nmv "$OUT/pid.tmp" "$OUT/pid"\nexec sleep 60'
    )
    worker = start_worker(db, started, *work_args(*options, "--"), *command)
    pid_file = tmp_path / "pid"
    eventually(pid_file.exists, "the command to start")
    return worker, pid_file


def exits_0_with_its_command(worker: subprocess.Popen[str], pid_file: Path) -> str:
    """Wait for the worker; assert it exited 0 and its command is gone too. Returns its stderr."""
    _, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err
    assert gone(int(pid_file.read_text()))
    return err


def test_a_command_that_exits_0_delivers_the_job_it_got_in_env_and_stdin(
    store: JobStore, db: Database, tmp_path: Path
) -> None:
    enqueue_jobs(store, 1)
    command = agent(
        tmp_path,
        'env | grep ^TIRELESS_ | sort > "$OUT/env"\n'
        'echo "DATABASE_URL=${DATABASE_URL:-unset}" >> "$OUT/env"\n'
        'cat > "$OUT/stdin"\necho agent done',
    )
    result = tireless_cli(db.url, *work_args("--once", "--"), *command)
    assert result.returncode == 0, result.stderr
    job_id = db.scalar("SELECT id FROM tireless.job")
    assert state_of(db, job_id) == "delivered"
    assert "agent done" in result.stdout
    assert f"delivered job {job_id}" in result.stderr
    env = dict(line.split("=", 1) for line in (tmp_path / "env").read_text().splitlines())
    assert env == {
        "TIRELESS_ATTEMPT": "1",
        "TIRELESS_FORGE": "gitea",
        "TIRELESS_JOB_ID": str(job_id),
        "TIRELESS_KIND": "implement",
        "TIRELESS_LANE": "cc",
        "TIRELESS_NUMBER": "1",
        "TIRELESS_OWNER": "acme",
        "TIRELESS_REPO": "widgets",
        "DATABASE_URL": "unset",  # the agent never gets the runner's credentials
    }
    stdin = json.loads((tmp_path / "stdin").read_text())
    assert (stdin["id"], stdin["state"], stdin["claimed_by"], stdin["labels"]) == (
        job_id, "claimed", "runner-1", ["tireless", "tireless/implement"]
    )  # fmt: skip
    assert "claim_token" not in stdin


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


def test_a_command_that_outlives_its_lease_keeps_it_renewed_and_delivers(
    store: JobStore, db: Database, tmp_path: Path
) -> None:
    enqueue_jobs(store, 1)
    # The command itself sweeps expired claims every 0.2 s for 4 s: with a 2 s lease, only the
    # worker's renewals keep the sweeper from taking the job back.
    command = agent(
        tmp_path,
        f'timeout 4 "{sys.executable}" -m tireless --database "$SWEEP_URL" sweep --every 0.2\nexit 0',
    )
    result = tireless_cli(
        db.url, *work_args("--once", "--lease", "2s", "--"), *command, SWEEP_URL=db.url
    )
    assert result.returncode == 0, result.stderr
    job_id = db.scalar("SELECT id FROM tireless.job")
    assert state_of(db, job_id) == "delivered"
    assert [(e[0], e[1], e[3]) for e in history(db, job_id)] == [
        (None, "pending", 0),
        ("pending", "claimed", 1),
        ("claimed", "delivered", 1),
    ]


def test_sigterm_to_the_worker_stops_the_command_and_leaves_the_job_pending(
    store: JobStore,
    db: Database,
    tmp_path: Path,
    worker_process: list[subprocess.Popen[str]],
) -> None:
    enqueue_jobs(store, 1)
    worker, pid_file = start_sleeping_agent(db, worker_process, tmp_path, "--poll", "1")
    worker.send_signal(signal.SIGTERM)
    err = exits_0_with_its_command(worker, pid_file)
    job_id = db.scalar("SELECT id FROM tireless.job")
    assert state_of(db, job_id) == "pending"
    assert db.scalar("SELECT note FROM tireless.job") == "worker stopped by SIGTERM"
    assert "stopped (SIGTERM)" in err


def test_a_lost_lease_stops_the_command_and_leaves_the_job_to_its_new_holder(
    store: JobStore,
    db: Database,
    tmp_path: Path,
    worker_process: list[subprocess.Popen[str]],
) -> None:
    enqueue_jobs(store, 1)
    worker, pid_file = start_sleeping_agent(
        db, worker_process, tmp_path, "--once", "--lease", "1500ms"
    )
    # Take the claim away, as an expiry, a sweep and another runner's claim would.
    token = db.scalar(
        "UPDATE tireless.job SET claimed_by = 'thief', claim_token = gen_random_uuid()"
        " RETURNING claim_token"
    )
    err = exits_0_with_its_command(worker, pid_file)
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
        db, worker_process, *work_args("--poll", "300", "--"), *agent(tmp_path, "true")
    )
    logged = read_log_until(worker, "waiting for work in cc")  # idle, its claim found nothing
    enqueue_jobs(store, 2)
    eventually(
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
