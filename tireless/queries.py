"""The SQL of the adapter: one statement per database function, named placeholders, nothing
built from values. The sync and async stores share these constants."""

from __future__ import annotations

from dataclasses import fields
from typing import LiteralString

from psycopg import sql

from tireless.models import Job, Lane, RepoStatus

JOB_COLUMNS = sql.SQL(", ").join(sql.Identifier(f.name) for f in fields(Job))
LANE_COLUMNS = sql.SQL(", ").join(sql.Identifier(f.name) for f in fields(Lane))
REPO_STATUS_COLUMNS = sql.SQL(", ").join(sql.Identifier(f.name) for f in fields(RepoStatus))


# Rendered to bytes once: psycopg would compose a sql.Composed again at every execute (bench/results.md).
def _returning(columns: sql.Composable, call: LiteralString) -> bytes:
    return sql.SQL("SELECT {} FROM " + call).format(columns).as_bytes(None)


TRACK_REPO = "SELECT tireless.track_repo(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s)"
UNTRACK_REPO = (
    "SELECT tireless.untrack_repo(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s)"
)
TRACKED_REPOS = "SELECT forge, owner, repo FROM tireless.tracked_repos()"
ENQUEUE = "SELECT tireless.enqueue(issues => %(issues)s)"
CLAIM_NEXT = _returning(
    JOB_COLUMNS, "tireless.claim_next(worker => %(worker)s, lanes => %(lanes)s, lease => %(lease)s)"
)
RENEW_CLAIM = (
    "SELECT tireless.renew_claim(job_id => %(job_id)s, worker => %(worker)s,"
    " lease => %(lease)s, token => %(token)s)"
)
TRANSITION = _returning(
    JOB_COLUMNS,
    "tireless.transition(job_id => %(job_id)s, to_state => %(to_state)s,"
    " worker => %(worker)s, note => %(note)s, token => %(token)s)",
)
GIVE_BACK = _returning(
    JOB_COLUMNS,
    "tireless.give_back(job_id => %(job_id)s, worker => %(worker)s, note => %(note)s,"
    " token => %(token)s)",
)
EXPIRE_STALE_CLAIMS = "SELECT tireless.expire_stale_claims()"
PRUNE = "SELECT tireless.prune(older_than => %(older_than)s, max_jobs => %(max_jobs)s)"
HEARTBEAT = (
    "SELECT tireless.heartbeat(job_id => %(job_id)s, worker => %(worker)s,"
    " lease => %(lease)s, token => %(token)s)"
)
RERUN = (
    "SELECT tireless.rerun(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s,"
    " number => %(number)s)"
)
REFRESH_LANE = (
    "SELECT tireless.refresh_lane(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s,"
    " number => %(number)s, labels => %(labels)s)"
)
JOB_KIND_FOR = "SELECT tireless.job_kind_for(labels => %(labels)s)"
LANE_FOR = "SELECT tireless.lane_for(kind => %(kind)s, labels => %(labels)s)"
SET_LANE_CAPACITY = _returning(
    LANE_COLUMNS, "tireless.set_lane_capacity(lane => %(lane)s, capacity => %(capacity)s)"
)
PAUSE_LANE = _returning(LANE_COLUMNS, "tireless.pause_lane(lane => %(lane)s)")
RESUME_LANE = _returning(LANE_COLUMNS, "tireless.resume_lane(lane => %(lane)s)")
RESET_LANE_BREAKER = _returning(LANE_COLUMNS, "tireless.reset_lane_breaker(lane => %(lane)s)")
SET_POLICY = (
    "SELECT label_prefix, backoff_base, backoff_cap, breaker_threshold, breaker_cooldown"
    " FROM tireless.set_policy(label_prefix => %(label_prefix)s, backoff_base => %(backoff_base)s,"
    " backoff_cap => %(backoff_cap)s, breaker_threshold => %(breaker_threshold)s,"
    " breaker_cooldown => %(breaker_cooldown)s)"
)

