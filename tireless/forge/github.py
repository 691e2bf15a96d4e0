"""GitHub (REST): `GET {api}/repos/{owner}/{repo}/issues?state=...&since=...&per_page=100` with
`Authorization: Bearer T`, pages by `Link: rel="next"`. The first page carries an ETag; asking
again with `If-None-Match` answers 304 when nothing changed, and a 304 costs no rate limit.
Pull requests are listed among issues (they carry `pull_request`): skipped as issues, their
numbers say whose conversation changed.

Delivery's calls: `GET /repos/{o}/{r}` (its `default_branch`), `GET .../pulls?state=open&head=
owner:branch`, `POST .../pulls` (with `draft`), `PATCH .../pulls/{number}`.

The conversation's: `GET .../issues/comments?since=&sort=updated&direction=asc`, `GET
.../pulls/{n}/reviews` (conditional) and `.../reviews/{id}/comments`, `GET
.../collaborators/{login}/permission`, `GET .../commits/{ref}/status` and `.../check-runs`, `POST
.../issues/comments/{id}/reactions`.

The work graph's (issue 35): `GET` and `POST .../issues/{n}/dependencies/blocked_by` and
`.../issues/{n}/sub_issues`, read only when the listing's summaries say there is something;
`PATCH .../issues/comments/{id}` (a plan's outcome comment, its checklist of children kept current).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from tireless.forge.app_auth import GitHubApp, InstallationAuth
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
    rate_limit_reset,
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

PER_PAGE = 100
LABEL_COLOR = "6a737d"
MAX_PAGES = 2000
_EVENT_KINDS = ("labeled", "unlabeled", "closed", "reopened")
REVIEW_STATES = {
    "CHANGES_REQUESTED": "changes_requested",
    "APPROVED": "approved",
    "COMMENTED": "commented",
    "PENDING": "pending",
    "DISMISSED": "dismissed",
}
"""A review's `state` (docs.github.com/en/rest/pulls/reviews: APPROVED, CHANGES_REQUESTED,
COMMENTED, DISMISSED, PENDING)."""
STATUS_STATES = {"success": "passed", "pending": "pending", "failure": "failed", "error": "failed"}
"""A commit status's `state` (docs.github.com/en/rest/commits/statuses: error, failure, pending,
success); one we do not know asks for nothing: pending."""
CHECK_RUN_PASSED = ("success", "neutral", "skipped")
"""A completed check run's conclusions that pass, as a required check passes with them (docs.
github.com/en/repositories/configuring-branches-and-merges-in-your-repository/managing-
protected-branches/about-protected-branches#require-status-checks-before-merging: "successful,
skipped, or neutral"). Every other conclusion is a failure: failure, timed_out and
startup_failure are verdicts against the head (startup_failure: its workflow could not start,
say a broken workflow file); cancelled, action_required and stale would block a merge as well,
so a revision is asked with the run's summary (DESIGN: one failure on two heads in a row asks no
more). A run not completed (queued, in_progress, waiting, requested, pending) is pending."""


class GitHubClient:
    def __init__(
        self,
        base_url: str,
        token: str | None,
        *,
        timeout: float = TIMEOUT,
        max_bytes: int = MAX_BYTES,
        app: GitHubApp | None = None,
    ) -> None:
        headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
        if token and app is None:
            headers["Authorization"] = f"Bearer {token}"
        self._app = app
        self._login: str | None = None
        auth = None if app is None else InstallationAuth(app)
        self._http = Http(base_url, headers, timeout=timeout, max_bytes=max_bytes, auth=auth)
        self._known_labels: set[tuple[str, str, str]] = set()

    def close(self) -> None:
        self._http.close()

    def _issues_url(self, owner: str, repo: str) -> str:
        return self._http.url(f"repos/{quote(owner, safe='')}/{quote(repo, safe='')}/issues")

    def list_issues(
        self,
        owner: str,
        repo: str,
        *,
        since: datetime | None,
        state: str = "all",
        etag: str | None = None,
    ) -> Listing:
        # Newest change first: any change to the listed set changes page 1, so page 1's ETag
        # answers for the whole listing.
        params = {
            "state": state,
            "per_page": str(PER_PAGE),
            "sort": "updated",
            "direction": "desc",
            "page": "1",
        }
        if since is not None:
            params["since"] = since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        conditional = {"If-None-Match": etag} if etag else None
        pages = read_pages(
            self._http, self._issues_url(owner, repo), params, "per_page", conditional
        )
        if pages.first is not None and pages.first.status == 304:
            return Listing((), 1, etag, not_modified=True, limited_until=_limit(pages.first))
        where = f"GET {owner}/{repo} issues"
        issues, odd = listed_issues(pages.items, where)
        fates, odd_fates = pull_fates(pages.items, where)
        # A first page too large to read has no ETag to keep: the next read lists again.
        first_etag = None if pages.first is None else pages.first.headers.get("etag")
        last = pages.last or pages.first
        return Listing(
            tuple(issues),
            pages.count,
            first_etag if not pages.skipped else None,
            limited_until=None if last is None else _limit(last),
            moved_to=self.repository_name(owner, repo) if pages.moved else None,
            skipped=tuple(pages.skipped) + odd_fates,
            pulls=pull_updates(pages.items, where),
            odd=tuple((left_out.number, left_out.problem) for left_out in odd),
            fates=fates,
        )

    def repository_name(self, owner: str, repo: str) -> str:
        """owner/name as the forge calls the repository now (following a rename's redirect)."""
        response = self._http.get(self._repo_url(owner, repo))
        return full_name(_json(response), response.where)

    def set_deadline(self, seconds: float | None) -> None:
        self._http.set_deadline(seconds)

    def probe(self, method: str, path: str, body: object = None) -> Response:
        return self._http.probe(method, self._http.url(path), body)

    def _repo_url(self, owner: str, repo: str) -> str:
        return self._http.url(f"repos/{quote(owner, safe='')}/{quote(repo, safe='')}")

    # The mirror: GitHub's issue-labels endpoints take label names; GitHub has no organisation
    # labels (an organisation's default labels are copied into each new repository).
    def label_key(self, name: str) -> str:
        # GitHub matches label names without case: GET .../labels/Bug answers `bug`, and creating
        # `Bug` beside `bug` is 422 already_exists (rust-lang/triagebot#1915, git-bug/git-bug#176).
        return name.lower()

    def ensure_label(self, owner: str, repo: str, name: str, description: str) -> None:
        if (owner, repo, self.label_key(name)) in self._known_labels:
            return
        labels = f"{self._repo_url(owner, repo)}/labels"
        one = f"{labels}/{quote(name, safe='')}"
        body = {"name": name, "color": LABEL_COLOR, "description": description}
        attempt = 0
        while self._http.get(one).status != 200:
            try:
                self._http.send("POST", labels, body, retry=False)
                break
            except ForgeStopped:
                raise
            except ReadFailed as failure:  # 422 already_exists, or an answer lost when stored
                if isinstance(failure, WriteRefused) or attempt == QUICK_RETRIES:
                    if self._http.get(one).status == 200:
                        break
                    raise
            attempt += 1
        self._known_labels.add((owner, repo, self.label_key(name)))

    def add_label(self, owner: str, repo: str, number: int, name: str) -> None:
        url = f"{self._issues_url(owner, repo)}/{number}/labels"
        self._http.send("POST", url, {"labels": [name]})

    def remove_label(self, owner: str, repo: str, number: int, name: str) -> None:
        url = f"{self._issues_url(owner, repo)}/{number}/labels/{quote(name, safe='')}"
        try:
            self._http.send("DELETE", url)
        except WriteRefused as refused:  # 404: the label is not on the issue any more
            if refused.status != 404:
                raise

    def _pages(self, url: str, key: str | None = None) -> list[object]:
        """Every item of a list that pages by Link, 100 a page. `key`: each page is an object
        holding its items under that key (a commit's combined status, its check runs)."""
        next_url: str | None = url
        params: dict[str, str] | None = {"per_page": str(PER_PAGE)}
        items: list[object] = []
        while next_url is not None:
            response = self._http.get(next_url, params)
            data = _json(response)
            if key is not None:
                data = data.get(key) if isinstance(data, dict) else None
            if not isinstance(data, list):
                raise BadResponse(f"{response.where}: expected a JSON array")
            items += data
            next_url, params = self._http.next_page(response), None
        return items

    def comments(self, owner: str, repo: str, number: int) -> list[ForgeComment]:
        url = f"{self._issues_url(owner, repo)}/{number}/comments"
        return [comment(item, url) for item in self._pages(url)]

    def add_comment(self, owner: str, repo: str, number: int, body: str) -> None:
        url = f"{self._issues_url(owner, repo)}/{number}/comments"
        self._http.learn_login(self._http.send("POST", url, {"body": body}, retry=False))

    def edit_comment(self, owner: str, repo: str, comment_id: int, body: str) -> None:
        # PATCH .../issues/comments/{comment_id} (docs.github.com/rest/issues/comments#update-an-
        # issue-comment): 200 with the comment; 404 for an unknown id, 422 for an empty body, 403
        # when the account may not edit it (its author, or anyone with write access, may).
        url = f"{self._issues_url(owner, repo)}/comments/{comment_id}"
        self._http.learn_login(self._http.send("PATCH", url, {"body": body}))

    def issue_events(self, owner: str, repo: str, number: int, since: datetime) -> list[IssueEvent]:
        # GET /repos/{owner}/{repo}/issues/{issue_number}/events (docs.github.com/rest/issues/
        # events): oldest first, `event` "labeled"/"unlabeled" with `label.name`, "closed",
        # "reopened"; `actor.login`; no `since` parameter, so every page is read.
        url = f"{self._issues_url(owner, repo)}/{number}/events"
        events: list[IssueEvent] = []
        for item in self._pages(url):
            if not isinstance(item, dict) or item.get("event") not in _EVENT_KINDS:
                continue
            label = item.get("label")
            name = label.get("name") if isinstance(label, dict) else None
            kind = str(item["event"])
            if kind.endswith("labeled") and not isinstance(name, str):
                continue
            at = timestamp(item.get("created_at"), url)
            if at >= since:
                events.append(IssueEvent(at, login_of(item, "actor"), kind, name))
        return sorted(events, key=lambda event: event.at)

    # The conversation on a pull request (issue 34).
    def comments_since(self, owner: str, repo: str, since: datetime | None) -> list[ForgeNote]:
        # GET .../issues/comments (docs.github.com/en/rest/issues/comments#list-issue-comments-
        # for-a-repository): issues' and pull requests' comments, `since` compared with their
        # updated time, sorted by it, paged by Link.
        params = {"sort": "updated", "direction": "asc", "per_page": str(PER_PAGE), "page": "1"}
        if since is not None:
            params["since"] = since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        url = f"{self._issues_url(owner, repo)}/comments"
        pages = read_pages(self._http, url, params, "per_page")
        where = f"GET {owner}/{repo} comments"
        return in_order([note(item, where) for item in pages.items])

    def pull_reviews(self, owner: str, repo: str, pull: int, etag: str | None = None) -> Reviews:
        # GET .../pulls/{n}/reviews (docs.github.com/en/rest/pulls/reviews): oldest first, paged
        # by Link, no sort parameter. With If-None-Match a 304 costs no rate limit. A new review
        # lands on the last page, so page 1's ETag answers for the whole list only when it is
        # the only page; a longer list is read again each time.
        url = f"{self._pulls_url(owner, repo)}/{pull}/reviews"
        conditional = {"If-None-Match": etag} if etag else None
        params = {"per_page": str(PER_PAGE), "page": "1"}
        pages = read_pages(self._http, url, params, "per_page", conditional)
        if pages.first is not None and pages.first.status == 304:
            return Reviews((), etag, not_modified=True)
        where = f"GET {owner}/{repo} pull {pull} reviews"
        found = tuple(review(item, where, REVIEW_STATES) for item in pages.items)
        whole = pages.first is not None and pages.count == 1 and not pages.skipped
        return Reviews(found, pages.first.headers.get("etag") if whole and pages.first else None)

    def review_comments(
        self, owner: str, repo: str, pull: int, review_id: int
    ) -> list[ReviewComment]:
        # GET .../pulls/{n}/reviews/{id}/comments (docs.github.com/en/rest/pulls/reviews#list-
        # comments-for-a-pull-request-review): `line` is the file's line (null once outdated),
        # `original_line` the one it was written on; `position` counts lines of the diff, not of
        # the file, and is not read.
        url = f"{self._pulls_url(owner, repo)}/{pull}/reviews/{review_id}/comments"
        return [review_comment(item, url, ("line", "original_line")) for item in self._pages(url)]

    def permission(self, owner: str, repo: str, login: str) -> str:
        # GET .../collaborators/{login}/permission (docs.github.com/en/rest/collaborators/
        # collaborators#get-repository-permissions-for-a-user): 404 for a login that is not a
        # collaborator or no user; 403 "Must have push access to view collaborator permission."
        # when the token lacks push access (yegor256/rultor#1407): a refusal of this read that
        # says nothing of `login`. Sent as `send` so that 403 and 404 refuse this read only
        # (WriteRefused) where `get` would stop the whole forge (AuthRefused).
        url = f"{self._repo_url(owner, repo)}/collaborators/{quote(login, safe='')}/permission"
        try:
            response = self._http.send("GET", url)
        except WriteRefused as refused:
            if refused.status == 404:
                return "none"
            raise
        return permission_level(_sent_json(response), response.where)

    def checks(self, owner: str, repo: str, ref: str) -> list[Check]:
        # The combined status (docs.github.com/en/rest/commits/statuses#get-the-combined-status-
        # for-a-specific-reference: the latest status of each context) and the check runs
        # (docs.github.com/en/rest/checks/runs#list-check-runs-for-a-git-reference: the latest
        # of each name), each an object paged by Link.
        commit = f"{self._repo_url(owner, repo)}/commits/{quote(ref, safe='')}"
        where = f"GET {owner}/{repo} checks of {ref}"
        found: list[Check] = []
        for item in self._pages(f"{commit}/status", "statuses"):
            if not isinstance(item, dict):
                raise BadResponse(f"{where}: a status is not an object")
            state = STATUS_STATES.get(str(item.get("state")), "pending")
            summary, url = item.get("description"), item.get("target_url")
            found.append(check(item.get("context"), state, summary, url, where))
        for item in self._pages(f"{commit}/check-runs", "check_runs"):
            if not isinstance(item, dict):
                raise BadResponse(f"{where}: a check run is not an object")
            output = item.get("output")
            if not isinstance(output, dict):
                output = {}
            parts = [output.get("title"), output.get("summary")]
            summary = "\n\n".join(p for p in parts if isinstance(p, str) and p)
            url = item.get("details_url") or item.get("html_url")
            found.append(check(item.get("name"), _run_state(item), summary, url, where))
        return found

    def add_reaction(self, owner: str, repo: str, comment_id: int, content: str) -> None:
        # POST .../issues/comments/{id}/reactions (docs.github.com/en/rest/reactions/reactions#
        # create-reaction-for-an-issue-comment): 201 when made, 200 "Reaction exists", so a
        # retry is harmless.
        url = f"{self._issues_url(owner, repo)}/comments/{comment_id}/reactions"
        self._http.send("POST", url, {"content": content})

    # The work graph's forge relations (issue 35): GET .../issues/{n}/dependencies/blocked_by
    # (docs.github.com/rest/issues/issue-dependencies#list-dependencies-an-issue-is-blocked-by) and
    # GET .../issues/{n}/sub_issues (docs.github.com/rest/issues/sub-issues#list-sub-issues), each
    # a list of issues paged by Link (per_page at most 100), the repository of each in its
    # `repository_url`. 404 when the feature is not there (an older GitHub Enterprise Server) or
    # the token cannot see the issue, 403 without the Issues read permission, 410 for issues
    # disabled: sent as `send` so that these refuse this read only (not available: no relation)
    # where `get` would stop the whole forge. The listing's summaries (issue_dependencies_summary,
    # sub_issues_summary) say whether there is anything to read (ForgeIssue.forge_dependencies).
    def issue_dependencies(
        self,
        owner: str,
        repo: str,
        number: int,
        *,
        blocked_by: bool = True,
        sub_issues: bool = True,
    ) -> list[IssueRef] | None:
        found: list[IssueRef] = []
        available = False
        for wanted, what in ((blocked_by, "dependencies/blocked_by"), (sub_issues, "sub_issues")):
            if not wanted:
                available = True
                continue
            refs = self._related(owner, repo, number, what)
            if refs is not None:
                available = True
                found += [ref for ref in refs if ref not in found]
        return found[:MAX_FORGE_DEPENDENCIES] if available else None

    def _related(self, owner: str, repo: str, number: int, what: str) -> list[IssueRef] | None:
        """The issues of one relation list (`dependencies/blocked_by`, `sub_issues`), every page
        up to MAX_FORGE_DEPENDENCIES; None when the forge refuses the read (403, 404, 410)."""
        next_url: str | None = (
            f"{self._issues_url(owner, repo)}/{number}/{what}?per_page={PER_PAGE}&page=1"
        )
        found: list[IssueRef] = []
        for _ in range(MAX_PAGES):
            if next_url is None or len(found) >= MAX_FORGE_DEPENDENCIES:
                return found[:MAX_FORGE_DEPENDENCIES]
            try:
                response = self._http.send("GET", next_url)
            except WriteRefused as refused:
                if refused.status in (403, 404, 410):
                    return None
                raise
            data = _sent_json(response)
            if not isinstance(data, list):
                raise BadResponse(f"{response.where}: expected a JSON array")
            for item in data:
                ref = issue_ref(item, response.where)
                if ref is not None and ref not in found:
                    found.append(ref)
            next_url = self._http.next_page(response)
        raise BadResponse(f"GET {owner}/{repo}#{number} {what}: more than {MAX_PAGES} pages")

    def _issue_id(self, owner: str, repo: str, number: int) -> int:
        """An issue's database `id` (not its number), which the relation writes take."""
        response = self._http.get(f"{self._issues_url(owner, repo)}/{number}")
        _not_missing(response)
        data = _json(response)
        found = data.get("id") if isinstance(data, dict) else None
        if type(found) is not int or found <= 0:
            raise BadResponse(f"{response.where}: the issue has no id")
        return found

    def add_dependency(self, owner: str, repo: str, number: int, on: int) -> None:
        # POST .../issues/{n}/dependencies/blocked_by {issue_id: the blocking issue's id}
        # (docs.github.com/rest/issues/issue-dependencies#add-a-dependency-an-issue-is-blocked-by):
        # 201; 403, 404, 410 and 422 (validation failed: a relation that exists already among
        # them) refuse it. So the list is read first, and again after a refusal or a lost answer
        # (sent_or_found): a retry never asks twice.
        self._relate(owner, repo, number, on, "dependencies/blocked_by", "issue_id")

    def add_sub_issue(self, owner: str, repo: str, parent: int, child: int) -> None:
        # POST .../issues/{parent}/sub_issues {sub_issue_id: the child's id} (docs.github.com/
        # rest/issues/sub-issues#add-sub-issue): 201; 422 for a child that has a parent already
        # (unless replace_parent, which is not sent: a person's choice of parent stays) or is
        # one already. Read first, and again after a refusal or a lost answer.
        self._relate(owner, repo, parent, child, "sub_issues", "sub_issue_id")

    def _relate(self, owner: str, repo: str, number: int, other: int, what: str, key: str) -> None:
        refs = self._related(owner, repo, number, what)
        if refs is None:
            raise WriteRefused(
                f"{owner}/{repo}#{number}: the forge's {what} are not available", 404
            )
        if _names(refs, owner, repo, other):
            return

        def there() -> bool | None:
            again = self._related(owner, repo, number, what)
            return True if again is not None and _names(again, owner, repo, other) else None

        url = f"{self._issues_url(owner, repo)}/{number}/{what}"
        body = {key: self._issue_id(owner, repo, other)}
        sent_or_found(lambda: self._http.send("POST", url, body, retry=False), there)

    def whoami(self) -> str:
        if self._login is None and self._app is not None:
            self._login = self._app.bot_login()  # an installation's token writes as the bot
        if self._login is None:
            # GET /user: a GitHub App installation's token has no user and is refused it
            # ("Resource not accessible by integration"): optional, see Http.learn_login.
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

    def get_issue(self, owner: str, repo: str, number: int) -> ForgeIssue | None:
        response = self._http.get(f"{self._issues_url(owner, repo)}/{number}")
        if response.status in (404, 410):
            return None
        data = _json(response)
        if response.moved:
            not_moved(data, number, self.repository_name(owner, repo), response.where)
        return issue(data, response.where)

    # Delivery: the default branch and the pull request from a branch.
    def create_issue(self, owner: str, repo: str, *, title: str, body: str) -> int:
        # POST /repos/{o}/{r}/issues (docs.github.com/rest/issues/issues#create-an-issue): 201
        # with the issue; labels are added after, as on Gitea.
        payload = {"title": title, "body": body}
        response = self._http.send("POST", self._issues_url(owner, repo), payload, retry=False)
        self._http.learn_login(response)
        return created_number(_sent_json(response), response.where)

    def find_issue(
        self, owner: str, repo: str, *, marker: str, author: str | None, since: datetime
    ) -> int | None:
        # GET /repos/{o}/{r}/issues with `creator` and `since` (updated at or after)
        # (docs.github.com/rest/issues/issues#list-repository-issues): no search, whose index
        # lags behind a create.
        params = {
            "state": "all", "per_page": str(PER_PAGE), "page": "1",
            "since": since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        } | ({"creator": author} if author else {})  # fmt: skip
        pages = read_pages(self._http, self._issues_url(owner, repo), params, "per_page")
        return marked_issue(pages.items, marker, author)

    def _pulls_url(self, owner: str, repo: str) -> str:
        return f"{self._repo_url(owner, repo)}/pulls"

    def default_branch(self, owner: str, repo: str) -> str:
        response = self._http.get(self._repo_url(owner, repo))
        _not_missing(response)
        data = _json(response)
        branch = data.get("default_branch") if isinstance(data, dict) else None
        if not isinstance(branch, str) or not _is_name(branch):
            raise BadResponse(f"{response.where}: the repository has no default_branch")
        return branch

    def find_pull(self, owner: str, repo: str, head_branch: str) -> PullRequest | None:
        # GET .../pulls filters by `head` in the form user:ref-name (docs.github.com/en/rest/
        # pulls/pulls#list-pull-requests); the items are still checked (head.ref, same
        # repository), every page read.
        url = self._pulls_url(owner, repo)
        params: dict[str, str] | None = {
            "state": "open",
            "head": f"{owner}:{head_branch}",
            "per_page": str(PER_PAGE),
        }
        matches: list[dict[str, Any]] = []
        for _ in range(MAX_PAGES):
            response = self._http.get(url, params)
            _not_missing(response)
            data = _json(response)
            if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
                raise BadResponse(f"{response.where}: expected a JSON array of objects")
            matches += [item for item in data if _is_from(item, head_branch)]
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
        # Never retried blindly. A second open pull request from the same head to the same base
        # is refused: 422 "Validation Failed", errors [{"resource": "PullRequest", "code":
        # "custom", "message": "A pull request already exists for owner:branch."}] (as GitHub
        # answers it: github/VisualStudio#453, vsoch/pull-request-action#86). A create refused,
        # or whose answer was lost, is looked up by its head before anything else; only a lost
        # answer with nothing found is sent again.
        payload = {"head": head, "base": base, "title": title, "body": body, "draft": draft}
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
        # PATCH leaves `draft` alone (a draft is made ready only through GraphQL's
        # markPullRequestReadyForReview), so a draft stays one.
        url = f"{self._pulls_url(owner, repo)}/{number}"
        response = self._http.send("PATCH", url, {"title": title, "body": body})
        return _pull(_sent_json(response), response.where)


def _names(refs: list[IssueRef], owner: str, repo: str, number: int) -> bool:
    """Whether `refs` holds issue `number` of owner/repo (names compared without case)."""
    key = (owner.lower(), repo.lower(), number)
    return any((r.owner.lower(), r.repo.lower(), r.number) == key for r in refs)


def _sent_json(response: Response) -> object:
    """The body of a write's 2xx answer."""
    return decode_json(response.body, response.headers.get("content-type", ""), response.where)


def _not_missing(response: Response) -> None:
    """A 404 (or 410) for a repository or pull request: refused, not retried as a failure
    (GitHub answers 404, not 403, for a private repository the token cannot see)."""
    if response.status in (404, 410):
        raise WriteRefused(
            f"{response.where}: HTTP {response.status}: not found (or the token cannot see it)",
            response.status,
        )


_UNSAFE = re.compile("[\x00\ud800-\udfff]")


def _is_name(name: str) -> bool:
    return bool(name) and not _UNSAFE.search(name)


def _number(item: dict[str, Any]) -> int:
    number = item.get("number")
    return number if type(number) is int else 0


def _is_from(item: dict[str, Any], branch: str) -> bool:
    """Whether a listed pull request comes from `branch` of the repository it is in: its head's
    `ref` is the branch, and its head repository is its base repository (not a fork, whose
    `head.repo` is null once the fork is deleted)."""
    head, base = item.get("head"), item.get("base")
    if not isinstance(head, dict) or not isinstance(base, dict) or head.get("ref") != branch:
        return False
    head_repo, base_repo = head.get("repo"), base.get("repo")
    if not isinstance(head_repo, dict) or not isinstance(base_repo, dict):
        return False
    name, other = head_repo.get("full_name"), base_repo.get("full_name")
    return isinstance(name, str) and isinstance(other, str) and name.lower() == other.lower()


def _pull(item: object, where: str) -> PullRequest:
    """A `pull-request` object (GitHub's REST description), every field delivery reads checked:
    `html_url` (.../pull/N), `head.ref` and `base.ref` (branch names; `label` is owner:branch),
    `body` (null when empty), `draft`."""
    if not isinstance(item, dict):
        raise BadResponse(f"{where}: a pull request is {type(item).__name__}, not an object")
    number = item.get("number")
    if type(number) is not int or number <= 0:
        raise BadResponse(f"{where}: a pull request has no positive integer number")
    at = f"{where}: pull request {number}"
    url, state, title = item.get("html_url"), item.get("state"), item.get("title")
    body, draft = item.get("body") or "", item.get("draft", False)
    if not isinstance(url, str) or not url:
        raise BadResponse(f"{at}: no html_url")
    if state not in ("open", "closed"):
        raise BadResponse(f"{at}: state {state!r:.40} is neither open nor closed")
    if not isinstance(title, str) or not isinstance(body, str) or not isinstance(draft, bool):
        raise BadResponse(f"{at}: title, body or draft is not of its type")
    branches = []
    for side in (item.get("head"), item.get("base")):
        ref = side.get("ref") if isinstance(side, dict) else None
        if not isinstance(ref, str) or not _is_name(ref):
            raise BadResponse(f"{at}: head or base has no branch name (ref)")
        branches.append(ref)
    return PullRequest(
        number,
        url,
        branches[0],
        branches[1],
        str(state),
        draft,
        _UNSAFE.sub("\ufffd", title),
        _UNSAFE.sub("\ufffd", body),
    )


def _run_state(run: dict[str, Any]) -> str:
    """A check run's state: pending until `status` is completed, then by its conclusion
    (CHECK_RUN_PASSED)."""
    if run.get("status") != "completed":
        return "pending"
    return "passed" if run.get("conclusion") in CHECK_RUN_PASSED else "failed"


def _limit(response: Response) -> datetime | None:
    return rate_limit_reset(response.headers)


def _json(response: Response) -> object:
    if response.status != 200:
        raise BadResponse(f"{response.where}: HTTP {response.status}")
    return decode_json(response.body, response.headers.get("content-type", ""), response.where)
