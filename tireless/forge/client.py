"""The one interface every forge client offers, the typed issue it returns, and how a read fails.

A client reads; it never touches the store. Everything it returns has been validated
(tireless.forge.validate), so the poller hands the store only well-formed issues. The mirror's
writes (a state label, mode labels off, one comment per finished job) are here too; which labels
and which comment is the store's decision (tireless.mirror_writes), not the client's. So are
delivery's: the default branch, and the one pull request from a branch, found, opened, updated.
And the conversation's (issue 34): comments since a time, a pull request's reviews and their
inline comments, a login's permission, a commit's checks, a reaction on a comment.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

import httpx

from tireless.outcomes import PullFate


@dataclass(frozen=True, slots=True)
class Response:
    """One answer of a forge's HTTP API (tireless.forge.http), as the clients read it."""

    status: int
    headers: httpx.Headers
    body: bytes
    where: str  # "GET /path" for messages: no query, no header
    url: str = ""
    moved: bool = False
    """The forge redirected the request (301, 302, 307, 308) on its own host: the thing asked
    for lives under another URL now (a renamed repository, a transferred issue)."""


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
    forge_dependencies: bool | None = None
    """What the forge's listing said of the issues this one is blocked by (GitHub's
    `issue_dependencies_summary.total_blocked_by`): None, it says nothing (Gitea, an older GitHub
    Enterprise), so they are read; False, there are none, and no request is made; True, read."""
    forge_sub_issues: bool | None = None
    """The same for its sub-issues (GitHub's `sub_issues_summary.total`), which it depends on."""

    @property
    def forge_relations_known_none(self) -> bool:
        """The listing said the issue has no forge relation at all: nothing to read."""
        return self.forge_dependencies is False and self.forge_sub_issues is False


@dataclass(frozen=True, slots=True)
class IssueRef:
    """An issue of the same forge, as a dependency relation names it."""

    owner: str
    repo: str
    number: int


@dataclass(frozen=True, slots=True)
class ForgeComment:
    """One comment of an issue: who wrote it (the forge account's login), its text, and its id
    (both APIs' `id`; None when the forge gave none), which `edit_comment` takes."""

    author: str | None
    body: str
    id: int | None = None


@dataclass(frozen=True, slots=True)
class IssueEvent:
    """One change of an issue's labels or state, oldest first: `kind` is "labeled", "unlabeled"
    (with `label`), "closed" or "reopened"; `actor` the login that made it."""

    at: datetime
    actor: str | None
    kind: str
    label: str | None = None


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
    pulls: tuple[tuple[int, datetime], ...] = ()
    """The pull requests the listing showed, each with its `updated_at` (both forges list them
    among issues): a review or a comment on one moves it, so its conversation may have changed."""
    odd: tuple[tuple[int, str], ...] = ()
    """Issues left out because a field of theirs cannot be taken (a NUL in the title, labels that
    are not objects): each number with the reason. The rest of the listing stands."""
    fates: tuple[PullFate, ...] = ()
    """What became of each pull request the listing showed (tireless.forge.pull_fate); one whose
    fate cannot be read is said in `skipped`."""


@dataclass(frozen=True, slots=True)
class PullRequest:
    """One pull request as the forge showed it. `number` is in the issues' sequence (a pull
    request is an issue on both forges); `url` its web page (`html_url`); `head` and `base`
    branch names of the repository; `title` without Gitea's draft prefix (`WIP: `), which
    `draft` says instead."""

    number: int
    url: str
    head: str
    base: str
    state: str  # "open" or "closed"
    draft: bool
    title: str
    body: str


@dataclass(frozen=True, slots=True)
class ForgeNote:
    """One comment on an issue or pull request (both are issues on both forges), with its id:
    what a person said in the conversation, `/tireless ...` commands included. `number` is the
    issue's or pull request's; `updated_at` moves when the comment is edited."""

    id: int
    number: int
    author: str | None
    body: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class ReviewComment:
    """One inline comment of a review: the file, the line of it the forge names (None when it
    names none, say on a line the pull request no longer has), the text."""

    path: str
    line: int | None
    body: str


@dataclass(frozen=True, slots=True)
class Review:
    """One review of a pull request. `state` is normalised across forges: "changes_requested",
    "approved", "commented", "pending" (not submitted yet, or a review only requested) or
    "dismissed"; `commit` the head commit it reviewed (`commit_id`), when the forge gives it."""

    id: int
    author: str | None
    state: str
    body: str
    submitted_at: datetime | None
    commit: str | None


@dataclass(frozen=True, slots=True)
class Reviews:
    """Every review of a pull request. `not_modified`: the forge answered 304 to our ETag, so
    nothing changed since the last read and `reviews` is empty (GitHub only; Gitea sends none)."""

    reviews: tuple[Review, ...]
    etag: str | None = None
    not_modified: bool = False


