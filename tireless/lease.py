"""Holding a job under a lease: claim it, renew it in the background at a third of its length
(tireless.heartbeat), deliver it when the work ends normally, release it for retry when the work
raises, give it back when the runner is stopping (ShuttingDown, KeyboardInterrupt, a cancelled
asyncio task), and end it cancelled when a heartbeat says its issue withdrew its request.

`JobStore.lease(...)` returns a `Lease`, `AsyncJobStore.lease(...)` an `AsyncLease`; both are
context managers over the store's own claim_next, heartbeat, transition and give_back, always
passing the claim's token, and they share every decision below. Any refusal that says the worker
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
from typing import Protocol
from uuid import UUID

from tireless.errors import NotHolder
from tireless.models import Heartbeat, Job, JobState

log = logging.getLogger(__name__)

NOTE_LIMIT = 4000
"""A release note keeps the last this many characters of the reason."""

OnLost = Callable[[Job], None]
OnCancel = Callable[[Job], None]

CANCEL_NOTE = "issue withdrew its request"
"""The note of a job a lease ends cancelled because a heartbeat answered `cancel`."""


class Release(Exception):
    """Raise it inside a lease to release the job for retry with `str(exception)` as the note.
    The lease swallows it; any other exception also releases the job, then propagates (but see
    ShuttingDown)."""


class ShuttingDown(Exception):
    """Raise it inside a lease when the runner is stopping (a SIGTERM, a deploy): the job is given
    back (tireless.give_back: claimable at once, not a failure, no attempt spent of its budget)
    with `str(exception)` as the note, and the lease swallows it. KeyboardInterrupt, and in an
    AsyncLease a cancelled task, give the job back the same way, then propagate."""


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


@dataclass(frozen=True, slots=True)
class Finish:
    """How a lease ends its job: give_back (the runner stops) or transition, with these arguments."""

    give_back: bool
    job_id: int
    to: JobState
    worker: str
    note: str | None
    token: UUID | None


class _SyncStore(Protocol):
    def claim_next(self, worker: str, lanes: Sequence[str], lease: timedelta) -> Job | None: ...
    def give_back(self, job_id: int, worker: str, note: str | None, token: UUID | None) -> Job: ...
    def heartbeat(
        self, job_id: int, worker: str, lease: timedelta, token: UUID | None
    ) -> Heartbeat: ...
    def transition(
        self,
        job_id: int,
        to: JobState | str,
        worker: str | None,
        note: str | None,
        token: UUID | None,
    ) -> Job: ...


class _AsyncStore(Protocol):
    def claim_next(
        self, worker: str, lanes: Sequence[str], lease: timedelta
    ) -> Awaitable[Job | None]: ...
    def give_back(
        self, job_id: int, worker: str, note: str | None, token: UUID | None
    ) -> Awaitable[Job]: ...
    def heartbeat(
        self, job_id: int, worker: str, lease: timedelta, token: UUID | None
    ) -> Awaitable[Heartbeat]: ...
    def transition(
        self,
        job_id: int,
        to: JobState | str,
        worker: str | None,
        note: str | None,
        token: UUID | None,
    ) -> Awaitable[Job]: ...


class _LeaseBase:
    def __init__(
        self,
        worker: str,
        lanes: Sequence[str],
        lease: timedelta,
        on_lost: OnLost | None,
        on_cancel: OnCancel | None,
    ) -> None:
        self.worker = worker
        self.lanes = list(lanes)
        self.length = lease
        self.on_lost = on_lost
        self.on_cancel = on_cancel
        self.cancel_requested = False
        """True once a heartbeat answered cancel: stop the work; the lease ends the job cancelled."""
        self.job: Job | None = None
        """The job as claimed; None when nothing was claimable."""
        self.finished: Job | None = None
        """The job as the lease left it (delivered, pending or failed); None if it was not finished."""
        self.lost = False
        self.given_back = False
        """True when the lease gave the job back (the runner was stopping)."""

    def _renewal(self, job: Job) -> tuple[int, str, timedelta, UUID | None]:
        """heartbeat's arguments: the job, its holder, the lease's length, the claim's token."""
        return job.id, self.worker, self.length, job.claim_token

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
        self.lost = True
        log.debug("lost the lease on job %s", job.id)
        if self.on_lost is not None:
            self.on_lost(job)
        return False

    def _finish(self, job: Job, error: BaseException | None) -> Finish:
        """How to end the job once the renewals have stopped; LeaseLost if a renewal lost it."""
        if self.lost:
            raise LeaseLost(job) from error
        if self.cancel_requested:
            return Finish(
                False, job.id, JobState.CANCELLED, self.worker, CANCEL_NOTE, job.claim_token
            )
        if isinstance(error, STOPPING):
            self.given_back = True
            return Finish(
                True, job.id, JobState.PENDING, self.worker, reason(error), job.claim_token
            )
        state, note = outcome(error)
        return Finish(False, job.id, state, self.worker, note, job.claim_token)

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


class Lease(_LeaseBase):
    """`with store.lease(worker, lanes) as job:` — job is the claimed Job or None. A thread renews
    the lease; `on_lost(job)` is called from that thread when a heartbeat answers lost,
    `on_cancel(job)` once when it answers cancel."""

    def __init__(
        self,
        store: _SyncStore,
        worker: str,
        lanes: Sequence[str],
        lease: timedelta,
        on_lost: OnLost | None = None,
        on_cancel: OnCancel | None = None,
    ) -> None:
        super().__init__(worker, lanes, lease, on_lost, on_cancel)
        self._store = store
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None

    def __enter__(self) -> Job | None:
        self.job = self._store.claim_next(self.worker, self.lanes, self.length)
        if self.job is not None:
            self._renewer = threading.Thread(
                target=self._renew, args=(self.job,), name=f"renew-job-{self.job.id}", daemon=True
            )
            self._renewer.start()
        return self.job

    def _renew(self, job: Job) -> None:
        answer: Heartbeat | Exception | None = None
        while self._renewed(job, answer) and not self._stop.wait(renewal_interval(self.length)):
            try:
                answer = self._store.heartbeat(*self._renewal(job))
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
            end = self._finish(job, error)
            if end.give_back:
                self.finished = self._store.give_back(end.job_id, end.worker, end.note, end.token)
            else:
                self.finished = self._store.transition(
                    end.job_id, end.to, end.worker, end.note, end.token
                )
        return self._swallowed(error)


class AsyncLease(_LeaseBase):
    """`async with store.lease(worker, lanes) as job:` — the same as Lease, renewing in a task."""

    def __init__(
        self,
        store: _AsyncStore,
        worker: str,
        lanes: Sequence[str],
        lease: timedelta,
        on_lost: OnLost | None = None,
        on_cancel: OnCancel | None = None,
    ) -> None:
        super().__init__(worker, lanes, lease, on_lost, on_cancel)
        self._store = store
        self._renewer: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Job | None:
        self.job = await self._store.claim_next(self.worker, self.lanes, self.length)
        if self.job is not None:
            self._renewer = asyncio.create_task(self._renew(self.job))
        return self.job

    async def _renew(self, job: Job) -> None:
        answer: Heartbeat | Exception | None = None
        while self._renewed(job, answer):
            await asyncio.sleep(renewal_interval(self.length))
            try:
                answer = await self._store.heartbeat(*self._renewal(job))
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
            end = self._finish(job, error)
            if end.give_back:
                self.finished = await self._store.give_back(
                    end.job_id, end.worker, end.note, end.token
                )
            else:
                self.finished = await self._store.transition(
                    end.job_id, end.to, end.worker, end.note, end.token
                )
        return self._swallowed(error)
