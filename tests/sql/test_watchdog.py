"""The time limit and the progress watchdog through the SQL functions: a lane's max_run and
stall_after make heartbeat answer timeout or stalled, the stop stands, progress resets the stall
clock, and end_stopped_attempt ends the attempt as any failure ends, with the watchdog's note.
The clock is moved through the database (the attempt's times set back), never slept."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.conftest import Database
from tests.helpers import claimed, enqueue_jobs, history, issue, make_available, rows
from tests.support.work import set_back
from tireless import Heartbeat, JobState, JobStore
from tireless.errors import IllegalTransition, InvalidArgument, NotHolder, UnknownJob
from tireless.models import Job


def watched(store: JobStore, *, max_run: str | None = None, stall_after: str | None = None) -> Job:
    """A claimed job of lane cc, with the limits set and a first heartbeat (held) behind it."""
    if max_run is not None:
        store.set_lane_max_run("cc", duration(max_run))
    if stall_after is not None:
        store.set_lane_stall_after("cc", duration(stall_after))
    enqueue_jobs(store, 1)
    job = claimed(store)
    assert store.heartbeat(job.id, "w1", token=job.claim_token) is Heartbeat.HELD
    return job


def duration(text: str) -> timedelta:
    number, unit = int(text[:-1]), text[-1]
    return timedelta(**{{"h": "hours", "m": "minutes", "s": "seconds"}[unit]: number})


def test_a_lane_without_limits_keeps_answering_held(store: JobStore, db: Database) -> None:
    enqueue_jobs(store, 1)
    job = claimed(store)
    assert store.heartbeat(job.id, "w1") is Heartbeat.HELD
    assert db.scalar("SELECT count(*) FROM tireless.job_attempt") == 0  # nothing written


def test_past_max_run_heartbeat_answers_timeout_and_the_stop_stands(
    store: JobStore, db: Database
) -> None:
    job = watched(store, max_run="2h")
    set_back(db, job.id, "started_at", "1 hour 59 minutes")
    assert store.heartbeat(job.id, "w1") is Heartbeat.HELD
    set_back(db, job.id, "started_at", "2 minutes")
    assert store.heartbeat(job.id, "w1", token=job.claim_token) is Heartbeat.TIMEOUT
    before = db.scalar(
        "SELECT claim_expires_at FROM tireless.job WHERE id = %(id)s", {"id": job.id}
    )
    store.set_lane_max_run("cc", None)  # lifting the limit does not take a stop back
    assert store.heartbeat(job.id, "w1") is Heartbeat.TIMEOUT
    after = db.scalar("SELECT claim_expires_at FROM tireless.job WHERE id = %(id)s", {"id": job.id})
    assert after > before, "the lease is still extended, so the holder has time to stop"


def test_a_timed_out_attempt_ends_as_a_failure_with_its_note(store: JobStore, db: Database) -> None:
    job = watched(store, max_run="2h")
    set_back(db, job.id, "started_at", "3 hours")
    assert store.heartbeat(job.id, "w1") is Heartbeat.TIMEOUT
    ended = store.end_stopped_attempt(job.id, "w1", job.claim_token)
    assert (ended.state, ended.note) == (JobState.PENDING, "timed out after 2h")
    assert ended.available_at > ended.updated_at, "backoff, as after any failure"
    assert history(db, job.id)[-1][:5] == ("claimed", "pending", "w1", 1, "timed out after 2h")
    assert db.scalar("SELECT consecutive_failures FROM tireless.lane WHERE name = 'cc'") == 1


def test_the_last_attempt_timed_out_fails_the_job(store: JobStore, db: Database) -> None:
    db.scalar("SELECT tireless.set_kind_policy(kind => 'implement', max_attempts => 1)")
    job = watched(store, max_run="90m")
    set_back(db, job.id, "started_at", "2 hours")
    assert store.heartbeat(job.id, "w1") is Heartbeat.TIMEOUT
    ended = store.end_stopped_attempt(job.id, "w1")
    assert ended.state is JobState.FAILED
    assert ended.note == "attempts exhausted (1 of 1); last: timed out after 1h30m"


def test_no_progress_for_stall_after_answers_stalled_naming_the_last_step(
    store: JobStore, db: Database
) -> None:
    job = watched(store, stall_after="30m")
    store.report_progress(job.id, "w1", "ran the tests", job.claim_token)
    set_back(db, job.id, "progress_at", "31 minutes")
    assert store.heartbeat(job.id, "w1") is Heartbeat.STALLED
    ended = store.end_stopped_attempt(job.id, "w1", job.claim_token)
    assert ended.note == "no progress for 30m (last: ran the tests)"


def test_a_stall_without_any_step_says_so_plainly(store: JobStore, db: Database) -> None:
    job = watched(store, stall_after="45s")
    set_back(db, job.id, "progress_at", "1 minute")
    assert store.heartbeat(job.id, "w1") is Heartbeat.STALLED
    assert store.end_stopped_attempt(job.id, "w1").note == "no progress for 45s"


def test_progress_resets_the_stall_clock_and_keeps_the_last_step(
    store: JobStore, db: Database
) -> None:
    job = watched(store, stall_after="30m")
    store.report_progress(job.id, "w1", "cloned", job.claim_token)
    set_back(db, job.id, "progress_at", "31 minutes")
    set_back(db, job.id, "started_at", "31 minutes")
    store.report_progress(job.id, "w1")  # output without a step line
    assert store.heartbeat(job.id, "w1") is Heartbeat.HELD
    assert db.scalar("SELECT step FROM tireless.job_attempt") == "cloned"
    store.report_progress(job.id, "w1", "  " + "x" * 600)
    assert db.scalar("SELECT step FROM tireless.job_attempt") == "x" * 500


def test_a_new_attempt_starts_its_clock_and_its_step_again(store: JobStore, db: Database) -> None:
    job = watched(store, max_run="1h")
    store.report_progress(job.id, "w1", "first try")
    set_back(db, job.id, "started_at", "2 hours")
    assert store.heartbeat(job.id, "w1") is Heartbeat.TIMEOUT
    store.end_stopped_attempt(job.id, "w1")
    make_available(db, job.id)
    again = claimed(store, "w2")
    assert again.attempts == 2
    assert store.heartbeat(again.id, "w2") is Heartbeat.HELD
    assert rows(db, "SELECT attempt, step, stop FROM tireless.job_attempt") == [(2, None, None)]


def test_a_cancel_request_outranks_the_watchdog(store: JobStore, db: Database) -> None:
    job = watched(store, max_run="1h")
    set_back(db, job.id, "started_at", "2 hours")
    store.enqueue([issue(1, state="closed")])  # the issue withdrew its request
    assert store.heartbeat(job.id, "w1") is Heartbeat.CANCEL


def test_only_the_holder_reports_progress_or_ends_a_stopped_attempt(
    store: JobStore, db: Database
) -> None:
    job = watched(store, max_run="1h")
    with pytest.raises(NotHolder):
        store.report_progress(job.id, "w2", "not mine")
    with pytest.raises(UnknownJob):
        store.report_progress(job.id + 1000, "w1")
    with pytest.raises(IllegalTransition, match="not stopped by the watchdog"):
        store.end_stopped_attempt(job.id, "w1")
    set_back(db, job.id, "started_at", "2 hours")
    assert store.heartbeat(job.id, "w1") is Heartbeat.TIMEOUT
    with pytest.raises(NotHolder):
        store.end_stopped_attempt(job.id, "w2")
    assert db.scalar("SELECT state::text FROM tireless.job") == "claimed"


@pytest.mark.parametrize("bad", [timedelta(0), timedelta(seconds=-1), timedelta(days=31)])
def test_a_limit_out_of_range_is_refused_naming_it(store: JobStore, bad: timedelta) -> None:
    with pytest.raises(InvalidArgument, match="max_run must be null"):
        store.set_lane_max_run("cc", bad)
    with pytest.raises(InvalidArgument, match="stall_after must be null"):
        store.set_lane_stall_after("cc", bad)
    with pytest.raises(InvalidArgument, match="lane must be"):
        store.set_lane_max_run("not a lane", timedelta(hours=1))


def test_the_limits_are_the_lane_settings_an_admin_reads(store: JobStore) -> None:
    lane = store.set_lane_max_run("cc", timedelta(hours=2))
    lane = store.set_lane_stall_after("cc", timedelta(minutes=30))
    assert (lane.max_run, lane.stall_after) == (timedelta(hours=2), timedelta(minutes=30))
    assert store.set_lane_max_run("cc", None).max_run is None


@pytest.mark.parametrize(
    ("span", "short"),
    [
        ("2 hours", "2h"),
        ("30 minutes", "30m"),
        ("90 minutes", "1h30m"),
        ("45 seconds", "45s"),
        ("1 day 2 hours", "1d2h"),
        ("250 milliseconds", "250ms"),
    ],
)
def test_notes_write_durations_short(db: Database, span: str, short: str) -> None:
    assert db.scalar("SELECT tireless.short_duration(%(s)s::interval)", {"s": span}) == short
