"""Apply the migrations in db/migrations with yoyo, then the SQL files of db/ that hold the current
functions, views and triggers (the wheel carries db/ as tireless/db)."""

from __future__ import annotations

import hashlib
from importlib.resources import as_file, files
from importlib.resources.abc import Traversable
from urllib.parse import quote, urlencode

import psycopg
from psycopg.conninfo import conninfo_to_dict
from yoyo import get_backend, read_migrations

from tireless.connect import with_defaults


def yoyo_uri(conninfo: str) -> str:
    """A yoyo URI (postgresql+psycopg://...) for a libpq connection string or URL."""
    params = {key: str(value) for key, value in conninfo_to_dict(conninfo).items()}
    user = params.pop("user", None)
    password = params.pop("password", None)
    dbname = params.pop("dbname", "")
    credentials = ""
    if user is not None:
        credentials = quote(user, safe="")
        if password is not None:
            credentials += ":" + quote(password, safe="")
        credentials += "@"
    query = f"?{urlencode(params)}" if params else ""
    return f"postgresql+psycopg://{credentials}/{quote(dbname, safe='')}{query}"


# Before a first install (no tireless schema yet), 0002_roles adopts the group roles that already
# exist: roles belong to the cluster. Refused (SQLSTATE 55000, nothing applied) when one can log in
# or is a superuser (whoever has its password is every runner, poller or admin of the store), or has
# members the migration would not grant (another store's logins, or someone's planted one: each
# would act on this store too), unless adopt_role_members says those members may.
CHECK_ROLES_TO_ADOPT = b"""
DO $$
DECLARE
    problem text;
BEGIN
    IF EXISTS (SELECT FROM pg_catalog.pg_namespace n WHERE n.nspname = 'tireless') THEN
        RETURN;
    END IF;
    SELECT string_agg(p.what, '; ' ORDER BY p.what) INTO problem
      FROM (SELECT format('%s can log in', r.rolname) AS what FROM pg_catalog.pg_roles r
             WHERE r.rolname IN ('tireless_runner', 'tireless_poller', 'tireless_admin') AND r.rolcanlogin
            UNION ALL
            SELECT format('%s is a superuser', r.rolname) FROM pg_catalog.pg_roles r
             WHERE r.rolname IN ('tireless_runner', 'tireless_poller', 'tireless_admin') AND r.rolsuper
            UNION ALL
            SELECT format('%s has the member %s', g.rolname, m.rolname)
              FROM pg_catalog.pg_auth_members a
              JOIN pg_catalog.pg_roles g ON g.oid = a.roleid
              JOIN pg_catalog.pg_roles m ON m.oid = a.member
             WHERE g.rolname IN ('tireless_runner', 'tireless_poller', 'tireless_admin')
               AND NOT (m.rolname = 'tireless_admin' AND g.rolname IN ('tireless_runner', 'tireless_poller'))
               AND current_setting('tireless.adopt_role_members', true) IS DISTINCT FROM 'on') AS p;
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION 'refused to adopt the existing tireless roles: %', problem
            USING ERRCODE = '55000',
                  DETAIL = 'The roles belong to the whole cluster: their members act on every tireless store in it.',
                  HINT = 'A group role must be NOLOGIN NOSUPERUSER: ALTER ROLE ... NOLOGIN NOSUPERUSER, or DROP ROLE '
                         'it. Members: REVOKE the ones you did not grant; when they are the logins of another '
                         'tireless store in this cluster, run this store in a cluster of its own, or migrate with '
                         '--adopt-role-members if they may act on both stores (docs/operations.md).';
    END IF;
END;
$$
"""


def check_roles_to_adopt(conninfo: str, adopt_role_members: bool = False) -> None:
    """Refuse (psycopg's ObjectNotInPrerequisiteState, 55000) a first install that would adopt
    an existing tireless role that can log in, is a superuser, or has members it did not grant;
    `adopt_role_members` accepts the members (another store's logins in the same cluster)."""
    with psycopg.connect(with_defaults(conninfo), autocommit=True) as conn:
        if adopt_role_members:
            conn.execute("SET tireless.adopt_role_members = on")
        conn.execute(CHECK_ROLES_TO_ADOPT)


