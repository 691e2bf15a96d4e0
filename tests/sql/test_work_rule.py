"""The work rule (DESIGN.md): one job per request for work, withdrawal ends the job (a pending one
cancelled, a claimed one asked to stop through heartbeat, the sweeper cancelling it when its lease
expires), relabelling re-routes, a poll that shows nothing new writes nothing, and upgrading to
the rule re-runs nothing. Each clause is its own test."""

from __future__ import annotations

from datetime import UTC, datetime
from importlib.resources import as_file, files
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb
from yoyo import get_backend, read_migrations
from yoyo.migrations import MigrationList

from dev.embedded import EmbeddedPostgres
from tests.conftest import Database
from tests.helpers import (
    FORGE,
    OWNER,
    REPO,
    WORK,
    claimed,
    end_lease,
    history,
    issue,
    job_count,
    jobs,
    tracked,
)
from tireless import DiscoveredIssue, Heartbeat, Job, JobKind, JobState, JobStore, migrate
from tireless.errors import InvalidArgument, InvariantViolated
from tireless.migrate import yoyo_uri

PLAN = ("tireless", "tireless/plan")


def only_job(db: Database) -> Job:
    (job,) = jobs(db)
    return job


def delivered(store: JobStore) -> Job:
    job = claimed(store)
    return store.transition(job.id, "delivered", job.claimed_by, token=job.claim_token)


# Rule 1: one job per request.
@pytest.mark.parametrize("end", ["delivered", "failed", "cancelled"])
def test_a_finished_job_is_not_run_again_while_its_issue_keeps_asking(
    store: JobStore, db: Database, end: str
) -> None:
    assert tracked(store).enqueue([issue(1)]) == 1
    job = claimed(store)
    store.transition(job.id, end, job.claimed_by, token=job.claim_token)
    for _ in range(3):
        assert store.enqueue([issue(1)]) == 0
    assert store.enqueue([issue(1, "tireless/implement", "tireless", "bug")]) == 0
    assert job_count(db) == 1


@pytest.mark.parametrize(
    "withdrawn",
    [
        issue(1, state="closed"),
        issue(1, "tireless/implement"),
        issue(1, "tireless"),
        issue(1, "bug"),
    ],
    ids=["closed", "opt-in removed", "mode label removed", "both removed"],
)
def test_withdrawing_the_request_and_making_it_again_makes_a_new_job(
    store: JobStore, db: Database, withdrawn: DiscoveredIssue
) -> None:
    assert tracked(store).enqueue([issue(1)]) == 1
    first = delivered(store)
    assert store.enqueue([withdrawn]) == 0
    assert store.enqueue([withdrawn]) == 0
    assert store.enqueue([issue(1)]) == 1
    old, new = jobs(db)
    assert old == first
    assert (new.state, new.kind) == (JobState.PENDING, JobKind.IMPLEMENT)
    assert store.enqueue([issue(1)]) == 0


def test_trading_one_mode_label_for_another_does_not_rerun_a_finished_job(
    store: JobStore, db: Database
) -> None:
    assert tracked(store).enqueue([issue(1)]) == 1
    delivered(store)
    assert store.enqueue([issue(1, *PLAN)]) == 0
    assert job_count(db) == 1


def test_an_issue_that_asks_only_later_gets_its_job_then(store: JobStore, db: Database) -> None:
    assert tracked(store).enqueue([issue(1, "bug")]) == 0
    assert store.enqueue([issue(1, "bug")]) == 0
    assert store.enqueue([issue(1, "bug", *WORK)]) == 1
    assert only_job(db).labels == ("bug", *WORK)


# Rule 2: withdrawal ends the job.
@pytest.mark.parametrize(
    ("withdrawn", "note"),
    [
        (issue(1, state="closed"), "issue closed"),
        (issue(1, "tireless/implement"), "issue no longer asks for work"),
        (issue(1, "tireless"), "issue no longer asks for work"),
    ],
    ids=["closed", "opt-in removed", "mode label removed"],
)
def test_withdrawal_cancels_a_pending_job_with_its_note(
    store: JobStore, db: Database, withdrawn: DiscoveredIssue, note: str
) -> None:
    assert tracked(store).enqueue([issue(1)]) == 1
    assert store.enqueue([withdrawn]) == 0
    job = only_job(db)
    assert (job.state, job.note, job.cancel_requested_at) == (JobState.CANCELLED, note, None)
    assert history(db, job.id)[-1] == ("pending", "cancelled", None, 0, note)
    assert store.claim_next("w1", ["cc"]) is None


