"""An operator's day (issue 23), each task through the real `tireless` command (and the dashboard
where it has a button): rerun keeps what was asked, a COMMAND that cannot start costs no job,
forge trouble is visible and clearable, an admin cancels a job, durations carry units and prune
asks before a large delete, unknown issues and forges are refused, an idle worker wakes when a
backoff ends, and the smaller things: hints, rendering, --version, help text, lane settings, job
filters, whole errors, and a stand-in forge to try it all against."""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from psycopg.conninfo import make_conninfo
from starlette.testclient import TestClient

from dev.standin import StandinForge
from tests.conftest import Database
from tests.helpers import (
    FORGE,
    OWNER,
    REPO,
    claimed,
    cli_json,
    enqueue_jobs,
    issue,
    rows,
    tireless_cli,
    tireless_process,
    tracked,
    wait_until,
)
from tests.support.poll_cli import PLAN, TOKEN, TOKEN_ENV
from tests.support.roles import Login
from tests.support.web import browser
from tests.support.work import (
    agent,
    read_log_until,
    start_sleeping_agent,
    start_worker,
    state_of,
    work_args,
)
from tireless import JobStore
from tireless.cli.parse import parser
from tireless.web.app import create_app

PLAN_ON_OC = ("tireless", "tireless/plan", "tireless/agent:oc")


def job_row(db: Database, job_id: int) -> tuple[str, str, str, int, int, str | None]:
    """(state, kind, lane, attempts, given_back, note) of a job."""
    (row,) = rows(
        db,
        "SELECT state::text, kind::text, lane, attempts, given_back, note FROM tireless.job"
        " WHERE id = %(id)s",
        {"id": job_id},
    )
    return row


def finished(store: JobStore, *labels: str, lanes: tuple[str, ...] = ("cc",)) -> int:
    """Issue 1 asks with labels; its job is claimed and delivered. Its id."""
    tracked(store).enqueue([issue(1, *labels)])
    job = claimed(store, lanes=lanes)
    store.transition(job.id, "delivered", "w1")
    return job.id


# 1. rerun keeps what was asked
def test_rerun_keeps_the_kind_and_agent_the_mirror_took_off_and_kind_changes_it(
    store: JobStore, db: Database
) -> None:
    finished(store, *PLAN_ON_OC, lanes=("oc",))
    store.enqueue([issue(1, "tireless", "tireless/agent:oc")])  # the mirror took the mode off
    again = cli_json(db.url, "rerun", FORGE, OWNER, REPO, "1")
    assert job_row(db, again["job"])[:3] == ("pending", "plan", "oc")
    store.transition(again["job"], "cancelled")
    changed = cli_json(db.url, "rerun", FORGE, OWNER, REPO, "1", "--kind", "implement")
    assert job_row(db, changed["job"])[:3] == ("pending", "implement", "oc")


# 2. a COMMAND that cannot start costs no job
def test_work_refuses_a_command_it_cannot_start_before_claiming_anything(
    store: JobStore, db: Database, tmp_path: Path
) -> None:
    enqueue_jobs(store, 1)
    missing = tireless_cli(db.url, *work_args("--"), "/nonexistent/agent")
    assert missing.returncode == 5, missing.stderr
    assert "/nonexistent/agent" in missing.stderr
    script = tmp_path / "agent"
    script.write_text("echo hi\n")  # not executable
    refused = tireless_cli(db.url, *work_args("--"), str(script))
    assert refused.returncode == 5
    assert f"{script}" in refused.stderr
    assert "not executable" in refused.stderr
    assert rows(db, "SELECT state::text, attempts FROM tireless.job") == [("pending", 0)]


def test_a_command_that_fails_to_start_on_a_claimed_job_gives_it_back(
    store: JobStore, db: Database, tmp_path: Path
) -> None:
    enqueue_jobs(store, 1)
    script = tmp_path / "agent"
    script.write_text("#!/nonexistent/interpreter\n")  # executable, but exec fails: ENOENT
    script.chmod(0o755)
    result = tireless_cli(db.url, *work_args("--"), str(script))
    assert result.returncode == 5, result.stderr
    assert f"cannot start COMMAND '{script}'" in result.stderr
    (job_id,) = [r[0] for r in rows(db, "SELECT id FROM tireless.job")]
    state, _, _, attempts, given_back, note = job_row(db, job_id)
    assert (state, attempts, given_back) == ("pending", 1, 1)  # the attempt shows, unspent
    assert str(script) in (note or "")
    failures = rows(db, "SELECT coalesce(sum(consecutive_failures), 0) FROM tireless.lane")
    assert failures == [(0,)], "the breaker counted nothing"
    assert db.scalar("SELECT available_at <= now() FROM tireless.job") is True


