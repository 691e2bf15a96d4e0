"""Every connection tireless opens: the deadlines and keepalives it adds to the operator's DSN, so
a dead or unreachable host is given up within seconds; the deadline of each call, so a host that
hangs (frozen, not dead: its kernel still acknowledges, and no keepalive fails) is given up too; the
pool that reconnects each second after a failover; and the backoff between reconnects."""

from __future__ import annotations

import contextlib
import logging
import os
import random
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any, Self, TypeVar

import psycopg
from psycopg.abc import PQGen
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import AsyncConnectionPool, ConnectionPool

log = logging.getLogger(__name__)

RV = TypeVar("RV")

CONNECTION_DEFAULTS: dict[str, str] = {
    "connect_timeout": "5",  # seconds per host tried: a multi-host DSN moves on to the next
    "keepalives": "1",
    "keepalives_idle": "10",  # an idle connection (a LISTEN) is probed after 10 s of silence,
    "keepalives_interval": "3",  # then every 3 s,
    "keepalives_count": "3",  # and dropped after 3 probes unanswered: a dead host in ~19 s
    "tcp_user_timeout": "15000",  # ms: data sent and not acknowledged for 15 s drops the connection
    # Every query tireless sends is short: compiling one (PostgreSQL's JIT, when the planner's
    # estimate passes jit_above_cost) costs ~0.85 s for a read that takes 2 ms.
    "options": "-c jit=off",
}
"""What tireless adds to a DSN that does not set it (libpq ignores the TCP ones on a unix socket);
options the DSN has are kept, and jit=off is added to them unless they set jit."""

ENVIRONMENT = {"connect_timeout": "PGCONNECT_TIMEOUT", "options": "PGOPTIONS"}
"""A default the operator's environment already sets for libpq is not added either."""


def with_defaults(conninfo: str) -> str:
    """The DSN (URL or key=value, one host or several) with CONNECTION_DEFAULTS added where the
    operator set neither the parameter nor its environment variable; theirs always win."""
    given = conninfo_to_dict(conninfo)
    added = {
        key: value
        for key, value in CONNECTION_DEFAULTS.items()
        if key not in given and not os.environ.get(ENVIRONMENT.get(key, ""))
    }
    options = str(given.get("options") or "")
    if options and "jit" not in options:
        added["options"] = f"{options} {CONNECTION_DEFAULTS['options']}"
    return make_conninfo(conninfo, **added) if added else conninfo


class Backoff:
    """The waits between reconnects: 0.2 s doubling up to 5 s, each jittered by up to a fifth so
    a fleet that lost its database does not come back in step; `reset` after a success."""

    FIRST = 0.2
    MOST = 5.0

    def __init__(self) -> None:
        self.tries = 0
        """Waits since the last success: 0 when an outage is only beginning."""

    def next(self) -> float:
        """Seconds to wait before the next try."""
        delay = min(self.MOST, self.FIRST * 2.0 ** min(self.tries, 10))
        self.tries += 1
        return min(self.MOST, delay * random.uniform(0.8, 1.2))

    def reset(self) -> None:
        self.tries = 0


def answer_lost(error: BaseException) -> bool:
    """Whether a call may have reached the database without its answer reaching us: the connection
    broke or could not be had (OperationalError: a failover, a cut network, a client deadline), or
    it led to a host that can no longer write (25006: a demoted primary). Such a call is sent
    again; the store's fenced functions answer one that did commit as done."""
    return isinstance(error, psycopg.OperationalError) or (
        isinstance(error, psycopg.Error) and error.sqlstate == "25006"
    )


CALL_DEADLINE = 60.0
"""Seconds any call of a store may wait for the database's answer before its connection is given
up: no call tireless makes takes that long on a host that answers."""

WORKER_CALL_DEADLINE = 5.0
"""The worker's calls (claim, renew, finish: each a few milliseconds) wait at most this long, so a
hung primary is left for the promoted standby within seconds."""

RECONNECT_EVERY = 1.0
"""Seconds between a pool's tries to replace a connection it lost: psycopg_pool doubles its wait
after each failure, so a promotion 45 s after the crash would be noticed half a minute late."""


class _Watch:
    """One call watched for its deadline."""

    cut = False
    """True once its socket was shut down because the deadline passed."""


class _Deadlines:
    """One thread for the process: it shuts down the socket of a call past its deadline, so the
    call fails as if the network were cut (OperationalError) and its connection is dropped."""

    TICK = 0.1

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._due: dict[_Watch, tuple[float, int]] = {}
        self._watcher: threading.Thread | None = None

    @contextlib.contextmanager
    def watching(self, fd: int, seconds: float) -> Iterator[_Watch]:
        """The block's waits on the socket `fd` end by `seconds` from now."""
        key = _Watch()
        with self._lock:
            self._due[key] = (time.monotonic() + seconds, fd)
            if self._watcher is None:
                self._watcher = threading.Thread(target=self._watch, name="deadlines", daemon=True)
                self._watcher.start()
        try:
            yield key
        finally:
            with self._lock:  # after a cut under way: the socket is the call's until then
                self._due.pop(key, None)

    def _watch(self) -> None:
        while True:
            time.sleep(self.TICK)
            now = time.monotonic()
            with self._lock:
                for key, (due, fd) in list(self._due.items()):
                    if due <= now:
                        del self._due[key]
                        key.cut = True
                        self._cut(fd)

    @staticmethod
    def _cut(fd: int) -> None:
        log.warning("no answer from the database in time: its connection is given up")
        with contextlib.suppress(OSError), socket.socket(fileno=os.dup(fd)) as sock:
            sock.shutdown(socket.SHUT_RDWR)


_deadlines = _Deadlines()


Host = tuple[str, str]
"""A host of a DSN and its port, as the DSN spells them."""