# Forges and polling
ADD_FORGE = (
    "SELECT tireless.add_forge(name => %(name)s, kind => %(kind)s, base_url => %(base_url)s)"
)
REMOVE_FORGE = "SELECT tireless.remove_forge(name => %(name)s)"
FORGES = "SELECT name, kind, base_url FROM tireless.forges()"
CLAIM_REPOS_TO_POLL = (
    "SELECT forge, owner, repo, kind, base_url, cursor, etag, full_listing, live_numbers"
    " FROM tireless.claim_repos_to_poll(poller => %(poller)s, lease => %(lease)s,"
    " max_repos => %(max_repos)s)"
)
RECORD_POLL = (
    "SELECT created, cancelled, rerouted, seen FROM tireless.record_poll(forge => %(forge)s,"
    " owner => %(owner)s, repo => %(repo)s, poller => %(poller)s, issues => %(issues)s,"
    " cursor => %(cursor)s, etag => %(etag)s, full_listing => %(full_listing)s,"
    " deleted => %(deleted)s::integer[], next_poll_in => %(next_poll_in)s)"
)
RECORD_POLL_FAILURE = (
    "SELECT tireless.record_poll_failure(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s,"
    " poller => %(poller)s, error => %(error)s, retry_after => %(retry_after)s)"
)
RECORD_FORGE_TROUBLE = (
    "SELECT tireless.record_forge_trouble(name => %(name)s, error => %(error)s, until => %(until)s)"
)
POLL_SOON = "SELECT tireless.poll_soon(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s)"
REPO_STATUS = (
    sql.SQL("SELECT {} FROM tireless.repo_status ORDER BY forge, owner, repo")
    .format(REPO_STATUS_COLUMNS)
    .as_bytes(None)
)

LISTEN = "LISTEN tireless_work"
UNLISTEN = "UNLISTEN tireless_work"

# Operator reads (the `tireless` command and `make run`): the views, and the job table as admin.
STATUS = """
SELECT coalesce(s.lane, q.lane) AS lane,
       coalesce(s.pending, 0) AS pending, coalesce(s.ready, 0) AS ready,
       coalesce(s.claimed, 0) AS claimed, coalesce(s.past_lease, 0) AS past_lease,
       coalesce(q.delivered, 0) AS delivered, coalesce(q.failed, 0) AS failed,
       coalesce(q.cancelled, 0) AS cancelled,
       extract(epoch FROM s.oldest_pending_age)::float8 AS oldest_pending_seconds,
       coalesce(s.breaker, 'closed') AS breaker, coalesce(s.paused, false) AS paused,
       s.capacity, s.tripped_until
  FROM tireless.lane_status s
  FULL JOIN (SELECT st.lane,
                    sum(st.jobs) FILTER (WHERE st.state = 'delivered')::bigint AS delivered,
                    sum(st.jobs) FILTER (WHERE st.state = 'failed')::bigint AS failed,
                    sum(st.jobs) FILTER (WHERE st.state = 'cancelled')::bigint AS cancelled
               FROM tireless.queue_stats st GROUP BY st.lane) q ON q.lane = s.lane
 ORDER BY 1"""
JOBS = sql.SQL(
    "SELECT {} FROM tireless.job j"
    " WHERE (%(state)s::text IS NULL OR j.state::text = %(state)s)"
    " AND (%(lane)s::text IS NULL OR j.lane = %(lane)s)"
    " AND (%(owner)s::text IS NULL OR (j.owner, j.repo) = (%(owner)s, %(repo)s))"
    " AND j.id > %(after)s"
    " ORDER BY j.id LIMIT %(limit)s"
).format(JOB_COLUMNS)
JOB = sql.SQL("SELECT {} FROM tireless.job j WHERE j.id = %(job_id)s").format(JOB_COLUMNS)
JOB_EVENTS = (
    "SELECT e.id, e.at, e.from_state::text AS from_state, e.to_state::text AS to_state,"
    " e.worker, e.attempt, e.note FROM tireless.job_event e WHERE e.job_id = %(job_id)s ORDER BY e.id"
)
# The jobs an enqueue in this same transaction created for the issues of its batch.
CREATED_JOBS = sql.SQL(
    "SELECT {} FROM tireless.job j"
    " WHERE j.created_at = now() AND (j.forge, j.owner, j.repo, j.number) IN"
    " (SELECT i.forge, i.owner, i.repo, i.number FROM jsonb_to_recordset(%(issues)s)"
    " AS i(forge text, owner text, repo text, number integer))"
    " ORDER BY j.id"
).format(JOB_COLUMNS)
