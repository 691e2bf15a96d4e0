"""transition and renew_claim: the state machine move by move, who may make each move, release,
notes, and fencing: a worker that lost its claim can neither renew nor finish the job."""

from __future__ import annotations

from datetime import timedelta
from itertools import product
from typing import Any
from uuid import UUID

import pytest

from tests.conftest import Database
from tests.helpers import claimed, end_lease, enqueue_jobs, history, make_available
from tireless import Job, JobState, JobStore
from tireless.errors import IllegalTransition, JobIsTerminal, NotHolder, TirelessError

PENDING, CLAIMED, DELIVERED, FAILED, CANCELLED = JobState
HOLDER = "w1"

# What the move gets when the rightful party asks: the holder for a claimed job, the superuser's
# session (no worker) for a pending or terminal one. None: the move is made.
MACHINE: dict[tuple[JobState, JobState], type[TirelessError] | None] = {
    (PENDING, PENDING): IllegalTransition,
    (PENDING, CLAIMED): IllegalTransition,
    (PENDING, DELIVERED): IllegalTransition,
    (PENDING, FAILED): IllegalTransition,
    (PENDING, CANCELLED): None,
    (CLAIMED, PENDING): None,
    (CLAIMED, CLAIMED): IllegalTransition,
    (CLAIMED, DELIVERED): None,
    (CLAIMED, FAILED): None,
    (CLAIMED, CANCELLED): None,
    **{(done, to): JobIsTerminal for done in (DELIVERED, FAILED, CANCELLED) for to in JobState},
}


def job_in(store: JobStore, state: JobState) -> Job:
    """One job in `state`; once claimed, by HOLDER."""
    enqueue_jobs(store, 1)
    job = claimed(store, HOLDER)
    if state is PENDING:
        return store.transition(job.id, PENDING, HOLDER)
    if state is CLAIMED:
        return job
    return store.transition(job.id, state, HOLDER)


def row(db: Database, job_id: int) -> Any:
    return db.scalar("SELECT to_jsonb(j) FROM tireless.job j WHERE j.id = %(id)s", {"id": job_id})


def assert_refused(
    db: Database, job_id: int, error: type[TirelessError], move: Any, *args: Any
) -> None:
    """`move(job_id, *args)` raises exactly `error`, and the job and its history stay as they were."""
    before = (row(db, job_id), history(db, job_id))
    with pytest.raises(error) as raised:
        move(job_id, *args)
    assert type(raised.value) is error
    assert (row(db, job_id), history(db, job_id)) == before


def test_the_machine_table_covers_every_pair_of_states() -> None:
    assert set(MACHINE) == set(product(JobState, JobState))


@pytest.mark.parametrize(("from_state", "to_state"), list(MACHINE))
def test_each_move_of_the_state_machine(
    db: Database, store: JobStore, from_state: JobState, to_state: JobState
) -> None:
    job = job_in(store, from_state)
    worker = HOLDER if from_state is CLAIMED else None
    refusal = MACHINE[from_state, to_state]
    if refusal is not None:
        assert_refused(db, job.id, refusal, store.transition, to_state, worker)
        return
    moved = store.transition(job.id, to_state, worker, note="moved")
    assert moved.state is to_state
    assert (moved.claimed_by, moved.claim_expires_at, moved.claim_token) == (None, None, None)
    assert history(db, job.id)[-1] == (from_state, to_state, worker, moved.attempts, "moved")


@pytest.mark.parametrize("to_state", [PENDING, DELIVERED, FAILED, CANCELLED])
@pytest.mark.parametrize("intruder", ["another worker", "no worker", "the holder's old token"])
def test_only_the_holder_leaves_claimed(
    db: Database, store: JobStore, to_state: JobState, intruder: str
) -> None:
    enqueue_jobs(store, 1)
    old = claimed(store, HOLDER)
    store.transition(old.id, PENDING, HOLDER)
    make_available(db, old.id)
    claimed(store, HOLDER)  # HOLDER holds it again, under a new token
    worker, token = {
        "another worker": ("w2", None),
        "no worker": (None, None),
        "the holder's old token": (HOLDER, old.claim_token),
    }[intruder]
    assert_refused(db, old.id, NotHolder, store.transition, to_state, worker, None, token)


