"""claim_next: only the runner's lanes, oldest first, nothing when all is held, the claim's fields,
and exactly one winner per job across concurrent connections and processes."""

from __future__ import annotations

from datetime import timedelta
from multiprocessing.synchronize import Barrier
from typing import Any

import psycopg

from tests.conftest import Database
from tests.helpers import claimed, enqueue_jobs, history, issue, make_available, tracked
from tests.workers import SPAWN, all_exit_0, reports, start
from tireless import JobState, JobStore


def test_a_runner_is_only_handed_jobs_from_its_lanes(store: JobStore) -> None:
    tracked(store).enqueue(
        [issue(1), issue(2, "tireless", "tireless/implement", "tireless/agent:oc")]
    )
    cc_job = claimed(store, "cc-runner")
    assert (cc_job.number, cc_job.lane) == (1, "cc")
    assert store.claim_next("cc-runner", ["cc"]) is None, "the job routed to oc is not for cc"
    assert store.claim_next("elsewhere", ["zz", "gpu.large"]) is None, (
        "an unknown lane holds no work"
    )
    oc_job = claimed(store, "any-runner", ("cc", "oc"))
    assert (oc_job.number, oc_job.lane) == (2, "oc")


def test_claim_returns_nothing_when_every_job_in_the_lanes_is_held(store: JobStore) -> None:
    enqueue_jobs(store, 2)
    held = {claimed(store, "w1").id, claimed(store, "w2").id}
    assert len(held) == 2
    assert store.claim_next("w3", ["cc"]) is None


def test_claim_takes_the_oldest_job_first(store: JobStore) -> None:
    tracked(store)
    for number in (3, 1, 2):  # one poll each: job ids follow the order of the polls
        store.enqueue([issue(number)])
    assert [claimed(store, "w1").number for _ in range(3)] == [3, 1, 2]


def test_a_claim_records_worker_lease_token_and_attempt(db: Database, store: JobStore) -> None:
    enqueue_jobs(store, 1)
    with db.connect() as conn, conn.transaction():
        # In one transaction now() stands still, so the lease end is exact.
        job = claimed(JobStore(conn), "w1", ("cc",))
        now = conn.execute("SELECT now()").fetchone()
        assert now is not None
    assert job.state is JobState.CLAIMED
    assert job.claimed_by == "w1"
    assert job.claim_expires_at == now[0] + timedelta(minutes=10)
    assert job.claim_token is not None
    assert job.attempts == 1
    assert history(db, job.id)[-1] == ("pending", "claimed", "w1", 1, None)


def test_each_claim_has_a_fresh_token_and_counts_one_more_attempt(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 1)
    first = claimed(store, "w1")
    store.transition(first.id, "pending", "w1", token=first.claim_token)
    make_available(db, first.id)
    second = claimed(store, "w1")
    assert second.id == first.id
    assert (first.attempts, second.attempts) == (1, 2)
    assert second.claim_token not in (None, first.claim_token)


def test_two_claimers_one_job_one_winner(db: Database, store: JobStore) -> None:
    enqueue_jobs(store, 1)
    with db.connect() as a, db.connect(lock_timeout="5s") as b:
        with a.transaction():
            first = JobStore(a).claim_next("w1", ["cc"])  # a holds the row lock until commit
            # b still sees the job pending; only SKIP LOCKED keeps it from waiting or taking it.
            assert JobStore(b).claim_next("w2", ["cc"]) is None
        assert JobStore(b).claim_next("w2", ["cc"]) is None, "committed: the job is taken"
    assert first is not None
    assert (
        db.scalar("SELECT claimed_by FROM tireless.job WHERE id = %(id)s", {"id": first.id}) == "w1"
    )
    assert [event[1] for event in history(db, first.id)].count("claimed") == 1


PROCESSES, JOBS = 4, 2000


def claim_until_empty(conninfo: str, worker: str, barrier: Barrier, results: Any) -> None:
    """One runner process: its own connection, claims until claim_next finds nothing."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("SET lock_timeout = '10s'")
        store = JobStore(conn)
        ids: list[int] = []
        barrier.wait(timeout=60)
        while (job := store.claim_next(worker, ["cc"])) is not None:
            ids.append(job.id)
    results.put((worker, ids))


def test_runner_processes_claim_every_job_exactly_once(db: Database, store: JobStore) -> None:
    assert enqueue_jobs(store, JOBS) == JOBS
    barrier, results = SPAWN.Barrier(PROCESSES), SPAWN.Queue()
    runners = [
        start(claim_until_empty, db.conninfo, f"runner-{n}", barrier, results)
        for n in range(PROCESSES)
    ]
    got = dict(reports(results, runners, timeout=60))
    all_exit_0(runners)
    every_claim = [job_id for ids in got.values() for job_id in ids]
    all_ids = set(db.scalar("SELECT array_agg(id) FROM tireless.job"))
    assert len(every_claim) == len(set(every_claim)) == JOBS, "no job was claimed twice"
    assert set(every_claim) == all_ids
    with db.connect() as conn:
        holders = dict(conn.execute("SELECT id, claimed_by FROM tireless.job").fetchall())
        claims_per_job = conn.execute(
            "SELECT count(*) FILTER (WHERE to_state = 'claimed') AS n FROM tireless.job_event"
            " GROUP BY job_id HAVING count(*) FILTER (WHERE to_state = 'claimed') <> 1"
        ).fetchall()
    assert all(holders[job_id] == worker for worker, ids in got.items() for job_id in ids)
    assert claims_per_job == [], "job_event shows exactly one claim per job"
