"""The deadlines and keepalives tireless adds to every DSN, and only where the operator set none;
the deadline of each call, and the pool that replaces its connections after a failover."""

from __future__ import annotations

import asyncio
import socket

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from tests.conftest import Database
from tireless.connect import (
    CONNECTION_DEFAULTS,
    AsyncDeadlineConnection,
    DeadlineConnection,
    FailoverPool,
    with_defaults,
)


def test_a_url_gets_every_default_and_keeps_what_it_says() -> None:
    dsn = conninfo_to_dict(with_defaults("postgresql://runner:pw@db.example:5433/tireless"))
    assert (
        dsn
        == {
            "user": "runner",
            "password": "pw",
            "host": "db.example",
            "port": "5433",
            "dbname": "tireless",
        }
        | CONNECTION_DEFAULTS
    )


def test_a_key_value_dsn_gets_every_default() -> None:
    dsn = conninfo_to_dict(with_defaults("host=db.example dbname=tireless user=runner"))
    assert (
        dsn == {"host": "db.example", "dbname": "tireless", "user": "runner"} | CONNECTION_DEFAULTS
    )


def test_a_multi_host_url_keeps_its_hosts_and_target_session_attrs() -> None:
    url = "postgresql://runner@10.0.0.1:5432,10.0.0.2:5432/tireless?target_session_attrs=read-write"
    dsn = conninfo_to_dict(with_defaults(url))
    assert (dsn["host"], dsn["port"]) == ("10.0.0.1,10.0.0.2", "5432,5432")
    assert dsn["target_session_attrs"] == "read-write"
    assert dsn["tcp_user_timeout"] == CONNECTION_DEFAULTS["tcp_user_timeout"]


def test_the_operators_own_settings_win() -> None:
    given = "host=db.example keepalives=0 keepalives_idle=60 connect_timeout=3 tcp_user_timeout=0"
    dsn = conninfo_to_dict(with_defaults(given))
    assert (dsn["keepalives"], dsn["keepalives_idle"]) == ("0", "60")
    assert (dsn["connect_timeout"], dsn["tcp_user_timeout"]) == ("3", "0")
    assert dsn["keepalives_count"] == CONNECTION_DEFAULTS["keepalives_count"]


def test_pgconnect_timeout_in_the_environment_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGCONNECT_TIMEOUT", "2")
    assert "connect_timeout" not in conninfo_to_dict(with_defaults("host=db.example"))


def test_a_unix_socket_dsn_with_the_defaults_connects(db: Database) -> None:
    with psycopg.connect(with_defaults(db.conninfo)) as conn:  # libpq ignores the TCP settings
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_a_call_with_no_answer_by_its_deadline_fails_and_its_connection_is_dropped(
    db: Database,
) -> None:
    # pg_sleep keeps the answer back as a hung host would; the deadline alone ends the wait.
    with DeadlineConnection.connect(db.conninfo, autocommit=True) as conn:
        conn.deadline = 0.5
        assert conn.execute("SELECT 1").fetchone() == (1,)
        with pytest.raises(psycopg.OperationalError):
            conn.execute("SELECT pg_sleep(60)")
        assert conn.broken


def test_an_async_call_with_no_answer_by_its_deadline_fails_and_its_connection_is_dropped(
    db: Database,
) -> None:
    async def hang() -> bool:
        async with await AsyncDeadlineConnection.connect(db.conninfo, autocommit=True) as conn:
            conn.deadline = 0.5
            with pytest.raises(psycopg.OperationalError):
                await conn.execute("SELECT pg_sleep(60)")
            return conn.broken

    assert asyncio.run(hang())


def test_a_pool_whose_connections_broke_gives_new_ones_after_a_drain(db: Database) -> None:
    with FailoverPool(db.conninfo, deadline=0.5, min_size=2, max_size=2) as pool:
        pool.wait()
        with pool.connection() as conn, pytest.raises(psycopg.OperationalError):
            conn.execute("SELECT pg_sleep(60)")
        pool.drain()
        with pool.connection() as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
            assert isinstance(conn, DeadlineConnection)
            assert conn.deadline == 0.5


def test_of_several_hosts_the_one_that_answered_last_is_tried_first(db: Database) -> None:
    # A host that accepts connections and never answers them: a hung primary.
    with socket.create_server(("127.0.0.1", 0)) as hung:
        dsn = make_conninfo(
            db.conninfo,
            host="127.0.0.1,127.0.0.1",
            port=f"{hung.getsockname()[1]},{db.server.port}",
            connect_timeout="2",
        )
        for _ in range(3):
            with DeadlineConnection.connect(dsn, autocommit=True) as conn:
                assert conn.info.port == db.server.port
        hung.settimeout(0)
        hung.accept()  # the first connection tried the hung host
        with pytest.raises(BlockingIOError):
            hung.accept()  # the next two went to the host that answered


def test_the_operators_options_keep_theirs_and_gain_jit_off_unless_they_set_jit(
    db: Database,
) -> None:
    dsn = conninfo_to_dict(with_defaults("host=db.example options='-c work_mem=8MB'"))
    assert dsn["options"] == "-c work_mem=8MB -c jit=off"
    dsn = conninfo_to_dict(with_defaults("host=db.example options='-c jit=on'"))
    assert dsn["options"] == "-c jit=on"
    dbname = conninfo_to_dict(db.conninfo)["dbname"]
    with psycopg.connect(db.conninfo, autocommit=True) as admin:  # PostgreSQL's own default
        admin.execute(sql.SQL("ALTER DATABASE {} SET jit = on").format(sql.Identifier(str(dbname))))
    with psycopg.connect(db.conninfo, autocommit=True) as plain:
        assert plain.execute("SHOW jit").fetchone() == ("on",)
    with psycopg.connect(with_defaults(db.conninfo), autocommit=True) as conn:
        assert conn.execute("SHOW jit").fetchone() == ("off",)
