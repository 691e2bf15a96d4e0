"""JobStore: the thin synchronous adapter. One method per database function, each running the
call tireless.store.calls builds for it (its SQL, parameters and row shape) in its own transaction;
rows become typed objects. It holds no rule and no SQL of its own."""

from __future__ import annotations

import contextlib
import select
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime, timedelta
from typing import Any, LiteralString, TypeVar
from uuid import UUID

import psycopg
from psycopg import Connection
from psycopg_pool import ConnectionPool

from tireless.connect import FailoverPool
from tireless.conversation import ConversationOutcome, ConversationToRead
from tireless.errors import translated_errors
from tireless.models import (
    NO_CHANGE,
    AttemptUsage,
    Delivery,
    DiscoveredIssue,
    Heartbeat,
    Job,
    JobAsk,
    JobBrief,
    JobKind,
    JobNetwork,
    JobState,
    Lane,
    LaneLimits,
    RepoDelivery,
    RepoLimit,
    RepoRef,
    RepoRevisions,
    SpendBudget,
)
from tireless.store import calls, forge_calls, lane_calls
from tireless.store.calls import (
    DEFAULT_LEASE,
    POOL_OPEN_TIMEOUT,
    POOL_OPTIONS,
    Call,
    needs_transaction,
)
from tireless.store.forge_store import ForgeMethods
from tireless.store.lease import NEEDS_A_POOL, HeldJob, OnCancel, OnLost, ThenClaim
from tireless.store.ledger_store import LedgerMethods
from tireless.store.outcome_store import OutcomeMethods

Answer = TypeVar("Answer")


def atomic(conn: Connection[Any]) -> AbstractContextManager[Any]:
    """A transaction block only where one statement needs it (tireless.store.calls.needs_transaction)."""
    return conn.transaction() if needs_transaction(conn) else nullcontext()


