"""give_back and the holder's refusals: a runner that stops returns its job without a failure, and a
worker that no longer holds a job hears "not the holder" (TL004) whatever the job's state now is."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import psycopg
import pytest

from tests.conftest import Database
from tests.helpers import (
    claimed,
    end_lease,
    enqueue_jobs,
    history,
    issue,
    make_available,
    wait_until,
)
from tests.support.roles import Login
from tireless import Job, JobState, JobStore
from tireless.errors import NotHolder, PermissionDenied, UnknownJob
from tireless.models import NO_CHANGE
from tireless.store.lease import ShuttingDown


def lane_failures(db: Database) -> int:
    failures: int | None = db.scalar(
        "SELECT consecutive_failures FROM tireless.lane WHERE name = 'cc'"
    )
    return failures or 0


def test_a_given_back_job_is_claimable_at_once_keeps_its_attempt_and_counts_no_failure(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store, "w1")
    back = store.give_back(job.id, "w1", "deploy", job.claim_token)
    assert (back.state, back.claimed_by, back.claim_token) == (JobState.PENDING, None, None)
    assert (back.attempts, back.given_back, back.note) == (1, 1, "given back: deploy")
    assert back.available_at <= back.updated_at, "no backoff"
    assert lane_failures(db) == 0
    assert history(db, job.id)[-1] == ("claimed", "pending", "w1", 1, "given back: deploy")
    again = claimed(store, "w2")
    assert (again.id, again.attempts, again.given_back) == (job.id, 2, 1)


def test_give_backs_do_not_spend_the_budget_but_releases_and_expiries_do(
    db: Database, store: JobStore
) -> None:
    db.scalar("SELECT 1 FROM tireless.set_kind_policy(kind => 'implement', max_attempts => 2)")
    db.scalar("SELECT 1 FROM tireless.set_policy(backoff_base => '0', backoff_cap => '0')")
    enqueue_jobs(store, 1)
    for _ in range(5):
        job = claimed(store, "w1")
        store.give_back(job.id, "w1")
    job = claimed(store, "w1")
    released = store.transition(job.id, JobState.PENDING, "w1", "crashed")
    assert (released.state, released.attempts, released.given_back) == (JobState.PENDING, 6, 5)
    job = claimed(store, "w1")
    end_lease(db, job.id)
    assert store.expire_stale_claims() == 1
    failed = db.scalar("SELECT row(state, attempts, given_back, note)::text FROM tireless.job")
    assert failed.startswith('(failed,7,5,"attempts exhausted (2 of 2); last: lease of w1 expired')


def test_five_give_backs_in_a_row_leave_the_lane_closed(db: Database, store: JobStore) -> None:
    enqueue_jobs(store, 5)
    for _ in range(5):
        job = claimed(store, "w1")
        store.give_back(job.id, "w1")
    assert lane_failures(db) == 0
    assert db.scalar("SELECT breaker FROM tireless.lane_status WHERE lane = 'cc'") == "closed"


HoldingRefusal = Callable[[JobStore, Job], object]
FINISHES: dict[str, HoldingRefusal] = {
    "deliver": lambda store, job: store.transition(
        job.id, "delivered", "w1", None, job.claim_token
    ),
    "release": lambda store, job: store.transition(job.id, "pending", "w1", None, job.claim_token),
    "cancel": lambda store, job: store.transition(job.id, "cancelled", "w1", None, job.claim_token),
    "give back": lambda store, job: store.give_back(job.id, "w1", None, job.claim_token),
}


def job_now(db: Database, store: JobStore, job: Job, now: str) -> None:
    """Move w1's claimed job to where it is `now`, as the sweeper, another runner or a finish would."""
    end_lease(db, job.id)
    assert store.expire_stale_claims() == 1
    if now == "pending":
        return
    make_available(db, job.id)
    other = claimed(store, "w2")
    if now == "terminal":
        store.transition(other.id, "delivered", "w2")


@pytest.mark.parametrize("now", ["pending", "claimed by another", "terminal"])
@pytest.mark.parametrize("finish", list(FINISHES))
def test_a_worker_that_lost_its_job_hears_not_the_holder_whatever_its_state(
    db: Database, store: JobStore, finish: str, now: str
) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store, "w1")
    job_now(db, store, job, now)
    before = history(db, job.id)
    with pytest.raises(NotHolder) as refused:
        FINISHES[finish](store, job)
    assert refused.value.sqlstate == "TL004"
    assert refused.value.detail is not None
    assert refused.value.hint is not None
    assert history(db, job.id) == before
    assert store.renew_claim(job.id, "w1", timedelta(minutes=1), job.claim_token) is False


