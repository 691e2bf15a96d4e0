"""Containment through `tireless work` with real processes: nothing COMMAND started outlives its
job (a SIGKILL of the worker included, for the sandboxes that promise it), a child that holds
COMMAND's output delays nothing, a stop's note carries the output, the last step reaches the store,
a short stall_after does not stop an agent that prints, and bwrap's view of the filesystem hides the
worker's secrets and keeps COMMAND's writes to its directory and its own /tmp. The job's
processes are found by a marker in their environment (in a PID namespace a process's own pid is
not ours)."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from tests.conftest import Database
from tests.helpers import enqueue_jobs, issue, tireless_cli, wait_until, wait_until_sql
from tests.support.work import (
    MARKER,
    agent,
    clean_environment,
    marked,
    processes_marked,
    run_worker,
    skip_unless_available,
    start_worker,
    state_of,
    work_args,
)
from tireless import JobStore

pytestmark = pytest.mark.usefixtures("in_the_tests_directory")


@pytest.fixture
def bwrap() -> None:
    skip_unless_available("bwrap")


@pytest.fixture(params=["bwrap", "unshare", "none"])
def sandbox(request: pytest.FixtureRequest) -> str:
    skip_unless_available(request.param)
    name: str = request.param
    return name


@pytest.fixture(params=["bwrap", "none"])
def bwrap_or_none(request: pytest.FixtureRequest) -> str:
    skip_unless_available(request.param)
    name: str = request.param
    return name


@pytest.fixture(params=["bwrap", "unshare"])
def namespace(request: pytest.FixtureRequest) -> str:
    """The sandboxes that outlive no SIGKILL of the worker."""
    skip_unless_available(request.param)
    name: str = request.param
    return name


ESCAPE = (
    "( setsid sh -c \"touch '$OUT/escaped'; exec sleep 60\" > /dev/null 2>&1 < /dev/null & )\n"
    'while [ ! -e "$OUT/escaped" ]; do sleep 0.02; done\n'
)
"""A double-forked `setsid` child, its output elsewhere: it belongs to no process group of
COMMAND's, its parent is gone; the script goes on once it runs."""


def no_process_left(marker: dict[str, str]) -> bool:
    return processes_marked(marker[MARKER]) == []


def test_a_sigkill_of_the_worker_leaves_no_process_of_its_job(
    store: JobStore,
    db: Database,
    tmp_path: Path,
    worker_process: list[subprocess.Popen[str]],
    namespace: str,
) -> None:
    enqueue_jobs(store, 1)
    marker = marked()
    command = agent(
        tmp_path, ESCAPE + 'sleep 60 &\ntouch "$OUT/started"\nexec sleep 60'
    )  # a child that escaped, a background child, and the agent itself
    worker = start_worker(
        db, worker_process, *work_args("--sandbox", namespace, "--"), *command, extra=marker
    )
    wait_until((tmp_path / "started").exists, "the agent and its children to run")
    assert len(processes_marked(marker[MARKER])) >= 5, "the worker, the sandbox's, the agent's"
    worker.kill()
    worker.wait()
    wait_until(lambda: no_process_left(marker), "every process of the job to end", timeout=2)


def test_a_double_forked_setsid_child_is_gone_when_its_job_is_delivered(
    store: JobStore, db: Database, tmp_path: Path, sandbox: str
) -> None:
    enqueue_jobs(store, 1)
    marker = marked()
    command = agent(tmp_path, ESCAPE + "echo left a daemon behind")
    result = tireless_cli(
        db.url, *work_args("--once", "--sandbox", sandbox, "--"), *command, **marker
    )
    assert result.returncode == 0, result.stderr
    assert f"containment: {sandbox} (" in result.stderr
    assert state_of(db, db.scalar("SELECT id FROM tireless.job")) == "delivered"
    assert no_process_left(marker), "the escaped child was killed with its job"


def test_a_background_child_holding_stdout_does_not_delay_once(
    store: JobStore, db: Database, tmp_path: Path, bwrap_or_none: str
) -> None:
    enqueue_jobs(store, 1)
    marker = marked()
    command = agent(tmp_path, "sleep 300 &\necho done, and a child holds my output")
    began = time.monotonic()
    result = tireless_cli(
        db.url, *work_args("--once", "--sandbox", bwrap_or_none, "--"), *command, **marker
    )
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - began < 20, "the worker did not wait for the child"
    assert "done, and a child holds my output" in result.stdout
    assert state_of(db, db.scalar("SELECT id FROM tireless.job")) == "delivered"
    assert no_process_left(marker)


