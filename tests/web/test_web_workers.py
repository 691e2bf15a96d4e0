"""The workers page with real worker processes (issue 50): each worker says it started, beats and
says it stopped (tireless.worker_state), so the page tells a live worker (holding a job), an idle
one, one that stopped (^C) and one that was lost (SIGKILL: its beat lapsed with no word) apart,
with the jobs each delivered and failed."""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path

from starlette.testclient import TestClient

from tests.conftest import Database
from tests.helpers import enqueue_jobs, wait_until_sql
from tests.support.work import read_log_until, start_sleeping_agent, start_worker
from tireless import JobStore

IDLE = ("--lane", "quiet", "--lease", "1s", "--", "true")
"""A worker of a lane with no job, its beat's lease a second."""


def workers_page(admin: TestClient) -> dict[str, list[str]]:
    """Each row of the workers page, by its worker: the cells' text."""
    page = admin.get("/workers").text
    found = [
        [
            re.sub(r"<[^>]+>", "", cell).strip()
            for cell in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)
        ]
        for tr in re.findall(r"<tr class=\"worker-[\w-]+\">(.*?)</tr>", page, re.S)
    ]
    return {cells[0]: cells for cells in found}


def test_the_workers_page_tells_live_idle_stopped_and_lost_workers_apart(
    store: JobStore,
    db: Database,
    admin: TestClient,
    tmp_path: Path,
    worker_process: list[subprocess.Popen[str]],
) -> None:
    with db.connect() as conn:
        conn.execute("SELECT tireless.set_kind_policy('implement', max_attempts => 1)")
    enqueue_jobs(store, 3)
    start_sleeping_agent(db, worker_process, tmp_path, "--lease", "1s")  # runner-1 holds job 1
    delivers_2 = ("--lane", "cc", "--lease", "1s", "--", "sh", "-c", '[ "$TIRELESS_NUMBER" = 2 ]')
    started = {
        name: start_worker(db, worker_process, "work", "--worker", name, *options)
        for name, options in (("w-interrupted", delivers_2), ("w-idle", IDLE), ("w-killed", IDLE))
    }
    wait_until_sql(
        db.url, "(SELECT count(*) = 2 FROM tireless.job WHERE state IN ('delivered', 'failed'))"
    )
    for name in ("w-idle", "w-killed"):
        read_log_until(started[name], "waiting for work in quiet")
    started["w-interrupted"].send_signal(signal.SIGINT)  # ^C
    _, err = started["w-interrupted"].communicate(timeout=30)
    assert started["w-interrupted"].returncode == 0, err
    started["w-killed"].kill()
    started["w-killed"].wait()
    wait_until_sql(
        db.url, "(SELECT presence = 'lost' FROM tireless.workers WHERE worker = 'w-killed')"
    )
    rows = workers_page(admin)
    process = {  # a stop says when, a loss the last beat: times, left out
        name: cells[8].partition(",")[0].partition(" (last beat ")[0]
        for name, cells in rows.items()
    }
    assert process == {
        "runner-1": "live",
        "w-idle": "idle",
        "w-interrupted": "stopped (SIGINT",
        "w-killed": "lost",
    }, rows
    counts = {name: (cells[-2], cells[-1]) for name, cells in rows.items()}
    assert counts == {  # delivered, failed
        "runner-1": ("0", "0"),
        "w-idle": ("0", "0"),
        "w-interrupted": ("1", "1"),  # job 2 delivered, job 3 failed (its one attempt spent)
        "w-killed": ("0", "0"),
    }
