"""The stand-in forge's side of the work graph's forge relations (issue 35): Gitea's and Forgejo's
issue dependencies, GitHub's blocked-by relations and sub-issues, and the summaries GitHub's issue
objects carry of both. StandinForge (dev.standin) takes this in as a mixin and
hands it each API request before its other routes; each quirk is cited where it is served, with
the source the client that copes with it cites (tireless/forge/gitea.py, github.py). The
stand-in's faults (`fault`, also with `number=`) reach these routes.

A relation a test makes (`add_dependency`, `remove_dependency`, `add_sub_issue`) does not move the
issue's `updated_at`: on GitHub a dependency change does not bump it, and Gitea sends no webhook
for one (issue 35), so only a poller that reads the relations again sees it.

    forge.add_dependency("acme", "widgets", 3, 2)      # #3 is blocked by #2
    forge.add_sub_issue("acme", "widgets", 1, 3)       # GitHub: #3 is a sub-issue of #1
    forge.refuse_dependencies("acme", "widgets", 404)  # dependencies disabled for the repository
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dev.standin.conversation import Reply, Said

if TYPE_CHECKING:
    from dev.standin.state import Flavour

Key = tuple[str, str, int]
"""(owner, repo, number) of an issue of the stand-in."""
GITHUB_ID_BASE = 1000
"""The stand-in serves a GitHub issue's database `id` as this plus its number
(StandinForge._issue_json); the relation writes take that id, not the number."""


@dataclass(frozen=True)
class Related:
    """An answer of these routes; `drop`: the write was stored and its answer is lost (the
    stand-in's `applied-then-reset` fault), which StandinForge turns into a closed connection."""

    status: int
    headers: dict[str, str]
    body: Any
    drop: bool = False


class DependencyRoutes:
    """The relations' state and routes, a mixin of StandinForge (which provides the names declared
    under TYPE_CHECKING)."""

    if TYPE_CHECKING:
        flavour: Flavour
        max_page_size: int
        _lock: threading.Condition
        _repos: dict[tuple[str, str], dict[int, Any]]

        @property
        def url(self) -> str: ...
        def _error(self, status: int, message: str) -> Reply: ...
        def _not_found(self) -> Reply: ...
        def _api_prefix(self) -> str: ...
        def _issue_json(self, owner: str, repo: str, issue: Any) -> dict[str, Any]: ...
        def _take_fault(
            self, owner: str, repo: str, number: int | None = None, write: bool = False
        ) -> Any: ...
        def _status_fault(self, fault: Any) -> Reply: ...
        def _github_invalid(self, *errors: dict[str, str]) -> Reply: ...
        def _page(
            self, items: list[Any], query: dict[str, str], path: str, *, counted: bool = True
        ) -> tuple[list[Any], dict[str, str]]: ...

    def _init_dependencies(self) -> None:
        self._blockers: dict[Key, list[Key]] = {}
        """Each issue's blockers (Gitea: its dependencies; GitHub: blocked by), oldest first."""
        self._children: dict[Key, list[Key]] = {}
        """GitHub: each issue's sub-issues, in the order they were added."""
        self._refused_relations: dict[tuple[str, str], int] = {}
        self.relation_summaries = True
        """GitHub: whether issue objects carry issue_dependencies_summary and sub_issues_summary
        (False: an older GitHub Enterprise Server, whose issues have neither)."""

    # What tests set and read
    def add_dependency(
        self, owner: str, repo: str, number: int, on: int, *, on_repo: tuple[str, str] | None = None
    ) -> None:
        """Issue `number` depends on (is blocked by) issue `on` of `on_repo` (default: the same
        repository), as a person sets it on the forge: the issue's updated_at does not move."""
        with self._lock:
            blockers = self._blockers.setdefault((owner, repo, number), [])
            key = (*(on_repo or (owner, repo)), on)
            if key not in blockers:
                blockers.append(key)

    def remove_dependency(
        self, owner: str, repo: str, number: int, on: int, *, on_repo: tuple[str, str] | None = None
    ) -> None:
        """The relation is taken off, updated_at left as it is (see the module's text)."""
        with self._lock:
            key = (*(on_repo or (owner, repo)), on)
            blockers = self._blockers.get((owner, repo, number), [])
            if key in blockers:
                blockers.remove(key)

    def add_sub_issue(self, owner: str, repo: str, parent: int, child: int) -> None:
        """GitHub: `child` becomes a sub-issue of `parent`, updated_at left as it is."""
        with self._lock:
            children = self._children.setdefault((owner, repo, parent), [])
            if (owner, repo, child) not in children:
                children.append((owner, repo, child))

    def remove_sub_issue(self, owner: str, repo: str, parent: int, child: int) -> None:
        with self._lock:
            children = self._children.get((owner, repo, parent), [])
            if (owner, repo, child) in children:
                children.remove((owner, repo, child))

    def dependencies_of(self, owner: str, repo: str, number: int) -> list[Key]:
        """The issue's blockers as the forge holds them."""
        with self._lock:
            return list(self._blockers.get((owner, repo, number), []))

    def sub_issues_of(self, owner: str, repo: str, parent: int) -> list[Key]:
        with self._lock:
            return list(self._children.get((owner, repo, parent), []))

    def refuse_dependencies(self, owner: str, repo: str, status: int | None = 404) -> None:
        """The repository's relation routes answer `status` from now on (None: served again).
        404: Gitea with the repository's dependencies disabled (IsDependenciesEnabled,
        routers/api/v1/repo/issue_dependency.go), a GitHub without the feature; 403: a token
        without the issue scope (Gitea's tokenRequiresScopes, GitHub's Issues permission)."""
        with self._lock:
            if status is None:
                self._refused_relations.pop((owner, repo), None)
            else:
                self._refused_relations[(owner, repo)] = status

    def relation_requests(self) -> int:
        """How many requests reached the relation routes (reads and writes)."""
        with self._lock:
            requests: list[Any] = getattr(self, "requests", [])
            return sum(1 for request in requests if _is_relation_path(request.path))

    # GitHub's summaries on an issue object
    def _relation_summaries(self, owner: str, repo: str, number: int) -> dict[str, Any]:
        """GitHub's issue object carries `issue_dependencies_summary` {blocked_by (open),
        blocking (open), total_blocked_by, total_blocking} (docs.github.com/rest/issues/
        issue-dependencies) and `sub_issues_summary` {total, completed, percent_completed}
        (docs.github.com/rest/issues/sub-issues); Gitea's has neither. Called under the lock."""
        if self.flavour != "github" or not self.relation_summaries:
            return {}
        key = (owner, repo, number)
        blockers = self._blockers.get(key, [])
        blocking = [k for k, found in self._blockers.items() if key in found]
        children = self._children.get(key, [])
        done = sum(1 for child in children if self._state_of(child) == "closed")
        return {
            "issue_dependencies_summary": {
                "blocked_by": sum(1 for k in blockers if self._state_of(k) != "closed"),
                "blocking": sum(1 for k in blocking if self._state_of(k) != "closed"),
                "total_blocked_by": len(blockers),
                "total_blocking": len(blocking),
            },
            "sub_issues_summary": {
                "total": len(children),
                "completed": done,
                "percent_completed": (100 * done // len(children)) if children else 0,
            },
        }

    def _state_of(self, key: Key) -> str | None:
        stored = self._repos.get((key[0], key[1]), {}).get(key[2])
        return None if stored is None else str(stored.state)

    # Serving
    def _dependency_answer(
        self, method: str, path: str, query: dict[str, str], body: Any, authorized: bool
    ) -> Reply | None:
        """The answer to a request on one of these routes; None for any other path."""
        prefix = self._api_prefix()
        if not path.startswith(f"{prefix}/repos/"):
            return None
        parts = path[len(prefix) :].strip("/").split("/")
        if len(parts) < 6 or parts[3] != "issues" or not parts[4].isdigit():
            return None
        owner, repo, number, rest = parts[1], parts[2], int(parts[4]), parts[5:]
        if self.flavour == "gitea":
            if rest not in (["dependencies"], ["blocks"]):
                return None
        elif not (
            rest in (["dependencies", "blocked_by"], ["sub_issues"])
            or (rest[:2] == ["dependencies", "blocked_by"] and len(rest) == 3)
        ):
            return None
        fault = self._take_fault(owner, repo, number, write=method != "GET")
        status_faults = ("500", "429-seconds", "429-date", "401", "403", "secondary-limit")
        if fault is not None and fault.name in status_faults:  # dev.standin.faults.STATUS_FAULTS
            return self._status_fault(fault)
        if not authorized:
            return self._error(
                401, "token is required" if self.flavour == "gitea" else "Bad credentials"
            )
        with self._lock:
            issues = self._repos.get((owner, repo))
            if issues is None or number not in issues:
                return self._not_found()
            refused = self._refused_relations.get((owner, repo))
            if refused is not None:
                return self._error(refused, "Not Found" if refused == 404 else "Forbidden")
            if self.flavour == "gitea":
                said = self._gitea_relation(method, owner, repo, number, rest[0], query, body, path)
            else:
                said = self._github_relation(method, owner, repo, number, rest, query, body, path)
        applied = 200 <= said.status < 300 and method != "GET"
        if fault is not None and applied and fault.name == "applied-then-reset":
            return Related(said.status, said.headers, said.body, drop=True)
        if fault is not None and applied and fault.name == "applied-then-slow":
            time.sleep(fault.seconds)
        return said

    def _listed(self, keys: list[Key], query: dict[str, str], path: str, counted: bool) -> Said:
        """A page of the issues `keys` name (those that exist), as issue objects."""
        found = [
            self._issue_json(o, r, self._repos[(o, r)][n])
            for o, r, n in keys
            if n in self._repos.get((o, r), {})
        ]
        page, headers = self._page(found, query, path, counted=counted)
        return Said(200, headers, page)

    def _gitea_relation(
        self,
        method: str,
        owner: str,
        repo: str,
        number: int,
        what: str,
        query: dict[str, str],
        body: Any,
        path: str,
    ) -> Reply:
        """routers/api/v1/repo/issue_dependency.go. GET .../dependencies (GetIssueDependencies)
        and .../blocks (GetIssueBlocks): issues paged by page/limit (clamped to
        MAX_RESPONSE_ITEMS) with neither X-Total-Count nor Link. POST and DELETE
        .../dependencies take an IssueMeta {owner, repo, index}: 201 with the issue (DELETE
        answers 201 too); a dependency that exists already, or would make the pair circular, or
        one removed that is not there, fails in the model (models/issues/dependency.go
        ErrDependencyExists, ErrCircularDependency, ErrDependencyNotExists) and reaches the API as
        500 (ctx.Error(http.StatusInternalServerError, ...)); an unknown issue is 404."""
        key = (owner, repo, number)
        if method == "GET":
            if what == "blocks":
                blocking = [k for k, found in self._blockers.items() if key in found]
                return self._listed(sorted(blocking), query, path, counted=False)
            return self._listed(self._blockers.get(key, []), query, path, counted=False)
        if what != "dependencies" or method not in ("POST", "DELETE"):
            return self._error(405, "Method Not Allowed")
        form = body if isinstance(body, dict) else {}
        on_owner, on_repo, index = form.get("owner"), form.get("repo"), form.get("index")
        if not isinstance(on_owner, str) or not isinstance(on_repo, str) or type(index) is not int:
            return self._error(422, "[Index]: Required")
        if index not in self._repos.get((on_owner, on_repo), {}):
            return self._not_found()
        other = (on_owner, on_repo, index)
        blockers = self._blockers.setdefault(key, [])
        if method == "POST":
            if other in blockers or key in self._blockers.get(other, []) or other == key:
                return self._error(500, "CreateIssueDependency")
            blockers.append(other)
            return Said(201, {}, self._issue_json(owner, repo, self._repos[(owner, repo)][number]))
        if other not in blockers:
            return self._error(500, "RemoveIssueDependency")
        blockers.remove(other)
        return Said(201, {}, self._issue_json(owner, repo, self._repos[(owner, repo)][number]))

    def _github_relation(
        self,
        method: str,
        owner: str,
        repo: str,
        number: int,
        rest: list[str],
        query: dict[str, str],
        body: Any,
        path: str,
    ) -> Reply:
        """GET/POST .../dependencies/blocked_by and DELETE .../dependencies/blocked_by/{issue_id}
        (docs.github.com/rest/issues/issue-dependencies), GET/POST .../sub_issues (docs.github.com/
        rest/issues/sub-issues): lists of issues paged by per_page with Link; a write names the
        other issue by its database `id` (`issue_id`, `sub_issue_id`), answers 201 with the
        issue, and 422 (validation failed) for a relation that exists already, a sub-issue that
        has a parent already, or an issue related to itself; 404 for an id it does not know."""
        key = (owner, repo, number)
        children = rest == ["sub_issues"]
        held = self._children if children else self._blockers
        if method == "GET" and len(rest) <= 2:
            return self._listed(held.get(key, []), query, path, counted=False)
        if method == "DELETE" and len(rest) == 3 and rest[2].isdigit():
            other = self._by_id(owner, repo, int(rest[2]))
            if other is None or other not in self._blockers.get(key, []):
                return self._not_found()
            self._blockers[key].remove(other)
            return Said(200, {}, self._issue_json(owner, repo, self._repos[(owner, repo)][number]))
        if method != "POST" or len(rest) > 2:
            return self._error(405, "Method Not Allowed")
        form = body if isinstance(body, dict) else {}
        given = form.get("sub_issue_id" if children else "issue_id")
        if type(given) is not int:
            return self._github_invalid({"resource": "Issue", "code": "missing_field"})
        other = self._by_id(owner, repo, given)
        if other is None:
            return self._not_found()
        related = held.setdefault(key, [])
        has_parent = children and any(other in found for found in self._children.values())
        if other == key or other in related or has_parent:
            return self._github_invalid({"resource": "Issue", "code": "invalid"})
        related.append(other)
        return Said(201, {}, self._issue_json(owner, repo, self._repos[(owner, repo)][number]))

    def _by_id(self, owner: str, repo: str, issue_id: int) -> Key | None:
        """The issue a GitHub database id names: this repository's first, then any other's."""
        number = issue_id - GITHUB_ID_BASE
        if number in self._repos.get((owner, repo), {}):
            return (owner, repo, number)
        for (o, r), issues in sorted(self._repos.items()):
            if number in issues:
                return (o, r, number)
        return None


def _is_relation_path(path: str) -> bool:
    parts = path.strip("/").split("/")
    return "issues" in parts and any(
        part in ("dependencies", "blocks", "sub_issues") for part in parts[-3:]
    )
