"""The faults a test switches on (`fault(name, times=...)`): HTTP errors, broken bodies, slow and
dripping answers, lost writes, and the forges' rate limits, GitHub's primary and secondary ones."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

from dev.standin.records import Answer, Fault, StoredIssue
from dev.standin.views import ForgeViews

PRIMARY_LIMIT_FAULTS = (
    "primary-limit-no-reset",  # no x-ratelimit-reset at all
    "primary-limit-empty-reset",  # x-ratelimit-reset: (empty)
    "primary-limit-garbled-reset",  # x-ratelimit-reset: soon
    "primary-limit-past-reset",  # a reset two minutes ago
    "primary-limit-far-reset",  # a reset a day away (a server whose clock runs ahead)
)
"""GitHub's primary rate limit spent, its x-ratelimit-reset of no use (issue 36, _primary_limit)."""


FAULTS = (
    "500",  # HTTP 500, as a forge behind trouble answers
    "429-seconds",  # 429 with Retry-After in seconds (RFC 9110 delay-seconds)
    "429-date",  # 429 with Retry-After as an HTTP date
    "401",  # credentials refused
    "403",  # forbidden, with no rate-limit header: a token lacking a scope
    "html",  # 200 with an HTML page, as a proxy or a login redirect serves
    "invalid-json",  # 200, application/json, a body cut short
    "not-a-list",  # 200 with a JSON object where an array is due
    "no-number",  # an item without `number`
    "bad-number",  # an item whose `number` is -1
    "labels-not-objects",  # labels as bare strings
    "nul",  # a title holding NUL (JSON "\u0000")
    "surrogate",  # a title holding an unpaired surrogate (JSON "\ud800")
    "lying-total",  # X-Total-Count one more than the items there are (Gitea)
    "slow",  # the answer comes `seconds` late
    # The poller's quirks (issue 21), cited where they are served:
    "secondary-limit",  # GitHub: 403, a secondary rate limit, no retry-after (_poller_quirks)
    "drip",  # the body sent one byte every `seconds` (Answer.drip)
    # The mirror's writes (issue 21): the write is stored, then the answer is lost, as when a
    # proxy or the network drops it; a client that retries blindly makes it twice.
    "applied-then-reset",  # stored, then the connection closed with no answer
    "applied-then-slow",  # stored, then the answer comes `seconds` late (past a client timeout)
    *PRIMARY_LIMIT_FAULTS,
)


STATUS_FAULTS = (
    "500",
    "429-seconds",
    "429-date",
    "401",
    "403",
    "secondary-limit",
    *PRIMARY_LIMIT_FAULTS,
)
"""The faults that answer with a status of their own instead of the resource."""


BODY_FAULTS = ("html", "invalid-json", "slow", "drip")
"""The content faults that make sense for any answer, not only a listing of issues."""


