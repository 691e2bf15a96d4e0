"""No acknowledged work lost: `tireless status` and the dashboard warn when the store runs on a
primary that streams to a standby without synchronous commit (tireless.replication_warning), and
say nothing once the commit is synchronous, on a standby, or without one."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from dev.replicas import DBNAME
from tests.conftest import Database
from tests.helpers import tireless_cli, wait_until
from tests.standby import Replicated, hot_standby  # noqa: F401 (the fixture)
from tests.support.web import browser
from tireless.web.app import create_app

WARNING = "tireless.replication_warning()"
BANNER = 'id="replication-warning"'


def warning(database: Database) -> str | None:
    found: str | None = database.scalar(f"SELECT {WARNING}")
    return found


def status_warning(database: Database) -> str | None:
    """The `warning:` line of `tireless status`, or None; --json keeps stdout the list of lanes
    and says it on stderr."""
    text = tireless_cli(database.url, "status")
    assert text.returncode == 0, text.stderr
    as_json = tireless_cli(database.url, "status", "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert as_json.stdout.lstrip().startswith("[")
    first = text.stdout.splitlines()[0]
    said = first if first.startswith("warning: ") else None
    assert (said is None) == (as_json.stderr == ""), (text.stdout, as_json.stderr)
    if said is not None:
        assert as_json.stderr.strip() == f"tireless: {said}"
    return said


def dashboard_warns(database: Database) -> bool:
    with browser(create_app(database.conninfo)) as client:
        page = client.get("/")
    assert page.status_code == 200, page.text
    return BANNER in page.text


def synchronous_state(pair: Replicated) -> str | None:
    state: str | None = pair.primary.scalar("SELECT max(sync_state) FROM pg_stat_replication")
    return state


@contextmanager
def synchronous(pair: Replicated, names: str, commit: str) -> Iterator[None]:
    """The primary's synchronous_standby_names (ALTER SYSTEM and a reload) and the database's
    synchronous_commit (the pair sets it per database), in effect for every new session; undone
    on exit, the list first, so that no commit waits for a standby it names."""
    before = setting(pair.primary, "synchronous_commit")
    with admin(pair) as conn:
        conn.execute(f"ALTER DATABASE {DBNAME} SET synchronous_commit = '{commit}'")
        conn.execute(f"ALTER SYSTEM SET synchronous_standby_names = '{names}'")
        conn.execute("SELECT pg_reload_conf()")
    wait_until(
        lambda: (
            setting(pair.primary, "synchronous_standby_names") == names
            and setting(pair.primary, "synchronous_commit") == commit
        ),
        f"synchronous_standby_names {names!r} and synchronous_commit {commit!r}",
    )
    try:
        yield
    finally:
        with admin(pair) as conn:
            conn.execute("ALTER SYSTEM RESET synchronous_standby_names")
            conn.execute("SELECT pg_reload_conf()")
        wait_until(
            lambda: (
                setting(pair.primary, "synchronous_standby_names") == ""
                and synchronous_state(pair) == "async"
            ),
            "an empty synchronous_standby_names",
        )
        with admin(pair) as conn:
            conn.execute(f"ALTER DATABASE {DBNAME} SET synchronous_commit = '{before}'")


@contextmanager
def admin(pair: Replicated) -> Iterator[psycopg.Connection[Any]]:
    """A session of the primary whose commits wait for no standby."""
    with pair.primary.connect(autocommit=True) as conn:
        conn.execute("SET synchronous_commit = local")
        yield conn


def setting(database: Database, name: str) -> str:
    """A setting as a new session of the database has it."""
    with psycopg.connect(database.conninfo, autocommit=True) as conn:
        row = conn.execute("SELECT current_setting(%s)", [name]).fetchone()
    assert row is not None
    value: str = row[0]
    return value


def test_an_asynchronous_standby_is_warned_of_by_status_and_the_dashboard(
    hot_standby: Replicated,  # noqa: F811 (the fixture)
) -> None:
    assert synchronous_state(hot_standby) == "async"
    said = status_warning(hot_standby.primary)
    assert said is not None
    assert "streams to 1 standby(s) without synchronous commit" in said
    assert "synchronous_standby_names is empty" in said
    assert "High availability" in said
    assert dashboard_warns(hot_standby.primary)


def test_a_runner_login_reads_the_warning_too(
    hot_standby: Replicated,  # noqa: F811 (the fixture)
) -> None:
    """SECURITY DEFINER: the roles that read status see what the function's owner sees, the
    standbys' sync_state too (NULL to a role without pg_read_all_stats)."""
    name = "runner_reads_replication"
    with admin(hot_standby) as conn:
        conn.execute(f"CREATE ROLE {name} LOGIN IN ROLE tireless_runner")
    try:
        dsn = make_conninfo(hot_standby.primary.conninfo, user=name)
        with synchronous(hot_standby, "FIRST 1 (nobody)", "on"), psycopg.connect(dsn) as conn:
            assert conn.execute("SELECT sync_state FROM pg_stat_replication").fetchall() == [
                (None,)
            ]
            row = conn.execute(f"SELECT {WARNING}").fetchone()
            assert row is not None
            assert "(none is synchronous yet" in row[0]
            assert row[0] == warning(hot_standby.primary)
    finally:
        with admin(hot_standby) as conn:
            conn.execute(f"DROP ROLE {name}")


