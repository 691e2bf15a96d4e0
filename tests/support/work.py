"""`tireless work` run by the tests: its arguments, agents in sh, a worker process and its log,
the processes a job leaves, the environment without credentials, the sandboxes available, and
an attempt's clock set back."""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import Database
from tests.helpers import wait_until
from tireless.credentials import is_credential_variable


def agent(tmp_path: Path, body: str) -> list[str]:
    """A COMMAND running `body` in sh (given on its command line, so a sandbox's private /tmp
    does not hide it; arguments appended are $1, ...), with $OUT a directory for what the test
    reads back (COMMAND's working directory, where a sandbox lets it write)."""
    return ["sh", "-c", f'OUT="{tmp_path}"\n{body}\n', "agent"]


def work_args(*options: str) -> list[str]:
    return ["work", "--worker", "runner-1", "--lane", "cc", *options]


def start_worker(
    db: Database,
    started: list[subprocess.Popen[str]],
    *args: str,
    cwd: Path | None = None,
    extra: dict[str, str] | None = None,
) -> subprocess.Popen[str]:
    """`tireless work ARGS` in `cwd` (COMMAND's working directory), with the test's environment
    and `extra`."""
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"} | {"DATABASE_URL": db.url}
    process = subprocess.Popen(
        [sys.executable, "-m", "tireless", *args],
        cwd=cwd,
        env=env | (extra or {}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    started.append(process)
    return process


def read_log_until(worker: subprocess.Popen[str], text: str, timeout: float = 30) -> str:
    """What the worker has logged up to and including a line with `text` (raw reads of its
    stderr, so nothing waits in a buffer); fails after `timeout` seconds or at the log's end."""
    assert worker.stderr is not None
    fd, seen = worker.stderr.fileno(), b""
    deadline = time.monotonic() + timeout
    while text.encode() not in seen:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"the worker never logged {text!r}: {seen.decode()}"
        if select.select([fd], [], [], remaining)[0]:
            chunk = os.read(fd, 65536)
            assert chunk, f"the worker's log ended without {text!r}: {seen.decode()}"
            seen += chunk
    return seen.decode()


def state_of(db: Database, job_id: int) -> str:
    state: str = db.scalar("SELECT state::text FROM tireless.job WHERE id = %(id)s", {"id": job_id})
    return state


MARKER = "JOB_MARKER_OF_THE_TEST"


def marked() -> dict[str, str]:
    """A fresh marker for the job's processes, for start_worker's environment."""
    return {MARKER: uuid.uuid4().hex}


def processes_marked(marker: str) -> list[int]:
    """The live processes carrying the marker in their environment."""
    needle = f"{MARKER}={marker}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            with contextlib.suppress(OSError):
                if needle in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                    found.append(int(entry))
    return found


def start_sleeping_agent(
    db: Database, started: list[subprocess.Popen[str]], tmp_path: Path, *options: str
) -> tuple[subprocess.Popen[str], Path]:
    """A worker (`work OPTIONS -- COMMAND`) whose COMMAND writes the marker of its processes to a
    file, then sleeps a minute; returned with that file once the command runs."""
    command = agent(
        tmp_path,
        f'echo "${MARKER}" > "$OUT/started.tmp"\nmv "$OUT/started.tmp" "$OUT/started"\n'
        "exec sleep 60",
    )
    worker = start_worker(
        db, started, *work_args(*options, "--"), *command, cwd=tmp_path, extra=marked()
    )
    started_file = tmp_path / "started"
    wait_until(started_file.exists, "the command to start")
    return worker, started_file


def exits_0_with_its_command(worker: subprocess.Popen[str], started_file: Path) -> str:
    """Wait for the worker; assert it exited 0 and its command is gone too. Returns its stderr."""
    _, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err
    assert processes_marked(started_file.read_text().strip()) == []
    return err


def clean_environment() -> dict[str, str]:
    """The test's environment without any credential variable of its own."""
    return {k: v for k, v in os.environ.items() if not is_credential_variable(k)}


def run_worker(
    env: dict[str, str], cwd: Path, *options: str, command: list[str]
) -> subprocess.CompletedProcess[bytes]:
    worker = [sys.executable, "-m", "tireless", "work", "--worker", "w1", "--lane", "cc"]
    return subprocess.run(
        [*worker, "--once", *options, "--", *command],
        env=env,
        cwd=cwd,
        capture_output=True,
        timeout=120,
    )


IN_CI = os.environ.get("CI") == "true"


def skip_unless_available(sandbox: str) -> None:
    """bwrap's tests are skipped only where bubblewrap is missing, never in CI; unshare's where
    the worker cannot use it (it needs root)."""
    if sandbox == "bwrap" and shutil.which("bwrap") is None and not IN_CI:
        pytest.skip("bubblewrap (bwrap) is not installed")
    if sandbox == "unshare" and (os.geteuid() != 0 or shutil.which("unshare") is None):
        pytest.skip("--sandbox unshare needs root and util-linux's unshare")


def set_back(db: Database, job_id: int, column: str, by: str) -> None:
    """Move an attempt's clock: its started_at or progress_at `by` earlier (an admin UPDATE)."""
    assert column in ("started_at", "progress_at")
    with db.connect() as conn:
        moved = conn.execute(
            f"UPDATE tireless.job_attempt SET {column} = {column} - %(by)s::interval"
            " WHERE job_id = %(id)s",
            {"by": by, "id": job_id},
        ).rowcount
    assert moved == 1
