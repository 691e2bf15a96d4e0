"""A primary and its streaming standby on 127.0.0.1, for the failover run and the tests: made by
`pg_basebackup` from the same private binaries as EmbeddedPostgres, optionally synchronous and
optionally lagging (WAL reaches the standby a fixed delay late, through a relay), with the faults
of a failover: the primary killed (`kill -9` of the postmaster and every child) or hung (SIGSTOP),
and the standby promoted."""

from __future__ import annotations

import contextlib
import os
import pwd
import queue
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import psycopg

from dev.embedded import SUPERUSER, EmbeddedPostgres
from tireless.migrate import migrate

DBNAME = "tireless"
STANDBY_NAME = "standby"
"""The standby's application_name, the one synchronous_standby_names lists."""
SYNCHRONOUS_MODES = ("on", "remote_apply")
CATCH_UP_SECONDS = 30.0


class LaggingRelay:
    """A TCP relay on 127.0.0.1 to a port, which holds every byte coming back from that port for
    `delay` seconds: the standby's walreceiver connects through it, so the primary's WAL really
    arrives late (the standby's replies go through at once)."""

    def __init__(self, target_port: int, delay: float) -> None:
        self.target_port, self.delay = target_port, delay
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._sockets: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._closed = True
        for sock in [self._listener, *self._sockets]:
            sock.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                downstream, _ = self._listener.accept()
            except OSError:  # closed
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
            except OSError:  # the primary is gone: the standby tries again later
                downstream.close()
                continue
            upstream.settimeout(None)
            self._sockets += [downstream, upstream]
            threading.Thread(target=self._pump, args=(downstream, upstream), daemon=True).start()
            held: queue.Queue[tuple[float, bytes]] = queue.Queue()
            threading.Thread(target=self._hold, args=(upstream, held), daemon=True).start()
            threading.Thread(target=self._release, args=(held, downstream), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        """Bytes from source to sink as they come; at the end of either, both are shut down."""
        try:
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        except OSError:
            pass
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def _hold(self, source: socket.socket, held: queue.Queue[tuple[float, bytes]]) -> None:
        """Bytes from the primary, each stamped with the time it may go on (b"": the end)."""
        try:
            while chunk := source.recv(65536):
                held.put((time.monotonic() + self.delay, chunk))
        except OSError:
            pass
        held.put((time.monotonic() + self.delay, b""))

    @staticmethod
    def _release(held: queue.Queue[tuple[float, bytes]], sink: socket.socket) -> None:
        while True:
            due, chunk = held.get()
            time.sleep(max(0.0, due - time.monotonic()))
            try:
                if not chunk:
                    sink.shutdown(socket.SHUT_RDWR)
                    return
                sink.sendall(chunk)
            except OSError:
                return


def base_backup(primary: EmbeddedPostgres) -> Path:
    """A copy of the primary's cluster, set up to follow it (`pg_basebackup -R`: standby.signal
    and primary_conninfo), in a new directory."""
    datadir = Path(tempfile.mkdtemp(prefix="tireless-standby-"))
    # Beside the server's own pg_ctl (bin_dir may hold links to a few programs only).
    programs = (primary.bin_dir / "pg_ctl").resolve().parent
    command = [str(programs / "pg_basebackup"), "--pgdata", str(datadir)]
    command += ["--host", primary.socket_dir, "--port", str(primary.port), "--username", SUPERUSER]
    command += ["--write-recovery-conf", "--checkpoint", "fast", "--no-sync"]
    if os.geteuid() == 0:  # PostgreSQL refuses root: its files belong to the server's user
        owner = pwd.getpwnam(SUPERUSER)
        os.chown(datadir, owner.pw_uid, owner.pw_gid)
        command = ["runuser", "-u", SUPERUSER, "--", *command]
    result = subprocess.run(command, cwd="/", capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"pg_basebackup failed ({result.returncode}): {result.stderr.strip()}")
    return datadir


def server_processes(server: EmbeddedPostgres) -> list[int]:
    """The postmaster's pid and its children's (the backends, the walsender, the checkpointer)."""
    postmaster = int((server.datadir / "postmaster.pid").read_text().splitlines()[0])
    children = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == postmaster:
            children.append(int(entry.name))
    return [postmaster, *children]


def signal_all(pids: list[int], signum: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


class ReplicaPair:
    """A migrated primary (database `tireless`) and its hot standby. `synchronous`: None for
    asynchronous replication, else the primary's synchronous_commit for the database ("on":
    a commit waits for the standby's flush, "remote_apply": for its replay), with the standby in
    synchronous_standby_names; `lag`: seconds the primary's WAL takes to reach the standby.
    `start()`, then `kill_primary()` or `hang_primary()`, `promote()`; `destroy()` at the end."""

    def __init__(self, *, synchronous: str | None = None, lag: float = 0.0) -> None:
        if synchronous is not None and synchronous not in SYNCHRONOUS_MODES:
            raise ValueError(
                f"synchronous must be one of {', '.join(SYNCHRONOUS_MODES)}, not {synchronous!r}"
            )
        if lag < 0:
            raise ValueError(f"lag must be zero or more seconds, not {lag}")
        self.synchronous, self.lag = synchronous, lag
        self.primary = EmbeddedPostgres(fsync=False)
        self.standby: EmbeddedPostgres | None = None
        self.relay: LaggingRelay | None = None
        self._hung: list[int] = []

    def __enter__(self) -> ReplicaPair:
        try:
            self.start()
        except BaseException:
            self.destroy()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()

    def start(self) -> None:
        """Start and migrate the primary, copy it, start the standby streaming from it (through
        the relay when lagging), then make it synchronous if asked; returns once it caught up."""
        self.primary.start()
        with psycopg.connect(self.primary.conninfo(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DBNAME}")
            # Commits wait for the local WAL flush at least: the cluster's own setting (off, for
            # speed) would lose acknowledged commits to a kill -9 before the standby saw them.
            conn.execute(
                f"ALTER DATABASE {DBNAME} SET synchronous_commit = %s"
                % ("'local'" if self.synchronous is None else f"'{self.synchronous}'")
            )
        migrate(self.primary.conninfo(DBNAME))
        standby = EmbeddedPostgres(base_backup(self.primary), fsync=False)
        self.standby = standby
        port = self.primary.port
        if self.lag > 0:
            self.relay = LaggingRelay(self.primary.port, self.lag)
            port = self.relay.port
        with (standby.datadir / "postgresql.auto.conf").open("a") as conf:  # the last line wins
            conf.write(
                f"primary_conninfo = 'host=127.0.0.1 port={port} user={SUPERUSER}"
                f" application_name={STANDBY_NAME}'\n"
            )
        standby.start()  # pg_ctl --wait: returns once the standby accepts read-only connections
        if self.synchronous is not None:
            with psycopg.connect(self.primary.conninfo(), autocommit=True) as conn:
                conn.execute(f"ALTER SYSTEM SET synchronous_standby_names = '{STANDBY_NAME}'")
                conn.execute("SELECT pg_reload_conf()")
                self._wait_for(
                    conn,
                    "SELECT EXISTS (SELECT FROM pg_stat_replication WHERE sync_state = 'sync')",
                    "the standby to become synchronous",
                )
        self.caught_up()

    @property
    def active_standby(self) -> EmbeddedPostgres:
        assert self.standby is not None, "the pair is not started"
        return self.standby

    def dsn(self) -> str:
        """The multi-host URL a fleet uses: the primary, then the standby, and only a writable
        one accepted (after a failover, the promoted standby)."""
        hosts = f"127.0.0.1:{self.primary.port},127.0.0.1:{self.active_standby.port}"
        return f"postgresql://{SUPERUSER}@{hosts}/{DBNAME}?target_session_attrs=read-write"

    def caught_up(self, timeout: float = CATCH_UP_SECONDS) -> None:
        """Return once the standby has replayed the primary's WAL as it is now: what the primary
        committed before this call is visible on the standby after it."""
        with psycopg.connect(self.primary.conninfo(DBNAME), autocommit=True) as primary:
            row = primary.execute("SELECT pg_current_wal_lsn()::text").fetchone()
        assert row is not None
        with psycopg.connect(self.active_standby.conninfo(DBNAME), autocommit=True) as standby:
            self._wait_for(
                standby,
                f"SELECT pg_last_wal_replay_lsn() >= '{row[0]}'::pg_lsn",
                f"the standby to replay up to {row[0]}",
                timeout,
            )

    def kill_primary(self) -> None:
        """`kill -9` of the primary as a host dies: every process of the server at once (all
        stopped first, so none notices the others going), no shutdown, nothing flushed."""
        pids = self._hung or server_processes(self.primary)
        signal_all(pids, signal.SIGSTOP)
        signal_all(pids, signal.SIGKILL)
        self._hung = []
        # Its pid file would have `destroy` signal whatever process gets that pid next.
        (self.primary.datadir / "postmaster.pid").unlink(missing_ok=True)

    def hang_primary(self) -> None:
        """SIGSTOP of every process of the primary: connections stay open and unanswered, new ones
        are accepted by the kernel and never served, as with a frozen host."""
        self._hung = server_processes(self.primary)
        signal_all(self._hung, signal.SIGSTOP)

    def promote(self) -> float:
        """Promote the standby (`pg_ctl promote --wait`); the seconds it took."""
        began = time.monotonic()
        self.active_standby.promote()
        return time.monotonic() - began

    def destroy(self) -> None:
        """Stop both servers (a hung primary is killed first) and the relay; delete their files."""
        if self._hung:
            self.kill_primary()
        if self.relay is not None:
            self.relay.close()
        if self.standby is not None:
            self.standby.destroy()
        self.primary.destroy()

    @staticmethod
    def _wait_for(
        conn: psycopg.Connection[tuple[object, ...]],
        query: str,
        what: str,
        timeout: float = CATCH_UP_SECONDS,
    ) -> None:
        deadline = time.monotonic() + timeout
        while True:
            row = conn.execute(query).fetchone()
            if row is not None and row[0]:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited {timeout}s for {what}")
            time.sleep(0.01)
