"""The SQL files of db/ hold the current definition of every function, view and trigger: each object
lives in exactly one file, a database migrated from any landed version ends with the catalog of
db/schema.sql, applying the files again changes nothing, and a definition that differs from its
file is found and named."""

from __future__ import annotations

import difflib
import functools
import re
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yoyo.migrations
from yoyo import get_backend, read_migrations

from tests.conftest import SERVER, Database
from tests.helpers import DB, MIGRATIONS
from tests.schema_dump import SCHEMA_FILE, dump_schema, server_major, written_major
from tireless import migrate
from tireless.migrate import SQL_FILES, apply_sql_files, sql_file_texts, yoyo_uri

MIGRATION_IDS = sorted(p.name.removesuffix(".sql") for p in MIGRATIONS.glob("[0-9]*.sql"))
# The first migration after which the SQL files hold every function, view and trigger.
FIRST_WITH_SQL_FILES = "0026_sql_files"

DEFINED = re.compile(
    r"^CREATE OR REPLACE (?:(FUNCTION|VIEW) tireless\.(\w+)|TRIGGER (\w+)\s[^;]*?\bON (tireless\.\w+))",
    re.MULTILINE,
)
CREATED = re.compile(r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(FUNCTION|VIEW|TRIGGER)\b", re.I | re.M)

# Every function, view and trigger of schema tireless, named as a reader would, with what defines
# it: its definition, comment, grants and (for a trigger) whether it is enabled.
DEFINITIONS = """
SELECT 'function ' || p.oid::regprocedure::text,
       concat_ws(' | ', pg_get_functiondef(p.oid), obj_description(p.oid, 'pg_proc'), p.proacl::text)
  FROM pg_proc p WHERE p.pronamespace = 'tireless'::regnamespace
UNION ALL
SELECT 'view ' || c.oid::regclass::text,
       concat_ws(' | ', pg_get_viewdef(c.oid), obj_description(c.oid, 'pg_class'), c.relacl::text,
                 c.reloptions::text)
  FROM pg_class c WHERE c.relnamespace = 'tireless'::regnamespace AND c.relkind = 'v'
UNION ALL
SELECT 'trigger ' || t.tgname || ' on ' || t.tgrelid::regclass::text,
       concat_ws(' | ', pg_get_triggerdef(t.oid), t.tgenabled, obj_description(t.oid, 'pg_trigger'))
  FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
 WHERE c.relnamespace = 'tireless'::regnamespace AND NOT t.tgisinternal
"""


def definitions(conn: psycopg.Connection[Any]) -> dict[str, str]:
    rows = conn.execute(DEFINITIONS).fetchall()
    return {str(name): str(definition) for name, definition in rows}


def differing_from_the_files(conninfo: str) -> list[str]:
    """The functions, views and triggers whose definition in the database differs from what the
    SQL files of db/ define, by name; the files are applied in a transaction rolled back after."""
    with psycopg.connect(conninfo) as conn:
        before = definitions(conn)
        for text in sql_file_texts().values():
            conn.execute(text.encode())
        after = definitions(conn)
        conn.rollback()
    return sorted(
        name for name in before.keys() | after.keys() if before.get(name) != after.get(name)
    )


def objects_in_the_files() -> list[tuple[str, str]]:
    """(file, object) for each function, view and trigger a file of db/ defines."""
    found = []
    for name, text in sql_file_texts().items():
        for kind, obj, trigger, table in DEFINED.findall(text):
            found.append(
                (name, f"{kind.lower()} {obj}" if kind else f"trigger {trigger} on {table}")
            )
    return found


def test_the_sql_files_are_the_files_of_db_in_a_fixed_order() -> None:
    on_disk = sorted(p.name for p in DB.glob("*.sql") if p.name != "schema.sql")
    assert sorted(SQL_FILES) == on_disk
    assert len(set(SQL_FILES)) == len(SQL_FILES)


def test_every_function_view_and_trigger_lives_in_exactly_one_sql_file(db: Database) -> None:
    defined = objects_in_the_files()
    homes: dict[str, list[str]] = {}
    for file, obj in defined:
        homes.setdefault(obj, []).append(file)
    assert {obj: fs for obj, fs in homes.items() if len(fs) > 1} == {}, "defined twice"
    with db.connect() as conn:
        in_database = {
            re.sub(r"^(function|view) tireless\.(\w+).*$", r"\1 \2", name)
            for name in definitions(conn)
        }
    assert in_database - homes.keys() == set(), "in the database but in no file of db/"
    assert homes.keys() - in_database == set(), "in a file of db/ but not in the database"


def test_no_migration_from_0026_on_defines_a_function_view_or_trigger() -> None:
    later = [i for i in MIGRATION_IDS if i >= FIRST_WITH_SQL_FILES]
    assert later, "0026_sql_files exists"
    defining = [i for i in later if CREATED.search((MIGRATIONS / f"{i}.sql").read_text())]
    assert defining == [], "a function, view or trigger is changed in its file of db/"


def test_the_migrated_database_holds_what_the_sql_files_define(db: Database) -> None:
    assert differing_from_the_files(db.conninfo) == []


def test_applying_the_sql_files_twice_changes_nothing(db: Database) -> None:
    with db.connect() as conn:
        before = definitions(conn)
        recorded = conn.execute("SELECT * FROM tireless.sql_file ORDER BY name").fetchall()
    assert apply_sql_files(db.conninfo) == [], "nothing changed since the migration"
    apply_sql_files(db.conninfo, always=True)
    apply_sql_files(db.conninfo, always=True)
    with db.connect() as conn:
        assert definitions(conn) == before
        assert conn.execute("SELECT * FROM tireless.sql_file ORDER BY name").fetchall() == recorded
    assert [row[0] for row in recorded] == sorted(SQL_FILES)


def test_a_function_changed_by_hand_in_psql_is_named(db: Database) -> None:
    with db.connect() as conn:
        row = conn.execute(
            "SELECT pg_get_functiondef('tireless.retry_delay(integer)'::regprocedure)"
        )
        definition = str(row.fetchone()[0])  # type: ignore[index]
        conn.execute(
            definition.replace("-- Compared", "-- A hotfix made in psql.\n    -- Compared")
        )
    assert differing_from_the_files(db.conninfo) == ["function tireless.retry_delay(integer)"]


def test_a_function_whose_file_changed_is_named_until_migrate_applies_it(
    db: Database, tmp_path: Path
) -> None:
    changed = tmp_path / "db"
    shutil.copytree(DB, changed, ignore=shutil.ignore_patterns("migrations"))
    claim = changed / "claim.sql"
    common_case = "    -- The common case: a well-formed call for one lane"
    assert claim.read_text().count(common_case) == 1
    claim.write_text(claim.read_text().replace(common_case, "    -- A new line.\n" + common_case))
    assert apply_sql_files(db.conninfo, directory=changed) == ["db/claim.sql"]
    assert differing_from_the_files(db.conninfo) == [
        "function tireless.claim_next(text,text[],interval)"
    ]
    assert apply_sql_files(db.conninfo) == ["db/claim.sql"], (
        "the file differs from the recorded one"
    )
    assert differing_from_the_files(db.conninfo) == []


@pytest.fixture(scope="module")
def landed_versions(request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    """A database at each version before the newest (none: empty), made by applying the
    migrations one by one as the code of that version did (no SQL files) and copying."""
    server = request.config.stash[SERVER]
    databases: dict[str, str] = {}
    with psycopg.connect(server.conninfo(), autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS landed_chain")
        admin.execute("CREATE DATABASE landed_chain")
        admin.execute("DROP DATABASE IF EXISTS landed_at_none")
        admin.execute("CREATE DATABASE landed_at_none")
        databases["none"] = "landed_at_none"
        migrations = read_migrations(str(MIGRATIONS))
        for version in MIGRATION_IDS[:-1]:
            backend = get_backend(yoyo_uri(server.conninfo("landed_chain")))
            try:
                up_to = migrations.filter(lambda m, v=version: m.id <= v)
                backend.apply_migrations(backend.to_apply(up_to))
            finally:
                backend.connection.close()
            name = f"landed_at_{version[:4]}"
            admin.execute(f"DROP DATABASE IF EXISTS {name}")
            admin.execute(f"CREATE DATABASE {name} TEMPLATE landed_chain")
            databases[version] = name
    yield {version: server.conninfo(name) for version, name in databases.items()}
    with psycopg.connect(server.conninfo(), autocommit=True) as admin:
        for name in [*databases.values(), "landed_chain"]:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


# The versions before 0002_roles install the group roles, which are the cluster's: migrated one at
# a time. From 0002_roles on a migration changes only its own database, so two migrate at once.
ROLES_INSTALLED = "0002_roles"


def migrated_differently(conninfo: str, version: str, written: str) -> str | None:
    """How the database at a landed version, once migrated, differs from db/schema.sql and (from
    none only) from the SQL files; None when it does not. The dump holds every definition with
    its comment and grants, so a database whose dump equals the one from none defines what it
    defines: the files are compared once, not forty times."""
    migrate(conninfo, adopt_role_members=True)
    migrated = dump_schema(conninfo)
    if migrated != written:
        diff = difflib.unified_diff(
            written.splitlines(keepends=True),
            migrated.splitlines(keepends=True),
            "db/schema.sql",
            f"migrated from {version}",
            n=2,
        )
        return "".join(list(diff)[:200])
    if version != "none":
        return None
    differing = differing_from_the_files(conninfo)
    return f"differs from the SQL files: {differing}" if differing else None


@pytest.fixture
def migrations_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """yoyo splits each migration file into statements (sqlparse) anew for every `migrate`, most of
    the client's time when 38 databases migrate: here each file is split once and every migrate
    gets a copy of the same statements, so what is applied is unchanged."""
    split = functools.cache(yoyo.migrations.read_sql_migration)

    def read_sql_migration(path: str) -> tuple[dict[str, str], str, list[str]]:
        directives, comment, statements = split(path)
        return dict(directives), comment, list(statements)

    monkeypatch.setattr(yoyo.migrations, "read_sql_migration", read_sql_migration)


@pytest.mark.usefixtures("migrations_parsed_once")
def test_a_database_migrated_from_each_landed_version_ends_with_the_catalog_of_schema_sql(
    landed_versions: dict[str, str],
) -> None:
    written = SCHEMA_FILE.read_text()
    if (major := server_major(landed_versions["none"])) != written_major(written):
        pytest.skip(
            f"db/schema.sql was dumped with PostgreSQL {written_major(written)}, not {major}"
        )
    first = [v for v in landed_versions if v == "none" or v < ROLES_INSTALLED]
    problems = {v: migrated_differently(landed_versions[v], v, written) for v in first}
    rest = [v for v in landed_versions if v not in first]
    with ThreadPoolExecutor(max_workers=2) as pool:
        found = pool.map(lambda v: migrated_differently(landed_versions[v], v, written), rest)
        problems |= dict(zip(rest, found, strict=True))
    assert sorted(landed_versions) == sorted(["none", *MIGRATION_IDS[:-1]])
    failed = {version: problem for version, problem in problems.items() if problem}
    assert failed == {}, "\n".join(f"{v}:\n{p}" for v, p in failed.items())
