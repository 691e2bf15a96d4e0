"""Every statement the adapter sends, each beside its parameters and the shape of its rows.

For each store method a builder returns its `Call`: the SQL (one database function, named
placeholders, nothing built from values), the parameters, the row factory and how the rows become
the method's answer. JobStore and AsyncJobStore only run these calls (tireless.store.sync,
tireless.store.asynchronous), and the lease helper runs the same ones (tireless.store.lease). The
operator's settings (the `tireless` command, the demo) close the file: statements without a
builder, run by their callers over their own connections; the operator's reads are
tireless.store.reads'. The head of the file says how a store uses its connections: the pool it
opens, and when one statement needs a transaction block.

The families follow the store's sections: tracking, the queue, routing, waiting for work, operator settings; a lane's and a
repository's settings are tireless.store.lane_calls'."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import Any, Generic, LiteralString, TypeVar
from uuid import UUID

from psycopg import BaseConnection, sql
from psycopg.pq import TransactionStatus
from psycopg.rows import BaseRowFactory, args_row, class_row, kwargs_row, tuple_row
from psycopg.types.json import Jsonb

from tireless.models import (
    Delivery,
    DiscoveredIssue,
    Heartbeat,
    Job,
    JobBrief,
    JobKind,
    JobNetwork,
    JobState,
    Lane,
    RepoDelivery,
    RepoLimit,
    RepoRef,
    RepoStatus,
)

DEFAULT_LEASE = timedelta(minutes=10)
"""How long a claim lasts without renewal, by default."""
DEFAULT_POLL_LEASE = timedelta(minutes=1)
"""How long a poller holds the repositories `claim_repos_to_poll` leases it, by default."""

Query = LiteralString | sql.Composed | bytes

POOL_OPTIONS: dict[str, Any] = {"min_size": 1, "max_size": 4, "kwargs": {"autocommit": True}}
"""The pool a store opens over a connection string: autocommit, so each call is one round trip."""
POOL_OPEN_TIMEOUT = 30.0
"""Seconds a store waits for its pool's first connection before it gives up (PoolTimeout)."""

Row = TypeVar("Row")
Answer = TypeVar("Answer", covariant=True)  # a Call[R, Job] is a Call[R, Job | None]


def needs_transaction(conn: BaseConnection[Any]) -> bool:
    """One statement on an idle autocommit connection is already its own transaction: no BEGIN and
    COMMIT round trips. Otherwise it runs in a transaction block (a savepoint inside the caller's)."""
    return not (conn.autocommit and conn.info.transaction_status == TransactionStatus.IDLE)


def issues_json(issues: Iterable[DiscoveredIssue | Mapping[str, Any]]) -> Jsonb:
    """The JSON array `tireless.enqueue` takes; mappings pass through for the database to judge."""
    return Jsonb([i.as_json() if isinstance(i, DiscoveredIssue) else dict(i) for i in issues])


@dataclass(frozen=True, slots=True)
class Call(Generic[Row, Answer]):
    """One statement of a store method, and how its rows become the method's answer."""

    query: Query
    params: Mapping[str, Any]
    row: BaseRowFactory[Row]
    answer: Callable[[list[Row]], Answer]


# How rows become answers
def _value(rows: list[tuple[Any, ...]]) -> Any:
    return rows[0][0] if rows else None


def _first(rows: list[Row]) -> Row | None:
    return rows[0] if rows else None


def _only(rows: list[Row]) -> Row:
    assert rows, "the function returns a row or raises"
    return rows[0]


def _rows(rows: list[Row]) -> list[Row]:
    return rows


def _flag(rows: list[tuple[Any, ...]]) -> bool:
    return bool(_value(rows))


def _count(rows: list[tuple[Any, ...]]) -> int:
    return int(_value(rows))


def _nothing(rows: list[tuple[Any, ...]]) -> None:
    return None


def _heartbeat(rows: list[tuple[Any, ...]]) -> Heartbeat:
    return Heartbeat(_value(rows))


