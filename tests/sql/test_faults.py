"""Faults: a backend killed mid-claim, a runner killed holding a claim, the server restarted under
a claim loop, and sweepers racing runners on short leases. Each ends with the invariant check."""

from __future__ import annotations

import os
import signal
import threading

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from tests.conftest import Database
from tests.helpers import end_lease, enqueue_jobs, issue, wait_until_sql
from tests.invariants import assert_invariants
from tests.workers import (
    NO_BACKOFF,
    SPAWN,
    all_exit_0,
    hold_a_claim,
    new_queue,
    runner,
    start,
    sweeper,
    tallies,
)
from tireless import JobStore


def test_a_backend_terminated_mid_claim_leaves_the_job_pending_and_claimable(
    store: JobStore, db: Database
) -> None:
    enqueue_jobs(store, 1)
    victim = db.connect(autocommit=False)
    claimed = victim.execute(
        "SELECT id, attempts FROM tireless.claim_next(worker => 'doomed', lanes => '{cc}')"
    ).fetchone()
    assert claimed == (1, 1)
    with db.connect() as killer:
        ended = killer.execute("SELECT pg_terminate_backend(%s, 10000)", [victim.info.backend_pid])
        assert ended.fetchone() == (True,)
    with pytest.raises(psycopg.OperationalError):
        victim.commit()
    victim.close()
    assert (
        db.scalar("SELECT row(state, attempts, claimed_by)::text FROM tireless.job")
        == "(pending,0,)"
    )
    survivor = store.claim_next("survivor", ["cc"])
    assert survivor is not None
    assert (survivor.id, survivor.attempts) == (1, 1)
    assert_invariants(db.conninfo, jobs=1, events=2)


def test_a_runner_killed_holding_a_claim_returns_through_expiry_with_the_attempt_counted(
    store: JobStore, db: Database
) -> None:
    enqueue_jobs(store, 1)
    db.scalar(NO_BACKOFF)
    out = new_queue()
    process = start(hold_a_claim, db.conninfo, "killed", out)
    job_id = tallies(out, [process], timeout=60)["job"]
    assert job_id == 1
    os.kill(process.pid or 0, signal.SIGKILL)
    process.join(30)
    assert process.exitcode == -signal.SIGKILL
    assert db.scalar("SELECT claimed_by FROM tireless.job") == "killed", (
        "the claim outlives its runner"
    )
    assert store.expire_stale_claims() == 0, "the lease has not passed"
    end_lease(db, job_id)
    assert store.expire_stale_claims() == 1
    row = "SELECT row(state, attempts, claimed_by, note LIKE 'lease of killed expired%')::text FROM tireless.job"
    assert db.scalar(row) == "(pending,1,,t)"
    again = store.claim_next("successor", ["cc"])
    assert again is not None
    assert (again.id, again.attempts) == (1, 2)
    assert_invariants(db.conninfo, jobs=1, events=4)


def test_a_restart_under_a_claim_loop_gives_clear_errors_and_loses_no_job(db: Database) -> None:
    with JobStore(db.conninfo) as setup:
        created = enqueue_jobs(setup, 100)
    db.scalar(NO_BACKOFF)
    errors: list[psycopg.Error] = []
    delivered: list[int] = []
    working, restarted, recovered, stop = (threading.Event() for _ in range(4))

    def claim_loop() -> None:
        with ConnectionPool(db.conninfo, min_size=1, max_size=2, timeout=10) as pool:
            loop = JobStore(pool)
            while not stop.is_set():
                try:
                    job = loop.claim_next("looper", ["cc"])
                    if job is not None:
                        loop.transition(job.id, "delivered", "looper", token=job.claim_token)
                        delivered.append(job.id)
                        (recovered if restarted.is_set() else working).set()
                except psycopg.Error as error:
                    errors.append(error)

    thread = threading.Thread(target=claim_loop)
    thread.start()
    try:
        assert working.wait(60)
        db.server.restart()
        restarted.set()
        with JobStore(db.conninfo) as poller:
            created += poller.enqueue([issue(n) for n in range(101, 151)])
        assert recovered.wait(60), f"the pool did not recover; errors: {errors[-3:]}"
    finally:
        stop.set()
        thread.join(60)
    assert errors, "the outage was seen by the caller"
    assert all(isinstance(e, psycopg.OperationalError) for e in errors), errors
    assert len(delivered) == len(set(delivered)), "no job was delivered twice"
    # A claim whose reply was lost with its connection is held by nobody alive: its lease returns it.
    with db.connect() as conn:
        conn.execute(
            "UPDATE tireless.job SET claim_expires_at = now() - interval '1 second'"
            " WHERE state = 'claimed'"
        )
    with JobStore(db.conninfo) as finisher:
        finisher.expire_stale_claims()
        while (job := finisher.claim_next("finisher", ["cc"])) is not None:
            finisher.transition(job.id, "delivered", "finisher", token=job.claim_token)
    assert db.scalar("SELECT count(*) FROM tireless.job WHERE state <> 'delivered'") == 0
    assert_invariants(db.conninfo, jobs=created)


def test_two_sweepers_and_four_runners_on_short_leases_keep_every_invariant(
    store: JobStore, db: Database
) -> None:
    created = enqueue_jobs(store, 20)
    db.scalar(NO_BACKOFF)
    db.scalar("SELECT 1 FROM tireless.set_kind_policy(kind => 'implement', max_attempts => 4)")
    out = new_queue()
    stop = SPAWN.Event()
    sweepers = [start(sweeper, db.conninfo, stop, out) for _ in range(2)]
    runners = [start(runner, db.conninfo, f"r{i}", ["cc"], 150, i, 0.5, out) for i in range(4)]
    tally = tallies(out, runners, timeout=120)
    wait_until_sql(db.conninfo, "NOT EXISTS (SELECT FROM tireless.job WHERE state = 'claimed')")
    stop.set()
    tally += tallies(out, sweepers, timeout=60)
    all_exit_0([*runners, *sweepers])
    events = created + tally["claims"] + tally["transitions"] + tally["swept"]
    seen = assert_invariants(db.conninfo, jobs=created, events=events)
    assert seen.claims == tally["claims"]
    assert seen.expiries == tally["swept"] > 0, "leases expired and two sweepers returned each once"
