"""Pull requests (issue 33): create, list, get and edit, numbered with the issues; each forge's
quirks are its API's (dev.standin.gitea, dev.standin.github), cited there."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

from dev.standin.faults import BODY_FAULTS, STATUS_FAULTS
from dev.standin.mirror import MirrorRoutes
from dev.standin.records import Answer, StoredPull, _now


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
            return self.api.unauthorized()
        with self._lock:
            if (owner, repo) not in self._repos:
                return self.api.error(404, "Not Found")
            if number is None and method == "GET":
                answer = self._pull_list(owner, repo, query)
            elif number is None and method == "POST":
                answer = self._pull_create(owner, repo, body)
            elif number is not None and (owner, repo, number) not in self._pulls:
                answer = self.api.not_found()  # an issue's number is no pull request's
            elif method == "GET":
                answer = Answer(200, {}, self._pull_json(owner, repo, number or 0))
            elif method == "PATCH":
                answer = self._pull_edit(owner, repo, number or 0, body)
            else:
                answer = self.api.error(405, "Method Not Allowed")
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
            return self.api.missing("PullRequest", "Head", "Base", "Title")
        too_long = self.api.too_long("PullRequest", text)
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
        refused = self.api.pull_create_refusal(
            owner, repo, head, base, branch, (head_sha, base_sha), open_from_head
        )
        if refused is not None:
            return refused
        draft = self.api.draft(form)
        number = self._new_pull(
            owner, repo, title, text, StoredPull(branch, base, draft, self.login)
        )
        headers = self.api.created_headers(owner, repo, number)
        return Answer(201, headers, self._pull_json(owner, repo, number))

    def _pull_edit(self, owner: str, repo: str, number: int, body: Any) -> Answer:
        """PATCH .../pulls/{n} (called under the lock): `title`, `body`, `state`, answered with the
        forge's `edit_status`. An empty title is ignored (Gitea: `if len(form.Title) > 0`)."""
        form = body if isinstance(body, dict) else {}
        changes: dict[str, Any] = {}
        title, text, state = form.get("title"), form.get("body"), form.get("state")
        too_long = self.api.too_long("PullRequest", text)
        if too_long is not None:
            return too_long
        if isinstance(title, str) and title:
            changes["title"] = title
        if isinstance(text, str):
            changes["body"] = text
        if state is not None:
            if state not in ("open", "closed"):
                return self.api.invalid_field("PullRequest", "state")
            changes["state"] = state
            changes["closed_at"] = _now() if state == "closed" else None
        if changes:
            self._change(owner, repo, number, self.login, **changes)
        return Answer(self.api.edit_status, {}, self._pull_json(owner, repo, number))

    def _pull_list(self, owner: str, repo: str, query: dict[str, str]) -> Answer:
        """GET .../pulls (called under the lock), newest first: `state` (open unless told), the
        forge's own filters (`api.pull_listed`), paged by `page` and the forge's size (clamped)
        with Link, and Gitea's X-Total-Count (ListPullRequests, routers/api/v1/repo/pull.go:
        SetLinkHeader, SetTotalCountHeader)."""
        state = query.get("state", "open")
        issues = self._repos[(owner, repo)]
        chosen = [
            n
            for (o, r, n), pull in self._pulls.items()
            if (o, r) == (owner, repo)
            and n in issues
            and (state == "all" or issues[n].state == state)
            and self.api.pull_listed(query, owner, pull)
        ]
        chosen.sort(reverse=True)
        asked = int(query.get(self.api.size_key, "0") or 0)
        size = min(asked if asked > 0 else 30, self.max_page_size)
        page = max(int(query.get("page", "1") or 1), 1)
        last = max((len(chosen) + size - 1) // size, 1)
        shown = chosen[(page - 1) * size : page * size]
        heads, repo_json = self.git.branches(owner, repo), self._repo_json(owner, repo)
        items = [self._pull_json(owner, repo, n, heads, repo_json) for n in shown]
        headers: dict[str, str] = {}
        if page < last:
            path = f"{self.api.prefix}/repos/{owner}/{repo}/pulls"
            after = f"{self.url}{path}?" + urlencode(query | {"page": str(page + 1)})
            headers["Link"] = f'<{after}>; rel="next"'
        headers |= self.api.total_count(len(chosen))
        return Answer(200, headers, items)
