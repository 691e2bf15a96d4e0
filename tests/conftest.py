"""Fixtures: one private PostgreSQL per test session, a migrated template database
(pytest-postgresql makes and loads it), and a fresh database per test copied from that template
(DatabaseCopies); and the fixtures several directories share: a store of each kind (any_store),
login roles of each group (login), and the workers a test starts (worker_process)."""

from __future__ import annotations

import asyncio
import itertools
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from types import FrameType
from typing import Any, cast

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo
from pytest_postgresql import factories
from pytest_postgresql.executors.noop import NoopExecutor

from dev.embedded import EmbeddedPostgres
from tests.support.roles import Login
from tests.support.stores import Blocking
from tireless import JobStore, migrate
from tireless.store.asynchronous import AsyncJobStore

SERVER = pytest.StashKey[EmbeddedPostgres]()


def pytest_configure(config: pytest.Config) -> None:
    """Start the session's private cluster before any fixture needs it; stop it at the end,
    also when a test fails or the run is interrupted (SIGTERM is turned into KeyboardInterrupt)."""
    if hasattr(config, "workerinput"):
        return
    server = EmbeddedPostgres(
        fsync=False
    )  # tests may trade durability for speed; the benchmark may not
    config.add_cleanup(server.destroy)
    server.start()
    without_jit(server)
    config.stash[SERVER] = server
    config.option.postgresql_host = server.socket_dir
    config.option.postgresql_port = server.port
    config.option.postgresql_user = "postgres"

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupt)


def without_jit(server: EmbeddedPostgres) -> None:
    """JIT off for the cluster (kept across its restarts): on the tests' tables, never analysed,
    the planner's estimates put the status and dashboard reads past jit_above_cost, and compiling
    them took 0.8 s a call, for queries that run in milliseconds without it."""
    with psycopg.connect(server.conninfo(), autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET jit = off")
        conn.execute("SELECT pg_reload_conf()")


def load_migrations(host: str, port: int, user: str, dbname: str, **_: Any) -> None:
    """pytest-postgresql loader: migrate the template database once per session, then compact its
    system catalogs. Forty migrations leave dead rows in pg_proc, pg_depend and the rest (12 MB
    where 9 MB is live), and every test's copy of the template copies them again. The tables of
    schema tireless are left alone: a vacuumed empty table changes the planner's estimates."""
    conninfo = f"host={host} port={port} user={user} dbname={dbname}"
    migrate(conninfo)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        catalogs = conn.execute(
            "SELECT oid::regclass::text FROM pg_class"
            " WHERE relnamespace = 'pg_catalog'::regnamespace AND relkind = 'r'"
        ).fetchall()
        conn.execute("VACUUM FULL " + ", ".join(name for (name,) in catalogs))


postgresql_noproc = factories.postgresql_noproc(dbname="tireless_test", load=[load_migrations])


class DatabaseCopies:
    """A fresh copy of the migrated template per test, made and dropped over one connection kept
    for the session (pytest-postgresql's janitor connects anew and asks more for each: several
    times slower over a thousand tests). A copy takes a tenth of a second, so the next test's
    copy is made, and the last test's dropped, on a thread of their own while a test runs.

    A test marked quiet_cluster has nothing run beside it: the history's roll-up waits for every
    transaction of the cluster older than its own, and a copy being made is one. A server a test
    restarted is connected to again."""

    def __init__(self, server: EmbeddedPostgres, template: str, prefix: str) -> None:
        self._server, self._template, self._prefix = server, template, prefix
        self._names = itertools.count(1)
        self._admin: psycopg.Connection[Any] | None = None
        self._beside = ThreadPoolExecutor(max_workers=1, thread_name_prefix="database-copies")
        self._next: Future[str] | None = None
        self._drops: list[Future[None]] = []

    def take(self, *, quiet: bool) -> str:
        """A fresh copy of the template, for one test; unless quiet, the next test's is begun."""
        copy = self._next or self._beside.submit(self._copy)
        self._next = None
        name = copy.result()
        if quiet:
            self._beside.submit(lambda: None).result()  # the drops queued before it are done
        else:
            self._next = self._beside.submit(self._copy)
        return name

    def give_back(self, name: str) -> None:
        """The test is over: its database is dropped (a process it left connected is cut off)."""
        for drop in [drop for drop in self._drops if drop.done()]:
            drop.result()  # a drop that failed fails the run here
            self._drops.remove(drop)
        self._drops.append(
            self._beside.submit(
                self._execute,
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)),
            )
        )

    def close(self) -> None:
        if self._next is not None:
            self.give_back(self._next.result())
        for drop in self._drops:
            drop.result()
        self._beside.shutdown()
        if self._admin is not None:
            self._admin.close()

    def _copy(self) -> str:
        name = f"{self._prefix}_{next(self._names)}"
        self._execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(self._template)
            )
        )
        return name

    def _execute(self, statement: sql.Composed) -> None:
        for attempt in range(300):
            try:
                if self._admin is None or self._admin.closed:
                    self._admin = psycopg.connect(self._server.conninfo(), autocommit=True)
                self._admin.execute(statement)
                return
            except psycopg.OperationalError:  # the server restarts: a test restarted it
                if self._admin is not None:
                    self._admin.close()
                self._admin = None
                if attempt == 299:
                    raise
                time.sleep(0.2)


