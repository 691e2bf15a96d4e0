"""make bench: what waiting jobs cost a claim (issue 35, dependencies). Prints a markdown table.

    python bench/dependencies.py           10,000 waiting jobs, 5 repetitions (about a minute)
    python bench/dependencies.py --quick   10,000 waiting jobs, 3 repetitions

The backend's CPU time per claim-and-deliver cycle through tireless.claim_next and
tireless.transition (fair.cpu_per_cycle), in ten repositories, with no waiting job and with 10,000
pending jobs that wait for a dependency, all older than every ready job (so a claim that read them
would read them all); medians of the repetitions, the two databases alternating. The goal: a ratio
of at most 1.1.
"""

from __future__ import annotations

import argparse
import statistics

import psycopg
from fairness import CYCLES, cpu_per_cycle
from scenarios import fresh_database, settle

from dev.embedded import EmbeddedPostgres, embedded_postgres

# Loaded as the superuser with the history trigger off (the turns' trigger is ENABLE ALWAYS). The
# waiting jobs first, so their ids are the oldest; then the ready ones.
LOAD_WAITING = """
INSERT INTO tireless.job (forge, owner, repo, number, kind, lane, waiting_on, note)
SELECT 'gitea', 'bench', 'repo-' || (g %% 10), g, 'implement', 'cc', '{#1}', 'waiting on #1'
  FROM generate_series(1000001, 1000000 + %(waiting)s::int) g"""
LOAD_READY = """
INSERT INTO tireless.job (forge, owner, repo, number, kind, lane)
SELECT 'gitea', 'bench', 'repo-' || (g %% 10), g, 'implement', 'cc'
  FROM generate_series(1, %(jobs)s::int) g"""


def loaded(server: EmbeddedPostgres, name: str, waiting: int, jobs: int) -> str:
    conninfo = fresh_database(server, name)
    with psycopg.connect(conninfo, autocommit=True) as conn, conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica")
        if waiting:
            conn.execute(LOAD_WAITING, {"waiting": waiting})
        conn.execute(LOAD_READY, {"jobs": jobs})
    settle(conninfo)
    return conninfo


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="3 repetitions")
    parser.add_argument("--waiting", type=int, default=10_000, help="waiting jobs (10,000)")
    args = parser.parse_args()
    reps = 3 if args.quick else 5
    jobs = 1000 + reps * (CYCLES + CYCLES // 10)
    with embedded_postgres(fsync=True) as server:
        none_db = loaded(server, "deps_none", 0, jobs)
        waiting_db = loaded(server, "deps_waiting", args.waiting, jobs)
        samples: dict[str, list[float]] = {none_db: [], waiting_db: []}
        for rep in range(reps):
            for conninfo in (none_db, waiting_db) if rep % 2 == 0 else (waiting_db, none_db):
                samples[conninfo].append(cpu_per_cycle(conninfo, CYCLES))
    none, waiting = statistics.median(samples[none_db]), statistics.median(samples[waiting_db])
    print(f"Waiting jobs: backend CPU per claim-and-deliver cycle, medians of {reps}.\n")
    print("| queue | µs per cycle | ratio |")
    print("|---|---:|---:|")
    print(f"| 10 repositories, {jobs:,} ready, none waiting | {none:.0f} | 1.00 |")
    print(
        f"| the same and {args.waiting:,} waiting (older than every ready job)"
        f" | {waiting:.0f} | {waiting / none:.2f} |"
    )


if __name__ == "__main__":
    main()