# 3. forge trouble: visible and clearable
@pytest.fixture
def forge(db: Database) -> Iterator[StandinForge]:
    with StandinForge("gitea", token=TOKEN) as standin:
        standin.create_issue(OWNER, REPO, "a plan", PLAN)
        cli_json(db.url, "forge", "add", FORGE, "--kind", "gitea", "--url", standin.url)
        cli_json(db.url, "track", FORGE, OWNER, REPO)
        yield standin


def test_a_refused_token_names_its_variable_poll_says_it_skips_and_forge_retry_clears_it(
    db: Database, forge: StandinForge
) -> None:
    wrong = tireless_cli(db.url, "poll", "--once", TIRELESS_TOKEN_GITEA="wrong")
    assert wrong.returncode == 1
    assert "TIRELESS_TOKEN_GITEA" in wrong.stdout
    assert "tireless forge retry gitea" in wrong.stdout
    skipped = tireless_cli(db.url, "poll", "--once", **TOKEN_ENV)  # fixed, but the stop stands
    assert skipped.returncode == 1, "nothing could be read"
    assert re.search(
        r"skipped 1 repositories of forge gitea: stopped until \S+ \S+", skipped.stdout
    )
    assert "polled 0 repositories" in skipped.stdout
    retried = tireless_cli(db.url, "forge", "retry", FORGE, **TOKEN_ENV)
    assert retried.returncode == 0, retried.stdout + retried.stderr
    assert "gitea/acme/widgets: 1 new job" in retried.stdout
    assert db.scalar("SELECT limited_until IS NULL AND last_error IS NULL FROM tireless.forge")


@pytest.fixture
def admin(db: Database) -> Iterator[TestClient]:
    """The dashboard over the superuser's connection: an admin's."""
    with browser(create_app(db.conninfo)) as client:
        yield client


def csrf_of(page: str) -> str:
    match = re.search(r'name="csrf" value="([0-9a-f]{64})"', page)
    assert match is not None, "the page has no action form"
    return match.group(1)


def test_the_dashboard_retries_a_stopped_forge(
    db: Database, store: JobStore, admin: TestClient
) -> None:
    store.add_forge(FORGE, "gitea", "https://gitea.test")
    tracked(store)
    store.record_forge_trouble(FORGE, "HTTP 401", datetime.now(UTC) + timedelta(minutes=10))
    page = admin.get("/").text
    assert 'action="/forges/gitea/retry"' in page
    done = admin.post("/forges/gitea/retry", data={"csrf": csrf_of(page)}, follow_redirects=False)
    assert done.status_code == 303
    assert db.scalar("SELECT limited_until IS NULL FROM tireless.forge")
    assert db.scalar("SELECT next_poll_at <= now() FROM tireless.repo_poll")


# 4. an admin cancels a job
def test_cancel_ends_a_pending_job_and_refuses_a_finished_one(
    store: JobStore, db: Database
) -> None:
    enqueue_jobs(store, 2)
    done = cli_json(db.url, "cancel", "1", "--note", "not now")
    assert (done["state"], done["note"]) == ("cancelled", "not now")
    claimed(store)  # job 2
    store.transition(2, "delivered", "w1")
    refused = tireless_cli(db.url, "cancel", "2")
    assert refused.returncode == 1
    assert refused.stderr.startswith("tireless: TL003: job 2 is delivered")


def test_cancel_of_a_claimed_job_stops_its_runner_and_ends_it_cancelled(
    store: JobStore,
    db: Database,
    tmp_path: Path,
    worker_process: list[subprocess.Popen[str]],
) -> None:
    enqueue_jobs(store, 1)
    # A lease of 1.5 s is renewed every 0.5 s: the runner hears of the request at once.
    worker, _ = start_sleeping_agent(db, worker_process, tmp_path, "--once", "--lease", "1500ms")
    asked = tireless_cli(db.url, "cancel", "1", "--note", "wrong issue")
    assert asked.returncode == 0, asked.stderr
    assert "asked runner-1 to stop job 1" in asked.stdout
    assert worker.wait(timeout=60) == 0
    assert state_of(db, 1) == "cancelled"
    assert job_row(db, 1)[3] == 1, "one attempt: a cancel is not retried"


def test_the_dashboard_cancels_every_live_job(
    store: JobStore, db: Database, admin: TestClient
) -> None:
    enqueue_jobs(store, 2)
    held = claimed(store)
    for job_id in (2, held.id):
        page = admin.get(f"/jobs/{job_id}").text
        assert f'action="/jobs/{job_id}/cancel"' in page
        done = admin.post(f"/jobs/{job_id}/cancel", data={"csrf": csrf_of(page)})
        assert done.status_code == 200
    assert state_of(db, 2) == "cancelled"
    assert store.heartbeat(held.id, "w1").value == "cancel"


