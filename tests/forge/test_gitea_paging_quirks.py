"""Gitea's paging quirks (issue 36), against the stand-in forge on 127.0.0.1 through the real
client and the real mirror: a request made again after its job began is found on any page of the
issue's timeline (whose X-Total-Count counts one page, whose `limit` the server's
MAX_RESPONSE_ITEMS clamps, and whose empty page is `null`), and a repository's labels are all
found on a server that serves fewer a page than asked, so none is made twice."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from dev.standin import PERSON, StandinForge
from tests.conftest import Database
from tests.support.forge import (
    OWNER,
    PLAN,
    REPO,
    STATE,
    TOKEN,
    Setup,
    ask_again,
    asked,
    claimed_a_while_ago,
    jobs,
    labels,
    one_round,
)
from tireless import JobStore
from tireless.forge import token_variable
from tireless.forge.gitea import PAGE_SIZE, GiteaClient

MODE = "tireless/plan"
OTHER_LABELS = 66
"""With tireless, tireless/plan and three state labels: 71 repository labels."""


def gitea_setup(
    db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch, forge: StandinForge
) -> Setup:
    monkeypatch.setenv(token_variable("gitea"), TOKEN)
    store.add_forge("gitea", "gitea", forge.url)
    return Setup(db, store, forge, "gitea")


@pytest.fixture(params=[PAGE_SIZE, 30], ids=["max-items-as-asked", "max-items-30"])
def gitea(
    request: pytest.FixtureRequest, db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Setup]:
    """A Gitea whose `[api] MAX_RESPONSE_ITEMS` is the client's page size, or 30 (below it)."""
    with StandinForge("gitea", token=TOKEN, max_page_size=request.param) as forge:
        yield gitea_setup(db, store, monkeypatch, forge)


def timeline_pages(setup: Setup, number: int) -> list[int]:
    """The timeline pages of the issue the client asked for, in order."""
    path = f"/api/v1/repos/{OWNER}/{REPO}/issues/{number}/timeline"
    return [int(r.query["page"]) for r in setup.forge.requests if r.path == path]


def test_a_request_made_again_on_the_timelines_third_page_keeps_its_label_and_gets_its_job(
    gitea: Setup,
) -> None:
    number, job = claimed_a_while_ago(gitea)
    served = gitea.forge.max_page_size
    for n in range(2 * served + 5):  # a long discussion after the job began: two pages and more
        gitea.forge.add_comment_as(OWNER, REPO, number, PERSON, f"thought {n}")
    ask_again(gitea, number)  # its label events come after every comment: on the third page
    gitea.store.transition(job.id, "delivered", "host1-3", "done")
    for _ in range(3):
        one_round(gitea)
    assert MODE in labels(gitea, number), "the person's label stays"
    assert jobs(gitea, number) == ["delivered", "pending"], "the new request has its job"
    assert 3 in timeline_pages(gitea, number)


def test_the_timelines_count_is_of_its_page_and_a_page_past_the_end_is_null() -> None:
    with StandinForge("gitea", token=TOKEN, max_page_size=30) as forge:
        forge.create_repo(OWNER, REPO)
        number = forge.create_issue(OWNER, REPO, "asks", PLAN)
        for n in range(40):
            forge.add_comment_as(OWNER, REPO, number, PERSON, f"thought {n}")
        url = f"{forge.url}/api/v1/repos/{OWNER}/{REPO}/issues/{number}/timeline"
        auth = {"Authorization": f"token {TOKEN}"}
        pages = [
            httpx.get(url, params={"page": page, "limit": PAGE_SIZE}, headers=auth)
            for page in (1, 2, 3)
        ]
    assert [len(page.json() or []) for page in pages] == [30, 10, 0]  # limit clamped to 30
    assert [page.headers["x-total-count"] for page in pages] == ["30", "10", "0"]
    assert pages[2].content == b"null"


def test_a_null_timeline_reads_as_no_events() -> None:
    with StandinForge("gitea", token=TOKEN) as forge:
        forge.create_repo(OWNER, REPO)
        number = forge.create_issue(OWNER, REPO, "asks", PLAN)
        forge.set_labels(OWNER, REPO, number, ["tireless"])
        client = GiteaClient(forge.url, TOKEN)
        try:
            later = datetime.now(UTC) + timedelta(minutes=1)  # nothing happened since: null
            assert client.issue_events(OWNER, REPO, number, later) == []
            earlier = datetime.now(UTC) - timedelta(minutes=1)
            events = client.issue_events(OWNER, REPO, number, earlier)
        finally:
            client.close()
    assert [(e.kind, e.label) for e in events] == [("unlabeled", MODE)]


@pytest.fixture(params=[True, False], ids=["counted", "uncounted-up-to-1.15"])
def crowded(
    request: pytest.FixtureRequest, db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Setup]:
    """A Gitea with MAX_RESPONSE_ITEMS = 30 and 71 repository labels (the state labels on its
    third page, sorted by name) and organisation labels; its label lists with X-Total-Count, or
    without as up to Gitea 1.15."""
    with StandinForge(
        "gitea", token=TOKEN, max_page_size=30, gitea_label_totals=request.param
    ) as forge:
        setup = gitea_setup(db, store, monkeypatch, forge)
        setup.track(REPO)
        for name in ("area/shared", "kind/bug", "kind/idea"):
            forge.create_org_label(OWNER, name)
        states = [f"{STATE}{state}" for state in ("pending", "claimed", "delivered")]
        others = [f"area/{n:02}" for n in range(OTHER_LABELS)]
        forge.create_issue(OWNER, REPO, "labelled long ago", [*others, *PLAN, *states])
        yield setup


def test_labels_past_the_first_pages_are_found_so_none_is_made_twice(crowded: Setup) -> None:
    forge = crowded.forge
    assert len(forge.label_names(OWNER, REPO)) == 71
    client = GiteaClient(forge.url, TOKEN)
    try:
        for state in ("pending", "claimed", "delivered"):
            client.ensure_label(OWNER, REPO, f"{STATE}{state}", "the job's state")
    finally:
        client.close()
    number = asked(crowded)  # the real mirror shows `pending` with the label it finds
    assert f"{STATE}pending" in labels(crowded, number)
    label_posts = [r for r in forge.writes() if r.path == f"/api/v1/repos/{OWNER}/{REPO}/labels"]
    assert label_posts == [], "no label that exists is made again"
    names = forge.label_names(OWNER, REPO)
    assert len(names) == len(set(names)) == 71