def test_a_synchronous_standby_ends_the_warning(
    hot_standby: Replicated,  # noqa: F811 (the fixture)
) -> None:
    with synchronous(hot_standby, "*", "on"):
        wait_until(lambda: synchronous_state(hot_standby) == "sync", "a synchronous standby")
        assert status_warning(hot_standby.primary) is None
        assert not dashboard_warns(hot_standby.primary)
    assert warning(hot_standby.primary) is not None


@pytest.mark.parametrize(
    ("names", "commit", "sync_state", "reason"),
    [
        ("*", "local", "sync", "synchronous_commit is local"),
        ("*", "off", "sync", "synchronous_commit is off"),
        (
            "FIRST 1 (nobody)",
            "on",
            "async",
            "none is synchronous yet, synchronous_standby_names is 'FIRST 1 (nobody)'",
        ),
    ],
)
def test_a_synchronous_list_that_does_not_hold_is_still_warned_of(
    hot_standby: Replicated,  # noqa: F811 (the fixture)
    names: str,
    commit: str,
    sync_state: str,
    reason: str,
) -> None:
    with synchronous(hot_standby, names, commit):
        wait_until(lambda: synchronous_state(hot_standby) == sync_state, sync_state)
        said = warning(hot_standby.primary)
        assert said is not None
        assert f"({reason})" in said


def test_the_standby_itself_warns_of_nothing(
    hot_standby: Replicated,  # noqa: F811 (the fixture)
) -> None:
    assert hot_standby.standby.scalar("SELECT pg_is_in_recovery()") is True
    assert warning(hot_standby.standby) is None
    assert status_warning(hot_standby.standby) is None
    assert not dashboard_warns(hot_standby.standby)


def test_a_primary_without_a_standby_warns_of_nothing(db: Database) -> None:
    assert db.scalar("SELECT count(*) FROM pg_stat_replication") == 0
    assert warning(db) is None
    assert status_warning(db) is None
    assert not dashboard_warns(db)


def test_an_owner_that_cannot_read_sync_state_judges_by_the_settings(
    hot_standby: Replicated,  # noqa: F811 (the fixture)
) -> None:
    """pg_stat_replication shows the standbys to every role, their sync_state only with
    pg_read_all_stats: a function migrated by a role without it still sees an asynchronous
    standby by the settings, not one missing from the list it names."""
    owner = hot_standby.primary.scalar(
        f"SELECT proowner::regrole::text FROM pg_proc WHERE oid = '{WARNING}'::regprocedure"
    )
    with admin(hot_standby) as conn:
        conn.execute("CREATE ROLE migrator_without_stats NOLOGIN")
        conn.execute(f"ALTER FUNCTION {WARNING} OWNER TO migrator_without_stats")
    try:
        said = warning(hot_standby.primary)
        assert said is not None
        assert "(synchronous_standby_names is empty)" in said
        with synchronous(hot_standby, "FIRST 1 (nobody)", "on"):
            assert warning(hot_standby.primary) is None
    finally:
        with admin(hot_standby) as conn:
            conn.execute(f'ALTER FUNCTION {WARNING} OWNER TO "{owner}"')
            conn.execute("DROP ROLE migrator_without_stats")
