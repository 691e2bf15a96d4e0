"""What every request to `tireless web` passes before the app sees it, and what every answer
carries: the Host allow-list (DNS rebinding), the login (a token from the environment), the
Origin check of a POST, the body limit and deadline (enforced while the body is read), no NUL
in the path or query, and the security headers (CSP without inline script, no framing,
nosniff, referrer)."""

from __future__ import annotations

import asyncio
import base64
import binascii
import hmac
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote_to_bytes, urlsplit

from starlette.applications import Starlette
from starlette.datastructures import Headers, State
from starlette.exceptions import HTTPException
from starlette.responses import PlainTextResponse
from starlette.types import Message, Receive, Scope, Send

FORM_LIMIT = 4096  # an action form holds a token and a path: anything longer is not ours
HOOK_LIMIT = 1024 * 1024  # a forge's issue event is a few KiB
BODY_TIMEOUT = 30.0  # seconds from the request's start to its whole body
HOOKS = "/hooks/"  # signed by the forge: no login, no Origin, the larger limit
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
TOKEN_VARIABLE = "TIRELESS_WEB_TOKEN"
SHORTEST_TOKEN = 16
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
        b" form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
]


class SettingRefused(ValueError):
    """A setting `tireless web` will not start with; the message says what to do."""


def host_name(host: str) -> str:
    """A Host header's (or address's) name without its port, lower-cased: [::1]:80 -> [::1]."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    name, colon, port = host.rpartition(":")
    return name.rstrip(".") if colon and port.isdigit() else host.rstrip(".")


def allowed_hosts(bound: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The bound address, the loopback names, and each --allowed-host."""
    bound_name = f"[{bound}]" if ":" in bound and not bound.startswith("[") else bound
    names = (host_name(name) for name in (bound_name, *LOOPBACK_HOSTS, *extra))
    return frozenset(name for name in names if name)


def token_from_environment(environ: Mapping[str, str] = os.environ) -> str | None:
    """TIRELESS_WEB_TOKEN, or the first line of the file TIRELESS_WEB_TOKEN_FILE names."""
    given, path = environ.get(TOKEN_VARIABLE), environ.get(TOKEN_VARIABLE + "_FILE")
    if given and path:
        raise SettingRefused(f"set {TOKEN_VARIABLE} or {TOKEN_VARIABLE}_FILE, not both")
    if path:
        try:
            given = Path(path).read_text().strip()
        except OSError as error:
            raise SettingRefused(f"{TOKEN_VARIABLE}_FILE: {error.strerror}: {path}") from error
    if not given:
        return None
    if len(given) < SHORTEST_TOKEN:
        raise SettingRefused(f"{TOKEN_VARIABLE} is shorter than {SHORTEST_TOKEN} characters")
    return given


def body_limit(path: str) -> int:
    return HOOK_LIMIT if path.startswith(HOOKS) else FORM_LIMIT


def same_origin(headers: Headers) -> bool:
    """The POST comes from a page of this site: its Origin (or, from a browser that sends none,
    Sec-Fetch-Site, then the Referer) names the Host it was sent to."""
    host = headers.get("host", "").lower()
    origin = headers.get("origin")
    if origin is not None:
        return origin != "null" and urlsplit(origin).netloc.lower() == host
    fetch_site = headers.get("sec-fetch-site")
    if fetch_site is not None:
        return fetch_site == "same-origin"
    referer = headers.get("referer")
    return referer is not None and urlsplit(referer).netloc.lower() == host


def logged_in(headers: Headers, token: str) -> bool:
    """HTTP Basic with the token as the password (any user name), or `Bearer TOKEN`."""
    scheme, _, credentials = headers.get("authorization", "").partition(" ")
    given = credentials.strip()
    if scheme.lower() == "basic":
        try:
            given = base64.b64decode(given, validate=True).decode().partition(":")[2]
        except (binascii.Error, UnicodeDecodeError):
            return False
    elif scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.encode(), token.encode())


@dataclass(frozen=True)
class Guard:
    """The ASGI app in front of the dashboard (see the module's docstring)."""

    app: Starlette
    hosts: frozenset[str]
    token: str | None = None

    @property
    def state(self) -> State:
        """The app's state (its Dashboard), as on the Starlette app."""
        return self.app.state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        closing = False  # a refused request's body is never read: close the connection after it

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = [(b"connection", b"close")] if closing else []
                message = {**message, "headers": [*message["headers"], *SECURITY_HEADERS, *extra]}
            await send(message)

        refusal = self.refusal(scope)
        if refusal is not None:
            closing = True
            await refusal(scope, receive, secured)
            return
        limit, read = body_limit(scope["path"]), 0
        deadline = asyncio.get_running_loop().time() + BODY_TIMEOUT

        async def bounded() -> Message:
            nonlocal read, closing
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                closing = True  # a body trickled in holds a connection: no longer than this
                raise HTTPException(408, f"the body took over {BODY_TIMEOUT:g} s") from None
            read += len(message.get("body", b""))
            if read > limit:
                closing = True
                raise HTTPException(413, f"body over {limit} bytes")
            return message

        await self.app(scope, bounded, secured)

    def refusal(self, scope: Scope) -> PlainTextResponse | None:
        """The answer to a request refused before the app, or None. A refusal renders no page,
        so it carries no CSRF token."""
        headers = Headers(scope=scope)
        if host_name(headers.get("host", "")) not in self.hosts:
            return PlainTextResponse("unknown Host: see tireless web --allowed-host", 421)
        path, hook = scope["path"], scope["path"].startswith(HOOKS)
        if self.token is not None and not hook and not logged_in(headers, self.token):
            return PlainTextResponse(
                "log in with the dashboard's token (TIRELESS_WEB_TOKEN) as the password",
                401,
                {"WWW-Authenticate": 'Basic realm="tireless", charset="UTF-8"'},
            )
        if scope["method"] not in ("GET", "HEAD") and not hook and not same_origin(headers):
            return PlainTextResponse("a POST must come from this dashboard's own pages", 403)
        declared = headers.get("content-length")
        if declared is not None and not declared.isdigit():
            return PlainTextResponse("bad Content-Length", 400)
        if declared is not None and int(declared) > body_limit(path):
            return PlainTextResponse(f"body over {body_limit(path)} bytes", 413)
        if "\x00" in path or b"\x00" in unquote_to_bytes(scope["query_string"]):
            return PlainTextResponse("NUL in the path or query", 400)
        return None
