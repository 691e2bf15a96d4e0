"""`tireless work`: claim a job, run COMMAND on it under a renewed lease, report the outcome.

COMMAND gets the job in TIRELESS_* environment variables and as JSON on stdin, and none of the
worker's secrets: every libpq PG* variable, DATABASE_URL(_FILE), every other TIRELESS_* variable
(forge tokens, webhook secrets) and systemd's CREDENTIALS_DIRECTORY are dropped from its
environment; with an agent user (--agent-user) it runs as that Unix user, which can read neither
the worker's credential files nor its /proc. COMMAND runs in a sandbox (tireless.runner.sandbox):
nothing it starts outlives its job; with its lane's egress allowlist, in a network of its own
whose only ways out are the runner's proxy and upstream gateways (tireless.runner.network).
Every secret value the worker knows (the upstreams' too) is masked (`***`) in COMMAND's output,
in the note and in the worker's log (tireless.masking). Exit 0 delivers the job; any other
exit releases it to pending (the store fails it when its attempts are spent) with the tail of COMMAND's output as the note.
A lost lease (a heartbeat answered lost, or a finish refused as not the holder) stops COMMAND,
leaves the job to the store and goes on to the next job. A heartbeat that answers cancel (the
job was asked to stop: its issue withdrew its request, an admin cancelled it) stops COMMAND and
ends the job cancelled with the stop's note (the database's, not the worker's): a cancel is not a
failure. One that answers timeout or stalled (the lane's max_run or stall_after, the watchdog)
stops COMMAND and ends the attempt as a failure with the watchdog's note. A stop is heard at once
(the lease LISTENs on tireless_stop while COMMAND runs), a time limit when it passes. COMMAND also gets its brief (tireless.runner.brief: the issue's URL and body, the API root, the
clone URL) and may leave a report in TIRELESS_REPORT_FILE; its output counts as progress, and a
line `::progress:: TEXT` names its current step (tireless.runner.progress). SIGINT or SIGTERM stop
COMMAND, give the job back (tireless.give_back: not a failure) and end the worker (exit 0); a
signal that arrives while a claim is under way gives the claimed job back at once. The drain signal (--drain-on)
lets the running job finish, claims no more, and ends the worker (exit 0). A connection lost
while running (the database restarting) is retried. Built on JobStore.lease: a worker that goes
on finishes each job and claims the next in one call (finish_and_claim); between jobs it waits on
JobStore.listen (LISTEN tireless_work), and at most until the earliest backed-off job of its lanes
is ready (tireless.next_ready_at), since a backoff's end sends no notification. A COMMAND that
cannot be started is the runner's fault: `work` checks it before claiming, and one that fails to
start on a claimed job gives the job back and ends the worker (exit 5).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import pwd
import re
import select
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType

import psycopg
from psycopg_pool import ConnectionPool

from tireless.connect import WORKER_CALL_DEADLINE, Backoff, FailoverPool, with_defaults
from tireless.credentials import known_secrets, token_variable
from tireless.errors import MalformedPlan, TirelessError
from tireless.git import git_auth
from tireless.masking import Masker, MaskingFilter, OutputMasker
from tireless.models import Delivery, Job, JobBrief, JobState
from tireless.runner.brief import AgentFiles
from tireless.runner.config import WorkConfig
from tireless.runner.egress import AllowEntry, parse_allowlist
from tireless.runner.network import AgentNetwork
from tireless.runner.progress import ProgressReporter
from tireless.runner.publisher import Checkpoints
from tireless.runner.sandbox import Contained, Unavailable, relay_python
from tireless.runner.workspace import Workspace
from tireless.store import JobStore
from tireless.store.calls import POOL_OPEN_TIMEOUT, POOL_OPTIONS
from tireless.store.lease import NOT_HELD, NOTE_LIMIT, HeldJob, LeaseLost, Release, ShuttingDown

log = logging.getLogger("tireless.work")

OUTPUT_KEPT = 4 * NOTE_LIMIT  # bytes of COMMAND's output kept for the note
WAKE_MARGIN = 0.05  # seconds past a backoff's end, so the claim finds the job ready


CANNOT_START = 5
"""`tireless work`'s exit code when COMMAND cannot be started: the runner's fault, not a job's."""


