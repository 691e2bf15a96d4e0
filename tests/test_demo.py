"""`make run`'s demo in its small form against the test database: every job it creates settles,
each ends as examples/agent.sh says it should, and the job whose runner the demo kills mid-job
comes back through the sweeper and is delivered by a second attempt."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import Database
from tests.issues import history
from tireless.demo import CRASH_ISSUE, REPLACEMENT, WORKERS


def test_the_small_demo_settles_every_job_and_recovers_the_crashed_one(
    db: Database, tmp_path: Path
) -> None:
    env = os.environ | {
        "DATABASE_URL": db.url,
        "TIRELESS_DEMO_SIZE": "small",
        "TIRELESS_DEMO_TIMEOUT": "120",
    }
    result = subprocess.run(
        [sys.executable, "-m", "tireless.demo"],
        cwd=tmp_path,  # its logs go to ./.tireless/logs
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    with db.connect() as conn:
        jobs = conn.execute("SELECT number, id, state::text, attempts FROM tireless.job").fetchall()
    outcomes = {number: state for number, _, state, _ in jobs}
    attempts = {number: tries for number, _, _, tries in jobs}
    # Issue 9 asks for no work; 5 always fails, so its 3 attempts are spent; 3 fails once; 6's
    # runner is killed, so its first attempt ends when the lease does.
    assert outcomes == {n: "delivered" for n in (1, 2, 3, 4, 6, 7, 8, 10)} | {5: "failed"}
    assert attempts[5] == 3
    assert attempts[3] >= 2
    assert attempts[CRASH_ISSUE] == 2
    assert "8 delivered, 1 failed" in result.stdout

    crashed = next(job_id for number, job_id, _, _ in jobs if number == CRASH_ISSUE)
    created, claimed, expired, reclaimed, delivered = history(db, crashed)
    victim = claimed[2]
    assert victim in WORKERS
    assert created[:4] == (None, "pending", None, 0)
    assert claimed[:4] == ("pending", "claimed", victim, 1)
    assert expired[:4] == ("claimed", "pending", victim, 1)
    assert expired[4].startswith(f"lease of {victim} expired at ")
    rescuer = reclaimed[2]
    assert rescuer in {*WORKERS, REPLACEMENT} - {victim}
    assert reclaimed[:4] == ("pending", "claimed", rescuer, 2)
    assert delivered[:4] == ("claimed", "delivered", rescuer, 2)

    assert (
        f"killed {victim} and its agent with SIGKILL while it held job {crashed}" in result.stdout
    )
    assert (
        f"job {crashed}: its runner {victim} was killed; the sweeper returned it when the lease"
        f" ran out, and attempt 2 ({rescuer}) delivered it"
    ) in result.stdout
    assert (tmp_path / ".tireless" / "logs" / f"{REPLACEMENT}.log").exists()
