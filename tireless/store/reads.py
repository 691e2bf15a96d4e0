"""The operator's reads: the statements of `tireless status`, `jobs` and `show`, of the
dashboard's pages and of the demo, each reading a view or function a psql user reads too (named
placeholders, nothing built from values), and how to run them: `fetch` (a statement) and `read`
(a call) over a connection, `read_async` over an async one (the dashboard's `Dashboard.read`).
The job list, one job and its history are calls (`jobs`, `listed_jobs`, `job`, `listed_job`,
`job_events`, `job_history`) of db/reads.sql's `tireless.list_jobs`, the view `tireless.job_list`
and `tireless.job_history`, so that each filter means the same in the command line, the
dashboard and the demo."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any, TypeVar

import psycopg
from psycopg import sql
from psycopg.rows import BaseRowFactory, RowFactory, dict_row

from tireless.errors import translated_errors
from tireless.models import Job
from tireless.store.calls import JOB_COLUMNS, JOB_ROW, Call, Query

Answer = TypeVar("Answer")


def fetch(
    conn: psycopg.Connection[Any], query: Query, params: dict[str, Any], row: RowFactory[Any]
) -> list[Any]:
    """Rows of an operator read, its refusals (say 42501 for a runner reading jobs) translated."""
    with translated_errors(), conn.cursor(row_factory=row) as cur:
        cur.execute(query, params)
        return cur.fetchall()


def read(conn: psycopg.Connection[Any], call: Call[Any, Answer]) -> Answer:
    """The answer of one of the calls below over the caller's connection, refusals translated."""
    return call.answer(fetch(conn, call.query, dict(call.params), call.row))


async def read_async(conn: psycopg.AsyncConnection[Any], call: Call[Any, Answer]) -> Answer:
    """`read` over an async connection (the dashboard's)."""
    with translated_errors():
        async with conn.cursor(row_factory=call.row) as cur:
            await cur.execute(call.query, call.params)
            return call.answer(await cur.fetchall())


# The job list, one job, its history
@dataclass(frozen=True, slots=True)
class JobFilter:
    """Which jobs a list keeps (tireless.list_jobs): each field given must hold, None keeps every
    job. The repository is owner and repo together."""

    state: str | None = None
    lane: str | None = None
    kind: str | None = None
    forge: str | None = None
    owner: str | None = None
    repo: str | None = None
    since: timedelta | None = None
    """Changed in the last this long."""
    words: tuple[str, ...] | None = None
    """The title holds every one, in any case."""
    worker: str | None = None
    """Holds the job, or ran an attempt of it."""
    number: int | None = None
    """The issue's number."""


@dataclass(frozen=True, slots=True)
class Page:
    """Which part of a filtered list: at most `at_most` jobs with ids above `after` and below
    `before`, oldest first, or newest first with `newest` (keyset paging)."""

    after: int | None = None
    before: int | None = None
    newest: bool = False
    at_most: int = 100


def _list_params(filters: JobFilter, page: Page) -> dict[str, Any]:
    params = asdict(filters) | asdict(page)
    params["words"] = None if filters.words is None else list(filters.words)
    return params


LIST_JOBS = (
    "tireless.list_jobs(state => %(state)s, lane => %(lane)s, kind => %(kind)s,"
    " forge => %(forge)s, owner => %(owner)s, repo => %(repo)s, since => %(since)s,"
    " words => %(words)s, worker => %(worker)s, number => %(number)s, after => %(after)s,"
    " before => %(before)s, newest => %(newest)s, at_most => %(at_most)s)"
)
LISTED_COLUMNS = (
    "j.id, j.forge, j.owner, j.repo, j.number, j.title, j.kind::text AS kind, j.lane,"
    " j.state::text AS state, j.parent_id, j.claimed_by, j.claim_expires_at, j.attempts,"
    " j.available_at, j.note, j.created_at, j.updated_at, j.past_lease, j.waiting_on,"
    " j.cause, j.pull_number, j.pull_url"
)
"""The columns of tireless.job_list that the dashboard shows of a job: its cause (the note's,
tireless.note_cause) and its pull request among them (the rest of the delivery is read with the
job's page)."""
LISTED_JOBS = "SELECT " + LISTED_COLUMNS + " FROM " + LIST_JOBS + " j"
JOBS = sql.SQL(
    "SELECT {} FROM tireless.job"
    " JOIN (SELECT l.id AS listed, l.ordinality AS place FROM " + LIST_JOBS + " WITH ORDINALITY l)"
    " AS l ON l.listed = tireless.job.id ORDER BY l.place"
).format(JOB_COLUMNS)
"""`tireless jobs`'s list: list_jobs's filter and order, the rows of tireless.job (claim tokens and
labels included, which only tireless_admin may read)."""
LISTED_JOB = "SELECT " + LISTED_COLUMNS + " FROM tireless.job_list j WHERE j.id = %(job_id)s"
JOB = sql.SQL("SELECT {} FROM tireless.job WHERE id = %(job_id)s").format(JOB_COLUMNS)
CHILDREN = (
    "SELECT "
    + LISTED_COLUMNS
    + " FROM tireless.job_list j WHERE j.parent_id = %(job_id)s ORDER BY j.id"
)
HISTORY = (
    "SELECT h.event_id, h.at, h.from_state, h.to_state, h.worker, h.attempt, h.note, h.lasted"
    " FROM tireless.job_history(job_id => %(job_id)s) h"
)
EVENTS = (
    "SELECT h.event_id AS id, h.at, h.from_state, h.to_state, h.worker, h.attempt, h.note"
    " FROM tireless.job_history(job_id => %(job_id)s) h"
)


