"""What each layer of a claim-and-deliver cycle costs the server, in CPU time per cycle.

    python bench/costs.py [--cycles N] [--reps N]

One connection, synchronous_commit off (no wait for the disk: CPU only), the layers measured
side by side in one run and alternating, medians of the repetitions. The time is the backend's
own CPU time (/proc/PID/schedstat), so other load on the machine changes it little:

- floor: the hand-written SKIP LOCKED queue of bench/workloads.py (two columns indexed);
- tireless.job: the same two statements written by hand on tireless.job, its history trigger
  disabled: what the table costs (its constraints, its indexes, its wider row);
- + history: the same with the trigger on: one job_event row per change, and its foreign key check;
- + functions: tireless.claim_next and tireless.transition, as the peers' harness calls them;
- + functions before 0015: the same on the schema of 0014_lane_summary (the migrations before).

Linux only (schedstat). Writes nothing: prints a markdown table.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from statements import migrate_until
from workloads import FLOOR_CLAIM, FLOOR_FINISH, FLOOR_SCHEMA, LEASE, SQL_CLAIM, SQL_FINISH

from tireless.devtools.embedded import EmbeddedPostgres, embedded_postgres

TABLE_CLAIM = """
UPDATE tireless.job j
   SET state = 'claimed', claimed_by = %(worker)s, claim_expires_at = now() + %(lease)s,
       claim_token = gen_random_uuid(), attempts = j.attempts + 1, note = NULL, updated_at = now()
  FROM (SELECT id FROM tireless.job
         WHERE state = 'pending' AND lane = ANY (ARRAY[%(lane)s]) AND available_at <= now()
         ORDER BY lane, id LIMIT 1
           FOR UPDATE SKIP LOCKED) next
 WHERE j.id = next.id
RETURNING j.id"""
TABLE_FINISH = """
UPDATE tireless.job
   SET state = 'delivered', claimed_by = NULL, claim_expires_at = NULL, claim_token = NULL,
       note = NULL, updated_at = now()
 WHERE id = %(id)s AND state = 'claimed' AND claimed_by = %(worker)s"""
NO_HISTORY = "ALTER TABLE tireless.job DISABLE TRIGGER job_state_changed_event"

# layer: (database, claim, finish)
LAYERS = {
    "floor": ("costs_now", FLOOR_CLAIM, FLOOR_FINISH),
    "tireless.job": ("costs_table", TABLE_CLAIM, TABLE_FINISH),
    "+ history": ("costs_now", TABLE_CLAIM, TABLE_FINISH),
    "+ functions": ("costs_now", SQL_CLAIM, SQL_FINISH),
    "+ functions before 0015": ("costs_before", SQL_CLAIM, SQL_FINISH),
}


def database(server: EmbeddedPostgres, name: str, until: str | None, *setup: str) -> str:
    with psycopg.connect(server.conninfo(), autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    conninfo = server.conninfo(name)
    migrate_until(conninfo, until)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(FLOOR_SCHEMA)
        for statement in setup:
            conn.execute(statement)
    return conninfo


def fill(conninfo: str, jobs: int) -> None:
    """`jobs` pending jobs in lane cc of both queues, then VACUUM: each run starts alike."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO tireless.job (forge, owner, repo, number, kind, lane)"
            " SELECT 'gitea', 'bench', 'costs', g, 'implement', 'cc' FROM generate_series("
            "(SELECT coalesce(max(number), 0) + 1 FROM tireless.job),"
            " (SELECT coalesce(max(number), 0) FROM tireless.job) + %s) g",
            [jobs],
        )
        conn.execute("INSERT INTO floor.job (lane) SELECT 'cc' FROM generate_series(1, %s)", [jobs])
        conn.execute("VACUUM (ANALYZE) tireless.job, floor.job")


def cpu_per_cycle(conninfo: str, claim: str, finish: str, cycles: int) -> float:
    """Microseconds of the backend's CPU time per claim-and-deliver cycle."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("SET synchronous_commit = off")
        pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]  # type: ignore[index]
        schedstat = Path(f"/proc/{pid}/schedstat")
        on_cpu: Callable[[], int] = lambda: int(schedstat.read_text().split()[0])  # noqa: E731
        params: dict[str, Any] = {"worker": "costs", "lane": "cc", "lanes": ["cc"], "lease": LEASE}
        warmup = cycles // 10
        for n in range(warmup + cycles):
            if n == warmup:
                began = on_cpu()
            row = conn.execute(claim, params).fetchone()
            assert row is not None, "the queue ran dry"
            conn.execute(finish, params | {"id": row[0]})
        return (on_cpu() - began) / cycles / 1000


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--cycles", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    samples: dict[str, list[float]] = {}
    with embedded_postgres(fsync=True) as server:
        databases = {
            "costs_now": database(server, "costs_now", None),
            "costs_table": database(server, "costs_table", None, NO_HISTORY),
            "costs_before": database(server, "costs_before", "0014_lane_summary"),
        }
        for rep in range(args.reps):
            for n in range(len(LAYERS)):
                layer = list(LAYERS)[(n + rep) % len(LAYERS)]
                name, claim, finish = LAYERS[layer]
                fill(databases[name], args.cycles + args.cycles // 10)
                samples.setdefault(layer, []).append(
                    cpu_per_cycle(databases[name], claim, finish, args.cycles)
                )
    floor = statistics.median(samples["floor"])
    print(
        f"Backend CPU per claim-and-deliver cycle: one connection, synchronous_commit off, "
        f"{args.cycles} cycles, medians of {args.reps}.\n"
    )
    print("| layer | µs per cycle | ratio to floor |")
    print("|---|---:|---:|")
    for layer in LAYERS:
        cost = statistics.median(samples[layer])
        print(f"| {layer} | {cost:.0f} | {cost / floor:.2f} |")


if __name__ == "__main__":
    main()