# 5. durations carry units (prune's preview and --max: tests/sql/test_prune.py)
@pytest.mark.parametrize("bad", ["90", "2mo", "15 minutes"])
def test_a_duration_without_a_known_unit_is_refused_with_an_example(db: Database, bad: str) -> None:
    result = tireless_cli(db.url, "prune", "--older-than", bad)
    assert result.returncode == 2
    assert "e.g. 90s, 15m, 2h or 30d" in result.stderr


# 6. unknown issues and forges
def test_rerun_of_an_unseen_issue_and_track_of_an_unregistered_forge_are_refused(
    store: JobStore, db: Database
) -> None:
    tracked(store)
    unseen = tireless_cli(db.url, "rerun", FORGE, OWNER, REPO, "99")
    assert unseen.returncode == 1
    assert "TL005: the store has never seen issue gitea/acme/widgets#99" in unseen.stderr
    assert "HINT: " in unseen.stderr
    nosuch = tireless_cli(db.url, "track", "nosuch", OWNER, REPO)
    assert nosuch.returncode == 1
    assert "TL008: forge 'nosuch' is not registered" in nosuch.stderr
    assert "tireless forge add nosuch" in nosuch.stderr
    assert db.scalar("SELECT count(*) FROM tireless.job") == 0
    assert db.scalar("SELECT count(*) FROM tireless.tracked_repo WHERE forge = 'nosuch'") == 0


# 7. the timed wake-up
def test_an_idle_worker_wakes_when_a_backoff_ends(
    store: JobStore,
    db: Database,
    tmp_path: Path,
    worker_process: list[subprocess.Popen[str]],
) -> None:
    enqueue_jobs(store, 1)
    with db.connect() as conn:  # backed off: no notification will say when it is ready
        conn.execute("UPDATE tireless.job SET available_at = now() + interval '6 seconds'")
    # A poll of 10 minutes: only the timed wake-up brings the job within the test's 60 s.
    worker = start_worker(
        db, worker_process, *work_args("--poll", "600s", "--"), *agent(tmp_path, "true")
    )
    read_log_until(worker, "waiting for work in cc")
    assert state_of(db, 1) == "pending", "the worker went idle before the backoff ended"
    wait_until(lambda: state_of(db, 1) == "delivered", "the job to be delivered", timeout=60)


# 8. make run shows the forge once the mirror caught up (tests/cli/test_demo.py); its poller, stopped
# mid-round, leaves no repository leased, so the demo's last rounds can read it at once.
def test_a_poller_stopped_mid_round_finishes_the_round_and_leaves_no_lease(
    db: Database, forge: StandinForge
) -> None:
    forge.hold()  # every request waits: the poller is mid-read when the signal comes
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"} | TOKEN_ENV
    command = [sys.executable, "-m", "tireless", "--database", db.url, "poll", "--every", "1s"]
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True) as poller:
        try:
            assert forge.wait_for_requests(1, timeout=30), "the poller never asked the forge"
            poller.send_signal(signal.SIGTERM)
            forge.open_gate()
            assert poller.wait(timeout=60) == 0
        finally:
            forge.open_gate()
            poller.kill()
    assert rows(db, "SELECT polled_by, poll_lease_until FROM tireless.repo_poll") == [(None, None)]
    assert db.scalar("SELECT count(*) FROM tireless.job") == 1, "the round it was in finished"


# 9. the smaller things
def help_gaps(command: argparse.ArgumentParser, name: str) -> list[str]:
    """Every argument and sub-command of a parser without help text, by its command line."""
    gaps = []
    for action in command._actions:
        if isinstance(action, argparse._SubParsersAction):
            helped = {choice.dest: choice.help for choice in action._choices_actions}
            for sub_name, sub in action.choices.items():
                if not helped.get(sub_name):
                    gaps.append(f"{name} {sub_name}")
                gaps += help_gaps(sub, f"{name} {sub_name}")
        elif not action.help or action.help == argparse.SUPPRESS:
            gaps.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    return gaps


def test_every_command_and_argument_has_help_text() -> None:
    assert help_gaps(parser(), "tireless") == []


def test_version_and_a_bare_tireless_say_what_it_is_and_can_do(db: Database) -> None:
    version = tireless_process(db.url, "--version")  # `python -m tireless` itself
    assert version.returncode == 0
    assert re.fullmatch(r"tireless \d+\.\d+\.\d+\S*\n", version.stdout)
    bare = tireless_cli(db.url)
    assert bare.returncode == 2
    for listed in ("cancel", "lane", "--version"):
        assert listed in bare.stdout


def test_show_prints_values_for_people(store: JobStore, db: Database) -> None:
    enqueue_jobs(store, 1)
    shown = tireless_cli(db.url, "show", "1").stdout
    assert "labels: tireless, tireless/implement" in shown
    assert "None" not in shown
    assert "('" not in shown


