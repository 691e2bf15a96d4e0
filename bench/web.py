"""make bench, the dashboard's part: `/metrics` and the pages of `tireless web` on a store
holding 1,000,000 finished jobs against one holding 1,000 (the same live jobs in both); the
target is at most 1.5 times the small store's time. Writes bench/web-results.md (full run).

    python bench/web.py            1,000 against 1,000,000 finished jobs
    python bench/web.py --quick    1,000 against 50,000, printed only
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from scenarios import fresh_database, settle
from starlette.testclient import TestClient

from dev.embedded import embedded_postgres
from tireless.web.app import create_app

RESULTS = Path(__file__).with_name("web-results.md")
TARGET = 1.5
SMALL = 1_000
REQUESTS = 20
ROUNDS = 7
PATHS = {
    "/metrics": "/metrics",
    "/": "/ (overview)",
    "/activity?window=1h": "/activity, 1 hour",
    "/activity?window=7d": "/activity, 7 days",
    "/failures?window=7d": "/failures, 7 days",
    "/workers": "/workers",
    "/jobs?q=nothing": "/jobs?q= (a search that scans)",
}

# Finished jobs spread over the last day (for the chart), 200 live ones in two lanes, and the
# history the triggers would have written (loaded with the triggers off, as bench/scenarios.py does).
FINISHED_JOBS = """
INSERT INTO tireless.job (forge, owner, repo, number, kind, lane, state, attempts, created_at, updated_at)
SELECT 'gitea', 'bench', 'work', g, 'implement', CASE WHEN g %% 3 = 0 THEN 'oc' ELSE 'cc' END,
       (ARRAY['delivered', 'failed', 'cancelled'])[1 + g %% 7 / 5 + g %% 11 / 10]::tireless.job_state, 1,
       now() - interval '1 day' + g * interval '1 day' / %(finished)s::int - interval '1 minute',
       now() - interval '1 day' + g * interval '1 day' / %(finished)s::int
  FROM generate_series(1, %(finished)s::int) g"""
LIVE_JOBS = """
INSERT INTO tireless.job (forge, owner, repo, number, kind, lane, state, attempts, claimed_by,
                          claim_expires_at, claim_token)
SELECT 'gitea', 'bench', 'work', %(finished)s::int + g, 'implement', CASE WHEN g %% 2 = 0 THEN 'oc' ELSE 'cc' END,
       CASE WHEN g <= 150 THEN 'pending' ELSE 'claimed' END::tireless.job_state,
       CASE WHEN g <= 150 THEN 0 ELSE 1 END,
       CASE WHEN g > 150 THEN 'runner-' || g END,
       CASE WHEN g > 150 THEN now() + interval '10 minutes' END,
       CASE WHEN g > 150 THEN gen_random_uuid() END
  FROM generate_series(1, 200) g"""
HISTORY = """
INSERT INTO tireless.job_event (job_id, at, from_state, to_state, worker, attempt)
SELECT j.id, j.created_at, NULL::tireless.job_state, 'pending'::tireless.job_state, NULL, 0 FROM tireless.job j
UNION ALL
SELECT j.id, j.created_at + interval '20 seconds', 'pending', 'claimed', coalesce(j.claimed_by, 'bench-' || j.id % 8), 1
  FROM tireless.job j WHERE j.state <> 'pending'
UNION ALL
SELECT j.id, j.updated_at, 'claimed', j.state, 'bench-' || j.id % 8, 1 FROM tireless.job j WHERE tireless.is_terminal(j.state)
ORDER BY 2"""

MIRROR_CAUGHT_UP = (
    "UPDATE tireless.mirror_repo SET event_cursor = tireless.history_top(),"
    " scanned_to = tireless.history_top()"
)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def load(conninfo: str, finished: int) -> None:
    with psycopg.connect(conninfo, autocommit=True) as conn, conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute(FINISHED_JOBS, {"finished": finished})
        conn.execute(LIVE_JOBS, {"finished": finished})
        conn.execute(HISTORY)
        # track_repo needs a registered forge; nothing polls it
        conn.execute("SELECT tireless.add_forge('gitea', 'gitea', 'https://gitea.invalid')")
        conn.execute("SELECT tireless.track_repo('gitea', 'bench', 'other')")
        # As a running poller leaves it: the mirror has read the history (the backlog counts the
        # changes after its last scan, so a mirror nobody ran for a year would read a year).
        conn.execute(MIRROR_CAUGHT_UP)
    settle(conninfo)


def timed(client: TestClient, path: str, requests: int) -> float:
    """Median milliseconds of GET path, after a few unmeasured requests."""
    for _ in range(3):
        assert client.get(path).status_code == 200
    times: list[float] = []
    for _ in range(requests):
        start = time.perf_counter()
        response = client.get(path)
        times.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200
    return statistics.median(times)


def catch_up(conninfo: str) -> float:
    """The first roll-up (a sweeper's first pass), which counts the whole history once; the
    pages then read only what it has not folded."""
    start = time.perf_counter()
    with psycopg.connect(conninfo) as conn:
        conn.execute("SELECT tireless.roll_up_history()")
    return (time.perf_counter() - start) * 1000


def measure(conninfos: dict[int, str], rounds: int, requests: int) -> dict[int, dict[str, float]]:
    """The two stores side by side, in alternating order over several rounds (the machine is
    shared: a slow moment then hurts both), the median of the rounds' medians."""
    with contextlib.ExitStack() as stack:
        clients = {
            n: stack.enter_context(TestClient(create_app(c), base_url="http://localhost"))
            for n, c in conninfos.items()
        }
        results = {
            n: {"first roll-up (the sweeper's catch-up, once)": catch_up(conninfos[n])}
            for n in clients
        }
        samples: dict[tuple[int, str], list[float]] = {}
        for round_number in range(rounds):
            order = list(clients) if round_number % 2 == 0 else list(reversed(clients))
            for size in order:
                for path in PATHS:
                    samples.setdefault((size, path), []).append(
                        timed(clients[size], path, requests)
                    )
        for (size, path), medians in samples.items():
            results[size][PATHS[path]] = statistics.median(medians)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    big = 50_000 if parser.parse_args().quick else 1_000_000
    conninfos: dict[int, str] = {}
    with embedded_postgres(fsync=True) as server:
        for finished in (SMALL, big):
            log(f"web: loading {finished} finished jobs")
            conninfos[finished] = fresh_database(server, f"web_{finished}")
            load(conninfos[finished], finished)
        results = measure(conninfos, ROUNDS, REQUESTS)
    lines = [
        f"# tireless web: /metrics and the pages at {SMALL:,} and {big:,} finished jobs",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; the median of {ROUNDS} rounds (the two stores"
        f" alternating) of the median of {REQUESTS} requests through the app (Starlette's TestClient,"
        " the async pool, the real database); 200 live jobs in both.",
        "",
        f"| request | {SMALL:,} ms | {big:,} ms | ratio | target <= {TARGET} |",
        "|---|---:|---:|---:|---|",
    ]
    for name, small_ms in results[SMALL].items():
        big_ms = results[big][name]
        ratio = big_ms / small_ms
        verdict = (
            "(not a target)"
            if "once" in name or "scans" in name
            else ("met" if ratio <= TARGET else "MISSED")
        )
        lines.append(f"| {name} | {small_ms:.2f} | {big_ms:.2f} | {ratio:.2f} | {verdict} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if big == 1_000_000:
        RESULTS.write_text(text)
        log(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
