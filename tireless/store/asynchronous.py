"""AsyncJobStore: JobStore's methods over psycopg's AsyncConnection / AsyncConnectionPool.

It shares everything but the awaiting with the sync store: each method's call, its SQL, row shape
and answer, and the connection policy (tireless.store.calls), the error translation
(tireless.errors) and the lease logic (tireless.store.lease)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from datetime import datetime, timedelta
from typing import Any, LiteralString, TypeVar
from uuid import UUID

import psycopg
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from tireless.connect import AsyncFailoverPool
from tireless.conversation import ConversationOutcome, ConversationToRead
from tireless.errors import translated_errors
from tireless.models import (
    NO_CHANGE,
    AttemptUsage,
    Delivery,
    DiscoveredIssue,
    Forge,
    ForgeApp,
    ForgeKind,
    ForgeWrite,
    Heartbeat,
    Job,
    JobAsk,
    JobBrief,
    JobKind,
    JobNetwork,
    JobState,
    Lane,
    LaneLimits,
    MirrorWrite,
    PollOutcome,
    RepoDelivery,
    RepoLimit,
    RepoRef,
    RepoRevisions,
    RepoStatus,
    RepoToPoll,
    SpendBudget,
    WriteKind,
)
from tireless.store import calls, forge_calls, lane_calls
from tireless.store.calls import (
    DEFAULT_LEASE,
    DEFAULT_POLL_LEASE,
    POOL_OPEN_TIMEOUT,
    POOL_OPTIONS,
    Call,
    needs_transaction,
)
from tireless.store.lease import NEEDS_A_POOL, AsyncHeldJob, OnCancel, OnLost, ThenClaim
from tireless.store.ledger_store import AsyncLedgerMethods
from tireless.store.outcome_store import AsyncOutcomeMethods

Answer = TypeVar("Answer")


def atomic(conn: AsyncConnection[Any]) -> AbstractAsyncContextManager[Any]:
    """A transaction block only where one statement needs it (tireless.store.calls.needs_transaction)."""
    return conn.transaction() if needs_transaction(conn) else nullcontext()


class AsyncJobStore(AsyncLedgerMethods, AsyncOutcomeMethods):
    """The store, over a conninfo (a libpq connection string or URL: the store owns a pool,
    opened by `async with`, by `await store.open()` or at the first call), an AsyncConnectionPool
    (the caller opens and closes it) or one AsyncConnection (calls join the caller's transaction
    as savepoints)."""

    def __init__(self, connections: str | AsyncConnectionPool[Any] | AsyncConnection[Any]) -> None:
        self._owned_pool: AsyncConnectionPool[Any] | None = None
        self._opening = asyncio.Lock()
        self._opened = not isinstance(connections, str)  # a pool passed in is the caller's to open
        if isinstance(connections, str):
            self._owned_pool = AsyncFailoverPool(connections, open=False, **POOL_OPTIONS)
            connections = self._owned_pool
        self._connections: AsyncConnectionPool[Any] | AsyncConnection[Any] = connections

    async def open(self) -> None:
        """JobStore.open: open the pool the store owns and wait for its first connection."""
        async with self._opening:
            if self._owned_pool is not None and not self._opened:
                await self._owned_pool.open(wait=True, timeout=POOL_OPEN_TIMEOUT)
                self._opened = True

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
        if isinstance(self._connections, AsyncConnectionPool):
            if not self._opened:
                await self.open()
            async with self._connections.connection() as conn:
                try:
                    yield conn
                except psycopg.OperationalError:
                    if conn.broken:  # the others went with it (a failover, a restart): new ones
                        await self._connections.drain()
                    raise
        else:
            yield self._connections

    async def _run(self, call: Call[Any, Answer]) -> Answer:
        with translated_errors():
            async with (
                self._connection() as conn,
                atomic(conn),
                conn.cursor(row_factory=call.row) as cur,
            ):
                await cur.execute(call.query, call.params)
                return call.answer(await cur.fetchall())

    # Tracking
    async def track_repo(self, forge: str, owner: str, repo: str) -> bool:
        return await self._run(calls.track_repo(forge, owner, repo))

    async def untrack_repo(self, forge: str, owner: str, repo: str) -> bool:
        return await self._run(calls.untrack_repo(forge, owner, repo))

    async def tracked_repos(self) -> list[RepoRef]:
        return await self._run(calls.tracked_repos())

    # The queue
    async def enqueue(self, issues: Iterable[DiscoveredIssue | Mapping[str, Any]]) -> int:
        return await self._run(calls.enqueue(issues))

    async def claim_next(
        self, worker: str, lanes: Sequence[str], lease: timedelta = DEFAULT_LEASE
    ) -> Job | None:
        return await self._run(calls.claim_next(worker, lanes, lease))

    async def renew_claim(
        self, job_id: int, worker: str, lease: timedelta = DEFAULT_LEASE, token: UUID | None = None
    ) -> bool:
        return await self._run(calls.renew_claim(job_id, worker, lease, token))

    async def transition(
        self,
        job_id: int,
        to: JobState | str,
        worker: str | None = None,
        note: str | None = None,
        token: UUID | None = None,
    ) -> Job:
        return await self._run(calls.transition(job_id, to, worker, note, token))

    async def finish_and_claim(
        self,
        job_id: int,
        to: JobState | str,
        worker: str,
        lanes: Sequence[str],
        lease: timedelta = DEFAULT_LEASE,
        token: UUID | None = None,
        note: str | None = None,
    ) -> Job | None:
        """Finish the claim on job_id as `transition` would (nothing is claimed when that is
        refused), then claim the next job in lanes as `claim_next` would, in one transaction: the
        job claimed, or None when none is claimable."""
        return await self._run(
            calls.finish_and_claim(job_id, to, worker, lanes, lease, token, note)
        )

    async def give_back(
        self, job_id: int, worker: str, note: str | None = None, token: UUID | None = None
    ) -> Job:
        """The holder returns the job because the runner is stopping: pending and claimable at
        once, no backoff, not a failure, not counted against max_attempts."""
        return await self._run(calls.give_back(job_id, worker, note, token))

    async def heartbeat(
        self, job_id: int, worker: str, lease: timedelta = DEFAULT_LEASE, token: UUID | None = None
    ) -> Heartbeat:
        """Renew the claim and learn whether to go on (held), stop because the claim is gone
        (lost), or stop and end the job `cancelled` because its issue withdrew its request (cancel)."""
        return await self._run(calls.heartbeat(job_id, worker, lease, token))

    async def end_stopped_attempt(self, job_id: int, worker: str, token: UUID | None = None) -> Job:
        """The holder ends an attempt the watchdog stopped (heartbeat answered timeout or
        stalled) as a failure, with the watchdog's note."""
        return await self._run(calls.end_stopped_attempt(job_id, worker, token))

    async def report_progress(
        self, job_id: int, worker: str, step: str | None = None, token: UUID | None = None
    ) -> datetime:
        """The holder's attempt progresses (and, with a step, is at that step now)."""
        return await self._run(calls.report_progress(job_id, worker, step, token))

    async def attach_plan(
        self, job_id: int, worker: str, plan: object, token: UUID | None = None
    ) -> int:
        return await self._run(calls.attach_plan(job_id, worker, plan, token))

    async def attach_report(
        self, job_id: int, worker: str, report: str, token: UUID | None = None
    ) -> bool:
        """The holder attaches its agent's report (the outcome comment); True when it was cut."""
        return await self._run(calls.attach_report(job_id, worker, report, token))

    # The worker's own record (the workers page: live, idle, stopped, lost)
    async def worker_started(self, worker: str, lanes: Sequence[str], lease: timedelta) -> None:
        """A worker process says it started, serving lanes; alive for lease, renewed by its beats."""
        await self._run(calls.worker_started(worker, lanes, lease))

    async def worker_beat(self, worker: str, lease: timedelta) -> bool:
        """A running worker's beat; False: it has no running record (say it started again)."""
        return await self._run(calls.worker_beat(worker, lease))

    async def worker_stopped(self, worker: str, how: str) -> bool:
        """A worker says it stopped, and how (SIGINT, --once, ...)."""
        return await self._run(calls.worker_stopped(worker, how))

    async def record_exit(
        self, job_id: int, worker: str, exit_status: int, token: UUID | None = None
    ) -> None:
        """The holder records COMMAND's exit status in its attempt (negative: the signal)."""
        await self._run(calls.record_exit(job_id, worker, exit_status, token))

    async def record_attempt_usage(
        self, job_id: int, worker: str, usage: AttemptUsage, token: UUID | None = None
    ) -> None:
        """The holder records what its attempt used of the host (peaks, CPU seconds, the
        workspace's size) and the limit that stopped it, if one did."""
        await self._run(lane_calls.record_attempt_usage(job_id, worker, usage, token))

    async def deliver(
        self,
        job_id: int,
        worker: str,
        branch: str | None = None,
        head: str | None = None,
        base_branch: str | None = None,
        base: str | None = None,
        token: UUID | None = None,
        note: str | None = None,
        draft: bool = False,
    ) -> Job:
        """The holder delivers the job with what it pushed (branch at head, made on base_branch at
        base), as `transition(job_id, "delivered", ...)` would and with its refusals, and queues
        the pull request for the mirror, in one transaction. Without branch, head, base_branch and
        base: delivered with no change (note "no change" unless given), no pull request."""
        call = calls.deliver(job_id, worker, branch, head, base_branch, base, token, note, draft)
        return await self._run(call)

    async def deliver_and_claim(
        self,
        job_id: int,
        worker: str,
        lanes: Sequence[str],
        lease: timedelta = DEFAULT_LEASE,
        delivery: Delivery = NO_CHANGE,
        token: UUID | None = None,
        note: str | None = None,
    ) -> Job | None:
        """Deliver the job with what was pushed as `deliver` would (nothing is claimed when that is
        refused), then claim the next job in lanes as `claim_next` would, in one transaction: the
        job claimed, or None when none is claimable."""
        call = calls.deliver_and_claim(job_id, worker, lanes, lease, delivery, token, note)
        return await self._run(call)

    async def record_checkpoint(
        self, job_id: int, worker: str, ref: str, commit: str, token: UUID | None = None
    ) -> datetime:
        """The holder pushed its workspace's commits so far to ref (never the pull request's
        branch) at commit: the job's last checkpoint, where its later attempts start."""
        return await self._run(calls.record_checkpoint(job_id, worker, ref, commit, token))

    async def record_job_network(
        self, job_id: int, worker: str, token: UUID | None, hosts: Sequence[Mapping[str, Any]]
    ) -> int:
        """The holder records what its attempt's agent reached and was refused (rows of
        NetworkReport.as_json(): host, port, allowed, requests, bytes_in, bytes_out, reason),
        replacing what the attempt recorded before; returns how many rows are kept."""
        return await self._run(calls.record_job_network(job_id, worker, token, hosts))

    async def record_push(
        self, job_id: int, worker: str, branch: str, head: str, token: UUID | None = None
    ) -> list[str]:
        """The holder is about to push head to its issue's branch: recorded first (a runner that
        dies after the push leaves a commit the next attempt knows as tireless's); every head
        tireless pushed or delivered on the branch, newest first: what a push may go over."""
        return await self._run(calls.record_push(job_id, worker, branch, head, token))

    async def job_brief(self, job_id: int) -> JobBrief:
        """The issue's URL and body, the forge's API root and the clone URL, for the agent; what
        tireless last pushed for the issue and the job's last checkpoint, for the runner."""
        return await self._run(calls.job_brief(job_id))

    async def expire_stale_claims(self) -> int:
        return await self._run(calls.expire_stale_claims())

    async def roll_up_history(self) -> int:
        """Fold the history written since the last roll-up into the dashboard's counters; how
        many finished jobs it counted (0 on a hot standby, or while another roll-up runs). The
        sweeper and the poller call it, so the dashboard's reads stay short and write nothing."""
        return await self._run(calls.roll_up_history())

    async def prune(self, older_than: timedelta, max_jobs: int | None = None) -> int:
        """(admin) Delete terminal jobs unchanged for `older_than`, with their history; at most
        `max_jobs` in this call when given. Returns how many jobs it deleted."""
        return await self._run(calls.prune(older_than, max_jobs))

    async def refresh_lane(
        self, forge: str, owner: str, repo: str, number: int, labels: Sequence[str]
    ) -> str | None:
        return await self._run(calls.refresh_lane(forge, owner, repo, number, labels))

    async def rerun(
        self, forge: str, owner: str, repo: str, number: int, kind: JobKind | str | None = None
    ) -> int:
        """(admin) A new pending job for the issue whatever its labels say: the kind and agent it
        last asked for, or `kind`; its id."""
        return await self._run(calls.rerun(forge, owner, repo, number, kind))

    async def request_cancel(self, job_id: int, note: str | None = None) -> Job:
        """(admin) Cancel a pending job now; ask a claimed job's holder to stop (heartbeat: cancel)."""
        return await self._run(calls.request_cancel(job_id, note))

    async def next_ready_in(self, lanes: Sequence[str]) -> float | None:
        """Seconds until the earliest backed-off job in the lanes is claimable; None: none waits."""
        return await self._run(calls.next_ready_in(lanes))

    async def lane_problem(self, lanes: Sequence[str]) -> str | None:
        """JobStore.lane_problem: the unknown lanes among these; None when each is known."""
        return await self._run(calls.lane_problem(lanes))

    async def next_poll_in(self) -> float | None:
        """JobStore.next_poll_in: seconds until a tracked repository is due; None: there is none."""
        return await self._run(forge_calls.next_poll_in())

    # Forges and polling
    async def add_forge(self, name: str, kind: ForgeKind | str, base_url: str) -> bool:
        return await self._run(forge_calls.add_forge(name, kind, base_url))

    async def remove_forge(self, name: str) -> bool:
        return await self._run(forge_calls.remove_forge(name))

    async def forges(self) -> list[Forge]:
        return await self._run(forge_calls.forges())

    async def set_forge_app(
        self, name: str, app_id: int | None, app_key_file: str | None = None
    ) -> bool:
        """(admin) The forge's GitHub App (None: a token again); true when the entry changed."""
        return await self._run(forge_calls.set_forge_app(name, app_id, app_key_file))

    async def forge_apps(self) -> list[ForgeApp]:
        """The forges that authenticate as a GitHub App."""
        return await self._run(forge_calls.forge_apps())

    async def check_forge(self, name: str) -> None:
        """TL008 (UnknownRepository) unless the forge is registered."""
        return await self._run(forge_calls.check_forge(name))

    async def retry_forge(self, name: str) -> int:
        """(admin) Clear the forge's stop and make its repositories due now; how many they are."""
        return await self._run(forge_calls.retry_forge(name))

    async def claim_repos_to_poll(
        self, poller: str, lease: timedelta = DEFAULT_POLL_LEASE, max_repos: int = 100
    ) -> list[RepoToPoll]:
        return await self._run(forge_calls.claim_repos_to_poll(poller, lease, max_repos))

    async def record_poll(
        self,
        forge: str,
        owner: str,
        repo: str,
        poller: str,
        issues: Iterable[DiscoveredIssue | Mapping[str, Any]],
        cursor: datetime | None,
        etag: str | None,
        full_listing: bool,
        deleted: Sequence[int] = (),
        next_poll_in: timedelta = timedelta(0),
        odd: Sequence[tuple[int, str]] = (),
    ) -> PollOutcome:
        """`odd`: the issues the poller read but could not take as issues (number, why): kept
        in tireless.issue_skip beside those the store itself leaves out, the rest recorded."""
        call = forge_calls.record_poll(
            forge, owner, repo, poller, issues, cursor, etag, full_listing, deleted, next_poll_in,
            odd,
        )  # fmt: skip
        return await self._run(call)

    async def record_poll_failure(
        self,
        forge: str,
        owner: str,
        repo: str,
        poller: str,
        error: str,
        retry_after: timedelta | None = None,
    ) -> datetime:
        call = forge_calls.record_poll_failure(forge, owner, repo, poller, error, retry_after)
        return await self._run(call)

    async def renew_poll_leases(self, poller: str, lease: timedelta) -> int:
        return await self._run(forge_calls.renew_poll_leases(poller, lease))

    async def record_poll_notice(
        self,
        forge: str,
        owner: str,
        repo: str,
        poller: str,
        moved_to: str | None,
        warning: str | None,
    ) -> None:
        return await self._run(
            forge_calls.record_poll_notice(forge, owner, repo, poller, moved_to, warning)
        )

    async def record_issue_moved(
        self, forge: str, owner: str, repo: str, poller: str, number: int, note: str
    ) -> int:
        return await self._run(
            forge_calls.record_issue_moved(forge, owner, repo, poller, number, note)
        )

    async def record_issue_gone(
        self, forge: str, owner: str, repo: str, poller: str, number: int, note: str
    ) -> int:
        return await self._run(
            forge_calls.record_issue_gone(forge, owner, repo, poller, number, note)
        )

    async def record_repo_archived(
        self, forge: str, owner: str, repo: str, poller: str
    ) -> datetime:
        return await self._run(forge_calls.record_repo_archived(forge, owner, repo, poller))

    async def record_forge_trouble(
        self, name: str, error: str | None, until: datetime | None
    ) -> None:
        return await self._run(forge_calls.record_forge_trouble(name, error, until))

    async def mirror_writes(
        self, forge: str, owner: str, repo: str, poller: str, max_writes: int = 100
    ) -> list[MirrorWrite]:
        return await self._run(forge_calls.mirror_writes(forge, owner, repo, poller, max_writes))

    async def record_mirror_write(
        self,
        forge: str,
        owner: str,
        repo: str,
        poller: str,
        write: MirrorWrite,
        issue: DiscoveredIssue | Mapping[str, Any] | None = None,
    ) -> bool:
        call = forge_calls.record_mirror_write(forge, owner, repo, poller, write, issue)
        return await self._run(call)

    async def record_mirror_failure(
        self, forge: str, owner: str, repo: str, poller: str, write: MirrorWrite, error: str
    ) -> datetime:
        call = forge_calls.record_mirror_failure(forge, owner, repo, poller, write, error)
        return await self._run(call)

    async def forge_writes_due(
        self,
        forge: str,
        owner: str,
        repo: str,
        poller: str,
        kinds: Sequence[WriteKind],
        max_writes: int = 100,
        now: datetime | None = None,
    ) -> list[ForgeWrite]:
        """The outbox's writes of `kinds` due now (or at `now`), in the order of `kinds`."""
        return await self._run(
            forge_calls.forge_writes_due(forge, owner, repo, poller, kinds, max_writes, now)
        )

    async def record_forge_write(
        self,
        forge: str,
        owner: str,
        repo: str,
        poller: str,
        write_id: int,
        error: str | None = None,
        result: Mapping[str, Any] | None = None,
    ) -> datetime | None:
        """The forge's answer to write `write_id`: it landed (`result`, as its kind needs; None
        back), or it failed (`error`; when it is tried again)."""
        return await self._run(
            forge_calls.record_forge_write(forge, owner, repo, poller, write_id, error, result)
        )

    async def set_mirror_comments(self, enabled: bool) -> bool:
        return await self._run(forge_calls.set_mirror_comments(enabled))

    async def poll_soon(self, forge: str, owner: str, repo: str) -> bool:
        return await self._run(forge_calls.poll_soon(forge, owner, repo))

    async def repo_status(self) -> list[RepoStatus]:
        return await self._run(forge_calls.repo_status())

    # Routing, answered by the database's one implementation
    async def job_kind_for(self, labels: Sequence[str]) -> JobKind | None:
        return await self._run(calls.job_kind_for(labels))

    async def lane_for(self, kind: JobKind | str, labels: Sequence[str]) -> str:
        return await self._run(calls.lane_for(kind, labels))

    # Lanes
    async def set_lane_capacity(self, lane: str, capacity: int | None) -> Lane:
        return await self._run(lane_calls.set_lane_capacity(lane, capacity))

    async def set_lane_max_run(self, lane: str, max_run: timedelta | None) -> Lane:
        return await self._run(lane_calls.set_lane_max_run(lane, max_run))

    async def set_lane_stall_after(self, lane: str, stall_after: timedelta | None) -> Lane:
        return await self._run(lane_calls.set_lane_stall_after(lane, stall_after))

    async def set_lane_budget(
        self,
        lane: str,
        runs_per_day: int | None,
        agent_time_per_day: timedelta | None,
        spend: SpendBudget | None = None,
    ) -> Lane:
        return await self._run(
            lane_calls.set_lane_budget(lane, runs_per_day, agent_time_per_day, spend)
        )

    async def set_lane_network(self, lane: str, hosts: Sequence[str] | None) -> list[str] | None:
        """The hosts the lane's agents may reach (HOST[:PORT]); [] for no egress, None for no
        list (the host's network). Returns the list as stored."""
        return await self._run(lane_calls.set_lane_network(lane, hosts))

    async def set_lane_limits(
        self,
        lane: str,
        memory: str | None = None,
        cpus: str | None = None,
        pids: str | None = None,
        disk: str | None = None,
    ) -> LaneLimits:
        """The lane's limits on one attempt: sizes (512M, 2GiB), a number of CPUs, a count of
        processes, each as the store parses it; None keeps the lane's, "none" clears it. Returns
        them as stored."""
        return await self._run(lane_calls.set_lane_limits(lane, memory, cpus, pids, disk))

    async def lane_limits(self, lane: str) -> LaneLimits:
        """The lane's limits on one attempt (each None when it has none)."""
        return await self._run(lane_calls.lane_limits(lane))

    async def lane_network(self, lane: str) -> list[str] | None:
        """The lane's egress allowlist: None when it has none, [] for no egress."""
        return await self._run(lane_calls.lane_network(lane))

    async def set_lane_agent(self, lane: str, agent: str | None) -> str | None:
        """The agent CLI profile the lane's jobs run (tireless.runner.agents); None: the worker's
        own. UnknownAgent (TL012) for a profile tireless does not know."""
        return await self._run(lane_calls.set_lane_agent(lane, agent))

    async def lane_agent(self, lane: str) -> str | None:
        """The agent CLI profile the lane names, None when it names none."""
        return await self._run(lane_calls.lane_agent(lane))

    async def lane_agents(self) -> dict[str, str]:
        """Every lane that names an agent CLI profile, with it."""
        return await self._run(lane_calls.lane_agents())

    # Repositories' shares
    async def set_repo_capacity(
        self, forge: str, owner: str, repo: str, capacity: int | None
    ) -> RepoLimit:
        return await self._run(lane_calls.set_repo_capacity(forge, owner, repo, capacity))

    async def set_repo_budget(
        self,
        forge: str,
        owner: str,
        repo: str,
        runs_per_day: int | None,
        agent_time_per_day: timedelta | None,
        spend: SpendBudget | None = None,
    ) -> RepoLimit:
        return await self._run(
            lane_calls.set_repo_budget(forge, owner, repo, runs_per_day, agent_time_per_day, spend)
        )

    async def set_repo_delivery(
        self,
        forge: str,
        owner: str,
        repo: str,
        protected: Sequence[str] | None = None,
        allowed: Sequence[str] | None = None,
        allow_ci: bool | None = None,
        max_files: int | None = None,
        max_bytes: int | None = None,
    ) -> RepoDelivery:
        """(admin) The tracked repository's delivery policy: a None leaves its setting as it is, a
        list replaces the list, a limit of 0 goes back to the runner's default."""
        return await self._run(
            lane_calls.set_repo_delivery(
                forge, owner, repo, protected, allowed, allow_ci, max_files, max_bytes
            )
        )

    async def delivery_policy(self, forge: str, owner: str, repo: str) -> RepoDelivery:
        """The delivery policy that applies to the repository's changes, the defaults filled in
        (no globs, CI definitions refused, at most 1000 files and 50 MiB where none is set)."""
        return await self._run(lane_calls.delivery_policy(forge, owner, repo))

    async def set_repo_revisions(
        self,
        forge: str,
        owner: str,
        repo: str,
        revise_on_failed_checks: bool | None = None,
        max_revisions: int | None = None,
    ) -> RepoRevisions:
        """(admin) The tracked repository's revision policy: whether failed checks ask for a
        revision, and how many an issue gets; a None leaves its setting as it is."""
        call = forge_calls.set_repo_revisions(
            forge, owner, repo, revise_on_failed_checks, max_revisions
        )
        return await self._run(call)

    async def conversation_to_read(
        self, forge: str, owner: str, repo: str, poller: str
    ) -> ConversationToRead:
        return await self._run(forge_calls.conversation_to_read(forge, owner, repo, poller))

    async def record_conversation(
        self,
        forge: str,
        owner: str,
        repo: str,
        poller: str,
        login: str | None,
        asks: Sequence[Mapping[str, Any]],
        comments_cursor: datetime | None = None,
        comments_etag: str | None = None,
        pulls: Sequence[Mapping[str, Any]] = (),
    ) -> ConversationOutcome:
        """What the poller read of the repository's conversation (tireless.record_conversation)."""
        call = forge_calls.record_conversation(
            forge, owner, repo, poller, login, asks, comments_cursor, comments_etag, pulls
        )
        return await self._run(call)

    async def job_asks(self, job_id: int) -> list[JobAsk]:
        """The reviews, commands and failed checks the job answers, oldest first."""
        return await self._run(forge_calls.job_asks(job_id))

    async def job_network(self, job_id: int) -> list[JobNetwork]:
        """What each attempt of the job reached and was refused, by attempt."""
        return await self._run(calls.job_network(job_id))

    async def pause_lane(self, lane: str) -> Lane:
        return await self._run(lane_calls.pause_lane(lane))

    async def resume_lane(self, lane: str) -> Lane:
        return await self._run(lane_calls.resume_lane(lane))

    async def reset_lane_breaker(self, lane: str) -> Lane:
        return await self._run(lane_calls.reset_lane_breaker(lane))

    # Holding a job
    def lease(
        self,
        worker: str,
        lanes: Sequence[str],
        lease: timedelta = DEFAULT_LEASE,
        on_lost: OnLost | None = None,
        on_cancel: OnCancel | None = None,
        job: Job | None = None,
        then_claim: ThenClaim | None = None,
    ) -> AsyncHeldJob:
        """`async with store.lease(worker, lanes) as job:` — JobStore.lease, renewing in a task."""
        if not isinstance(self._connections, AsyncConnectionPool):
            raise TypeError(NEEDS_A_POOL)
        return AsyncHeldJob(
            self._run, worker, lanes, lease, on_lost, on_cancel, job, then_claim,
            listen=self.listen_for_stops,
        )  # fmt: skip

    # Wake-up
    @asynccontextmanager
    async def listen(self, lanes: Sequence[str]) -> AsyncIterator[AsyncWorkWaiter]:
        """JobStore.listen: LISTEN on tireless_work for the block's length, on a connection of
        its own; notifications sent after the block starts wait for `await waiter.wait(...)`."""
        async with self._listening(calls.LISTEN, calls.UNLISTEN) as conn:
            yield AsyncWorkWaiter(conn, lanes)

    @asynccontextmanager
    async def listen_for_stops(self) -> AsyncIterator[AsyncNotifications]:
        """JobStore.listen_for_stops: LISTEN on tireless_stop (payload: the id of a claimed job
        asked to stop) on a connection of its own; a lease's renewal task waits on it."""
        async with self._listening(calls.LISTEN_STOPS, calls.UNLISTEN_STOPS) as conn:
            yield AsyncNotifications(conn)

    @asynccontextmanager
    async def listen_for_polls(self) -> AsyncIterator[AsyncNotifications]:
        """JobStore.listen_for_polls: LISTEN on tireless_poll (payload: the forge of a repository
        due for a poll now)."""
        async with self._listening(calls.LISTEN_POLLS, calls.UNLISTEN_POLLS) as conn:
            yield AsyncNotifications(conn)

    @asynccontextmanager
    async def _listening(
        self, listen: LiteralString, unlisten: LiteralString
    ) -> AsyncIterator[AsyncConnection[Any]]:
        async with self._connection() as conn:
            was_autocommit = conn.autocommit
            await conn.set_autocommit(True)
            try:
                await conn.execute(listen)
                yield conn
            except BaseException:
                with contextlib.suppress(psycopg.Error):  # as in JobStore.listen
                    await self._stop_listening(conn, unlisten, was_autocommit)
                raise
            await self._stop_listening(conn, unlisten, was_autocommit)

    @staticmethod
    async def _stop_listening(
        conn: AsyncConnection[Any], unlisten: LiteralString, was_autocommit: bool
    ) -> None:
        await conn.execute(unlisten)
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


class AsyncNotifications:
    """The waiting half of `AsyncJobStore.listen_for_stops` and `listen_for_polls`."""

    def __init__(self, conn: AsyncConnection[Any]) -> None:
        self._conn = conn

    async def wait(self, timeout: float, payload: str | None = None) -> str | None:
        """Notifications.wait: the payload of the first notification (that is `payload`, when
        given); None after `timeout` seconds. A cancelled task ends the wait."""
        # Closed however the wait ends: the generator holds the connection's lock until then.
        async with contextlib.aclosing(self._conn.notifies(timeout=max(timeout, 0.0))) as heard:
            async for notify in heard:
                if payload is None or notify.payload == payload:
                    return notify.payload
        return None
