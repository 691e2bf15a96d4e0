"""deliver_and_claim: the delivering runner's cycle in one transaction. It delivers as deliver does
(what was pushed recorded, the pull request queued; the same refusals, and then nothing is
claimed), claims as claim_next does, answers a call sent again with its ended token with the job
it claimed (tireless.job.ended_claim_token), and is what a delivering lease that goes on uses."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

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
)
from tireless import Job, JobState, JobStore
from tireless.errors import InvalidArgument, MalformedDelivery, NotHolder, TirelessError, UnknownJob
from tireless.models import NO_CHANGE, Delivery

LANES = ["cc"]
BASE, HEAD = "a" * 40, "b" * 40
PUSHED = Delivery("tireless/1", HEAD, "main", BASE)


def deliveries(db: Database) -> list[tuple[Any, ...]]:
    return rows(db, "SELECT job_id, branch, head, base_branch, base, draft FROM tireless.delivery")


def test_it_delivers_what_was_pushed_and_claims_the_next_job_in_one_transaction(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 2)
    first = claimed(store)
    second = store.deliver_and_claim(
        first.id, "w1", LANES, delivery=PUSHED, token=first.claim_token
    )
    assert second is not None
    assert (second.state, second.claimed_by, second.attempts) == (JobState.CLAIMED, "w1", 1)
    assert second.id != first.id
    assert history(db, first.id)[-1] == ("claimed", "delivered", "w1", 1, None)
    assert same_transaction(db, first.id, second.id)
    assert deliveries(db) == [(first.id, "tireless/1", HEAD, "main", BASE, False)]
    xmins = rows(
        db,
        "SELECT DISTINCT xmin::text FROM tireless.delivery UNION"
        " SELECT xmin::text FROM tireless.job_event WHERE job_id = %(id)s AND to_state = 'claimed'",
        {"id": second.id},
    )
    assert len(xmins) == 1, "the delivery is recorded in the transaction that claims the next job"
    assert store.deliver_and_claim(second.id, "w1", LANES, token=second.claim_token) is None
    assert rows(
        db, "SELECT state::text, note FROM tireless.job WHERE id = %(id)s", {"id": second.id}
    ) == [("delivered", "no change")], (
        "no branch: delivered with no change, and no job left to claim"
    )


# Each refusal: its exception, and what it changes in the holder's call, given the job's token
# before it was claimed again and a job the holder has delivered.
Change = Callable[[Job, Job], dict[str, Any]]
REFUSALS: dict[str, tuple[type[TirelessError], Change]] = {
    "another worker": (NotHolder, lambda stale, done: {"worker": "w2"}),
    "the holder's old token": (NotHolder, lambda stale, done: {"token": stale.claim_token}),
    "a made-up token": (NotHolder, lambda stale, done: {"token": uuid.uuid4()}),
    "a delivered job": (NotHolder, lambda stale, done: {"job_id": done.id, "token": None}),
    "an unknown job": (UnknownJob, lambda stale, done: {"job_id": 10**9}),
    "a malformed head": (MalformedDelivery, lambda stale, done: {"head": "HEAD"}),
    "a branch that is its base": (
        MalformedDelivery,
        lambda stale, done: {"base_branch": "tireless/1"},
    ),
    "a head that is its base": (MalformedDelivery, lambda stale, done: {"head": BASE}),
    "a note too long": (InvalidArgument, lambda stale, done: {"note": "x" * 10_001}),
}


@pytest.mark.parametrize("refusal", REFUSALS)
def test_a_refused_delivery_is_refused_as_deliver_refuses_it_and_claims_nothing(
    db: Database, store: JobStore, refusal: str
) -> None:
    enqueue_jobs(store, 4)
    stale = claimed(store, "w1")
    end_lease(db, stale.id)  # the claim ends by expiry: its token is not one the holder ended
    assert store.expire_stale_claims() == 1
    make_available(db, stale.id)
    job = claimed(store, "w1")  # the same job again, under a new token
    assert job.id == stale.id
    done = claimed(store, "w1")
    store.deliver(done.id, "w1", token=done.claim_token)
    error, change = REFUSALS[refusal]
    call: dict[str, Any] = {"job_id": job.id, "worker": "w1", "token": job.claim_token}
    call |= {"branch": PUSHED.branch, "head": PUSHED.head, "base_branch": PUSHED.base_branch}
    call |= {"base": PUSHED.base, "note": None} | change(stale, done)
    before = snapshot(db), deliveries(db)
    with pytest.raises(error) as by_deliver:
        store.deliver(**call)
    pushed = Delivery(
        call.pop("branch"), call.pop("head"), call.pop("base_branch"), call.pop("base")
    )
    with pytest.raises(error) as by_deliver_and_claim:
        store.deliver_and_claim(lanes=LANES, delivery=pushed, **call)
    assert by_deliver_and_claim.value.sqlstate == by_deliver.value.sqlstate
    assert str(by_deliver_and_claim.value) == str(by_deliver.value)
    assert (snapshot(db), deliveries(db)) == before, "nothing delivered, nothing claimed"
    assert db.scalar("SELECT count(*) FROM tireless.job WHERE state = 'pending'") == 2


def test_sent_again_with_its_ended_token_it_answers_the_job_it_claimed_and_records_nothing_more(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 3)
    job = claimed(store)
    first = store.deliver_and_claim(job.id, "w1", LANES, delivery=PUSHED, token=job.claim_token)
    again = store.deliver_and_claim(job.id, "w1", LANES, delivery=PUSHED, token=job.claim_token)
    assert first is not None
    assert again == first
    assert rows(db, "SELECT count(*) FROM tireless.job WHERE state = 'claimed'") == [(1,)]
    assert rows(db, "SELECT count(*) FROM tireless.delivery") == [(1,)]
    assert rows(db, "SELECT count(*) FROM tireless.forge_write WHERE kind = 'pull'") == [(1,)], (
        "one pull request"
    )
    assert [event[1] for event in history(db, job.id)].count("delivered") == 1


def test_sent_again_once_its_next_job_is_not_held_it_answers_nothing_and_claims_no_other(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 3)
    job = claimed(store)
    first = store.deliver_and_claim(job.id, "w1", LANES, delivery=NO_CHANGE, token=job.claim_token)
    assert first is not None
    store.deliver(first.id, "w1", token=first.claim_token)
    again = store.deliver_and_claim(job.id, "w1", LANES, delivery=NO_CHANGE, token=job.claim_token)
    assert again is None
    assert rows(db, "SELECT count(*) FROM tireless.job WHERE state = 'pending'") == [(1,)]


def test_a_malformed_delivery_sent_again_is_still_refused(db: Database, store: JobStore) -> None:
    enqueue_jobs(store, 2)
    job = claimed(store)
    store.deliver_and_claim(job.id, "w1", LANES, delivery=PUSHED, token=job.claim_token)
    with pytest.raises(MalformedDelivery):
        store.deliver_and_claim(
            job.id, "w1", LANES, delivery=Delivery("tireless/1", "HEAD"), token=job.claim_token
        )


def test_a_delivering_lease_that_goes_on_delivers_and_claims_in_one_call(
    db: Database,
    any_store: JobStore,
) -> None:
    enqueue_jobs(any_store, 2)
    held = any_store.lease("w1", LANES, then_claim=lambda: True)
    with held as job:
        assert job is not None
        held.finish(PUSHED)
        next_job = held.next
        assert next_job is not None, "finished inside the block, when the holder said so"
    assert (held.finished, held.ended_as) == (None, JobState.DELIVERED)
    assert job is not None
    assert next_job is not None
    assert next_job.claimed_by == "w1"
    assert same_transaction(db, job.id, next_job.id)
    assert deliveries(db) == [(job.id, "tireless/1", HEAD, "main", BASE, False)]
    then = any_store.lease("w1", LANES, job=next_job, then_claim=lambda: False)
    with then as second:
        assert second is not None
        assert second == next_job
        then.finish(Delivery("tireless/2", HEAD, "main", BASE, draft=True))
    assert then.finished is not None
    assert then.finished.state is JobState.DELIVERED
    assert then.next is None
    assert deliveries(db)[-1] == (next_job.id, "tireless/2", HEAD, "main", BASE, True)


def test_a_lease_finishes_once_and_its_block_s_end_finishes_nothing(
    db: Database,
    any_store: JobStore,
) -> None:
    enqueue_jobs(any_store, 1)
    held = any_store.lease("w1", LANES)

    def work_that_fails_after_its_finish() -> None:
        with held as job:
            assert job is not None
            held.finish(NO_CHANGE)
            with pytest.raises(ValueError, match="once"):
                held.finish(NO_CHANGE)
            raise RuntimeError("after the finish")

    with pytest.raises(RuntimeError, match="after the finish"):
        work_that_fails_after_its_finish()
    assert held.finished is not None
    assert rows(db, "SELECT state::text, note FROM tireless.job") == [("delivered", "no change")]
