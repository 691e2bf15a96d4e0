"""A private, throwaway PostgreSQL cluster for the tests, the benchmark and `make run`.

It lives in its own data directory, listens on a unix socket inside that directory
and on a free port of 127.0.0.1, and never touches the system cluster. PostgreSQL
refuses to run as root, so when we are root the server runs as the `postgres`
system user.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

SUPERUSER = "postgres"
INSTALL_HINT = (
    "PostgreSQL's server binaries (initdb, pg_ctl) were not found. "
    "On Debian or Ubuntu: apt-get install postgresql (or postgresql-15); "
    "or set TIRELESS_PG_BIN to the directory that holds them."
)


class ServerBinariesMissing(RuntimeError):
    """initdb and pg_ctl are not installed where we look for them."""


def find_server_binaries() -> Path:
    """The directory holding initdb and pg_ctl: $TIRELESS_PG_BIN, PATH, then Debian's layout."""
    candidates: list[Path] = []
    if configured := os.environ.get("TIRELESS_PG_BIN"):
        candidates.append(Path(configured))
    if on_path := shutil.which("pg_ctl"):
        candidates.append(Path(on_path).parent)
    debian = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_major_version, reverse=True)
    candidates.extend(debian)
    for directory in candidates:
        if (directory / "initdb").exists() and (directory / "pg_ctl").exists():
            return directory
    raise ServerBinariesMissing(INSTALL_HINT)


def _major_version(bin_dir: Path) -> int:
    name = bin_dir.parent.name
    return int(name) if name.isdigit() else 0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class EmbeddedPostgres:
    """One private cluster: `start()`, `conninfo(dbname)`, `restart()`, `stop()`."""

    def __init__(self, datadir: Path | None = None, *, fsync: bool = True) -> None:
        self.bin_dir = find_server_binaries()
        self.datadir = datadir or Path(tempfile.mkdtemp(prefix="tireless-pg-"))
        self.fsync = fsync
        self.port = free_port()
        self._run_as = SUPERUSER if os.geteuid() == 0 else None

    @property
    def socket_dir(self) -> str:
        return str(self.datadir)

    def conninfo(self, dbname: str = "postgres") -> str:
        """A libpq connection string for the superuser over the unix socket."""
        return f"host={self.socket_dir} port={self.port} user={SUPERUSER} dbname={dbname}"

    def url(self, dbname: str = "postgres") -> str:
        """The same as a URL, for DATABASE_URL."""
        return f"postgresql://{SUPERUSER}@/{dbname}?host={self.socket_dir}&port={self.port}"

    def start(self) -> None:
        """Create the cluster if it has no files yet, then start it and wait until it accepts."""
        self.datadir.mkdir(parents=True, exist_ok=True)
        if self._run_as is not None:
            owner = pwd.getpwnam(self._run_as)
            os.chown(self.datadir, owner.pw_uid, owner.pw_gid)
        self.datadir.chmod(0o700)
        if not (self.datadir / "PG_VERSION").exists():
            initdb = ["--pgdata", str(self.datadir), "--username", SUPERUSER, "--auth", "trust"]
            initdb += ["--encoding", "UTF8", "--locale", "C", "--no-instructions"]
            self._pg("initdb", *initdb, *([] if self.fsync else ["--no-sync"]))
        if (port := self.running_port()) is not None:
            self.port = port  # already running (make run's persistent cluster): attach to it
            return
        options = " ".join(
            [
                f"-p {self.port}",
                "-c listen_addresses=127.0.0.1",
                f"-c unix_socket_directories={self.socket_dir}",
                f"-c fsync={'on' if self.fsync else 'off'}",
                f"-c synchronous_commit={'on' if self.fsync else 'off'}",
                f"-c full_page_writes={'on' if self.fsync else 'off'}",
                "-c max_connections=200",
                "-c shared_buffers=256MB",
            ]
        )
        self._pg_ctl("start", "--wait", "--timeout", "60", "-o", options, "-l", self._logfile())

    def running_port(self) -> int | None:
        """The port of a server already running on this data directory, if one is."""
        pidfile = self.datadir / "postmaster.pid"
        try:
            lines = pidfile.read_text().splitlines()
            os.kill(int(lines[0]), 0)
            return int(lines[3])
        except (OSError, ValueError, IndexError):
            return None

    def restart(self) -> None:
        """`pg_ctl restart -m fast`: every backend is cut off, the cluster comes back on the same port."""
        self._pg_ctl("restart", "--wait", "--timeout", "60", "-m", "fast", "-l", self._logfile())

    def stop(self, mode: str = "fast") -> None:
        """Stop the server if it runs (`-m fast`; `immediate`: as in a crash, every connection cut
        at once and crash recovery at the next start); forgiving, so it is safe in cleanups."""
        if (self.datadir / "postmaster.pid").exists():
            self._pg_ctl("stop", "--wait", "--timeout", "60", "-m", mode, check=False)

    def promote(self) -> None:
        """`pg_ctl promote --wait`: a standby leaves recovery and accepts writes (returns once it does)."""
        self._pg_ctl("promote", "--wait", "--timeout", "120")

    def destroy(self) -> None:
        """Stop the server and delete its data directory."""
        self.stop()
        shutil.rmtree(self.datadir, ignore_errors=True)

    def _logfile(self) -> str:
        return str(self.datadir / "server.log")

    def _pg_ctl(self, *args: str, check: bool = True) -> None:
        self._pg("pg_ctl", "--pgdata", str(self.datadir), *args, check=check)

    def _pg(self, program: str, *args: str, check: bool = True) -> None:
        command: Sequence[str] = [str(self.bin_dir / program), *args]
        if self._run_as is not None:
            command = ["runuser", "-u", self._run_as, "--", *command]
        result = subprocess.run(
            command, cwd="/", stdin=subprocess.DEVNULL, capture_output=True, text=True
        )
        if check and result.returncode != 0:
            raise RuntimeError(
                f"{program} failed ({result.returncode}): {result.stderr.strip() or result.stdout}"
            )


@contextmanager
def embedded_postgres(*, fsync: bool = True) -> Iterator[EmbeddedPostgres]:
    """A started cluster in a fresh directory, stopped and deleted on exit."""
    server = EmbeddedPostgres(fsync=fsync)
    try:
        server.start()
        yield server
    finally:
        server.destroy()
