"""A stand-in forge for the tests and `make run`: a real HTTP server on 127.0.0.1 that speaks the
parts of the Gitea/Forgejo API v1 or of the GitHub REST API the poller uses, with their quirks,
and faults a test can switch on. Its responses follow Gitea's swagger (templates/swagger/
v1_json.tmpl in go-gitea/gitea) and GitHub's REST description; tests/forge/test_standin_forge.py checks
them against the JSON schemas in tests/forge_schemas/.

    with StandinForge("gitea", token="s3cret") as forge:
        number = forge.create_issue("acme", "widgets", "Add a flag", ["tireless", "tireless/plan"])
        forge.close_issue("acme", "widgets", number)
        forge.fault("500", times=2)

Run on its own (`python -m dev.standin_forge --port 3000 --seed issues.json`) it
serves until SIGINT/SIGTERM, to try the `tireless` command against; `--seed` reads
`{"repos": [{"owner": "acme", "repo": "widgets", "labels": ["tireless"],
"issues": [{"title": "Add a flag", "labels": ["tireless", "tireless/plan"]}]}]}` (see docs/demo.md);
a repository's `"files": {"README.md": "..."}` become its git's first commit on `main`.

It also takes the mirror's writes: repository labels (GET/POST `/repos/{o}/{r}/labels`; GitHub
also GET `/labels/{name}`), an issue's labels (POST to add, DELETE one), and comments (GET/POST
`/issues/{n}/comments`). Gitea's issue-labels endpoints take label ids (`labels: [int64]` up to
1.20; newer ones also take names: `gitea_label_refs="both"`), GitHub's take names; a Gitea label
created `exclusive: true` knocks the other labels of its scope off the issue it is added to.
GitHub's match label names without case and refuse one past 50 characters, and GitHub refuses a
comment, issue or pull request body past 65536 characters (GITHUB_BODY_LIMIT).

And it takes delivery's (issue 33): it serves git at the clone URL tireless computes for it
(`tireless.forge_clone_url`: `{url}/{owner}/{repo}.git`, both flavours) through git's own
`git http-backend` (dev.standin_git), the token checked as each forge checks it,
branch protection a real pre-receive hook; and pull requests (`/repos/{o}/{r}/pulls`: create,
list, get, edit), numbered with the issues. `seed_git`, `branch_head`, `commits_of`,
`protect_branch`, `pulls_of` let tests set the scene and read what happened.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

from dev.standin_conversation import ConversationRoutes
from dev.standin_dependencies import DependencyRoutes
from dev.standin_git import SERVICES, CgiAnswer, GitCommit, StandinGit

Flavour = Literal["gitea", "github"]

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
GITEA_WIP_PREFIXES = ("WIP:", "[WIP]")
"""Gitea's `[repository.pull-request] WORK_IN_PROGRESS_PREFIXES` default (modules/setting/
repository.go): a pull request whose title starts with one is a draft."""
GITEA_VERSION = "1.24.0"
"""What the Gitea stand-in says it is (GET /api/v1/version)."""
MIRROR_LOGIN = "tireless-bot"
"""The account the token belongs to (GET /user): the mirror writes as it."""
APP_LOGIN = "tireless-app[bot]"
"""The account a GitHub App installation's token writes as: the App's slug and `[bot]`
(docs.github.com/en/apps/creating-github-apps/about-creating-github-apps/about-creating-github-
apps#building-a-github-app-that-acts-on-its-own-behalf; PyGithub's ReplayData shows such authors)."""
PERSON = "alice"
"""Who the test's own edits (create_issue, set_labels, close_issue...) are made by."""
GITHUB_BODY_LIMIT = 65536
"""The most characters GitHub takes in a comment's, an issue's or a pull request's body: past it,
422 "Validation Failed" with the error {resource, code: "custom", field: "body", message: "body
is too long (maximum is 65536 characters)"} (GitHub's answer as cockroachdb/cockroach records it,
pkg/cmd/github-post/main.go; github.com/orgs/community/discussions/27190). Gitea sets none."""
GITHUB_LABEL_NAME_LIMIT = 50
"""The most characters of a GitHub label's name: POST .../labels answers 422 {resource: "Label",
code: "custom", field: "name", message: "name is too long (maximum is 50 characters)"}
(github/docs#32156); adding a new such name to an issue, 422 {value, resource: "Label", field:
"name", code: "invalid"} (semantic-release/github#518). Gitea allows 255."""


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


def _exclusive_scope(label: RepoLabel) -> str:
    """Gitea's `Label.ExclusiveScope` (models/issues/label.go): the name up to its last `/` for an
    exclusive label, "" for any other or when the `/` is first or last. Adding an exclusive label
    knocks off the issue's labels of the same exclusive scope only; a label that is not exclusive
    stays whatever its name (RemoveDuplicateExclusiveIssueLabels, models/issues/issue_label.go)."""
    if not label.exclusive:
        return ""
    cut = label.name.rfind("/")
    return "" if cut in (-1, 0, len(label.name) - 1) else label.name[:cut]


def _now() -> datetime:
    # Both forges store and show whole seconds.
    return datetime.now(UTC).replace(microsecond=0)


def _time(when: datetime | None) -> str | None:
    return None if when is None else when.strftime("%Y-%m-%dT%H:%M:%SZ")


class StandinForge(ConversationRoutes, DependencyRoutes):
    """A Gitea (also Forgejo) or a GitHub on 127.0.0.1, with its issues in memory; the
    conversation on pull requests (reviews, permissions, checks, reactions) comes from
    dev.standin_conversation."""

    def __init__(
        self,
        flavour: Flavour,
        *,
        token: str | None = None,
        max_page_size: int | None = None,
        rate_limit: int = 5000,
        gitea_label_refs: Literal["ids", "both"] = "ids",
        gitea_label_totals: bool = True,
        port: int = 0,
        root_url: str | None = None,
        write_limit: tuple[int, float] | None = None,
        scopes: Iterable[str] | None = None,
        installation: bool = False,
    ) -> None:
        self.flavour: Flavour = flavour
        self.scopes = _checked_scopes(flavour, scopes, installation)
        """What the token may do: Gitea's scope names (`read:issue`, `write:repository`, `all`)
        or GitHub's fine-grained permissions (`issues:write`, `metadata:read`); None for a token
        that may do everything (a classic one). Checked by `_token_refusal`."""
        self.installation = installation
        """GitHub: the token is a GitHub App installation's (it has no user: GET /user is 403)."""
        self.oauth_scopes: str | None = "repo"
        """GitHub, `scopes=None`: the token is a classic one, and GET /user says its scopes in
        X-OAuth-Scopes (a test may set another list, or None: no header)."""
        self.login = APP_LOGIN if installation else MIRROR_LOGIN
        """Who the token's writes (comments, issues, label changes, pull requests) are made by."""
        self.account_email = f"{self.login}@forge.example"
        """Gitea: the address GET /user answers for the token's account ("" for none)."""
        self.repo_permissions = {"admin": False, "push": True, "pull": True}
        """The token's account's access to every repository (GET /repos/{o}/{r} `permissions`)."""
        self.has_pull_requests = True
        """Gitea: the repositories' pull requests are on (GET /repos/{o}/{r} `has_pull_requests`)."""
        self.gitea_label_refs = gitea_label_refs
        self.gitea_label_totals = gitea_label_totals
        """Gitea's label lists carry X-Total-Count; False: Gitea up to 1.15, whose ListLabels
        answered the page alone (routers/api/v1/repo/label.go; go-gitea/gitea#17968 added the
        count in 1.16)."""
        self.token = token
        # Gitea: `[api] MAX_RESPONSE_ITEMS` (default 50) clamps `limit`; GitHub: `per_page` max 100.
        self.max_page_size = max_page_size or (50 if flavour == "gitea" else 100)
        self.rate_limit = rate_limit
        self.rate_remaining = rate_limit
        self.rate_reset = int(time.time()) + 3600
        self.requests: list[Request] = []
        self._repos: dict[tuple[str, str], dict[int, StoredIssue]] = {}
        self._labels: dict[tuple[str, str], dict[str, RepoLabel]] = {}
        self._comments: dict[tuple[str, str, int], list[Comment]] = {}
        self._org_labels: dict[str, dict[str, RepoLabel]] = {}
        self._duplicate_labels: dict[tuple[str, str], list[RepoLabel]] = {}
        self._events: dict[tuple[str, str, int], list[Event]] = {}
        self._pulls: dict[tuple[str, str, int], StoredPull] = {}
        self.git = StandinGit(flavour)
        """The bare repositories behind the clone URLs (dev.standin_git)."""
        self.git_requests: list[Request] = []
        """The git requests received (kept apart from `requests`: `writes()` counts API writes)."""
        self._write_hook: Callable[[Request], None] | None = None
        self._read_hook: Callable[[Request], None] | None = None
        # (writes, seconds): at most that many writes in any window of that many seconds.
        self.write_limit = write_limit
        self._write_times: list[float] = []
        self.limited_writes = 0
        self._next_id = 1
        self._faults: list[Fault] = []
        self._deleted: set[tuple[str, str, int]] = set()
        self._lock = threading.Condition()
        self._gate: threading.Event | None = None
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._server.daemon_threads = True
        # serve_forever looks for shutdown() every poll interval (0.5 s by default): every stop
        # waited up to half a second for it.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._init_poller_quirks(root_url)
        self._init_conversation()
        self._init_dependencies()

    # Life
    @property
    def url(self) -> str:
        """The base URL to register: Gitea's web root (the API is under /api/v1), GitHub's API root."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> StandinForge:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.open_gate()
        self._server.shutdown()
        self._server.server_close()
        self.git.close()

    def __enter__(self) -> StandinForge:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # The issues
    def create_issue(
        self,
        owner: str,
        repo: str,
        title: str,
        labels: list[str] | tuple[str, ...] = (),
        *,
        pull_request: bool = False,
        body: str = "",
    ) -> int:
        """A new issue (or pull request: both forges number them in one sequence); its number."""
        with self._lock:
            issues = self._repos.setdefault((owner, repo), {})
            number = max(issues, default=0) + 1
            issues[number] = StoredIssue(
                number, title, list(labels), pull_request=pull_request, body=body
            )
            for name in labels:  # a human labelling an issue made the label first
                self._label_named(owner, repo, name)
            return number

    def create_repo(self, owner: str, repo: str) -> None:
        with self._lock:
            self._repos.setdefault((owner, repo), {})

    def _change(
        self, owner: str, repo: str, number: int, actor: str = PERSON, **changes: Any
    ) -> None:
        with self._lock:
            issues = self._repos[(owner, repo)]
            stored = issues[number]
            # Every change moves updated_at on, at least one whole second past the last one.
            stamp = max(_now(), stored.updated_at + timedelta(seconds=1))
            issues[number] = replace(stored, updated_at=stamp, **changes)
            self._record_events(owner, repo, stored, issues[number], actor)

    def edit(
        self,
        owner: str,
        repo: str,
        number: int,
        change: Callable[[StoredIssue], dict[str, Any]],
        *,
        actor: str = PERSON,
    ) -> tuple[StoredIssue, StoredIssue]:
        """A person's edit made atomically against the mirror's writes: `change` gets the issue
        as it is and returns the fields to change (labels, state); the issue before and after."""
        with self._lock:
            before = self._repos[(owner, repo)][number]
            changes = change(before)
            if not changes:
                return before, before
            for name in changes.get("labels", []):
                self._label_named(owner, repo, name)
            if "state" in changes:
                changes["closed_at"] = _now() if changes["state"] == "closed" else None
            self._change(owner, repo, number, actor, **changes)
            return before, self._repos[(owner, repo)][number]

    def _record_events(
        self, owner: str, repo: str, before: StoredIssue, after: StoredIssue, actor: str
    ) -> None:
        """The events a change makes (called under the lock), stamped like the change."""
        made: list[tuple[str, RepoLabel | None]] = []
        if before.state != after.state:
            made.append(("closed" if after.state == "closed" else "reopened", None))
        made += [
            ("unlabeled", self._label_named(owner, repo, n))
            for n in before.labels
            if n not in after.labels
        ]
        made += [
            ("labeled", self._label_named(owner, repo, n))
            for n in after.labels
            if n not in before.labels
        ]
        events = self._events.setdefault((owner, repo, after.number), [])
        for kind, label in made:
            events.append(Event(self._next_id, _now(), actor, kind, label))
            self._next_id += 1

    def _label_named(self, owner: str, repo: str, name: str) -> RepoLabel:
        """The repository's label of that name, else its organisation's (called under the lock)."""
        label = self._labels.get((owner, repo), {}).get(name)
        if label is None:
            label = self._org_labels.get(owner, {}).get(name)
        if label is None:
            label = self._repo_label(owner, repo, name)
        return label

    def close_issue(self, owner: str, repo: str, number: int) -> None:
        self._change(owner, repo, number, state="closed", closed_at=_now())

    def reopen_issue(self, owner: str, repo: str, number: int) -> None:
        self._change(owner, repo, number, state="open", closed_at=None)

    def set_labels(
        self, owner: str, repo: str, number: int, labels: list[str], *, actor: str = PERSON
    ) -> None:
        with self._lock:
            for name in labels:
                self._label_named(owner, repo, name)
        self._change(owner, repo, number, actor, labels=list(labels))

    def _repo_label(
        self, owner: str, repo: str, name: str, color: str = "00aabb", **extra: Any
    ) -> RepoLabel:
        """The repository's label of that name, made when missing (called under the lock)."""
        labels = self._labels.setdefault((owner, repo), {})
        if name not in labels:
            labels[name] = RepoLabel(self._next_id, name, color, **extra)
            self._next_id += 1
        return labels[name]

    def repo_labels(self, owner: str, repo: str) -> dict[str, RepoLabel]:
        with self._lock:
            return dict(self._labels.get((owner, repo), {}))

    def mark_exclusive(self, owner: str, repo: str, name: str) -> None:
        """Gitea: the repository's label `name` (made when missing) becomes exclusive, as an admin
        ticks "Exclusive" in its settings: one label of its scope per issue from then on."""
        with self._lock:
            self._repo_label(owner, repo, name).exclusive = True

    def delete_repo_label(self, owner: str, repo: str, name: str) -> None:
        with self._lock:
            self._labels.get((owner, repo), {}).pop(name, None)

    def comments_of(self, owner: str, repo: str, number: int) -> list[str]:
        with self._lock:
            return [c.body for c in self._comments.get((owner, repo, number), [])]

    def comments_with_authors(self, owner: str, repo: str, number: int) -> list[tuple[str, str]]:
        """(author, body) of each comment of the issue, oldest first."""
        with self._lock:
            return [(c.author, c.body) for c in self._comments.get((owner, repo, number), [])]

    def events_of(self, owner: str, repo: str, number: int) -> list[Event]:
        """The issue's label and state events, oldest first."""
        with self._lock:
            return list(self._events.get((owner, repo, number), []))

    def add_comment_as(self, owner: str, repo: str, number: int, author: str, body: str) -> int:
        """A comment someone other than the mirror's account wrote; its id. The issue's
        updated_at moves on, as a new comment moves it on both forges."""
        with self._lock:
            comment = Comment(self._next_id, body, author=author)
            self._comments.setdefault((owner, repo, number), []).append(comment)
            self._next_id += 1
        self._change(owner, repo, number, author)
        return comment.id

    # Quirks the mirror copes with (issue 21), each cited where it is served.
    def create_org_label(self, org: str, name: str) -> int:
        """An organisation label (Gitea: routers/api/v1/org/label.go): any issue of the
        organisation's repositories can carry it; no repository's label list shows it."""
        with self._lock:
            labels = self._org_labels.setdefault(org, {})
            if name not in labels:
                labels[name] = RepoLabel(self._next_id, name, "00aabb")
                self._next_id += 1
            return labels[name].id

    def label_names(self, owner: str, repo: str) -> list[str]:
        """Every repository label's name, duplicates too (Gitea stores two labels of one name)."""
        with self._lock:
            found = list(self._labels.get((owner, repo), {}))
            return found + [label.name for label in self._duplicate_labels.get((owner, repo), [])]

    def on_write(self, hook: Callable[[Request], None] | None) -> None:
        """Call `hook` with each write request as it arrives, before the forge applies it: a
        test's person edits the issue at the exact moment the mirror writes."""
        with self._lock:
            self._write_hook = hook

    def on_read(self, hook: Callable[[Request], None] | None) -> None:
        """Call `hook` with each read (GET) as it arrives, before it is answered: a test's person
        edits the issue between two reads of one poll."""
        with self._lock:
            self._read_hook = hook

    def writes(self) -> list[Request]:
        """The write requests received (every method but GET)."""
        with self._lock:
            return [r for r in self.requests if r.method != "GET"]

    def issues_of(self, owner: str, repo: str) -> list[StoredIssue]:
        """The repository's issues and pull requests as stored (copies), by number."""
        with self._lock:
            issues = self._repos.get((owner, repo), {})
            return [replace(issues[n], labels=list(issues[n].labels)) for n in sorted(issues)]

    def labels_of(self, owner: str, repo: str, number: int) -> list[str]:
        with self._lock:
            return list(self._repos[(owner, repo)][number].labels)

    def delete_issue(self, owner: str, repo: str, number: int) -> None:
        """Gone: Gitea answers 404 for it, GitHub 410 Gone."""
        with self._lock:
            del self._repos[(owner, repo)][number]
            self._deleted.add((owner, repo, number))

    # Git and pull requests (issue 33): the public side, for tests and the demo.
    def clone_url(self, owner: str, repo: str) -> str:
        """Where the stand-in serves the repository's git: what `tireless.forge_clone_url` gives
        for this forge's base URL, `{url}/{owner}/{repo}.git` in both flavours (Gitea's web root
        is its base URL; a GitHub API root other than api.github.com or HOST/api/v3 is taken as
        its own web root, which the stand-in's is)."""
        return f"{self.url}/{owner}/{repo}.git"

    def seed_git(
        self,
        owner: str,
        repo: str,
        files: dict[str, str],
        commits: int = 1,
        *,
        branch: str | None = None,
        message: str = "seed",
    ) -> str:
        """Commits in the repository's git (made, with the repository, when missing): the first
        writes `files`, each further one appends a line to every file; on `branch` (default: the
        default branch) on top of its head. Returns the new head commit."""
        self.create_repo(owner, repo)
        return self.git.seed(owner, repo, files, commits=commits, branch=branch, message=message)

    def branch_head(self, owner: str, repo: str, branch: str) -> str | None:
        """The branch's head commit in the stand-in's git, None when there is no such branch."""
        return self.git.branch_head(owner, repo, branch)

    def branches(self, owner: str, repo: str) -> dict[str, str]:
        """Every branch of the repository's git and its head commit."""
        return self.git.branches(owner, repo)

    def commits_of(self, owner: str, repo: str, ref: str) -> list[GitCommit]:
        """The commits reachable from a branch (or any ref or commit), newest first."""
        return self.git.commits(owner, repo, ref)

    def file_at(self, owner: str, repo: str, ref: str, path: str) -> str | None:
        """A file's text at a branch or commit, None when it has no such file."""
        return self.git.file_at(owner, repo, ref, path)

    def protect_branch(self, owner: str, repo: str, branch: str) -> None:
        """A push that updates or deletes `branch` is refused, in the forge's words, by git
        itself (a pre-receive hook in the bare repository)."""
        self.create_repo(owner, repo)
        self.git.protect(owner, repo, branch)

    def unprotect_branch(self, owner: str, repo: str, branch: str) -> None:
        self.git.unprotect(owner, repo, branch)

    def set_default_branch(self, owner: str, repo: str, branch: str) -> None:
        """The repository's default branch (its git HEAD, and `default_branch` in the API)."""
        self.create_repo(owner, repo)
        self.git.set_default_branch(owner, repo, branch)

    def open_pull(
        self,
        owner: str,
        repo: str,
        head: str,
        base: str,
        title: str,
        body: str = "",
        *,
        draft: bool = False,
        author: str = PERSON,
    ) -> int:
        """A pull request someone opened (no checks: a test's scene); its number."""
        with self._lock:
            number = self._new_pull(owner, repo, title, body, StoredPull(head, base, draft, author))
        return number

    def pulls_of(self, owner: str, repo: str) -> list[PullView]:
        """The repository's pull requests, oldest first."""
        with self._lock:
            issues = self._repos.get((owner, repo), {})
            return [
                PullView(
                    n,
                    pull.head,
                    pull.base,
                    issues[n].title,
                    issues[n].body,
                    issues[n].state,
                    self._is_draft(issues[n].title, pull),
                    pull.author,
                )
                for (o, r, n), pull in sorted(self._pulls.items())
                if (o, r) == (owner, repo) and n in issues
            ]

    def pull_creates(self, owner: str, repo: str) -> list[Request]:
        """The POST .../pulls requests received for the repository (answered or not)."""
        path = f"{self._api_prefix()}/repos/{owner}/{repo}/pulls"
        return [r for r in self.writes() if r.method == "POST" and r.path == path]

    def close_pull(self, owner: str, repo: str, number: int) -> None:
        self.close_issue(owner, repo, number)

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

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> bool:
        """Whether `count` requests have arrived (waiting up to `timeout` seconds)."""
        with self._lock:
            return self._lock.wait_for(lambda: len(self.requests) >= count, timeout)

    def listing_requests(self, owner: str, repo: str) -> list[Request]:
        path = self._issues_path(owner, repo)
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def _issues_path(self, owner: str, repo: str) -> str:
        prefix = "/api/v1" if self.flavour == "gitea" else ""
        return f"{prefix}/repos/{owner}/{repo}/issues"

    # The poller's quirks (issue 21): renamed repositories, transferred issues, ROOT_URL links,
    # GitHub's secondary rate limit, huge bodies. Kept together so a reader can check each one
    # against its source, named beside it.
    def _init_poller_quirks(self, root_url: str | None) -> None:
        self.root_url = root_url.rstrip("/") if root_url else None
        self._repo_ids: dict[tuple[str, str], int] = {}
        self._renamed: dict[tuple[str, str], tuple[str, str]] = {}
        self._transferred: dict[tuple[str, str, int], tuple[str, str, int]] = {}
        self._archived: set[tuple[str, str]] = set()

    def archive_repo(self, owner: str, repo: str, archived: bool = True) -> None:
        """Gitea: the repository is archived (or, `archived` False, no longer): its reads answer
        as before, the writes `mustNotBeArchived` guards answer 423 (`_archived_answer`)."""
        if self.flavour != "gitea":
            raise ValueError(f"archive_repo is Gitea's 423, not of flavour {self.flavour!r}")
        with self._lock:
            if (owner, repo) not in self._repos:
                raise ValueError(f"no repository {owner}/{repo} to archive")
            if archived:
                self._archived.add((owner, repo))
            else:
                self._archived.discard((owner, repo))

    def _archived_answer(self, method: str, path: str) -> Answer | None:
        """Gitea refuses, in an archived repository, the writes its API routes guard with
        `mustNotBeArchived` (routers/api/v1/api.go: 423 Locked, APIError "repo is archived"),
        among them: opening an issue or a pull request, posting or editing a comment, and
        adding or removing a dependency. Label writes are not guarded there."""
        _, parts = self._api_parts(path)
        if method == "GET" or parts[0] != "repos" or len(parts) < 4:
            return None
        with self._lock:
            if (parts[1], parts[2]) not in self._archived:
                return None
        rest = parts[3:]
        of_issue = len(rest) == 3 and rest[0] == "issues" and rest[1].isdigit()
        under_issue = rest[2] if of_issue else None
        opens = method == "POST" and rest in (["issues"], ["pulls"])
        comments = (method == "POST" and under_issue == "comments") or (
            method == "PATCH" and len(rest) == 3 and rest[:2] == ["issues", "comments"]
        )
        guarded = opens or comments or under_issue == "dependencies"
        return self._error(423, "repo is archived") if guarded else None

    def set_issue_body(self, owner: str, repo: str, number: int, body: str) -> None:
        """The issue's body is edited (a huge one makes its listing page huge)."""
        self._change(owner, repo, number, body=body)

    def rename_repo(self, owner: str, repo: str, new_owner: str, new_repo: str) -> None:
        """The repository is renamed (or transferred to `new_owner`); its old name redirects."""
        with self._lock:
            old, new = (owner, repo), (new_owner, new_repo)
            self._repos[new] = self._repos.pop(old)
            self._labels[new] = self._labels.pop(old, {})
            self._repo_ids[new] = self._repo_id(*old)  # GitHub: the id stays, the name goes
            del self._repo_ids[old]
            for o, r, n in list(self._comments):
                if (o, r) == old:
                    self._comments[(*new, n)] = self._comments.pop((o, r, n))
            for o, r, n in list(self._pulls):
                if (o, r) == old:
                    self._pulls[(*new, n)] = self._pulls.pop((o, r, n))
            self._renamed[old] = new
        self.git.rename(owner, repo, new_owner, new_repo)

    def transfer_issue(
        self, owner: str, repo: str, number: int, to_owner: str, to_repo: str
    ) -> int:
        """GitHub moves the issue to another repository, under a new number there; its old URL
        answers 301 to the new one (docs.github.com/en/rest/issues/issues#get-an-issue: "If an
        issue was transferred to another repository, the API returns 301 Moved Permanently")."""
        with self._lock:
            stored = self._repos[(owner, repo)].pop(number)
            target = self._repos.setdefault((to_owner, to_repo), {})
            new_number = max(target, default=0) + 1
            target[new_number] = replace(stored, number=new_number, updated_at=_now())
            self._transferred[(owner, repo, number)] = (to_owner, to_repo, new_number)
            return new_number

    def _repo_id(self, owner: str, repo: str) -> int:
        """The repository's id (called under the lock), made at the first ask."""
        if (owner, repo) not in self._repo_ids:
            self._repo_ids[(owner, repo)] = 100 + self._next_id  # ids never repeat
            self._next_id += 1
        return self._repo_ids[(owner, repo)]

    def _api_parts(self, path: str) -> tuple[str, list[str]]:
        """The API prefix of the flavour and the parts after it."""
        prefix = "/api/v1" if self.flavour == "gitea" else ""
        return prefix, path[len(prefix) :].strip("/").split("/")

    def _current_path(self, path: str) -> str:
        """GitHub serves a repository by id as well: `/repositories/{id}/...` is what its
        redirects for a renamed repository or a transferred issue point at."""
        prefix, parts = self._api_parts(path)
        if self.flavour != "github" or parts[0] != "repositories" or len(parts) < 2:
            return path
        with self._lock:
            names = [name for name, id_ in self._repo_ids.items() if str(id_) == parts[1]]
        if not names:
            return path
        return "/".join([prefix, "repos", *names[0], *parts[2:]])

    def _moved_answer(self, method: str, path: str, query: dict[str, str]) -> Answer | None:
        """A renamed repository's old name, or a transferred issue, answers a redirect. GitHub:
        301 to `/repositories/{id}/...` (307 for a write) with the query kept (docs.github.com/
        en/rest/using-the-rest-api/best-practices-for-using-the-rest-api#follow-redirects). Gitea:
        307 to the new name's path, the query kept, no scheme or host (RedirectToRepo,
        services/context/repo.go)."""
        prefix, parts = self._api_parts(path)
        if parts[0] != "repos" or len(parts) < 3:
            return None
        old, rest = (parts[1], parts[2]), parts[3:]
        with self._lock:
            issue = None
            # The issue's own labels and comments redirect too: GitHub's "Add labels to an issue"
            # and "Remove a label from an issue" list 301 Moved permanently (docs.github.com/en/
            # rest/issues/labels).
            if len(rest) >= 2 and rest[0] == "issues" and rest[1].isdigit():
                issue = self._transferred.get((*old, int(rest[1])))
            if issue is not None and self.flavour == "github":
                rest = ["issues", str(issue[2]), *rest[2:]]
                repo_id = self._repo_id(issue[0], issue[1])
            elif old in self._renamed and old not in self._repos:
                new = self._renamed[old]
                while new in self._renamed and new not in self._repos:  # renamed again
                    new = self._renamed[new]
                repo_id = self._repo_id(*new)
            else:
                return None
        suffix = "/".join(rest)
        search = f"?{urlencode(query)}" if query else ""
        if self.flavour == "gitea":
            location = f"{prefix}/repos/{new[0]}/{new[1]}/{suffix}".rstrip("/") + search
            return Answer(307, {"Location": location}, None, raw=b"")
        location = f"{self.url}/repositories/{repo_id}/{suffix}".rstrip("/") + search
        status = 301 if method == "GET" else 307
        return Answer(status, {"Location": location}, {"message": "Moved Permanently"})

    def _repo_answer(self, owner: str, repo: str) -> Answer:
        """GET /repos/{owner}/{repo}: both forges name the repository `full_name` (owner/name)
        and give its `default_branch` and `clone_url` (Gitea's swagger `Repository`, GitHub's
        `full-repository`)."""
        with self._lock:
            if (owner, repo) not in self._repos:
                return self._error(404, "Not Found")
        return Answer(200, {}, self._repo_json(owner, repo))

    def _repo_json(self, owner: str, repo: str) -> dict[str, Any]:
        with self._lock:
            repo_id = self._repo_id(owner, repo)
        owner_json = {"id": 1, "login": owner} | (
            {"username": owner} if self.flavour == "gitea" else {}
        )
        return (
            {
                "id": repo_id,
                "name": repo,
                "full_name": f"{owner}/{repo}",
                "owner": owner_json,
                "private": self.token is not None,
                "html_url": f"{self.url}/{owner}/{repo}",
                "clone_url": self.clone_url(owner, repo),
                "default_branch": self.git.default_branch(owner, repo),
            }
            | (  # the caller's access: none shown to an anonymous one
                {"permissions": dict(self.repo_permissions)} if self.token is not None else {}
            )
            | ({"has_pull_requests": self.has_pull_requests} if self.flavour == "gitea" else {})
        )

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

    # Token scopes (issue 36): what a scoped token may ask, decided per route as each forge does.
    def _token_refusal(self, method: str, path: str, authorized: bool) -> Answer | None:
        """A 403 for a request the token's scopes do not cover, None when they do.

        Gitea decides by the route's group, before the owner, repository or issue is looked up
        (routers/api/v1/api.go: `tokenRequiresScopes(...)` on each m.Group; the level is read for
        GET/HEAD, write for POST/PUT/PATCH/DELETE): /repos/{o}/{r}/issues/**, /labels and
        /milestones need `issue`; the rest of /repos/{o}/{r}/** (the repository, pulls,
        statuses, commits, collaborators, git, contents) and /repositories/{id} `repository`;
        /orgs/{org}/** (its labels too, even when the owner is a user) `organization`; /user
        and /users/** `user`. A refusal is ctx.Error's APIError: 403 {"message": "token does not
        have at least one of required scope(s): [read:organization]", "url": ...}.

        GitHub's fine-grained tokens: each endpoint needs one repository permission (docs.github
        .com/en/rest/authentication/permissions-required-for-fine-grained-personal-access-
        tokens); refused with 403 "Resource not accessible by personal access token" ("... by
        integration" for an App installation's token) and the permission it needed in
        `X-Accepted-GitHub-Permissions: issues=read` (docs.github.com/en/rest/using-the-rest-api/
        troubleshooting-the-rest-api#resource-not-accessible). GET /user needs no permission
        from a personal token; an installation's token has no user, and is refused
        (docs.github.com/en/rest/users/users#get-the-authenticated-user lists no installation
        access token among the tokens it works with)."""
        if not authorized or (self.scopes is None and not self.installation):
            return None
        _, parts = self._api_parts(path)
        level = "read" if method in ("GET", "HEAD") else "write"
        if self.flavour == "gitea":
            category = _gitea_scope_category(parts)
            if category is None or self.scopes is None or _granted(self.scopes, category, level):
                return None
            scope = f"{level}:{category}"
            return self._error(
                403, f"token does not have at least one of required scope(s): [{scope}]"
            )
        if parts == ["user"] and self.installation:
            return self._error(403, "Resource not accessible by integration")
        permission = _github_permission(parts)
        if permission == "metadata":
            level = "read"  # every fine-grained token reads metadata; nothing writes it
        if permission is None or self.scopes is None or _granted(self.scopes, permission, level):
            return None
        who = "integration" if self.installation else "personal access token"
        answer = self._error(403, f"Resource not accessible by {who}")
        needed = {"X-Accepted-GitHub-Permissions": f"{permission}={level}"}
        return replace(answer, headers=answer.headers | needed)

    def refuses(self, path: str, method: str = "GET") -> bool:
        """Whether the token's scopes refuse this API request (a test checks what was asked)."""
        return self._token_refusal(method, path, authorized=True) is not None

    def _git_token_refusal(
        self, owner: str, repo: str, service: str, query: str
    ) -> CgiAnswer | None:
        """A git fetch needs the token to read the repository, a push to write it. Gitea:
        `read:repository` / `write:repository` (routers/web/repo/githttp.go httpBase ->
        CheckRepoScopedToken, services/context/permission.go: a bare 403); GitHub: the
        `contents` permission, a push refused with 403 and "Permission to {o}/{r}.git denied"
        (what git shows as `remote: Permission to ... denied`)."""
        if self.scopes is None:
            return None
        pushing = service == "git-receive-pack" or "service=git-receive-pack" in query
        level = "write" if pushing else "read"
        name = "repository" if self.flavour == "gitea" else "contents"
        if _granted(self.scopes, name, level):
            return None
        if self.flavour == "gitea":
            return CgiAnswer(403, {"Content-Type": "text/plain"}, b"Forbidden\n")
        denied = f"Permission to {owner}/{repo}.git denied to {self.login}.\n"
        return CgiAnswer(403, {"Content-Type": "text/plain"}, denied.encode())

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

    def _record(self, request: Request) -> threading.Event | None:
        with self._lock:
            self.requests.append(request)
            self._lock.notify_all()
            return self._gate

    def _authorized(self, header: str | None) -> bool:
        if self.token is None:
            return True
        # Gitea: `Authorization: token T` (also `Bearer`); GitHub: `Bearer T` (also `token`).
        return header in (f"token {self.token}", f"Bearer {self.token}")

    def answer(
        self,
        path: str,
        query: dict[str, str],
        authorization: str | None,
        method: str = "GET",
        body: Any = None,
    ) -> Answer:
        authorized = self._authorized(authorization)
        request = Request(method, path, query, authorized, body)
        gate = self._record(request)
        if gate is not None:
            gate.wait(30)
        refusal = self._token_refusal(method, path, authorized)
        if refusal is not None:  # checked before the resource is looked up, as both forges do
            return refusal
        hook = self._read_hook if method == "GET" else self._write_hook
        if hook is not None:
            hook(request)
        if method != "GET" and self._write_limited():
            # GitHub's secondary rate limit on content creation ("no more than 80
            # content-generating requests per minute"): 403 (or 429) with retry-after, no
            # x-ratelimit-remaining: 0 (docs.github.com/rest/using-the-rest-api/
            # rate-limits-for-the-rest-api#about-secondary-rate-limits).
            answer = self._error(403, "You have exceeded a secondary rate limit")
            return replace(answer, headers=answer.headers | {"retry-after": "1"})
        account = self._account_answer(method, path, query, authorized)
        if account is not None:
            return account
        path = self._current_path(path)
        moved = self._moved_answer(method, path, query)
        if moved is not None:
            return moved
        archived = self._archived_answer(method, path)
        if archived is not None:
            return archived
        related = self._dependency_answer(method, path, query, body, authorized)
        if related is not None:  # issue 35's relations: dev.standin_dependencies
            dropped = getattr(related, "drop", False)
            answer = Answer(related.status, related.headers, related.body, drop=dropped)
            return self._count_rate(answer, query)
        said = self._conversation_answer(method, path, query, body, authorized)
        if said is not None:
            return self._count_rate(Answer(said.status, said.headers, said.body), query)
        mirror_route = self._mirror_route(path)
        if mirror_route is not None:
            return self._mirror_answer(method, mirror_route, query, body, authorized)
        pulls_route = self._pulls_route(path)
        if pulls_route is not None:
            return self._pulls_answer(method, *pulls_route, query, body, authorized)
        route = self._route(path)
        if method == "POST" and route is not None and route[2] is None:
            return self._issue_create(route[0], route[1], query, body, authorized)
        if method == "PATCH" and route is not None and route[2] is not None:
            return self._issue_edit(route[0], route[1], route[2], body, authorized)
        if method != "GET":
            return self._error(405, "Method Not Allowed")
        _, parts = self._api_parts(path)
        if len(parts) == 3 and parts[0] == "repos":
            return self._repo_answer(parts[1], parts[2])
        route = self._route(path)
        if route is None:
            return self._error(404, "Not Found")
        owner, repo, number = route
        fault = self._take_fault(owner, repo, number)
        if fault is not None and fault.name in STATUS_FAULTS:
            return self._status_fault(fault)
        if not authorized:
            message = "token is required" if self.flavour == "gitea" else "Bad credentials"
            return self._error(401, message)
        if self.flavour == "github" and self.rate_remaining <= 0:
            # GitHub's primary rate limit: 403 (or 429) with x-ratelimit-remaining: 0.
            return self._error(403, "API rate limit exceeded")
        with self._lock:
            if (owner, repo) not in self._repos:
                return self._error(404, "Not Found")
            issues = dict(self._repos[(owner, repo)])
        if number is not None:
            stored = issues.get(number)
            if (
                stored is None
                and self.flavour == "github"
                and (owner, repo, number) in self._deleted
            ):
                return self._error(410, "This issue was deleted")
            if stored is None:
                return self._error(404, "Not Found")
            answer = Answer(200, {}, self._issue_json(owner, repo, stored))
        else:
            answer = self._listing(owner, repo, issues, query)
        if fault is not None:
            answer = self._content_fault(fault, answer)
        return self._count_rate(answer, query)

    def _issue_create(
        self, owner: str, repo: str, query: dict[str, str], body: Any, authorized: bool
    ) -> Answer:
        """POST /repos/{o}/{r}/issues, opened by the token's account (the mirror): 201 with the
        issue (Gitea: CreateIssue, routers/api/v1/repo/issue.go, `title` binding:"Required";
        GitHub: docs.github.com/rest/issues/issues#create-an-issue, 422 without a title)."""
        fault = self._take_fault(owner, repo, None, write=True)
        if fault is not None and fault.name in STATUS_FAULTS:
            return self._status_fault(fault)
        if not authorized:
            message = "token is required" if self.flavour == "gitea" else "Bad credentials"
            return self._error(401, message)
        form = body if isinstance(body, dict) else {}
        title, text = form.get("title"), form.get("body") or ""
        if not (isinstance(title, str) and title and isinstance(text, str)):
            if self.flavour == "gitea":
                return self._error(422, "[Title]: Required")
            return self._github_invalid({"resource": "Issue", "code": "missing_field"})
        too_long = self._github_too_long("Issue", text)
        if too_long is not None:
            return too_long
        with self._lock:
            if (owner, repo) not in self._repos:
                return self._error(404, "Not Found")
            issues = self._repos[(owner, repo)]
            number = max(issues, default=0) + 1
            issues[number] = StoredIssue(number, title, [], body=text, author=self.login)
            answer = Answer(201, {}, self._issue_json(owner, repo, issues[number]))
        if fault is not None and fault.name == "applied-then-reset":
            return replace(answer, drop=True)
        if fault is not None and fault.name == "applied-then-slow":
            time.sleep(fault.seconds)
        return self._count_rate(answer, query)

    def _issue_edit(
        self, owner: str, repo: str, number: int, body: Any, authorized: bool
    ) -> Answer:
        """PATCH /repos/{o}/{r}/issues/{n} with `state` (and `title`): Gitea answers 201 with the
        issue (EditIssue, routers/api/v1/repo/issue.go), GitHub 200 (docs.github.com/en/rest/
        issues/issues#update-an-issue)."""
        if not authorized:
            message = "token is required" if self.flavour == "gitea" else "Bad credentials"
            return self._error(401, message)
        form = body if isinstance(body, dict) else {}
        changes: dict[str, Any] = {}
        if form.get("state") in ("open", "closed"):
            changes["state"] = form["state"]
            changes["closed_at"] = _now() if form["state"] == "closed" else None
        if isinstance(form.get("title"), str) and form["title"]:
            changes["title"] = form["title"]
        with self._lock:
            if number not in self._repos.get((owner, repo), {}):
                return self._error(404, "Not Found")
            if changes:
                self._change(owner, repo, number, self.login, **changes)
            issue = self._repos[(owner, repo)][number]
            return Answer(
                201 if self.flavour == "gitea" else 200, {}, self._issue_json(owner, repo, issue)
            )

    def _route(self, path: str) -> tuple[str, str, int | None] | None:
        parts = path.strip("/").split("/")
        if self.flavour == "gitea":
            if parts[:2] != ["api", "v1"]:
                return None
            parts = parts[2:]
        if len(parts) not in (4, 5) or parts[0] != "repos" or parts[3] != "issues":
            return None
        if len(parts) == 5:
            return (parts[1], parts[2], int(parts[4])) if parts[4].isdigit() else None
        return parts[1], parts[2], None

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

    def _account_answer(
        self, method: str, path: str, query: dict[str, str], authorized: bool
    ) -> Answer | None:
        """GET /user (both forges: the token's own account, `login`) and Gitea's GET
        /orgs/{org}/labels (routers/api/v1/org/label.go ListLabels: pages like the repository's
        list, X-Total-Count and no Link; 404 when the owner is a user, not an organisation)."""
        parts = path.strip("/").split("/")
        if self.flavour == "gitea":
            if parts[:2] != ["api", "v1"]:
                return None
            parts = parts[2:]
        if parts == ["user"] and method == "GET":
            if not authorized:
                return self._error(401, "Bad credentials")
            # Gitea answers its own account's primary address (services/convert/user.go toUser);
            # GitHub the public one, none here.
            email = self.account_email if self.flavour == "gitea" else None
            account = Answer(200, {}, {"id": 2, "login": self.login, "email": email})
            if self.flavour == "github" and self.scopes is None and self.oauth_scopes is not None:
                # A classic token's scopes on every answer (docs.github.com/en/apps/oauth-apps/
                # building-oauth-apps/scopes-for-oauth-apps: "X-OAuth-Scopes lists the scopes
                # your token has authorized"); a fine-grained or App token sends none.
                account = replace(account, headers={"X-OAuth-Scopes": self.oauth_scopes})
            return self._count_rate(account, query)
        if parts == ["version"] and self.flavour == "gitea" and method == "GET":
            # GET /api/v1/version, no token needed: {"version": setting.AppVer}
            # (routers/api/v1/misc/version.go Version; m.Get("/version") in routers/api/v1/api.go).
            return Answer(200, {}, {"version": GITEA_VERSION})
        if parts == ["meta"] and self.flavour == "github" and method == "GET":
            # GET /meta, no token needed (docs.github.com/en/rest/meta/meta#get-github-meta-
            # information); GitHub Enterprise Server adds `installed_version`, github.com does not.
            return Answer(200, {}, {"verifiable_password_authentication": False})
        if self.flavour == "gitea" and len(parts) == 3 and parts[::2] == ["orgs", "labels"]:
            with self._lock:
                org = self._org_labels.get(parts[1])
                if org is None:
                    return self._error(404, "Not Found")
                items = [self._label_json(parts[1], "", label) for label in org.values()]
            return self._label_page(items, query)
        return None

    def _label_page(self, items: list[dict[str, Any]], query: dict[str, str]) -> Answer:
        """Gitea's label lists: sorted by name, `limit` clamped (`_gitea_page_size`),
        X-Total-Count the count of every label and NO Link header (routers/api/v1/repo/label.go
        and org/label.go ListLabels: SetTotalCountHeader(CountLabelsByRepoID/OrgID) only;
        go-gitea/gitea issue #21158); no count at all up to 1.15 (`gitea_label_totals`)."""
        items = sorted(items, key=lambda item: (str(item["name"]), int(item["id"])))
        size = self._gitea_page_size(query)
        page = max(int(query.get("page", "1") or 1), 1)
        chosen = items[(page - 1) * size : page * size]
        headers = {"X-Total-Count": str(len(items))} if self.gitea_label_totals else {}
        return Answer(200, headers, chosen)

    def _gitea_page_size(self, query: dict[str, str]) -> int:
        """The items Gitea puts on a page for `limit` (services/convert/utils.go
        ToCorrectPageSize): none or below 1 is `[api] DEFAULT_PAGING_NUM` (30), above `[api]
        MAX_RESPONSE_ITEMS` (`max_page_size`) is that."""
        asked = int(query.get("limit", "0") or 0)
        return 30 if asked <= 0 else min(asked, self.max_page_size)

    # The mirror's endpoints
    def _mirror_route(self, path: str) -> tuple[str, str, int | None, str, str | None] | None:
        """(owner, repo, issue number or None, "labels" or "comments", the label reference)."""
        parts = path.strip("/").split("/")
        if self.flavour == "gitea":
            if parts[:2] != ["api", "v1"]:
                return None
            parts = parts[2:]
        if len(parts) < 4 or parts[0] != "repos":
            return None
        owner, repo, rest = parts[1], parts[2], parts[3:]
        if rest[0] == "labels" and len(rest) <= 2:
            return owner, repo, None, "labels", unquote(rest[1]) if len(rest) == 2 else None
        if rest[0] == "issues" and len(rest) >= 3 and rest[1].isdigit():
            if rest[2] == "labels" and len(rest) <= 4:
                ref = unquote(rest[3]) if len(rest) == 4 else None  # a name may hold "/" as %2F
                return owner, repo, int(rest[1]), "labels", ref
            if rest[2] == "comments" and len(rest) == 3:
                return owner, repo, int(rest[1]), "comments", None
            if rest[2] in ("events", "timeline") and len(rest) == 3:
                return owner, repo, int(rest[1]), "events", None
        return None

    def _mirror_answer(
        self,
        method: str,
        route: tuple[str, str, int | None, str, str | None],
        query: dict[str, str],
        body: Any,
        authorized: bool,
    ) -> Answer:
        owner, repo, number, what, ref = route
        fault = self._take_fault(owner, repo, number, write=method != "GET")
        if fault is not None and fault.name in STATUS_FAULTS:
            return self._status_fault(fault)
        if not authorized:
            message = "token is required" if self.flavour == "gitea" else "Bad credentials"
            return self._error(401, message)
        with self._lock:
            if (owner, repo) not in self._repos:
                return self._error(404, "Not Found")
            if number is not None and number not in self._repos[(owner, repo)]:
                # A deleted issue's labels and comments: GitHub 410 Gone (docs.github.com/en/rest/
                # issues/comments#create-an-issue-comment and issues/labels#add-labels-to-an-issue
                # list 410), Gitea 404 (GetIssueByIndex: IsErrIssueNotExist, NotFound).
                if self.flavour == "github" and (owner, repo, number) in self._deleted:
                    return self._error(410, "This issue was deleted")
                return self._error(404, "Not Found")
            if number is None:
                answer = self._repo_labels_answer(method, owner, repo, ref, body, query)
            elif what == "labels":
                answer = self._issue_labels_answer(method, owner, repo, number, ref, body)
            elif what == "events":
                answer = self._events_answer(method, owner, repo, number, query)
            else:
                answer = self._comments_answer(method, owner, repo, number, query, body)
        if fault is not None and fault.name == "applied-then-reset":
            return replace(answer, drop=True)
        if fault is not None and fault.name == "applied-then-slow":
            time.sleep(fault.seconds)
        return self._count_rate(answer, query)

    def _label_json(self, owner: str, repo: str, label: RepoLabel) -> dict[str, Any]:
        api = (
            f"{self.url}{'/api/v1' if self.flavour == 'gitea' else ''}/repos/{owner}/{repo}/labels"
        )
        if self.flavour == "gitea":
            return {
                "id": label.id,
                "name": label.name,
                "exclusive": label.exclusive,
                "is_archived": False,
                "color": label.color,
                "description": label.description,
                "url": f"{api}/{label.id}",
            }
        return {
            "id": label.id,
            "node_id": f"LA_{label.id}",
            "url": f"{api}/{label.name}",
            "name": label.name,
            "color": label.color,
            "default": False,
            "description": label.description or None,
        }

    def _github_label(self, labels: dict[str, RepoLabel], name: str) -> RepoLabel | None:
        """The repository's label GitHub takes `name` for: it matches label names without case
        (GET .../labels/Bug answers `bug`; POST .../issues/{n}/labels ["Bug"] adds `bug`; creating
        `Bug` is 422 already_exists: rust-lang/triagebot#1915, git-bug/git-bug#176,
        intuit/auto#548). str.lower stands in for GitHub's collation."""
        return labels.get(name) or next(
            (label for key, label in labels.items() if key.lower() == name.lower()), None
        )

    def _repo_labels_answer(
        self, method: str, owner: str, repo: str, ref: str | None, body: Any, query: dict[str, str]
    ) -> Answer:
        labels = self._labels.setdefault((owner, repo), {})
        if method == "GET" and ref is None:
            every = [*labels.values(), *self._duplicate_labels.get((owner, repo), [])]
            items = [self._label_json(owner, repo, label) for label in every]
            if self.flavour == "gitea":
                return self._label_page(items, query)
            return Answer(200, {}, items)  # GitHub: the client asks for its label by name
        if method == "GET" and self.flavour == "github" and ref is not None:
            label = self._github_label(labels, ref)
            if label is None:
                return self._error(404, "Not Found")
            return Answer(200, {}, self._label_json(owner, repo, label))
        if method == "DELETE" and ref is not None:
            # Gitea: DELETE .../labels/{id}, 204 (DeleteLabel, routers/api/v1/repo/label.go);
            # GitHub: DELETE .../labels/{name}, 204, 404 when there is none (docs.github.com/en/
            # rest/issues/labels#delete-a-label). Both take the label off every issue.
            key = (
                ref
                if self.flavour == "github"
                else next((n for n, label in labels.items() if str(label.id) == ref), None)
            )
            if key is None or key not in labels:
                return (
                    Answer(204, {}, None, raw=b"") if self.flavour == "gitea" else self._not_found()
                )
            del labels[key]
            for number, stored in self._repos.get((owner, repo), {}).items():
                if key in stored.labels:
                    self._repos[(owner, repo)][number] = replace(
                        stored, labels=[n for n in stored.labels if n != key]
                    )
            return Answer(204, {}, None, raw=b"")
        if method != "POST" or ref is not None:
            return self._error(405, "Method Not Allowed")
        name = body.get("name") if isinstance(body, dict) else None
        color = str(body.get("color", "")) if isinstance(body, dict) else ""
        if not isinstance(name, str) or not name or not _is_color(color, self.flavour):
            return self._error(422, "Validation Failed")
        if self.flavour == "github" and len(name) > GITHUB_LABEL_NAME_LIMIT:
            return self._github_invalid(
                {"resource": "Label", "code": "custom", "field": "name",
                 "message": f"name is too long (maximum is {GITHUB_LABEL_NAME_LIMIT} characters)"},
                docs="https://docs.github.com/rest/issues/labels#create-a-label",
            )  # fmt: skip
        if self.flavour == "github" and self._github_label(labels, name) is not None:
            # Another case of an existing name is that label (git-bug/git-bug#176, hackebrot/labels#15).
            return self._github_invalid(
                {"resource": "Label", "code": "already_exists", "field": "name"},
                docs="https://docs.github.com/rest/issues/labels#create-a-label",
            )
        if name in labels:
            # Gitea stores a second label of the same name: CreateLabel checks no name
            # (routers/api/v1/repo/label.go CreateLabel -> issues_model.NewLabel).
            duplicate = RepoLabel(self._next_id, name, color.lstrip("#"))
            self._next_id += 1
            self._duplicate_labels.setdefault((owner, repo), []).append(duplicate)
            return Answer(201, {}, self._label_json(owner, repo, duplicate))
        label = self._repo_label(
            owner,
            repo,
            name,
            color.lstrip("#"),
            description=str(body.get("description") or ""),
            exclusive=bool(body.get("exclusive", False)) and self.flavour == "gitea",
        )
        return Answer(201, {}, self._label_json(owner, repo, label))

    def _issue_labels_answer(
        self, method: str, owner: str, repo: str, number: int, ref: str | None, body: Any
    ) -> Answer:
        stored = self._repos[(owner, repo)][number]
        labels = self._labels.setdefault((owner, repo), {})
        # An issue takes the repository's labels and its organisation's, by id (Gitea:
        # services/issue/label.go; routers/api/v1/repo/issue_label.go DeleteIssueLabel looks the
        # id up with GetLabelByID, any label the issue may carry).
        org = self._org_labels.get(owner, {})
        extra = self._duplicate_labels.get((owner, repo), [])
        by_id = {label.id: label for label in [*labels.values(), *org.values(), *extra]}
        if method == "GET" and ref is None:
            return self._issue_labels_list(owner, repo, number)
        if method == "DELETE" and ref is not None:
            if self.flavour == "gitea":
                # DELETE /issues/{index}/labels/{id}: an id.
                label = by_id.get(int(ref)) if ref.isdigit() else None
                if label is None:
                    return self._error(422, "label not found")
            else:
                label = labels.get(ref)
                if label is None or ref not in stored.labels:
                    return self._error(404, "Label does not exist")
            self._set_issue_labels(
                owner, repo, number, [n for n in stored.labels if n != label.name]
            )
            if self.flavour == "gitea":
                return Answer(204, {}, None, raw=b"")
            return self._issue_labels_list(owner, repo, number)
        if method not in ("POST", "PUT") or ref is not None:
            return self._error(405, "Method Not Allowed")
        refs = body.get("labels") if isinstance(body, dict) else None
        if not isinstance(refs, list):
            return self._error(422, "Validation Failed")
        names: list[str] = []
        for item in refs:
            if self.flavour == "gitea" and isinstance(item, int) and item in by_id:
                names.append(by_id[item].name)
            elif (
                self.flavour == "gitea" and isinstance(item, str) and self.gitea_label_refs == "ids"
            ):
                # Gitea up to 1.20: IssueLabelsOption.labels is []int64.
                return self._error(422, "json: cannot unmarshal string into Go value of type int64")
            elif isinstance(item, str) and (item in labels or item in org):
                names.append(item)
            elif self.flavour == "github" and isinstance(item, str):
                found = self._github_label(labels, item)
                if found is None and len(item) > GITHUB_LABEL_NAME_LIMIT:
                    return self._github_invalid(
                        {"value": item, "resource": "Label", "field": "name", "code": "invalid"},
                        docs="https://docs.github.com/rest/issues/labels#add-labels-to-an-issue",
                    )
                # GitHub adds the existing label of another case, else makes it.
                made = found or self._repo_label(owner, repo, item, "ededed")
                names.append(made.name)
            else:
                return self._error(422, "label not found")
        current = [] if method == "PUT" else list(stored.labels)
        for name in names:
            label = self._label_named(owner, repo, name)
            scope = _exclusive_scope(label)
            if scope:  # Gitea's scoped labels: one exclusive label per scope on an issue
                current = [
                    n
                    for n in current
                    if _exclusive_scope(self._label_named(owner, repo, n)) != scope
                ]
            if name not in current:
                current.append(name)
        if current != stored.labels:
            self._set_issue_labels(owner, repo, number, current)
        return self._issue_labels_list(owner, repo, number)

    def _set_issue_labels(self, owner: str, repo: str, number: int, labels: list[str]) -> None:
        issues = self._repos[(owner, repo)]
        stored = issues[number]
        stamp = max(_now(), stored.updated_at + timedelta(seconds=1))
        issues[number] = replace(stored, labels=labels, updated_at=stamp)
        self._record_events(owner, repo, stored, issues[number], self.login)

    def _issue_labels_list(self, owner: str, repo: str, number: int) -> Answer:
        names = self._repos[(owner, repo)][number].labels
        return Answer(
            200,
            {},
            [self._label_json(owner, repo, self._label_named(owner, repo, n)) for n in names],
        )

    def _events_answer(
        self, method: str, owner: str, repo: str, number: int, query: dict[str, str]
    ) -> Answer:
        """GitHub: GET .../issues/{n}/events (docs.github.com/rest/issues/events), oldest first,
        paged by Link. Gitea: GET .../issues/{index}/timeline (routers/api/v1/repo/
        issue_comment.go ListIssueCommentsAndTimeline), a label change a comment of type
        "label" with body "1" when added and "" when removed, "close" and "reopen"; `since`."""
        if method != "GET":
            return self._error(405, "Method Not Allowed")
        events = self._events.get((owner, repo, number), [])
        if self.flavour == "gitea":
            return self._timeline_page(owner, repo, number, query)
        size = min(int(query.get("per_page", "30") or 30), 100)
        page = max(int(query.get("page", "1") or 1), 1)
        last = max((len(events) + size - 1) // size, 1)
        chosen_events = events[(page - 1) * size : page * size]
        headers = {}
        if page < last:
            path = f"/repos/{owner}/{repo}/issues/{number}/events"
            headers["Link"] = (
                f'<{self.url}{path}?{urlencode(query | {"page": str(page + 1)})}>; rel="next"'
            )
        api = f"{self.url}/repos/{owner}/{repo}/issues"
        items = [
            {
                "id": e.id,
                "node_id": f"E_{e.id}",
                "url": f"{api}/events/{e.id}",
                "actor": {"id": 1, "login": e.actor},
                "event": e.kind,
                "commit_id": None,
                "commit_url": None,
                "created_at": _time(e.at),
                "performed_via_github_app": None,
            }
            | ({"label": {"name": e.label.name, "color": e.label.color}} if e.label else {})
            for e in chosen_events
        ]
        return Answer(200, headers, items)

    def _timeline_page(self, owner: str, repo: str, number: int, query: dict[str, str]) -> Answer:
        """Gitea's timeline (routers/api/v1/repo/issue_comment.go ListIssueCommentsAndTimeline):
        every comment of the issue, plain ones and label and state changes alike, oldest created
        first (models/issues/comment.go FindComments: created_unix, then id), `since` against
        their updated time; paged by page/limit, `limit` clamped (`_gitea_page_size`). Its
        X-Total-Count is the count of THIS page (SetTotalCountHeader(len(apiComments))), and a
        page with nothing on it is `null`: `var apiComments []*api.TimelineComment` stays a nil
        slice, which Go's JSON writes as null."""
        since = datetime.fromisoformat(query["since"]) if "since" in query else None
        entries: list[tuple[datetime, int, dict[str, Any]]] = []
        for comment in self._comments.get((owner, repo, number), []):
            if since is None or (comment.updated_at or comment.created_at) >= since:
                item = self._timeline_comment_json(owner, repo, number, comment)
                entries.append((comment.created_at, comment.id, item))
        for event in self._events.get((owner, repo, number), []):
            if since is None or event.at >= since:
                item = self._timeline_json(owner, repo, number, event)
                entries.append((event.at, event.id, item))
        entries.sort(key=lambda entry: (entry[0], entry[1]))
        size = self._gitea_page_size(query)
        page = max(int(query.get("page", "1") or 1), 1)
        chosen = [item for _, _, item in entries[(page - 1) * size : page * size]]
        return Answer(200, {"X-Total-Count": str(len(chosen))}, chosen or None)

    def _timeline_comment_json(
        self, owner: str, repo: str, number: int, comment: Comment
    ) -> dict[str, Any]:
        """A plain comment as the timeline shows it (services/convert/issue_comment.go
        ToTimelineComment): type "comment", its text the body, no label."""
        web = f"{self.url}/{owner}/{repo}/issues/{number}"
        return {
            "id": comment.id,
            "type": "comment",
            "body": comment.body,
            "user": {"id": 2 if comment.author == MIRROR_LOGIN else 3, "login": comment.author},
            "label": None,
            "created_at": _time(comment.created_at),
            "updated_at": _time(comment.updated_at or comment.created_at),
            "html_url": f"{web}#issuecomment-{comment.id}",
            "issue_url": web,
            "pull_request_url": "",
        }

    def _timeline_json(self, owner: str, repo: str, number: int, event: Event) -> dict[str, Any]:
        kind = {"labeled": "label", "unlabeled": "label", "closed": "close", "reopened": "reopen"}
        web = f"{self.url}/{owner}/{repo}/issues/{number}"
        return {
            "id": event.id,
            "type": kind[event.kind],
            "body": "1" if event.kind == "labeled" else "",
            "user": {"id": 1, "login": event.actor},
            "label": None if event.label is None else self._label_json(owner, repo, event.label),
            "created_at": _time(event.at),
            "updated_at": _time(event.at),
            "html_url": f"{web}#issuecomment-{event.id}",
            "issue_url": web,
            "pull_request_url": "",
        }

    def _comments_answer(
        self, method: str, owner: str, repo: str, number: int, query: dict[str, str], body: Any
    ) -> Answer:
        comments = self._comments.setdefault((owner, repo, number), [])
        if method == "GET":
            size = min(
                int(query.get("per_page" if self.flavour == "github" else "limit", "30") or 30), 100
            )
            page = max(int(query.get("page", "1") or 1), 1)
            last = max((len(comments) + size - 1) // size, 1)
            chosen = comments[(page - 1) * size : page * size]
            items = [self._comment_json(owner, repo, number, c) for c in chosen]
            path = f"{'/api/v1' if self.flavour == 'gitea' else ''}/repos/{owner}/{repo}/issues/{number}/comments"
            headers = {}
            if page < last:
                nxt = f"{self.url}{path}?" + urlencode(query | {"page": str(page + 1)})
                headers["Link"] = f'<{nxt}>; rel="next"'
            return Answer(200, headers, items)
        if method != "POST":
            return self._error(405, "Method Not Allowed")
        text = body.get("body") if isinstance(body, dict) else None
        if not isinstance(text, str) or not text:
            return self._error(422, "Validation Failed")
        too_long = self._github_too_long("IssueComment", text)
        if too_long is not None:
            return too_long
        comment = Comment(self._next_id, text, author=self.login)
        self._next_id += 1
        comments.append(comment)
        stored = self._repos[(owner, repo)][number]
        self._repos[(owner, repo)][number] = replace(
            stored, updated_at=max(_now(), stored.updated_at + timedelta(seconds=1))
        )
        return Answer(201, {}, self._comment_json(owner, repo, number, comment))

    def _comment_json(self, owner: str, repo: str, number: int, comment: Comment) -> dict[str, Any]:
        web = f"{self.url}/{owner}/{repo}/issues/{number}#issuecomment-{comment.id}"
        user = {"id": 2 if comment.author == self.login else 3, "login": comment.author}
        common = {
            "id": comment.id,
            "html_url": web,
            "body": comment.body,
            "user": user,
            "created_at": _time(comment.created_at),
            "updated_at": _time(comment.updated_at or comment.created_at),
        }
        if self.flavour == "gitea":
            # A pull request's comment has no issue_url but a pull_request_url, both web pages
            # (models/issues/comment.go IssueURL, PRURL).
            issue = self._repos.get((owner, repo), {}).get(number)
            pull = issue is not None and issue.pull_request
            web = f"{self.url}/{owner}/{repo}/issues/{number}"
            return common | {
                "issue_url": "" if pull else web,
                "pull_request_url": self._pull_web_url(owner, repo, number) if pull else "",
                "original_author": "",
                "original_author_id": 0,
                "assets": [],
            }
        api = f"{self.url}/repos/{owner}/{repo}/issues"
        return common | {
            "node_id": f"IC_{comment.id}",
            "url": f"{api}/comments/{comment.id}",
            "issue_url": f"{api}/{number}",
            "author_association": "NONE",
        }

    # Pull requests (issue 33), each quirk cited where it is served.
    def _api_prefix(self) -> str:
        return "/api/v1" if self.flavour == "gitea" else ""

    def _pull_web_url(self, owner: str, repo: str, number: int) -> str:
        # A pull request's page: Gitea's is .../pulls/N (Issue.HTMLURL, models/issues/issue.go),
        # GitHub's .../pull/N (singular, the `html_url` of its pull-request schema).
        kind = "pulls" if self.flavour == "gitea" else "pull"
        return f"{self.url}/{owner}/{repo}/{kind}/{number}"

    def _is_draft(self, title: str, pull: StoredPull) -> bool:
        """GitHub: the pull request's own flag. Gitea has none: a pull request is a draft (work
        in progress) when its title starts with one of `[repository.pull-request]
        WORK_IN_PROGRESS_PREFIXES`, "WIP:" and "[WIP]" by default (modules/setting/
        repository.go), compared case-insensitively (HasWorkInProgressPrefix, models/issues/
        pull.go); newer versions serve that as `draft` (services/convert/pull.go)."""
        if self.flavour == "github":
            return pull.draft
        return title.upper().startswith(GITEA_WIP_PREFIXES)

    def _new_pull(self, owner: str, repo: str, title: str, body: str, pull: StoredPull) -> int:
        """Stores a pull request under the next issue number (called under the lock)."""
        issues = self._repos.setdefault((owner, repo), {})
        number = max(issues, default=0) + 1
        issues[number] = StoredIssue(number, title, [], pull_request=True, body=body)
        self._pulls[(owner, repo, number)] = pull
        return number

    def _pulls_route(self, path: str) -> tuple[str, str, int | None] | None:
        """(owner, repo, number or None) of /repos/{o}/{r}/pulls[/{n}]."""
        _, parts = self._api_parts(path)
        if len(parts) not in (4, 5) or parts[0] != "repos" or parts[3] != "pulls":
            return None
        if len(parts) == 5:
            return (parts[1], parts[2], int(parts[4])) if parts[4].isdigit() else None
        return parts[1], parts[2], None

    def _pulls_answer(
        self,
        method: str,
        owner: str,
        repo: str,
        number: int | None,
        query: dict[str, str],
        body: Any,
        authorized: bool,
    ) -> Answer:
        fault = self._take_fault(owner, repo, number, write=method != "GET")
        if fault is not None and fault.name in STATUS_FAULTS:
            return self._status_fault(fault)
        if not authorized:
            message = "token is required" if self.flavour == "gitea" else "Bad credentials"
            return self._error(401, message)
        with self._lock:
            if (owner, repo) not in self._repos:
                return self._error(404, "Not Found")
            if number is None and method == "GET":
                answer = self._pull_list(owner, repo, query)
            elif number is None and method == "POST":
                answer = self._pull_create(owner, repo, body)
            elif number is not None and (owner, repo, number) not in self._pulls:
                answer = self._not_found()  # an issue's number is no pull request's
            elif method == "GET":
                answer = Answer(200, {}, self._pull_json(owner, repo, number or 0))
            elif method == "PATCH":
                answer = self._pull_edit(owner, repo, number or 0, body)
            else:
                answer = self._error(405, "Method Not Allowed")
        if fault is not None and fault.name == "applied-then-reset":
            return replace(answer, drop=True)
        if fault is not None and fault.name == "applied-then-slow":
            time.sleep(fault.seconds)  # stored; the answer comes too late for the client
        elif fault is not None and (isinstance(answer.body, list) or fault.name in BODY_FAULTS):
            answer = self._content_fault(fault, answer)
        return self._count_rate(answer, query)

    def _not_found(self) -> Answer:
        """Gitea's APIErrorNotFound without a message (services/context/api.go): "The target
        couldn't be found." with an empty `errors`; GitHub's plain "Not Found"."""
        if self.flavour == "gitea":
            answer = self._error(404, "The target couldn't be found.")
            return replace(answer, body=answer.body | {"errors": []})
        return self._error(404, "Not Found")

    def _github_invalid(
        self,
        *errors: dict[str, str],
        docs: str = "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
    ) -> Answer:
        """GitHub's 422 for a request it understood but refuses: "Validation Failed" and why, in
        `errors` (docs.github.com/en/rest/using-the-rest-api/troubleshooting-the-rest-api)."""
        return Answer(
            422,
            {},
            {"message": "Validation Failed", "errors": list(errors), "documentation_url": docs},
        )

    def _github_too_long(self, resource: str, text: object) -> Answer | None:
        """GitHub's 422 for a body past GITHUB_BODY_LIMIT characters (where it is cited); None
        when the body fits, or on Gitea."""
        if self.flavour != "github" or not isinstance(text, str) or len(text) <= GITHUB_BODY_LIMIT:
            return None
        return self._github_invalid(
            {"resource": resource, "code": "custom", "field": "body",
             "message": f"body is too long (maximum is {GITHUB_BODY_LIMIT} characters)"},
            docs="https://docs.github.com/rest",
        )  # fmt: skip

    def _pull_create(self, owner: str, repo: str, body: Any) -> Answer:
        """POST /repos/{o}/{r}/pulls (called under the lock). `head` is a branch of this
        repository, or `owner:branch`; the stand-in serves no forks."""
        form = body if isinstance(body, dict) else {}
        head, base, title = form.get("head"), form.get("base"), form.get("title")
        text = form.get("body") or ""
        if not (
            isinstance(head, str)
            and isinstance(base, str)
            and isinstance(title, str)
            and isinstance(text, str)
            and head
            and base
            and title
        ):
            if self.flavour == "gitea":  # binding:"Required" on head, base and title
                return self._error(422, "[Head]: Required; [Base]: Required; [Title]: Required")
            return self._github_invalid({"resource": "PullRequest", "code": "missing_field"})
        too_long = self._github_too_long("PullRequest", text)
        if too_long is not None:
            return too_long
        head_owner, _, branch = head.rpartition(":")
        same_repo = head_owner in ("", owner)
        head_sha = self.git.branch_head(owner, repo, branch) if same_repo else None
        base_sha = self.git.branch_head(owner, repo, base)
        open_from_head = [
            n
            for (o, r, n), pull in self._pulls.items()
            if (o, r) == (owner, repo)
            and pull.head == branch
            and pull.base == base
            and self._repos[(owner, repo)][n].state == "open"
        ]
        if self.flavour == "gitea":
            # CreatePullRequest (routers/api/v1/repo/pull.go): head == base is a 422; a head or
            # base that is no branch (parseCompareInfo, UnstableGuessRefByShortName) a 404 with
            # APIErrorNotFound; an open pull request with the same head and base a 409 whose
            # message is ErrPullRequestAlreadyExists (models/issues/pull.go).
            if head == base:
                return self._error(
                    422, "Invalid PullRequest: There are no changes between the head and the base"
                )
            if head_sha is None or base_sha is None:
                return self._not_found()
            if open_from_head:
                repo_id = self._repo_id(owner, repo)
                return self._error(
                    409,
                    "pull request already exists for these targets [id: "
                    f"{5000 + open_from_head[0]}, issue_id: {open_from_head[0]}, head_repo_id:"
                    f" {repo_id}, base_repo_id: {repo_id}, head_branch: {branch}, base_branch:"
                    f" {base}]",
                )
            draft = False
        else:
            # GitHub (docs.github.com/en/rest/pulls/pulls#create-a-pull-request): a head that is
            # no branch is 422 {"resource":"PullRequest","field":"head","code":"invalid"}
            # (as seen in shepherd-tools/shepherd#51); a second open pull request from the same
            # head to the same base is 422 code "custom", "A pull request already exists for
            # owner:branch." (github/VisualStudio#453, vsoch/pull-request-action#86); a head with
            # nothing the base lacks is "No commits between main and branch"
            # (peter-evans/create-pull-request#4088).
            if head_sha is None:
                return self._github_invalid(
                    {"resource": "PullRequest", "field": "head", "code": "invalid"}
                )
            if base_sha is None:
                return self._github_invalid(
                    {"resource": "PullRequest", "field": "base", "code": "invalid"}
                )
            if open_from_head:
                message = f"A pull request already exists for {owner}:{branch}."
                return self._github_invalid(
                    {"resource": "PullRequest", "code": "custom", "message": message}
                )
            if self.git.is_ancestor(owner, repo, head_sha, base_sha):
                message = f"No commits between {base} and {branch}"
                return self._github_invalid(
                    {"resource": "PullRequest", "code": "custom", "message": message}
                )
            draft = form.get("draft") is True
        number = self._new_pull(
            owner, repo, title, text, StoredPull(branch, base, draft, self.login)
        )
        headers = {}
        if self.flavour == "github":  # 201 Created with the new resource's Location
            headers["Location"] = f"{self.url}/repos/{owner}/{repo}/pulls/{number}"
        return Answer(201, headers, self._pull_json(owner, repo, number))

    def _pull_edit(self, owner: str, repo: str, number: int, body: Any) -> Answer:
        """PATCH .../pulls/{n} (called under the lock): `title`, `body`, `state`. Gitea answers
        201, not 200 (EditPullRequest, routers/api/v1/repo/pull.go: "TODO this should be 200,
        not 201") and ignores an empty title (`if len(form.Title) > 0`); GitHub answers 200."""
        form = body if isinstance(body, dict) else {}
        changes: dict[str, Any] = {}
        title, text, state = form.get("title"), form.get("body"), form.get("state")
        too_long = self._github_too_long("PullRequest", text)
        if too_long is not None:
            return too_long
        if isinstance(title, str) and title:
            changes["title"] = title
        if isinstance(text, str):
            changes["body"] = text
        if state is not None:
            if state not in ("open", "closed"):
                if self.flavour == "gitea":
                    return self._error(422, "[State]: invalid")
                return self._github_invalid(
                    {"resource": "PullRequest", "field": "state", "code": "invalid"}
                )
            changes["state"] = state
            changes["closed_at"] = _now() if state == "closed" else None
        if changes:
            self._change(owner, repo, number, self.login, **changes)
        status = 201 if self.flavour == "gitea" else 200
        return Answer(status, {}, self._pull_json(owner, repo, number))

    def _pull_list(self, owner: str, repo: str, query: dict[str, str]) -> Answer:
        """GET .../pulls (called under the lock), newest first. Gitea: `state` (open unless
        told), paged by `page`/`limit` (clamped to MAX_RESPONSE_ITEMS) with Link and
        X-Total-Count (ListPullRequests, routers/api/v1/repo/pull.go: SetLinkHeader,
        SetTotalCountHeader); no head filter. GitHub: `state`, `head` as `user:ref-name` and
        `base` filters, `per_page` up to 100, Link pages (docs.github.com/en/rest/pulls/
        pulls#list-pull-requests). A `head` without `user:` matches nothing here: the format the
        docs give is the one a client must send."""
        state = query.get("state", "open")
        issues = self._repos[(owner, repo)]
        chosen = [
            n
            for (o, r, n), pull in self._pulls.items()
            if (o, r) == (owner, repo)
            and n in issues
            and (state == "all" or issues[n].state == state)
            and (
                self.flavour == "gitea"
                or "head" not in query
                or query["head"] == f"{owner}:{pull.head}"
            )
            and (self.flavour == "gitea" or query.get("base", pull.base) == pull.base)
        ]
        chosen.sort(reverse=True)
        size_key = "limit" if self.flavour == "gitea" else "per_page"
        asked = int(query.get(size_key, "0") or 0)
        size = min(asked if asked > 0 else 30, self.max_page_size)
        page = max(int(query.get("page", "1") or 1), 1)
        last = max((len(chosen) + size - 1) // size, 1)
        shown = chosen[(page - 1) * size : page * size]
        heads, repo_json = self.git.branches(owner, repo), self._repo_json(owner, repo)
        items = [self._pull_json(owner, repo, n, heads, repo_json) for n in shown]
        headers: dict[str, str] = {}
        if page < last:
            path = f"{self._api_prefix()}/repos/{owner}/{repo}/pulls"
            after = f"{self.url}{path}?" + urlencode(query | {"page": str(page + 1)})
            headers["Link"] = f'<{after}>; rel="next"'
        if self.flavour == "gitea":
            headers["X-Total-Count"] = str(len(chosen))
        return Answer(200, headers, items)

    def _pull_json(
        self,
        owner: str,
        repo: str,
        number: int,
        heads: dict[str, str] | None = None,
        repo_json: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A pull request as each forge serves it (called under the lock). Gitea's
        `PullRequest` (modules/structs/pull.go; services/convert/pull.go ToAPIPullRequest):
        `url` is the web page too, `head.label` is the branch name, `head.ref` the branch when
        it exists and `refs/pull/N/head` when it is gone. GitHub's `pull-request`: `head.label`
        is `owner:branch`, `head.ref` the branch, `body` null when empty, `draft` a flag."""
        issue = self._repos[(owner, repo)][number]
        pull = self._pulls[(owner, repo, number)]
        web = self._pull_web_url(owner, repo, number)
        repo_json = repo_json or self._repo_json(owner, repo)
        heads = self.git.branches(owner, repo) if heads is None else heads
        head_sha, base_sha = heads.get(pull.head), heads.get(pull.base, "")
        user = {"id": 2 if pull.author == self.login else 3, "login": pull.author}
        common: dict[str, Any] = {
            "id": 5000 + number,
            "number": number,
            "user": user,
            "title": issue.title,
            "state": issue.state,
            "labels": [],
            "milestone": None,
            "assignee": None,
            "html_url": web,
            "diff_url": f"{web}.diff",
            "patch_url": f"{web}.patch",
            "merged_at": None,
            "merge_commit_sha": None,
            "draft": self._is_draft(issue.title, pull),
            "created_at": _time(issue.created_at),
            "updated_at": _time(issue.updated_at),
            "closed_at": _time(issue.closed_at),
        }
        if self.flavour == "gitea":
            branch = {"repo_id": repo_json["id"], "repo": repo_json}
            return common | {
                "url": web,
                "body": issue.body,
                "assignees": None,
                "is_locked": False,
                "comments": 0,
                "mergeable": True,
                "merged": False,
                "merged_by": None,
                "allow_maintainer_edit": False,
                "merge_base": base_sha,
                "due_date": None,
                "head": branch
                | {
                    "label": pull.head,
                    "ref": pull.head if head_sha else f"refs/pull/{number}/head",
                    "sha": head_sha or "",
                },
                "base": branch | {"label": pull.base, "ref": pull.base, "sha": base_sha},
            }
        api = f"{self.url}/repos/{owner}/{repo}"
        owner_json = {"login": owner, "id": 1}
        return common | {
            "url": f"{api}/pulls/{number}",
            "node_id": f"PR_{number}",
            "issue_url": f"{api}/issues/{number}",
            "body": issue.body or None,
            "locked": False,
            "active_lock_reason": None,
            "assignees": [],
            "requested_reviewers": [],
            "requested_teams": [],
            "author_association": "OWNER",
            "auto_merge": None,
            "merged": False,
            "mergeable": None,
            "head": {
                "label": f"{owner}:{pull.head}",
                "ref": pull.head,
                "sha": head_sha or "",
                "user": owner_json,
                "repo": repo_json,
            },
            "base": {
                "label": f"{owner}:{pull.base}",
                "ref": pull.base,
                "sha": base_sha,
                "user": owner_json,
                "repo": repo_json,
            },
        }

    # Git over HTTP (issue 33)
    def git_route(self, path: str) -> tuple[str, str, str] | None:
        """(owner, repo, service) of a smart-HTTP path `/{owner}/{repo}.git/{service}`, the
        clone URL's own paths; None for the API's."""
        parts = path.strip("/").split("/")
        if len(parts) < 3 or not parts[1].endswith(".git") or len(parts[1]) <= 4:
            return None
        service = "/".join(parts[2:])
        if service not in SERVICES:
            return None
        return parts[0], parts[1][: -len(".git")], service

    def _git_account(self, authorization: str | None) -> str | None:
        """The account whose token a git request carries, None when refused. Both forges take
        the token over HTTP Basic: Gitea as the password, or as the username with an empty
        password or "x-oauth-basic" (Basic.Verify, services/auth/basic.go); GitHub as the
        password under any username, `x-access-token` for an app's token (docs.github.com/en/
        apps/creating-github-apps/authenticating-with-a-github-app/authenticating-as-a-github-
        app-installation; a personal token "instead of your password", docs.github.com/en/
        get-started/git-basics/about-remote-repositories#cloning-with-https-urls)."""
        user, password = "", ""
        if authorization and authorization[:6].lower() == "basic ":
            try:
                decoded = base64.b64decode(authorization[6:].strip(), validate=True).decode()
            except (ValueError, UnicodeDecodeError):
                return None
            user, _, password = decoded.partition(":")
        if self.token is None:  # the stand-in takes any token, or none
            return user or MIRROR_LOGIN
        if password == self.token:
            return MIRROR_LOGIN
        if self.flavour == "gitea" and user == self.token and password in ("", "x-oauth-basic"):
            return MIRROR_LOGIN
        return None

    def git_answer(
        self,
        owner: str,
        repo: str,
        service: str,
        method: str,
        query: str,
        headers: dict[str, str],
        body: bytes,
    ) -> CgiAnswer:
        """One smart-HTTP request: the credentials checked, then git-http-backend."""
        account = self._git_account(headers.get("authorization"))
        with self._lock:
            asked = {k: v[-1] for k, v in parse_qs(query).items()}
            path = f"/{owner}/{repo}.git/{service}"
            self.git_requests.append(Request(method, path, asked, account is not None))
            known = (owner, repo) in self._repos
        if account is None:
            # A fetch or push without the right credentials: 401 and a Basic challenge, so git
            # asks its credential helper or GIT_ASKPASS. Gitea: `Basic realm="Gitea"` (httpBase,
            # routers/web/repo/githttp.go); GitHub: `Basic realm="GitHub"` (what GitHub
            # Desktop's credential helper tells a GitHub host by, desktop/desktop getEndpointKind).
            realm = "Gitea" if self.flavour == "gitea" else "GitHub"
            return CgiAnswer(
                401,
                {"WWW-Authenticate": f'Basic realm="{realm}"', "Content-Type": "text/plain"},
                b"Unauthorized\n",
            )
        refused = self._git_token_refusal(owner, repo, service, query)
        if refused is not None:
            return refused
        if not known:
            return CgiAnswer(404, {"Content-Type": "text/plain"}, b"Repository not found\n")
        with self._lock:  # (reentrant) two first requests at once initialise it once
            if not self.git.exists(owner, repo):
                # A repository made with its issues and no git yet: initialised with a README,
                # as the forges' "Initialize repository" (Gitea's and GitHub's auto_init) does.
                self.seed_git(owner, repo, {"README.md": f"# {repo}\n"}, message="Initial commit")
        return self.git.serve(
            owner,
            repo,
            service,
            method=method,
            query=query,
            content_type=headers.get("content-type"),
            body=body,
            remote_user=account,
            content_encoding=headers.get("content-encoding"),
            git_protocol=headers.get("git-protocol"),
        )

    def _listing(
        self, owner: str, repo: str, issues: dict[int, StoredIssue], query: dict[str, str]
    ) -> Answer:
        state = query.get("state", "open")  # both forges list open issues unless told
        chosen = [i for i in issues.values() if state == "all" or i.state == state]
        if self.flavour == "gitea" and query.get("type") == "issues":
            chosen = [i for i in chosen if not i.pull_request]
        creator = query.get("created_by" if self.flavour == "gitea" else "creator")
        if creator:  # Gitea: ListIssues `created_by`; GitHub: `creator`
            chosen = [i for i in chosen if i.author == creator]
        if "since" in query:
            since = datetime.fromisoformat(query["since"])
            # Gitea compares whole unix seconds, inclusively (updated_unix >= since); GitHub
            # lists issues updated at or after `since`.
            chosen = [i for i in chosen if i.updated_at >= since.replace(microsecond=0)]
        if self.flavour == "github" and query.get("sort") == "updated":
            chosen.sort(
                key=lambda i: (i.updated_at, i.number), reverse=query.get("direction") != "asc"
            )
        else:
            chosen.sort(key=lambda i: i.number, reverse=True)  # newest first, both forges' default
        size_key = "limit" if self.flavour == "gitea" else "per_page"
        asked = int(query.get(size_key, "0") or 0)
        default = 30  # Gitea's DEFAULT_PAGING_NUM, GitHub's default per_page
        size = min(asked if asked > 0 else default, self.max_page_size)  # the clamp
        page = max(int(query.get("page", "1") or 1), 1)
        last = max((len(chosen) + size - 1) // size, 1)
        items = [self._issue_json(owner, repo, i) for i in chosen[(page - 1) * size : page * size]]
        headers = {"Link": self._link(owner, repo, query, page, last)} if last > 1 else {}
        if self.flavour == "gitea":
            headers["X-Total-Count"] = str(len(chosen))  # Gitea counts every matching item
        return Answer(200, headers, items)

    def _link(self, owner: str, repo: str, query: dict[str, str], page: int, last: int) -> str:
        def to(number: int) -> str:
            # Gitea writes its Link headers from ROOT_URL, not from the address it was asked at:
            # genAPILinks (services/context/api.go) is setting.AppURL + the request URI.
            return f"{self.root_url or self.url}{self._issues_path(owner, repo)}?" + urlencode(
                query | {"page": str(number)}
            )

        rels = []
        if page < last:
            rels += [f'<{to(page + 1)}>; rel="next"', f'<{to(last)}>; rel="last"']
        if page > 1:
            rels += [f'<{to(1)}>; rel="first"', f'<{to(page - 1)}>; rel="prev"']
        return ", ".join(rels)

    def _issue_json(self, owner: str, repo: str, issue: StoredIssue) -> dict[str, Any]:
        web = f"{self.url}/{owner}/{repo}/issues/{issue.number}"
        if issue.pull_request:
            web = self._pull_web_url(owner, repo, issue.number)
        api = f"{self.url}{self._issues_path(owner, repo)}/{issue.number}"
        user = {"id": 2 if issue.author == self.login else 1, "login": issue.author}
        ids = {name: label.id for name, label in self._org_labels.get(owner, {}).items()}
        ids |= {name: label.id for name, label in self._labels.get((owner, repo), {}).items()}
        common: dict[str, Any] = {
            "id": 1000 + issue.number,
            "url": api,
            "html_url": web,
            "number": issue.number,
            "user": user,
            "title": issue.title,
            "body": issue.body,
            "state": issue.state,
            "comments": 0,
            "created_at": _time(issue.created_at),
            "updated_at": _time(issue.updated_at),
            "closed_at": _time(issue.closed_at),
            "assignee": None,
            "milestone": None,
        }
        if self.flavour == "gitea":
            labels = [
                {
                    "id": ids.get(name, n),
                    "name": name,
                    "color": "00aabb",
                    "description": "",
                    "url": "",
                }
                for n, name in enumerate(issue.labels, 1)
            ]
            pr = {"merged": False, "merged_at": None} if issue.pull_request else None
            return common | {
                "labels": labels,
                "assignees": None,
                "is_locked": False,
                "ref": "",
                "original_author": "",
                "original_author_id": 0,
                "due_date": None,
                "pull_request": pr,
                "repository": {
                    "id": 1,
                    "name": repo,
                    "owner": owner,
                    "full_name": f"{owner}/{repo}",
                },
            }
        labels = [
            {
                "id": ids.get(name, n),
                "node_id": f"L{n}",
                "url": "",
                "name": name,
                "color": "00aabb",
                "default": False,
                "description": None,
            }
            for n, name in enumerate(issue.labels, 1)
        ]
        shaped = common | {
            "node_id": f"I_{issue.number}",
            "repository_url": f"{self.url}/repos/{owner}/{repo}",
            "labels_url": f"{api}/labels{{/name}}",
            "comments_url": f"{api}/comments",
            "events_url": f"{api}/events",
            "labels": labels,
            "assignees": [],
            "locked": False,
            "active_lock_reason": None,
            "author_association": "OWNER",
            "state_reason": "completed" if issue.state == "closed" else None,
        }
        if issue.pull_request:  # GitHub lists pull requests among issues, marked by this key
            shaped["pull_request"] = {
                "url": api,
                "html_url": web,
                "diff_url": web + ".diff",
                "patch_url": web + ".patch",
                "merged_at": None,
            }
        return shaped | self._relation_summaries(owner, repo, issue.number)

    def _error(self, status: int, message: str) -> Answer:
        if self.flavour == "gitea":
            return Answer(status, {}, {"message": message, "url": f"{self.url}/api/swagger"})
        docs = "https://docs.github.com/rest"
        headers = self._rate_headers() if status == 403 else {}
        return Answer(status, headers, {"message": message, "documentation_url": docs})

    def _status_fault(self, fault: Fault) -> Answer:
        if fault.name == "500":
            return self._error(500, "Internal Server Error")
        if fault.name == "429-seconds":
            answer = self._error(429, "Too Many Requests")
            return replace(answer, headers={"Retry-After": str(int(fault.seconds))})
        if fault.name == "429-date":
            when = datetime.now(UTC) + timedelta(seconds=fault.seconds)
            answer = self._error(429, "Too Many Requests")
            return replace(answer, headers={"Retry-After": format_datetime(when, usegmt=True)})
        if fault.name == "401":
            return self._error(401, "Bad credentials")
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
        if self.flavour != "github":
            return answer
        with self._lock:
            self.rate_remaining = max(self.rate_remaining - 1, 0)
        return replace(answer, headers=self._rate_headers() | answer.headers)

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
        answer = self._error(403, "API rate limit exceeded")
        return replace(answer, headers=headers)

    def _rate_headers(self) -> dict[str, str]:
        # GitHub sends these on every response; x-ratelimit-reset is in epoch seconds.
        return {
            "x-ratelimit-limit": str(self.rate_limit),
            "x-ratelimit-remaining": str(self.rate_remaining),
            "x-ratelimit-reset": str(self.rate_reset),
            "x-ratelimit-used": str(self.rate_limit - self.rate_remaining),
            "x-ratelimit-resource": "core",
        }


GITEA_SCOPE_CATEGORIES = (
    "activitypub",
    "admin",
    "issue",
    "misc",
    "notification",
    "organization",
    "package",
    "repository",
    "user",
)
"""Gitea's token scope categories (models/auth/access_token_scope.go): a scope is `read:` or
`write:` and one of them (write implies read), or `all`."""
GITHUB_PERMISSIONS = ("checks", "contents", "issues", "metadata", "pull_requests", "statuses")
"""The fine-grained repository permissions the stand-in's routes need, each `name:read` or
`name:write` (write implies read). `metadata:read` every fine-grained token has (docs.github.com/
en/rest/authentication/permissions-required-for-fine-grained-personal-access-tokens)."""


def _checked_scopes(
    flavour: Flavour, scopes: Iterable[str] | None, installation: bool
) -> frozenset[str] | None:
    """The token's scopes as given, each checked against the flavour's names."""
    if installation and flavour != "github":
        raise ValueError("installation=True is a GitHub App's token: the flavour must be github")
    if scopes is None:
        return None
    given = frozenset(scopes)
    if flavour == "gitea":
        known = {"all"} | {f"{lv}:{c}" for lv in ("read", "write") for c in GITEA_SCOPE_CATEGORIES}
    else:
        known = {f"{p}:{lv}" for lv in ("read", "write") for p in GITHUB_PERMISSIONS}
        given |= {"metadata:read"}
    unknown = sorted(given - known)
    if unknown:
        raise ValueError(f"unknown {flavour} token scope(s) {unknown}: one of {sorted(known)}")
    return given


def _granted(scopes: frozenset[str], name: str, level: str) -> bool:
    """Whether the scopes allow `level` (read or write) on `name`, a Gitea category or a GitHub
    permission: write implies read; Gitea's `all` allows everything."""
    if "all" in scopes:
        return True
    wanted = ("write",) if level == "write" else ("read", "write")
    return any(f"{lv}:{name}" in scopes or f"{name}:{lv}" in scopes for lv in wanted)


def _gitea_scope_category(parts: list[str]) -> str | None:
    """The scope category Gitea's router asks of an API path (the parts after /api/v1), None
    for one that needs none (routers/api/v1/api.go, each group's tokenRequiresScopes)."""
    if parts[0] in ("user", "users"):
        return "user"
    if parts[0] in ("orgs", "teams"):
        return "organization"
    if parts[0] == "repositories":
        return "repository"
    if parts[0] != "repos" or len(parts) < 3:
        return None
    if parts[1] == "issues" or (len(parts) > 3 and parts[3] in ("issues", "labels", "milestones")):
        return "issue"
    return "repository"


def _github_permission(parts: list[str]) -> str | None:
    """The fine-grained repository permission a GitHub API path needs, None for one outside a
    repository (docs.github.com/en/rest/authentication/permissions-required-for-fine-grained-
    personal-access-tokens: issues, labels and milestones `issues`; pulls and their reviews
    `pull_requests`; commit statuses `statuses`; check runs `checks`; git, contents, branches
    and commits `contents`; the repository itself and its collaborators `metadata`)."""
    if parts[0] == "repositories" and len(parts) >= 2:
        rest = parts[2:]
    elif parts[0] == "repos" and len(parts) >= 3:
        rest = parts[3:]
    else:
        return None
    first = rest[0] if rest else ""
    if first in ("issues", "labels", "milestones"):
        return "issues"
    if first == "pulls":
        return "pull_requests"
    if first == "statuses" or (first == "commits" and rest[2:3] in (["status"], ["statuses"])):
        return "statuses"
    if first in ("check-runs", "check-suites") or rest[2:3] in (["check-runs"], ["check-suites"]):
        return "checks"
    if first in ("contents", "git", "branches", "commits", "compare"):
        return "contents"
    return "metadata"


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


def _is_color(color: str, flavour: Flavour) -> bool:
    """Gitea up to 1.20 wants "#rrggbb" (binding Size(7)); GitHub wants "rrggbb" without "#"."""
    if flavour == "gitea":
        if not color.startswith("#"):
            return False
        color = color[1:]
    return len(color) == 6 and all(c in "0123456789abcdefABCDEF" for c in color)


def _handler(forge: StandinForge) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in separate writes: with Nagle's algorithm the body waits for the
        # client's delayed ACK (about 40 ms a request on Linux). Real forges answer at once.
        disable_nagle_algorithm = True

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            if self._git(parts.path, parts.query):
                return
            query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
            answer = forge.answer(parts.path, query, self.headers.get("Authorization"))
            body = answer.encoded()
            etag = None
            if forge.flavour == "github" and answer.status == 200:
                etag = 'W/"' + hashlib.sha256(body).hexdigest()[:32] + '"'
                if self.headers.get("If-None-Match") == etag:
                    # A conditional request that matches: 304, no body, and (GitHub) no rate
                    # limit spent.
                    with forge._lock:
                        forge.rate_remaining += 1
                    self._send(304, answer.headers | {"ETag": etag}, b"", None)
                    return
            headers = answer.headers | ({"ETag": etag} if etag else {})
            self._send(answer.status, headers, body, answer.content_type, answer.drip)

        def _write(self) -> None:
            parts = urlsplit(self.path)
            if self._git(parts.path, parts.query):
                return
            query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
            raw = self._body()
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                self._send(400, {}, b'{"message": "invalid JSON"}', "application/json")
                return
            answer = forge.answer(
                parts.path, query, self.headers.get("Authorization"), self.command, body
            )
            if answer.drop:
                self.close_connection = True
                return
            content_type = None if answer.status == 204 else answer.content_type
            self._send(answer.status, answer.headers, answer.encoded(), content_type)

        do_POST = do_PUT = do_PATCH = do_DELETE = _write

        def _git(self, path: str, query: str) -> bool:
            """Serves a smart-HTTP git request (True), or leaves the path to the API (False)."""
            route = forge.git_route(path)
            if route is None:
                return False
            headers = {name.lower(): value for name, value in self.headers.items()}
            answer = forge.git_answer(*route, self.command, query, headers, self._body())
            self._send(answer.status, answer.headers, answer.body, None)
            return True

        def _body(self) -> bytes:
            """The request's body, by Content-Length or chunked (git streams a large push in
            chunks: Transfer-Encoding: chunked past its http.postBuffer)."""
            if "chunked" not in self.headers.get("Transfer-Encoding", "").lower():
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else b""
            chunks = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return bytes(chunks)
                chunks += self.rfile.read(size)
                self.rfile.readline()

        def _send(
            self,
            status: int,
            headers: dict[str, str],
            body: bytes,
            content_type: str | None,
            drip: float = 0.0,
        ) -> None:
            try:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                if content_type is not None:
                    self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if drip:
                    for byte in range(len(body)):
                        self.wfile.write(body[byte : byte + 1])
                        self.wfile.flush()
                        time.sleep(drip)
                else:
                    self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet: the tests read forge.requests

    return Handler


def issues_of(forge: StandinForge, owner: str, repo: str) -> Iterator[StoredIssue]:
    """The stored issues of a repository (for tests and the demo to inspect)."""
    with forge._lock:
        yield from list(forge._repos.get((owner, repo), {}).values())


def seed(forge: StandinForge, plan: dict[str, Any]) -> int:
    """Create the repositories, labels and issues of a seed (the module's docstring shows its
    form); returns how many issues it created."""
    created = 0
    for entry in plan.get("repos", []):
        owner, repo = entry["owner"], entry["repo"]
        forge.create_repo(owner, repo)
        if entry.get("files"):
            forge.seed_git(owner, repo, dict(entry["files"]))
        with forge._lock:
            for name in entry.get("labels", []):
                forge._repo_label(owner, repo, name)
        for item in entry.get("issues", []):
            number = forge.create_issue(owner, repo, item["title"], item.get("labels", []))
            if item.get("state") == "closed":
                forge.close_issue(owner, repo, number)
            created += 1
    return created


def main(argv: list[str] | None = None) -> int:
    """`python -m dev.standin_forge --port N [--flavour gitea|github] [--token T]
    [--seed FILE]`: serve until SIGINT/SIGTERM."""
    import argparse
    import signal
    import sys

    parser = argparse.ArgumentParser(
        prog="python -m dev.standin_forge", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--port", type=int, default=0, help="where to listen (0: any free port)")
    parser.add_argument("--flavour", choices=["gitea", "github"], default="gitea", help="its API")
    parser.add_argument("--token", help="the only token it accepts (default: any, or none)")
    parser.add_argument("--seed", help="a JSON file of repositories, labels and issues to create")
    args = parser.parse_args(argv)
    forge = StandinForge(args.flavour, token=args.token, port=args.port)
    if args.seed:
        with open(args.seed) as file:
            issues = seed(forge, json.load(file))
    else:
        issues = 0
    stopped = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stopped.set())
    with forge:
        print(f"stand-in {args.flavour} at {forge.url} with {issues} issue(s)", flush=True)
        stopped.wait()
    print("stopped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
