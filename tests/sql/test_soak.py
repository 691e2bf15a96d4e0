"""The soak: runner processes claim, renew, release, deliver, fail and abandon at random on short
leases while a sweeper returns expired claims and a poller keeps enqueueing the same issues.
TIRELESS_SOAK=long (make soak) runs the long size; the default is small enough for CI."""

from __future__ import annotations

import os

import pytest

from tests.conftest import Database
from tests.helpers import enqueue_jobs, wait_until_sql
from tests.invariants import assert_invariants, figures, find_violations
from tests.workers import (
    NO_BACKOFF,
    SPAWN,
    all_exit_0,
    new_queue,
    poller,
    runner,
    start,
    sweeper,
    tallies,
)
from tireless import JobStore

# runners, operations per runner, issues the poller keeps feeding
SIZES = {"small": (4, 500, 24), "long": (8, 5000, 200)}
LEASE_SECONDS = 0.5


@pytest.mark.soak
def test_soak_keeps_every_invariant_and_no_two_holders_overlap(
    store: JobStore, db: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    size = os.environ.get("TIRELESS_SOAK", "small")
    runners_count, operations, issues = SIZES[size]
    created = enqueue_jobs(store, issues)
    db.scalar(NO_BACKOFF)
    out = new_queue()
    stop_polling, stop_sweeping = SPAWN.Event(), SPAWN.Event()
    helpers = [
        start(sweeper, db.conninfo, stop_sweeping, out),
        start(poller, db.conninfo, issues, stop_polling, out),
    ]
    runners = [
        start(runner, db.conninfo, f"soak-{i}", ["cc"], operations, i, LEASE_SECONDS, out)
        for i in range(runners_count)
    ]
    try:
        tally = tallies(out, runners, timeout=1800)
        stop_polling.set()
        wait_until_sql(db.conninfo, "NOT EXISTS (SELECT FROM tireless.job WHERE state = 'claimed')")
    finally:
        stop_polling.set()
        stop_sweeping.set()
    tally += tallies(out, helpers, timeout=60)
    all_exit_0([*runners, *helpers])
    created += tally["created"]
    with db.connect() as conn:
        violations = find_violations(conn)
        seen = figures(conn)
    with capsys.disabled():
        print(
            f"\nsoak ({size}): {runners_count} runner processes, a sweeper and a poller;"
            f" {tally['operations'] + tally['sweeps'] + tally['polls']} operations"
            f" ({tally['claims']} claims, {tally['renew']} renewals, {tally['transitions']} finished"
            f" or released, {tally['lost']} refused as lost); {seen.jobs} jobs, {seen.events} events,"
            f" {seen.expiries} leases expired; violations: {len(violations)}"
        )
    assert violations == []
    assert_invariants(
        db.conninfo,
        jobs=created,
        events=created + tally["claims"] + tally["transitions"] + tally["swept"],
    )
    assert seen.claims == tally["claims"]
    assert seen.expiries == tally["swept"]
