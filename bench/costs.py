"""What each layer of a claim-and-deliver cycle costs the server, in CPU time per cycle.

    python bench/costs.py [--cycles N] [--reps N]

One connection, synchronous_commit off (no wait for the disk: CPU only), the layers measured
side by side in one run and alternating, medians of the repetitions. The time is the backend's
own CPU time (/proc/PID/schedstat), so other load on the machine changes it little:

- floor: the hand-written SKIP LOCKED queue of bench/workloads.py (two columns indexed);
- tireless.job: the same two statements written by hand on tireless.job, its history trigger
  disabled: what the table costs (its constraints, its indexes, its wider row);
- + history: the same with the trigger on: one job_event row per change;
- + functions: tireless.claim_next and tireless.transition, as the peers' harness calls them;
- + functions before 0015: the same on the schema of 0014_lane_summary (the migrations before).

With --schemas it prints instead the runner's cycle (finish_and_claim, one call) on the schema
each recent migration left: what fair shares (0024) cost, and what 0025 took back.

With --guarantees it prints instead what each guarantee costs: the same cycle through the functions
on a database with everything, and on databases that each lack one guarantee (a trigger, a
constraint, an index taken away, for the measurement only); the difference is its price.

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

from dev.embedded import EmbeddedPostgres, embedded_postgres

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

# layer: (the last migration, or None for all; setup; claim; finish)
LAYERS: dict[str, tuple[str | None, list[str], str, str]] = {
    "floor": (None, [], FLOOR_CLAIM, FLOOR_FINISH),
    "tireless.job": (None, [NO_HISTORY], TABLE_CLAIM, TABLE_FINISH),
    "+ history": (None, [], TABLE_CLAIM, TABLE_FINISH),
    "+ functions": (None, [], SQL_CLAIM, SQL_FINISH),
    "+ functions before 0015": ("0014_lane_summary", [], SQL_CLAIM, SQL_FINISH),
}


# The runner's cycle, one call: the first claim, then each finish claims the next.
FIRST_CLAIM = (
    "SELECT id, claim_token FROM tireless.claim_next(worker => %(worker)s, lanes => %(lanes)s,"
    " lease => %(lease)s)"
)
ONE_CALL = (
    "SELECT id, claim_token FROM tireless.finish_and_claim(job_id => %(id)s, to_state => 'delivered',"
    " worker => %(worker)s, lanes => %(lanes)s, lease => %(lease)s, claim_token => %(token)s)"
)
# schema: (its last migration, no setup, the first claim, the call)
SCHEMAS: dict[str, tuple[str | None, list[str], str, str]] = {
    "0023_dashboard (before fair shares)": ("0023_dashboard", [], FIRST_CLAIM, ONE_CALL),
    "0024_fair_shares": ("0024_fair_shares", [], FIRST_CLAIM, ONE_CALL),
    "0025_lean_turns_and_budgets (all)": (None, [], FIRST_CLAIM, ONE_CALL),
}


# guarantee: what taking it away for the measurement does
GUARANTEES = {
    "one history row per change of state (the trigger and the row)": [NO_HISTORY],
    "the rules of a job row (job_rules_hold, pending_holds_no_claim)": [
        "ALTER TABLE tireless.job DROP CONSTRAINT job_rules_hold",
        "ALTER TABLE tireless.job DROP CONSTRAINT pending_holds_no_claim",
    ],
    "a terminal job never changes (terminal_job_is_final)": [
        "DROP TRIGGER terminal_job_is_final ON tireless.job"
    ],
    "one live job per issue (its unique index)": ["DROP INDEX tireless.one_live_job_per_issue"],
    "the indexes of the sweeper and of prune (claimed, terminal jobs)": [
        "DROP INDEX tireless.claimed_jobs_by_expiry",
        "DROP INDEX tireless.terminal_jobs_by_change",
    ],
    "functions run as their owner with a pinned search_path": [
        "ALTER FUNCTION tireless.claim_next(text, text[], interval) SECURITY INVOKER RESET ALL",
        "ALTER FUNCTION tireless.transition(bigint, text, text, text, uuid) SECURITY INVOKER RESET ALL",
    ],
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
        one_call = finish == ONE_CALL
        row = conn.execute(claim, params).fetchone() if one_call else None
        for n in range(warmup + cycles):
            if n == warmup:
                began = on_cpu()
            if one_call:
                assert row is not None, "the queue ran dry"
                row = conn.execute(finish, params | {"id": row[0], "token": row[1]}).fetchone()
                continue
            row = conn.execute(claim, params).fetchone()
            assert row is not None, "the queue ran dry"
            conn.execute(finish, params | {"id": row[0]})
        return (on_cpu() - began) / cycles / 1000


def measure(
    server: EmbeddedPostgres,
    runs: dict[str, tuple[str | None, list[str], str, str]],
    reps: int,
    cycles: int,
) -> dict[str, float]:
    """Median µs per cycle of each run (its migrations' end, its setup, its claim and finish),
    the runs alternating."""
    databases = {
        name: database(server, f"costs_{n}", until, *setup)
        for n, (name, (until, setup, _, _)) in enumerate(runs.items())
    }
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for rep in range(reps):
        for n in range(len(runs)):
            name = list(runs)[(n + rep) % len(runs)]
            _, _, claim, finish = runs[name]
            fill(databases[name], cycles + cycles // 10)
            samples[name].append(cpu_per_cycle(databases[name], claim, finish, cycles))
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--cycles", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--guarantees", action="store_true", help="what each guarantee costs")
    parser.add_argument(
        "--schemas", action="store_true", help="the runner's cycle on each recent schema"
    )
    args = parser.parse_args()
    print(
        f"Backend CPU per claim-and-deliver cycle: one connection, synchronous_commit off, "
        f"{args.cycles} cycles, medians of {args.reps}.\n"
    )
    with embedded_postgres(fsync=True) as server:
        if args.guarantees:
            runs = {"floor": LAYERS["floor"], "everything": LAYERS["+ functions"]}
            for guarantee, setup in GUARANTEES.items():
                runs[guarantee] = (None, setup, SQL_CLAIM, SQL_FINISH)
            cost = measure(server, runs, args.reps, args.cycles)
            print("| guarantee | µs per cycle | share of the cycle | in floors |")
            print("|---|---:|---:|---:|")
            for guarantee in GUARANTEES:
                price = cost["everything"] - cost[guarantee]
                print(
                    f"| {guarantee} | {price:.0f} | {price / cost['everything']:.0%} "
                    f"| {price / cost['floor']:.2f} |"
                )
            print(
                f"| the whole cycle (floor: {cost['floor']:.0f}) | {cost['everything']:.0f} "
                f"| 100% | {cost['everything'] / cost['floor']:.2f} |"
            )
            return
        if args.schemas:
            cost = measure(server, SCHEMAS, args.reps, args.cycles)
            baseline = cost[next(iter(SCHEMAS))]
            print("| schema (finish_and_claim, one call a cycle) | µs per cycle | ratio to 0023 |")
            print("|---|---:|---:|")
            for schema in SCHEMAS:
                print(f"| {schema} | {cost[schema]:.0f} | {cost[schema] / baseline:.2f} |")
            return
        cost = measure(server, LAYERS, args.reps, args.cycles)
    print("| layer | µs per cycle | ratio to floor |")
    print("|---|---:|---:|")
    for layer in LAYERS:
        print(f"| {layer} | {cost[layer]:.0f} | {cost[layer] / cost['floor']:.2f} |")


if __name__ == "__main__":
    main()
