"""db/schema.sql is the schema the migrations leave: a migration that changes the schema
without `make schema` fails here, with the difference to read."""

from __future__ import annotations

import difflib

import pytest

from tests.conftest import Database
from tests.schema_dump import SCHEMA_FILE, dump_schema, server_major, written_major


def test_db_schema_sql_is_the_schema_the_migrations_leave(db: Database) -> None:
    written = SCHEMA_FILE.read_text()
    if (major := server_major(db.conninfo)) != written_major(written):
        pytest.skip(
            f"db/schema.sql was dumped with PostgreSQL {written_major(written)}, this server is "
            f"{major}: pg_dump prints some things differently across major versions"
        )
    migrated = dump_schema(db.conninfo)  # the test's database is a copy of the migrated template
    if migrated != written:
        diff = difflib.unified_diff(
            written.splitlines(keepends=True),
            migrated.splitlines(keepends=True),
            fromfile="db/schema.sql (written)",
            tofile="the migrated database",
            n=2,
        )
        shown = "".join(list(diff)[:200])
        raise AssertionError(
            "db/schema.sql is not the schema the migrations leave: run `make schema` and commit "
            f"the result.\n{shown}"
        )
