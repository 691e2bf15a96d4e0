"""CSRF protection of the action forms: each browser session gets a random id in a cookie, and
each form carries a token derived from that id with the server's key (HMAC-SHA256). A POST is
accepted only when its token matches its session, compared in constant time."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field

from starlette.requests import Request
from starlette.responses import Response

COOKIE = "tireless_session"


@dataclass(frozen=True)
class Csrf:
    """The key lives as long as the process: a restart asks the browser to reload its forms."""

    key: bytes = field(default_factory=lambda: secrets.token_bytes(32))

    def session(self, request: Request) -> str:
        """The request's session id, or a new one (given to the browser by `keep`)."""
        current = request.cookies.get(COOKIE, "")
        return current if len(current) == 43 else secrets.token_urlsafe(32)

    def token(self, session: str) -> str:
        return hmac.new(self.key, session.encode(), hashlib.sha256).hexdigest()

    def accepts(self, request: Request, given: str) -> bool:
        session = request.cookies.get(COOKIE)
        if not session or not given:
            return False
        return hmac.compare_digest(self.token(session), given)

    def keep(self, response: Response, session: str) -> None:
        response.set_cookie(COOKIE, session, httponly=True, samesite="strict", path="/")
