"""What both forge clients need from HTTP: explicit timeouts, a response-size limit, a few quick
retries of 5xx and timeouts, rate limits and refused credentials turned into ForgeStopped,
`Link` headers parsed and followed only to the forge's own host. Tokens travel in headers only
and no message here quotes a header."""

from __future__ import annotations

import json
import random
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from urllib.parse import urljoin, urlsplit

import httpx

from tireless.forge.client import AuthRefused, BadResponse, RateLimited, Unavailable, WriteRefused

TIMEOUT = 30.0
"""Seconds before a request is given up (DESIGN: 30 s by default)."""
MAX_BYTES = 16 * 1024 * 1024
"""The largest response body read; a bigger one is refused, not truncated."""
QUICK_RETRIES = 2
"""5xx and timeouts are retried this many times within one read, after 0.2 s and 0.4 s (with
jitter); a read that still fails leaves the longer backoff to the store."""
AUTH_PAUSE = timedelta(minutes=10)
"""How long a forge that refused our credentials is left alone before it is asked again."""
SECONDARY_LIMIT_PAUSE = timedelta(minutes=1)
"""GitHub: a secondary rate limit without Retry-After means waiting at least a minute."""


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    headers: httpx.Headers
    body: bytes
    where: str  # "GET /path" for messages: no query, no header


def retry_after(headers: httpx.Headers) -> timedelta | None:
    """RFC 9110 Retry-After: delay-seconds or an HTTP date."""
    value = headers.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return timedelta(seconds=int(value))
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(when - datetime.now(UTC), timedelta(0))


def rate_limit_reset(headers: httpx.Headers) -> datetime | None:
    """GitHub's primary limit: when x-ratelimit-remaining is 0, the epoch second of
    x-ratelimit-reset is when requests are allowed again."""
    if headers.get("x-ratelimit-remaining", "").strip() != "0":
        return None
    reset = headers.get("x-ratelimit-reset", "").strip()
    if not reset.isdigit():
        return None
    return datetime.fromtimestamp(int(reset), UTC)


_LINK = re.compile(r"<([^>]*)>\s*((?:;\s*[^;,]+)*)")


def links(headers: httpx.Headers) -> dict[str, str]:
    """RFC 8288 Link header as {rel: url}."""
    found: dict[str, str] = {}
    for url, params in _LINK.findall(headers.get("link", "")):
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "rel":
                for rel in value.strip().strip('"').split():
                    found.setdefault(rel.lower(), url)
    return found


