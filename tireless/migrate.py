"""Apply the migrations in db/migrations (shipped in the wheel as tireless/migrations) with yoyo."""

from __future__ import annotations

from importlib.resources import as_file, files
from urllib.parse import quote, urlencode

from psycopg.conninfo import conninfo_to_dict
from yoyo import get_backend, read_migrations


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


def migrate(conninfo: str) -> list[str]:
    """Apply every migration not yet applied, under yoyo's lock; returns the ids applied.

    Running it again applies nothing, and two processes migrating at once are serialised.
    """
    with as_file(files("tireless") / "migrations") as directory:
        migrations = read_migrations(str(directory))
        backend = get_backend(yoyo_uri(conninfo))
        try:
            with backend.lock():
                pending = backend.to_apply(migrations)
                backend.apply_migrations(pending)
        finally:
            backend.connection.close()
    return [migration.id for migration in pending]
