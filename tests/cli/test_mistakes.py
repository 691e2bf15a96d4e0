"""A newcomer's mistakes (issue 50's table): each gets one answer that names the fix, never a bare
SQLSTATE, errno or HTTP status."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from dev.embedded import EmbeddedPostgres
from tests.helpers import tireless_cli


@pytest.fixture
def unmigrated(server: EmbeddedPostgres) -> Iterator[str]:
    """The URL of an empty database: nobody ran `tireless migrate` on it."""
    name = "never_migrated"
    with psycopg.connect(server.conninfo(), autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield server.url(name)
    with psycopg.connect(server.conninfo(), autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.mark.parametrize(
    "args",
    [
        ("status",),
        ("jobs",),
        ("show", "1"),
        ("sweep",),
        ("work", "--worker", "w", "--lane", "cc", "--once", "--", "true"),
    ],
    ids=lambda args: args[0],
)
def test_a_store_never_migrated_says_run_tireless_migrate(
    unmigrated: str, args: tuple[str, ...]
) -> None:
    result = tireless_cli(unmigrated, *args)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    said = [line for line in result.stderr.splitlines() if line.startswith("tireless: ")]
    assert len(said) == 1, result.stderr
    assert said[0].startswith("tireless: the store is not migrated: run `tireless migrate` ("), said
