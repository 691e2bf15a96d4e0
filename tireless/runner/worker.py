"""`tireless work`: the claim loop. Claim a job, run one attempt at it under a renewed lease
(tireless.runner.attempt: its files, COMMAND, its report), end the job by the outcome, and go on.

Exit 0 delivers the job; any other exit releases it to pending (the store fails it when its
attempts are spent) with the tail of COMMAND's output as the note. A lost lease (a heartbeat
answered lost, or a finish refused as not the holder) stops COMMAND, leaves the job to the store
and goes on to the next job. A heartbeat that answers cancel (the job was asked to stop: its issue
withdrew its request, an admin cancelled it) stops COMMAND and ends the job cancelled with the
stop's note (the database's, not the worker's): a cancel is not a failure. One that answers
timeout or stalled (the lane's max_run or stall_after, the watchdog) stops COMMAND and ends the
attempt as a failure with the watchdog's note; so does a lane's limit COMMAND went past
(tireless.runner.limits), with a note naming it. A lane whose limits the worker cannot enforce is
not served: the worker says so at start and exits 2. A stop is heard at once (the lease LISTENs on
tireless_stop while COMMAND runs), a time limit when it passes. SIGINT or SIGTERM stop COMMAND,
give the job back (tireless.give_back: not a failure) and end the worker (exit 0); a signal that
arrives while a claim is under way gives the claimed job back at once. The drain signal
(--drain-on) lets the running job finish, claims no more, and ends the worker (exit 0). A
connection lost while running (the database restarting) is retried. Built on JobStore.lease: a
worker that goes on finishes each job and claims the next in one call (finish_and_claim); between
jobs it waits on JobStore.listen (LISTEN tireless_work), and at most until the earliest
backed-off job of its lanes is ready (tireless.next_ready_at), since a backoff's end sends no
notification. A COMMAND that cannot be started is the runner's fault: `work` checks it before
claiming, and one that fails to start on a claimed job gives the job back and ends the worker
(exit 5). Its own record in the store (tireless.runner.presence) says when it started, beats
while it runs and says how it stopped, for the workers page.
"""

from __future__ import annotations

import logging
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import psycopg
from psycopg_pool import ConnectionPool

from tireless.connect import WORKER_CALL_DEADLINE, Backoff, FailoverPool, with_defaults
from tireless.credentials import known_secrets, token_variable
from tireless.forge.app_auth import has_app, refresh_apps
from tireless.git import git_auth
from tireless.masking import Masker, MaskingFilter
from tireless.models import Job, JobState
from tireless.runner.agents import COMMAND
from tireless.runner.attempt import Attempts, with_output
from tireless.runner.config import WorkConfig
from tireless.runner.presence import Presence
from tireless.runner.sandbox import Unavailable
from tireless.store import JobStore
from tireless.store.calls import POOL_OPEN_TIMEOUT, POOL_OPTIONS
from tireless.store.lease import Fail, LeaseLost, Release, ShuttingDown

log = logging.getLogger("tireless.work")

WAKE_MARGIN = 0.05  # seconds past a backoff's end, so the claim finds the job ready


CANNOT_START = 5
"""`tireless work`'s exit code when COMMAND cannot be started: the runner's fault, not a job's."""


class Interrupted(BaseException):
    """A signal arrived while the worker was waiting for work."""


