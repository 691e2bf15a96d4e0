"""JobStore: the thin synchronous adapter. One method per database function, each one call in
its own transaction; rows become typed objects. It holds no rule of its own."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import timedelta
from typing import Any, LiteralString
from uuid import UUID

from psycopg import Connection, sql
from psycopg.pq import TransactionStatus
from psycopg.rows import Row, RowFactory, class_row, kwargs_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from tireless import queries
from tireless.errors import translated_errors
from tireless.lease import Lease, OnLost
from tireless.models import DiscoveredIssue, Job, JobKind, JobState, Lane, RepoRef

LEASE = timedelta(minutes=10)

Query = LiteralString | sql.Composed | bytes


def atomic(conn: Connection[Any]) -> AbstractContextManager[Any]:
    """One statement on an idle autocommit connection is already its own transaction: no BEGIN and
    COMMIT round trips. Otherwise a transaction block (a savepoint inside the caller's)."""
    if conn.autocommit and conn.info.transaction_status == TransactionStatus.IDLE:
        return nullcontext()
    return conn.transaction()


def issues_json(issues: Iterable[DiscoveredIssue | Mapping[str, Any]]) -> Jsonb:
    """The JSON array `tireless.enqueue` takes; mappings pass through for the database to judge."""
    return Jsonb([i.as_json() if isinstance(i, DiscoveredIssue) else dict(i) for i in issues])


class JobStore:
    """The store, over a connection string (the store owns a pool), a ConnectionPool (the caller
    opens and closes it) or one Connection (calls join the caller's transaction as savepoints)."""

    def __init__(self, database: str | ConnectionPool | Connection[Any]) -> None:
        self._owned_pool: ConnectionPool | None = None
        if isinstance(database, str):
            self._owned_pool = ConnectionPool(
                database, min_size=1, max_size=4, kwargs={"autocommit": True}, open=True
            )
            database = self._owned_pool
        self._database: ConnectionPool | Connection[Any] = database

    def close(self) -> None:
        """Close the pool the store opened itself; a pool or connection passed in is the caller's."""
        if self._owned_pool is not None:
            self._owned_pool.close()

    def __enter__(self) -> JobStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def _connection(self) -> Iterator[Connection[Any]]:
        if isinstance(self._database, ConnectionPool):
            with self._database.connection() as conn:
                yield conn
        else:
            yield self._database

    def _rows(self, query: Query, params: Mapping[str, Any], row: RowFactory[Row]) -> list[Row]:
        with (
            translated_errors(),
            self._connection() as conn,
            atomic(conn),
            conn.cursor(row_factory=row) as cur,
        ):
            cur.execute(query, params)
            return cur.fetchall()

    def _value(self, query: Query, params: Mapping[str, Any]) -> Any:
        with translated_errors(), self._connection() as conn, atomic(conn):
            row = conn.execute(query, params).fetchone()
            return None if row is None else row[0]

    def _job(self, query: Query, params: Mapping[str, Any]) -> Job | None:
        jobs = self._rows(query, params, kwargs_row(Job.from_row))
        return jobs[0] if jobs else None

    def _lane(self, query: Query, params: Mapping[str, Any]) -> Lane:
        return self._rows(query, params, class_row(Lane))[0]

    # Tracking
    def track_repo(self, forge: str, owner: str, repo: str) -> bool:
        return bool(self._value(queries.TRACK_REPO, {"forge": forge, "owner": owner, "repo": repo}))

    def untrack_repo(self, forge: str, owner: str, repo: str) -> bool:
        return bool(
            self._value(queries.UNTRACK_REPO, {"forge": forge, "owner": owner, "repo": repo})
        )

    def tracked_repos(self) -> list[RepoRef]:
        return self._rows(queries.TRACKED_REPOS, {}, class_row(RepoRef))

    # The queue
    def enqueue(self, issues: Iterable[DiscoveredIssue | Mapping[str, Any]]) -> int:
        return int(self._value(queries.ENQUEUE, {"issues": issues_json(issues)}))

    def claim_next(self, worker: str, lanes: Sequence[str], lease: timedelta = LEASE) -> Job | None:
        params = {"worker": worker, "lanes": list(lanes), "lease": lease}
        return self._job(queries.CLAIM_NEXT, params)

    def renew_claim(
        self, job_id: int, worker: str, lease: timedelta = LEASE, token: UUID | None = None
    ) -> bool:
        params = {"job_id": job_id, "worker": worker, "lease": lease, "token": token}
        return bool(self._value(queries.RENEW_CLAIM, params))

    def transition(
        self,
        job_id: int,
        to: JobState | str,
        worker: str | None = None,
        note: str | None = None,
        token: UUID | None = None,
    ) -> Job:
        params = {"job_id": job_id, "to_state": str(to), "worker": worker, "note": note}
        job = self._job(queries.TRANSITION, params | {"token": token})
        assert job is not None, "tireless.transition returns a row or raises"
        return job

    def expire_stale_claims(self) -> int:
        return int(self._value(queries.EXPIRE_STALE_CLAIMS, {}))

    def refresh_lane(
        self, forge: str, owner: str, repo: str, number: int, labels: Sequence[str]
    ) -> str | None:
        params = {"forge": forge, "owner": owner, "repo": repo, "number": number}
        lane: str | None = self._value(queries.REFRESH_LANE, params | {"labels": list(labels)})
        return lane

    # Routing, answered by the database's one implementation
    def job_kind_for(self, labels: Sequence[str]) -> JobKind | None:
        kind: str | None = self._value(queries.JOB_KIND_FOR, {"labels": list(labels)})
        return None if kind is None else JobKind(kind)

    def lane_for(self, kind: JobKind | str, labels: Sequence[str]) -> str:
        lane: str = self._value(queries.LANE_FOR, {"kind": str(kind), "labels": list(labels)})
        return lane

    # Lanes
    def set_lane_capacity(self, lane: str, capacity: int | None) -> Lane:
        return self._lane(queries.SET_LANE_CAPACITY, {"lane": lane, "capacity": capacity})

    def pause_lane(self, lane: str) -> Lane:
        return self._lane(queries.PAUSE_LANE, {"lane": lane})

    def resume_lane(self, lane: str) -> Lane:
        return self._lane(queries.RESUME_LANE, {"lane": lane})

    def reset_lane_breaker(self, lane: str) -> Lane:
        return self._lane(queries.RESET_LANE_BREAKER, {"lane": lane})

    # Holding a job
    def lease(
        self,
        worker: str,
        lanes: Sequence[str],
        lease: timedelta = LEASE,
        on_lost: OnLost | None = None,
    ) -> Lease:
        """`with store.lease(worker, lanes) as job:` claims a job (None: nothing claimable), renews
        it in a thread at a third of the lease, delivers it when the block ends normally and
        releases it to pending, the exception as note, when the block raises (tireless.lease).
        Needs a store over a pool or connection string: the renewals run on their own connection."""
        return Lease(self, worker, lanes, lease, on_lost)

    # Wake-up
    @contextmanager
    def listen(self, lanes: Sequence[str]) -> Iterator[WorkWaiter]:
        """LISTEN on tireless_work for the block's length, on a connection of its own (of the
        pool, or the store's one connection, switched to autocommit meanwhile). Every
        notification sent after the block starts is kept until a `wait` takes it, so a runner
        that claims inside the block and waits when the claim found nothing misses no work."""
        with self._connection() as conn:
            was_autocommit = conn.autocommit
            conn.autocommit = True
            try:
                conn.execute(queries.LISTEN)
                yield WorkWaiter(conn, lanes)
            finally:
                conn.execute(queries.UNLISTEN)
                for _ in conn.notifies(timeout=0):
                    pass  # drop what arrived before the UNLISTEN: the next listener starts clean
                conn.autocommit = was_autocommit

    def wait_for_work(self, lanes: Sequence[str], timeout: float) -> str | None:
        """Sleep until a NOTIFY on tireless_work names one of `lanes` (returns it) or `timeout`
        seconds pass (returns None). It listens only from the call on: a runner that must not
        miss work announced between its last claim and this call uses `listen` instead."""
        with self.listen(lanes) as waiter:
            return waiter.wait(timeout)


class WorkWaiter:
    """The waiting half of `JobStore.listen`: one LISTEN on tireless_work, filtered by lane."""

    def __init__(self, conn: Connection[Any], lanes: Sequence[str]) -> None:
        self._conn = conn
        self._lanes = frozenset(lanes)

    def wait(self, timeout: float) -> str | None:
        """The lane of the first notification for one of the lanes, taking those kept since the
        last wait first; None when none comes within `timeout` seconds."""
        for notify in self._conn.notifies(timeout=timeout):
            if notify.payload in self._lanes:
                return notify.payload
        return None
