"""git as the runner runs it (no configuration of this machine, the Authorization header on the
command line), for the tests of the stand-in git server."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

from dev.standin.git_backend import git_environment


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def git(
    *args: str,
    cwd: Path | None = None,
    auth: str | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """git with no configuration of this machine, never prompting; `auth` an Authorization
    header given on the command line, as the runner gives it (no file holds it)."""
    header = ["-c", f"http.extraHeader=Authorization: {auth}"] if auth else []
    identity = ["-c", "user.name=Runner", "-c", "user.email=runner@example.com"]
    return subprocess.run(
        ["git", *header, *identity, *args],
        cwd=cwd,
        env=git_environment() | (env or {}),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def commit(work: Path, name: str, text: str) -> str:
    (work / name).write_text(text)
    assert git("add", name, cwd=work).returncode == 0
    assert git("commit", "--quiet", "-m", f"add {name}", cwd=work).returncode == 0
    return git("rev-parse", "HEAD", cwd=work).stdout.strip()