@dataclass(frozen=True, slots=True)
class Check:
    """One check of a commit: a commit status (its `context`) or a GitHub check run (its
    `name`). `state` is normalised: "passed", "failed" or "pending" (no verdict yet); `summary`
    a status's description or a run's output title and summary ("" when none); `url` where its
    details are (`target_url`, `details_url`, `html_url`)."""

    name: str
    state: str
    summary: str
    url: str | None


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
        `since` (None: every one), across all pages, and the numbers of the pull requests listed
        with them (`pulls`); with `etag`, a 304 gives `not_modified`."""
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

    def label_key(self, name: str) -> str:
        """What the forge tells label names apart by: names of one key are one label (GitHub
        matches them without case, so `Tireless/State/Pending` is `tireless/state/pending`;
        Gitea and Forgejo match exactly). The mirror compares labels by it."""
        ...

    def add_label(self, owner: str, repo: str, number: int, name: str) -> None:
        """The issue carries the repository's label `name` (adding it twice is harmless)."""
        ...

    def remove_label(self, owner: str, repo: str, number: int, name: str) -> None:
        """The issue no longer carries `name` (already gone is fine)."""
        ...

    def comments(self, owner: str, repo: str, number: int) -> list[ForgeComment]:
        """The issue's comments, every page."""
        ...

    def issue_events(self, owner: str, repo: str, number: int, since: datetime) -> list[IssueEvent]:
        """The issue's label, close and reopen events at or after `since`, oldest first."""
        ...

    def whoami(self) -> str:
        """The login of the account the token belongs to (the mirror writes as it)."""
        ...

    def add_comment(self, owner: str, repo: str, number: int, body: str) -> None:
        """A new comment (never retried blindly: a retry first looks for it)."""
        ...

    def edit_comment(self, owner: str, repo: str, comment_id: int, body: str) -> None:
        """The comment's text replaced by `body` (sending it twice is harmless). WriteRefused: 404
        when no comment of the repository has that id, 403 when the token's account may not edit
        it (neither its author nor, on Gitea, a repository admin; on GitHub, without write access)."""
        ...

    def create_issue(self, owner: str, repo: str, *, title: str, body: str) -> int:
        """A new issue (never retried blindly: a retry first looks for it with find_issue); its
        number."""
        ...

    def find_issue(
        self, owner: str, repo: str, *, marker: str, author: str | None, since: datetime
    ) -> int | None:
        """The oldest issue (not pull request) opened by `author` and updated at or after `since`
        whose body ends with `marker`, every page looked at; None when there is none. `author`
        None: the login is unknown, an App's account is looked for (validate.is_own)."""
        ...

    def default_branch(self, owner: str, repo: str) -> str:
        """The repository's default branch; WriteRefused (404) when the token cannot see it."""
        ...

    def find_pull(self, owner: str, repo: str, head_branch: str) -> PullRequest | None:
        """The open pull request from `head_branch` of the same repository (the oldest, should
        there be several), every page looked at; None when there is none."""
        ...

    def create_pull(
        self,
        owner: str,
        repo: str,
        *,
        head: str,
        base: str,
        title: str,
        body: str,
        draft: bool = False,
    ) -> PullRequest:
        """A pull request from `head` to `base`, opened unless one is open from `head` already:
        a create the forge refuses as a duplicate, or whose answer was lost, is followed by
        find_pull, and what it finds is returned instead of a second one. WriteRefused when the
        forge refuses it and none is open (the head is no branch, nothing to merge, no right)."""
        ...

    def update_pull(
        self, owner: str, repo: str, number: int, *, title: str, body: str
    ) -> PullRequest:
        """The pull request's title and body set (a draft stays a draft)."""
        ...

    def comments_since(self, owner: str, repo: str, since: datetime | None) -> list[ForgeNote]:
        """The repository's issue and pull-request comments (the conversation, not a review's
        inline comments) created or edited at or after `since` (None: every one), every page,
        oldest change first."""
        ...

    def pull_reviews(self, owner: str, repo: str, pull: int, etag: str | None = None) -> Reviews:
        """Every review of the pull request, oldest first; with `etag` (GitHub), a 304 gives
        `not_modified`."""
        ...

    def review_comments(
        self, owner: str, repo: str, pull: int, review_id: int
    ) -> list[ReviewComment]:
        """The inline comments of one review of the pull request."""
        ...

    def permission(self, owner: str, repo: str, login: str) -> str:
        """The login's permission on the repository: "admin", "write", "read" or "none" (no such
        user, or not a collaborator). WriteRefused (403) when the token may not ask for someone
        else's (Gitea: only site and repository admins may; GitHub: push access is needed)."""
        ...

    def checks(self, owner: str, repo: str, ref: str) -> list[Check]:
        """The checks of a commit (or branch): its commit statuses, the latest of each context,
        and on GitHub its check runs, every page."""
        ...

    def add_reaction(self, owner: str, repo: str, comment_id: int, content: str) -> None:
        """A reaction (`+1`, `eyes`, ...) of the token's account on an issue or pull-request
        comment; adding it twice is harmless."""
        ...

    # The work graph's forge relations (issue 35).
    def issue_dependencies(
        self,
        owner: str,
        repo: str,
        number: int,
        *,
        blocked_by: bool = True,
        sub_issues: bool = True,
    ) -> list[IssueRef] | None:
        """The issues (same forge) the issue depends on by the forge's own relations: Gitea's
        and Forgejo's issue dependencies, GitHub's blocked-by (`blocked_by`) and sub-issues
        (`sub_issues`; Gitea has none), at most MAX_FORGE_DEPENDENCIES. None when the forge does
        not offer them here (the feature off, the repository's dependencies disabled, the token
        may not read them: 403 or 404): not available is no relation, never a stop. Raises
        ReadFailed for an answer it cannot use (5xx, a bad body)."""
        ...

    def add_dependency(self, owner: str, repo: str, number: int, on: int) -> None:
        """Issue `number` depends on issue `on` of the same repository, on the forge (Gitea's
        dependency, GitHub's blocked-by); done already is fine (read first, and again after a
        refusal). WriteRefused when the forge refuses it (feature off, no right)."""
        ...

    def add_sub_issue(self, owner: str, repo: str, parent: int, child: int) -> None:
        """GitHub: `child` becomes a sub-issue of `parent` (done already is fine); Gitea has no
        sub-issues: nothing is sent."""
        ...

    def probe(self, method: str, path: str, body: object = None) -> Response:
        """One request of the API (`path` under its root, e.g. `repos/acme/widgets/labels`),
        answered whatever its status: `tireless forge check` reads what the forge refuses, and
        which scope or permission its answer asks for (tireless.forge.check)."""
        ...

    def close(self) -> None: ...