# The SQL files of db/, in the order they are applied: a file may use what an earlier one defines.
SQL_FILES = (
    "checks.sql",
    "job.sql",
    "history.sql",
    "policy.sql",
    "fleet.sql",
    "budgets.sql",
    "claim.sql",
    "lease.sql",
    "network.sql",
    "limits.sql",
    "agents.sql",
    "ledger.sql",
    "brief.sql",
    "transition.sql",
    "delivery.sql",
    "work_rule.sql",
    "dependencies.sql",
    "poll.sql",
    "mirror.sql",
    "conversation.sql",
    "plans.sql",
    "work_graph.sql",
    "labels.sql",
    "outbox.sql",
    "outcomes.sql",
    "dashboard.sql",
    "reads.sql",
)


def sql_file_texts(directory: Traversable | None = None) -> dict[str, str]:
    """Each SQL file of db/ (or of `directory`) by name, in the order they are applied."""
    db = directory if directory is not None else files("tireless") / "db"
    return {name: (db / name).read_text() for name in SQL_FILES}


def apply_sql_files(
    conninfo: str, *, always: bool = False, directory: Traversable | None = None
) -> list[str]:
    """Apply every SQL file of db/, in order and in one transaction, when one of them differs from
    the version the database last applied (tireless.sql_file) or when `always` (a migration ran:
    it may have dropped a view to change a table); returns the names of the files that differed."""
    texts = sql_file_texts(directory)
    digests = {name: hashlib.sha256(text.encode()).hexdigest() for name, text in texts.items()}
    with psycopg.connect(with_defaults(conninfo)) as conn:
        rows = conn.execute("SELECT name, sha256 FROM tireless.sql_file").fetchall()
        recorded: dict[str, str] = dict(rows)
        changed = [name for name, digest in digests.items() if recorded.get(name) != digest]
        if not (always or changed or recorded.keys() - digests.keys()):
            return []
        for name, text in texts.items():
            try:
                conn.execute(text.encode())  # bytes: a file is many statements, sent as they are
            except psycopg.Error as error:
                error.add_note(f"while applying db/{name}")
                raise
        conn.execute(
            "DELETE FROM tireless.sql_file WHERE name <> ALL (%(names)s)", {"names": list(texts)}
        )
        for name, digest in digests.items():
            conn.execute(
                """INSERT INTO tireless.sql_file AS f (name, sha256) VALUES (%(name)s, %(digest)s)
                   ON CONFLICT (name) DO UPDATE SET sha256 = excluded.sha256, applied_at = now()
                    WHERE f.sha256 <> excluded.sha256""",
                {"name": name, "digest": digest},
            )
    return [f"db/{name}" for name in changed]


def migrate(conninfo: str, adopt_role_members: bool = False) -> list[str]:
    """Apply every migration not yet applied, then the SQL files of db/ when a migration ran or a
    file changed, all under yoyo's lock; returns the ids of the migrations applied and the names
    of the files that changed (`db/claim.sql`).

    Running it again applies nothing, and two processes migrating at once are serialised.
    A first install refuses existing tireless roles it should not adopt (check_roles_to_adopt).
    """
    check_roles_to_adopt(conninfo, adopt_role_members)
    with as_file(files("tireless") / "db" / "migrations") as directory:
        migrations = read_migrations(str(directory))
        backend = get_backend(yoyo_uri(with_defaults(conninfo)))
        try:
            with backend.lock():
                pending = backend.to_apply(migrations)
                backend.apply_migrations(pending)
                files_applied = apply_sql_files(conninfo, always=bool(pending))
        finally:
            backend.connection.close()
    return [migration.id for migration in pending] + files_applied
