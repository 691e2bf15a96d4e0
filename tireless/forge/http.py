"""What both forge clients need from HTTP: explicit timeouts and an overall deadline, a
response-size limit, a few quick retries of 5xx and timeouts, rate limits (primary and GitHub's
secondary ones) and refused credentials turned into ForgeStopped, redirects followed on the
forge's own host only, `Link` headers parsed and paged on the registered base URL. Tokens travel
in headers only and no message here quotes a header."""

from __future__ import annotations

import hashlib
import json
import logging
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import TypeVar
from urllib.parse import urlencode, urljoin, urlsplit, urlunsplit

import httpx

from tireless.forge.client import (
    AuthRefused,
    BadResponse,
    ForgeStopped,
    LoginUnknown,
    RateLimited,
    ReadFailed,
    Response,
    ScopeRefused,
    TooLarge,
    Unavailable,
    WriteRefused,
)

log = logging.getLogger("tireless.forge")
Kept = TypeVar("Kept")

TIMEOUT = 30.0
"""Seconds before a request is given up, whole: connecting, waiting and reading every byte of the
body (DESIGN: 30 s by default). A body dripped a byte a second does not outlive it."""
MAX_REDIRECTS = 5
"""Redirects followed for one request (same forge host only)."""
MAX_BYTES = 16 * 1024 * 1024
"""The largest response body read; a bigger one is refused, not truncated."""
QUICK_RETRIES = 2
"""5xx and dropped connections are retried this many times within one read, after 0.2 s and 0.4 s
(with jitter); a read that still fails leaves the longer backoff to the store. A timeout under a
deadline (the poller's) is not retried: a forge that did not answer in its timeout is asked
nothing more by that client (Http.set_deadline), which the poller makes anew each round."""
AUTH_PAUSE = timedelta(minutes=10)
"""How long a forge that refused our credentials is left alone before it is asked again."""
SECONDARY_LIMIT_PAUSE = timedelta(minutes=1)
"""GitHub: a secondary rate limit without Retry-After means waiting at least a minute, and
exponentially longer each time it comes again (docs.github.com/en/rest/using-the-rest-api/
rate-limits-for-the-rest-api#exceeding-the-rate-limit); never more than SECONDARY_LIMIT_MAX."""
SECONDARY_LIMIT_MAX = timedelta(hours=1)
PRIMARY_RESET_MAX = timedelta(hours=1, minutes=5)
"""GitHub's primary limit is counted per hour, so its x-ratelimit-reset is at most an hour away;
a later one (a server whose clock runs ahead of ours) is waited for this long at most: the
hour and five minutes' slack for the two clocks."""
RETRY_AFTER_MAX = timedelta(days=1)
"""The longest Retry-After obeyed; a longer one is taken as a day."""


def retry_after(headers: httpx.Headers) -> timedelta | None:
    """RFC 9110 Retry-After: delay-seconds or an HTTP date, at most RETRY_AFTER_MAX away (a
    server's wild value, 10^11 seconds, would stop the forge for ever or overflow)."""
    value = headers.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return timedelta(seconds=min(int(value), RETRY_AFTER_MAX.total_seconds()))
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return min(max(when - datetime.now(UTC), timedelta(0)), RETRY_AFTER_MAX)


def primary_limit_spent(headers: httpx.Headers) -> bool:
    """GitHub's primary limit is spent: x-ratelimit-remaining is 0 (docs.github.com/en/rest/
    using-the-rest-api/rate-limits-for-the-rest-api#exceeding-the-primary-rate-limit)."""
    remaining: str = headers.get("x-ratelimit-remaining", "")
    return remaining.strip() == "0"


def rate_limit_reset(headers: httpx.Headers) -> datetime | None:
    """When a spent primary limit allows requests again: x-ratelimit-reset, in UTC epoch
    seconds, no later than PRIMARY_RESET_MAX from now. None when the limit is not spent or the
    reset is of no use (missing, empty, not a whole number, or past): the caller then waits as
    for a secondary limit."""
    if not primary_limit_spent(headers):
        return None
    reset = headers.get("x-ratelimit-reset", "").strip()
    if not (reset.isascii() and reset.isdigit()):
        return None
    now = datetime.now(UTC)
    latest = now + PRIMARY_RESET_MAX
    if int(reset) >= latest.timestamp():  # compared first: a huge epoch has no datetime
        return latest
    when = datetime.fromtimestamp(int(reset), UTC)
    return when if when > now else None


def is_secondary_rate_limit(status: int, body: bytes) -> bool:
    """GitHub's secondary rate limit: a 403 or 429 whose error message says so ("You have exceeded
    a secondary rate limit..."), often with neither retry-after nor x-ratelimit-remaining: 0
    (docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api)."""
    return status in (403, 429) and b"secondary rate limit" in body.lower()


