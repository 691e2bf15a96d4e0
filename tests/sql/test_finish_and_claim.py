"""finish_and_claim: the runner's cycle in one transaction. It finishes as transition does (the same
refusals, and then nothing is claimed), claims as claim_next does (lanes, capacity, breaker,
pause), never hands one job to two runners, and is what a lease that goes on and `tireless work`
use."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta
from multiprocessing.synchronize import Barrier
from typing import Any

import psycopg
import pytest

from tests.conftest import Database
from tests.helpers import (
    claimed,
    end_lease,
    enqueue_jobs,
    history,
    make_available,
    rows,
    same_transaction,
    snapshot,
    tireless_cli,
)
from tests.support.roles import Login
from tests.workers import SPAWN, all_exit_0, reports, start
from tireless import Job, JobState, JobStore
from tireless.errors import (
    IllegalTransition,
    InvalidArgument,
    NotHolder,
    TirelessError,
    UnknownJob,
)

LANES = ["cc"]
AGENT_OC = ("tireless", "tireless/implement", "tireless/agent:oc")


def finish_and_claim(
    store: JobStore, job: Job, to: str = "delivered", worker: str = "w1", **options: Any
) -> Job | None:
    return store.finish_and_claim(
        job.id, to, worker, options.pop("lanes", LANES), token=job.claim_token, **options
    )


def test_it_delivers_the_job_and_claims_the_next_in_one_transaction(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 2)
    first = claimed(store)
    second = finish_and_claim(store, first, note="merged")
    assert second is not None
    assert second.id != first.id
    assert (second.state, second.claimed_by, second.attempts) == (JobState.CLAIMED, "w1", 1)
    assert second.claim_token not in (None, first.claim_token)
    assert history(db, first.id)[-1] == ("claimed", "delivered", "w1", 1, "merged")
    assert history(db, second.id)[-1] == ("pending", "claimed", "w1", 1, None)
    assert same_transaction(db, first.id, second.id)
    assert finish_and_claim(store, second) is None, "no job left: no row"
    assert db.scalar("SELECT count(*) FROM tireless.job WHERE state = 'delivered'") == 2


# Each refusal: its exception, and what it changes in the holder's call, given the job's token
# before it was claimed again and a job the holder has delivered.
Change = Callable[[Job, Job], dict[str, Any]]
REFUSALS: dict[str, tuple[type[TirelessError], Change]] = {
    "another worker": (NotHolder, lambda stale, done: {"worker": "w2"}),
    "the holder's old token": (NotHolder, lambda stale, done: {"token": stale.claim_token}),
    "a made-up token": (NotHolder, lambda stale, done: {"token": uuid.uuid4()}),
    "a delivered job": (NotHolder, lambda stale, done: {"job_id": done.id, "token": None}),
    "an unknown job": (UnknownJob, lambda stale, done: {"job_id": 10**9}),
    "an unknown state": (InvalidArgument, lambda stale, done: {"to": "done"}),
    "the move to claimed": (IllegalTransition, lambda stale, done: {"to": "claimed"}),
    "a note too long": (InvalidArgument, lambda stale, done: {"note": "x" * 10_001}),
}


@pytest.mark.parametrize("refusal", REFUSALS)
def test_a_refused_finish_is_refused_as_transition_refuses_it_and_claims_nothing(
    db: Database, store: JobStore, refusal: str
) -> None:
    enqueue_jobs(store, 4)
    stale = claimed(store, "w1")
    end_lease(
        db, stale.id
    )  # the claim ends by expiry: a finish by the holder itself is answered as done
    assert store.expire_stale_claims() == 1
    make_available(db, stale.id)
    job = claimed(store, "w1")  # the same job again, under a new token
    assert job.id == stale.id
    done = claimed(store, "w1")
    store.transition(done.id, "delivered", "w1", token=done.claim_token)
    error, change = REFUSALS[refusal]
    call: dict[str, Any] = {"job_id": job.id, "to": "delivered", "worker": "w1"}
    call |= {"token": job.claim_token, "note": None} | change(stale, done)
    before = snapshot(db)
    with pytest.raises(error) as by_transition:
        store.transition(call["job_id"], call["to"], call["worker"], call["note"], call["token"])
    with pytest.raises(error) as by_finish_and_claim:
        store.finish_and_claim(
            call["job_id"],
            call["to"],
            call["worker"],
            LANES,
            token=call["token"],
            note=call["note"],
        )
    assert by_finish_and_claim.value.sqlstate == by_transition.value.sqlstate
    assert snapshot(db) == before, "nothing finished, nothing claimed"
    assert db.scalar("SELECT count(*) FROM tireless.job WHERE state = 'pending'") == 2


def test_another_runner_login_is_refused_as_transition_refuses_it_and_claims_nothing(
    db: Database,
    store: JobStore,
    login: Login,
) -> None:
    enqueue_jobs(store, 2)
    with JobStore(login("tireless_runner")) as host1, JobStore(login("tireless_runner")) as host2:
        job = host1.claim_next("host1-w1", LANES)
        assert job is not None
        before = snapshot(db)
        with pytest.raises(NotHolder) as by_transition:
            host2.transition(job.id, "delivered", "host1-w1", token=job.claim_token)
        with pytest.raises(NotHolder) as by_finish_and_claim:
            host2.finish_and_claim(job.id, "delivered", "host1-w1", LANES, token=job.claim_token)
        assert by_finish_and_claim.value.detail == by_transition.value.detail
        assert snapshot(db) == before, "nothing finished, nothing claimed"
        next_job = host1.finish_and_claim(
            job.id, "delivered", "host1-w1", LANES, token=job.claim_token
        )
        assert next_job is not None, "the holder's own login finishes and claims"


def test_a_refused_claim_undoes_the_finish(db: Database, store: JobStore) -> None:
    enqueue_jobs(store, 2)
    job = claimed(store)
    before = snapshot(db)
    with pytest.raises(InvalidArgument):
        finish_and_claim(store, job, lanes=["not a lane!"])
    assert snapshot(db) == before, "the call is all or nothing: the job is still held"


def test_it_claims_only_from_the_lanes_it_is_given(store: JobStore) -> None:
    enqueue_jobs(store, 1)
    enqueue_jobs(store, 1, *AGENT_OC, first=2)
    job = claimed(store)
    assert finish_and_claim(store, job) is None, "the oc job is not for a cc runner"
    job = claimed(store, lanes=("oc",))
    assert job.lane == "oc"
    enqueue_jobs(store, 1, first=3)
    next_job = finish_and_claim(store, job, lanes=["oc", "cc"])
    assert next_job is not None
    assert (next_job.number, next_job.lane) == (3, "cc")


def test_it_claims_nothing_from_a_paused_lane_and_the_finish_stands(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 2)
    job = claimed(store)
    store.pause_lane("cc")
    assert finish_and_claim(store, job) is None
    assert rows(db, "SELECT state::text, count(*) FROM tireless.job GROUP BY 1 ORDER BY 1") == [
        ("delivered", 1),
        ("pending", 1),
    ]


def test_the_slot_the_finish_frees_in_a_full_lane_is_the_one_it_claims(store: JobStore) -> None:
    enqueue_jobs(store, 3)
    store.set_lane_capacity("cc", 1)
    job = claimed(store)
    assert store.claim_next("w2", LANES) is None, "the lane is full"
    next_job = finish_and_claim(store, job)
    assert next_job is not None, "the finish came first and freed the slot"
    assert store.claim_next("w2", LANES) is None, "and the lane is full again"


def test_a_failure_that_trips_the_breaker_claims_nothing(db: Database, store: JobStore) -> None:
    db.scalar("SELECT tireless.set_policy(breaker_threshold => 2)")
    enqueue_jobs(store, 4)
    first = claimed(store)
    second = finish_and_claim(store, first, "failed", note="agent crashed")  # one failure: not yet
    assert second is not None
    assert finish_and_claim(store, second, "failed", note="agent crashed") is None, "tripped"
    assert db.scalar("SELECT tripped_until > now() FROM tireless.lane WHERE name = 'cc'") is True


def test_a_delivery_after_failures_closes_the_breaker_s_count_as_transition_does(
    db: Database, store: JobStore
) -> None:
    """A delivery in a lane whose breaker counted failures is transition's to finish (the lane
    hears of it); a delivery in a quiet lane takes finish_and_claim's own statement. Both the
    same: the count goes back to 0, the history has each change once."""
    db.scalar("SELECT tireless.set_policy(breaker_threshold => 3)")
    enqueue_jobs(store, 4)
    first = claimed(store)
    second = finish_and_claim(store, first, "failed", note="agent crashed")
    assert second is not None
    assert db.scalar("SELECT consecutive_failures FROM tireless.lane WHERE name = 'cc'") == 1
    third = finish_and_claim(store, second, "delivered")
    assert third is not None
    assert db.scalar("SELECT consecutive_failures FROM tireless.lane WHERE name = 'cc'") == 0
    fourth = finish_and_claim(store, third, "delivered")  # a quiet lane now: the copy's statement
    assert fourth is not None
    assert db.scalar(
        "SELECT state::text FROM tireless.job WHERE id = %(id)s", {"id": third.id}
    ) == ("delivered")
    assert [event[0:2] for event in history(db, third.id)] == [
        (None, "pending"),
        ("pending", "claimed"),
        ("claimed", "delivered"),
    ]


PROCESSES, JOBS = 4, 1000


def finish_and_claim_until_empty(
    conninfo: str, worker: str, barrier: Barrier, results: Any
) -> None:
    """One runner process on its own connection: claims once, then finishes and claims in one
    call until there is nothing left."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("SET lock_timeout = '10s'")
        store = JobStore(conn)
        barrier.wait(timeout=60)
        ids: list[int] = []
        job = store.claim_next(worker, LANES)
        while job is not None:
            ids.append(job.id)
            job = store.finish_and_claim(job.id, "delivered", worker, LANES, token=job.claim_token)
    results.put((worker, ids))