@pytest.fixture(scope="session")
def database_copies(
    postgresql_noproc: NoopExecutor, request: pytest.FixtureRequest
) -> Iterator[DatabaseCopies]:
    copies = DatabaseCopies(
        request.config.stash[SERVER], postgresql_noproc.template_dbname, postgresql_noproc.dbname
    )
    yield copies
    copies.close()


@dataclass(frozen=True)
class Database:
    """The test's own migrated database, for as many independent connections as a test needs."""

    conninfo: str
    url: str
    server: EmbeddedPostgres

    def connect(
        self, *, autocommit: bool = True, lock_timeout: str = "10s"
    ) -> psycopg.Connection[Any]:
        """A new connection; lock_timeout makes a locking bug fail instead of hanging."""
        conn = psycopg.connect(self.conninfo, autocommit=autocommit)
        conn.execute(f"SET lock_timeout = '{lock_timeout}'")
        return conn

    def scalar(self, query: str, params: dict[str, Any] | None = None) -> Any:
        """The first column of the first row of a query, run as the superuser."""
        with self.connect() as conn:
            row = conn.execute(query, params).fetchone()
            return None if row is None else row[0]


@pytest.fixture
def server(request: pytest.FixtureRequest) -> EmbeddedPostgres:
    return request.config.stash[SERVER]


@pytest.fixture
def db(
    database_copies: DatabaseCopies, server: EmbeddedPostgres, request: pytest.FixtureRequest
) -> Iterator[Database]:
    dbname = database_copies.take(
        quiet=request.node.get_closest_marker("quiet_cluster") is not None
    )
    yield Database(conninfo=server.conninfo(dbname), url=server.url(dbname), server=server)
    database_copies.give_back(dbname)


@pytest.fixture
def store(db: Database) -> Iterator[JobStore]:
    with JobStore(db.conninfo) as job_store:
        yield job_store


@pytest.fixture
def login(db: Database) -> Iterator[Login]:
    """login(group) -> conninfo of a new LOGIN role that is a member of group (of none: an
    outside login). Roles belong to the cluster, so each gets a unique name and is dropped (with
    what it owns) at teardown."""
    created: list[str] = []

    def make(group: str | None) -> str:
        name = f"{(group or 'outsider').removeprefix('tireless_')}_{uuid.uuid4().hex[:8]}"
        with db.connect() as conn:
            conn.execute(f'CREATE ROLE "{name}" LOGIN')
            if group is not None:
                conn.execute(f'GRANT {group} TO "{name}"')
        created.append(name)
        return make_conninfo(db.conninfo, user=name)

    yield make
    with db.connect() as conn:
        for name in created:
            conn.execute(
                "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE usename = %s",
                [name],
            )
            conn.execute(f'DROP OWNED BY "{name}"')
            conn.execute(f'DROP ROLE "{name}"')


@pytest.fixture
def worker_process(db: Database) -> Iterator[list[subprocess.Popen[str]]]:
    """Workers started by a test; any still running at its end are killed."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        process.kill()
        process.wait()


@pytest.fixture(params=["sync", "async"])
def any_store(request: pytest.FixtureRequest, db: Database) -> Iterator[JobStore]:
    if request.param == "sync":
        with JobStore(db.conninfo) as store:
            yield store
        return
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    facade = Blocking(AsyncJobStore(db.conninfo), loop)
    facade.open()
    try:
        yield cast(JobStore, facade)
    finally:
        facade.close()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()
