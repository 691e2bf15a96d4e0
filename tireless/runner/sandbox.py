"""Containment: no process COMMAND started outlives its job (docs/runners.md, "Containment").

A `Sandbox` starts COMMAND for a job (`start`, a `Contained`), signals every process of it
(`Contained.signal`) and makes sure nothing of it is left when its job ends (`Contained.end`).
`bwrap` and `unshare` run COMMAND in a PID namespace of its own, which the kernel empties when its
first process ends: when COMMAND's top process exits, and when the worker dies, even by SIGKILL
(a parent-death signal). `none` keeps COMMAND's process group and makes the worker a child
subreaper, so what COMMAND leaves behind (double-forked or `setsid` included) is the worker's to
kill at the job's end; a SIGKILL of the worker leaves it running. Given an `Isolation`, bwrap and
unshare also give COMMAND a network namespace of its own, COMMAND behind the relay
(tireless.runner.relay); `none` cannot."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import pwd
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

SANDBOXES = ("auto", "bwrap", "unshare", "none")
"""The choices of `tireless work --sandbox`; auto takes the first of bwrap, unshare, none that works."""

PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
END_WAIT = 5.0
"""Seconds `end` waits for what it killed to be gone (a process in uninterruptible sleep)."""


NET_MOUNT = "/run/tireless-net"
"""Where bwrap shows COMMAND the job's network directory (the runner's sockets, the relay)."""
RELAY = "relay.py"
"""The relay's file name in the job's network directory (tireless.runner.relay, copied there)."""


class Unavailable(OSError):
    """The sandbox asked for cannot run here (a usage error of `tireless work`)."""


@dataclass(frozen=True)
class Isolation:
    """COMMAND's network for one job: a namespace of its own, whose only way out is its loopback
    ports relayed to the runner's unix sockets (port, socket file name) in `directory` (where the
    relay's file is too), by the relay run with `python` (one the agent's user can run)."""

    directory: Path
    ports: tuple[tuple[int, str], ...]
    python: str

    def relayed(self, command: Sequence[str], directory: str) -> list[str]:
        """COMMAND behind the relay, the job's network directory seen at `directory`."""
        maps = [f"--map=127.0.0.1:{port}={directory}/{name}" for port, name in self.ports]
        return [self.python, "-I", f"{directory}/{RELAY}", *maps, "--", *command]


def secret_paths(
    environ: Mapping[str, str], hidden: Sequence[str] = ()
) -> tuple[list[str], list[str]]:
    """The worker's secret files and directories, as COMMAND must not see them: the files the
    `*_FILE` variables of the worker's credentials name (DATABASE_URL_FILE,
    TIRELESS_TOKEN_<NAME>_FILE, TIRELESS_WEBHOOK_SECRET_<NAME>_FILE, ...), libpq's password and
    service files, systemd's credentials directory, and the files `hidden` names (the upstreams'
    secrets, `work --upstream-secret`); only those that exist, resolved."""
    files = [
        value
        for name, value in environ.items()
        if name.endswith("_FILE") and (name.startswith(("TIRELESS_", "DATABASE_URL", "PG")))
    ]
    files += hidden
    home = Path.home()
    files.append(environ.get("PGPASSFILE") or str(home / ".pgpass"))
    files.append(environ.get("PGSERVICEFILE") or str(home / ".pg_service.conf"))
    if key := environ.get("PGSSLKEY"):
        files.append(key)
    directories = [environ["CREDENTIALS_DIRECTORY"]] if environ.get("CREDENTIALS_DIRECTORY") else []
    found = sorted({os.path.realpath(f) for f in files if f and os.path.isfile(f)})
    hidden = sorted({os.path.realpath(d) for d in directories if os.path.isdir(d)})
    return found, hidden


def _drop_to(agent: pwd.struct_passwd) -> list[str]:
    """util-linux setpriv, as the last step before COMMAND: the agent's user and group, none of the
    worker's groups or capabilities."""
    return [
        "setpriv", f"--reuid={agent.pw_uid}", f"--regid={agent.pw_gid}", "--clear-groups",
        "--inh-caps=-all", "--bounding-set=-all", "--",
    ]  # fmt: skip


