"""Holding a job under a lease: claim it, renew it in the background at a third of its length
(tireless.heartbeat), deliver it when the work ends normally, release it for retry when the work
raises, give it back when the runner is stopping (ShuttingDown, KeyboardInterrupt, a cancelled
asyncio task), end it cancelled when a heartbeat says its issue withdrew its request, and end it
as a failure with the watchdog's note when a heartbeat says timeout or stalled.

`JobStore.lease(...)` returns a `HeldJob`, `AsyncJobStore.lease(...)` an `AsyncHeldJob`: context
managers that build the calls claim_next, heartbeat, transition and give_back (tireless.store.calls),
always with the claim's token, and hand them to the runner the store gives them, which runs each
on a connection of its pool. They share every decision below. A runner that goes on to claim
passes `then_claim`: when the block ends and `then_claim()` says to go on, the finish is
tireless.finish_and_claim (one transaction: the finish, then the next claim), the job it claimed is
`next`, and the runner's next lease holds it (`job=`) instead of claiming one. Any refusal that says the worker
does not hold the job any more (TL004, whatever the job's state now is) is a lost lease.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol, TypeVar

from tireless.errors import NotHolder
from tireless.models import Heartbeat, Job, JobState
from tireless.store import calls
from tireless.store.calls import Call

log = logging.getLogger(__name__)

NOTE_LIMIT = 4000
"""A release note keeps the last this many characters of the reason."""

NEEDS_A_POOL = (
    "lease() needs a store over a connection string or a pool: it renews the claim on a"
    " connection of its own while the work runs, and this store has only the one connection"
)

Answer = TypeVar("Answer")
OnLost = Callable[[Job], None]
OnCancel = Callable[[Job], None]
ThenClaim = Callable[[], bool]

CANCEL_NOTE = "issue withdrew its request"
"""The note of a job a lease ends cancelled because a heartbeat answered `cancel`."""


@dataclass(frozen=True, slots=True)
class Pushed:
    """What the holder pushed before the block ended, for `tireless.deliver`: `branch` at `head`,
    made on `base_branch` at `base`. No branch: the work changed nothing (delivered `no change`)."""

    branch: str | None = None
    head: str | None = None
    base_branch: str | None = None
    base: str | None = None
    draft: bool = False


class Release(Exception):
    """Raise it inside a lease to release the job for retry with `str(exception)` as the note.
    The lease swallows it; any other exception also releases the job, then propagates (but see
    ShuttingDown)."""


class ShuttingDown(Exception):
    """Raise it inside a lease when the runner is stopping (a SIGTERM, a deploy): the job is given
    back (tireless.give_back: claimable at once, not a failure, no attempt spent of its budget)
    with `str(exception)` as the note, and the lease swallows it. KeyboardInterrupt, and in an
    AsyncHeldJob a cancelled task, give the job back the same way, then propagate."""


STOPPING: tuple[type[BaseException], ...] = (
    ShuttingDown,
    KeyboardInterrupt,
    asyncio.CancelledError,
)
"""What ends a lease's block because the runner stops: the job is given back, not released."""


class LeaseLost(Exception):
    """The claim was lost while the work ran (a heartbeat answered lost, or the finish was
    refused as not the holder: the sweeper or another holder has the job): the job was not
    finished."""

    def __init__(self, job: Job) -> None:
        super().__init__(f"lease on job {job.id} was lost; the job was not finished")
        self.job = job


def renewal_interval(lease: timedelta) -> float:
    """Seconds between renewals: a third of the lease, so two renewals may fail before it ends."""
    return lease.total_seconds() / 3


def reason(error: BaseException) -> str:
    """A note from the exception that ended the work: its text, or its type and text."""
    text = str(error)
    if not isinstance(error, (Release, ShuttingDown)):
        text = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return text[-NOTE_LIMIT:]


def outcome(error: BaseException | None) -> tuple[JobState, str | None]:
    """Where a leased job goes when the work ends: delivered, or back to pending with a note."""
    if error is None:
        return JobState.DELIVERED, None
    return JobState.PENDING, reason(error)


class Runner(Protocol):
    """Runs one call on a connection of the store and returns its answer (JobStore's runner)."""

    def __call__(self, call: Call[Any, Answer], /) -> Answer: ...


