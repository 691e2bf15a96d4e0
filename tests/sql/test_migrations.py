"""Migrations apply to an empty database, a second run changes nothing, and ids are in order."""

from __future__ import annotations

import re
from collections.abc import Iterator
from importlib.resources import files

import psycopg
import pytest

from dev.embedded import EmbeddedPostgres
from tests.conftest import Database
from tireless import migrate


def schema_snapshot(conninfo: str) -> list[tuple[str, ...]]:
    with psycopg.connect(conninfo) as conn:
        rows = conn.execute(
            """SELECT c.relname, c.relkind::text, coalesce(obj_description(c.oid), '')
                 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = 'tireless'
               UNION ALL
               SELECT p.proname, pg_get_function_identity_arguments(p.oid), md5(p.prosrc)
                 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                WHERE n.nspname = 'tireless'
                ORDER BY 1, 2"""
        ).fetchall()
    return [tuple(str(v) for v in row) for row in rows]


def test_migrations_apply_to_an_empty_database_and_a_second_run_changes_nothing(
    server: EmbeddedPostgres,
) -> None:
    with psycopg.connect(server.conninfo(), autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS migrate_twice")
        admin.execute("CREATE DATABASE migrate_twice")
    conninfo = server.conninfo("migrate_twice")
    try:
        applied = migrate(conninfo)
        assert applied, "an empty database gets every migration"
        before = schema_snapshot(conninfo)
        assert migrate(conninfo) == []
        assert schema_snapshot(conninfo) == before
    finally:
        with psycopg.connect(server.conninfo(), autocommit=True) as admin:
            admin.execute("DROP DATABASE migrate_twice WITH (FORCE)")


def test_migration_versions_are_unique_and_ascending_from_one() -> None:
    names = sorted(
        p.name
        for p in (files("tireless") / "db" / "migrations").iterdir()
        if p.name.endswith(".sql") and not p.name.endswith(".rollback.sql")
    )
    versions = [int(re.match(r"(\d{4})_[a-z0-9_]+\.sql$", name).group(1)) for name in names]  # type: ignore[union-attr]
    assert versions, "there are migrations"
    assert versions == list(range(1, len(versions) + 1))


def test_each_migration_depends_on_the_one_before() -> None:
    directory = files("tireless") / "db" / "migrations"
    names = sorted(p.name for p in directory.iterdir() if p.name.endswith(".sql"))
    assert names, "there are migrations"
    previous = ""
    for name in names:
        header = (directory / name).read_text().splitlines()[:3]
        assert header[0].startswith("-- "), f"{name}: first line describes the migration"
        assert f"-- depends: {previous}".rstrip() in [line.rstrip() for line in header], name
        previous = name.removesuffix(".sql")


def test_the_test_database_is_a_migrated_copy_of_the_template(db: Database) -> None:
    applied = db.scalar("SELECT count(*) FROM _yoyo_migration")
    names = [p.name for p in (files("tireless") / "db" / "migrations").iterdir()]
    assert applied == len([n for n in names if n.endswith(".sql") and ".rollback." not in n])


@pytest.fixture
def empty_database(server: EmbeddedPostgres) -> Iterator[str]:
    """The conninfo of a new, empty database of the session's cluster (dropped afterwards)."""
    with psycopg.connect(server.conninfo(), autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS adopt_roles")
        admin.execute("CREATE DATABASE adopt_roles")
    yield server.conninfo("adopt_roles")
    with psycopg.connect(server.conninfo(), autocommit=True) as admin:
        admin.execute("DROP DATABASE adopt_roles WITH (FORCE)")


def has_schema(conninfo: str) -> bool:
    with psycopg.connect(conninfo) as conn:
        row = conn.execute("SELECT to_regnamespace('tireless') IS NOT NULL").fetchone()
    return bool(row and row[0])


@pytest.mark.parametrize("attribute", ["LOGIN", "SUPERUSER"])
def test_a_first_install_refuses_a_group_role_that_can_log_in_or_is_a_superuser(
    server: EmbeddedPostgres, empty_database: str, attribute: str
) -> None:
    with psycopg.connect(server.conninfo(), autocommit=True) as admin:
        admin.execute(f"ALTER ROLE tireless_admin {attribute}")
        try:
            with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState) as refusal:
                migrate(empty_database, adopt_role_members=True)
        finally:
            admin.execute(f"ALTER ROLE tireless_admin NO{attribute}")
    expected = "can log in" if attribute == "LOGIN" else "is a superuser"
    assert str(refusal.value).startswith(
        f"refused to adopt the existing tireless roles: tireless_admin {expected}"
    )
    assert "NOLOGIN NOSUPERUSER" in (refusal.value.diag.message_hint or "")
    assert not has_schema(empty_database), "nothing was applied"


def test_a_first_install_refuses_members_it_did_not_grant_unless_told_to_adopt_them(
    server: EmbeddedPostgres, empty_database: str
) -> None:
    with psycopg.connect(server.conninfo(), autocommit=True) as admin:
        admin.execute("CREATE ROLE planted LOGIN IN ROLE tireless_admin")
        try:
            with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState) as refusal:
                migrate(empty_database)
            assert "tireless_admin has the member planted" in str(refusal.value)
            assert not has_schema(empty_database)
            assert migrate(empty_database, adopt_role_members=True)
            # Adopted once, the roles are the store's: an upgrade asks nothing more.
            assert migrate(empty_database) == []
        finally:
            admin.execute("DROP ROLE planted")


def test_an_upgrade_refuses_a_group_role_that_can_log_in(
    server: EmbeddedPostgres, empty_database: str
) -> None:
    """0019_holder_login checks the roles of a store that is already installed."""
    migrate(empty_database)
    with psycopg.connect(empty_database, autocommit=True) as conn:
        # As if 0016 had not been applied: it refuses before its first change.
        conn.execute("DELETE FROM _yoyo_migration WHERE migration_id = '0019_holder_login'")
    with psycopg.connect(server.conninfo(), autocommit=True) as admin:
        admin.execute("ALTER ROLE tireless_runner LOGIN")
        try:
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="tireless_runner"):
                migrate(empty_database)
        finally:
            admin.execute("ALTER ROLE tireless_runner NOLOGIN")