def test_closing_while_claimed_asks_the_holder_to_stop_and_its_cancel_counts_no_failure(
    store: JobStore, db: Database
) -> None:
    assert tracked(store).enqueue([issue(1)]) == 1
    job = claimed(store)
    assert store.heartbeat(job.id, "w1", token=job.claim_token) == Heartbeat.HELD
    assert store.enqueue([issue(1, state="closed")]) == 0
    requested = only_job(db)
    assert (requested.state, requested.claimed_by) == (JobState.CLAIMED, "w1")
    assert requested.cancel_requested_at is not None
    assert store.heartbeat(job.id, "w1", token=job.claim_token) == Heartbeat.CANCEL
    assert store.renew_claim(job.id, "w1", token=job.claim_token), "renew_claim still holds it"
    assert store.enqueue([issue(1, state="closed")]) == 0
    assert only_job(db).cancel_requested_at == requested.cancel_requested_at, "made once"
    # The note is the stop's, whatever the holder says (a runner before 0030 said this one).
    ended = store.transition(
        job.id, "cancelled", "w1", note="issue withdrew its request", token=job.claim_token
    )
    assert (ended.state, ended.note) == (JobState.CANCELLED, "issue closed")
    assert db.scalar("SELECT count(*) FROM tireless.lane WHERE consecutive_failures > 0") == 0


def test_the_sweeper_cancels_an_expired_cancel_requested_claim_without_a_failure(
    store: JobStore, db: Database
) -> None:
    assert tracked(store).enqueue([issue(1)]) == 1
    job = claimed(store)
    assert store.enqueue([issue(1, "tireless")]) == 0
    end_lease(db, job.id)
    assert store.expire_stale_claims() == 1
    swept = only_job(db)
    assert (swept.state, swept.attempts, swept.claimed_by) == (JobState.CANCELLED, 1, None)
    assert swept.note is not None
    assert swept.note.startswith("issue no longer asks for work; lease of w1 expired at ")
    assert db.scalar("SELECT count(*) FROM tireless.lane WHERE consecutive_failures > 0") == 0
    assert store.claim_next("w2", ["cc"]) is None, "not retried"


def test_a_cancel_request_stands_when_the_issue_asks_again_and_the_new_request_waits(
    store: JobStore, db: Database
) -> None:
    assert tracked(store).enqueue([issue(1)]) == 1
    job = claimed(store)
    assert store.enqueue([issue(1, state="closed")]) == 0
    assert store.enqueue([issue(1)]) == 0, "the cancel-requested job is still live"
    assert store.heartbeat(job.id, "w1", token=job.claim_token) == Heartbeat.CANCEL
    # A release cannot put it back in the queue: refused, or turned into the cancel it owes.
    outcome: str | None
    try:
        outcome = store.transition(job.id, "pending", "w1", token=job.claim_token).state
    except InvariantViolated as refused:
        outcome = refused.constraint
    assert outcome in (JobState.CANCELLED, "pending_holds_no_cancel_request")
    if outcome != JobState.CANCELLED:
        store.transition(job.id, "cancelled", "w1", token=job.claim_token)
    assert store.enqueue([issue(1)]) == 1, "the new request gets its job after that"
    old, new = jobs(db)
    assert (old.state, new.state) == (JobState.CANCELLED, JobState.PENDING)
    assert store.enqueue([issue(1)]) == 0


def test_a_cancel_request_made_before_the_sweep_still_ends_cancelled_after_asking_again(
    store: JobStore, db: Database
) -> None:
    assert tracked(store).enqueue([issue(1)]) == 1
    job = claimed(store)
    store.enqueue([issue(1, state="closed")])
    store.enqueue([issue(1)])
    end_lease(db, job.id)
    assert store.expire_stale_claims() == 1
    assert only_job(db).state == JobState.CANCELLED
    assert store.enqueue([issue(1)]) == 1


def test_a_finished_job_of_a_closed_issue_is_left_as_it_was(store: JobStore, db: Database) -> None:
    assert tracked(store).enqueue([issue(1)]) == 1
    done = delivered(store)
    assert store.enqueue([issue(1, state="closed")]) == 0
    assert only_job(db) == done


# Rule 3: relabelling re-routes.
def test_relabelling_reroutes_a_pending_job_to_its_new_kind_and_lane(
    store: JobStore, db: Database
) -> None:
    assert tracked(store).enqueue([issue(1)]) == 1
    before = only_job(db)
    labels = (*PLAN, "tireless/agent:oc")
    assert store.enqueue([issue(1, *labels)]) == 0
    after = only_job(db)
    assert (after.id, after.kind, after.lane, after.labels) == (
        before.id,
        JobKind.PLAN,
        "oc",
        labels,
    )
    assert store.claim_next("w1", ["cc"]) is None
    assert claimed(store, "w2", ["oc"]).id == before.id