def unstartable(command: Sequence[str]) -> str | None:
    """Why this user cannot start COMMAND (missing, a directory, not executable), or None."""
    program = command[0]
    found = shutil.which(program) if os.sep not in program else program
    if found is None:
        return f"cannot start COMMAND {program!r}: not found on PATH"
    if not os.path.isfile(found):
        return f"cannot start COMMAND {found!r}: no such file"
    if not os.access(found, os.X_OK):
        return f"cannot start COMMAND {found!r}: not executable by this user (uid {os.getuid()})"
    return None


class Interrupted(BaseException):
    """A signal arrived while the worker was waiting for work."""


WITHHELD = re.compile(r"PG[A-Z_]*|DATABASE_URL.*|TIRELESS_.*|CREDENTIALS_DIRECTORY")
"""Environment variables COMMAND never sees: libpq's (PGPASSWORD, PGPASSFILE, PGSERVICE,
PGSERVICEFILE, PGUSER, PGHOST, ..., all named PG...), DATABASE_URL and DATABASE_URL_FILE, every
TIRELESS_ variable of the worker (forge tokens, webhook secrets, their _FILE paths; COMMAND gets
its own TIRELESS_* job variables) and systemd's credentials directory."""


def agent_user(name: str) -> pwd.struct_passwd:
    """The Unix user COMMAND runs as; OSError (a usage error) when it does not exist or the worker
    cannot switch to it (only root can)."""
    try:
        user = pwd.getpwnam(name)
    except KeyError:
        raise OSError(f"--agent-user: no Unix user {name!r}") from None
    if os.geteuid() != 0:
        raise OSError(f"--agent-user {name}: the worker must run as root to run COMMAND as {name}")
    return user


def command_environment(job: Job, agent: pwd.struct_passwd | None = None) -> dict[str, str]:
    """The worker's environment without its credentials, plus the job's TIRELESS_* variables;
    an agent user's own HOME, USER and LOGNAME."""
    kept = {k: v for k, v in os.environ.items() if not WITHHELD.fullmatch(k)}
    if agent is not None:
        kept |= {"HOME": agent.pw_dir, "USER": agent.pw_name, "LOGNAME": agent.pw_name}
    return kept | job_environment(job)


def job_environment(job: Job) -> dict[str, str]:
    """The TIRELESS_* variables COMMAND sees: TIRELESS_ATTEMPT counts the claims, and repeats when
    a claim is lost in a failover; TIRELESS_ATTEMPT_ID names this claim alone (never its token)."""
    assert job.attempt_id is not None, "COMMAND runs for a claimed job"
    return {
        "TIRELESS_JOB_ID": str(job.id),
        "TIRELESS_FORGE": job.forge,
        "TIRELESS_OWNER": job.owner,
        "TIRELESS_REPO": job.repo,
        "TIRELESS_NUMBER": str(job.number),
        "TIRELESS_KIND": str(job.kind),
        "TIRELESS_LANE": job.lane,
        "TIRELESS_ATTEMPT": str(job.attempts),
        "TIRELESS_ATTEMPT_ID": job.attempt_id,
    }


def job_json(job: Job, **brief: object) -> bytes:
    """The job as COMMAND reads it on stdin: the row without its claim token, and its brief."""
    row = dataclasses.asdict(job) | brief
    del row["claim_token"]
    return json.dumps(row, default=str).encode() + b"\n"


def with_output(why: str, output: str) -> str:
    """A note: why, then as much of the tail of COMMAND's output as fits the note."""
    output = output.rstrip()
    room = NOTE_LIMIT - len(why) - 1
    return f"{why}\n{output[-room:]}" if output and room > 0 else why


