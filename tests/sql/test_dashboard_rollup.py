"""The dashboard's roll-ups (migration 0023) against a replay of the history: a seeded history
of jobs over the last seven hours is written as the triggers would have written it, folded in
several passes by tireless.roll_up_history() with the newest events left to the reads, and
queue_activity, job_durations and workers must say what a direct computation over the stored
events says."""

from __future__ import annotations

import math
import random
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from tests.conftest import Database
from tireless.errors import InvalidArgument, translated_errors

# The history's roll-up waits on every older transaction of the cluster: no database is
# copied or dropped beside these tests (tests/conftest.py, DatabaseCopies).
pytestmark = pytest.mark.quiet_cluster

ORIGIN = datetime(2000, 1, 1, tzinfo=UTC)
LANES = ("cc", "oc")
KINDS = ("implement", "plan")
WORKERS = ("runner-a", "runner-b", "runner-c")
ERRORS = ("tests failed\nin test_x.py", "tests failed\nin test_y.py", "agent timed out", None)


@dataclass
class Event:
    at: datetime
    from_state: str | None
    to_state: str
    worker: str | None
    attempt: int
    note: str | None = None


@dataclass
class ReplayJob:
    number: int
    lane: str
    kind: str
    events: list[Event] = field(default_factory=list)

    @property
    def state(self) -> str:
        return self.events[-1].to_state


def life(rng: random.Random, now: datetime, number: int) -> ReplayJob:
    """One job's history: created, maybe claimed (and maybe returned and claimed again), maybe
    finished; every time in the past, in order."""
    job = ReplayJob(number, rng.choice(LANES), rng.choice(KINDS))
    at = now - timedelta(seconds=rng.uniform(60, 7 * 3600))

    def step(to_state: str, worker: str | None, attempt: int) -> None:
        nonlocal at
        from_state = job.events[-1].to_state if job.events else None
        note = rng.choice(ERRORS) if to_state == "failed" else None
        job.events.append(Event(at, from_state, to_state, worker, attempt, note))
        at = min(at + timedelta(seconds=rng.expovariate(1 / 600)), now - timedelta(seconds=1))

    step("pending", None, 0)
    attempt = 0
    while rng.random() < 0.8:
        attempt += 1
        worker = rng.choice(WORKERS)
        step("claimed", worker, attempt)
        fate = rng.random()
        if fate < 0.2:
            return job  # still held
        if fate < 0.35 and attempt < 3:
            step("pending", worker, attempt)  # lease expired: back to pending
            continue
        step(rng.choice(("delivered", "delivered", "failed", "cancelled")), worker, attempt)
        return job
    if rng.random() < 0.3:
        step("cancelled", None, attempt)
    return job


def write(
    conn: psycopg.Connection[Any], jobs: list[ReplayJob], events: list[tuple[int, Event]]
) -> None:
    """The rows the triggers would have written (triggers off, as bench/scenarios.py loads)."""
    with conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica")
        for job_id, event in events:
            conn.execute(
                "INSERT INTO tireless.job_event (job_id, at, from_state, to_state, worker, attempt,"
                " note) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                [
                    job_id,
                    event.at,
                    event.from_state,
                    event.to_state,
                    event.worker,
                    event.attempt,
                    event.note,
                ],
            )


def insert_jobs(conn: psycopg.Connection[Any], jobs: list[ReplayJob]) -> list[int]:
    ids = []
    with conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica")
        for job in jobs:
            last = job.events[-1]
            held = job.state == "claimed"
            row = conn.execute(
                "INSERT INTO tireless.job (forge, owner, repo, number, kind, lane, state, claimed_by,"
                " claim_expires_at, claim_token, attempts, created_at, updated_at)"
                " VALUES ('gitea', 'acme', 'widgets', %s, %s, %s, %s, %s, %s,"
                " CASE WHEN %s THEN gen_random_uuid() END, %s, %s, %s) RETURNING id",
                [
                    job.number,
                    job.kind,
                    job.lane,
                    job.state,
                    last.worker if held else None,
                    # one held job of runner-c has stopped heartbeating
                    (last.at + timedelta(minutes=-1 if last.worker == "runner-c" else 30))
                    if held
                    else None,
                    held,
                    last.attempt,
                    job.events[0].at,
                    last.at,
                ],
            ).fetchone()
            assert row is not None
            ids.append(row[0])
    return ids