def test_a_background_child_holding_stdout_delays_neither_delivery_nor_a_stop(
    store: JobStore, db: Database, tmp_path: Path, worker_process: list[subprocess.Popen[str]]
) -> None:
    """The agent succeeds and exits while its child holds its output: the job is delivered at
    once, and a SIGTERM then stops the idle worker at once (not given back, not run again)."""
    enqueue_jobs(store, 1)
    marker = marked()
    command = agent(tmp_path, "sleep 60 &\necho done")
    worker = start_worker(
        db,
        worker_process,
        *work_args("--grace", "2s", "--poll", "60s", "--"),
        *command,
        extra=marker,
    )
    wait_until_sql(db.url, "(SELECT state = 'delivered' FROM tireless.job)", timeout=10)
    worker.send_signal(signal.SIGTERM)
    _, err = worker.communicate(timeout=10)
    assert worker.returncode == 0, err
    assert "stopped (SIGTERM)" in err
    assert db.scalar("SELECT row(state, attempts, given_back)::text FROM tireless.job") == (
        "(delivered,1,0)"
    )
    assert no_process_left(marker)


def test_a_cancel_stops_an_agent_whose_setsid_child_holds_its_output(
    store: JobStore,
    db: Database,
    tmp_path: Path,
    worker_process: list[subprocess.Popen[str]],
    bwrap_or_none: str,
) -> None:
    enqueue_jobs(store, 1)
    marker = marked()
    command = agent(tmp_path, 'setsid sleep 60 &\ntouch "$OUT/started"\nexec sleep 60')
    options = ("--once", "--lease", "1500ms", "--grace", "30s", "--sandbox", bwrap_or_none)
    worker = start_worker(db, worker_process, *work_args(*options, "--"), *command, extra=marker)
    wait_until((tmp_path / "started").exists, "the agent to run")
    assert store.enqueue([issue(1, state="closed")]) == 0  # the request is withdrawn
    _, err = worker.communicate(timeout=15)  # within the grace: SIGTERM reached both sleeps
    assert worker.returncode == 0, err
    assert db.scalar("SELECT state::text FROM tireless.job") == "cancelled"
    assert no_process_left(marker)


def test_a_stop_gives_the_job_back_with_the_tail_of_commands_output(
    store: JobStore, db: Database, tmp_path: Path, worker_process: list[subprocess.Popen[str]]
) -> None:
    enqueue_jobs(store, 1)
    command = agent(tmp_path, 'echo cloned the repository\ntouch "$OUT/started"\nexec sleep 60')
    worker = start_worker(db, worker_process, *work_args("--poll", "1s", "--"), *command)
    wait_until((tmp_path / "started").exists, "the agent to run")
    worker.send_signal(signal.SIGTERM)
    _, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err
    assert db.scalar("SELECT note FROM tireless.job") == (
        "given back: worker stopped by SIGTERM\ncloned the repository"
    )


def test_the_last_progress_step_reaches_the_store_when_command_ends(
    store: JobStore, db: Database, tmp_path: Path, worker_process: list[subprocess.Popen[str]]
) -> None:
    enqueue_jobs(store, 1)
    command = agent(
        tmp_path,
        'echo "::progress:: one"\n'
        'while [ ! -e "$OUT/go" ]; do sleep 0.02; done\n'
        'echo "::progress:: two"',
    )  # the second step comes within the throttle (--progress-every 30s): held back
    worker = start_worker(db, worker_process, *work_args("--once", "--"), *command)
    wait_until_sql(db.url, "(SELECT step = 'one' FROM tireless.job_progress)")
    (tmp_path / "go").touch()
    _, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err
    assert db.scalar("SELECT step FROM tireless.job_progress") == "two"