class Output(threading.Thread):
    """Passes COMMAND's output through to ours with every secret masked, keeping its tail and
    reporting progress (masked too), until its end or until `stop`: once COMMAND's processes are
    gone, what is buffered is taken and nothing more is waited for (a process of the job that
    got out of the sandbox's reach, holding the pipe, delays nothing)."""

    def __init__(
        self, fd: int, masked: OutputMasker, tail: bytearray, progress: ProgressReporter
    ) -> None:
        super().__init__(daemon=True)
        self._fd = fd
        self._masked = masked
        self._tail = tail
        self._progress = progress
        self._wakeup, self._wake = os.pipe()  # written by `stop`

    def run(self) -> None:
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        poller.register(self._wakeup, select.POLLIN)
        try:
            while True:
                ready = dict(poller.poll())
                if self._fd in ready:
                    if not self._pass(os.read(self._fd, 65536)):
                        return
                elif self._wakeup in ready:
                    os.set_blocking(self._fd, False)
                    for _ in range(64):  # bounded: a writer outside the job cannot hold it
                        with contextlib.suppress(BlockingIOError):
                            if self._pass(os.read(self._fd, 65536)):
                                continue
                        return
                    return
        finally:
            self._pass(b"")  # the end: what the masker held back

    def _pass(self, chunk: bytes) -> bool:
        """Pass a chunk on (b"": the end, what the masker held back); False when it was empty."""
        out = self._masked.feed(chunk) if chunk else self._masked.end()
        sys.stdout.buffer.write(out)
        sys.stdout.buffer.flush()
        self._tail.extend(out)
        del self._tail[:-OUTPUT_KEPT]
        self._progress.saw(out)
        return bool(chunk)

    def stop(self) -> None:
        """COMMAND's processes are gone: take what is buffered and end; returns once ended."""
        os.write(self._wake, b"x")
        self.join()
        os.close(self._wakeup)
        os.close(self._wake)