def rate_limit_of(response: Response, strikes: int = 0) -> RateLimited | None:
    """The rate limit an answer says we hit, or None: a 429; a 403 with Retry-After or a spent
    x-ratelimit-remaining (the primary limit, whatever its x-ratelimit-reset says); a 403 or 429
    whose message names a secondary rate limit. The wait: Retry-After when given, else
    x-ratelimit-reset when it is a usable time (rate_limit_reset), else (a secondary limit, a
    bare 429, a spent primary limit without a usable reset) SECONDARY_LIMIT_PAUSE doubled
    `strikes` times (how many such answers came in a row), at most SECONDARY_LIMIT_MAX. Reads
    and the mirror's writes both go through it (Http.get, Http.send)."""
    status, headers = response.status, response.headers
    if status not in (403, 429):
        return None
    delay = retry_after(headers)
    reset = rate_limit_reset(headers)
    secondary = is_secondary_rate_limit(status, response.body)
    limited = delay is not None or primary_limit_spent(headers) or secondary
    if status == 403 and not limited:
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
        auth: httpx.Auth | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/") + "/"
        self._origin = _origin(self.base_url)
        # What this forge refused this token, and the login it learned: kept per process by the
        # base URL and a digest of the credentials (a new token is asked anew), never the token.
        # An App's tokens change every hour: its key is the App (tireless.forge.app_auth).
        credentials = headers.get("Authorization", repr(auth)).encode()
        self._key = (self.base_url, hashlib.sha256(credentials).hexdigest())
        self._max_bytes = max_bytes
        self._timeout = timeout
        self._quick_retries = quick_retries
        self._deadline: float | None = None
        self._hung: str | None = None  # the timeout under a deadline that ended our requests
        self._client = httpx.Client(
            headers=headers, timeout=httpx.Timeout(timeout), follow_redirects=False, auth=auth
        )

    def close(self) -> None:
        self._client.close()

    def url(self, path: str) -> str:
        return urljoin(self.base_url, path.lstrip("/"))

    def set_deadline(self, seconds: float | None) -> None:
        """From now on, no request (nor its retries) outlives `seconds` from now; None: each
        request only has its own timeout. The poller sets one per repository's round. A request
        that times out under a deadline is the last this client sends (the poller's client lives
        for one round of one forge, so a hung forge costs the round about one timeout): the later
        ones fail at once, saying so."""
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
        """GET with quick retries of 5xx and timeouts (but one under a deadline), redirects on the forge's host followed.
        Returns 2xx, 304, 404 and 410; raises RateLimited, AuthRefused, Unavailable, TooLarge or
        BadResponse for the rest."""
        return self._request("GET", url, params, headers, None, retry=True, write=False)

    def send(self, method: str, url: str, body: object = None, *, retry: bool = True) -> Response:
        """A write (the mirror): POST, PUT, PATCH or DELETE with a JSON body. 5xx and timeouts (but
        one under a deadline) are retried quickly when `retry` (the write is idempotent); rate limits (rate_limit_of: also
        GitHub's secondary limits) and 401 stop the forge (RateLimited, AuthRefused); 403, 404,
        409, 410, 422 and 423 refuse this write only (WriteRefused)."""
        return self._request(method, url, None, None, body, retry=retry, write=True)

    def probe(self, method: str, url: str, body: object = None) -> Response:
        """One request, answered whatever its status (`tireless forge check` reads the status,
        the forge's message and its headers: which scope or permission a refusal asks for).
        Redirects on the forge's host are followed; nothing is retried; a 5xx is Unavailable."""
        where = f"{method} {urlsplit(url).path}"
        try:
            response = self._follow(method, url, None, None, body, where)
        except httpx.TimeoutException as error:
            raise Unavailable(f"{where}: timed out ({type(error).__name__})") from error
        except httpx.TransportError as error:
            raise Unavailable(f"{where}: {type(error).__name__}: {error}") from error
        except httpx.HTTPError as error:
            raise BadResponse(f"{where}: {type(error).__name__}: {error}") from error
        if response.status >= 500:
            raise Unavailable(f"{where}: HTTP {response.status}")
        return response

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
                self._timed_out(failure)
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
            late = self._hung is not None or self._left() < pause + 0.1
            if not retry or attempt >= self._quick_retries or late:
                raise failure
            time.sleep(pause)
            attempt += 1

    def _left(self) -> float:
        """Seconds left for one request: its timeout, or less when the read's deadline is near."""
        if self._deadline is None:
            return self._timeout
        return min(self._timeout, self._deadline - time.monotonic())

    def _timed_out(self, failure: Unavailable) -> Unavailable:
        """Under a deadline, this client sends nothing more (set_deadline)."""
        if self._deadline is not None:
            self._hung = str(failure)
        return failure

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
        if self._hung is not None:
            raise Unavailable(f"{where}: not sent: {self._hung} before, this round")
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
                    raise self._timed_out(
                        Unavailable(f"{where}: timed out reading the body ({left:.0f} s)")
                    )
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

    def optional(self, lookup: str, read: Callable[[], Kept]) -> Kept | None:
        """`read()` for a lookup tireless can do without (`lookup` names it): None when the
        token may not make it (ScopeRefused), warned once and remembered for this forge and
        token while the process lives, so that no later round asks again."""
        key = (self._key, lookup)
        with _learned_lock:
            if key in _refused:
                return None
        try:
            return read()
        except ScopeRefused as refusal:
            with _learned_lock:
                _refused.add(key)
            log.warning("%s: tireless does without %s", refusal, lookup)
            return None

    def learned_login(self) -> str:
        """The token's login as a write of its own named it (learn_login), for a token that may
        not read its own account; LoginUnknown before one did."""
        with _learned_lock:
            login = _logins.get(self._key)
        if login is None:
            raise LoginUnknown(
                f"{LOGIN_LOOKUP} is refused to this token, and no write of its own named it yet"
            )
        return login

    def learn_login(self, answer: Response) -> None:
        """Keeps who a write of ours was made by (`user.login` of the comment or issue the
        forge answered with) when the token may not read its own account (LOGIN_LOOKUP was
        refused): the mirror tells its own comments and issues by it."""
        with _learned_lock:
            if (self._key, LOGIN_LOOKUP) not in _refused or self._key in _logins:
                return
        try:
            made = json.loads(answer.body)
        except ValueError:
            return
        user = made.get("user") if isinstance(made, dict) else None
        login = user.get("login") if isinstance(user, dict) else None
        if isinstance(login, str) and login:
            with _learned_lock:
                _logins[self._key] = login

    def _judge(self, response: Response) -> Response:
        self._limited(response)
        status, where = response.status, response.where
        if status == 403:  # no rate limit (_limited): the token may not do this
            needed = _needed(response)
            raise ScopeRefused(
                f"{where}: HTTP 403: the forge refused our credentials"
                + (f": the token needs {needed}" if needed else "")
                + " (check the forge's TIRELESS_TOKEN_ variable and its scopes)",
                datetime.now(UTC) + AUTH_PAUSE,
                needed,
            )
        if status == 401:
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
        # 423: Gitea refuses every write to an archived repository (mustNotBeArchived,
        # routers/api/v1/api.go: "repo is archived").
        if response.status in (403, 404, 409, 410, 422, 423):
            raise WriteRefused(
                f"{response.where}: HTTP {response.status}{_message(response)}", response.status
            )
        if 200 <= response.status < 300:
            return response
        raise BadResponse(f"{response.where}: unexpected HTTP {response.status}")