class Worker:
    """The claim loop of `tireless work`: claims a job (or takes the one the last finish claimed),
    runs one attempt at it, waits for work between jobs, and stops or drains on a signal."""

    def __init__(self, store: JobStore, config: WorkConfig, masker: Masker) -> None:
        self.store = store
        self.config = config
        self.name = config.name  # in every line it logs
        self.attempts = Attempts(store, config, masker, lambda: self.stop_signal)
        self.stop_signal: str | None = None
        self.drain_signal: str | None = None
        self.cannot_start: str | None = None
        """Why COMMAND failed to start on a claimed job (given back): the worker stops."""
        self._waiting = False
        self._chain = False  # whether a finish also claims the next job (not with --once)
        self._next: Job | None = None  # the job the last finish claimed, to run next
        self._reconnect = Backoff()  # the waits before connecting again after a lost connection

    # The loop
    def run(self) -> int:
        """Work until a signal (exit 0) or, with once, after one job (exit 3 if there was none)."""
        handled = [signal.SIGTERM, signal.SIGINT] + (
            [self.config.drain_on] if self.config.drain_on else []
        )
        for signum in handled:
            signal.signal(signum, self._on_signal)
        try:
            if self.config.once:
                ran = self.run_one()
                return CANNOT_START if self.cannot_start else 0 if ran else 3
            self._chain = True
            while self._going_on():
                self._work_until_disconnected()
        except Interrupted:
            pass
        finally:
            for signum in handled:
                signal.signal(signum, signal.SIG_DFL)
        if self.cannot_start is not None:
            log.error("%s: %s; the job was given back", self.name, self.cannot_start)
            return CANNOT_START
        if self.stop_signal is not None:
            log.info("%s: stopped (%s)", self.name, self.stop_signal)
        else:
            log.info("%s: drained (%s)", self.name, self.drain_signal)
        return 0

    def ended_how(self) -> str:
        """How the loop ended, in a few words (its record in the store says it): the signal that
        stopped it, the drain, --once, or COMMAND that could not start."""
        if self.cannot_start is not None:
            return "COMMAND could not start"
        if self.stop_signal is not None:
            return self.stop_signal
        if self.drain_signal is not None:
            return f"drained on {self.drain_signal}"
        return "--once"

    def _going_on(self) -> bool:
        return self.stop_signal is None and self.drain_signal is None and self.cannot_start is None

    def _work_until_disconnected(self) -> None:
        """Claim and run jobs, waiting for work between them; a lost connection (the database
        restarting, or the LISTEN connection cut off while idle) ends the round after a short,
        growing pause (Backoff), and the next round connects again and claims at once."""
        try:
            with self.store.listen(self.config.lanes) as waiter:
                self._reconnect.reset()
                while self._going_on() or self._next is not None:  # a claimed job is given back
                    if not self.run_one():
                        self._wait(
                            waiter.wait,
                            self._idle_wait(),
                            f"waiting for work in {', '.join(self.config.lanes)}",
                        )
        except psycopg.OperationalError as error:
            message = (
                str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            )
            first = self._reconnect.tries == 0  # one line per outage, not one per try
            why = f"database connection lost ({message}); reconnecting" if first else ""
            self._wait(time.sleep, self._reconnect.next(), why)

    def _idle_wait(self) -> float:
        """Until a job's backoff ends (no notification says so), at most the poll interval."""
        ready_in = self.store.next_ready_in(self.config.lanes)
        return (
            self.config.poll if ready_in is None else min(self.config.poll, ready_in + WAKE_MARGIN)
        )

    def _wait(self, wait: Callable[[float], object], seconds: float, why: str) -> None:
        """Wait (for work, or before connecting again; logs why, unless empty); a stop or drain
        signal interrupts it."""
        if why:
            log.info("%s: %s", self.name, why)
        try:
            self._waiting = True  # from here until the wait ends a signal interrupts it
            if self._going_on():
                wait(seconds)
        finally:
            self._waiting = False

    def run_one(self) -> bool:
        """Claim a job (or take the one the last finish claimed) and run COMMAND on it; False when
        there was nothing to claim."""
        claimed, self._next = self._next, None
        self.attempts.begin()
        held = self.store.lease(
            self.name, self.config.lanes, self.config.lease,
            on_lost=self._lease_lost, on_cancel=self._cancelled,
            job=claimed, then_claim=self._going_on if self._chain else None,
        )  # fmt: skip
        try:
            with held as job:
                if job is None:
                    return False
                if not self._going_on():  # it came while the claim was under way
                    raise ShuttingDown(f"worker stopped by {self.stop_signal or self.drain_signal}")
                log.info(
                    "%s: claimed job %s (%s/%s/%s#%s, %s, lane %s, attempt %s, %s)",
                    self.name, job.id, job.forge, job.owner, job.repo, job.number,
                    job.kind, job.lane, job.attempts, job.attempt_id,
                )  # fmt: skip
                try:
                    code, output, delivered = self.attempts.run(job, held)
                except Unavailable as error:  # a lane's allowlist this worker cannot enforce
                    self.cannot_start = str(error)
                    raise ShuttingDown(self.cannot_start) from error
                except OSError as error:  # the runner's fault: give the job back, then stop
                    what = self.config.command[:1] if self.config.profile == COMMAND else ()
                    program = what[0] if what else self.config.profile
                    self.cannot_start = f"cannot start COMMAND {program!r}: {error}"
                    raise ShuttingDown(self.cannot_start) from error
                if self.stop_signal is not None:
                    raise ShuttingDown(with_output(f"worker stopped by {self.stop_signal}", output))
                if (spent := self.attempts.spent) is not None:  # its gateway refused a request
                    log.info("%s: job %s: %s", self.name, job.id, spent["note"])
                    if spent["spent"] == "day":  # given back, claimed again once the day allows
                        raise ShuttingDown(str(spent["note"]))
                    if spent["spent"] == "attempt":  # a failed attempt: the job may retry
                        raise Release(str(spent["note"]))
                    raise Fail(str(spent["note"]))  # the job's or the issue's: no retry
                if code != 0:
                    log.info("%s: command exited with %s on job %s", self.name, code, job.id)
                    raise Release(output.rstrip() or f"command exited with {code}")
                held.finish(delivered)
        except LeaseLost as lost:
            log.info("%s: lease lost on job %s; not finishing it", self.name, lost.job.id)
            return True
        self._next = held.next
        finished = held.finished
        if finished is None:  # the finish claimed the next job too, and answered with that one
            assert held.job is not None, "a lease that was not lost finished its job"
            ended = "released" if held.ended_as is JobState.PENDING else held.ended_as
            log.info("%s: %s job %s", self.name, ended, held.job.id)
            return True
        if finished.state is JobState.DELIVERED:
            log.info("%s: delivered job %s", self.name, finished.id)
        elif finished.state is JobState.PENDING and held.given_back:
            log.info("%s: gave job %s back: %s", self.name, finished.id, finished.note)
        elif finished.state is JobState.PENDING:
            log.info(
                "%s: released job %s for retry after %s",
                self.name, finished.id, finished.available_at.astimezone().strftime("%H:%M:%S"),
            )  # fmt: skip
        else:
            log.info("%s: job %s %s: %s", self.name, finished.id, finished.state, finished.note)
        return True

    # Events from elsewhere
    def _lease_lost(self, job: Job) -> None:
        """From the renewal thread: the claim is gone, so the work is wasted; stop it."""
        self.attempts.stop_job(f"lease on job {job.id} lost")

    def _cancelled(self, job: Job) -> None:
        """From the renewal thread: the job was asked to stop (the lease ends it cancelled) or the
        watchdog stopped the attempt (the lease ends it as a failure)."""
        self.attempts.stop_job(f"job {job.id}: its heartbeat said stop")

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if signum == self.config.drain_on:
            self.drain_signal = name  # the running job goes on; no other is claimed
        else:
            self.stop_signal = name
            self.attempts.stop_command(f"worker got {name}")
        if self._waiting:
            raise Interrupted(name)