def test_an_agent_that_prints_is_not_stopped_by_a_stall_after_shorter_than_progress_every(
    store: JobStore, db: Database, tmp_path: Path
) -> None:
    """stall_after 3 s, --progress-every 30 s (the default), a line every 0.2 s for 4 s."""
    store.set_lane_stall_after("cc", timedelta(seconds=3))
    enqueue_jobs(store, 1)
    command = agent(
        tmp_path, 'i=0\nwhile [ $i -lt 20 ]; do echo "line $i"; sleep 0.2; i=$((i + 1)); done'
    )
    result = tireless_cli(db.url, *work_args("--once", "--lease", "1500ms", "--"), *command)
    assert result.returncode == 0, result.stderr
    assert "stopping the command" not in result.stderr
    assert db.scalar("SELECT row(state, note)::text FROM tireless.job") == "(delivered,)"


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory outside /tmp that the worker may write to."""
    path = Path(tempfile.mkdtemp(prefix="tireless-outside-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path)


def test_bwrap_hides_the_workers_secret_files_and_keeps_writes_to_the_directory_and_tmp(
    store: JobStore, db: Database, tmp_path: Path, outside: Path, bwrap: None
) -> None:
    """The token file and the credentials directory are in COMMAND's own (writable) working
    directory, the most exposed place: both are masked."""
    enqueue_jobs(store, 1)
    token = tmp_path / "gitea-token"
    token.write_text(f"token-{uuid.uuid4().hex}")
    credentials = tmp_path / "credentials"
    credentials.mkdir()
    (credentials / "database-url").write_text("postgresql://runner:secret@db/app")
    scratch = f"/tmp/tireless-scratch-{uuid.uuid4().hex}"
    command = agent(
        tmp_path,
        'cat "$1" > "$OUT/token-read" 2>/dev/null || echo refused >> "$OUT/token-read"\n'
        'ls -A "$2" > "$OUT/credentials-listed"\n'
        'for target in "$3/escaped" /etc/escaped "$HOME/escaped" "$4" "$OUT/mine"; do\n'
        '  if echo x > "$target"; then echo "wrote $target"; fi\n'
        'done > "$OUT/writes" 2>/dev/null',
    )
    command += [str(token), str(credentials), str(outside), scratch]
    result = tireless_cli(
        db.url, *work_args("--once", "--sandbox", "bwrap", "--"), *command,
        TIRELESS_TOKEN_GITEA_FILE=str(token), CREDENTIALS_DIRECTORY=str(credentials),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "containment: bwrap (" in result.stderr
    assert (tmp_path / "token-read").read_text() == "refused\n", "a device node in its place"
    assert (tmp_path / "credentials-listed").read_text() == ""
    assert (tmp_path / "writes").read_text().splitlines() == [
        f"wrote {scratch}",  # its own /tmp, gone with it
        f"wrote {tmp_path / 'mine'}",
    ]
    assert not Path(scratch).exists()
    assert list(outside.iterdir()) == []
    assert not Path("/etc/escaped").exists()
    assert state_of(db, db.scalar("SELECT id FROM tireless.job")) == "delivered"


def test_bwrap_runs_command_as_the_agent_user_without_capabilities(
    store: JobStore, db: Database, public_dir: Path, bwrap: None
) -> None:
    if os.geteuid() != 0:
        pytest.skip("--agent-user needs the worker to run as root")
    enqueue_jobs(store, 1)
    script = public_dir / "agent.sh"
    script.write_text(
        'id -u > "$1/dump"; grep -E "^(CapEff|CapBnd|NoNewPrivs)" /proc/self/status >> "$1/dump"\n'
    )
    env = clean_environment() | {"DATABASE_URL": db.url}
    done = run_worker(
        env, public_dir, "--agent-user", "nobody", "--sandbox", "bwrap",
        command=["sh", str(script), str(public_dir)],
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    fields = (public_dir / "dump").read_text().split()
    assert fields == [
        str(pwd.getpwnam("nobody").pw_uid),
        "CapEff:", "0000000000000000", "CapBnd:", "0000000000000000", "NoNewPrivs:", "1",
    ]  # fmt: skip
    assert db.scalar("SELECT state::text FROM tireless.job") == "delivered"


def test_a_command_kept_under_tmp_still_runs_in_the_private_tmp_of_bwrap(
    store: JobStore, db: Database, tmp_path: Path, bwrap: None
) -> None:
    """A clone of the project under /tmp (CI's) runs the demo's agent from there: the program and
    the files COMMAND names stay visible, read-only, though /tmp is private."""
    enqueue_jobs(store, 1)
    script = tmp_path / "agent.sh"
    script.write_text('echo ran > "$PWD/ran.txt"\n')
    result = tireless_cli(
        db.url, *work_args("--once", "--sandbox", "bwrap", "--"), "sh", str(script)
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "ran.txt").read_text() == "ran\n"
    assert db.scalar("SELECT state::text FROM tireless.job") == "delivered"


def test_bwrap_gives_the_agent_user_a_private_tmp_it_can_write(
    store: JobStore, db: Database, public_dir: Path, bwrap: None
) -> None:
    """The private /tmp is the agent's as a host's /tmp is anyone's (mode 1777), and TMPDIR names
    it: an agent that makes its own directory there (OpenCode's /tmp/opencode) can start."""
    if os.geteuid() != 0:
        pytest.skip("--agent-user needs the worker to run as root")
    enqueue_jobs(store, 1)
    script = public_dir / "agent.sh"
    script.write_text(
        'stat -c %a /tmp > "$1/dump"; echo "$TMPDIR" >> "$1/dump"\n'
        'mkdir /tmp/opencode && touch "$TMPDIR/x" && echo wrote >> "$1/dump"\n'
    )
    env = clean_environment() | {"DATABASE_URL": db.url, "TMPDIR": "/var/tmp/the-workers"}
    done = run_worker(
        env, public_dir, "--agent-user", "nobody", "--sandbox", "bwrap",
        command=["sh", str(script), str(public_dir)],
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (public_dir / "dump").read_text().split() == ["1777", "/tmp", "wrote"]
    assert db.scalar("SELECT state::text FROM tireless.job") == "delivered"


def test_bwrap_runs_an_agent_users_command_kept_in_a_directory_under_tmp(
    store: JobStore, db: Database, public_dir: Path, bwrap: None
) -> None:
    """COMMAND's program in a directory of /tmp that is not COMMAND's working directory: the
    directories that lead to it keep their modes in the private /tmp (bwrap alone would make them
    0700, root's), so the agent's user reaches it as it would outside."""
    if os.geteuid() != 0:
        pytest.skip("--agent-user needs the worker to run as root")
    enqueue_jobs(store, 1)
    kept = Path(tempfile.mkdtemp(prefix="tireless-kept-"))
    try:
        (kept / "bin").mkdir()
        for directory in (kept, kept / "bin"):
            directory.chmod(0o755)
        script = kept / "bin" / "agent.sh"
        script.write_text('stat -c %a "$(dirname "$0")" > "$1/dump"\n')
        script.chmod(0o755)
        env = clean_environment() | {"DATABASE_URL": db.url}
        done = run_worker(
            env, public_dir, "--agent-user", "nobody", "--sandbox", "bwrap",
            command=[str(script), str(public_dir)],
        )  # fmt: skip
    finally:
        shutil.rmtree(kept)
    assert done.returncode == 0, done.stderr
    assert (public_dir / "dump").read_text() == "755\n"
    assert db.scalar("SELECT state::text FROM tireless.job") == "delivered"


def test_bwrap_runs_an_agent_cli_installed_under_tmp_with_its_whole_package_tree(
    store: JobStore, db: Database, public_dir: Path, bwrap: None
) -> None:
    """An agent CLI installed by npm under a directory of /tmp (a checkout there, as CI's may be):
    its `.bin` link resolves to a module that loads its siblings and another package of the
    prefix, so the sandbox binds the whole npm prefix read-only, and nothing beside it."""
    if os.geteuid() != 0:
        pytest.skip("--agent-user needs the worker to run as root")
    enqueue_jobs(store, 1)
    kept = Path(tempfile.mkdtemp(prefix="tireless-kept-"))
    try:
        prefix = kept / "agents" / "cli"
        package = prefix / "node_modules" / "cli"
        helper = prefix / "node_modules" / "cli-linux-x64"
        for directory in (package, helper, prefix / "node_modules" / ".bin"):
            directory.mkdir(parents=True)
        (helper / "native.sh").write_text("echo native\n")
        (package / "lib.sh").write_text('. "$(dirname "$0")/../cli-linux-x64/native.sh"\n')
        (package / "cli.sh").write_text(
            '#!/bin/sh\n. "$(dirname "$(readlink -f "$0")")/lib.sh" > "$1/dump"\n'
            'test -e "$(dirname "$(readlink -f "$0")")/../../../../beside" || echo hidden >> "$1/dump"\n'
        )
        (package / "cli.sh").chmod(0o755)
        (kept / "beside").write_text("not the CLI's\n")
        (prefix / "node_modules" / ".bin" / "cli").symlink_to("../cli/cli.sh")
        for directory in [kept, *(p for p in kept.rglob("*") if p.is_dir())]:
            directory.chmod(0o755)
        env = clean_environment() | {"DATABASE_URL": db.url}
        done = run_worker(
            env, public_dir, "--agent-user", "nobody", "--sandbox", "bwrap",
            command=[str(prefix / "node_modules" / ".bin" / "cli"), str(public_dir)],
        )  # fmt: skip
    finally:
        shutil.rmtree(kept)
    assert done.returncode == 0, done.stderr
    assert (public_dir / "dump").read_text().split() == ["native", "hidden"]
    assert db.scalar("SELECT state::text FROM tireless.job") == "delivered"
