"""A note's cause (tireless.note_cause, db/job.sql) as every list shows it, and a job's attempts
from its history (tireless.job_attempts, db/dashboard.sql): each attempt's end, run time, stop
reason, output and the pull request of the attempt that delivered."""

from __future__ import annotations

import pytest

from tests import outbox
from tests.conftest import Database
from tests.helpers import FORGE, OWNER, REPO, claimed, issue, tracked
from tireless import JobStore

# The history's roll-up waits on every older transaction of the cluster: no database is
# copied or dropped beside these tests (tests/conftest.py, DatabaseCopies).
pytestmark = pytest.mark.quiet_cluster

BANNER = 'agent: implement example/widgets#31 "Fix it" (lane cc, attempt 3)'


@pytest.mark.parametrize(
    ("note", "cause"),
    [
        (
            f"attempts exhausted (3 of 3); last: {BANNER}\nthe test suite fails on main",
            "the test suite fails on main",
        ),
        (f"{BANNER}\nstep 1\nerror: cannot build\nsee the log above\n", "error: cannot build"),
        (
            'Traceback (most recent call last):\n  File "x", line 1\nValueError: bad input',
            "ValueError: bad input",
        ),
        (
            "attempts exhausted (3 of 3); last: lease of w1 expired at 2026-12-07",
            "lease of w1 expired at 2026-12-07",
        ),
        ("tests failed", "tests failed"),
        ("\n  \n----\nopened PR #3\nmerged", "opened PR #3"),
        ("no change", "no change"),
        ("", ""),
        (None, ""),
    ],
)
def test_a_notes_cause_is_its_last_error_line_or_its_first_meaningful_one(
    db: Database, note: str | None, cause: str
) -> None:
    assert db.scalar("SELECT tireless.note_cause(%(note)s)", {"note": note}) == cause


def test_the_job_list_and_the_failure_groups_show_the_cause(db: Database, store: JobStore) -> None:
    tracked(store).enqueue([issue(1)])
    job = claimed(store, "w1")
    store.transition(
        job.id,
        "failed",
        "w1",
        note=f"{BANNER}\nthe test suite fails on main",
        token=job.claim_token,
    )
    listed = db.scalar("SELECT cause FROM tireless.job_list WHERE id = %(id)s", {"id": job.id})
    assert listed == "the test suite fails on main"
    groups = db.scalar(
        "SELECT array_agg(g.error) FROM tireless.failure_groups(interval '1 hour') g"
    )
    assert groups == ["the test suite fails on main"]
    store.roll_up_history()
    groups = db.scalar(
        "SELECT array_agg(g.error) FROM tireless.failure_groups(interval '1 hour') g"
    )
    assert groups == ["the test suite fails on main"]


def test_a_jobs_attempts_say_how_each_ended_and_the_pull_request(
    db: Database, store: JobStore
) -> None:
    store.add_forge(FORGE, "gitea", "https://git.example.com")
    tracked(store).enqueue([issue(1)])
    with db.connect() as conn:
        conn.execute("UPDATE tireless.policy SET backoff_base = interval '0'")
    first = claimed(store, "w1")
    store.record_exit(first.id, "w1", 3, first.claim_token)
    store.record_exit(first.id, "w1", 2, first.claim_token)  # recorded again: the last stands
    store.transition(
        first.id, "pending", "w1", note=f"{BANNER}\nexit: tests fail", token=first.claim_token
    )
    second = claimed(store, "w2")
    store.deliver(second.id, "w2", "tireless/1", "a1" * 20, "main", "b2" * 20)
    store.claim_repos_to_poll("p1")
    outbox.record(
        store, "pull", FORGE, OWNER, REPO, "p1", second.id,
        result=outbox.pull(12, "https://git.example.com/p/12"),
    )  # fmt: skip
    with db.connect() as conn:
        rows = conn.execute(
            "SELECT attempt, worker, ended_as, cause, output, ran >= interval '0', pull_number, pull_url,"
            " exit_status"
            " FROM tireless.job_attempts(%s)",
            [first.id],
        ).fetchall()
    assert rows == [
        (
            1,
            "w1",
            "pending",
            "exit: tests fail",
            f"{BANNER}\nexit: tests fail",
            True,
            None,
            None,
            2,
        ),
        (2, "w2", "delivered", "", None, True, 12, "https://git.example.com/p/12", None),
    ]
    assert db.scalar("SELECT count(*) FROM tireless.job_attempts(999)") == 0


def test_the_parts_that_missed_their_rounds_are_named(db: Database, store: JobStore) -> None:
    """tireless.missed_rounds: a repository past its next poll (the poller is dead), a claim past
    its lease (no sweeper), a ready job left unclaimed (no worker); none while each keeps up."""
    store.add_forge(FORGE, "gitea", "https://git.example.com")
    tracked(store).enqueue([issue(1), issue(2)])
    missed = "SELECT array_agg(m.part ORDER BY m.part) FROM tireless.missed_rounds() m"
    held = claimed(store, "w1")
    with db.connect() as conn:
        conn.execute("UPDATE tireless.repo_poll SET next_poll_at = now() + interval '30 seconds'")
    assert db.scalar(missed) is None  # job 2 became ready just now
    with db.connect() as conn:
        conn.execute("UPDATE tireless.repo_poll SET next_poll_at = now() - interval '19 seconds'")
        conn.execute(
            "UPDATE tireless.job SET claim_expires_at = now() - interval '30 seconds' WHERE id = %s",
            [held.id],
        )
    assert db.scalar(missed) is None  # within the minute's grace
    with db.connect() as conn:
        conn.execute("UPDATE tireless.repo_poll SET next_poll_at = now() - interval '5 minutes'")
        conn.execute(
            "UPDATE tireless.job SET claim_expires_at = now() - interval '5 minutes' WHERE id = %s",
            [held.id],
        )
        conn.execute(
            "UPDATE tireless.job SET available_at = now() - interval '5 minutes' WHERE state = 'pending'"
        )
    assert db.scalar(missed) == ["poller", "sweeper", "workers"]
    with db.connect() as conn:
        detail = conn.execute(
            "SELECT m.detail FROM tireless.missed_rounds() m WHERE m.part = 'poller'"
        ).fetchone()
    assert detail == ("1 repositories due to be polled and not polled",)
    store.pause_lane("cc")
    assert db.scalar(missed) == ["poller", "sweeper"]  # a paused lane's jobs wait on purpose


def test_only_the_holder_records_an_exit_status(db: Database, store: JobStore) -> None:
    from tireless.errors import NotHolder

    tracked(store).enqueue([issue(1)])
    job = claimed(store, "w1")
    with pytest.raises(NotHolder):
        store.record_exit(job.id, "w2", 1)
    assert db.scalar("SELECT count(*) FROM tireless.attempt_exit") == 0
