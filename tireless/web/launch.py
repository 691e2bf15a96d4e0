"""Start `tireless web` in the background (for `make run`): a process of its own, in its own
session, that outlives the caller until it is stopped by its pid. Imports nothing of the web
stack, so the caller loads without the extra."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

BANNER = "dashboard at "


@dataclass(frozen=True, slots=True)
class RunningDashboard:
    pid: int
    url: str


def start_dashboard(
    conninfo: str,
    log_path: Path,
    bind: str = "127.0.0.1:8080",
    timeout: float = 30.0,
    options: Sequence[str] = (),
) -> RunningDashboard:
    """Start `python -m tireless web --bind BIND [OPTIONS]` detached, its output appended to
    log_path, and wait until it prints its address. The conninfo goes by the environment
    (DATABASE_URL, the CLI's name for it), never on a command line that `ps` shows. Raises RuntimeError (naming the
    log) if it does not come up in time; stop it with os.kill(pid, SIGTERM)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    start = log_path.stat().st_size if log_path.exists() else 0
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "tireless", "web", "--bind", bind, *options],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "DATABASE_URL": conninfo},
            start_new_session=True,
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with log_path.open("rb") as log:
            log.seek(start)
            for line in log.read().decode("utf-8", "replace").splitlines():
                if BANNER in line:
                    return RunningDashboard(process.pid, line.split(BANNER, 1)[1].split()[0])
        if process.poll() is not None:
            break
        time.sleep(0.1)
    if process.poll() is None:
        process.terminate()
    raise RuntimeError(f"tireless web did not start (exit {process.poll()}): see {log_path}")
