"""The SQL of the dashboard's pages: the views and functions a psql user reads, named
placeholders, nothing built from values. The calls it shares with the store (forges, rerun,
poll_soon, the lane and job actions) are tireless.calls'."""

from __future__ import annotations

WHO_AM_I = (
    "SELECT current_user AS role, pg_has_role(current_user, 'tireless_admin', 'MEMBER') AS admin"
)
LANES = """
SELECT s.lane, s.capacity, s.paused, s.breaker, s.consecutive_failures, s.tripped_until,
       s.pending, s.ready, s.claimed, s.past_lease, s.oldest_pending_seconds,
       s.runs_today, s.agent_seconds_today, s.runs_per_day, s.agent_seconds_per_day, s.budget_resets_at
  FROM tireless.lane_summary s
 ORDER BY s.lane"""
"""Every lane `tireless status` lists: with settings, live jobs, or jobs finished in 24 hours."""
REPOS = """
SELECT r.forge, r.owner, r.repo, r.last_poll_at, r.last_success_at, r.last_error, r.last_error_at,
       r.consecutive_failures, r.next_poll_at, r.backoff_until, r.registered,
       r.forge_limited_until, r.forge_error, r.pending, r.claimed,
       r.mirror_backlog, r.mirror_error, r.mirror_error_at
  FROM tireless.repo_status r
 ORDER BY r.forge, r.owner, r.repo"""
ROLL_UP_HISTORY = "SELECT tireless.roll_up_history()"
FINISHED_BY_HOUR = """
SELECT h.hour, h.outcome, sum(h.jobs)::bigint AS jobs
  FROM tireless.finished_jobs_by_hour h
 WHERE h.hour >= date_trunc('hour', now()) - interval '23 hours'
 GROUP BY h.hour, h.outcome"""
FINISHED = (
    "SELECT f.lane, f.outcome, f.jobs FROM tireless.finished_jobs f ORDER BY f.lane, f.outcome"
)

JOB_COLUMNS = (
    "j.id, j.forge, j.owner, j.repo, j.number, j.title, j.kind::text AS kind, j.lane,"
    " j.state::text AS state, j.parent_id, j.claimed_by, j.claim_expires_at, j.attempts,"
    " j.available_at, j.note, j.created_at, j.updated_at, j.past_lease"
)
_JOB_FILTERS = (
    " WHERE (%(state)s::tireless.job_state IS NULL OR j.state = %(state)s::tireless.job_state)"
    " AND (%(lane)s::text IS NULL OR j.lane = %(lane)s)"
    " AND (%(kind)s::tireless.job_kind IS NULL OR j.kind = %(kind)s::tireless.job_kind)"
    " AND (%(forge)s::text IS NULL OR j.forge = %(forge)s)"
    " AND (%(owner)s::text IS NULL OR (j.owner, j.repo) = (%(owner)s, %(repo)s))"
)
# Keyset paging: a page is the jobs just below `before` (newest first) or just above `after`.
JOBS_BEFORE = (
    "SELECT "
    + JOB_COLUMNS
    + " FROM tireless.job_list j"
    + _JOB_FILTERS
    + " AND (%(before)s::bigint IS NULL OR j.id < %(before)s) ORDER BY j.id DESC LIMIT %(limit)s"
)
JOBS_AFTER = (
    "SELECT "
    + JOB_COLUMNS
    + " FROM tireless.job_list j"
    + _JOB_FILTERS
    + " AND j.id > %(after)s ORDER BY j.id LIMIT %(limit)s"
)
JOB = "SELECT " + JOB_COLUMNS + " FROM tireless.job_list j WHERE j.id = %(job_id)s"
CHILDREN = (
    "SELECT "
    + JOB_COLUMNS
    + " FROM tireless.job_list j WHERE j.parent_id = %(job_id)s ORDER BY j.id"
)
HISTORY = (
    "SELECT h.event_id, h.at, h.from_state, h.to_state, h.worker, h.attempt, h.note, h.lasted"
    " FROM tireless.job_history(job_id => %(job_id)s) h"
)
IS_TRACKED = (
    "SELECT EXISTS (SELECT FROM tireless.repo_status r"
    " WHERE (r.forge, r.owner, r.repo) = (%(forge)s, %(owner)s, %(repo)s)) AS tracked"
)
POLL_SOON_ONCE = (
    "SELECT tireless.poll_soon_once(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s,"
    " digest => %(digest)s) AS due"
)
