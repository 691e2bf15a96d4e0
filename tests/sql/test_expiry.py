"""expire_stale_claims: an expired lease returns its job to pending, keeps the attempt count and
says so in the history; a live lease is untouched; two sweepers never wait on each other nor move
one job twice. Time moves by UPDATE-ing claim_expires_at, never by sleeping."""

from __future__ import annotations

from tests.conftest import Database
from tests.helpers import end_lease, enqueue_jobs, history, make_available
from tireless import Job, JobState, JobStore


def claim_all(store: JobStore, count: int) -> list[Job]:
    enqueue_jobs(store, count)
    jobs = [store.claim_next(f"w{n}", ["cc"]) for n in range(1, count + 1)]
    assert None not in jobs
    return [job for job in jobs if job is not None]


def test_an_expired_lease_returns_the_job_to_pending_and_clears_the_claim(
    db: Database, store: JobStore
) -> None:
    expired, live = claim_all(store, 2)
    end_lease(db, expired.id)
    live_before = db.scalar(
        "SELECT to_jsonb(j) FROM tireless.job j WHERE id = %(id)s", {"id": live.id}
    )
    assert store.expire_stale_claims() == 1
    returned = db.scalar(
        "SELECT (state::text, claimed_by, claim_expires_at, claim_token, attempts)::text"
        " FROM tireless.job WHERE id = %(id)s",
        {"id": expired.id},
    )
    assert returned == "(pending,,,,1)", "no holder, lease or token; the attempt stays counted"
    live_after = db.scalar(
        "SELECT to_jsonb(j) FROM tireless.job j WHERE id = %(id)s", {"id": live.id}
    )
    assert live_after == live_before, "a live lease is untouched"


def test_each_retry_after_an_expiry_shows_in_the_attempts_and_the_history(
    db: Database, store: JobStore
) -> None:
    (first,) = claim_all(store, 1)
    end_lease(db, first.id)
    ended = db.scalar(
        "SELECT claim_expires_at::text FROM tireless.job WHERE id = %(id)s", {"id": first.id}
    )
    assert store.expire_stale_claims() == 1
    make_available(db, first.id)
    retry = store.claim_next("w2", ["cc"])
    assert retry is not None
    assert (retry.id, retry.attempts) == (first.id, 2)
    events = history(db, first.id)
    assert [event[:4] for event in events] == [
        (None, "pending", None, 0),
        ("pending", "claimed", "w1", 1),
        ("claimed", "pending", "w1", 1),
        ("pending", "claimed", "w2", 2),
    ]
    assert events[2][4] == f"lease of w1 expired at {ended}"


def test_two_sweepers_neither_wait_on_each_other_nor_move_a_job_twice(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 4)
    enqueue_jobs(store, 3, "tireless", "tireless/implement", "tireless/agent:oc", first=5)
    cc = [store.claim_next("w1", ["cc"]) for _ in range(4)]
    oc = [store.claim_next("w2", ["oc"]) for _ in range(3)]
    jobs = [job for job in cc + oc if job is not None]
    assert len(jobs) == 7
    for job in jobs[:3]:
        end_lease(db, job.id)
    with db.connect() as a, db.connect(lock_timeout="2s") as b:
        with a.transaction():
            moved_by_a = JobStore(a).expire_stale_claims()  # holds its jobs and lane cc till commit
            for job in jobs[3:]:
                end_lease(db, job.id)
            # b sees seven stale claims; it moves the three of lane oc at once, leaves a's jobs and
            # the fourth of lane cc (a lane a is sweeping) to the next sweep, and never waits.
            moved_by_b = JobStore(b).expire_stale_claims()
        moved_next = JobStore(b).expire_stale_claims()
    assert (moved_by_a, moved_by_b, moved_next) == (3, 3, 1)
    states = db.scalar("SELECT array_agg(DISTINCT state::text) FROM tireless.job")
    assert states == [JobState.PENDING]
    for job in jobs:
        assert [e[:2] for e in history(db, job.id)].count(("claimed", "pending")) == 1
    assert db.scalar("SELECT consecutive_failures FROM tireless.lane WHERE name = 'cc'") == 4
