"""The ASGI app of `tireless web` (Starlette behind its Guard): its routes, its connection pool,
its error pages, and `serve`, which runs it under uvicorn on a socket it binds itself."""

from __future__ import annotations

import ipaddress
import logging
import signal
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import FrameType

import jinja2
import psycopg
import uvicorn
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import AsyncConnectionPool
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from tireless.connect import AsyncFailoverPool
from tireless.errors import InvalidArgument
from tireless.web import bulk, connections, fleet, hooks, metrics, outcomes, pages
from tireless.web.dashboard import Dashboard
from tireless.web.guard import Guard, SettingRefused, allowed_hosts, token_from_environment

log = logging.getLogger("tireless.web")


def database_label(conninfo: str) -> str:
    """host/dbname, never the user's password (nor anything else in the conninfo)."""
    try:
        parts = conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError:
        return "(unreadable database URL)"
    host = str(parts.get("host") or "local socket")
    if host.startswith("/"):
        host = "local socket"
    return f"{host}/{parts.get('dbname') or parts.get('user') or '?'}"


def templates() -> Jinja2Templates:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("tireless.web", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(pages.FILTERS)
    return Jinja2Templates(env=env)


def create_app(
    conninfo: str, hosts: frozenset[str] = allowed_hosts("127.0.0.1"), token: str | None = None
) -> Guard:
    """The dashboard, /metrics and the webhooks over an async pool of conninfo (opened by
    the app's lifespan: `with TestClient(app)`, or uvicorn), answering only for hosts, and
    only to a login with token when one is given."""
    pool = AsyncFailoverPool(  # each read ends by CALL_DEADLINE: a hung host answers 503
        conninfo,
        open=False,
        min_size=1,
        max_size=4,
        timeout=5,
        kwargs={"autocommit": True},
        check=AsyncConnectionPool.check_connection,  # a connection the database dropped is replaced
    )
    dashboard = Dashboard(pool=pool, database_label=database_label(conninfo), templates=templates())

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await pool.open()
        try:
            yield
        finally:
            await pool.close()

    async def failed(request: Request, error: Exception) -> Response:
        # The message of an unexpected error may carry anything: it goes to the log, not the page.
        log.exception("%s %s failed", request.method, request.url.path, exc_info=error)
        status = 503 if isinstance(error, psycopg.OperationalError) else 500
        if isinstance(error, psycopg.DataError | InvalidArgument):
            status = 400  # a value of the request that the database refused
        return pages.problem(request, status, "Something went wrong; the server log says what.")

    async def http_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, HTTPException)
        return pages.problem(request, error.status_code, str(error.detail))

    app = Starlette(
        routes=[
            Route("/", pages.overview),
            Route("/jobs", pages.jobs),
            Route("/jobs/{job_id:int}", pages.job),
            Route("/jobs/{job_id:int}/transcript", pages.job_transcript),
            Route("/jobs/bulk", bulk.bulk, methods=["POST"]),
            Route("/activity", fleet.activity),
            Route("/failures", fleet.failures),
            Route("/workers", fleet.workers),
            Route("/outcomes", outcomes.outcomes),
            Route("/jobs/{job_id:int}/{action:str}", pages.job_action, methods=["POST"]),
            Route("/lanes/{lane:str}/{action:str}", pages.lane_action, methods=["POST"]),
            Route("/forges/{forge:str}/{action:str}", pages.forge_action, methods=["POST"]),
            Route("/metrics", metrics.scrape),
            Route("/hooks/{flavour:str}", hooks.receive, methods=["POST"]),
            Mount("/static", StaticFiles(packages=[("tireless.web", "static")])),
        ],
        lifespan=lifespan,
        exception_handlers={Exception: failed, HTTPException: http_error},
    )
    app.state.dashboard = dashboard
    return Guard(app, hosts, token)


def bind(address: str) -> socket.socket:
    """A listening socket on HOST:PORT (port 0: any free port)."""
    host, _, port = address.rpartition(":")
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]") or "127.0.0.1", int(port)))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def address_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def serve(
    conninfo: str,
    address: str,
    extra_hosts: tuple[str, ...] = (),
    header_timeout: float = connections.HEADER_TIMEOUT,
) -> None:
    """Run the app under uvicorn until SIGINT/SIGTERM; prints its address once it listens.
    SettingRefused: a bad token setting, or an address beyond loopback with no token."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    token = token_from_environment()
    sock = bind(address)
    host = sock.getsockname()[0]
    if token is None and not ipaddress.ip_address(host).is_loopback:
        sock.close()
        raise SettingRefused(
            f"--bind {address} listens beyond this machine ({host}) and no login is set:"
            " set TIRELESS_WEB_TOKEN or TIRELESS_WEB_TOKEN_FILE (docs/web.md, Security),"
            " or bind 127.0.0.1 behind a reverse proxy that authenticates"
        )
    named = address.rpartition(":")[0]  # as given: a name, or an address in its own spelling
    app = create_app(conninfo, allowed_hosts(host, (named, *extra_hosts)), token)
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="on",
        http=connections.deadline_protocol(header_timeout),
        ws="none",
        limit_concurrency=connections.MAX_CONNECTIONS,
        timeout_keep_alive=connections.KEEP_ALIVE,
        h11_max_incomplete_event_size=connections.MAX_HEADER_BYTES,
    )
    server = uvicorn.Server(config)

    def stop(signum: int, frame: FrameType | None) -> None:
        # A flag, not an exception: a signal that comes before uvicorn listens for signals itself
        # (or after it stopped listening) must not be lost in whatever Python was running then.
        server.should_exit = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(
        f"tireless web: dashboard at {address_of(sock)} (database {database_label(conninfo)})",
        flush=True,
    )
    server.run(sockets=[sock])
    sys.stdout.flush()
