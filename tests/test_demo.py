"""`make run`'s demo in its small form against the test database: every job it creates settles,
and each ends as examples/agent.sh says it should."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import Database


def test_the_small_demo_settles_every_job_it_enqueued(db: Database, tmp_path: Path) -> None:
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
        outcomes = dict(
            conn.execute("SELECT number, state::text FROM tireless.job ORDER BY number").fetchall()
        )
        attempts = dict(conn.execute("SELECT number, attempts FROM tireless.job").fetchall())
    # Issue 9 asks for no work; 5 always fails, so its 3 attempts are spent; 3 fails once; 6
    # outlives its lease and is delivered all the same.
    assert outcomes == {n: "delivered" for n in (1, 2, 3, 4, 6, 7, 8, 10)} | {5: "failed"}
    assert attempts[5] == 3
    assert attempts[3] >= 2
    assert "8 delivered, 1 failed" in result.stdout
    assert (tmp_path / ".tireless" / "logs" / "worker-a.log").exists()
