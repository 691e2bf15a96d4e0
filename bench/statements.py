"""Where the time goes: one worker's claim-and-deliver cycles through SQL, per statement.

    python bench/statements.py [--cycles N] [--until MIGRATION]

--until 0014_lane_summary profiles the schema as it was before a later migration (the "before" table
of bench/results.md).

Starts a private PostgreSQL with pg_stat_statements (track = all, so the statements inside the
functions and triggers count too, and the foreign key checks they run), migrates a database,
runs the cycles (alternating with the floor's, whose statements appear too, for scale) and prints a markdown table: every statement that ran, its calls per cycle and
its mean time. The outer calls (claim_next, transition) include everything they ran inside.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import psycopg
from workloads import FLOOR_CLAIM, FLOOR_FINISH, FLOOR_SCHEMA, LEASE, SQL_CLAIM, SQL_FINISH
from yoyo import get_backend, read_migrations

from dev.embedded import embedded_postgres
from tireless.migrate import migrate, yoyo_uri

MIGRATIONS = Path(__file__).resolve().parent.parent / "db" / "migrations"


def migrate_until(conninfo: str, until: str | None) -> None:
    """Migrate as `tireless migrate` does, or apply only the migrations up to and including `until`
    (the schema as that version left it: before 0026_sql_files, the migrations held the functions)."""
    if until is None:
        migrate(conninfo)
        return
    migrations = read_migrations(str(MIGRATIONS)).filter(lambda m: m.id <= until)
    backend = get_backend(yoyo_uri(conninfo))
    try:
        with backend.lock():
            backend.apply_migrations(backend.to_apply(migrations))
    finally:
        backend.connection.close()


# A VACUUM every BATCH cycles: the claims then measure the statements, not the walk over the index
# entries of the jobs claimed since the last vacuum (a cost every SKIP LOCKED queue shares, and
# which the throughput runs measure as it comes).
BATCH = 200


def one_line(query: str, width: int = 110) -> str:
    text = re.sub(r"\s+", " ", query).strip().replace("|", "\\|")
    return text if len(text) <= width else text[: width - 1] + "…"


def profile(conninfo: str, cycles: int) -> list[tuple[str, float, float, float]]:
    """(statement, calls per cycle, mean ms, ms per cycle) of every statement the cycles ran."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        # track_repo needs a registered forge; nothing polls it
        conn.execute("SELECT tireless.add_forge('gitea', 'gitea', 'https://gitea.invalid')")
        conn.execute("SELECT tireless.track_repo('gitea', 'bench', 'work')")
        conn.execute(
            """SELECT tireless.enqueue((SELECT jsonb_agg(jsonb_build_object(
                   'forge', 'gitea', 'owner', 'bench', 'repo', 'work', 'number', g, 'state', 'open',
                   'labels', jsonb_build_array('tireless', 'tireless/implement')))
                 FROM generate_series(1, %s) AS g))""",
            [cycles + cycles // 4],
        )
        conn.execute(FLOOR_SCHEMA)
        conn.execute(
            "INSERT INTO floor.job (lane) SELECT 'cc' FROM generate_series(1, %s)",
            [cycles + cycles // 4],
        )
        conn.execute("VACUUM (ANALYZE)")
        params: dict[str, Any] = {
            "worker": "profile",
            "lane": "cc",
            "lanes": ["cc"],
            "lease": LEASE,
        }
        for warm in (True, False):
            if not warm:
                conn.execute("SELECT pg_stat_statements_reset()")
            for n in range(cycles // 4 if warm else cycles):
                if n % BATCH == 0:
                    conn.execute("VACUUM floor.job, tireless.job")
                for claim, finish in ((SQL_CLAIM, SQL_FINISH), (FLOOR_CLAIM, FLOOR_FINISH)):
                    row = conn.execute(claim, params).fetchone()
                    assert row is not None
                    conn.execute(finish, params | {"id": row[0]})
        rows = conn.execute(
            """SELECT query, calls, mean_exec_time, total_exec_time FROM pg_stat_statements
                WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
                  AND calls >= %s
                ORDER BY total_exec_time DESC""",
            [cycles // 2],
        ).fetchall()
    return [(one_line(q), c / cycles, m, t / cycles) for q, c, m, t in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cycles", type=int, default=5000)
    parser.add_argument("--until", help="apply the migrations up to this one only")
    args = parser.parse_args()
    cycles = args.cycles
    with embedded_postgres(fsync=True) as server:
        with psycopg.connect(server.conninfo(), autocommit=True) as admin:
            admin.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
        server.restart()
        with psycopg.connect(server.conninfo(), autocommit=True) as admin:
            admin.execute("ALTER SYSTEM SET pg_stat_statements.track = 'all'")
            admin.execute("SELECT pg_reload_conf()")
        with psycopg.connect(server.conninfo(), autocommit=True) as admin:
            admin.execute("CREATE DATABASE profile")
        conninfo = server.conninfo("profile")
        migrate_until(conninfo, args.until)
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION pg_stat_statements")
        rows = profile(conninfo, cycles)
    print(
        f"One worker, {cycles} claim-and-deliver cycles through SQL (pg_stat_statements, track = all).\n"
    )
    print("| statement | calls per cycle | mean ms | ms per cycle |")
    print("|---|---:|---:|---:|")
    for query, calls, mean, per_cycle in rows:
        print(f"| `{query}` | {calls:.2f} | {mean:.4f} | {per_cycle:.4f} |")


if __name__ == "__main__":
    main()