_strikes: dict[str, int] = {}
_strikes_lock = threading.Lock()
LOGIN_LOOKUP = "the token's own login (GET /user)"
"""The optional lookup of the account the token writes as (Http.optional, Http.learn_login)."""
_refused: set[tuple[tuple[str, str], str]] = set()
"""(forge and credentials, lookup): the optional lookups refused (Http.optional)."""
_logins: dict[tuple[str, str], str] = {}
"""The logins learned from our own writes' answers (Http.learn_login), by forge and credentials."""
_learned_lock = threading.Lock()


def forget_refusals() -> None:
    """Forgets the refused lookups and the learned logins: a test's new stand-in forge may get the
    port, and so the base URL, of an earlier one."""
    with _learned_lock:
        _refused.clear()
        _logins.clear()


_GITEA_SCOPES = re.compile(r"required scope\(s\): \[([^\]]*)\]")


def _needed(response: Response) -> str | None:
    """What a 403's answer says the token needs: GitHub's X-Accepted-GitHub-Permissions
    ("issues=read", sets of alternatives separated by ";": docs.github.com/en/rest/using-the-rest-
    api/troubleshooting-the-rest-api#resource-not-accessible), or the scopes of Gitea's message
    ("token does not have at least one of required scope(s): [read:issue]", tokenRequiresScopes
    in routers/api/v1/api.go); None when it says neither."""
    accepted = response.headers.get("x-accepted-github-permissions", "")
    alternatives = [part.strip() for part in accepted.split(";") if part.strip()]
    if not alternatives:
        found = _GITEA_SCOPES.search(response.body[:1000].decode("utf-8", "replace"))
        alternatives = found.group(1).split() if found else []
    return " or ".join(alternatives) or None


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
