"""The SQL of the dashboard's pages: the views and functions a psql user reads, named
placeholders, nothing built from values. The calls it shares with the store (forges, rerun,
poll_soon, the lane and job actions) are tireless.store.calls'."""

from __future__ import annotations

WHO_AM_I = (
    "SELECT current_user AS role, pg_has_role(current_user, 'tireless_admin', 'MEMBER') AS admin"
)
LANES = """
SELECT every.lane, s.capacity, coalesce(s.paused, false) AS paused,
       coalesce(s.breaker, 'closed') AS breaker, coalesce(s.consecutive_failures, 0) AS consecutive_failures,
       s.tripped_until, coalesce(s.pending, 0) AS pending, coalesce(s.ready, 0) AS ready,
       coalesce(s.claimed, 0) AS claimed, coalesce(s.past_lease, 0) AS past_lease,
       extract(epoch FROM s.oldest_pending_age)::float8 AS oldest_pending_seconds,
       b.runs_today, coalesce(b.agent_seconds_today, 0) AS agent_seconds_today,
       b.runs_per_day, b.agent_seconds_per_day, b.budget_resets_at, coalesce(s.waiting, 0) AS waiting
  FROM (SELECT l.lane FROM tireless.lane_status l UNION SELECT f.lane FROM tireless.finished_jobs f) AS every
  LEFT JOIN tireless.lane_status s ON s.lane = every.lane
  LEFT JOIN tireless.lane_budget b ON b.lane = every.lane
 ORDER BY every.lane"""
"""Every lane: with settings or live jobs (lane_status), or that ever finished a job (the
rolled-up counters: every lane `tireless status` lists, without reading a day of finished jobs),
with today's spend against its daily budgets (lane_budget)."""
REPOS = """
SELECT r.forge, r.owner, r.repo, r.last_poll_at, r.last_success_at, r.last_error, r.last_error_at,
       r.consecutive_failures, r.next_poll_at, r.backoff_until, r.registered,
       r.forge_limited_until, r.forge_error, r.pending, r.claimed,
       r.mirror_backlog, r.mirror_error, r.mirror_error_at, r.skipped_issues, r.skipped_issue
  FROM tireless.repo_status r
 ORDER BY r.forge, r.owner, r.repo"""
REPLICATION_WARNING = "SELECT tireless.replication_warning() AS warning"
"""Why a failover could lose acknowledged work (a standby without synchronous commit), or null."""
FINISHED = (
    "SELECT f.lane, f.outcome, f.jobs FROM tireless.finished_jobs f ORDER BY f.lane, f.outcome"
)
LANE_EGRESS = (
    "SELECT e.lane, e.refusals, e.bytes_in, e.bytes_out FROM tireless.lane_egress e ORDER BY e.lane"
)
"""Per lane, the requests its agents were refused and the bytes they moved, over the kept jobs."""

JOB_COLUMNS = (
    "j.id, j.forge, j.owner, j.repo, j.number, j.title, j.kind::text AS kind, j.lane,"
    " j.state::text AS state, j.parent_id, j.claimed_by, j.claim_expires_at, j.attempts,"
    " j.available_at, j.note, j.created_at, j.updated_at, j.past_lease, j.waiting_on"
)
_JOB_FILTERS = (
    " WHERE (%(state)s::tireless.job_state IS NULL OR j.state = %(state)s::tireless.job_state)"
    " AND (%(lane)s::text IS NULL OR j.lane = %(lane)s)"
    " AND (%(kind)s::tireless.job_kind IS NULL OR j.kind = %(kind)s::tireless.job_kind)"
    " AND (%(forge)s::text IS NULL OR j.forge = %(forge)s)"
    " AND (%(owner)s::text IS NULL OR (j.owner, j.repo) = (%(owner)s, %(repo)s))"
    " AND (%(number)s::integer IS NULL OR j.number = %(number)s)"
    " AND (%(words)s::text[] IS NULL OR NOT EXISTS (SELECT FROM unnest(%(words)s::text[]) AS w"
    " WHERE strpos(lower(coalesce(j.title, '')), lower(w)) = 0))"
    " AND (%(worker)s::text IS NULL OR j.claimed_by = %(worker)s"
    " OR tireless.worker_ran(j.id, %(worker)s))"
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
TRACKED_KEY = (
    "SELECT k.forge, k.owner, k.repo"
    " FROM tireless.tracked_key(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s) k"
)
POLL_SOON_ONCE = (
    "SELECT tireless.poll_soon_once(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s,"
    " digest => %(digest)s) AS due"
)

# The dashboard over time, the failures, the workers, an issue's runs (migration 0023).
ACTIVITY = "SELECT a.* FROM tireless.queue_activity(%(span)s::interval) a"
DURATIONS = "SELECT d.* FROM tireless.job_durations(%(span)s::interval) d"
WORKERS = """
SELECT w.worker, w.lanes, w.job_id, w.jobs_held, w.held_since, w.last_heartbeat, w.lease_ends,
       w.last_seen, w.first_seen, w.status
  FROM tireless.workers w
 ORDER BY w.status = 'idle', w.status = 'working', w.last_seen DESC NULLS LAST, w.worker"""
FAILURE_GROUPS = "SELECT g.error, g.jobs, g.latest, g.lanes FROM tireless.failure_groups(%(span)s::interval) g LIMIT 50"
# Failed in the window, newest first (the index of terminal jobs by their last change), and
# live jobs on a later attempt (retried after a failure or a lost lease).
FAILED = (
    "SELECT " + JOB_COLUMNS + " FROM tireless.job_list j"
    " WHERE j.state = 'failed' AND j.updated_at >= now() - %(span)s::interval"
    " AND (%(error)s::text IS NULL OR split_part(coalesce(j.note, ''), E'\\n', 1) = %(error)s)"
    " ORDER BY j.updated_at DESC LIMIT 100"
)
RETRIED = (
    "SELECT " + JOB_COLUMNS + " FROM tireless.job_list j"
    " WHERE j.state IN ('pending', 'claimed') AND j.attempts > (j.state = 'claimed')::int"
    " AND (%(error)s::text IS NULL OR split_part(coalesce(j.note, ''), E'\\n', 1) = %(error)s)"
    " ORDER BY j.id DESC LIMIT 100"
)
ISSUE_RUNS = (
    "SELECT r.id, r.state, r.kind, r.created_at, r.note FROM tireless.issue_runs(%(job_id)s) r"
)
JOBS_BY_ID = (
    "SELECT " + JOB_COLUMNS + " FROM tireless.job_list j WHERE j.id = ANY (%(ids)s) ORDER BY j.id"
)
