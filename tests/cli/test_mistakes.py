"""A newcomer's mistakes (issue 50's table): each gets one answer that names the fix, never a bare
SQLSTATE, errno or HTTP status."""

from __future__ import annotations

import os
import pwd
import shutil
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from dev.embedded import EmbeddedPostgres
from dev.standin import Flavour, StandinForge
from tests.conftest import Database
from tests.helpers import FORGE, OWNER, REPO, cli_json, enqueue_jobs, tireless_cli
from tests.support.poll_cli import PLAN, TOKEN
from tests.support.work import clean_environment, run_worker
from tireless import JobStore
from tireless.forge import token_variable


@pytest.fixture
def unmigrated(server: EmbeddedPostgres) -> Iterator[str]:
    """The URL of an empty database: nobody ran `tireless migrate` on it."""
    name = "never_migrated"
    with psycopg.connect(server.conninfo(), autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield server.url(name)
    with psycopg.connect(server.conninfo(), autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.mark.parametrize(
    "args",
    [
        ("status",),
        ("jobs",),
        ("show", "1"),
        ("sweep",),
        ("work", "--worker", "w", "--lane", "cc", "--once", "--", "true"),
    ],
    ids=lambda args: args[0],
)
def test_a_store_never_migrated_says_run_tireless_migrate(
    unmigrated: str, args: tuple[str, ...]
) -> None:
    result = tireless_cli(unmigrated, *args)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    said = [line for line in result.stderr.splitlines() if line.startswith("tireless: ")]
    assert len(said) == 1, result.stderr
    assert said[0].startswith("tireless: the store is not migrated: run `tireless migrate` ("), said


@pytest.fixture
def forge(db: Database) -> Iterator[StandinForge]:
    """A stand-in Gitea with one issue asking for work, registered and tracked."""
    with StandinForge("gitea", token=TOKEN) as standin:
        standin.create_issue(OWNER, REPO, "a plan", PLAN)
        cli_json(db.url, "forge", "add", FORGE, "--kind", "gitea", "--url", standin.url)
        cli_json(db.url, "track", FORGE, OWNER, REPO)
        yield standin


def test_a_token_file_that_is_missing_names_its_variable(
    db: Database, forge: StandinForge, tmp_path: Path
) -> None:
    missing = tmp_path / "gitea-token"
    for args in (("poll", "--once"), ("forge", "check", FORGE)):
        result = tireless_cli(db.url, *args, TIRELESS_TOKEN_GITEA_FILE=str(missing))
        assert result.returncode == 2, result.stderr
        assert result.stderr.splitlines() == [
            "tireless: [Errno 2] TIRELESS_TOKEN_GITEA_FILE names a file that cannot be read:"
            f" No such file or directory: '{missing}'"
        ]
    assert not forge.requests


def test_poll_without_its_token_says_the_variable_is_not_set_and_sends_nothing(
    db: Database, forge: StandinForge
) -> None:
    result = tireless_cli(db.url, "poll", "--once")
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        "tireless: TIRELESS_TOKEN_GITEA is not set (nor TIRELESS_TOKEN_GITEA_FILE): nothing was"
        " sent to the forge; set it to the forge's token, or pass --anonymous to read public"
        " repositories without one"
    ]
    assert not forge.requests
    assert db.scalar("SELECT limited_until FROM tireless.forge") is None  # not stopped
    polled = tireless_cli(db.url, "poll", "--once", TIRELESS_TOKEN_GITEA=TOKEN)
    assert polled.returncode == 0, polled.stdout  # no stop to wait out


def test_a_command_the_agent_user_cannot_read_is_refused_before_any_claim(
    store: JobStore, db: Database, tmp_path: Path
) -> None:
    if os.geteuid() != 0:
        pytest.skip("--agent-user needs the worker to run as root")
    enqueue_jobs(store, 1)
    closed = tmp_path / "closed"  # pytest's directories are 0700: closed to nobody
    closed.mkdir(mode=0o700)
    script = closed / "agent.sh"
    script.write_text("#!/bin/sh\ntrue\n")
    script.chmod(0o755)
    args = ("work", "--worker", "w", "--lane", "cc", "--once", "--agent-user", "nobody")
    result = tireless_cli(db.url, *args, "--", str(script))
    assert result.returncode == 5, result.stderr
    assert result.stderr.splitlines() == [
        f"tireless: cannot start COMMAND '{script}': --agent-user nobody"
        f" (uid {pwd.getpwnam('nobody').pw_uid}) cannot read and execute it, or a directory"
        " above it is closed to that user"
    ]
    assert db.scalar("SELECT state::text || attempts FROM tireless.job") == "pending0"


def test_work_without_deliver_says_at_start_that_nothing_is_pushed(db: Database) -> None:
    result = tireless_cli(db.url, "work", "--worker", "w", "--lane", "cc", "--once", "--", "true")
    assert result.returncode == 3, result.stderr  # no job: the line comes before any claim
    said = [line for line in result.stderr.splitlines() if "without --deliver" in line]
    assert len(said) == 1, result.stderr
    assert said[0].endswith(
        f"w: without --deliver nothing is pushed: COMMAND runs in this worker's directory"
        f" ({Path.cwd()}), not in a workspace of the issue's repository"
    )


@pytest.mark.parametrize("where", ["/", "closed to the agent user"])
def test_work_without_deliver_where_command_may_not_write_gives_each_job_a_directory_of_its_own(
    store: JobStore, db: Database, tmp_path: Path, where: str
) -> None:
    """A worker started in / (systemd's default, read-only under bwrap), or in a directory its
    --agent-user cannot write: an implement job's COMMAND writes in a fresh directory of the job's
    own, TIRELESS_WORKSPACE, gone with the job."""
    agent = [] if where == "/" else ["--agent-user", "nobody"]
    if agent and os.geteuid() != 0:
        pytest.skip("--agent-user needs the worker to run as root")
    directory = Path("/") if where == "/" else tmp_path  # pytest's directories are 0700
    enqueue_jobs(store, 1)
    command = ["sh", "-c", 'echo a change > notes.md && echo "ran in $PWD own $TIRELESS_WORKSPACE"']
    env = clean_environment() | {"DATABASE_URL": db.url}
    result = run_worker(env, directory, *agent, command=command)
    out, err = result.stdout.decode(), result.stderr.decode()
    assert result.returncode == 0, err
    said = [line for line in err.splitlines() if "without --deliver" in line]
    assert len(said) == 1, err
    assert said[0].endswith(
        "w1: without --deliver nothing is pushed: COMMAND runs in an empty directory of each job's"
        " own (TIRELESS_WORKSPACE, removed when the job ends), as it may not write in this"
        f" worker's directory ({directory}); not in a workspace of the issue's repository"
    )
    (ran,) = [line.split() for line in out.splitlines() if line.startswith("ran in ")]
    assert ran[2] == ran[4] != str(directory), out
    assert not Path(ran[2]).exists(), "removed when the job ended"
    assert not (directory / "notes.md").exists()
    assert db.scalar("SELECT state::text FROM tireless.job") == "delivered"


def test_sandbox_auto_without_bubblewrap_warns_what_the_fallback_does_not_contain(
    db: Database, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"  # a PATH with what `work` needs but no bwrap
    bin_dir.mkdir()
    for tool in ("sh", "true", "setpriv", "unshare", "setsid", "git"):
        if found := shutil.which(tool):
            (bin_dir / tool).symlink_to(found)
    args = ("work", "--worker", "w", "--lane", "cc", "--once", "--", "true")
    result = tireless_cli(db.url, *args, PATH=str(bin_dir))
    assert result.returncode == 3, result.stderr  # no job
    warned = [line for line in result.stderr.splitlines() if "warning" in line]
    assert len(warned) == 1, result.stderr
    assert warned[0].startswith(
        "tireless work: warning: --sandbox auto: bubblewrap is missing or cannot run here, so"
        " COMMAND runs under --sandbox "
    ), warned
    assert (
        "/ is writable, /tmp is shared, and the worker's secret files are not hidden" in warned[0]
    )
    assert warned[0].endswith("; install bubblewrap, or say --sandbox unshare") or warned[
        0
    ].endswith("; install bubblewrap, or say --sandbox none")


def test_a_lane_typo_names_the_lane_and_the_lanes_that_have_jobs(
    store: JobStore, db: Database
) -> None:
    enqueue_jobs(store, 1)
    enqueue_jobs(store, 1, "tireless", "tireless/implement", "tireless/agent:oc", first=2)
    args = ("work", "--worker", "w", "--lane", "ccc", "--lane", "oc", "--once", "--", "true")
    result = tireless_cli(db.url, *args)
    warned = [line for line in result.stderr.splitlines() if "warning" in line]
    assert warned == [
        "tireless work: warning: no job or lane is named 'ccc'; the lanes with jobs are cc, oc"
    ], result.stderr
    assert result.returncode == 0, result.stderr  # the oc job
    assert db.scalar("SELECT tireless.lane_problem(lanes => ARRAY['cc', 'oc'])") is None


def test_a_misspelled_repository_names_both_fixes_and_waits_ten_minutes(
    db: Database, forge: StandinForge
) -> None:
    cli_json(db.url, "track", FORGE, OWNER, "widgts")
    result = tireless_cli(db.url, "poll", "--once", TIRELESS_TOKEN_GITEA=TOKEN)
    assert result.returncode == 1, result.stdout
    (line,) = [line for line in result.stdout.splitlines() if "widgts" in line]
    assert (
        "HTTP 404: repository not found, or the token cannot see it: check its owner and name"
        " (`tireless repos`; `tireless untrack` it and `tireless track` the right one), or give"
        " the token read access to it; asked again in 10 minutes"
    ) in line, line
    waits = db.scalar(
        "SELECT backoff_until - now() FROM tireless.repo_poll WHERE repo = 'widgts'"
    ).total_seconds()
    assert 9 * 60 < waits <= 11 * 60, waits


@pytest.mark.parametrize("flavour", ["gitea", "github"])
def test_a_label_typo_is_said_once_on_the_issue_and_in_status(
    db: Database, flavour: Flavour
) -> None:
    """`tireless/implment`: one comment naming the mode labels, whatever later polls show (the
    label taken off and put back included), and a line of `tireless status`."""
    name = "gh" if flavour == "github" else flavour
    with StandinForge(flavour, token=TOKEN) as standin:
        standin.create_repo(OWNER, REPO)
        typo = ["tireless", "tireless/implment"]
        number = standin.create_issue(OWNER, REPO, "a typo", typo)
        cli_json(db.url, "forge", "add", name, "--kind", flavour, "--url", standin.url)
        cli_json(db.url, "track", name, OWNER, REPO)
        for labels in (typo, typo, ["tireless"], typo):
            standin.set_labels(OWNER, REPO, number, labels)
            polled = tireless_cli(db.url, "poll", "--once", **{token_variable(name): TOKEN})
            assert polled.returncode == 0, polled.stdout + polled.stderr
        said = standin.comments_of(OWNER, REPO, number)
        status = tireless_cli(db.url, "status")
    assert len(said) == 1, said
    assert said[0].startswith(
        "tireless: the label `tireless/implment` names nothing tireless knows, so it asks for no"
        " work. The mode labels are `tireless/discover`, `tireless/plan`, `tireless/implement`"
        " (each with the opt-in label `tireless`); `tireless/agent:<lane>` chooses the agent."
    ), said[0]
    assert db.scalar("SELECT count(*) FROM tireless.job") == 0
    assert status.returncode == 0, status.stderr
    assert (
        "labels that name nothing (no mode, agent or state; they ask for no work):\n"
        f"  {name}/{OWNER}/{REPO}#{number}: tireless/implment (said on the issue)"
    ) in status.stdout, status.stdout