def test_runner_processes_finishing_and_claiming_never_hand_one_job_to_two(
    db: Database, store: JobStore
) -> None:
    assert enqueue_jobs(store, JOBS) == JOBS
    barrier, results = SPAWN.Barrier(PROCESSES), SPAWN.Queue()
    runners = [
        start(finish_and_claim_until_empty, db.conninfo, f"runner-{n}", barrier, results)
        for n in range(PROCESSES)
    ]
    got = dict(reports(results, runners, timeout=120))
    all_exit_0(runners)
    every_claim = [job_id for ids in got.values() for job_id in ids]
    assert len(every_claim) == len(set(every_claim)) == JOBS, "no job was claimed twice"
    assert sum(1 for ids in got.values() if ids) > 1, "the runners shared the work"
    holders = dict(
        rows(db, "SELECT job_id, worker FROM tireless.job_event WHERE to_state = 'claimed'")
    )
    assert all(holders[job_id] == worker for worker, ids in got.items() for job_id in ids)
    assert rows(db, "SELECT state::text, count(*) FROM tireless.job GROUP BY 1") == [
        ("delivered", JOBS)
    ]
    assert not rows(
        db,
        "SELECT job_id FROM tireless.job_event WHERE to_state = 'claimed'"
        " GROUP BY job_id HAVING count(*) <> 1",
    ), "one claim per job in the history"


