"""GitHub's REST API as the stand-in serves it: GitHubApi, the one object the shared routes ask
for what is GitHub's own (its paths, JSON shapes, paging, errors, rate limits, fine-grained
permissions and quirks), each beside the GitHub REST doc (or the client's record of GitHub's
answer) that shows it, and its figures and tables."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from dev.standin.git_backend import CgiAnswer
from dev.standin.github_conversation import GitHubConversation
from dev.standin.records import (
    Answer,
    Comment,
    RepoLabel,
    StoredIssue,
    StoredPull,
    _granted,
    _is_hex_color,
    _time,
)

if TYPE_CHECKING:
    from dev.standin.forge import StandinForge

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


GITHUB_PERMISSIONS = ("checks", "contents", "issues", "metadata", "pull_requests", "statuses")
"""The fine-grained repository permissions the stand-in's routes need, each `name:read` or
`name:write` (write implies read). `metadata:read` every fine-grained token has (docs.github.com/
en/rest/authentication/permissions-required-for-fine-grained-personal-access-tokens)."""


ID_BASE = 1000
"""The stand-in serves a GitHub issue's database `id` as this plus its number
(StandinForge._issue_json); the relation writes take that id, not the number."""


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


def invalid(
    *errors: dict[str, str],
    docs: str = "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
) -> Answer:
    """GitHub's 422 for a request it understood but refuses: "Validation Failed" and why, in
    `errors` (docs.github.com/en/rest/using-the-rest-api/troubleshooting-the-rest-api)."""
    return Answer(
        422, {}, {"message": "Validation Failed", "errors": list(errors), "documentation_url": docs}
    )


def label_named(labels: dict[str, RepoLabel], name: str) -> RepoLabel | None:
    """The repository's label GitHub takes `name` for: it matches label names without case
    (GET .../labels/Bug answers `bug`; POST .../issues/{n}/labels ["Bug"] adds `bug`; creating
    `Bug` is 422 already_exists: rust-lang/triagebot#1915, git-bug/git-bug#176,
    intuit/auto#548). str.lower stands in for GitHub's collation."""
    return labels.get(name) or next(
        (label for key, label in labels.items() if key.lower() == name.lower()), None
    )


class GitHubApi(GitHubConversation):
    """GitHub's side of every route the stand-in serves: what the shared routes (dev.standin.
    rest, mirror, pulls, conversation, reviews, checks, dependencies, git_http) ask of the
    forge's API. GiteaApi (dev.standin.gitea) answers the same names."""

    prefix = ""
    """The API is at the root of its own host (api.github.com); the stand-in's base URL is it."""
    max_page_size = 100
    """`per_page` is at most 100 (docs.github.com/en/rest/using-the-rest-api/using-pagination-in-
    the-rest-api)."""
    size_key = "per_page"
    realm = "GitHub"
    """git's Basic challenge: `Basic realm="GitHub"` (what GitHub Desktop's credential helper
    tells a GitHub host by, desktop/desktop getEndpointKind)."""
    git_scope = "contents"
    """A git fetch needs the `contents` permission to read, a push to write."""
    locks_archived = False
    """The stand-in serves no archived GitHub repository (archive_repo is Gitea's 423)."""
    edit_status = 200
    """PATCH of an issue or a pull request answers 200 (docs.github.com/en/rest/issues/
    issues#update-an-issue, rest/pulls/pulls#update-a-pull-request)."""
    transfers_issues = True
    """An issue moves to another repository under a new number, and its old URL (its labels'
    and comments' too) answers 301 to the new place (`moved`; docs.github.com/en/rest/issues/
    issues#get-an-issue, rest/issues/labels list 301 Moved permanently)."""
    creator_key = "creator"
    """List repository issues' filter of who opened the issue (docs.github.com/en/rest/issues/
    issues#list-repository-issues)."""
    protected_refusal = """        echo "error: GH006: Protected branch update failed for $ref." >&2
        echo "error: Changes must be made through a pull request." >&2"""
    """The pre-receive hook's words for a protected branch (dev.standin.git_backend): "error:
    GH006: Protected branch update failed for refs/heads/main." then the rule that refused it,
    "error: Changes must be made through a pull request." (as pushes show it, e.g.
    desktop/desktop#17586, SalamLang/Salam#430). GitHub's own reason on the rejected ref reads
    "(protected branch hook declined)"; a plain pre-receive hook can only make git say
    "(pre-receive hook declined)", the one difference left."""

    def __init__(self, forge: Any) -> None:
        self.forge: StandinForge = forge
        """The StandinForge served (built by ForgeState, its base, before its other layers)."""

    # Tokens and permissions (issue 36)
    def checked_scopes(
        self, scopes: Iterable[str] | None, installation: bool
    ) -> frozenset[str] | None:
        """The token's fine-grained permissions as given (`issues:write`...), each one of
        GITHUB_PERMISSIONS; `metadata:read` comes with every one."""
        if scopes is None:
            return None
        given = frozenset(scopes)
        known = {f"{p}:{lv}" for lv in ("read", "write") for p in GITHUB_PERMISSIONS}
        given |= {"metadata:read"}
        unknown = sorted(given - known)
        if unknown:
            raise ValueError(f"unknown github token scope(s) {unknown}: one of {sorted(known)}")
        return given

    def token_refusal(self, method: str, parts: list[str]) -> Answer | None:
        """GitHub's fine-grained tokens: each endpoint needs one repository permission (docs.github
        .com/en/rest/authentication/permissions-required-for-fine-grained-personal-access-
        tokens); refused with 403 "Resource not accessible by personal access token" ("... by
        integration" for an App installation's token) and the permission it needed in
        `X-Accepted-GitHub-Permissions: issues=read` (docs.github.com/en/rest/using-the-rest-api/
        troubleshooting-the-rest-api#resource-not-accessible). GET /user needs no permission
        from a personal token; an installation's token has no user, and is refused
        (docs.github.com/en/rest/users/users#get-the-authenticated-user lists no installation
        access token among the tokens it works with)."""
        forge = self.forge
        level = "read" if method in ("GET", "HEAD") else "write"
        if parts == ["user"] and forge.installation:
            return self.error(403, "Resource not accessible by integration")
        permission = _github_permission(parts)
        if permission == "metadata":
            level = "read"  # every fine-grained token reads metadata; nothing writes it
        scopes = forge.scopes
        if permission is None or scopes is None or _granted(scopes, permission, level):
            return None
        who = "integration" if forge.installation else "personal access token"
        answer = self.error(403, f"Resource not accessible by {who}")
        needed = {"X-Accepted-GitHub-Permissions": f"{permission}={level}"}
        return replace(answer, headers=answer.headers | needed)

    def git_tokens(self, user: str, password: str) -> list[str]:
        """The token is the password under any username, `x-access-token` for an app's token
        (docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/
        authenticating-as-a-github-app-installation; a personal token "instead of your
        password", docs.github.com/en/get-started/git-basics/about-remote-repositories#cloning-
        with-https-urls)."""
        return [password]

    def git_refused(self, owner: str, repo: str) -> CgiAnswer:
        """A push (or fetch) the token's `contents` permission does not cover: 403 and
        "Permission to {o}/{r}.git denied" (what git shows as `remote: Permission to ...
        denied`)."""
        denied = f"Permission to {owner}/{repo}.git denied to {self.forge.login}.\n"
        return CgiAnswer(403, {"Content-Type": "text/plain"}, denied.encode())

    # Errors
    def error(self, status: int, message: str) -> Answer:
        """GitHub's error: `message` and `documentation_url`; a 403 carries the rate headers."""
        docs = "https://docs.github.com/rest"
        headers = self.forge._rate_headers() if status == 403 else {}
        return Answer(status, headers, {"message": message, "documentation_url": docs})

    def not_found(self) -> Answer:
        return self.error(404, "Not Found")

    def unauthorized(self) -> Answer:
        return self.error(401, "Bad credentials")

    def issue_gone(self, owner: str, repo: str, number: int) -> Answer:
        """A deleted issue (its labels and comments too): 410 Gone (docs.github.com/en/rest/
        issues/issues#get-an-issue, issues/comments#create-an-issue-comment and issues/
        labels#add-labels-to-an-issue list 410); one never made, 404."""
        if (owner, repo, number) in self.forge._deleted:
            return self.error(410, "This issue was deleted")
        return self.error(404, "Not Found")

    def missing(self, resource: str, *fields: str) -> Answer:
        return invalid({"resource": resource, "code": "missing_field"})

    def invalid_field(self, resource: str, field: str) -> Answer:
        return invalid({"resource": resource, "field": field, "code": "invalid"})

    def too_long(self, resource: str, text: object) -> Answer | None:
        """GitHub's 422 for a body past GITHUB_BODY_LIMIT characters; None when it fits."""
        if not isinstance(text, str) or len(text) <= GITHUB_BODY_LIMIT:
            return None
        return invalid(
            {"resource": resource, "code": "custom", "field": "body",
             "message": f"body is too long (maximum is {GITHUB_BODY_LIMIT} characters)"},
            docs="https://docs.github.com/rest",
        )  # fmt: skip

    # Rate limits and caching
    def count_rate(self, answer: Answer) -> Answer:
        """Every answer spends one of the primary rate limit and carries the x-ratelimit-*
        headers (docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api)."""
        forge = self.forge
        with forge._lock:
            forge.rate_remaining = max(forge.rate_remaining - 1, 0)
        return replace(answer, headers=forge._rate_headers() | answer.headers)

    def rate_spent(self) -> Answer | None:
        """The primary rate limit spent: 403 (or 429) with x-ratelimit-remaining: 0."""
        if self.forge.rate_remaining <= 0:
            return self.error(403, "API rate limit exceeded")
        return None

    def etag(self, body: bytes) -> str | None:
        """A weak ETag on every 200 of a GET: a conditional request that matches is 304, no body,
        and no rate limit spent (docs.github.com/en/rest/using-the-rest-api/best-practices-for-
        using-the-rest-api#use-conditional-requests-if-appropriate)."""
        return 'W/"' + hashlib.sha256(body).hexdigest()[:32] + '"'

    # Paths: renamed repositories, transferred issues
    def current_path(self, path: str) -> str:
        """GitHub serves a repository by id as well: `/repositories/{id}/...` is what its
        redirects for a renamed repository or a transferred issue point at."""
        forge = self.forge
        prefix, parts = forge._api_parts(path)
        if parts[0] != "repositories" or len(parts) < 2:
            return path
        with forge._lock:
            names = [name for name, id_ in forge._repo_ids.items() if str(id_) == parts[1]]
        if not names:
            return path
        return "/".join([prefix, "repos", *names[0], *parts[2:]])

    def moved(
        self, method: str, new: tuple[str, str], repo_id: int, suffix: str, search: str
    ) -> Answer:
        """301 to `/repositories/{id}/...` (307 for a write) with the query kept (docs.github.com/
        en/rest/using-the-rest-api/best-practices-for-using-the-rest-api#follow-redirects); a
        transferred issue's old URL too (docs.github.com/en/rest/issues/issues#get-an-issue: "If
        an issue was transferred to another repository, the API returns 301 Moved
        Permanently")."""
        location = f"{self.forge.url}/repositories/{repo_id}/{suffix}".rstrip("/") + search
        status = 301 if method == "GET" else 307
        return Answer(status, {"Location": location}, {"message": "Moved Permanently"})

    def archived_refusal(self, method: str, parts: list[str]) -> Answer | None:
        return None

    # The account and the meta
    def account_json(self) -> dict[str, Any]:
        """GET /user: the token's account, its public address (none here)."""
        return {"id": 2, "login": self.forge.login, "email": None}

    def account_headers(self) -> dict[str, str]:
        """A classic token's scopes on every answer (docs.github.com/en/apps/oauth-apps/
        building-oauth-apps/scopes-for-oauth-apps: "X-OAuth-Scopes lists the scopes your token
        has authorized"); a fine-grained or App token sends none."""
        forge = self.forge
        if forge.scopes is None and forge.oauth_scopes is not None:
            return {"X-OAuth-Scopes": forge.oauth_scopes}
        return {}

    def misc_answer(self, method: str, parts: list[str], query: dict[str, str]) -> Answer | None:
        """GET /meta, no token needed (docs.github.com/en/rest/meta/meta#get-github-meta-
        information); GitHub Enterprise Server adds `installed_version`, github.com does not."""
        if parts == ["meta"] and method == "GET":
            return Answer(200, {}, {"verifiable_password_authentication": False})
        return None

    # Paging
    def total_count(self, count: int) -> dict[str, str]:
        """GitHub pages by Link alone."""
        return {}

    def page(
        self, items: list[Any], query: dict[str, str], path: str, *, counted: bool = True
    ) -> tuple[list[Any], dict[str, str]]:
        """One page of a listing and its headers: `per_page` (30 unless told, at most 100) and
        a Link to the next page."""
        forge = self.forge
        asked = int(query.get(self.size_key, "0") or 0)
        size = min(asked if asked > 0 else 30, forge.max_page_size)
        page = max(int(query.get("page", "1") or 1), 1)
        chosen = items[(page - 1) * size : page * size]
        headers: dict[str, str] = {}
        if page * size < len(items):
            after = urlencode(query | {"page": str(page + 1)})
            headers["Link"] = f'<{forge.url}{path}?{after}>; rel="next"'
        return chosen, headers

    # The issue listing
    def listing_filter(self, chosen: list[StoredIssue], query: dict[str, str]) -> list[StoredIssue]:
        """`creator` names who opened it; pull requests are listed among the issues."""
        creator = query.get(self.creator_key)
        return [i for i in chosen if i.author == creator] if creator else chosen

    def listing_sort(self, chosen: list[StoredIssue], query: dict[str, str]) -> None:
        """`sort=updated` (with `direction`, desc unless asc) orders by updated_at; else newest
        first, the default."""
        if query.get("sort") == "updated":
            chosen.sort(
                key=lambda i: (i.updated_at, i.number), reverse=query.get("direction") != "asc"
            )
        else:
            chosen.sort(key=lambda i: i.number, reverse=True)

    # JSON shapes (GitHub's REST description)
    def user_json(self, login: str) -> dict[str, Any]:
        return {"id": 10 + sum(login.encode()), "login": login, "type": "User"}

    def owner_extra(self, owner: str) -> dict[str, Any]:
        return {}

    def repo_extra(self) -> dict[str, Any]:
        return {}

    def issue_json(
        self,
        owner: str,
        repo: str,
        issue: StoredIssue,
        ids: dict[str, int],
        api: str,
        web: str,
    ) -> dict[str, Any]:
        """GitHub's `issue`: node ids, its API links, `state_reason`, a pull request marked by
        its `pull_request` key, and the relations' summaries (`_relation_summaries`)."""
        forge = self.forge
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
        shaped: dict[str, Any] = {
            "node_id": f"I_{issue.number}",
            "repository_url": f"{forge.url}/repos/{owner}/{repo}",
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
                # The issue schema's pull_request.merged_at (github/rest-api-description)
                "merged_at": _time(issue.merged_at),
            }
        return shaped | self._relation_summaries(owner, repo, issue.number)

    def _relation_summaries(self, owner: str, repo: str, number: int) -> dict[str, Any]:
        """GitHub's issue object carries `issue_dependencies_summary` {blocked_by (open),
        blocking (open), total_blocked_by, total_blocking} (docs.github.com/rest/issues/
        issue-dependencies) and `sub_issues_summary` {total, completed, percent_completed}
        (docs.github.com/rest/issues/sub-issues); an older GitHub Enterprise Server neither
        (`relation_summaries` False). Called under the lock."""
        forge = self.forge
        if not forge.relation_summaries:
            return {}
        key = (owner, repo, number)
        blockers = forge._blockers.get(key, [])
        blocking = [k for k, found in forge._blockers.items() if key in found]
        children = forge._children.get(key, [])
        done = sum(1 for child in children if forge._state_of(child) == "closed")
        return {
            "issue_dependencies_summary": {
                "blocked_by": sum(1 for k in blockers if forge._state_of(k) != "closed"),
                "blocking": sum(1 for k in blocking if forge._state_of(k) != "closed"),
                "total_blocked_by": len(blockers),
                "total_blocking": len(blocking),
            },
            "sub_issues_summary": {
                "total": len(children),
                "completed": done,
                "percent_completed": (100 * done // len(children)) if children else 0,
            },
        }

    def label_json(self, api: str, label: RepoLabel) -> dict[str, Any]:
        """GitHub's `label`: its `url` by name, a null description when empty."""
        return {
            "id": label.id,
            "node_id": f"LA_{label.id}",
            "url": f"{api}/{label.name}",
            "name": label.name,
            "color": label.color,
            "default": False,
            "description": label.description or None,
        }

    def comment_json(self, owner: str, repo: str, number: int, comment: Comment) -> dict[str, Any]:
        """GitHub's `issue-comment`: its API `url` and `issue_url`."""
        api = f"{self.forge.url}/repos/{owner}/{repo}/issues"
        return {
            "node_id": f"IC_{comment.id}",
            "url": f"{api}/comments/{comment.id}",
            "issue_url": f"{api}/{number}",
            "author_association": "NONE",
        }

    def pull_web_url(self, owner: str, repo: str, number: int) -> str:
        """A pull request's page is .../pull/N (singular, the `html_url` of its pull-request
        schema)."""
        return f"{self.forge.url}/{owner}/{repo}/pull/{number}"

    def is_draft(self, title: str, pull: StoredPull) -> bool:
        """The pull request's own flag (POST .../pulls `draft`)."""
        return pull.draft

    def pull_json(
        self,
        owner: str,
        repo: str,
        issue: StoredIssue,
        pull: StoredPull,
        repo_json: dict[str, Any],
        head_sha: str,
        base_sha: str,
    ) -> dict[str, Any]:
        """GitHub's `pull-request`: `head.label` is `owner:branch`, `head.ref` the branch, `body`
        null when empty."""
        api = f"{self.forge.url}/repos/{owner}/{repo}"
        owner_json = {"login": owner, "id": 1}
        return {
            "url": f"{api}/pulls/{issue.number}",
            "node_id": f"PR_{issue.number}",
            "issue_url": f"{api}/issues/{issue.number}",
            "body": issue.body or None,
            "locked": False,
            "active_lock_reason": None,
            "assignees": [],
            "requested_reviewers": [],
            "requested_teams": [],
            "author_association": "OWNER",
            "auto_merge": None,
            "merged": issue.merged_at is not None,
            "mergeable": None,
            "head": {
                "label": f"{owner}:{pull.head}",
                "ref": pull.head,
                "sha": head_sha,
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

    # Labels (the mirror's): GitHub's take names
    def label_list(self, items: list[dict[str, Any]], query: dict[str, str]) -> Answer:
        """The repository's labels, one list: the client asks for its label by name."""
        return Answer(200, {}, items)

    def label_get(
        self, owner: str, repo: str, labels: dict[str, RepoLabel], ref: str
    ) -> Answer | None:
        """GET .../labels/{name}, matched without case (`label_named`); 404 for none."""
        label = label_named(labels, ref)
        if label is None:
            return self.error(404, "Not Found")
        return Answer(200, {}, self.forge._label_json(owner, repo, label))

    def label_key(self, labels: dict[str, RepoLabel], ref: str) -> str | None:
        """DELETE .../labels/{name}: 204, 404 when there is none (docs.github.com/en/rest/issues/
        labels#delete-a-label)."""
        return ref

    def label_delete_missing(self) -> Answer:
        return self.not_found()

    def valid_color(self, color: str) -> bool:
        """GitHub wants "rrggbb" without "#"."""
        return _is_hex_color(color)

    def label_create_refusal(self, labels: dict[str, RepoLabel], name: str) -> Answer | None:
        """A name past GITHUB_LABEL_NAME_LIMIT; another case of an existing name is that label,
        422 already_exists (git-bug/git-bug#176, hackebrot/labels#15)."""
        docs = "https://docs.github.com/rest/issues/labels#create-a-label"
        if len(name) > GITHUB_LABEL_NAME_LIMIT:
            return invalid(
                {"resource": "Label", "code": "custom", "field": "name",
                 "message": f"name is too long (maximum is {GITHUB_LABEL_NAME_LIMIT} characters)"},
                docs=docs,
            )  # fmt: skip
        if label_named(labels, name) is not None:
            return invalid(
                {"resource": "Label", "code": "already_exists", "field": "name"}, docs=docs
            )
        return None

    def exclusive(self, body: dict[str, Any]) -> bool:
        """GitHub has no scoped (exclusive) labels."""
        return False

    def exclusive_scope(self, label: RepoLabel) -> str:
        return ""

    def issue_label_to_remove(
        self,
        ref: str,
        by_id: dict[int, RepoLabel],
        labels: dict[str, RepoLabel],
        on_issue: list[str],
    ) -> RepoLabel | Answer:
        """DELETE .../issues/{n}/labels/{name}: 404 "Label does not exist" unless the issue
        carries it (docs.github.com/en/rest/issues/labels#remove-a-label-from-an-issue)."""
        label = labels.get(ref)
        if label is None or ref not in on_issue:
            return self.error(404, "Label does not exist")
        return label

    def issue_label_removed(self, owner: str, repo: str, number: int) -> Answer:
        """It answers the labels left on the issue."""
        return self.forge._issue_labels_list(owner, repo, number)

    def issue_label_name(
        self,
        item: object,
        by_id: dict[int, RepoLabel],
        labels: dict[str, RepoLabel],
        org: dict[str, RepoLabel],
        owner: str,
        repo: str,
    ) -> str | Answer:
        """Labels are added by name: the existing label of another case (`label_named`), else a
        new one; a new name past GITHUB_LABEL_NAME_LIMIT is 422."""
        if not isinstance(item, str):
            return self.error(422, "label not found")
        if item in labels or item in org:
            return item
        found = label_named(labels, item)
        if found is None and len(item) > GITHUB_LABEL_NAME_LIMIT:
            return invalid(
                {"value": item, "resource": "Label", "field": "name", "code": "invalid"},
                docs="https://docs.github.com/rest/issues/labels#add-labels-to-an-issue",
            )
        return (found or self.forge._repo_label(owner, repo, item, "ededed")).name

    # An issue's events
    def events_answer(self, owner: str, repo: str, number: int, query: dict[str, str]) -> Answer:
        """GET .../issues/{n}/events (docs.github.com/rest/issues/events), oldest first, paged
        by Link."""
        forge = self.forge
        events = forge._events.get((owner, repo, number), [])
        size = min(int(query.get("per_page", "30") or 30), 100)
        page = max(int(query.get("page", "1") or 1), 1)
        last = max((len(events) + size - 1) // size, 1)
        chosen_events = events[(page - 1) * size : page * size]
        headers = {}
        if page < last:
            path = f"/repos/{owner}/{repo}/issues/{number}/events"
            headers["Link"] = (
                f'<{forge.url}{path}?{urlencode(query | {"page": str(page + 1)})}>; rel="next"'
            )
        api = f"{forge.url}/repos/{owner}/{repo}/issues"
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

    # Pull requests (issue 33)
    def pull_create_refusal(
        self,
        owner: str,
        repo: str,
        head: str,
        base: str,
        branch: str,
        shas: tuple[str | None, str | None],
        open_from_head: list[int],
    ) -> Answer | None:
        """docs.github.com/en/rest/pulls/pulls#create-a-pull-request: a head that is no branch is
        422 {"resource":"PullRequest","field":"head","code":"invalid"} (as seen in
        shepherd-tools/shepherd#51); a second open pull request from the same head to the same
        base is 422 code "custom", "A pull request already exists for owner:branch."
        (github/VisualStudio#453, vsoch/pull-request-action#86); a head with nothing the base
        lacks is "No commits between main and branch" (peter-evans/create-pull-request#4088)."""
        head_sha, base_sha = shas
        if head_sha is None:
            return invalid({"resource": "PullRequest", "field": "head", "code": "invalid"})
        if base_sha is None:
            return invalid({"resource": "PullRequest", "field": "base", "code": "invalid"})
        if open_from_head:
            message = f"A pull request already exists for {owner}:{branch}."
            return invalid({"resource": "PullRequest", "code": "custom", "message": message})
        if self.forge.git.is_ancestor(owner, repo, head_sha, base_sha):
            message = f"No commits between {base} and {branch}"
            return invalid({"resource": "PullRequest", "code": "custom", "message": message})
        return None

    def draft(self, form: dict[str, Any]) -> bool:
        return form.get("draft") is True

    def created_headers(self, owner: str, repo: str, number: int) -> dict[str, str]:
        """201 Created with the new resource's Location."""
        return {"Location": f"{self.forge.url}/repos/{owner}/{repo}/pulls/{number}"}

    def pull_listed(self, query: dict[str, str], owner: str, pull: StoredPull) -> bool:
        """GET .../pulls filters by `head` as `user:ref-name` and by `base` (docs.github.com/en/
        rest/pulls/pulls#list-pull-requests). A `head` without `user:` matches nothing here: the
        format the docs give is the one a client must send."""
        return ("head" not in query or query["head"] == f"{owner}:{pull.head}") and query.get(
            "base", pull.base
        ) == pull.base

    # The work graph's relations (issue 35)
    def relation_route(self, rest: list[str]) -> bool:
        """.../dependencies/blocked_by[/{issue_id}] and .../sub_issues."""
        return rest in (["dependencies", "blocked_by"], ["sub_issues"]) or (
            rest[:2] == ["dependencies", "blocked_by"] and len(rest) == 3
        )

    def relation(
        self,
        method: str,
        owner: str,
        repo: str,
        number: int,
        rest: list[str],
        query: dict[str, str],
        body: Any,
        path: str,
    ) -> Answer:
        """GET/POST .../dependencies/blocked_by and DELETE .../dependencies/blocked_by/{issue_id}
        (docs.github.com/rest/issues/issue-dependencies), GET/POST .../sub_issues (docs.github.com/
        rest/issues/sub-issues): lists of issues paged by per_page with Link; a write names the
        other issue by its database `id` (`issue_id`, `sub_issue_id`), answers 201 with the
        issue, and 422 (validation failed) for a relation that exists already, a sub-issue that
        has a parent already, or an issue related to itself; 404 for an id it does not know."""
        forge = self.forge
        key = (owner, repo, number)
        children = rest == ["sub_issues"]
        held = forge._children if children else forge._blockers
        issue = forge._repos[(owner, repo)][number]
        if method == "GET" and len(rest) <= 2:
            return forge._listed(held.get(key, []), query, path, counted=False)
        if method == "DELETE" and len(rest) == 3 and rest[2].isdigit():
            other = self._by_id(owner, repo, int(rest[2]))
            if other is None or other not in forge._blockers.get(key, []):
                return self.not_found()
            forge._blockers[key].remove(other)
            return Answer(200, {}, forge._issue_json(owner, repo, issue))
        if method != "POST" or len(rest) > 2:
            return self.error(405, "Method Not Allowed")
        form = body if isinstance(body, dict) else {}
        given = form.get("sub_issue_id" if children else "issue_id")
        if type(given) is not int:
            return self.missing("Issue")
        other = self._by_id(owner, repo, given)
        if other is None:
            return self.not_found()
        related = held.setdefault(key, [])
        has_parent = children and any(other in found for found in forge._children.values())
        if other == key or other in related or has_parent:
            return invalid({"resource": "Issue", "code": "invalid"})
        related.append(other)
        return Answer(201, {}, forge._issue_json(owner, repo, issue))

    def _by_id(self, owner: str, repo: str, issue_id: int) -> tuple[str, str, int] | None:
        """The issue a GitHub database id names: this repository's first, then any other's."""
        repos = self.forge._repos
        number = issue_id - ID_BASE
        if number in repos.get((owner, repo), {}):
            return (owner, repo, number)
        for (o, r), issues in sorted(repos.items()):
            if number in issues:
                return (o, r, number)
        return None