class Http:
    """One forge's HTTP client: a base URL, the auth headers, the limits."""

    def __init__(
        self,
        base_url: str,
        headers: dict[str, str],
        *,
        timeout: float = TIMEOUT,
        max_bytes: int = MAX_BYTES,
        quick_retries: int = QUICK_RETRIES,
    ) -> None:
        self.base_url = base_url.rstrip("/") + "/"
        self._origin = _origin(self.base_url)
        self._max_bytes = max_bytes
        self._quick_retries = quick_retries
        self._client = httpx.Client(
            headers=headers, timeout=httpx.Timeout(timeout), follow_redirects=False
        )

    def close(self) -> None:
        self._client.close()

    def url(self, path: str) -> str:
        return urljoin(self.base_url, path.lstrip("/"))

    def next_page(self, response: Response) -> str | None:
        """The rel="next" URL of a page, refused when it points at another host: a forge does not
        send us elsewhere, and our token must not follow."""
        url = links(response.headers).get("next")
        if url is None:
            return None
        url = urljoin(self.base_url, url)
        if _origin(url) != self._origin:
            raise BadResponse(
                f"{response.where}: Link to another host ({_origin(url)}) not followed"
            )
        return url

    def get(
        self,
        url: str,
        params: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Response:
        """GET with quick retries of 5xx and timeouts. Returns 2xx, 304, 404 and 410; raises
        RateLimited, AuthRefused, Unavailable or BadResponse for the rest."""
        where = f"GET {urlsplit(url).path}"
        attempt = 0
        while True:
            try:
                response = self._fetch(url, params, headers, where)
            except httpx.TimeoutException as error:
                failure: Unavailable = Unavailable(f"{where}: timed out ({type(error).__name__})")
            except httpx.TransportError as error:
                failure = Unavailable(f"{where}: {type(error).__name__}: {error}")
            except httpx.HTTPError as error:  # an undecodable body, say a broken gzip stream
                raise BadResponse(f"{where}: {type(error).__name__}: {error}") from error
            else:
                if response.status < 500:
                    return self._judge(response)
                failure = Unavailable(f"{where}: HTTP {response.status}")
                failure.retry_after = retry_after(response.headers)
            if attempt >= self._quick_retries:
                raise failure
            time.sleep(0.2 * 2**attempt * random.uniform(0.5, 1.5))
            attempt += 1

    def send(self, method: str, url: str, body: object = None, *, retry: bool = True) -> Response:
        """A write (the mirror): POST, PUT, PATCH or DELETE with a JSON body. 5xx and timeouts are
        retried quickly when `retry` (the write is idempotent); rate limits and 401 stop the forge
        (RateLimited, AuthRefused); 403, 404, 409 and 422 refuse this write only (WriteRefused)."""
        where = f"{method} {urlsplit(url).path}"
        attempt = 0
        while True:
            try:
                response = self._fetch(url, None, None, where, method, body)
            except httpx.TimeoutException as error:
                failure = Unavailable(f"{where}: timed out ({type(error).__name__})")
            except httpx.TransportError as error:
                failure = Unavailable(f"{where}: {type(error).__name__}: {error}")
            except httpx.HTTPError as error:
                raise BadResponse(f"{where}: {type(error).__name__}: {error}") from error
            else:
                if response.status < 500:
                    self._stop_when_limited(response)
                    if response.status == 401:
                        self._judge(response)
                    if response.status in (403, 404, 409, 410, 422):
                        raise WriteRefused(
                            f"{where}: HTTP {response.status}{_message(response)}", response.status
                        )
                    if 200 <= response.status < 300:
                        return response
                    raise BadResponse(f"{where}: unexpected HTTP {response.status}")
                failure = Unavailable(f"{where}: HTTP {response.status}")
                failure.retry_after = retry_after(response.headers)
            if not retry or attempt >= self._quick_retries:
                raise failure
            time.sleep(0.2 * 2**attempt * random.uniform(0.5, 1.5))
            attempt += 1

    def _fetch(
        self,
        url: str,
        params: dict[str, str] | None,
        headers: dict[str, str] | None,
        where: str,
        method: str = "GET",
        body: object = None,
    ) -> Response:
        with self._client.stream(method, url, params=params, headers=headers, json=body) as reply:
            declared = reply.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > self._max_bytes:
                raise BadResponse(f"{where}: {declared} bytes is past the {self._max_bytes} limit")
            body = bytearray()
            for chunk in reply.iter_bytes():
                body += chunk
                if len(body) > self._max_bytes:
                    raise BadResponse(f"{where}: body past the {self._max_bytes} byte limit")
            return Response(reply.status_code, reply.headers, bytes(body), where)

    def _judge(self, response: Response) -> Response:
        self._stop_when_limited(response)
        status, where = response.status, response.where
        if status in (401, 403):
            raise AuthRefused(
                f"{where}: HTTP {status}: the forge refused our credentials"
                " (check the forge's TIRELESS_TOKEN_ variable and its scopes)",
                datetime.now(UTC) + AUTH_PAUSE,
            )
        if status in (200, 304, 404, 410):
            return response
        raise BadResponse(f"{where}: unexpected HTTP {status}")

    def _stop_when_limited(self, response: Response) -> None:
        """429, or a 403 with Retry-After or a spent x-ratelimit-remaining: RateLimited."""
        status, headers, where = response.status, response.headers, response.where
        if status in (403, 429):
            delay = retry_after(headers)
            reset = rate_limit_reset(headers)
            now = datetime.now(UTC)
            if delay is not None or reset is not None or status == 429:
                until = reset if delay is None and reset is not None else None
                if until is None:
                    until = now + (delay if delay is not None else SECONDARY_LIMIT_PAUSE)
                wait = max(until - now, timedelta(0))
                raise RateLimited(
                    f"{where}: HTTP {status}, rate limited until {until:%Y-%m-%d %H:%M:%S}Z",
                    until,
                    wait,
                )


def _message(response: Response) -> str:
    """The forge's own `message` from an error body, quoted briefly (it never holds a header)."""
    try:
        message = json.loads(response.body).get("message")
    except (ValueError, AttributeError):
        return ""
    return f": {message:.200}" if isinstance(message, str) else ""


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()