# The lease: a runner that goes on finishes and claims in one call.
def test_a_lease_that_goes_on_finishes_and_claims_in_one_call(
    db: Database,
    any_store: JobStore,
) -> None:
    enqueue_jobs(any_store, 2)
    held = any_store.lease("w1", LANES, then_claim=lambda: True)
    with held as job:
        assert job is not None
        first = job.id
    assert (held.finished, held.ended_as) == (None, JobState.DELIVERED)
    assert held.next is not None
    assert held.next.claimed_by == "w1"
    assert same_transaction(db, first, held.next.id)
    then = any_store.lease("w1", LANES, job=held.next, then_claim=lambda: False)
    with then as second:
        assert second == held.next, "held, not claimed again"
    assert then.finished is not None
    assert then.finished.state is JobState.DELIVERED
    assert then.next is None


def test_a_lease_that_stops_gives_back_and_claims_nothing(
    db: Database,
    any_store: JobStore,
) -> None:
    enqueue_jobs(any_store, 2)
    held = any_store.lease("w1", LANES, lease=timedelta(minutes=1), then_claim=lambda: False)
    with held as job:
        assert job is not None
    assert held.finished is not None
    assert held.next is None
    assert db.scalar("SELECT count(*) FROM tireless.job WHERE state = 'claimed'") == 0


def test_tireless_work_finishes_each_job_and_claims_the_next_in_one_transaction(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 3)
    # --once would stop after the first job; this worker stops when the queue is empty, by
    # draining itself (its command sends the drain signal, SIGUSR1, on the last job).
    last = db.scalar("SELECT max(id) FROM tireless.job")
    # No sandbox: a contained agent can neither see nor signal its worker.
    command = ["sh", "-c", f'[ "$TIRELESS_JOB_ID" = {last} ] && kill -USR1 $PPID; true']
    result = tireless_cli(
        db.url, "work", "--worker", "runner-1", "--lane", "cc", "--drain-on", "SIGUSR1",
        "--sandbox", "none", "--", *command,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    ids = [r[0] for r in rows(db, "SELECT id FROM tireless.job ORDER BY id")]
    assert rows(db, "SELECT DISTINCT state::text FROM tireless.job") == [("delivered",)]
    assert same_transaction(db, ids[0], ids[1])
    assert same_transaction(db, ids[1], ids[2])
