"""Pull requests (issue 33): create, list, get and edit, numbered with the issues, each forge's
quirks cited where they are served."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

from dev.standin.faults import BODY_FAULTS, STATUS_FAULTS
from dev.standin.mirror import MirrorRoutes
from dev.standin.state import Answer, StoredPull, _now


class PullRoutes(MirrorRoutes):
    """The stand-in's pull request routes."""

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
