"""`tireless web` through Starlette's TestClient against the real test database: every page with
jobs in every state, the jobs filters and keyset paging, actions for an admin only and only with
the session's CSRF token, and nothing secret on any page."""

from __future__ import annotations

import re

import pytest
from psycopg.conninfo import make_conninfo
from starlette.testclient import TestClient

from tests.conftest import Database
from tests.helpers import issue, tracked
from tests.support.roles import Login
from tests.support.web import SITE, Client, Jobs, browser, csrf_of, job_ids, lane_row, populate
from tireless import JobStore
from tireless.web.app import create_app
from tireless.web.dashboard import Dashboard


@pytest.fixture
def jobs(store: JobStore, db: Database) -> Jobs:
    return populate(store, db)


def test_the_overview_shows_each_lane_with_its_queue_and_breaker(
    admin: TestClient, jobs: Jobs
) -> None:
    page = admin.get("/")
    assert page.status_code == 200
    lanes = re.search(r'<table id="lanes">.*?<tbody>(.*?)</tbody>', page.text, re.S)
    assert lanes is not None
    cells = {
        row[0]: row[1:]
        for row in (
            re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)
            for tr in re.findall(r"<tr>(.*?)</tr>", lanes.group(1), re.S)
        )
    }
    cc = cells['<a href="/jobs?lane=cc">cc</a>']
    # pending: issues 5 and 8 of acme/widgets and 1 of acme/gadgets; claimed: two, one past its lease
    assert cc[:5] == ["3", "3", "2", "1", "unlimited"]
    oc = cells['<a href="/jobs?lane=oc">oc</a>']
    assert oc[:4] == ["1", "1", "0", "0"]
    assert oc[6].strip() == "none"  # no daily budget
    assert "paused" in oc[7]
    assert "open" in oc[8]
    assert "cools down at" in oc[8]
    assert "3 failure(s) in a row" in oc[8]
    assert "Connected as" in page.text
    assert 'id="finished-chart"' in page.text


def test_the_chart_counts_the_jobs_finished_this_hour(admin: TestClient, jobs: Jobs) -> None:
    page = admin.get("/").text
    assert "delivered: 1" in page
    assert "failed: 1" in page
    assert "cancelled: 1" in page
    assert len(re.findall(r'<rect class="bar ', page)) == 3


def test_every_job_page_renders_its_row_timeline_and_family(
    admin: TestClient, jobs: Jobs, db: Database
) -> None:
    for job_id in (jobs.pending, jobs.claimed, jobs.past_lease, jobs.delivered, jobs.failed):
        assert admin.get(f"/jobs/{job_id}").status_code == 200
    delivered = admin.get(f"/jobs/{jobs.delivered}").text
    timeline = re.search(r'<ol class="timeline" id="timeline">(.*?)</ol>', delivered, re.S)
    assert timeline is not None
    entries = re.findall(r"<li class=\"event state-(\w+)\">", timeline.group(1))
    assert entries == ["pending", "claimed", "delivered"]
    assert "held by runner-a, attempt 1" in timeline.group(1)
    assert "opened PR #3" in timeline.group(1)
    assert re.search(r"for \d+s", timeline.group(1)), "how long the attempt took"
    plan = admin.get("/jobs/7").text
    assert f'<a href="/jobs/{jobs.child}">{jobs.child}</a>' in plan, "its child"
    assert "Plan &lt;b&gt;it&lt;/b&gt;" in plan, "HTML from an issue title is escaped"
    child = admin.get(f"/jobs/{jobs.child}").text
    assert '<a href="/jobs/7">job 7</a>' in child, "its parent"
    past = admin.get(f"/jobs/{jobs.past_lease}").text
    assert "past its lease" in past
    token = db.scalar(
        "SELECT claim_token::text FROM tireless.job WHERE id = %(p)s", {"p": jobs.claimed}
    )
    assert token not in admin.get(f"/jobs/{jobs.claimed}").text, "the fencing token stays secret"


