"""The poller against the stand-in forge over real HTTP, both API families, against the real
database: what a round creates, cancels and remembers, and how a failing repository changes
nothing while the others go on."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from dev.standin import StandinForge, StoredIssue, issues_of
from tests.conftest import Database
from tests.support.forge import OWNER, PLAN, TOKEN, Setup
from tireless import JobStore
from tireless.forge import token_variable
from tireless.forge.poll import Report, client_factory, poll_round


def test_first_poll_makes_a_job_for_each_issue_that_asks(setup: Setup) -> None:
    setup.track("widgets")
    asks = setup.forge.create_issue(OWNER, "widgets", "asks", PLAN)
    setup.forge.create_issue(OWNER, "widgets", "opted in, no mode", ["tireless"])
    closed = setup.forge.create_issue(OWNER, "widgets", "closed", PLAN)
    setup.forge.close_issue(OWNER, "widgets", closed)
    setup.forge.create_issue(OWNER, "widgets", "a pull request", PLAN, pull_request=True)
    (report,) = setup.round()
    assert report.error is None
    assert (report.created, report.issues_read, report.pages) == (1, 2, 1)
    assert report.line() == f"{setup.name}/acme/widgets: 1 new job, 2 issues read in 1 page"
    assert setup.jobs() == {asks: ("pending", None)}
    state = setup.poll_state()
    assert state["last_error"] is None
    assert state["last_success_at"] is not None
    shown = [i for i in _issues(setup) if i.state == "open" and not i.pull_request]
    newest = max(i.updated_at for i in shown)  # the first read lists the open issues
    assert datetime.fromisoformat(state["cursor"]) == newest  # the forge's time, not ours


def _issues(setup: Setup) -> list[StoredIssue]:
    return list(issues_of(setup.forge, OWNER, "widgets"))


def test_incremental_poll_reads_since_the_cursor_and_a_repeat_writes_nothing(setup: Setup) -> None:
    setup.track("widgets")
    first = setup.forge.create_issue(OWNER, "widgets", "first", PLAN)
    setup.round()
    setup.round()  # the mirror labels the new job's issue, and the read records that label
    before = setup.snapshot()
    (again,) = setup.round()
    assert again.error is None
    assert again.created == 0
    listing = setup.forge.listing_requests(OWNER, "widgets")[-1]
    assert "since" in listing.query
    assert listing.query["state"] == "all"
    assert setup.snapshot()[:3] == before[:3]  # no job, issue or event row written
    second = setup.forge.create_issue(OWNER, "widgets", "second", PLAN)
    (third,) = setup.round()
    assert third.created == 1
    assert set(setup.jobs()) == {first, second}


def test_pagination_follows_links_across_the_clamped_page_size(setup: Setup) -> None:
    setup.track("widgets")
    for n in range(120):
        setup.forge.create_issue(OWNER, "widgets", f"issue {n}", PLAN)
    (report,) = setup.round()
    assert (report.created, report.issues_read, report.pages) == (120, 120, 3)
    assert report.line() == f"{setup.name}/acme/widgets: 120 new jobs, 120 issues read in 3 pages"
    assert len(setup.jobs()) == 120


def test_github_asks_with_its_etag_and_a_304_changes_nothing(
    db: Database, store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(token_variable("gh"), TOKEN)
    with StandinForge("github", token=TOKEN) as forge:
        store.add_forge("gh", "github", forge.url)
        setup = Setup(db, store, forge, "gh")
        setup.track("widgets")
        forge.create_issue(OWNER, "widgets", "one", PLAN)
        setup.round()  # the first, full, read
        setup.round()  # the first incremental read: stores the ETag
        before = setup.snapshot()
        spent = forge.rate_remaining
        (report,) = setup.round()
        assert report.not_modified
        assert report.error is None
        assert forge.rate_remaining == spent
        assert setup.snapshot()[:3] == before[:3]


def test_a_close_and_a_label_removal_cancel_their_pending_jobs(setup: Setup) -> None:
    setup.track("widgets")
    closed = setup.forge.create_issue(OWNER, "widgets", "to close", PLAN)
    unlabelled = setup.forge.create_issue(OWNER, "widgets", "to unlabel", PLAN)
    kept = setup.forge.create_issue(OWNER, "widgets", "kept", PLAN)
    setup.round()
    setup.forge.close_issue(OWNER, "widgets", closed)
    setup.forge.set_labels(OWNER, "widgets", unlabelled, ["tireless"])
    (report,) = setup.round()
    assert report.cancelled == 2
    assert report.line().startswith(f"{setup.name}/acme/widgets: 0 new jobs, 2 cancelled, ")
    assert setup.jobs() == {
        closed: ("cancelled", "issue closed"),
        unlabelled: ("cancelled", "issue no longer asks for work"),
        kept: ("pending", None),
    }


def test_a_full_listing_fetches_live_jobs_it_did_not_show_and_cancels_deleted_ones(
    setup: Setup,
) -> None:
    setup.track("widgets")
    deleted = setup.forge.create_issue(OWNER, "widgets", "to delete", PLAN)
    closed = setup.forge.create_issue(OWNER, "widgets", "closed quietly", PLAN)
    setup.round()
    setup.forge.delete_issue(OWNER, "widgets", deleted)
    setup.forge.close_issue(OWNER, "widgets", closed)
    with setup.db.connect() as conn:  # the close falls before the cursor: only a fetch sees it
        conn.execute("UPDATE tireless.repo_poll SET cursor = now() + interval '1 day'")
    setup.full_listing_next()
    (report,) = setup.round()
    assert report.error is None
    assert report.deleted == 1
    single = [r.path for r in setup.forge.requests if r.path.endswith(f"/issues/{deleted}")]
    assert single  # fetched on its own before anything was concluded
    assert setup.jobs() == {
        deleted: ("cancelled", "issue deleted"),
        closed: ("cancelled", "issue closed"),
    }


BAD_INPUTS = [
    ("html", "expected JSON"),
    ("invalid-json", "invalid JSON"),
    ("not-a-list", "expected a JSON array"),
    ("no-number", "no positive integer number"),
    ("bad-number", "no positive integer number"),
    ("lying-total", "X-Total-Count"),
]


@pytest.mark.parametrize(("fault", "message"), BAD_INPUTS)
def test_bad_input_changes_nothing_keeps_the_cursor_records_the_error_and_others_go_on(
    setup: Setup, fault: str, message: str
) -> None:
    if fault == "lying-total" and setup.forge.flavour == "github":
        pytest.skip("GitHub sends no X-Total-Count")
    setup.track("widgets", "gadgets")
    widget = setup.forge.create_issue(OWNER, "widgets", "widget", PLAN)
    setup.round()
    setup.forge.close_issue(OWNER, "widgets", widget)  # a change the failed read must not apply
    gadget = setup.forge.create_issue(OWNER, "gadgets", "gadget", PLAN)
    before = setup.snapshot()
    setup.forge.fault(fault, times=None, repo=(OWNER, "widgets"))
    reports = {r.repo: r for r in setup.round()}
    assert reports["widgets"].error is not None
    assert message in reports["widgets"].error
    assert TOKEN not in reports["widgets"].error
    assert setup.snapshot() == before  # jobs, issues, events, cursor and ETag as they were
    state = setup.poll_state()
    assert message in state["last_error"]
    assert state["consecutive_failures"] == 1
    assert datetime.fromisoformat(state["backoff_until"]) > datetime.now(UTC)
    assert reports["gadgets"].error is None
    assert setup.jobs("gadgets") == {gadget: ("pending", None)}
    assert setup.jobs() == {widget: ("pending", None)}
    # The next good read applies what the failed one could not, and clears the error.
    setup.forge.clear_faults()
    setup.due_now()
    retried = {r.repo: r for r in setup.round()}["widgets"]
    assert retried.cancelled == 1
    assert setup.poll_state()["last_error"] is None


@pytest.mark.parametrize("fault", ["429-seconds", "429-date"])
def test_429_with_retry_after_stops_the_forge_until_then(setup: Setup, fault: str) -> None:
    setup.track("widgets", "gadgets")
    setup.forge.fault(fault, times=1, seconds=120)
    reports = setup.round()
    assert all(r.error is not None and "rate limited" in r.error for r in reports)
    assert len(setup.forge.requests) == 1  # the forge was not asked again this round
    state = setup.poll_state()
    backoff = datetime.fromisoformat(state["backoff_until"])
    assert backoff >= datetime.now(UTC) + timedelta(seconds=100)
    stopped = datetime.fromisoformat(state["forge_limited_until"])
    assert stopped >= datetime.now(UTC) + timedelta(seconds=100)
    assert setup.round() == []  # a limited forge is not asked again before its time


def test_5xx_backs_off_and_the_next_good_read_clears_the_error(setup: Setup) -> None:
    setup.track("widgets")
    setup.forge.create_issue(OWNER, "widgets", "one", PLAN)
    setup.forge.fault("500", times=None)
    (failed,) = setup.round()
    assert failed.error is not None
    assert "HTTP 500" in failed.error
    assert failed.retry_at is not None
    assert failed.retry_at > datetime.now(UTC)
    assert setup.round() == []  # backing off
    setup.due_now()
    (again,) = setup.round()
    assert again.error is not None
    assert setup.poll_state()["consecutive_failures"] == 2
    setup.forge.clear_faults()
    setup.due_now()
    (good,) = setup.round()
    assert good.error is None
    assert good.created == 1
    state = setup.poll_state()
    assert (state["consecutive_failures"], state["last_error"]) == (0, None)


@pytest.mark.parametrize("fault", ["401", "403"])
def test_refused_credentials_stop_the_forge_and_say_so(setup: Setup, fault: str) -> None:
    setup.track("widgets", "gadgets")
    setup.forge.fault(fault, times=None)
    reports = setup.round()
    assert len(setup.forge.requests) == 1
    assert all("refused our credentials" in (r.error or "") for r in reports)
    state = setup.poll_state()
    assert "refused our credentials" in state["forge_error"]
    assert TOKEN not in state["forge_error"]


def test_two_pollers_at_once_read_each_repository_once(setup: Setup, db: Database) -> None:
    repos = ["r1", "r2", "r3", "r4"]
    setup.track(*repos)
    for repo in repos:
        setup.forge.create_issue(OWNER, repo, "work", PLAN)
    setup.forge.hold()  # every request waits: both pollers are mid-read together
    results: dict[str, list[Report]] = {}

    def run(poller: str, max_repos: int) -> None:
        with JobStore(db.conninfo) as own_store:
            results[poller] = poll_round(
                own_store,
                poller,
                clients=client_factory(timeout=20.0),
                max_repos=max_repos,
                next_poll_in=timedelta(minutes=5),
            )

    first = threading.Thread(target=run, args=("poller-a", 2))
    first.start()
    assert setup.forge.wait_for_requests(1)  # poller-a holds its two leases and is reading
    second = threading.Thread(target=run, args=("poller-b", 100))
    second.start()
    assert setup.forge.wait_for_requests(2)  # poller-b leased the rest and is reading too
    setup.forge.open_gate()
    first.join(30)
    second.join(30)
    read_by = {r.repo: poller for poller, reports in results.items() for r in reports}
    assert sorted(read_by) == repos
    assert sum(read_by[r] == "poller-a" for r in repos) == 2
    for repo in repos:
        assert len(setup.forge.listing_requests(OWNER, repo)) == 1
        assert len(setup.jobs(repo)) == 1


def test_a_hung_forge_costs_a_round_one_timeout_and_one_request(setup: Setup) -> None:
    """The forge stops answering: the mirror's first request times out, and nothing more is
    asked of that forge this round (no quick retry of a timeout, no listing, no other
    repository's read), so the round ends after about one timeout; every repository says why."""
    setup.track("widgets", "gadgets")
    for repo in ("widgets", "gadgets"):
        setup.forge.create_issue(OWNER, repo, "asks", PLAN)
    setup.round()  # the jobs are made: the mirror has a write due for each
    sent = len(setup.forge.requests)
    setup.forge.fault("slow", times=None, seconds=5.0)  # hung: no answer within the timeout
    started = time.monotonic()
    reports = poll_round(
        setup.store, "poller-1", clients=client_factory(timeout=1.0), read_deadline=4.0
    )
    took = time.monotonic() - started
    setup.forge.clear_faults()
    assert len(setup.forge.requests) - sent == 1, [r.path for r in setup.forge.requests[sent:]]
    assert len(reports) == 2
    assert all("timed out" in str(report.error) for report in reports), reports
    assert took < 2.5, f"{took:.1f} s: about one timeout of 1 s"
