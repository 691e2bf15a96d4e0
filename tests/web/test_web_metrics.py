"""`/metrics`: Prometheus text that a real parser reads, whose figures are the database's, and
finished-job counters that the history rollup advances exactly once per event, also when a
finishing transaction is still open while it runs."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.conftest import Database
from tests.helpers import claimed, enqueue_jobs
from tests.support.web import Jobs, populate, scrape, value
from tireless import JobStore

# The history's roll-up waits on every older transaction of the cluster: no database is
# copied or dropped beside these tests (tests/conftest.py, DatabaseCopies).
pytestmark = pytest.mark.quiet_cluster


def figures(db: Database, query: str) -> list[tuple[Any, ...]]:
    with db.connect() as conn:
        return conn.execute(query).fetchall()


def test_metrics_parse_and_match_the_database(
    client: TestClient, store: JobStore, db: Database
) -> None:
    jobs: Jobs = populate(store, db)
    samples, types = scrape(client)
    assert types["tireless_jobs"] == "gauge"
    assert types["tireless_jobs_finished"] == "counter"
    for lane, pending, ready, claimed_jobs, past_lease, age in figures(
        db,
        "SELECT lane, pending, ready, claimed, past_lease,"
        " extract(epoch FROM oldest_pending_age) FROM tireless.lane_status",
    ):
        assert value(samples, "tireless_jobs", lane=lane, state="pending") == pending
        assert value(samples, "tireless_jobs", lane=lane, state="ready") == ready
        assert value(samples, "tireless_jobs", lane=lane, state="claimed") == claimed_jobs
        assert value(samples, "tireless_claims_past_lease", lane=lane) == past_lease
        assert value(samples, "tireless_oldest_pending_seconds", lane=lane) == pytest.approx(
            float(age or 0), abs=5
        )
    assert value(samples, "tireless_jobs", lane="cc", state="pending") == 3
    assert value(samples, "tireless_claims_past_lease", lane="cc") == 1
    assert value(samples, "tireless_lane_breaker", lane="oc", state="open") == 1
    assert value(samples, "tireless_lane_breaker", lane="oc", state="closed") == 0
    assert value(samples, "tireless_lane_breaker", lane="cc", state="closed") == 1
    assert 0 < value(samples, "tireless_lane_breaker_cooldown_seconds", lane="oc") <= 300
    assert value(samples, "tireless_lane_paused", lane="oc") == 1
    finished = figures(
        db,
        "SELECT lane, state::text, count(*) FROM tireless.job"
        " WHERE tireless.is_terminal(state) GROUP BY 1, 2",
    )
    assert len(finished) == 3
    for lane, outcome, count in finished:
        assert value(samples, "tireless_jobs_finished_total", lane=lane, outcome=outcome) == count
    assert jobs.delivered
    for repo in ("widgets", "gadgets"):
        key = {"forge": "gitea", "owner": "acme", "repo": repo}
        assert value(samples, "tireless_repo_poll_failures", **key) == 0
        assert value(samples, "tireless_repo_poll_error", **key) == 0


def test_a_failed_poll_and_a_failed_mirror_write_show_in_the_repository_metrics(
    client: TestClient, store: JobStore, db: Database
) -> None:
    jobs = populate(store, db)
    with db.connect() as conn:
        conn.execute(
            "UPDATE tireless.repo_poll SET consecutive_failures = 2, last_error = 'HTTP 502',"
            " last_error_at = now() WHERE repo = 'gadgets'"
        )
        # A write the forge refused (as record_mirror_failure leaves it) on one issue of gadgets.
        conn.execute(
            "INSERT INTO tireless.mirror_issue (forge, owner, repo, number, job_id, state,"
            " failures, last_error, last_error_at)"
            " VALUES ('gitea', 'acme', 'gadgets', 1, %s, 'pending', 1, 'HTTP 403', now())",
            (jobs.delivered,),
        )
    samples, _ = scrape(client)
    key = {"forge": "gitea", "owner": "acme", "repo": "gadgets"}
    assert value(samples, "tireless_repo_poll_failures", **key) == 2
    assert value(samples, "tireless_repo_poll_error", **key) == 1
    assert value(samples, "tireless_repo_mirror_error", **key) == 1
    assert (
        value(samples, "tireless_repo_mirror_error", forge="gitea", owner="acme", repo="widgets")
        == 0
    )
    for repo, backlog in figures(db, "SELECT repo, mirror_backlog FROM tireless.repo_status"):
        labels = {"forge": "gitea", "owner": "acme", "repo": repo}
        assert value(samples, "tireless_repo_mirror_backlog", **labels) == backlog
    assert value(samples, "tireless_repo_mirror_backlog", **key) >= 1


def finished_total(client: TestClient) -> float:
    samples, _ = scrape(client)
    return sum(v for (name, _), v in samples.items() if name == "tireless_jobs_finished_total")


def test_each_finished_job_is_counted_once_across_scrapes(
    client: TestClient, store: JobStore, db: Database
) -> None:
    enqueue_jobs(store, 6)
    assert finished_total(client) == 0
    for worker in ("a", "b"):
        job = claimed(store, worker)
        store.transition(job.id, "delivered", worker, token=job.claim_token)
    assert finished_total(client) == 2, "not rolled up yet: a scrape reads the history itself"
    store.roll_up_history()  # the sweeper's or the poller's pass
    assert finished_total(client) == 2, "rolled up: counted once"
    store.roll_up_history()
    assert finished_total(client) == 2, "a roll-up with nothing new adds nothing"
    job = claimed(store, "c")
    store.transition(job.id, "failed", "c", token=job.claim_token)
    assert finished_total(client) == 3
    store.roll_up_history()
    assert finished_total(client) == 3
    counted = db.scalar("SELECT counted_to FROM tireless.history_rollup")
    assert counted == db.scalar("SELECT max(id) FROM tireless.job_event")


def test_an_event_of_an_open_transaction_is_counted_once_it_commits(
    client: TestClient, store: JobStore, db: Database
) -> None:
    """The finish of a transaction still open when the rollup runs has an event id below later
    events that the rollup sees: it must be counted after it commits, not skipped for ever."""
    enqueue_jobs(store, 3)
    slow, fast = claimed(store, "slow"), claimed(store, "fast")
    with db.connect(autocommit=False) as open_transaction:
        open_transaction.execute(
            "SELECT tireless.transition(job_id => %s, to_state => 'delivered', worker => 'slow',"
            " token => %s)",
            [slow.id, slow.claim_token],
        )
        # A later finish commits while the first is still open: its event id is higher.
        store.transition(fast.id, "delivered", "fast", token=fast.claim_token)
        assert finished_total(client) == 1, "the committed finish counts, the open one not yet"
        store.roll_up_history()  # waits for the open transaction: rolls nothing up
        assert finished_total(client) == 1
        open_transaction.commit()
    assert finished_total(client) == 2
    for _ in range(2):
        store.roll_up_history()
        assert finished_total(client) == 2
    samples, _ = scrape(client)
    assert value(samples, "tireless_jobs_finished_total", lane="cc", outcome="delivered") == 2


def test_a_second_rollup_at_the_same_time_leaves_it_to_the_first(
    store: JobStore, db: Database
) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store, "w")
    store.transition(job.id, "delivered", "w", token=job.claim_token)
    with db.connect(autocommit=False) as first, db.connect() as second:
        assert first.execute("SELECT tireless.roll_up_history()").fetchone() == (1,)
        assert second.execute("SELECT tireless.roll_up_history()").fetchone() == (0,)
        first.commit()
    assert db.scalar("SELECT sum(jobs) FROM tireless.finished_jobs") == 1


def test_a_spent_daily_budget_shows_in_metrics_and_on_the_overview(
    client: TestClient, store: JobStore
) -> None:
    enqueue_jobs(store, 2)
    store.set_lane_budget("cc", 1, None)
    claimed(store)
    assert store.claim_next("w2", ["cc"]) is None
    samples, _ = scrape(client)
    assert value(samples, "tireless_lane_runs_today", lane="cc") == 1
    assert 0 < value(samples, "tireless_lane_budget_reset_seconds", lane="cc") <= 86400
    overview = client.get("/").text
    assert "1/1 runs" in overview
    assert "resets at" in overview