def test_a_job_page_shows_the_step_its_agent_last_reported(
    admin: TestClient, jobs: Jobs, store: JobStore
) -> None:
    assert 'id="step"' not in admin.get(f"/jobs/{jobs.claimed}").text, "no progress yet"
    store.report_progress(jobs.claimed, "runner-c", "ran <b>the</b> tests")
    page = admin.get(f"/jobs/{jobs.claimed}").text
    step = re.search(r'<dd id="step">(.*?)</dd>', page, re.S)
    assert step is not None
    assert step.group(1).startswith("ran &lt;b&gt;the&lt;/b&gt; tests (attempt 1, last progress ")


def test_an_unknown_job_is_404(admin: TestClient, jobs: Jobs) -> None:
    page = admin.get("/jobs/99999")
    assert page.status_code == 404
    assert "no job with id 99999" in page.text


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", [9, 8, 7, 6, 5, 4, 3, 2, 1]),
        ("state=pending", [9, 8, 7, 5]),
        ("state=claimed", [4, 3]),
        ("state=delivered", [1]),
        ("lane=oc", [7]),
        ("kind=plan", [7]),
        ("repo=acme/gadgets", [8]),
        ("forge=gitea&repo=acme/widgets&state=pending", [9, 7, 5]),
        ("forge=github", []),
    ],
)
def test_the_jobs_filters(admin: TestClient, jobs: Jobs, query: str, expected: list[int]) -> None:
    page = admin.get(f"/jobs?{query}")
    assert page.status_code == 200
    assert job_ids(page.text) == expected


@pytest.mark.parametrize("query", ["state=running", "kind=review", "repo=acme", "before=x1"])
def test_a_filter_that_names_nothing_is_400(admin: TestClient, query: str) -> None:
    assert admin.get(f"/jobs?{query}").status_code == 400


def test_keyset_paging_visits_every_job_once_both_ways(
    admin: TestClient, store: JobStore, db: Database
) -> None:
    tracked(store)
    store.enqueue([issue(n) for n in range(1, 121)])
    seen: list[int] = []
    pages: list[str] = []
    link: str | None = "/jobs"
    while link is not None:
        page = admin.get(link).text
        pages.append(link)
        seen += job_ids(page)
        found = re.search(r'<a rel="next" href="([^"]+)">', page)
        link = found.group(1).replace("&amp;", "&") if found else None
    assert seen == list(range(120, 0, -1))
    assert len(pages) == 3
    assert pages[1] == "/jobs?before=71"
    back = admin.get("/jobs?after=20").text
    assert job_ids(back) == list(range(70, 20, -1))
    newer = re.search(r'<a rel="prev" href="([^"]+)">', back)
    assert newer is not None
    assert job_ids(admin.get(newer.group(1)).text) == list(range(120, 70, -1))
    filtered = admin.get("/jobs?state=pending&before=10").text
    assert job_ids(filtered) == list(range(9, 0, -1))
    assert 'rel="next"' not in filtered


def test_an_admin_pauses_resumes_and_resets_a_lane(
    admin: TestClient, jobs: Jobs, db: Database
) -> None:
    token = csrf_of(admin.get("/").text)
    done = admin.post("/lanes/cc/pause", data={"csrf": token, "next": "/"}, follow_redirects=False)
    assert done.status_code == 303
    assert done.headers["location"] == "/"
    assert lane_row(db, "cc")[0] is True
    assert admin.post("/lanes/cc/resume", data={"csrf": token}).status_code == 200
    assert lane_row(db, "cc")[0] is False
    assert admin.post("/lanes/oc/reset-breaker", data={"csrf": token}).status_code == 200
    assert lane_row(db, "oc") == (True, 0, False)


