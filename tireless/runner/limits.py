"""Limits: each attempt's processes in a control group of their own, where the kernel bounds their
memory, processes and CPU (docs/runners.md, "Limits"), and what they used, measured from it.

`Cgroups.find` finds the worker's own control groups at its start (cgroup v2: the one unified
hierarchy; v1: the memory, pids, cpu and cpuacct controllers, each in its own hierarchy or
together), checks that it may make groups under them, and removes what a worker killed before it
left there. `Cgroups.attempt` makes an attempt's group (`Confined`): its limits written, the
command line prefix through which COMMAND's first process joins it before it executes anything
(so no process of COMMAND's tree is ever outside it), the limit it reached, what it used, and its
removal. `Watch` polls a running attempt: a limit reached stops it at once, and the disk limit is
the workspace's size and the sandbox's /tmp together; a limit the kernel enforced before the watch
looked (COMMAND gave up at a refused fork and ended) is found when COMMAND ends."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tireless.models import AttemptUsage, LaneLimits, size_text

ROOT = Path("/sys/fs/cgroup")
V1_CONTROLLERS = ("memory", "pids", "cpu", "cpuacct")
V2_CONTROLLERS = ("memory", "pids", "cpu")
CPU_PERIOD = 100_000  # microseconds: the CFS period a CPU limit is a share of
TREE = "tireless"
"""The directory under the worker's own control group that holds each worker's attempts' groups."""
WATCH_EVERY = 0.2
"""Seconds between two looks at a running attempt's control group (its limits reached, its peak)."""
DISK_EVERY = 1.0
"""Seconds between two measures of the workspace's size (a walk of its files)."""
TMP_FULL = 64 << 10
"""A private /tmp with less room than this left is full: a write went past the disk limit."""
ENTER = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done; exec "$@"'
"""sh: write its own pid into each control group's cgroup.procs named, then become COMMAND."""


def limit_note(limits: LaneLimits, reached: str) -> str:
    """The note of an attempt a limit stopped, naming it."""
    if reached == "memory":
        assert limits.memory is not None
        return f"out of memory: limit {size_text(limits.memory)}"
    if reached == "pids":
        return f"process limit {limits.pids} reached"
    assert limits.disk is not None
    return f"disk limit {size_text(limits.disk)} exceeded"


def limits_text(limits: LaneLimits) -> str:
    """A lane's limits in a line: `memory 512 MiB, pids 128`."""
    parts = [] if limits.memory is None else [f"memory {size_text(limits.memory)}"]
    parts += [] if limits.cpus is None else [f"cpus {limits.cpus:g}"]
    parts += [] if limits.pids is None else [f"pids {limits.pids}"]
    parts += [] if limits.disk is None else [f"disk {size_text(limits.disk)}"]
    return ", ".join(parts)


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _number(path: Path) -> int | None:
    text = _read(path)
    return int(text.split()[0]) if text and text.split()[0].isdigit() else None


def _keyed(path: Path, key: str) -> int:
    """The value of `key` in a flat keyed file (memory.events, pids.events, oom_control)."""
    for line in (_read(path) or "").splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return 0