class AsyncRunner(Protocol):
    """Runs one call on a connection of the store and returns its answer (AsyncJobStore's runner)."""

    def __call__(self, call: Call[Any, Answer], /) -> Awaitable[Answer]: ...


class _Holding:
    """What HeldJob and AsyncHeldJob share: the holder's state and every decision, no I/O."""

    def __init__(
        self,
        worker: str,
        lanes: Sequence[str],
        lease: timedelta,
        on_lost: OnLost | None,
        on_cancel: OnCancel | None,
        job: Job | None,
        then_claim: ThenClaim | None,
    ) -> None:
        self.worker = worker
        self.lanes = list(lanes)
        self.lease = lease
        """How long each claim and renewal lasts."""
        self.on_lost = on_lost
        self.on_cancel = on_cancel
        self.cancel_requested = False
        """True once a heartbeat answered cancel: stop the work; the lease ends the job cancelled."""
        self.watchdog_stop: Heartbeat | None = None
        """timeout or stalled once a heartbeat answered it: stop the work; the lease ends the attempt
        as a failure with the watchdog's note (tireless.end_stopped_attempt)."""
        self.job: Job | None = job
        """The job as claimed; None when nothing was claimable. Given: a job already claimed."""
        self.then_claim = then_claim
        self._claims_next = False
        self.finished: Job | None = None
        """The job as the lease left it (delivered, pending or failed); None if it was not finished,
        or if the finish also claimed the next job (see ended_as and next)."""
        self.ended_as: JobState | None = None
        """The state the lease asked the job to end in (the store may decide otherwise: a release
        after the last attempt fails it)."""
        self.next: Job | None = None
        """The job the finish claimed (finish_and_claim); None when it did not claim or none was
        claimable."""
        self.lost = False
        self.given_back = False
        """True when the lease gave the job back (the runner was stopping)."""
        self.pushed: Pushed | None = None
        """Set by the block when it pushed the work: a delivery then records it (tireless.deliver)."""

    def _claim(self) -> Call[Job, Job | None]:
        return calls.claim_next(self.worker, self.lanes, self.lease)

    def _renewal(self, job: Job) -> Call[Any, Heartbeat]:
        """The heartbeat of the job by its holder, for the lease's length, with the claim's token."""
        return calls.heartbeat(job.id, self.worker, self.lease, job.claim_token)

    def _renewed(self, job: Job, answer: Heartbeat | Exception | None) -> bool:
        """Record a heartbeat's answer (None: none yet; an exception: it failed, try again at the
        next interval); False means stop renewing."""
        if answer is None or answer is Heartbeat.HELD:
            return True
        if isinstance(answer, Exception):
            log.error("renewing the lease on job %s failed; trying again", job.id, exc_info=answer)
            return True
        if answer is Heartbeat.CANCEL:
            if not self.cancel_requested:  # renewals go on while the work stops
                self.cancel_requested = True
                log.debug("job %s: its issue withdrew its request", job.id)
                if self.on_cancel is not None:
                    self.on_cancel(job)
            return True
        if answer.is_watchdog_stop:
            if self.watchdog_stop is None:  # renewals go on while the work stops
                self.watchdog_stop = answer
                log.info("job %s: the watchdog stopped its attempt (%s)", job.id, answer)
                if self.on_cancel is not None:
                    self.on_cancel(job)
            return True
        self.lost = True
        log.debug("lost the lease on job %s", job.id)
        if self.on_lost is not None:
            self.on_lost(job)
        return False

    def _finish(self, job: Job, error: BaseException | None) -> Call[Job, Job | None]:
        """The call that ends the job once the renewals have stopped: give_back when the runner
        stops, else a transition, or finish_and_claim when then_claim says the runner goes on;
        LeaseLost if a renewal lost the job."""
        if self.lost:
            raise LeaseLost(job) from error
        if not self.cancel_requested:  # a cancel ends the job cancelled, however the work ended
            if self.watchdog_stop is not None:
                return calls.end_stopped_attempt(job.id, self.worker, job.claim_token)
            if isinstance(error, STOPPING):
                self.given_back = True
                return calls.give_back(job.id, self.worker, reason(error), job.claim_token)
        state, note = (JobState.CANCELLED, CANCEL_NOTE) if self.cancel_requested else outcome(error)
        self.ended_as = state
        if state is JobState.DELIVERED and (pushed := self.pushed) is not None:
            return calls.deliver(
                job.id, self.worker, pushed.branch, pushed.head, pushed.base_branch, pushed.base,
                job.claim_token, note, pushed.draft,
            )  # fmt: skip
        if not isinstance(error, STOPPING) and self.then_claim is not None and self.then_claim():
            self._claims_next = True
            return calls.finish_and_claim(
                job.id, state, self.worker, self.lanes, self.lease, job.claim_token, note
            )
        return calls.transition(job.id, state, self.worker, note, job.claim_token)

    def _ended(self, answer: Job | None) -> None:
        """Record the finish's answer: the next job (finish_and_claim) or the finished one."""
        if self._claims_next:
            self.next = answer
        else:
            self.finished = answer

    @staticmethod
    def _swallowed(error: BaseException | None) -> bool:
        """__exit__'s answer: Release and ShuttingDown end the block quietly."""
        return isinstance(error, (Release, ShuttingDown))

    @contextlib.contextmanager
    def _finishing(self, job: Job) -> Iterator[None]:
        """A finish refused because the worker no longer holds the job: LeaseLost."""
        try:
            yield
        except NotHolder as refused:
            self.lost = True
            raise LeaseLost(job) from refused


