"""What JobStore and AsyncJobStore share, all but the I/O: for each store method the call it makes
(the SQL of tireless.queries, its parameters, the row shape and how the rows become the method's
answer), and how a store uses its connections. The two stores only run these calls."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, LiteralString, TypeVar
from uuid import UUID

from psycopg import BaseConnection, sql
from psycopg.pq import TransactionStatus
from psycopg.rows import BaseRowFactory, class_row, kwargs_row, tuple_row
from psycopg.types.json import Jsonb

from tireless import queries
from tireless.models import (
    DiscoveredIssue,
    Forge,
    ForgeKind,
    Heartbeat,
    Job,
    JobKind,
    JobState,
    Lane,
    PollOutcome,
    RepoRef,
    RepoStatus,
    RepoToPoll,
)

LEASE = timedelta(minutes=10)
POLL_LEASE = timedelta(minutes=5)
"""How long a poller holds the repositories `claim_repos_to_poll` leases it, by default."""

Query = LiteralString | sql.Composed | bytes

POOL_OPTIONS: dict[str, Any] = {"min_size": 1, "max_size": 4, "kwargs": {"autocommit": True}}
"""The pool a store opens over a connection string: autocommit, so each call is one round trip."""
LEASE_NEEDS_A_POOL = (
    "lease() needs a store over a connection string or a pool: it renews the claim on a"
    " connection of its own while the work runs, and this store has only the one connection"
)
POOL_OPEN_TIMEOUT = 30.0
"""Seconds a store waits for its pool's first connection before it gives up (PoolTimeout)."""

Row = TypeVar("Row")
Answer = TypeVar("Answer")


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


JOB_ROW = kwargs_row(Job.from_row)
"""Rows of tireless.job's columns (queries.JOB_COLUMNS) as Jobs."""
_LANE = class_row(Lane)


def _repo(forge: str, owner: str, repo: str) -> dict[str, Any]:
    return {"forge": forge, "owner": owner, "repo": repo}


# Tracking
def track_repo(forge: str, owner: str, repo: str) -> Call[Any, bool]:
    return Call(queries.TRACK_REPO, _repo(forge, owner, repo), tuple_row, _flag)


def untrack_repo(forge: str, owner: str, repo: str) -> Call[Any, bool]:
    return Call(queries.UNTRACK_REPO, _repo(forge, owner, repo), tuple_row, _flag)


def tracked_repos() -> Call[RepoRef, list[RepoRef]]:
    return Call(queries.TRACKED_REPOS, {}, class_row(RepoRef), _rows)


# The queue
def enqueue(issues: Iterable[DiscoveredIssue | Mapping[str, Any]]) -> Call[Any, int]:
    return Call(queries.ENQUEUE, {"issues": issues_json(issues)}, tuple_row, _count)


def claim_next(worker: str, lanes: Sequence[str], lease: timedelta) -> Call[Job, Job | None]:
    params = {"worker": worker, "lanes": list(lanes), "lease": lease}
    return Call(queries.CLAIM_NEXT, params, JOB_ROW, _first)


def renew_claim(job_id: int, worker: str, lease: timedelta, token: UUID | None) -> Call[Any, bool]:
    params = {"job_id": job_id, "worker": worker, "lease": lease, "token": token}
    return Call(queries.RENEW_CLAIM, params, tuple_row, _flag)


def transition(
    job_id: int, to: JobState | str, worker: str | None, note: str | None, token: UUID | None
) -> Call[Job, Job]:
    params = {"job_id": job_id, "to_state": str(to), "worker": worker, "note": note, "token": token}
    return Call(queries.TRANSITION, params, JOB_ROW, _only)


def give_back(job_id: int, worker: str, note: str | None, token: UUID | None) -> Call[Job, Job]:
    params = {"job_id": job_id, "worker": worker, "note": note, "token": token}
    return Call(queries.GIVE_BACK, params, JOB_ROW, _only)


def heartbeat(
    job_id: int, worker: str, lease: timedelta, token: UUID | None
) -> Call[Any, Heartbeat]:
    params = {"job_id": job_id, "worker": worker, "lease": lease, "token": token}
    return Call(queries.HEARTBEAT, params, tuple_row, _heartbeat)


def expire_stale_claims() -> Call[Any, int]:
    return Call(queries.EXPIRE_STALE_CLAIMS, {}, tuple_row, _count)


