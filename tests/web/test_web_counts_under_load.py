"""Exact counts under load (issue 50): runner processes claim, finish, fail, release and abandon
claims on short leases while the history is rolled up and expired claims are swept again and
again; afterwards the finished-job counters, the hourly counts, the Failures table, the activity
chart and `/metrics` equal the jobs' states, read on the primary and on its hot standby."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.conftest import Database
from tests.helpers import enqueue_jobs
from tests.standby import Replicated, hot_standby  # noqa: F401 (the fixture)
from tests.support.web import browser, scrape
from tests.workers import (
    NO_BACKOFF,
    SPAWN,
    all_exit_0,
    new_queue,
    roller,
    runner,
    start,
    sweeper,
    tallies,
)
from tireless import JobStore
from tireless.web.app import create_app

# The history's roll-up waits on every older transaction of the cluster: no database is
# copied or dropped beside these tests (tests/conftest.py, DatabaseCopies).
pytestmark = pytest.mark.quiet_cluster

RUNNERS, OPERATIONS, JOBS, LEASE_SECONDS = 6, 400, 240, 0.05

Counts = Counter[tuple[str, str]]

FINISHED_JOBS = (
    "SELECT lane, state::text, count(*) FROM tireless.job"
    " WHERE state IN ('delivered', 'failed', 'cancelled') GROUP BY lane, state"
)
# Each finished job's one terminal event says in which hour it finished.
FINISHED_BY_HOUR = (
    "SELECT date_trunc('hour', e.at), j.lane, j.state::text, count(*)"
    "  FROM tireless.job j JOIN tireless.job_event e ON e.job_id = j.id AND e.to_state = j.state"
    " WHERE j.state IN ('delivered', 'failed', 'cancelled') GROUP BY 1, 2, 3"
)


def counts(db: Database, query: str) -> Counter[tuple[object, ...]]:
    with db.connect() as conn:
        return Counter({tuple(row[:-1]): row[-1] for row in conn.execute(query) if row[-1]})


def assert_exact(read: Database, truth: Database) -> None:
    """Every count the dashboard reads on `read` equals the jobs' states on `truth`."""
    finished = counts(truth, FINISHED_JOBS)
    assert finished, "the load finished no job"
    assert counts(read, "SELECT lane, outcome, jobs FROM tireless.finished_jobs") == finished
    assert counts(
        read, "SELECT hour, lane, outcome, jobs FROM tireless.finished_jobs_by_hour"
    ) == counts(truth, FINISHED_BY_HOUR)
    failed = sum(n for (_, state), n in finished.items() if state == "failed")
    assert (
        read.scalar("SELECT coalesce(sum(jobs), 0) FROM tireless.failure_groups('1 day')") == failed
    )
    chart = counts(
        read,
        "SELECT lane, o.outcome, sum(o.jobs) FROM tireless.queue_activity('1 day') a"
        " CROSS JOIN LATERAL (VALUES ('delivered', a.delivered), ('failed', a.failed),"
        " ('cancelled', a.cancelled)) AS o (outcome, jobs) GROUP BY 1, 2",
    )
    assert chart == finished
    with browser(create_app(read.conninfo)) as client:
        samples, _ = scrape(client)
    scraped = Counter(
        {
            (labels["lane"], labels["outcome"]): int(v)
            for (name, label_set), v in samples.items()
            if name == "tireless_jobs_finished_total" and v
            for labels in [dict(label_set)]
        }
    )
    assert scraped == finished


def test_counts_are_exact_after_load_on_the_primary_and_the_standby(
    hot_standby: Replicated,  # noqa: F811 (the fixture)
) -> None:
    primary = hot_standby.primary
    with JobStore(primary.conninfo) as store:
        assert enqueue_jobs(store, JOBS) == JOBS
    primary.scalar(NO_BACKOFF)
    out = new_queue()
    stop = SPAWN.Event()
    chores = [
        start(sweeper, primary.conninfo, stop, out),
        start(roller, primary.conninfo, stop, out),
    ]
    runners = [
        start(runner, primary.conninfo, f"load-{i}", ["cc"], OPERATIONS, i, LEASE_SECONDS, out)
        for i in range(RUNNERS)
    ]
    try:
        work = tallies(out, runners, timeout=45)
    finally:
        stop.set()
    chore = tallies(out, chores, timeout=30)
    all_exit_0([*runners, *chores])
    assert work["transitions"]
    assert chore["rollups"] > 1
    assert chore["sweeps"] > 1
    assert_exact(primary, primary)  # the reads add what the last roll-up left
    with JobStore(primary.conninfo) as store:
        store.expire_stale_claims()
        store.roll_up_history()
        store.roll_up_history()
    assert primary.scalar(
        "SELECT counted_to = tireless.history_top() FROM tireless.history_rollup"
    ), "with nothing in flight the roll-up catches up"
    assert_exact(primary, primary)
    hot_standby.caught_up()
    assert_exact(hot_standby.standby, primary)
