"""`make run`'s demo in its small form against the test database, its issues on the stand-in
forge and read by `tireless poll --every 1s`: every job it creates settles, each ends as
examples/agent.sh says it should, the job whose runner the demo kills mid-job comes back through
the sweeper and is delivered by a second attempt, the issue closed while pending and the one
closed while its agent ran end cancelled, the delivered issue is run again only once its mode
label was taken off and put back, and a review requesting changes on a pull request makes one
revision job whose push is a second commit of the same pull request; a plan job's three steps
become issues, and the second's job waits on the first until that is closed. The workers run with
--deliver: each implement job that changed its workspace ends as a branch tireless pushed and a
pull request the mirror opened (the demo exits 1 otherwise), one that changed nothing as
`no change`, and plan and discover jobs push nothing. Where Claude Code or OpenCode is installed or
installable, lane real runs it on one more issue: its job is delivered as one pull request, and
the output says which CLI and version made it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from dev.demo import (
    CRASH_ISSUE,
    PLAN_STEPS,
    POLLS_AFTER_DELIVERY,
    REPLACEMENT,
    REVIEWED_ISSUE,
    REVIEWER,
    WORKERS,
)
from dev.demo_agent import LANE as REAL_LANE
from dev.demo_agent import NOTE as REAL_NOTE
from tests.conftest import Database
from tests.helpers import history

PLANNED_ISSUE = 13  # the small demo's: after the 10 examples, the unserved issue and the long job


def test_the_small_demo_settles_every_job_and_recovers_the_crashed_one(
    db: Database, tmp_path: Path
) -> None:
    env = os.environ | {
        "DATABASE_URL": db.url,
        "TIRELESS_DEMO_SIZE": "small",
        "TIRELESS_DEMO_TIMEOUT": "120",
        "TIRELESS_DEMO_BIND": "127.0.0.1:0",
    }
    demo = [sys.executable, "-m", "dev.demo"]
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
    # 13's plan became three issues (numbered after it, among the pull requests), each delivered;
    # the second's job waited on the first until the demo closed it.
    with db.connect() as conn:
        steps = [
            number
            for (number,) in conn.execute(
                "SELECT t.child_number FROM tireless.plan_task t JOIN tireless.job j"
                " ON j.id = t.job_id WHERE j.number = %s ORDER BY t.task",
                (PLANNED_ISSUE,),
            )
        ]
    assert len(steps) == PLAN_STEPS
    # Lane real's issue (after 13), when a real CLI ran it; else the demo says why there is none.
    real = re.findall(
        rf"^lane {REAL_LANE} runs (\S+) (\S+) on #(\d+) against the model stand-in$",
        result.stdout,
        re.M,
    )
    if not real:
        assert "no real agent in this run (" in result.stdout
    real_issues = [int(number) for _, _, number in real]
    first, second, third = steps
    assert all(outcomes.pop(step) == ["delivered"] for step in steps)
    # The plan's comment lists them, edited by the mirror as they were delivered.
    assert f"      - [x] #{second} Search: add a search function — delivered" in result.stdout
    assert (
        f"#{PLANNED_ISSUE}: its plan became #{first}, #{second} and #{third}; #{second}'s job"
        f" {jobs[second][0][0]} was 'waiting on #{first}' until #{first} closed, then delivered"
    ) in result.stdout
    # Issue 9 asks for no work; 5 always fails, so its 3 attempts are spent; 3 fails once; 6's
    # runner is killed, so its first attempt ends when the lease does. Issue 1 is delivered, the
    # mirror takes its mode label off, a human puts it back: a second job. 4's pull request gets a
    # review that requests changes: a second job, its revision. 11 waits in lane gm until it is
    # closed; 12's agent runs until its issue is closed.
    assert outcomes == {n: ["delivered"] for n in (2, 3, 6, 7, 8, 10)} | {
        1: ["delivered", "delivered"],
        REVIEWED_ISSUE: ["delivered", "delivered"],
        5: ["failed"],
        11: ["cancelled"],
        12: ["cancelled"],
        PLANNED_ISSUE: ["delivered"],
    } | {number: ["delivered"] for number in real_issues}
    assert attempts[5] == 3
    assert attempts[3] >= 2
    assert attempts[CRASH_ISSUE] == 2
    assert jobs[11][0][3] == "issue closed"
    assert jobs[12][0][3] == "issue closed"
    assert attempts[12] == 1  # a cancel is not a failure: not retried
    assert f"{14 + len(real)} delivered, 1 failed, 2 cancelled" in result.stdout
    assert "closed #11 on the forge while its job" in result.stdout
    assert "closed #12 on the forge while worker-" in result.stdout
    assert f"#1: {POLLS_AFTER_DELIVERY} polls since its job" in result.stdout
    assert "the mirror took tireless/plan off; put it back" in result.stdout
    # The forge shows each issue's last state and one comment per finished job.
    assert "#5 'Speed up the cold start' (open): tireless, tireless/state/failed" in result.stdout
    assert "    tireless: failed after 3 attempts: worker-" in result.stdout
    # ... only once the mirror has caught up: each issue shown carries its last job's state.
    assert "the mirror has written every job's state and pull request" in result.stdout
    shown = re.findall(
        r"^#(\d+) '.*' \((?:open|closed)\): .*tireless/state/(\w+)", result.stdout, re.M
    )
    assert len(shown) == 8
    for number, state in shown:
        assert state == outcomes[int(number)][-1], f"#{number} shows {state}"

    # The implement jobs: 3 (on its second attempt), 4 and 8 changed their workspace, so tireless
    # pushed tireless/<number> and the mirror opened a pull request (8's a draft: its agent said
    # ::draft::); 7 changed nothing; 4's revision pushed to the same branch, updating its pull
    # request. Plan and discover jobs, and the cancelled ones, pushed nothing.
    with db.connect() as conn:
        deliveries = conn.execute(
            "SELECT j.number, j.id, j.note, d.changed, d.branch, d.pull_number, d.draft"
            " FROM tireless.deliveries d JOIN tireless.job j ON j.id = d.job_id ORDER BY j.id"
        ).fetchall()
        lanes = conn.execute("SELECT lane, number FROM tireless.job ORDER BY id").fetchall()
    pulls = {number: pull for number, _, _, changed, _, pull, _ in deliveries if changed}
    assert sorted(row[0] for row in deliveries) == sorted([3, 4, 4, 7, 8, *steps, *real_issues])
    for number, job_id, note, changed, branch, pull, draft in deliveries:
        if number == 7:
            assert (note, changed, branch, pull) == ("no change", False, None, None)
            assert "#7: job 7 delivered with no change: no branch, no pull request" in result.stdout
            continue
        assert (note, changed, branch, draft) == (None, True, f"tireless/{number}", number == 8)
        assert pull > PLANNED_ISSUE, (
            "a pull request is numbered after the issues (Gitea's sequence)"
        )
        named = f"#{number}: job {job_id} delivered as {'draft ' if draft else ''}PR #{pull}"
        assert f"{named} (branch tireless/{number})" in result.stdout
    assert len(set(pulls.values())) == 3 + len(steps) + len(real)
    # The real CLI's job ran in its lane, and the story names the CLI, its version and its pull
    # request (issue 46, item 5).
    for profile, version, number in real:
        assert [lane for lane, in_lane in lanes if in_lane == int(number)] == [REAL_LANE]
        assert re.search(
            rf"^#{number}: {re.escape(profile)} {re.escape(version)} \(\S+\) wrote"
            rf" {re.escape(REAL_NOTE)} with its own tools against the model stand-in"
            rf" \([1-9]\d* model request\(s\), through the gateway\): PR #{pulls[int(number)]}$",
            result.stdout,
            re.M,
        )
    # The review round: carol's review made one revision job, which pushed a second commit to the
    # same pull request (both deliveries of #4 name it) and answered the inline comment.
    (first, revision) = [job_id for job_id, _, _, _ in jobs[REVIEWED_ISSUE]]
    assert {pull for number, *_, pull, _ in deliveries if number == REVIEWED_ISSUE} == {
        pulls[REVIEWED_ISSUE]
    }
    made = history(db, revision)[0]
    assert re.fullmatch(
        rf"revision 1 of #{REVIEWED_ISSUE}, asked by {REVIEWER} in review \d+", made[4]
    )
    assert f"job {first} delivered as PR #{pulls[REVIEWED_ISSUE]}" in result.stdout
    assert f"; job {revision} revised it" in result.stdout
    assert re.search(
        rf"^#{REVIEWED_ISSUE}: review \d+ by {REVIEWER} asked for a change; revision job {revision}"
        rf" pushed a second commit to PR #{pulls[REVIEWED_ISSUE]} \(tireless/{REVIEWED_ISSUE} at"
        rf" \w+: notes/{REVIEWED_ISSUE}\.md answers the comment\)$",
        result.stdout,
        re.M,
    )
    # The issue's comment names its pull request, and quotes the agent's report.
    assert (
        f"    tireless: delivered as #{pulls[3]} (branch `tireless/3`) after 2 attempts;"
        " report: Added notes/3.md and a line to CHANGELOG.md."
    ) in result.stdout
    assert "; report: A plan for #1, from the 3 files of example/widgets at " in result.stdout
    assert (tmp_path / ".tireless" / "state" / "workspaces").is_dir()

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
