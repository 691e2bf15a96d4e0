"""The failover run (`make failover`): real `tireless work` processes and a `tireless sweep --every`
on a multi-host DSN (a primary, then its streaming standby: dev/replicas.py) work
through jobs whose COMMAND records each run; the primary is killed (`kill -9`) or hung (SIGSTOP)
and the standby promoted. Each scenario runs three times and prints the recovery (from the
`pg_ctl promote` command to the first job claimed on the new primary) against the time the
promotion took, with the medians, and the checker's verdict: no finish a worker logged as
delivered lost, no job's COMMAND run twice, every job delivered, and no tireless process
restarted (nobody restarts them: a process that exited is a failure). Last, the throughput of
synchronous against asynchronous replication.

    python -m dev.failover [--runs 3] [--scenario NAME ...]

Exits 1 when an invariant breaks; a time goal missed is printed, not an error.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import psycopg

from dev.replicas import DBNAME, ReplicaPair
from tireless import DiscoveredIssue, JobStore

FORGE, OWNER, REPO = "failover", "acme", "widgets"
LABELS = ("tireless", "tireless/implement")
LANE = "cc"
LEASE_SECONDS = 60
"""Longer than the slowest promotion (45 s): a worker whose renewals are retried keeps its job."""
SETTLE_SECONDS = LEASE_SECONDS + 60.0
"""After the promotion, how long every job has to end delivered (a lost finish waits its lease)."""
AGENT = (
    'printf "start %s %s %s.%s %s\\n" "$TIRELESS_JOB_ID" "$TIRELESS_ATTEMPT" $$ "$(date +%s%N)"'
    ' "${TIRELESS_ATTEMPT_ID:-}"'
    ' >> "$0"; sleep "$1";'
    ' printf "end %s %s %s\\n" "$TIRELESS_JOB_ID" "$TIRELESS_ATTEMPT" $$ >> "$0"'
)
"""COMMAND: appends a line when it starts (job, attempt, a mark no other run has, the attempt's id)
and one when it ends, to the file named by its first argument, and sleeps its second in between."""
ACKNOWLEDGED = re.compile(r"(\S+): delivered job (\d+)$", re.MULTILINE)
"""A worker's log line once the store answered its finish as delivered."""
IDLE = "waiting for work in"
THROUGHPUT_JOBS = 500


@dataclass(frozen=True, slots=True)
class Scenario:
    """One failover: the fault, when the standby is promoted, and the fleet's load."""

    name: str
    title: str
    fault: Literal["kill", "hang"] = "kill"
    promote_after: float = 2.0
    idle: bool = False
    """No job in flight at the fault; the jobs are enqueued just after the promotion."""
    synchronous: str | None = "on"
    lag: float = 0.0
    jobs: int = 60
    workers: int = 3
    job_seconds: float = 0.3
    goal: float | None = 2.0
    """The recovery the issue asks for, in seconds after the promotion (None: none set)."""
    settle: float = SETTLE_SECONDS
    """After the promotion, how long every job has to end delivered."""


SCENARIOS = (
    Scenario("busy", "busy workers, primary killed, promoted 2 s later"),
    Scenario("idle", "idle workers, primary killed, jobs enqueued after the promotion", idle=True),
    Scenario("hung", "hung primary (SIGSTOP, never resumed), promoted 2 s later", "hang", goal=10),
    Scenario("slow", "busy workers, primary killed, promoted 45 s later", promote_after=45, goal=None),
    Scenario(
        "lagging",
        "synchronous (remote_apply), standby 1 s behind, primary killed, promoted 2 s later",
        synchronous="remote_apply", lag=1.0, jobs=24, goal=None,
    ),
)  # fmt: skip


@dataclass
class Findings:
    """What the checker found in one run: each list names the jobs that broke the promise."""

    lost: list[int] = field(default_factory=list)
    """A finish a worker logged as delivered that the new primary does not hold."""
    twice: list[int] = field(default_factory=list)
    """Jobs whose COMMAND started more than once."""
    undelivered: list[int] = field(default_factory=list)
    restarted: list[str] = field(default_factory=list)
    """The tireless processes that exited (with their exit codes)."""
    repeated_attempts: list[int] = field(default_factory=list)
    """Jobs with two runs under one TIRELESS_ATTEMPT (reported, not an invariant)."""
    acknowledged: int = 0
    """The finishes the workers logged as delivered: what the first invariant checked."""
    jobs: int = 0

    def problems(self) -> list[str]:
        found = [
            f"{len(self.lost)} acknowledged finish(es) lost (jobs {_ids(self.lost)})",
            f"{len(self.twice)} job(s) whose COMMAND ran twice (jobs {_ids(self.twice)})",
            f"{len(self.undelivered)} job(s) not delivered (jobs {_ids(self.undelivered)})",
            f"{len(self.restarted)} process(es) exited: {', '.join(self.restarted)}",
        ]
        counts = (self.lost, self.twice, self.undelivered, self.restarted)
        return [line for line, items in zip(found, counts, strict=True) if items]


def _ids(jobs: Sequence[int]) -> str:
    shown = ", ".join(map(str, jobs[:10]))
    return shown + (f", … {len(jobs) - 10} more" if len(jobs) > 10 else "")


def check(
    worker_logs: Sequence[str],
    runs: Sequence[str],
    deliveries: Sequence[tuple[str, int]],
    states: dict[int, str],
    exited: Sequence[str],
) -> Findings:
    """The verdict from what the workers logged, the lines COMMAND recorded, the delivered events
    of the new primary (worker, job) and each job's state there, and the processes that exited."""
    acknowledged = Counter(
        (worker, int(job)) for log in worker_logs for worker, job in ACKNOWLEDGED.findall(log)
    )
    held = Counter(deliveries)
    lost = sorted({job for (worker, job), n in acknowledged.items() if n > held[(worker, job)]})
    starts = [line.split()[1:3] for line in runs if line.startswith("start ")]
    per_job = Counter(int(job) for job, _ in starts)
    per_attempt = Counter((int(job), attempt) for job, attempt in starts)
    return Findings(
        lost=lost,
        twice=sorted(job for job, n in per_job.items() if n > 1),
        undelivered=sorted(job for job, state in states.items() if state != "delivered"),
        restarted=list(exited),
        repeated_attempts=sorted({job for (job, _), n in per_attempt.items() if n > 1}),
        acknowledged=acknowledged.total(),
        jobs=len(states),
    )


@dataclass
class Trial:
    """One run of a scenario."""

    promote_seconds: float
    recovery: float | None
    """From the `pg_ctl promote` command to the first claim on the new primary; None: none."""
    findings: Findings
    logs: Path


def wait_until(condition: Callable[[], bool], what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout:.0f}s for {what}")
        time.sleep(0.05)


class Fleet:
    """The real processes, started once and never restarted: workers and one sweeper, all on
    the pair's multi-host DSN. Each logs to its own file."""

    def __init__(self, dsn: str, logs: Path, workers: int, job_seconds: float) -> None:
        self.logs, self.runs = logs, logs / "runs.txt"
        tireless = [sys.executable, "-m", "tireless"]
        self.commands = {
            f"worker-{n}": [
                *tireless, "work", "--worker", f"failover-{n}", "--lane", LANE,
                "--lease", f"{LEASE_SECONDS}s", "--grace", "1s", "--sandbox", "none",
                "--", "sh", "-c", AGENT, str(self.runs), str(job_seconds),
            ]
            for n in range(workers)
        }  # fmt: skip
        self.commands["sweeper"] = [*tireless, "sweep", "--every", "1s"]
        self.environment = os.environ | {"DATABASE_URL": dsn}
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def start(self) -> None:
        """Start every process; return once each worker waits for work."""
        self.runs.touch()
        for name, command in self.commands.items():
            with (self.logs / f"{name}.log").open("wb") as log:
                self.processes[name] = subprocess.Popen(
                    command, env=self.environment, stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, start_new_session=True,
                )  # fmt: skip
        workers = [name for name in self.commands if name.startswith("worker-")]
        wait_until(
            lambda: all(IDLE in self.log(name) for name in workers) or bool(self.exited()),
            "the workers to wait for work",
            60,
        )
        if exited := self.exited():
            raise RuntimeError(f"a process of the fleet did not start: {', '.join(exited)}")

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")

    def worker_logs(self) -> list[str]:
        return [self.log(name) for name in self.commands if name.startswith("worker-")]

    def exited(self) -> list[str]:
        return [
            f"{n} (exit {p.returncode})" for n, p in self.processes.items() if p.poll() is not None
        ]

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM to every process; SIGKILL to those still running `timeout` seconds later (a
        worker stuck on a hung primary's connection)."""
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for process in self.processes.values():
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def set_up(conninfo: str) -> None:
    """The forge and repository the jobs belong to (never polled: the jobs are enqueued here)."""
    with JobStore(conninfo) as store:
        store.add_forge(FORGE, "gitea", f"https://{FORGE}.invalid")
        store.track_repo(FORGE, OWNER, REPO)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(
            "SELECT 1 FROM tireless.set_policy(backoff_base => '0', backoff_cap => '0',"
            " breaker_threshold => 1000000)"
        )


def enqueue(conninfo: str, numbers: range) -> None:
    issues = [DiscoveredIssue(FORGE, OWNER, REPO, n, labels=LABELS) for n in numbers]
    with JobStore(conninfo) as store:
        store.enqueue(issues)


def count(conninfo: str, state: str) -> int:
    with psycopg.connect(conninfo, autocommit=True, connect_timeout=5) as conn:
        row = conn.execute(
            "SELECT count(*) FROM tireless.job WHERE state = %s", (state,)
        ).fetchone()
    return 0 if row is None else int(row[0])


def outcome(
    conninfo: str, promoted_at: float
) -> tuple[float | None, list[tuple[str, int]], dict[int, str]]:
    """On the new primary: the first claim after the promotion began (seconds after it), the
    delivered events (worker, job), and each job's state."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        first = conn.execute(
            "SELECT extract(epoch FROM min(at))::float8 FROM tireless.job_event"
            " WHERE to_state = 'claimed' AND at >= to_timestamp(%s)",
            (promoted_at,),
        ).fetchone()
        deliveries = conn.execute(
            "SELECT worker, job_id FROM tireless.job_event WHERE to_state = 'delivered'"
        ).fetchall()
        states: dict[int, str] = dict(
            conn.execute("SELECT id, state::text FROM tireless.job").fetchall()
        )
    recovery = None if first is None or first[0] is None else first[0] - promoted_at
    return recovery, [(w, int(j)) for w, j in deliveries], states


def run_trial(scenario: Scenario, logs: Path) -> Trial:
    """One failover of the scenario, checked."""
    with ReplicaPair(synchronous=scenario.synchronous, lag=scenario.lag) as pair:
        old, new = pair.primary.conninfo(DBNAME), pair.active_standby.conninfo(DBNAME)
        set_up(old)
        fleet = Fleet(pair.dsn(), logs, scenario.workers, scenario.job_seconds)
        try:
            fleet.start()
            before = 6 if scenario.idle else scenario.jobs
            enqueue(old, range(1, before + 1))
            if scenario.idle:  # every job done and none in flight: the fleet is idle
                wait_until(lambda: count(old, "delivered") == before, "the first jobs", 60)
            else:  # mid-run: some delivered, every worker on a job
                wait_until(
                    lambda: (
                        count(old, "delivered") >= scenario.jobs // 4
                        and count(old, "claimed") >= scenario.workers
                    ),
                    "the fleet to be busy",
                    60,
                )
            if scenario.fault == "kill":
                pair.kill_primary()
            else:
                pair.hang_primary()
            time.sleep(scenario.promote_after)  # the operator's delay: the scenario, not a sync
            promoted_at = time.time()
            promote_seconds = pair.promote()
            if scenario.idle:
                enqueue(new, range(before + 1, scenario.jobs + 1))
            with suppress(TimeoutError):  # the checker names the jobs not delivered
                wait_until(
                    lambda: count(new, "delivered") == scenario.jobs,
                    "every job to be delivered",
                    scenario.settle,
                )
            recovery, deliveries, states = outcome(new, promoted_at)
            exited = fleet.exited()
        finally:
            fleet.stop()
    findings = check(
        fleet.worker_logs(), fleet.runs.read_text().splitlines(), deliveries, states, exited
    )
    return Trial(promote_seconds, recovery, findings, logs)


def throughput(synchronous: str | None, logs: Path, workers: int = 4) -> float:
    """Jobs delivered per second by a fleet through THROUGHPUT_JOBS jobs whose COMMAND does
    nothing, from their enqueueing to the last delivery."""
    with ReplicaPair(synchronous=synchronous) as pair:
        primary = pair.primary.conninfo(DBNAME)
        set_up(primary)
        fleet = Fleet(pair.dsn(), logs, workers, 0.0)
        try:
            fleet.start()
            began = time.monotonic()
            enqueue(primary, range(1, THROUGHPUT_JOBS + 1))
            wait_until(
                lambda: count(primary, "delivered") == THROUGHPUT_JOBS, "every job delivered", 300
            )
            return THROUGHPUT_JOBS / (time.monotonic() - began)
        finally:
            fleet.stop()


@contextmanager
def _logs(name: str, kept: list[Path]) -> Iterator[Path]:
    """A directory for one run's logs; deleted unless the run is added to `kept`."""
    directory = Path(tempfile.mkdtemp(prefix=f"tireless-failover-{name}-"))
    try:
        yield directory
    finally:
        if directory not in kept:
            shutil.rmtree(directory, ignore_errors=True)


def _seconds(value: float | None) -> str:
    return "none within the wait" if value is None or math.isinf(value) else f"{value:.2f} s"


def _report(trial: Trial, problems: list[str]) -> str:
    found = trial.findings
    line = (
        f"pg_ctl promote {_seconds(trial.promote_seconds)}, recovery {_seconds(trial.recovery)}; "
    )
    line += "; ".join(problems) + f" (logs: {trial.logs})" if problems else "invariants held"
    line += f" ({found.jobs} jobs, {found.acknowledged} finishes acknowledged)"
    if found.repeated_attempts:
        line += f"; {len(found.repeated_attempts)} job(s) ran again under one TIRELESS_ATTEMPT"
    return line


def run_scenario(scenario: Scenario, runs: int) -> bool:
    """The scenario `runs` times, each printed, then the medians; False if an invariant broke."""
    print(f"\n{scenario.name}: {scenario.title}", flush=True)
    kept: list[Path] = []
    recoveries: list[float] = []  # inf: no claim within the wait
    promotions: list[float] = []
    held = True
    for n in range(1, runs + 1):
        with _logs(scenario.name, kept) as logs:
            trial = run_trial(scenario, logs)
            problems = trial.findings.problems()
            if problems:
                kept.append(logs)
                held = False
        recoveries.append(math.inf if trial.recovery is None else trial.recovery)
        promotions.append(trial.promote_seconds)
        print(f"  run {n}: {_report(trial, problems)}", flush=True)
    median = statistics.median(recoveries)
    verdict = ""
    if scenario.goal is not None:
        met = median <= scenario.goal
        verdict = f" (goal <= {scenario.goal:g} s: {'met' if met else 'MISSED'})"
    print(
        f"  median: recovery {_seconds(median)}{verdict}, pg_ctl promote"
        f" {_seconds(statistics.median(promotions))}; invariants {'held' if held else 'BROKEN'}",
        flush=True,
    )
    return held


def run_throughput(runs: int) -> None:
    print("\nthroughput: 4 workers, synchronous (on) against asynchronous replication", flush=True)
    rates: dict[str, list[float]] = {"asynchronous": [], "synchronous": []}
    for _ in range(runs):
        for mode, synchronous in (("asynchronous", None), ("synchronous", "on")):
            with _logs(f"throughput-{mode}", []) as logs:
                rates[mode].append(throughput(synchronous, logs))
    medians = {mode: statistics.median(values) for mode, values in rates.items()}
    for mode, values in rates.items():
        shown = ", ".join(f"{v:.1f}" for v in values)
        print(f"  {mode}: {shown} jobs/s (median {medians[mode]:.1f})", flush=True)
    print(f"  synchronous / asynchronous: {medians['synchronous'] / medians['asynchronous']:.2f}")


def main(argv: list[str] | None = None) -> int:
    names = [s.name for s in SCENARIOS] + ["throughput"]
    parser = argparse.ArgumentParser(prog="python -m dev.failover")
    parser.add_argument("--runs", type=int, default=3, help="runs of each scenario (default 3)")
    parser.add_argument(
        "--scenario", action="append", choices=names, help="run only these (repeat); default all"
    )
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error(f"--runs must be 1 or more, not {args.runs}")
    chosen = args.scenario or names
    held = all([run_scenario(s, args.runs) for s in SCENARIOS if s.name in chosen])
    if "throughput" in chosen:
        run_throughput(args.runs)
    print("\nevery invariant held" if held else "\nan invariant BROKE (see above)")
    return 0 if held else 1


if __name__ == "__main__":
    sys.exit(main())
