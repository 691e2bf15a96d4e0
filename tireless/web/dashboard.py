"""What every handler of `tireless web` shares: the Dashboard (its pool, templates and CSRF key),
which app.py builds and the page, action, metrics and webhook handlers reach through their request."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

from psycopg import AsyncConnection
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool
from starlette.requests import Request
from starlette.templating import Jinja2Templates

from tireless.errors import translated_errors
from tireless.store.calls import Call
from tireless.store.reads import read_async
from tireless.web.csrf import Csrf

Answer = TypeVar("Answer")


@dataclass
class Dashboard:
    """What the handlers share: the pool, the templates, the CSRF key."""

    pool: AsyncConnectionPool[Any]
    database_label: str
    templates: Jinja2Templates
    csrf: Csrf = field(default_factory=Csrf)

    async def rows(self, query: Any, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """The rows of one read, as dicts; a refusal is raised as its TirelessError."""
        conn: AsyncConnection[Any]
        async with self.pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            with translated_errors():
                await cur.execute(query, params or {})
            return await cur.fetchall()

    async def read(self, call: Call[Any, Answer]) -> Answer:
        """The answer of one of tireless.store.reads' calls (the job list, a job, its history)."""
        conn: AsyncConnection[Any]
        async with self.pool.connection() as conn:
            return await read_async(conn, call)


def dashboard_of(request: Request) -> Dashboard:
    found: Dashboard = request.app.state.dashboard
    return found
