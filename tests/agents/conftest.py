"""The agent tests' setup: the real CLIs at agents.json's pins (installed by dev.agents, cached;
a CLI its registry refuses skips its tests saying why), the stand-in forge with an issue's
repository, and the scripted model stand-in the gateway forwards to."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from dev.agents import installed
from dev.model_standin import ModelStandin
from dev.standin import StandinForge
from tests.conftest import Database
from tests.support.forge import OWNER, REPO, TOKEN, Setup
from tests.support.work import skip_unless_available
from tireless import JobStore
from tireless.forge import token_variable

FORGE = "gitea"


def cli(profile: str) -> tuple[str, str]:
    """The pinned CLI's program and version, installed if need be; skips saying why when its
    registry refuses it."""
    program, said = installed(profile)
    if program is None:
        print(f"{profile}: skipped: {said}")
        pytest.skip(f"{profile}: {said}")
    return program, said


@pytest.fixture
def setup(db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch) -> Iterator[Setup]:
    skip_unless_available("bwrap")
    monkeypatch.setenv(token_variable(FORGE), TOKEN)
    with StandinForge("gitea", token=TOKEN) as forge:
        store.add_forge(FORGE, "gitea", forge.url)
        setup = Setup(db, store, forge, FORGE)
        setup.track(REPO)
        forge.seed_git(OWNER, REPO, {"README.md": "widgets\n", "paint.txt": "red\n"})
        yield setup


@pytest.fixture
def model() -> Iterator[ModelStandin]:
    with ModelStandin() as standin:
        yield standin


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory the agent user may reach (the state directory, the upstream's secret), outside
    /tmp as /var/lib/tireless is: a workspace's objects are its cache's, which the sandbox shows
    only outside its private /tmp."""
    path = Path(tempfile.mkdtemp(prefix="tl-agents-", dir="/var/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def agent_user() -> list[str]:
    return ["--agent-user", "nobody"] if os.geteuid() == 0 else []
