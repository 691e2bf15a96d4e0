"""The retry budget: attempts end in failure with a note in the history, and a released or
expired job waits out an exponential, capped backoff before it can be claimed again."""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest

from tests.conftest import Database
from tests.helpers import claimed, end_lease, enqueue_jobs, history, make_available
from tireless import Job, JobState, JobStore


def run_out_of_attempts_by_release(db: Database, store: JobStore) -> Job:
    """Claim and release the one job until its budget of 3 attempts is spent; the last release."""
    for attempt in range(1, 4):
        job = claimed(store)
        assert job.attempts == attempt
        released = store.transition(job.id, "pending", "w1", note=f"try {attempt} broke")
        if released.state is JobState.PENDING:
            make_available(db, job.id)
    return released


def test_release_after_the_last_attempt_fails_the_job_and_history_says_why(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 1)
    last = run_out_of_attempts_by_release(db, store)
    assert last.state is JobState.FAILED
    assert last.attempts == 3
    assert last.note == "attempts exhausted (3 of 3); last: try 3 broke"
    assert store.claim_next("w1", ["cc"]) is None
    assert history(db, last.id) == [
        (None, "pending", None, 0, None),
        ("pending", "claimed", "w1", 1, None),
        ("claimed", "pending", "w1", 1, "try 1 broke"),
        ("pending", "claimed", "w1", 2, None),
        ("claimed", "pending", "w1", 2, "try 2 broke"),
        ("pending", "claimed", "w1", 3, None),
        ("claimed", "failed", "w1", 3, "attempts exhausted (3 of 3); last: try 3 broke"),
    ]


def test_expiry_after_the_last_attempt_fails_the_job_and_history_says_why(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 1)
    for attempt in range(1, 4):
        job = claimed(store, f"w{attempt}")
        end_lease(db, job.id)
        assert store.expire_stale_claims() == 1
        if attempt < 3:
            make_available(db, job.id)
    events = history(db, job.id)
    assert [event[:4] for event in events] == [
        (None, "pending", None, 0),
        ("pending", "claimed", "w1", 1),
        ("claimed", "pending", "w1", 1),
        ("pending", "claimed", "w2", 2),
        ("claimed", "pending", "w2", 2),
        ("pending", "claimed", "w3", 3),
        ("claimed", "failed", "w3", 3),
    ]
    assert str(events[2][4]).startswith("lease of w1 expired at ")
    assert str(events[-1][4]).startswith(
        "attempts exhausted (3 of 3); last: lease of w3 expired at "
    )
    assert store.claim_next("w4", ["cc"]) is None


def test_an_attempt_left_returns_the_job_to_pending_on_release_and_on_expiry(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 2)
    released = store.transition(claimed(store).id, "pending", "w1")
    expiring = claimed(store)
    end_lease(db, expiring.id)
    assert store.expire_stale_claims() == 1
    states = db.scalar("SELECT array_agg(state::text ORDER BY id) FROM tireless.job")
    assert released.state is JobState.PENDING
    assert states == ["pending", "pending"]


def test_max_attempts_is_set_per_kind(db: Database, store: JobStore) -> None:
    db.scalar("SELECT tireless.set_kind_policy(kind => 'implement', max_attempts => 1)")
    enqueue_jobs(store, 1)
    enqueue_jobs(store, 1, "tireless", "tireless/plan", first=2)
    implement, plan = claimed(store), claimed(store)
    assert (implement.kind, plan.kind) == ("implement", "plan")
    failed = store.transition(implement.id, "pending", "w1")
    retried = store.transition(plan.id, "pending", "w1")
    assert failed.state is JobState.FAILED
    assert failed.note == "attempts exhausted (1 of 1); last: released"
    assert retried.state is JobState.PENDING


def test_a_released_job_is_not_claimable_before_its_backoff_ends_and_is_after(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 1)
    released = store.transition(claimed(store).id, "pending", "w1")
    in_backoff = db.scalar(
        "SELECT available_at - updated_at FROM tireless.job WHERE id = %(id)s", {"id": released.id}
    )
    assert in_backoff == timedelta(seconds=30)
    assert store.claim_next("w2", ["cc"]) is None
    with db.connect() as conn:
        conn.execute(
            "UPDATE tireless.job SET available_at = now() + interval '1 second' WHERE id = %(id)s",
            {"id": released.id},
        )
    assert store.claim_next("w2", ["cc"]) is None
    make_available(db, released.id)
    again = store.claim_next("w2", ["cc"])
    assert again is not None
    assert (again.id, again.attempts) == (released.id, 2)


