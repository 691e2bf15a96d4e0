"""Lanes as rows: a lane never holds more claims than its capacity, also under many concurrent
claimers; capacity 0 and pause hold a lane's work back; unknown lanes simply hold no work."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from tests.conftest import Database
from tests.helpers import enqueue_jobs, rows, wait_until_blocked, wait_until_sql
from tests.workers import SPAWN, all_exit_0, reports, start
from tireless import Job, JobState, JobStore
from tireless.errors import InvalidArgument

CLAIMERS = 6
JOBS = 40
CAPACITY = 2
# What a holder waits for before it delivers, so claims certainly overlap: a full lane, or no
# pending job left to fill it.
LANE_FULL = f"""(SELECT count(*) FROM tireless.job WHERE lane = 'cc' AND state = 'claimed') >= {CAPACITY}
             OR NOT EXISTS (SELECT FROM tireless.job WHERE lane = 'cc' AND state = 'pending')"""


def claimer(conninfo: str, worker: str, barrier: Any, results: Any) -> None:
    """One runner process: claim, hold while it counts the lane's claims and until the lane is
    full, deliver; until the lane has no live job. Sends back the most claims it ever saw in the
    lane at once."""
    most_seen = 0
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("SET lock_timeout = '10s'")
        store = JobStore(conn)
        barrier.wait(timeout=60)
        with store.listen(["cc"]) as waiter:
            while True:
                job = store.claim_next(worker, ["cc"])
                if job is None:
                    live = conn.execute(
                        "SELECT count(*) FROM tireless.job WHERE lane = 'cc' AND state IN ('pending', 'claimed')"
                    ).fetchone()
                    if live == (0,):
                        break
                    waiter.wait(timeout=1.0)  # woken when a delivery frees a slot
                    continue
                seen = conn.execute(
                    "SELECT count(*) FROM tireless.job WHERE lane = 'cc' AND state = 'claimed'"
                ).fetchone()
                assert seen is not None
                most_seen = max(most_seen, seen[0])
                wait_until_sql(conninfo, LANE_FULL)
                store.transition(job.id, "delivered", worker)
    results.put(most_seen)


def most_concurrent_claims(db: Database, lane: str) -> int:
    """Replays the lane's claim and finish events in the order they were written (event ids
    are taken under the locks that decide a claim, so a slot freed is written before the claim
    that reuses it) and returns the most claims held at once."""
    events = rows(
        db,
        "SELECT e.to_state = 'claimed' FROM tireless.job_event e JOIN tireless.job j ON j.id = e.job_id"
        " WHERE j.lane = %(lane)s AND 'claimed' IN (e.from_state, e.to_state) ORDER BY e.id",
        {"lane": lane},
    )
    held = most = 0
    for (claimed,) in events:
        held += 1 if claimed else -1
        most = max(most, held)
    return most


def test_many_claimer_processes_never_exceed_the_lane_capacity_and_claim_every_job(
    db: Database, store: JobStore
) -> None:
    assert enqueue_jobs(store, JOBS) == JOBS
    store.set_lane_capacity("cc", CAPACITY)
    barrier, results = SPAWN.Barrier(CLAIMERS), SPAWN.Queue()
    processes = [
        start(claimer, db.conninfo, f"runner-{n}", barrier, results) for n in range(CLAIMERS)
    ]
    most_seen = reports(results, processes, timeout=120)
    all_exit_0(processes)
    assert max(most_seen) <= CAPACITY
    assert most_concurrent_claims(db, "cc") == CAPACITY
    delivered = db.scalar(
        "SELECT count(*) FROM tireless.job WHERE state = 'delivered' AND attempts = 1"
    )
    workers = db.scalar(
        "SELECT count(DISTINCT worker) FROM tireless.job_event WHERE to_state = 'claimed'"
    )
    assert delivered == JOBS
    assert workers > 1


def claim_in_thread(conn: psycopg.Connection[Any], worker: str) -> Callable[[], Job | None]:
    """Start claim_next on conn in a thread; the returned function joins it and gives the result."""
    outcome: list[Job | BaseException | None] = []

    def run() -> None:
        try:
            outcome.append(JobStore(conn).claim_next(worker, ["cc"]))
        except BaseException as error:
            outcome.append(error)

    thread = threading.Thread(target=run)
    thread.start()

    def result() -> Job | None:
        thread.join(timeout=30)
        assert not thread.is_alive()
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        return outcome[0]

    return result


@pytest.mark.parametrize("already_held", [0, 1])
def test_two_claimers_racing_for_the_last_free_slot_one_wins(
    db: Database, store: JobStore, already_held: int
) -> None:
    enqueue_jobs(store, 3)
    store.set_lane_capacity("cc", already_held + 1)
    if already_held:
        assert store.claim_next("runner-0", ["cc"]) is not None
    with db.connect() as a, db.connect(lock_timeout="30s") as b:
        with a.transaction():
            won = JobStore(a).claim_next("runner-a", ["cc"])
            assert won is not None
            b_claim = claim_in_thread(b, "runner-b")
            wait_until_blocked(db, b.info.backend_pid, a.info.backend_pid, "B to wait for A")
        assert b_claim() is None
    assert db.scalar("SELECT count(*) FROM tireless.job WHERE state = 'claimed'") == (
        already_held + 1
    )


def test_capacity_zero_holds_the_lane_back_and_null_lifts_the_limit(store: JobStore) -> None:
    enqueue_jobs(store, 2)
    enqueue_jobs(store, 1, "tireless", "tireless/implement", "tireless/agent:oc", first=3)
    lane = store.set_lane_capacity("cc", 0)
    assert (lane.name, lane.capacity) == ("cc", 0)
    assert store.claim_next("w1", ["cc"]) is None
    other = store.claim_next("w1", ["cc", "oc"])
    assert other is not None
    assert other.lane == "oc"
    assert store.set_lane_capacity("cc", None).capacity is None
    assert store.claim_next("w1", ["cc"]) is not None
    assert store.claim_next("w1", ["cc"]) is not None


def test_a_full_lane_hands_out_work_again_once_a_claim_ends(store: JobStore) -> None:
    enqueue_jobs(store, 3)
    store.set_lane_capacity("cc", 1)
    held = store.claim_next("w1", ["cc"])
    assert held is not None
    assert store.claim_next("w2", ["cc"]) is None
    store.transition(held.id, "delivered", "w1")
    assert store.claim_next("w2", ["cc"]) is not None


def test_a_paused_lane_hands_out_nothing_until_resumed(store: JobStore) -> None:
    enqueue_jobs(store, 2)
    assert store.pause_lane("cc").paused
    assert store.claim_next("w1", ["cc"]) is None
    assert not store.resume_lane("cc").paused
    assert store.claim_next("w1", ["cc"]) is not None


def test_claims_held_when_a_lane_is_paused_run_on(store: JobStore) -> None:
    enqueue_jobs(store, 2)
    held = store.claim_next("w1", ["cc"])
    assert held is not None
    store.pause_lane("cc")
    assert store.renew_claim(held.id, "w1")
    assert store.transition(held.id, "delivered", "w1").state is JobState.DELIVERED
    assert store.claim_next("w1", ["cc"]) is None


def test_lane_settings_show_in_lane_status(db: Database, store: JobStore) -> None:
    enqueue_jobs(store, 3)
    store.set_lane_capacity("cc", 2)
    store.claim_next("w1", ["cc"])
    store.pause_lane("cc")
    with db.connect() as conn:
        row = conn.execute(
            "SELECT capacity, paused, pending, claimed FROM tireless.lane_status WHERE lane = 'cc'"
        ).fetchone()
    assert row == (2, True, 2, 1)


def test_unknown_lanes_hold_no_work_and_are_not_an_error(store: JobStore) -> None:
    enqueue_jobs(store, 1)
    assert store.claim_next("w1", ["nobody-serves-this"]) is None
    job = store.claim_next("w1", ["nobody-serves-this", "cc"])
    assert job is not None
    assert job.lane == "cc"


@pytest.mark.parametrize("lane", ["", "has space", "-leading-dash", "x" * 64])
def test_malformed_lane_names_are_refused(store: JobStore, lane: str) -> None:
    with pytest.raises(InvalidArgument):
        store.claim_next("w1", [lane])
    with pytest.raises(InvalidArgument):
        store.set_lane_capacity(lane, 1)


def test_a_negative_capacity_is_refused(store: JobStore) -> None:
    with pytest.raises(InvalidArgument):
        store.set_lane_capacity("cc", -1)
