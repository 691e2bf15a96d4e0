"""AsyncJobStore: JobStore's methods over psycopg's AsyncConnection / AsyncConnectionPool.

It shares everything but the awaiting with the sync store: the SQL (tireless.queries), the row
mapping (Job.from_row, class_row), the error translation (tireless.errors) and the lease logic
(tireless.lease)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any
from uuid import UUID

from psycopg import AsyncConnection
from psycopg.rows import AsyncRowFactory, Row, class_row, kwargs_row
from psycopg_pool import AsyncConnectionPool

from tireless import queries
from tireless.errors import translated_errors
from tireless.lease import AsyncLease, OnLost
from tireless.models import DiscoveredIssue, Job, JobKind, JobState, Lane, RepoRef
from tireless.store import LEASE, Query, issues_json


class AsyncJobStore:
    """The store, over a connection string (the store owns a pool, opened by `async with` or
    `await store.open()`), an AsyncConnectionPool (the caller opens and closes it) or one
    AsyncConnection (calls join the caller's transaction as savepoints)."""

    def __init__(self, database: str | AsyncConnectionPool | AsyncConnection[Any]) -> None:
        self._owned_pool: AsyncConnectionPool | None = None
        if isinstance(database, str):
            self._owned_pool = AsyncConnectionPool(database, min_size=1, max_size=4, open=False)
            database = self._owned_pool
        self._database: AsyncConnectionPool | AsyncConnection[Any] = database

    async def open(self) -> None:
        """Open the pool the store owns (a pool or connection passed in is the caller's)."""
        if self._owned_pool is not None:
            await self._owned_pool.open()

    async def close(self) -> None:
        """Close the pool the store opened itself."""
        if self._owned_pool is not None:
            await self._owned_pool.close()

    async def __aenter__(self) -> AsyncJobStore:
        await self.open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[AsyncConnection[Any]]:
        if isinstance(self._database, AsyncConnectionPool):
            async with self._database.connection() as conn:
                yield conn
        else:
            yield self._database

    async def _rows(
        self, query: Query, params: Mapping[str, Any], row: AsyncRowFactory[Row]
    ) -> list[Row]:
        with translated_errors():
            async with (
                self._connection() as conn,
                conn.transaction(),
                conn.cursor(row_factory=row) as cur,
            ):
                await cur.execute(query, params)
                return await cur.fetchall()

    async def _value(self, query: Query, params: Mapping[str, Any]) -> Any:
        with translated_errors():
            async with self._connection() as conn, conn.transaction():
                row = await (await conn.execute(query, params)).fetchone()
                return None if row is None else row[0]

    async def _job(self, query: Query, params: Mapping[str, Any]) -> Job | None:
        jobs = await self._rows(query, params, kwargs_row(Job.from_row))
        return jobs[0] if jobs else None

    async def _lane(self, query: Query, params: Mapping[str, Any]) -> Lane:
        return (await self._rows(query, params, class_row(Lane)))[0]

    # Tracking
    async def track_repo(self, forge: str, owner: str, repo: str) -> bool:
        params = {"forge": forge, "owner": owner, "repo": repo}
        return bool(await self._value(queries.TRACK_REPO, params))

    async def untrack_repo(self, forge: str, owner: str, repo: str) -> bool:
        params = {"forge": forge, "owner": owner, "repo": repo}
        return bool(await self._value(queries.UNTRACK_REPO, params))

    async def tracked_repos(self) -> list[RepoRef]:
        return await self._rows(queries.TRACKED_REPOS, {}, class_row(RepoRef))

    # The queue
    async def enqueue(self, issues: Iterable[DiscoveredIssue | Mapping[str, Any]]) -> int:
        return int(await self._value(queries.ENQUEUE, {"issues": issues_json(issues)}))

    async def claim_next(
        self, worker: str, lanes: Sequence[str], lease: timedelta = LEASE
    ) -> Job | None:
        params = {"worker": worker, "lanes": list(lanes), "lease": lease}
        return await self._job(queries.CLAIM_NEXT, params)

    async def renew_claim(
        self, job_id: int, worker: str, lease: timedelta = LEASE, token: UUID | None = None
    ) -> bool:
        params = {"job_id": job_id, "worker": worker, "lease": lease, "token": token}
        return bool(await self._value(queries.RENEW_CLAIM, params))

    async def transition(
        self,
        job_id: int,
        to: JobState | str,
        worker: str | None = None,
        note: str | None = None,
        token: UUID | None = None,
    ) -> Job:
        params = {"job_id": job_id, "to_state": str(to), "worker": worker, "note": note}
        job = await self._job(queries.TRANSITION, params | {"token": token})
        assert job is not None, "tireless.transition returns a row or raises"
        return job

    async def expire_stale_claims(self) -> int:
        return int(await self._value(queries.EXPIRE_STALE_CLAIMS, {}))

    async def refresh_lane(
        self, forge: str, owner: str, repo: str, number: int, labels: Sequence[str]
    ) -> str | None:
        params = {"forge": forge, "owner": owner, "repo": repo, "number": number}
        lane: str | None = await self._value(
            queries.REFRESH_LANE, params | {"labels": list(labels)}
        )
        return lane

    # Routing, answered by the database's one implementation
    async def job_kind_for(self, labels: Sequence[str]) -> JobKind | None:
        kind: str | None = await self._value(queries.JOB_KIND_FOR, {"labels": list(labels)})
        return None if kind is None else JobKind(kind)

    async def lane_for(self, kind: JobKind | str, labels: Sequence[str]) -> str:
        params = {"kind": str(kind), "labels": list(labels)}
        lane: str = await self._value(queries.LANE_FOR, params)
        return lane

    # Lanes
    async def set_lane_capacity(self, lane: str, capacity: int | None) -> Lane:
        return await self._lane(queries.SET_LANE_CAPACITY, {"lane": lane, "capacity": capacity})

    async def pause_lane(self, lane: str) -> Lane:
        return await self._lane(queries.PAUSE_LANE, {"lane": lane})

    async def resume_lane(self, lane: str) -> Lane:
        return await self._lane(queries.RESUME_LANE, {"lane": lane})

    async def reset_lane_breaker(self, lane: str) -> Lane:
        return await self._lane(queries.RESET_LANE_BREAKER, {"lane": lane})

    # Holding a job
    def lease(
        self,
        worker: str,
        lanes: Sequence[str],
        lease: timedelta = LEASE,
        on_lost: OnLost | None = None,
    ) -> AsyncLease:
        """`async with store.lease(worker, lanes) as job:` — JobStore.lease, renewing in a task."""
        return AsyncLease(self, worker, lanes, lease, on_lost)

    # Wake-up
    @asynccontextmanager
    async def listen(self, lanes: Sequence[str]) -> AsyncIterator[AsyncWorkWaiter]:
        """JobStore.listen: LISTEN on tireless_work for the block's length, on a connection of
        its own; notifications sent after the block starts wait for `await waiter.wait(...)`."""
        async with self._connection() as conn:
            was_autocommit = conn.autocommit
            await conn.set_autocommit(True)
            try:
                await conn.execute(queries.LISTEN)
                yield AsyncWorkWaiter(conn, lanes)
            finally:
                await conn.execute(queries.UNLISTEN)
                async for _ in conn.notifies(timeout=0):
                    pass  # drop what arrived before the UNLISTEN: the next listener starts clean
                await conn.set_autocommit(was_autocommit)

    async def wait_for_work(self, lanes: Sequence[str], timeout: float) -> str | None:
        """JobStore.wait_for_work: the lane a NOTIFY on tireless_work named, or None after timeout."""
        async with self.listen(lanes) as waiter:
            return await waiter.wait(timeout)


class AsyncWorkWaiter:
    """The waiting half of `AsyncJobStore.listen`, as WorkWaiter is of JobStore.listen."""

    def __init__(self, conn: AsyncConnection[Any], lanes: Sequence[str]) -> None:
        self._conn = conn
        self._lanes = frozenset(lanes)

    async def wait(self, timeout: float) -> str | None:
        """The lane of the first notification for one of the lanes; None after `timeout` seconds."""
        async for notify in self._conn.notifies(timeout=timeout):
            if notify.payload in self._lanes:
                return notify.payload
        return None
