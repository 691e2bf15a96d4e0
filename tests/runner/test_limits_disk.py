"""The disk limit through `tireless work --deliver --sandbox bwrap` against the stand-in forge
(issue 47): an agent writing past its lane's limit into its workspace, and one writing past it
into the sandbox's /tmp (a tmpfs of that size), are stopped with the note naming the limit, and
nothing of either is left: no process, no workspace, no control group."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dev.standin import StandinForge
from tests.conftest import Database
from tests.helpers import tireless_cli
from tests.support.forge import OWNER, TOKEN, Setup, one_round
from tests.support.work import MARKER, marked, processes_marked, skip_unless_available
from tireless import JobStore
from tireless.forge import token_variable
from tireless.runner.limits import TREE, Cgroups, Unenforceable, own_cgroups

REPO = "widgets"
FORGE = "gitea"
IMPLEMENT = ["tireless", "tireless/implement"]
WRITE = "dd if=/dev/zero of={} bs=1M count=40 2>&1 | tail -1; exec sleep 60"
"""40 MiB written (past the 16 MiB limit), then an agent that would go on a minute."""


@pytest.fixture
def setup(db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch) -> Iterator[Setup]:
    skip_unless_available("bwrap")
    try:
        Cgroups.find().close()
    except Unenforceable as lacking:
        pytest.skip(f"this host cannot make control groups: {lacking}")
    monkeypatch.setenv(token_variable(FORGE), TOKEN)
    with StandinForge("gitea", token=TOKEN) as forge:
        store.add_forge(FORGE, "gitea", forge.url)
        setup = Setup(db, store, forge, FORGE)
        setup.track(REPO)
        forge.seed_git(OWNER, REPO, {"README.md": "widgets\n"})
        yield setup


@pytest.mark.parametrize("target", ["big.bin", "/tmp/big.bin"], ids=["workspace", "tmp"])
def test_writing_past_the_disk_limit_stops_the_attempt_and_leaves_nothing(
    setup: Setup, tmp_path: Path, target: str
) -> None:
    setup.store.set_lane_limits("cc", disk="16M")
    number = setup.forge.create_issue(OWNER, REPO, "Fill the disk", IMPLEMENT)
    one_round(setup)
    marker = marked()
    state = tmp_path / "state"
    result = tireless_cli(
        setup.db.url, "work", "--worker", "runner-1", "--lane", "cc", "--once", "--deliver",
        "--sandbox", "bwrap", "--state-dir", str(state), "--",
        "sh", "-c", WRITE.format(target), **{token_variable(FORGE): TOKEN}, **marker,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    state_and_note = setup.jobs(REPO)[number]
    assert state_and_note[0] == "pending"
    assert (state_and_note[1] or "").startswith("disk limit 16 MiB exceeded"), state_and_note
    assert processes_marked(marker[MARKER]) == []
    assert list((state / "workspaces").iterdir()) == []
    _, own = own_cgroups()
    assert [p for base in own.values() for p in (base / TREE).glob("w*/job*")] == []
    reached = setup.db.scalar("SELECT limit_reached FROM tireless.job_usage")
    assert reached == "disk"
