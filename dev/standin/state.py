"""The stand-in forge's state: the issues, labels, comments, events, pull requests and
repositories it holds in memory (under one lock), what tests set and read of them, the requests
it saw, its forge's API (`api`: dev.standin.gitea or dev.standin.github), and the one place a
request's token is accepted (`token_accepted`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import timedelta
from http.server import ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Literal

from dev.standin.git_backend import StandinGit
from dev.standin.gitea import GiteaApi
from dev.standin.github import GitHubApi
from dev.standin.records import (
    APP_LOGIN,
    MIRROR_LOGIN,
    PERSON,
    Comment,
    Event,
    Fault,
    Flavour,
    PullView,
    RepoLabel,
    Request,
    StoredIssue,
    StoredPull,
    _now,
)

if TYPE_CHECKING:
    from dev.standin.apps import StandinApp


class ForgeState:
    """The forge's state in memory, and the public methods tests and the demo use to set the scene
    and read what happened."""

    _server: ThreadingHTTPServer
    """The HTTP server on 127.0.0.1, bound by StandinForge (dev.standin.forge)."""
    app: StandinApp | None = None
    """A GitHub App a test attached (dev.standin.apps): it answers its routes and its tokens."""

    def __init__(
        self,
        flavour: Flavour,
        *,
        token: str | None = None,
        max_page_size: int | None = None,
        rate_limit: int = 5000,
        gitea_label_refs: Literal["ids", "both"] = "ids",
        gitea_label_totals: bool = True,
        root_url: str | None = None,
        write_limit: tuple[int, float] | None = None,
        scopes: Iterable[str] | None = None,
        installation: bool = False,
    ) -> None:
        self.flavour: Flavour = flavour
        self.api: GiteaApi | GitHubApi = GiteaApi(self) if flavour == "gitea" else GitHubApi(self)
        """The forge's own API: its paths, shapes, paging, errors and quirks, each beside its
        citation (dev.standin.gitea for Gitea and Forgejo, dev.standin.github for GitHub)."""
        self.scopes = self.api.checked_scopes(scopes, installation)
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
        self.max_page_size = max_page_size or self.api.max_page_size
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
        self.git = StandinGit(flavour, self.api.protected_refusal)
        """The bare repositories behind the clone URLs (dev.standin.git_backend)."""
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
        self._init_poller_quirks(root_url)

    # Git and pull requests (issue 33): the public side, for tests and the demo.
    def clone_url(self, owner: str, repo: str) -> str:
        """Where the stand-in serves the repository's git: what `tireless.forge_clone_url` gives
        for this forge's base URL, `{url}/{owner}/{repo}.git` in both flavours (Gitea's web root
        is its base URL; a GitHub API root other than api.github.com or HOST/api/v3 is taken as
        its own web root, which the stand-in's is)."""
        return f"{self.url}/{owner}/{repo}.git"

    def _new_id(self) -> int:
        """The next id (called under the lock): ids never repeat, across kinds."""
        self._next_id += 1
        return self._next_id - 1

    def _rate_headers(self) -> dict[str, str]:
        # GitHub sends these on every response; x-ratelimit-reset is in epoch seconds. The
        # stand-in's rate-limit faults send them on either forge.
        return {
            "x-ratelimit-limit": str(self.rate_limit),
            "x-ratelimit-remaining": str(self.rate_remaining),
            "x-ratelimit-reset": str(self.rate_reset),
            "x-ratelimit-used": str(self.rate_limit - self.rate_remaining),
            "x-ratelimit-resource": "core",
        }

    def _new_pull(self, owner: str, repo: str, title: str, body: str, pull: StoredPull) -> int:
        """Stores a pull request under the next issue number (called under the lock)."""
        issues = self._repos.setdefault((owner, repo), {})
        number = max(issues, default=0) + 1
        issues[number] = StoredIssue(number, title, [], pull_request=True, body=body)
        self._pulls[(owner, repo, number)] = pull
        return number

    # Life
    @property
    def url(self) -> str:
        """The base URL to register: Gitea's web root (the API is under /api/v1), GitHub's API root."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

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

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> bool:
        """Whether `count` requests have arrived (waiting up to `timeout` seconds)."""
        with self._lock:
            return self._lock.wait_for(lambda: len(self.requests) >= count, timeout)

    def listing_requests(self, owner: str, repo: str) -> list[Request]:
        path = self._issues_path(owner, repo)
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def _issues_path(self, owner: str, repo: str) -> str:
        return f"{self.api.prefix}/repos/{owner}/{repo}/issues"

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
        if not self.api.locks_archived:
            raise ValueError(f"archive_repo is Gitea's 423, not of flavour {self.flavour!r}")
        with self._lock:
            if (owner, repo) not in self._repos:
                raise ValueError(f"no repository {owner}/{repo} to archive")
            if archived:
                self._archived.add((owner, repo))
            else:
                self._archived.discard((owner, repo))

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
                    self.api.is_draft(issues[n].title, pull),
                    pull.author,
                )
                for (o, r, n), pull in sorted(self._pulls.items())
                if (o, r) == (owner, repo) and n in issues
            ]

    def pull_creates(self, owner: str, repo: str) -> list[Request]:
        """The POST .../pulls requests received for the repository (answered or not)."""
        path = f"{self.api.prefix}/repos/{owner}/{repo}/pulls"
        return [r for r in self.writes() if r.method == "POST" and r.path == path]

    def close_pull(self, owner: str, repo: str, number: int) -> None:
        self.close_issue(owner, repo, number)

    def merge_pull(self, owner: str, repo: str, number: int) -> None:
        """Someone merged the pull request: both forges close it then, `closed_at` the same time
        as `merged_at` (GitHub's pull-request schema; Gitea's services/pull/merge.go closes the
        issue as it merges)."""
        at = _now()
        self._change(owner, repo, number, state="closed", closed_at=at, merged_at=at)

    def _record(self, request: Request) -> threading.Event | None:
        with self._lock:
            self.requests.append(request)
            self._lock.notify_all()
            return self._gate

    # Authentication: the one place a request's token is accepted, for the API and for git.
    def token_accepted(self, token: str) -> bool:
        """Whether `token` is one the forge takes: any when it was made without one, else that
        one. The API (`_authorized`) and git (`_git_account`, dev.standin.git_http) both ask
        here, after each forge's own way of carrying the token is read."""
        return self.token is None or token == self.token

    def _authorized(self, header: str | None) -> bool:
        """Whether the API request's Authorization header carries an accepted token. Gitea:
        `Authorization: token T` (also `Bearer`); GitHub: `Bearer T` (also `token`)."""
        if self.app is not None:
            return self.app.accepts(header)
        if self.token is None:
            return True
        for scheme in ("token ", "Bearer "):
            if header is not None and header.startswith(scheme):
                return self.token_accepted(header[len(scheme) :])
        return False