def own_cgroups(proc: Path = Path("/proc/self")) -> tuple[int, dict[str, Path]]:
    """This process's control groups: (2, {"": the unified group's directory}) on a cgroup v2
    host, else (1, the directory of each v1 controller's group, from /proc/self/mountinfo)."""
    memberships = {}
    for line in (proc / "cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        for name in names.split(",") if names else [""]:
            memberships[name] = path.lstrip("/")
    if (ROOT / "cgroup.controllers").exists():
        return 2, {"": ROOT / memberships.get("", "")}
    found: dict[str, Path] = {}
    for line in (proc / "mountinfo").read_text().splitlines():
        mount, _, rest = line.partition(" - ")
        kind, _, options = rest.split(" ", 2)
        if kind != "cgroup":
            continue
        point = Path(mount.split()[4])
        for name in options.split(","):
            if name in V1_CONTROLLERS and name in memberships:
                found.setdefault(name, point / memberships[name])
    return 1, found


def worker_directory(pid: int) -> str:
    """The directory of a worker's attempts' groups: its PID and its PID namespace, so a worker
    removes only what a dead worker of its own namespace left (a PID it cannot see in another
    namespace is not a dead one)."""
    namespace = os.readlink("/proc/self/ns/pid").partition("[")[2].rstrip("]")
    return f"w{pid}@{namespace}"


class Unenforceable(Exception):
    """What the host lacks to make an attempt's control group (said when a lane needs one)."""


@dataclass
class Cgroups:
    """The worker's control groups to make its attempts' groups in: `version` 1 or 2, `bases` the
    directory (per v1 controller, or "" for v2) where this worker's attempts' groups go."""

    version: int
    bases: dict[str, Path]

    @classmethod
    def find(cls) -> Cgroups:
        """This worker's, checked writable (a directory of its own made in each), with what a
        killed worker of its PID namespace left removed; Unenforceable naming what is missing
        otherwise."""
        try:
            version, own = own_cgroups()
        except (OSError, ValueError, IndexError) as error:
            raise Unenforceable(f"its control groups cannot be read ({error})") from None
        worker = worker_directory(os.getpid())
        if version == 2:
            return cls._v2(own[""], worker)
        missing = [name for name in V1_CONTROLLERS if name not in own]
        if missing:
            raise Unenforceable(f"no cgroup v1 {', '.join(missing)} controller is mounted")
        bases = {name: own[name] / TREE / worker for name in V1_CONTROLLERS}
        found = cls(1, bases)
        found._make()
        return found

    @classmethod
    def _v2(cls, own: Path, worker: str) -> Cgroups:
        """cgroup v2: the worker's own group must be delegated to it (writable, its controllers
        enabled for its subtree). A group with processes cannot give its children controllers, so
        the worker moves itself into a leaf of its own first (as systemd's Delegate=yes expects)."""
        wanted = " ".join(f"+{name}" for name in V2_CONTROLLERS)
        enabled = set((_read(own / "cgroup.subtree_control") or "").split())
        if not set(V2_CONTROLLERS) <= enabled:
            try:
                (own / "worker").mkdir(exist_ok=True)
                (own / "worker" / "cgroup.procs").write_text(str(os.getpid()))
                (own / "cgroup.subtree_control").write_text(wanted)
            except OSError as error:
                raise Unenforceable(
                    f"its cgroup v2 group {own} is not delegated to it ({error.strerror}):"
                    " run it in a unit with Delegate=yes"
                ) from None
        found = cls(2, {"": own / TREE / worker})
        found._make(parent_controls=wanted)
        return found

    def _make(self, parent_controls: str | None = None) -> None:
        for base in self.bases.values():
            try:
                base.parent.mkdir(exist_ok=True)
                self._reap(base.parent)
                base.mkdir(exist_ok=True)
                if parent_controls is not None:  # v2: controllers for the attempts' groups
                    (base.parent / "cgroup.subtree_control").write_text(parent_controls)
                    (base / "cgroup.subtree_control").write_text(parent_controls)
            except OSError as error:
                raise Unenforceable(
                    f"it cannot make control groups under {base.parent.parent}"
                    f" ({error.strerror or error})"
                ) from None

    def _reap(self, tree: Path) -> None:
        """Remove the attempts' groups of workers no longer alive (a SIGKILL leaves them): any
        process still in one is killed first."""
        namespace = worker_directory(0).partition("@")[2]
        for worker in tree.iterdir():
            pid, _, of = worker.name[1:].partition("@")
            if not worker.is_dir() or of != namespace or not pid.isdigit():
                continue
            if Path(f"/proc/{pid}").exists():
                continue
            for group in [*(p for p in worker.iterdir() if p.is_dir()), worker]:
                _empty(group)
                with contextlib.suppress(OSError):
                    group.rmdir()

    def attempt(self, name: str, limits: LaneLimits) -> Confined:
        """A control group of the attempt's own, its limits written."""
        dirs = {controller: base / name for controller, base in self.bases.items()}
        made = Confined(self.version, dirs, limits)
        try:
            for directory in dict.fromkeys(dirs.values()):
                directory.mkdir()
            made.write_limits()
        except OSError:
            made.remove()
            raise
        return made

    def close(self) -> None:
        """The worker ends: its directories go (its attempts' groups went with each attempt)."""
        for base in self.bases.values():
            with contextlib.suppress(OSError):
                base.rmdir()


def _empty(group: Path) -> None:
    """Kill every process in a control group, until none is left (a few seconds at most)."""
    deadline = time.monotonic() + 5
    while (procs := (_read(group / "cgroup.procs") or "").split()) and time.monotonic() < deadline:
        for pid in procs:
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
        time.sleep(0.01)


@dataclass
class Confined:
    """One attempt's control group: `dirs` per v1 controller (or "" for v2)."""

    version: int
    dirs: dict[str, Path]
    limits: LaneLimits
    peak_processes: int = 0

    def _dir(self, controller: str) -> Path:
        return self.dirs[controller if self.version == 1 else ""]

    def write_limits(self) -> None:
        memory, pids, cpu = self._dir("memory"), self._dir("pids"), self._dir("cpu")
        limits = self.limits
        if self.version == 1:
            if limits.memory is not None:
                (memory / "memory.limit_in_bytes").write_text(str(limits.memory))
                if (memory / "memory.memsw.limit_in_bytes").exists():  # no way past it by swap
                    (memory / "memory.memsw.limit_in_bytes").write_text(str(limits.memory))
            if limits.pids is not None:
                (pids / "pids.max").write_text(str(limits.pids))
            if limits.cpus is not None:
                (cpu / "cpu.cfs_period_us").write_text(str(CPU_PERIOD))
                (cpu / "cpu.cfs_quota_us").write_text(str(round(limits.cpus * CPU_PERIOD)))
            return
        if limits.memory is not None:
            (memory / "memory.max").write_text(str(limits.memory))
            with contextlib.suppress(FileNotFoundError):  # no swap accounting: none to bound
                (memory / "memory.swap.max").write_text("0")
        if limits.pids is not None:
            (pids / "pids.max").write_text(str(limits.pids))
        if limits.cpus is not None:
            (cpu / "cpu.max").write_text(f"{round(limits.cpus * CPU_PERIOD)} {CPU_PERIOD}")

    def enter(self) -> list[str]:
        """The command line prefix that puts COMMAND's first process in the group before it
        executes COMMAND (or its sandbox): everything it starts is born there."""
        procs = [str(directory / "cgroup.procs") for directory in dict.fromkeys(self.dirs.values())]
        return ["/bin/sh", "-c", ENTER, "sh", str(len(procs)), *procs]

    def reached(self) -> str | None:
        """The limit the kernel enforced: memory (a process of the group was killed out of
        memory), pids (a fork was refused), or None."""
        memory, pids = self._dir("memory"), self._dir("pids")
        events = "memory.oom_control" if self.version == 1 else "memory.events"
        if self.limits.memory is not None and _keyed(memory / events, "oom_kill") > 0:
            return "memory"
        if self.limits.pids is not None and _keyed(pids / "pids.events", "max") > 0:
            return "pids"
        return None

    def sample(self) -> None:
        """Note the processes alive now (where the kernel keeps no peak of its own)."""
        current = _number(self._dir("pids") / "pids.current")
        self.peak_processes = max(self.peak_processes, current or 0)

    def usage(self) -> AttemptUsage:
        """What the group's processes used: peak memory, CPU seconds, the most processes alive."""
        memory, pids = self._dir("memory"), self._dir("pids")
        if self.version == 1:
            peak_memory = _number(memory / "memory.max_usage_in_bytes")
            nanoseconds = _number(self._dir("cpuacct") / "cpuacct.usage")
            cpu = None if nanoseconds is None else nanoseconds / 1e9
        else:
            peak_memory = _number(memory / "memory.peak")
            microseconds = _keyed(self._dir("cpu") / "cpu.stat", "usage_usec")
            cpu = microseconds / 1e6
        peak = max(self.peak_processes, _number(pids / "pids.peak") or 0)
        return AttemptUsage(peak_memory=peak_memory, cpu_seconds=cpu, peak_processes=peak)

    def kill(self) -> None:
        """SIGKILL every process of the group now."""
        directory = self._dir("pids")
        if self.version == 2 and (directory / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                (directory / "cgroup.kill").write_text("1")
                return
        for pid in (_read(directory / "cgroup.procs") or "").split():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)

    def remove(self) -> None:
        """The attempt ended: whatever is still in the group is killed, and the group goes."""
        for directory in dict.fromkeys(self.dirs.values()):
            if directory.exists():
                _empty(directory)
                with contextlib.suppress(OSError):
                    directory.rmdir()


def tree_size(path: Path) -> int:
    """The bytes a directory's files take on disk (as du counts them), links not followed."""
    total = 0
    stack = [str(path)]
    while stack:
        with contextlib.suppress(OSError), os.scandir(stack.pop()) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    info = entry.stat(follow_symlinks=False)
                    total += info.st_blocks * 512
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
    return total


def tmp_used(init: Callable[[], int | None]) -> int:
    """The bytes used in the private /tmp of the sandbox whose first process `init` names (read
    through /proc/PID/root, as the worker sees the sandbox's mounts); 0 when it cannot be read."""
    pid = init()
    if pid is None:
        return 0
    try:
        stat = os.statvfs(f"/proc/{pid}/root/tmp")
    except OSError:
        return 0
    return (stat.f_blocks - stat.f_bfree) * stat.f_frsize


@dataclass
class Watch:
    """A running attempt watched: its control group's limits reached, its peak processes, the
    workspace's size and the private /tmp's use against the disk limit. `stop` is called once
    with the limit reached (memory, pids, disk)."""

    limits: LaneLimits
    group: Confined | None
    workspace: Path | None
    init: Callable[[], int | None]
    stop: Callable[[str], None]
    reached: str | None = None
    workspace_bytes: int | None = None
    _done: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Watch:
        self._thread = threading.Thread(target=self._run, daemon=True, name="limits")
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        if self.workspace is not None:
            self.workspace_bytes = tree_size(self.workspace)
        if self.reached is None and self.group is not None:  # COMMAND ended before a look
            self.reached = self.group.reached()
        over = self.limits.disk is not None and (self.workspace_bytes or 0) > self.limits.disk
        if self.reached is None and over:
            self.reached = "disk"

    def _run(self) -> None:
        next_disk = 0.0
        while not self._done.wait(WATCH_EVERY) and self.reached is None:
            if self.group is not None:
                self.group.sample()
                if reached := self.group.reached():
                    self._reached(reached)
                    return
            if self.limits.disk is not None and time.monotonic() >= next_disk:
                next_disk = time.monotonic() + DISK_EVERY
                if self._disk_exceeded():
                    self._reached("disk")
                    return

    def _disk_exceeded(self) -> bool:
        assert self.limits.disk is not None
        used = tmp_used(self.init)
        full = used > 0 and self.limits.disk - used < TMP_FULL
        written = used + (0 if self.workspace is None else tree_size(self.workspace))
        return full or written > self.limits.disk

    def _reached(self, limit: str) -> None:
        self.reached = limit
        self.stop(limit)

    def usage(self) -> AttemptUsage:
        """What the attempt used (its group's figures, the workspace's final size)."""
        used = AttemptUsage() if self.group is None else self.group.usage()
        return AttemptUsage(
            peak_memory=used.peak_memory,
            cpu_seconds=used.cpu_seconds,
            peak_processes=used.peak_processes,
            workspace_bytes=self.workspace_bytes,
            limit_reached=self.reached,
        )


@contextlib.contextmanager
def confined(cgroups: Cgroups | None, name: str, limits: LaneLimits) -> Iterator[Confined | None]:
    """An attempt's control group while it runs (None without cgroups), removed at its end."""
    if cgroups is None:
        yield None
        return
    group = cgroups.attempt(name, limits)
    try:
        yield group
    finally:
        group.remove()
