"""What both forge clients need from HTTP: explicit timeouts and an overall deadline, a
response-size limit, a few quick retries of 5xx and timeouts, rate limits (primary and GitHub's
secondary ones) and refused credentials turned into ForgeStopped, redirects followed on the
forge's own host only, `Link` headers parsed and paged on the registered base URL. Tokens travel
in headers only and no message here quotes a header."""

from __future__ import annotations

import json
import logging
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import TypeVar
from urllib.parse import urlencode, urljoin, urlsplit, urlunsplit

import httpx

from tireless.forge.client import (
    AuthRefused,
    BadResponse,
    ForgeStopped,
    RateLimited,
    ReadFailed,
    TooLarge,
    Unavailable,
    WriteRefused,
)

log = logging.getLogger("tireless.forge")

TIMEOUT = 30.0
"""Seconds before a request is given up, whole: connecting, waiting and reading every byte of the
body (DESIGN: 30 s by default). A body dripped a byte a second does not outlive it."""
MAX_REDIRECTS = 5
"""Redirects followed for one request (same forge host only)."""
MAX_BYTES = 16 * 1024 * 1024
"""The largest response body read; a bigger one is refused, not truncated."""
QUICK_RETRIES = 2
"""5xx and timeouts are retried this many times within one read, after 0.2 s and 0.4 s (with
jitter); a read that still fails leaves the longer backoff to the store."""
AUTH_PAUSE = timedelta(minutes=10)
"""How long a forge that refused our credentials is left alone before it is asked again."""
SECONDARY_LIMIT_PAUSE = timedelta(minutes=1)
"""GitHub: a secondary rate limit without Retry-After means waiting at least a minute, and
exponentially longer each time it comes again (docs.github.com/en/rest/using-the-rest-api/
rate-limits-for-the-rest-api#exceeding-the-rate-limit); never more than SECONDARY_LIMIT_MAX."""
SECONDARY_LIMIT_MAX = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    headers: httpx.Headers
    body: bytes
    where: str  # "GET /path" for messages: no query, no header
    url: str = ""
    moved: bool = False
    """The forge redirected the request (301, 302, 307, 308) on its own host: the thing asked
    for lives under another URL now (a renamed repository, a transferred issue)."""


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


def is_secondary_rate_limit(status: int, body: bytes) -> bool:
    """GitHub's secondary rate limit: a 403 or 429 whose error message says so ("You have exceeded
    a secondary rate limit..."), often with neither retry-after nor x-ratelimit-remaining: 0
    (docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api)."""
    return status in (403, 429) and b"secondary rate limit" in body.lower()