class JobStore(LedgerMethods, OutcomeMethods, ForgeMethods):
    """The store, over a conninfo (a libpq connection string or URL: the store owns a pool,
    opened by `with`, by `open()` or at the first call), a ConnectionPool (the caller opens and
    closes it) or one Connection (calls join the caller's transaction as savepoints).
    AsyncJobStore opens its pool the same way."""

    def __init__(self, connections: str | ConnectionPool[Any] | Connection[Any]) -> None:
        self._owned_pool: ConnectionPool[Any] | None = None
        self._opening = threading.Lock()
        self._opened = not isinstance(connections, str)  # a pool passed in is the caller's to open
        if isinstance(connections, str):
            self._owned_pool = FailoverPool(connections, open=False, **POOL_OPTIONS)
            connections = self._owned_pool
        self._connections: ConnectionPool[Any] | Connection[Any] = connections
        # Over one connection, threads take turns (the poller reads its forges in threads): two
        # calls at once would share one transaction state.
        self._turn: AbstractContextManager[Any] = (
            nullcontext() if isinstance(connections, ConnectionPool) else threading.Lock()
        )

    def open(self) -> None:
        """Open the pool the store owns and wait for its first connection (PoolTimeout after
        POOL_OPEN_TIMEOUT seconds); a pool or connection passed in is the caller's."""
        with self._opening:
            if self._owned_pool is not None and not self._opened:
                self._owned_pool.open(wait=True, timeout=POOL_OPEN_TIMEOUT)
                self._opened = True

    def close(self) -> None:
        """Close the pool the store opened itself; a pool or connection passed in is the caller's."""
        if self._owned_pool is not None:
            self._owned_pool.close()

    def __enter__(self) -> JobStore:
        self.open()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def _connection(self) -> Iterator[Connection[Any]]:
        if isinstance(self._connections, ConnectionPool):
            if not self._opened:
                self.open()
            with self._connections.connection() as conn:
                try:
                    yield conn
                except psycopg.OperationalError:
                    if conn.broken:  # the others went with it (a failover, a restart): new ones
                        self._connections.drain()
                    raise
        else:
            yield self._connections

    def _run(self, call: Call[Any, Answer]) -> Answer:
        with (
            self._turn,
            translated_errors(),
            self._connection() as conn,
            atomic(conn),
            conn.cursor(row_factory=call.row) as cur,
        ):
            cur.execute(call.query, call.params)
            return call.answer(cur.fetchall())

    # Tracking
    def track_repo(self, forge: str, owner: str, repo: str) -> bool:
        return self._run(calls.track_repo(forge, owner, repo))

    def untrack_repo(self, forge: str, owner: str, repo: str) -> bool:
        return self._run(calls.untrack_repo(forge, owner, repo))

    def tracked_repos(self) -> list[RepoRef]:
        return self._run(calls.tracked_repos())

    # The queue
    def enqueue(self, issues: Iterable[DiscoveredIssue | Mapping[str, Any]]) -> int:
        return self._run(calls.enqueue(issues))

    def claim_next(
        self, worker: str, lanes: Sequence[str], lease: timedelta = DEFAULT_LEASE
    ) -> Job | None:
        return self._run(calls.claim_next(worker, lanes, lease))

    def renew_claim(
        self, job_id: int, worker: str, lease: timedelta = DEFAULT_LEASE, token: UUID | None = None
    ) -> bool:
        return self._run(calls.renew_claim(job_id, worker, lease, token))

    def transition(
        self,
        job_id: int,
        to: JobState | str,
        worker: str | None = None,
        note: str | None = None,
        token: UUID | None = None,
    ) -> Job:
        return self._run(calls.transition(job_id, to, worker, note, token))

    def finish_and_claim(
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
        return self._run(calls.finish_and_claim(job_id, to, worker, lanes, lease, token, note))

    def give_back(
        self, job_id: int, worker: str, note: str | None = None, token: UUID | None = None
    ) -> Job:
        """The holder returns the job because the runner is stopping: pending and claimable at
        once, no backoff, not a failure, not counted against max_attempts."""
        return self._run(calls.give_back(job_id, worker, note, token))

    def heartbeat(
        self, job_id: int, worker: str, lease: timedelta = DEFAULT_LEASE, token: UUID | None = None
    ) -> Heartbeat:
        """Renew the claim and learn whether to go on (held), stop because the claim is gone
        (lost), or stop and end the job `cancelled` because its issue withdrew its request (cancel)."""
        return self._run(calls.heartbeat(job_id, worker, lease, token))

    def end_stopped_attempt(self, job_id: int, worker: str, token: UUID | None = None) -> Job:
        """The holder ends an attempt the watchdog stopped (heartbeat answered timeout or
        stalled) as a failure, with the watchdog's note."""
        return self._run(calls.end_stopped_attempt(job_id, worker, token))

    def report_progress(
        self, job_id: int, worker: str, step: str | None = None, token: UUID | None = None
    ) -> datetime:
        """The holder's attempt progresses (and, with a step, is at that step now)."""
        return self._run(calls.report_progress(job_id, worker, step, token))

    def attach_plan(self, job_id: int, worker: str, plan: object, token: UUID | None = None) -> int:
        return self._run(calls.attach_plan(job_id, worker, plan, token))

    def attach_report(
        self, job_id: int, worker: str, report: str, token: UUID | None = None
    ) -> bool:
        """The holder attaches its agent's report (the outcome comment); True when it was cut."""
        return self._run(calls.attach_report(job_id, worker, report, token))

    # The worker's own record (the workers page: live, idle, stopped, lost)
    def worker_started(self, worker: str, lanes: Sequence[str], lease: timedelta) -> None:
        """A worker process says it started, serving lanes; alive for lease, renewed by its beats."""
        self._run(calls.worker_started(worker, lanes, lease))

    def worker_beat(self, worker: str, lease: timedelta) -> bool:
        """A running worker's beat; False: it has no running record (say it started again)."""
        return self._run(calls.worker_beat(worker, lease))

    def worker_stopped(self, worker: str, how: str) -> bool:
        """A worker says it stopped, and how (SIGINT, --once, ...)."""
        return self._run(calls.worker_stopped(worker, how))

    def record_exit(
        self, job_id: int, worker: str, exit_status: int, token: UUID | None = None
    ) -> None:
        """The holder records COMMAND's exit status in its attempt (negative: the signal)."""
        self._run(calls.record_exit(job_id, worker, exit_status, token))

    def record_attempt_usage(
        self, job_id: int, worker: str, usage: AttemptUsage, token: UUID | None = None
    ) -> None:
        """The holder records what its attempt used of the host (peaks, CPU seconds, the
        workspace's size) and the limit that stopped it, if one did."""
        self._run(lane_calls.record_attempt_usage(job_id, worker, usage, token))

    def deliver(
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
        return self._run(call)

    def deliver_and_claim(
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
        return self._run(call)

    def record_checkpoint(
        self, job_id: int, worker: str, ref: str, commit: str, token: UUID | None = None
    ) -> datetime:
        """The holder pushed its workspace's commits so far to ref (never the pull request's
        branch) at commit: the job's last checkpoint, where its later attempts start."""
        return self._run(calls.record_checkpoint(job_id, worker, ref, commit, token))

    def record_job_network(
        self, job_id: int, worker: str, token: UUID | None, hosts: Sequence[Mapping[str, Any]]
    ) -> int:
        """The holder records what its attempt's agent reached and was refused (rows of
        NetworkReport.as_json(): host, port, allowed, requests, bytes_in, bytes_out, reason),
        replacing what the attempt recorded before; returns how many rows are kept."""
        return self._run(calls.record_job_network(job_id, worker, token, hosts))

    def record_push(
        self, job_id: int, worker: str, branch: str, head: str, token: UUID | None = None
    ) -> list[str]:
        """The holder is about to push head to its issue's branch: recorded first (a runner that
        dies after the push leaves a commit the next attempt knows as tireless's); every head
        tireless pushed or delivered on the branch, newest first: what a push may go over."""
        return self._run(calls.record_push(job_id, worker, branch, head, token))

    def job_brief(self, job_id: int) -> JobBrief:
        """The issue's URL and body, the forge's API root and the clone URL, for the agent; what
        tireless last pushed for the issue and the job's last checkpoint, for the runner."""
        return self._run(calls.job_brief(job_id))

    def expire_stale_claims(self) -> int:
        return self._run(calls.expire_stale_claims())

    def roll_up_history(self) -> int:
        """Fold the history written since the last roll-up into the dashboard's counters; how
        many finished jobs it counted (0 on a hot standby, or while another roll-up runs). The
        sweeper and the poller call it, so the dashboard's reads stay short and write nothing."""
        return self._run(calls.roll_up_history())

    def prune(self, older_than: timedelta, max_jobs: int | None = None) -> int:
        """(admin) Delete terminal jobs unchanged for `older_than`, with their history; at most
        `max_jobs` in this call when given. Returns how many jobs it deleted."""
        return self._run(calls.prune(older_than, max_jobs))

    def refresh_lane(
        self, forge: str, owner: str, repo: str, number: int, labels: Sequence[str]
    ) -> str | None:
        return self._run(calls.refresh_lane(forge, owner, repo, number, labels))

    def rerun(
        self, forge: str, owner: str, repo: str, number: int, kind: JobKind | str | None = None
    ) -> int:
        """(admin) A new pending job for the issue whatever its labels say: the kind and agent it
        last asked for, or `kind`; its id."""
        return self._run(calls.rerun(forge, owner, repo, number, kind))

    def request_cancel(self, job_id: int, note: str | None = None) -> Job:
        """(admin) Cancel a pending job now; ask a claimed job's holder to stop (heartbeat: cancel)."""
        return self._run(calls.request_cancel(job_id, note))

    def next_ready_in(self, lanes: Sequence[str]) -> float | None:
        """Seconds until the earliest backed-off job in the lanes is claimable; None: none waits."""
        return self._run(calls.next_ready_in(lanes))

    def lane_problem(self, lanes: Sequence[str]) -> str | None:
        """What is wrong with a worker's lanes (tireless.lane_problem): None when each is known."""
        return self._run(calls.lane_problem(lanes))

    def next_poll_in(self) -> float | None:
        """Seconds until a tracked repository of a registered forge is due for a poll (negative:
        one is due now); None when there is none."""
        return self._run(forge_calls.next_poll_in())

    # Routing, answered by the database's one implementation
    def job_kind_for(self, labels: Sequence[str]) -> JobKind | None:
        return self._run(calls.job_kind_for(labels))

    def lane_for(self, kind: JobKind | str, labels: Sequence[str]) -> str:
        return self._run(calls.lane_for(kind, labels))

    # Lanes
    def set_lane_capacity(self, lane: str, capacity: int | None) -> Lane:
        return self._run(lane_calls.set_lane_capacity(lane, capacity))

    def set_lane_max_run(self, lane: str, max_run: timedelta | None) -> Lane:
        return self._run(lane_calls.set_lane_max_run(lane, max_run))

    def set_lane_stall_after(self, lane: str, stall_after: timedelta | None) -> Lane:
        return self._run(lane_calls.set_lane_stall_after(lane, stall_after))

    def set_lane_budget(
        self,
        lane: str,
        runs_per_day: int | None,
        agent_time_per_day: timedelta | None,
        spend: SpendBudget | None = None,
    ) -> Lane:
        return self._run(lane_calls.set_lane_budget(lane, runs_per_day, agent_time_per_day, spend))

    def set_lane_network(self, lane: str, hosts: Sequence[str] | None) -> list[str] | None:
        """The hosts the lane's agents may reach (HOST[:PORT]); [] for no egress, None for no
        list (the host's network). Returns the list as stored."""
        return self._run(lane_calls.set_lane_network(lane, hosts))

    def set_lane_limits(
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
        return self._run(lane_calls.set_lane_limits(lane, memory, cpus, pids, disk))

    def lane_limits(self, lane: str) -> LaneLimits:
        """The lane's limits on one attempt (each None when it has none)."""
        return self._run(lane_calls.lane_limits(lane))

    def lane_network(self, lane: str) -> list[str] | None:
        """The lane's egress allowlist: None when it has none, [] for no egress."""
        return self._run(lane_calls.lane_network(lane))

    def set_lane_agent(self, lane: str, agent: str | None) -> str | None:
        """The agent CLI profile the lane's jobs run (tireless.runner.agents); None: the worker's
        own. UnknownAgent (TL012) for a profile tireless does not know."""
        return self._run(lane_calls.set_lane_agent(lane, agent))

    def lane_agent(self, lane: str) -> str | None:
        """The agent CLI profile the lane names, None when it names none."""
        return self._run(lane_calls.lane_agent(lane))

    def lane_agents(self) -> dict[str, str]:
        """Every lane that names an agent CLI profile, with it."""
        return self._run(lane_calls.lane_agents())

    # Repositories' shares
    def set_repo_capacity(
        self, forge: str, owner: str, repo: str, capacity: int | None
    ) -> RepoLimit:
        return self._run(lane_calls.set_repo_capacity(forge, owner, repo, capacity))

    def set_repo_budget(
        self,
        forge: str,
        owner: str,
        repo: str,
        runs_per_day: int | None,
        agent_time_per_day: timedelta | None,
        spend: SpendBudget | None = None,
    ) -> RepoLimit:
        return self._run(
            lane_calls.set_repo_budget(forge, owner, repo, runs_per_day, agent_time_per_day, spend)
        )

    def set_repo_delivery(
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
        return self._run(
            lane_calls.set_repo_delivery(
                forge, owner, repo, protected, allowed, allow_ci, max_files, max_bytes
            )
        )

    def delivery_policy(self, forge: str, owner: str, repo: str) -> RepoDelivery:
        """The delivery policy that applies to the repository's changes, the defaults filled in
        (no globs, CI definitions refused, at most 1000 files and 50 MiB where none is set)."""
        return self._run(lane_calls.delivery_policy(forge, owner, repo))

    def set_repo_revisions(
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
        return self._run(call)

    def conversation_to_read(
        self, forge: str, owner: str, repo: str, poller: str
    ) -> ConversationToRead:
        return self._run(forge_calls.conversation_to_read(forge, owner, repo, poller))

    def record_conversation(
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
        return self._run(call)

    def job_asks(self, job_id: int) -> list[JobAsk]:
        """The reviews, commands and failed checks the job answers, oldest first."""
        return self._run(forge_calls.job_asks(job_id))

    def job_network(self, job_id: int) -> list[JobNetwork]:
        """What each attempt of the job reached and was refused, by attempt."""
        return self._run(calls.job_network(job_id))

    def pause_lane(self, lane: str) -> Lane:
        return self._run(lane_calls.pause_lane(lane))

    def resume_lane(self, lane: str) -> Lane:
        return self._run(lane_calls.resume_lane(lane))

    def reset_lane_breaker(self, lane: str) -> Lane:
        return self._run(lane_calls.reset_lane_breaker(lane))

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
    ) -> HeldJob:
        """`with store.lease(worker, lanes) as job:` claims a job (None: nothing claimable), renews
        it in a thread at a third of the lease (heartbeat), delivers it when the block ends
        normally and releases it to pending, the exception as note, when the block raises
        (tireless.store.lease). Raising ShuttingDown in the block gives the job back instead (the runner
        is stopping). When a heartbeat says the job was asked to stop (heard at once: the renewer
        LISTENs on tireless_stop, listen_for_stops), `on_cancel(job)` is called and the lease ends
        the job cancelled with the stop's note, however the block ends (unless the block finished
        it with what it pushed, `held.finish(delivery)`: then it is delivered, the late stop
        noted). A runner that goes on to claim passes `then_claim`: when it answers True at the
        finish, the finish also claims the next job in one transaction (finish_and_claim, or
        deliver_and_claim), `held.next`, which the runner's next lease holds (`job=`).
        Needs a store over a pool or connection string: the renewals run on their own connection,
        and the LISTEN for a stop holds one of its own while the block runs."""
        if not isinstance(self._connections, ConnectionPool):
            raise TypeError(NEEDS_A_POOL)
        return HeldJob(
            self._run, worker, lanes, lease, on_lost, on_cancel, job, then_claim,
            listen=self.listen_for_stops,
        )  # fmt: skip

    # Wake-up
    @contextmanager
    def listen(self, lanes: Sequence[str]) -> Iterator[WorkWaiter]:
        """LISTEN on tireless_work for the block's length, on a connection of its own (of the
        pool, or the store's one connection, switched to autocommit meanwhile). Every
        notification sent after the block starts is kept until a `wait` takes it, so a runner
        that claims inside the block and waits when the claim found nothing misses no work."""
        with self._listening(calls.LISTEN, calls.UNLISTEN) as conn:
            yield WorkWaiter(conn, lanes)

    @contextmanager
    def listen_for_stops(self) -> Iterator[Notifications]:
        """LISTEN on tireless_stop (a claimed job was asked to stop; the payload is its id) for
        the block's length, on a connection of its own: a lease's renewer waits on it."""
        with self._listening(calls.LISTEN_STOPS, calls.UNLISTEN_STOPS) as conn:
            yield Notifications(conn)

    @contextmanager
    def listen_for_polls(self) -> Iterator[Notifications]:
        """LISTEN on tireless_poll (a repository is due for a poll now; the payload is its forge)
        for the block's length: `tireless poll --every` waits on it between rounds. On the store's
        one connection, what arrives while a round runs is kept for the next wait."""
        with self._listening(calls.LISTEN_POLLS, calls.UNLISTEN_POLLS) as conn:
            yield Notifications(conn)

    @contextmanager
    def _listening(
        self, listen: LiteralString, unlisten: LiteralString
    ) -> Iterator[Connection[Any]]:
        """A connection of its own (of the pool, or the store's one connection, switched to
        autocommit meanwhile) that LISTENs for the block's length."""
        with self._connection() as conn:
            was_autocommit = conn.autocommit
            conn.autocommit = True
            try:
                conn.execute(listen)
                yield conn
            except BaseException:
                # The block's error is the one to see: cleaning up a connection that died with it
                # would only raise again ("the connection is closed") and hide it.
                with contextlib.suppress(psycopg.Error):
                    self._stop_listening(conn, unlisten, was_autocommit)
                raise
            self._stop_listening(conn, unlisten, was_autocommit)

    @staticmethod
    def _stop_listening(
        conn: Connection[Any], unlisten: LiteralString, was_autocommit: bool
    ) -> None:
        conn.execute(unlisten)
        for _ in conn.notifies(timeout=0):
            pass  # drop what arrived before the UNLISTEN: the next listener starts clean
        conn.autocommit = was_autocommit

    def wait_for_work(self, lanes: Sequence[str], timeout: float) -> str | None:
        """Sleep until a NOTIFY on tireless_work names one of `lanes` (returns it) or `timeout`
        seconds pass (returns None). It listens only from the call on: a runner that must not
        miss work announced between its last claim and this call uses `listen` instead."""
        with self.listen(lanes) as waiter:
            return waiter.wait(timeout)


LISTEN_CHECK = 2.0
"""Seconds a LISTEN waits in silence before it checks that its host still answers."""


class WorkWaiter:
    """The waiting half of `JobStore.listen`: one LISTEN on tireless_work, filtered by lane."""

    def __init__(self, conn: Connection[Any], lanes: Sequence[str]) -> None:
        self._conn = conn
        self._lanes = frozenset(lanes)

    def wait(self, timeout: float) -> str | None:
        """The lane of the first notification for one of the lanes, taking those kept since the
        last wait first; None when none comes within `timeout` seconds. Every LISTEN_CHECK
        seconds of silence the connection is asked for an answer (under its call deadline): a
        host that hung sends nothing and drops nothing, and only that question finds it out."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            for notify in self._conn.notifies(timeout=max(min(left, LISTEN_CHECK), 0.0)):
                if notify.payload in self._lanes:
                    return notify.payload
            if time.monotonic() >= deadline:
                return None
            self._conn.execute("")


class Notifications:
    """The waiting half of `JobStore.listen_for_stops` and `listen_for_polls`: one LISTEN."""

    def __init__(self, conn: Connection[Any]) -> None:
        self._conn = conn

    def wait(
        self, timeout: float, payload: str | None = None, wakeup: int | None = None
    ) -> str | None:
        """The payload of the first notification (the first that is `payload`, when given), taking
        those kept since the last wait first; None when none comes within `timeout` seconds, or at
        once when the file descriptor `wakeup` is readable (a signal, the end of a lease)."""
        deadline = time.monotonic() + max(timeout, 0.0)
        watched = [self._conn.fileno()] + ([] if wakeup is None else [wakeup])
        while True:
            # Each wait takes all that arrived: no notification is left half-read.
            for notify in list(self._conn.notifies(timeout=0)):
                if payload is None or notify.payload == payload:
                    return notify.payload
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select(watched, [], [], left)
            if wakeup is not None and wakeup in ready:
                return None
