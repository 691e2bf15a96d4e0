"""The failover run's short version (dev/failover.py; `make failover` runs the long
one): a primary and its synchronous standby, real workers and a sweeper on the multi-host DSN, the
primary killed mid-run and the standby promoted; and its checker reports each broken promise."""

from __future__ import annotations

from pathlib import Path

from dev.failover import Scenario, check, run_trial

SHORT = Scenario(
    "short",
    "primary killed mid-run, promoted at once",
    promote_after=0,
    synchronous="on",
    jobs=48,
    workers=3,
    job_seconds=0.1,
    settle=25,
)
FLOWING_AGAIN = 20.0
"""Seconds from the promotion to the first job claimed on the new primary: generous, for CI."""


def test_the_checker_reports_a_lost_finish_a_second_run_a_job_not_delivered_and_an_exit() -> None:
    logs = ["12:00:01 failover-0: delivered job 1\n", "12:00:02 failover-1: delivered job 2\n"]
    runs = ["start 1 1 11.5", "end 1 1 11", "start 2 1 12.5", "end 2 1 12", "start 2 1 13.5"]
    runs += ["end 2 1 13", "start 3 1 14.5"]
    # Job 2's finish by failover-1 is not on the new primary: the re-run by failover-2 delivered it.
    deliveries = [("failover-0", 1), ("failover-2", 2)]
    states = {1: "delivered", 2: "delivered", 3: "pending"}
    found = check(logs, runs, deliveries, states, ["worker-2 (exit 4)"])
    assert (found.lost, found.twice, found.undelivered) == ([2], [2], [3])
    assert (found.restarted, found.repeated_attempts) == (["worker-2 (exit 4)"], [2])
    assert len(found.problems()) == 4

    clean = check(logs[:1], runs[:2], deliveries[:1], {1: "delivered"}, [])
    assert clean.problems() == []
    assert (clean.acknowledged, clean.jobs) == (1, 1)


def test_a_killed_primary_loses_no_finished_work_and_the_same_fleet_resumes_on_the_standby(
    tmp_path: Path,
) -> None:
    trial = run_trial(SHORT, tmp_path)
    assert trial.findings.problems() == [], f"logs in {tmp_path}"
    assert trial.findings.jobs == SHORT.jobs
    assert trial.findings.acknowledged >= SHORT.jobs // 4  # finished before the kill, and checked
    assert trial.recovery is not None
    assert trial.recovery <= FLOWING_AGAIN
