"""db/schema.sql: the schema as `tireless migrate` leaves it, so a reader need not replay the migrations.

`make schema` (`python -m tests.schema_dump`) migrates a fresh database on an embedded
PostgreSQL and writes the file; tests/sql/test_schema_file.py dumps the test template the same way
and fails when the file is out of date. Both go through `dump_schema`, the one place that
decides what the file holds: `pg_dump --schema-only` of schema `tireless` (so yoyo's
bookkeeping tables in `public` stay out), without owners (whoever migrated), with the grants,
and without the lines that vary from run to run or from one pg_dump to the next.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import psycopg

from dev.embedded import EmbeddedPostgres, find_server_binaries
from tireless import migrate

SCHEMA_FILE = Path(__file__).resolve().parent.parent / "db" / "schema.sql"
HEADER = (
    "-- The schema as `tireless migrate` leaves it (db/migrations, then the SQL files of db/):\n"
    "-- pg_dump --schema-only of a freshly migrated database, normalised. Do not edit: `make schema`\n"
    "-- regenerates it (tests/schema_dump.py), and a test fails when a change to db/ left it behind.\n"
    "-- Dumped with PostgreSQL {major} (another major version prints some things differently).\n"
)
WRITTEN_MAJOR = re.compile(r"^-- Dumped with PostgreSQL (\d+) ", re.MULTILINE)
# Lines that differ between runs or pg_dump versions and say nothing about the schema: the
# version banner, the session settings, and the random key of pg_dump's \restrict guard.
VARYING_LINE = re.compile(
    r"^(-- Dumped (from database|by pg_dump) version .*"
    r"|SET \w+ = .*;"
    r"|SELECT pg_catalog\.set_config\('search_path', '', false\);"
    r"|\\(un)?restrict \S+)$"
)


def pg_dump() -> Path:
    """The pg_dump beside the server binaries, so its major version is the server's.

    The directory pg_ctl really lives in (PATH may hold a symlink to it), where Debian's
    postgresql-client package puts the matching pg_dump (/usr/bin/pg_dump picks a version of
    its own)."""
    server_bin = (find_server_binaries() / "pg_ctl").resolve().parent
    program = server_bin / "pg_dump"
    if not program.exists():
        raise FileNotFoundError(f"no pg_dump beside the server binaries in {server_bin}")
    return program


def server_major(conninfo: str) -> int:
    """The major version of the PostgreSQL server at conninfo (15 for 15.4)."""
    with psycopg.connect(conninfo) as conn:
        return conn.info.server_version // 10000


def written_major(schema: str) -> int | None:
    """The major version a schema file says it was dumped with."""
    found = WRITTEN_MAJOR.search(schema)
    return int(found.group(1)) if found else None


def dump_schema(conninfo: str) -> str:
    """The normalised `pg_dump --schema-only` of schema tireless in the database at conninfo."""
    command = [str(pg_dump()), "--schema-only", "--schema=tireless", "--no-owner"]
    result = subprocess.run(
        [*command, f"--dbname={conninfo}"], capture_output=True, text=True, check=True
    )
    return normalise(result.stdout, server_major(conninfo))


def normalise(dump: str, major: int) -> str:
    """The dump without its varying lines, runs of blank lines folded into one, under HEADER."""
    lines = [line.rstrip() for line in dump.splitlines() if not VARYING_LINE.match(line)]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return f"{HEADER.format(major=major)}\n{text}\n"


def generate() -> str:
    """Migrate a fresh database on a throwaway embedded PostgreSQL and dump its schema."""
    server = EmbeddedPostgres(fsync=False)
    try:
        server.start()
        with psycopg.connect(server.conninfo(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE tireless_schema")
        migrate(server.conninfo("tireless_schema"))
        return dump_schema(server.conninfo("tireless_schema"))
    finally:
        server.destroy()


def main() -> None:
    SCHEMA_FILE.write_text(generate())
    print(f"wrote {SCHEMA_FILE}")


if __name__ == "__main__":
    main()
