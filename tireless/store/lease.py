"""Holding a job under a lease: claim it, renew it in the background at a third of its length
(tireless.heartbeat), deliver it when the work ends normally, release it for retry when the work
raises, give it back when the runner is stopping (ShuttingDown, KeyboardInterrupt, a cancelled
asyncio task), end it cancelled when a heartbeat says it was asked to stop (the note is the stop's,
chosen by the database), and end it as a failure with the watchdog's note when a heartbeat says
timeout or stalled. The renewer does not wait a third of a lease to hear a stop: it LISTENs on
tireless_stop on a connection of its own and heartbeats at once when its job's id comes, and it
heartbeats when the lane's time limit or progress watchdog may stop the attempt
(tireless.watchdog_due_at).

`JobStore.lease(...)` returns a `HeldJob`, `AsyncJobStore.lease(...)` an `AsyncHeldJob`: context
managers that build the calls claim_next, heartbeat, transition, deliver and give_back
(tireless.store.calls), always with the claim's token, and hand them to the runner the store gives
them, which runs each on a connection of its pool. They share every decision below. The holder
says what it delivers with `held.finish(Delivery(...))` (tireless.deliver: what it pushed) inside
the block; a block that ends without it is finished as its end says. A runner that goes on to claim
passes `then_claim`: when the job is finished and `then_claim()` says to go on, the finish is
tireless.finish_and_claim, or deliver_and_claim (one transaction: the finish, then the next claim),
the job it claimed is `next`, and the runner's next lease holds it (`job=`) instead of claiming
one. Any refusal that says the worker does not hold the job any more (TL004, whatever the job's
state now is) is a lost lease.

A call whose answer was lost (tireless.connect.answer_lost: a failover, a cut connection) is sent again
with the same claim token: a heartbeat after a short, growing pause instead of a third of the lease, the
finish (or give-back) for as long as the lease lasts. The store answers a finish that did commit with the
job as it is now, so the work is never finished twice, and never done again because its finish was lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from datetime import timedelta
from typing import Any, Protocol, TypeVar

from tireless.connect import Backoff, answer_lost
from tireless.errors import NotHolder, UnknownJob
from tireless.models import Delivery, Heartbeat, Job, JobState
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

WAKE_MARGIN = 0.05
"""Seconds past the watchdog's time that the renewer heartbeats, so the heartbeat finds it passed."""


class StopListener(Protocol):
    """A LISTEN on tireless_stop (JobStore.listen_for_stops): the holder's renewer waits on it."""

    def wait(
        self, timeout: float, payload: str | None = None, wakeup: int | None = None
    ) -> str | None: ...


class AsyncStopListener(Protocol):
    """A LISTEN on tireless_stop (AsyncJobStore.listen_for_stops)."""

    async def wait(self, timeout: float, payload: str | None = None) -> str | None: ...


ListenForStops = Callable[[], AbstractContextManager[StopListener]]
AsyncListenForStops = Callable[[], AbstractAsyncContextManager[AsyncStopListener]]


NOT_HELD: tuple[type[Exception], ...] = (NotHolder, UnknownJob)
"""Refusals that say the worker holds the job no more: another claim has it (TL004), or there is
no such job (TL001: a failover to a standby that never had it)."""


class Release(Exception):
    """Raise it inside a lease to release the job for retry with `str(exception)` as the note.
    The lease swallows it; any other exception also releases the job, then propagates (but see
    ShuttingDown)."""


