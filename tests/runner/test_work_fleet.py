"""Fleet control through `tireless work` with real commands: an agent past its lane's max_run, or
silent for its stall_after, is stopped and its attempt failed with the watchdog's note; an agent
that reports progress keeps running; the agent gets its brief (URLs and body) in its JSON and
environment; and the report it writes becomes the outcome comment on the stand-in forge. The
clock moves through the database (the attempt's times set back), never by sleeping."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from dev.standin import StandinForge
from tests.conftest import Database
from tests.helpers import enqueue_jobs, history, issue, tireless_cli, tracked, wait_until_sql
from tests.support.forge import NAMES, OWNER, PLAN, TOKEN, Setup, comments, one_round
from tests.support.work import (
    agent,
    exits_0_with_its_command,
    set_back,
    start_sleeping_agent,
    start_worker,
    state_of,
    work_args,
)
from tireless import JobStore
from tireless.forge import token_variable

pytestmark = pytest.mark.usefixtures("in_the_tests_directory")

FAST = ("--once", "--lease", "1500ms")
"""One job, renewed (and watched) every half second."""

FIRST_HEARTBEAT = "EXISTS (SELECT FROM tireless.job_attempt)"
"""The first heartbeat under a limit has recorded the attempt."""


def note_of(db: Database, job_id: int) -> str:
    note: str = db.scalar("SELECT note FROM tireless.job WHERE id = %(id)s", {"id": job_id})
    return note


@pytest.mark.parametrize(
    ("limit", "clock", "set_back_by", "answer", "note"),
    [
        ("max_run", "started_at", "2 hours 1 minute", "timeout", "timed out after 2h"),
        ("stall_after", "progress_at", "31 minutes", "stalled", "no progress for 30m"),
    ],
    ids=["sleeps-past-max_run", "silent-for-stall_after"],
)
def test_an_agent_past_its_lanes_limit_is_stopped_and_failed_with_the_note(
    store: JobStore,
    db: Database,
    tmp_path: Path,
    worker_process: list[subprocess.Popen[str]],
    limit: str,
    clock: str,
    set_back_by: str,
    answer: str,
    note: str,
) -> None:
    """The agent sleeps and prints nothing; its clock is moved past the lane's limit."""
    if limit == "max_run":
        store.set_lane_max_run("cc", timedelta(hours=2))
    else:
        store.set_lane_stall_after("cc", timedelta(minutes=30))
    enqueue_jobs(store, 1)
    worker, started = start_sleeping_agent(db, worker_process, tmp_path, *FAST)
    job_id = db.scalar("SELECT id FROM tireless.job")
    wait_until_sql(db.url, FIRST_HEARTBEAT)
    assert state_of(db, job_id) == "claimed", "not stopped before its clock moved"
    set_back(db, job_id, clock, set_back_by)
    err = exits_0_with_its_command(worker, started)
    assert f"the watchdog stopped its attempt ({answer})" in err
    assert (state_of(db, job_id), note_of(db, job_id)) == ("pending", note)
    assert history(db, job_id)[-1][:5] == ("claimed", "pending", "runner-1", 1, note)


def test_an_agent_that_reports_progress_keeps_running(
    store: JobStore, db: Database, tmp_path: Path, worker_process: list[subprocess.Popen[str]]
) -> None:
    store.set_lane_stall_after("cc", timedelta(minutes=30))
    enqueue_jobs(store, 1)
    command = agent(
        tmp_path,
        'echo "::progress:: ran the tests"\n'
        'while [ ! -e "$OUT/go" ]; do sleep 0.05; done\n'
        'echo "  ::progress:: wrote the fix"\n'
        'while [ ! -e "$OUT/done" ]; do sleep 0.05; done\n'
        "echo finished",
    )
    worker = start_worker(
        db, worker_process, *work_args(*FAST, "--progress-every", "0s", "--"), *command
    )
    job_id = db.scalar("SELECT id FROM tireless.job")
    wait_until_sql(db.url, "(SELECT step = 'ran the tests' FROM tireless.job_attempt)")
    with db.connect() as conn, conn.transaction():
        # Thirty-one silent minutes, as the watchdog would see them; the agent's next progress
        # waits on this row lock (holding the job's), so no heartbeat falls in between.
        conn.execute(
            "UPDATE tireless.job_attempt SET started_at = started_at - interval '31 minutes',"
            " progress_at = progress_at - interval '31 minutes'"
        )
        (tmp_path / "go").touch()
        blocked = f"{conn.info.backend_pid} = ANY (pg_blocking_pids(a.pid))"
        wait_until_sql(db.url, f"EXISTS (SELECT FROM pg_stat_activity a WHERE {blocked})")
    wait_until_sql(db.url, "(SELECT step = 'wrote the fix' FROM tireless.job_attempt)")
    answer = db.scalar(
        "SELECT tireless.heartbeat(job_id => %(id)s, worker => 'runner-1')", {"id": job_id}
    )
    assert answer == "held"
    shown = tireless_cli(db.url, "show", str(job_id))
    assert "step: wrote the fix" in shown.stdout
    (tmp_path / "done").touch()
    _, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err
    assert "stopping the command" not in err
    assert state_of(db, job_id) == "delivered"