def test_an_admin_cancels_a_pending_job_and_asks_a_claimed_ones_holder_to_stop(
    admin: TestClient, jobs: Jobs, db: Database
) -> None:
    token = csrf_of(admin.get(f"/jobs/{jobs.pending}").text)
    done = admin.post(f"/jobs/{jobs.pending}/cancel", data={"csrf": token}, follow_redirects=False)
    assert done.status_code == 303
    assert done.headers["location"] == f"/jobs/{jobs.pending}"
    state = "SELECT state::text || ' ' || note FROM tireless.job WHERE id = %(p)s"
    assert db.scalar(state, {"p": jobs.pending}).startswith(
        "cancelled cancelled from the dashboard by"
    )
    asked = admin.post(f"/jobs/{jobs.claimed}/cancel", data={"csrf": token})
    assert asked.status_code == 200
    assert db.scalar(state, {"p": jobs.claimed}).startswith("claimed cancelled from the dashboard")
    assert db.scalar(
        "SELECT cancel_requested_at IS NOT NULL FROM tireless.job WHERE id = %(p)s",
        {"p": jobs.claimed},
    )
    refused = admin.post(f"/jobs/{jobs.delivered}/cancel", data={"csrf": token})
    assert refused.status_code == 409
    assert "refused (TL003)" in refused.text


def test_a_post_without_the_sessions_csrf_token_changes_nothing(
    admin: TestClient, jobs: Jobs, db: Database, connect_as: Client
) -> None:
    before = lane_row(db, "cc")
    assert admin.post("/lanes/cc/pause", data={}).status_code == 403
    assert admin.post("/lanes/cc/pause", data={"csrf": "0" * 64}).status_code == 403
    other = connect_as(db.conninfo)
    others_token = csrf_of(other.get("/").text)
    admin.get("/")  # admin has its own session
    assert admin.post("/lanes/cc/pause", data={"csrf": others_token}).status_code == 403
    fresh = browser(admin.app)  # type: ignore[arg-type]  # no session cookie at all
    assert fresh.post("/lanes/cc/pause", data={"csrf": others_token}).status_code == 403
    assert admin.post(f"/jobs/{jobs.pending}/cancel", data={"csrf": "x"}).status_code == 403
    assert lane_row(db, "cc") == before == (False, 1, False)
    assert (
        db.scalar("SELECT state::text FROM tireless.job WHERE id = %(p)s", {"p": jobs.pending})
        == "pending"
    )


@pytest.mark.parametrize("group", ["tireless_runner", "tireless_poller"])
def test_without_admin_the_pages_are_read_only_and_actions_refused(
    jobs: Jobs,
    db: Database,
    login: Login,
    connect_as: Client,
    group: str,
) -> None:
    client = connect_as(login(group))
    overview = client.get("/")
    assert overview.status_code == 200
    assert "Read-only" in overview.text
    assert '<table id="lanes">' in overview.text
    assert '<form method="post"' not in overview.text
    page = client.get(f"/jobs/{jobs.pending}")
    assert page.status_code == 200
    assert "Read-only" in page.text
    assert job_ids(client.get("/jobs?state=claimed").text) == [4, 3]
    # Even with a good token for its session, the action is refused and changes nothing.
    board: Dashboard = client.app.state.dashboard  # type: ignore[attr-defined]
    token = board.csrf.token(client.cookies["tireless_session"])
    assert client.post("/lanes/cc/pause", data={"csrf": token}).status_code == 403
    assert client.post(f"/jobs/{jobs.pending}/cancel", data={"csrf": token}).status_code == 403
    assert db.scalar("SELECT paused FROM tireless.lane WHERE name = 'oc'") is True
    assert db.scalar("SELECT paused FROM tireless.lane WHERE name = 'cc'") is False
    assert (
        db.scalar("SELECT state::text FROM tireless.job WHERE id = %(p)s", {"p": jobs.pending})
        == "pending"
    )


def test_no_page_shows_the_database_password(db: Database, jobs: Jobs, connect_as: Client) -> None:
    client = connect_as(make_conninfo(db.conninfo, password="hunter2-secret"))
    for path in (
        "/",
        "/jobs",
        f"/jobs/{jobs.delivered}",
        "/jobs/424242",
        "/jobs?state=x",
        "/metrics",
    ):
        page = client.get(path)
        assert "hunter2-secret" not in page.text
        assert "password" not in page.text
    assert re.search(r"database [^<]+/tireless_test", client.get("/").text)


