"""The history roll-up's cost per 1,000 events (issue 50): a store that already holds a history,
then rounds of 1,000 new events (500 jobs claimed, then 500 finishes: a third failed, the rest
cancelled), each followed by one `tireless.roll_up_history()`, timed. Prints the median.

    python bench/rollup.py                 20 rounds over 100,000 events already rolled up
    python bench/rollup.py --quick         5 rounds over 10,000
"""

from __future__ import annotations

import argparse
import statistics
import time

import psycopg
from scenarios import fresh_database, settle

from dev.embedded import embedded_postgres

JOBS_PER_ROUND = 500  # two events each: the claimed job's creation and its finish
CLAIMED = """
INSERT INTO tireless.job (forge, owner, repo, number, kind, lane, state, claimed_by, claim_expires_at,
                          claim_token, attempts)
SELECT 'gitea', 'bench', 'work', %(first)s::int + g, 'implement', CASE WHEN g %% 2 = 0 THEN 'oc' ELSE 'cc' END,
       'claimed', 'runner-' || g %% 7, now() + interval '10 minutes', gen_random_uuid(), 1
  FROM generate_series(1, %(jobs)s::int) g"""
FINISHED = """
UPDATE tireless.job
   SET state = CASE WHEN number % 3 = 0 THEN 'failed' ELSE 'cancelled' END::tireless.job_state,
       note = CASE WHEN number % 3 = 0 THEN 'agent: tests failed (' || number % 5 || ')' END,
       claimed_by = NULL, claim_expires_at = NULL, claim_token = NULL
 WHERE state = 'claimed'"""


def round_of_events(conn: psycopg.Connection[tuple[object, ...]], first: int) -> None:
    """1,000 events: JOBS_PER_ROUND claimed jobs created, then finished."""
    conn.execute(CLAIMED, {"first": first, "jobs": JOBS_PER_ROUND})
    conn.execute(FINISHED)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds, base = (5, 10_000) if args.quick else (20, 100_000)
    with embedded_postgres() as server:
        conninfo = fresh_database(server, "rollup")
        with psycopg.connect(conninfo, autocommit=True) as conn:
            number = 0
            while number < base // 2:
                round_of_events(conn, number)
                number += JOBS_PER_ROUND
            conn.execute("SELECT tireless.roll_up_history()")
            settle(conninfo)
            times = []
            for _ in range(rounds):
                round_of_events(conn, number)
                number += JOBS_PER_ROUND
                started = time.perf_counter()
                counted = conn.execute("SELECT tireless.roll_up_history()").fetchone()
                times.append(time.perf_counter() - started)
                assert counted == (JOBS_PER_ROUND,), counted
            top = conn.execute(
                "SELECT counted_to = tireless.history_top() FROM tireless.history_rollup"
            )
            assert top.fetchone() == (True,), "the roll-up kept up"
    print(
        f"roll_up_history per 1,000 events over {base:,} rolled up: median"
        f" {statistics.median(times) * 1000:.1f} ms (min {min(times) * 1000:.1f}, max"
        f" {max(times) * 1000:.1f}, {rounds} rounds)"
    )


if __name__ == "__main__":
    main()