def _kind(rows: list[tuple[Any, ...]]) -> JobKind | None:
    kind: str | None = _value(rows)
    return None if kind is None else JobKind(kind)


JOB_COLUMNS = sql.SQL(", ").join(sql.Identifier(f.name) for f in fields(Job))
LANE_COLUMNS = sql.SQL(", ").join(sql.Identifier(f.name) for f in fields(Lane))
REPO_STATUS_COLUMNS = sql.SQL(", ").join(sql.Identifier(f.name) for f in fields(RepoStatus))
JOB_ROW = args_row(Job.from_row)
"""Rows of tireless.job's columns (JOB_COLUMNS, in this order) as Jobs."""
_LANE = class_row(Lane)
REPO_LIMIT_COLUMNS = sql.SQL(", ").join(sql.Identifier(f.name) for f in fields(RepoLimit))
_REPO_LIMIT = class_row(RepoLimit)
REPO_DELIVERY_COLUMNS = sql.SQL(", ").join(sql.Identifier(f.name) for f in fields(RepoDelivery))


# Rendered to bytes once: psycopg would compose a sql.Composed again at every execute (bench/results.md).
def _returning(columns: sql.Composable, call: LiteralString) -> bytes:
    return sql.SQL("SELECT {} FROM " + call).format(columns).as_bytes(None)


def _repo(forge: str, owner: str, repo: str) -> dict[str, Any]:
    return {"forge": forge, "owner": owner, "repo": repo}


# Tracking
TRACK_REPO = "SELECT tireless.track_repo(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s)"


def track_repo(forge: str, owner: str, repo: str) -> Call[Any, bool]:
    return Call(TRACK_REPO, _repo(forge, owner, repo), tuple_row, _flag)


UNTRACK_REPO = (
    "SELECT tireless.untrack_repo(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s)"
)


def untrack_repo(forge: str, owner: str, repo: str) -> Call[Any, bool]:
    return Call(UNTRACK_REPO, _repo(forge, owner, repo), tuple_row, _flag)


TRACKED_REPOS = "SELECT forge, owner, repo FROM tireless.tracked_repos()"


def tracked_repos() -> Call[RepoRef, list[RepoRef]]:
    return Call(TRACKED_REPOS, {}, class_row(RepoRef), _rows)


# The queue
ENQUEUE = "SELECT tireless.enqueue(issues => %(issues)s)"


def enqueue(issues: Iterable[DiscoveredIssue | Mapping[str, Any]]) -> Call[Any, int]:
    return Call(ENQUEUE, {"issues": issues_json(issues)}, tuple_row, _count)


CLAIM_NEXT = _returning(
    JOB_COLUMNS, "tireless.claim_next(worker => %(worker)s, lanes => %(lanes)s, lease => %(lease)s)"
)


def claim_next(worker: str, lanes: Sequence[str], lease: timedelta) -> Call[Job, Job | None]:
    params = {"worker": worker, "lanes": list(lanes), "lease": lease}
    return Call(CLAIM_NEXT, params, JOB_ROW, _first)


RENEW_CLAIM = (
    "SELECT tireless.renew_claim(job_id => %(job_id)s, worker => %(worker)s,"
    " lease => %(lease)s, token => %(token)s)"
)


def renew_claim(job_id: int, worker: str, lease: timedelta, token: UUID | None) -> Call[Any, bool]:
    params = {"job_id": job_id, "worker": worker, "lease": lease, "token": token}
    return Call(RENEW_CLAIM, params, tuple_row, _flag)


TRANSITION = _returning(
    JOB_COLUMNS,
    "tireless.transition(job_id => %(job_id)s, to_state => %(to_state)s,"
    " worker => %(worker)s, note => %(note)s, token => %(token)s)",
)


