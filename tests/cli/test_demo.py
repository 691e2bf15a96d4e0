"""`make run`'s demo in its small form against the test database, its issues on the stand-in
forge and read by `tireless poll --every 1s`: every job it creates settles, each ends as
examples/agent.sh says it should, the job whose runner the demo kills mid-job comes back through
the sweeper and is delivered by a second attempt, the issue closed while pending and the one
closed while its agent ran end cancelled, and the delivered issue is run again only once its mode
label was taken off and put back."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import Database
from tests.helpers import history
from tireless.devtools.demo import CRASH_ISSUE, POLLS_AFTER_DELIVERY, REPLACEMENT, WORKERS


def test_the_small_demo_settles_every_job_and_recovers_the_crashed_one(
    db: Database, tmp_path: Path
) -> None:
    env = os.environ | {
        "DATABASE_URL": db.url,
        "TIRELESS_DEMO_SIZE": "small",
        "TIRELESS_DEMO_TIMEOUT": "120",
        "TIRELESS_DEMO_BIND": "127.0.0.1:0",
    }
    demo = [sys.executable, "-m", "tireless.devtools.demo"]
    # Its logs go to ./.tireless/logs, the dashboard's pid to ./.tireless/dashboard.pid.
    try:
        result = subprocess.run(
            demo, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, result.stdout + result.stderr
        # The dashboard outlives the demo and shows its lanes, until `make stop`.
        (dashboard,) = re.findall(r"^dashboard at (\S+) ", result.stdout, re.MULTILINE)
        assert f"the dashboard is still at {dashboard}" in result.stdout
        with urllib.request.urlopen(dashboard, timeout=30) as page:
            assert page.status == 200
            assert "gitea/example/widgets" in page.read().decode()
    finally:
        stopped = subprocess.run([*demo, "--stop"], cwd=tmp_path, env=env, capture_output=True)
    assert b"stopped the dashboard" in stopped.stdout
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(dashboard, timeout=5)
    with db.connect() as conn:
        rows = conn.execute(
            "SELECT number, id, state::text, attempts, note FROM tireless.job ORDER BY id"
        ).fetchall()
    jobs: dict[int, list[tuple[int, str, int, str | None]]] = {}
    for number, job_id, state, tries, note in rows:
        jobs.setdefault(number, []).append((job_id, state, tries, note))
    outcomes = {number: [state for _, state, _, _ in found] for number, found in jobs.items()}
    attempts = {number: found[0][2] for number, found in jobs.items()}
    # Issue 9 asks for no work; 5 always fails, so its 3 attempts are spent; 3 fails once; 6's
    # runner is killed, so its first attempt ends when the lease does. Issue 1 is delivered, the
    # mirror takes its mode label off, a human puts it back: a second job. 11 waits in lane gm until it is closed; 12's agent runs until its
    # issue is closed.
    assert outcomes == {n: ["delivered"] for n in (2, 3, 4, 6, 7, 8, 10)} | {
        1: ["delivered", "delivered"],
        5: ["failed"],
        11: ["cancelled"],
        12: ["cancelled"],
    }
    assert attempts[5] == 3
    assert attempts[3] >= 2
    assert attempts[CRASH_ISSUE] == 2
    assert jobs[11][0][3] == "issue closed"
    assert jobs[12][0][3] == "issue withdrew its request"
    assert attempts[12] == 1  # a cancel is not a failure: not retried
    assert "9 delivered, 1 failed, 2 cancelled" in result.stdout
    assert "closed #11 on the forge while its job" in result.stdout
    assert "closed #12 on the forge while worker-" in result.stdout
    assert f"#1: {POLLS_AFTER_DELIVERY} polls since its job" in result.stdout
    assert "the mirror took tireless/plan off; put it back" in result.stdout
    # The forge shows each issue's last state and one comment per finished job.
    assert "#5 'Speed up the cold start' (open): tireless, tireless/state:failed" in result.stdout
    assert "    tireless: failed after 3 attempts: worker-" in result.stdout
    # ... only once the mirror has caught up: each issue shown carries its last job's state.
    assert "the mirror has written every job's state" in result.stdout
    shown = re.findall(
        r"^#(\d+) '.*' \((?:open|closed)\): .*tireless/state:(\w+)", result.stdout, re.M
    )
    assert len(shown) == 5
    for number, state in shown:
        assert state == outcomes[int(number)][-1], f"#{number} shows {state}"

    crashed = jobs[CRASH_ISSUE][0][0]
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
