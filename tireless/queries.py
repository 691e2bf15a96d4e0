"""The SQL of the adapter: one statement per database function, named placeholders, nothing
built from values. The sync and async stores share these constants."""

from __future__ import annotations

from dataclasses import fields

from psycopg import sql

from tireless.models import Job, Lane

JOB_COLUMNS = sql.SQL(", ").join(sql.Identifier(f.name) for f in fields(Job))
LANE_COLUMNS = sql.SQL(", ").join(sql.Identifier(f.name) for f in fields(Lane))


def _returning_jobs(call: str) -> sql.Composed:
    return sql.SQL("SELECT {} FROM " + call).format(JOB_COLUMNS)


def _returning_lane(call: str) -> sql.Composed:
    return sql.SQL("SELECT {} FROM " + call).format(LANE_COLUMNS)


TRACK_REPO = "SELECT tireless.track_repo(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s)"
UNTRACK_REPO = (
    "SELECT tireless.untrack_repo(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s)"
)
TRACKED_REPOS = "SELECT forge, owner, repo FROM tireless.tracked_repos()"
ENQUEUE = "SELECT tireless.enqueue(issues => %(issues)s)"
CLAIM_NEXT = _returning_jobs(
    "tireless.claim_next(worker => %(worker)s, lanes => %(lanes)s, lease => %(lease)s)"
)
RENEW_CLAIM = (
    "SELECT tireless.renew_claim(job_id => %(job_id)s, worker => %(worker)s,"
    " lease => %(lease)s, token => %(token)s)"
)
TRANSITION = _returning_jobs(
    "tireless.transition(job_id => %(job_id)s, to_state => %(to_state)s,"
    " worker => %(worker)s, note => %(note)s, token => %(token)s)"
)
EXPIRE_STALE_CLAIMS = "SELECT tireless.expire_stale_claims()"
REFRESH_LANE = (
    "SELECT tireless.refresh_lane(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s,"
    " number => %(number)s, labels => %(labels)s)"
)
JOB_KIND_FOR = "SELECT tireless.job_kind_for(labels => %(labels)s)"
LANE_FOR = "SELECT tireless.lane_for(kind => %(kind)s, labels => %(labels)s)"
SET_LANE_CAPACITY = _returning_lane(
    "tireless.set_lane_capacity(lane => %(lane)s, capacity => %(capacity)s)"
)
PAUSE_LANE = _returning_lane("tireless.pause_lane(lane => %(lane)s)")
RESUME_LANE = _returning_lane("tireless.resume_lane(lane => %(lane)s)")
RESET_LANE_BREAKER = _returning_lane("tireless.reset_lane_breaker(lane => %(lane)s)")
LISTEN = "LISTEN tireless_work"
UNLISTEN = "UNLISTEN tireless_work"
WORK_CHANNEL = "tireless_work"
