"""The sync and the async adapter behave the same: every test here runs against JobStore and
against AsyncJobStore, the latter through a small blocking facade whose calls run on an event loop
in a thread (so a lease's renewal task keeps running while the test's block does)."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta

import pytest

from tests.conftest import Database
from tests.helpers import (
    FORGE,
    TEST_REPO,
    WORK,
    end_lease,
    enqueue_jobs,
    issue,
    track,
    tracked,
    wait_until,
)
from tireless import (
    Forge,
    ForgeKind,
    Heartbeat,
    JobKind,
    JobState,
    JobStore,
    PollOutcome,
    RepoRef,
)
from tireless.errors import DuplicateLiveJob, MalformedIssue, NotHolder, UnknownJob
from tireless.store.asynchronous import AsyncJobStore
from tireless.store.lease import LeaseLost, Release


def test_async_store_has_every_public_method_of_the_sync_store() -> None:
    def public(cls: type) -> set[str]:
        return {name for name in vars(cls) if not name.startswith("_")}

    assert public(JobStore) <= public(AsyncJobStore)


def test_a_claimed_job_is_renewed_and_delivered_by_its_holder(any_store: JobStore) -> None:
    assert enqueue_jobs(any_store, 2) == 2
    job = any_store.claim_next("w1", ["cc"], timedelta(seconds=30))
    assert job is not None
    assert (job.state, job.claimed_by, job.attempts, job.kind) == (
        JobState.CLAIMED,
        "w1",
        1,
        JobKind.IMPLEMENT,
    )
    assert any_store.renew_claim(job.id, "w1", timedelta(minutes=5), job.claim_token) is True
    assert any_store.renew_claim(job.id, "w2") is False
    done = any_store.transition(job.id, JobState.DELIVERED, "w1", "merged", job.claim_token)
    assert (done.state, done.note, done.claimed_by) == (JobState.DELIVERED, "merged", None)
    assert any_store.claim_next("w1", ["oc"]) is None


def test_refusals_raise_the_mapped_exceptions(any_store: JobStore) -> None:
    enqueue_jobs(any_store, 1)
    job = any_store.claim_next("w1", ["cc"])
    assert job is not None
    with pytest.raises(NotHolder):
        any_store.transition(job.id, "delivered", "w2")
    with pytest.raises(UnknownJob):
        any_store.renew_claim(999_999, "w1")
    with pytest.raises(MalformedIssue):
        any_store.enqueue([{"forge": FORGE}])


def test_tracking_routing_and_lanes(any_store: JobStore, db: Database) -> None:
    assert track(any_store, *TEST_REPO) is True
    assert track(any_store, *TEST_REPO) is False
    assert any_store.tracked_repos() == [RepoRef(*TEST_REPO)]
    assert any_store.job_kind_for(["tireless", "tireless/plan"]) is JobKind.PLAN
    assert any_store.lane_for("plan", ["tireless/agent:oc"]) == "oc"
    any_store.enqueue([issue(1)])
    assert any_store.refresh_lane(*TEST_REPO, 1, [*WORK, "tireless/agent:oc"]) == "oc"
    assert any_store.pause_lane("oc").paused is True
    assert any_store.claim_next("w1", ["oc"]) is None
    assert any_store.resume_lane("oc").paused is False
    assert any_store.set_lane_capacity("oc", 1).capacity == 1
    assert any_store.reset_lane_breaker("oc").consecutive_failures == 0
    job = any_store.claim_next("w1", ["oc"])
    assert job is not None
    end_lease(db, job.id)
    assert any_store.expire_stale_claims() == 1
    assert any_store.untrack_repo(*TEST_REPO) is True


def test_heartbeat_rerun_forges_and_polling(any_store: JobStore, db: Database) -> None:
    assert enqueue_jobs(any_store, 1) == 1
    job = any_store.claim_next("w1", ["cc"])
    assert job is not None
    assert any_store.heartbeat(job.id, "w1", token=job.claim_token) is Heartbeat.HELD
    any_store.enqueue([issue(1, state="closed")])
    assert any_store.heartbeat(job.id, "w1") is Heartbeat.CANCEL
    assert any_store.heartbeat(job.id, "w2") is Heartbeat.LOST
    any_store.transition(job.id, "cancelled", "w1")
    assert any_store.rerun(*TEST_REPO, 1) > job.id
    with pytest.raises(DuplicateLiveJob):
        any_store.rerun(*TEST_REPO, 1)
    assert any_store.add_forge(FORGE, ForgeKind.GITEA, "https://gitea.test") is True
    assert any_store.forges() == [Forge(FORGE, ForgeKind.GITEA, "https://gitea.test")]
    (repo,) = any_store.claim_repos_to_poll("p1", timedelta(minutes=1), 10)
    assert (repo.repo, repo.kind, repo.full_listing) == (TEST_REPO[2], ForgeKind.GITEA, True)
    outcome = any_store.record_poll(
        *TEST_REPO, "p1", [issue(2)], None, '"etag"', True, deleted=[1], next_poll_in=timedelta(0)
    )
    assert outcome == PollOutcome(created=1, cancelled=1, rerouted=0, seen=1)
    assert any_store.poll_soon(*TEST_REPO) is True
    any_store.claim_repos_to_poll("p1")
    assert isinstance(any_store.record_poll_failure(*TEST_REPO, "p1", "HTTP 500"), datetime)
    any_store.record_forge_trouble(FORGE, None, None)
    (status,) = any_store.repo_status()
    assert (status.last_error, status.consecutive_failures, status.pending) == ("HTTP 500", 1, 1)
    assert any_store.remove_forge(FORGE) is True


def test_a_lease_delivers_when_its_block_ends_normally(any_store: JobStore) -> None:
    enqueue_jobs(any_store, 1)
    held = any_store.lease("w1", ["cc"])
    with held as job:
        assert job is not None
        assert job.state is JobState.CLAIMED
        claimed = job.id
    assert held.finished is not None
    assert (held.finished.id, held.finished.state) == (claimed, JobState.DELIVERED)


def test_a_lease_releases_the_job_with_the_exception_as_note(
    any_store: JobStore, db: Database
) -> None:
    enqueue_jobs(any_store, 2)
    with pytest.raises(ValueError, match="boom"), any_store.lease("w1", ["cc"]) as job:
        raise ValueError("boom")
    with any_store.lease("w1", ["cc"]) as second:
        raise Release("tests failed")  # swallowed: a request, not an error
    assert job is not None
    assert second is not None
    notes = "SELECT state::text, note FROM tireless.job WHERE id = %(id)s"
    with db.connect() as conn:
        assert conn.execute(notes, {"id": job.id}).fetchone() == ("pending", "ValueError: boom")
        assert conn.execute(notes, {"id": second.id}).fetchone() == ("pending", "tests failed")


def test_a_lease_with_nothing_to_claim_yields_none(any_store: JobStore) -> None:
    held = any_store.lease("w1", ["cc"])
    with held as job:
        assert job is None
    assert held.finished is None


def test_a_lease_is_renewed_while_its_block_runs(any_store: JobStore, db: Database) -> None:
    enqueue_jobs(any_store, 1)
    with any_store.lease("w1", ["cc"], timedelta(milliseconds=600)) as job:
        assert job is not None
        end_lease(db, job.id)  # only a renewal moves it back into the future
        expires = "SELECT claim_expires_at > now() FROM tireless.job WHERE id = %(id)s"
        wait_until(lambda: db.scalar(expires, {"id": job.id}) is True, "a renewal")
    assert db.scalar("SELECT state::text FROM tireless.job") == "delivered"


def test_a_lost_lease_calls_on_lost_and_leaves_the_job_to_its_holder(
    any_store: JobStore, db: Database
) -> None:
    enqueue_jobs(any_store, 1)
    lost = threading.Event()
    held = any_store.lease(
        "w1", ["cc"], timedelta(milliseconds=600), on_lost=lambda job: lost.set()
    )
    job = held.__enter__()
    assert job is not None
    db.scalar("UPDATE tireless.job SET claimed_by = 'thief' RETURNING id")
    assert lost.wait(30), "the lost lease was not noticed"
    with pytest.raises(LeaseLost):
        held.__exit__(None, None, None)
    assert (
        db.scalar("SELECT (state::text, claimed_by)::text FROM tireless.job") == "(claimed,thief)"
    )


def test_wait_for_work_returns_the_lane_announced_or_none_after_its_timeout(
    any_store: JobStore, db: Database
) -> None:
    assert any_store.wait_for_work(["cc"], timeout=0.05) is None
    tracked(any_store)
    with any_store.listen(["cc"]) as waiter:
        any_store.enqueue([issue(1, *WORK, "tireless/agent:oc"), issue(2)])
        assert waiter.wait(timeout=30) == "cc"
        assert waiter.wait(timeout=0.05) is None


def test_a_lease_the_watchdog_stops_calls_on_cancel_and_ends_as_a_failure(
    any_store: JobStore, db: Database
) -> None:
    any_store.set_lane_max_run("cc", timedelta(hours=1))
    enqueue_jobs(any_store, 1)
    stopped = threading.Event()
    with any_store.lease(
        "w1", ["cc"], timedelta(milliseconds=600), on_cancel=lambda job: stopped.set()
    ) as job:
        assert job is not None
        wait_until(lambda: db.scalar("SELECT count(*) FROM tireless.job_attempt") == 1, "a watch")
        db.scalar(
            "UPDATE tireless.job_attempt SET started_at = started_at - interval '2 hours'"
            " RETURNING 1"
        )
        assert stopped.wait(30), "the watchdog's stop was not heard"
        # The block ends normally (the agent stopped): still a failure, not a delivery.
    assert db.scalar("SELECT (state::text, note)::text FROM tireless.job") == (
        '(pending,"timed out after 1h")'
    )


HEARD_WITHIN = 2.0
"""Seconds within which a holder under the default lease (a heartbeat every 200 s) hears a stop."""


def test_a_lease_hears_a_stop_at_once_and_ends_the_job_with_the_stops_note(
    any_store: JobStore, db: Database
) -> None:
    """The renewer LISTENs on tireless_stop: a cancel reaches it in well under a second, not at
    its next renewal a third of the lease later."""
    enqueue_jobs(any_store, 1)
    stopped = threading.Event()
    with any_store.lease(
        "w1", ["cc"], timedelta(minutes=10), on_cancel=lambda job: stopped.set()
    ) as job:
        assert job is not None
        asked = time.monotonic()
        any_store.request_cancel(job.id, "wrong repo")
        assert stopped.wait(30), "the stop was not heard"
        heard = time.monotonic() - asked
    assert heard < HEARD_WITHIN, f"the stop was heard after {heard:.2f}s"
    assert db.scalar("SELECT (state::text, note)::text FROM tireless.job") == (
        '(cancelled,"wrong repo")'
    )


def test_a_lease_hears_its_lanes_time_limit_when_it_passes(
    any_store: JobStore, db: Database
) -> None:
    """The renewer heartbeats at the time the lane's max_run ends the attempt, not up to a third
    of the lease later."""
    any_store.set_lane_max_run("cc", timedelta(seconds=1))
    enqueue_jobs(any_store, 1)
    stopped = threading.Event()
    with any_store.lease(
        "w1", ["cc"], timedelta(minutes=10), on_cancel=lambda job: stopped.set()
    ) as job:
        assert job is not None
        began = time.monotonic()
        assert stopped.wait(30), "the time limit was not heard"
        heard = time.monotonic() - began
    assert heard < 1 + HEARD_WITHIN, f"the time limit was heard after {heard:.2f}s"
    assert db.scalar("SELECT (state::text, note)::text FROM tireless.job") == (
        '(pending,"timed out after 1s")'
    )