class Fail(Release):
    """Raise it inside a lease to end the job failed at once with `str(exception)` as the note,
    whatever attempts it has left: another attempt would fare no better (its budget is spent)."""


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
    """Where a leased job goes when the work ends: delivered, failed (Fail), or back to pending
    with a note."""
    if error is None:
        return JobState.DELIVERED, None
    if isinstance(error, Fail):
        return JobState.FAILED, reason(error)
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
        self._done = False  # finish() ended the job: the block's end finishes nothing
        self.held_until: float | None = None
        """time.monotonic() by which the claim ends unless renewed: from when the claim or the last
        renewal that answered was sent. Calls whose answer was lost are sent again until then."""
        self._renewal_retry = Backoff()
        self._renewal_failing = False
        self._finish_retry = Backoff()

    def _holding_from(self, sent_at: float) -> None:
        """A claim or renewal sent at `sent_at` (time.monotonic()) was answered: it holds a lease
        from no earlier than then."""
        self.held_until = sent_at + self.lease.total_seconds()

    def _claim(self) -> Call[Job, Job | None]:
        return calls.claim_next(self.worker, self.lanes, self.lease)

    def _renewal(self, job: Job) -> Call[Any, Heartbeat]:
        """The heartbeat of the job by its holder, for the lease's length, with the claim's token."""
        return calls.heartbeat(job.id, self.worker, self.lease, job.claim_token)

    def _watching(self) -> bool:
        """Whether the next heartbeat may have to come before a third of the lease, at the time
        the watchdog may stop the attempt: not once a stop was heard or the lease was lost."""
        return not (self.cancel_requested or self.watchdog_stop is not None or self.lost)

    def _pause(self, watchdog_due_in: float | None) -> float:
        """Seconds until the next heartbeat: a third of the lease, or just past the time the
        lane's max_run or stall_after may stop the attempt when that comes first."""
        interval = renewal_interval(self.lease)
        if self._renewal_failing:  # try again soon: two failures in a row must not end the lease
            interval = min(interval, self._renewal_retry.next())
        if watchdog_due_in is None:
            return interval
        return min(interval, max(watchdog_due_in, 0.0) + WAKE_MARGIN)

    def _renewed(self, job: Job, answer: Heartbeat | Exception | None) -> bool:
        """Record a heartbeat's answer (None: none yet; an exception: it failed, try again at the
        next interval); False means stop renewing."""
        if isinstance(answer, Exception) and not isinstance(answer, NOT_HELD):
            if not self._renewal_failing:  # one line per outage, not one per try
                log.warning("renewing the lease on job %s failed (%s); trying again", job.id,
                            str(answer).strip() or type(answer).__name__)  # fmt: skip
            self._renewal_failing = True
            return True
        if isinstance(answer, Exception) or answer is Heartbeat.LOST:  # refused: NOT_HELD
            self.lost = True
            log.debug("lost the lease on job %s", job.id)
            if self.on_lost is not None:
                self.on_lost(job)
            return False
        if self._renewal_failing:
            log.info("renewed the lease on job %s again", job.id)
        self._renewal_failing = False
        self._renewal_retry.reset()
        if answer is None or answer is Heartbeat.HELD:
            return True
        if answer is Heartbeat.CANCEL:
            if not self.cancel_requested:  # renewals go on while the work stops
                self.cancel_requested = True
                log.debug("job %s: asked to stop", job.id)
                if self.on_cancel is not None:
                    self.on_cancel(job)
            return True
        if answer.is_watchdog_stop and self.watchdog_stop is None:  # renewals go on meanwhile
            self.watchdog_stop = answer
            log.info("job %s: the watchdog stopped its attempt (%s)", job.id, answer)
            if self.on_cancel is not None:
                self.on_cancel(job)
        return True

    def _finish(
        self, job: Job, error: BaseException | None, delivery: Delivery | None = None
    ) -> Call[Job, Job | None]:
        """The call that ends the job once the renewals have stopped: give_back when the runner
        stops, else a transition (deliver when the holder finished with a delivery), or
        finish_and_claim (deliver_and_claim) when then_claim says the runner goes on; LeaseLost if
        a renewal lost the job."""
        if self.lost:
            raise LeaseLost(job) from error
        if not self.cancel_requested:  # a cancel ends the job cancelled, however the work ended
            if self.watchdog_stop is not None:
                return calls.end_stopped_attempt(job.id, self.worker, job.claim_token)
            if isinstance(error, STOPPING):
                self.given_back = True
                return calls.give_back(job.id, self.worker, reason(error), job.claim_token)
        # A cancel heard once the work was delivered (pushed) came too late to stop it: the job is
        # delivered, and the database notes the late stop. A cancelled job's note is the stop's.
        cancelled = self.cancel_requested and (error is not None or delivery is None)
        state, note = (JobState.CANCELLED, None) if cancelled else outcome(error)
        self.ended_as = state
        self._claims_next = (
            not isinstance(error, STOPPING) and self.then_claim is not None and self.then_claim()
        )
        if state is JobState.DELIVERED and delivery is not None:
            if self._claims_next:
                return calls.deliver_and_claim(
                    job.id, self.worker, self.lanes, self.lease, delivery, job.claim_token, note
                )
            return calls.deliver(
                job.id, self.worker, delivery.branch, delivery.head, delivery.base_branch,
                delivery.base, job.claim_token, note, delivery.draft,
            )  # fmt: skip
        if self._claims_next:
            return calls.finish_and_claim(
                job.id, state, self.worker, self.lanes, self.lease, job.claim_token, note
            )
        return calls.transition(job.id, state, self.worker, note, job.claim_token)

    def _finishing_now(self) -> Job:
        """The held job that finish() ends; ValueError when there is none or it was finished."""
        if self.job is None or self._done:
            raise ValueError("finish() ends a held job once, inside its lease's block")
        self._done = True
        return self.job

    def _finish_again_in(self, job: Job, error: Exception) -> float | None:
        """Seconds to wait before sending the finish again after it failed with `error`; None
        when it must not be: the answer was not lost, or the lease will have run out by then."""
        if not answer_lost(error):
            return None
        first = self._finish_retry.tries == 0
        wait = self._finish_retry.next()
        if self.held_until is None or time.monotonic() + wait >= self.held_until:
            return None
        if first:
            log.warning(
                "job %s: the answer to its finish was lost (%s); sending it again while the lease lasts",
                job.id, str(error).strip() or type(error).__name__,
            )  # fmt: skip
        return wait

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
        """A finish refused because the worker no longer holds the job (NOT_HELD): LeaseLost."""
        try:
            yield
        except NOT_HELD as refused:
            self.lost = True
            raise LeaseLost(job) from refused


