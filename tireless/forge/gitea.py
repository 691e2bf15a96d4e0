"""Gitea and Forgejo (API v1): `GET {base}/api/v1/repos/{owner}/{repo}/issues?state=...&since=...&
page=N&limit=M` with `Authorization: token T`. Without `type` the listing holds pull requests too
(`routers/api/v1/repo/issue.go` ListIssues filters by type only when it is given): their numbers
say whose conversation changed, since every comment, a review's included, moves its issue's
`updated_unix` (`models/issues/comment.go` updateCommentInfos).

Gitea clamps `limit` to its `[api] MAX_RESPONSE_ITEMS` (50 by default), so a page shorter than
the limit asked for says nothing about the end: the pages are followed by `Link: rel="next"`
(tireless.forge.paging), and their items (with those skipped as too large) must add up to the
`X-Total-Count` the first page announced.

Delivery's calls: `GET /repos/{o}/{r}` (its `default_branch`), `GET .../pulls?state=open` (every
page, the one from a branch picked by its head), `POST .../pulls`, `GET` and `PATCH
.../pulls/{index}`. A Gitea draft is a title prefix, not a flag (see `WIP_PREFIXES`).

The conversation's: `GET .../issues/comments?since=`, `GET .../pulls/{index}/reviews` and
`.../reviews/{id}/comments`, `GET .../collaborators/{login}/permission`, `GET
.../commits/{ref}/status`, `POST .../issues/comments/{id}/reactions`.

The work graph's (issue 35): `GET` and `POST .../issues/{index}/dependencies`; `PATCH
.../issues/comments/{id}` (a plan's outcome comment, its checklist of children kept current).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, urlencode

from tireless.forge.client import (
    MAX_FORGE_DEPENDENCIES,
    BadResponse,
    Check,
    ForgeComment,
    ForgeIssue,
    ForgeNote,
    ForgeStopped,
    IssueEvent,
    IssueRef,
    Listing,
    PullRequest,
    ReadFailed,
    Response,
    ReviewComment,
    Reviews,
    WriteRefused,
)
from tireless.forge.http import (
    LOGIN_LOOKUP,
    MAX_BYTES,
    QUICK_RETRIES,
    TIMEOUT,
    Http,
    sent_or_found,
)
from tireless.forge.paging import read_pages
from tireless.forge.pull_fate import pull_fates
from tireless.forge.validate import (
    check,
    comment,
    created_number,
    decode_json,
    full_name,
    in_order,
    issue,
    issue_ref,
    listed_issues,
    login_of,
    marked_issue,
    not_moved,
    note,
    permission_level,
    pull_updates,
    review,
    review_comment,
    timestamp,
)

PAGE_SIZE = 50
WIP_PREFIXES = ("WIP:", "[WIP]")
"""Gitea has no draft flag: a pull request whose title starts with one of `[repository.
pull-request] WORK_IN_PROGRESS_PREFIXES` ("WIP:" and "[WIP]" by default, modules/setting/
repository.go; compared case-insensitively, HasWorkInProgressPrefix in models/issues/pull.go) is
a work in progress; newer versions serve that as `draft` (services/convert/pull.go), older ones
not at all, so the prefix is what the client writes and, without `draft`, what it reads."""
DRAFT_PREFIX = "WIP: "
LABEL_COLOR = "#6a737d"
"""Gitea up to 1.20 wants a color as "#rrggbb" (binding Size(7)); newer ones take that too."""
MAX_PAGES = 2000
_TIMELINE_KINDS = {
    ("label", True): "labeled",
    ("label", False): "unlabeled",
    ("close", False): "closed",
    ("close", True): "closed",
    ("reopen", False): "reopened",
    ("reopen", True): "reopened",
}
REVIEW_STATES = {
    "REQUEST_CHANGES": "changes_requested",
    "APPROVED": "approved",
    "COMMENT": "commented",
    "PENDING": "pending",
    "REQUEST_REVIEW": "pending",
}
"""Gitea's review states (modules/structs/pull_review.go ReviewStateType; services/convert/
pull_review.go ToPullReview): REQUEST_REVIEW is a review asked of someone, not yet given."""
STATUS_STATES = {
    "pending": "pending",
    "success": "passed",
    "warning": "passed",
    "skipped": "passed",
    "error": "failed",
    "failure": "failed",
}
"""A commit status's state (modules/structs/commit_status.go: pending, success, error, failure,
warning; skipped in newer versions). Error and failure are the verdicts against the commit;
a warning passed with remarks (Gitea ranks it above failure), skipped ran nothing. A state we do
not know (the combined-only `running_with_failure`, one to come) asks for nothing: pending."""


ORG_LABELS_LOOKUP = "the organisation's labels (GET /orgs/{owner}/labels)"
"""An optional lookup (Http.optional): a token without read:organization is refused it."""
REPO_NAME_LOOKUP = "a renamed repository's new name (GET /repos/{owner}/{repo})"
"""An optional lookup (Http.optional): a token without read:repository is refused it."""


def rfc3339(when: datetime) -> str:
    """Whole seconds, rounded down: Gitea compares `since` with its updated unix seconds."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class GiteaClient:
    def __init__(
        self,
        base_url: str,
        token: str | None,
        *,
        timeout: float = TIMEOUT,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        headers = {"Accept": "application/json"}
        if token:
            headers["Authorization"] = f"token {token}"
        api = base_url.rstrip("/") + "/api/v1"
        self._login: str | None = None
        self._http = Http(api, headers, timeout=timeout, max_bytes=max_bytes)
        self._label_ids: dict[tuple[str, str], dict[str, int]] = {}

    def close(self) -> None:
        self._http.close()

    def _issues_url(self, owner: str, repo: str) -> str:
        return self._http.url(f"repos/{quote(owner, safe='')}/{quote(repo, safe='')}/issues")

    def _repo_url(self, owner: str, repo: str) -> str:
        return self._http.url(f"repos/{quote(owner, safe='')}/{quote(repo, safe='')}")

    def _labels_url(self, owner: str, repo: str) -> str:
        return self._http.url(f"repos/{quote(owner, safe='')}/{quote(repo, safe='')}/labels")

    # The mirror. The issue-labels endpoints take label ids (IssueLabelsOption.labels is []int64
    # up to Gitea 1.20; later versions take names too). An issue can carry the repository's labels
    # and its organisation's (routers/api/v1/org/label.go); the repository's list never holds the
    # organisation's, and DELETE .../issues/{index}/labels/{id} takes either id. So a label to take
    # off is found by its id on the issue itself, and a label to add in both lists, every page.
    def _labels(self, owner: str, repo: str, *, fresh: bool = False) -> dict[str, int]:
        key = (owner, repo)
        if fresh or key not in self._label_ids:
            org = self._http.url(f"orgs/{quote(owner, safe='')}/labels")
            # The organisation's first: a repository label of the same name is the nearer one.
            # Optional: a token without read:organization is refused them, whoever the owner is
            # (tokenRequiresScopes comes before orgAssignment, routers/api/v1/api.go); it then
            # knows the repository's labels only.
            listed = self._http.optional(
                ORG_LABELS_LOOKUP, lambda: self._label_pages(org, missing_ok=True)
            )
            ids = {item["name"]: item["id"] for item in listed or []}
            ids |= {
                item["name"]: item["id"]
                for item in self._label_pages(self._labels_url(owner, repo))
            }
            self._label_ids[key] = ids
        return self._label_ids[key]

    def _label_pages(self, url: str, *, missing_ok: bool = False) -> list[dict[str, Any]]:
        """Every label of a list. Gitea's label lists page by `page`/`limit` with X-Total-Count
        and send no Link header, sorted by name, at most MAX_RESPONSE_ITEMS (50 by default) a
        page (routers/api/v1/repo/label.go ListLabels: SetTotalCountHeader only, the count of
        every label; Gitea issue #21158)."""
        return [
            item
            for item in self._counted_pages(url, missing_ok=missing_ok)
            if isinstance(item.get("name"), str) and type(item.get("id")) is int
        ]

    def _counted_pages(
        self,
        url: str,
        params: dict[str, str] | None = None,
        *,
        key: str | None = None,
        missing_ok: bool = False,
    ) -> list[dict[str, Any]]:
        """Every item of a list Gitea pages by `page`/`limit` and counts in X-Total-Count with no
        Link header (SetTotalCountHeader only): pages are asked for until they hold the count, or
        one is empty. A page shorter than our `limit` says nothing: MAX_RESPONSE_ITEMS may clamp
        it (services/convert/utils.go ToCorrectPageSize), so a list sent without the count
        (Gitea up to 1.15's label lists: go-gitea/gitea#17968 added it) is read to an empty
        page. `key`: each page is an object with its items under that key (null when none);
        `missing_ok`: a 404 is no items (an owner that is a user has no organisation labels)."""
        found: list[dict[str, Any]] = []
        for page in range(1, MAX_PAGES + 1):
            asked = (params or {}) | {"page": str(page), "limit": str(PAGE_SIZE)}
            response = self._http.get(url, asked)
            if response.status == 404 and missing_ok:
                return []
            items = _json_list(response) if key is None else _listed_under(response, key)
            found += items
            total = _total_count(response)
            if not items or (total is not None and len(found) >= total):
                return found
        raise BadResponse(f"GET {url}: more than {MAX_PAGES} pages")

    def label_key(self, name: str) -> str:
        # Gitea and Forgejo match label names exactly (and even store two of one name).
        return name

    def ensure_label(self, owner: str, repo: str, name: str, description: str) -> None:
        if name in self._labels(owner, repo) or name in self._labels(owner, repo, fresh=True):
            return
        # Not exclusive: an exclusive scoped label would knock the other <prefix>/* labels off.
        # Never retried blindly: Gitea stores a second label of the same name (CreateLabel checks
        # no name), so a creation whose answer was lost is looked up before it is made again.
        body = {"name": name, "color": LABEL_COLOR, "description": description, "exclusive": False}
        for attempt in range(QUICK_RETRIES + 1):
            try:
                response = self._http.send("POST", self._labels_url(owner, repo), body, retry=False)
                break
            except ForgeStopped:
                raise
            except ReadFailed as failure:
                if name in self._labels(owner, repo, fresh=True):  # stored, or made by another
                    return
                if isinstance(failure, WriteRefused) or attempt == QUICK_RETRIES:
                    raise
        created = decode_json(
            response.body, response.headers.get("content-type", ""), response.where
        )
        if not isinstance(created, dict) or type(created.get("id")) is not int:
            raise BadResponse(f"{response.where}: the created label has no id")
        self._label_ids[(owner, repo)][name] = created["id"]

    def add_label(self, owner: str, repo: str, number: int, name: str) -> None:
        ids = self._labels(owner, repo)
        if name not in ids:
            ids = self._labels(owner, repo, fresh=True)
        if name not in ids:
            raise WriteRefused(f"label {name!r} is not a label of {owner}/{repo}")
        url = f"{self._issues_url(owner, repo)}/{number}/labels"
        self._http.send("POST", url, {"labels": [ids[name]]})

    def remove_label(self, owner: str, repo: str, number: int, name: str) -> None:
        labels_url = f"{self._issues_url(owner, repo)}/{number}/labels"
        on_issue = {item["name"]: item["id"] for item in _json_list(self._http.get(labels_url))}
        if name not in on_issue:
            return  # already off
        try:
            self._http.send("DELETE", f"{labels_url}/{on_issue[name]}")
        except WriteRefused as refused:  # the label went from the repository meanwhile
            if refused.status not in (404, 422):
                raise

    def comments(self, owner: str, repo: str, number: int) -> list[ForgeComment]:
        url: str | None = f"{self._issues_url(owner, repo)}/{number}/comments"
        found: list[ForgeComment] = []
        while url is not None:
            response = self._http.get(url)
            found += [comment(item, response.where) for item in _json_list(response)]
            url = self._http.next_page(response)
        return found

    def add_comment(self, owner: str, repo: str, number: int, body: str) -> None:
        url = f"{self._issues_url(owner, repo)}/{number}/comments"
        self._http.learn_login(self._http.send("POST", url, {"body": body}, retry=False))

    def edit_comment(self, owner: str, repo: str, comment_id: int, body: str) -> None:
        # EditIssueComment (routers/api/v1/repo/issue_comment.go, PATCH .../issues/comments/{id}):
        # 200 with the comment; 404 for an unknown id or one of another repository; 403 unless the
        # account wrote it or is the repository's admin; 204, changing nothing, for a comment that
        # is not a plain one (a label or state change of the timeline).
        url = f"{self._issues_url(owner, repo)}/comments/{comment_id}"
        response = self._http.send("PATCH", url, {"body": body})
        self._http.learn_login(response)
        if response.status == 204:
            raise WriteRefused(
                f"{response.where}: comment {comment_id} is not a plain comment", 204
            )

    def issue_events(self, owner: str, repo: str, number: int, since: datetime) -> list[IssueEvent]:
        # The issue's timeline (routers/api/v1/repo/issue_comment.go ListIssueCommentsAndTimeline):
        # a label change is a comment of type "label" whose body is "1" when added and "" when
        # removed (services/issue/label.go); "close" and "reopen" change the state. Its pages
        # (page/limit, `limit` clamped to MAX_RESPONSE_ITEMS) are thinned after paging (code
        # comments and cross-references the token may not see are dropped), its X-Total-Count is
        # the count of that page and an empty page is `null` (a nil slice): neither a short
        # page nor the count says the end, only an empty page does.
        url = f"{self._issues_url(owner, repo)}/{number}/timeline"
        events: list[IssueEvent] = []
        for page in range(1, MAX_PAGES + 1):
            params = {"since": rfc3339(since), "page": str(page), "limit": str(PAGE_SIZE)}
            response = self._http.get(url, params)
            items = _json_list(response, null_is_empty=True)
            if not items:
                return sorted(events, key=lambda event: event.at)
            for item in items:
                kind = _TIMELINE_KINDS.get((str(item.get("type")), item.get("body") == "1"))
                label = item.get("label")
                name = label.get("name") if isinstance(label, dict) else None
                if kind is None or (kind.endswith("labeled") and not isinstance(name, str)):
                    continue
                at = timestamp(item.get("created_at"), response.where)
                events.append(IssueEvent(at, login_of(item, "user"), kind, name))
        raise BadResponse(f"GET {url}: more than {MAX_PAGES} pages of events")

    # The conversation on a pull request (issue 34).
    def comments_since(self, owner: str, repo: str, since: datetime | None) -> list[ForgeNote]:
        # ListRepoIssueComments (routers/api/v1/repo/issue_comment.go): the plain comments of
        # issues and pull requests alike, `since` compared with their updated time, oldest
        # created first, paged by page/limit with X-Total-Count and no Link.
        params = {} if since is None else {"since": rfc3339(since)}
        where = f"GET {owner}/{repo} comments"
        items = self._counted_pages(f"{self._issues_url(owner, repo)}/comments", params)
        return in_order([note(item, where) for item in items])

    def pull_reviews(self, owner: str, repo: str, pull: int, etag: str | None = None) -> Reviews:
        # ListPullReviews (routers/api/v1/repo/pull_review.go): paged by page/limit with
        # X-Total-Count and no Link, and no ETag; another's pending review is not shown
        # (services/convert/pull_review.go ToPullReviewList).
        url = f"{self._pulls_url(owner, repo)}/{pull}/reviews"
        where = f"GET {owner}/{repo} pull {pull} reviews"
        items = self._counted_pages(url)
        return Reviews(tuple(review(item, where, REVIEW_STATES) for item in items))

    def review_comments(
        self, owner: str, repo: str, pull: int, review_id: int
    ) -> list[ReviewComment]:
        # GetPullReviewComments (routers/api/v1/repo/pull_review.go): one unpaged array. The line
        # is `position` on the new side, `original_position` on the old (services/convert/
        # pull_review.go ToPullReviewCommentList: the other one is 0).
        url = f"{self._pulls_url(owner, repo)}/{pull}/reviews/{review_id}/comments"
        response = self._http.get(url)
        lines = ("position", "original_position")
        return [review_comment(item, response.where, lines) for item in _json_list(response)]

    def permission(self, owner: str, repo: str, login: str) -> str:
        # GetRepoPermissions (routers/api/v1/repo/collaborators.go): 404 for a login that is no
        # user; 403 when the token's account is neither a site admin, nor the repository's
        # admin, nor asking about itself: a refusal of this read, which says nothing of `login`
        # (so it is not taken as "none"). Sent as `send` so that 403 and 404 refuse this read
        # only (WriteRefused) where `get` would stop the whole forge (AuthRefused).
        url = f"{self._repo_url(owner, repo)}/collaborators/{quote(login, safe='')}/permission"
        try:
            response = self._http.send("GET", url)
        except WriteRefused as refused:
            if refused.status == 404:
                return "none"
            raise
        return permission_level(_sent_json(response), response.where)

    def checks(self, owner: str, repo: str, ref: str) -> list[Check]:
        # GetCombinedCommitStatusByRef (routers/api/v1/repo/status.go): the latest status of each
        # context under `statuses`, each state under the key `status` (modules/structs/status.go
        # CommitStatus), paged by page/limit with X-Total-Count and no Link; with no status at
        # all an empty CombinedStatus (`statuses` null), or, up to Gitea 1.14, 200 and no body.
        url = f"{self._repo_url(owner, repo)}/commits/{quote(ref, safe='')}/status"
        where = f"GET {owner}/{repo} status of {ref}"
        return [
            check(
                item.get("context"),
                STATUS_STATES.get(str(item.get("status", item.get("state"))), "pending"),
                item.get("description"),
                item.get("target_url"),
                where,
            )
            for item in self._counted_pages(url, key="statuses")
        ]

    def add_reaction(self, owner: str, repo: str, comment_id: int, content: str) -> None:
        # PostIssueCommentReaction (routers/api/v1/repo/issue_reaction.go): 201 when made, 200
        # when the account's reaction is there already, so a retry is harmless (before 1.10.2 a
        # 500: go-gitea/gitea#9544, #9550); 403 for a reaction not in `[ui] REACTIONS`.
        url = f"{self._issues_url(owner, repo)}/comments/{comment_id}/reactions"
        self._http.send("POST", url, {"content": content})

    # The work graph's forge relations (issue 35). GetIssueDependencies (routers/api/v1/repo/
    # issue_dependency.go): the issues this one is blocked by, paged by page/limit (`limit`
    # clamped to MAX_RESPONSE_ITEMS), with neither X-Total-Count nor Link; each an Issue whose
    # `repository` is {owner, name, full_name}, one the token may not read shown as {"title":
    # "HIDDEN"} (skipped). 404 when the repository's dependencies are disabled
    # (`IsDependenciesEnabled`: its issue settings, `[service] DEFAULT_ENABLE_DEPENDENCIES`), the
    # issue is gone or the token may not read its issues; 403 for a token without the issue scope
    # (`tokenRequiresScopes`, read:issue). Sent as `send` so that 403 and 404 refuse this read only
    # (WriteRefused: not available, no relation) where `get` would stop the whole forge.
    def issue_dependencies(
        self,
        owner: str,
        repo: str,
        number: int,
        *,
        blocked_by: bool = True,
        sub_issues: bool = True,  # Gitea and Forgejo have no sub-issues
    ) -> list[IssueRef] | None:
        if not blocked_by:
            return []
        return self._blockers(owner, repo, number)

    def _blockers(self, owner: str, repo: str, number: int) -> list[IssueRef] | None:
        url = f"{self._issues_url(owner, repo)}/{number}/dependencies"
        found: list[IssueRef] = []
        for page in range(1, MAX_PAGES + 1):
            query = urlencode({"page": str(page), "limit": str(PAGE_SIZE)})
            try:
                response = self._http.send("GET", f"{url}?{query}")
            except WriteRefused as refused:
                if refused.status in (403, 404, 410):
                    return None
                raise
            items = _sent_list(response)
            for item in items:
                ref = issue_ref(item, response.where)
                if ref is not None and ref not in found:
                    found.append(ref)
            # A page shorter than asked is the last: MAX_RESPONSE_ITEMS is 50 by default, our limit.
            if len(found) >= MAX_FORGE_DEPENDENCIES or len(items) < PAGE_SIZE:
                return found[:MAX_FORGE_DEPENDENCIES]
        raise BadResponse(f"GET {owner}/{repo}#{number} dependencies: more than {MAX_PAGES} pages")

    def add_dependency(self, owner: str, repo: str, number: int, on: int) -> None:
        # CreateIssueDependency (routers/api/v1/repo/issue_dependency.go) takes an IssueMeta
        # {owner, repo, index} and answers 201; one that exists already fails in the model
        # (models/issues/dependency.go CreateIssueDependency: ErrDependencyExists) and reaches the
        # API as a 500 (ctx.Error(http.StatusInternalServerError, ...)). So the dependencies are
        # read first, and again after a failed create (sent_or_found), never sent twice blindly.
        # 404 when dependencies are disabled, the repository archived or the token may not write.
        def there() -> bool | None:
            refs = self._blockers(owner, repo, number)
            return True if refs is not None and _names(refs, owner, repo, on) else None

        refs = self._blockers(owner, repo, number)
        if refs is None:
            raise WriteRefused(
                f"{owner}/{repo}#{number}: the forge's dependencies are off here", 404
            )
        if _names(refs, owner, repo, on):
            return
        url = f"{self._issues_url(owner, repo)}/{number}/dependencies"
        meta = {"owner": owner, "repo": repo, "index": on}
        sent_or_found(lambda: self._http.send("POST", url, meta, retry=False), there)

    def add_sub_issue(self, owner: str, repo: str, parent: int, child: int) -> None:
        return None  # Gitea and Forgejo have no sub-issues: the child's body links its parent

    def whoami(self) -> str:
        if self._login is None:
            # GET /user needs read:user (routers/api/v1/api.go): optional, see Http.learn_login.
            url = self._http.url("user")
            response = self._http.optional(LOGIN_LOOKUP, lambda: self._http.get(url))
            if response is None:
                self._login = self._http.learned_login()
                return self._login
            user = _json(response)
            if not isinstance(user, dict) or not isinstance(user.get("login"), str):
                raise BadResponse(f"{response.where}: no login")
            self._login = str(user["login"])
        return self._login

    def list_issues(
        self,
        owner: str,
        repo: str,
        *,
        since: datetime | None,
        state: str = "all",
        etag: str | None = None,  # Gitea sends no ETag for listings
    ) -> Listing:
        params = {"state": state, "page": "1", "limit": str(PAGE_SIZE)}
        if since is not None:
            params["since"] = rfc3339(since)
        pages = read_pages(self._http, self._issues_url(owner, repo), params, "limit")
        # Gitea counts every matching item on each page: the first page's count, or another's
        # when the first was too large and read in smaller pages.
        counted = pages.first or pages.last
        total = None if counted is None else _total_count(counted)
        if total is not None and len(pages.items) + len(pages.skipped) != total:
            raise BadResponse(
                f"GET {owner}/{repo} issues: X-Total-Count says {total},"
                f" the {pages.count} page(s) held {len(pages.items)}"
            )
        where = f"GET {owner}/{repo} issues"
        issues, odd = listed_issues(pages.items, where)
        fates, odd_fates = pull_fates(pages.items, where)
        moved_to = self._current_name(owner, repo) if pages.moved else None
        return Listing(
            tuple(issues),
            pages.count,
            moved_to=moved_to,
            skipped=tuple(pages.skipped) + odd_fates,
            pulls=pull_updates(pages.items, where),
            odd=tuple((left_out.number, left_out.problem) for left_out in odd),
            fates=fates,
        )

    def get_issue(self, owner: str, repo: str, number: int) -> ForgeIssue | None:
        response = self._http.get(f"{self._issues_url(owner, repo)}/{number}")
        if response.status in (404, 410):
            return None
        data = _json(response)
        # Gitea moves no issue to another repository (it has no issue transfer): a redirect whose
        # repository's name the token may not read is a rename.
        current = self._current_name(owner, repo) if response.moved else None
        if current is not None:
            not_moved(data, number, current, response.where)
        return issue(data, response.where)

    def repository_name(self, owner: str, repo: str) -> str:
        """owner/name as the forge calls the repository now (following a rename's redirect)."""
        response = self._http.get(self._repo_url(owner, repo))
        return full_name(_json(response), response.where)

    def _current_name(self, owner: str, repo: str) -> str | None:
        """repository_name, None when the token may not read the repository (GET
        /repos/{o}/{r} needs read:repository, its issues read:issue only): optional."""
        return self._http.optional(REPO_NAME_LOOKUP, lambda: self.repository_name(owner, repo))

    def set_deadline(self, seconds: float | None) -> None:
        self._http.set_deadline(seconds)

    def probe(self, method: str, path: str, body: object = None) -> Response:
        return self._http.probe(method, self._http.url(path), body)

    # Delivery: the default branch and the pull request from a branch.
    def create_issue(self, owner: str, repo: str, *, title: str, body: str) -> int:
        # CreateIssue (routers/api/v1/repo/issue.go): 201 with the issue; its labels take ids, so
        # the mirror adds them after (add_label), by name.
        payload = {"title": title, "body": body}
        response = self._http.send("POST", self._issues_url(owner, repo), payload, retry=False)
        self._http.learn_login(response)
        return created_number(_sent_json(response), response.where)

    def find_issue(
        self, owner: str, repo: str, *, marker: str, author: str | None, since: datetime
    ) -> int | None:
        # ListIssues (routers/api/v1/repo/issue.go): `created_by` (Gitea 1.17+; an older one
        # ignores it and the author is checked here anyway), `since` (updated at or after),
        # `type=issues`; paged by Link (SetLinkHeader).
        params = {
            "state": "all", "type": "issues", "since": rfc3339(since),
            "page": "1", "limit": str(PAGE_SIZE),
        } | ({"created_by": author} if author else {})  # fmt: skip
        pages = read_pages(self._http, self._issues_url(owner, repo), params, "limit")
        return marked_issue(pages.items, marker, author)

    def _pulls_url(self, owner: str, repo: str) -> str:
        return self._http.url(f"repos/{quote(owner, safe='')}/{quote(repo, safe='')}/pulls")

    def default_branch(self, owner: str, repo: str) -> str:
        response = self._http.get(self._repo_url(owner, repo))
        _not_missing(response)
        data = _json(response)
        branch = data.get("default_branch") if isinstance(data, dict) else None
        if not isinstance(branch, str) or not _is_name(branch):
            raise BadResponse(f"{response.where}: the repository has no default_branch")
        return branch

    def find_pull(self, owner: str, repo: str, head_branch: str) -> PullRequest | None:
        # Gitea's pull request list has no head filter (ListPullRequests, routers/api/v1/repo/
        # pull.go: state, sort, milestone, labels, poster, base_branch); GET .../pulls/{base}/
        # {head} (1.22+, GetPullRequestByBaseHead) needs the base and finds closed ones too. So
        # every open one is listed, paged by Link (SetLinkHeader), and picked by its head:
        # `head.label` is the branch name (PRBranchInfo.Name, modules/structs/pull.go), while
        # `head.ref` turns into refs/pull/N/head once the branch is gone.
        url = self._pulls_url(owner, repo)
        params: dict[str, str] | None = {"state": "open", "page": "1", "limit": str(PAGE_SIZE)}
        matches: list[dict[str, Any]] = []
        for _ in range(MAX_PAGES):
            response = self._http.get(url, params)
            _not_missing(response)
            matches += [item for item in _json_list(response) if _is_from(item, head_branch)]
            next_url = self._http.next_page(response)
            if next_url is None:
                return _pull(min(matches, key=_number), response.where) if matches else None
            url, params = next_url, None
        raise BadResponse(f"GET {owner}/{repo} pulls: more than {MAX_PAGES} pages")

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
        # Never retried blindly: a second open pull request from the same head to the same base
        # is refused with 409 (CreatePullRequest: ErrPullRequestAlreadyExists), but one to
        # another base would be made. A create refused, or whose answer was lost, is looked up
        # by its head before anything else; only a lost answer with nothing found is sent again.
        if draft and not _wip_prefix(title):
            title = DRAFT_PREFIX + title
        payload = {"head": head, "base": base, "title": title, "body": body}
        answer = sent_or_found(
            lambda: self._http.send("POST", self._pulls_url(owner, repo), payload, retry=False),
            lambda: self.find_pull(owner, repo, head),
        )
        if isinstance(answer, PullRequest):
            return answer
        return _pull(_sent_json(answer), answer.where)

    def update_pull(
        self, owner: str, repo: str, number: int, *, title: str, body: str
    ) -> PullRequest:
        # The draft prefix is part of the title: it is kept, or the edit would make the pull
        # request ready. EditPullRequest answers 201 (its own "TODO this should be 200").
        url = f"{self._pulls_url(owner, repo)}/{number}"
        response = self._http.get(url)
        _not_missing(response)
        current = _json(response)
        shown = current.get("title") if isinstance(current, dict) else None
        prefix = _wip_prefix(shown) if isinstance(shown, str) else ""
        if not prefix and isinstance(current, dict) and current.get("draft") is True:
            prefix = DRAFT_PREFIX
        if prefix and not _wip_prefix(title):
            title = prefix + title
        response = self._http.send("PATCH", url, {"title": title, "body": body})
        return _pull(_sent_json(response), response.where)


def _names(refs: list[IssueRef], owner: str, repo: str, number: int) -> bool:
    """Whether `refs` holds issue `number` of owner/repo (names compared without case)."""
    key = (owner.lower(), repo.lower(), number)
    return any((r.owner.lower(), r.repo.lower(), r.number) == key for r in refs)


def _sent_list(response: Response) -> list[dict[str, Any]]:
    """The JSON array of objects of a read sent as `send`."""
    data = _sent_json(response)
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise BadResponse(f"{response.where}: expected a JSON array of objects")
    return data


def _not_missing(response: Response) -> None:
    """A 404 (or 410) for a repository or pull request: refused, not retried as a failure."""
    if response.status in (404, 410):
        raise WriteRefused(
            f"{response.where}: HTTP {response.status}: not found (or the token cannot see it)",
            response.status,
        )


def _sent_json(response: Response) -> object:
    """The body of a write's 2xx answer."""
    return decode_json(response.body, response.headers.get("content-type", ""), response.where)


_UNSAFE = re.compile("[\x00\ud800-\udfff]")


def _is_name(name: str) -> bool:
    return bool(name) and not _UNSAFE.search(name)


def _wip_prefix(title: str) -> str:
    """The work-in-progress prefix a title starts with (and the blanks after it), else ""."""
    for prefix in WIP_PREFIXES:
        if title.upper().startswith(prefix):
            return title[: len(title) - len(title[len(prefix) :].lstrip())]
    return ""


def _number(item: dict[str, Any]) -> int:
    number = item.get("number")
    return number if type(number) is int else 0


def _is_from(item: dict[str, Any], branch: str) -> bool:
    """Whether a listed pull request comes from `branch` of the repository it is in: its head's
    label is the branch, and its head repository is its base repository (not a fork's)."""
    head, base = item.get("head"), item.get("base")
    if not isinstance(head, dict) or not isinstance(base, dict) or head.get("label") != branch:
        return False
    head_repo, base_repo = head.get("repo"), base.get("repo")
    if not isinstance(head_repo, dict) or not isinstance(base_repo, dict):
        return False  # a fork since deleted: not this repository's branch
    name, other = head_repo.get("full_name"), base_repo.get("full_name")
    return isinstance(name, str) and isinstance(other, str) and name.lower() == other.lower()


def _pull(item: object, where: str) -> PullRequest:
    """A pull request object (Gitea's swagger `PullRequest`), every field delivery reads checked."""
    if not isinstance(item, dict):
        raise BadResponse(f"{where}: a pull request is {type(item).__name__}, not an object")
    number = item.get("number")
    if type(number) is not int or number <= 0:
        raise BadResponse(f"{where}: a pull request has no positive integer number")
    at = f"{where}: pull request {number}"
    url = item.get("html_url") or item.get("url")
    state, title, body = item.get("state"), item.get("title"), item.get("body") or ""
    head, base = item.get("head"), item.get("base")
    if not isinstance(url, str) or not url:
        raise BadResponse(f"{at}: no html_url")
    if state not in ("open", "closed"):
        raise BadResponse(f"{at}: state {state!r:.40} is neither open nor closed")
    if not isinstance(title, str) or not isinstance(body, str):
        raise BadResponse(f"{at}: title or body is not a string")
    branches = []
    for side in (head, base):
        name = side.get("label") if isinstance(side, dict) else None
        if not isinstance(name, str) or not _is_name(name):
            raise BadResponse(f"{at}: head or base has no branch name (label)")
        branches.append(name)
    prefix = _wip_prefix(title)
    draft = item.get("draft")
    if not isinstance(draft, bool):  # Gitea before `draft` was served
        draft = bool(prefix)
    return PullRequest(
        number,
        url,
        branches[0],
        branches[1],
        str(state),
        draft,
        _UNSAFE.sub("\ufffd", title[len(prefix) :] if draft else title),
        _UNSAFE.sub("\ufffd", body),
    )


def _json(response: Response) -> object:
    if response.status != 200:
        raise BadResponse(f"{response.where}: HTTP {response.status}")
    return decode_json(response.body, response.headers.get("content-type", ""), response.where)


def _json_list(response: Response, *, null_is_empty: bool = False) -> list[dict[str, Any]]:
    """The JSON array of objects of a 200; `null_is_empty`: `null` is no items (Gitea answers a
    list it builds by appending, from a nil slice, as null when nothing was appended)."""
    data = _json(response)
    if data is None and null_is_empty:
        return []
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise BadResponse(f"{response.where}: expected a JSON array of objects")
    return data


def _total_count(response: Response) -> int | None:
    value = response.headers.get("x-total-count")
    if value is None:
        return None
    if not value.strip().isdigit():
        raise BadResponse(f"{response.where}: X-Total-Count {value!r:.20} is not a count")
    return int(value)


def _listed_under(response: Response, key: str) -> list[dict[str, Any]]:
    """The items under `key` of a page that is an object (null: none); a 200 with no body at all
    is no items (Gitea up to 1.14 answers a commit without statuses so)."""
    if response.status == 200 and not response.body.strip():
        return []
    data = _json(response)
    if not isinstance(data, dict):
        raise BadResponse(f"{response.where}: expected a JSON object, got {type(data).__name__}")
    items = data.get(key)
    if items is None:
        return []
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise BadResponse(f"{response.where}: expected an object with a list {key}")
    return items