def relay_python(agent: pwd.struct_passwd | None) -> str:
    """A Python the agent's user can run the relay with: the interpreter the worker's own is (the
    relay needs only the standard library, so not a virtual environment's link to it, which may
    sit under the /tmp the sandbox hides), else python3 from the system's PATH (the worker's may
    be in a home directory the agent cannot enter). Unavailable when there is none."""
    own = os.path.realpath(sys.executable)
    if agent is None:
        return own
    tried = [own, *filter(None, [shutil.which("python3", path=os.defpath)])]
    # Executed by sh, not by setpriv: setpriv's exec still has the capabilities to reach any file.
    run = 'exec "$0" -I -c "import socket, subprocess, threading"'
    for python in dict.fromkeys(tried):
        probe = [*_drop_to(agent), "sh", "-c", run, python]
        if subprocess.run(probe, capture_output=True, check=False).returncode == 0:
            return python
    raise Unavailable(
        f"the agent user {agent.pw_name} can run none of {', '.join(tried)}: the network relay"
        " of a lane with an egress allowlist needs a Python 3 it can run"
    )


def _children(pid: int) -> list[int]:
    """The children of a process (Linux's /proc/PID/task/PID/children, else every process's
    parent as /proc/PID/stat names it)."""
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except FileNotFoundError:
        return [child for child, parent in _parents().items() if parent == pid]
    except OSError:
        return []


def _pids() -> Iterator[int]:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            yield int(entry)


def _parents() -> dict[int, int]:
    """Every process's parent."""
    parents = {}
    for pid in _pids():
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = Path(f"/proc/{pid}/stat").read_text()
            parents[pid] = int(stat[stat.rindex(")") + 2 :].split()[1])  # (comm) may hold spaces
    return parents