def test_lane_pause_resume_capacity_and_show(store: JobStore, db: Database) -> None:
    enqueue_jobs(store, 1)
    assert cli_json(db.url, "lane", "pause", "cc")[0]["paused"] is True
    assert "paused" in tireless_cli(db.url, "lane", "show", "cc").stdout
    assert store.claim_next("w1", ["cc"]) is None
    assert cli_json(db.url, "lane", "resume", "cc")[0]["paused"] is False
    assert cli_json(db.url, "lane", "capacity", "cc", "3")[0]["capacity"] == 3
    assert cli_json(db.url, "lane", "capacity", "cc", "none")[0]["capacity"] is None
    assert [row["lane"] for row in cli_json(db.url, "lane", "show")] == ["cc"]


def test_jobs_newest_first_and_by_kind_forge_repo_and_age(store: JobStore, db: Database) -> None:
    tracked(store)
    tracked(store, "gadgets")
    store.enqueue([issue(1), issue(2, *PLAN)])
    store.enqueue([issue(3, repo="gadgets")])
    with db.connect() as conn:
        conn.execute(
            "UPDATE tireless.job SET updated_at = now() - interval '3 hours' WHERE number = 1"
        )

    def numbers(*args: str) -> list[int]:
        return [job["number"] for job in cli_json(db.url, "jobs", *args)]

    oldest_first = numbers()
    assert numbers("--newest") == oldest_first[::-1]
    assert numbers("--kind", "plan") == [2]
    assert numbers("--forge", FORGE, "--repo", f"{OWNER}/gadgets") == [3]
    assert numbers("--forge", "other") == []
    assert sorted(numbers("--since", "2h")) == [2, 3]


def test_repos_shows_a_long_error_whole(store: JobStore, db: Database) -> None:
    tracked(store)
    error = "GET /api/v1/repos/acme/widgets/issues: " + " ".join(f"word{n}" for n in range(60))
    with db.connect() as conn:
        conn.execute("UPDATE tireless.repo_poll SET last_error = %s", [error])
    shown = tireless_cli(db.url, "repos").stdout
    assert " ".join(shown.split()).count(error) == 1


def test_migrate_without_createrole_hints_at_what_it_needs(db: Database) -> None:
    with db.connect() as conn:
        conn.execute('CREATE ROLE "plain_owner" LOGIN')
        conn.execute('CREATE DATABASE "plain_db" OWNER "plain_owner"')
    try:
        url = make_conninfo(db.conninfo, user="plain_owner", dbname="plain_db")
        result = tireless_cli(url, "migrate")
        assert result.returncode == 1
        assert "42501" in result.stderr
        assert "HINT: migrate creates the schema and the group roles" in result.stderr
        assert "CREATEROLE" in result.stderr
    finally:
        with db.connect() as conn:
            conn.execute('DROP DATABASE "plain_db" WITH (FORCE)')
            conn.execute('DROP ROLE "plain_owner"')


def test_a_runner_reading_jobs_is_told_who_may(
    store: JobStore,
    db: Database,
    login: Login,
) -> None:
    refused = tireless_cli(login("tireless_runner"), "jobs")
    assert refused.returncode == 1
    assert "42501" in refused.stderr
    assert "HINT: tireless jobs and show read tireless.job" in refused.stderr


def test_the_overview_lists_every_lane_status_lists(
    store: JobStore, db: Database, admin: TestClient
) -> None:
    finished(store, *PLAN_ON_OC, lanes=("oc",))  # oc: no settings, no live job, one delivered
    status = {row["lane"] for row in cli_json(db.url, "status")}
    assert status == {"oc"}
    page = admin.get("/").text
    assert '<a href="/jobs?lane=oc">oc</a>' in page


def test_the_stand_in_forge_runs_on_its_own_with_a_seed(db: Database, tmp_path: Path) -> None:
    seed = tmp_path / "seed.json"
    issues = [{"title": "Add a flag", "labels": PLAN}]
    plan = {"owner": OWNER, "repo": REPO, "labels": ["tireless"], "issues": issues}
    seed.write_text(json.dumps({"repos": [plan]}))
    module = "dev.standin"
    command = [sys.executable, "-m", module, "--port", "0", "--seed", str(seed)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as standin:
        try:
            assert standin.stdout is not None
            first = standin.stdout.readline()
            (url,) = re.findall(r"at (http://127\.0\.0\.1:\d+) with 1 issue", first)
            cli_json(db.url, "forge", "add", FORGE, "--kind", "gitea", "--url", url)
            cli_json(db.url, "track", FORGE, OWNER, REPO)
            polled = tireless_cli(db.url, "poll", "--once", "--anonymous")
            assert polled.returncode == 0, polled.stderr
            assert "gitea/acme/widgets: 1 new job" in polled.stdout
        finally:
            standin.terminate()
        assert standin.wait(timeout=30) == 0
