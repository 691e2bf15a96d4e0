"""A stop reaches its holder at once and keeps its own note (0030_stop_notes): whoever asks a
claimed job to stop chooses the note it ends cancelled with, whatever its holder says; a delivery
that comes after the stop records that the stop came too late; every stop is announced on
tireless_stop when it commits, and a repository made due is announced on tireless_poll."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from tests.conftest import Database
from tests.helpers import claimed, enqueue_jobs, history, issue, tracked
from tireless import Job, JobState, JobStore

Stop = Callable[[JobStore, Job], object]


def moved(store: JobStore, job: Job) -> object:
    store.claim_repos_to_poll("p1")
    return store.record_issue_moved(
        job.forge, job.owner, job.repo, "p1", job.number, "issue moved to a/b#4"
    )


def deleted(store: JobStore, job: Job) -> object:
    store.claim_repos_to_poll("p1")
    return store.record_poll(
        job.forge, job.owner, job.repo, "p1", [], None, None, True, deleted=[job.number]
    )


STOPS: dict[str, tuple[Stop, str]] = {
    "an admin's note": (
        lambda store, job: store.request_cancel(job.id, "wrong repo"),
        "wrong repo",
    ),
    "an admin without one": (
        lambda store, job: store.request_cancel(job.id),
        "cancelled by postgres",
    ),
    "closed": (lambda store, job: store.enqueue([issue(1, state="closed")]), "issue closed"),
    "unlabelled": (
        lambda store, job: store.enqueue([issue(1, "tireless")]),
        "issue no longer asks for work",
    ),
    "deleted": (deleted, "issue deleted"),
    "moved": (moved, "issue moved to a/b#4"),
}


def stopped_job(store: JobStore, stop: Stop) -> Job:
    """A claimed job of the test repository (of a registered forge: the poll's stops need one),
    asked to stop by `stop`."""
    store.add_forge("gitea", "gitea", "https://gitea.example.com")
    enqueue_jobs(store, 1)
    job = claimed(store)
    stop(store, job)
    return job


@pytest.mark.parametrize("who", list(STOPS))
def test_a_stopped_job_ends_with_the_note_of_whoever_stopped_it(
    store: JobStore, db: Database, who: str
) -> None:
    stop, note = STOPS[who]
    job = stopped_job(store, stop)
    assert store.heartbeat(job.id, "w1", token=job.claim_token) == "cancel"
    ended = store.transition(job.id, "cancelled", "w1", "the runner's own words", job.claim_token)
    assert (ended.state, ended.note, ended.cancel_note) == (JobState.CANCELLED, note, note)
    assert history(db, job.id)[-1][-1] == note


@pytest.mark.parametrize(
    "finish",
    [
        lambda store, job: store.give_back(job.id, "w1", "SIGTERM", job.claim_token),
        lambda store, job: store.transition(job.id, "pending", "w1", "exit 1", job.claim_token),
        lambda store, job: store.finish_and_claim(
            job.id, "cancelled", "w1", ["cc"], token=job.claim_token
        ),
    ],
    ids=["given back", "released", "finish_and_claim"],
)
def test_every_way_a_stopped_job_ends_keeps_the_stops_note(
    store: JobStore, db: Database, finish: Callable[[JobStore, Job], object]
) -> None:
    job = stopped_job(store, STOPS["an admin's note"][0])
    finish(store, job)
    note = db.scalar("SELECT note FROM tireless.job WHERE id = %(id)s", {"id": job.id})
    assert note.startswith("wrong repo")


def test_the_sweeper_ends_a_stopped_job_with_the_stops_note(store: JobStore, db: Database) -> None:
    job = stopped_job(store, STOPS["moved"][0])
    db.scalar("UPDATE tireless.job SET claim_expires_at = now() - interval '1s' RETURNING 1")
    assert store.expire_stale_claims() == 1
    note = db.scalar("SELECT note FROM tireless.job WHERE id = %(id)s", {"id": job.id})
    assert note.startswith("issue moved to a/b#4; lease of w1 expired at ")


def test_a_second_request_keeps_the_first_stops_time_and_note(
    store: JobStore, db: Database
) -> None:
    job = stopped_job(store, STOPS["closed"][0])
    first = db.scalar("SELECT cancel_requested_at FROM tireless.job")
    again = store.request_cancel(job.id, "me too")
    assert (again.cancel_requested_at, again.cancel_note) == (first, "issue closed")
    ended = store.transition(job.id, "cancelled", "w1", None, job.claim_token)
    assert ended.note == "issue closed"


def late(requested_at: datetime, why: str) -> str:
    at = requested_at.astimezone(UTC).strftime("%H:%M:%S")
    return f"the cancel requested at {at}Z ({why}) came after the work was done"


@pytest.mark.parametrize(
    ("deliver", "note"),
    [
        (
            lambda store, job: store.transition(
                job.id, "delivered", "w1", "merged", job.claim_token
            ),
            "merged; ",
        ),
        (lambda store, job: store.deliver(job.id, "w1", token=job.claim_token), "no change; "),
        (
            lambda store, job: store.finish_and_claim(
                job.id, "delivered", "w1", ["cc"], token=job.claim_token
            ),
            "",
        ),
    ],
    ids=["transition", "deliver", "finish_and_claim"],
)
def test_a_delivery_after_a_stop_stays_delivered_and_says_the_stop_came_too_late(
    store: JobStore,
    db: Database,
    deliver: Callable[[JobStore, Job], object],
    note: str,
) -> None:
    """The agent exited 0 before its runner heard the cancel: the work is done and stays so."""
    job = stopped_job(store, STOPS["an admin without one"][0])
    requested = db.scalar("SELECT cancel_requested_at FROM tireless.job")
    deliver(store, job)
    row = db.scalar(
        "SELECT (state, note)::text FROM tireless.job WHERE id = %(id)s", {"id": job.id}
    )
    assert row == f'(delivered,"{note}{late(requested, "cancelled by postgres")}")'


def test_a_delivery_without_a_stop_keeps_the_holders_note(store: JobStore) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store)
    assert store.transition(job.id, "delivered", "w1", "merged", job.claim_token).note == "merged"


def notifications(
    conn: psycopg.Connection[Any], timeout: float, expected: int | None = None
) -> list[tuple[str, str]]:
    """The notifications the listening connection gets within `timeout` seconds (fewer when the
    `expected` number came first)."""
    return [(n.channel, n.payload) for n in conn.notifies(timeout=timeout, stop_after=expected)]


@pytest.mark.parametrize("who", list(STOPS))
def test_a_stop_of_a_claimed_job_is_announced_once_when_it_commits(
    store: JobStore, db: Database, who: str
) -> None:
    stop, _ = STOPS[who]
    store.add_forge("gitea", "gitea", "https://gitea.example.com")
    enqueue_jobs(store, 2)
    job = claimed(store)
    with db.connect() as listener, db.connect(autocommit=False) as conn:
        listener.execute("LISTEN tireless_stop")
        stop(JobStore(conn), job)
        assert notifications(listener, 0.2) == [], "not before its commit"
        conn.commit()
        assert notifications(listener, 5, 1) == [("tireless_stop", str(job.id))]
        store.request_cancel(job.id, "again")  # the request stands: nothing new to hear
        store.request_cancel(2, "a pending job has no holder to tell")
        assert notifications(listener, 0.2) == []


def test_poll_soon_wakes_the_pollers_unless_the_repository_backs_off(
    store: JobStore, db: Database
) -> None:
    tracked(store)
    with db.connect() as listener:
        listener.execute("LISTEN tireless_poll")
        assert store.poll_soon("gitea", "ACME", "Widgets") is True
        assert notifications(listener, 5, 1) == [("tireless_poll", "gitea")]
        db.scalar("UPDATE tireless.repo_poll SET backoff_until = now() + interval '1h' RETURNING 1")
        assert store.poll_soon("gitea", "acme", "widgets") is False
        assert notifications(listener, 0.2) == []


def test_tracking_and_a_forge_retry_wake_the_pollers(store: JobStore, db: Database) -> None:
    store.add_forge("gitea", "gitea", "https://gitea.example.com")
    with db.connect() as listener:
        listener.execute("LISTEN tireless_poll")
        assert store.track_repo("gitea", "acme", "widgets") is True
        assert store.retry_forge("gitea") == 1
        assert notifications(listener, 5, 2) == [("tireless_poll", "gitea")] * 2


def test_next_poll_due_at_is_the_first_time_a_repository_can_be_read(
    store: JobStore, db: Database
) -> None:
    assert store.next_poll_in() is None
    store.add_forge("gitea", "gitea", "https://gitea.example.com")
    tracked(store)
    tracked(store, "gadgets")
    due_in = store.next_poll_in()
    assert due_in is not None
    assert due_in <= 0, "tracked: due at once"
    db.scalar(
        "UPDATE tireless.repo_poll SET next_poll_at = now() + interval '1h',"
        " backoff_until = CASE repo WHEN 'gadgets' THEN now() + interval '2h' END RETURNING 1"
    )
    due_in = store.next_poll_in()
    assert due_in is not None
    assert 3500 < due_in <= 3600
    store.record_forge_trouble("gitea", "rate limited", datetime.now(UTC) + timedelta(hours=3))
    due_in = store.next_poll_in()
    assert due_in is not None
    assert 3 * 3600 - 100 < due_in <= 3 * 3600


def watchdog_due_in(db: Database, job_id: int) -> float | None:
    due: float | None = db.scalar(
        "SELECT extract(epoch FROM tireless.watchdog_due_at(%(id)s) - now())", {"id": job_id}
    )
    return due


def test_watchdog_due_at_is_the_first_limit_of_the_held_attempt(
    store: JobStore, db: Database
) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store)
    assert watchdog_due_in(db, job.id) is None, "no limit"
    store.set_lane_max_run("cc", timedelta(hours=2))
    assert 7100 < (watchdog_due_in(db, job.id) or 0) <= 7200
    store.set_lane_stall_after("cc", timedelta(minutes=30))
    assert 1700 < (watchdog_due_in(db, job.id) or 0) <= 1800
    assert store.heartbeat(job.id, "w1") == "held"  # its first watch records the attempt
    db.scalar(
        "UPDATE tireless.job_attempt SET progress_at = now() - interval '29 minutes' RETURNING 1"
    )
    assert 0 < (watchdog_due_in(db, job.id) or 0) <= 60, "its last progress counts"
    store.transition(job.id, "delivered", "w1", None, job.claim_token)
    assert watchdog_due_in(db, job.id) is None, "not claimed"
