"""The stand-in forge's side of the work graph's forge relations (issue 35): Gitea's and Forgejo's
issue dependencies, GitHub's blocked-by relations and sub-issues: what tests set and read, and the
routes' shared part. StandinForge (dev.standin) takes this in as a mixin and hands it each API
request before its other routes; each forge's routes, and the summaries GitHub's issue objects
carry, are its API's (`relation`: dev.standin.gitea, dev.standin.github), cited there with the
source the client that copes with it cites (tireless/forge/gitea.py, github.py). The stand-in's
faults (`fault`, also with `number=`) reach these routes.

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
from typing import TYPE_CHECKING, Any

from dev.standin.records import Answer

if TYPE_CHECKING:
    from dev.standin.gitea import GiteaApi
    from dev.standin.github import GitHubApi

Key = tuple[str, str, int]
"""(owner, repo, number) of an issue of the stand-in."""


class DependencyRoutes:
    """The relations' state and routes, a mixin of StandinForge (which provides the names declared
    under TYPE_CHECKING); each forge's routes are its API's `relation`."""

    if TYPE_CHECKING:
        api: GiteaApi | GitHubApi
        _lock: threading.Condition
        _repos: dict[tuple[str, str], dict[int, Any]]

        def _issue_json(self, owner: str, repo: str, issue: Any) -> dict[str, Any]: ...
        def _take_fault(
            self, owner: str, repo: str, number: int | None = None, write: bool = False
        ) -> Any: ...
        def _status_fault(self, fault: Any) -> Answer: ...

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

    def _state_of(self, key: Key) -> str | None:
        stored = self._repos.get((key[0], key[1]), {}).get(key[2])
        return None if stored is None else str(stored.state)

    # Serving
    def _dependency_answer(
        self, method: str, path: str, query: dict[str, str], body: Any, authorized: bool
    ) -> Answer | None:
        """The answer to a request on one of these routes; None for any other path."""
        prefix = self.api.prefix
        if not path.startswith(f"{prefix}/repos/"):
            return None
        parts = path[len(prefix) :].strip("/").split("/")
        if len(parts) < 6 or parts[3] != "issues" or not parts[4].isdigit():
            return None
        owner, repo, number, rest = parts[1], parts[2], int(parts[4]), parts[5:]
        if not self.api.relation_route(rest):
            return None
        fault = self._take_fault(owner, repo, number, write=method != "GET")
        status_faults = ("500", "429-seconds", "429-date", "401", "403", "secondary-limit")
        if fault is not None and fault.name in status_faults:  # dev.standin.faults.STATUS_FAULTS
            return self._status_fault(fault)
        if not authorized:
            return self.api.unauthorized()
        with self._lock:
            issues = self._repos.get((owner, repo))
            if issues is None or number not in issues:
                return self.api.not_found()
            refused = self._refused_relations.get((owner, repo))
            if refused is not None:
                return self.api.error(refused, "Not Found" if refused == 404 else "Forbidden")
            said = self.api.relation(method, owner, repo, number, rest, query, body, path)
        applied = 200 <= said.status < 300 and method != "GET"
        if fault is not None and applied and fault.name == "applied-then-reset":
            return Answer(said.status, said.headers, said.body, drop=True)
        if fault is not None and applied and fault.name == "applied-then-slow":
            time.sleep(fault.seconds)
        return said

    def _listed(self, keys: list[Key], query: dict[str, str], path: str, counted: bool) -> Answer:
        """A page of the issues `keys` name (those that exist), as issue objects."""
        found = [
            self._issue_json(o, r, self._repos[(o, r)][n])
            for o, r, n in keys
            if n in self._repos.get((o, r), {})
        ]
        page, headers = self.api.page(found, query, path, counted=counted)
        return Answer(200, headers, page)


def _is_relation_path(path: str) -> bool:
    parts = path.strip("/").split("/")
    return "issues" in parts and any(
        part in ("dependencies", "blocks", "sub_issues") for part in parts[-3:]
    )