def _kill(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


class Contained:
    """COMMAND running for one job: `process` is what the worker started (COMMAND itself, or the
    sandbox around it); its stdin, stdout and exit code are COMMAND's."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.ended = False

    def init(self) -> int | None:
        """The first process of the sandbox's own namespaces, in the worker's numbering (its
        /proc/PID/root shows the sandbox's mounts); None when it has none."""
        return None

    def signal(self, signum: signal.Signals) -> None:
        """SIGTERM: ask every process of the job to stop; SIGKILL: end them all now. Acts while
        anything of the job remains, whether or not COMMAND's top process has exited."""
        raise NotImplementedError

    def end(self) -> None:
        """After COMMAND's top process exited: nothing of the job is left when this returns.
        Raises OSError when COMMAND could not be started (the runner's fault, not the job's)."""
        raise NotImplementedError


class Sandbox:
    """How `tireless work` starts COMMAND: `start` a job's COMMAND, `describe` in one line."""

    name = ""
    uncontained = ""
    """What this sandbox leaves open that bwrap closes (said when `--sandbox auto` falls back)."""

    def describe(self) -> str:
        raise NotImplementedError

    def network_refusal(self) -> str | None:
        """Why this sandbox cannot give COMMAND a network namespace of its own here (a lane with
        an egress allowlist needs one); None when it can."""
        raise NotImplementedError

    def limits_refusal(self, disk: bool) -> str | None:
        """Why this sandbox cannot hold COMMAND to a lane's limits (a control group, and with
        `disk` a private /tmp of a bounded size); None when it can."""
        raise NotImplementedError

    def hide(self, files: Sequence[str]) -> None:
        """More secret files COMMAND must not read, learned after the start (the registry's
        GitHub App key files); a sandbox that hides no file (none, unshare) hides none."""

    def start(
        self,
        command: Sequence[str],
        *,
        cwd: Path,
        writable: Sequence[Path],
        env: Mapping[str, str],
        agent: pwd.struct_passwd | None,
        network: Isolation | None = None,
        enter: Sequence[str] = (),
        tmp_size: int | None = None,
    ) -> Contained:
        """COMMAND started in `cwd` with `env` (as `agent` when given), stdin and stdout pipes,
        stderr on stdout; it may write in `cwd` and `writable` (and in a sandbox's own /tmp, of
        `tmp_size` bytes at most); with `network`, in a network namespace of its own behind the
        relay; `enter`: the command line prefix that puts its first process in its attempt's
        control group (tireless.runner.limits) before anything is executed."""
        raise NotImplementedError


# PID namespaces: bwrap and unshare
class _InNamespace(Contained):
    """A job whose processes are a PID namespace: its first process (`init`, in the worker's
    numbering) is the sandbox's; when it ends, the kernel kills everything else in it."""

    def __init__(self, process: subprocess.Popen[bytes], init: int | None = None) -> None:
        super().__init__(process)
        self._init = init
        self.signalled = False

    def init(self) -> int | None:
        """The namespace's first process, once the sandbox made it (the child of `process`)."""
        if self._init is None and self.process.poll() is None:
            self._init = next(iter(_children(self.process.pid)), None)
        return self._init

    def members(self, init: int) -> list[int]:
        """Every process of the namespace but its first."""
        try:
            namespace = os.readlink(f"/proc/{init}/ns/pid")
        except OSError:
            return []
        found = []
        for pid in _pids():
            with contextlib.suppress(OSError):
                if pid != init and os.readlink(f"/proc/{pid}/ns/pid") == namespace:
                    found.append(pid)
        return found

    def signal(self, signum: signal.Signals) -> None:
        if self.ended or self.process.poll() is not None:
            return  # the namespace ended with its first process
        self.signalled = True
        init = self.init()
        members = [] if init is None else self.members(init)
        if signum == signal.SIGKILL or not members:  # nothing of COMMAND runs yet: end it now
            _kill(self.process.pid if init is None else init, signal.SIGKILL)
            return
        for pid in members:  # the first process would not hear a SIGTERM; the others do
            _kill(pid, signum)

    def end(self) -> None:
        if self.process.poll() is None:
            self.signal(signal.SIGKILL)
            self.process.wait()
        self.ended = True  # the namespace is empty: its first process waited for all the others


class Bubblewrap(Sandbox):
    """bubblewrap: a PID namespace, a read-only view of / with a private /tmp, COMMAND's working
    directory and the job's files writable, the worker's secret files hidden."""

    name = "bwrap"

    def __init__(
        self, environ: Mapping[str, str] | None = None, hidden: Sequence[str] = ()
    ) -> None:
        self.secret_files, self.secret_dirs = secret_paths(
            os.environ if environ is None else environ, hidden
        )
        self._network_refusal: str | None = None
        self._network_checked = False

    def hide(self, files: Sequence[str]) -> None:
        found = {os.path.realpath(f) for f in files if os.path.isfile(f)}
        self.secret_files = sorted(set(self.secret_files) | found)

    def describe(self) -> str:
        return (
            "bwrap (a PID namespace that ends with COMMAND or the worker; / read-only, a private"
            " /tmp, the worker's secret files hidden)"
        )

    def limits_refusal(self, disk: bool) -> str | None:
        return None  # a control group around bwrap, and --size for its /tmp

    def network_refusal(self) -> str | None:
        if not self._network_checked:
            probe = self.argv([], cwd=Path("/"), writable=[], agent=None, isolated=True)
            if not _works(probe):
                self._network_refusal = (
                    "--sandbox bwrap: bubblewrap cannot make a network namespace here"
                    " (bwrap --unshare-net failed)"
                )
            self._network_checked = True
        return self._network_refusal

    def argv(
        self,
        command: Sequence[str],
        *,
        cwd: Path,
        writable: Sequence[Path],
        agent: pwd.struct_passwd | None,
        status_fd: int | None = None,
        network: Isolation | None = None,
        isolated: bool = False,
        tmp_size: int | None = None,
    ) -> list[str]:
        """The bwrap command line that runs COMMAND for a job; with `network` (or `isolated`, no
        relay: a probe), in a network namespace of its own with an empty /run (a daemon's unix
        socket there would be a way out) but for the job's network directory."""
        isolated = isolated or network is not None
        argv = ["bwrap", "--unshare-pid", "--die-with-parent", "--new-session"]
        argv += ["--unshare-net"] if isolated else []
        if status_fd is not None:
            argv += ["--json-status-fd", str(status_fd)]
        if os.geteuid() == 0 and agent is None:
            argv += ["--cap-drop", "ALL"]  # root without capabilities cannot undo the view
        argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        argv += [] if tmp_size is None else ["--size", str(tmp_size)]  # bwrap 0.6 on
        argv += ["--perms", "1777", "--tmpfs", "/tmp", "--setenv", "TMPDIR", "/tmp"]  # anyone's
        argv += ["--tmpfs", "/run"] if isolated else []
        named = _named_files(command)  # COMMAND's program and files stay visible, read-only
        if network is not None:
            named += _named_files([network.python])
            command = network.relayed(command, NET_MOUNT)
        installed = _installations(named)  # an agent CLI's package tree, not its program alone
        own = [cwd, *writable]
        if agent is not None and agent.pw_dir not in ("", "/") and os.path.isdir(agent.pw_dir):
            own.append(Path(agent.pw_dir))  # the agent's own home
        # The directories leading to them too: a workspace under /tmp keeps its parents' modes, so
        # the agent user may enter it again by its path (a CLI's shell tool starts there).
        for directory in _leading_directories([*named, *installed, *map(str, own)]):
            argv += ["--perms", _mode_for(directory, agent), "--dir", directory]
        for path in [*installed, *_outside(dict.fromkeys(named), installed)]:
            argv += ["--ro-bind", path, path]
        for path in map(str, own):
            if path != "/":  # a worker started in / (systemd's default) does not make / writable
                argv += ["--bind", path, path]
        for secret in self.secret_files:
            argv += ["--ro-bind", "/dev/null", secret]
        for secret in self.secret_dirs:
            argv += ["--tmpfs", secret]
        if network is not None:
            argv += ["--bind", str(network.directory), NET_MOUNT]
        argv += ["--chdir", str(cwd), "--"]
        return argv + (_drop_to(agent) if agent is not None else []) + list(command)

    def start(
        self,
        command: Sequence[str],
        *,
        cwd: Path,
        writable: Sequence[Path],
        env: Mapping[str, str],
        agent: pwd.struct_passwd | None,
        network: Isolation | None = None,
        enter: Sequence[str] = (),
        tmp_size: int | None = None,
    ) -> Contained:
        status, status_writer = os.pipe()
        try:
            argv = [*enter, *self.argv(
                command, cwd=cwd, writable=writable, agent=agent, status_fd=status_writer,
                network=network, tmp_size=tmp_size,
            )]  # fmt: skip
            process = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                env=dict(env), start_new_session=True, pass_fds=[status_writer],
            )  # fmt: skip
        except BaseException:
            os.close(status)
            raise
        finally:
            os.close(status_writer)
        return _Bubblewrapped(process, os.fdopen(status, "rb"))


class _Bubblewrapped(_InNamespace):
    """bwrap's --json-status-fd says the namespace's first process (`child-pid`) at once and, when
    it ends, `exit-code` only if COMMAND was executed: so an exec that failed is told apart."""

    def __init__(self, process: subprocess.Popen[bytes], status: IO[bytes]) -> None:
        self._status = status
        first = self._status.readline()  # written as soon as the namespace exists
        self._reports = [first]
        init = json.loads(first).get("child-pid") if first.strip() else None
        super().__init__(process, init)

    def end(self) -> None:
        super().end()
        with self._status:
            self._reports += self._status.readlines()
        if not self.signalled and not any(b'"exit-code"' in r for r in self._reports):
            raise OSError("bwrap could not start it (its output says why)")


class Unshare(Sandbox):
    """util-linux unshare as root: a PID namespace (and a mount namespace for its /proc), the
    filesystem as it is. `setsid --fork --wait` is the namespace's first process, so COMMAND is
    not PID 1 and hears SIGTERM as it would anywhere."""

    name = "unshare"
    uncontained = (
        "/ is writable, /tmp is shared, and the worker's secret files are not hidden from COMMAND"
    )

    def describe(self) -> str:
        return (
            "unshare (a PID namespace that ends with COMMAND or the worker; the filesystem and"
            " the worker's secret files as they are)"
        )

    def network_refusal(self) -> str | None:
        if shutil.which("ip") is None:  # util-linux has no tool to bring an interface up
            return (
                "--sandbox unshare: a network namespace of unshare --net has its loopback down,"
                " and iproute2's ip, which brings it up, is missing"
            )
        return None

    def limits_refusal(self, disk: bool) -> str | None:
        if disk:
            return "--sandbox unshare shares the host's /tmp, which --disk cannot bound"
        return None

    def argv(
        self,
        command: Sequence[str],
        agent: pwd.struct_passwd | None,
        network: Isolation | None = None,
    ) -> list[str]:
        outer = ["setpriv", "--pdeathsig", "KILL", "--"]  # unshare dies with the worker
        inner = ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc"]
        inner += ["--net", "--"] if network is not None else ["--"]
        first = ["setsid", "--fork", "--wait", "--"]
        if network is not None:  # as root, before the drop: its loopback up, then the relay
            ip = shutil.which("ip")
            if ip is None:
                raise Unavailable(self.network_refusal())
            first += ["sh", "-c", f'{shlex.quote(ip)} link set lo up && exec "$@"', "sh"]
            command = network.relayed(command, str(network.directory))
        return (
            outer + inner + first + (_drop_to(agent) if agent is not None else []) + list(command)
        )

    def start(
        self,
        command: Sequence[str],
        *,
        cwd: Path,
        writable: Sequence[Path],
        env: Mapping[str, str],
        agent: pwd.struct_passwd | None,
        network: Isolation | None = None,
        enter: Sequence[str] = (),
        tmp_size: int | None = None,
    ) -> Contained:
        process = subprocess.Popen(
            [*enter, *self.argv(command, agent, network)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, env=dict(env), cwd=cwd, start_new_session=True,
        )  # fmt: skip
        return _InNamespace(process)


# No namespace: a process group and a subreaper
class ProcessGroup(Sandbox):
    """COMMAND in a process group of its own, the worker a child subreaper (orphans of COMMAND,
    double-forked or `setsid` ones too, become the worker's children): whatever descends from the
    worker is COMMAND's, stopped with it and killed when its job ends."""

    name = "none"
    uncontained = (
        "no namespace: / is writable, /tmp is shared, the worker's secret files are not hidden,"
        " and COMMAND outlives a SIGKILL of the worker"
    )

    def __init__(self) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            raise Unavailable(os.strerror(ctypes.get_errno()))

    def describe(self) -> str:
        return (
            "none (COMMAND's process group, and the worker a subreaper that kills what COMMAND"
            " leaves when its job ends; a SIGKILL of the worker leaves it running)"
        )

    def network_refusal(self) -> str | None:
        return "--sandbox none cannot give the agent a network of its own (use --sandbox bwrap)"

    def limits_refusal(self, disk: bool) -> str | None:
        return (
            "--sandbox none runs COMMAND without a control group of its own (and what it leaves"
            " outlives a SIGKILL of the worker, unwatched); use --sandbox bwrap"
        )

    def start(
        self,
        command: Sequence[str],
        *,
        cwd: Path,
        writable: Sequence[Path],
        env: Mapping[str, str],
        agent: pwd.struct_passwd | None,
        network: Isolation | None = None,
        enter: Sequence[str] = (),
        tmp_size: int | None = None,
    ) -> Contained:
        if network is not None:
            raise Unavailable(self.network_refusal())
        if enter or tmp_size is not None:
            raise Unavailable(self.limits_refusal(tmp_size is not None))
        process = subprocess.Popen(
            list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, env=dict(env), cwd=cwd,
            start_new_session=True,  # its own process group: stopping it stops its children
            user=None if agent is None else agent.pw_uid,
            group=None if agent is None else agent.pw_gid,
            extra_groups=None if agent is None else [],  # none of the worker's groups
        )  # fmt: skip
        return _Descendants(process)


class _Descendants(Contained):
    """A job whose processes are every descendant of the worker (the subreaper)."""

    def descendants(self) -> list[int]:
        parents = _parents()
        found: list[int] = []
        frontier = [os.getpid()]
        while frontier:
            parent = frontier.pop()
            children = [pid for pid, of in parents.items() if of == parent]
            found += children
            frontier += children
        return found

    def signal(self, signum: signal.Signals) -> None:
        if self.ended:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signum)
        for pid in self.descendants():
            _kill(pid, signum)

    def end(self) -> None:
        """Kill every descendant and reap the ones the worker inherited, until none is left."""
        deadline = time.monotonic() + END_WAIT
        top = self.process.pid
        while (left := [pid for pid in self.descendants() if pid != top]) and (
            time.monotonic() < deadline
        ):
            for pid in left:
                _kill(pid, signal.SIGKILL)
            for pid in left:  # those the worker inherited; the others are reaped by their parent
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
            time.sleep(0.01)
        self.ended = True


# Choosing
def _works(argv: Sequence[str]) -> bool:
    """Whether a sandbox's command line runs `true` here (it can make its namespaces)."""
    try:
        done = subprocess.run(
            [*argv, "true"], stdin=subprocess.DEVNULL, capture_output=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def choose(
    name: str, agent: pwd.struct_passwd | None = None, hidden: Sequence[str] = ()
) -> Sandbox:
    """The sandbox `--sandbox NAME` asks for, tried here; auto: bwrap, else unshare, else none.
    `hidden`: more secret files bwrap hides (secret_paths). Unavailable (a usage error) when the
    one asked for cannot run."""
    if name not in SANDBOXES:
        raise Unavailable(f"--sandbox: one of {', '.join(SANDBOXES)}, got {name!r}")
    needs_setpriv = agent is not None and shutil.which("setpriv") is None
    if name in ("auto", "bwrap"):
        bwrap = Bubblewrap(hidden=hidden)
        probe = bwrap.argv([], cwd=Path("/"), writable=[], agent=None)
        if shutil.which("bwrap") and _works(probe) and not needs_setpriv:
            return bwrap
        if name == "bwrap":
            raise Unavailable(
                "--sandbox bwrap: bubblewrap is missing or cannot make its namespaces here"
                + (" (and --agent-user needs util-linux's setpriv)" if needs_setpriv else "")
            )
    if name in ("auto", "unshare"):
        unshare = Unshare()
        tools = all(map(shutil.which, ("unshare", "setpriv", "setsid")))
        if os.geteuid() == 0 and tools and _works(unshare.argv([], None)):
            return unshare
        if name == "unshare":
            raise Unavailable(
                "--sandbox unshare: needs root and util-linux's unshare, setpriv and setsid"
            )
    return ProcessGroup()


def _leading_directories(files: Sequence[str]) -> list[str]:
    """The directories under /tmp that lead to `files`, each before those inside it."""
    found = {
        str(parent) for f in files for parent in Path(f).parents if parent.is_relative_to("/tmp")
    }
    return sorted(found - {"/tmp"}, key=lambda d: (d.count("/"), d))


def _mode_for(directory: str, agent: pwd.struct_passwd | None) -> str:
    """The mode a directory leading to COMMAND's files gets in the private /tmp, where it is
    root's (bwrap would make it 0700): its own, and to others what the agent may do in the real
    one (its owner's, group's or others' read and search), so COMMAND reaches what it would
    outside."""
    info = os.stat(directory)
    mode = info.st_mode & 0o7777
    if agent is not None:
        if info.st_uid == agent.pw_uid:
            mode |= (mode >> 6) & 0o5
        elif info.st_gid == agent.pw_gid:
            mode |= (mode >> 3) & 0o5
    return f"{mode:04o}"


def _installations(files: Sequence[str]) -> list[str]:
    """The installations under /tmp that COMMAND's files belong to: the npm prefix holding a
    `node_modules` on a file's path (a CLI's `.bin` link, the module it resolves to, the packages
    it loads beside it), or the virtual environment (`pyvenv.cfg`) holding it. Bound whole and
    read-only, since a program alone would not run without the rest of its tree."""
    found: set[str] = set()
    for file in files:
        parents = Path(file).parents
        for parent in parents:
            if parent == Path("/tmp") or not parent.is_relative_to("/tmp"):
                break
            if parent.name == "node_modules" or (parent / "pyvenv.cfg").is_file():
                found.add(str(parent.parent if parent.name == "node_modules" else parent))
    # The outermost of nested ones (a package's own node_modules inside the prefix's).
    return sorted(
        path for path in found if not any(Path(path).is_relative_to(o) and path != o for o in found)
    )


def _outside(files: Iterable[str], directories: Sequence[str]) -> list[str]:
    """The files not in one of `directories`: bound with it already (bwrap cannot bind a file
    over a link inside a read-only bind)."""
    return [f for f in files if not any(Path(f).is_relative_to(d) for d in directories)]


def _named_files(command: Sequence[str]) -> list[str]:
    """The files under /tmp that COMMAND names (its program, found on PATH or by its path, and the
    absolute paths among its arguments: `sh /tmp/x/agent.sh`): the private /tmp would hide them."""
    program = shutil.which(command[0]) if command else None
    named = [program] if program is not None else []
    named += [arg for arg in command[1:] if os.path.isabs(arg)]
    # Each path as named (a virtual environment's python is a link the exec goes through) and
    # as it resolves.
    paths = [*map(os.path.abspath, named), *map(os.path.realpath, named)]
    return [
        path
        for path in dict.fromkeys(paths)
        if (path == "/tmp" or path.startswith("/tmp/")) and os.path.isfile(path)
    ]