def transition(
    job_id: int, to: JobState | str, worker: str | None, note: str | None, token: UUID | None
) -> Call[Job, Job]:
    params = {"job_id": job_id, "to_state": str(to), "worker": worker, "note": note, "token": token}
    return Call(TRANSITION, params, JOB_ROW, _only)


FINISH_AND_CLAIM = _returning(
    JOB_COLUMNS,
    "tireless.finish_and_claim(job_id => %(job_id)s, to_state => %(to_state)s,"
    " worker => %(worker)s, lanes => %(lanes)s, lease => %(lease)s,"
    " claim_token => %(claim_token)s, note => %(note)s)",
)


def finish_and_claim(
    job_id: int,
    to: JobState | str,
    worker: str,
    lanes: Sequence[str],
    lease: timedelta,
    token: UUID | None,
    note: str | None,
) -> Call[Job, Job | None]:
    """The runner's cycle in one transaction: finish the claim, claim the next job (None: none)."""
    params = {
        "job_id": job_id,
        "to_state": str(to),
        "worker": worker,
        "lanes": list(lanes),
        "lease": lease,
        "claim_token": token,
        "note": note,
    }
    return Call(FINISH_AND_CLAIM, params, JOB_ROW, _first)


GIVE_BACK = _returning(
    JOB_COLUMNS,
    "tireless.give_back(job_id => %(job_id)s, worker => %(worker)s, note => %(note)s,"
    " token => %(token)s)",
)


def give_back(job_id: int, worker: str, note: str | None, token: UUID | None) -> Call[Job, Job]:
    params = {"job_id": job_id, "worker": worker, "note": note, "token": token}
    return Call(GIVE_BACK, params, JOB_ROW, _only)


HEARTBEAT = (
    "SELECT tireless.heartbeat(job_id => %(job_id)s, worker => %(worker)s,"
    " lease => %(lease)s, token => %(token)s)"
)


def heartbeat(
    job_id: int, worker: str, lease: timedelta, token: UUID | None
) -> Call[Any, Heartbeat]:
    params = {"job_id": job_id, "worker": worker, "lease": lease, "token": token}
    return Call(HEARTBEAT, params, tuple_row, _heartbeat)


LANE_PROBLEM = "SELECT tireless.lane_problem(lanes => %(lanes)s)"


def lane_problem(lanes: Sequence[str]) -> Call[Any, str | None]:
    """The lanes no job, setting or kind's default names (a typo), with the lanes that have
    jobs; None when every lane is known."""
    return Call(LANE_PROBLEM, {"lanes": list(lanes)}, tuple_row, _value)


WATCHDOG_DUE_IN = (
    "SELECT extract(epoch FROM tireless.watchdog_due_at(job_id => %(job_id)s) - now())::float8"
)


def watchdog_due_in(job_id: int) -> Call[Any, float | None]:
    """Seconds until the watchdog may stop the claimed job's attempt (its lane's max_run or
    stall_after; negative: already); None when its lane has no limit or it is not claimed."""
    return Call(WATCHDOG_DUE_IN, {"job_id": job_id}, tuple_row, _value)


END_STOPPED_ATTEMPT = _returning(
    JOB_COLUMNS,
    "tireless.end_stopped_attempt(job_id => %(job_id)s, worker => %(worker)s, token => %(token)s)",
)


def end_stopped_attempt(job_id: int, worker: str, token: UUID | None) -> Call[Job, Job]:
    params = {"job_id": job_id, "worker": worker, "token": token}
    return Call(END_STOPPED_ATTEMPT, params, JOB_ROW, _only)


REPORT_PROGRESS = (
    "SELECT tireless.report_progress(job_id => %(job_id)s, worker => %(worker)s,"
    " step => %(step)s, token => %(token)s)"
)


def report_progress(
    job_id: int, worker: str, step: str | None, token: UUID | None
) -> Call[Any, datetime]:
    params = {"job_id": job_id, "worker": worker, "step": step, "token": token}
    return Call(REPORT_PROGRESS, params, tuple_row, _value)


