"""What the workers of a claim-and-deliver run wait on: pg_stat_activity and pg_locks, sampled.

    python bench/waits.py [--workers 8] [--seconds 10] [--repeats 3] [--paths floor,sql,sql1]
                          [--synchronous-commit on]

Each path runs its workers (bench/workloads.py, as make bench does) on a database of its own on
one embedded server, the paths alternating in each repeat, while a sampler process reads, every
few milliseconds, the wait event of every worker's backend (pg_stat_activity: `CPU` when it is
active and waits on nothing, `idle` between statements) and the lock requests not granted (pg_locks: what is waited for, on which relation).
Prints, per path, the median cycles/s, and over all repeats the share of samples in each state
and the lock waits seen. Writes nothing.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import time
from collections import Counter
from multiprocessing.synchronize import Event
from typing import Any

import psycopg
from costs import database, fill
from workloads import Run, measure

from dev.embedded import embedded_postgres

ACTIVITY = """
SELECT CASE WHEN a.state <> 'active' THEN a.state
            WHEN a.wait_event IS NULL THEN 'CPU'
            ELSE a.wait_event_type || ':' || a.wait_event END
  FROM pg_stat_activity a
 WHERE a.backend_type = 'client backend' AND a.datname = current_database()
   AND a.pid <> pg_backend_pid()"""
LOCK_WAITS = """
SELECT l.locktype || ' ' || l.mode || coalesce(' on ' || l.relation::regclass::text, '')
  FROM pg_locks l
 WHERE NOT l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"""


def sample(conninfo: str, stop: Event, out: multiprocessing.Queue[Any]) -> None:
    """Until told to stop: how many backends are in each state, and which lock requests wait."""
    states: Counter[str] = Counter()
    locks: Counter[str] = Counter()
    samples = 0
    with psycopg.connect(conninfo, autocommit=True) as conn:
        while not stop.is_set():
            states.update(row[0] for row in conn.execute(ACTIVITY))
            locks.update(row[0] for row in conn.execute(LOCK_WAITS))
            samples += 1
            time.sleep(0.002)
    out.put((samples, states, locks))


def waits(conninfo: str, path: str, workers: int, seconds: float) -> tuple[float, int, Any, Any]:
    """Run the workers with the sampler beside them: cycles/s, samples, states, lock waits."""
    context = multiprocessing.get_context("fork")
    stop, out = context.Event(), context.Queue()
    sampler = context.Process(target=sample, args=(conninfo, stop, out))
    sampler.start()
    try:
        result = measure(Run(path, conninfo, "cc", workers, 1.0, seconds))
    finally:
        stop.set()
    samples, states, locks = out.get(timeout=30)
    sampler.join()
    return result.cycles_per_s, samples, states, locks


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--paths", default="floor,sql,sql1")
    parser.add_argument("--synchronous-commit", default="on", choices=["on", "off"])
    parser.add_argument("--jobs", type=int, default=100_000)
    args = parser.parse_args()
    paths = args.paths.split(",")
    rates: dict[str, list[float]] = {path: [] for path in paths}
    samples: Counter[str] = Counter()
    states: dict[str, Counter[str]] = {path: Counter() for path in paths}
    locks: dict[str, Counter[str]] = {path: Counter() for path in paths}
    with embedded_postgres(fsync=True) as server:
        databases = {path: database(server, f"waits_{n}", None) for n, path in enumerate(paths)}
        for n in range(len(paths)):
            with psycopg.connect(server.conninfo(), autocommit=True) as conn:
                conn.execute(
                    f"ALTER DATABASE waits_{n} SET synchronous_commit = {args.synchronous_commit}"
                )
        for repeat in range(args.repeats):
            for n in range(len(paths)):
                path = paths[(n + repeat) % len(paths)]
                fill(databases[path], args.jobs)
                rate, count, seen, waited = waits(databases[path], path, args.workers, args.seconds)
                rates[path].append(rate)
                samples[path] += count
                states[path].update(seen)
                locks[path].update(waited)
    for path in paths:
        backends = sum(states[path].values())
        print(
            f"\n### {path}: {args.workers} workers, {statistics.median(rates[path]):.0f} cycles/s "
            f"(median of {[round(r) for r in rates[path]]}), synchronous_commit = "
            f"{args.synchronous_commit}, {samples[path]} samples\n"
        )
        print("| backend state | share of backend-samples |")
        print("|---|---:|")
        for state, count in states[path].most_common():
            print(f"| {state} | {count / backends:.1%} |")
        if locks[path]:
            print("\n| lock request waiting | per sample |")
            print("|---|---:|")
            for lock, count in locks[path].most_common(10):
                print(f"| {lock} | {count / samples[path]:.3f} |")


if __name__ == "__main__":
    main()
