"""The message an action leaves for the next page ("Cancelled jobs 5 and 8."): a cookie the
server signs with its CSRF key, shown once by the next page rendered and then dropped. A cookie
that does not carry the server's signature is ignored, so nobody else can put words on a page."""

from __future__ import annotations

import base64
import hashlib
import hmac

from starlette.requests import Request
from starlette.responses import Response

from tireless.web.csrf import Csrf

COOKIE = "tireless_flash"
LIMIT = 1500  # a cookie holds about 4 KB; a longer message is cut


def signature(csrf: Csrf, text: str) -> str:
    return hmac.new(csrf.key, b"flash:" + text.encode(), hashlib.sha256).hexdigest()


def give(response: Response, csrf: Csrf, message: str) -> None:
    text = base64.urlsafe_b64encode(message[:LIMIT].encode()).decode()
    value = f"{text}.{signature(csrf, text)}"
    response.set_cookie(COOKIE, value, httponly=True, samesite="strict", path="/")


def taken(request: Request, csrf: Csrf) -> str | None:
    """The message the request brings, when the server signed it."""
    text, _, mac = request.cookies.get(COOKIE, "").partition(".")
    if not text or not hmac.compare_digest(signature(csrf, text), mac):
        return None
    try:
        return base64.urlsafe_b64decode(text.encode()).decode()
    except ValueError:
        return None


def clear(response: Response) -> None:
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