def test_relabelling_leaves_a_claimed_job_as_it_is(store: JobStore, db: Database) -> None:
    assert tracked(store).enqueue([issue(1)]) == 1
    job = claimed(store)
    assert store.enqueue([issue(1, *PLAN, "tireless/agent:oc")]) == 0
    after = only_job(db)
    assert (after.kind, after.lane, after.cancel_requested_at) == (JobKind.IMPLEMENT, "cc", None)
    assert store.heartbeat(job.id, "w1") == Heartbeat.HELD


# Rules 1 and 2 act on changes.
def writes_of(db: Database, batch: list[DiscoveredIssue]) -> tuple[Any, ...]:
    """Enqueue the batch in a transaction of its own; what it wrote: the transaction id it took
    (null: none), rows it inserted, updated or deleted in schema tireless, NOTIFYs queued."""
    with db.connect(autocommit=False) as conn:
        conn.execute(
            "SELECT tireless.enqueue(issues => %(issues)s)",
            {"issues": Jsonb([i.as_json() for i in batch])},
        )
        row = conn.execute(
            """SELECT pg_current_xact_id_if_assigned(),
                      (SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)
                         FROM pg_stat_xact_user_tables WHERE schemaname = 'tireless')"""
        ).fetchone()
        conn.commit()
        assert row is not None
        return tuple(row)


def versions(db: Database) -> list[Any]:
    """Every row version of the job, issue and event tables: (table, ctid, xmin)."""
    with db.connect() as conn:
        return conn.execute(
            """SELECT 'job', ctid::text, xmin::text FROM tireless.job
               UNION ALL SELECT 'issue', ctid::text, xmin::text FROM tireless.issue
               UNION ALL SELECT 'event', ctid::text, xmin::text FROM tireless.job_event
               ORDER BY 1, 2"""
        ).fetchall()


def test_a_repeated_poll_writes_no_row_version(store: JobStore, db: Database) -> None:
    tracked(store)
    shown = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
    poll = [
        issue(n, title=f"issue {n}", url=f"https://forge.test/acme/widgets/issues/{n}")
        for n in range(1, 7)
    ] + [
        issue(7, "bug", updated_at=shown),
        issue(8, state="closed"),
        issue(9, *PLAN),
        issue(10, repo="untracked"),
    ]
    assert store.enqueue(poll) == 7
    delivered(store)  # issue 1
    job = claimed(store)  # issue 2
    store.transition(job.id, "failed", job.claimed_by, token=job.claim_token)
    claimed(store)  # issue 3, held
    store.enqueue([issue(4, state="closed")])  # withdrawn: cancelled
    store.enqueue([issue(5, "bug")])  # withdrawn: cancelled
    store.enqueue([issue(4, state="closed"), issue(5, "bug")])
    poll[3:5] = [issue(4, state="closed"), issue(5, "bug")]
    before = versions(db)
    # The repository's lock is a row lock (0019_holder_login), which takes a transaction id and
    # writes no row version.
    assert writes_of(db, poll)[1:] == (0,)
    assert writes_of(db, list(reversed(poll)))[1:] == (0,)
    assert versions(db) == before


def test_a_poll_that_changes_one_issue_writes_only_that(store: JobStore, db: Database) -> None:
    tracked(store)
    poll = [issue(n) for n in range(1, 11)]
    assert store.enqueue(poll) == 10
    before = dict((row[0] + row[1], row[2]) for row in versions(db))
    poll[4] = issue(5, title="renamed")
    xid, written = writes_of(db, poll)
    assert (xid is not None, written) == (True, 1), "one issue row updated"
    changed = [
        key
        for key, xmin in (((r[0] + r[1]), r[2]) for r in versions(db))
        if before.get(key) != xmin
    ]
    assert len(changed) == 1


def test_an_admin_rerun_of_an_issue_that_does_not_ask_stands(store: JobStore, db: Database) -> None:
    assert tracked(store).enqueue([issue(1, state="closed")]) == 0
    job_id = store.rerun(FORGE, OWNER, REPO, 1)
    assert store.enqueue([issue(1, state="closed")]) == 0
    job = only_job(db)
    assert (job.id, job.state) == (job_id, JobState.PENDING)


def test_rerun_takes_the_kind_of_the_labels_last_seen_and_the_poll_makes_no_second_job(
    store: JobStore, db: Database
) -> None:
    assert tracked(store).enqueue([issue(1, *PLAN, "tireless/agent:oc", title="Plan it")]) == 1
    first = claimed(store, lanes=["oc"])
    store.transition(first.id, "delivered", "w1")
    job_id = store.rerun(FORGE, OWNER, REPO, 1)
    again = jobs(db)[-1]
    assert (again.id, again.kind, again.lane, again.title) == (
        job_id,
        JobKind.PLAN,
        "oc",
        "Plan it",
    )
    assert again.note == "rerun by postgres"
    assert store.enqueue([issue(1, *PLAN, "tireless/agent:oc", title="Plan it")]) == 0
    store.transition(job_id, "cancelled")
    assert store.enqueue([issue(1, *PLAN, "tireless/agent:oc", title="Plan it")]) == 0
    assert job_count(db) == 2