def prune(older_than: timedelta, max_jobs: int | None) -> Call[Any, int]:
    params = {"older_than": older_than, "max_jobs": max_jobs}
    return Call(queries.PRUNE, params, tuple_row, _count)


def refresh_lane(
    forge: str, owner: str, repo: str, number: int, labels: Sequence[str]
) -> Call[Any, str | None]:
    params = _repo(forge, owner, repo) | {"number": number, "labels": list(labels)}
    return Call(queries.REFRESH_LANE, params, tuple_row, _value)


def rerun(forge: str, owner: str, repo: str, number: int) -> Call[Any, int]:
    params = _repo(forge, owner, repo) | {"number": number}
    return Call(queries.RERUN, params, tuple_row, _count)


# Forges and polling
def add_forge(name: str, kind: ForgeKind | str, base_url: str) -> Call[Any, bool]:
    params = {"name": name, "kind": kind, "base_url": base_url}
    return Call(queries.ADD_FORGE, params, tuple_row, _flag)


def remove_forge(name: str) -> Call[Any, bool]:
    return Call(queries.REMOVE_FORGE, {"name": name}, tuple_row, _flag)


def forges() -> Call[Forge, list[Forge]]:
    return Call(queries.FORGES, {}, kwargs_row(Forge.from_row), _rows)


def claim_repos_to_poll(
    poller: str, lease: timedelta, max_repos: int
) -> Call[RepoToPoll, list[RepoToPoll]]:
    params = {"poller": poller, "lease": lease, "max_repos": max_repos}
    return Call(queries.CLAIM_REPOS_TO_POLL, params, kwargs_row(RepoToPoll.from_row), _rows)


def record_poll(
    forge: str,
    owner: str,
    repo: str,
    poller: str,
    issues: Iterable[DiscoveredIssue | Mapping[str, Any]],
    cursor: datetime | None,
    etag: str | None,
    full_listing: bool,
    deleted: Sequence[int],
    next_poll_in: timedelta,
) -> Call[PollOutcome, PollOutcome]:
    params = _repo(forge, owner, repo) | {
        "poller": poller,
        "issues": issues_json(issues),
        "cursor": cursor,
        "etag": etag,
        "full_listing": full_listing,
        "deleted": list(deleted),
        "next_poll_in": next_poll_in,
    }
    return Call(queries.RECORD_POLL, params, class_row(PollOutcome), _only)


def record_poll_failure(
    forge: str, owner: str, repo: str, poller: str, error: str, retry_after: timedelta | None
) -> Call[Any, datetime]:
    params = _repo(forge, owner, repo) | {
        "poller": poller,
        "error": error,
        "retry_after": retry_after,
    }
    return Call(queries.RECORD_POLL_FAILURE, params, tuple_row, _value)


def record_forge_trouble(name: str, error: str | None, until: datetime | None) -> Call[Any, None]:
    params = {"name": name, "error": error, "until": until}
    return Call(queries.RECORD_FORGE_TROUBLE, params, tuple_row, _nothing)


def poll_soon(forge: str, owner: str, repo: str) -> Call[Any, bool]:
    return Call(queries.POLL_SOON, _repo(forge, owner, repo), tuple_row, _flag)


def repo_status() -> Call[RepoStatus, list[RepoStatus]]:
    return Call(queries.REPO_STATUS, {}, class_row(RepoStatus), _rows)


# Routing, answered by the database's one implementation
def job_kind_for(labels: Sequence[str]) -> Call[Any, JobKind | None]:
    return Call(queries.JOB_KIND_FOR, {"labels": list(labels)}, tuple_row, _kind)


def lane_for(kind: JobKind | str, labels: Sequence[str]) -> Call[Any, str]:
    params = {"kind": str(kind), "labels": list(labels)}
    return Call(queries.LANE_FOR, params, tuple_row, _value)


# Lanes
def set_lane_capacity(lane: str, capacity: int | None) -> Call[Lane, Lane]:
    return Call(queries.SET_LANE_CAPACITY, {"lane": lane, "capacity": capacity}, _LANE, _only)


def pause_lane(lane: str) -> Call[Lane, Lane]:
    return Call(queries.PAUSE_LANE, {"lane": lane}, _LANE, _only)


def resume_lane(lane: str) -> Call[Lane, Lane]:
    return Call(queries.RESUME_LANE, {"lane": lane}, _LANE, _only)


def reset_lane_breaker(lane: str) -> Call[Lane, Lane]:
    return Call(queries.RESET_LANE_BREAKER, {"lane": lane}, _LANE, _only)