class HeldJob(_Holding):
    """`with store.lease(worker, lanes) as job:` — job is the claimed Job or None. A thread renews
    the lease; `on_lost(job)` is called from that thread when a heartbeat answers lost,
    `on_cancel(job)` once when it answers a stop (cancel, or the watchdog's timeout or stalled).
    With `listen` (JobStore.listen_for_stops) the thread also hears a stop at once."""

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
        listen: ListenForStops | None = None,
    ) -> None:
        super().__init__(worker, lanes, lease, on_lost, on_cancel, job, then_claim)
        self._run = run
        self._listen = listen
        self._stop = threading.Event()
        self._wakeup: tuple[int, int] | None = None  # a pipe: a byte in it ends the renewer's wait
        self._renewer: threading.Thread | None = None

    def __enter__(self) -> Job | None:
        sent_at = time.monotonic()
        if self.job is None:
            self.job = self._run(self._claim())
        if self.job is not None:
            self._holding_from(sent_at)
            if self._listen is not None:
                self._wakeup = os.pipe()
            self._renewer = threading.Thread(
                target=self._renew, args=(self.job,), name=f"renew-job-{self.job.id}", daemon=True
            )
            self._renewer.start()
        return self.job

    def _renew(self, job: Job) -> None:
        with self._listening(job) as stops:
            # A stop asked before the LISTEN began sent nothing it hears: the first heartbeat is now.
            answer = None if stops is None else self._heartbeat(job)
            while self._renewed(job, answer):
                stops = self._wait(job, stops)
                if self._stop.is_set():
                    return
                answer = self._heartbeat(job)

    def _heartbeat(self, job: Job) -> Heartbeat | Exception:
        sent_at = time.monotonic()
        try:
            answer = self._run(self._renewal(job))
        except Exception as failed:
            return failed
        if answer is not Heartbeat.LOST:
            self._holding_from(sent_at)
        return answer

    def _run_until_answered(self, job: Job, call: Call[Any, Answer]) -> Answer:
        """Run the finish, sending it again while its answer is lost and the lease lasts."""
        while True:
            try:
                return self._run(call)
            except Exception as failed:
                wait = self._finish_again_in(job, failed)
                if wait is None:
                    raise
                time.sleep(wait)

    def _wait(self, job: Job, stops: StopListener | None) -> StopListener | None:
        """Wait until the next heartbeat is due, a stop of the job is announced or the lease ends;
        the listener to wait on next time (None once it failed)."""
        due_in = None
        if self._watching():
            with contextlib.suppress(Exception):  # the heartbeat after the pause reports failures
                due_in = self._run(calls.watchdog_due_in(job.id))
        seconds = self._pause(due_in)
        if stops is not None and self._wakeup is not None:
            try:
                stops.wait(seconds, str(job.id), self._wakeup[0])
                return stops
            except Exception:
                log.warning(
                    "job %s: listening for a stop failed; it is heard at the next renewal",
                    job.id, exc_info=True,
                )  # fmt: skip
        self._stop.wait(seconds)
        return None

    @contextlib.contextmanager
    def _listening(self, job: Job) -> Iterator[StopListener | None]:
        """A LISTEN for stops on a connection of its own; None without `listen` or when it could not
        start (then the renewals alone carry a stop, as before)."""
        if self._listen is None:
            yield None
            return
        try:
            listening = self._listen()
            stops = listening.__enter__()
        except Exception:
            log.warning("job %s: cannot listen for a stop; it is heard at the next renewal", job.id)
            yield None
            return
        try:
            yield stops
        finally:
            with contextlib.suppress(Exception):  # a connection that died has nothing to unlisten
                listening.__exit__(None, None, None)

    def finish(self, delivery: Delivery | None = None) -> None:
        """End the job now: delivered, recording `delivery` (what the work pushed; a Delivery with
        no branch: it changed nothing) with tireless.deliver, or deliver_and_claim when the runner
        goes on (then_claim); without a delivery as the block's normal end would. A stop heard
        before it decides as at the block's end (a cancel after the push comes too late: the job
        is delivered). The block's end then finishes nothing; `finished` and `next` say how it
        ended. LeaseLost when the lease was lost."""
        job = self._finishing_now()
        self._stop_renewing()
        with self._finishing(job):
            self._ended(self._run_until_answered(job, self._finish(job, None, delivery)))

    def _stop_renewing(self) -> None:
        self._stop.set()
        if self._wakeup is not None:
            os.write(self._wakeup[1], b"x")
        if self._renewer is not None:
            self._renewer.join()
        if self._wakeup is not None:
            for fd in self._wakeup:
                os.close(fd)
            self._wakeup = None

    def __exit__(self, kind: object, error: BaseException | None, tb: object) -> bool:
        job = self.job
        if job is None or self._done:
            return False
        self._done = True
        self._stop_renewing()
        with self._finishing(job):
            self._ended(self._run_until_answered(job, self._finish(job, error)))
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
        listen: AsyncListenForStops | None = None,
    ) -> None:
        super().__init__(worker, lanes, lease, on_lost, on_cancel, job, then_claim)
        self._run = run
        self._listen = listen
        self._renewer: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Job | None:
        sent_at = time.monotonic()
        if self.job is None:
            self.job = await self._run(self._claim())
        if self.job is not None:
            self._holding_from(sent_at)
            self._renewer = asyncio.create_task(self._renew(self.job))
        return self.job

    async def _renew(self, job: Job) -> None:
        async with self._listening(job) as stops:
            # A stop asked before the LISTEN began sent nothing it hears: the first heartbeat is now.
            answer = None if stops is None else await self._heartbeat(job)
            while self._renewed(job, answer):
                stops = await self._wait(job, stops)
                answer = await self._heartbeat(job)

    async def _heartbeat(self, job: Job) -> Heartbeat | Exception:
        sent_at = time.monotonic()
        try:
            answer = await self._run(self._renewal(job))
        except Exception as failed:
            return failed
        if answer is not Heartbeat.LOST:
            self._holding_from(sent_at)
        return answer

    async def _run_until_answered(self, job: Job, call: Call[Any, Answer]) -> Answer:
        """HeldJob._run_until_answered."""
        while True:
            try:
                return await self._run(call)
            except Exception as failed:
                wait = self._finish_again_in(job, failed)
                if wait is None:
                    raise
                await asyncio.sleep(wait)

    async def _wait(self, job: Job, stops: AsyncStopListener | None) -> AsyncStopListener | None:
        """HeldJob._wait: until the next heartbeat, or a stop of the job (the lease's end cancels
        the task)."""
        due_in = None
        if self._watching():
            with contextlib.suppress(Exception):  # the heartbeat after the pause reports failures
                due_in = await self._run(calls.watchdog_due_in(job.id))
        seconds = self._pause(due_in)
        if stops is not None:
            try:
                await stops.wait(seconds, str(job.id))
                return stops
            except Exception:
                log.warning(
                    "job %s: listening for a stop failed; it is heard at the next renewal",
                    job.id, exc_info=True,
                )  # fmt: skip
        await asyncio.sleep(seconds)
        return None

    @contextlib.asynccontextmanager
    async def _listening(self, job: Job) -> AsyncIterator[AsyncStopListener | None]:
        """HeldJob._listening."""
        if self._listen is None:
            yield None
            return
        try:
            listening = self._listen()
            stops = await listening.__aenter__()
        except Exception:
            log.warning("job %s: cannot listen for a stop; it is heard at the next renewal", job.id)
            yield None
            return
        try:
            yield stops
        finally:
            with contextlib.suppress(Exception):  # a connection that died has nothing to unlisten
                await listening.__aexit__(None, None, None)

    async def finish(self, delivery: Delivery | None = None) -> None:
        """HeldJob.finish: end the job now, delivered with `delivery` when given."""
        job = self._finishing_now()
        await self._stop_renewing()
        with self._finishing(job):
            self._ended(await self._run_until_answered(job, self._finish(job, None, delivery)))

    async def _stop_renewing(self) -> None:
        if self._renewer is not None:
            self._renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewer

    async def __aexit__(self, kind: object, error: BaseException | None, tb: object) -> bool:
        job = self.job
        if job is None or self._done:
            return False
        self._done = True
        await self._stop_renewing()
        with self._finishing(job):
            self._ended(await self._run_until_answered(job, self._finish(job, error)))
        return self._swallowed(error)