def work(conninfo: str, config: WorkConfig) -> int:
    """`tireless work`: the exit code. Raises psycopg.OperationalError if the database cannot be
    reached at the start (later, a lost connection is retried), Unavailable when a lane has an
    egress allowlist the sandbox cannot enforce. COMMAND runs as the config's agent user when it
    names one; every secret the worker knows (the upstreams' too) is masked in what it logs and
    passes on."""
    name = config.name
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    masker = Masker([*known_secrets(conninfo), *(upstream.secret for upstream in config.upstreams)])
    for handler in logging.getLogger().handlers:
        handler.addFilter(MaskingFilter(masker))
    log.info("%s: containment: %s", name, config.sandbox.describe())
    if config.publisher is None and config.directory is not None:
        log.info(
            "%s: without --deliver nothing is pushed: COMMAND runs in this worker's directory"
            " (%s), not in a workspace of the issue's repository",
            name,
            config.directory,
        )
    elif config.publisher is None:
        log.info(
            "%s: without --deliver nothing is pushed: COMMAND runs in an empty directory of each"
            " job's own (TIRELESS_WORKSPACE, removed when the job ends), as it may not write in"
            " this worker's directory (%s); not in a workspace of the issue's repository",
            name,
            Path.cwd(),
        )
    psycopg.connect(with_defaults(conninfo)).close()  # unreachable: fail now, not in the pool
    # One connection listens for work, one for a stop of the running job, one renews, one claims
    # and finishes, one beats (the worker's own record); each is checked before use, so a connection the database dropped (a restart)
    # is replaced instead of failing a call.
    # Each call waits WORKER_CALL_DEADLINE at most: a hung primary is left for the promoted standby.
    options = POOL_OPTIONS | {"max_size": 5, "check": ConnectionPool.check_connection}
    pool = FailoverPool(conninfo, deadline=WORKER_CALL_DEADLINE, open=False, **options)
    pool.open(wait=True, timeout=POOL_OPEN_TIMEOUT)
    try:
        store = JobStore(pool)
        config.sandbox.hide([a.app_key_file for a in store.forge_apps() if a.app_key_file])
        if config.publisher is not None:
            config.publisher.identities.forges = store.forges  # whose account commits, per forge
            refresh_apps(store)  # the forges of a GitHub App mint their installations' tokens
            for forge in store.forges():
                if not has_app(forge.name) and git_auth(forge.name) is None:
                    log.warning(
                        "%s: no token for forge %s (set %s or %s_FILE): its jobs are released",
                        name, forge.name, token_variable(forge.name), token_variable(forge.name),
                    )  # fmt: skip
        worker = Worker(store, config, masker)
        worker.attempts.announce_network()
        worker.attempts.find_cgroups()
        try:
            worker.attempts.announce_limits()
            with Presence(store, config) as presence:  # a worker that dies says nothing: lost
                code = worker.run()
                presence.stopped(worker.ended_how())
                return code
        finally:
            if worker.attempts.cgroups is not None:
                worker.attempts.cgroups.close()
    finally:
        pool.close()