class ForgeFaults(ForgeViews):
    """The stand-in's faults and rate limits, on top of its state."""

    # Faults and observation
    def fault(
        self,
        name: str,
        *,
        times: int | None = 1,
        repo: tuple[str, str] | None = None,
        seconds: float = 2.0,
        writes_only: bool = False,
        number: int | None = None,
    ) -> None:
        """Answer the next `times` requests (None: every one until `clear_faults`), or those for
        one repository, with a fault of FAULTS; `seconds` for `slow` and the Retry-After ones.
        `writes_only`: only write requests; `number`: only requests about that issue."""
        if name not in FAULTS:
            raise ValueError(f"unknown fault {name!r}: one of {', '.join(FAULTS)}")
        writes_only = writes_only or name.startswith("applied-")
        with self._lock:
            self._faults.append(Fault(name, times, repo, seconds, writes_only, number))

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def hold(self) -> None:
        """Make every request wait until `open_gate` (for tests that need a poller mid-read)."""
        with self._lock:
            self._gate = threading.Event()

    def open_gate(self) -> None:
        with self._lock:
            gate, self._gate = self._gate, None
        if gate is not None:
            gate.set()

    # Serving (called by the handler's threads)
    def _take_fault(
        self, owner: str, repo: str, number: int | None = None, write: bool = False
    ) -> Fault | None:
        with self._lock:
            for fault in self._faults:
                if (
                    (fault.repo is None or fault.repo == (owner, repo))
                    and (write or not fault.writes_only)
                    and (fault.number is None or fault.number == number)
                ):
                    if fault.times is not None:
                        fault.times -= 1
                        if fault.times <= 0:
                            self._faults.remove(fault)
                    return fault
        return None

    def _status_fault(self, fault: Fault) -> Answer:
        if fault.name == "500":
            return self.api.error(500, "Internal Server Error")
        if fault.name == "429-seconds":
            answer = self.api.error(429, "Too Many Requests")
            return replace(answer, headers={"Retry-After": str(int(fault.seconds))})
        if fault.name == "429-date":
            when = datetime.now(UTC) + timedelta(seconds=fault.seconds)
            answer = self.api.error(429, "Too Many Requests")
            return replace(answer, headers={"Retry-After": format_datetime(when, usegmt=True)})
        if fault.name == "401":
            return self.api.error(401, "Bad credentials")
        if fault.name == "secondary-limit":
            return self._secondary_limit()
        if fault.name in PRIMARY_LIMIT_FAULTS:
            return self._primary_limit(fault.name)
        # A 403 carrying no rate-limit sign: the token lacks a scope.
        return Answer(403, {}, {"message": "Resource not accessible by integration"})

    def _content_fault(self, fault: Fault, answer: Answer) -> Answer:
        body = answer.body
        if fault.name == "html":
            return Answer(
                200,
                {},
                None,
                raw=b"<!DOCTYPE html><html><body>Sign in</body></html>",
                content_type="text/html; charset=utf-8",
            )
        if fault.name == "invalid-json":
            return Answer(200, answer.headers, None, raw=b'[{"number": 1, "title": "cut')
        if fault.name == "not-a-list":
            return Answer(200, answer.headers, {"data": body})
        if fault.name == "slow":
            time.sleep(fault.seconds)
            return answer
        if fault.name == "drip":
            return replace(answer, drip=fault.seconds)
        if fault.name == "lying-total":
            count = int(answer.headers.get("X-Total-Count", "0")) + 1
            return replace(answer, headers=answer.headers | {"X-Total-Count": str(count)})
        if not isinstance(body, list) or not body:
            body = [self._issue_json("x", "y", StoredIssue(1, "an issue", []))]
        first = dict(body[0])
        if fault.name == "no-number":
            del first["number"]
        elif fault.name == "bad-number":
            first["number"] = -1
        elif fault.name == "labels-not-objects":
            first["labels"] = ["tireless"]
        elif fault.name == "nul":
            first["title"] = "a\u0000b"
        elif fault.name == "surrogate":
            first["title"] = "a\ud800b"
        return replace(answer, body=[first, *body[1:]])

    def _count_rate(self, answer: Answer, query: dict[str, str]) -> Answer:
        """The answer as the forge's rate limit counts it (GitHub's: GitHubApi.count_rate)."""
        return self.api.count_rate(answer)

    def _primary_limit(self, name: str) -> Answer:
        """GitHub's primary rate limit spent: 403 with x-ratelimit-remaining: 0 (docs.github.com/
        en/rest/using-the-rest-api/rate-limits-for-the-rest-api#exceeding-the-primary-rate-limit),
        its x-ratelimit-reset (UTC epoch seconds, at most an hour away) missing, empty, garbled,
        past or a day away, as a proxy that drops or rewrites headers, or a server whose clock is
        wrong, sends it. The client must still take it as a rate limit, not refused credentials."""
        now = int(time.time())
        reset = {
            "primary-limit-no-reset": None,
            "primary-limit-empty-reset": "",
            "primary-limit-garbled-reset": "soon",
            "primary-limit-past-reset": str(now - 120),
            "primary-limit-far-reset": str(now + 24 * 3600),
        }[name]
        headers = self._rate_headers() | {"x-ratelimit-remaining": "0"}
        headers["x-ratelimit-used"] = str(self.rate_limit)
        del headers["x-ratelimit-reset"]
        if reset is not None:
            headers["x-ratelimit-reset"] = reset
        answer = self.api.error(403, "API rate limit exceeded")
        return replace(answer, headers=headers)

    def _secondary_limit(self) -> Answer:
        """GitHub's secondary rate limit: 403 (or 429) whose message says so, often with no
        retry-after and x-ratelimit-remaining not 0 (docs.github.com/en/rest/using-the-rest-api/
        rate-limits-for-the-rest-api#exceeding-the-rate-limit)."""
        message = (
            "You have exceeded a secondary rate limit. Please wait a few minutes before you try"
            " again. If you reach out to GitHub Support for help, please include the request ID."
        )
        return Answer(
            403,
            self._rate_headers(),
            {"message": message, "documentation_url": "https://docs.github.com/rest"},
        )

    def _write_limited(self) -> bool:
        """Whether this write is past `write_limit` (counted as accepted otherwise)."""
        if self.write_limit is None:
            return False
        writes, seconds = self.write_limit
        with self._lock:
            now = time.monotonic()
            self._write_times = [t for t in self._write_times if now - t < seconds]
            if len(self._write_times) >= writes:
                self.limited_writes += 1
                return True
            self._write_times.append(now)
            return False
