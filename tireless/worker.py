"""`tireless work`: claim a job, run COMMAND on it under a renewed lease, report the outcome.

COMMAND gets the job in TIRELESS_* environment variables and as JSON on stdin. Exit 0 delivers
the job; any other exit releases it to pending (the store fails it when its attempts are spent)
with the tail of COMMAND's output as the note. A lost lease stops COMMAND and leaves the job to
its new holder. SIGINT or SIGTERM stop COMMAND, release the job, and end the worker (exit 0).
Built on JobStore.lease; between jobs it waits on JobStore.listen (LISTEN tireless_work).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from datetime import timedelta
from types import FrameType
from typing import IO

import psycopg
from psycopg_pool import ConnectionPool

from tireless.calls import POOL_OPTIONS
from tireless.lease import NOTE_LIMIT, LeaseLost, Release
from tireless.models import Job, JobState
from tireless.store import JobStore, WorkWaiter

log = logging.getLogger("tireless.work")

OUTPUT_KEPT = 4 * NOTE_LIMIT  # bytes of COMMAND's output kept for the note


class Interrupted(BaseException):
    """A signal arrived while the worker was waiting for work."""


def job_environment(job: Job) -> dict[str, str]:
    """The TIRELESS_* variables COMMAND sees."""
    return {
        "TIRELESS_JOB_ID": str(job.id),
        "TIRELESS_FORGE": job.forge,
        "TIRELESS_OWNER": job.owner,
        "TIRELESS_REPO": job.repo,
        "TIRELESS_NUMBER": str(job.number),
        "TIRELESS_KIND": str(job.kind),
        "TIRELESS_LANE": job.lane,
        "TIRELESS_ATTEMPT": str(job.attempts),
    }


def job_json(job: Job) -> bytes:
    """The job as COMMAND reads it on stdin: the row without its claim token."""
    row = dataclasses.asdict(job)
    del row["claim_token"]
    return json.dumps(row, default=str).encode() + b"\n"


class Worker:
    def __init__(
        self,
        store: JobStore,
        name: str,
        lanes: Sequence[str],
        command: Sequence[str],
        *,
        lease: timedelta,
        poll: float,
        grace: float,
    ) -> None:
        self.store = store
        self.name = name
        self.lanes = list(lanes)
        self.command = list(command)
        self.lease = lease
        self.poll = poll
        self.grace = grace
        self.stop_signal: str | None = None
        self._waiting = False
        self._lock = threading.RLock()  # the signal handler and the renewal thread stop COMMAND
        self._process: subprocess.Popen[bytes] | None = None
        self._killer: threading.Timer | None = None

    # The loop
    def run(self, *, once: bool) -> int:
        """Work until a signal (exit 0) or, with once, after one job (exit 3 if there was none)."""
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        try:
            if once:
                return 0 if self.run_one() else 3
            with self.store.listen(self.lanes) as waiter:
                while self.stop_signal is None:
                    if not self.run_one():
                        self._wait(waiter)
        except Interrupted:
            pass
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
        log.info("%s: stopped (%s)", self.name, self.stop_signal)
        return 0

    def _wait(self, waiter: WorkWaiter) -> None:
        log.info("%s: waiting for work in %s", self.name, ", ".join(self.lanes))
        try:
            self._waiting = True  # from here until the wait ends a signal interrupts it
            if self.stop_signal is None:
                waiter.wait(self.poll)
        finally:
            self._waiting = False

    def run_one(self) -> bool:
        """Claim a job and run COMMAND on it; False when there was nothing to claim."""
        held = self.store.lease(self.name, self.lanes, self.lease, on_lost=self._lease_lost)
        try:
            with held as job:
                if job is None:
                    return False
                log.info(
                    "%s: claimed job %s (%s/%s/%s#%s, %s, lane %s, attempt %s)",
                    self.name, job.id, job.forge, job.owner, job.repo, job.number,
                    job.kind, job.lane, job.attempts,
                )  # fmt: skip
                code, output = self._run_command(job)
                if self.stop_signal is not None:
                    raise Release(f"{output}\nworker stopped by {self.stop_signal}".strip())
                if code != 0:
                    log.info("%s: command exited with %s on job %s", self.name, code, job.id)
                    raise Release(output.rstrip() or f"command exited with {code}")
        except LeaseLost as lost:
            log.info("%s: lease lost on job %s; not finishing it", self.name, lost.job.id)
            return True
        finished = held.finished
        assert finished is not None, "a lease that was not lost finished its job"
        if finished.state is JobState.DELIVERED:
            log.info("%s: delivered job %s", self.name, finished.id)
        elif finished.state is JobState.PENDING:
            log.info(
                "%s: released job %s for retry after %s",
                self.name, finished.id, finished.available_at.astimezone().strftime("%H:%M:%S"),
            )  # fmt: skip
        else:
            log.info("%s: job %s %s: %s", self.name, finished.id, finished.state, finished.note)
        return True

    # COMMAND
    def _run_command(self, job: Job) -> tuple[int, str]:
        """Run COMMAND on the job; its exit code and the tail of its output."""
        env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"} | job_environment(job)
        with self._lock:
            process = subprocess.Popen(
                self.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,  # its own process group: stopping it stops its children
            )
            self._process = process
            if self.stop_signal is not None:
                self._stop_command(f"worker stopped by {self.stop_signal}")
        assert process.stdin is not None
        assert process.stdout is not None
        tail = bytearray()
        reader = threading.Thread(target=self._copy_output, args=(process.stdout, tail))
        reader.start()
        try:
            process.stdin.write(job_json(job))
            process.stdin.close()
        except BrokenPipeError:
            pass  # COMMAND does not read its stdin
        code = process.wait()
        reader.join()
        with self._lock:
            self._process = None
            if self._killer is not None:
                self._killer.cancel()
                self._killer = None
        return code, tail.decode(errors="replace")[-NOTE_LIMIT:]

    @staticmethod
    def _copy_output(stream: IO[bytes], tail: bytearray) -> None:
        """Pass COMMAND's output through to ours, keeping its tail."""
        while chunk := stream.read1(65536):  # type: ignore[attr-defined]
            sys.stdout.buffer.write(chunk)
            sys.stdout.buffer.flush()
            tail.extend(chunk)
            del tail[:-OUTPUT_KEPT]

    def _stop_command(self, why: str) -> None:
        """SIGTERM COMMAND's process group now, SIGKILL after the grace period."""
        with self._lock:
            process = self._process
            if process is None or process.returncode is not None or self._killer is not None:
                return
            log.info("%s: stopping the command: %s", self.name, why)
            self._signal_group(process, signal.SIGTERM)
            self._killer = threading.Timer(
                self.grace, self._signal_group, args=(process, signal.SIGKILL)
            )
            self._killer.daemon = True
            self._killer.start()

    @staticmethod
    def _signal_group(process: subprocess.Popen[bytes], signum: signal.Signals) -> None:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signum)

    # Events from elsewhere
    def _lease_lost(self, job: Job) -> None:
        """From the renewal thread: the claim is gone, so the work is wasted; stop it."""
        self._stop_command(f"lease on job {job.id} lost")

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stop_signal = signal.Signals(signum).name
        if self._waiting:
            raise Interrupted(self.stop_signal)
        self._stop_command(f"worker got {self.stop_signal}")


def work(
    url: str,
    name: str,
    lanes: Sequence[str],
    command: Sequence[str],
    *,
    lease: timedelta,
    once: bool,
    poll: float,
    grace: float,
) -> int:
    """`tireless work`: the exit code. Raises psycopg.OperationalError if the database is gone."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    psycopg.connect(url, connect_timeout=10).close()  # unreachable: fail now, not in the pool
    # One connection listens, one renews, one claims and finishes.
    pool = ConnectionPool(url, open=False, **(POOL_OPTIONS | {"max_size": 3}))
    pool.open(wait=True, timeout=30)
    try:
        worker = Worker(JobStore(pool), name, lanes, command, lease=lease, poll=poll, grace=grace)
        return worker.run(once=once)
    finally:
        pool.close()
