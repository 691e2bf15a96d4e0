"""A real hot standby for the tests: a private primary, migrated, and a streaming standby made
from it by `pg_basebackup -R`, both from the same private binaries as the session's cluster, each
in its own directory on its own port of 127.0.0.1. The system cluster is never touched."""

from __future__ import annotations

import os
import pwd
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from tests.conftest import Database
from tireless import migrate
from tireless.devtools.embedded import SUPERUSER, EmbeddedPostgres

DBNAME = "tireless"
CATCH_UP_SECONDS = 30.0


@dataclass(frozen=True)
class Replicated:
    """A migrated primary and its hot standby, database `tireless` on each."""

    primary: Database
    standby: Database

    def caught_up(self, timeout: float = CATCH_UP_SECONDS) -> None:
        """Return once the standby has replayed the primary's WAL as it is now: what the primary
        committed before this call is visible on the standby after it."""
        with psycopg.connect(self.primary.conninfo, autocommit=True) as primary:
            target = primary.execute("SELECT pg_current_wal_lsn()").fetchone()
        assert target is not None
        deadline = time.monotonic() + timeout
        with psycopg.connect(self.standby.conninfo, autocommit=True) as standby:
            while True:
                replayed = standby.execute(
                    "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", target
                ).fetchone()
                if replayed is not None and replayed[0]:
                    return
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"the standby did not replay up to {target[0]} in {timeout}s"
                    )
                time.sleep(0.01)


def base_backup(primary: EmbeddedPostgres) -> Path:
    """A copy of the primary's cluster, set up to follow it (`pg_basebackup -R`: standby.signal
    and primary_conninfo over the primary's unix socket), in a new directory."""
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


@contextmanager
def replicated() -> Iterator[Replicated]:
    """A primary migrated before the copy, and its standby accepting reads; both stopped and
    deleted on exit."""
    primary = EmbeddedPostgres(fsync=False)
    standby: EmbeddedPostgres | None = None
    try:
        primary.start()
        with psycopg.connect(primary.conninfo(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DBNAME}")
        migrate(primary.conninfo(DBNAME))
        standby = EmbeddedPostgres(base_backup(primary), fsync=False)
        standby.start()  # pg_ctl --wait: returns once the standby accepts read-only connections
        pair = Replicated(
            Database(primary.conninfo(DBNAME), primary.url(DBNAME), primary),
            Database(standby.conninfo(DBNAME), standby.url(DBNAME), standby),
        )
        pair.caught_up()
        yield pair
    finally:
        if standby is not None:
            standby.destroy()
        primary.destroy()


@pytest.fixture(scope="module")
def hot_standby() -> Iterator[Replicated]:
    """One primary and hot standby per test module (about two seconds to make)."""
    with replicated() as pair:
        yield pair
