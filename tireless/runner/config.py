"""What a worker was told to do (`tireless work`'s flags), checked once by the command line
(tireless.cli.commands) and handed down whole to the claim loop and each attempt."""

from __future__ import annotations

import pwd
import signal
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from tireless.runner.agents import COMMAND
from tireless.runner.gateway import Upstream
from tireless.runner.publisher import Publisher
from tireless.runner.sandbox import Sandbox


@dataclass(frozen=True, slots=True)
class WorkConfig:
    """A worker's settings, each already checked: COMMAND can be started (its program an absolute
    path when it named one from here), the agent user exists and the worker may switch to it, the
    sandbox runs on this host, the publisher's state directory is usable, the upstreams'
    secrets are read."""

    name: str
    """The worker's name (unique per process): claims, leases and workspaces carry it."""
    lanes: tuple[str, ...]
    command: tuple[str, ...]
    """COMMAND; for an agent profile, the CLI's extra arguments (`--agent PROFILE -- ARGS`)."""
    sandbox: Sandbox
    """How COMMAND is contained (tireless.runner.sandbox.choose)."""
    lease: timedelta
    poll: float
    """The longest wait between claims when idle, in seconds."""
    grace: float
    """Seconds from SIGTERM to SIGKILL when COMMAND is stopped."""
    once: bool = False
    """Run at most one job, then end (exit 3 when there was none)."""
    drain_on: signal.Signals | None = None
    progress_every: float = 30.0
    agent: pwd.struct_passwd | None = None
    """The Unix user COMMAND runs as; None: the worker's."""
    publisher: Publisher | None = None
    """The workspaces and the trusted push (`--deliver`); None: COMMAND runs in `directory`."""
    directory: Path | None = None
    """Without --deliver, COMMAND's working directory: the worker's, when COMMAND may write it
    (tireless.runner.attempt.writable_directory); None: an empty directory of each job's own
    (TIRELESS_WORKSPACE), removed with the job."""
    upstreams: tuple[Upstream, ...] = ()
    """The services COMMAND reaches through the runner's gateways (`work --upstream`)."""
    profile: str = COMMAND
    """The agent CLI (tireless.runner.agents) for the lanes that name none; `command`: COMMAND."""
    agent_bins: tuple[tuple[str, str], ...] = ()
    """A profile's program where it is not on PATH (`--agent-bin [PROFILE=]PATH`)."""

    def agent_bin(self, profile: str) -> str | None:
        return dict(self.agent_bins).get(profile)
