"""The store's invariants, checked from the rows as they are: every test that breaks things on
purpose (faults, soak, model) ends by calling `assert_invariants`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

# The moves of the state machine as job_event records them (from_state None: the job was created).
LEGAL_MOVES = frozenset(
    {
        (None, "pending"),
        ("pending", "claimed"),
        ("pending", "cancelled"),
        ("claimed", "pending"),
        ("claimed", "delivered"),
        ("claimed", "failed"),
        ("claimed", "cancelled"),
    }
)

# Every CHECK constraint of schema tireless, as a query for the rows that break it.
CHECK_CONSTRAINTS = """
SELECT c.conname, format('%I.%I', n.nspname, t.relname),
       regexp_replace(pg_get_constraintdef(c.oid), '^CHECK \\((.*)\\)$', '\\1')
  FROM pg_constraint c
  JOIN pg_class t ON t.oid = c.conrelid
  JOIN pg_namespace n ON n.oid = t.relnamespace
 WHERE n.nspname = 'tireless' AND c.contype = 'c'
 ORDER BY 1
"""

ROW_RULES = {
    "one_live_job_per_issue": """
        SELECT count(*) FROM (SELECT FROM tireless.job WHERE state IN ('pending', 'claimed')
                               GROUP BY forge, owner, repo, number HAVING count(*) > 1) AS twice""",
    "parent_is_a_job": """
        SELECT count(*) FROM tireless.job j
         WHERE j.parent_id IS NOT NULL AND NOT EXISTS (SELECT FROM tireless.job p WHERE p.id = j.parent_id)""",
    "event_of_a_job": """
        SELECT count(*) FROM tireless.job_event e
         WHERE NOT EXISTS (SELECT FROM tireless.job j WHERE j.id = e.job_id)""",
    "one_holder_per_token": """
        SELECT count(*) FROM (SELECT FROM tireless.job WHERE claim_token IS NOT NULL
                               GROUP BY claim_token HAVING count(*) > 1) AS shared""",
}


@dataclass(frozen=True)
class Event:
    job_id: int
    at: datetime
    from_state: str | None
    to_state: str
    worker: str | None
    attempt: int
    note: str | None


@dataclass(frozen=True)
class Figures:
    jobs: int
    events: int
    claims: int
    expiries: int


def events_by_job(conn: psycopg.Connection[Any]) -> dict[int, list[Event]]:
    """Every job's history, in the order it was written."""
    history: dict[int, list[Event]] = {}
    rows = conn.execute(
        "SELECT job_id, at, from_state::text, to_state::text, worker, attempt, note"
        " FROM tireless.job_event ORDER BY job_id, id"
    ).fetchall()
    for row in rows:
        history.setdefault(row[0], []).append(Event(*row))
    return history


def replay_problems(job: tuple[Any, ...], events: list[Event]) -> list[str]:
    """Why a job's events do not replay to its row (state, holder, attempts), or nothing."""
    job_id, state, claimed_by, attempts = job
    problems: list[str] = []
    current: str | None = None
    counted = 0
    for event in events:
        if event.from_state != current:
            problems.append(f"job {job_id}: event from {event.from_state} after {current}")
        if (event.from_state, event.to_state) not in LEGAL_MOVES:
            problems.append(f"job {job_id}: illegal move {event.from_state} -> {event.to_state}")
        if event.to_state == "claimed":
            counted += 1
            if event.worker is None:
                problems.append(f"job {job_id}: a claim without a worker")
        if event.attempt != counted:
            problems.append(
                f"job {job_id}: event says attempt {event.attempt}, claims say {counted}"
            )
        current = event.to_state
    if current != state:
        problems.append(f"job {job_id}: events end in {current}, the row says {state}")
    if counted != attempts:
        problems.append(f"job {job_id}: {counted} claim events, the row counts {attempts} attempts")
    if state == "claimed" and events and events[-1].worker != claimed_by:
        problems.append(f"job {job_id}: held by {claimed_by}, last claimed by {events[-1].worker}")
    return problems


def overlapping_holders(history: dict[int, list[Event]]) -> list[str]:
    """Claims of one job that overlap in time: each claim lasts from its event to the job's next
    event, and the next claim may start only after that."""
    problems: list[str] = []
    for job_id, events in history.items():
        held_until: datetime | None = None
        for event, following in zip(events, [*events[1:], None], strict=True):
            if event.to_state != "claimed":
                continue
            if held_until is not None and event.at < held_until:
                problems.append(
                    f"job {job_id}: {event.worker} claimed it at {event.at}, before {held_until}"
                )
            if following is not None:
                if following.at < event.at:
                    problems.append(
                        f"job {job_id}: the claim of {event.worker} ends before it starts"
                    )
                held_until = following.at
    return problems


def find_violations(conn: psycopg.Connection[Any]) -> list[str]:
    """Every broken rule in the database, as readable sentences; empty when all hold."""
    problems: list[str] = []
    for name, table, rule in conn.execute(CHECK_CONSTRAINTS).fetchall():
        broken = conn.execute(f"SELECT count(*) FROM {table} WHERE ({rule}) IS FALSE").fetchone()
        if broken is not None and broken[0]:
            problems.append(f"{broken[0]} rows of {table} break {name}")
    for name, query in ROW_RULES.items():
        broken = conn.execute(query).fetchone()
        if broken is not None and broken[0]:
            problems.append(f"{broken[0]} rows break {name}")
    history = events_by_job(conn)
    jobs = conn.execute(
        "SELECT id, state::text, claimed_by, attempts FROM tireless.job ORDER BY id"
    )
    for job in jobs.fetchall():
        problems += replay_problems(job, history.get(job[0], []))
    problems += overlapping_holders(history)
    return problems


def figures(conn: psycopg.Connection[Any]) -> Figures:
    row = conn.execute(
        """SELECT (SELECT count(*) FROM tireless.job),
                  count(*),
                  count(*) FILTER (WHERE to_state = 'claimed'),
                  count(*) FILTER (WHERE from_state = 'claimed' AND note ~ 'lease of .* expired')
             FROM tireless.job_event"""
    ).fetchone()
    assert row is not None
    return Figures(*row)


def assert_invariants(
    conninfo: str, *, jobs: int | None = None, events: int | None = None
) -> Figures:
    """Every named constraint holds, no job is held twice, every job's events replay to its row,
    and (when given) the counts of jobs and events are what they must be."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        violations = find_violations(conn)
        counted = figures(conn)
    assert violations == []
    if jobs is not None:
        assert counted.jobs == jobs, f"{counted.jobs} jobs, expected {jobs}"
    if events is not None:
        assert counted.events == events, f"{counted.events} events, expected {events}"
    return counted
