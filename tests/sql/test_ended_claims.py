"""The holder's finish sent again with its claim's token, after its answer was lost: the store
answers with the job as it is now and changes nothing (tireless.job.ended_claim_token). A token
whose claim the holder did not end itself (its lease expired) or never held is refused as before."""

from __future__ import annotations

import uuid

import pytest

from tests.conftest import Database
from tests.helpers import claimed, end_lease, enqueue_jobs, history, rows
from tireless import JobStore
from tireless.errors import NotHolder
from tireless.models import JobState

BASE, HEAD = "a" * 40, "b" * 40


def test_a_finish_sent_again_answers_the_job_and_moves_nothing(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store)
    first = store.transition(job.id, JobState.DELIVERED, "w1", "done", job.claim_token)
    again = store.transition(job.id, JobState.DELIVERED, "w1", "done", job.claim_token)
    assert again == first
    assert [event[1] for event in history(db, job.id)].count("delivered") == 1


def test_a_release_sent_again_after_the_job_was_claimed_by_another_moves_nothing(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store)
    store.give_back(job.id, "w1", "deploy", job.claim_token)
    other = claimed(store, "w2")
    answer = store.give_back(job.id, "w1", "deploy", job.claim_token)
    assert (answer.state, answer.claimed_by, answer.given_back) == (JobState.CLAIMED, "w2", 1)
    assert rows(db, "SELECT claim_token FROM tireless.job") == [(other.claim_token,)]


def test_a_delivery_sent_again_records_one_delivery_and_one_pull_request(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store)
    for _ in range(2):
        delivered = store.deliver(job.id, "w1", "tireless/1", HEAD, "main", BASE, job.claim_token)
        assert delivered.state is JobState.DELIVERED
    assert rows(db, "SELECT count(*) FROM tireless.delivery") == [(1,)]
    assert rows(db, "SELECT count(*) FROM tireless.forge_write WHERE kind = 'pull'") == [(1,)]


def test_finish_and_claim_sent_again_answers_the_job_it_claimed_and_claims_no_other(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 3)
    job = claimed(store)
    first = store.finish_and_claim(job.id, JobState.DELIVERED, "w1", ["cc"], token=job.claim_token)
    again = store.finish_and_claim(job.id, JobState.DELIVERED, "w1", ["cc"], token=job.claim_token)
    assert first is not None
    assert again == first
    assert rows(db, "SELECT count(*) FROM tireless.job WHERE state = 'claimed'") == [(1,)]


def test_finish_and_claim_sent_again_answers_nothing_once_its_next_job_is_not_held(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 2)
    job = claimed(store)
    first = store.finish_and_claim(job.id, JobState.DELIVERED, "w1", ["cc"], token=job.claim_token)
    assert first is not None
    store.transition(first.id, JobState.DELIVERED, "w1", None, first.claim_token)
    assert (
        store.finish_and_claim(job.id, JobState.DELIVERED, "w1", ["cc"], token=job.claim_token)
        is None
    )


def test_a_finish_with_the_token_of_an_expired_claim_is_still_refused(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store)
    end_lease(db, job.id)
    assert store.expire_stale_claims() == 1
    with pytest.raises(NotHolder):
        store.transition(job.id, JobState.DELIVERED, "w1", None, job.claim_token)


def test_a_finish_with_a_token_never_held_is_refused(db: Database, store: JobStore) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store)
    store.transition(job.id, JobState.DELIVERED, "w1", None, job.claim_token)
    with pytest.raises(NotHolder):
        store.transition(job.id, JobState.DELIVERED, "w1", None, uuid.uuid4())


def test_another_finish_with_the_token_of_an_ended_claim_answers_the_job_as_it_is(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store)
    store.transition(job.id, JobState.CANCELLED, "w1", None, job.claim_token)
    answer = store.deliver(job.id, "w1", "tireless/1", HEAD, "main", BASE, job.claim_token)
    assert answer.state is JobState.CANCELLED, "the first finish stands; nothing is delivered"
    assert rows(db, "SELECT count(*) FROM tireless.delivery") == [(0,)]
