"""Plain git as an agent or a forge runs it, a bare repository standing in for the forge's, and a
workspace prepared from it (Forge)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tireless.runner.workspace import (
    RepoCache,
    Workspace,
    prepare_workspace,
)

NOBODY = 65534


AGENT_ENV = {
    "PATH": os.environ.get("PATH", os.defpath),
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "HOME": "/nonexistent",
    "LC_ALL": "C",
    "GIT_AUTHOR_NAME": "Agent",
    "GIT_AUTHOR_EMAIL": "agent@example.com",
    "GIT_COMMITTER_NAME": "Agent",
    "GIT_COMMITTER_EMAIL": "agent@example.com",
}


def sh(*args: str, cwd: Path | str | None = None, stdin: bytes | None = None) -> str:
    """Plain git, as an agent or a forge runs it."""
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=AGENT_ENV, input=stdin, capture_output=True, check=True
    )
    return done.stdout.decode().strip()


def forge_commit(
    remote: str,
    branch: str,
    files: dict[str, str],
    message: str = "forge",
    parent: str | None = None,
) -> str:
    """A commit made on the forge (someone else's), on `branch`, with `files` changed."""
    lines = [f"commit refs/heads/{branch}", "committer Forge <forge@example.com> 1700000000 +0000"]
    lines += [f"data {len(message.encode())}", message]
    if parent is not None:
        lines.append(f"from {parent}")
    for path, content in files.items():
        lines += [f"M 100644 inline {path}", f"data {len(content.encode())}", content]
    sh(f"--git-dir={remote}", "fast-import", "--quiet", stdin=("\n".join(lines) + "\n").encode())
    return sh(f"--git-dir={remote}", "rev-parse", f"refs/heads/{branch}")


def make_remote(path: Path, files: dict[str, str] | None = None) -> str:
    """A bare repository standing in for the forge's, with one commit on main."""
    sh("init", "--quiet", "--bare", "-b", "main", str(path))
    forge_commit(str(path), "main", files or {"README.md": "hello\n", "src/app.py": "print(1)\n"})
    return str(path)


@dataclass
class Forge:
    remote: str
    cache: RepoCache
    jobs: Path

    def workspace(self, name: str = "ws", **options: object) -> Workspace:
        return prepare_workspace(self.cache, self.remote, None, self.jobs / name, **options)  # type: ignore[arg-type]