def test_the_agent_gets_the_issue_urls_and_body_in_its_json_and_environment(
    store: JobStore, db: Database, tmp_path: Path
) -> None:
    store.add_forge("gitea", "gitea", "https://git.example.com")
    url = "https://git.example.com/acme/widgets/issues/1"
    tracked(store).enqueue([issue(1, url=url, body="Make the widget blue.\n")])
    command = agent(
        tmp_path,
        'env | grep -E "^TIRELESS_(ISSUE|API|CLONE|REPORT)" | sort > "$OUT/env"\n'
        'cat > "$OUT/stdin"\ncp "$TIRELESS_ISSUE_BODY_FILE" "$OUT/body"',
    )
    result = tireless_cli(db.url, *work_args("--once", "--"), *command)
    assert result.returncode == 0, result.stderr
    env = dict(line.split("=", 1) for line in (tmp_path / "env").read_text().splitlines())
    stdin = json.loads((tmp_path / "stdin").read_text())
    brief = {
        "issue_url": url,
        "api_url": "https://git.example.com/api/v1",
        "clone_url": "https://git.example.com/acme/widgets.git",
        "body": "Make the widget blue.\n",
        "body_cut": False,
        "report_file": env["TIRELESS_REPORT_FILE"],
    }
    assert {key: stdin[key] for key in brief} == brief
    assert env == {
        "TIRELESS_ISSUE_URL": url,
        "TIRELESS_API_URL": "https://git.example.com/api/v1",
        "TIRELESS_CLONE_URL": "https://git.example.com/acme/widgets.git",
        "TIRELESS_ISSUE_BODY_FILE": env["TIRELESS_ISSUE_BODY_FILE"],
        "TIRELESS_ISSUE_BODY_CUT": "false",
        "TIRELESS_REPORT_FILE": env["TIRELESS_REPORT_FILE"],
    }
    assert (tmp_path / "body").read_text() == "Make the widget blue.\n"
    assert not Path(env["TIRELESS_ISSUE_BODY_FILE"]).exists(), "the job's files go with it"


@pytest.fixture(params=["gitea", "github"])
def setup(
    request: pytest.FixtureRequest, db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Setup]:
    name = NAMES[request.param]
    monkeypatch.setenv(token_variable(name), TOKEN)
    with StandinForge(request.param, token=TOKEN) as forge:
        store.add_forge(name, request.param, forge.url)
        yield Setup(db, store, forge, name)


def test_the_report_file_becomes_the_comment_on_the_forge(setup: Setup, tmp_path: Path) -> None:
    """The report is the public comment; the output's tail stays in the note for operators."""
    setup.db.scalar("SELECT tireless.set_kind_policy(kind => 'plan', max_attempts => 1)")
    setup.track("widgets")
    number = setup.forge.create_issue(OWNER, "widgets", "asks", PLAN, body="Paint it blue.")
    one_round(setup)  # the poll makes the job, with the issue's body
    command = agent(
        tmp_path,
        'cp "$TIRELESS_ISSUE_BODY_FILE" "$OUT/body"\n'
        'printf "## Could not\\n\\nThe paint ran out." > "$TIRELESS_REPORT_FILE"\n'
        "echo output for the operators; exit 3",
    )
    result = tireless_cli(setup.db.url, *work_args("--once", "--"), *command)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "body").read_text() == "Paint it blue."
    one_round(setup)
    (posted,) = comments(setup, number)
    assert posted.startswith(
        "tireless: failed after 1 attempt\n\n## Could not\n\nThe paint ran out.\n\n"
    )
    assert "output for the operators" not in posted
    assert setup.jobs()[number] == (
        "failed", "attempts exhausted (1 of 1); last: output for the operators"
    )  # fmt: skip
