"""The stand-in forge's side of the conversation on a pull request (issue 34): reviews and their
inline comments, a repository's comment listing, collaborators' permissions, commit statuses and
GitHub's check runs, reactions on comments, and the edit of a comment (PATCH
.../issues/comments/{id}: the checklist of a plan's outcome comment, issue 35). StandinForge (dev.standin) takes
this in as a mixin and hands it each API request before its own routes; each quirk is cited where
it is served, with the source the client that copes with it cites (tireless/forge/gitea.py,
github.py). The stand-in's faults (`fault`) do not reach these routes.

    forge.submit_review("acme", "widgets", 2, "carol", "changes_requested", "Please rename it",
                        comments=[("src/app.py", 12, "this one")])
    forge.set_permission("acme", "widgets", "carol", "maintain")
    forge.set_status("acme", "widgets", sha, "ci/tests", "failure", "3 tests failed")
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import unquote, urlencode

from dev.standin.git_backend import StandinGit

if TYPE_CHECKING:
    from dev.standin.state import Flavour

ACCOUNT = "tireless-bot"
"""The token's account, StandinForge's MIRROR_LOGIN (the one who asks and reacts here)."""
PERSON = "alice"
"""StandinForge's PERSON, a user the stand-in knows."""
REVIEW_STATES = (
    "changes_requested",
    "approved",
    "commented",
    "pending",
    "dismissed",
    "review_requested",
)
"""The states submit_review takes (the client's normalised names, and a review requested)."""
GITEA_REVIEW_STATES = {
    "changes_requested": "REQUEST_CHANGES",
    "approved": "APPROVED",
    "commented": "COMMENT",
    "pending": "PENDING",
    "dismissed": "REQUEST_CHANGES",  # Gitea keeps the state and sets `dismissed: true`
    "review_requested": "REQUEST_REVIEW",
}
"""modules/structs/pull_review.go ReviewStateType; services/convert/pull_review.go ToPullReview."""
GITHUB_REVIEW_STATES = {
    "changes_requested": "CHANGES_REQUESTED",
    "approved": "APPROVED",
    "commented": "COMMENTED",
    "pending": "PENDING",
    "dismissed": "DISMISSED",
}
"""docs.github.com/en/rest/pulls/reviews; a requested review is no review there (the pull
request's `requested_reviewers` say it), so it is not listed."""
REACTIONS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")
"""GitHub's reactions (docs.github.com/en/rest/reactions), Gitea's `[ui] REACTIONS` default
(modules/setting/ui.go)."""
STATUS_STATES = {
    "gitea": ("pending", "success", "error", "failure", "warning", "skipped"),
    "github": ("pending", "success", "error", "failure"),
}
"""A commit status's states: Gitea's modules/structs/commit_status.go (skipped in newer versions),
GitHub's docs.github.com/en/rest/commits/statuses#create-a-commit-status."""
GITEA_STATUS_RANK = ("error", "failure", "warning", "pending", "success", "skipped")
"""The combined state is the worst of these (modules/structs/commit_status.go priorities)."""
CHECK_RUN_STATUSES = ("queued", "in_progress", "completed", "waiting", "requested", "pending")
CHECK_RUN_CONCLUSIONS = (
    "success",
    "failure",
    "neutral",
    "cancelled",
    "skipped",
    "timed_out",
    "action_required",
    "stale",
    "startup_failure",
)
"""docs.github.com/en/rest/checks/runs#create-a-check-run."""
PUSH_ROLES = ("admin", "owner", "maintain", "write")
GITHUB_LEGACY_PERMISSION = {"maintain": "write", "triage": "read", "owner": "admin"}
"""GitHub's `permission` is a base role: "the maintain role is mapped to write and the triage role
is mapped to read" (docs.github.com/en/rest/collaborators/collaborators#get-repository-
permissions-for-a-user); `role_name` names the role itself."""


class Reply(Protocol):
    """What the stand-in answers (its Answer): a status, headers, a JSON body."""

    @property
    def status(self) -> int: ...
    @property
    def headers(self) -> dict[str, str]: ...
    @property
    def body(self) -> Any: ...


@dataclass(frozen=True)
class Said:
    """An answer of these routes, which StandinForge turns into its own."""

    status: int
    headers: dict[str, str]
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


