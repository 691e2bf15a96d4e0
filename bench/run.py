"""make bench: tireless's claim against a hand-written SKIP LOCKED floor, measured side by side
in one run on a private PostgreSQL with fsync and synchronous_commit on; writes bench/results.md.

    python bench/run.py            the full run (about 10 minutes on 2 cores)
    python bench/run.py --quick    smaller sizes, shorter durations, printed only (under a minute)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import scenarios
from workloads import PATHS, Measurement, Run, measure, median_of

from dev.embedded import EmbeddedPostgres, embedded_postgres

RESULTS = Path(__file__).with_name("results.md")
# The before-and-after of bench/costs.py and bench/statements.py, kept by hand, appended to results.md.
WHERE_THE_TIME_GOES = Path(__file__).with_name("where-the-time-goes.md")
# Issue 13: tireless through SQL >= 0.8 of the floor; through JobStore >= 0.9 of tireless through SQL.
# Issue 26: the same for the one-round-trip cycle (finish_and_claim): JobStore >= 0.9 of SQL.
TARGETS = {
    "floor": None,
    "sql": ("floor", 0.8),
    "adapter": ("sql", 0.9),
    "sql1": None,
    "adapter1": ("sql1", 0.9),
}
RENEWAL_TARGET = 0.9  # renew_claim and heartbeat against a bare UPDATE of the lease


@dataclass(frozen=True)
class Sizes:
    workers: tuple[int, ...]
    reps: int
    warmup: float
    duration: float
    queue_depth: int
    depth_pending: int
    depth_terminal: int
    depth_cycles: int
    enqueue_batch: int
    expired: int
    capacity_workers: tuple[int, ...]
    profile_cycles: int
    renewals: int
    status_finished: int = 1_000_000


FULL = Sizes(
    (1, 2, 4, 8),
    3,
    1.5,
    5.0,
    40_000,
    1_000_000,
    1_000_000,
    400,
    10_000,
    1_000,
    (1, 4),
    2_000,
    3_000,
)
QUICK = Sizes(
    (1, 2, 4, 8), 1, 0.3, 1.0, 5_000, 20_000, 20_000, 100, 2_000, 100, (1, 4), 200, 300, 20_000
)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def rotated(items: tuple[str, ...], by: int) -> list[str]:
    """The paths in a different order each time, so none always runs first."""
    return [items[(i + by) % len(items)] for i in range(len(items))]


def cycles_table(sizes: Sizes, results: dict[tuple[str, int], Measurement]) -> list[str]:
    lines = [
        "| workers | path | cycles/s | ratio to floor | ratio to sql | p50 claim ms | p99 claim ms | p50 ratio to floor | target |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for workers in sizes.workers:
        floor = results["floor", workers]
        for path in PATHS:
            m = results[path, workers]
            ratio = m.cycles_per_s / floor.cycles_per_s
            to_sql = m.cycles_per_s / results["sql", workers].cycles_per_s
            verdict = ""
            if (target := TARGETS[path]) is not None:
                versus, least = target
                reached = m.cycles_per_s / results[versus, workers].cycles_per_s
                verdict = f">= {least} of {versus}: {'met' if reached >= least else 'MISSED'}"
            lines.append(
                f"| {workers} | {path} | {m.cycles_per_s:.0f} | {ratio:.2f} | {to_sql:.2f} | {m.p50_ms:.2f} | "
                f"{m.p99_ms:.2f} | {m.p50_ms / floor.p50_ms:.2f} | {verdict} |"
            )
    return lines


def renewal_lines(renewals: dict[str, float]) -> list[str]:
    bare = renewals["bare UPDATE"]
    lines = []
    for call, rate in renewals.items():
        ratio = rate / bare
        verdict = (
            ""
            if call == "bare UPDATE"
            else f">= {RENEWAL_TARGET}: {'met' if ratio >= RENEWAL_TARGET else 'MISSED'}"
        )
        lines.append(f"| {call} | {rate:.0f} | {ratio:.2f} | {verdict} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes and short runs")
    sizes = QUICK if parser.parse_args().quick else FULL
    began = time.perf_counter()
    with embedded_postgres(fsync=True) as server:
        report = benchmark(server, sizes)
    elapsed = time.perf_counter() - began
    report.append(f"\nThe whole run took {elapsed:.0f} s.")
    text = "\n".join(report) + "\n\n" + WHERE_THE_TIME_GOES.read_text()
    print(text)
    if sizes is FULL:  # a quick run only prints: bench/results.md keeps the last full run
        RESULTS.write_text(text)
        log(f"wrote {RESULTS}")


def benchmark(server: EmbeddedPostgres, sizes: Sizes) -> list[str]:
    log("creating the databases")
    main_db = scenarios.fresh_database(server, "bench", floor=True)
    facts = scenarios.settings(main_db)
    if facts["fsync"] != "on" or facts["synchronous_commit"] != "on":
        raise RuntimeError(f"the benchmark needs fsync and synchronous_commit on: {facts}")
    queues = {
        "floor": scenarios.Queue(main_db, "floor.job", "cc"),
        "sql": scenarios.Queue(main_db, "tireless.job", "cc"),
        "capped": scenarios.Queue(main_db, "tireless.job", "capped"),
    }
    queues["adapter"] = queues["sql1"] = queues["adapter1"] = queues["sql"]
    with psycopg.connect(main_db, autocommit=True) as conn:
        conn.execute("SELECT tireless.set_lane_capacity('capped', 1000000)")
    for queue in queues.values():
        queue.top_up(sizes.queue_depth)
    scenarios.settle(main_db)

    # Claim and finish: the paths alternate within each repetition and worker count.
    updates_before = scenarios.table_updates(main_db)
    samples: dict[tuple[str, int], list[Measurement]] = {}
    for rep in range(sizes.reps):
        for n, workers in enumerate(sizes.workers):
            for path in rotated(PATHS, rep + n):
                queues[path].top_up(sizes.queue_depth)
                lane = queues[path].lane
                run = Run(path, main_db, lane, workers, sizes.warmup, sizes.duration)
                m = measure(run)
                samples.setdefault((path, workers), []).append(m)
                log(
                    f"rep {rep + 1} workers {workers} {path:8} {m.cycles_per_s:7.0f}/s p50 {m.p50_ms:.2f} ms"
                )
    results = {key: median_of(values) for key, values in samples.items()}
    upd, hot = (
        after - before
        for after, before in zip(scenarios.table_updates(main_db), updates_before, strict=True)
    )

    # Lane capacity: the same cycle on a lane with a capacity (never reached) and on one with none.
    capacity: dict[tuple[str, int], list[Measurement]] = {}
    for rep in range(sizes.reps):
        for workers in sizes.capacity_workers:
            for path in rotated(("sql", "capped"), rep):
                queues[path].top_up(sizes.queue_depth)
                run = Run("sql", main_db, queues[path].lane, workers, sizes.warmup, sizes.duration)
                capacity.setdefault((path, workers), []).append(measure(run))
    log("capacity measured")

    # Enqueue: a batch of new issues, then the same poll again.
    polls = [
        scenarios.enqueue_rates(main_db, sizes.enqueue_batch, rep) for rep in range(sizes.reps)
    ]
    log("enqueue measured")

    # Renewals: renew_claim and heartbeat against a bare UPDATE of the lease.
    renewals = scenarios.renewal_rates(main_db, sizes.renewals, sizes.reps)
    log("renewals measured")

    # Profile: per-function time of one worker's cycles.
    profile = scenarios.function_profile(main_db, sizes.profile_cycles)

    # Depth: a small queue with no history against a deep queue with a long history.
    log(f"loading {sizes.depth_pending} pending and {sizes.depth_terminal} finished jobs")
    loaded = time.perf_counter()
    small_db = scenarios.fresh_database(server, "depth_small")
    big_db = scenarios.fresh_database(server, "depth_big")
    scenarios.load_depth(big_db, sizes.depth_pending, sizes.depth_terminal)
    small_queue = scenarios.Queue(small_db, "tireless.job", "cc")
    small_queue.top_up(1_000)
    scenarios.settle(small_db)
    load_seconds = time.perf_counter() - loaded
    warmup = sizes.depth_cycles // 4
    depth_small, depth_big = [], []
    for _ in range(sizes.reps):
        small_queue.top_up(1_000)
        depth_small.append(scenarios.claim_p50(small_db, warmup, sizes.depth_cycles))
        depth_big.append(scenarios.claim_p50(big_db, warmup, sizes.depth_cycles))
    log("depth measured")

    reads = {
        "claim_next": scenarios.job_reads_during(
            big_db, "SELECT id FROM tireless.claim_next('plans', '{cc}')"
        ),
        "enqueue": scenarios.job_reads_during(
            big_db, "SELECT tireless.enqueue(%s)", [scenarios.issues("work", sizes.enqueue_batch)]
        ),
    }
    sweep = scenarios.sweep(big_db, sizes.expired, sizes.reps)
    reads["expire_stale_claims"] = sweep.job_reads
    log("sweeper measured")

    # tireless status: 1,000 live jobs under 1,000 finished ones of the last day, and under
    # status_finished finished ones of the last year.
    short_db = scenarios.fresh_database(server, "status_short")
    long_db = scenarios.fresh_database(server, "status_long")
    scenarios.load_history(short_db, 1_000, 1_000, "1 day")
    scenarios.load_history(long_db, 1_000, sizes.status_finished, "365 days")
    status = (
        statistics.median(scenarios.status_p50(short_db, 50) for _ in range(sizes.reps)),
        statistics.median(scenarios.status_p50(long_db, 50) for _ in range(sizes.reps)),
    )
    log("status measured")

    return render(
        sizes,
        facts,
        results,
        hot,
        upd,
        capacity,
        polls,
        renewals,
        profile,
        (depth_small, depth_big, load_seconds),
        sweep,
        reads,
        status,
    )


def render(
    sizes: Sizes,
    facts: dict[str, str],
    results: dict[tuple[str, int], Measurement],
    hot: int,
    upd: int,
    capacity: dict[tuple[str, int], list[Measurement]],
    polls: list[tuple[float, float]],
    renewals: dict[str, float],
    profile: list[tuple[str, int, float, float]],
    depth: tuple[list[float], list[float], float],
    sweep: scenarios.Sweep,
    reads: dict[str, list[str]],
    status: tuple[float, float],
) -> list[str]:
    depth_small, depth_big, load_seconds = depth
    small, big = statistics.median(depth_small), statistics.median(depth_big)
    first = statistics.median(p[0] for p in polls)
    again = statistics.median(p[1] for p in polls)
    mode = "quick run (`make bench QUICK=1`)" if sizes is QUICK else "full run (`make bench`)"
    lines = [
        "# tireless benchmark results",
        "",
        f"A {mode}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC. Machine: {os.cpu_count()} cores. "
        f"PostgreSQL {facts['server_version']}: fsync={facts['fsync']}, "
        f"synchronous_commit={facts['synchronous_commit']}, full_page_writes={facts['full_page_writes']}, "
        f"shared_buffers={facts['shared_buffers']}.",
        "",
        f"Every figure is the median of {sizes.reps} repetition(s); the paths alternate inside each "
        f"repetition. A cycle is one claim and one finish (each its own transaction, or one for sql1 and adapter1), by worker processes "
        f"with one connection each, {sizes.warmup:g} s of warm-up then {sizes.duration:g} s measured, "
        f"with {sizes.queue_depth} pending jobs at the start.",
        "",
        "## Claim and finish",
        "",
        "floor: a hand-written table, `UPDATE ... FROM (SELECT ... FOR UPDATE SKIP LOCKED LIMIT 1)` then one "
        "UPDATE. sql: `tireless.claim_next` then `tireless.transition(..., 'delivered')`. adapter: "
        "`JobStore.claim_next` then `JobStore.transition`. sql1 and adapter1: one round trip per "
        "cycle, `tireless.finish_and_claim` (by SQL, by `JobStore`) finishing the job and claiming the "
        "next in one transaction; their claim latency is that call's.",
        "",
        *cycles_table(sizes, results),
        "",
        "## Depth",
        "",
        "| queue | claim p50 ms | ratio | target |",
        "|---|---:|---:|---|",
        f"| 1000 pending, no history | {small:.2f} | 1.00 | |",
        f"| {sizes.depth_pending} pending, {sizes.depth_terminal} finished jobs and their history | "
        f"{big:.2f} | {big / small:.2f} | <= 1.3: {'met' if big / small <= 1.3 else 'MISSED'} |",
        "",
        f"One worker, {sizes.depth_cycles} claim-and-deliver cycles per repetition. Loading the deep "
        f"table (INSERT ... SELECT generate_series, then VACUUM ANALYZE) took {load_seconds:.0f} s.",
        "",
        "## Enqueue",
        "",
        "| call | issues/s |",
        "|---|---:|",
        f"| enqueue of {sizes.enqueue_batch} new issues in one call | {first:.0f} |",
        f"| the same poll again (creates nothing) | {again:.0f} |",
        "",
        "## Renewing a lease",
        "",
        f"One worker holding 100 claims, {sizes.renewals} renewals per path and repetition, one call "
        "per transaction, the paths alternating.",
        "",
        "| call | renewals/s | ratio to the bare UPDATE | target |",
        "|---|---:|---:|---|",
        *renewal_lines(renewals),
        "",
        "## expire_stale_claims",
        "",
        f"On a table of {sizes.depth_pending + sizes.depth_terminal} jobs: {sweep.per_call_ms:.1f} ms per "
        f"call that moves {sizes.expired} expired claims; {sweep.idle_call_ms:.2f} ms per call with "
        "nothing to move.",
        "",
        "## How the functions read tireless.job on the deep table",
        "",
        "Every plan node inside the call that reads tireless.job (auto_explain, nested statements):",
        "",
        *(f"- {call}: {', '.join(nodes)}" for call, nodes in reads.items()),
        "",
        (
            "No sequential scan of tireless.job."
            if not any("Seq Scan" in n for nodes in reads.values() for n in nodes)
            else "A SEQUENTIAL SCAN of tireless.job: see above."
        ),
        "",
        "## tireless status",
        "",
        "The query `tireless status` runs (lane_status and queue_stats: live jobs, and the terminal "
        "jobs of the last 24 hours through the index terminal_jobs_by_change), median of 50 runs.",
        "",
        "| history | status p50 ms | ratio | target |",
        "|---|---:|---:|---|",
        f"| 1000 live, 1000 finished in the last day | {status[0]:.2f} | 1.00 | |",
        f"| 1000 live, {sizes.status_finished} finished over a year | {status[1]:.2f} | "
        f"{status[1] / status[0]:.2f} | <= 1.5: {'met' if status[1] / status[0] <= 1.5 else 'MISSED'} |",
        "",
        "## HOT updates",
        "",
        f"During the claim-and-finish runs, {hot} of {upd} updates to tireless.job were HOT "
        f"({100 * hot / max(upd, 1):.1f} %).",
        "",
        "## Lane capacity",
        "",
        "| workers | lane | cycles/s | claim p50 ms | ratio to no capacity |",
        "|---:|---|---:|---:|---:|",
    ]
    for workers in sizes.capacity_workers:
        plain = median_of(capacity["sql", workers])
        capped = median_of(capacity["capped", workers])
        lines.append(
            f"| {workers} | no capacity | {plain.cycles_per_s:.0f} | {plain.p50_ms:.2f} | 1.00 |"
        )
        lines.append(
            f"| {workers} | capacity set | {capped.cycles_per_s:.0f} | {capped.p50_ms:.2f} | "
            f"{capped.cycles_per_s / plain.cycles_per_s:.2f} |"
        )
    lines += [
        "",
        "## Where the time goes inside the functions",
        "",
        f"One worker, {sizes.profile_cycles} cycles through SQL with `track_functions = all` "
        "(`pg_stat_user_functions`; SQL functions that are inlined do not appear).",
        "",
        "| function | calls | total ms per call | self ms per call |",
        "|---|---:|---:|---:|",
        *(f"| {name} | {calls} | {total:.3f} | {own:.3f} |" for name, calls, total, own in profile),
    ]
    return lines


if __name__ == "__main__":
    main()
