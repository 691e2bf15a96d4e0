"""make bench: fair shares between repositories (issue 25). Prints a markdown table.

    python bench/fairness.py           1,000 repositories and 1,000,000 pending jobs (a few minutes)
    python bench/fairness.py --quick   1,000 repositories and 100,000 pending jobs (under a minute)

- Flat: the backend's CPU time per claim-and-deliver cycle through tireless.claim_next and
  tireless.transition, with 10 repositories and 1,000 pending jobs, and with many repositories and
  many pending jobs; medians of the repetitions, the two databases alternating; the ratio should
  stay near 1.
- Fair: one repository with 500 pending jobs (the oldest) and nine with 5 each, 4 workers claiming
  and delivering together; how many of the nine's 45 jobs are among the first 100 claims (all 45).
"""

from __future__ import annotations

import argparse
import statistics
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
from scenarios import fresh_database, settle
from workloads import LEASE, SQL_CLAIM, SQL_FINISH

from dev.embedded import EmbeddedPostgres, embedded_postgres
from tireless import JobStore

# Pending jobs spread round the repositories, loaded as the superuser with the history trigger off
# (the turns' trigger is ENABLE ALWAYS, so each repository gets its turn).
LOAD = """
INSERT INTO tireless.job (forge, owner, repo, number, kind, lane)
SELECT 'gitea', 'bench', 'repo-' || (g %% %(repos)s::int), g, 'implement', 'cc'
  FROM generate_series(1, %(jobs)s::int) g"""
CYCLES = 1000


def loaded(server: EmbeddedPostgres, name: str, repos: int, jobs: int) -> str:
    conninfo = fresh_database(server, name)
    with psycopg.connect(conninfo, autocommit=True) as conn, conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute(LOAD, {"repos": repos, "jobs": jobs})
    settle(conninfo)
    return conninfo


def cpu_per_cycle(conninfo: str, cycles: int) -> float:
    """Microseconds of the backend's CPU time per claim-and-deliver cycle (/proc/PID/schedstat)."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("SET synchronous_commit = off")
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        schedstat = Path(f"/proc/{row[0]}/schedstat")
        params: dict[str, Any] = {"worker": "bench", "lanes": ["cc"], "lease": LEASE}
        warmup = cycles // 10
        began = 0
        for n in range(warmup + cycles):
            if n == warmup:
                began = int(schedstat.read_text().split()[0])
            claimed = conn.execute(SQL_CLAIM, params).fetchone()
            assert claimed is not None, "the queue ran dry"
            conn.execute(SQL_FINISH, params | {"id": claimed[0]})
        return (int(schedstat.read_text().split()[0]) - began) / cycles / 1000


def flat(server: EmbeddedPostgres, big: tuple[int, int], reps: int) -> tuple[float, float]:
    small_db = loaded(server, "fair_small", 10, 1000 + reps * (CYCLES + CYCLES // 10))
    big_db = loaded(server, "fair_big", *big)
    samples: dict[str, list[float]] = {small_db: [], big_db: []}
    for rep in range(reps):
        for conninfo in (small_db, big_db) if rep % 2 == 0 else (big_db, small_db):
            samples[conninfo].append(cpu_per_cycle(conninfo, CYCLES))
    return statistics.median(samples[small_db]), statistics.median(samples[big_db])


def first_claims(server: EmbeddedPostgres, workers: int, claims: int) -> Counter[str]:
    """One repository of 500 jobs enqueued first, nine of 5; the repositories of the first claims."""
    conninfo = fresh_database(server, "fair_shares")
    with JobStore(conninfo) as store:
        store.add_forge("gitea", "gitea", "https://gitea.invalid")  # track_repo needs it
        for repo, jobs in [("big", 500)] + [(f"small-{n}", 5) for n in range(9)]:
            store.track_repo("gitea", "bench", repo)
            store.enqueue(
                [
                    {"forge": "gitea", "owner": "bench", "repo": repo, "number": n, "state": "open"}
                    | {"labels": ["tireless", "tireless/implement"]}
                    for n in range(1, jobs + 1)
                ]
            )
    barrier = threading.Barrier(workers)
    left = iter(range(claims))
    lock = threading.Lock()

    def work(worker: str) -> None:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            store = JobStore(conn)
            barrier.wait(timeout=60)
            while True:
                with lock:
                    if next(left, None) is None:
                        return
                job = store.claim_next(worker, ["cc"])
                assert job is not None
                store.transition(job.id, "delivered", worker)

    threads = [threading.Thread(target=work, args=(f"runner-{n}",)) for n in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with psycopg.connect(conninfo) as conn:
        order = conn.execute(
            "SELECT j.repo FROM tireless.job_event e JOIN tireless.job j ON j.id = e.job_id"
            " WHERE e.to_state = 'claimed' ORDER BY e.id LIMIT %(claims)s",
            {"claims": claims},
        ).fetchall()
    return Counter(repo for (repo,) in order)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="100,000 pending jobs, 3 repetitions")
    args = parser.parse_args()
    repos, jobs, reps = (1000, 100_000, 3) if args.quick else (1000, 1_000_000, 5)
    with embedded_postgres(fsync=True) as server:
        small, big = flat(server, (repos, jobs), reps)
        first = first_claims(server, workers=4, claims=100)
    nine = sum(count for repo, count in first.items() if repo != "big")
    print(f"Fair shares: backend CPU per claim-and-deliver cycle, medians of {reps}.\n")
    print("| queue | µs per cycle | ratio |")
    print("|---|---:|---:|")
    print(f"| 10 repositories, 1,000 pending | {small:.0f} | 1.00 |")
    print(f"| {repos:,} repositories, {jobs:,} pending | {big:.0f} | {big / small:.2f} |")
    print(
        f"\nOne repository of 500 pending jobs and nine of 5, 4 workers: {nine} of the nine's 45 jobs"
        f" among the first 100 claims (the big one: {first['big']})."
    )


if __name__ == "__main__":
    main()