Handler = Callable[[str, str, str, list[str], dict[str, str], Any], Reply]
"""A route's method: (method, owner, repo, the path after the repository, query, body)."""


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)  # both forges show whole seconds


def _time(when: datetime | None) -> str | None:
    return None if when is None else when.strftime("%Y-%m-%dT%H:%M:%SZ")


class ConversationRoutes:
    """The conversation's state and routes, a mixin of StandinForge (which provides the names
    declared under TYPE_CHECKING)."""

    if TYPE_CHECKING:
        flavour: Flavour
        token: str | None
        git: StandinGit
        max_page_size: int
        _lock: threading.Condition
        _next_id: int
        _repos: dict[tuple[str, str], dict[int, Any]]
        _comments: dict[tuple[str, str, int], list[Any]]
        _pulls: dict[tuple[str, str, int], Any]

        @property
        def url(self) -> str: ...
        def _error(self, status: int, message: str) -> Reply: ...
        def _not_found(self) -> Reply: ...
        def _github_too_long(self, resource: str, text: object) -> Reply | None: ...
        def _api_prefix(self) -> str: ...
        def _pull_web_url(self, owner: str, repo: str, number: int) -> str: ...
        def _repo_json(self, owner: str, repo: str) -> dict[str, Any]: ...
        def _comment_json(
            self, owner: str, repo: str, number: int, comment: Any
        ) -> dict[str, Any]: ...
        def _change(
            self, owner: str, repo: str, number: int, actor: str = ..., **changes: Any
        ) -> None: ...

    def _init_conversation(self) -> None:
        self._reviews: dict[tuple[str, str, int], list[StoredReview]] = {}
        self._permissions: dict[tuple[str, str], dict[str, str]] = {}
        self._statuses: dict[tuple[str, str, str], list[StoredStatus]] = {}
        self._check_runs: dict[tuple[str, str, str], list[StoredCheckRun]] = {}
        self._reactions: dict[tuple[str, str, int], list[tuple[str, str]]] = {}

    def _new_id(self) -> int:
        """The next id (called under the lock): ids never repeat, across kinds, as the
        stand-in's others."""
        self._next_id += 1
        return self._next_id - 1

    # What tests set and read
    def submit_review(
        self,
        owner: str,
        repo: str,
        pull: int,
        author: str,
        state: str,
        body: str = "",
        comments: Iterable[tuple[str, int, str]] = (),
    ) -> int:
        """A review of the pull request by `author`, in one of REVIEW_STATES, with its inline
        comments (path, line, text), on the pull request's head as it is now; its id. It moves
        the pull request's updated_at on, as a review does on both forges."""
        if state not in REVIEW_STATES:
            raise ValueError(f"unknown review state {state!r}: one of {', '.join(REVIEW_STATES)}")
        with self._lock:
            stored = self._pulls[(owner, repo, pull)]
            head = self.git.branch_head(owner, repo, stored.head) or ""
            ident = self._new_id()
            inline = [StoredReviewComment(self._new_id(), p, n, t) for p, n, t in comments]
            made = StoredReview(ident, author, state, body, _now(), head, inline)
            self._reviews.setdefault((owner, repo, pull), []).append(made)
        self._change(owner, repo, pull, author)
        return ident

    def edit_comment(self, owner: str, repo: str, comment_id: int, body: str) -> None:
        """A person edits a comment: its body, and its updated_at moved on (at least a second)."""
        with self._lock:
            found = self._comment(owner, repo, comment_id)
            if found is None:
                raise KeyError(f"no comment {comment_id} in {owner}/{repo}")
            _, comment = found
            before = comment.updated_at or comment.created_at
            comment.body = body
            comment.updated_at = max(_now(), before + timedelta(seconds=1))

    def set_permission(self, owner: str, repo: str, login: str, permission: str) -> None:
        """`login`'s role on the repository in the forge's words (Gitea: read, write, admin;
        GitHub also maintain, triage); "none" takes it away. The token's account, `tireless-bot`,
        is an admin unless set otherwise."""
        with self._lock:
            roles = self._permissions.setdefault((owner, repo), {})
            if permission == "none":
                roles.pop(login.lower(), None)
            else:
                roles[login.lower()] = permission

    def set_status(
        self,
        owner: str,
        repo: str,
        sha: str,
        context: str,
        state: str,
        description: str = "",
        target_url: str | None = None,
    ) -> int:
        """A commit status, as a CI posts it (the latest of a context is the one shown); its id."""
        if state not in STATUS_STATES[self.flavour]:
            raise ValueError(f"{self.flavour} has no commit status state {state!r}")
        with self._lock:
            made = StoredStatus(
                self._new_id(), context, state, description, target_url, _now(), "ci"
            )
            self._statuses.setdefault((owner, repo, sha), []).append(made)
            return made.id

    def set_check_run(
        self,
        owner: str,
        repo: str,
        sha: str,
        name: str,
        status: str = "completed",
        conclusion: str | None = None,
        title: str | None = None,
        summary: str | None = None,
        details_url: str | None = None,
    ) -> int:
        """A GitHub check run on the commit (a run of the same name again is a re-run: the
        latest is the one listed); its id."""
        if self.flavour != "github":
            raise ValueError("check runs are GitHub's; Gitea and Forgejo have commit statuses")
        if status not in CHECK_RUN_STATUSES or (
            conclusion is not None and conclusion not in CHECK_RUN_CONCLUSIONS
        ):
            raise ValueError(f"unknown check run status {status!r} or conclusion {conclusion!r}")
        with self._lock:
            done = _now() if status == "completed" else None
            made = StoredCheckRun(
                self._new_id(), name, status, conclusion, title, summary, details_url, _now(), done
            )
            self._check_runs.setdefault((owner, repo, sha), []).append(made)
            return made.id

    def reactions_of(self, owner: str, repo: str, comment_id: int) -> list[tuple[str, str]]:
        """(login, content) of each reaction on the comment, oldest first."""
        with self._lock:
            return list(self._reactions.get((owner, repo, comment_id), []))

    def _comment(self, owner: str, repo: str, comment_id: int) -> tuple[int, Any] | None:
        """(issue number, comment) of a comment of the repository (called under the lock)."""
        for (o, r, number), comments in self._comments.items():
            if (o, r) == (owner, repo):
                for comment in comments:
                    if comment.id == comment_id:
                        return number, comment
        return None

    # Serving
    def _conversation_answer(
        self, method: str, path: str, query: dict[str, str], body: Any, authorized: bool
    ) -> Reply | None:
        """The answer to a request on one of these routes; None for any other path."""
        prefix = self._api_prefix()
        if not path.startswith(f"{prefix}/repos/"):
            return None
        parts = [unquote(part) for part in path[len(prefix) :].strip("/").split("/")]
        if len(parts) < 4:
            return None
        owner, repo, rest = parts[1], parts[2], parts[3:]
        handler = self._handler_of(rest)
        if handler is None:
            return None
        if not authorized:
            return self._error(
                401, "token is required" if self.flavour == "gitea" else "Bad credentials"
            )
        with self._lock:
            if (owner, repo) not in self._repos:
                return self._error(404, "Not Found")
            return handler(method, owner, repo, rest, query, body)

    def _handler_of(self, rest: list[str]) -> Handler | None:
        """The method serving `rest` (the path after /repos/{o}/{r}/), None when not ours."""
        shape = tuple("#" if part.isdigit() else part for part in rest)
        if shape == ("issues", "comments"):
            return self._repo_comments
        if shape == ("issues", "comments", "#", "reactions"):
            return self._reactions_answer
        if shape == ("issues", "comments", "#"):
            return self._comment_answer
        if shape == ("pulls", "#", "reviews"):
            return self._reviews_answer
        if shape == ("pulls", "#", "reviews", "#", "comments"):
            return self._review_comments_answer
        if len(rest) == 3 and rest[0] == "collaborators" and rest[2] == "permission":
            return self._permission_answer
        if len(rest) == 3 and rest[0] == "commits" and rest[2] in ("status", "check-runs"):
            return self._checks_answer
        if len(rest) == 2 and rest[0] == "statuses":
            return self._status_create
        return None

    def _page(
        self, items: list[Any], query: dict[str, str], path: str, *, counted: bool = True
    ) -> tuple[list[Any], dict[str, str]]:
        """One page of a listing and its headers. Gitea: `limit` clamped to MAX_RESPONSE_ITEMS,
        X-Total-Count and no Link for the lists served here (SetTotalCountHeader only:
        ListRepoIssueComments, ListPullReviews, GetCombinedCommitStatusByRef); `counted` False
        for one that has neither. GitHub: `per_page` (30 unless told, at most 100) and Link."""
        size_key = "limit" if self.flavour == "gitea" else "per_page"
        asked = int(query.get(size_key, "0") or 0)
        size = min(asked if asked > 0 else 30, self.max_page_size)
        page = max(int(query.get("page", "1") or 1), 1)
        chosen = items[(page - 1) * size : page * size]
        headers: dict[str, str] = {}
        if self.flavour == "gitea":
            if counted:
                headers["X-Total-Count"] = str(len(items))
        elif page * size < len(items):
            after = urlencode(query | {"page": str(page + 1)})
            headers["Link"] = f'<{self.url}{path}?{after}>; rel="next"'
        return chosen, headers

    def _user_json(self, login: str) -> dict[str, Any]:
        user: dict[str, Any] = {"id": 10 + sum(login.encode()), "login": login}
        if self.flavour == "gitea":
            user["username"] = login
        else:
            user["type"] = "User"
        return user

    def _repo_comments(
        self,
        method: str,
        owner: str,
        repo: str,
        rest: list[str],
        query: dict[str, str],
        body: Any,
    ) -> Reply:
        """GET .../issues/comments: every issue's and pull request's plain comments, `since`
        against their updated time. Gitea: oldest created first (ListRepoIssueComments,
        routers/api/v1/repo/issue_comment.go). GitHub: `sort` created (default) or updated,
        `direction` (docs.github.com/en/rest/issues/comments#list-issue-comments-for-a-
        repository)."""
        if method != "GET":
            return self._error(405, "Method Not Allowed")
        issues = self._repos[(owner, repo)]
        found = [
            (number, comment)
            for (o, r, number), comments in self._comments.items()
            if (o, r) == (owner, repo) and number in issues
            for comment in comments
        ]
        if "since" in query:
            since = datetime.fromisoformat(query["since"])
            found = [(n, c) for n, c in found if (c.updated_at or c.created_at) >= since]
        if self.flavour == "github" and query.get("sort") == "updated":
            found.sort(
                key=lambda nc: (nc[1].updated_at or nc[1].created_at, nc[1].id),
                reverse=query.get("direction") == "desc",
            )
        else:
            found.sort(
                key=lambda nc: (nc[1].created_at, nc[1].id),
                reverse=self.flavour == "github" and query.get("direction") == "desc",
            )
        path = f"{self._api_prefix()}/repos/{owner}/{repo}/issues/comments"
        chosen, headers = self._page(found, query, path)
        return Said(200, headers, [self._comment_json(owner, repo, n, c) for n, c in chosen])

    def _reactions_answer(
        self,
        method: str,
        owner: str,
        repo: str,
        rest: list[str],
        query: dict[str, str],
        body: Any,
    ) -> Reply:
        """POST .../issues/comments/{id}/reactions `{"content": "+1"}` as the token's account:
        201 when made, 200 when there already (GitHub: docs.github.com/en/rest/reactions/
        reactions#create-reaction-for-an-issue-comment; Gitea: PostIssueCommentReaction,
        routers/api/v1/repo/issue_reaction.go). An unknown reaction: GitHub 422; Gitea 403
        (ErrForbiddenIssueReaction). GET lists them."""
        comment_id = int(rest[2])
        if self._comment(owner, repo, comment_id) is None:
            return self._not_found()
        given = self._reactions.setdefault((owner, repo, comment_id), [])
        if method == "GET":
            return Said(200, {}, [self._reaction_json(login, what) for login, what in given])
        if method != "POST":
            return self._error(405, "Method Not Allowed")
        content = body.get("content") if isinstance(body, dict) else None
        if content not in REACTIONS:
            if self.flavour == "gitea":
                return self._error(403, f"'{content}' is not an allowed reaction")
            return self._error(422, "Validation Failed")
        mine = (ACCOUNT, str(content))
        if mine in given:
            return Said(200, {}, self._reaction_json(*mine))
        given.append(mine)
        return Said(201, {}, self._reaction_json(*mine))

    def _comment_answer(
        self,
        method: str,
        owner: str,
        repo: str,
        rest: list[str],
        query: dict[str, str],
        body: Any,
    ) -> Reply:
        """GET and PATCH .../issues/comments/{id} `{"body": "..."}`, as the token's account: 200
        with the comment, its body replaced and its updated_at moved on (the issue's is not). 404
        for an id that is no comment of the repository (Gitea: EditIssueComment, routers/api/v1/
        repo/issue_comment.go, also for one of another repository; GitHub: docs.github.com/rest/
        issues/comments#update-an-issue-comment). Who may edit: Gitea, the comment's author or
        the repository's admin (`ctx.Doer.ID != comment.PosterID && !ctx.Repo.IsAdmin()`: 403
        with no body); GitHub, its author or anyone with write access (docs.github.com "Managing
        disruptive comments": 403 "Must have admin rights to Repository." otherwise). An empty
        body: Gitea stores it, GitHub answers 422, as for one past GITHUB_BODY_LIMIT."""
        found = self._comment(owner, repo, int(rest[2]))
        if found is None:
            return self._not_found()
        number, comment = found
        if method == "GET":
            return Said(200, {}, self._comment_json(owner, repo, number, comment))
        if method != "PATCH":
            return self._error(405, "Method Not Allowed")
        role = self._permissions.get((owner, repo), {}).get(ACCOUNT, "admin")
        mine = str(comment.author).lower() == ACCOUNT
        if self.flavour == "gitea" and not (mine or role in ("admin", "owner")):
            return Said(403, {}, None)
        if self.flavour == "github" and not (mine or role in PUSH_ROLES):
            return self._error(403, "Must have admin rights to Repository.")
        text = body.get("body") if isinstance(body, dict) else None
        if not isinstance(text, str) or (self.flavour == "github" and not text):
            return self._error(422, "Validation Failed")
        too_long = self._github_too_long("IssueComment", text)  # GitHub's limit on any body
        if too_long is not None:
            return too_long
        before = comment.updated_at or comment.created_at
        comment.body = text
        comment.updated_at = max(_now(), before + timedelta(seconds=1))
        return Said(200, {}, self._comment_json(owner, repo, number, comment))

    def _reaction_json(self, login: str, content: str) -> dict[str, Any]:
        made = {"user": self._user_json(login), "content": content, "created_at": _time(_now())}
        if self.flavour == "github":
            ident = 7000 + sum(f"{login}{content}".encode())
            return {"id": ident, "node_id": f"REA_{ident}"} | made
        return made

    def _reviews_answer(
        self,
        method: str,
        owner: str,
        repo: str,
        rest: list[str],
        query: dict[str, str],
        body: Any,
    ) -> Reply:
        """GET .../pulls/{n}/reviews, oldest first. A pending review is shown to its author
        only (Gitea: ToPullReviewList, services/convert/pull_review.go; GitHub likewise): the
        token's account is `tireless-bot`. Gitea pages with X-Total-Count and no Link
        (ListPullReviews) and sends no ETag; GitHub pages by Link, and its ETag and 304 come with
        every GET the stand-in answers."""
        if method != "GET":
            return self._error(405, "Method Not Allowed")
        pull = int(rest[1])
        if (owner, repo, pull) not in self._pulls:
            return self._not_found()
        shown = [
            review
            for review in self._reviews.get((owner, repo, pull), [])
            if (review.state != "pending" or review.author == ACCOUNT)
            and (self.flavour == "gitea" or review.state != "review_requested")
        ]
        path = f"{self._api_prefix()}/repos/{owner}/{repo}/pulls/{pull}/reviews"
        chosen, headers = self._page(shown, query, path)
        return Said(200, headers, [self._review_json(owner, repo, pull, r) for r in chosen])

    def _review_json(
        self, owner: str, repo: str, pull: int, review: StoredReview
    ) -> dict[str, Any]:
        """A review as each forge serves it: Gitea's PullReview (modules/structs/pull_review.go,
        `dismissed` a flag beside the state), GitHub's pull-request-review (no `submitted_at`
        while pending)."""
        web = self._pull_web_url(owner, repo, pull)
        if self.flavour == "gitea":
            return {
                "id": review.id,
                "user": self._user_json(review.author),
                "team": None,
                "state": GITEA_REVIEW_STATES[review.state],
                "body": review.body,
                "commit_id": review.commit_id,
                "stale": False,
                "official": review.state in ("approved", "changes_requested", "dismissed"),
                "dismissed": review.state == "dismissed",
                "comments_count": len(review.comments),
                "submitted_at": _time(review.submitted_at),
                "updated_at": _time(review.submitted_at),
                "html_url": f"{web}#issuecomment-{review.id}",
                "pull_request_url": web,
            }
        api = f"{self.url}/repos/{owner}/{repo}/pulls/{pull}"
        shaped: dict[str, Any] = {
            "id": review.id,
            "node_id": f"PRR_{review.id}",
            "user": self._user_json(review.author),
            "body": review.body,
            "state": GITHUB_REVIEW_STATES[review.state],
            "html_url": f"{web}#pullrequestreview-{review.id}",
            "pull_request_url": api,
            "author_association": "COLLABORATOR",
            "_links": {"html": {"href": f"{web}#pullrequestreview-{review.id}"}},
            "commit_id": review.commit_id,
        }
        if review.state != "pending":
            shaped["submitted_at"] = _time(review.submitted_at)
        return shaped

    def _review_comments_answer(
        self,
        method: str,
        owner: str,
        repo: str,
        rest: list[str],
        query: dict[str, str],
        body: Any,
    ) -> Reply:
        """GET .../pulls/{n}/reviews/{id}/comments. Gitea: one unpaged array, the line as
        `position` (new side; `original_position` the old side, 0 here), GetPullReviewComments
        and services/convert/pull_review.go. GitHub: paged by Link, `line` and `original_line`
        the file's lines, `position` the diff's (docs.github.com/en/rest/pulls/reviews#list-
        comments-for-a-pull-request-review)."""
        if method != "GET":
            return self._error(405, "Method Not Allowed")
        pull, ident = int(rest[1]), int(rest[3])
        found = [r for r in self._reviews.get((owner, repo, pull), []) if r.id == ident]
        if not found:
            return self._not_found()
        review = found[0]
        web = self._pull_web_url(owner, repo, pull)
        common = [
            {
                "id": c.id,
                "body": c.body,
                "user": self._user_json(review.author),
                "pull_request_review_id": review.id,
                "created_at": _time(review.submitted_at),
                "updated_at": _time(review.submitted_at),
                "path": c.path,
                "commit_id": review.commit_id,
                "original_commit_id": review.commit_id,
                "diff_hunk": f"@@ -{c.line},1 +{c.line},1 @@",
                "html_url": f"{web}/files#issuecomment-{c.id}",
                "pull_request_url": web,
            }
            for c in review.comments
        ]
        if self.flavour == "gitea":
            items = [
                item | {"resolver": None, "position": c.line, "original_position": 0}
                for item, c in zip(common, review.comments, strict=True)
            ]
            return Said(200, {}, items)
        items = [
            item
            | {
                "node_id": f"PRRC_{c.id}",
                "position": 1,
                "original_position": 1,
                "line": c.line,
                "original_line": c.line,
                "side": "RIGHT",
                "start_line": None,
                "author_association": "COLLABORATOR",
            }
            for item, c in zip(common, review.comments, strict=True)
        ]
        path = f"/repos/{owner}/{repo}/pulls/{pull}/reviews/{ident}/comments"
        chosen, headers = self._page(items, query, path)
        return Said(200, headers, chosen)

    def _permission_answer(
        self,
        method: str,
        owner: str,
        repo: str,
        rest: list[str],
        query: dict[str, str],
        body: Any,
    ) -> Reply:
        """GET .../collaborators/{login}/permission, asked as the token's account. Gitea
        (GetRepoPermissions, routers/api/v1/repo/collaborators.go): 403 unless the asker is a
        site admin, the repository's admin or asks about itself; 404 for no such user; else the
        user's access mode (services/convert/user.go ToUserAndPermission: `permission` and
        `role_name` alike), "owner" for the repository's owner, "read" for anyone on a public
        repository, "none" on a private one. GitHub: 403 "Must have push access to view
        collaborator permission." (yegor256/rultor#1407); 404 for a login that is not a
        collaborator (tokens-studio/figma-plugin#819) or no user; `permission` the base role,
        `role_name` the role."""
        if method != "GET":
            return self._error(405, "Method Not Allowed")
        login = rest[1]
        roles = self._permissions.get((owner, repo), {})
        asker = roles.get(ACCOUNT, "admin")
        if self.flavour == "gitea":
            if asker not in ("admin", "owner") and login.lower() != ACCOUNT:
                return self._error(
                    403,
                    "Only admins can query all permissions, repo admins can query all repo"
                    " permissions, collaborators can query only their own",
                )
            if login.lower() not in self._known_users(owner, repo):
                return self._error(404, f"user does not exist [uid: 0, name: {login}]")
            public = self.token is None  # the stand-in's repositories are private with a token
            role = roles.get(login.lower()) or (
                "owner" if login.lower() == owner.lower() else ("read" if public else "none")
            )
            reply = {"permission": role, "role_name": role, "user": self._user_json(login)}
            return Said(200, {}, reply)
        if asker not in PUSH_ROLES:
            return self._error(403, "Must have push access to view collaborator permission.")
        given = roles.get(login.lower()) or ("admin" if login.lower() == owner.lower() else None)
        if given is None:
            known = login.lower() in self._known_users(owner, repo)
            return self._error(404, "Not Found" if known else f"{login} is not a user")
        base = GITHUB_LEGACY_PERMISSION.get(given, given)
        return Said(
            200, {}, {"permission": base, "role_name": given, "user": self._user_json(login)}
        )

    def _known_users(self, owner: str, repo: str) -> set[str]:
        """The logins the stand-in knows (lower case): its two accounts, the owner, and whoever
        has a role, wrote a comment, a review or a pull request."""
        known = {ACCOUNT, PERSON, owner.lower()}
        known |= set(self._permissions.get((owner, repo), {}))
        for comments in self._comments.values():
            known |= {str(c.author).lower() for c in comments}
        for reviews in self._reviews.values():
            known |= {r.author.lower() for r in reviews}
        known |= {str(p.author).lower() for p in self._pulls.values()}
        return known

    def _status_create(
        self,
        method: str,
        owner: str,
        repo: str,
        rest: list[str],
        query: dict[str, str],
        body: Any,
    ) -> Reply:
        """POST .../statuses/{sha} `{state, target_url, description, context}`: 201 with the
        status (Gitea: NewCommitStatus, routers/api/v1/repo/status.go; GitHub: docs.github.com/
        en/rest/commits/statuses#create-a-commit-status, `context` "default" unless given). The
        stand-in does not check that the commit exists."""
        if method != "POST":
            return self._error(405, "Method Not Allowed")
        form = body if isinstance(body, dict) else {}
        state = form.get("state")
        if state not in STATUS_STATES[self.flavour]:
            return self._error(422, "Validation Failed")
        default = "default" if self.flavour == "github" else ""
        made = StoredStatus(
            self._new_id(),
            str(form.get("context") or default),
            str(state),
            str(form.get("description") or ""),
            form.get("target_url") or None,
            _now(),
            ACCOUNT,
        )
        self._statuses.setdefault((owner, repo, rest[1]), []).append(made)
        return Said(201, {}, self._status_json(owner, repo, rest[1], made))

    def _status_json(self, owner: str, repo: str, sha: str, status: StoredStatus) -> dict[str, Any]:
        """Gitea's CommitStatus names its state `status` (modules/structs/status.go); GitHub's
        `state`, a null description or target_url when none."""
        if self.flavour == "gitea":
            return {
                "id": status.id,
                "status": status.state,
                "target_url": status.target_url or "",
                "description": status.description,
                "url": f"{self.url}/api/v1/repos/{owner}/{repo}/statuses/{sha}",
                "context": status.context,
                "creator": self._user_json(status.creator),
                "created_at": _time(status.created_at),
                "updated_at": _time(status.created_at),
            }
        return {
            "url": f"{self.url}/repos/{owner}/{repo}/statuses/{sha}",
            "avatar_url": None,
            "id": status.id,
            "node_id": f"SC_{status.id}",
            "state": status.state,
            "description": status.description or None,
            "target_url": status.target_url,
            "context": status.context,
            "created_at": _time(status.created_at),
            "updated_at": _time(status.created_at),
        }

    def _checks_answer(
        self,
        method: str,
        owner: str,
        repo: str,
        rest: list[str],
        query: dict[str, str],
        body: Any,
    ) -> Reply:
        """GET .../commits/{ref}/status, the combined status: the latest status of each context
        (a branch name is its head commit). Gitea (GetCombinedCommitStatusByRef, routers/api/v1/
        repo/status.go): pages by page/limit with X-Total-Count, no Link; with no status an
        empty CombinedStatus, `statuses` null. GitHub (docs.github.com/en/rest/commits/
        statuses#get-the-combined-status-for-a-specific-reference): paged by Link.
        GET .../commits/{ref}/check-runs (GitHub only, docs.github.com/en/rest/checks/runs#list-
        check-runs-for-a-git-reference): the latest run of each name, paged by Link."""
        if method != "GET":
            return self._error(405, "Method Not Allowed")
        ref = rest[1]
        sha = self.git.branch_head(owner, repo, ref) or ref
        path = f"{self._api_prefix()}/repos/{owner}/{repo}/commits/{rest[1]}/{rest[2]}"
        if rest[2] == "check-runs":
            if self.flavour != "github":
                return self._not_found()
            runs = _latest(self._check_runs.get((owner, repo, sha), []), lambda run: run.name)
            chosen, headers = self._page(runs, query, path)
            items = [self._check_run_json(owner, repo, sha, run) for run in chosen]
            return Said(200, headers, {"total_count": len(runs), "check_runs": items})
        statuses = _latest(self._statuses.get((owner, repo, sha), []), lambda s: s.context)
        states = [s.state for s in statuses]
        if self.flavour == "gitea":
            if not statuses:
                empty = {"state": "", "sha": "", "total_count": 0, "statuses": None}
                return Said(200, {}, empty | {"repository": None, "commit_url": "", "url": ""})
            combined = min(states, key=GITEA_STATUS_RANK.index)
        elif any(s in ("error", "failure") for s in states):
            combined = "failure"
        else:
            combined = "success" if states and all(s == "success" for s in states) else "pending"
        chosen, headers = self._page(statuses, query, path)
        return Said(
            200,
            headers,
            {
                "state": combined,
                "sha": sha,
                "total_count": len(chosen) if self.flavour == "gitea" else len(statuses),
                "statuses": [self._status_json(owner, repo, sha, s) for s in chosen],
                "repository": self._repo_json(owner, repo),
                "commit_url": f"{self.url}{self._api_prefix()}/repos/{owner}/{repo}/commits/{sha}",
                "url": f"{self.url}{path}",
            },
        )

    def _check_run_json(
        self, owner: str, repo: str, sha: str, run: StoredCheckRun
    ) -> dict[str, Any]:
        web = f"{self.url}/{owner}/{repo}/runs/{run.id}"
        return {
            "id": run.id,
            "head_sha": sha,
            "node_id": f"CR_{run.id}",
            "external_id": "",
            "url": f"{self.url}/repos/{owner}/{repo}/check-runs/{run.id}",
            "html_url": web,
            "details_url": run.details_url or web,
            "status": run.status,
            "conclusion": run.conclusion,
            "started_at": _time(run.started_at),
            "completed_at": _time(run.completed_at),
            "output": {
                "title": run.title,
                "summary": run.summary,
                "text": None,
                "annotations_count": 0,
                "annotations_url": f"{self.url}/repos/{owner}/{repo}/check-runs/{run.id}/annotations",
            },
            "name": run.name,
            "check_suite": {"id": 9000 + run.id},
            "app": {"id": 1, "slug": "standin-ci", "name": "Stand-in CI"},
            "pull_requests": [],
        }


def _latest(items: list[Any], key: Any) -> list[Any]:
    """The latest (highest id) of each key, in the order of their ids."""
    latest: dict[str, Any] = {}
    for item in items:
        if key(item) not in latest or item.id > latest[key(item)].id:
            latest[key(item)] = item
    return sorted(latest.values(), key=lambda item: int(item.id))
