"""Gitea's API v1 as the stand-in serves it, Forgejo's too (a fork that answers these routes as
Gitea does; the stand-in's "gitea" flavour is both): GiteaApi, the one object the shared routes
ask for what is Gitea's own (its paths, JSON shapes, paging, errors, scopes and quirks), each
beside the go-gitea/gitea source that shows it, and its figures and tables."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from dev.standin.git_backend import CgiAnswer
from dev.standin.gitea_conversation import GiteaConversation
from dev.standin.records import (
    MIRROR_LOGIN,
    Answer,
    Comment,
    Event,
    RepoLabel,
    StoredIssue,
    StoredPull,
    _granted,
    _is_hex_color,
    _time,
)

if TYPE_CHECKING:
    from dev.standin.forge import StandinForge

GITEA_WIP_PREFIXES = ("WIP:", "[WIP]")
"""Gitea's `[repository.pull-request] WORK_IN_PROGRESS_PREFIXES` default (modules/setting/
repository.go): a pull request whose title starts with one is a draft."""


GITEA_VERSION = "1.24.0"
"""What the Gitea stand-in says it is (GET /api/v1/version)."""


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


def exclusive_scope(label: RepoLabel) -> str:
    """Gitea's `Label.ExclusiveScope` (models/issues/label.go): the name up to its last `/` for an
    exclusive label, "" for any other or when the `/` is first or last. Adding an exclusive label
    knocks off the issue's labels of the same exclusive scope only; a label that is not exclusive
    stays whatever its name (RemoveDuplicateExclusiveIssueLabels, models/issues/issue_label.go)."""
    if not label.exclusive:
        return ""
    cut = label.name.rfind("/")
    return "" if cut in (-1, 0, len(label.name) - 1) else label.name[:cut]


class GiteaApi(GiteaConversation):
    """Gitea's (and Forgejo's) side of every route the stand-in serves: what the shared routes
    (dev.standin.rest, mirror, pulls, conversation, reviews, checks, dependencies, git_http)
    ask of the forge's API. GitHubApi (dev.standin.github) answers the same names."""

    prefix = "/api/v1"
    """Every API path is under /api/v1 (routers/api/v1/api.go); the web root is the base URL."""
    max_page_size = 50
    """`[api] MAX_RESPONSE_ITEMS` (default 50) clamps `limit` (modules/setting/api.go)."""
    size_key = "limit"
    """A page's size is `limit` (services/context/api.go GetListOptions), with `page`."""
    realm = "Gitea"
    """git's Basic challenge: `Basic realm="Gitea"` (httpBase, routers/web/repo/githttp.go)."""
    git_scope = "repository"
    """A git fetch needs `read:repository`, a push `write:repository` (routers/web/repo/
    githttp.go httpBase -> CheckRepoScopedToken, services/context/permission.go)."""
    locks_archived = True
    """An archived repository refuses some writes with 423 (`archived_refusal`)."""
    edit_status = 201
    """PATCH of an issue or a pull request answers 201, not 200 (EditIssue, routers/api/v1/repo/
    issue.go; EditPullRequest, routers/api/v1/repo/pull.go: "TODO this should be 200, not 201")."""
    transfers_issues = False
    """The stand-in's Gitea redirects no transferred issue's old URL (only a renamed
    repository's, `moved`)."""
    creator_key = "created_by"
    """ListIssues' filter of who opened the issue (routers/api/v1/repo/issue.go)."""
    protected_refusal = """        if [ "$new" = "0000000000000000000000000000000000000000" ]; then
            echo "Gitea: branch $branch is protected from deletion" >&2
        else
            echo "Gitea: Not allowed to push to protected branch $branch" >&2
        fi"""
    """The pre-receive hook's words for a protected branch (dev.standin.git_backend):
    HookPreReceive's preReceiveBranch (routers/private/hook_pre_receive.go) answers the UserMsg
    "Not allowed to push to protected branch %s" (and "branch %s is protected from deletion");
    `gitea hook pre-receive` prints it as "Gitea: " + the message (fail() in cmd/serv.go, called
    by runHookPreReceive in cmd/hook.go)."""

    def __init__(self, forge: Any) -> None:
        self.forge: StandinForge = forge
        """The StandinForge served (built by ForgeState, its base, before its other layers)."""

    # Tokens and scopes (issue 36)
    def checked_scopes(
        self, scopes: Iterable[str] | None, installation: bool
    ) -> frozenset[str] | None:
        """The token's scopes as given, each one of Gitea's names (`all`, `read:issue`...)."""
        if installation:
            raise ValueError(
                "installation=True is a GitHub App's token: the flavour must be github"
            )
        if scopes is None:
            return None
        given = frozenset(scopes)
        known = {"all"} | {f"{lv}:{c}" for lv in ("read", "write") for c in GITEA_SCOPE_CATEGORIES}
        unknown = sorted(given - known)
        if unknown:
            raise ValueError(f"unknown gitea token scope(s) {unknown}: one of {sorted(known)}")
        return given

    def token_refusal(self, method: str, parts: list[str]) -> Answer | None:
        """Gitea decides by the route's group, before the owner, repository or issue is looked up
        (routers/api/v1/api.go: `tokenRequiresScopes(...)` on each m.Group; the level is read for
        GET/HEAD, write for POST/PUT/PATCH/DELETE): /repos/{o}/{r}/issues/**, /labels and
        /milestones need `issue`; the rest of /repos/{o}/{r}/** (the repository, pulls,
        statuses, commits, collaborators, git, contents) and /repositories/{id} `repository`;
        /orgs/{org}/** (its labels too, even when the owner is a user) `organization`; /user
        and /users/** `user`. A refusal is ctx.Error's APIError: 403 {"message": "token does not
        have at least one of required scope(s): [read:organization]", "url": ...}."""
        scopes = self.forge.scopes
        level = "read" if method in ("GET", "HEAD") else "write"
        category = _gitea_scope_category(parts)
        if category is None or scopes is None or _granted(scopes, category, level):
            return None
        scope = f"{level}:{category}"
        return self.error(403, f"token does not have at least one of required scope(s): [{scope}]")

    def git_tokens(self, user: str, password: str) -> list[str]:
        """Where a git request's Basic credentials may carry the token: the password, or the
        username with an empty password or "x-oauth-basic" (Basic.Verify, services/auth/
        basic.go)."""
        return [password] + ([user] if password in ("", "x-oauth-basic") else [])

    def git_refused(self, owner: str, repo: str) -> CgiAnswer:
        """A git request the token's scopes do not cover: a bare 403 (CheckRepoScopedToken)."""
        return CgiAnswer(403, {"Content-Type": "text/plain"}, b"Forbidden\n")

    # Errors
    def error(self, status: int, message: str) -> Answer:
        """Gitea's APIError (services/context/api.go): `message` and the swagger's `url`."""
        return Answer(status, {}, {"message": message, "url": f"{self.forge.url}/api/swagger"})

    def not_found(self) -> Answer:
        """Gitea's APIErrorNotFound without a message (services/context/api.go): "The target
        couldn't be found." with an empty `errors`."""
        answer = self.error(404, "The target couldn't be found.")
        return replace(answer, body=answer.body | {"errors": []})

    def unauthorized(self) -> Answer:
        """A request without an accepted token where one is needed: 401 "token is required"."""
        return self.error(401, "token is required")

    def issue_gone(self, owner: str, repo: str, number: int) -> Answer:
        """A deleted issue, or one never made: 404 (GetIssueByIndex: IsErrIssueNotExist,
        NotFound)."""
        return self.error(404, "Not Found")

    def missing(self, resource: str, *fields: str) -> Answer:
        """A form without its required fields: binding:"Required" answers 422 naming each
        ("[Title]: Required"; for a pull request "[Head]: Required; [Base]: Required; [Title]:
        Required")."""
        return self.error(422, "; ".join(f"[{name}]: Required" for name in fields))

    def invalid_field(self, resource: str, field: str) -> Answer:
        """A field of a value the binding refuses: 422 "[State]: invalid"."""
        return self.error(422, f"[{field.title()}]: invalid")

    def too_long(self, resource: str, text: object) -> Answer | None:
        """Gitea sets no limit on a body."""
        return None

    # Rate limits and caching: Gitea sends neither rate-limit headers nor an ETag here.
    def count_rate(self, answer: Answer) -> Answer:
        return answer

    def rate_spent(self) -> Answer | None:
        return None

    def etag(self, body: bytes) -> str | None:
        return None

    # Paths: renamed and archived repositories
    def current_path(self, path: str) -> str:
        """Gitea serves a repository by its name only, here."""
        return path

    def moved(
        self, method: str, new: tuple[str, str], repo_id: int, suffix: str, search: str
    ) -> Answer:
        """A renamed repository's old name: 307 to the new name's path, the query kept, no
        scheme or host (RedirectToRepo, services/context/repo.go)."""
        location = f"{self.prefix}/repos/{new[0]}/{new[1]}/{suffix}".rstrip("/") + search
        return Answer(307, {"Location": location}, None, raw=b"")

    def archived_refusal(self, method: str, parts: list[str]) -> Answer | None:
        """Gitea refuses, in an archived repository, the writes its API routes guard with
        `mustNotBeArchived` (routers/api/v1/api.go: 423 Locked, APIError "repo is archived"),
        among them: opening an issue or a pull request, posting or editing a comment, and
        adding or removing a dependency. Label writes are not guarded there."""
        if method == "GET" or parts[0] != "repos" or len(parts) < 4:
            return None
        with self.forge._lock:
            if (parts[1], parts[2]) not in self.forge._archived:
                return None
        rest = parts[3:]
        of_issue = len(rest) == 3 and rest[0] == "issues" and rest[1].isdigit()
        under_issue = rest[2] if of_issue else None
        opens = method == "POST" and rest in (["issues"], ["pulls"])
        comments = (method == "POST" and under_issue == "comments") or (
            method == "PATCH" and len(rest) == 3 and rest[:2] == ["issues", "comments"]
        )
        guarded = opens or comments or under_issue == "dependencies"
        return self.error(423, "repo is archived") if guarded else None

    # The account, the version, the organisation's labels
    def account_json(self) -> dict[str, Any]:
        """GET /user: the token's account and its own primary address (services/convert/
        user.go toUser)."""
        return {"id": 2, "login": self.forge.login, "email": self.forge.account_email}

    def account_headers(self) -> dict[str, str]:
        return {}

    def misc_answer(self, method: str, parts: list[str], query: dict[str, str]) -> Answer | None:
        """GET /api/v1/version, no token needed: {"version": setting.AppVer} (routers/api/v1/
        misc/version.go Version; m.Get("/version") in routers/api/v1/api.go). GET /orgs/{org}/
        labels (routers/api/v1/org/label.go ListLabels: pages like the repository's list,
        X-Total-Count and no Link; 404 when the owner is a user, not an organisation)."""
        if parts == ["version"] and method == "GET":
            return Answer(200, {}, {"version": GITEA_VERSION})
        if len(parts) == 3 and parts[::2] == ["orgs", "labels"]:
            forge = self.forge
            with forge._lock:
                org = forge._org_labels.get(parts[1])
                if org is None:
                    return self.error(404, "Not Found")
                items = [forge._label_json(parts[1], "", label) for label in org.values()]
            return self.label_list(items, query)
        return None

    # Paging
    def page_size(self, query: dict[str, str]) -> int:
        """The items Gitea puts on a page for `limit` (services/convert/utils.go
        ToCorrectPageSize): none or below 1 is `[api] DEFAULT_PAGING_NUM` (30), above `[api]
        MAX_RESPONSE_ITEMS` (`max_page_size`) is that."""
        asked = int(query.get("limit", "0") or 0)
        return 30 if asked <= 0 else min(asked, self.forge.max_page_size)

    def total_count(self, count: int) -> dict[str, str]:
        """Gitea counts every matching item in X-Total-Count (SetTotalCountHeader)."""
        return {"X-Total-Count": str(count)}

    def page(
        self, items: list[Any], query: dict[str, str], path: str, *, counted: bool = True
    ) -> tuple[list[Any], dict[str, str]]:
        """One page of a listing and its headers: `limit` clamped to MAX_RESPONSE_ITEMS,
        X-Total-Count and no Link for the lists served so (SetTotalCountHeader only:
        ListRepoIssueComments, ListPullReviews, GetCombinedCommitStatusByRef); `counted` False
        for one that has neither."""
        asked = int(query.get(self.size_key, "0") or 0)
        size = min(asked if asked > 0 else 30, self.forge.max_page_size)
        page = max(int(query.get("page", "1") or 1), 1)
        chosen = items[(page - 1) * size : page * size]
        return chosen, (self.total_count(len(items)) if counted else {})

    # The issue listing
    def listing_filter(self, chosen: list[StoredIssue], query: dict[str, str]) -> list[StoredIssue]:
        """ListIssues' `type=issues` leaves pull requests out; `created_by` names who opened it."""
        if query.get("type") == "issues":
            chosen = [i for i in chosen if not i.pull_request]
        creator = query.get(self.creator_key)
        return [i for i in chosen if i.author == creator] if creator else chosen

    def listing_sort(self, chosen: list[StoredIssue], query: dict[str, str]) -> None:
        """Newest first (Gitea's default order; it takes no `sort=updated` here)."""
        chosen.sort(key=lambda i: i.number, reverse=True)

    # JSON shapes (templates/swagger/v1_json.tmpl)
    def user_json(self, login: str) -> dict[str, Any]:
        return {"id": 10 + sum(login.encode()), "login": login, "username": login}

    def owner_extra(self, owner: str) -> dict[str, Any]:
        """A repository's owner also carries `username` (services/convert/user.go)."""
        return {"username": owner}

    def repo_extra(self) -> dict[str, Any]:
        """Whether the repository's pull requests are on (`has_pull_requests`)."""
        return {"has_pull_requests": self.forge.has_pull_requests}

    def issue_json(
        self,
        owner: str,
        repo: str,
        issue: StoredIssue,
        ids: dict[str, int],
        api: str,
        web: str,
    ) -> dict[str, Any]:
        """Gitea's `Issue`: labels with ids, `pull_request` {merged, merged_at} or null (the
        `PullRequestMeta` of modules/structs/issue.go: `HasMerged`, `Merged`), and a short
        `repository`."""
        labels = [
            {"id": ids.get(name, n), "name": name, "color": "00aabb", "description": "", "url": ""}
            for n, name in enumerate(issue.labels, 1)
        ]
        merged = {"merged": issue.merged_at is not None, "merged_at": _time(issue.merged_at)}
        pr = merged if issue.pull_request else None
        return {
            "labels": labels,
            "assignees": None,
            "is_locked": False,
            "ref": "",
            "original_author": "",
            "original_author_id": 0,
            "due_date": None,
            "pull_request": pr,
            "repository": {"id": 1, "name": repo, "owner": owner, "full_name": f"{owner}/{repo}"},
        }

    def label_json(self, api: str, label: RepoLabel) -> dict[str, Any]:
        """Gitea's `Label`: its `url` by id, `exclusive` (scoped labels), `is_archived`."""
        return {
            "id": label.id,
            "name": label.name,
            "exclusive": label.exclusive,
            "is_archived": False,
            "color": label.color,
            "description": label.description,
            "url": f"{api}/{label.id}",
        }

    def comment_json(self, owner: str, repo: str, number: int, comment: Comment) -> dict[str, Any]:
        """A pull request's comment has no issue_url but a pull_request_url, both web pages
        (models/issues/comment.go IssueURL, PRURL)."""
        forge = self.forge
        issue = forge._repos.get((owner, repo), {}).get(number)
        pull = issue is not None and issue.pull_request
        web = f"{forge.url}/{owner}/{repo}/issues/{number}"
        return {
            "issue_url": "" if pull else web,
            "pull_request_url": self.pull_web_url(owner, repo, number) if pull else "",
            "original_author": "",
            "original_author_id": 0,
            "assets": [],
        }

    def pull_web_url(self, owner: str, repo: str, number: int) -> str:
        """A pull request's page is .../pulls/N (Issue.HTMLURL, models/issues/issue.go)."""
        return f"{self.forge.url}/{owner}/{repo}/pulls/{number}"

    def is_draft(self, title: str, pull: StoredPull) -> bool:
        """Gitea has no draft flag: a pull request is a draft (work in progress) when its title
        starts with one of `[repository.pull-request] WORK_IN_PROGRESS_PREFIXES`, "WIP:" and
        "[WIP]" by default (modules/setting/repository.go), compared case-insensitively
        (HasWorkInProgressPrefix, models/issues/pull.go); newer versions serve that as `draft`
        (services/convert/pull.go)."""
        return title.upper().startswith(GITEA_WIP_PREFIXES)

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
        """Gitea's `PullRequest` (modules/structs/pull.go; services/convert/pull.go
        ToAPIPullRequest): `url` is the web page too, `head.label` is the branch name, `head.ref`
        the branch when it exists and `refs/pull/N/head` when it is gone."""
        branch = {"repo_id": repo_json["id"], "repo": repo_json}
        return {
            "url": self.pull_web_url(owner, repo, issue.number),
            "body": issue.body,
            "assignees": None,
            "is_locked": False,
            "comments": 0,
            "mergeable": True,
            "merged": issue.merged_at is not None,  # PullRequest.HasMerged (json merged)
            "merged_by": None,
            "allow_maintainer_edit": False,
            "merge_base": base_sha,
            "due_date": None,
            "head": branch
            | {
                "label": pull.head,
                "ref": pull.head if head_sha else f"refs/pull/{issue.number}/head",
                "sha": head_sha,
            },
            "base": branch | {"label": pull.base, "ref": pull.base, "sha": base_sha},
        }

    # Labels (the mirror's): Gitea's take ids
    def label_list(self, items: list[dict[str, Any]], query: dict[str, str]) -> Answer:
        """Gitea's label lists: sorted by name, `limit` clamped (`page_size`), X-Total-Count the
        count of every label and NO Link header (routers/api/v1/repo/label.go and org/label.go
        ListLabels: SetTotalCountHeader(CountLabelsByRepoID/OrgID) only; go-gitea/gitea issue
        #21158); no count at all up to 1.15 (`gitea_label_totals`: go-gitea/gitea#17968 added
        the count in 1.16)."""
        items = sorted(items, key=lambda item: (str(item["name"]), int(item["id"])))
        size = self.page_size(query)
        page = max(int(query.get("page", "1") or 1), 1)
        chosen = items[(page - 1) * size : page * size]
        headers = self.total_count(len(items)) if self.forge.gitea_label_totals else {}
        return Answer(200, headers, chosen)

    def label_get(
        self, owner: str, repo: str, labels: dict[str, RepoLabel], ref: str
    ) -> Answer | None:
        """Gitea serves no GET of one label by name here (None: 405)."""
        return None

    def label_key(self, labels: dict[str, RepoLabel], ref: str) -> str | None:
        """DELETE .../labels/{id}: the name of the label of that id (DeleteLabel, routers/api/v1/
        repo/label.go)."""
        return next((n for n, label in labels.items() if str(label.id) == ref), None)

    def label_delete_missing(self) -> Answer:
        """DeleteLabel answers 204 for an id it has no label of, too."""
        return Answer(204, {}, None, raw=b"")

    def valid_color(self, color: str) -> bool:
        """Gitea up to 1.20 wants "#rrggbb" (binding Size(7))."""
        return color.startswith("#") and _is_hex_color(color[1:])

    def label_create_refusal(self, labels: dict[str, RepoLabel], name: str) -> Answer | None:
        """Gitea refuses no label name here: a name it has already is a second label of that
        name (CreateLabel checks no name: routers/api/v1/repo/label.go CreateLabel ->
        issues_model.NewLabel), which the shared route stores beside the first."""
        return None

    def exclusive(self, body: dict[str, Any]) -> bool:
        """A label created `exclusive: true` is a scoped one (`exclusive_scope`)."""
        return bool(body.get("exclusive", False))

    def exclusive_scope(self, label: RepoLabel) -> str:
        return exclusive_scope(label)

    def issue_label_to_remove(
        self,
        ref: str,
        by_id: dict[int, RepoLabel],
        labels: dict[str, RepoLabel],
        on_issue: list[str],
    ) -> RepoLabel | Answer:
        """DELETE /issues/{index}/labels/{id}: an id, any label the issue may carry
        (routers/api/v1/repo/issue_label.go DeleteIssueLabel: GetLabelByID); 422 for none."""
        label = by_id.get(int(ref)) if ref.isdigit() else None
        return self.error(422, "label not found") if label is None else label

    def issue_label_removed(self, owner: str, repo: str, number: int) -> Answer:
        """DeleteIssueLabel answers 204, no body."""
        return Answer(204, {}, None, raw=b"")

    def issue_label_name(
        self,
        item: object,
        by_id: dict[int, RepoLabel],
        labels: dict[str, RepoLabel],
        org: dict[str, RepoLabel],
        owner: str,
        repo: str,
    ) -> str | Answer:
        """An issue's labels are added by id: the repository's and its organisation's
        (services/issue/label.go). Up to 1.20 IssueLabelsOption.labels is []int64, so a name
        fails to unmarshal (`gitea_label_refs="ids"`); newer ones take names too."""
        if isinstance(item, int) and item in by_id:
            return by_id[item].name
        if isinstance(item, str) and self.forge.gitea_label_refs == "ids":
            return self.error(422, "json: cannot unmarshal string into Go value of type int64")
        if isinstance(item, str) and (item in labels or item in org):
            return item
        return self.error(422, "label not found")

    # An issue's timeline (label and state changes, comments)
    def events_answer(self, owner: str, repo: str, number: int, query: dict[str, str]) -> Answer:
        """GET .../issues/{index}/timeline (routers/api/v1/repo/issue_comment.go
        ListIssueCommentsAndTimeline): every comment of the issue, plain ones and label and state
        changes alike (a label change a comment of type "label" with body "1" when added and ""
        when removed, "close" and "reopen"), oldest created first (models/issues/comment.go
        FindComments: created_unix, then id), `since` against their updated time; paged by
        page/limit, `limit` clamped (`page_size`). Its X-Total-Count is the count of THIS page
        (SetTotalCountHeader(len(apiComments))), and a page with nothing on it is `null`: `var
        apiComments []*api.TimelineComment` stays a nil slice, which Go's JSON writes as null."""
        forge = self.forge
        since = datetime.fromisoformat(query["since"]) if "since" in query else None
        entries: list[tuple[datetime, int, dict[str, Any]]] = []
        for comment in forge._comments.get((owner, repo, number), []):
            if since is None or (comment.updated_at or comment.created_at) >= since:
                item = self._timeline_comment_json(owner, repo, number, comment)
                entries.append((comment.created_at, comment.id, item))
        for event in forge._events.get((owner, repo, number), []):
            if since is None or event.at >= since:
                item = self._timeline_json(owner, repo, number, event)
                entries.append((event.at, event.id, item))
        entries.sort(key=lambda entry: (entry[0], entry[1]))
        size = self.page_size(query)
        page = max(int(query.get("page", "1") or 1), 1)
        chosen = [item for _, _, item in entries[(page - 1) * size : page * size]]
        return Answer(200, {"X-Total-Count": str(len(chosen))}, chosen or None)

    def _timeline_comment_json(
        self, owner: str, repo: str, number: int, comment: Comment
    ) -> dict[str, Any]:
        """A plain comment as the timeline shows it (services/convert/issue_comment.go
        ToTimelineComment): type "comment", its text the body, no label."""
        web = f"{self.forge.url}/{owner}/{repo}/issues/{number}"
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
        web = f"{self.forge.url}/{owner}/{repo}/issues/{number}"
        label = event.label
        return {
            "id": event.id,
            "type": kind[event.kind],
            "body": "1" if event.kind == "labeled" else "",
            "user": {"id": 1, "login": event.actor},
            "label": None if label is None else self.forge._label_json(owner, repo, label),
            "created_at": _time(event.at),
            "updated_at": _time(event.at),
            "html_url": f"{web}#issuecomment-{event.id}",
            "issue_url": web,
            "pull_request_url": "",
        }

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
        """CreatePullRequest (routers/api/v1/repo/pull.go): head == base is a 422; a head or
        base that is no branch (parseCompareInfo, UnstableGuessRefByShortName) a 404 with
        APIErrorNotFound; an open pull request with the same head and base a 409 whose message
        is ErrPullRequestAlreadyExists (models/issues/pull.go)."""
        head_sha, base_sha = shas
        if head == base:
            return self.error(
                422, "Invalid PullRequest: There are no changes between the head and the base"
            )
        if head_sha is None or base_sha is None:
            return self.not_found()
        if open_from_head:
            repo_id = self.forge._repo_id(owner, repo)
            return self.error(
                409,
                "pull request already exists for these targets [id: "
                f"{5000 + open_from_head[0]}, issue_id: {open_from_head[0]}, head_repo_id:"
                f" {repo_id}, base_repo_id: {repo_id}, head_branch: {branch}, base_branch:"
                f" {base}]",
            )
        return None

    def draft(self, form: dict[str, Any]) -> bool:
        """Gitea takes no `draft`: a draft is its title's prefix (`is_draft`)."""
        return False

    def created_headers(self, owner: str, repo: str, number: int) -> dict[str, str]:
        return {}

    def pull_listed(self, query: dict[str, str], owner: str, pull: StoredPull) -> bool:
        """ListPullRequests (routers/api/v1/repo/pull.go) has no head or base filter here."""
        return True

    # The work graph's relations (issue 35)
    def relation_route(self, rest: list[str]) -> bool:
        """GET .../issues/{index}/dependencies and .../blocks (and POST, DELETE dependencies)."""
        return rest in (["dependencies"], ["blocks"])

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
        """routers/api/v1/repo/issue_dependency.go. GET .../dependencies (GetIssueDependencies)
        and .../blocks (GetIssueBlocks): issues paged by page/limit (clamped to
        MAX_RESPONSE_ITEMS) with neither X-Total-Count nor Link. POST and DELETE
        .../dependencies take an IssueMeta {owner, repo, index}: 201 with the issue (DELETE
        answers 201 too); a dependency that exists already, or would make the pair circular, or
        one removed that is not there, fails in the model (models/issues/dependency.go
        ErrDependencyExists, ErrCircularDependency, ErrDependencyNotExists) and reaches the API as
        500 (ctx.Error(http.StatusInternalServerError, ...)); an unknown issue is 404."""
        forge, what = self.forge, rest[0]
        key = (owner, repo, number)
        if method == "GET":
            if what == "blocks":
                blocking = [k for k, found in forge._blockers.items() if key in found]
                return forge._listed(sorted(blocking), query, path, counted=False)
            return forge._listed(forge._blockers.get(key, []), query, path, counted=False)
        if what != "dependencies" or method not in ("POST", "DELETE"):
            return self.error(405, "Method Not Allowed")
        form = body if isinstance(body, dict) else {}
        on_owner, on_repo, index = form.get("owner"), form.get("repo"), form.get("index")
        if not isinstance(on_owner, str) or not isinstance(on_repo, str) or type(index) is not int:
            return self.missing("IssueMeta", "Index")
        if index not in forge._repos.get((on_owner, on_repo), {}):
            return self.not_found()
        other = (on_owner, on_repo, index)
        blockers = forge._blockers.setdefault(key, [])
        issue = forge._repos[(owner, repo)][number]
        if method == "POST":
            if other in blockers or key in forge._blockers.get(other, []) or other == key:
                return self.error(500, "CreateIssueDependency")
            blockers.append(other)
            return Answer(201, {}, forge._issue_json(owner, repo, issue))
        if other not in blockers:
            return self.error(500, "RemoveIssueDependency")
        blockers.remove(other)
        return Answer(201, {}, forge._issue_json(owner, repo, issue))
