"""An idle worker whose LISTEN connection is cut off notices at once, connects again after a short
pause, and claims the work that came meanwhile: it does not sleep out its --poll."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

from tests.conftest import Database
from tests.helpers import enqueue_jobs, wait_until
from tests.support.work import agent, read_log_until, start_worker, work_args
from tireless import JobStore

LISTENING = (
    "SELECT pid FROM pg_stat_activity"
    " WHERE datname = current_database() AND query = 'LISTEN tireless_work'"
)


def test_a_cut_off_listen_connection_is_replaced_and_new_work_claimed_well_within_poll(
    store: JobStore,
    db: Database,
    tmp_path: Path,
    worker_process: list[subprocess.Popen[str]],
) -> None:
    # A poll of 60 s: only a reconnect brings the job within the 15 s the test waits.
    worker = start_worker(
        db, worker_process, *work_args("--poll", "60s", "--"), *agent(tmp_path, "true")
    )
    logged = read_log_until(worker, "waiting for work in cc")
    listener = db.scalar(LISTENING)
    assert listener is not None
    assert db.scalar("SELECT pg_terminate_backend(%(pid)s)", {"pid": listener}) is True
    logged += read_log_until(worker, "database connection lost")
    enqueue_jobs(store, 1)  # after the cut: only a new LISTEN or the claim after it finds it
    delivered = "SELECT count(*) FROM tireless.job WHERE state = 'delivered'"
    wait_until(lambda: db.scalar(delivered) == 1, "the job to be delivered", timeout=15)
    assert db.scalar(LISTENING) not in (None, listener)  # listening again, on a new connection
    worker.send_signal(signal.SIGTERM)
    _, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, logged + err
    assert (logged + err).count("database connection lost") == 1
