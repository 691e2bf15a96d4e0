"""The roll-up never runs in a read-only transaction (a hot standby's every transaction is one):
it does nothing and says nothing, and the dashboard's reads answer there, the same before and
after a writer (a poll round, a sweep) rolls the history up."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Database
from tests.helpers import claimed, enqueue_jobs, tireless_cli
from tireless import JobStore
from tireless.forge.poll import client_factory, poll_round

# The history's roll-up waits on every older transaction of the cluster: no database is
# copied or dropped beside these tests (tests/conftest.py, DatabaseCopies).
pytestmark = pytest.mark.quiet_cluster

READS = (
    "SELECT * FROM tireless.finished_jobs ORDER BY lane, outcome",
    "SELECT * FROM tireless.finished_jobs_by_hour ORDER BY hour, lane, outcome",
    "SELECT * FROM tireless.queue_activity('1 hour')",
    "SELECT * FROM tireless.job_durations('24 hours')",
    "SELECT * FROM tireless.failure_groups('24 hours')",
    "SELECT worker, lanes, job_id, status FROM tireless.workers ORDER BY worker",
    "SELECT id, state FROM tireless.issue_runs(1)",
)


def read_only(db: Database) -> list[list[tuple[Any, ...]]]:
    """Every read of READS and the roll-up, in one read-only transaction."""
    with db.connect(autocommit=False) as conn:
        conn.execute("SET TRANSACTION READ ONLY")
        assert conn.execute("SELECT tireless.roll_up_history()").fetchone() == (0,)
        answers = [conn.execute(query).fetchall() for query in READS]
        conn.commit()
    return answers


def test_the_roll_up_does_nothing_in_a_read_only_transaction(store: JobStore, db: Database) -> None:
    enqueue_jobs(store, 3)
    for worker, outcome in (("a", "delivered"), ("b", "failed")):
        job = claimed(store, worker)
        store.transition(job.id, outcome, worker, note="tests failed", token=job.claim_token)
    before = read_only(db)
    assert db.scalar("SELECT counted_to FROM tireless.history_rollup") == 0
    assert before[0] == [("cc", "delivered", 1), ("cc", "failed", 1)]
    assert before[4][0][:2] == ("tests failed", 1)
    assert store.roll_up_history() == 2  # a writer's pass: the sweeper's or the poller's
    assert db.scalar("SELECT counted_to FROM tireless.history_rollup") > 0
    after = read_only(db)
    assert after[:2] + after[3:] == before[:2] + before[3:]
    # The activity's buckets move with the clock: compare those both reads hold.
    activity_before = {row[:2]: row[2:] for row in before[2]}
    activity_after = {row[:2]: row[2:] for row in after[2]}
    shared = activity_before.keys() & activity_after.keys()
    assert len(shared) >= 59
    assert {k: activity_after[k] for k in shared} == {k: activity_before[k] for k in shared}
    assert sum(row[4] + row[5] for row in after[2]) == 2  # the delivered and the failed job


def test_a_poll_round_and_a_sweep_roll_the_history_up(store: JobStore, db: Database) -> None:
    enqueue_jobs(store, 2)
    job = claimed(store, "a")
    store.transition(job.id, "delivered", "a", token=job.claim_token)
    poll_round(store, "poller-1", clients=client_factory(5.0))
    assert db.scalar("SELECT sum(jobs) FROM tireless.finished_count") == 1
    job = claimed(store, "b")
    store.transition(job.id, "delivered", "b", token=job.claim_token)
    swept = tireless_cli(db.url, "sweep")
    assert swept.returncode == 0, swept.stderr
    assert db.scalar("SELECT sum(jobs) FROM tireless.finished_count") == 2
