"""The poll bookkeeping: tracking creates a repository's poll state; claim_repos_to_poll leases
each due repository to one poller (SKIP LOCKED); record_poll applies the work rule, stores the
cursor and releases the lease, only for the poller that holds it; record_poll_failure keeps the
cursor and backs off; poll_soon makes a repository due without overriding its backoff."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from tests.conftest import Database
from tests.helpers import FORGE, OWNER, REPO, TEST_REPO, claimed, issue, rows
from tireless import DiscoveredIssue, ForgeKind, Heartbeat, JobStore, PollOutcome, RepoToPoll
from tireless.errors import InvalidArgument, MalformedIssue, NotHolder, UnknownRepository

CURSOR = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
CLAIM = (
    "SELECT forge, owner, repo, kind, base_url, cursor, etag, full_listing"
    " FROM tireless.claim_repos_to_poll(poller => %(poller)s, max_repos => %(max_repos)s)"
)


@pytest.fixture
def polled(store: JobStore) -> JobStore:
    """The store with a registered forge and the test repository tracked."""
    store.add_forge(FORGE, "gitea", "https://gitea.example.com")
    store.track_repo(*TEST_REPO)
    return store


def record(
    store: JobStore,
    issues: Sequence[DiscoveredIssue],
    poller: str = "p1",
    cursor: datetime | None = CURSOR,
    full_listing: bool = True,
    etag: str | None = None,
    **options: Any,
) -> PollOutcome:
    return store.record_poll(
        *TEST_REPO, poller, issues, cursor, etag, full_listing=full_listing, **options
    )


def poll_state(db: Database) -> dict[str, Any]:
    with db.connect() as conn:
        row = conn.execute(
            "SELECT to_jsonb(rp) FROM tireless.repo_poll rp"
            " WHERE (forge, owner, repo) = (%s, %s, %s)",
            TEST_REPO,
        ).fetchone()
    assert row is not None
    state: dict[str, Any] = row[0]
    return state


def test_tracking_a_repository_makes_it_due_at_once_and_untracking_forgets_it(
    polled: JobStore, db: Database
) -> None:
    (repo,) = polled.claim_repos_to_poll("p1")
    assert repo == RepoToPoll(
        FORGE, OWNER, REPO, ForgeKind.GITEA, "https://gitea.example.com", None, None, True, (),
        "tireless", (),
    )  # fmt: skip
    assert polled.untrack_repo(*TEST_REPO)
    assert db.scalar("SELECT count(*) FROM tireless.repo_poll") == 0
    assert polled.repo_status() == []


def test_a_leased_repository_is_not_handed_out_again_until_its_lease_ends(
    polled: JobStore, db: Database
) -> None:
    assert len(polled.claim_repos_to_poll("p1", timedelta(minutes=5))) == 1
    assert polled.claim_repos_to_poll("p2") == []
    with db.connect() as conn:
        conn.execute("UPDATE tireless.repo_poll SET poll_lease_until = now() - interval '1 second'")
    assert [r.repo for r in polled.claim_repos_to_poll("p2")] == [REPO]
    assert polled.repo_status()[0].polled_by == "p2"


def test_two_pollers_at_once_never_get_the_same_repository(store: JobStore, db: Database) -> None:
    """A's claim holds its rows locked (its transaction stays open): B's SKIP LOCKED passes over
    them at once, without waiting, and takes the others; once both commit, their leases keep
    every repository from a third poller."""
    store.add_forge(FORGE, "gitea", "https://gitea.example.com")
    for n in range(6):
        store.track_repo(FORGE, OWNER, f"repo{n}")
    with (
        db.connect(autocommit=False) as a,
        db.connect(autocommit=False, lock_timeout="1s") as b,
    ):
        got_a = {r[2] for r in a.execute(CLAIM, {"poller": "a", "max_repos": 3}).fetchall()}
        got_b = {r[2] for r in b.execute(CLAIM, {"poller": "b", "max_repos": 100}).fetchall()}
        a.commit()
        b.commit()
    assert (len(got_a), len(got_b)) == (3, 3)
    assert got_a.isdisjoint(got_b)
    assert store.claim_repos_to_poll("c") == []
    held = rows(db, "SELECT polled_by, count(*) FROM tireless.repo_poll GROUP BY 1 ORDER BY 1")
    assert held == [("a", 3), ("b", 3)]


def test_record_poll_applies_the_work_rule_and_stores_the_cursor(
    polled: JobStore, db: Database
) -> None:
    polled.claim_repos_to_poll("p1")
    outcome = record(polled, [issue(1), issue(2), issue(3, "bug")], etag='"abc"')
    assert outcome == PollOutcome(created=2, cancelled=0, rerouted=0, seen=3)
    state = poll_state(db)
    assert (state["etag"], state["polled_by"], state["reads_since_full"]) == ('"abc"', None, 0)
    (status,) = polled.repo_status()
    assert (status.pending, status.claimed, status.last_error) == (2, 0, None)
    assert status.last_success_at is not None
    assert status.cursor == CURSOR

    (again,) = polled.claim_repos_to_poll("p1")
    assert again.live_numbers == (1, 2)
    relabelled = [issue(1, "tireless", "tireless/plan"), issue(2, state="closed")]
    assert record(polled, relabelled, cursor=None, full_listing=False) == PollOutcome(0, 1, 1, 2)
    assert polled.repo_status()[0].cursor == CURSOR, "a null cursor keeps it"
    assert poll_state(db)["reads_since_full"] == 1


def test_the_cursor_never_moves_back(polled: JobStore, db: Database) -> None:
    polled.claim_repos_to_poll("p1")
    record(polled, [], cursor=CURSOR)
    polled.claim_repos_to_poll("p1")
    record(polled, [], cursor=CURSOR - timedelta(days=1))
    assert polled.repo_status()[0].cursor == CURSOR


def test_a_full_listing_is_asked_for_at_the_first_read_and_every_tenth(polled: JobStore) -> None:
    asked = []
    for _ in range(21):
        (repo,) = polled.claim_repos_to_poll("p1")
        asked.append(repo.full_listing)
        record(polled, [], full_listing=repo.full_listing)
    assert [n for n, full in enumerate(asked) if full] == [0, 10, 20]


def test_record_poll_refuses_a_poller_that_lost_its_lease(polled: JobStore, db: Database) -> None:
    polled.claim_repos_to_poll("p1")
    with db.connect() as conn:
        conn.execute("UPDATE tireless.repo_poll SET poll_lease_until = now() - interval '1 second'")
    polled.claim_repos_to_poll("p2")
    before = poll_state(db)
    with pytest.raises(NotHolder, match="poller 'p1' does not hold the poll lease of gitea/acme"):
        record(polled, [issue(1)], poller="p1")
    with pytest.raises(NotHolder):
        polled.record_poll_failure(*TEST_REPO, "p1", "timed out")
    assert poll_state(db) == before
    assert db.scalar("SELECT count(*) FROM tireless.job") == 0
    assert db.scalar("SELECT count(*) FROM tireless.issue") == 0
    assert record(polled, [issue(1)], poller="p2").created == 1
    with pytest.raises(NotHolder, match="does not hold"):
        record(polled, [issue(1)], poller="p2")


def test_record_poll_refuses_an_untracked_repository_and_a_foreign_issue(
    polled: JobStore, db: Database
) -> None:
    with pytest.raises(UnknownRepository, match="repository gitea/acme/elsewhere is not tracked"):
        polled.record_poll(FORGE, OWNER, "elsewhere", "p1", [], None, None, True)
    polled.claim_repos_to_poll("p1")
    with pytest.raises(MalformedIssue, match="index 1: it is of gitea/acme/elsewhere"):
        record(polled, [issue(1), issue(2, repo="elsewhere")])
    assert db.scalar("SELECT count(*) FROM tireless.job") == 0
    assert poll_state(db)["polled_by"] == "p1", "the lease is still held"
    # One of this repository with a bad field is left out, not the batch (issue 36).
    odd = {**issue(1).as_json(), "updated_at": "yesterday"}
    assert record(polled, [odd, issue(2)]).skipped == 1  # type: ignore[list-item]
    assert db.scalar("SELECT number FROM tireless.job") == 2


def test_record_poll_applies_deleted_issues(polled: JobStore, db: Database) -> None:
    polled.claim_repos_to_poll("p1")
    assert record(polled, [issue(1), issue(2), issue(3)]).created == 3
    held = claimed(polled)  # issue 1
    polled.claim_repos_to_poll("p1")
    outcome = record(polled, [], full_listing=False, deleted=[1, 2, 2, 9])
    assert outcome == PollOutcome(created=0, cancelled=2, rerouted=0, seen=0, skipped=0)
    states = rows(db, "SELECT number, state::text, note FROM tireless.job ORDER BY number")
    assert states == [(1, "claimed", None), (2, "cancelled", "issue deleted"), (3, "pending", None)]
    assert polled.heartbeat(held.id, "w1") == Heartbeat.CANCEL
    polled.claim_repos_to_poll("p1")
    assert record(polled, [issue(3)], deleted=[2]) == PollOutcome(0, 0, 0, 1), "said once"


def test_a_failed_read_keeps_the_cursor_counts_and_backs_off(
    polled: JobStore, db: Database
) -> None:
    polled.claim_repos_to_poll("p1")
    record(polled, [issue(1)])
    polled.claim_repos_to_poll("p1")
    start = datetime.now(UTC)
    until = polled.record_poll_failure(*TEST_REPO, "p1", "  HTTP 502 Bad Gateway\n")
    assert start + timedelta(seconds=7) < until < start + timedelta(seconds=16)
    state = polled.repo_status()[0]
    assert (state.cursor, state.consecutive_failures, state.last_error) == (
        CURSOR,
        1,
        "HTTP 502 Bad Gateway",
    )
    assert (state.backoff_until, state.polled_by) == (until, None)
    assert polled.claim_repos_to_poll("p1") == [], "backing off"
    assert not polled.poll_soon(*TEST_REPO), "a webhook does not override a backoff"

    with db.connect() as conn:
        conn.execute("UPDATE tireless.repo_poll SET backoff_until = now(), next_poll_at = now()")
    polled.claim_repos_to_poll("p1")
    second = polled.record_poll_failure(*TEST_REPO, "p1", "timed out", timedelta(minutes=10))
    assert second > datetime.now(UTC) + timedelta(minutes=9)
    assert polled.repo_status()[0].consecutive_failures == 2

    with db.connect() as conn:
        conn.execute("UPDATE tireless.repo_poll SET backoff_until = now(), next_poll_at = now()")
    polled.claim_repos_to_poll("p1")
    record(polled, [issue(1)])
    state = polled.repo_status()[0]
    assert (state.consecutive_failures, state.last_error, state.backoff_until) == (0, None, None)
    assert state.last_error_at is not None


def test_failures_back_off_exponentially_to_an_hour(polled: JobStore, db: Database) -> None:
    delays = []
    for _ in range(12):
        polled.claim_repos_to_poll("p1")
        until = polled.record_poll_failure(*TEST_REPO, "p1", "HTTP 500")
        delays.append(until - datetime.now(UTC))
        with db.connect() as conn:
            conn.execute(
                "UPDATE tireless.repo_poll SET backoff_until = now(), next_poll_at = now()"
            )
    for n, delay in enumerate(delays):
        full = min(timedelta(seconds=15) * 2**n, timedelta(hours=1))
        assert full / 2 - timedelta(seconds=2) <= delay <= full, (n, delay)


def test_a_long_error_is_trimmed_and_an_empty_one_refused(polled: JobStore) -> None:
    polled.claim_repos_to_poll("p1")
    polled.record_poll_failure(*TEST_REPO, "p1", "x" * 5000)
    assert polled.repo_status()[0].last_error == "x" * 2000
    with pytest.raises(InvalidArgument, match="error must say what failed"):
        polled.record_poll_failure(*TEST_REPO, "p1", " ")


def test_poll_soon_makes_a_tracked_repository_due(polled: JobStore, db: Database) -> None:
    polled.claim_repos_to_poll("p1")
    record(polled, [], next_poll_in=timedelta(hours=1))
    assert polled.claim_repos_to_poll("p1") == []
    assert polled.poll_soon(*TEST_REPO)
    assert [r.repo for r in polled.claim_repos_to_poll("p1")] == [REPO]
    assert not polled.poll_soon(FORGE, OWNER, "untracked")


def test_a_webhook_during_a_read_makes_the_repository_due_again_once_it_is_recorded(
    polled: JobStore,
) -> None:
    polled.claim_repos_to_poll("p1")
    assert polled.poll_soon(*TEST_REPO)  # the read under way may have listed before the change
    record(polled, [], next_poll_in=timedelta(hours=1))
    assert [r.repo for r in polled.claim_repos_to_poll("p2")] == [REPO]
    record(polled, [], poller="p2", next_poll_in=timedelta(hours=1))
    assert polled.claim_repos_to_poll("p3") == [], "without one, the next read waits its turn"


def test_a_repeated_record_poll_writes_no_job_issue_or_event(
    polled: JobStore, db: Database
) -> None:
    polled.claim_repos_to_poll("p1")
    poll = [issue(n) for n in range(1, 30)]
    record(polled, poll)
    claimed(polled)
    polled.claim_repos_to_poll("p1")
    with db.connect(autocommit=False) as conn:
        conn.execute(
            "SELECT * FROM tireless.record_poll(forge => %s, owner => %s, repo => %s, poller => 'p1',"
            " issues => %s, cursor => %s, etag => NULL, full_listing => false)",
            [*TEST_REPO, psycopg.types.json.Jsonb([i.as_json() for i in poll]), CURSOR],
        )
        written = conn.execute(
            "SELECT relname, n_tup_ins + n_tup_upd + n_tup_del FROM pg_stat_xact_user_tables"
            " WHERE schemaname = 'tireless' AND n_tup_ins + n_tup_upd + n_tup_del > 0"
        ).fetchall()
        conn.commit()
    assert written == [("repo_poll", 1)]


def test_poll_notices_and_moved_issues_need_the_lease_and_refuse_bad_input(
    polled: JobStore, db: Database
) -> None:
    with pytest.raises(NotHolder):
        polled.record_issue_moved(*TEST_REPO, "p1", 1, "issue moved to a/b#1")
    with pytest.raises(NotHolder):
        polled.record_poll_notice(*TEST_REPO, "p1", "a/b", None)
    polled.claim_repos_to_poll("p1")
    before = poll_state(db)
    for bad in (
        lambda: polled.record_issue_moved(*TEST_REPO, "p1", 0, "issue moved to a/b#1"),
        lambda: polled.record_issue_moved(*TEST_REPO, "p1", 1, " "),
        lambda: polled.record_poll_notice(*TEST_REPO, "p1", "not-a-name", None),
    ):
        with pytest.raises(InvalidArgument):
            bad()
    assert poll_state(db) == before
    polled.record_poll_notice(*TEST_REPO, "p1", "Elsewhere/Name", "one skipped")
    polled.record_poll_notice(*TEST_REPO, "p1", None, None)  # a null leaves each as it was
    state = poll_state(db)
    assert (state["moved_to"], state["last_warning"]) == ("Elsewhere/Name", "one skipped")
    polled.record_poll_notice(*TEST_REPO, "p1", f"{TEST_REPO[1].upper()}/{TEST_REPO[2]}", None)
    assert poll_state(db)["moved_to"] is None  # its own name again, in any case
    assert polled.renew_poll_leases("p1", timedelta(minutes=1)) == 1
    assert polled.renew_poll_leases("p2", timedelta(minutes=1)) == 0