@pytest.fixture
def replayed(db: Database) -> list[ReplayJob]:
    """160 jobs written in time order in three parts; the first two folded, each by a pass of
    the roll-up, and the last not yet: the reads add what the roll-up has not folded."""
    rng = random.Random(24)
    with db.connect() as conn:
        now = conn.execute("SELECT now()").fetchone()[0]  # type: ignore[index]
        jobs = [life(rng, now, n) for n in range(1, 161)]
        ids = insert_jobs(conn, jobs)
        events = sorted(
            (
                (job_id, event)
                for job_id, job in zip(ids, jobs, strict=True)
                for event in job.events
            ),
            key=lambda pair: pair[1].at,
        )
        third = len(events) // 3
        for part in (events[:third], events[third : 2 * third]):
            write(conn, jobs, part)
            conn.execute("SELECT tireless.roll_up_history()")
        write(conn, jobs, events[2 * third :])
    return jobs


def bucket_of(at: datetime, grain: timedelta) -> datetime:
    return ORIGIN + (at - ORIGIN) // grain * grain


def stored_history(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    cur = conn.execute(
        "SELECT e.job_id, e.at, e.from_state::text, e.to_state::text, j.lane"
        " FROM tireless.job_event e JOIN tireless.job j ON j.id = e.job_id ORDER BY e.id"
    )
    names = [c.name for c in cur.description or ()]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


@pytest.mark.parametrize(
    ("span", "grain"), [("1 hour", "1 minute"), ("24 hours", "1 hour"), ("7 days", "1 hour")]
)
def test_queue_activity_is_what_the_events_say(
    db: Database, replayed: list[ReplayJob], span: str, grain: str
) -> None:
    step = timedelta(minutes=1) if grain == "1 minute" else timedelta(hours=1)
    with db.connect() as conn, conn.transaction():
        now = conn.execute("SELECT now()").fetchone()[0]  # type: ignore[index]
        cur = conn.execute("SELECT * FROM tireless.queue_activity(%s::interval)", [span])
        got = {(row[0], row[1]): row[2:] for row in cur.fetchall()}
        events = stored_history(conn)
    width = {
        "1 hour": timedelta(hours=1),
        "24 hours": timedelta(days=1),
        "7 days": timedelta(days=7),
    }[span]
    last = bucket_of(now, step)
    buckets = [last - width + step * (i + 1) for i in range(round(width / step))]
    lanes = {e["lane"] for e in events if e["at"] >= buckets[0]}
    state_now: dict[int, tuple[str, str]] = {}
    for e in events:
        state_now[e["job_id"]] = (e["lane"], e["to_state"])
    lanes |= {lane for lane, state in state_now.values() if state in ("pending", "claimed")}
    expected: dict[tuple[datetime, str], tuple[int, ...]] = {}
    for bucket in buckets:
        end = bucket + step
        at_end: dict[int, tuple[str, str]] = {}
        finished: dict[tuple[str, str], int] = defaultdict(int)
        for e in events:
            if e["at"] < end:
                at_end[e["job_id"]] = (e["lane"], e["to_state"])
                if e["at"] >= bucket and e["to_state"] in ("delivered", "failed", "cancelled"):
                    finished[(e["lane"], e["to_state"])] += 1
        for lane in lanes:
            expected[(bucket, lane)] = (
                sum(1 for held in at_end.values() if held == (lane, "pending")),
                sum(1 for held in at_end.values() if held == (lane, "claimed")),
                finished[(lane, "delivered")],
                finished[(lane, "failed")],
                finished[(lane, "cancelled")],
            )
    assert got == expected
    assert any(values[1] for values in got.values()), "the replay holds claimed jobs"


DIRECT_DURATIONS = """
WITH ev AS (
    SELECT e.*, j.lane, j.kind, j.created_at, lag(e.at) OVER (PARTITION BY e.job_id ORDER BY e.id) AS before
      FROM tireless.job_event e JOIN tireless.job j ON j.id = e.job_id
), measured AS (
    SELECT lane, kind, 'wait' AS measure, at, extract(epoch FROM at - created_at)::float8 AS seconds
      FROM ev WHERE to_state = 'claimed' AND attempt = 1
    UNION ALL
    SELECT lane, kind, 'run', at, extract(epoch FROM at - before)::float8
      FROM ev WHERE from_state = 'claimed' AND to_state IN ('delivered', 'failed', 'cancelled')
)
SELECT lane, kind::text, measure, count(*),
       tireless.bin_bound(tireless.duration_bin(percentile_disc(0.5) WITHIN GROUP (ORDER BY seconds))),
       tireless.bin_bound(tireless.duration_bin(percentile_disc(0.95) WITHIN GROUP (ORDER BY seconds)))
  FROM measured
 WHERE date_bin(%(grain)s::interval, at, timestamptz '2000-01-01 00:00:00+00')
       > date_bin(%(grain)s::interval, now(), timestamptz '2000-01-01 00:00:00+00') - %(span)s::interval
 GROUP BY lane, kind, measure
 ORDER BY lane, kind, measure"""


@pytest.mark.parametrize(("span", "grain"), [("1 hour", "1 minute"), ("24 hours", "1 hour")])
def test_job_durations_are_the_percentiles_of_the_events(
    db: Database, replayed: list[ReplayJob], span: str, grain: str
) -> None:
    with db.connect() as conn, conn.transaction():
        got = conn.execute("SELECT * FROM tireless.job_durations(%s::interval)", [span]).fetchall()
        direct = conn.execute(DIRECT_DURATIONS, {"span": span, "grain": grain}).fetchall()
    assert sorted(got) == sorted(direct)
    assert {row[2] for row in got} == {"wait", "run"}


DIRECT_FAILURES = """
SELECT split_part(coalesce(e.note, ''), E'\\n', 1) AS error, count(*), max(e.job_id),
       array_agg(DISTINCT j.lane ORDER BY j.lane)
  FROM tireless.job_event e JOIN tireless.job j ON j.id = e.job_id
 WHERE e.to_state = 'failed'
   AND date_bin(%(grain)s::interval, e.at, timestamptz '2000-01-01 00:00:00+00')
       > date_bin(%(grain)s::interval, now(), timestamptz '2000-01-01 00:00:00+00') - %(span)s::interval
 GROUP BY 1
 ORDER BY 2 DESC, 1"""


@pytest.mark.parametrize(("span", "grain"), [("1 hour", "1 minute"), ("7 days", "1 hour")])
def test_failure_groups_are_the_failed_events_by_their_first_line(
    db: Database, replayed: list[ReplayJob], span: str, grain: str
) -> None:
    with db.connect() as conn, conn.transaction():
        got = conn.execute("SELECT * FROM tireless.failure_groups(%s::interval)", [span]).fetchall()
        direct = conn.execute(DIRECT_FAILURES, {"span": span, "grain": grain}).fetchall()
    assert got == direct
    assert "tests failed" in {row[0] for row in got}


def test_a_duration_is_within_its_bin(db: Database) -> None:
    for seconds in (0.004, 0.5, 1.0, 59.0, 61.5, 3600.0, 86400.0 * 3):
        bound = db.scalar(
            "SELECT extract(epoch FROM tireless.bin_bound(tireless.duration_bin(%(s)s)))::float8",
            {"s": seconds},
        )
        assert max(seconds, 0.01) <= bound * 1.0005
        assert bound <= max(seconds, 0.01) * 2**0.25 * 1.0005


def test_workers_are_the_holders_and_the_recently_named(
    db: Database, replayed: list[ReplayJob]
) -> None:
    with db.connect() as conn:
        rows = conn.execute(
            "SELECT worker, status, job_id, jobs_held, lanes FROM tireless.workers ORDER BY worker"
        ).fetchall()
        held = conn.execute(
            "SELECT claimed_by, count(*), bool_or(claim_expires_at < now()) FROM tireless.job"
            " WHERE state = 'claimed' GROUP BY claimed_by"
        ).fetchall()
    named = {e.worker for job in replayed for e in job.events if e.worker}
    assert [row[0] for row in rows] == sorted(named)
    holding = {worker: (count, past) for worker, count, past in held}
    for worker, status, job_id, jobs_held, lanes in rows:
        count, past = holding.get(worker, (0, False))
        assert jobs_held == count
        assert (job_id is not None) == (count > 0)
        assert status == ("stopped heartbeating" if past else "working" if count else "idle")
        claimed_lanes = {
            job.lane
            for job in replayed
            for e in job.events
            if e.worker == worker and e.to_state == "claimed"
        }
        assert set(lanes) == claimed_lanes
    assert "stopped heartbeating" in {row[1] for row in rows}


@pytest.mark.parametrize("span", ["0 seconds", "-1 hour", "9 days"])
def test_a_window_out_of_range_is_refused(db: Database, span: str) -> None:
    with (
        db.connect() as conn,
        pytest.raises(InvalidArgument, match="span must be"),
        translated_errors(),
    ):
        conn.execute("SELECT * FROM tireless.queue_activity(%s::interval)", [span])


def test_the_minute_grain_covers_the_hour(db: Database) -> None:
    assert db.scalar("SELECT tireless.activity_grain('1 hour')") == timedelta(minutes=1)
    assert db.scalar("SELECT tireless.activity_grain('7 days')") == timedelta(hours=1)
    assert math.isclose(
        db.scalar("SELECT extract(epoch FROM tireless.bin_bound(4::smallint))::float8"), 2.0
    )
