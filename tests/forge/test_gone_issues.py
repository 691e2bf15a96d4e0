"""Gone issues and archived repositories against the stand-in forge, through the real poll round
(issue 36): a deleted issue (Gitea 404, GitHub 410) or a transferred one (GitHub 301) is learned
once, its job ends, and no later round sends a request for it; an archived Gitea repository
(423) gets no write for a day while its reads go on, then one write is tried again."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from dev.standin import Request, StandinForge
from tests.conftest import Database
from tests.helpers import rows
from tests.support.forge import NAMES, OWNER, TOKEN, Setup, asked, claim, comments, one_round
from tireless import JobStore
from tireless.forge import token_variable

REPO = "widgets"


def _setup(
    flavour: str, db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Setup]:
    name = NAMES[flavour]
    monkeypatch.setenv(token_variable(name), TOKEN)
    with StandinForge(flavour, token=TOKEN) as forge:  # type: ignore[arg-type]
        store.add_forge(name, flavour, forge.url)
        setup = Setup(db, store, forge, name)
        setup.track(REPO)
        yield setup


@pytest.fixture(params=["gitea", "github"])
def setup(
    request: pytest.FixtureRequest, db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Setup]:
    yield from _setup(request.param, db, store, monkeypatch)


@pytest.fixture
def github(db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch) -> Iterator[Setup]:
    yield from _setup("github", db, store, monkeypatch)


@pytest.fixture
def gitea(db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch) -> Iterator[Setup]:
    yield from _setup("gitea", db, store, monkeypatch)


def about(forge: StandinForge, number: int, since: int = 0) -> list[tuple[str, str]]:
    """The requests received for the issue (its own path and every path under it) from the
    `since`-th request on: method and path after /repos/."""
    pattern = re.compile(rf"/repos/{OWNER}/{REPO}/issues/{number}(/|$)")
    return [
        (r.method, r.path.rsplit("/repos/", 1)[1])
        for r in forge.requests[since:]
        if pattern.search(r.path)
    ]


def gone(setup: Setup, number: int) -> str | None:
    (note,) = rows(
        setup.db,
        "SELECT gone_note FROM tireless.issue WHERE forge = %(f)s AND repo = %(r)s"
        " AND number = %(n)s",
        {"f": setup.name, "r": REPO, "n": number},
    )
    found: str | None = note[0]
    return found


def backoffs_pass(setup: Setup) -> None:
    """Every write that failed is due again: a retry would be made now (no sleeping)."""
    with setup.db.connect() as conn:
        conn.execute("UPDATE tireless.mirror_issue SET next_try_at = now() - interval '1 hour'")
        conn.execute(
            "UPDATE tireless.forge_write SET next_try_at = now() - interval '1 hour' WHERE kind = 'comment'"
        )


def delivered(setup: Setup) -> int:
    """An issue whose job was delivered, its label and comment not yet written."""
    number = asked(setup)
    job = claim(setup.store)
    setup.store.transition(job.id, "delivered", "host1-3", "merged")
    return number


def test_a_deleted_issue_gets_no_request_once_the_store_knows_it_is_gone(setup: Setup) -> None:
    number = delivered(setup)
    setup.forge.delete_issue(OWNER, REPO, number)
    since = len(setup.forge.requests)
    report = one_round(setup)
    assert "is gone" in str(report.mirror_error)
    assert gone(setup, number) == "issue deleted"
    # One read of the issue (404 on Gitea, 410 on GitHub) told the store; its comment was not tried.
    assert about(setup.forge, number, since) == [("GET", f"{OWNER}/{REPO}/issues/{number}")]
    for _ in range(4):
        backoffs_pass(setup)
        report = one_round(setup)
        assert (report.mirror_failed, report.mirror_error) == (0, None)
    assert len(about(setup.forge, number, since)) == 1
    assert setup.poll_state()["mirror_backlog"] == 0


def test_a_comment_refused_for_a_deleted_issue_is_not_retried(setup: Setup) -> None:
    number = delivered(setup)

    def delete_before_the_comment(request: Request) -> None:
        if request.method == "POST" and request.path.endswith(f"/issues/{number}/comments"):
            setup.forge.delete_issue(OWNER, REPO, number)

    setup.forge.on_write(delete_before_the_comment)
    report = one_round(setup)  # the labels are written, then the comment answers 404 or 410
    setup.forge.on_write(None)
    assert report.mirrored == 1
    assert "/comments" in str(report.mirror_error)
    assert gone(setup, number) == "issue deleted"
    asked_so_far = len(about(setup.forge, number))
    for _ in range(3):
        backoffs_pass(setup)
        one_round(setup)
    assert len(about(setup.forge, number)) == asked_so_far
    assert setup.poll_state()["mirror_backlog"] == 0


def test_a_transferred_issue_gets_no_more_state_label_writes(github: Setup) -> None:
    number = asked(github)
    job = claim(github.store)
    one_round(github)  # its claim is shown
    github.forge.create_repo(OWNER, "elsewhere")
    moved = github.forge.transfer_issue(OWNER, REPO, number, OWNER, "elsewhere")
    github.store.transition(job.id, "pending", "host1-3", "runner stopping")  # a label write due
    writes = len(github.forge.writes())
    one_round(github)
    where = f"issue moved to {OWNER}/elsewhere#{moved}"
    assert github.jobs() == {number: ("cancelled", where)}
    assert gone(github, number) == where
    for _ in range(3):
        backoffs_pass(github)
        one_round(github)
    assert len(github.forge.writes()) == writes  # not to the old path, nor to the moved issue


def archived_at(setup: Setup) -> object:
    return setup.db.scalar(
        f"SELECT archived_at FROM tireless.mirror_repo WHERE forge = '{setup.name}'"
    )


def a_day_passes(setup: Setup) -> None:
    with setup.db.connect() as conn:
        conn.execute(
            "UPDATE tireless.mirror_repo SET archived_at = archived_at - interval '25 hours'"
        )


def test_an_archived_repository_gets_no_write_for_a_day_and_a_probe_after(gitea: Setup) -> None:
    number = asked(gitea)
    job = claim(gitea.store)
    gitea.forge.archive_repo(OWNER, REPO)
    gitea.store.transition(job.id, "delivered", "host1-3", "merged")
    report = one_round(gitea)  # label writes pass; the comment answers 423 "repo is archived"
    assert "archived" in str(report.mirror_error)
    assert comments(gitea, number) == []
    assert archived_at(gitea) is not None
    writes, listings = len(gitea.forge.writes()), len(gitea.forge.listing_requests(OWNER, REPO))
    for _ in range(3):
        one_round(gitea)
    assert len(gitea.forge.writes()) == writes  # nothing written for a day
    assert len(gitea.forge.listing_requests(OWNER, REPO)) > listings  # the reads go on
    assert gitea.poll_state()["mirror_backlog"] == 1
    a_day_passes(gitea)
    one_round(gitea)  # the probe: one write, refused again
    assert [r.method for r in gitea.forge.writes()[writes:]] == ["POST"]
    assert archived_at(gitea) is not None
    gitea.forge.archive_repo(OWNER, REPO, archived=False)
    a_day_passes(gitea)
    one_round(gitea)
    assert len(comments(gitea, number)) == 1
    assert archived_at(gitea) is None
    assert gitea.poll_state()["mirror_backlog"] == 0