def test_rerun_of_an_issue_never_seen_is_refused(store: JobStore, db: Database) -> None:
    tracked(store)
    with pytest.raises(InvalidArgument, match="never seen issue gitea/acme/widgets#42"):
        store.rerun(FORGE, OWNER, REPO, 42)
    assert job_count(db) == 0


def test_the_store_remembers_what_it_was_shown_of_an_issue(store: JobStore, db: Database) -> None:
    shown = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
    url = "https://forge.test/acme/widgets/issues/1"
    assert tracked(store).enqueue([issue(1, title="Widget", url=url, updated_at=shown)]) == 1
    with db.connect() as conn:
        row = conn.execute(
            "SELECT state, labels, title, url, updated_at, asks_since IS NOT NULL, answered"
            " FROM tireless.issue"
        ).fetchone()
    assert row == ("open", list(WORK), "Widget", url, shown, True, True)


def test_an_issue_of_an_untracked_repository_is_not_remembered(
    store: JobStore, db: Database
) -> None:
    assert tracked(store).enqueue([issue(1, repo="elsewhere")]) == 0
    assert db.scalar("SELECT count(*) FROM tireless.issue") == 0


# Upgrading.
def migrate_to(conninfo: str, last: str) -> None:
    """Apply the migrations up to and including `last`, as a database of that version holds them."""
    with as_file(files("tireless") / "db" / "migrations") as directory:
        migrations = read_migrations(str(directory))
        backend = get_backend(yoyo_uri(conninfo))
        try:
            with backend.lock():
                wanted = MigrationList([m for m in migrations if m.id <= last])
                backend.apply_migrations(backend.to_apply(wanted))
        finally:
            backend.connection.close()


UPGRADE_JOBS = """
INSERT INTO tireless.tracked_repo (forge, owner, repo) VALUES ('gitea', 'acme', 'widgets');
INSERT INTO tireless.job (forge, owner, repo, number, labels, kind, lane, state, claimed_by,
                          claim_expires_at, claim_token, attempts)
VALUES ('gitea', 'acme', 'widgets', 1, '{tireless,tireless/implement}', 'implement', 'cc', 'delivered', NULL, NULL, NULL, 1),
       ('gitea', 'acme', 'widgets', 2, '{tireless,tireless/implement}', 'implement', 'cc', 'failed', NULL, NULL, NULL, 3),
       ('gitea', 'acme', 'widgets', 3, '{tireless,tireless/implement}', 'implement', 'cc', 'pending', NULL, NULL, NULL, 0),
       ('gitea', 'acme', 'widgets', 4, '{tireless,tireless/plan}', 'plan', 'cc', 'claimed', 'w1',
        now() + interval '10 minutes', gen_random_uuid(), 1),
       ('gitea', 'acme', 'widgets', 5, '{tireless,tireless/implement}', 'implement', 'cc', 'delivered', NULL, NULL, NULL, 1),
       ('gitea', 'acme', 'widgets', 5, '{tireless,tireless/implement}', 'implement', 'cc', 'cancelled', NULL, NULL, NULL, 0);
"""


def test_upgrading_a_database_that_holds_jobs_reruns_nothing(server: EmbeddedPostgres) -> None:
    with psycopg.connect(server.conninfo(), autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS upgrade_work_rule")
        admin.execute("CREATE DATABASE upgrade_work_rule")
    conninfo = server.conninfo("upgrade_work_rule")
    try:
        migrate_to(conninfo, "0006_views")
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(UPGRADE_JOBS)
        assert "0007_work_rule" in migrate(conninfo)
        with JobStore(conninfo) as store:
            before = versions(Database(conninfo, "", server))
            poll = [issue(n) for n in (1, 2, 3, 5)] + [issue(4, *PLAN)]
            assert store.enqueue(poll) == 0
            assert versions(Database(conninfo, "", server)) == before, "nothing new: no write"
            assert [r.repo for r in store.tracked_repos()] == [REPO]
            assert [s.repo for s in store.repo_status()] == [REPO], "its poll state exists"
            # The rule holds from here on: closing issue 3 cancels its pending job.
            assert store.enqueue([issue(3, state="closed")]) == 0
            with psycopg.connect(conninfo) as conn:
                states = conn.execute(
                    "SELECT number, state::text FROM tireless.job ORDER BY id"
                ).fetchall()
        assert states == [
            (1, "delivered"),
            (2, "failed"),
            (3, "cancelled"),
            (4, "claimed"),
            (5, "delivered"),
            (5, "cancelled"),
        ]
    finally:
        with psycopg.connect(server.conninfo(), autocommit=True) as admin:
            admin.execute("DROP DATABASE upgrade_work_rule WITH (FORCE)")