ATTACH_REPORT = (
    "SELECT tireless.attach_report(job_id => %(job_id)s, worker => %(worker)s,"
    " report => %(report)s, token => %(token)s)"
)


def attach_report(job_id: int, worker: str, report: str, token: UUID | None) -> Call[Any, bool]:
    params = {"job_id": job_id, "worker": worker, "report": report, "token": token}
    return Call(ATTACH_REPORT, params, tuple_row, _flag)


RECORD_EXIT = (
    "SELECT tireless.record_exit(job_id => %(job_id)s, worker => %(worker)s,"
    " exit_status => %(exit_status)s, token => %(token)s)"
)


def record_exit(job_id: int, worker: str, exit_status: int, token: UUID | None) -> Call[Any, None]:
    params = {"job_id": job_id, "worker": worker, "exit_status": exit_status, "token": token}
    return Call(RECORD_EXIT, params, tuple_row, _nothing)


WORKER_STARTED = (
    "SELECT tireless.worker_started(worker => %(worker)s, lanes => %(lanes)s, lease => %(lease)s)"
)
WORKER_BEAT = "SELECT tireless.worker_beat(worker => %(worker)s, lease => %(lease)s)"
WORKER_STOPPED = "SELECT tireless.worker_stopped(worker => %(worker)s, how => %(how)s)"


def worker_started(worker: str, lanes: Sequence[str], lease: timedelta) -> Call[Any, None]:
    params = {"worker": worker, "lanes": list(lanes), "lease": lease}
    return Call(WORKER_STARTED, params, tuple_row, _nothing)


def worker_beat(worker: str, lease: timedelta) -> Call[Any, bool]:
    return Call(WORKER_BEAT, {"worker": worker, "lease": lease}, tuple_row, _flag)


def worker_stopped(worker: str, how: str) -> Call[Any, bool]:
    return Call(WORKER_STOPPED, {"worker": worker, "how": how}, tuple_row, _flag)


ATTACH_PLAN = (
    "SELECT tireless.attach_plan(job_id => %(job_id)s, worker => %(worker)s,"
    " plan => %(plan)s, token => %(token)s)"
)


def attach_plan(job_id: int, worker: str, plan: object, token: UUID | None) -> Call[Any, int]:
    params = {"job_id": job_id, "worker": worker, "plan": Jsonb(plan), "token": token}
    return Call(ATTACH_PLAN, params, tuple_row, _count)


JOB_BRIEF = (
    "SELECT issue_url, api_url, clone_url, body, body_cut, branch, branch_head, pull_number,"
    " pull_url, checkpoint_ref, checkpoint_commit, protected_paths, allowed_paths, allow_ci,"
    " max_files, max_bytes, applied_max_files, applied_max_bytes"
    " FROM tireless.job_brief(job_id => %(job_id)s)"
)


def job_brief(job_id: int) -> Call[JobBrief, JobBrief]:
    return Call(JOB_BRIEF, {"job_id": job_id}, kwargs_row(JobBrief.from_row), _only)


DELIVER = _returning(
    JOB_COLUMNS,
    "tireless.deliver(job_id => %(job_id)s, worker => %(worker)s, branch => %(branch)s,"
    " head => %(head)s, base_branch => %(base_branch)s, base => %(base)s, token => %(token)s,"
    " note => %(note)s, draft => %(draft)s)",
)


def deliver(
    job_id: int,
    worker: str,
    branch: str | None,
    head: str | None,
    base_branch: str | None,
    base: str | None,
    token: UUID | None,
    note: str | None,
    draft: bool,
) -> Call[Job, Job]:
    params = {
        "job_id": job_id,
        "worker": worker,
        "branch": branch,
        "head": head,
        "base_branch": base_branch,
        "base": base,
        "token": token,
        "note": note,
        "draft": draft,
    }
    return Call(DELIVER, params, JOB_ROW, _only)