def _first(rows: list[Any]) -> Any:
    return rows[0] if rows else None


def _rows(rows: list[Any]) -> list[Any]:
    return rows


DictRow = dict[str, Any]
_DICT: BaseRowFactory[DictRow] = dict_row


def listed_jobs(filters: JobFilter, page: Page = Page()) -> Call[DictRow, list[DictRow]]:
    """The dashboard's job list: rows of tireless.job_list, as dicts."""
    return Call(LISTED_JOBS, _list_params(filters, page), _DICT, _rows)


def jobs(filters: JobFilter, page: Page = Page()) -> Call[Job, list[Job]]:
    """`tireless jobs` and the demo: the same list as Jobs (admin only)."""
    return Call(JOBS, _list_params(filters, page), JOB_ROW, _rows)


def listed_job(job_id: int) -> Call[DictRow, DictRow | None]:
    """One job as the dashboard shows it (tireless.job_list), None for an unknown id."""
    return Call(LISTED_JOB, {"job_id": job_id}, _DICT, _first)


def job(job_id: int) -> Call[Job, Job | None]:
    """One job as a Job (`tireless show`, admin only), None for an unknown id."""
    return Call(JOB, {"job_id": job_id}, JOB_ROW, _first)


def job_history(job_id: int) -> Call[DictRow, list[DictRow]]:
    """A job's timeline (tireless.job_history), each event with how long its state lasted."""
    return Call(HISTORY, {"job_id": job_id}, _DICT, _rows)


def job_events(job_id: int) -> Call[DictRow, list[DictRow]]:
    """A job's events, oldest first, as `tireless show` and the demo read them (key `id`)."""
    return Call(EVENTS, {"job_id": job_id}, _DICT, _rows)


# The dashboard's other pages, /metrics and the webhooks
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
       b.runs_per_day, b.agent_seconds_per_day, b.budget_resets_at, coalesce(s.waiting, 0) AS waiting,
       s.memory_limit, s.cpu_limit, s.pids_limit, s.disk_limit
  FROM (SELECT l.lane FROM tireless.lane_status l UNION SELECT f.lane FROM tireless.finished_jobs f) AS every
  LEFT JOIN tireless.lane_status s ON s.lane = every.lane
  LEFT JOIN tireless.lane_budget b ON b.lane = every.lane
 ORDER BY every.lane"""
"""Every lane: with settings or live jobs (lane_status), or that ever finished a job (the
rolled-up counters: every lane `tireless status` lists, without reading a day of finished jobs),
with today's spend against its daily budgets (lane_budget) and its limits on one attempt."""
REPOS = """
SELECT r.forge, r.owner, r.repo, r.last_poll_at, r.last_success_at, r.last_error, r.last_error_at,
       r.consecutive_failures, r.next_poll_at, r.backoff_until, r.registered,
       r.forge_limited_until, r.forge_error, r.pending, r.claimed,
       r.mirror_backlog, r.mirror_error, r.mirror_error_at, r.skipped_issues, r.skipped_issue
  FROM tireless.repo_status r
 ORDER BY r.forge, r.owner, r.repo"""
