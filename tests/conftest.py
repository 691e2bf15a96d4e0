"""Fixtures: one private PostgreSQL per test session, a migrated template database, and a fresh
database per test created from that template (pytest-postgresql's janitor does the copying)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any

import psycopg
import pytest
from pytest_postgresql import factories

from tireless import JobStore, migrate
from tireless.devtools.embedded import EmbeddedPostgres

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
    config.stash[SERVER] = server
    config.option.postgresql_host = server.socket_dir
    config.option.postgresql_port = server.port
    config.option.postgresql_user = "postgres"

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupt)


def load_migrations(host: str, port: int, user: str, dbname: str, **_: Any) -> None:
    """pytest-postgresql loader: migrate the template database once per session."""
    migrate(f"host={host} port={port} user={user} dbname={dbname}")


postgresql_noproc = factories.postgresql_noproc(dbname="tireless_test", load=[load_migrations])
postgresql = factories.postgresql("postgresql_noproc")


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
def db(postgresql: psycopg.Connection[Any], server: EmbeddedPostgres) -> Database:
    dbname = postgresql.info.dbname
    return Database(conninfo=server.conninfo(dbname), url=server.url(dbname), server=server)


@pytest.fixture
def store(db: Database) -> Iterator[JobStore]:
    with JobStore(db.conninfo) as job_store:
        yield job_store
