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
from dev.standin.gitea import GITEA_VERSION, _gitea_scope_category
from dev.standin.github import _github_permission
from dev.standin.pulls import PullRoutes
from dev.standin.state import Answer, Request, StoredIssue, _granted, _now


class ForgeApi(PullRoutes, ConversationRoutes):
    """The stand-in's API: token scopes, the poller's reads, and the dispatch of every request."""

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
        if related is not None:  # issue 35's relations: dev.standin.dependencies
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
