"""heartbeat: renews like renew_claim and tells the caller where it stands: held by the holder,
lost to a stale token or another worker, cancel once the issue withdrew its request (the lease
still extended, so the holder has time to stop)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from tests.conftest import Database
from tests.helpers import claimed, end_lease, enqueue_jobs, issue, make_available
from tireless import Heartbeat, JobStore
from tireless.errors import InvalidArgument, UnknownJob

LEASE_END = "SELECT claim_expires_at FROM tireless.job WHERE id = %(id)s"


def test_the_holder_hears_held_and_its_lease_is_extended(store: JobStore, db: Database) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store)
    assert job.claim_expires_at is not None
    assert store.heartbeat(job.id, "w1", timedelta(hours=2), job.claim_token) == Heartbeat.HELD
    assert store.heartbeat(job.id, "w1", timedelta(hours=2)) == Heartbeat.HELD, "no token: by name"
    assert db.scalar(LEASE_END, {"id": job.id}) > job.claim_expires_at + timedelta(minutes=100)


def test_a_stale_token_hears_lost_and_changes_nothing(store: JobStore, db: Database) -> None:
    enqueue_jobs(store, 1)
    first = claimed(store)
    end_lease(db, first.id)
    assert store.expire_stale_claims() == 1
    make_available(db, first.id)
    second = claimed(store)  # the same worker name claims it again: a new token
    assert second.id == first.id
    lease_end = db.scalar(LEASE_END, {"id": second.id})
    assert store.heartbeat(first.id, "w1", token=first.claim_token) == Heartbeat.LOST
    assert store.heartbeat(first.id, "w1", token=uuid.uuid4()) == Heartbeat.LOST
    assert db.scalar(LEASE_END, {"id": second.id}) == lease_end
    assert store.heartbeat(second.id, "w1", token=second.claim_token) == Heartbeat.HELD


def test_another_worker_hears_lost(store: JobStore, db: Database) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store)
    lease_end = db.scalar(LEASE_END, {"id": job.id})
    assert store.heartbeat(job.id, "w2") == Heartbeat.LOST
    assert store.heartbeat(job.id, "w2", token=job.claim_token) == Heartbeat.LOST
    assert db.scalar(LEASE_END, {"id": job.id}) == lease_end


def test_a_finished_job_hears_lost(store: JobStore) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store)
    store.transition(job.id, "delivered", "w1")
    assert store.heartbeat(job.id, "w1", token=job.claim_token) == Heartbeat.LOST


def test_the_holder_of_a_withdrawn_issue_hears_cancel_and_keeps_its_lease(
    store: JobStore, db: Database
) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store)
    store.enqueue([issue(1, state="closed")])
    before = db.scalar(LEASE_END, {"id": job.id})
    answer = store.heartbeat(job.id, "w1", timedelta(hours=1), job.claim_token)
    assert answer == Heartbeat.CANCEL
    assert db.scalar(LEASE_END, {"id": job.id}) > before
    assert store.heartbeat(job.id, "w2") == Heartbeat.LOST, "only the holder hears cancel"
    assert store.heartbeat(job.id, "w1", token=uuid.uuid4()) == Heartbeat.LOST


def test_heartbeat_refuses_an_unknown_job_and_bad_arguments(store: JobStore) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store)
    with pytest.raises(UnknownJob, match="no job with id 987654"):
        store.heartbeat(987654, "w1")
    with pytest.raises(InvalidArgument, match="worker must be"):
        store.heartbeat(job.id, " ")
    with pytest.raises(InvalidArgument, match="lease must be"):
        store.heartbeat(job.id, "w1", timedelta(0))
    assert store.heartbeat(job.id, "w1") == Heartbeat.HELD


def test_heartbeat_answers_in_the_database_vocabulary(store: JobStore, db: Database) -> None:
    """The SQL answer is one of the Heartbeat values, so a psql caller reads the same words."""
    enqueue_jobs(store, 1)
    job = claimed(store)
    answer = db.scalar(
        "SELECT tireless.heartbeat(job_id => %(id)s, worker => 'w1')", {"id": job.id}
    )
    assert answer == "held"
    assert {h.value for h in Heartbeat} == {"held", "lost", "cancel", "timeout", "stalled"}


def test_an_answer_a_runner_does_not_know_reads_as_cancel() -> None:
    """DESIGN.md: heartbeat may learn new answers; a runner that does not know one stops."""
    assert Heartbeat("some-later-answer") is Heartbeat.CANCEL
