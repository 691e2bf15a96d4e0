"""`sweep --every` and `poll --every` outlive their database: a private cluster stopped as in a
crash and started again on its port, they connect again and go on, and end only at SIGTERM (0).
Only a database unreachable at their start ends them with exit 4."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import IO, Any

import psycopg
import pytest

from dev.embedded import EmbeddedPostgres, free_port
from dev.replicas import DBNAME, ReplicaPair
from tests.helpers import enqueue_jobs, tireless_cli, wait_until
from tireless import JobStore, migrate

POLLER = "tireless-test-poller"
"""The poller's application_name: how the test finds its connection in pg_stat_activity."""


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedPostgres]:
    """A migrated cluster of the module's own, which its tests stop and start at will."""
    server = EmbeddedPostgres(fsync=False)
    try:
        server.start()
        migrate(server.conninfo())
        with connect(server) as conn:
            # The cluster runs without synchronous commit (for speed): a crash (stop -m immediate)
            # would lose what was just committed, the sweeper's sweeps too.
            conn.execute("ALTER DATABASE postgres SET synchronous_commit = on")
        yield server
    finally:
        server.destroy()


def over_tcp(server: EmbeddedPostgres, **params: str) -> str:
    query = "".join(f"&{key}={value}" for key, value in params.items())
    return f"postgresql://postgres@127.0.0.1:{server.port}/postgres?sslmode=disable{query}"


def connect(server: EmbeddedPostgres) -> psycopg.Connection[Any]:
    return psycopg.connect(server.conninfo(), autocommit=True)


def start(server: EmbeddedPostgres, *args: str, **params: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    return subprocess.Popen(
        [sys.executable, "-m", "tireless", "--database", over_tcp(server, **params), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def read_until(stream: IO[str] | None, text: str, timeout: float = 30) -> str:
    """What the stream gave up to and including `text` (raw reads: nothing waits in a buffer)."""
    assert stream is not None
    fd, seen = stream.fileno(), b""
    deadline = time.monotonic() + timeout
    while text.encode() not in seen:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"never printed {text!r}: {seen.decode()}"
        if select.select([fd], [], [], remaining)[0]:
            chunk = os.read(fd, 65536)
            assert chunk, f"the output ended without {text!r}: {seen.decode()}"
            seen += chunk
    return seen.decode()


def crash_and_restart(server: EmbeddedPostgres) -> None:
    server.stop(mode="immediate")
    server.start()  # the same data directory and port


def end_lease(server: EmbeddedPostgres, job_id: int) -> None:
    with connect(server) as conn:
        conn.execute(
            "UPDATE tireless.job SET claim_expires_at = now() - interval '1 second'"
            " WHERE id = %(id)s",
            {"id": job_id},
        )


def stops_with_0(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    return err


def test_sweep_every_connects_again_after_a_crash_and_sweeps_on(cluster: EmbeddedPostgres) -> None:
    with connect(cluster) as conn:
        store = JobStore(conn)
        enqueue_jobs(store, 2)
        before, after = store.claim_next("w1", ["cc"]), store.claim_next("w1", ["cc"])
    assert before is not None
    assert after is not None
    sweeper = start(cluster, "sweep", "--every", "1s")
    try:
        end_lease(cluster, before.id)
        read_until(sweeper.stdout, "returned 1 expired claim(s)")  # it runs, connected
        crash_and_restart(cluster)
        lost = read_until(sweeper.stderr, "reached again")  # at its next sweep, reconnected
        end_lease(cluster, after.id)  # only a sweeper connected again returns this one
        read_until(sweeper.stdout, "returned 1 expired claim(s)")
        err = lost + stops_with_0(sweeper)
    finally:
        sweeper.kill()
        sweeper.wait()
    assert err.count("database connection lost") == 1, err
    with connect(cluster) as conn:
        state = "SELECT state::text FROM tireless.job WHERE id = %(id)s"
        assert conn.execute(state, {"id": after.id}).fetchone() == ("pending",)


def test_poll_every_connects_again_after_a_crash_and_polls_on(cluster: EmbeddedPostgres) -> None:
    rounds = (
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = %(name)s"
        " AND query LIKE '%%next_poll_due_at%%'"
    )

    def polling() -> bool:  # its connection has finished a round and waits for the next
        with connect(cluster) as conn:
            row = conn.execute(rounds, {"name": POLLER}).fetchone()
            return row is not None and row[0] == 1

    poller = start(cluster, "poll", "--every", "1s", application_name=POLLER)
    try:
        wait_until(polling, "the poller's first round")
        crash_and_restart(cluster)
        lost = read_until(poller.stderr, "reached again")
        wait_until(polling, "a round on the new connection")
        err = lost + stops_with_0(poller)
    finally:
        poller.kill()
        poller.wait()
    assert err.count("database connection lost") == 1, err


def test_sweep_every_exits_4_when_the_database_is_unreachable_at_its_start() -> None:
    nobody = f"postgresql://postgres@127.0.0.1:{free_port()}/postgres"
    result = tireless_cli(nobody, "sweep", "--every", "1s")
    assert result.returncode == 4, result.stderr
    assert "cannot reach the database" in result.stderr


def test_sweep_every_sweeps_the_promoted_standby_soon_after_the_primary_hangs() -> None:
    """On the fleet's multi-host DSN: the primary is frozen (SIGSTOP: its connections stay open
    and unanswered) and the standby promoted. The sweeper's call to the frozen primary ends by
    the workers' deadline, it connects to the new primary and returns a 1 s lease that ran out
    there within 10 s, as a worker would be back."""
    with ReplicaPair(synchronous="on") as pair:
        with psycopg.connect(pair.primary.conninfo(DBNAME), autocommit=True) as conn:
            store = JobStore(conn)
            enqueue_jobs(store, 2)
            first = store.claim_next("w1", ["cc"], timedelta(seconds=1))
        assert first is not None
        env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
        sweeper = subprocess.Popen(
            [sys.executable, "-m", "tireless", "--database", pair.dsn(), "sweep", "--every", "1s"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            read_until(sweeper.stdout, "returned 1 expired claim(s)")  # it runs, on the primary
            pair.hang_primary()
            pair.promote()
            with psycopg.connect(pair.active_standby.conninfo(DBNAME), autocommit=True) as conn:
                second = JobStore(conn).claim_next("w2", ["cc"], timedelta(seconds=1))
            assert second is not None
            read_until(sweeper.stdout, "returned 1 expired claim(s)", timeout=10)
        finally:
            sweeper.kill()
            sweeper.wait()