DEFAULT_PORT = os.environ.get("PGPORT") or "5432"


class _HostMemory:
    """Per multi-host DSN, the host that last answered a connection (tried first) and the hosts
    whose call ran past its deadline (tried last): after a failover, every new connection goes
    to the promoted standby at once instead of waiting `connect_timeout` on a hung old primary
    first, as libpq's order alone would."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._answered: dict[str, Host] = {}
        self._hung: dict[str, set[Host]] = {}

    def ordered(self, conninfo: str) -> str:
        """The DSN with its hosts in the order to try them (the DSN's own, if it has one host,
        or asks for load_balance_hosts)."""
        params = conninfo_to_dict(conninfo)
        hosts = str(params.get("host", "")).split(",")
        ports = str(params.get("port", "")).split(",")
        if len(hosts) < 2 or len(ports) not in (1, len(hosts)) or "hostaddr" in params:
            return conninfo
        if params.get("load_balance_hosts", "disable") != "disable":
            return conninfo
        listed = list(zip(hosts, ports * len(hosts) if len(ports) == 1 else ports, strict=True))
        listed = [(host, port or DEFAULT_PORT) for host, port in listed]
        with self._lock:
            answered = self._answered.get(conninfo)
            hung = self._hung.get(conninfo, set())
        order = sorted(listed, key=lambda host: 0 if host == answered else 2 if host in hung else 1)
        if order == listed:
            return conninfo
        return make_conninfo(
            conninfo, host=",".join(h for h, _ in order), port=",".join(p for _, p in order)
        )

    def answered(self, conninfo: str, host: Host) -> None:
        with self._lock:
            self._answered[conninfo] = host
            self._hung.get(conninfo, set()).discard(host)

    def hung(self, conninfo: str, host: Host) -> None:
        with self._lock:
            self._hung.setdefault(conninfo, set()).add(host)
            if self._answered.get(conninfo) == host:
                del self._answered[conninfo]


_hosts = _HostMemory()


@contextlib.contextmanager
def _answered_in_time(conn: DeadlineConnection | AsyncDeadlineConnection) -> Iterator[None]:
    """The block's wait on `conn` ends by its deadline; a host that let it pass is tried last."""
    assert conn.deadline is not None
    with _deadlines.watching(conn.pgconn.socket, conn.deadline) as watch:
        try:
            yield
        except psycopg.OperationalError:
            if watch.cut:
                _hosts.hung(conn.dsn, conn.host)
            raise


class DeadlineConnection(psycopg.Connection[Any]):
    """A connection whose every wait for an answer ends by `deadline` seconds (None: no end);
    a wait with its own timeout (notifications) keeps it. Of a DSN's several hosts it tries the
    one that answered last first, and one whose call ran past its deadline last."""

    deadline: float | None = CALL_DEADLINE
    dsn = ""
    """The DSN as given, before its hosts were ordered."""
    host: Host = ("", "")
    """The host and port it reached."""

    @classmethod
    def connect(cls, conninfo: str = "", **kwargs: Any) -> Self:
        conn = super().connect(_hosts.ordered(conninfo), **kwargs)
        conn.dsn, conn.host = conninfo, (conn.info.host, str(conn.info.port))
        _hosts.answered(conninfo, conn.host)
        return conn

    def wait(self, gen: PQGen[RV], interval: float = 0.1, timeout: float | None = None) -> RV:
        if timeout is not None or self.deadline is None:
            return super().wait(gen, interval, timeout)
        with _answered_in_time(self):
            return super().wait(gen, interval, timeout)


class AsyncDeadlineConnection(psycopg.AsyncConnection[Any]):
    """DeadlineConnection for asyncio."""

    deadline: float | None = CALL_DEADLINE
    dsn = ""
    host: Host = ("", "")

    @classmethod
    async def connect(cls, conninfo: str = "", **kwargs: Any) -> Self:
        conn = await super().connect(_hosts.ordered(conninfo), **kwargs)
        conn.dsn, conn.host = conninfo, (conn.info.host, str(conn.info.port))
        _hosts.answered(conninfo, conn.host)
        return conn

    async def wait(self, gen: PQGen[RV], interval: float = 0.1, timeout: float | None = None) -> RV:
        if timeout is not None or self.deadline is None:
            return await super().wait(gen, interval, timeout)
        with _answered_in_time(self):
            return await super().wait(gen, interval, timeout)


class FailoverPool(ConnectionPool[DeadlineConnection]):
    """A pool of DeadlineConnections that tries to replace a lost connection every
    RECONNECT_EVERY seconds, for as long as the database is away."""

    def __init__(
        self, conninfo: str, *, deadline: float | None = CALL_DEADLINE, **options: Any
    ) -> None:
        def configure(conn: DeadlineConnection) -> None:
            conn.deadline = deadline

        super().__init__(
            with_defaults(conninfo), connection_class=DeadlineConnection, configure=configure,
            **options,
        )  # fmt: skip

    def schedule_task(self, task: Any, delay: float) -> None:
        super().schedule_task(task, min(delay, RECONNECT_EVERY))


class AsyncFailoverPool(AsyncConnectionPool[AsyncDeadlineConnection]):
    """FailoverPool for asyncio."""

    def __init__(
        self, conninfo: str, *, deadline: float | None = CALL_DEADLINE, **options: Any
    ) -> None:
        async def configure(conn: AsyncDeadlineConnection) -> None:
            conn.deadline = deadline

        super().__init__(
            with_defaults(conninfo), connection_class=AsyncDeadlineConnection,
            configure=configure, **options,
        )  # fmt: skip

    async def schedule_task(self, task: Any, delay: float) -> None:
        await super().schedule_task(task, min(delay, RECONNECT_EVERY))
