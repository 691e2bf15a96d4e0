"""The dashboard's fleet pages (issue 24) through Starlette's TestClient against the real test
database: activity over each window, failures grouped by their error, the workers, search, bulk
re-run and cancel (CSRF, a confirmation, a flash message), an issue's runs linked both ways, and
every lane on the overview."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from tests.conftest import Database
from tests.helpers import FORGE, claimed, issue, tracked
from tests.support.roles import Login
from tests.support.web import Jobs, browser, csrf_of, job_ids, populate
from tireless import JobStore
from tireless.web import flash
from tireless.web.app import create_app
from tireless.web.dashboard import Dashboard


@pytest.fixture
def jobs(store: JobStore, db: Database) -> Jobs:
    return populate(store, db)


@pytest.fixture
def admin(db: Database) -> Iterator[TestClient]:
    with browser(create_app(db.conninfo)) as client:
        yield client


def state_of(db: Database, job_id: int) -> str:
    found: str = db.scalar("SELECT state::text FROM tireless.job WHERE id = %(j)s", {"j": job_id})
    return found


@pytest.mark.parametrize("window", ["1h", "24h", "7d"])
def test_activity_draws_each_window_with_the_lanes_and_their_times(
    admin: TestClient, jobs: Jobs, window: str
) -> None:
    page = admin.get(f"/activity?window={window}")
    assert page.status_code == 200
    assert f'<b aria-current="page">{window}</b>' in page.text
    assert '<svg id="activity-chart"' in page.text
    assert '<svg id="lane-chart-cc"' in page.text
    assert '<svg id="lane-chart-oc"' in page.text
    # one delivered, one failed, one cancelled job, all in the last bucket
    assert len(re.findall(r'<rect class="bar ', page.text)) == 3 + 3
    assert "delivered: 1" in page.text
    assert "pending now: 4" in page.text  # 3 in cc, 1 in oc
    durations = re.search(r'<table id="durations">.*?<tbody>(.*?)</tbody>', page.text, re.S)
    assert durations is not None
    rows = [
        re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)
        for tr in re.findall(r"<tr>(.*?)</tr>", durations.group(1), re.S)
    ]
    assert [(row[1], row[2], row[5]) for row in rows] == [("implement", "4", "2")]
    assert rows[0][3] == "&lt; 1s", "the tests' jobs waited milliseconds"


def test_an_unknown_window_is_400(admin: TestClient) -> None:
    assert admin.get("/activity?window=2d").status_code == 400
    assert admin.get("/failures?window=1y").status_code == 400


def test_an_empty_store_says_so(admin: TestClient) -> None:
    for path, words in (
        ("/activity", "Nothing happened in this window"),
        ("/failures", "No job failed in the last 24h"),
        ("/workers", "No worker has claimed a job"),
        ("/jobs", "none yet"),
        ("/", "No lanes yet"),
    ):
        assert words in admin.get(path).text, path


def test_failures_are_grouped_by_their_error_and_link_to_the_jobs(
    admin: TestClient, jobs: Jobs, store: JobStore
) -> None:
    again = claimed(store, "runner-e")  # the pending job, claimed; it fails as job 2 did
    store.transition(
        again.id, "failed", "runner-e", note="tests failed\nat line 3", token=again.claim_token
    )
    page = admin.get("/failures").text
    groups = re.search(r'<table id="failure-groups">.*?<tbody>(.*?)</tbody>', page, re.S)
    assert groups is not None
    assert ">tests failed</a>" in groups.group(1)
    assert '<td class="n">2</td>' in groups.group(1), "both failures share their first line"
    assert f'<a href="/jobs/{again.id}">{again.id}</a>' in groups.group(1), "the latest one"
    assert job_ids(page) == [again.id, again.id, jobs.failed], "the group's latest, then the list"
    listed = admin.get("/failures?error=tests+failed").text
    assert set(job_ids(listed)) == {again.id, jobs.failed}
    assert '<td class="note error">tests failed</td>' in listed


def test_the_workers_page_shows_who_holds_what_and_who_stopped_heartbeating(
    admin: TestClient, jobs: Jobs, store: JobStore
) -> None:
    job = store.claim_next("runner-c", ["cc"])  # runner-c holds a second job
    assert job is not None
    assert store.heartbeat(jobs.claimed, "runner-c") == "held"
    page = admin.get("/workers").text
    rows = {
        cells[0]: cells
        for cells in (
            [
                re.sub(r"<[^>]+>", "", cell).strip()
                for cell in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)
            ]
            for tr in re.findall(r"<tr class=\"worker-[\w-]+\">(.*?)</tr>", page, re.S)
        )
    }
    assert set(rows) == {"runner-a", "runner-b", "runner-c", "runner-d"}
    assert rows["runner-d"][1] == "stopped heartbeating"
    assert rows["runner-d"][2] == f"job {jobs.past_lease}"
    assert rows["runner-c"][1] == "working"
    assert rows["runner-c"][2] == f"job {job.id} and 1 more"
    assert rows["runner-c"][4] == "none since the claim", "the newest job has had no heartbeat"
    assert rows["runner-a"][1] == "idle"
    assert rows["runner-a"][6] == "cc"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("q=%235", [5]),
        ("q=5", [5]),
        ("q=plan+IT", [7]),
        ("q=acme%2Fgadgets", [8]),
        ("worker=runner-a", [1]),
        ("worker=runner-d", [4]),
        ("q=nothing+like+this", []),
    ],
)
def test_search_by_number_title_words_repository_and_worker(
    admin: TestClient, jobs: Jobs, query: str, expected: list[int]
) -> None:
    page = admin.get(f"/jobs?{query}")
    assert page.status_code == 200
    assert job_ids(page.text) == expected


def bulk(client: TestClient, action: str, ids: list[int], confirm: bool) -> str:
    token = csrf_of(client.get("/jobs").text)
    form = [("csrf", token), ("next", "/jobs?state=pending"), ("action", action)]
    form += [("job", str(i)) for i in ids] + ([("confirm", "yes")] if confirm else [])
    body = "&".join(
        f"{k}={v.replace('/', '%2F').replace('?', '%3F').replace('=', '%3D')}" for k, v in form
    )
    answer = client.post(
        "/jobs/bulk",
        content=body,
        headers={"content-type": "application/x-www-form-urlencoded"},
        follow_redirects=False,
    )
    if confirm:
        assert answer.status_code == 303, answer.text
        assert answer.headers["location"] == "/jobs?state=pending"
        answer = client.get(answer.headers["location"])
    assert answer.status_code == 200, answer.text
    return str(answer.text)


def test_bulk_cancel_asks_first_then_cancels_and_asks_the_holders_to_stop(
    admin: TestClient, jobs: Jobs, db: Database
) -> None:
    selected = [jobs.pending, jobs.child, jobs.claimed, jobs.delivered]
    confirm = bulk(admin, "cancel", selected, confirm=False)
    assert "Cancel 4 selected job(s)?" in confirm
    assert (
        '<button type="submit" class="danger" id="confirm" autofocus>Cancel 3 job(s)</button>'
        in (confirm)
    )
    assert "its holder is asked to stop" in confirm
    assert "unchanged: already delivered" in confirm
    assert state_of(db, jobs.pending) == "pending", "nothing changes before the confirmation"
    assert '<body data-refresh="0">' in confirm, "a page answering a POST never reloads itself"
    page = bulk(admin, "cancel", selected, confirm=True)
    assert state_of(db, jobs.pending) == state_of(db, jobs.child) == "cancelled"
    assert state_of(db, jobs.claimed) == "claimed"
    requested = "SELECT cancel_requested_at IS NOT NULL FROM tireless.job WHERE id = %(j)s"
    assert db.scalar(requested, {"j": jobs.claimed}) is True
    message = re.search(r'<p class="flash" id="flash" role="status">(.*?)</p>', page, re.S)
    assert message is not None
    assert message.group(1) == (
        f"Asked the holder of job {jobs.claimed} to stop; cancelled job {jobs.pending};"
        f" cancelled job {jobs.child}. Unchanged: job {jobs.delivered} (already delivered)."
    )
    assert 'id="flash"' not in admin.get("/jobs").text, "a flash message is shown once"


def test_bulk_rerun_makes_new_jobs_that_link_back_to_the_runs_before(
    admin: TestClient, jobs: Jobs, db: Database
) -> None:
    page = bulk(admin, "rerun", [jobs.delivered, jobs.failed, jobs.pending], confirm=True)
    new = {
        int(old): int(made) for old, made in re.findall(r"(?i)re-ran job (\d+) as job (\d+)", page)
    }
    assert set(new) == {jobs.delivered, jobs.failed}
    assert f"Unchanged: job {jobs.pending} (still pending" in page
    again = admin.get(f"/jobs/{new[jobs.failed]}").text
    assert f're-run of <a href="/jobs/{jobs.failed}">job {jobs.failed}</a>' in again
    before = admin.get(f"/jobs/{jobs.failed}").text
    assert f're-run as <a href="/jobs/{new[jobs.failed]}">job {new[jobs.failed]}</a>' in before
    assert state_of(db, new[jobs.delivered]) == "pending"


def test_bulk_actions_need_the_csrf_token_and_an_admin(
    jobs: Jobs,
    db: Database,
    admin: TestClient,
    login: Login,
) -> None:
    form = {"action": "cancel", "job": str(jobs.pending), "confirm": "yes"}
    assert admin.post("/jobs/bulk", data=form).status_code == 403
    assert admin.post("/jobs/bulk", data={**form, "csrf": "0" * 64}).status_code == 403
    with browser(create_app(login("tireless_runner"))) as reader:
        listing = reader.get("/jobs").text
        assert 'type="checkbox"' not in listing
        board: Dashboard = reader.app.state.dashboard  # type: ignore[attr-defined]
        token = board.csrf.token(reader.cookies["tireless_session"])
        assert reader.post("/jobs/bulk", data={**form, "csrf": token}).status_code == 403
    assert state_of(db, jobs.pending) == "pending"


def test_a_flash_cookie_the_server_did_not_sign_is_ignored(admin: TestClient, jobs: Jobs) -> None:
    admin.cookies.set(flash.COOKIE, "SGVsbG8.deadbeef")
    assert 'id="flash"' not in admin.get("/jobs").text


def test_every_lane_is_on_the_overview_also_without_live_jobs(
    admin: TestClient, store: JobStore, jobs: Jobs
) -> None:
    store.enqueue([issue(20, "tireless", "tireless/implement", "tireless/agent:gm")])
    job = claimed(store, "runner-g", ["gm"])
    store.transition(job.id, "delivered", "runner-g", token=job.claim_token)
    page = admin.get("/").text
    assert '<a href="/jobs?lane=gm">gm</a>' in page
    assert '<body data-refresh="15">' in page
    assert '<time datetime="' in page


def test_the_overview_flags_a_poller_that_missed_its_rounds(db: Database, store: JobStore) -> None:
    """ "Next poll: 19 seconds ago" is flagged once the poll is a minute late: the poller is dead."""
    store.add_forge(FORGE, "gitea", "https://git.example.com")
    tracked(store)
    with db.connect() as conn:
        conn.execute("UPDATE tireless.repo_poll SET next_poll_at = now() - interval '19 seconds'")
    with browser(create_app(db.conninfo)) as client:
        assert 'id="missed-poller"' not in client.get("/").text
        with db.connect() as conn:
            conn.execute(
                "UPDATE tireless.repo_poll SET next_poll_at = now() - interval '3 minutes'"
            )
        page = client.get("/").text
    assert 'id="missed-poller"' in page
    assert "The poller missed its rounds: 1 repositories due to be polled and not polled" in page


def test_each_worker_shows_the_jobs_it_delivered_and_failed(admin: TestClient, jobs: Jobs) -> None:
    page = admin.get("/workers").text
    rows = {
        cells[0]: cells
        for cells in (
            [
                re.sub(r"<[^>]+>", "", cell).strip()
                for cell in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)
            ]
            for tr in re.findall(r"<tr class=\"worker-[\w-]+\">(.*?)</tr>", page, re.S)
        )
    }
    assert [rows["runner-a"][-2:], rows["runner-b"][-2:], rows["runner-c"][-2:]] == [
        ["1", "0"],
        ["0", "1"],
        ["0", "0"],
    ]