def rate_limit_of(response: Response, strikes: int = 0) -> RateLimited | None:
    """The rate limit an answer says we hit, or None: a 429; a 403 with Retry-After or a spent
    x-ratelimit-remaining (the primary limit); a 403 or 429 whose message names a secondary rate
    limit. The wait: Retry-After when given, else x-ratelimit-reset when the primary limit is
    spent, else (a secondary limit, a bare 429) SECONDARY_LIMIT_PAUSE doubled `strikes` times
    (how many such answers came in a row), at most SECONDARY_LIMIT_MAX. Reads and the mirror's
    writes both go through it (Http.get, Http.send)."""
    status, headers = response.status, response.headers
    if status not in (403, 429):
        return None
    delay = retry_after(headers)
    reset = rate_limit_reset(headers)
    secondary = is_secondary_rate_limit(status, response.body)
    if delay is None and reset is None and status == 403 and not secondary:
        return None  # a 403 with no sign of a limit: the token lacks a scope
    now = datetime.now(UTC)
    if delay is not None:
        until = now + delay
    elif reset is not None:
        until = reset
    else:
        until = now + min(SECONDARY_LIMIT_PAUSE * 2 ** min(strikes, 10), SECONDARY_LIMIT_MAX)
    wait = max(until - now, timedelta(0))
    return RateLimited(
        f"{response.where}: HTTP {status}, rate limited until {until:%Y-%m-%d %H:%M:%S}Z",
        until,
        wait,
    )


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
        self._timeout = timeout
        self._quick_retries = quick_retries
        self._deadline: float | None = None
        self._client = httpx.Client(
            headers=headers, timeout=httpx.Timeout(timeout), follow_redirects=False
        )

    def close(self) -> None:
        self._client.close()

    def url(self, path: str) -> str:
        return urljoin(self.base_url, path.lstrip("/"))

    def set_deadline(self, seconds: float | None) -> None:
        """From now on, no request (nor its retries) outlives `seconds` from now; None: each
        request only has its own timeout. The poller sets one per repository read."""
        self._deadline = None if seconds is None else time.monotonic() + seconds

    def next_page(self, response: Response) -> str | None:
        """The rel="next" URL of a page. A Link to another origin is paged on the registered base
        URL instead, the request's own path with the link's query, and warned about once: Gitea
        builds its Link headers from its ROOT_URL (genAPILinks in services/context/api.go:
        setting.AppURL + the request URI), which behind a proxy or in a container is often not the URL we reach it
        by; our token never goes to that other origin."""
        url = links(response.headers).get("next")
        if url is None:
            return None
        url = urljoin(response.url or self.base_url, url)
        if _origin(url) == self._origin:
            return url
        _warn_once(
            (self._origin, _origin(url)),
            f"the forge at {self._origin} sends Link headers for {_origin(url)} (its ROOT_URL?):"
            f" paging on {self._origin} instead",
        )
        return urlunsplit(urlsplit(response.url)._replace(query=urlsplit(url).query))

    def get(
        self,
        url: str,
        params: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Response:
        """GET with quick retries of 5xx and timeouts, redirects on the forge's host followed.
        Returns 2xx, 304, 404 and 410; raises RateLimited, AuthRefused, Unavailable, TooLarge or
        BadResponse for the rest."""
        return self._request("GET", url, params, headers, None, retry=True, write=False)

    def send(self, method: str, url: str, body: object = None, *, retry: bool = True) -> Response:
        """A write (the mirror): POST, PUT, PATCH or DELETE with a JSON body. 5xx and timeouts are
        retried quickly when `retry` (the write is idempotent); rate limits (rate_limit_of: also
        GitHub's secondary limits) and 401 stop the forge (RateLimited, AuthRefused); 403, 404,
        409 and 422 refuse this write only (WriteRefused)."""
        return self._request(method, url, None, None, body, retry=retry, write=True)

    def _request(
        self,
        method: str,
        url: str,
        params: dict[str, str] | None,
        headers: dict[str, str] | None,
        body: object,
        *,
        retry: bool,
        write: bool,
    ) -> Response:
        where = f"{method} {urlsplit(url).path}"
        attempt = 0
        while True:
            try:
                response = self._follow(method, url, params, headers, body, where)
            except httpx.TimeoutException as error:
                failure = Unavailable(f"{where}: timed out ({type(error).__name__})")
            except httpx.TransportError as error:
                failure = Unavailable(f"{where}: {type(error).__name__}: {error}")
            except httpx.HTTPError as error:  # an undecodable body, say a broken gzip stream
                raise BadResponse(f"{where}: {type(error).__name__}: {error}") from error
            else:
                if response.status < 500:
                    return self._judge_write(response) if write else self._judge(response)
                failure = Unavailable(f"{where}: HTTP {response.status}")
                failure.retry_after = retry_after(response.headers)
            pause = 0.2 * 2**attempt * random.uniform(0.5, 1.5)
            if not retry or attempt >= self._quick_retries or self._left() < pause + 0.1:
                raise failure
            time.sleep(pause)
            attempt += 1

    def _left(self) -> float:
        """Seconds left for one request: its timeout, or less when the read's deadline is near."""
        if self._deadline is None:
            return self._timeout
        return min(self._timeout, self._deadline - time.monotonic())

    def _follow(
        self,
        method: str,
        url: str,
        params: dict[str, str] | None,
        headers: dict[str, str] | None,
        body: object,
        where: str,
    ) -> Response:
        """One request, following redirects on the forge's own origin: GitHub answers 301 for a
        renamed repository (Location: .../repositories/{id}/...) and for a transferred issue
        (docs.github.com/en/rest/using-the-rest-api/best-practices-for-using-the-rest-api#follow-
        redirects), Gitea 307 for a renamed one (RedirectToRepo, services/context/repo.go, a
        path-only Location with the query kept). A redirect to another origin is refused."""
        moved = False
        for _ in range(MAX_REDIRECTS + 1):
            response = self._fetch(method, url, params, headers, body, where)
            location = response.headers.get("location")
            if response.status not in (301, 302, 303, 307, 308) or location is None:
                return replace(response, moved=moved) if moved else response
            target = urljoin(url, location)
            if _origin(target) != self._origin:
                raise BadResponse(
                    f"{where}: HTTP {response.status} to another host ({_origin(target)})"
                    " not followed"
                )
            if params and not urlsplit(target).query:
                target = f"{target}?{urlencode(params)}"
            url, params, moved = target, None, True
        raise BadResponse(f"{where}: more than {MAX_REDIRECTS} redirects")

    def _fetch(
        self,
        method: str,
        url: str,
        params: dict[str, str] | None,
        headers: dict[str, str] | None,
        body: object,
        where: str,
    ) -> Response:
        left = self._left()
        if left <= 0:
            raise Unavailable(f"{where}: the read's deadline passed")
        deadline = time.monotonic() + left
        with self._client.stream(
            method, url, params=params, headers=headers, json=body, timeout=httpx.Timeout(left)
        ) as reply:
            declared = reply.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > self._max_bytes:
                raise TooLarge(f"{where}: {declared} bytes is past the {self._max_bytes} limit")
            content = bytearray()
            for chunk in reply.iter_bytes():
                content += chunk
                if len(content) > self._max_bytes:
                    raise TooLarge(f"{where}: body past the {self._max_bytes} byte limit")
                if time.monotonic() > deadline:  # a body dripped slower than the timeout
                    raise Unavailable(f"{where}: timed out reading the body ({left:.0f} s)")
            return Response(
                reply.status_code, reply.headers, bytes(content), where, url=str(reply.url)
            )

    def _limited(self, response: Response) -> None:
        """Raises RateLimited when the answer says we hit a rate limit; counts the limits in a
        row per forge for as long as this process lives (a poller's rounds make new clients),
        so each wait is twice the last, and forgets them at a good answer."""
        with _strikes_lock:
            limited = rate_limit_of(response, _strikes.get(self.base_url, 0))
            if limited is not None:
                _strikes[self.base_url] = _strikes.get(self.base_url, 0) + 1
            elif 200 <= response.status < 400:
                _strikes.pop(self.base_url, None)
        if limited is not None:
            raise limited

    def _judge(self, response: Response) -> Response:
        self._limited(response)
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

    def _judge_write(self, response: Response) -> Response:
        self._limited(response)
        if response.status == 401:
            self._judge(response)
        if response.status in (403, 404, 409, 410, 422):
            raise WriteRefused(
                f"{response.where}: HTTP {response.status}{_message(response)}", response.status
            )
        if 200 <= response.status < 300:
            return response
        raise BadResponse(f"{response.where}: unexpected HTTP {response.status}")


_strikes: dict[str, int] = {}
_strikes_lock = threading.Lock()
_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def _warn_once(key: tuple[str, str], message: str) -> None:
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    log.warning("%s", message)


def _message(response: Response) -> str:
    """The forge's own `message` from an error body, quoted briefly (it never holds a header),
    with its `errors` after it: GitHub's 422 says only "Validation Failed", the reason is there
    ({"resource": "PullRequest", "field": "head", "code": "invalid"}, or a `message`:
    docs.github.com/en/rest/using-the-rest-api/troubleshooting-the-rest-api); Gitea's APIError
    lists strings (services/context/api.go)."""
    try:
        data = json.loads(response.body)
        message = data.get("message")
    except (ValueError, AttributeError):
        return ""
    if not isinstance(message, str):
        return ""
    errors = data.get("errors")
    reasons = [
        error
        if isinstance(error, str)  # Gitea's `errors` are strings
        else str(error.get("message") or " ".join(str(error[k]) for k in _ERROR_KEYS if k in error))
        for error in (errors if isinstance(errors, list) else [])
        if isinstance(error, str | dict) and error
    ]
    if reasons:
        message = f"{message} ({'; '.join(reasons)})"
    return f": {message:.300}"


_ERROR_KEYS = ("resource", "field", "code")


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


Found = TypeVar("Found")


def sent_or_found(
    send: Callable[[], Response], find: Callable[[], Found | None]
) -> Response | Found:
    """A create that is never sent twice blindly: when the forge refuses it or its answer is lost,
    what it would have made is looked up first (`find`: a duplicate's refusal, or a create that was
    stored before the connection dropped); only a lost answer with nothing found is sent again."""
    for attempt in range(QUICK_RETRIES + 1):
        try:
            return send()
        except ForgeStopped:
            raise
        except ReadFailed as failure:
            found = find()
            if found is not None:
                return found
            if not isinstance(failure, Unavailable) or attempt == QUICK_RETRIES:
                raise
    raise AssertionError("the last attempt returns or raises")
