"""The dashboard's job page shows what the job delivered (branch, head, base, the pull request as a
link once the mirror recorded it, or no change) and its last checkpoint."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from tests import outbox
from tests.conftest import Database
from tests.helpers import FORGE, OWNER, REPO, claimed, issue, tracked
from tests.support.web import browser
from tireless import JobStore
from tireless.web.app import create_app

HEAD, BASE = "a1" * 20, "b2" * 20
URL = "https://git.example.com/acme/widgets/pulls/12"


@pytest.fixture
def dashboard(db: Database) -> Iterator[TestClient]:
    with browser(create_app(db.conninfo)) as client:
        yield client


def field(page: str, name: str) -> str:
    found = re.search(rf'<dd id="{name}">(.*?)</dd>', page, re.S)
    assert found is not None, f"the page has no {name}"
    return found.group(1)


def test_a_job_page_shows_its_delivery_its_pull_request_and_its_checkpoint(
    store: JobStore, dashboard: TestClient
) -> None:
    store.add_forge(FORGE, "gitea", "https://git.example.com")
    tracked(store).enqueue([issue(1), issue(2)])
    job, unchanged = claimed(store), claimed(store)
    store.record_checkpoint(job.id, "w1", "refs/tireless/checkpoints/1", BASE)
    store.deliver(job.id, "w1", "tireless/1", HEAD, "main", BASE, draft=True)
    page = dashboard.get(f"/jobs/{job.id}").text
    assert field(page, "delivery") == (
        f"<code>tireless/1</code> at <code>{HEAD}</code>, on <code>main</code> at <code>{BASE}</code>"
    )
    assert field(page, "pull") == "not written yet (draft)"
    assert field(page, "checkpoint").startswith(
        f"<code>refs/tireless/checkpoints/1</code> at <code>{BASE}</code> (attempt 1, "
    )
    store.claim_repos_to_poll("p1")
    outbox.record(store, "pull", FORGE, OWNER, REPO, "p1", job.id, result=outbox.pull(12, URL))
    page = dashboard.get(f"/jobs/{job.id}").text
    assert field(page, "pull") == f'<a href="{URL}" rel="noreferrer">#12</a> (draft)'
    store.deliver(unchanged.id, "w1")
    page = dashboard.get(f"/jobs/{unchanged.id}").text
    assert field(page, "delivery") == "no change"
    assert 'id="pull"' not in page
    assert 'id="checkpoint"' not in page


def test_a_revision_page_says_what_it_answers_with_the_askers_text_escaped(
    store: JobStore, dashboard: TestClient
) -> None:
    store.add_forge(FORGE, "gitea", "https://git.example.com")
    tracked(store).enqueue([issue(1)])
    job = claimed(store)
    store.deliver(job.id, "w1", "tireless/1", HEAD, "main", BASE)
    store.claim_repos_to_poll("p1")
    outbox.record(store, "pull", FORGE, OWNER, REPO, "p1", job.id, result=outbox.pull(12, URL))
    review = {
        "source": "review", "id": 501, "number": 12, "author": "<b>alice</b>", "permission": "write",
        "state": "changes_requested", "created_at": "2099-01-01T00:00:00Z", "body": "rename it",
    }  # fmt: skip
    store.record_conversation(FORGE, OWNER, REPO, "p1", "tireless-bot", [review])
    revision = claimed(store)
    page = dashboard.get(f"/jobs/{revision.id}").text
    assert field(page, "asks") == "review 501 by &lt;b&gt;alice&lt;/b&gt; on #12"
    assert 'id="asks"' not in dashboard.get(f"/jobs/{job.id}").text
