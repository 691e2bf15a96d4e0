"""The one interface every forge client offers, the typed issue it returns, and how a read fails.

A client reads; it never touches the store. Everything it returns has been validated
(tireless.forge.validate), so the poller hands the store only well-formed issues. The mirror's
writes (a state label, mode labels off, one comment per finished job) are here too; which labels
and which comment is the store's decision (tireless.mirror_writes), not the client's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol


@dataclass(frozen=True, slots=True)
class ForgeIssue:
    """One issue as the forge showed it."""

    number: int
    state: str  # "open" or "closed"
    labels: tuple[str, ...]
    title: str
    url: str | None
    updated_at: datetime
    body: str = ""
    """The issue's text (empty when it has none), kept by the store for the agent."""


@dataclass(frozen=True, slots=True)
class Listing:
    """What one listing (all its pages) showed. `not_modified`: the forge answered 304 to our
    ETag, so nothing changed since the last read and `issues` is empty. `limited_until`: the
    forge said this token has no requests left until then (GitHub's x-ratelimit-*)."""

    issues: tuple[ForgeIssue, ...]
    pages: int
    etag: str | None = None
    not_modified: bool = False
    limited_until: datetime | None = None
    moved_to: str | None = None
    """owner/name the forge gives the repository now, when it redirected the listing there."""
    skipped: tuple[str, ...] = ()
    """Items left out because even alone they were past the response-size limit, said why."""


class ForgeClient(Protocol):
    """A forge's issues, read over its HTTP API."""

    def list_issues(
        self,
        owner: str,
        repo: str,
        *,
        since: datetime | None,
        state: str = "all",
        etag: str | None = None,
    ) -> Listing:
        """Every issue (not pull request) in `state` ("all" or "open") updated at or after
        `since` (None: every one), across all pages; with `etag`, a 304 gives `not_modified`."""
        ...

    def get_issue(self, owner: str, repo: str, number: int) -> ForgeIssue | None:
        """One issue; None when the forge says it is gone (404 or 410); IssueMoved when the
        forge redirected it to an issue of another repository (GitHub: a transferred issue)."""
        ...

    def set_deadline(self, seconds: float | None) -> None:
        """No request from now on outlives `seconds` from now (None: each its own timeout)."""
        ...

    def ensure_label(self, owner: str, repo: str, name: str, description: str) -> None:
        """The repository has a label of that name, created (not exclusive) when missing."""
        ...

    def add_label(self, owner: str, repo: str, number: int, name: str) -> None:
        """The issue carries the repository's label `name` (adding it twice is harmless)."""
        ...

    def remove_label(self, owner: str, repo: str, number: int, name: str) -> None:
        """The issue no longer carries `name` (already gone is fine)."""
        ...

    def comment_bodies(self, owner: str, repo: str, number: int) -> list[str]:
        """The bodies of the issue's comments, every page."""
        ...

    def add_comment(self, owner: str, repo: str, number: int, body: str) -> None:
        """A new comment (never retried blindly: a retry first looks for it)."""
        ...

    def close(self) -> None: ...


class ReadFailed(Exception):
    """A read that failed: the repository's poll changes nothing and is retried with backoff.
    The message never holds a token (clients put tokens in headers only, and never quote them)."""

    retry_after: timedelta | None = None


class BadResponse(ReadFailed):
    """The forge answered something we cannot trust: not JSON, not the shape its API describes,
    pages that disagree with its own count, a Link to another host, a body past the size limit."""


class Unavailable(ReadFailed):
    """5xx, a timeout, a connection refused or reset: retried with exponential backoff."""


class ForgeStopped(ReadFailed):
    """The whole forge must not be asked again until `until`: a rate limit, or our credentials
    were refused (401/403)."""

    def __init__(self, message: str, until: datetime) -> None:
        super().__init__(message)
        self.until = until


class RateLimited(ForgeStopped):
    """429, or a 403 that GitHub marks as a primary or secondary rate limit."""

    def __init__(self, message: str, until: datetime, retry_after: timedelta) -> None:
        super().__init__(message, until)
        self.retry_after = retry_after


class TooLarge(BadResponse):
    """A body past the response-size limit: a listing asks for that page again in smaller pages,
    and skips (and reports) an item that is too large alone."""


class IssueMoved(ReadFailed):
    """The forge redirected an issue to one of another repository (GitHub answers 301 for a
    transferred issue): its job ends, the note saying where it went (`to`: owner/name#number)."""

    def __init__(self, message: str, to: str) -> None:
        super().__init__(message)
        self.to = to


class WriteRefused(ReadFailed):
    """The forge refused one mirror write (403 without a rate-limit sign: a read-only token; 404,
    409, 410, 422): that issue's write is recorded as failed and retried later, the rest go on."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class AuthRefused(ForgeStopped):
    """401 or 403: the token is missing, wrong or lacks the scope."""
