"""The circuit breaker per lane: N consecutive failed or expired attempts trip the lane for a
cool-down, claim_next skips it, the first success closes it, an admin can reset it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
import pytest

from tests.conftest import Database
from tests.helpers import claimed, end_lease, enqueue_jobs, rows
from tireless import JobStore

THRESHOLD = 3
AGENT_OC = ("tireless", "tireless/implement", "tireless/agent:oc")


@pytest.fixture
def lanes(db: Database, store: JobStore) -> JobStore:
    """Ten jobs in lane cc, two in lane oc; the breaker trips after 3 failures; no backoff."""
    db.scalar(
        "SELECT tireless.set_policy(breaker_threshold => %(n)s, backoff_base => '0', backoff_cap => '0')",
        {"n": THRESHOLD},
    )
    enqueue_jobs(store, 10)
    enqueue_jobs(store, 2, *AGENT_OC, first=11)
    return store


def fail_attempts(store: JobStore, count: int, how: str = "pending") -> None:
    """Claim a job of lane cc and end it as failed (`how`: pending releases it, failed fails it)."""
    for _ in range(count):
        store.transition(claimed(store).id, how, "w1", note="agent crashed")


def breaker(db: Database, lane: str = "cc") -> tuple[Any, ...]:
    (row,) = rows(
        db,
        "SELECT breaker, consecutive_failures, tripped_until > now()"
        " FROM tireless.lane_status WHERE lane = %(lane)s",
        {"lane": lane},
    )
    return row


def cool_down_passes(db: Database, lane: str = "cc") -> None:
    with db.connect() as conn:
        conn.execute(
            "UPDATE tireless.lane SET tripped_until = now() - interval '1 second' WHERE name = %(lane)s",
            {"lane": lane},
        )


@pytest.mark.parametrize("how", ["pending", "failed"])
def test_the_breaker_trips_after_n_consecutive_failures_and_the_lane_is_skipped(
    db: Database, lanes: JobStore, how: str
) -> None:
    fail_attempts(lanes, THRESHOLD - 1, how)
    assert breaker(db) == ("closed", THRESHOLD - 1, None)
    fail_attempts(lanes, 1, how)
    assert breaker(db) == ("open", THRESHOLD, True)
    assert lanes.claim_next("w1", ["cc"]) is None


def test_a_tripped_lane_leaves_other_lanes_unaffected(db: Database, lanes: JobStore) -> None:
    fail_attempts(lanes, THRESHOLD)
    other = claimed(lanes, "w1", ("cc", "oc"))
    assert other.lane == "oc"
    assert breaker(db, "oc") == ("closed", 0, None)


def test_a_success_between_failures_starts_the_count_again(db: Database, lanes: JobStore) -> None:
    fail_attempts(lanes, THRESHOLD - 1)
    lanes.transition(claimed(lanes).id, "delivered", "w1")
    fail_attempts(lanes, THRESHOLD - 1)
    assert breaker(db) == ("closed", THRESHOLD - 1, None)
    assert lanes.claim_next("w1", ["cc"]) is not None


def test_expired_leases_count_as_failures(db: Database, lanes: JobStore) -> None:
    for job in [claimed(lanes) for _ in range(THRESHOLD)]:
        end_lease(db, job.id)
    assert lanes.expire_stale_claims() == THRESHOLD
    assert breaker(db) == ("open", THRESHOLD, True)
    assert lanes.claim_next("w1", ["cc"]) is None


def test_after_the_cool_down_the_lane_is_half_open_and_the_first_success_closes_it(
    db: Database, lanes: JobStore
) -> None:
    fail_attempts(lanes, THRESHOLD)
    cool_down_passes(db)
    assert breaker(db) == ("half-open", THRESHOLD, False)
    trial = claimed(lanes)
    lanes.transition(trial.id, "delivered", "w1")
    assert breaker(db) == ("closed", 0, None)


def test_a_failure_while_half_open_trips_the_lane_again(db: Database, lanes: JobStore) -> None:
    fail_attempts(lanes, THRESHOLD)
    cool_down_passes(db)
    fail_attempts(lanes, 1)
    assert breaker(db) == ("open", THRESHOLD + 1, True)
    assert lanes.claim_next("w1", ["cc"]) is None


def test_an_admin_reset_closes_the_breaker(db: Database, lanes: JobStore) -> None:
    fail_attempts(lanes, THRESHOLD)
    lane = lanes.reset_lane_breaker("cc")
    assert (lane.consecutive_failures, lane.tripped_until) == (0, None)
    assert breaker(db) == ("closed", 0, None)
    assert lanes.claim_next("w1", ["cc"]) is not None


def test_only_tireless_admin_may_reset_a_breaker(db: Database) -> None:
    with db.connect() as conn:
        conn.execute("SET ROLE tireless_runner")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT tireless.reset_lane_breaker(lane => 'cc')")
        conn.execute("SET ROLE tireless_admin")
        conn.execute("SELECT tireless.reset_lane_breaker(lane => 'cc')")


def test_by_default_five_failures_trip_the_lane_for_fifteen_minutes(
    db: Database, store: JobStore
) -> None:
    db.scalar("SELECT tireless.set_policy(backoff_base => '0', backoff_cap => '0')")
    enqueue_jobs(store, 6)
    fail_attempts(store, 4)
    assert breaker(db)[0] == "closed"
    fail_attempts(store, 1)
    cooldown = db.scalar(
        "SELECT l.tripped_until - max(j.updated_at) FROM tireless.lane l, tireless.job j"
        " WHERE l.name = 'cc' GROUP BY l.tripped_until"
    )
    assert breaker(db)[0] == "open"
    assert cooldown == timedelta(minutes=15)
