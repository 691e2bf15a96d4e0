"""The job list means the same everywhere: for the same filter, `tireless jobs` and the dashboard's
job list answer the same jobs, since both call tireless.list_jobs through tireless.store.reads."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from tests.conftest import Database
from tests.helpers import WORK, claimed, cli_json, issue, tracked
from tireless import JobStore
from tireless.web.app import create_app

SITE = "http://localhost"


@pytest.fixture
def dashboard(db: Database, store: JobStore) -> Iterator[TestClient]:
    """The dashboard over a store with jobs in two repositories, two lanes, two kinds, four states
    and three workers' hands."""
    tracked(tracked(store), "gadgets")
    for each in [
        issue(1, title="Fix the login page"),
        issue(2, "tireless", "tireless/plan", title="Plan the Login rework"),
        issue(3, *WORK, "tireless/agent:oc", title="Speed up search"),
        issue(4, title="Login again"),
    ]:
        store.enqueue([each])
    first = claimed(store, "runner-a")
    store.transition(first.id, "delivered", "runner-a", token=first.claim_token)
    second = claimed(store, "runner-b")
    store.give_back(second.id, "runner-b", token=second.claim_token)
    claimed(store, "runner-c", ["oc"])
    store.enqueue([issue(1, repo="gadgets", title="Login for gadgets"), issue(5, repo="gadgets")])
    with TestClient(create_app(db.conninfo), base_url=SITE, headers={"Origin": SITE}) as client:
        yield client


@pytest.mark.parametrize(
    ("command", "query", "kept"),
    [
        ([], "", 6),
        (["--state", "pending"], "state=pending", 4),
        (["--state", "delivered"], "state=delivered", 1),
        (["--kind", "plan"], "kind=plan", 1),
        (["--lane", "oc"], "lane=oc", 1),
        (["--forge", "gitea"], "forge=gitea", 6),
        (["--repo", "acme/gadgets"], "repo=acme/gadgets", 2),
        (["--worker", "runner-b"], "worker=runner-b", 1),
        (["--worker", "runner-c"], "worker=runner-c", 1),
        (["--number", "1"], "q=%231", 2),
        (["--title", "LOGIN"], "q=login", 4),
        (["--title", "login page"], "q=page+login", 1),
        (
            ["--state", "pending", "--repo", "acme/widgets", "--title", "login"],
            "state=pending&repo=acme/widgets&q=login",
            2,
        ),
        (["--kind", "implement", "--number", "1", "--lane", "cc"], "kind=implement&q=1&lane=cc", 2),
        (["--title", "nothing like this"], "q=nothing+like+this", 0),
    ],
)
def test_the_cli_and_the_dashboard_list_the_same_jobs_for_a_filter(
    db: Database, dashboard: TestClient, command: list[str], query: str, kept: int
) -> None:
    listed = cli_json(db.conninfo, "jobs", "--newest", *command)
    page = dashboard.get(f"/jobs?{query}")
    assert page.status_code == 200
    shown = [int(i) for i in re.findall(r'<td class="n"><a href="/jobs/(\d+)">', page.text)]
    assert [job["id"] for job in listed] == shown
    assert len(shown) == kept