DELIVER_AND_CLAIM = _returning(
    JOB_COLUMNS,
    "tireless.deliver_and_claim(job_id => %(job_id)s, worker => %(worker)s, lanes => %(lanes)s,"
    " lease => %(lease)s, branch => %(branch)s, head => %(head)s, base_branch => %(base_branch)s,"
    " base => %(base)s, token => %(token)s, note => %(note)s, draft => %(draft)s)",
)


def deliver_and_claim(
    job_id: int,
    worker: str,
    lanes: Sequence[str],
    lease: timedelta,
    delivery: Delivery,
    token: UUID | None,
    note: str | None,
) -> Call[Job, Job | None]:
    """The delivering runner's cycle in one transaction: deliver, claim the next job (None: none)."""
    params = {
        "job_id": job_id,
        "worker": worker,
        "lanes": list(lanes),
        "lease": lease,
        "branch": delivery.branch,
        "head": delivery.head,
        "base_branch": delivery.base_branch,
        "base": delivery.base,
        "token": token,
        "note": note,
        "draft": delivery.draft,
    }
    return Call(DELIVER_AND_CLAIM, params, JOB_ROW, _first)


RECORD_CHECKPOINT = (
    "SELECT tireless.record_checkpoint(job_id => %(job_id)s, worker => %(worker)s, ref => %(ref)s,"
    " commit => %(commit)s, token => %(token)s)"
)


def record_checkpoint(
    job_id: int, worker: str, ref: str, commit: str, token: UUID | None
) -> Call[Any, datetime]:
    params = {"job_id": job_id, "worker": worker, "ref": ref, "commit": commit, "token": token}
    return Call(RECORD_CHECKPOINT, params, tuple_row, _value)


RECORD_JOB_NETWORK = (
    "SELECT tireless.record_job_network(job_id => %(job_id)s, worker => %(worker)s,"
    " token => %(token)s, hosts => %(hosts)s)"
)


def record_job_network(
    job_id: int, worker: str, token: UUID | None, hosts: Sequence[Mapping[str, Any]]
) -> Call[Any, int]:
    params = {
        "job_id": job_id,
        "worker": worker,
        "token": token,
        "hosts": Jsonb([dict(host) for host in hosts]),
    }
    return Call(RECORD_JOB_NETWORK, params, tuple_row, _count)


JOB_NETWORK = (
    "SELECT attempt, host, port, allowed, requests, bytes_in, bytes_out, reason"
    " FROM tireless.job_network(job_id => %(job_id)s)"
)


def job_network(job_id: int) -> Call[JobNetwork, list[JobNetwork]]:
    return Call(JOB_NETWORK, {"job_id": job_id}, class_row(JobNetwork), _rows)


RECORD_PUSH = (
    "SELECT tireless.record_push(job_id => %(job_id)s, worker => %(worker)s, branch => %(branch)s,"
    " head => %(head)s, token => %(token)s)"
)


def record_push(
    job_id: int, worker: str, branch: str, head: str, token: UUID | None
) -> Call[Any, list[str]]:
    params = {"job_id": job_id, "worker": worker, "branch": branch, "head": head, "token": token}
    return Call(RECORD_PUSH, params, tuple_row, _heads)


def _heads(rows: list[tuple[Any, ...]]) -> list[str]:
    return list(rows[0][0] or []) if rows else []


EXPIRE_STALE_CLAIMS = "SELECT tireless.expire_stale_claims()"


def expire_stale_claims() -> Call[Any, int]:
    return Call(EXPIRE_STALE_CLAIMS, {}, tuple_row, _count)


ROLL_UP_HISTORY = "SELECT tireless.roll_up_history()"


def roll_up_history() -> Call[Any, int]:
    return Call(ROLL_UP_HISTORY, {}, tuple_row, _count)


PRUNE = "SELECT tireless.prune(older_than => %(older_than)s, max_jobs => %(max_jobs)s)"


