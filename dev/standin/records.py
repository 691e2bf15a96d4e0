"""The stand-in forge's records: the issues, pull requests, labels, comments, events, faults and
requests it keeps, the Answer its routes give, and the accounts it knows."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

Flavour = Literal["gitea", "github"]


MIRROR_LOGIN = "tireless-bot"
"""The account the token belongs to (GET /user): the mirror writes as it."""


APP_LOGIN = "tireless-app[bot]"
"""The account a GitHub App installation's token writes as: the App's slug and `[bot]`
(docs.github.com/en/apps/creating-github-apps/about-creating-github-apps/about-creating-github-
apps#building-a-github-app-that-acts-on-its-own-behalf; PyGithub's ReplayData shows such authors)."""


PERSON = "alice"
"""Who the test's own edits (create_issue, set_labels, close_issue...) are made by."""


@dataclass
class StoredIssue:
    number: int
    title: str
    labels: list[str]
    state: str = "open"
    pull_request: bool = False
    body: str = ""
    """The issue's text: `body` in Gitea's swagger (templates/swagger/v1_json.tmpl, `Issue`) and in
    GitHub's issue schema (REST docs, "Get an issue"), served as stored ("" when empty)."""
    created_at: datetime = field(default_factory=lambda: _now())
    updated_at: datetime = field(default_factory=lambda: _now())
    closed_at: datetime | None = None
    merged_at: datetime | None = None
    """When a pull request was merged (merge_pull): both forges close it at that time too."""
    author: str = PERSON
    """Who opened it (`user.login`): a person, or the mirror (POST .../issues)."""


@dataclass
class StoredPull:
    """What a pull request has beyond its issue. Its number, title, body and state are those of
    its StoredIssue (`pull_request=True`): both forges number pull requests in the issues'
    sequence, and GitHub's and Gitea's issue endpoints answer for a pull request's number too."""

    head: str
    base: str
    draft: bool = False
    """GitHub's flag (POST .../pulls `draft`); a Gitea draft is a title prefix instead."""
    author: str = MIRROR_LOGIN


@dataclass(frozen=True)
class PullView:
    """A pull request as a test reads it (pulls_of)."""

    number: int
    head: str
    base: str
    title: str
    body: str
    state: str
    draft: bool
    author: str


@dataclass
class RepoLabel:
    id: int
    name: str
    color: str
    description: str = ""
    exclusive: bool = False


@dataclass
class Comment:
    id: int
    body: str
    created_at: datetime = field(default_factory=lambda: _now())
    author: str = MIRROR_LOGIN
    updated_at: datetime | None = None  # edited (edit_comment): None is created_at


@dataclass(frozen=True)
class Event:
    """A change of an issue's labels or state, as both forges keep them (GitHub's issue events,
    Gitea's timeline): `kind` labeled/unlabeled (with `label`), closed, reopened."""

    id: int
    at: datetime
    actor: str
    kind: str
    label: RepoLabel | None = None


@dataclass
class Fault:
    name: str
    times: int | None  # None: until cleared
    repo: tuple[str, str] | None
    seconds: float
    writes_only: bool = False
    number: int | None = None


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    authorized: bool
    body: Any = None


@dataclass(frozen=True)
class RepoRequest:
    """A request on one of a repository's conversation routes, as its route method takes it."""

    method: str
    owner: str
    repo: str
    rest: list[str]
    """The path after /repos/{owner}/{repo}/, split at its slashes."""
    query: dict[str, str]
    body: Any


@dataclass(frozen=True)
class StoredReviewComment:
    id: int
    path: str
    line: int
    body: str


@dataclass
class StoredReview:
    id: int
    author: str
    state: str  # one of REVIEW_STATES
    body: str
    submitted_at: datetime
    commit_id: str
    comments: list[StoredReviewComment] = field(default_factory=list)


@dataclass(frozen=True)
class StoredStatus:
    id: int
    context: str
    state: str
    description: str
    target_url: str | None
    created_at: datetime
    creator: str


@dataclass(frozen=True)
class StoredCheckRun:
    id: int
    name: str
    status: str
    conclusion: str | None
    title: str | None
    summary: str | None
    details_url: str | None
    started_at: datetime
    completed_at: datetime | None


def _now() -> datetime:
    # Both forges store and show whole seconds.
    return datetime.now(UTC).replace(microsecond=0)


def _time(when: datetime | None) -> str | None:
    return None if when is None else when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _granted(scopes: frozenset[str], name: str, level: str) -> bool:
    """Whether the scopes allow `level` (read or write) on `name`, a Gitea category or a GitHub
    permission: write implies read; Gitea's `all` allows everything."""
    if "all" in scopes:
        return True
    wanted = ("write",) if level == "write" else ("read", "write")
    return any(f"{lv}:{name}" in scopes or f"{name}:{lv}" in scopes for lv in wanted)


def _is_hex_color(color: str) -> bool:
    """Whether `color` is six hex digits (a label's colour, without any "#")."""
    return len(color) == 6 and all(c in "0123456789abcdefABCDEF" for c in color)


def latest(items: list[Any], key: Callable[[Any], str]) -> list[Any]:
    """The latest (highest id) of each key, in the order of their ids."""
    chosen: dict[str, Any] = {}
    for item in items:
        if key(item) not in chosen or item.id > chosen[key(item)].id:
            chosen[key(item)] = item
    return sorted(chosen.values(), key=lambda item: int(item.id))


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: Any
    raw: bytes | None = None
    content_type: str = "application/json;charset=utf-8"
    drip: float = 0.0
    """Seconds between the body's bytes (the `drip` fault): a server or proxy trickling it."""
    drop: bool = False  # close the connection and send nothing (the answer is lost)

    def encoded(self) -> bytes:
        if self.raw is not None:
            return self.raw
        # ensure_ascii: NUL and lone surrogates travel as \u escapes, as a forge's JSON writes them.
        return json.dumps(self.body, ensure_ascii=True).encode()