MISSED_ROUNDS = (
    "SELECT m.part, m.due_since, m.items, m.detail FROM tireless.missed_rounds() m ORDER BY m.part"
)
"""The poller, sweeper or workers that missed their rounds by more than a minute (the overview)."""
LABEL_REPORTS = (
    "SELECT forge, owner, repo, number, label, written_at, last_error FROM tireless.label_reports"
    " WHERE standing ORDER BY forge, owner, repo, number, label"
)
"""The labels under the prefix that name nothing on the open issues that still carry them."""
REPLICATION_WARNING = "SELECT tireless.replication_warning() AS warning"
"""Why a failover could lose acknowledged work (a standby without synchronous commit), or null."""
STATUS = (
    "SELECT lane, pending, ready, claimed, past_lease, delivered, failed, cancelled,"
    " oldest_pending_seconds, breaker, paused, capacity, tripped_until, consecutive_failures,"
    " runs_today, agent_seconds_today, runs_per_day, agent_seconds_per_day, budget_resets_at,"
    " max_run, stall_after, waiting, egress, memory_limit, cpu_limit, pids_limit, disk_limit"
    " FROM tireless.lane_summary ORDER BY lane"
)
FINISHED = (
    "SELECT f.lane, f.outcome, f.jobs FROM tireless.finished_jobs f ORDER BY f.lane, f.outcome"
)
LANE_EGRESS = (
    "SELECT e.lane, e.refusals, e.bytes_in, e.bytes_out FROM tireless.lane_egress e ORDER BY e.lane"
)
"""Per lane, the requests its agents were refused and the bytes they moved, over the kept jobs."""
LANE_USAGE = (
    "SELECT u.lane, u.attempts, u.cpu_seconds, u.peak_memory, u.peak_processes,"
    " u.memory_stops, u.pids_stops, u.disk_stops FROM tireless.lane_usage u ORDER BY u.lane"
)
"""Per lane, what its measured attempts used and how many a limit stopped, over the kept jobs."""
AGENT_USAGE = (
    "SELECT u.lane, u.forge, u.owner, u.repo, u.model, u.requests, u.unread, u.input_tokens,"
    " u.output_tokens, u.cache_read_tokens, u.cache_write_tokens, u.input_cost::float8 AS input_cost,"
    " u.output_cost::float8 AS output_cost, u.cache_read_cost::float8 AS cache_read_cost,"
    " u.cache_write_cost::float8 AS cache_write_cost"
    " FROM tireless.agent_usage u ORDER BY u.lane, u.forge, u.owner, u.repo, u.model"
)
"""Per lane, repository and model, the model requests, tokens and cost, over the kept jobs."""
JOB_SPEND = "SELECT tireless.spend_text(job_id => %(job_id)s) AS spend"
"""What a job's agent spent, in one line (null without a model request through a gateway)."""
JOBS_SPEND = (
    "SELECT j.id AS job_id, tireless.spend_text(job_id => j.id) AS spend,"
    " (SELECT coalesce(jsonb_agg(to_jsonb(u) - 'cost' || jsonb_build_object('cost', trim_scale(u.cost)::text)), '[]')"
    "   FROM tireless.job_model_usage(job_id => j.id) u) AS usage"
    " FROM unnest(%(job_ids)s::bigint[]) AS j(id)"
)
"""For `tireless jobs`: each job's spend in one line and its usage by attempt and model."""

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
       w.last_seen, w.first_seen, w.status, coalesce(o.delivered, 0) AS delivered,
       coalesce(o.failed, 0) AS failed, w.presence, w.started_at, w.beat_at, w.stopped_at,
       w.stopped_how
  FROM tireless.workers w
  LEFT JOIN tireless.worker_outcomes(interval '24 hours') o ON o.worker = w.worker
 ORDER BY w.status = 'idle', w.status = 'working', w.last_seen DESC NULLS LAST, w.worker"""
FAILURE_GROUPS = "SELECT g.error, g.jobs, g.latest, g.lanes FROM tireless.failure_groups(%(span)s::interval) g LIMIT 50"
# Failed in the window, newest first (the index of terminal jobs by their last change), and
# live jobs on a later attempt (retried after a failure or a lost lease).
FAILED = (
    "SELECT " + LISTED_COLUMNS + " FROM tireless.job_list j"
    " WHERE j.state = 'failed' AND j.updated_at >= now() - %(span)s::interval"
    " AND (%(error)s::text IS NULL OR j.cause = %(error)s)"
    " ORDER BY j.updated_at DESC LIMIT 100"
)
RETRIED = (
    "SELECT " + LISTED_COLUMNS + " FROM tireless.job_list j"
    " WHERE j.state IN ('pending', 'claimed') AND j.attempts > (j.state = 'claimed')::int"
    " AND (%(error)s::text IS NULL OR j.cause = %(error)s)"
    " ORDER BY j.id DESC LIMIT 100"
)
ISSUE_RUNS = (
    "SELECT r.id, r.state, r.kind, r.created_at, r.note FROM tireless.issue_runs(%(job_id)s) r"
)
JOBS_BY_ID = (
    "SELECT "
    + LISTED_COLUMNS
    + " FROM tireless.job_list j WHERE j.id = ANY (%(ids)s) ORDER BY j.id"
)


# The rest of a job's page and of `tireless show`, `tireless status` and `tireless prune`
PRUNE_PREVIEW = (
    "SELECT jobs, oldest, newest FROM tireless.prune_preview(older_than => %(older_than)s)"
)
JOB_ATTEMPTS = (
    "SELECT a.attempt, a.worker, a.started_at, a.ended_at, a.ran, a.ended_as, a.cause, a.output,"
    " a.pull_number, a.pull_url, a.exit_status FROM tireless.job_attempts(%(job_id)s) a"
)
"""A job's attempts from its history (the dashboard's job page): each one's run time, how it
ended, COMMAND's exit status, its stop reason, its output's tail (the end note) and the pull
request it opened."""
JOB_PROGRESS = (
    "SELECT p.attempt, p.started_at, p.progress_at, p.step, p.stop_note, p.reported"
    " FROM tireless.job_progress p WHERE p.job_id = %(job_id)s"
)
"""The job's newest attempt as the watchdog sees it (`tireless show`, the dashboard's job page):
no row before its first heartbeat under a limit, progress report or report."""
DELIVERY_COLUMNS = (
    "d.job_id, d.delivered_at, d.changed, d.branch, d.head, d.base_branch, d.base, d.draft,"
    " d.pull_number, d.pull_url, d.pull_known_at, d.pull_queued_at, d.pull_written_at,"
    " d.pull_failures, d.pull_error, d.pull_error_at"
)
JOB_DELIVERY = (
    "SELECT " + DELIVERY_COLUMNS + " FROM tireless.deliveries d WHERE d.job_id = %(job_id)s"
)
"""What the job delivered through `deliver` (`tireless show`, the dashboard's job page): no row
for a job that was not delivered, or was delivered by `transition`."""
JOB_DELIVERIES = (
    "SELECT " + DELIVERY_COLUMNS + " FROM tireless.deliveries d WHERE d.job_id = ANY (%(job_ids)s)"
)
"""The deliveries of the jobs `tireless jobs --json` lists."""
USAGE_COLUMNS = (
    "u.attempt, u.peak_memory, u.cpu_seconds, u.peak_processes, u.workspace_bytes, u.limit_reached"
)
JOB_USAGE = (
    "SELECT " + USAGE_COLUMNS + " FROM tireless.job_usage u WHERE u.job_id = %(job_id)s"
    " ORDER BY u.attempt"
)
"""What each attempt of a job used of its host (`tireless show`, the job page)."""
JOBS_USAGE = (
    "SELECT DISTINCT ON (u.job_id) u.job_id, " + USAGE_COLUMNS + " FROM tireless.job_usage u"
    " WHERE u.job_id = ANY (%(job_ids)s) ORDER BY u.job_id, u.attempt DESC"
)
"""What the newest measured attempt of each job `tireless jobs --json` lists used."""
JOB_CHECKPOINT = (
    "SELECT c.attempt, c.ref, c.commit, c.recorded_at"
    " FROM tireless.checkpoints c WHERE c.job_id = %(job_id)s"
)
"""The job's last checkpoint (`tireless show`, the dashboard's job page): no row without one."""


def status_rows(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    """tireless.lane_summary: each lane's queue, settings and terminal counts."""
    return fetch(conn, STATUS, {}, dict_row)


def label_reports(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    """tireless.label_reports, the standing ones: each open issue's labels that name nothing."""
    return fetch(conn, LABEL_REPORTS, {}, dict_row)


def replication_warning(conn: psycopg.Connection[Any]) -> str | None:
    """tireless.replication_warning: why a failover could lose acknowledged work, or None."""
    row = fetch(conn, REPLICATION_WARNING, {}, dict_row)[0]
    warning: str | None = row["warning"]
    return warning