def test_release_clears_the_claim_backs_off_and_counts_a_lane_failure(
    db: Database, store: JobStore
) -> None:
    job = job_in(store, CLAIMED)
    released = store.transition(job.id, PENDING, HOLDER, note="agent crashed")
    assert released.state is PENDING
    assert (released.claimed_by, released.claim_expires_at, released.claim_token) == (
        None,
        None,
        None,
    )
    assert released.attempts == 1
    assert released.available_at > released.updated_at, "in backoff"
    assert store.claim_next("w2", ["cc"]) is None
    assert db.scalar("SELECT consecutive_failures FROM tireless.lane WHERE name = 'cc'") == 1


def test_the_note_is_kept_on_the_job_and_in_its_history(db: Database, store: JobStore) -> None:
    job = job_in(store, CLAIMED)
    delivered = store.transition(job.id, DELIVERED, HOLDER, note="merged in #12")
    assert delivered.note == "merged in #12"
    assert history(db, job.id)[-1] == ("claimed", "delivered", HOLDER, 1, "merged in #12")


def lease_end(db: Database, job_id: int) -> Any:
    return db.scalar("SELECT claim_expires_at FROM tireless.job WHERE id = %(id)s", {"id": job_id})


def test_renew_extends_the_lease_while_held(db: Database, store: JobStore) -> None:
    enqueue_jobs(store, 1)
    job = store.claim_next(HOLDER, ["cc"], lease=timedelta(minutes=1))
    assert job is not None
    with db.connect() as conn, conn.transaction():
        renewed = JobStore(conn).renew_claim(job.id, HOLDER, timedelta(hours=1), job.claim_token)
        now = conn.execute("SELECT now()").fetchone()
        assert now is not None
    assert renewed is True
    assert lease_end(db, job.id) == now[0] + timedelta(hours=1)
    assert store.renew_claim(job.id, HOLDER) is True, "the worker's name alone holds it too"


def test_renew_by_another_worker_is_false_and_changes_nothing(
    db: Database, store: JobStore
) -> None:
    job = job_in(store, CLAIMED)
    assert store.renew_claim(job.id, "w2", timedelta(hours=1)) is False
    assert lease_end(db, job.id) == job.claim_expires_at


def test_a_holder_past_its_lease_may_renew_and_finish_until_the_sweeper_moves_it(
    db: Database, store: JobStore
) -> None:
    job = job_in(store, CLAIMED)
    end_lease(db, job.id)
    assert store.renew_claim(job.id, HOLDER, token=job.claim_token) is True
    assert store.expire_stale_claims() == 0, "renewed: nothing is stale"
    end_lease(db, job.id)
    assert store.transition(job.id, DELIVERED, HOLDER, token=job.claim_token).state is DELIVERED


def lose_claim(db: Database, store: JobStore, next_holder: str) -> tuple[Job, Job]:
    """A job HOLDER claims; its lease ends, the sweeper returns it, and `next_holder` claims it.
    Returns the lost claim and the new one."""
    job = job_in(store, CLAIMED)
    end_lease(db, job.id)
    assert store.expire_stale_claims() == 1
    make_available(db, job.id)
    again = claimed(store, next_holder)
    assert again.id == job.id
    return job, again


def assert_lost(
    db: Database, store: JobStore, job_id: int, worker: str, token: UUID | None
) -> None:
    """`worker` (with `token`) can neither renew nor finish the job."""
    assert store.renew_claim(job_id, worker, token=token) is False
    for to_state in (DELIVERED, FAILED, PENDING, CANCELLED):
        assert_refused(db, job_id, NotHolder, store.transition, to_state, worker, None, token)


def test_a_worker_whose_lease_expired_and_job_was_claimed_again_can_neither_renew_nor_finish(
    db: Database, store: JobStore
) -> None:
    lost, now_held = lose_claim(db, store, "w2")
    assert_lost(db, store, lost.id, HOLDER, None)
    assert_lost(db, store, lost.id, HOLDER, lost.claim_token)
    assert lease_end(db, lost.id) == now_held.claim_expires_at, "w2's claim is untouched"
    assert store.transition(lost.id, DELIVERED, "w2", token=now_held.claim_token).state is DELIVERED


def test_an_old_token_is_fenced_after_the_same_worker_claims_the_job_again(
    db: Database, store: JobStore
) -> None:
    old, new = lose_claim(db, store, HOLDER)
    assert new.claim_token != old.claim_token
    assert_lost(db, store, old.id, HOLDER, old.claim_token)
    assert store.renew_claim(old.id, HOLDER, token=new.claim_token) is True
    assert store.transition(old.id, DELIVERED, HOLDER, token=new.claim_token).state is DELIVERED
