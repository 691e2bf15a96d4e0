"""The three ways a worker claims and finishes a job, and the worker processes that time them."""

from __future__ import annotations

import multiprocessing
import statistics
import time
from dataclasses import dataclass
from datetime import timedelta
from multiprocessing.synchronize import Barrier
from typing import Any, Protocol

import psycopg

from tireless import JobStore

LEASE = timedelta(minutes=10)

# The floor: the least a correct SKIP LOCKED queue does. It lives in the benchmark only.
FLOOR_SCHEMA = """
CREATE SCHEMA floor;
CREATE TABLE floor.job (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    lane             text    NOT NULL,
    state            text    NOT NULL DEFAULT 'pending',
    claimed_by       text,
    claim_expires_at timestamptz,
    attempts         integer NOT NULL DEFAULT 0
);
CREATE INDEX floor_pending ON floor.job (lane, id) WHERE state = 'pending';
"""
# lane = ANY (ARRAY[lane]) ... ORDER BY lane, id, as tireless.claim_next writes it: with lane = x the
# planner knows the lane and may walk the primary key through every finished job instead of
# floor_pending (it did, and the floor slowed down as the run went on, when the statistics were
# those of a table of pending jobs).
FLOOR_CLAIM = """
UPDATE floor.job f
   SET state = 'claimed', claimed_by = %(worker)s, claim_expires_at = now() + %(lease)s,
       attempts = f.attempts + 1
  FROM (SELECT id FROM floor.job
         WHERE state = 'pending' AND lane = ANY (ARRAY[%(lane)s])
         ORDER BY lane, id LIMIT 1
           FOR UPDATE SKIP LOCKED) next
 WHERE f.id = next.id
RETURNING f.id"""
FLOOR_FINISH = """
UPDATE floor.job SET state = 'done', claimed_by = NULL, claim_expires_at = NULL WHERE id = %(id)s"""

# Through SQL the caller gets the whole job, as a psql user or a program without the adapter does,
# and as ../shared/peer-bench drives tireless (JobStore gets the same row and builds a Job of it).
SQL_CLAIM = "SELECT * FROM tireless.claim_next(worker => %(worker)s, lanes => %(lanes)s, lease => %(lease)s)"
SQL_FINISH = (
    "SELECT * FROM tireless.transition(job_id => %(id)s, to_state => 'delivered',"
    " worker => %(worker)s)"
)

# One round trip per cycle: each finish also claims the next job (the runner's cycle since 0022).
SQL_FINISH_AND_CLAIM = (
    "SELECT * FROM tireless.finish_and_claim(job_id => %(id)s, to_state => 'delivered',"
    " worker => %(worker)s, lanes => %(lanes)s, lease => %(lease)s, claim_token => %(token)s)"
)

PATHS = ("floor", "sql", "adapter", "sql1", "adapter1")


class Cycle(Protocol):
    def claim(self) -> int | None: ...

    def finish(self, job_id: int) -> None: ...


class StatementCycle:
    """The floor and tireless through SQL: one statement to claim, one to finish, autocommit."""

    def __init__(self, conn: psycopg.Connection[Any], worker: str, lane: str, path: str) -> None:
        self._conn = conn
        self._claim, self._finish = (
            (FLOOR_CLAIM, FLOOR_FINISH) if path == "floor" else (SQL_CLAIM, SQL_FINISH)
        )
        self._params: dict[str, Any] = {
            "worker": worker,
            "lane": lane,
            "lanes": [lane],
            "lease": LEASE,
        }

    def claim(self) -> int | None:
        row = self._conn.execute(self._claim, self._params).fetchone()
        return None if row is None else int(row[0])

    def finish(self, job_id: int) -> None:
        self._conn.execute(self._finish, self._params | {"id": job_id})


class AdapterCycle:
    """tireless through the Python adapter: JobStore over the worker's own connection."""

    def __init__(self, conn: psycopg.Connection[Any], worker: str, lane: str) -> None:
        self._store = JobStore(conn)
        self._worker = worker
        self._lanes = [lane]

    def claim(self) -> int | None:
        job = self._store.claim_next(self._worker, self._lanes, LEASE)
        return None if job is None else job.id

    def finish(self, job_id: int) -> None:
        self._store.transition(job_id, "delivered", self._worker)