class Worker:
    """The claim loop of `tireless work`: claims a job (or takes the one the last finish claimed),
    runs COMMAND on it, waits for work between jobs, and stops or drains on a signal."""

    def __init__(self, store: JobStore, config: WorkConfig, masker: Masker) -> None:
        self.store = store
        self.config = config
        self.masker = masker
        self._relay_python: str | None = None  # found once a lane's allowlist needs the relay
        self.stop_signal: str | None = None
        self.drain_signal: str | None = None
        self.cannot_start: str | None = None
        """Why COMMAND failed to start on a claimed job (given back): the worker stops."""
        self._waiting = False
        self._lock = threading.RLock()  # the signal handler and the renewal thread stop COMMAND
        self._contained: Contained | None = None  # COMMAND's processes, while its job runs
        self._killer: threading.Timer | None = None
        self._chain = False  # whether a finish also claims the next job (not with --once)
        self._next: Job | None = None  # the job the last finish claimed, to run next
        self._job_stop: str | None = None  # why its lease said the running job must stop
        self._reconnect = Backoff()  # the waits before connecting again after a lost connection

    # The agent's network
    def announce_network(self) -> None:
        """Say once, per lane, what network its agents have; Unavailable (a usage error) when a
        lane has an allowlist this worker cannot enforce."""
        for lane in self.config.lanes:
            hosts = self.store.lane_network(lane)
            if hosts is None:
                log.info(
                    "%s: lane %s has no egress allowlist: its agents have the host's network%s",
                    self.config.name, lane,
                    f" and no upstream (`tireless lane allow-net {lane} --none` gives them only"
                    " their upstreams)" if self.config.upstreams else "",
                )  # fmt: skip
                continue
            self._allowlist(lane, hosts)
            log.info(
                "%s: lane %s: its agents reach %s through the runner's proxy only",
                self.config.name, lane, ", ".join(hosts) or "no host",
            )  # fmt: skip

    def _allowlist(self, lane: str, hosts: Sequence[str]) -> list[AllowEntry]:
        """A lane's allowlist, once the sandbox is known to enforce it (Unavailable otherwise)."""
        if refusal := self.config.sandbox.network_refusal():
            raise Unavailable(f"lane {lane} has an egress allowlist: {refusal}")
        if self._relay_python is None:
            self._relay_python = relay_python(self.config.agent)
        return parse_allowlist(hosts)  # entries as the store checked and normalised them

    @contextlib.contextmanager
    def _network(self, job: Job) -> Iterator[AgentNetwork | None]:
        """The job's network while COMMAND runs (None: the host's, and no upstream); what it saw
        is recorded when it ends, whatever the job's outcome (a refused record is only logged)."""
        hosts = self.store.lane_network(job.lane)
        if hosts is None:
            yield None
            return
        allow = self._allowlist(job.lane, hosts)
        assert self._relay_python is not None  # found by _allowlist
        network = AgentNetwork(allow, self.config.upstreams, self._relay_python)
        try:
            with network:
                yield network
        finally:
            try:
                self.store.record_job_network(
                    job.id, self.config.name, job.claim_token, network.rows()
                )
            except (psycopg.Error, TirelessError) as error:
                log.warning(
                    "%s: job %s: its network use is not recorded: %s",
                    self.config.name,
                    job.id,
                    error,
                )

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
            log.error("%s: %s; the job was given back", self.config.name, self.cannot_start)
            return CANNOT_START
        if self.stop_signal is not None:
            log.info("%s: stopped (%s)", self.config.name, self.stop_signal)
        else:
            log.info("%s: drained (%s)", self.config.name, self.drain_signal)
        return 0

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
            log.info("%s: %s", self.config.name, why)
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
        with self._lock:
            self._job_stop = None
        held = self.store.lease(
            self.config.name, self.config.lanes, self.config.lease, on_lost=self._lease_lost, on_cancel=self._cancelled,
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
                    self.config.name, job.id, job.forge, job.owner, job.repo, job.number,
                    job.kind, job.lane, job.attempts, job.attempt_id,
                )  # fmt: skip
                try:
                    code, output, delivered = self._run_command(job, held)
                except Unavailable as error:  # a lane's allowlist this worker cannot enforce
                    self.cannot_start = str(error)
                    raise ShuttingDown(self.cannot_start) from error
                except OSError as error:  # the runner's fault: give the job back, then stop
                    self.cannot_start = f"cannot start COMMAND {self.config.command[0]!r}: {error}"
                    raise ShuttingDown(self.cannot_start) from error
                if self.stop_signal is not None:
                    raise ShuttingDown(with_output(f"worker stopped by {self.stop_signal}", output))
                if code != 0:
                    log.info("%s: command exited with %s on job %s", self.config.name, code, job.id)
                    raise Release(output.rstrip() or f"command exited with {code}")
                held.finish(delivered)
        except LeaseLost as lost:
            log.info("%s: lease lost on job %s; not finishing it", self.config.name, lost.job.id)
            return True
        self._next = held.next
        finished = held.finished
        if finished is None:  # the finish claimed the next job too, and answered with that one
            assert held.job is not None, "a lease that was not lost finished its job"
            ended = "released" if held.ended_as is JobState.PENDING else held.ended_as
            log.info("%s: %s job %s", self.config.name, ended, held.job.id)
            return True
        if finished.state is JobState.DELIVERED:
            log.info("%s: delivered job %s", self.config.name, finished.id)
        elif finished.state is JobState.PENDING and held.given_back:
            log.info("%s: gave job %s back: %s", self.config.name, finished.id, finished.note)
        elif finished.state is JobState.PENDING:
            log.info(
                "%s: released job %s for retry after %s",
                self.config.name, finished.id, finished.available_at.astimezone().strftime("%H:%M:%S"),
            )  # fmt: skip
        else:
            log.info(
                "%s: job %s %s: %s", self.config.name, finished.id, finished.state, finished.note
            )
        return True

    # COMMAND
    def _run_command(self, job: Job, held: HeldJob) -> tuple[int, str, Delivery | None]:
        """Run COMMAND on the job, in its workspace; its exit code, the tail of its output and
        what the job delivers: when it exits 0 and the job is still the worker's to deliver, its
        change is published (Release: refused, or not pushed), else None."""
        brief = self.store.job_brief(job.id)
        asks = self.store.job_asks(job.id)
        with (
            AgentFiles(job.id, brief, asks, job.kind.value) as files,
            self._workspace(job, brief) as made,
        ):
            if (
                self.config.agent is not None
            ):  # the agent user reads the brief and writes its report there
                for path in (files.body_file.parent, files.body_file):
                    os.chown(path, self.config.agent.pw_uid, self.config.agent.pw_gid)
            checkpoints = None
            if made is not None and self.config.delivery is not None:
                delivery, workspace = self.config.delivery, made
                checkpoints = Checkpoints(
                    lambda last: delivery.checkpoint(job, brief, workspace, last),
                    lambda saved: self.store.record_checkpoint(
                        job.id, self.config.name, saved.ref, saved.head_commit, job.claim_token
                    ),
                    brief.checkpoint_commit,
                )
            try:
                with self._network(job) as network:
                    code, output, draft = self._run_in(
                        job, files, made, None if checkpoints is None else checkpoints.ask, network
                    )
            finally:
                if checkpoints is not None:
                    checkpoints.close()
            self._attach_report(job, files)
            if code == 0 and self._still_delivers(held):
                self._attach_tasks(job, files)  # a bad plan fails the attempt (Release)
            if code == 0 and made is not None and self._still_delivers(held):
                assert self.config.delivery is not None
                return code, output, self.config.delivery.push(
                    job, brief, made, draft,
                    lambda branch, head: self.store.record_push(
                        job.id, self.config.name, branch, head, job.claim_token
                    ),
                )  # fmt: skip
            return code, output, None

    def _workspace(
        self, job: Job, brief: JobBrief
    ) -> contextlib.AbstractContextManager[Workspace | None]:
        """The job's workspace, or none when the worker delivers nothing (COMMAND runs where the
        worker runs)."""
        if self.config.delivery is None:
            return contextlib.nullcontext(None)
        return self.config.delivery.workspace(job, brief)

    def _still_delivers(self, held: HeldJob) -> bool:
        """No stop, cancel, time limit or lost lease came while COMMAND ran: its work is pushed."""
        stopped = held.cancel_requested or held.watchdog_stop is not None or held.lost
        return self.stop_signal is None and not stopped

    def _run_in(
        self,
        job: Job,
        files: AgentFiles,
        workspace: Workspace | None,
        checkpoint: Callable[[], object] | None,
        network: AgentNetwork | None,
    ) -> tuple[int, str, bool]:
        env = command_environment(job, self.config.agent) | files.environment()
        cwd = Path.cwd() if workspace is None else workspace.path
        if workspace is not None:
            env["TIRELESS_WORKSPACE"] = str(workspace.path)
        if network is not None:
            env |= network.environment()
        with self._lock:
            contained = self.config.sandbox.start(
                self.config.command, cwd=cwd, writable=[files.body_file.parent], env=env,
                agent=self.config.agent,  # its user and group, with no group of the worker's
                network=None if network is None else network.isolation,
            )  # fmt: skip
            self._contained = contained
            if self.stop_signal is not None:
                self._stop_command(f"worker stopped by {self.stop_signal}")
            elif self._job_stop is not None:  # heard while the job was being prepared
                self._stop_command(self._job_stop)
        process = contained.process
        assert process.stdin is not None
        assert process.stdout is not None
        tail = bytearray()
        progress = ProgressReporter(
            lambda step: self.store.report_progress(
                job.id, self.config.name, step, job.claim_token
            ),
            self.config.progress_every,
            checkpoint,
        )
        output = Output(process.stdout.fileno(), OutputMasker(self.masker), tail, progress)
        output.start()
        try:
            process.stdin.write(job_json(job, **files.json_fields()))
            process.stdin.close()
        except BrokenPipeError:
            pass  # COMMAND does not read its stdin
        never_ran: OSError | None = None
        try:
            code = process.wait()
            try:
                contained.end()  # nothing of the job is left, whatever it started
            except OSError as error:
                never_ran = error
        finally:
            output.stop()  # what is still buffered, and no more: no process of the job is left
            process.stdout.close()
            progress.close()
            with self._lock:
                self._contained = None
                if self._killer is not None:
                    self._killer.cancel()
                    self._killer = None
        if never_ran is not None:  # its output (the sandbox's) says why
            lines = tail.decode(errors="replace").strip().splitlines()
            raise OSError(lines[-1] if lines else str(never_ran)) from never_ran
        return code, tail.decode(errors="replace")[-NOTE_LIMIT:], progress.draft

    def _attach_report(self, job: Job, files: AgentFiles) -> None:
        """The report COMMAND left, attached to the attempt before it is finished."""
        report = files.report()
        if report is None:
            return
        try:
            masked = self.masker.mask(report)  # the mirror posts it on the issue
            if self.store.attach_report(job.id, self.config.name, masked, job.claim_token):
                log.info(
                    "%s: job %s: the report was cut to the store's limit", self.config.name, job.id
                )
        except NOT_HELD:
            log.info("%s: job %s: lease lost; its report is not kept", self.config.name, job.id)

    def _attach_tasks(self, job: Job, files: AgentFiles) -> None:
        """The plan's (or discovery's) tasks COMMAND left, handed to the store, which checks them:
        a file that is not JSON, too large or refused (MalformedPlan, naming the task and the
        field) fails the attempt with that note."""
        try:
            tasks = files.tasks()
            if tasks is None:
                return
            count = self.store.attach_plan(
                job.id, self.config.name, masked_json(self.masker, tasks), job.claim_token
            )
        except (ValueError, MalformedPlan) as bad:
            raise Release(str(bad)) from None
        except NOT_HELD:
            log.info("%s: job %s: lease lost; its tasks are not kept", self.config.name, job.id)
            return
        log.info("%s: job %s: %s task(s) attached", self.config.name, job.id, count)

    def _stop_command(self, why: str) -> None:
        """SIGTERM every process of COMMAND's now, SIGKILL what remains after the grace period;
        also when COMMAND's top process has exited and something it started has not."""
        with self._lock:
            contained = self._contained
            if contained is None or self._killer is not None:
                return
            log.info("%s: stopping the command: %s", self.config.name, why)
            contained.signal(signal.SIGTERM)
            self._killer = threading.Timer(
                self.config.grace, contained.signal, args=(signal.SIGKILL,)
            )
            self._killer.daemon = True
            self._killer.start()

    # Events from elsewhere
    def _lease_lost(self, job: Job) -> None:
        """From the renewal thread: the claim is gone, so the work is wasted; stop it."""
        self._stop_job(f"lease on job {job.id} lost")

    def _cancelled(self, job: Job) -> None:
        """From the renewal thread: the job was asked to stop (the lease ends it cancelled) or the
        watchdog stopped the attempt (the lease ends it as a failure)."""
        self._stop_job(f"job {job.id}: its heartbeat said stop")

    def _stop_job(self, why: str) -> None:
        """Stop COMMAND now, or as soon as it starts when the job is still being prepared."""
        with self._lock:
            self._job_stop = why
            self._stop_command(why)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if signum == self.config.drain_on:
            self.drain_signal = name  # the running job goes on; no other is claimed
        else:
            self.stop_signal = name
            self._stop_command(f"worker got {name}")
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
    psycopg.connect(with_defaults(conninfo)).close()  # unreachable: fail now, not in the pool
    # One connection listens for work, one for a stop of the running job, one renews, one claims
    # and finishes; each is checked before use, so a connection the database dropped (a restart)
    # is replaced instead of failing a call.
    # Each call waits WORKER_CALL_DEADLINE at most: a hung primary is left for the promoted standby.
    options = POOL_OPTIONS | {"max_size": 4, "check": ConnectionPool.check_connection}
    pool = FailoverPool(conninfo, deadline=WORKER_CALL_DEADLINE, open=False, **options)
    pool.open(wait=True, timeout=POOL_OPEN_TIMEOUT)
    try:
        store = JobStore(pool)
        if config.delivery is not None:
            for forge in store.forges():
                if git_auth(forge.name) is None:
                    log.warning(
                        "%s: no token for forge %s (set %s or %s_FILE): its jobs are released",
                        name, forge.name, token_variable(forge.name), token_variable(forge.name),
                    )  # fmt: skip
        worker = Worker(store, config, masker)
        worker.announce_network()
        return worker.run()
    finally:
        pool.close()


def masked_json(masker: Masker, value: object) -> object:
    """A parsed JSON value with every secret in its strings (keys too) masked: the tasks become
    issues on the forge."""
    if isinstance(value, str):
        return masker.mask(value)
    if isinstance(value, list):
        return [masked_json(masker, item) for item in value]
    if isinstance(value, dict):
        return {masker.mask(str(k)): masked_json(masker, item) for k, item in value.items()}
    return value
