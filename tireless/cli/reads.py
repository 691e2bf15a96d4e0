"""The operator's reads that are not store calls (the job list, a job's history, the status
table): shared by the commands and the demo."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.rows import RowFactory, dict_row

from tireless.errors import translated_errors
from tireless.store import calls
from tireless.store.calls import Query


def fetch(
    conn: psycopg.Connection[Any], query: Query, params: dict[str, Any], row: RowFactory[Any]
) -> list[Any]:
    """Rows of an operator read, its refusals (say 42501 for a runner reading jobs) translated."""
    with translated_errors(), conn.cursor(row_factory=row) as cur:
        cur.execute(query, params)
        return cur.fetchall()


def status_rows(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    """tireless.lane_status with each lane's terminal counts from tireless.queue_stats."""
    return fetch(conn, calls.STATUS, {}, dict_row)


def replication_warning(conn: psycopg.Connection[Any]) -> str | None:
    """tireless.replication_warning: why a failover could lose acknowledged work, or None."""
    row = fetch(conn, "SELECT tireless.replication_warning() AS warning", {}, dict_row)[0]
    warning: str | None = row["warning"]
    return warning