MAX_FORGE_DEPENDENCIES = 100
"""At most this many forge relations of one issue are read (the store keeps at most 100, as it
keeps at most 100 `Depends on` lines of a body)."""


class ReadFailed(Exception):
    """A read that failed: the repository's poll changes nothing and is retried with backoff.
    The message never holds a token (clients put tokens in headers only, and never quote them)."""

    retry_after: timedelta | None = None


class BadResponse(ReadFailed):
    """The forge answered something we cannot trust: not JSON, not the shape its API describes,
    pages that disagree with its own count, a Link to another host, a body past the size limit."""


NOT_FOUND_PAUSE = timedelta(minutes=10)
"""How long a repository the forge says is not there waits before it is asked again: not a
transient failure (a typo, or a token that cannot see it) that a short backoff would fix."""


class NotFound(ReadFailed):
    """404 on a repository's listing: it does not exist under that name, or the token cannot see
    it. Asked again after NOT_FOUND_PAUSE (or the longer backoff), not every few seconds."""

    retry_after = NOT_FOUND_PAUSE


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


class OddIssue(BadResponse):
    """One issue whose number is sound but another field is not (a NUL in its title, its labels not
    objects): that issue is left out and reported, the others of its listing go on."""

    def __init__(self, message: str, number: int, problem: str) -> None:
        super().__init__(message)
        self.number = number
        self.problem = problem


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
    409, 410, 422): that issue's write is recorded as failed and retried later, the rest go on.
    423 (an archived repository) ends the repository's writes for a day (the mirror)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class AuthRefused(ForgeStopped):
    """401 or 403: the token is missing, wrong or lacks the scope."""


class ScopeRefused(AuthRefused):
    """403 with no sign of a rate limit: the token may not do this (it lacks a scope, or a
    fine-grained permission). `needed` is what the forge's answer says it needs, when it says:
    Gitea's message ("token does not have at least one of required scope(s): [read:issue]"),
    GitHub's X-Accepted-GitHub-Permissions header ("issues=read"). On a core read it stops the
    forge like any refused credentials; an optional lookup does without it (Http.optional)."""

    def __init__(self, message: str, until: datetime, needed: str | None) -> None:
        super().__init__(message, until)
        self.needed = needed


class LoginUnknown(ReadFailed):
    """The token may not read its own account (GET /user refused: Gitea's read:user missing, or a
    GitHub App installation's token, which has no user) and no write of its own has named it yet
    this process."""