class HeldJob(_Holding):
    """`with store.lease(worker, lanes) as job:` — job is the claimed Job or None. A thread renews
    the lease; `on_lost(job)` is called from that thread when a heartbeat answers lost,
    `on_cancel(job)` once when it answers a stop (cancel, or the watchdog's timeout or stalled)."""

    def __init__(
        self,
        run: Runner,
        worker: str,
        lanes: Sequence[str],
        lease: timedelta,
        on_lost: OnLost | None = None,
        on_cancel: OnCancel | None = None,
        job: Job | None = None,
        then_claim: ThenClaim | None = None,
    ) -> None:
        super().__init__(worker, lanes, lease, on_lost, on_cancel, job, then_claim)
        self._run = run
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None

    def __enter__(self) -> Job | None:
        if self.job is None:
            self.job = self._run(self._claim())
        if self.job is not None:
            self._renewer = threading.Thread(
                target=self._renew, args=(self.job,), name=f"renew-job-{self.job.id}", daemon=True
            )
            self._renewer.start()
        return self.job

    def _renew(self, job: Job) -> None:
        answer: Heartbeat | Exception | None = None
        while self._renewed(job, answer) and not self._stop.wait(renewal_interval(self.lease)):
            try:
                answer = self._run(self._renewal(job))
            except Exception as failed:
                answer = failed

    def __exit__(self, kind: object, error: BaseException | None, tb: object) -> bool:
        job = self.job
        if job is None:
            return False
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join()
        with self._finishing(job):
            self._ended(self._run(self._finish(job, error)))
        return self._swallowed(error)


class AsyncHeldJob(_Holding):
    """`async with store.lease(worker, lanes) as job:` — the same as HeldJob, renewing in a task."""

    def __init__(
        self,
        run: AsyncRunner,
        worker: str,
        lanes: Sequence[str],
        lease: timedelta,
        on_lost: OnLost | None = None,
        on_cancel: OnCancel | None = None,
        job: Job | None = None,
        then_claim: ThenClaim | None = None,
    ) -> None:
        super().__init__(worker, lanes, lease, on_lost, on_cancel, job, then_claim)
        self._run = run
        self._renewer: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Job | None:
        if self.job is None:
            self.job = await self._run(self._claim())
        if self.job is not None:
            self._renewer = asyncio.create_task(self._renew(self.job))
        return self.job

    async def _renew(self, job: Job) -> None:
        answer: Heartbeat | Exception | None = None
        while self._renewed(job, answer):
            await asyncio.sleep(renewal_interval(self.lease))
            try:
                answer = await self._run(self._renewal(job))
            except Exception as failed:
                answer = failed

    async def __aexit__(self, kind: object, error: BaseException | None, tb: object) -> bool:
        job = self.job
        if job is None:
            return False
        if self._renewer is not None:
            self._renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewer
        with self._finishing(job):
            self._ended(await self._run(self._finish(job, error)))
        return self._swallowed(error)