def test_give_back_of_an_unknown_job_is_tl001(store: JobStore) -> None:
    with pytest.raises(UnknownJob, match="no job with id 424242"):
        store.give_back(424242, "w1")


def test_a_runner_gives_back_and_a_poller_may_not(store: JobStore, login: Login) -> None:
    enqueue_jobs(store, 2)
    with JobStore(login("tireless_runner")) as runner:
        job = claimed(runner, "host1")
        assert runner.give_back(job.id, "host1", token=job.claim_token).state is JobState.PENDING
    job = claimed(store, "host2")
    with JobStore(login("tireless_poller")) as poller, pytest.raises(PermissionDenied):
        poller.give_back(job.id, "host2")


def test_an_admin_who_sets_role_runner_may_not_cancel_a_pending_job(
    db: Database,
    store: JobStore,
    login: Login,
) -> None:
    enqueue_jobs(store, 1)
    job_id = db.scalar("SELECT id FROM tireless.job")
    with psycopg.connect(login("tireless_admin"), autocommit=True) as conn:
        conn.execute("SET ROLE tireless_runner")
        with pytest.raises(PermissionDenied, match="tireless_runner may not"):
            JobStore(conn).transition(job_id, "cancelled")
        conn.execute("RESET ROLE")
        cancelled = JobStore(conn).transition(job_id, "cancelled", note="withdrawn")
    assert cancelled.state is JobState.CANCELLED


def test_a_lease_gives_the_job_back_when_the_block_raises_shutting_down(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 1)
    held = store.lease("w1", ["cc"])
    with held as job:
        assert job is not None
        raise ShuttingDown("deploy")
    assert held.given_back
    assert held.finished is not None
    assert (held.finished.state, held.finished.note) == (JobState.PENDING, "given back: deploy")
    assert lane_failures(db) == 0


def test_a_lease_gives_the_job_back_on_keyboard_interrupt_and_lets_it_through(
    store: JobStore,
) -> None:
    enqueue_jobs(store, 1)
    held = store.lease("w1", ["cc"])
    with pytest.raises(KeyboardInterrupt), held:
        raise KeyboardInterrupt
    assert held.finished is not None
    assert (held.finished.state, held.finished.given_back) == (JobState.PENDING, 1)


def test_a_lease_over_one_connection_is_refused_with_a_clear_error(db: Database) -> None:
    with db.connect() as conn, pytest.raises(TypeError, match="needs a store over a"):
        JobStore(conn).lease("w1", ["cc"])


@pytest.mark.parametrize("finish", ["give back", "release"])
def test_a_cancel_requested_job_given_back_or_released_ends_cancelled(
    db: Database, store: JobStore, finish: str
) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store, "w1")
    store.enqueue([issue(1, state="closed")])
    assert store.heartbeat(job.id, "w1", token=job.claim_token) == "cancel"
    ended = FINISHES[finish](store, job)
    assert isinstance(ended, Job)
    assert (ended.state, ended.given_back) == (JobState.CANCELLED, 0)
    assert ended.note == "issue closed"
    assert lane_failures(db) == 0


def test_a_lease_ends_a_cancel_requested_job_cancelled(store: JobStore) -> None:
    enqueue_jobs(store, 1)
    cancels: list[int] = []
    held = store.lease(
        "w1", ["cc"], timedelta(seconds=0.3), on_cancel=lambda j: cancels.append(j.id)
    )
    with held as job:
        store.enqueue([issue(1, state="closed")])
        wait_until(lambda: held.cancel_requested, "a heartbeat to answer cancel")
    assert job is not None
    assert cancels == [job.id]
    assert held.finished is not None
    assert (held.finished.state, held.finished.note) == (JobState.CANCELLED, "issue closed")


def test_a_stop_heard_after_the_work_was_pushed_delivers_it_and_notes_the_late_stop(
    store: JobStore,
) -> None:
    """The agent exited 0 and its work was pushed while the cancel came: the work is on the forge,
    so the job is delivered, and its note says the stop came too late."""
    enqueue_jobs(store, 1)
    held = store.lease("w1", ["cc"], timedelta(minutes=10))
    with held as job:
        assert job is not None
        store.request_cancel(job.id, "wrong repo")
        wait_until(lambda: held.cancel_requested, "the stop to be heard")
        held.finish(NO_CHANGE)  # what the push left: nothing changed
    assert held.finished is not None
    assert held.finished.state is JobState.DELIVERED
    assert str(held.finished.note).startswith("no change; the cancel requested at ")
    assert str(held.finished.note).endswith(" (wrong repo) came after the work was done")
