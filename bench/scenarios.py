"""Databases, queues and the side measurements: depth, enqueue, the sweeper, capacity, the profile."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from workloads import FLOOR_SCHEMA, LEASE, SQL_CLAIM, SQL_FINISH

from dev.embedded import EmbeddedPostgres
from tireless import migrate
from tireless.store import reads


def fresh_database(server: EmbeddedPostgres, name: str, *, floor: bool = False) -> str:
    """A new migrated database (with the floor's table when asked); returns its conninfo."""
    with psycopg.connect(server.conninfo(), autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    conninfo = server.conninfo(name)
    migrate(conninfo)
    if floor:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(FLOOR_SCHEMA)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        # track_repo needs a registered forge; nothing polls it
        conn.execute("SELECT tireless.add_forge('gitea', 'gitea', 'https://gitea.invalid')")
        conn.execute("SELECT tireless.track_repo('gitea', 'bench', 'work')")
    return conninfo


def settle(conninfo: str) -> None:
    """VACUUM ANALYZE and a checkpoint, so a measurement starts from a settled table."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")
        conn.execute("CHECKPOINT")


@dataclass
class Queue:
    """The pending jobs of one lane (floor or tireless), kept at a depth by bulk inserts."""

    conninfo: str
    table: str  # floor.job or tireless.job
    lane: str
    next_number: int = 1

    def top_up(self, depth: int) -> None:
        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            row = conn.execute(
                f"SELECT count(*) FROM {self.table} WHERE state = 'pending' AND lane = %s",
                [self.lane],
            ).fetchone()
            missing = depth - (row[0] if row else 0)
            if missing <= 0:
                return
            first, last = self.next_number, self.next_number + missing - 1
            if self.table == "floor.job":
                conn.execute(
                    "INSERT INTO floor.job (lane) SELECT %s FROM generate_series(%s::int, %s)",
                    [self.lane, first, last],
                )
            else:
                conn.execute(
                    "INSERT INTO tireless.job (forge, owner, repo, number, kind, lane)"
                    " SELECT 'gitea', 'bench', %s, g, 'implement', %s FROM generate_series(%s::int, %s) g",
                    [self.lane, self.lane, first, last],
                )
            self.next_number = last + 1


def settings(conninfo: str) -> dict[str, str]:
    """The server facts results.md records."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        names = [
            "server_version",
            "fsync",
            "synchronous_commit",
            "full_page_writes",
            "shared_buffers",
        ]
        return {name: str(conn.execute(f"SHOW {name}").fetchone()[0]) for name in names}  # type: ignore[index]


def table_updates(conninfo: str) -> tuple[int, int]:
    """(n_tup_upd, n_tup_hot_upd) of tireless.job."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        row = conn.execute(
            "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables"
            " WHERE schemaname = 'tireless' AND relname = 'job'"
        ).fetchone()
        assert row is not None
        return int(row[0]), int(row[1])


# Depth: the claim on a small queue against one under a million pending jobs and a million finished.
BULK_JOBS = """
INSERT INTO tireless.job (forge, owner, repo, number, kind, lane, state, attempts, created_at, updated_at)
SELECT 'gitea', 'bench', 'depth', g, 'implement', 'cc',
       CASE WHEN g <= %(terminal)s::int THEN 'delivered' ELSE 'pending' END::tireless.job_state,
       CASE WHEN g <= %(terminal)s::int THEN 1 ELSE 0 END,
       now() - interval '1 day', now() - interval '1 day'
  FROM generate_series(1, %(terminal)s::int + %(pending)s::int) g"""
BULK_EVENTS = """
INSERT INTO tireless.job_event (job_id, at, from_state, to_state, worker, attempt)
SELECT j.id, j.created_at, NULL::tireless.job_state, 'pending'::tireless.job_state, NULL, 0 FROM tireless.job j
UNION ALL
SELECT j.id, j.updated_at, 'claimed', 'delivered', 'bench', 1 FROM tireless.job j WHERE j.state = 'delivered'"""


def load_depth(conninfo: str, pending: int, terminal: int) -> None:
    """Bulk-load jobs as the superuser, triggers off; the history they would have written is
    inserted the same way (a creation event per job, a delivery event per finished one)."""
    with psycopg.connect(conninfo, autocommit=True) as conn, conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute(BULK_JOBS, {"terminal": terminal, "pending": pending})
        conn.execute(BULK_EVENTS)
    settle(conninfo)


def claim_p50(conninfo: str, warmup: int, cycles: int) -> float:
    """Median claim latency (ms) of one worker over `cycles` claim-and-deliver cycles."""
    latencies: list[float] = []
    with psycopg.connect(conninfo, autocommit=True) as conn:
        params: dict[str, Any] = {"worker": "depth", "lanes": ["cc"], "lease": LEASE}
        for n in range(warmup + cycles):
            began = time.perf_counter()
            row = conn.execute(SQL_CLAIM, params).fetchone()
            claimed = time.perf_counter()
            if row is None:
                raise RuntimeError("depth: the queue ran dry")
            conn.execute(SQL_FINISH, params | {"id": row[0]})
            if n >= warmup:
                latencies.append(claimed - began)
    return 1000 * statistics.median(latencies)


# Enqueue: one batch of new issues, then the same poll again (nothing to create).
def issues(repo: str, count: int) -> Jsonb:
    labels = ["tireless", "tireless/implement"]
    return Jsonb(
        [
            {
                "forge": "gitea",
                "owner": "bench",
                "repo": repo,
                "number": n,
                "state": "open",
                "labels": labels,
            }
            for n in range(1, count + 1)
        ]
    )


def timed_enqueue(conn: psycopg.Connection[Any], batch: Jsonb) -> tuple[float, int]:
    began = time.perf_counter()
    row = conn.execute("SELECT tireless.enqueue(%s)", [batch]).fetchone()
    assert row is not None
    return time.perf_counter() - began, int(row[0])


def enqueue_rates(conninfo: str, count: int, rep: int) -> tuple[float, float]:
    """(issues/s of the first poll, issues/s of a repeated poll) for a fresh repository."""
    repo = f"poll{rep}"
    with psycopg.connect(conninfo, autocommit=True) as conn:
        # track_repo needs a registered forge; nothing polls it
        conn.execute("SELECT tireless.add_forge('gitea', 'gitea', 'https://gitea.invalid')")
        conn.execute("SELECT tireless.track_repo('gitea', 'bench', %s)", [repo])
        batch = issues(repo, count)
        first, created = timed_enqueue(conn, batch)
        again = [timed_enqueue(conn, batch) for _ in range(3)]
    if created != count or any(n != 0 for _, n in again):
        raise RuntimeError(f"enqueue: created {created}, then {[n for _, n in again]}")
    return count / first, count / statistics.median(t for t, _ in again)


# The sweeper: expire_stale_claims with `expired` leases passed, and its plans.
STAGE_EXPIRED = """
UPDATE tireless.job SET state = 'claimed', claimed_by = 'gone', claim_expires_at = now() - interval '1 minute',
       claim_token = gen_random_uuid(), attempts = attempts + 1
 WHERE id IN (SELECT id FROM tireless.job WHERE state = 'pending' AND lane = 'cc' ORDER BY id LIMIT %s)"""


def explain_as_notices(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    """Turn on auto_explain at NOTICE for the connection's next statements (nested ones too): the
    returned list fills with the real plans of the statements inside the functions, as they run."""
    plans: list[dict[str, Any]] = []

    def collect(diag: psycopg.errors.Diagnostic) -> None:
        text = diag.message_primary or ""
        if "{" in text:
            plans.append(json.loads(text[text.index("{") :]))

    conn.add_notice_handler(collect)
    for setting in (
        "LOAD 'auto_explain'",
        "SET auto_explain.log_min_duration = 0",
        "SET auto_explain.log_nested_statements = on",
        "SET auto_explain.log_format = json",
        "SET auto_explain.log_level = notice",
        "SET client_min_messages = notice",
    ):
        conn.execute(setting)
    return plans


def scans_of_job(plan: dict[str, Any]) -> Iterator[str]:
    """Every plan node that reads tireless.job: its type, and its index when it has one."""
    node = plan.get("Plan", plan)
    if node.get("Relation Name") == "job" and node["Node Type"] != "ModifyTable":
        index = node.get("Index Name")
        yield str(node["Node Type"]) + (f" ({index})" if index else "")
    for child in node.get("Plans", []):
        yield from scans_of_job(child)


def job_reads_during(conninfo: str, call: str, params: list[Any] | None = None) -> list[str]:
    """How the statements inside one call (a function of tireless) read tireless.job."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        plans = explain_as_notices(conn)
        conn.execute(call.encode(), params)
    return sorted({scan for plan in plans for scan in scans_of_job(plan)})


@dataclass(frozen=True)
class Sweep:
    per_call_ms: float
    idle_call_ms: float
    job_reads: list[str]


def sweep(conninfo: str, expired: int, reps: int) -> Sweep:
    busy, idle = [], []
    with psycopg.connect(conninfo, autocommit=True) as conn:
        for _ in range(reps):
            conn.execute(STAGE_EXPIRED, [expired])
            began = time.perf_counter()
            row = conn.execute("SELECT tireless.expire_stale_claims()").fetchone()
            busy.append(time.perf_counter() - began)
            if row is None or row[0] != expired:
                raise RuntimeError(f"expire_stale_claims moved {row}, expected {expired}")
            began = time.perf_counter()
            conn.execute("SELECT tireless.expire_stale_claims()")
            idle.append(time.perf_counter() - began)
        conn.execute(STAGE_EXPIRED, [expired])
    reads = job_reads_during(conninfo, "SELECT tireless.expire_stale_claims()")
    return Sweep(1000 * statistics.median(busy), 1000 * statistics.median(idle), reads)


def function_profile(conninfo: str, cycles: int) -> list[tuple[str, int, float, float]]:
    """One worker's claim-and-deliver cycles with track_functions = all: per tireless function,
    (name, calls, total ms per call, self ms per call), most expensive first."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("SET track_functions = 'all'")
        conn.execute("SELECT pg_stat_reset()")
        params: dict[str, Any] = {"worker": "profile", "lanes": ["cc"], "lease": LEASE}
        for _ in range(cycles):
            row = conn.execute(SQL_CLAIM, params).fetchone()
            assert row is not None
            conn.execute(SQL_FINISH, params | {"id": row[0]})
    # The backend flushes its counters as it exits, just after the connection closes.
    with psycopg.connect(conninfo, autocommit=True) as conn:
        for _ in range(100):
            rows = conn.execute(
                "SELECT funcname, calls, total_time / calls, self_time / calls"
                " FROM pg_stat_user_functions WHERE schemaname = 'tireless' ORDER BY total_time DESC"
            ).fetchall()
            if any(name == "claim_next" and calls >= cycles for name, calls, _, _ in rows):
                return [(str(n), int(c), float(t), float(s)) for n, c, t, s in rows]
            time.sleep(0.05)
    raise RuntimeError("the function statistics of the profile never arrived")


BARE_RENEWAL = """
UPDATE tireless.job j SET claim_expires_at = now() + %(lease)s, updated_at = now()
 WHERE j.id = %(id)s AND j.state = 'claimed' AND j.claimed_by = %(worker)s"""
RENEWALS = {
    "bare UPDATE": BARE_RENEWAL,
    "renew_claim": "SELECT tireless.renew_claim(job_id => %(id)s, worker => %(worker)s, lease => %(lease)s)",
    "heartbeat": "SELECT tireless.heartbeat(job_id => %(id)s, worker => %(worker)s, lease => %(lease)s)",
}


def renewal_rates(conninfo: str, renewals: int, reps: int) -> dict[str, float]:
    """Lease renewals per second of one worker holding 100 claims, one call per transaction:
    tireless's functions against a bare UPDATE of the lease, alternating, medians of the
    repetitions (heartbeat only where the schema has it)."""
    samples: dict[str, list[float]] = {}
    with psycopg.connect(conninfo, autocommit=True) as conn:
        params: dict[str, Any] = {"worker": "renewer", "lanes": ["cc"], "lease": LEASE}
        held = [conn.execute(SQL_CLAIM, params).fetchone() for _ in range(100)]
        ids = [row[0] for row in held if row is not None]
        has = conn.execute(
            "SELECT to_regprocedure('tireless.heartbeat(bigint,text,interval,uuid)')"
        )
        paths = [p for p in RENEWALS if p != "heartbeat" or has.fetchone() != (None,)]
        for rep in range(reps):
            for path in rotated_paths(paths, rep):
                began = time.perf_counter()
                for n in range(renewals):
                    conn.execute(RENEWALS[path], params | {"id": ids[n % len(ids)]})
                samples.setdefault(path, []).append(renewals / (time.perf_counter() - began))
        for job_id in ids:
            conn.execute(SQL_FINISH, params | {"id": job_id})
    return {path: statistics.median(rates) for path, rates in samples.items()}


def rotated_paths(paths: list[str], by: int) -> list[str]:
    return [paths[(i + by) % len(paths)] for i in range(len(paths))]


# tireless status: the same live jobs under a short history and under a long one.
HISTORY_JOBS = """
INSERT INTO tireless.job (forge, owner, repo, number, kind, lane, state, attempts, created_at, updated_at)
SELECT 'gitea', 'bench', 'status', g, 'implement', CASE WHEN g %% 2 = 0 THEN 'cc' ELSE 'oc' END,
       CASE WHEN g <= %(pending)s::int THEN 'pending'
            ELSE (ARRAY['delivered', 'failed', 'cancelled'])[1 + g %% 3] END::tireless.job_state,
       CASE WHEN g <= %(pending)s::int THEN 0 ELSE 1 END,
       now() - %(spread)s::interval * g / (%(pending)s::int + %(finished)s::int),
       now() - %(spread)s::interval * g / (%(pending)s::int + %(finished)s::int)
  FROM generate_series(1, %(pending)s::int + %(finished)s::int) g"""


def load_history(conninfo: str, pending: int, finished: int, spread: str) -> None:
    """`pending` live jobs and `finished` terminal ones, their last changes spread evenly over
    `spread` (a year of history, or a day), as the superuser with triggers off."""
    with psycopg.connect(conninfo, autocommit=True) as conn, conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute(HISTORY_JOBS, {"pending": pending, "finished": finished, "spread": spread})
        conn.execute(BULK_EVENTS)
    settle(conninfo)


def status_p50(conninfo: str, runs: int) -> float:
    """Median time (ms) of the query `tireless status` runs (tireless.store.reads.STATUS)."""
    timings: list[float] = []
    with psycopg.connect(conninfo, autocommit=True) as conn:
        for _ in range(runs):
            began = time.perf_counter()
            conn.execute(reads.STATUS).fetchall()
            timings.append((time.perf_counter() - began) * 1000)
    return statistics.median(timings)