class OneTripCycle:
    """tireless through finish_and_claim, by SQL or by JobStore. A worker's first claim is
    claim_next; every later claim is finish_and_claim, which finishes the job before it in the
    same call (so the claim latency is that call's, and finish() sends nothing)."""

    def __init__(
        self, conn: psycopg.Connection[Any], worker: str, lane: str, adapter: bool
    ) -> None:
        self._conn, self._store, self._adapter = conn, JobStore(conn), adapter
        self._worker, self._lanes = worker, [lane]
        self._held: tuple[int, Any] | None = None  # the id and claim token of the job held

    def claim(self) -> int | None:
        if self._held is None:
            job = self._store.claim_next(self._worker, self._lanes, LEASE)
            self._held = None if job is None else (job.id, job.claim_token)
        elif self._adapter:
            job_id, token = self._held
            job = self._store.finish_and_claim(
                job_id, "delivered", self._worker, self._lanes, LEASE, token
            )
            self._held = None if job is None else (job.id, job.claim_token)
        else:
            job_id, token = self._held
            params = {"id": job_id, "worker": self._worker, "lanes": self._lanes, "lease": LEASE}
            cursor = self._conn.execute(SQL_FINISH_AND_CLAIM, params | {"token": token})
            row = cursor.fetchone()
            self._held = None if row is None else (row[0], row[_token_column(cursor)])
        return None if self._held is None else self._held[0]

    def finish(self, job_id: int) -> None:
        assert self._held is not None
        assert self._held[0] == job_id, "the next claim finishes it"


def _token_column(cursor: psycopg.Cursor[Any]) -> int:
    assert cursor.description is not None
    return [column.name for column in cursor.description].index("claim_token")


def cycle_for(path: str, conn: psycopg.Connection[Any], worker: str, lane: str) -> Cycle:
    if path == "adapter":
        return AdapterCycle(conn, worker, lane)
    if path in ("sql1", "adapter1"):
        return OneTripCycle(conn, worker, lane, adapter=path == "adapter1")
    return StatementCycle(conn, worker, lane, path)


@dataclass(frozen=True)
class Run:
    """What one measurement does: which path, on which lane, how many workers, for how long."""

    path: str
    conninfo: str
    lane: str
    workers: int
    warmup: float
    duration: float


@dataclass(frozen=True)
class Measurement:
    cycles_per_s: float
    p50_ms: float
    p99_ms: float


def percentile(sorted_values: list[float], fraction: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(fraction * len(sorted_values)))]


def summarise(latencies: list[float], cycles: int, seconds: float) -> Measurement:
    ordered = sorted(latencies)
    return Measurement(
        cycles / seconds, 1000 * percentile(ordered, 0.5), 1000 * percentile(ordered, 0.99)
    )


def median_of(measurements: list[Measurement]) -> Measurement:
    return Measurement(
        statistics.median(m.cycles_per_s for m in measurements),
        statistics.median(m.p50_ms for m in measurements),
        statistics.median(m.p99_ms for m in measurements),
    )


def worker(run: Run, name: str, barrier: Barrier, results: multiprocessing.Queue[Any]) -> None:
    """One worker process: its own connection; claim and finish until the time is up. Counts the
    cycles that start after the warm-up and end before the deadline; an empty claim is an error."""
    with psycopg.connect(run.conninfo, autocommit=True) as conn:
        cycle = cycle_for(run.path, conn, name, run.lane)
        barrier.wait()
        start = time.perf_counter() + run.warmup
        end = start + run.duration
        latencies: list[float] = []
        empty = 0
        while True:
            began = time.perf_counter()
            job = cycle.claim()
            claimed = time.perf_counter()
            if job is None:
                empty += 1
            else:
                cycle.finish(job)
            done = time.perf_counter()
            if done >= end:
                break
            if began >= start and job is not None:
                latencies.append(claimed - began)
        results.put((latencies, empty))


def measure(run: Run) -> Measurement:
    """Start the workers together (fork), wait for them, and merge what they measured."""
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(run.workers)
    results: multiprocessing.Queue[Any] = context.Queue()
    processes = [
        context.Process(target=worker, args=(run, f"{run.path}-{i}", barrier, results))
        for i in range(run.workers)
    ]
    for process in processes:
        process.start()
    outcomes = [results.get(timeout=run.warmup + run.duration + 60) for _ in processes]
    for process in processes:
        process.join()
    latencies = [latency for lats, _ in outcomes for latency in lats]
    empty = sum(e for _, e in outcomes)
    if empty:
        raise RuntimeError(
            f"{run.path} with {run.workers} workers: the queue ran dry ({empty} empty claims)"
        )
    return summarise(latencies, len(latencies), run.duration)