def prune(older_than: timedelta, max_jobs: int | None) -> Call[Any, int]:
    params = {"older_than": older_than, "max_jobs": max_jobs}
    return Call(PRUNE, params, tuple_row, _count)


REFRESH_LANE = (
    "SELECT tireless.refresh_lane(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s,"
    " number => %(number)s, labels => %(labels)s)"
)


def refresh_lane(
    forge: str, owner: str, repo: str, number: int, labels: Sequence[str]
) -> Call[Any, str | None]:
    params = _repo(forge, owner, repo) | {"number": number, "labels": list(labels)}
    return Call(REFRESH_LANE, params, tuple_row, _value)


RERUN = (
    "SELECT tireless.rerun(forge => %(forge)s, owner => %(owner)s, repo => %(repo)s,"
    " number => %(number)s, kind => %(kind)s)"
)


def rerun(
    forge: str, owner: str, repo: str, number: int, kind: JobKind | str | None
) -> Call[Any, int]:
    params = _repo(forge, owner, repo) | {"number": number, "kind": kind}
    return Call(RERUN, params, tuple_row, _count)


REQUEST_CANCEL = _returning(
    JOB_COLUMNS, "tireless.request_cancel(job_id => %(job_id)s, note => %(note)s)"
)


def request_cancel(job_id: int, note: str | None) -> Call[Job, Job]:
    return Call(REQUEST_CANCEL, {"job_id": job_id, "note": note}, JOB_ROW, _only)


NEXT_READY_IN = (
    "SELECT extract(epoch FROM tireless.next_ready_at(lanes => %(lanes)s) - now())::float8"
)


def next_ready_in(lanes: Sequence[str]) -> Call[Any, float | None]:
    """Seconds until the earliest backed-off job in the lanes is claimable; None: none waits."""
    return Call(NEXT_READY_IN, {"lanes": list(lanes)}, tuple_row, _value)


# Routing, answered by the database's one implementation
JOB_KIND_FOR = "SELECT tireless.job_kind_for(labels => %(labels)s)"


def job_kind_for(labels: Sequence[str]) -> Call[Any, JobKind | None]:
    return Call(JOB_KIND_FOR, {"labels": list(labels)}, tuple_row, _kind)


LANE_FOR = "SELECT tireless.lane_for(kind => %(kind)s, labels => %(labels)s)"


def lane_for(kind: JobKind | str, labels: Sequence[str]) -> Call[Any, str]:
    params = {"kind": str(kind), "labels": list(labels)}
    return Call(LANE_FOR, params, tuple_row, _value)


# Waiting for work: JobStore.listen runs these on the connection it holds.
LISTEN = "LISTEN tireless_work"
UNLISTEN = "UNLISTEN tireless_work"
# A claimed job asked to stop (payload: its id), and a repository due for a poll (payload: its forge):
# JobStore.listen_for_stops and listen_for_polls.
LISTEN_STOPS = "LISTEN tireless_stop"
UNLISTEN_STOPS = "UNLISTEN tireless_stop"
LISTEN_POLLS = "LISTEN tireless_poll"
UNLISTEN_POLLS = "UNLISTEN tireless_poll"

# Operator settings (the `tireless` command, the demo): run by their callers over their own
# connections. The operator's reads are tireless.store.reads'.
SET_POLICY = (
    "SELECT label_prefix, backoff_base, backoff_cap, breaker_threshold, breaker_cooldown"
    " FROM tireless.set_policy(label_prefix => %(label_prefix)s, backoff_base => %(backoff_base)s,"
    " backoff_cap => %(backoff_cap)s, breaker_threshold => %(breaker_threshold)s,"
    " breaker_cooldown => %(breaker_cooldown)s)"
)
ENQUEUE_AND_LIST = sql.SQL("SELECT {} FROM tireless.enqueue_and_list(issues => %(issues)s)").format(
    JOB_COLUMNS
)
"""`tireless enqueue`: enqueue the batch and list the jobs it created (admin only)."""