def test_an_expired_job_waits_out_its_backoff_too(db: Database, store: JobStore) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store)
    end_lease(db, job.id)
    assert store.expire_stale_claims() == 1
    assert store.claim_next("w2", ["cc"]) is None
    make_available(db, job.id)
    assert store.claim_next("w2", ["cc"]) is not None


def test_a_job_in_backoff_does_not_hold_back_the_jobs_behind_it(
    db: Database, store: JobStore
) -> None:
    enqueue_jobs(store, 2)
    first = claimed(store)
    store.transition(first.id, "pending", "w1")
    second = claimed(store)
    assert second.id != first.id


def test_zero_backoff_makes_a_released_job_claimable_at_once(db: Database, store: JobStore) -> None:
    db.scalar("SELECT tireless.set_policy(backoff_base => '0', backoff_cap => '0')")
    enqueue_jobs(store, 1)
    job = claimed(store)
    store.transition(job.id, "pending", "w1")
    assert claimed(store, "w2").id == job.id


def retry_delays(db: Database, attempts: range) -> list[timedelta]:
    with db.connect() as conn:
        return [
            conn.execute("SELECT tireless.retry_delay(%(n)s)", {"n": n}).fetchone()[0]  # type: ignore[index]
            for n in attempts
        ]


def test_the_backoff_doubles_with_each_attempt_and_stops_at_the_cap(db: Database) -> None:
    db.scalar("SELECT tireless.set_policy(backoff_base => '10 seconds', backoff_cap => '1 minute')")
    assert retry_delays(db, range(0, 7)) == [
        timedelta(seconds=s) for s in (10, 10, 20, 40, 60, 60, 60)
    ]


def test_the_default_backoff_is_30_seconds_doubling_up_to_30_minutes(db: Database) -> None:
    assert retry_delays(db, range(1, 8)) == [
        timedelta(seconds=s) for s in (30, 60, 120, 240, 480, 960, 1800)
    ]


def test_a_huge_attempt_count_or_base_backs_off_by_the_cap_without_overflow(db: Database) -> None:
    db.scalar("SELECT tireless.set_policy(backoff_base => '1 year', backoff_cap => '10 years')")
    assert retry_delays(db, range(40, 41)) == [timedelta(days=3650)]
    db.scalar("SELECT tireless.set_policy(backoff_base => '1 second', backoff_cap => '1 second')")
    assert retry_delays(db, range(2_000_000_000, 2_000_000_001)) == [timedelta(seconds=1)]


@pytest.mark.parametrize(
    "call",
    [
        "tireless.set_policy(label_prefix => 'has space')",
        "tireless.set_policy(label_prefix => 'a/b')",
        "tireless.set_policy(label_prefix => '')",
        "tireless.set_policy(backoff_base => '-1 second')",
        "tireless.set_policy(backoff_cap => '-1 second')",
        "tireless.set_policy(backoff_base => '10 minutes', backoff_cap => '1 minute')",
        "tireless.set_policy(backoff_base => '31 minutes')",
        "tireless.set_policy(breaker_threshold => 0)",
        "tireless.set_policy(breaker_cooldown => '-1 minute')",
        "tireless.set_kind_policy(kind => 'deploy', max_attempts => 2)",
        "tireless.set_kind_policy(kind => 'plan', max_attempts => 0)",
        "tireless.set_kind_policy(kind => 'plan', default_lane => 'no spaces')",
    ],
)
def test_bad_policy_settings_are_refused_with_tl005_and_change_nothing(
    db: Database, call: str
) -> None:
    policy = "SELECT row(p.*)::text FROM tireless.policy p"
    kinds = "SELECT array_agg(row(k.*)::text ORDER BY k.kind) FROM tireless.kind_policy k"
    before = (db.scalar(policy), db.scalar(kinds))
    with pytest.raises(psycopg.Error) as refused:
        db.scalar(f"SELECT {call}")
    assert refused.value.sqlstate == "TL005"
    assert (db.scalar(policy), db.scalar(kinds)) == before


def test_policy_settings_are_changed_one_at_a_time(db: Database) -> None:
    db.scalar("SELECT tireless.set_policy(breaker_threshold => 2)")
    with db.connect() as conn:
        row = conn.execute(
            "SELECT label_prefix, backoff_base, backoff_cap, breaker_threshold, breaker_cooldown"
            " FROM tireless.set_policy(backoff_cap => '2 hours')"
        ).fetchone()
        kind = conn.execute(
            "SELECT default_lane, max_attempts FROM tireless.set_kind_policy(kind => 'plan', default_lane => 'oc')"
        ).fetchone()
    assert row == (
        "tireless",
        timedelta(seconds=30),
        timedelta(hours=2),
        2,
        timedelta(minutes=15),
    )
    assert kind == ("oc", 3)
