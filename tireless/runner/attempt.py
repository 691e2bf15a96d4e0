"""One attempt of `tireless work` at a claimed job: its files, its workspace and network, COMMAND,
its report. The claim loop around it is tireless.runner.worker.

COMMAND gets the job in TIRELESS_* environment variables and as JSON on stdin, and none of the
worker's secrets: every libpq PG* variable, DATABASE_URL(_FILE), every other TIRELESS_* variable
(forge tokens, webhook secrets) and systemd's CREDENTIALS_DIRECTORY are dropped from its
environment; with an agent user (--agent-user) it runs as that Unix user, which can read neither
the worker's credential files nor its /proc. COMMAND runs in a sandbox (tireless.runner.sandbox):
nothing it starts outlives its job; with its lane's egress allowlist, in a network of its own
whose only ways out are the runner's proxy and upstream gateways (tireless.runner.network); in a
control group of the attempt's own, held to its lane's limits, where the host has one
(tireless.runner.limits): past a limit its processes are stopped and the attempt fails with a note
naming it, and what it used is recorded with the attempt.
Every secret value the worker knows (the upstreams' too) is masked (`***`) in COMMAND's output,
in the note and in the worker's log (tireless.masking). COMMAND also gets its brief
(tireless.runner.brief: the issue's URL and body, the API root, the clone URL) and may leave a
report in TIRELESS_REPORT_FILE; its output counts as progress, and a line `::progress:: TEXT`
names its current step (tireless.runner.progress). With --deliver it works in a workspace of the
issue's repository, and what an `implement` job changed is published when it exits 0
(tireless.runner.publisher); without it, in the worker's directory, or in an empty directory of
the job's own where it may not write there (writable_directory). A known agent CLI (its lane's
profile, else the worker's `--agent`: tireless.runner.agents) runs in COMMAND's place, its prompt
on stdin, its output read into steps, its final message the report and its own error the note.
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
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import psycopg

from tireless.errors import MalformedPlan, TirelessError
from tireless.masking import Masker, OutputMasker
from tireless.models import Delivery, Job, JobBrief, LaneLimits
from tireless.runner.agents import COMMAND, PROFILES, AgentRun, find_program
from tireless.runner.brief import AgentFiles
from tireless.runner.config import WorkConfig
from tireless.runner.egress import AllowEntry, parse_allowlist
from tireless.runner.ledger import Allowance, Ledger
from tireless.runner.limits import (
    Cgroups,
    Confined,
    Unenforceable,
    Watch,
    confined,
    limit_note,
    limits_text,
)
from tireless.runner.network import AgentNetwork
from tireless.runner.progress import ProgressReporter
from tireless.runner.publisher import Checkpoints
from tireless.runner.sandbox import Contained, Unavailable, relay_python
from tireless.runner.workspace import Workspace
from tireless.store import JobStore
from tireless.store.lease import NOT_HELD, NOTE_LIMIT, HeldJob, Release

log = logging.getLogger("tireless.work")

OUTPUT_KEPT = 4 * NOTE_LIMIT  # bytes of COMMAND's output kept for the note
SPENT_GRACE = 10.0
"""Seconds COMMAND may go on after its gateway refused a request for a spent budget."""


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


def unstartable_by(command: Sequence[str], agent: pwd.struct_passwd) -> str | None:
    """Why the agent user cannot start COMMAND (the program or a directory above it closed to
    it; a script it cannot read), or None: asked of the kernel as that user, through setpriv."""
    found = shutil.which(command[0]) if os.sep not in command[0] else command[0]
    if found is None:
        return None  # unstartable() says it
    with open(found, "rb") as program:
        script = program.read(2) == b"#!"
    test = 'test -x "$1"' + (' && test -r "$1"' if script else "")
    as_agent = ["setpriv", f"--reuid={agent.pw_uid}", f"--regid={agent.pw_gid}", "--init-groups"]
    asked = subprocess.run([*as_agent, "sh", "-c", test, "sh", found], check=False)
    if asked.returncode != 0:
        needs = "read and execute" if script else "execute"
        return (
            f"cannot start COMMAND {found!r}: --agent-user {agent.pw_name} (uid {agent.pw_uid})"
            f" cannot {needs} it, or a directory above it is closed to that user"
        )
    return None


def writable_directory(agent: pwd.struct_passwd | None) -> Path | None:
    """The worker's directory, when COMMAND may write in it (COMMAND's working directory without
    --deliver); None when it may not: `/` (systemd's default, read-only under bwrap), a directory
    the worker or the agent user (asked of the kernel as that user, through setpriv) cannot
    write, or one on a read-only filesystem. COMMAND then runs in its job's own directory."""
    here = Path.cwd()
    if here == Path("/"):
        return None
    if agent is None:
        return here if os.access(here, os.W_OK) else None
    as_agent = ["setpriv", f"--reuid={agent.pw_uid}", f"--regid={agent.pw_gid}", "--init-groups"]
    asked = subprocess.run([*as_agent, "test", "-w", str(here)], check=False)
    return here if asked.returncode == 0 else None


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


def plain_lines(output: str) -> str:
    """A known CLI's output without its JSON events (its reader has said what they hold): what
    it wrote besides, its warnings and errors, for the note."""
    kept = [line for line in output.splitlines() if not line.strip().startswith("{")]
    return "\n".join(line for line in kept if not line.rstrip().endswith("}"))  # a cut event


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


class Attempts:
    """A worker's attempts, one at a time: for a claimed job, its files, workspace and network,
    COMMAND run in the sandbox with its output masked, its report and tasks handed to the store
    and its change published; and COMMAND stopped, on a signal the worker got or a stop its lease
    heard. `signalled` answers the stop signal the worker got, if any."""

    def __init__(
        self,
        store: JobStore,
        config: WorkConfig,
        masker: Masker,
        signalled: Callable[[], str | None],
    ) -> None:
        self.store = store
        self.config = config
        self.name = config.name  # in every line it logs
        self.masker = masker
        self._signalled = signalled
        self._relay_python: str | None = None  # found once a lane's allowlist needs the relay
        self._lock = threading.RLock()  # the signal handler and the renewal thread stop COMMAND
        self._contained: Contained | None = None  # COMMAND's processes, while its job runs
        self._killer: threading.Timer | None = None
        self._job_stop: str | None = None  # why its lease said the running job must stop
        self.cgroups: Cgroups | None = None  # where attempts' control groups go (find_cgroups)
        self._no_cgroups = "its control groups were not looked for"  # why cgroups is None
        self.spent: Allowance | None = None
        """The budget the running job's gateway refused a model request for (tireless.runner.ledger)."""

    # Its limits
    def find_cgroups(self) -> None:
        """Look for the worker's control groups once, at its start: each attempt gets a group of
        its own under them (its limits, its figures), where the sandbox can put COMMAND in one."""
        if self.config.sandbox.limits_refusal(False) is not None:
            self._no_cgroups = str(self.config.sandbox.limits_refusal(False))
            return
        try:
            self.cgroups = Cgroups.find()
        except Unenforceable as lacking:
            self._no_cgroups = f"the host cannot bound an attempt: {lacking}"
            log.info("%s: attempts are not measured: %s", self.name, self._no_cgroups)

    def announce_limits(self) -> None:
        """Say once, per lane with limits, what bounds its agents; Unavailable (a usage error)
        when a lane has a limit this worker cannot enforce."""
        for lane in self.config.lanes:
            limits = self.store.lane_limits(lane)
            if limits.any():
                self._enforceable(lane, limits)
                assert self.cgroups is not None
                log.info(
                    "%s: lane %s: each attempt is held to %s (cgroup v%s)",
                    self.name, lane, limits_text(limits), self.cgroups.version,
                )  # fmt: skip

    def _enforceable(self, lane: str, limits: LaneLimits) -> None:
        """Unavailable naming the limit and what the host or sandbox lacks, unless it is held."""
        refusal = self.config.sandbox.limits_refusal(limits.disk is not None)
        if refusal is None and self.cgroups is None:
            refusal = self._no_cgroups
        if refusal is None and limits.disk is not None and self.config.publisher is None:
            refusal = "--disk bounds the job's workspace, and without --deliver there is none"
        if refusal is not None:
            raise Unavailable(
                f"lane {lane} has limits ({limits_text(limits)}) this worker cannot enforce:"
                f" {refusal}; it does not serve the lane"
            )

    # Its network
    def announce_network(self) -> None:
        """Say once, per lane, what network its agents have; Unavailable (a usage error) when a
        lane has an allowlist this worker cannot enforce."""
        for lane in self.config.lanes:
            hosts = self.store.lane_network(lane)
            if hosts is None:
                log.info(
                    "%s: lane %s has no egress allowlist: its agents have the host's network%s",
                    self.name, lane,
                    f" and no upstream (`tireless lane allow-net {lane} --none` gives them only"
                    " their upstreams)" if self.config.upstreams else "",
                )  # fmt: skip
                continue
            self._allowlist(lane, hosts)
            log.info(
                "%s: lane %s: its agents reach %s through the runner's proxy only",
                self.name, lane, ", ".join(hosts) or "no host",
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
        ledger = None
        if self.config.upstreams:
            ledger = Ledger(
                lambda rows: self.store.record_usage(job.id, self.name, job.claim_token, rows),
                lambda: self.store.usage_allowance(job.id, self.name, job.claim_token),
                self._spent,
                keep=lambda exchange: self.store.record_exchange(
                    job.id, self.name, job.claim_token, dataclasses.asdict(exchange)
                ),
                masker=self.masker,  # the transcript is masked as all output is
            ).start()
        network = AgentNetwork(allow, self.config.upstreams, self._relay_python, ledger)
        try:
            with network:
                yield network
        finally:
            if ledger is not None:
                ledger.close()  # every gateway has stopped: every answer is counted
                with self._lock:
                    self.spent = ledger.spent
            try:
                self.store.record_job_network(job.id, self.name, job.claim_token, network.rows())
            except (psycopg.Error, TirelessError) as error:
                log.warning(
                    "%s: job %s: its network use is not recorded: %s",
                    self.name,
                    job.id,
                    error,
                )

    def _spent(self, note: str) -> None:
        """A budget is spent (the gateway refused a model request): COMMAND has SPENT_GRACE
        seconds to end on its own, having read the refusal, before it is stopped."""
        with self._lock:
            contained = self._contained
        timer = threading.Timer(SPENT_GRACE, self._stop_if_running, args=(contained, note))
        timer.daemon = True
        timer.start()

    def _stop_if_running(self, contained: Contained | None, why: str) -> None:
        with self._lock:
            if contained is not None and self._contained is contained:
                self.stop_command(why)

    # COMMAND
    def begin(self) -> None:
        """A new job: no stop heard for it yet, no budget spent."""
        with self._lock:
            self._job_stop = None
            self.spent = None

    def run(self, job: Job, held: HeldJob) -> tuple[int, str, Delivery | None]:
        """Run COMMAND on the job, in its workspace; its exit code, the tail of its output and
        what the job delivers: when it exits 0 and the job is still the worker's to deliver, its
        change is published (Release: refused, or not pushed), else None."""
        brief = self.store.job_brief(job.id)
        asks = self.store.job_asks(job.id)
        with (
            AgentFiles(job.id, brief, asks, job.kind.value) as files,
            self._workspace(job, brief) as made,
        ):
            where: Workspace | Path | None = made
            if made is None and self.config.directory is None:  # nowhere of the worker's to write
                where = files.own_directory()
            if self.config.agent is not None:  # it reads the brief and writes its report there
                own = [where] if isinstance(where, Path) else []  # a workspace is made its own
                for path in (files.directory, files.body_file, *own):
                    os.chown(path, self.config.agent.pw_uid, self.config.agent.pw_gid)
            checkpoints = None
            if made is not None and self.config.publisher is not None:
                publisher, workspace = self.config.publisher, made
                checkpoints = Checkpoints(
                    lambda last: publisher.checkpoint(job, brief, workspace, last),
                    lambda saved: self.store.record_checkpoint(
                        job.id, self.name, saved.ref, saved.head_commit, job.claim_token
                    ),
                    brief.checkpoint_commit,
                )
            try:
                with self._network(job) as network:
                    agent = self._agent_run(job, files, network)
                    code, output, draft, stopped_by = self._run_in(
                        job, files, where, None if checkpoints is None else checkpoints.ask, network,
                        agent,
                    )  # fmt: skip
            finally:
                if checkpoints is not None:
                    checkpoints.close()
            self._record_exit(job, code)
            report = self._attach_report(job, files, None if agent is None else agent.report())
            if stopped_by is not None:  # the agent's failure: retries and the breaker apply
                raise Release(with_output(stopped_by, output))
            if agent is not None:
                log.info("%s: job %s: %s", self.name, job.id, agent.reader.summary())
                note = agent.note(code)
                if note is not None and self._still_delivers(held):
                    raise Release(with_output(note, plain_lines(output)))
            if code == 0 and self._still_delivers(held):
                self._attach_tasks(job, files)  # a bad plan fails the attempt (Release)
            if code == 0 and made is not None and self._still_delivers(held):
                assert self.config.publisher is not None
                return code, output, self.config.publisher.push(
                    job, brief, made, draft,
                    lambda branch, head: self.store.record_push(
                        job.id, self.name, branch, head, job.claim_token
                    ),
                    report,
                )  # fmt: skip
            return code, output, None

    def _agent_run(
        self, job: Job, files: AgentFiles, network: AgentNetwork | None
    ) -> AgentRun | None:
        """The agent CLI the job runs, ready to start (its home made, its prompt and config
        written): its lane's profile, else the worker's; None for COMMAND. Release when the
        lane's CLI is not on this runner."""
        name = self.store.lane_agent(job.lane) or self.config.profile
        if name == COMMAND and not self.config.command:  # the lane's profile was lifted since
            raise Release(
                f"lane {job.lane} names no agent (tireless lane agent) and this worker has no COMMAND"
            )
        if name == COMMAND:
            return None
        profile = PROFILES[name]
        program = find_program(profile, self.config.agent_bin(name))
        if program is None:
            raise Release(
                f"lane {job.lane} runs {name}, whose program {profile.program!r} is not on this"
                f" runner's PATH (tireless work --agent-bin {name}=PATH)"
            )
        extra = self.config.command if name == self.config.profile else ()
        offered = {} if network is None else network.environment()
        agent = AgentRun(profile, program, extra, job, files, offered)
        user = self.config.agent
        agent.prepare(None if user is None else (user.pw_uid, user.pw_gid))
        return agent

    def _workspace(
        self, job: Job, brief: JobBrief
    ) -> contextlib.AbstractContextManager[Workspace | None]:
        """The job's workspace of the issue's repository, or none when the worker delivers nothing
        (COMMAND runs in the worker's directory, or in an empty one of the job's own)."""
        if self.config.publisher is None:
            return contextlib.nullcontext(None)
        return self.config.publisher.workspace(job, brief)

    def _still_delivers(self, held: HeldJob) -> bool:
        """No stop, cancel, time limit or lost lease came while COMMAND ran: its work is pushed."""
        stopped = held.cancel_requested or held.watchdog_stop is not None or held.lost
        return self._signalled() is None and not stopped

    def _run_in(
        self,
        job: Job,
        files: AgentFiles,
        workspace: Workspace | Path | None,
        checkpoint: Callable[[], object] | None,
        network: AgentNetwork | None,
        agent: AgentRun | None,
    ) -> tuple[int, str, bool, str | None]:
        """COMMAND run for the job in `workspace`, its TIRELESS_WORKSPACE (the issue's repository
        with --deliver, else an empty directory of the job's own), or in the worker's directory:
        its exit code, the tail of its output, whether it asked for a draft, and the note of the
        limit that stopped it (None: none did)."""
        env = command_environment(job, self.config.agent) | files.environment()
        cwd = Path.cwd()
        if workspace is not None:
            cwd = workspace.path if isinstance(workspace, Workspace) else workspace
            env["TIRELESS_WORKSPACE"] = str(cwd)
        if network is not None:
            env |= network.environment()
        if agent is not None:
            env |= agent.environment()
        limits = self.store.lane_limits(job.lane)  # read at each claim, as the allowlist is
        if limits.any():
            self._enforceable(job.lane, limits)
        with confined(self.cgroups, f"job{job.id}.{job.attempts}", limits) as group:
            code, output, draft, reached = self._contain(
                job, files, cwd, env, checkpoint, network, limits, group,
                None if workspace is None else cwd, agent,
            )  # fmt: skip
        return code, output, draft, None if reached is None else limit_note(limits, reached)

    def _contain(
        self,
        job: Job,
        files: AgentFiles,
        cwd: Path,
        env: dict[str, str],
        checkpoint: Callable[[], object] | None,
        network: AgentNetwork | None,
        limits: LaneLimits,
        group: Confined | None,
        workspace: Path | None,
        agent: AgentRun | None,
    ) -> tuple[int, str, bool, str | None]:
        """COMMAND run in the sandbox, in its control group when it has one; what it used is
        recorded when it ends (with the size of `workspace`, the job's own directory it ran in),
        and the limit that stopped it (if one did) returned."""
        command = self.config.command if agent is None else agent.command()
        with self._lock:
            contained = self.config.sandbox.start(
                command, cwd=cwd, writable=[files.body_file.parent], env=env,
                agent=self.config.agent,  # its user and group, with no group of the worker's
                network=None if network is None else network.isolation,
                enter=() if group is None else group.enter(), tmp_size=limits.disk,
            )  # fmt: skip
            self._contained = contained
            if (signalled := self._signalled()) is not None:
                self.stop_command(f"worker stopped by {signalled}")
            elif self._job_stop is not None:  # heard while the job was being prepared
                self.stop_command(self._job_stop)
        process = contained.process
        assert process.stdin is not None
        assert process.stdout is not None
        tail = bytearray()
        progress = ProgressReporter(
            lambda step: self.store.report_progress(job.id, self.name, step, job.claim_token),
            self.config.progress_every,
            checkpoint,
            None if agent is None else agent.reader.line,
        )
        output = Output(process.stdout.fileno(), OutputMasker(self.masker), tail, progress)
        output.start()
        try:
            process.stdin.write(
                job_json(job, **files.json_fields()) if agent is None else agent.stdin()
            )
            process.stdin.close()
        except BrokenPipeError:
            pass  # COMMAND does not read its stdin
        never_ran: OSError | None = None
        watch = Watch(
            limits, group, workspace, contained.init,
            lambda limit: self._limit_reached(job, limit, group),
        )  # fmt: skip
        try:
            with watch:
                code = process.wait()
                try:
                    contained.end()  # nothing of the job is left, whatever it started
                except OSError as error:
                    never_ran = error
        finally:
            output.stop()  # what is still buffered, and no more: no process of the job is left
            process.stdout.close()
            if agent is not None:  # the last step: what the CLI did and spent
                progress.saw(f"::progress:: {agent.reader.summary()}\n".encode())
            progress.close()
            with self._lock:
                self._contained = None
                if self._killer is not None:
                    self._killer.cancel()
                    self._killer = None
        if never_ran is not None:  # its output (the sandbox's) says why
            lines = tail.decode(errors="replace").strip().splitlines()
            raise OSError(lines[-1] if lines else str(never_ran)) from never_ran
        if group is not None or workspace is not None:
            self._record_usage(job, watch)
        return code, tail.decode(errors="replace")[-NOTE_LIMIT:], progress.draft, watch.reached

    def _limit_reached(self, job: Job, limit: str, group: Confined | None) -> None:
        """From the watch: the attempt went past a limit; every process of it is stopped now."""
        log.info("%s: job %s: %s limit reached; stopping the command", self.name, job.id, limit)
        with self._lock:
            if self._contained is not None:
                self._contained.signal(signal.SIGKILL)
        if group is not None:
            group.kill()

    def _record_usage(self, job: Job, watch: Watch) -> None:
        """What the attempt used, recorded before it is finished (a refused record is logged)."""
        try:
            self.store.record_attempt_usage(job.id, self.name, watch.usage(), job.claim_token)
        except NOT_HELD:
            log.info("%s: job %s: lease lost; its usage is not kept", self.name, job.id)
        except (psycopg.Error, TirelessError) as error:
            log.warning("%s: job %s: its usage is not kept: %s", self.name, job.id, error)

    def _record_exit(self, job: Job, code: int) -> None:
        """COMMAND's exit status, recorded in the attempt before it is finished (the job page)."""
        try:
            self.store.record_exit(job.id, self.name, code, job.claim_token)
        except NOT_HELD:
            log.info("%s: job %s: lease lost; its exit status is not kept", self.name, job.id)
        except (psycopg.Error, TirelessError) as error:  # the finish still says how it ended
            log.warning("%s: job %s: its exit status is not kept: %s", self.name, job.id, error)

    def _attach_report(self, job: Job, files: AgentFiles, answer: str | None) -> str | None:
        """The report COMMAND left (else a known CLI's final `answer`), attached to the attempt
        before it is finished; it, masked (the body of the runner's commit), or None."""
        report = files.report() or answer
        if report is None:
            return None
        masked = self.masker.mask(report)  # the mirror posts it on the issue
        try:
            if self.store.attach_report(job.id, self.name, masked, job.claim_token):
                log.info("%s: job %s: the report was cut to the store's limit", self.name, job.id)
        except NOT_HELD:
            log.info("%s: job %s: lease lost; its report is not kept", self.name, job.id)
        return masked

    def _attach_tasks(self, job: Job, files: AgentFiles) -> None:
        """The plan's (or discovery's) tasks COMMAND left, handed to the store, which checks them:
        a file that is not JSON, too large or refused (MalformedPlan, naming the task and the
        field) fails the attempt with that note."""
        try:
            tasks = files.tasks()
            if tasks is None:
                return
            count = self.store.attach_plan(
                job.id, self.name, masked_json(self.masker, tasks), job.claim_token
            )
        except (ValueError, MalformedPlan) as bad:
            raise Release(str(bad)) from None
        except NOT_HELD:
            log.info("%s: job %s: lease lost; its tasks are not kept", self.name, job.id)
            return
        log.info("%s: job %s: %s task(s) attached", self.name, job.id, count)

    def stop_command(self, why: str) -> None:
        """SIGTERM every process of COMMAND's now, SIGKILL what remains after the grace period;
        also when COMMAND's top process has exited and something it started has not."""
        with self._lock:
            contained = self._contained
            if contained is None or self._killer is not None:
                return
            log.info("%s: stopping the command: %s", self.name, why)
            contained.signal(signal.SIGTERM)
            self._killer = threading.Timer(
                self.config.grace, contained.signal, args=(signal.SIGKILL,)
            )
            self._killer.daemon = True
            self._killer.start()

    def stop_job(self, why: str) -> None:
        """Stop COMMAND now, or as soon as it starts when the job is still being prepared (the
        lease lost, a cancel, the watchdog)."""
        with self._lock:
            self._job_stop = why
            self.stop_command(why)


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
