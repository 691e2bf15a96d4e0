"""The stand-in's API dispatch: every request's token, scope, fault and route checked in turn
(answer); the poller's listing and its quirks (renamed repositories, transferred issues, ROOT_URL
links); the account and repository reads."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from dev.standin.conversation import ConversationRoutes
from dev.standin.faults import STATUS_FAULTS
from dev.standin.records import Answer, Request, StoredIssue, _now


class ForgeApi(ConversationRoutes):
    """The stand-in's API: token scopes, the poller's reads, and the dispatch of every request."""

    def _moved_answer(self, method: str, path: str, query: dict[str, str]) -> Answer | None:
        """A renamed repository's old name, or a transferred issue, answers the forge's redirect
        (`api.moved`)."""
        _, parts = self._api_parts(path)
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
            if issue is not None and self.api.transfers_issues:
                new, rest = (issue[0], issue[1]), ["issues", str(issue[2]), *rest[2:]]
                repo_id = self._repo_id(*new)
            elif old in self._renamed and old not in self._repos:
                new = self._renamed[old]
                while new in self._renamed and new not in self._repos:  # renamed again
                    new = self._renamed[new]
                repo_id = self._repo_id(*new)
            else:
                return None
        suffix = "/".join(rest)
        search = f"?{urlencode(query)}" if query else ""
        return self.api.moved(method, new, repo_id, suffix, search)

    def _repo_answer(self, owner: str, repo: str) -> Answer:
        """GET /repos/{owner}/{repo}: both forges name the repository `full_name` (owner/name)
        and give its `default_branch` and `clone_url` (Gitea's swagger `Repository`, GitHub's
        `full-repository`)."""
        with self._lock:
            if (owner, repo) not in self._repos:
                return self.api.error(404, "Not Found")
        return Answer(200, {}, self._repo_json(owner, repo))

    # Token scopes (issue 36): what a scoped token may ask, decided per route as each forge does
    # (`api.token_refusal`), before the resource is looked up.
    def _token_refusal(self, method: str, path: str, authorized: bool) -> Answer | None:
        """A 403 for a request the token's scopes do not cover, None when they do."""
        if not authorized or (self.scopes is None and not self.installation):
            return None
        _, parts = self._api_parts(path)
        return self.api.token_refusal(method, parts)

    def refuses(self, path: str, method: str = "GET") -> bool:
        """Whether the token's scopes refuse this API request (a test checks what was asked)."""
        return self._token_refusal(method, path, authorized=True) is not None

    def answer(
        self,
        path: str,
        query: dict[str, str],
        authorization: str | None,
        method: str = "GET",
        body: Any = None,
    ) -> Answer:
        if self.app is not None and (
            by_app := self.app.answer(method, self._api_parts(path)[1], authorization)
        ):
            return by_app  # a GitHub App's routes and token refusals (dev.standin.apps)
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
            answer = self.api.error(403, "You have exceeded a secondary rate limit")
            return replace(answer, headers=answer.headers | {"retry-after": "1"})
        account = self._account_answer(method, path, query, authorized)
        if account is not None:
            return account
        path = self.api.current_path(path)
        moved = self._moved_answer(method, path, query)
        if moved is not None:
            return moved
        archived = self.api.archived_refusal(method, self._api_parts(path)[1])
        if archived is not None:
            return archived
        related = self._dependency_answer(method, path, query, body, authorized)
        if related is not None:  # issue 35's relations: dev.standin.dependencies
            return self._count_rate(related, query)
        said = self._conversation_answer(method, path, query, body, authorized)
        if said is not None:
            return self._count_rate(said, query)
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
            return self.api.error(405, "Method Not Allowed")
        _, parts = self._api_parts(path)
        if len(parts) == 3 and parts[0] == "repos":
            return self._repo_answer(parts[1], parts[2])
        route = self._route(path)
        if route is None:
            return self.api.error(404, "Not Found")
        owner, repo, number = route
        fault = self._take_fault(owner, repo, number)
        if fault is not None and fault.name in STATUS_FAULTS:
            return self._status_fault(fault)
        if not authorized:
            return self.api.unauthorized()
        spent = self.api.rate_spent()
        if spent is not None:
            return spent
        with self._lock:
            if (owner, repo) not in self._repos:
                return self.api.error(404, "Not Found")
            issues = dict(self._repos[(owner, repo)])
        if number is not None:
            stored = issues.get(number)
            if stored is None:
                return self.api.issue_gone(owner, repo, number)
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
            return self.api.unauthorized()
        form = body if isinstance(body, dict) else {}
        title, text = form.get("title"), form.get("body") or ""
        if not (isinstance(title, str) and title and isinstance(text, str)):
            return self.api.missing("Issue", "Title")
        too_long = self.api.too_long("Issue", text)
        if too_long is not None:
            return too_long
        with self._lock:
            if (owner, repo) not in self._repos:
                return self.api.error(404, "Not Found")
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
        """PATCH /repos/{o}/{r}/issues/{n} with `state` (and `title`): the issue, with the
        forge's `edit_status` (Gitea 201, GitHub 200)."""
        if not authorized:
            return self.api.unauthorized()
        form = body if isinstance(body, dict) else {}
        changes: dict[str, Any] = {}
        if form.get("state") in ("open", "closed"):
            changes["state"] = form["state"]
            changes["closed_at"] = _now() if form["state"] == "closed" else None
        if isinstance(form.get("title"), str) and form["title"]:
            changes["title"] = form["title"]
        with self._lock:
            if number not in self._repos.get((owner, repo), {}):
                return self.api.error(404, "Not Found")
            if changes:
                self._change(owner, repo, number, self.login, **changes)
            issue = self._repos[(owner, repo)][number]
            return Answer(self.api.edit_status, {}, self._issue_json(owner, repo, issue))

    def _route(self, path: str) -> tuple[str, str, int | None] | None:
        parts = self._api_route_parts(path)
        if parts is None or len(parts) not in (4, 5) or parts[0] != "repos" or parts[3] != "issues":
            return None
        if len(parts) == 5:
            return (parts[1], parts[2], int(parts[4])) if parts[4].isdigit() else None
        return parts[1], parts[2], None

    def _account_answer(
        self, method: str, path: str, query: dict[str, str], authorized: bool
    ) -> Answer | None:
        """GET /user (both forges: the token's own account, `login`, as `api.account_json`
        shows it), and the forge's other reads outside a repository (`api.misc_answer`: Gitea's
        version and organisation labels, GitHub's meta)."""
        parts = self._api_route_parts(path)
        if parts is None:
            return None
        if parts == ["user"] and method == "GET":
            if not authorized:
                return self.api.error(401, "Bad credentials")
            headers = self.api.account_headers()
            return self._count_rate(Answer(200, headers, self.api.account_json()), query)
        return self.api.misc_answer(method, parts, query)

    def _listing(
        self, owner: str, repo: str, issues: dict[int, StoredIssue], query: dict[str, str]
    ) -> Answer:
        state = query.get("state", "open")  # both forges list open issues unless told
        chosen = [i for i in issues.values() if state == "all" or i.state == state]
        chosen = self.api.listing_filter(chosen, query)  # Gitea's `type`, who opened it
        if "since" in query:
            since = datetime.fromisoformat(query["since"])
            # Gitea compares whole unix seconds, inclusively (updated_unix >= since); GitHub
            # lists issues updated at or after `since`.
            chosen = [i for i in chosen if i.updated_at >= since.replace(microsecond=0)]
        self.api.listing_sort(chosen, query)  # newest first, both forges' default
        asked = int(query.get(self.api.size_key, "0") or 0)
        default = 30  # Gitea's DEFAULT_PAGING_NUM, GitHub's default per_page
        size = min(asked if asked > 0 else default, self.max_page_size)  # the clamp
        page = max(int(query.get("page", "1") or 1), 1)
        last = max((len(chosen) + size - 1) // size, 1)
        items = [self._issue_json(owner, repo, i) for i in chosen[(page - 1) * size : page * size]]
        headers = {"Link": self._link(owner, repo, query, page, last)} if last > 1 else {}
        headers |= self.api.total_count(len(chosen))  # Gitea counts every matching item
        return Answer(200, headers, items)