def test_an_error_page_tells_nothing_of_the_error(db: Database) -> None:
    app = create_app(make_conninfo(db.conninfo, dbname="no_such_db_xyz", password="hunter2-secret"))
    with TestClient(app, base_url=SITE, raise_server_exceptions=False) as client:
        page = client.get("/")
    assert page.status_code == 503
    assert page.headers["x-frame-options"] == "DENY"  # the guard's headers on an error page too
    assert "hunter2-secret" not in page.text
    assert "no_such_db_xyz" in page.text  # the database label, host/dbname only
    assert "FATAL" not in page.text


def test_an_admin_reruns_a_finished_issue(admin: TestClient, jobs: Jobs, db: Database) -> None:
    token = csrf_of(admin.get(f"/jobs/{jobs.delivered}").text)
    done = admin.post(f"/jobs/{jobs.delivered}/rerun", data={"csrf": token}, follow_redirects=False)
    assert done.status_code == 303
    new_job = int(done.headers["location"].removeprefix("/jobs/"))
    assert new_job > jobs.child
    assert (
        db.scalar(
            "SELECT state::text || ' ' || number FROM tireless.job WHERE id = %(p)s", {"p": new_job}
        )
        == "pending 1"
    )
    again = admin.post(f"/jobs/{jobs.delivered}/rerun", data={"csrf": token})
    assert again.status_code == 409, "a live job exists now"
    assert db.scalar("SELECT count(*) FROM tireless.job WHERE number = 1 AND repo = 'widgets'") == 2


def test_each_job_links_to_its_issue_on_a_registered_forge(
    admin: TestClient, jobs: Jobs, store: JobStore
) -> None:
    assert 'href="https://' not in admin.get("/jobs").text, "no registry entry, no link"
    store.add_forge("gitea", "gitea", "https://gitea.example/")
    page = admin.get("/jobs?repo=acme/widgets").text
    assert '<a href="https://gitea.example/acme/widgets/issues/8" rel="noreferrer">' in page
    store.add_forge("gitea", "github", "https://api.github.com")
    assert 'href="https://github.com/acme/gadgets/issues/1"' in admin.get("/jobs").text
    store.add_forge("gitea", "github", "https://ghe.example/api/v3")
    job = admin.get(f"/jobs/{jobs.delivered}").text
    assert 'href="https://ghe.example/acme/widgets/issues/1"' in job


def test_the_overview_shows_each_repository_and_its_last_error(
    admin: TestClient, jobs: Jobs, db: Database
) -> None:
    with db.connect() as conn:
        conn.execute(
            "UPDATE tireless.repo_poll SET consecutive_failures = 2, last_error = '<502> Bad Gateway',"
            " last_error_at = now(), backoff_until = now() + interval '1 minute'"
            " WHERE repo = 'gadgets'"
        )
        conn.execute(
            "INSERT INTO tireless.mirror_issue (forge, owner, repo, number, job_id, state,"
            " failures, last_error, last_error_at)"
            " VALUES ('gitea', 'acme', 'gadgets', 1, %s, 'pending', 1, 'HTTP 403 <read-only>', now())",
            (jobs.delivered,),
        )
    page = admin.get("/").text
    repos = re.search(r'<table id="repos">.*?<tbody>(.*?)</tbody>', page, re.S)
    assert repos is not None
    rows = re.findall(r"<tr>(.*?)</tr>", repos.group(1), re.S)
    assert len(rows) == 2
    gadgets = next(row for row in rows if "acme/gadgets" in row)
    assert "&lt;502&gt; Bad Gateway" in gadgets
    assert "backing off until" in gadgets
    assert "forge gitea is not registered" in gadgets
    assert "mirror: HTTP 403 &lt;read-only&gt;" in gadgets
    widgets = next(row for row in rows if "acme/widgets" in row)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", widgets, re.S)
    assert cells[1:3] == ["3", "2"], "pending: 5, 7 and the child 9; claimed: 3 and 4"
